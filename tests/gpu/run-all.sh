#!/bin/bash
# The one command a device call runs: the machine description, then each
# GPU script named on the command line, each under its own time limit
# (NAME.sh:SECONDS, default 300).  Every script gets its own output folder;
# at the end they are packed into $OUT/gpu-results.tgz (the device tool
# brings back at most 8 files) beside $OUT/run-all.log.
#   scripts/gpu-bundle.sh here, then on the device (carry build-gpu):
#   tests/gpu/run-all.sh tests/gpu/gemm_ag.sh:240 tests/gpu/vranks.sh:120
set -u
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
FINAL_OUT=${OUT:-/tmp/cuco-out}
mkdir -p "$FINAL_OUT"
RES=/tmp/cuco-gpu-results
rm -rf "$RES" && mkdir -p "$RES"
exec > >(tee "$FINAL_OUT/run-all.log") 2>&1
NCCL_HOME=$(python3 -c 'import nvidia.nccl,os;print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
export CUCO_NCCL_HOME=$NCCL_HOME
export LD_LIBRARY_PATH=$NCCL_HOME/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
echo "NCCL_HOME=$NCCL_HOME  $(date -u +%FT%TZ)"
# the carried bubblewrap (scripts/gpu-bundle.sh) where the machine has none
[ -x build-gpu/bin/bwrap ] && ! command -v bwrap >/dev/null && export PATH=$PWD/build-gpu/bin:$PATH
if [ -x build-gpu/cuco ]; then
  # ./cuco for the scripts that expect it; the real binary keeps its rpath.
  printf '#!/bin/sh\nexec "%s/build-gpu/cuco" "$@"\n' "$PWD" > cuco && chmod +x cuco
  ./cuco doctor --json -o "$RES/machine.json" >/dev/null || echo "doctor failed"
  ./cuco doctor | head -14
fi
for spec in "$@"; do
  s=${spec%%:*}; t=${spec#*:}; [ "$t" = "$spec" ] && t=300
  n=$(basename "$s" .sh); mkdir -p "$RES/$n"
  echo "=== $s (limit ${t}s, $(date +%T))"
  start=$(date +%s)
  OUT="$RES/$n" timeout -k 10 "$t" bash "$s" 2>&1 | tail -n 60
  echo "=== $s exit ${PIPESTATUS[0]} after $(( $(date +%s) - start ))s"
  # packed after every script: a call cut short still brings back the rest
  tar czf "$FINAL_OUT/gpu-results.tgz" -C "$RES" .
done
ls -la "$FINAL_OUT"
