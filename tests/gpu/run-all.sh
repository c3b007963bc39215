#!/bin/bash
# The one command a device call runs: the machine description, then each
# GPU script named on the command line (default: every tests/gpu/*.sh but
# this one), each under its own time limit.  Results land in $OUT.
#   tests/gpu/run-all.sh [SCRIPT...]   (needs build-gpu/ from
#   scripts/gpu-bundle.sh carried along)
set -u
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OUT=${OUT:-/tmp/cuco-out}
mkdir -p "$OUT"
NCCL_HOME=$(python3 -c 'import nvidia.nccl,os;print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
export CUCO_NCCL_HOME=$NCCL_HOME
export LD_LIBRARY_PATH=$NCCL_HOME/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
echo "NCCL_HOME=$NCCL_HOME"
if [ -x build-gpu/cuco ]; then
  build-gpu/cuco doctor --json -o "$OUT/machine.json" >/dev/null || echo "doctor failed"
  build-gpu/cuco doctor | head -12
fi
scripts=("$@")
[ ${#scripts[@]} -eq 0 ] && scripts=($(ls tests/gpu/*.sh | grep -v run-all.sh))
for s in "${scripts[@]}"; do
  echo "=== $s ($(date +%T))"
  timeout "${GPU_SCRIPT_TIMEOUT:-400}" bash "$s"; echo "=== $s exit $?"
done
