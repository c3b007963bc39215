#!/bin/bash
# tests/gpu/moe.sh - the moe_dsv3 workload (issue 18) on ONE H200.
#
# Run from the repository root on the GPU machine:
#   OUT=/some/dir bash tests/gpu/moe.sh          (PART=quick: verify + cheats only)
# Steps:
#  1. build: the runtime (real and --vranks), the reference, baselines A and
#     B, the seed and two parameter variants, every cheat, tools/gemm_bench;
#  2. R = 1 verify with --perturb of A, B and the seed variants on every
#     verify size (must pass);
#  3. every cheat at R = 1 on v_one and v_t130 (must exit 3);
#  4. --vranks 2/4/8 protocol runs of the seed (must pass; no timing), the
#     paper case at R = 2, and the cheats at --vranks 2 (must exit 3);
#  5. bench at R = 1: prefill and decode for A, B, the seed;
#  6. the expert GEMMs alone (cuBLAS loop and cublasGemmGroupedBatchedEx)
#     beside torch._grouped_mm and a torch.matmul loop on the same shapes.
# Writes to $OUT (6 files): moe.tap, summary.json (runs + bench table +
# GEMM anchors), results.jsonl (every RESULT.json), runs.log, build.log,
# gemm.json.  Exit status 0 when every asserted check passed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
PART=${PART:-all}
gpu_out "$ROOT/build/gpu-moe"
gpu_nvls_off
WL=$ROOT/workloads/moe_dsv3
gpu_nvcc_env "$WL" "${MOE_BUILD:-/tmp/moe_dsv3_build}" -diag-suppress 177  # B: NOT under $OUT
. "$ROOT/tests/gpu/cheats.sh"
CH=$B/cheats  # the cheats as whole sources (they are edits of the seed)
gpu_cheats "$WL" "$CH" --verify-only || exit 2
mkdir -p "$B/v"
gpu_harness_init moe gemm.json

