#!/bin/bash
# tests/gpu/compare.sh - rt_compare's "must still be poison" expectation on
# one GPU (tests/gpu/compare_keep.cu + runtime/rt_kernels.cu; about 20 s,
# mostly the build). Writes $OUT/compare.log. Exit 0 when all checks pass.
set -u
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=lib.sh
. tests/gpu/lib.sh
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/cuco-compare.XXXXXX)
NCCL_HOME=${CUCO_NCCL_HOME:-$(gpu_nccl_dir)}
INC=(-Iruntime)
[ -n "$NCCL_HOME" ] && INC+=(-I"$NCCL_HOME/include")
{
  nvcc -arch=sm_90 -std=c++17 -O2 "${INC[@]}" tests/gpu/compare_keep.cu runtime/rt_kernels.cu \
    -o "$W/compare_keep" && timeout 60 "$W/compare_keep"
} >"$OUT/compare.log" 2>&1
rc=$?
cat "$OUT/compare.log"
rm -rf "$W"
exit $rc
