#!/bin/bash
# tests/gpu/gemm_ag.sh - the GEMM+AllGather workload and the runtime's
# hardening on ONE H200 (1 rank).  Needs no `cuco` binary: builds with nvcc
# here.  Writes under $OUT (<= 8 files): results.json, summary.md,
# build.log, runs.log.  Exit 0 when every expectation held.
#
#   OUT=/tmp/out bash tests/gpu/gemm_ag.sh            (from the repo root)
#   QUICK=1 ...   skip the M=16384 benches
#   ONLY=tile ... (< 100 s) build only baseline, seed_tile, seed_tile_nowait:
#                 verify seed_tile at the 4 verify sizes (+perturb), the
#                 nowait control (must exit 3), bench baseline and seed_tile
#                 at full_4k/full_8k, the hardening overhead
#
# Hardening overhead: checks on vs --skip-check all, baseline full_8k,
# interleaved on/off/on/off/on, every run paced (--pace-ms: each step starts
# PACE ms after the previous one, so both have the same step period). In
# run 1 an unpaced "checks off" run measured 12.7% SLOWER: back-to-back
# GEMMs hit the power limit, while the checks' work between steps let the
# GPU cool. Both medians, their ratio, and the unpaced pair are reported.
set -u
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=lib.sh
. tests/gpu/lib.sh
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/cuco-gemm-ag.XXXXXX)
LOG=$OUT/runs.log
BLOG=$OUT/build.log
: >"$LOG"
: >"$BLOG"
RES=$W/results.jsonl
: >"$RES"
gpu_nvls_off
T_START=$(date +%s)
ONLY=${ONLY:-}

gpu_nccl_home "$LOG"
gpu_libnccl_link "$NCCL_HOME" "$W/lib"
NV=(nvcc "-gencode=arch=compute_90a,code=sm_90a" -std=c++17 -O3 -Iruntime -Iworkloads/gemm_allgather -I"$NCCL_HOME/include")
WL=workloads/gemm_allgather

