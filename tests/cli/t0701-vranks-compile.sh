#!/bin/bash
# Virtual ranks (issue 17): the emulation, its protocol harness and the same
# kernels against real NCCL compile for sm_90; every unsupported API (GIN, LL
# all-to-all, multimem, host devComm creation) fails to compile in virtual
# mode with a message that names it. Compile only: CI has no GPU.
. "$(dirname "$0")/lib.sh"

need_nvcc
INC=(-I"$ROOT/runtime" -I"$ROOT/tests/gpu")
[ -n "${NCCL_INCLUDE:-}" ] && INC+=(-I"$NCCL_INCLUDE")
NV=("${CCW[@]}" "$NVCC" -arch=sm_90 -std=c++17 "${INC[@]}")
# FE: front ends only, for checks that only need "compiles" or "fails with
# this message": -cuda stops the host side after cudafe++ (no host compile)
# and -fdevice-syntax-only the device side after cicc's front end (full C++
# parse and template instantiation, static_asserts; no optimizer, no ptxas:
# half the time of -cuda alone, issue 27); -c (everything) for the main TUs.
fe() { local o=$1; shift; "${NV[@]}" -cuda -fdevice-syntax-only "$@" -o "$o"; }
G=$ROOT/tests/gpu

expect_rc "emulation host side compiles (-DCUCO_VRANKS)" 0 \
  "${NV[@]}" -DCUCO_VRANKS -c "$ROOT/runtime/vnccl_host.cu" -o "$TMP/h.o"
# (make cuda's compile of the file, shared with t0601: lib.sh nv_wl)
expect_rc "host side is empty in a real build" 0 \
  nv_wl "" -- runtime/vnccl_host.cu "$TMP/h0.o"
expect_rc "protocol harness compiles (-DCUCO_VRANKS)" 0 \
  "${NV[@]}" -DCUCO_VRANKS -DVNCCL_WAIT_TIMEOUT_NS=3000000000ull -c "$G/vranks_proto.cu" -o "$TMP/p.o"
expect_rc "the same kernels compile against real NCCL 2.28.9" 0 \
  fe "$TMP/r.ii" "$G/vranks_kernels_real.cu"
expect_rc "supported API subset compiles (-DCUCO_VRANKS)" 0 \
  fe "$TMP/u0.ii" -DCUCO_VRANKS -DVR_CASE=0 "$G/vranks_unsupported.cu"
expect_rc "harness refuses a real build" 1 \
  fe "$TMP/p0.ii" "$G/vranks_proto.cu"
expect_grep "harness says to build it virtual" "$TMP/err" "build vranks_proto with -DCUCO_VRANKS"

# case number | API the message must name.  All eight compile as one unit
# (-DVR_CASE=99, each case a function of its own): every error names the
# line that instantiated it, and that line carries its case's marker.
NS=".* is not supported by the virtual-rank emulation \\(runtime/vnccl.cuh\\)"
cases=("1|ncclGin \\(GIN\\)$NS" "2|ncclGetLsaMultimemPointer \\(multimem\\)$NS"
       "3|ncclLLA2ASession \\(LL all-to-all\\)$NS" "4|ncclBarrierSession over the rail team$NS"
       "5|ncclSymPtr::multimemPtr$NS" "6|ncclLLA2ACreateRequirement$NS"
       "7|host ncclTeamLsa\\(ncclComm_t\\) needs a real communicator"
       "8|ncclDevCommCreate needs real NCCL ranks")
expect_rc "the unsupported cases fail to compile (one unit)" 1 \
  fe "$TMP/u99.ii" -DCUCO_VRANKS -DVR_CASE=99 "$G/vranks_unsupported.cu"
cp "$TMP/err" "$TMP/u99.err"
# the case each error belongs to: "N MESSAGE" per error
python3 - "$TMP/u99.err" "$G/vranks_unsupported.cu" >"$TMP/u99.by_case" <<'PY'
import re, sys
src = open(sys.argv[2]).read().split("\n")
msg = None
for line in open(sys.argv[1]):
    m = re.search(r'error: static assertion failed with "(.*)"', line)
    if m:
        msg = m.group(1)
        continue
    m = re.search(r"detected during .* at line (\d+) of \S*vranks_unsupported\.cu", line)
    if m and msg:
        k = re.search(r"VR_CASE (\d+)", src[int(m.group(1)) - 1])
        print(k.group(1) if k else "?", msg)
        msg = None
