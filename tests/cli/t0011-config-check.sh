#!/bin/bash
# Configuration mistakes are not silent (issue 48): an unknown key or
# section of cuco.ini or workload.ini is an error naming the file, the line
# and the nearest valid name; a key written in the file, and an LLM that
# cannot be used, make `cuco evolve` exit non-zero with the reason.
. "$(dirname "$0")/lib.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG OPENAI_API_KEY
LAND=$ROOT/tests/data/evolve/landscape
cd "$TMP" || exit 1

# cuco.ini in the working folder: named as the user wrote it
printf '[llm]\nprovider = openai\nmodle = gpt-4.1\n' >cuco.ini
expect_rc "a typo in [llm] is an error" 1 "$CUCO" doctor
expect_grep "... naming file, line, key and the nearest valid key" "$TMP/err" \
  "^cuco: cuco\.ini:3: unknown key 'modle' in \[llm\] \(did you mean 'model'\?\)$"
printf '[llm]\nmodel = gpt-4.1\n[evolv]\nmeta_every = 0\n' >cuco.ini
expect_rc "an unknown section is an error" 1 "$CUCO" doctor
expect_grep "... with the nearest section" "$TMP/err" \
  "^cuco: cuco\.ini:4: unknown section \[evolv\] \(did you mean \[evolve\]\?\)$"
printf '[models.claude]\nmodel = claude-sonnet-4-5\n' >cuco.ini
expect_rc "[models.NAME] is an error" 1 "$CUCO" doctor
expect_grep "... pointing at [model.NAME]" "$TMP/err" "did you mean \[model\.claude\]\?"
printf '[evolve]\nbudget_usd = 5\n' >cuco.ini
expect_rc "a key in the wrong section is an error" 1 "$CUCO" doctor
expect_grep "... saying where it belongs" "$TMP/err" \
  "cuco\.ini:2: unknown key 'budget_usd' in \[evolve\] \(it is a key of \[llm\]\)"
printf '[llm]\nzzz = 1\n' >cuco.ini
expect_rc "a key near nothing is an error" 1 "$CUCO" doctor
expect_grep "... listing the valid keys" "$TMP/err" "unknown key 'zzz' in \[llm\] \(valid: provider, model, "
# every documented section and key passes
cat >cuco.ini <<'INI'
[llm]
provider = openai
model = gpt-4.1
base_url = http://127.0.0.1:9/v1
api_key_env = CUCO_T0011_KEY
timeout = 5
connect_timeout = 1
max_retries = 0
retry_base = 1
retry_max = 2
max_response_bytes = 1MiB
max_tokens = 100
price_in = 0
price_out = 0
weight = 1
anthropic_version = 2023-06-01
reasoning = no
budget_usd = 1
[model.second]
model = other
[embed]
model = text-embedding-3-small
[evolve]
migrate_every = 4
selection = weighted
[launch]
launcher = local
[build]
arch = sm_90a
[sandbox]
mode = auto
[transform]
max_iters = 2
INI
expect_rc "the documented keys are accepted" 0 "$CUCO" doctor
expect_rc "the environment's settings are not checked as file keys" 0 env CUCO_LLM_MODEL=x "$CUCO" doctor
rm cuco.ini

# A key written in the file is refused, and evolve stops on it (exit 1)
printf '[llm]\nmodel = gpt-4.1\napi_key = sk-t0011-secret-0000\n' >"$TMP/key.ini"
expect_rc "an API key in the file: evolve exits 1" 1 "$CUCO" --config "$TMP/key.ini" \
  evolve "$LAND" --generations 1 --islands 1 --out "$TMP/rkey"
expect_grep "... with the reason" "$TMP/err" \
  "key\.ini:3: \[llm\] api_key: cuco never reads an API key from a file; put it in an environment variable and set api_key_env"
expect_no_grep "... never echoing the key" "$TMP/err" "sk-t0011"
expect_no_grep "... and no run that says 'LLM not usable' as if done" "$TMP/out" "LLM not usable =="

# No key in the environment: the run fails with the reason, not exit 0
printf '[llm]\nmodel = gpt-4.1\n[evolve]\nmeta_every = 0\n' >"$TMP/nokey.ini"
expect_rc "an LLM without its key: evolve exits 1" 1 "$CUCO" --config "$TMP/nokey.ini" \
  evolve "$LAND" --generations 1 --islands 1 --out "$TMP/rnokey"
expect_grep "... naming the variable" "$TMP/err" \
  "^cuco evolve: LLM not usable: .*OPENAI_API_KEY.* is not set"
expect_grep "... and the summary says failed" "$TMP/out" "^== cuco evolve landscape: failed: LLM not usable =="

# workload.ini: the same rule, [sizes] and [params] keep their own names
cp -r "$LAND" "$TMP/wl"
sed -i 's/^description /descripton /' "$TMP/wl/workload.ini"
expect_rc "a typo in workload.ini is an error" 1 "$CUCO" eval "$TMP/wl" --static-only
expect_grep "... naming file, line and the nearest key" "$TMP/err" \
  "wl/workload\.ini:9: unknown key 'descripton' in \[workload\] \(did you mean 'description'\?\)"
cp "$LAND/workload.ini" "$TMP/wl/workload.ini"
sed -i 's/^\[sizes\]/[size]/' "$TMP/wl/workload.ini"
expect_rc "an unknown workload.ini section is an error" 1 "$CUCO" eval "$TMP/wl" --static-only
expect_grep "... with the nearest section" "$TMP/err" "unknown section \[size\] \(did you mean \[sizes\]\?\)"
cp "$LAND/workload.ini" "$TMP/wl/workload.ini"
printf '[sizes]\nodd_name_7 = N=7\n' >>"$TMP/wl/workload.ini"
# (its [params] names order, tile and unroll: free names as well)
expect_rc "free names in [sizes] and [params] stay legal" 0 "$CUCO" eval "$TMP/wl" --static-only
done_testing