# ---- 1. build ------------------------------------------------------------------
J=${MOE_JOBS:-14}
for f in "$ROOT"/runtime/*.cu; do
  gpu_build_obj "$f" "$B/rt_$(basename "$f" .cu).o" & gpu_throttle "$J"
  gpu_build_obj "$f" "$B/v/rt_$(basename "$f" .cu).o" -DCUCO_VRANKS & gpu_throttle "$J"
done
gpu_build_obj "$WL/reference.cu" "$B/reference.o" & gpu_throttle "$J"
gpu_build_obj "$WL/reference.cu" "$B/v/reference.o" -DCUCO_VRANKS & gpu_throttle "$J"
# name|source|flags (vranks builds: name starts with v_)
IMPLS=("baseline_A|$WL/baseline.cu|"
       "baseline_B|$WL/baseline_overlap.cu|"
       "seed|$WL/seed.cu|"
       "seed_c32|$WL/seed.cu|-DCUCO_PARAM_comm_ctas=32 -DCUCO_PARAM_disp_threads=1024"
       "seed_c8|$WL/seed.cu|-DCUCO_PARAM_comm_ctas=8 -DCUCO_PARAM_disp_threads=256"
       "v_seed|$WL/seed.cu|-DCUCO_VRANKS"
       "v_seed_c8|$WL/seed.cu|-DCUCO_VRANKS -DCUCO_PARAM_comm_ctas=8 -DCUCO_PARAM_disp_threads=256")
for c in "$CH"/*.cu; do
  IMPLS+=("cheat_$(basename "$c" .cu)|$c|" "v_cheat_$(basename "$c" .cu)|$c|-DCUCO_VRANKS")
done
gpu_build_impls IMPLS "$B" "$J"
"$NVCC" -arch=sm_90 -std=c++17 -O3 -o "$B/gemm_bench" "$WL/tools/gemm_bench.cu" -L"$CUDA_LIB" \
  -lcublas >"$B/gemm_bench.log" 2>&1 &
wait
cat "$B"/*.log "$B"/v/*.log >>"$OUT/build.log" 2>/dev/null
built=()
for e in "${IMPLS[@]}"; do
  name=${e%%|*}
  case $name in v_*) RTO=("$B"/v/rt_*.o "$B/v/reference.o") ;; *) RTO=("$B"/rt_*.o "$B/reference.o") ;; esac
  if gpu_link "$B" "$name" "${RTO[@]}"; then built+=("$name")
  else gpu_not_ok "build $name" "$(tail -5 "$B/$name.o.log" 2>/dev/null) (see build.log)"; fi
done
gpu_ok "built ${#built[@]} of ${#IMPLS[@]} binaries in $(($(date +%s) - T_START)) s"

# Sizes (keep in sync with workload.ini; t1101 does not check this table).
declare -A SZ=(
  [v_t1]="T=1,H=256,F=128,E=16,G=4,TG=2,K=4"
  [v_t7]="T=7,H=256,F=128,E=16,G=4,TG=2,K=4,RHO=300"
  [v_t33]="T=33,H=512,F=256,E=16,G=4,TG=2,K=4,MODE=3"
  [v_t130]="T=130,H=256,F=128,E=32,RHO=500,ALPHA=120"
  [v_one]="T=130,H=256,F=128,E=16,G=4,TG=2,K=4,MODE=2"
  [v_e8]="T=130,H=256,F=128,E=8,G=4,TG=2,K=2"
  [v_mid]="T=512,H=1024,F=512,E=32,RHO=200"
  [prefill]="T=4096"
  [decode]="T=128"
  [paper_2]="T=4096,E=2,G=1,TG=1,K=1,NOSH=1,MODE=1,RHO=200")
TOL=1e-2

# run IMPL SIZE MODE WANT TIMEOUT [extra args]: one harness run.  WANT: 0
# must pass, 3 must be rejected by verification, "any" = report only.
run() {
  local impl=$1 size=$2 mode=$3 want=$4 to=$5 ranks=(--rank 0 --nranks 1); shift 5
  case $impl in v_*) ranks=() ;; esac
  if [ ! -x "$B/$impl" ]; then gpu_not_ok "$impl $size $mode $*" "not built"; return; fi
  gpu_run_bin --log-timeout "$B/res.json" "$to" "$impl $size $mode" "$B/$impl" --params "${SZ[$size]}" \
    --size-name "$size" --mode "$mode" "${ranks[@]}" --seed 12345 --tol "$TOL" --impl "$impl" \
    --workload moe_dsv3 --out "$B/res.json" "$@"
  echo "$impl|$size|$mode|$gpu_rc|$want|$gpu_dt|$*" >>"$REC"
  gpu_why
  gpu_verdict "$impl $size $mode $*" "$want"
}

# ---- 2. R = 1 verify ----------------------------------------------------------------
VSIZES=(v_t1 v_t7 v_t33 v_t130 v_one v_e8 v_mid)
for s in "${VSIZES[@]}"; do
  for impl in baseline_A baseline_B seed; do run "$impl" "$s" verify 0 120 --perturb; done
  [ "$s" = v_t1 ] && gpu_stop_if_none_ran v_t1 3
done
for impl in seed_c32 seed_c8; do
  for s in v_t7 v_t130 v_mid; do run "$impl" "$s" verify 0 120 --perturb; done
done
# ---- 3. cheats at R = 1 -----------------------------------------------------------------
for e in "${IMPLS[@]}"; do
  name=${e%%|*}
  case $name in cheat_*) for s in v_one v_t130; do run "$name" "$s" verify 3 120 --perturb; done ;; esac
done
# ---- 4. virtual ranks (protocol tests: correctness only, never timing) --------------------
for R in 2 4 8; do
  for s in v_t7 v_t130 v_one v_e8; do run v_seed "$s" verify 0 180 --vranks "$R"; done
  run v_seed_c8 v_t33 verify 0 180 --vranks "$R"
done
run v_seed paper_2 verify 0 300 --vranks 2
for e in "${IMPLS[@]}"; do
  name=${e%%|*}
  # Cheats that keep host state in statics share it between the virtual
  # ranks of one process (a hang or a wrong rank): reported, not asserted.
  case $name in
    v_cheat_stale_dispatch | v_cheat_reused_layout) run "$name" v_t130 verify any 180 --vranks 2 ;;
    v_cheat_*) run "$name" v_t130 verify 3 180 --vranks 2 ;;
  esac
done
if [ "$PART" != quick ]; then
  # ---- 5. bench at R = 1 -------------------------------------------------------------------
  for s in decode prefill; do
    for impl in baseline_A baseline_B seed; do
      run "$impl" "$s" bench 0 600 --warmup 3 --iters 20 --min-time 0.5
    done
  done
  # ---- 6. the expert GEMMs alone vs torch ---------------------------------------------------
  : >"$B/gemm.jsonl"
  for shape in 256:128 128:256 32:1024 256:4 256:16; do
    if [ -x "$B/gemm_bench" ] && timeout 300 "$B/gemm_bench" "${shape%%:*}" "${shape##*:}" 7168 2048 20 \
        >>"$B/gemm.jsonl" 2>>"$RUNS"; then
      gpu_ok "gemm_bench $shape"
    else gpu_not_ok "gemm_bench $shape" "$(tail -2 "$RUNS")"; fi
  done
  gpu_anchor "torch anchors" 600 "$B/torch.json" python3 "$ROOT/tests/gpu/moe_torch.py" 256:128 128:256 \
    32:1024 256:4 256:16
  python3 - "$B/gemm.jsonl" "$B/torch.json" "$OUT/gemm.json" <<'EOF'
import json, sys
cu = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
try:
    th = json.load(open(sys.argv[2]))
except Exception:
    th = {}
json.dump({"cublas": cu, "torch": th}, open(sys.argv[3], "w"), indent=1)
EOF
fi

# ---- summary.json ---------------------------------------------------------------------------
python3 - "$REC" "$JL" "$OUT/gemm.json" "$OUT/summary.json" <<'EOF'
import json, os, sys
rec, jl, gj, out = sys.argv[1:]
runs = [l.rstrip("\n").split("|") for l in open(rec) if l.strip()]
res = [json.loads(l) for l in open(jl) if l.strip()]
byk = {}
for r in res:
    byk.setdefault((r.get("impl"), r.get("size"), r.get("mode")), []).append(r)
rows = []
for impl, size, mode, rc, want, dt, extra in runs:
    lst = byk.get((impl, size, mode), [])
    r = lst.pop(0) if lst else {}
    t = r.get("timing", {}) or {}
    ch = (r.get("verify") or {}).get("checks", [])
    rows.append({"impl": impl, "size": size, "mode": mode, "args": extra, "rc": int(rc),
                 "want": want, "wall_s": float(dt), "status": r.get("status"),
                 "error": r.get("error"),
                 "rel_l2_max": max([c.get("rel_l2", 0) for c in ch], default=None),
                 "row_rel_max": max([c.get("row_rel_l2", 0) for c in ch], default=None),
                 "poison": sum(c.get("poison", 0) for c in ch),
                 "median_ms": t.get("median_ms"), "p10_ms": t.get("p10_ms"),
                 "p90_ms": t.get("p90_ms"), "ci95": [t.get("ci95_lo_ms"), t.get("ci95_hi_ms")],
                 "host_median_ms": t.get("host_median_ms"), "steps": t.get("steps")})
bench = {}
for s in ("prefill", "decode"):
    m = {r["impl"]: r["median_ms"] for r in rows if r["size"] == s and r["mode"] == "bench"}
    a, b, sd = m.get("baseline_A"), m.get("baseline_B"), m.get("seed")
    bench[s] = {"A_ms": a, "B_ms": b, "seed_ms": sd,
                "seed_vs_A": (a / sd) if a and sd else None,
                "seed_vs_B": (b / sd) if b and sd else None}
gemm = json.load(open(gj)) if os.path.exists(gj) else {}
json.dump({"runs": rows, "bench_R1": bench, "gemm": gemm,
           "note": "R = 1 only; --vranks runs are protocol tests (no timing)."},
          open(out, "w"), indent=1)
EOF
gpu_tap_end
