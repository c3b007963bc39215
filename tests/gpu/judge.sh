#!/bin/bash
# tests/gpu/judge.sh - the judge outside the judged (issue 52) on the GPU:
# every workload in WLS through `cuco eval --impl all --json` twice in one
# call, with the judge in its own process (the default) and in-process
# (CUCO_JUDGE=in-process, today's design), alternating, so the seeds'
# ratios against the bar and the split's cost per step come from the same
# machine.  Then CHEAT_WLS="...": the cheat suite of each under the judge.
#   OUT=dir WLS="gemm_allgather kv_transfer" bash tests/gpu/judge.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
WLS=${WLS:-"gemm_allgather kv_transfer moe_dsv3 flash_attn_cp"}
MODES=${MODES:-"separate in-process"}
W=$(mktemp -d /tmp/cuco-judge.XXXXXX)
./cuco doctor 2>&1 | head -20
for wl in $WLS; do
  for mode in $MODES; do
    s=$(date +%s)
    CUCO_JUDGE=$mode timeout ${EV_LIMIT:-300} ./cuco eval "workloads/$wl" --impl all --json \
      ${SIZES:+--sizes $SIZES} --out "$W/$wl-$mode" >"$OUT/$wl-$mode.json" 2>"$W/$wl-$mode.log"
    echo "=== $wl $mode: exit $? after $(($(date +%s) - s)) s"
    grep -E "verify|bench|FAIL|error|vs_bar|judge" "$W/$wl-$mode.log" | tail -n 25
  done
done
for wl in ${CHEAT_WLS:-}; do
  s=$(date +%s)
  timeout ${CHEAT_LIMIT:-240} ./cuco eval "workloads/$wl" --cheats --no-bench >"$W/$wl-cheats.log" 2>&1
  echo "=== $wl cheats (judge separate): exit $? after $(($(date +%s) - s)) s"
  grep -E "as expected|NOT|cheats:|caught|escaped|passed" "$W/$wl-cheats.log" | tail -n 40
done
# one RESULT.json of each kind, and every log
find "$W" -name 'RESULT.json*' ! -name '*progress' | head -400 | tar czf "$OUT/results.tgz" -T - 2>/dev/null
tar czf "$OUT/logs.tgz" -C "$W" $(cd "$W" && ls *.log) 2>/dev/null
