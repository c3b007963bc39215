#!/bin/bash
# The main job (README's first command): evolve a workload and end with the
# summary table (baseline, seed, best, speedup, where the best code is).
#   with a GPU:    workloads/gemm_allgather at RANKS (default 1) ranks
#   without a GPU: the CPU example examples/cpu_matmul
# The proposer is the configured LLM (cuco.ini [llm]), else the offline
# tuner.  Run it again to continue an interrupted run (--resume); extra
# arguments go to `cuco evolve` (e.g. --llm none, --time-limit 600).
set -u
cd "$(dirname "$0")/.." || exit 2
[ -x ./cuco ] || make -j2 cuco >/dev/null || exit 1
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  export NCCL_NVLS_ENABLE=0
  if [ -z "${CUCO_NCCL_HOME:-}" ]; then # NCCL from the nvidia-nccl-cu13 wheel
    CUCO_NCCL_HOME=$(python3 -c 'import nvidia.nccl;print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
    [ -n "$CUCO_NCCL_HOME" ] && export CUCO_NCCL_HOME
  fi
  WL=workloads/gemm_allgather
  ARGS=(--ranks "${RANKS:-1}" --generations "${GENERATIONS:-5}" --islands 4)
else
  echo "main job: no GPU here, evolving the CPU example instead"
  WL=examples/cpu_matmul
  ARGS=(--generations "${GENERATIONS:-6}" --islands 2)
fi
OUT_DIR=${OUT_DIR:-out/main-job-$(basename "$WL")}
RESUME=()
[ -f "$OUT_DIR/run.db" ] && RESUME=(--resume)
exec ./cuco evolve "$WL" "${ARGS[@]}" --out "$OUT_DIR" "${RESUME[@]}" "$@"
