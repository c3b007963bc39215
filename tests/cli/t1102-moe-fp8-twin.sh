#!/bin/bash
# moe_dsv3's frozen FP8 quantizer: the CUDA implementation (moe_q8_*, the
# cuda_fp8.h / cuda_bf16.h host paths) and the plain-C twin the fp64 CPU
# reference uses (moe_q8t_*) agree bit for bit (tools/fp8_twin_check.cu,
# host-only, no GPU); a twin with round-half-up instead of ties-to-even is
# caught by the same program.
. "$(dirname "$0")/lib.sh"
WL=$ROOT/workloads/moe_dsv3
NVCC=${CUCO_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if ! [ -x "$NVCC" ]; then
  echo "ok 1 # SKIP no nvcc"; _n=1; done_testing; exit $?
fi
expect_rc "fp8_twin_check builds (host only)" 0 "$NVCC" -std=c++17 -I"$WL" \
  -o "$TMP/check" "$WL/tools/fp8_twin_check.cu"
expect_rc "twin and cuda_fp8.h agree on 2M random values, every code and midpoint" 0 \
  "$TMP/check" 2000000
expect_grep "no difference reported" "$TMP/out" "^0 of [0-9]+ differ$"
# A broken twin (ties away from zero) must be caught.
mkdir -p "$TMP/bad"
sed 's/double m = nearbyint(a \/ quantum);/double m = floor(a \/ quantum + 0.5);/' "$WL/moe_fp8.h" >"$TMP/bad/moe_fp8.h"
if cmp -s "$WL/moe_fp8.h" "$TMP/bad/moe_fp8.h"; then
  not_ok "mutation applied" "the rounding line was not found"
else
  ok "mutation applied"
  "$NVCC" -std=c++17 -I"$TMP/bad" -o "$TMP/bad/check" "$WL/tools/fp8_twin_check.cu" >/dev/null 2>&1
  expect_rc "a ties-away twin is caught" 1 "$TMP/bad/check" 100000
fi
done_testing
