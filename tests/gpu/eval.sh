#!/bin/bash
# tests/gpu/eval.sh - `cuco eval` on a GPU machine (H200): the GEMM+AllGather
# workload's baselines and seed through the whole cascade, then its cheat
# suite, then the CPU example.  Writes at most 6 files to $OUT.
#
#   run from the repository root, with ./cuco built (carry it, and .gpulibs/
#   holding the .so files `ldd ./cuco` misses there), e.g.
#     RANKS=1 tests/gpu/eval.sh        (default RANKS=1; 2/4/8 on bigger hosts)
#   PART=impls | cheats | all (default all): split it over two calls when
#   one would pass the 10-minute limit; the object cache lives in
#   build/cuco-cache, so the second call reuses the first one's objects.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_script_dirs
gpu_cuco_env "$ROOT" "$ROOT/build/cuco-cache"
PART=${PART:-all}
WORK=$(mktemp -d /tmp/cuco-gpu-eval.XXXXXX)
log=$OUT/eval-gpu.txt
{
  echo "# cuco eval on $(hostname), $(date -u +%FT%TZ), ranks=$RANKS"
  if ! ./cuco --version; then
    echo "cuco does not run here: ldd says"; ldd ./cuco | grep 'not found'
    exit 1
  fi
  ./cuco doctor
} >"$log" 2>&1 || { cat "$log"; exit 1; }
./cuco doctor --json -o "$OUT/machine.json" >/dev/null 2>&1

status=0
# 1. baselines + seed: static, build, verify (small sizes), bench (full sizes)
if [ "$PART" != cheats ]; then
  ./cuco eval workloads/gemm_allgather --impl all --ranks "$RANKS" \
    --out "$WORK/all" --json >"$OUT/eval-all.json" 2>>"$log" || status=1
fi
# 2. the cheat suite: each cheat rejected at its expected stage
if [ "$PART" != impls ]; then
  ./cuco eval workloads/gemm_allgather --cheats --ranks "$RANKS" \
    --no-bench --timeout 120 --out "$WORK/cheats" >>"$log" 2>&1 || status=1
fi
# 3. the freeform CPU example (no GPU involved)
./cuco eval examples/cpu_matmul >>"$log" 2>&1 || status=1
# the seed's logs (build and per-rank output), for a failure's details
for f in build.log run.log; do
  [ -f "$WORK/all/seed/$f" ] && tail -c 200000 "$WORK/all/seed/$f" >"$OUT/seed-$f"
done
echo "# exit $status" >>"$log"
rm -rf "$WORK"
cat "$log"
exit $status
