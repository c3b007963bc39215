#!/bin/bash
# tests/gpu/flash_bench.sh - flash_attn_cp at 1 rank through `cuco eval`:
# the baselines and the seed at the bench sizes (--impl all --json: vs_bar),
# torch SDPA on the same shapes (tests/gpu/attn_step_sdpa.py), then the
# cheat suite (--cheats --no-bench) at R = 1 and at --vranks 2 (three
# cheats need two ranks).  Each step has its own limit (ALL_T, SDPA_T,
# CHEAT_T, CHEAT2_T seconds); keep their sum under the call's.  --impl all
# at short,mid took over 200 s on one H200 (four implementations, each
# verified with --perturb, then benched), so ALL_T defaults to 400.
#   OUT=dir bash tests/gpu/run-all.sh tests/gpu/flash_bench.sh:580
#   SIZES=short,mid CHEATS=0 (skip the R = 1 cheats) CHEATS2=0 VRANKS="2 4"
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
timeout "${ALL_T:-400}" ./cuco eval workloads/flash_attn_cp --impl all --json --sizes "${SIZES:-short,mid}" \
  >"$OUT/flash-impl_all.json" 2>>"$LOG"
echo "impl all: exit $? after $(($(date +%s) - s)) s" >>"$T"
grep -E ": ok|FAIL|failed" "$LOG" | tail -8 >>"$T"
timeout "${SDPA_T:-60}" python3 tests/gpu/attn_step_sdpa.py 1024,8192 10 >"$OUT/sdpa.json" 2>>"$LOG"
echo "sdpa: exit $?" >>"$T"
if [ "${CHEATS:-1}" = 1 ]; then
  s=$(date +%s)
  timeout "${CHEAT_T:-150}" ./cuco eval workloads/flash_attn_cp --cheats --no-bench >>"$LOG" 2>&1
  echo "cheats: exit $? after $(($(date +%s) - s)) s: $(grep 'cheats:' "$LOG" | tail -1)" >>"$T"
fi
if [ "${CHEATS2:-1}" = 1 ]; then
  s=$(date +%s)
  timeout "${CHEAT2_T:-150}" ./cuco eval workloads/flash_attn_cp --cheats --vranks 2 --no-bench \
    >"$OUT/cheats-v2.log" 2>&1
  echo "cheats --vranks 2: exit $? after $(($(date +%s) - s)) s: $(grep 'cheats:' \
    "$OUT/cheats-v2.log" | tail -1)" >>"$T"
  grep -E '^  (verify|done|bench|static|build) ' "$OUT/cheats-v2.log" >>"$T"
fi
# VRANKS: the seed at --vranks N (verify only; a protocol test, never a
# performance number), e.g. VRANKS="2 4"
for n in ${VRANKS:-}; do
  s=$(date +%s)
  timeout "${VRANKS_T:-120}" ./cuco eval workloads/flash_attn_cp --vranks "$n" --no-bench \
    >"$OUT/vranks$n.log" 2>&1
  echo "seed --vranks $n: exit $? after $(($(date +%s) - s)) s: $(tail -1 "$OUT/vranks$n.log")" >>"$T"
done
cat "$T"
