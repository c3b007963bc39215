#!/bin/bash
# flash_attn_cp (issue 13): the frozen plan (workloads/flash_attn_cp/
# wl_attn_plan.h) on the CPU: chunk boundaries floor(i*S/2R), every visible
# (query, key) pair computed exactly once, zigzag balance (2R chunk^2 per
# rank, also at S=1000 R=4 and S=48 R=2), contiguous imbalance, the
# owner/position maps, and the needles (visible, deterministic, and a
# dropped or doubled chunk moves every intact needle row beyond the
# tolerances).  Host-only program built with nvcc; no GPU needed.
. "$(dirname "$0")/lib.sh"

need_nvcc
WL=$ROOT/workloads/flash_attn_cp
expect_rc "plan_check builds" 0 "$NVCC" -std=c++17 -I"$WL" -o "$TMP/plan_check" \
  "$WL/tools/plan_check.cu"
"$TMP/plan_check" >"$TMP/log" 2>&1; rc=$?
while IFS= read -r line; do
  case "$line" in
    ok\ *) ok "${line#ok }" ;;
    FAIL\ *) not_ok "${line#FAIL }" "plan_check" ;;
  esac
done <"$TMP/log"
if [ "$rc" -eq 0 ] && grep -q '^0 failed$' "$TMP/log"; then ok "plan_check exits 0"
else not_ok "plan_check exits 0" "rc=$rc $(tail -2 "$TMP/log")"; fi
for want in "S=1000 R=4 zigzag: every rank does 2R" "S=48 R=2 zigzag: every visible pair exactly once" \
  "needles S=1000 R=4"; do
  expect_grep "covers: $want" "$TMP/log" "^ok $want"
done
done_testing
