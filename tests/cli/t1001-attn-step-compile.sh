#!/bin/bash
# attn_step (issue 13): the frozen attention step runtime/attn_step.cuh and
# its users compile with nvcc for sm_90 (CI has no GPU): the header alone
# (twice) with a user's persistent kernel calling the device entry
# attn_step_tile, and bench/attn_step_bench.cu; no register spills; the
# PTX really uses the tensor cores (mma.sync m16n8k16 bf16, ldmatrix incl.
# .trans, cp.async).  Then a host-only program (tests/cli/attn_step_args.cu,
# built by nvcc, run on this GPU-less CPU) checks the argument validation:
# bad d, hq % hkv, null or misaligned pointers, negative or overflowing rows
# give cudaErrorInvalidValue without a launch.  Skipped when nvcc is missing.
. "$(dirname "$0")/lib.sh"

need_nvcc
NV=("$NVCC" -arch=sm_90 -std=c++17 -I"$ROOT/runtime")
# -O0 in the -c compiles is the host compiler's level: the device code, whose
# ptxas report is read, is optimised the same

cat >"$TMP/user.cu" <<'CU'
#include "attn_step.cuh"
#include "attn_step.cuh"
// A placement=per_tile style user: persistent CTAs over (tile, head) items.
__global__ void __launch_bounds__(ATTN_STEP_THREADS, 1) user_kernel(attn_step_args a, int tiles) {
  extern __shared__ __align__(128) unsigned char smem[];
  for (int w = blockIdx.x; w < tiles * a.shape.hq; w += gridDim.x)
    attn_step_tile(a, w / a.shape.hq, w % a.shape.hq, smem);
}
cudaError_t host(const attn_step_args *a, attn_state st, __nv_bfloat16 *o, float *lse) {
  cudaError_t e = attn_state_init(st, a->shape.hq, a->shape.d, 0);
  if (e == cudaSuccess) e = attn_step(a, 0);
  if (e == cudaSuccess) e = attn_state_merge(st, a->state, a->shape.hq, a->shape.d, 0);
  if (e == cudaSuccess) e = attn_finalize(st, a->shape.hq, a->shape.d, o, lse, 0);
  return e;
}
CU
expect_rc "attn_step.cuh compiles alone (and twice) with a persistent user for sm_90" 0 \
  "${NV[@]}" -O0 -Xptxas -v -c "$TMP/user.cu" -o "$TMP/user.o"
cp "$TMP/err" "$TMP/user.ptxas"
expect_grep "ptxas reported the step kernels (d=64 and d=128)" "$TMP/user.ptxas" \
  "step_kernelILi64E.*|step_kernelILi128E"
expect_grep "ptxas reported the user's kernel" "$TMP/user.ptxas" "user_kernel"
expect_no_grep "no register spills" "$TMP/user.ptxas" "[1-9][0-9]* bytes spill"
expect_no_grep "no local-memory stack frame" "$TMP/user.ptxas" "[1-9][0-9]* bytes stack frame"

expect_rc "the PTX of a user is generated" 0 "${NV[@]}" -O3 -ptx "$TMP/user.cu" -o "$TMP/user.ptx"
expect_grep "PTX uses mma.sync m16n8k16 bf16 -> fp32" "$TMP/user.ptx" \
  "mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32"
expect_grep "PTX uses ldmatrix" "$TMP/user.ptx" "ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16"
expect_grep "PTX uses ldmatrix .trans (V)" "$TMP/user.ptx" "ldmatrix\.sync\.aligned\.m8n8\.x4\.trans"
expect_grep "PTX uses cp.async" "$TMP/user.ptx" "cp\.async\.cg\.shared\.global"
expect_grep "PTX uses ex2.approx" "$TMP/user.ptx" "ex2\.approx"
n=$(grep -c "mma.sync.aligned.m16n8k16" "$TMP/user.ptx")
if [ "$n" -ge 64 ]; then ok "the mma loops are unrolled ($n mma.sync in the PTX)"
else not_ok "the mma loops are unrolled" "only $n mma.sync in the PTX"; fi

expect_rc "bench/attn_step_bench.cu compiles for sm_90" 0 \
  "${NV[@]}" -O0 -Xptxas -v -c "$ROOT/bench/attn_step_bench.cu" -o "$TMP/bench.o"
expect_no_grep "bench: no register spills" "$TMP/err" "[1-9][0-9]* bytes spill"

# A misuse fails to compile: the device entry takes the step's arguments.
cat >"$TMP/bad.cu" <<'CU'
#include "attn_step.cuh"
__global__ void k(int x) { extern __shared__ unsigned char s[]; attn_step_tile(x, 0, 0, s); }
CU
if "${NV[@]}" -c "$TMP/bad.cu" -o "$TMP/bad.o" 2>"$TMP/bad.err"; then
  not_ok "attn_step_tile with wrong arguments is a compile error" "it compiled"
else
  expect_grep "attn_step_tile with wrong arguments is a compile error naming attn_step_args" \
    "$TMP/bad.err" "attn_step_args"
fi

expect_rc "the host-only argument checker builds" 0 \
  "${NV[@]}" "$ROOT/tests/cli/attn_step_args.cu" -o "$TMP/attn_step_args"
if [ -x "$TMP/attn_step_args" ]; then
  expect_rc "argument validation: every check passes (no GPU used)" 0 "$TMP/attn_step_args"
  if grep -q '^SKIP' "$TMP/out"; then
    ok "argument checks # SKIP $(head -1 "$TMP/out")"
  else
    expect_grep "argument validation ran all its checks" "$TMP/out" "^checks [5-9][0-9] failed 0$"
    expect_grep "hq % hkv != 0 is refused" "$TMP/out" "^PASS attn_step refuses hq%hkv != 0"
    expect_grep "a null q is refused without a launch" "$TMP/out" "^PASS attn_step refuses null q \(no launch\)"
    expect_no_grep "no FAIL line" "$TMP/out" "^FAIL"
  fi
fi
done_testing
