#!/bin/bash
# tests/gpu/diag3.sh - the first GPU call after the side-stream perturbation
# (runtime/rt_streams.cu) and the --vranks co-residency rule
# (rt_coresident_max), one cuco eval at a time, under a deadline
# (DEADLINE s, default 500; ONLY="a b" runs only those named):
#   hog_on    issue 22: gemm_allgather's hog_race at 1 rank must be rejected
#             at perturb-hog now (its producer's stream starts late);
#             (that it is necessary, accepted with only it off: harden.sh);
#   gemm_r1, kv_r1, moe_r1  the honest seeds and baselines still pass the
#             hog step with their streams delayed;
#   moe_v8, moe_v4, moe_v2  issue 23: every verify size (the seed clamps its
#             spinning CTAs under --vranks);
#   kv_v2     the hang, sampled with cuda-gdb on the device side this time
#             (which kernel, which blocks; diag2 showed the host in
#             cudaDeviceSynchronize under vr_step).
# Carry ./cuco and .gpulibs/.  Writes diag3.txt (verdicts) and diag3.log.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_diag_env "$ROOT" diag3
DEADLINE=${DEADLINE:-500}
L=$OUT/diag3.log; : >"$L"
ev() { # name timeout args...
  local n=$1 t=$2; shift 2
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $n "* ]]; then return; fi
  if [ $(( $(date +%s) - T0 )) -gt "$DEADLINE" ]; then echo "SKIP $n (deadline)" >>"$D"; return; fi
  local s; s=$(date +%s)
  timeout $((t + 60)) ./cuco eval "$@" --timeout "$t" --out "$W/$n" >"$W/$n.txt" 2>&1; local rc=$?
  { echo "### $n rc=$rc $(( $(date +%s) - s )) s: cuco eval $*"; cat "$W/$n.txt"; } >>"$L"
  printf '%-4s %-10s rc=%d %4d s  %s\n' "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$n" $rc \
    $(( $(date +%s) - s )) "$(grep -E 'cheats:|: ok|failed:|rejected:|FAIL' "$W/$n.txt" | tail -1 | cut -c1-220)" >>"$D"
}
GDB=$(command -v cuda-gdb || ls /usr/local/cuda*/bin/cuda-gdb 2>/dev/null | head -1)
# dsample DIR PATTERN WAIT: the device side of a hung rank binary.
dsample() {
  local p=""
  for _ in $(seq 1 200); do p=$(pgrep -f "$1/.*\.bin .*$2" | head -1); [ -n "$p" ] && break; sleep 0.25; done
  [ -z "$p" ] || [ -z "$GDB" ] && { echo "## no process matching $2 (or no cuda-gdb)"; return; }
  sleep "$3"
  echo "## pid $p at $(( $(date +%s) - T0 )) s"
  timeout 60 "$GDB" -batch -nx -p "$p" -ex 'set pagination off' -ex 'info cuda kernels' \
    -ex 'info cuda blocks' -ex 'bt 8' -ex 'info cuda warps' 2>&1 | grep -v '^\[' | cut -c1-220 | head -120
}
./cuco eval workloads/gemm_allgather --write-cheats $W/ch >/dev/null 2>&1
grep -v 'CUCO-EXPECT-REJECT' $W/ch/hog_race.cu >$W/hog_race.cu
ev hog_on   60 workloads/gemm_allgather --candidate $W/hog_race.cu --ranks 1 --no-bench
ev gemm_r1  60 workloads/gemm_allgather --impl all --no-bench
ev moe_v8   90 workloads/moe_dsv3 --vranks 8 --no-bench
if [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" kv_v2 "* ]]; then
  dsample $W/kv_v2 v_tiny 8 >>"$L" 2>&1 &
  ev kv_v2  45 workloads/kv_transfer --vranks 2 --no-bench --sizes v_tiny
  wait
fi
ev kv_r1    90 workloads/kv_transfer --impl all --no-bench
ev moe_r1   90 workloads/moe_dsv3 --impl all --no-bench
ev moe_v4   90 workloads/moe_dsv3 --vranks 4 --no-bench
ev moe_v2   90 workloads/moe_dsv3 --vranks 2 --no-bench
echo "total $(( $(date +%s) - T0 )) s" >>"$D"
