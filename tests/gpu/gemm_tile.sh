#!/bin/bash
# tests/gpu/gemm_tile.sh - build and run the gemm_tile library's correctness tests
# and its benchmark against cuBLAS on ONE GPU (an H200).  Needs nvcc and cuBLAS;
# no NCCL.  Run from anywhere:
#
#   OUT=/some/dir bash tests/gpu/gemm_tile.sh        (OUT defaults to build/gpu-out)
#
# Writes at most 6 files under $OUT:
#   gemm_tile_build.log    nvcc + ptxas -v output (registers, spills)
#   gemm_tile_run.log      every check (PASS/FAIL with shape, error, max-error
#                          location) and every benchmark row
#   gemm_tile_test.json    correctness checks
#   gemm_tile_bench.json   timings (medians of >= 30 runs after warm-up), TFLOP/s,
#                          % of cuBLAS, verification of the timed output
#   gemm_tile_sanitize.log compute-sanitizer memcheck + racecheck on tiny shapes
#   gemm_tile_summary.txt  one line per step with its exit status
# Exit status: 0 all passed, 1 a step failed (see the summary).  Takes < 4 min.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/build/gpu-out}
mkdir -p "$OUT"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$NVCC")")}
SAN=$(command -v compute-sanitizer || echo "$CUDA_HOME/bin/compute-sanitizer")
WORK=$(mktemp -d /tmp/gemm_tile.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
SUM="$OUT/gemm_tile_summary.txt"
: >"$SUM"
status=0
step() { # name rc
  echo "$1: exit $2" | tee -a "$SUM"
  [ "$2" -eq 0 ] || status=1
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >>"$SUM" 2>&1

t0=$(date +%s)
"$NVCC" -arch=sm_90 -std=c++17 -O3 -lineinfo -Xptxas -v -I"$ROOT/runtime" \
  "$ROOT/bench/gemm_tile_bench.cu" -o "$WORK/gemm_tile_bench" \
  -L"$CUDA_HOME/lib64" -lcublas >"$OUT/gemm_tile_build.log" 2>&1
rc=$?
step "build ($(($(date +%s) - t0)) s)" $rc
if [ $rc -ne 0 ]; then
  tail -30 "$OUT/gemm_tile_build.log"
  exit 1
fi
if grep -E "[1-9][0-9]* bytes spill (stores|loads)" "$OUT/gemm_tile_build.log" >/dev/null; then
  echo "WARNING: register spills (see gemm_tile_build.log)" | tee -a "$SUM"
fi
export LD_LIBRARY_PATH="$CUDA_HOME/lib64:${LD_LIBRARY_PATH:-}"

t0=$(date +%s)
timeout 90 "$WORK/gemm_tile_bench" --mode test --out "$OUT" 2>&1 | tee "$OUT/gemm_tile_run.log"
rc=${PIPESTATUS[0]}
step "test ($(($(date +%s) - t0)) s)" $rc
grep -E '^FAIL' "$OUT/gemm_tile_run.log" | head -20 >>"$SUM"

t0=$(date +%s)
timeout 120 "$WORK/gemm_tile_bench" --mode bench --out "$OUT" 2>&1 | tee -a "$OUT/gemm_tile_run.log"
rc=${PIPESTATUS[0]}
step "bench ($(($(date +%s) - t0)) s)" $rc
grep -E '^BENCH' "$OUT/gemm_tile_run.log" >>"$SUM"

if [ -x "$SAN" ]; then
  : >"$OUT/gemm_tile_sanitize.log"
  for tool in memcheck racecheck; do
    t0=$(date +%s)
    mkdir -p "$WORK/san-$tool"
    timeout 40 "$SAN" --tool $tool --error-exitcode 9 "$WORK/gemm_tile_bench" --mode test \
      --small --out "$WORK/san-$tool" >>"$OUT/gemm_tile_sanitize.log" 2>&1
    rc=$?
    if [ $rc -eq 124 ]; then
      echo "compute-sanitizer $tool: ran out of its 40 s (inconclusive, not a failure)" | tee -a "$SUM"
      continue
    fi
    step "compute-sanitizer $tool, tiny shapes ($(($(date +%s) - t0)) s)" $rc
  done
else
  echo "compute-sanitizer not found: skipped" | tee -a "$SUM"
fi
echo "---- summary ($SUM)"
cat "$SUM"
exit $status
