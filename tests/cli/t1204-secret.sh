#!/bin/bash
# Issue 22: the per-run secret's plumbing without a GPU.  runtime/rt_secret.cu
# (host code) is compiled with a small driver: the secret read from a pipe
# and the pipe closed, recorded for the replay, drawn from getrandom when no
# descriptor is given, a malformed one refused; the vault page unreadable
# while closed (in_reference reads 0 there); SipHash-2-4 reference vectors.
# Then cuco eval's side: --secret validation (the stdin pipe itself is
# tests/unit/test_proc.c's test_stdin_data).
. "$(dirname "$0")/lib.sh"

NVCC=${CUCO_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ -x "$NVCC" ]; then
  INC=(-I"$ROOT/runtime")
  [ -n "${NCCL_INCLUDE:-}" ] && INC+=(-I"$NCCL_INCLUDE")
  expect_rc "rt_secret.cu and its driver build (host only)" 0 \
    nice "$NVCC" -std=c++17 "${INC[@]}" "$ROOT/tests/unit/rt_secret_check.cu" \
    "$ROOT/runtime/rt_secret.cu" -o "$TMP/sc"
  expect_rc "SipHash-2-4 reference vectors; PRF separates inputs and keys" 0 "$TMP/sc" sip
  expect_rc "secret from a pipe: closed, recorded, vault closed outside" 0 \
    "$TMP/sc" fd 00112233445566778899aabbccddeeff
  expect_rc "no descriptor: the runtime draws its own" 0 "$TMP/sc" drawn
  cp "$TMP/out" "$TMP/d1"
  "$TMP/sc" drawn >"$TMP/d2" 2>&1
  if [ -s "$TMP/d1" ] && ! cmp -s "$TMP/d1" "$TMP/d2"; then ok "two drawn secrets differ"
  else not_ok "two drawn secrets differ" "$(cat "$TMP/d1" "$TMP/d2")"; fi
  expect_rc "a malformed secret is refused" 0 "$TMP/sc" bad
  expect_grep "naming the descriptor" "$TMP/out" "secret-fd 3: expected 32 hex digits"
else
  echo "# SKIP no nvcc: rt_secret.cu not compiled"
fi

# cuco eval --secret: 32 hex digits or a usage error naming the option.
expect_rc "eval --secret rejects a short value" 2 \
  "$CUCO" eval "$ROOT/workloads/gemm_allgather" --secret abc --compile-only
expect_grep "naming --secret" "$TMP/err" "--secret: 'abc' is not 32 hex digits"
expect_rc "eval --secret rejects non-hex" 2 \
  "$CUCO" eval "$ROOT/workloads/gemm_allgather" --secret zz112233445566778899aabbccddeeff
done_testing
