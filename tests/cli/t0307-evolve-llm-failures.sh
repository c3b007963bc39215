#!/bin/bash
# cuco evolve against LLM failures (fake server): a run in which every LLM
# call failed (401) ends non-zero with one clear line instead of "done";
# a seed with a byte that is not UTF-8 still gets every request sent (the
# prompt is cleaned, not refused as "invalid UTF-8 in the prompt").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fakellm.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
export EVOLVE_TEST_KEY=sk-test-evolve-0000
cd "$TMP" || exit 1
ini() {
  cat >"$TMP/cuco.ini" <<INI
[llm]
provider = openai
model = gpt-4.1
base_url = $FAKELLM_URL/v1
api_key_env = EVOLVE_TEST_KEY
timeout = 10
max_retries = 0
[evolve]
meta_every = 0
INI
}

# 1. every call answered 401 (then 410: scenario exhausted)
fakellm_start "$ROOT/tests/data/llm/openai/unauthorized" || exit 1
ini
expect_rc "a run with no successful LLM call fails" 1 "$CUCO" --config "$TMP/cuco.ini" \
  evolve "$ROOT/tests/data/evolve/landscape" --generations 2 --islands 1 --seed 1 --out "$TMP/r401"
expect_grep "the error line says no LLM call succeeded" "$TMP/err" \
  "^cuco evolve: none of the [0-9]+ LLM calls succeeded \(last: (auth|http): .*cuco doctor --llm"
expect_no_grep "the summary does not say done" "$TMP/out" "^== cuco evolve landscape: done =="
expect_grep "the summary says why" "$TMP/out" "^== cuco evolve landscape: failed: none of [0-9]+ LLM calls succeeded =="
expect_no_grep "our key is never shown" "$TMP/err" "sk-test-evolve"
fakellm_stop

# 2. a seed with an invalid UTF-8 byte in its frozen text
mkdir -p "$TMP/wl"
cp "$ROOT/tests/data/evolve/landscape/workload.ini" "$TMP/wl/"
{ printf '/* caf\xe9 (latin-1, not UTF-8) */\n'; cat "$ROOT/tests/data/evolve/landscape/seed.c"; } >"$TMP/wl/seed.c"
fakellm_start "$ROOT/tests/data/llm/openai/four_ok" || exit 1
ini
"$CUCO" --config "$TMP/cuco.ini" evolve "$TMP/wl" --generations 2 --islands 1 --seed 1 \
  --out "$TMP/rutf" >"$TMP/out" 2>"$TMP/err"
fakellm_stop
n=$(fakellm_requests)
if [ "$n" -ge 1 ]; then ok "the mutation requests were sent ($n)"; else not_ok "the mutation requests were sent" "$n requests; $(tail -c 600 "$TMP/err")"; fi
expect_no_grep "no request failed to encode" "$TMP/err" "cannot encode the request"
bad=$(sqlite3 "$TMP/rutf/run.db" "select count(*) from llm_calls where outcome != 'ok'")
[ "$bad" = 0 ] && ok "every recorded call is ok" || not_ok "every recorded call is ok" "$(sqlite3 "$TMP/rutf/run.db" "select outcome, error from llm_calls")"
if python3 -c 'import json,sys
for l in open(sys.argv[1]):
    body = json.loads(l).get("body") or ""
    body = body if isinstance(body, str) else json.dumps(body)
    assert "caf?" in body or "caf\\ufffd" in body or "caf?" in json.dumps(body), body[:200]
' "$FAKELLM_LOG" 2>"$TMP/py.err"; then ok "the stray byte reached the model as '?'"
else not_ok "the stray byte reached the model as '?'" "$(head -c 400 "$TMP/py.err")"; fi
done_testing
