#!/bin/bash
# Print, one per line, the words that start `cuco eval`'s nvcc command for
# a unit (src/build.c unit_argv): NVCC ARCHFLAG -std=c++17 -O3
# -I<runtime> {workload} [-I<NCCL headers>, unless in a system folder].
# The line "{workload}" stands for -I<workload folder> in a workload unit
# and for nothing in a runtime unit.  The caller adds -DCUCO_VRANKS, the
# directive flags, -c SRC -o OBJ in that order (SRC absolute).  `make cuda`
# and the tests' compiles use it so that their compiles and cuco eval's are
# one entry of the object cache (docs/build.md).
#   CUCO: the cuco binary, for its toolchain (cuco doctor --json); NVCC
#   overrides the compiler, CUCO_ARCH the arch.
cd "$(dirname "$0")/.." || exit 2
CUCO=${CUCO:-${BUILD:-build}/cuco}
tc=$("$CUCO" doctor --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["cuda"].get("nvcc") or "")
print(d["cuda"].get("arch") or "sm_90a")
print(d["nccl"].get("include_dir") or "")' 2>/dev/null)
{ read -r nvcc; read -r arch; read -r nccl; } <<<"$tc"
nvcc=${NVCC:-${nvcc:-nvcc}}
echo "$nvcc"
arch=${CUCO_ARCH:-${arch:-sm_90a}}
# as tc_arch_flag (src/toolchain.c) spells it
case $arch in
*a) echo "-gencode=arch=compute_${arch#sm_},code=$arch" ;;
*) echo "-arch=$arch" ;;
esac
echo "-std=c++17"
echo "-O3"
echo "-I$(realpath runtime)"
echo "{workload}"
case $nccl in
'' | /usr/include | /usr/local/include) ;;
*) echo "-I$nccl" ;;
esac
exit 0
