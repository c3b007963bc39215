#!/bin/bash
# gemm_tile: the frozen GEMM tile library and its test/bench program compile for
# sm_90 with nvcc -c (CI has no GPU), without register spills, and the header
# stands alone.  Skipped when nvcc is missing.
. "$(dirname "$0")/lib.sh"

NVCC=${CUCO_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$NVCC" ]; then
  echo "ok 1 # skip nvcc not found"
  echo "1..1"
  exit 0
fi

printf '#include "gemm_tile.cuh"\n#include "gemm_tile.cuh"\n' >"$TMP/alone.cu"
expect_rc "header compiles alone (and twice)" 0 \
  "$NVCC" -arch=sm_90 -std=c++17 -I"$ROOT/runtime" -c "$TMP/alone.cu" -o "$TMP/alone.o"

expect_rc "bench/gemm_tile_bench.cu compiles for sm_90" 0 \
  "$NVCC" -arch=sm_90 -std=c++17 -O3 -Xptxas -v -I"$ROOT/runtime" \
  -c "$ROOT/bench/gemm_tile_bench.cu" -o "$TMP/bench.o"
cp "$TMP/err" "$TMP/ptxas.log"
expect_grep "ptxas reported the GEMM kernels" "$TMP/ptxas.log" "gemm_tile_kernel"
expect_no_grep "no register spills" "$TMP/ptxas.log" "[1-9][0-9]* bytes spill"
expect_no_grep "no local-memory stack frame" "$TMP/ptxas.log" "[1-9][0-9]* bytes stack frame"

# A misuse must fail to compile: a prologue without wait() is not a prologue.
cat >"$TMP/bad.cu" <<'CU'
#include "gemm_tile.cuh"
struct NotAPrologue {};
void f(cuco_gemm::GemmArgs a, __nv_bfloat16 *c) {
  (void)cuco_gemm::gemm_tile_run<cuco_gemm::GemmCfg128x128>(a, NotAPrologue{},
                                                           cuco_gemm::GemmStoreC{c, 8});
}
CU
expect_rc "a hook without its method is a compile error" 1 \
  "$NVCC" -arch=sm_90 -std=c++17 -I"$ROOT/runtime" -c "$TMP/bad.cu" -o "$TMP/bad.o"
expect_grep "the error names the missing wait" "$TMP/err" "wait"
done_testing
