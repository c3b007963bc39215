#!/bin/bash
# cuco evolve with an [embed] endpoint: novelty is the cosine similarity of
# embeddings; a candidate too close to a correct program is stored
# rejected and not evaluated, the retry is evaluated, and programs already
# embedded are not embedded again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fakellm.sh"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
WL=$ROOT/tests/data/evolve/landscape
OUT=$TMP/run
cd "$TMP" || exit 1
fakellm_start "$ROOT/tests/data/evolve/llm_embed" || exit 1
cat >"$TMP/cuco.ini" <<INI
[llm]
provider = openai
model = gpt-4.1
base_url = $FAKELLM_URL/v1
timeout = 10
max_retries = 0
[embed]
model = text-embedding-3-small
base_url = $FAKELLM_URL/v1
[evolve]
edit_sequence = full
meta_every = 0
INI
expect_rc "run with embeddings succeeds" 0 "$CUCO" --config "$TMP/cuco.ini" evolve "$WL" \
  --generations 1 --islands 1 --out "$OUT"
fakellm_stop
paths=$(python3 -c 'import json,sys; print(" ".join(json.loads(l)["path"] for l in open(sys.argv[1])))' "$FAKELLM_LOG")
[ "$paths" = "/v1/chat/completions /v1/embeddings /v1/chat/completions /v1/embeddings" ] &&
  ok "mutate, embed, mutate, embed" || not_ok "request order" "$paths"
n_in=$(python3 -c 'import json,sys; r=[json.loads(json.loads(l)["body"]) for l in open(sys.argv[1])]; print(len(r[1]["input"]), len(r[3]["input"]))' "$FAKELLM_LOG")
[ "$n_in" = "2 1" ] && ok "the seed is embedded once, then only the candidate" ||
  not_ok "embedding inputs" "$n_in"
q() { sqlite3 "$OUT/run.db" "$1"; }
expect_grep "rejected by cosine similarity" <(q "select error from programs where status = 'rejected'") \
  "^novelty: 0\.999[0-9] similar to program 1 \(threshold 0\.995\); not evaluated$"
[ "$(q "select count(*) from programs where status = 'rejected' and started_at is null")" = 1 ] &&
  ok "the rejected candidate was not evaluated" || not_ok "rejected not evaluated" "$(q 'select * from programs')"
[ "$(q "select median_ms from programs where status = 'ok' and generation = 1")" = 1.0 ] &&
  ok "the retry was evaluated" || not_ok "retry evaluated" "$(q 'select id, status, median_ms from programs')"
[ "$(q "select count(*) from llm_calls where purpose = 'embed'")" = 2 ] &&
  ok "embedding calls recorded" || not_ok "embed calls" "$(q 'select purpose from llm_calls')"
done_testing
