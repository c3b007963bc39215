#!/bin/bash
# tests/gpu/flash_bench.sh - flash_attn_cp at 1 rank through `cuco eval`:
# the baselines and the seed at the bench sizes (--impl all --json: vs_bar),
# torch SDPA on the same shapes (tests/gpu/attn_step_sdpa.py), then the
# cheat suite (--cheats --no-bench).  Carry ./cuco and .gpulibs/.
#   OUT=dir bash tests/gpu/flash_bench.sh   SIZES=short,mid
# $OUT: flash-impl_all.json, sdpa.json, flash.txt, flash.log
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
T=$OUT/flash.txt LOG=$OUT/flash.log
: >"$T"
: >"$LOG"
s=$(date +%s)
timeout 200 ./cuco eval workloads/flash_attn_cp --impl all --json --sizes "${SIZES:-short,mid}" \
  >"$OUT/flash-impl_all.json" 2>>"$LOG"
echo "impl all: exit $? after $(($(date +%s) - s)) s" >>"$T"
grep -E ": ok|FAIL|failed" "$LOG" | tail -8 >>"$T"
timeout 60 python3 tests/gpu/attn_step_sdpa.py 1024,8192 10 >"$OUT/sdpa.json" 2>>"$LOG"
echo "sdpa: exit $?" >>"$T"
s=$(date +%s)
timeout 200 ./cuco eval workloads/flash_attn_cp --cheats --no-bench >>"$LOG" 2>&1
echo "cheats: exit $? after $(($(date +%s) - s)) s: $(grep 'cheats:' "$LOG" | tail -1)" >>"$T"
cat "$T"
