#!/bin/bash
# Virtual ranks (issue 17): the emulation, its protocol harness and the same
# kernels against real NCCL compile for sm_90; every unsupported API (GIN, LL
# all-to-all, multimem, host devComm creation) fails to compile in virtual
# mode with a message that names it. Compile only: CI has no GPU.
. "$(dirname "$0")/lib.sh"

NVCC=${CUCO_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if ! [ -x "$NVCC" ]; then
  echo "ok 1 # SKIP no nvcc"; echo "1..1"; exit 0
fi
INC=(-I"$ROOT/runtime" -I"$ROOT/tests/gpu")
[ -n "${NCCL_INCLUDE:-}" ] && INC+=(-I"$NCCL_INCLUDE")
NV=("$NVCC" -arch=sm_90 -std=c++17 "${INC[@]}")
G=$ROOT/tests/gpu

expect_rc "emulation host side compiles (-DCUCO_VRANKS)" 0 \
  "${NV[@]}" -DCUCO_VRANKS -c "$ROOT/runtime/vnccl_host.cu" -o "$TMP/h.o"
expect_rc "host side is empty in a real build" 0 \
  "${NV[@]}" -c "$ROOT/runtime/vnccl_host.cu" -o "$TMP/h0.o"
expect_rc "protocol harness compiles (-DCUCO_VRANKS)" 0 \
  "${NV[@]}" -DCUCO_VRANKS -DVNCCL_WAIT_TIMEOUT_NS=3000000000ull -c "$G/vranks_proto.cu" -o "$TMP/p.o"
expect_rc "the same kernels compile against real NCCL 2.28.9" 0 \
  "${NV[@]}" -c "$G/vranks_kernels_real.cu" -o "$TMP/r.o"
expect_rc "supported API subset compiles (-DCUCO_VRANKS)" 0 \
  "${NV[@]}" -DCUCO_VRANKS -DVR_CASE=0 -c "$G/vranks_unsupported.cu" -o "$TMP/u0.o"
expect_rc "harness refuses a real build" 1 \
  "${NV[@]}" -c "$G/vranks_proto.cu" -o "$TMP/p0.o"
expect_grep "harness says to build it virtual" "$TMP/err" "build vranks_proto with -DCUCO_VRANKS"

# case number | API the message must name
cases=("1|ncclGin \\(GIN\\)" "2|ncclGetLsaMultimemPointer \\(multimem\\)"
       "3|ncclLLA2ASession \\(LL all-to-all\\)" "4|ncclBarrierSession over the rail team"
       "5|ncclSymPtr::multimemPtr" "6|ncclLLA2ACreateRequirement")
for c in "${cases[@]}"; do
  n=${c%%|*} msg=${c#*|}
  expect_rc "unsupported case $n fails to compile" 1 \
    "${NV[@]}" -DCUCO_VRANKS -DVR_CASE="$n" -c "$G/vranks_unsupported.cu" -o "$TMP/u$n.o"
  expect_grep "case $n names the API" "$TMP/err" "cuco vranks: $msg.* is not supported by the virtual-rank emulation"
done

cat >"$TMP/devcomm.cu" <<'CU'
#include "cuco_nccl.cuh"
int f(ncclDevCommRequirements *r, ncclDevComm *d) { return (int)ncclDevCommCreate(nullptr, r, d); }
CU
expect_rc "host ncclDevCommCreate fails to compile" 1 "${NV[@]}" -DCUCO_VRANKS -c "$TMP/devcomm.cu" -o "$TMP/d.o"
expect_grep "and says the runtime creates comms" "$TMP/err" "ncclDevCommCreate needs real NCCL ranks"

printf '#include <nccl_device.h>\n#include "cuco_nccl.cuh"\n' >"$TMP/before.cu"
expect_rc "real nccl_device.h before cuco_nccl.cuh is refused" 1 \
  "${NV[@]}" -DCUCO_VRANKS -c "$TMP/before.cu" -o "$TMP/b.o"
expect_grep "with a message" "$TMP/err" "real <nccl_device.h> was included before cuco_nccl.cuh"
printf '#include "cuco_nccl.cuh"\n#include <nccl_device.h>\n__global__ void k(ncclDevComm d, ncclWindow_t w){ *(int*)ncclGetLocalPointer(w,0)=d.rank; }\n' >"$TMP/after.cu"
expect_rc "real nccl_device.h after cuco_nccl.cuh is a no-op" 0 \
  "${NV[@]}" -DCUCO_VRANKS -c "$TMP/after.cu" -o "$TMP/a.o"
done_testing
