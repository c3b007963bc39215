#!/bin/bash
# tests/gpu/diag2.sh - issue 23, second look: WHERE the host threads of a
# hung --vranks run wait.  diag.sh (at e70cc03; removed once answered)
# showed that binding the cuBLAS handles in setup did not cure it (moe_dsv3 --vranks 4 v_t7: rank 2's combine barrier
# timed out waiting for ranks 0 and 3, and rank 0's cublasGemmEx then failed;
# kv_transfer --vranks 2: one host thread busy, the others asleep).  The GPU
# image has no gdb but has cuda-gdb, which attaches as root: this takes every
# thread's backtrace of the rank binary a few seconds into the hang.
# First run (2026-12-02) found cuBLASLt's lazy cuLibraryLoadData; this
# version asks what is left after the warm-ups (docs/vranks.md), and one
# question of issue 22 (the hog_race probe, part 3).
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
  local p=""
  for _ in $(seq 1 200); do p=$(pgrep -f "$1/.*\.bin .*$2" | head -1); [ -n "$p" ] && break; sleep 0.25; done
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
# 3. issue 22: gemm_allgather's hog_race is accepted at 1 rank, though its
#    32-thread consumer should time out beside the hog (ptxas: k_hog 16
#    registers, ce_consume 14, ce_produce 10; 62 hog warps per SM leave room
#    for the consumer only).  One bit: the probe is the cheat plus a mark,
#    NaN in C[0] after the GEMM of any step where the consumer's 200 us wait
#    ran out.  Verdict "verify failed at perturb-hog": it did time out
#    there, so the flip happened and something else hid it; a pass: it
#    never timed out, so the producer ran beside the hog; a failure at a
#    plain step: it times out without the hog too.
echo "== gemm_allgather hog_race probe, 1 rank (start $(( $(date +%s) - T0 )) s)" >>"$D"
./cuco eval workloads/gemm_allgather --write-cheats $W/ch >/dev/null 2>&1
if [ -f $W/ch/hog_race.cu ]; then
  python3 - $W/ch/hog_race.cu $W/probe.cu <<'PY'
import sys
s = open(sys.argv[1]).read()
s = "\n".join(l for l in s.split("\n") if "CUCO-EXPECT-REJECT" not in l)
wait = "    } while (atomicAdd(flag, 0ull) < ep && t - t0 < 200000ull);\n"
assert wait in s, "hog_race.cu changed: its wait loop is not found"
s = s.replace(wait, wait + "    if (atomicAdd(flag, 0ull) < ep) g_probe_out = ep;\n")
decl = "__global__ void __launch_bounds__(32) ce_consume("
s = s.replace(decl, "__device__ unsigned long long g_probe_out;\n"
              "__global__ void probe_mark(unsigned short *c, unsigned long long ep) {\n"
              "  if (g_probe_out == ep) c[0] = 0x7FC0;\n}\n" + decl)
run = "  if (own_rows_run(ctx, u, &g_own, (const char *)g_hstage, 0, st) != 0) return -1;\n"
assert run in s, "hog_race.cu changed: its GEMM call is not found"
s = s.replace(run, run + "  probe_mark<<<1, 1, 0, st>>>((unsigned short *)u->C, rt_epoch(ctx));\n"
              "  RT_LAUNCH(ctx);\n")
open(sys.argv[2], "w").write(s)
PY
  timeout 120 ./cuco eval workloads/gemm_allgather --candidate $W/probe.cu --ranks 1 --no-bench \
    --timeout 60 --out $W/probe >$W/probe.txt 2>&1
  echo "probe: rc=$? at $(( $(date +%s) - T0 )) s" >>"$D"
  grep -E 'verify|rejected|failed|ok' $W/probe.txt | head -8 | cut -c1-300 >>"$D"
else
  echo "probe: --write-cheats gave no hog_race.cu" >>"$D"
fi
echo "total $(( $(date +%s) - T0 )) s" >>"$D"
