#!/bin/bash
# tests/gpu/evolve.sh - `cuco evolve` on a GPU machine (H200): the offline
# tuner on workloads/gemm_allgather, at least 20 candidates (4 islands x 5
# generations + the seed) at RANKS ranks (default 1).  Writes 3 files to
# $OUT: evolve-gpu.txt (progress + summary table), evolve-run.db (the run
# database), evolve-best.cu (the best candidate).
#
#   run from the repository root with ./cuco built (carry it, and .gpulibs/
#   holding the .so files `ldd ./cuco` misses there):
#     RANKS=1 tests/gpu/evolve.sh
# Each call stops handing out candidates after TIME_LIMIT seconds (default
# 420) so it fits one device call; calling it again on the same machine
# resumes the run in out/gpu-evolve (the folder survives between calls).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/out}
RANKS=${RANKS:-1}
RUN=${RUN_DIR:-$ROOT/out/gpu-evolve-r$RANKS}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
[ -d "$ROOT/.gpulibs" ] && export LD_LIBRARY_PATH="$ROOT/.gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -z "${CUCO_NCCL_HOME:-}" ]; then
  CUCO_NCCL_HOME=$(python3 -c 'import nvidia.nccl;print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
  export CUCO_NCCL_HOME
fi
export CUCO_CACHE_DIR=${CUCO_CACHE_DIR:-/tmp/cuco-cache}
log=$OUT/evolve-gpu.txt
RESUME=()
[ -f "$RUN/run.db" ] && RESUME=(--resume)
{
  echo "# cuco evolve on $(hostname), $(date -u +%FT%TZ), ranks=$RANKS ${RESUME[*]}"
  ./cuco evolve workloads/gemm_allgather --llm none --ranks "$RANKS" \
    --generations "${GENERATIONS:-5}" --islands 4 --seed 1 \
    --time-limit "${TIME_LIMIT:-420}" --out "$RUN" "${RESUME[@]}"
  echo "# exit $?"
  echo "# rows: $(sqlite3 "$RUN/run.db" "select status, count(*) from programs where edit_kind <> 'migrate' group by status" 2>/dev/null | tr '\n' ' ')"
} >"$log" 2>&1
status=$(sed -n 's/^# exit //p' "$log")
[ -f "$RUN/run.db" ] && sqlite3 "$RUN/run.db" ".backup '$OUT/evolve-run.db'" 2>/dev/null
[ -f "$RUN/best.cu" ] && cp "$RUN/best.cu" "$OUT/evolve-best.cu"
cat "$log"
exit "${status:-1}"
