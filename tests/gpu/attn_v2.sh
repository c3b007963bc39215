#!/bin/bash
# tests/gpu/attn_v2.sh - issue 25: the attention step v2 (runtime/
# attn_step_v2.cuh: wgmma + TMA, warp-specialised, FlashAttention-3-style)
# on ONE H200, beside v1 and torch SDPA in the same call.  Needs nvcc and
# torch; no NCCL, no cuco binary.
#   OUT=/some/dir bash tests/gpu/attn_v2.sh
#   SIZES (8192,16384,32768), REPS (10), HKV (8,32: GQA and MHA), MASKS
#   (causal,none), V1=0 skips v1's bench, SAN=0 the sanitizer.
#   VARIANTS: "NAME:-DX=1 -DY=2;NAME2:..." extra v2 builds (A/B of the
#   ATTN_V2_* switches), each checked (--small) and benched at SIZES, GQA,
#   MASKS and VHKV (8): VNAME/ beside v2/, rows "v2-NAME" in summary.txt.
# 1. build bench/attn_step_bench.cu twice for sm_90a: -DATTN_BENCH_V2 (every
#    check and the bench call attn_step_v2) and v1; ptxas -v in build.log;
# 2. v2's correctness checks against fp64 (the same suite as v1's, less the
#    v1-only device entry): v2/attn_step_test.json;
# 3. benches: v2 at every SIZES x HKV x MASKS (v2/attn_step_bench.json),
#    v1 causal GQA (v1/attn_step_bench.json), SDPA every backend, GQA and
#    MHA, both masks (sdpa.json);
# 4. summary.json: per (mask, hkv, S) v2's TFLOP/s (init + step +
#    finalize, as SDPA writes O; and attn_fwd_v2, the same in one kernel
#    without the state), v1's, the best SDPA back end for that head layout
#    and the ratios to it;
# 5. compute-sanitizer memcheck over v2's small checks.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_out "$ROOT/build/gpu-out"
gpu_cuda_tools
SIZES=${SIZES:-8192,16384,32768}
REPS=${REPS:-10}
HKV=${HKV:-8,32}
MASKS=${MASKS:-causal,none}
WORK=$(mktemp -d /tmp/attn_v2.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
gpu_summary_init "$OUT/summary.txt"
mkdir -p "$OUT/v2" "$OUT/v1"
ARCH=("-gencode=arch=compute_90a,code=sm_90a" -std=c++17 -O3 -lineinfo -Xptxas -v -I"$ROOT/runtime")
t0=$(date +%s)
"$NVCC" "${ARCH[@]}" -DATTN_BENCH_V2 "$ROOT/bench/attn_step_bench.cu" -o "$WORK/v2" >"$OUT/build.log" 2>&1 &
p2=$!
"$NVCC" "${ARCH[@]}" "$ROOT/bench/attn_step_bench.cu" -o "$WORK/v1" >"$OUT/build-v1.log" 2>&1 &
p1=$!
vpids=()
IFS=';' read -r -a VLIST <<<"${VARIANTS:-}"
for v in "${VLIST[@]}"; do
  [ -n "$v" ] || continue
  # shellcheck disable=SC2086  # the defines are words
  "$NVCC" "${ARCH[@]}" -DATTN_BENCH_V2 ${v#*:} "$ROOT/bench/attn_step_bench.cu" -o "$WORK/v-${v%%:*}" \
    >"$OUT/build-${v%%:*}.log" 2>&1 &
  vpids+=($!)
done
wait $p2; rc=$?
wait $p1; rc1=$?
for p in "${vpids[@]}"; do wait "$p"; done
gpu_step "build v2 ($(($(date +%s) - t0)) s)" $rc
gpu_step "build v1" $rc1
grep -A3 "cuco_attn_v2" "$OUT/build.log" | grep -E "spill|Used|C7" | tee -a "$SUM"
gpu_spill_warn "$OUT/build.log"
[ $rc -eq 0 ] || { tail -30 "$OUT/build.log"; gpu_summary_end; }

t0=$(date +%s)
timeout 150 "$WORK/v2" --mode test --out "$OUT/v2" >"$OUT/v2/test.log" 2>&1
rc=$?
gpu_step "v2 checks vs fp64 ($(($(date +%s) - t0)) s)" $rc
grep -E '^(FAIL|CUDA error)|checks' "$OUT/v2/test.log" | head -30 | tee -a "$SUM"

t0=$(date +%s)
timeout 200 "$WORK/v2" --mode bench --sizes "$SIZES" --reps "$REPS" --hkv "$HKV" --mask "$MASKS" \
  --out "$OUT/v2" >"$OUT/v2/bench.log" 2>&1
gpu_step "v2 bench ($(($(date +%s) - t0)) s)" $?
grep -E '^(BENCH|CUDA)' "$OUT/v2/bench.log" | tee -a "$SUM"
if [ "${V1:-1}" != 0 ] && [ $rc1 -eq 0 ]; then
  t0=$(date +%s)
  timeout 100 "$WORK/v1" --mode bench --sizes "$SIZES" --reps "$REPS" --hkv 8 --mask causal \
    --out "$OUT/v1" >"$OUT/v1/bench.log" 2>&1
  gpu_step "v1 bench ($(($(date +%s) - t0)) s)" $?
  grep -E '^BENCH' "$OUT/v1/bench.log" | tee -a "$SUM"
fi
for v in "${VLIST[@]}"; do
  n=${v%%:*}
  [ -n "$v" ] && [ -x "$WORK/v-$n" ] || { [ -n "$v" ] && gpu_step "variant $n build" 1; continue; }
  mkdir -p "$OUT/v-$n"
  grep -A3 "cuco_attn_v2" "$OUT/build-$n.log" | grep -E "spill|C7" | sed "s/^/$n: /" | tee -a "$SUM"
  timeout 60 "$WORK/v-$n" --mode test --small --out "$OUT/v-$n" >"$OUT/v-$n/test.log" 2>&1
  gpu_step "variant $n checks (small)" $?
  timeout 120 "$WORK/v-$n" --mode bench --sizes "$SIZES" --reps "$REPS" --hkv "${VHKV:-8}" --mask "$MASKS" \
    --out "$OUT/v-$n" >"$OUT/v-$n/bench.log" 2>&1
  gpu_step "variant $n bench" $?
  grep -E '^BENCH' "$OUT/v-$n/bench.log" | sed "s/^BENCH attn_step_v2/BENCH v2-$n/" | tee -a "$SUM"
done
t0=$(date +%s)
timeout 200 python3 "$ROOT/tests/gpu/attn_step_sdpa.py" "$SIZES" "$REPS" "$MASKS" >"$OUT/sdpa.json" \
  2>"$OUT/sdpa.err"
gpu_step "torch SDPA ($(($(date +%s) - t0)) s)" $?

python3 - "$OUT" <<'PY' 2>&1 | tee -a "$SUM"
import json, os, sys
out = sys.argv[1]
def load(p):
    try:
        return json.load(open(os.path.join(out, p)))
    except Exception as e:
        print("cannot read", p, e)
        return {}
v2, v1, sd = load("v2/attn_step_bench.json"), load("v1/attn_step_bench.json"), load("sdpa.json")
rows = []
for r in v2.get("results", []):
    gqa = r["hkv"] != r["hq"]
    # SDPA's GQA rows for GQA, its MHA rows (K/V expanded) for MHA
    cands = [x for x in sd.get("results", []) if x.get("S") == r["S"] and "tflops" in x
             and x.get("causal", True) == r["causal"] and x.get("gqa") == gqa]
    best = max(cands, key=lambda x: x["tflops"]) if cands else None
    one = [x for x in v1.get("results", []) if x["S"] == r["S"] and x["hkv"] == r["hkv"]
           and x["causal"] == r["causal"]]
    row = {"S": r["S"], "causal": r["causal"], "hq": r["hq"], "hkv": r["hkv"],
           "v2_full_tflops": r["full_tflops"], "v2_step_tflops": r["step_tflops"],
           "v2_full_ms": r["full_median_ms"], "v2_verified": r["verified"],
           "v2_fused_tflops": r.get("fused_tflops"), "v2_fused_ms": r.get("fused_median_ms"),
           "v1_full_tflops": one[0]["full_tflops"] if one else None,
           "sdpa": {x["backend"]: round(x["tflops"], 1) for x in cands}}
    if best:
        row["sdpa_best"] = best["backend"]
        row["sdpa_best_ms"] = best["median_ms"]
        row["ratio_v2_vs_sdpa_best"] = round(r["full_tflops"] / best["tflops"], 3)
        if r.get("fused_tflops"):
            row["ratio_fused_vs_sdpa_best"] = round(r["fused_tflops"] / best["tflops"], 3)
    rows.append(row)
    print("%s S=%d hkv=%d: v2 init+step+finalize %.1f TFLOP/s (step %.1f, fused %s, verified %s), "
          "v1 %s, SDPA %s -> %s, fused %s" %
          ("causal" if r["causal"] else "full", r["S"], r["hkv"], r["full_tflops"], r["step_tflops"],
           r.get("fused_tflops"), r["verified"], row["v1_full_tflops"], row["sdpa"],
           row.get("ratio_v2_vs_sdpa_best"), row.get("ratio_fused_vs_sdpa_best")))
json.dump({"device": v2.get("device"), "rows": rows}, open(os.path.join(out, "summary.json"), "w"),
          indent=1)
PY

if [ "${SAN:-1}" != 0 ] && [ -x "$SAN" ]; then
  t0=$(date +%s)
  mkdir -p "$WORK/san"
  timeout 90 "$SAN" --tool memcheck --error-exitcode 9 "$WORK/v2" --mode test --small \
    --out "$WORK/san" >"$OUT/memcheck.log" 2>&1
  rc=$?
  tail -5 "$OUT/memcheck.log" >>"$SUM"
  gpu_sanitizer_step memcheck 90 "$rc" "$t0"
fi
gpu_summary_end
