#!/bin/bash
# kv_transfer (issue 12): the frozen plan (roles, block tables, row slots,
# send/receive runs, parameter checks) holds its invariants for R = 1..8 and
# awkward shapes.  Host-only program built with nvcc; no GPU needed.
. "$(dirname "$0")/lib.sh"

need_nvcc
INC=(-I"$ROOT/runtime" -I"$ROOT/workloads/kv_transfer")
[ -n "${NCCL_INCLUDE:-}" ] && INC+=(-I"$NCCL_INCLUDE")
expect_rc "plan_check builds" 0 "$NVCC" -arch=sm_90 -std=c++17 "${INC[@]}" \
  -o "$TMP/plan_check" "$ROOT/workloads/kv_transfer/tools/plan_check.cu"
"$TMP/plan_check" >"$TMP/tap" 2>&1; rc=$?
if [ "$rc" -eq 0 ] && grep -q '^1\.\.' "$TMP/tap" && ! grep -q '^not ok' "$TMP/tap"; then
  ok "plan invariants hold ($(grep -c '^ok' "$TMP/tap") checks)"
else
  not_ok "plan invariants hold" "$(grep -A1 '^not ok' "$TMP/tap" | head -8) rc=$rc $(tail -2 "$TMP/tap")"
fi
done_testing
