#!/bin/bash
# tests/gpu/diag2.sh - issue 23, second look: WHERE the host threads of a
# hung --vranks run wait.  diag.sh (at e70cc03; removed once answered)
# showed that binding the cuBLAS handles in setup did not cure it (moe_dsv3 --vranks 4 v_t7: rank 2's combine barrier
# timed out waiting for ranks 0 and 3, and rank 0's cublasGemmEx then failed;
# kv_transfer --vranks 2: one host thread busy, the others asleep).  The GPU
# image has no gdb but has cuda-gdb, which attaches as root: this takes every
# thread's backtrace of the rank binary a few seconds into the hang.
# First run (2026-12-02) found cuBLASLt's lazy cuLibraryLoadData; this
# version asks what is left after the warm-ups (docs/vranks.md).
# Carry ./cuco and .gpulibs/.  Writes diag2.txt under $OUT as it goes.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_script_dirs
gpu_cuco_env "$ROOT" /tmp/diag2-cache
D=$OUT/diag2.txt; : >"$D"
export CUCO_SANDBOX=none
GDB=$(command -v cuda-gdb || ls /usr/local/cuda*/bin/cuda-gdb 2>/dev/null | head -1)
echo "cuda-gdb: ${GDB:-none}" >>"$D"
W=/tmp/diag2; mkdir -p $W
T0=$(date +%s)
# sample DIR PATTERN WAIT: once a rank binary under DIR whose command line
# matches PATTERN has run WAIT s, every thread's backtrace (twice, 4 s apart).
sample() {
  local p="" i
  for i in $(seq 1 200); do p=$(pgrep -f "$1/.*\.bin .*$2" | head -1); [ -n "$p" ] && break; sleep 0.25; done
  [ -z "$p" ] && { echo "## no process matching $2" >>"$D"; return; }
  sleep "$3"
  for k in 1 2; do
    [ -d /proc/$p ] || break
    echo "## pid $p sample $k at $(( $(date +%s) - T0 )) s: $(tr '\0' ' ' </proc/$p/cmdline | cut -c1-160)"
    for t in /proc/$p/task/*; do echo "  task ${t##*/} $(cat $t/comm) $(cat $t/wchan 2>/dev/null)"; done
    if [ -n "$GDB" ]; then
      timeout 45 "$GDB" -batch -nx -p "$p" -ex 'set pagination off' -ex 'thread apply all bt 25' 2>&1 \
        | grep -E '^#|^Thread' | cut -c1-240 | head -400
    fi
    sleep 4
  done >>"$D" 2>&1
}
# 1. kv_transfer --vranks 2: still hung after kv_core_warm (2026-12-02):
#    where now?
echo "== kv_transfer --vranks 2 (start $(( $(date +%s) - T0 )) s)" >>"$D"
sample $W/kv v_tiny 6 &
timeout 100 ./cuco eval workloads/kv_transfer --vranks 2 --no-bench --sizes v_tiny --timeout 50 --out $W/kv >$W/kv.txt 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s" >>"$D"; wait
tail -3 $W/kv.txt | cut -c1-300 >>"$D"
# 2. moe_dsv3 --vranks 8 v_t7: SM room?  The seed (16 CTAs) sampled, then
#    the same with comm_ctas=8 (64 spinning CTAs, not 128; 8 is the smallest choice): if only the
#    second passes, the spinners starve the GEMMs of whole SMs.
echo "== moe_dsv3 --vranks 8 v_t7 (start $(( $(date +%s) - T0 )) s)" >>"$D"
sample $W/moe v_t7 6 &
timeout 100 ./cuco eval workloads/moe_dsv3 --vranks 8 --no-bench --sizes v_t7 --timeout 60 --out $W/moe >$W/moe.txt 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s" >>"$D"; wait
tail -2 $W/moe.txt | cut -c1-300 >>"$D"
cp workloads/moe_dsv3/seed.cu $W/c8.cu
sed -i -E -e '/^\/\/ CUCO-DIRECTIVES /s/ comm_ctas=[^ ]*/ comm_ctas=8/' \
  -e 's/^\/\/ CUCO-PARAM comm_ctas=.*/\/\/ CUCO-PARAM comm_ctas=8/' $W/c8.cu
grep -n 'comm_ctas' $W/c8.cu | head -3 >>"$D"
timeout 100 ./cuco eval workloads/moe_dsv3 --candidate $W/c8.cu --vranks 8 --no-bench --timeout 60 --out $W/moe8 >$W/moe8.txt 2>&1
echo "comm_ctas=8: rc=$? at $(( $(date +%s) - T0 )) s" >>"$D"
tail -2 $W/moe8.txt | cut -c1-300 >>"$D"
echo "total $(( $(date +%s) - T0 )) s" >>"$D"
