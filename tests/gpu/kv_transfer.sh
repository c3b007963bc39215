#!/bin/bash
# tests/gpu/kv_transfer.sh - the kv_transfer workload on ONE GPU (R = 1:
# one rank plays prefill and decode; the KV still goes through NCCL
# send/recv to self (baselines) or the LSA window (seed)).  Issue 12.
#
# Run from the repository root on the GPU machine:
#   OUT=/some/dir bash tests/gpu/kv_transfer.sh
#   KV_PART=new ...   only B, the seed, compute-only and the pull/per_tile variants
#   KV_VRANKS=0 ...   skip the virtual-rank runs
# Steps: build (runtime objects once, then every implementation) -> verify
# (baselines A and B, seed + two directive variants, with --perturb) on the
# verify sizes -> cheats (each must exit 3) -> sizes that need
# "must-stay-poison" support in the runtime (reported, not failed) -> bench
# short/mid/long for A, B, seed, the seed's split variant and compute-only
# (C_prefill, the bound's compute term) -> the seed's variants at R = 2, 4
# virtual ranks -> torch anchors.  The issue-12 variants (direction=pull,
# placement=per_tile: NEW_IMPLS) are verified, benched against B and
# reported in summary.json as <variant>_over_B.  Writes to $OUT (<= 8 files):
#   kv_transfer.tap   TAP log (what passed, what not, why)
#   summary.json      one record per run: impl, size, mode, rc, status,
#                     error, rel_l2, median/p10/p90 ms; plus "bench" table
#                     and "torch" anchors
#   results.jsonl     every RESULT.json, one per line
#   runs.log          commands and stderr of every run
#   build.log         compiler output
# Exit status 0 when every check that must pass passed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_out "$ROOT/build/gpu-kv"
gpu_nvls_off
WL=$ROOT/workloads/kv_transfer
gpu_nvcc_env "$WL" "${KV_BUILD:-/tmp/kv_transfer_build}"  # B: binaries and scratch, NOT under $OUT
. "$ROOT/tests/gpu/cheats.sh"
CH=$B/cheats  # the cheats as whole sources (they are edits of the seed)
gpu_cheats "$WL" "$CH" --verify-only || exit 2
gpu_harness_init kv_transfer

