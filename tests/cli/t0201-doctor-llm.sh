#!/bin/bash
# cuco doctor --llm against the fake LLM server: one tiny request per
# configured model, non-zero exit when one fails, the key never shown.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fakellm.sh"

KEY=sk-test-secret-value-0000   # the 401 scenario echoes exactly this
export MY_SECRET="$KEY"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
D=$ROOT/tests/data/llm

write_ini() { # URL
  cat >"$TMP/cuco.ini" <<INI
[llm]
provider = openai
model = gpt-4.1
base_url = $1/v1
api_key_env = MY_SECRET
timeout = 5
max_retries = 0
[model.second]
model = gpt-4o-mini
weight = 2
INI
}

fakellm_start "$D/doctor" || exit 1
write_ini "$FAKELLM_URL"
expect_rc "doctor --llm passes when every model answers" 0 \
  "$CUCO" -v --config "$TMP/cuco.ini" doctor --llm
expect_grep "first model checked" "$TMP/out" "^llm check: default +openai +gpt-4\.1 +ok "
expect_grep "second model checked" "$TMP/out" "^llm check: second +openai +gpt-4o-mini +ok "
fakellm_stop
[ "$(fakellm_requests)" = 2 ] && ok "one request per model" || not_ok "one request per model" "$(fakellm_requests) requests"
if python3 - "$FAKELLM_LOG" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
assert [r["path"] for r in reqs] == ["/v1/chat/completions"] * 2
assert reqs[0]["headers"]["authorization"] == "Bearer sk-test-secret-value-0000"
b = [json.loads(r["body"]) for r in reqs]
assert [x["model"] for x in b] == ["gpt-4.1", "gpt-4o-mini"], b
assert b[0]["messages"] == [{"role": "user", "content": "Reply with the word ok."}], b
assert b[0]["max_tokens"] == 16 and "temperature" not in b[0], b
PY
then ok "the exact requests"; else not_ok "the exact requests" "$(head -c 600 "$FAKELLM_LOG")"; fi
cat "$TMP/out" "$TMP/err" >"$TMP/all"
expect_no_grep "the key is not printed (ok case)" "$TMP/all" "$KEY"

fakellm_start "$D/doctor_fail" || exit 1
write_ini "$FAKELLM_URL"
expect_rc "doctor --llm fails when a model fails" 1 \
  "$CUCO" -v --config "$TMP/cuco.ini" doctor --llm
expect_grep "the failing model is named with its outcome" "$TMP/out" \
  "^llm check: second +openai +gpt-4o-mini +auth .*HTTP 401.*MY_SECRET"
expect_grep "the summary says how many failed" "$TMP/err" "1 of the configured models failed"
cat "$TMP/out" "$TMP/err" >"$TMP/all"
expect_no_grep "the key is not printed even when the server echoes it" "$TMP/all" "$KEY"

fakellm_start "$D/doctor_fail" || exit 1
write_ini "$FAKELLM_URL"
expect_rc "doctor --llm --json fails too" 1 \
  "$CUCO" --config "$TMP/cuco.ini" doctor --llm --json -o "$TMP/d.json"
if python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["llm"]["check"]
assert [x["outcome"] for x in c] == ["ok", "auth"], c
assert c[0]["passed"] and not c[1]["passed"] and c[0]["tokens_in"] == 1200
' "$TMP/d.json"; then ok "json carries the check"; else not_ok "json carries the check" "$(head -c 600 "$TMP/d.json")"; fi
expect_no_grep "the key is not in the json" "$TMP/d.json" "$KEY"

# The environment overrides the file for the default model.
fakellm_start "$D/anthropic/ok" || exit 1
printf '[llm]\nprovider = openai\nmodel = gpt-4.1\n' >"$TMP/env.ini"
CUCO_LLM_PROVIDER=anthropic CUCO_LLM_BASE_URL="$FAKELLM_URL/v1" \
  CUCO_LLM_MODEL=claude-haiku-4-5 CUCO_LLM_API_KEY_ENV=MY_SECRET \
  expect_rc "CUCO_LLM_* select an Anthropic model" 0 \
  "$CUCO" --config "$TMP/env.ini" doctor --llm
expect_grep "anthropic model checked" "$TMP/out" "^llm check: default +anthropic +claude-haiku-4-5 +ok "
fakellm_stop
if python3 -c '
import json, sys
r = json.loads(open(sys.argv[1]).readline())
assert r["path"] == "/v1/messages" and r["headers"]["x-api-key"] == "sk-test-secret-value-0000"
assert r["headers"]["anthropic-version"] == "2023-06-01"
assert json.loads(r["body"])["model"] == "claude-haiku-4-5"
' "$FAKELLM_LOG"; then ok "anthropic request shape"; else not_ok "anthropic request shape" "$(head -c 600 "$FAKELLM_LOG")"; fi

printf '[build]\n' >"$TMP/none.ini"
expect_rc "no model configured is an error" 1 "$CUCO" --config "$TMP/none.ini" doctor --llm
expect_grep "and says what to set" "$TMP/err" "no LLM model is configured"

printf '[llm]\nmodel = gpt-4.1\napi_key_env = %s\n' "$KEY" >"$TMP/bad.ini"
expect_rc "a key pasted into api_key_env is refused" 1 "$CUCO" --config "$TMP/bad.ini" doctor --llm
expect_grep "the error explains api_key_env" "$TMP/err" "bad.ini:3: api_key_env must be the NAME"
cat "$TMP/out" "$TMP/err" >"$TMP/all"
expect_no_grep "and does not echo the pasted key" "$TMP/all" "$KEY"

unset MY_SECRET
printf '[llm]\nmodel = gpt-4.1\nbase_url = http://127.0.0.1:1/v1\napi_key_env = MY_SECRET\n' >"$TMP/nokey.ini"
expect_rc "an unset key variable fails the check" 1 "$CUCO" --config "$TMP/nokey.ini" doctor --llm
expect_grep "naming the variable" "$TMP/out" "nokey .*MY_SECRET"
done_testing