PY
for c in "${cases[@]}"; do
  n=${c%%|*} msg=${c#*|}
  if grep -qE "^$n cuco vranks: $msg" "$TMP/u99.by_case"; then
    ok "case $n fails, naming the API at its own line"
  else
    not_ok "case $n fails, naming the API at its own line" "errors by case: $(cat "$TMP/u99.by_case") compiler: $(head -c 1500 "$TMP/u99.err")"
  fi
done

# The runtime in --vranks mode: its hooks, the mode itself, the LSA
# GEMM+AllGather test implementation and its cheat; then every workload's
# seed and cheats (as they appear) in virtual mode.
WINC=(-I"$ROOT/workloads/gemm_allgather")
expect_rc "runtime/rt_vranks.cu compiles (-DCUCO_VRANKS)" 0 \
  nv_wl "" -DCUCO_VRANKS -- runtime/rt_vranks.cu "$TMP/rt_vranks.o"
for f in rt_ctx rt_main; do
  expect_rc "runtime/$f.cu hooks compile (-DCUCO_VRANKS)" 0 \
    fe "$TMP/$f.ii" -DCUCO_VRANKS "$ROOT/runtime/$f.cu"
done
expect_rc "runtime/rt_vranks.cu compiles in a real build" 0 \
  nv_wl "" -- runtime/rt_vranks.cu "$TMP/rv0.o"
# the impl and its cheat (-DVR_CHEAT=1) as two sections of one unit (lib.sh
# unity_cc: the same file twice, so the unit's preamble is the impl's own
# includes; the cheat took a front-end compile of its own)
unity_cc "LSA GEMM+AllGather test impl and its barrier-less cheat compile (-DCUCO_VRANKS)" \
  "${WINC[@]}" -DCUCO_VRANKS -- "$G/vranks_gemm_ag.cu" "$G/vranks_gemm_ag.cu@VR_CHEAT=1"
# Seeds fully (-c); cheats through the front end (all that the emulation
# can break: names, signatures, static_asserts).
# (with make cuda's flags: the workload tests compile the same, lib.sh nv_wl)
for f in "$ROOT"/workloads/*/seed.cu; do
  [ -f "$f" ] || continue
  f=${f#"$ROOT"/}
  expect_rc "$f compiles (-DCUCO_VRANKS)" 0 \
    nv_wl "$(dirname "$f")" -DCUCO_VRANKS -- "$f" "$TMP/wl.o"
done
for w in "$ROOT"/workloads/*/; do
  w=${w%/}
  [ -d "$w/cheats" ] || continue
  expect_rc "cuco eval --write-cheats ${w#"$ROOT"/}" 0 "$CUCO" eval "$w" --write-cheats "$TMP/ch/${w##*/}"
  # all of them in one unit (scripts/unity.py: the headers parsed once; an
  # error names the cheat's own file)
  cheats=("$TMP/ch/${w##*/}"/*.cu)
  [ -f "${cheats[0]}" ] || continue
  python3 "$ROOT/scripts/unity.py" "$TMP/unity.cu" "${cheats[@]}"
  expect_rc "${w#"$ROOT"/}: its ${#cheats[@]} cheats compile (-DCUCO_VRANKS)" 0 \
    fe "$TMP/wl.ii" -I"$w" -DCUCO_VRANKS "$TMP/unity.cu"
done

printf '#include <nccl_device.h>\n#include "cuco_nccl.cuh"\n' >"$TMP/before.cu"
expect_rc "real nccl_device.h before cuco_nccl.cuh is refused" 1 \
  fe "$TMP/b.ii" -DCUCO_VRANKS "$TMP/before.cu"
expect_grep "with a message" "$TMP/err" "real <nccl_device.h> was included before cuco_nccl.cuh"
printf '#include "cuco_nccl.cuh"\n#include <nccl_device.h>\n__global__ void k(ncclDevComm d, ncclWindow_t w){ *(int*)ncclGetLocalPointer(w,0)=d.rank; }\n' >"$TMP/after.cu"
expect_rc "real nccl_device.h after cuco_nccl.cuh is a no-op" 0 \
  fe "$TMP/a.ii" -DCUCO_VRANKS "$TMP/after.cu"
done_testing