# ---- build: runtime + reference once, then each implementation -------------
J=${KV_JOBS:-12}  # compilers at once
for f in "$ROOT"/runtime/*.cu; do
  gpu_build_obj "$f" "$B/rt_$(basename "$f" .cu).o" &
  gpu_throttle "$J"
done
gpu_build_obj "$WL/reference.cu" "$B/reference.o" &
# The search-space points added for issue 12 (direction=pull, placement=per_tile):
# name|source|directive flags.  Verified at every verify size (+perturb) and
# at R = 2 and 4 virtual ranks, benched against baseline B.
NEW_IMPLS=("seed_pull|$WL/seed.cu|-DCUCO_PARAM_direction=pull"
           "seed_pull_split|$WL/seed.cu|-DCUCO_PARAM_direction=pull -DCUCO_PLACEMENT=3 -DCUCO_ISSUER=2 -DCUCO_CHUNK_BYTES=262144 -DCUCO_PARAM_comm_ctas=16"
           "seed_tile|$WL/seed.cu|-DCUCO_PLACEMENT=2"
           "seed_tile_pull|$WL/seed.cu|-DCUCO_PLACEMENT=2 -DCUCO_PARAM_direction=pull -DCUCO_ISSUER=2 -DCUCO_PARAM_comm_ctas=16")
NEW_NAMES=(seed_pull seed_pull_split seed_tile seed_tile_pull)
# name|source|directive flags
IMPLS=("baseline_A|$WL/baseline.cu|"
       "baseline_B|$WL/baseline_streamed.cu|"
       "seed|$WL/seed.cu|"
       "seed_split_chunk_warp|$WL/seed.cu|-DCUCO_PLACEMENT=3 -DCUCO_SYNC=3 -DCUCO_ISSUER=2 -DCUCO_CHUNK_BYTES=262144 -DCUCO_PARAM_comm_ctas=16"
       "seed_split_thread|$WL/seed.cu|-DCUCO_PLACEMENT=3 -DCUCO_ISSUER=1 -DCUCO_CHUNK_BYTES=65536 -DCUCO_PARAM_comm_ctas=4 -DCUCO_PARAM_push_threads=256"
       "${NEW_IMPLS[@]}"
       "compute_only|$WL/tools/compute_only.cu|")
for c in "$CH"/*.cu; do IMPLS+=("cheat_$(basename "$c" .cu)|$c|"); done
# KV_PART=new: only what the new variants need (B and the seed beside them,
# compute-only for the bound), no cheats, no other directive variants.
KV_PART=${KV_PART:-all}
VER_BASE="baseline_A baseline_B seed"
BENCH_IMPLS="compute_only baseline_A baseline_B seed seed_split_chunk_warp"
if [ "$KV_PART" = new ]; then
  IMPLS=("baseline_B|$WL/baseline_streamed.cu|" "seed|$WL/seed.cu|" "${NEW_IMPLS[@]}"
         "compute_only|$WL/tools/compute_only.cu|")
  VER_BASE="baseline_B seed"
  BENCH_IMPLS="compute_only baseline_B seed"
fi
gpu_note "KV_PART=$KV_PART"
gpu_build_impls IMPLS "$B" "$J"
wait  # every compiler
cat "$B"/*.log >>"$OUT/build.log" 2>/dev/null
built=()
for e in "${IMPLS[@]}"; do
  name=${e%%|*}
  if gpu_link "$B" "$name" "$B"/rt_*.o "$B/reference.o"; then built+=("$name")
  else gpu_not_ok "build $name" "$(tail -5 "$B/$name.o.log" 2>/dev/null) (see build.log)"; fi
done
gpu_ok "built ${#built[@]} of ${#IMPLS[@]} binaries in $(($(date +%s) - T_START)) s"

# Sizes (keep in sync with workload.ini).
declare -A SZ=(
  [v_tiny]="L=2,DM=64,HKV=1,HD=64,NREQ=2,LEN=32"
  [v_small]="L=4,DM=512,HKV=8,HD=128,NREQ=3,LEN=48"
  [v_odd]="L=3,DM=264,HKV=2,HD=64,NREQ=1,LEN=16"
  [v_mid]="L=2,DM=1024,HKV=8,HD=128,NREQ=2,LEN=1024"
  [v_awk]="L=2,DM=256,HKV=8,HD=128,NREQ=5,AWK=1"
  [v_spare]="L=2,DM=128,HKV=1,HD=64,NREQ=2,LEN=32,POOLX=4,REV=1"
  [v_hd64]="L=2,DM=512,HKV=8,HD=64,NREQ=5,AWK=1,POOLX=4"
  [short]="L=32,DM=4096,HKV=8,HD=128,NREQ=1,LEN=2048"
  [mid]="L=32,DM=4096,HKV=8,HD=128,NREQ=8,LEN=1024"
  [long]="L=32,DM=4096,HKV=8,HD=128,NREQ=1,LEN=32768")
TOL=5e-3

# run IMPL SIZE MODE WANT TIMEOUT [extra args]: one harness run.  WANT: 0
# must pass, 3 must be rejected by verification, "any" = report only.
run() {
  local impl=$1 size=$2 mode=$3 want=$4 to=$5; shift 5
  if [ ! -x "$B/$impl" ]; then gpu_not_ok "$impl $size $mode" "not built"; return; fi
  gpu_run_bin --log-timeout "$B/res.json" "$to" "$impl $size $mode" "$B/$impl" --params "${SZ[$size]}" \
    --size-name "$size" --mode "$mode" --rank 0 --nranks 1 --seed 12345 --tol "$TOL" --impl "$impl" \
    --workload kv_transfer --out "$B/res.json" "$@"
  echo "$impl|$size|$mode|$gpu_rc|$want|$gpu_dt" >>"$REC"
  gpu_why
  gpu_verdict "$impl $size $mode" "$want"
}

# ---- verify ------------------------------------------------------------------
for s in v_tiny v_small v_odd v_mid; do
  for impl in $VER_BASE; do run "$impl" "$s" verify 0 40 --perturb; done
  # Nothing runs at all (driver, NCCL, no GPU): stop here, the rest would only repeat it.
  # shellcheck disable=SC2086
  [ "$s" = v_tiny ] && gpu_stop_if_none_ran v_tiny "$(echo $VER_BASE | wc -w)"
done
if [ "$KV_PART" != new ]; then
  for impl in seed_split_chunk_warp seed_split_thread; do run "$impl" v_mid verify 0 40 --perturb; done
fi
for impl in "${NEW_NAMES[@]}"; do
  for s in v_tiny v_small v_odd v_mid; do run "$impl" "$s" verify 0 40 --perturb; done
done
# ---- cheats: must be rejected at verification (exit 3) -------------------------
for e in "${IMPLS[@]}"; do
  name=${e%%|*}
  case $name in cheat_*) run "$name" v_mid verify 3 40 --perturb ;; esac
done
# ---- sizes needing "must-stay-poison" verification (padding, spare blocks) ---
gpu_note "next 3: fail with 'poison' until the runtime lets expected all-ones mean 'must still be poison' (README.md)"
for s in v_awk v_spare v_hd64; do
  for impl in seed "${NEW_NAMES[@]}"; do run "$impl" "$s" verify any 40; done
done
# ---- bench ----------------------------------------------------------------------
for s in short mid long; do
  for impl in $BENCH_IMPLS "${NEW_NAMES[@]}"; do
    want=0; [ "$impl" = compute_only ] && want=any
    run "$impl" "$s" bench "$want" 90 --warmup 3 --iters 20 --min-time 0.3
  done
done
# ---- virtual ranks: the seed's variants at R = 2 and 4 on this one GPU ----------
# (-DCUCO_VRANKS, docs/vranks.md: a protocol test of roles, windows, flags and
# must-stay-poison pools at R >= 2; never timed).  KV_VRANKS=0 skips it.
if [ "${KV_VRANKS:-1}" = 1 ]; then
  VB=$B/vr
  mkdir -p "$VB"
  for f in "$ROOT"/runtime/*.cu "$WL/reference.cu"; do
    gpu_build_obj "$f" "$VB/rt_$(basename "$f" .cu).o" -DCUCO_VRANKS &
    gpu_throttle "$J"
  done
  VR_IMPLS=("seed|$WL/seed.cu|" "seed_split|$WL/seed.cu|-DCUCO_PLACEMENT=3" "${NEW_IMPLS[@]}")
  gpu_build_impls VR_IMPLS "$VB" "$J" -DCUCO_VRANKS
  wait
  cat "$VB"/*.log >>"$OUT/build.log" 2>/dev/null
  for e in "${VR_IMPLS[@]}"; do
    name=${e%%|*}
    if ! gpu_link "$VB" "$name" "$VB"/rt_*.o; then
      gpu_not_ok "build $name (--vranks)" "$(tail -3 "$VB/$name.o.log" 2>/dev/null) (see build.log)"
      continue
    fi
    for R in 2 4; do
      for s in v_small v_mid; do
        gpu_run_bin "$VB/res.json" 90 "${name} vranks $R $s" "$VB/$name" --params "${SZ[$s]}" --size-name "$s" \
          --mode verify --vranks "$R" --seed 12345 --tol "$TOL" --impl "${name}_vr$R" --workload kv_transfer \
          --out "$VB/res.json"
        echo "${name}_vr$R|$s|verify|$gpu_rc|0|${gpu_dt%.*}" >>"$REC"
        if [ "$gpu_rc" -eq 0 ]; then gpu_ok "$name --vranks $R $s (protocol test)"
        else gpu_not_ok "$name --vranks $R $s (protocol test)" "exit $gpu_rc: $(tail -2 "$B/stderr.txt" | tr '\n' ' ')"; fi
      done
    done
  done
fi

# ---- torch anchors ---------------------------------------------------------------
gpu_anchor "torch anchors" 120 "$B/torch.json" python3 "$ROOT/tests/gpu/kv_transfer_torch.py"

# ---- summary.json ------------------------------------------------------------------
python3 - "$REC" "$JL" "$B/torch.json" "$OUT/summary.json" <<'EOF'
import json, sys
rec, jl, tj, out = sys.argv[1:]
runs = [l.rstrip("\n").split("|") for l in open(rec) if l.strip()]
res = [json.loads(l) for l in open(jl) if l.strip()]
byk = {}
for r in res:
    byk[(r.get("impl"), r.get("size"), r.get("mode"))] = r
rows = []
for impl, size, mode, rc, want, dt in runs:
    r = byk.get((impl, size, mode), {})
    t = r.get("timing", {})
    ch = r.get("verify", {}).get("checks", [])
    rows.append({"impl": impl, "size": size, "mode": mode, "rc": int(rc), "want": want,
                 "wall_s": float(dt), "status": r.get("status"), "error": r.get("error"),
                 "rel_l2_max": max([c.get("rel_l2", 0) for c in ch], default=None),
                 "poison": sum(c.get("poison", 0) for c in ch),
                 "median_ms": t.get("median_ms"), "p10_ms": t.get("p10_ms"),
                 "p90_ms": t.get("p90_ms"), "ci95": [t.get("ci95_lo_ms"), t.get("ci95_hi_ms")],
                 "host_median_ms": t.get("host_median_ms"), "steps": t.get("steps")})
try:
    torch = json.load(open(tj))
except Exception:
    torch = {}
bench = {}
for s in ("short", "mid", "long"):
    m = {r["impl"]: r["median_ms"] for r in rows if r["size"] == s and r["mode"] == "bench"}
    c, a, b, sd, sp = (m.get(k) for k in ("compute_only", "baseline_A", "baseline_B", "seed",
                                          "seed_split_chunk_warp"))
    e = {"compute_only_ms (C_prefill, GEMM+RoPE, not a valid impl)": c, "A_ms": a, "B_ms": b,
         "seed_ms (deferred, the doc's seed)": sd, "seed_split_chunk_warp_ms": sp}
    if sp and b: e["seed_split_over_B"] = sp / b
    for k in ("seed_pull", "seed_pull_split", "seed_tile", "seed_tile_pull"):
        e[k + "_ms"] = m.get(k)
        if m.get(k) and b: e[k + "_over_B"] = m[k] / b
    if sd and b: e["seed_over_B (goal <= 1.03)"] = sd / b
    if sd and a: e["A_over_seed"] = a / sd
    if sd and c: e["seed_exposed_tail_ms (seed - C_prefill)"] = sd - c
    if b and c: e["B_exposed_tail_ms"] = b - c
    tt = torch.get(s, {})
    if c and tt.get("gemm_rope_ms"):
        e["torch_gemm_rope_ms"] = tt["gemm_rope_ms"]
        e["ours_vs_torch_gemm_rope (goal >= 0.95)"] = tt["gemm_rope_ms"] / c
    if tt.get("gemm_ms"): e["torch_gemm_ms"] = tt["gemm_ms"]
    bench[s] = e
json.dump({"note": "R=1, one H200; the compute is the KV projection only (a proxy, "
           "workloads.md section 3 risk 1); compute_only fails verification by design",
           "bench": bench, "torch": torch, "runs": rows}, open(out, "w"), indent=1)
print(json.dumps(bench, indent=1))
EOF
gpu_ok "summary written"
gpu_tap_end
rc=$?
tail -3 "$TAP"
exit $rc
