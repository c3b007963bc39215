#!/bin/bash
# Budgets: --budget-usd stops new LLM calls once the recorded calls cost
# that much; --time-limit stops handing out candidates; both end with the
# summary naming why.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fakellm.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
WL=$ROOT/tests/data/evolve/landscape
cd "$TMP" || exit 1
fakellm_start "$ROOT/tests/data/evolve/llm_mix" || exit 1
cat >"$TMP/cuco.ini" <<INI
[llm]
provider = openai
model = gpt-4.1
base_url = $FAKELLM_URL/v1
timeout = 10
max_retries = 0
[evolve]
edit_sequence = diff, full
meta_every = 0
INI
# one call costs 1500 x 2/M + 400 x 8/M = $0.0062 (gpt-4.1 default prices)
expect_rc "budget run ends cleanly" 0 "$CUCO" --config "$TMP/cuco.ini" evolve "$WL" \
  --generations 6 --islands 1 --budget-usd 0.005 --out "$TMP/b"
cp "$TMP/out" "$TMP/b.out"
fakellm_stop
[ "$(fakellm_requests)" = 1 ] && ok "no call after the budget was spent" ||
  not_ok "one call" "$(fakellm_requests) calls"
expect_grep "summary names the budget" "$TMP/b.out" "^== cuco evolve landscape: LLM budget spent ==$"
expect_grep "summary shows the cost" "$TMP/b.out" 'LLM: yes, \$0\.0062'
[ "$(sqlite3 "$TMP/b/run.db" "select round(spent_usd, 4) from runs")" = 0.0062 ] &&
  ok "runs.spent_usd recorded" || not_ok "spent" "$(sqlite3 "$TMP/b/run.db" 'select spent_usd from runs')"

expect_rc "time-limited run ends cleanly" 0 "$CUCO" evolve "$WL" --llm none \
  --generations 500 --islands 2 --time-limit 3 --out "$TMP/t"
cp "$TMP/out" "$TMP/t.out"
expect_grep "summary names the time limit" "$TMP/t.out" "^== cuco evolve landscape: time limit reached ==$"
n=$(sqlite3 "$TMP/t/run.db" "select count(*) from programs where edit_kind <> 'migrate'")
[ "$n" -ge 1 ] && [ "$n" -lt 100 ] && ok "stopped early ($n candidates)" || not_ok "stopped early" "$n candidates"
[ "$(sqlite3 "$TMP/t/run.db" "select count(*) from programs where status in ('pending', 'running')")" = 0 ] &&
  ok "in-flight candidates finished" || not_ok "in-flight finished" "unfinished rows"
done_testing
