#!/bin/bash
# cuco doctor: text and JSON, no secrets.
. "$(dirname "$0")/lib.sh"

export MY_SECRET_KEY="sk-test-do-not-print-1234"
export CUCO_LLM_API_KEY_ENV=MY_SECRET_KEY CUCO_LLM_PROVIDER=openai CUCO_LLM_MODEL=m1
expect_rc "doctor runs" 0 "$CUCO" doctor
expect_grep "doctor reports GPUs or their absence" "$TMP/out" "^gpus: "
expect_grep "doctor reports nccl" "$TMP/out" "^nccl: "
expect_no_grep "doctor never prints the key" "$TMP/out" "sk-test-do-not"
expect_rc "doctor --json runs" 0 "$CUCO" doctor --json -o "$TMP/m.json"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "gpus" in d and "count" in d["gpus"]; assert d["llm"]["api_key_set"] is True; assert d["llm"]["api_key_env"]=="MY_SECRET_KEY"' "$TMP/m.json"; then
  ok "doctor json has gpus and llm key presence"
else
  not_ok "doctor json has gpus and llm key presence" "$(cat "$TMP/m.json")"
fi
expect_no_grep "json never holds the key" "$TMP/m.json" "sk-test-do-not"
expect_rc "doctor rejects stray arguments" 2 "$CUCO" doctor extra
printf '#!/bin/sh\nexit 3\n' >"$TMP/nvcc"; chmod +x "$TMP/nvcc"
CUCO_NVCC="$TMP/nvcc" expect_rc "a broken nvcc is an error" 1 "$CUCO" doctor
expect_grep "broken nvcc is named" "$TMP/err" "toolchain is broken"
done_testing
