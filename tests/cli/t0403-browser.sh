#!/bin/bash
# Browser tests of cuco serve and cuco report (tests/browser/): Debian's
# chromium driven by playwright-core.
#  1. live: the page is opened while `cuco evolve examples/cpu_matmul
#     --llm none` is still writing its database; every candidate appears.
#  2. the finished database of that real CPU run.
#  3. a real run with an LLM (the fake server replaying tests/data/evolve/
#     llm_mix: diffs, full rewrites, a crossover, failures, LLM calls).
#  4. the fixture database (failures at every stage, markup in LLM text).
# Screenshots and reports: tests/browser/artifacts/ (ignored by git).
# CUCO_SKIP_BROWSER=1 skips them, and says so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fakellm.sh"
if [ "${CUCO_SKIP_BROWSER:-0}" = 1 ]; then
  echo "ok 1 - # SKIP browser tests (CUCO_SKIP_BROWSER=1)"
  done_testing
  exit 0
fi
B="$ROOT/tests/browser/run.sh"
# run_part LABEL ARGS...: run the browser test, keep its result lines.
run_part() {
  local label=$1; shift
  CUCO_BROWSER_LABEL="$label: " timeout 300 "$B" "$@" >"$TMP/part.out" 2>"$TMP/part.err"
  local rc=$?
  grep -E '^(not )?ok |^# ' "$TMP/part.out" | sed -E 's/^(not )?ok [0-9]+/\1ok/' >"$TMP/part.tap"
  while IFS= read -r line; do
    case "$line" in
    ok*) ok "${line#ok - }" ;;
    "not ok"*) not_ok "${line#not ok - }" "see below" ;;
    *) echo "$line" ;;
    esac
  done <"$TMP/part.tap"
  [ "$rc" -eq 0 ] || [ -s "$TMP/part.tap" ] || not_ok "$label browser test ran" "$(tail -5 "$TMP/part.err")"
}

mkdir -p "$TMP/live"
# About ten candidates.  The search is held (SIGSTOP) from its first
# candidate until the page is up (test.mjs writes CUCO_BROWSER_READY), so
# the page opens on a search in progress however loaded the machine is,
# without a long search (25 candidates once, ~45 s of CPU) to make it
# likely.  Held 60 s at most: a run's own time limit is 120 s.
( "$CUCO" evolve "$ROOT/examples/cpu_matmul" --llm none --generations 4 \
    --islands 2 --out "$TMP/live" >"$TMP/live.log" 2>&1 &
  echo $! >"$TMP/live.pid"; wait $!
  echo $? >"$TMP/live.rc"; touch "$TMP/live.done" ) &
for _ in $(seq 100); do
  [ -f "$TMP/live/run.db" ] && [ "$(sqlite3 "$TMP/live/run.db" 'SELECT count(*) FROM programs' 2>/dev/null)" -ge 1 ] 2>/dev/null && break
  sleep 0.1
done
evpid=$(cat "$TMP/live.pid" 2>/dev/null)
if [ -n "$evpid" ] && kill -STOP "$evpid" 2>/dev/null; then
  ( for _ in $(seq 600); do [ -e "$TMP/live.ready" ] && break; sleep 0.1; done
    kill -CONT "$evpid" 2>/dev/null ) &
fi
CUCO_BROWSER_READY=$TMP/live.ready run_part "live search" --live "$TMP/live/run.db" "$TMP/live.done"
[ -n "$evpid" ] && kill -CONT "$evpid" 2>/dev/null
wait
[ "$(cat "$TMP/live.rc" 2>/dev/null)" = 0 ] && ok "the CPU example search succeeded" ||
  not_ok "the CPU example search succeeded" "$(tail -5 "$TMP/live.log")"
CUCO_BROWSER_SHOT=-evolve run_part "evolve db" "$TMP/live/run.db"
unset CUCO_LLM_PROVIDER CUCO_LLM_BASE_URL CUCO_LLM_MODEL CUCO_LLM_API_KEY_ENV CUCO_CONFIG
export BROWSER_TEST_KEY=sk-test-browser-0000
if fakellm_start "$ROOT/tests/data/evolve/llm_mix"; then
  cat >"$TMP/cuco.ini" <<INI
[llm]
provider = openai
model = gpt-4.1
base_url = $FAKELLM_URL/v1
api_key_env = BROWSER_TEST_KEY
timeout = 10
max_retries = 0
[evolve]
edit_sequence = diff, full, diff, cross, diff, full
meta_every = 3
INI
  (cd "$TMP" && "$CUCO" --config "$TMP/cuco.ini" evolve "$ROOT/tests/data/evolve/landscape"     --generations 6 --islands 1 --seed 1 --out "$TMP/llm" >"$TMP/llm.log" 2>&1)
  rc=$?
  fakellm_stop
  [ $rc = 0 ] && ok "a search with the (fake) LLM ran" || not_ok "a search with the (fake) LLM ran" "$(tail -5 "$TMP/llm.log")"
  CUCO_BROWSER_SHOT=-llm run_part "evolve llm db" "$TMP/llm/run.db"
else
  not_ok "the fake LLM server started" "see above"
fi
CUCO_BROWSER_SHOT=-fixture run_part "fixture db"
done_testing
