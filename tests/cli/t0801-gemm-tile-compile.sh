#!/bin/bash
# gemm_tile: the frozen GEMM tile library (v1 runtime/gemm_tile.cuh, v2
# runtime/gemm_tile_v2.cuh) and its test/bench program compile with nvcc -c (CI
# has no GPU): v1 for sm_90, the program for sm_90a (wgmma), without register
# spills; the headers stand alone.  Skipped when nvcc is missing.
. "$(dirname "$0")/lib.sh"

need_nvcc

cat >"$TMP/alone.cu" <<'CU'
#include "gemm_tile.cuh"
#include "gemm_tile.cuh"
cudaError_t f(const __nv_bfloat16 *a, const __nv_bfloat16 *b, __nv_bfloat16 *c) {
  return cuco_gemm::gemm_tile_bf16(a, 64, b, 64, c, 64, 64, 64, 64);
}
CU
expect_rc "v1 header compiles alone (and twice) for sm_90" 0 \
  "$NVCC" -arch=sm_90 -std=c++17 -Xptxas -v -I"$ROOT/runtime" -c "$TMP/alone.cu" -o "$TMP/alone.o"
expect_no_grep "v1 kernel does not spill" "$TMP/err" "[1-9][0-9]* bytes spill"

printf '#include "gemm_tile_v2.cuh"\n#include "gemm_tile.cuh"\n' >"$TMP/alone2.cu"
expect_rc "v2 header compiles alone" 0 \
  "$NVCC" -gencode=arch=compute_90a,code=sm_90a -std=c++17 -I"$ROOT/runtime" \
  -c "$TMP/alone2.cu" -o "$TMP/alone2.o"

# gemm_tile_v2_run_dense / _grouped compile one kernel each and refuse the
# other kind's arguments before any CUDA call, so this runs without a GPU
# (PTX only: ptxas has nothing to add to a host-side check).
cat >"$TMP/kinds.cu" <<'CU'
#include <stdio.h>
#include "gemm_tile_v2.cuh"
using namespace cuco_gemm;
int main() {
  int *offs = reinterpret_cast<int *>(256);  // never read: refused first
  const __nv_bfloat16 *p = reinterpret_cast<const __nv_bfloat16 *>(256);
  GemmArgs dense{p, p, 64, 64, 64, 64, 64, nullptr, 0, 0};
  GemmArgs grouped{p, p, 64, 64, 64, 64, 64, offs, 2, 64 * 64};
  GemmStoreC st{nullptr, 64};
  printf("dense_given_grouped %d\n", (int)gemm_tile_v2_run_dense(grouped, GemmNoWait{}, st));
  printf("grouped_given_dense %d\n", (int)gemm_tile_v2_run_grouped(dense, GemmNoWait{}, st));
  printf("invalid_value %d\n", (int)cudaErrorInvalidValue);
  return 0;
}
CU
expect_rc "the v2 dense / grouped forms build" 0 \
  "$NVCC" -gencode=arch=compute_90a,code=compute_90a -std=c++17 -I"$ROOT/runtime" \
  "$TMP/kinds.cu" -o "$TMP/kinds"
"$TMP/kinds" >"$TMP/kinds.out" 2>&1
iv=$(sed -n 's/^invalid_value //p' "$TMP/kinds.out")
expect_grep "the dense form refuses grouped arguments" "$TMP/kinds.out" "^dense_given_grouped ${iv:-x}$"
expect_grep "the grouped form refuses dense arguments" "$TMP/kinds.out" "^grouped_given_dense ${iv:-x}$"

# (without tests/gpu/gemm_tile.sh's -O3: nvcc's -O is the host compiler's
# level, ~7 s of this compile; cicc and ptxas, whose report is read below,
# optimize the device code the same either way)
expect_rc "bench/gemm_tile_bench.cu compiles for sm_90a" 0 \
  "$NVCC" -gencode=arch=compute_90a,code=sm_90a -std=c++17 -Xptxas -v -I"$ROOT/runtime" \
  -c "$ROOT/bench/gemm_tile_bench.cu" -o "$TMP/bench.o"
cp "$TMP/err" "$TMP/ptxas.log"
expect_grep "ptxas reported the v1 kernels" "$TMP/ptxas.log" "gemm_tile_kernel"
expect_grep "ptxas reported the v2 kernels" "$TMP/ptxas.log" "gemm_tile_v2_kernel"
expect_no_grep "no register spills" "$TMP/ptxas.log" "[1-9][0-9]* bytes spill"
expect_no_grep "no local-memory stack frame" "$TMP/ptxas.log" "[1-9][0-9]* bytes stack frame"
expect_no_grep "wgmma not serialized by ptxas" "$TMP/ptxas.log" "wgmma.*serializ|C7510|C7515"

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
