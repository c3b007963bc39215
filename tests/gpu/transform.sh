#!/bin/bash
# tests/gpu/transform.sh - `cuco transform` on a GPU machine (H200): replay
# the recorded GEMM+AllGather transformation (tests/data/transform/) through
# the loopback LLM server.  With a GPU every attempt is VERIFIED at 1 rank
# on the workload's small sizes (in CI it is only compiled); then the
# resulting seed goes through `cuco eval` (static, build, verify; no
# bench).  Writes 4 files to $OUT.
#
#   needs build-gpu/cuco (scripts/gpu-bundle.sh) and the fake server built
#   the same way:  make -s BUILD=build-gpu build-gpu/tests/fakellm
#   run from anywhere:  RANKS=1 tests/gpu/transform.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_script_dirs
gpu_nvls_off
CUCO=${CUCO:-$ROOT/build-gpu/cuco}
[ -x "$CUCO" ] || CUCO=$ROOT/cuco
FAKE=${FAKELLM:-$ROOT/build-gpu/tests/fakellm}
[ -x "$FAKE" ] || FAKE=$ROOT/build/tests/fakellm
gpu_cuco_nccl_home
export CUCO_ROOT=$ROOT CUCO_CACHE_DIR=${CUCO_CACHE_DIR:-/tmp/cuco-cache}
export CUCO_LLM_PROVIDER=openai CUCO_LLM_MODEL=gpt-4.1-2025-04-14
unset CUCO_LLM_API_KEY_ENV
log=$OUT/transform-gpu.txt
TMPD=$(mktemp -d /tmp/cuco-gpu-transform.XXXXXX)
W=$TMPD/ga
mkdir -p "$W"
cp workloads/gemm_allgather/*.cu workloads/gemm_allgather/*.cuh \
   workloads/gemm_allgather/workload.ini "$W"/

echo "# cuco transform on $(hostname), $(date -u +%FT%TZ), ranks=$RANKS" >"$log"
if [ ! -x "$FAKE" ] || ! "$CUCO" --version >>"$log" 2>&1; then
  echo "missing: $CUCO or $FAKE (build both with BUILD=build-gpu)" | tee -a "$log"
  exit 1
fi
LD_LIBRARY_PATH=$ROOT/build-gpu/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  "$FAKE" --scenario tests/data/transform/gemm_allgather \
  --log "$TMPD/requests.jsonl" >"$TMPD/port" &
FAKEPID=$!
for _ in $(seq 50); do [ -s "$TMPD/port" ] && break; sleep 0.1; done
CUCO_LLM_BASE_URL=http://127.0.0.1:$(awk '{print $2}' "$TMPD/port")/v1
export CUCO_LLM_BASE_URL

status=0
"$CUCO" transform "$W" --ranks "$RANKS" --max-iters 4 >>"$log" 2>&1 || status=1
kill "$FAKEPID" 2>/dev/null
tar -C "$W" -czf "$OUT/transform-work.tar.gz" transform 2>/dev/null
cp "$W/transform/transform.json" "$OUT/transform.json" 2>/dev/null
grep -q '"verified": true' "$OUT/transform.json" 2>/dev/null || status=1

# the transformed seed as the workload's seed, through the whole cascade
if [ -f "$W/transform/seed.cu" ]; then
  cp "$W/transform/seed.cu" "$W/seed.cu"
  echo "=== cuco eval of the transformed seed" >>"$log"
  "$CUCO" eval "$W" --ranks "$RANKS" --no-bench --out "$TMPD/eval" --json \
    >"$OUT/transform-seed-eval.json" 2>>"$log" || status=1
fi
echo "status $status" >>"$log"
cat "$log"
rm -rf "$TMPD"
exit $status
