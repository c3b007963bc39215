#!/bin/bash
# attn_step (issue 13): the attention step's CTA code runs on the CPU
# (tests/cli/attn_step_emu.cu: the very step_tile source of
# runtime/attn_step.cuh, built with CUCO_ATTN_EMU: 256 fibers per CTA,
# ldmatrix/mma.sync/shuffles by the PTX fragment layouts, cp.async landing
# late or early, shared-memory race, bounds and barrier-divergence checks)
# and must match fp64: single calls (tails, GQA, no mask, large scores),
# KV folded in chunks == one call, merges, zigzag chunks, rows that see no
# key untouched bit for bit.  Then the checker must catch planted bugs: the
# header with its stage-reuse barrier removed (a race), and with the causal
# mask off by one (wrong numbers).  Skipped when nvcc is missing.
. "$(dirname "$0")/lib.sh"

need_nvcc
# PTX only for the device side: the emulator runs host code, ptxas would
# only cost time (t1001 compiles the kernels for sm_90).
# -U_FORTIFY_SOURCE: the fibers switch with _longjmp, which a fortified
# build (Ubuntu's gcc default) turns into __longjmp_chk, refusing the jump
NV=("$NVCC" -gencode arch=compute_90,code=compute_90 -std=c++17 -O2 -U_FORTIFY_SOURCE)
EMU=$ROOT/tests/cli/attn_step_emu.cu

expect_rc "the emulator builds" 0 "${NV[@]}" -I"$ROOT/runtime" "$EMU" -o "$TMP/emu"
expect_rc "every emulated check passes" 0 "$TMP/emu"
cp "$TMP/out" "$TMP/emu.log"
expect_grep "all checks ran" "$TMP/emu.log" "^checks 1[0-9] failed 0$"
expect_grep "single call vs fp64 at d=128 with two Q tiles" "$TMP/emu.log" \
  "^PASS single_call_vs_fp64 S130_hq2_hkv1_d128_causal_late"
expect_grep "folding == one call" "$TMP/emu.log" "^PASS fold_vs_one_call"
expect_grep "a merge into a row that saw nothing" "$TMP/emu.log" "^PASS merge_vs_one_call .*B<-A"
expect_grep "zigzag chunks" "$TMP/emu.log" "^PASS zigzag_rank1_vs_fp64"
expect_grep "unseen rows untouched" "$TMP/emu.log" "^PASS untouched_rows"
expect_grep "acc and l of fresh rows are not read" "$TMP/emu.log" "^PASS fresh_rows_not_read"
expect_grep "cp.async landing at issue too" "$TMP/emu.log" "^PASS .*_early"
expect_no_grep "no FAIL line" "$TMP/emu.log" "^FAIL"

# Planted bugs must be caught (the checks above could fail).
mutant() { # NAME SED-EXPR: a copy of the header with one change, built
  mkdir -p "$TMP/$1"
  cp "$ROOT/runtime/attn_step.h" "$TMP/$1/"
  sed "$2" "$ROOT/runtime/attn_step.cuh" >"$TMP/$1/attn_step.cuh"
  if cmp -s "$ROOT/runtime/attn_step.cuh" "$TMP/$1/attn_step.cuh"; then
    not_ok "mutant $1 differs from the header" "the sed expression matched nothing"
    return 1
  fi
  "${NV[@]}" -I"$TMP/$1" "$EMU" -o "$TMP/$1/emu" 2>"$TMP/$1/build.err" ||
    { not_ok "mutant $1 builds" "$(head -c 300 "$TMP/$1/build.err")"; return 1; }
  "$TMP/$1/emu" --quick --stop >"$TMP/$1/log" 2>&1
  echo $? >"$TMP/$1/rc"
}
mutant nobar 's|    sync_cta();  // every warp is done with this stage before it is refilled||' &
mutant mask 's|if (k0 + n \* 8 + t4 \* 2 + (e \& 1) > lim\[e >> 1\])|if (k0 + n * 8 + t4 * 2 + (e \& 1) >= lim[e >> 1])|' &
wait
if [ -f "$TMP/nobar/rc" ]; then
  expect_grep "a missing stage-reuse barrier is caught as a race" "$TMP/nobar/log" \
    "^FAIL emulation .*cp.async overwrites smem offset [0-9]+ read since the last barrier"
fi
if [ -f "$TMP/mask/rc" ]; then
  expect_grep "an off-by-one causal mask is caught by fp64" "$TMP/mask/log" \
    "^FAIL single_call_vs_fp64"
fi
done_testing
