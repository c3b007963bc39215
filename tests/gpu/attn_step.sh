#!/bin/bash
# tests/gpu/attn_step.sh - build and run the frozen attention step's checks
# (runtime/attn_step.cuh against fp64 on the CPU) and its causal benchmark
# beside torch SDPA, on ONE GPU (an H200).  Needs nvcc and torch; no NCCL.
#
#   OUT=/some/dir bash tests/gpu/attn_step.sh     (OUT defaults to build/gpu-out)
#   SIZES=8192,16384,32768 REPS=20 override the benchmark's lengths and runs.
#
# Two builds: the default (d=128 kernel compiled for 1 CTA per SM, no
# spill) and -DATTN_STEP_MIN_BLOCKS_D128=2 (2 CTAs per SM, 128 registers);
# both are checked and timed, so the faster can become the default.
# Writes 8 files under $OUT:
#   attn_step_build.log       nvcc + ptxas -v (registers, spills), SASS HMMA count
#   attn_step_run.log         every check (PASS/FAIL with its errors), BENCH row,
#                             and the compute-sanitizer output
#   attn_step_test.json       correctness checks (default build)
#   attn_step_bench.json      attn_step timings (step alone; init+step+finalize)
#   attn_step_bench_2cta.json the same for the 2-CTA build
#   attn_step_sdpa.json       torch SDPA, same shapes (per backend, GQA and MHA)
#   attn_step_summary.txt     one line per step with its exit status
#   attn_step_summary.json    TFLOP/s of both builds and SDPA side by side
# Exit status: 0 all passed, 1 a step failed.  About 3-4 minutes.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_out "$ROOT/build/gpu-out"
gpu_cuda_tools
OBJDUMP=$(command -v cuobjdump || echo "$CUDA_HOME/bin/cuobjdump")
SIZES=${SIZES:-8192,16384,32768}
REPS=${REPS:-20}
WORK=$(mktemp -d /tmp/attn_step.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
gpu_summary_init "$OUT/attn_step_summary.txt"

t0=$(date +%s)
"$NVCC" -arch=sm_90 -std=c++17 -O3 -lineinfo -Xptxas -v -I"$ROOT/runtime" \
  "$ROOT/bench/attn_step_bench.cu" -o "$WORK/attn_step_bench" >"$OUT/attn_step_build.log" 2>&1
rc=$?
gpu_step "build ($(($(date +%s) - t0)) s)" $rc
if [ $rc -ne 0 ]; then
  tail -30 "$OUT/attn_step_build.log"
  exit 1
fi
echo "---- build with -DATTN_STEP_MIN_BLOCKS_D128=2" >>"$OUT/attn_step_build.log"
"$NVCC" -arch=sm_90 -std=c++17 -O3 -lineinfo -Xptxas -v -I"$ROOT/runtime" \
  -DATTN_STEP_MIN_BLOCKS_D128=2 "$ROOT/bench/attn_step_bench.cu" -o "$WORK/attn_step_bench_2cta" \
  >>"$OUT/attn_step_build.log" 2>&1
rc2cta=$?
gpu_step "build 2-CTA variant" $rc2cta
gpu_spill_warn "$OUT/attn_step_build.log"
if [ -x "$OBJDUMP" ]; then
  echo "SASS: $("$OBJDUMP" -sass "$WORK/attn_step_bench" | grep -c ' HMMA') HMMA instructions" |
    tee -a "$SUM" "$OUT/attn_step_build.log"
fi

t0=$(date +%s)
timeout 150 "$WORK/attn_step_bench" --mode test --out "$OUT" 2>&1 | tee "$OUT/attn_step_run.log"
rc=${PIPESTATUS[0]}
gpu_step "test vs fp64 ($(($(date +%s) - t0)) s)" $rc
grep -E '^(FAIL|CUDA error)' "$OUT/attn_step_run.log" | head -30 >>"$SUM"

# The benchmark runs even when a check failed (its own verification of the
# timed output is reported beside every number).
t0=$(date +%s)
timeout 150 "$WORK/attn_step_bench" --mode bench --sizes "$SIZES" --reps "$REPS" --out "$OUT" 2>&1 |
  tee -a "$OUT/attn_step_run.log"
rc=${PIPESTATUS[0]}
gpu_step "bench attn_step ($(($(date +%s) - t0)) s)" $rc
if [ $rc2cta -eq 0 ]; then
  mkdir -p "$WORK/v2cta"
  t0=$(date +%s)
  timeout 150 "$WORK/attn_step_bench_2cta" --mode all --sizes "$SIZES" --reps "$REPS" \
    --out "$WORK/v2cta" 2>&1 | tee -a "$OUT/attn_step_run.log"
  rc=${PIPESTATUS[0]}
  gpu_step "2-CTA variant: test + bench ($(($(date +%s) - t0)) s)" $rc
  cp "$WORK/v2cta/attn_step_bench.json" "$OUT/attn_step_bench_2cta.json" 2>/dev/null
fi
grep -E '^BENCH' "$OUT/attn_step_run.log" >>"$SUM"

t0=$(date +%s)
timeout 150 python3 "$ROOT/tests/gpu/attn_step_sdpa.py" "$SIZES" "$REPS" >"$OUT/attn_step_sdpa.json" \
  2>"$WORK/sdpa.err"
rc=$?
[ $rc -eq 0 ] || { tail -5 "$WORK/sdpa.err" | tee -a "$SUM"; echo '{}' >"$OUT/attn_step_sdpa.json"; }
gpu_step "torch SDPA ($(($(date +%s) - t0)) s)" $rc

python3 - "$OUT/attn_step_bench.json" "$OUT/attn_step_sdpa.json" "$OUT/attn_step_summary.json" \
  "$OUT/attn_step_bench_2cta.json" <<'PY' 2>&1 | tee -a "$SUM"
import json, sys
def load(p):
    try:
        return json.load(open(p))
    except Exception as e:
        print("cannot read", p, e)
        return {}
b, s, b2 = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[4])
rows = []
for r in b.get("results", []):
    v2 = [x for x in b2.get("results", []) if x.get("S") == r["S"]]
    sd = [x for x in s.get("results", []) if x.get("S") == r["S"] and "tflops" in x]
    best = max(sd, key=lambda x: x["tflops"]) if sd else None
    row = {"S": r["S"], "attn_step_full_tflops": r["full_tflops"],
           "attn_step_step_tflops": r["step_tflops"], "attn_step_verified": r["verified"],
           "attn_step_2cta_full_tflops": v2[0]["full_tflops"] if v2 else None,
           "attn_step_2cta_verified": v2[0]["verified"] if v2 else None,
           "sdpa": {("%s%s" % (x["backend"], "" if x["gqa"] else "_mha")): round(x["tflops"], 1)
                    for x in sd}}
    if best:
        row["sdpa_best"] = "%s%s" % (best["backend"], "" if best["gqa"] else "_mha")
        row["ratio_full_vs_sdpa_best"] = round(r["full_tflops"] / best["tflops"], 3)
    rows.append(row)
    print("S=%d attn_step %.1f TFLOP/s (step alone %.1f, verified %s; 2-CTA build %s); SDPA %s" %
          (r["S"], r["full_tflops"], r["step_tflops"], r["verified"],
           row["attn_step_2cta_full_tflops"], row["sdpa"]))
json.dump({"device": b.get("device"), "rows": rows}, open(sys.argv[3], "w"), indent=1)
PY

if [ -x "$SAN" ]; then
  for tool in memcheck racecheck; do
    t0=$(date +%s)
    mkdir -p "$WORK/san-$tool"
    timeout 60 "$SAN" --tool $tool --error-exitcode 9 "$WORK/attn_step_bench" --mode test \
      --small --out "$WORK/san-$tool" >"$WORK/san-$tool.log" 2>&1
    rc=$?
    { echo "---- compute-sanitizer $tool"; tail -40 "$WORK/san-$tool.log"; } >>"$OUT/attn_step_run.log"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$WORK/san-$tool.log" | tail -2 >>"$SUM"
    gpu_sanitizer_step "$tool" 60 "$rc" "$t0"
  done
else
  echo "compute-sanitizer not found: skipped" | tee -a "$SUM"
fi
gpu_summary_end