# ---- build: runtime + reference once, each implementation beside it
echo "== build $(date -u +%T)" >>"$BLOG"
pids=()
for f in runtime/*.cu $WL/reference.cu; do
  o=$W/$(basename "$f" .cu).o
  ("${NV[@]}" -c "$f" -o "$o" >>"$BLOG" 2>&1 || echo "BUILD FAIL $f" >>"$BLOG") &
  pids+=($!)
done
build_impl() { # name src defines...
  local name=$1 src=$2
  shift 2
  "${NV[@]}" "$@" -c "$src" -o "$W/impl_$name.o" >>"$BLOG" 2>&1 || echo "BUILD FAIL $name" >>"$BLOG"
}
IMPLS=(baseline baseline_overlap seed seed_tile)
[ "$ONLY" = tile ] && IMPLS=(baseline seed_tile)
build_impl baseline $WL/baseline.cu &
pids+=($!)
if [ "$ONLY" != tile ]; then
build_impl baseline_overlap $WL/baseline_overlap.cu &
pids+=($!)
build_impl seed $WL/seed.cu &
pids+=($!)
fi
# placement=per_tile: the shared GEMM tile (runtime/gemm_tile.cuh) waits per tile
build_impl seed_tile $WL/seed_tile.cu &
pids+=($!)
# its negative control: the tile waits compiled out, the data 5 ms late
build_impl seed_tile_nowait $WL/seed_tile.cu -DST_CONTROL_NO_WAIT &
pids+=($!)
# at one rank seed_tile multiplies A at once (nothing to gather); this build
# takes the gather path there too, so that a 1-rank verify covers the waits
build_impl seed_tile_gather $WL/seed_tile.cu -DST_R1_GATHER &
pids+=($!)
# ONLY=tile: the one-rank GEMM's grid and raster (CUCO-PARAM gemm_grid,
# gemm_raster) beside the committed ones, verified at 4 shapes and benched.
# TVARIANTS: NAME:GRID:RASTER words, then -D flags of the variant's own
# (NAME:GRID:RASTER:-DX=1,-DY=2).
TVARS=()
if [ "$ONLY" = tile ]; then
  for v in ${TVARIANTS:-pers8:persistent:8 tiles16:tiles:16}; do
    IFS=: read -r vn vg vr vd <<<"$v"
    TVARS+=("seed_tile_$vn")
    # shellcheck disable=SC2046
    build_impl "seed_tile_$vn" $WL/seed_tile.cu -DCUCO_PARAM_gemm_grid="$vg" -DCUCO_PARAM_gemm_raster="$vr" $(tr , ' ' <<<"${vd:-}") &
    pids+=($!)
  done
fi
CHEATS=()
if [ "$ONLY" != tile ]; then
build_impl seed_global $WL/seed.cu -DCUCO_SYNC=CUCO_SYNC_GLOBAL -DCUCO_PLACEMENT=CUCO_PLACEMENT_DEFERRED -DCUCO_ISSUER=CUCO_ISSUER_WARP &
pids+=($!)
build_impl seed_chunk $WL/seed.cu -DCUCO_SYNC=CUCO_SYNC_PER_CHUNK -DCUCO_ISSUER=CUCO_ISSUER_THREAD -DCUCO_CHUNK_BYTES=65536 &
pids+=($!)
. tests/gpu/cheats.sh
gpu_cheats "$WL" "$W/cheats" || exit 2  # whole sources (edits of the seed)
for c in "$W"/cheats/*.cu; do
  n=cheat_$(basename "$c" .cu)
  CHEATS+=("$n")
  build_impl "$n" "$c" &
  pids+=($!)
done
fi
wait "${pids[@]}"
# The runtime's main and the runtime object files go into one archive-like list.
RT_OBJS=()
for f in runtime/*.cu; do RT_OBJS+=("$W/$(basename "$f" .cu).o"); done
lpids=()  # links in parallel
for n in "${IMPLS[@]}" seed_global seed_chunk seed_tile_nowait seed_tile_gather "${TVARS[@]}" "${CHEATS[@]}"; do
  [ -f "$W/impl_$n.o" ] || continue
  { nvcc -arch=sm_90 "${RT_OBJS[@]}" "$W/reference.o" "$W/impl_$n.o" -o "$W/bin_$n" \
    -L"$W/lib" -L"$NCCL_HOME/lib" -L"$CUDA_LIB" -lnccl -lcublas -lcublasLt \
    -Xlinker -rpath="$NCCL_HOME/lib" >>"$BLOG" 2>&1 || echo "LINK FAIL $n" >>"$BLOG"; } &
  lpids+=($!)
done
wait "${lpids[@]}"
echo "== built $(ls "$W"/bin_* 2>/dev/null | wc -l) binaries in $(($(date +%s) - T_START)) s" >>"$BLOG"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >>"$BLOG" 2>&1
python3 - "$W/machine.json" "$NCCL_HOME" <<'PY'
import json, subprocess, sys
def sh(c):
    try: return subprocess.run(c, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e: return str(e)
m = {"gpus": {"count": len(sh("nvidia-smi -L").splitlines()), "list": sh("nvidia-smi -L").splitlines()},
     "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"),
     "nvcc": sh("nvcc --version | tail -2 | head -1"), "nccl_home": sys.argv[2],
     "clocks": sh("nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader | head -1"),
     "topo": sh("nvidia-smi topo -m | head -5")}
json.dump(m, open(sys.argv[1], "w"))
PY

# ---- one run: LABEL EXPECT(rc or "any") BIN ARGS...; records a JSON line
run() {
  local label=$1 expect=$2 bin=$3
  shift 3
  local out=$W/r_$label.json rc t0 t1
  rm -f "$out"
  t0=$(date +%s.%N)
  timeout 120 "$W/bin_$bin" --out "$out" --machine "$W/machine.json" \
    --workload gemm_allgather --impl "$bin" "$@" >>"$LOG" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  echo "[$label] rc=$rc expect=$expect ($bin $*)" >>"$LOG"
  python3 - "$label" "$expect" "$rc" "$out" "$bin" "$t0" "$t1" "$*" >>"$RES" <<'PY'
import json, sys
label, expect, rc, out, binname, t0, t1, args = sys.argv[1:9]
try: d = json.load(open(out))
except Exception as e: d = {"status": "no RESULT.json", "error": str(e)}
d.pop("machine", None)
t = d.get("timing") or {}
t.pop("samples_ms", None)
rec = {"label": label, "bin": binname, "args": args, "rc": int(rc), "expect": expect,
       "wall_s": round(float(t1) - float(t0), 2), "status": d.get("status"),
       "error": d.get("error"), "timing": t or None,
       "checks": [c for c in (d.get("verify") or {}).get("checks", []) if not c.get("passed")][:6],
       "n_checks": len((d.get("verify") or {}).get("checks", []))}
rec["as_expected"] = expect == "any" or str(rec["rc"]) == expect
print(json.dumps(rec))
PY
}

# ---- verify: every honest implementation at the small shapes (+perturb)
VSIZES=("small_a:M=256,K=512,N=384" "small_b:M=200,K=136,N=120" "small_c:M=72,K=40,N=24" "mid_a:M=1032,K=1000,N=1048")
VIMPLS=("${IMPLS[@]}" seed_tile_gather)
[ "$ONLY" = tile ] && VIMPLS=(seed_tile seed_tile_gather)
for impl in "${VIMPLS[@]}"; do
  for sz in "${VSIZES[@]}"; do
    run "verify_${impl}_${sz%%:*}" 0 "$impl" --mode verify --perturb --params "${sz#*:}" --size-name "${sz%%:*}" --seed 7
  done
done
for impl in seed_global seed_chunk; do
  [ "$ONLY" = tile ] && break
  for sz in "${VSIZES[@]:1:2}"; do
    run "verify_${impl}_${sz%%:*}" 0 "$impl" --mode verify --perturb --params "${sz#*:}" --size-name "${sz%%:*}"
  done
done

# tails_t: 10 M tiles (the last 48 rows), N and K tails; loop_p: 512
# tiles, more than one a CTA (a persistent grid loops)
for impl in "${TVARS[@]}"; do
  run "verify_${impl}_mid_a" 0 "$impl" --mode verify --perturb --params M=1032,K=1000,N=1048 --size-name mid_a --seed 7
  run "verify_${impl}_small_a" 0 "$impl" --mode verify --perturb --params M=256,K=512,N=384 --size-name small_a --seed 7
  run "verify_${impl}_tails_t" 0 "$impl" --mode verify --perturb --params M=1200,K=1000,N=1048 --size-name tails_t --seed 7
  run "verify_${impl}_loop_p" 0 "$impl" --mode verify --perturb --params M=2048,K=1024,N=8192 --size-name loop_p --seed 7
done

# per_tile's waits are load-bearing: without them (data late) verify must fail.
run "control_seed_tile_nowait" 3 seed_tile_nowait --mode verify --params M=1032,K=1000,N=1048 --seed 7

# ---- cheats: must fail verification (3) naming their mechanism; then the
# same run with that mechanism switched off shows whether it alone caught it.
skip_for() {
  case $1 in
    cheat_stale_flags | cheat_skip_rank | cheat_partial_write) echo "--skip-check poison" ;;
    cheat_cached_output) echo "--skip-check fresh-inputs" ;;
    cheat_row_error) echo "--skip-check local-check" ;;
    cheat_late_write) echo "--skip-check snapshot" ;;
    cheat_input_mutation) echo "--skip-check input-hash" ;;
    cheat_timing_escape) echo "--skip-check snapshot --skip-check host-clock" ;;
    cheat_masked_recv) echo "--skip-check recv-poison" ;;
    cheat_escaped_tail) echo "--skip-check host-clock" ;;
    cheat_hog_race) echo "--skip-check perturb-hog" ;;
    cheat_block_error) echo "--skip-check local-check" ;;
    *) echo "" ;;
  esac
}
for c in "${CHEATS[@]}"; do
  # order_race needs >= 2 ranks (tests/gpu/harden.sh runs it at R=2 virtual)
  # frozen_edit, internal_call and raw_syscall: tool-side checks (static,
  # allowlist) catch them before any run
  if [ "$c" = cheat_frozen_edit ] || [ "$c" = cheat_order_race ] ||
     [ "$c" = cheat_internal_call ] || [ "$c" = cheat_raw_syscall ]; then
    run "cheat_${c#cheat_}" any "$c" --mode verify --perturb --params M=200,K=136,N=120 --seed 11
    continue
  fi
  run "cheat_${c#cheat_}" 3 "$c" --mode verify --perturb --params M=200,K=136,N=120 --seed 11
  if [ "$c" = cheat_no_wait ]; then
    run "cheat_${c#cheat_}_without" any "$c" --mode verify --params M=200,K=136,N=120 --seed 11
  else
    # shellcheck disable=SC2046
    run "cheat_${c#cheat_}_without" any "$c" --mode verify --perturb --params M=200,K=136,N=120 --seed 11 $(skip_for "$c")
  fi
done
# Host clock alone: the escape with the snapshot check off, timed at 4k.
[ "$ONLY" = tile ] || run cheat_timing_escape_bench_hostclock 3 cheat_timing_escape --mode bench --params M=4096,K=8192,N=28672 --skip-check snapshot --iters 20 --min-time 0.2

# ---- bench: full sizes at 1 rank
BSIZES=("full_4k:M=4096,K=8192,N=28672" "full_8k:M=8192,K=8192,N=28672")
[ -z "${QUICK:-}" ] && [ "$ONLY" != tile ] && BSIZES+=("full_16k:M=16384,K=8192,N=28672")
BARGS=(--warmup 5 --iters 20 --min-time 1.0)
[ "$ONLY" = tile ] && BARGS=(--warmup 3 --iters 20 --min-time 0.3)
for sz in "${BSIZES[@]}"; do
  for impl in "${IMPLS[@]}" "${TVARS[@]}"; do
    run "bench_${impl}_${sz%%:*}" 0 "$impl" --mode bench --params "${sz#*:}" --size-name "${sz%%:*}" "${BARGS[@]}"
  done
done
# Hardening overhead (see the header): interleaved, paced, same step period.
PACE=${PACE:-80}
P8=(--mode bench --params M=8192,K=8192,N=28672 --warmup 2 --iters 15 --min-time 0)
for i in 1 2 3 4 5; do
  if [ $((i % 2)) = 1 ]; then run "overhead_on_$i" 0 baseline "${P8[@]}" --pace-ms "$PACE"
  else run "overhead_off_$i" 0 baseline "${P8[@]}" --pace-ms "$PACE" --skip-check all; fi
done
# ... and unpaced (back-to-back when checks are off), for comparison.
run "overhead_off_unpaced" 0 baseline "${P8[@]}" --iters 200 --skip-check all
run "overhead_on_unpaced" 0 baseline "${P8[@]}" --iters 40

# ---- PROF=1 (with ONLY=tile): Nsight Compute over 3 GEMM launches at
# full_8k of the baseline (cuBLASLt: its kernel name says its tile and
# cluster) and each seed_tile build: time, SM clock, DRAM bytes, L2 hit rate,
# then the tensor pipe's activity on its own (a metric this ncu lacks fails
# only that pass).  Clocks left alone.  ncu-IMPL.csv under OUT.
if [ "${PROF:-0}" = 1 ]; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  for b in baseline seed_tile "${TVARS[@]}"; do
    [ -n "$NCU" ] && [ -x "$W/bin_$b" ] || { echo "prof $b: no ncu or no binary" >>"$LOG"; continue; }
    for pass in "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct" \
                "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed"; do
      timeout 120 "$NCU" --clock-control none --metrics "$pass" -k "regex:sm90|gemm_tile_v2|xmma|cutlass" \
        --launch-skip 2 --launch-count 3 --csv "$W/bin_$b" --out "$W/prof.json" --machine "$W/machine.json" \
        --workload gemm_allgather --impl "$b" --mode bench --params M=8192,K=8192,N=28672 \
        --warmup 1 --iters 4 --min-time 0 >>"$OUT/ncu-$b.csv" 2>>"$LOG"
      echo "prof $b: ncu exit $?" >>"$LOG"
    done
  done
fi

# ---- torch.matmul on the same shapes (outside reference, not part of cuco)
TSPECS=()  # NAME:M,K,N for tests/gpu/gemm_torch.py
for sz in "${BSIZES[@]}"; do
  p=${sz#*:}
  p=${p//M=/} p=${p//K=/} p=${p//N=/}
  TSPECS+=("${sz%%:*}:$p")
done
python3 tests/gpu/gemm_torch.py "${TSPECS[@]}" >"$W/torch.json" 2>>"$LOG" ||
  echo "torch anchor failed (see above)" >>"$LOG"

# ---- results + summary
python3 - "$RES" "$OUT" "$W/machine.json" "$(($(date +%s) - T_START))" "$W/torch.json" "${TVARS[@]}" <<'PY'
import json, sys
res, out, mpath, secs, tpath = sys.argv[1:6]
tvars = sys.argv[6:]  # the seed_tile variants' names
recs = [json.loads(l) for l in open(res) if l.strip()]
try:
    tj = json.load(open(tpath))
except Exception as e:
    tj = {"error": str(e)}
for t in tj.get("results", []):
    recs.append({"label": "torch_" + t["size"], "median_ms": t["median_ms"], "tflops": t["tflops"],
                 "torch": tj.get("torch")})
machine = json.load(open(mpath))
json.dump({"machine": machine, "seconds": int(secs), "runs": recs}, open(out + "/results.json", "w"), indent=1)
by = {r["label"]: r for r in recs}
L = ["# gemm_allgather on one H200 (1 rank)", "", "machine: " + json.dumps(machine.get("gpus", {}).get("list")) +
     " driver " + str(machine.get("driver")) + ", " + str(machine.get("clocks")), ""]
L += ["## verify (with --perturb)", "", "| run | rc | status | as expected | first failure |", "|---|---|---|---|---|"]
for r in recs:
    if r["label"].startswith(("verify_", "cheat_", "control_")):
        why = (r.get("error") or "")[:150].replace("|", "/")
        L.append("| %s | %s | %s | %s | %s |" % (r["label"], r["rc"], r.get("status"), "yes" if r["as_expected"] else "**NO**", why))
L += ["", "## bench (median of the slowest rank, CUDA events)", "",
      "| size | impl | median ms | p10 | p90 | CI95 | steps | TFLOP/s | host median ms | vs baseline |", "|---|---|---|---|---|---|---|---|---|---|"]
flops = {"full_4k": 2 * 4096 * 8192 * 28672, "full_8k": 2 * 8192 * 8192 * 28672, "full_16k": 2 * 16384 * 8192 * 28672}
for size, fl in flops.items():
    base = (by.get("bench_baseline_" + size) or {}).get("timing") or {}
    for impl in ["baseline", "baseline_overlap", "seed", "seed_tile"] + tvars:
        r = by.get("bench_%s_%s" % (impl, size))
        if not r: continue
        t = r.get("timing") or {}
        if not t:
            L.append("| %s | %s | %s | | | | | | | |" % (size, impl, r.get("status"))); continue
        ratio = t["median_ms"] / base["median_ms"] if base.get("median_ms") else float("nan")
        L.append("| %s | %s | %.4f | %.4f | %.4f | %.4f-%.4f | %d | %.0f | %.4f | %.4f |" % (
            size, impl, t["median_ms"], t["p10_ms"], t["p90_ms"], t["ci95_lo_ms"], t["ci95_hi_ms"], t["steps"],
            fl / t["median_ms"] / 1e9, t["host_median_ms"], ratio))
    tr = by.get("torch_" + size)
    if tr and "median_ms" in tr:
        L.append("| %s | torch.matmul (outside) | %.4f | | | | 30 | %.0f | | |" % (size, tr["median_ms"], tr["tflops"]))
def med(key):
    t = (by.get(key) or {}).get("timing") or {}
    return t.get("median_ms")
on = [m for m in (med("overhead_on_%d" % i) for i in (1, 3, 5)) if m]
off = [m for m in (med("overhead_off_%d" % i) for i in (2, 4)) if m]
if on and off:
    mon, moff = sorted(on)[len(on) // 2], sorted(off)[len(off) // 2]
    L += ["", "hardening overhead (baseline full_8k, interleaved on/off/on/off/on, paced: each step "
          "starts %s ms after the last): checks on %s -> median %.4f ms; checks off %s -> median %.4f ms; "
          "on/off = %.4f (%+.2f%%)" % (((by.get("overhead_off_2") or {}).get("timing") or {}).get("pace_ms"),
          " ".join("%.4f" % x for x in on), mon, " ".join("%.4f" % x for x in off), moff, mon / moff,
          100 * (mon / moff - 1))]
else:
    L += ["", "hardening overhead: runs missing (on %s, off %s)" % (on, off)]
uo, un = med("overhead_on_unpaced"), med("overhead_off_unpaced")
if uo and un:
    L += ["unpaced (checks off runs GEMMs back to back): on %.4f ms, off %.4f ms, on/off = %.4f" % (uo, un, uo / un)]
bad = [r["label"] for r in recs if "as_expected" in r and not r["as_expected"]]
L += ["", "unexpected: " + (", ".join(bad) if bad else "none"), "total %s s" % secs]
open(out + "/summary.md", "w").write("\n".join(L) + "\n")
print("\n".join(L))
sys.exit(1 if bad else 0)
PY
rc=$?
rm -rf "$W"
exit $rc
