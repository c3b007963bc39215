#!/bin/bash
# attn_step v2 (issue 25): runtime/attn_step_v2.cuh, the attention step on
# wgmma + TMA, compiles with nvcc for sm_90a (CI has no GPU): the bench's v2
# build has its four kernels (d = 64 and 128, fused or not) and a persistent
# user of the device entry, with no register spill, no stack frame and no
# serialised wgmma (ptxas C7512: what an inlined trap on the consumers' path
# once caused); a user of attn_step_v2, attn_fwd_v2 and attn_step_best: its
# PTX has the wgmma shapes (S from shared memory, P V from
# registers), the register handover (setmaxnreg) and TMA; a unit that only
# includes the header compiles no v2 kernel (the host calls are templates);
# a build for plain sm_90 compiles (the kernel traps there and
# attn_step_v2_available() says so); bench/attn_step_bench.cu builds with
# -DATTN_BENCH_V2; the host-only argument checker, built with v2, passes on
# this GPU-less CPU.  Skipped when nvcc is missing.
. "$(dirname "$0")/lib.sh"

need_nvcc
A90A="-gencode=arch=compute_90a,code=sm_90a"
NV=("$NVCC" "$A90A" -std=c++17 -I"$ROOT/runtime")

cat >"$TMP/user.cu" <<'CU'
#include "attn_step_v2.cuh"
cudaError_t host(const attn_step_args *a, __nv_bfloat16 *o, float *lse) {
  cudaError_t e = attn_step_v2(a, 0);
  if (e == cudaSuccess) e = attn_step_best(a, 0);
  if (e == cudaSuccess) e = attn_fwd_v2(a, o, lse, 0);
  return e;
}
CU
cat >"$TMP/only.cu" <<'CU'
#include "attn_step_v2.cuh"
int nothing() { return (int)attn_step_v2_smem_bytes(128); }
CU
# the compiles side by side (each is seconds of ptxas); -O0 is the host
# compiler's level (cicc and ptxas optimise the device code the same: the
# same registers and no spill at -O0 and -O3), 5 s less of the bench's
# compile
"${NV[@]}" -O3 -ptx "$TMP/user.cu" -o "$TMP/user.ptx" >"$TMP/ptx.log" 2>&1 &
p2=$!
"${NV[@]}" -O0 -c "$TMP/only.cu" -o "$TMP/only.o" >"$TMP/only.log" 2>&1 &
p3=$!
"$NVCC" -arch=sm_90 -std=c++17 -I"$ROOT/runtime" -O0 -c "$TMP/user.cu" -o "$TMP/user90.o" \
  >"$TMP/user90.log" 2>&1 &
p4=$!
"${NV[@]}" -O0 -Xptxas -v -DATTN_BENCH_V2 -c "$ROOT/bench/attn_step_bench.cu" -o "$TMP/bench.o" \
  >"$TMP/bench.log" 2>&1 &
p5=$!
"${NV[@]}" -DATTN_ARGS_V2 "$ROOT/tests/cli/attn_step_args.cu" -o "$TMP/args" >"$TMP/args.log" 2>&1 &
p6=$!

if wait $p2; then
  ok "the PTX of the user is generated"
  expect_grep "PTX: S = Q K^T on wgmma m64n128k16 from shared memory" "$TMP/user.ptx" \
    "wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.bf16\.bf16 \{[^}]*\}, %rd"
  expect_grep "PTX: P V on wgmma with P in registers (d=128: n128, d=64: n64)" "$TMP/user.ptx" \
    "wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.bf16\.bf16 \{[^}]*\}, \{%r"
  expect_grep "PTX: the consumers take 240 registers" "$TMP/user.ptx" "setmaxnreg\.inc\.sync\.aligned\.u32 240"
  expect_grep "PTX: the producer gives registers back" "$TMP/user.ptx" "setmaxnreg\.dec\.sync\.aligned\.u32 24"
  expect_grep "PTX: K and V come by TMA" "$TMP/user.ptx" "cp\.async\.bulk\.tensor\.2d"
  expect_grep "PTX: the ping-pong turns (named barriers)" "$TMP/user.ptx" "bar\.arrive"
