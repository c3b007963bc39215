#!/bin/bash
# Print, one per line, the words that start `cuco eval`'s nvcc command for
# a unit (src/build.c unit_argv): NVCC -arch=ARCH -std=c++17 -O3
# -I<runtime>, then for a workload unit -I<workload>, then -I<NCCL headers>
# unless they are in a system folder.  The caller adds -DCUCO_VRANKS, the
# directive flags, -c SRC -o OBJ in that order.  `make cuda` and the tests'
# compiles use it so that their compiles and cuco eval's are one entry of
# the object cache (docs/build.md).
#   scripts/eval-nvcc.sh [WORKLOAD_DIR]     (CUCO: the cuco binary, for its
#   toolchain: cuco doctor --json; NVCC overrides the compiler)
cd "$(dirname "$0")/.." || exit 2
CUCO=${CUCO:-${BUILD:-build}/cuco}
tc=$("$CUCO" doctor --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["cuda"].get("nvcc") or "")
print(d["cuda"].get("arch") or "sm_90")
print(d["nccl"].get("include_dir") or "")' 2>/dev/null)
{ read -r nvcc; read -r arch; read -r nccl; } <<<"$tc"
nvcc=${NVCC:-${nvcc:-nvcc}}
echo "$nvcc"
echo "-arch=${CUCO_ARCH:-${arch:-sm_90}}"
echo "-std=c++17"
echo "-O3"
echo "-I$(realpath runtime)"
[ -n "${1:-}" ] && echo "-I$(realpath "$1")"
case $nccl in
'' | /usr/include | /usr/local/include) ;;
*) echo "-I$nccl" ;;
esac
exit 0
