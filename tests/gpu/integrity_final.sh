#!/bin/bash
# tests/gpu/integrity_final.sh - issues 47 and 52 after the session's
# changes, one call: the kv_transfer seed's verify REPS times with the
# sandbox off and on, alternating (the host-clock check must not refuse an
# honest seed), then the gemm_allgather cheat suite under the judge and
# the sandbox (every cheat refused at its stage, the two new classes at the
# allowlist).
#   OUT=dir REPS=3 bash tests/gpu/integrity_final.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
W=$(mktemp -d /tmp/cuco-if.XXXXXX)
T=$OUT/integrity_final.txt
./cuco doctor 2>&1 | grep -A2 -iE '^sandbox|^judge' >"$T"
for r in $(seq "${REPS:-3}"); do
  for mode in none bwrap; do
    s=$(date +%s)
    CUCO_SANDBOX=$mode timeout 120 ./cuco eval workloads/kv_transfer --no-bench --json \
      --out "$W/kv-$mode-$r" >"$OUT/kv-$mode-$r.json" 2>"$W/kv-$mode-$r.log"
    echo "kv_transfer verify sandbox=$mode round $r: exit $? ($(($(date +%s) - s)) s) $(grep -E '^seed.cu: ' "$W/kv-$mode-$r.log" | cut -c1-300)" >>"$T"
  done
done
s=$(date +%s)
timeout ${CHEAT_LIMIT:-300} ./cuco eval workloads/gemm_allgather --cheats --no-bench >"$W/cheats.log" 2>&1
echo "gemm_allgather cheats (judge + sandbox): exit $? after $(($(date +%s) - s)) s" >>"$T"
grep -E "as expected|NOT|cheats:|caught|escaped|passed" "$W/cheats.log" | cut -c1-260 >>"$T"
tar czf "$OUT/logs.tgz" -C "$W" $(cd "$W" && ls *.log) 2>/dev/null
cat "$T"
