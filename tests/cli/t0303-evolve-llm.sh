#!/bin/bash
# cuco evolve with an LLM: the fake server replays recorded answers
# (tests/data/evolve/llm_mix/README.md): diffs (one matched only ignoring
# indentation), full rewrites, a crossover, a malformed patch, broken code,
# a duplicate (the seed again: answered from the database, not evaluated,
# issue 49), and two meta summaries.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fakellm.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
export EVOLVE_TEST_KEY=sk-test-evolve-0000
WL=$ROOT/tests/data/evolve/landscape
OUT=$TMP/run
cd "$TMP" || exit 1
fakellm_start "$ROOT/tests/data/evolve/llm_mix" || exit 1
cat >"$TMP/cuco.ini" <<INI
[llm]
provider = openai
model = gpt-4.1
base_url = $FAKELLM_URL/v1
api_key_env = EVOLVE_TEST_KEY
timeout = 10
max_retries = 0
[evolve]
edit_sequence = diff, full, diff, cross, diff, full
meta_every = 3
INI
expect_rc "LLM run succeeds" 0 "$CUCO" --config "$TMP/cuco.ini" evolve "$WL" \
  --generations 6 --islands 1 --seed 1 --out "$OUT"
cp "$TMP/out" "$TMP/run.out"
fakellm_stop
[ "$(fakellm_requests)" = 9 ] && ok "9 requests: 7 mutations, 2 meta summaries" ||
  not_ok "9 requests" "$(fakellm_requests) requests"
q() { sqlite3 "$OUT/run.db" "$1"; }
rows=$(q "select generation || ':' || edit_kind || ':' || status || ':' || coalesce(stage, '') from programs order by id" | tr '\n' ' ')
want="0:seed:ok:done 1:diff:ok:done 2:full:ok:done 3:diff:failed:static 4:cross:ok:done 5:diff:failed:build 6:full:duplicate:static 6:full:ok:done "
[ "$rows" = "$want" ] && ok "each recorded answer gave the expected row" ||
  not_ok "expected rows" "got: $rows"
[ "$(q "select median_ms from programs where generation = 1")" = 1.9 ] &&
  ok "the whitespace-tolerant diff applied (order=b, cost 1.9)" || not_ok "diff applied" "$(q 'select id, median_ms, error from programs')"
expect_grep "re-indented replacement" <(q "select code from programs where generation = 1") \
  "^  for \(i = 0; i \+ 1 < n; i \+= 2\)$"
expect_grep "malformed patch error names the problem" <(q "select error from programs where generation = 3") \
  "edit did not apply: malformed patch: SEARCH block at line 3 has no ======= line"
expect_grep "broken code failed at build with the compiler's reason" <(q "select error || build_log from programs where generation = 5") \
  "undefined_symbol_xyz"
expect_grep "the duplicate is answered from the seed" <(q "select error from programs where status = 'duplicate'") \
  "^the same program as #1 \(what it compiles to: [0-9a-f]{16}\): answered from the database, not evaluated$"
[ "$(q "select same_as from programs where status = 'duplicate'")" = 1 ] &&
  ok "... and names it" || not_ok "the duplicate names the seed" "$(q "select id, same_as from programs")"
[ "$(q "select count(*) from programs where status = 'duplicate' and (started_at is not null or metrics_json is not null)")" = 0 ] &&
  ok "the duplicate was never evaluated" || not_ok "duplicate not evaluated" "it was"
[ "$(q "select parent2_id is not null from programs where edit_kind = 'cross'")" = 1 ] &&
  ok "the crossover has two parents" || not_ok "cross parents" "$(q 'select * from programs where edit_kind = "cross"')"
[ "$(q "select min(median_ms) from programs where status = 'ok'")" = 1.0 ] &&
  ok "the full rewrite reached the optimum" || not_ok "optimum" "$(q 'select median_ms from programs')"
expect_grep "rationale stored" <(q "select rationale from programs where generation = 2") \
  "^Directives: order=b tile=32 unroll=4"
[ "$(q "select count(*) from llm_calls where purpose = 'mutate'")" = 7 ] &&
  [ "$(q "select count(*) from llm_calls where purpose = 'meta'")" = 2 ] &&
  ok "llm_calls: 7 mutate + 2 meta" || not_ok "llm_calls" "$(q 'select purpose, outcome from llm_calls')"
[ "$(q "select count(*) from programs p join llm_calls c on c.id = p.llm_call_id and c.program_id = p.id")" = 7 ] &&
  ok "every LLM candidate links its call both ways" || not_ok "links" "$(q 'select id, llm_call_id from programs')"
[ "$(q "select sum(tokens_in) from llm_calls")" = 12350 ] && ok "tokens recorded" ||
  not_ok "tokens recorded" "$(q 'select sum(tokens_in) from llm_calls')"
[ "$(q "select spent_usd > 0 and abs(spent_usd - (select sum(cost_usd) from llm_calls)) < 1e-9 from runs")" = 1 ] &&
  ok "run cost is the sum of the calls" || not_ok "cost" "$(q 'select spent_usd from runs')"
expect_grep "meta summary holds the LLM's recommendations" <(q "select text from meta_summaries order by id limit 1") \
  "^1\. Keep order=b\.$"
if python3 - "$FAKELLM_LOG" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
bodies = [json.loads(r["body"]) for r in reqs]
def text(b):
    return "\n".join(m["content"] for m in b["messages"])
t = [text(b) for b in bodies]
assert reqs[0]["headers"]["authorization"] == "Bearer sk-test-evolve-0000"
# the first prompt: format, directive table, machine, the parent's code
assert "SEARCH/REPLACE" in t[0] and "<<<<<<< SEARCH" in t[0], "diff format"
assert "param order a, b, c" in t[0] and "param tile 8, 16, 32, 64, 128" in t[0], "directive table"
assert "# Machine" in t[0] and "CPU:" in t[0], "probed machine"
assert "// CUCO-PARAM tile=128" in t[0], "parent code"
assert "state the directives you choose and why" in t[0]
assert "fenced code block" in t[1], "full rewrite format"
assert "# Recent failures on this island" in t[4], "failures fed back"
assert "malformed patch" in t[4]
assert "Second parent" in t[4] and "Combine the strengths" in t[4], "cross prompt"
assert "What paid so far" in t[4] and "Keep order=b" in t[4], "meta recommendations in later prompts"
assert "statistics of an evolutionary search" in t[3] and "Directive values" in t[3], "meta prompt"
temps = [b.get("temperature") for b in bodies]
assert all(x is not None for x in temps), temps
PY
then ok "prompts carry format, directives, machine, code, failures, meta"; else not_ok "prompt contents" "see above"; fi
expect_grep "summary reports LLM cost" "$TMP/run.out" '^candidates: 7 \(5 correct, 2 failed, 0 rejected before evaluation\) \+ 1 duplicate \(not evaluated\); LLM: yes, \$0\.0'
done_testing
