// tests/gpu/compare_keep.cu - rt_compare (runtime/rt_kernels.cu) on the
// GPU with synthetic buffers: an all-ones expectation means "must still be
// poison" (kept: no failure, not in the sums; written: counted in
// `outside`), and ordinary comparisons are unchanged. Built with
// rt_kernels.cu alone by tests/gpu/compare.sh; exit 0 when all hold.
#include <cuda_bf16.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt_internal.cuh"

// The two runtime helpers rt_kernels.cu calls (rt_ctx.cu has the real
// ones; linking it would pull in NCCL for nothing here).
void rt_errorf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}
int rt_dtype_size(int dtype) {
  return dtype == RT_BF16 || dtype == RT_F16 ? 2 : dtype == RT_F64 || dtype == RT_I64 ? 8
         : dtype == RT_U8 ? 1 : 4;
}

static int fails = 0;
static void want(const char *what, unsigned long long got, unsigned long long exp) {
  printf("%s %s: %llu (wanted %llu)\n", got == exp ? "PASS" : "FAIL", what, got, exp);
  fails += got != exp;
}

int main(void) {
  const int rows = 64, cols = 96, n = rows * cols;
  __nv_bfloat16 hg[rows * cols];
  float he[rows * cols];
  // Rows 0..31: ordinary values. Rows 32..63: columns >= 64 must stay
  // poison; the test writes 5 of them (outside) and leaves 3 ordinary
  // elements unwritten (poison).
  for (int i = 0; i < n; i++) {
    int r = i / cols, c = i % cols;
    float v = (float)((i * 37) % 101) / 17.0f - 2.0f;
    he[i] = v;
    hg[i] = __float2bfloat16(v);
    if (r >= 32 && c >= 64) {
      unsigned int ones = 0xFFFFFFFFu;
      memcpy(&he[i], &ones, 4);
      unsigned short p = 0xFFFF;
      memcpy(&hg[i], &p, 2);
    }
  }
  int outside_at[5] = {32 * cols + 64, 40 * cols + 70, 50 * cols + 95, 63 * cols + 64, 63 * cols + 80};
  for (int k = 0; k < 5; k++) hg[outside_at[k]] = __float2bfloat16(1.0f);
  int poison_at[3] = {5, 33 * cols + 10, 60 * cols + 63};
  for (int k = 0; k < 3; k++) {
    unsigned short p = 0xFFFF;
    memcpy(&hg[poison_at[k]], &p, 2);
  }
  void *dg = NULL, *de = NULL;
  if (cudaMalloc(&dg, sizeof hg) != cudaSuccess || cudaMalloc(&de, sizeof he) != cudaSuccess ||
      cudaMemcpy(dg, hg, sizeof hg, cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaMemcpy(de, he, sizeof he, cudaMemcpyHostToDevice) != cudaSuccess) {
    fprintf(stderr, "CUDA setup failed\n");
    return 4;
  }
  struct rt_cmp m;
  if (rt_compare(dg, de, RT_BF16, 0, rows, cols, 1, 0, &m, 0) != 0) return 4;
  want("outside writes counted", m.outside, 5);
  want("unwritten ordinary elements counted as poison", m.poison, 3);
  want("no NaN from the kept poison", m.nan, 0);
  want("worst row is a row with a failure (rel = inf)", m.worst_row_rel > 1e30, 1);
  // The same with every must-stay element kept and nothing unwritten: passes.
  for (int k = 0; k < 5; k++) {
    unsigned short p = 0xFFFF;
    memcpy(&hg[outside_at[k]], &p, 2);
  }
  for (int k = 0; k < 3; k++) hg[poison_at[k]] = __float2bfloat16(he[poison_at[k]]);
  cudaMemcpy(dg, hg, sizeof hg, cudaMemcpyHostToDevice);
  if (rt_compare(dg, de, RT_BF16, 0, rows, cols, 1, 0, &m, 0) != 0) return 4;
  want("kept poison: no outside", m.outside, 0);
  want("kept poison: no poison", m.poison, 0);
  want("kept poison: no NaN", m.nan, 0);
  double rel = m.ref2 > 0 ? __builtin_sqrt(m.err2 / m.ref2) : 1;
  want("kept poison: rel-l2 within bf16 rounding (< 1e-2)", rel < 1e-2, 1);
  want("kept poison: worst row finite", m.worst_row_rel < 1e-2, 1);
  // --skip-check output-poison (RT_CMP_UNPOISONED): the output was zeroed,
  // never poisoned, so must-stay elements hold 0. Without the mode they all
  // read as "outside" (a wrong reason); with it they are skipped.
  for (int i = 0; i < n; i++)
    if (i / cols >= 32 && i % cols >= 64) hg[i] = __float2bfloat16(0.0f);
  cudaMemcpy(dg, hg, sizeof hg, cudaMemcpyHostToDevice);
  if (rt_compare(dg, de, RT_BF16, 0, rows, cols, 1, 0, &m, 0) != 0) return 4;
  want("zeroed must-stay elements, poison on: all outside", m.outside, 32ull * 32);
  if (rt_compare(dg, de, RT_BF16, RT_CMP_UNPOISONED, rows, cols, 1, 8, &m, 0) != 0) return 4;
  want("zeroed must-stay elements, output-poison skipped: no outside", m.outside, 0);
  want("output-poison skipped: worst row finite", m.worst_row_rel < 1e-2, 1);
  want("output-poison skipped: worst block finite", m.worst_block_rel < 1e-2, 1);
  printf("%s (rel_l2 %.3g)\n", fails ? "FAILED" : "ALL PASS", rel);
  return fails ? 3 : 0;
}
