#!/bin/bash
# tests/gpu/two_rank.sh - GEMM+AllGather at RANKS (default 2) real ranks,
# one process per GPU, through `cuco eval`: baselines and seed, verified
# and benchmarked at SIZES (default one small and one full size).  Needs
# ./cuco (tests/gpu/run-all.sh provides it).  Writes 3 files to $OUT.
set -u
cd "$(dirname "$0")/../.." || exit 2
RANKS=${RANKS:-2}
OUT=${OUT:-/tmp/cuco-two-rank}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 CUCO_CACHE_DIR=${CUCO_CACHE_DIR:-/tmp/cuco-cache}
nvidia-smi topo -m >"$OUT/topo.txt" 2>&1
./cuco eval workloads/gemm_allgather --impl all --ranks "$RANKS" \
  --sizes "${SIZES:-small_b,full_8k}" --out /tmp/cuco-two-rank-work --json \
  >"$OUT/eval-${RANKS}rank.json" 2>"$OUT/eval-${RANKS}rank.log"
rc=$?
tail -40 "$OUT/eval-${RANKS}rank.log"
echo "cuco eval exit $rc"
exit $rc