else
  not_ok "the PTX of the user is generated" "$(tail -5 "$TMP/ptx.log")"
fi

if wait $p3; then
  ok "a unit that only includes attn_step_v2.cuh compiles"
  if nm -C "$TMP/only.o" | grep -q "cuco_attn_v2::step_kernel"; then
    not_ok "including the header compiles no v2 kernel" "$(nm -C "$TMP/only.o" | grep -c step_kernel) symbols"
  else
    ok "including the header compiles no v2 kernel (the host calls are templates)"
  fi
else
  not_ok "a unit that only includes attn_step_v2.cuh compiles" "$(tail -5 "$TMP/only.log")"
fi

if wait $p4; then ok "the v2 calls compile for plain sm_90 too (their kernel traps there)"
else not_ok "the v2 calls compile for plain sm_90" "$(tail -5 "$TMP/user90.log")"; fi

# The bench's v2 build holds every v2 kernel (attn_step_v2's, attn_fwd_v2's,
# and a persistent user of attn_step_v2_tiles): ptxas's report of it is the
# register check.
if wait $p5; then ok "bench/attn_step_bench.cu compiles with -DATTN_BENCH_V2 for sm_90a"
else not_ok "bench/attn_step_bench.cu -DATTN_BENCH_V2" "$(tail -5 "$TMP/bench.log")"; fi
n=$(grep -c "Compiling entry function '_ZN12cuco_attn_v211step_kernel" "$TMP/bench.log")
if [ "$n" = 4 ]; then ok "ptxas built the four v2 kernels (d 64/128, fused or not)"
else not_ok "ptxas built the four v2 kernels" "$n of them in the ptxas report"; fi
expect_grep "ptxas built the persistent user of attn_step_v2_tiles" "$TMP/bench.log" \
  "Compiling entry function '_Z13persistent_v2"
expect_no_grep "v2: no register spills" "$TMP/bench.log" "[1-9][0-9]* bytes spill"
expect_no_grep "v2: no local-memory stack frame" "$TMP/bench.log" "[1-9][0-9]* bytes stack frame"
expect_no_grep "v2: no serialised wgmma and no failed register allocation" "$TMP/bench.log" \
  "C7512|C7600|C7508"

if wait $p6; then
  ok "the host-only argument checker builds with v2"
  expect_rc "argument validation with v2: every check passes (no GPU used)" 0 "$TMP/args"
  if grep -q '^SKIP' "$TMP/out"; then
    ok "v2 argument checks # SKIP $(head -1 "$TMP/out")"
  else
    expect_grep "attn_step_v2 refuses what attn_step refuses" "$TMP/out" "^PASS attn_step_v2 refuses d=96 \(no launch\)"
    expect_grep "attn_fwd_v2 refuses a bad shape" "$TMP/out" "^PASS attn_fwd_v2 refuses hq%hkv != 0"
    expect_grep "attn_fwd_v2 refuses a null O" "$TMP/out" "^PASS attn_fwd_v2 refuses a null O"
    expect_grep "attn_fwd_v2 takes a 4-byte aligned LSE" "$TMP/out" "^PASS attn_fwd_v2 takes an LSE aligned"
    expect_grep "no GPU: attn_step_v2_available() is false" "$TMP/out" "^PASS attn_step_v2_available\(\) is false"
    expect_grep "v2's launch order visits every (Q tile, head) once, longest groups first" "$TMP/out" \
      "^PASS v2 launch order: every \(Q tile, head\) once"
    expect_no_grep "no FAIL line" "$TMP/out" "^FAIL"
  fi
else
  not_ok "the host-only argument checker builds with v2" "$(tail -5 "$TMP/args.log")"
fi
done_testing
