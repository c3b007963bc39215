#!/bin/bash
# tests/gpu/two_rank.sh - GEMM+AllGather at RANKS (default 2) real ranks,
# one process per GPU, through `cuco eval`: baselines and seed, verified
# and benchmarked at SIZES (default one small and every full size).  Needs
# ./cuco (tests/gpu/run-all.sh provides it).  Then, in the same run, the
# overlap bound of every full size in SIZES (issue 8):
#   bound = max(GEMM alone, AllGather alone)
#   GEMM alone      the baseline's local GEMM on the gathered shape
#                   [M,K] x [K,N/R] at 1 rank (tools/gemm_only.cu: the frozen
#                   cuBLASLt plan of wl_gemm.cuh, no all-gather), GPU 0 only
#   AllGather alone ncclAllGather of the A shard (M/R x K bf16 per rank, M*K*2
#                   bytes out) at RANKS ranks (bench/coll_sweep.cu)
# recorded beside the baseline/overlap/seed medians with each one's
# fraction of the bound (bound / median; 1 = at the bound).
# Writes to $OUT: topo.txt, eval-<R>rank.json/.log, bound-<R>rank.json
# (the table), bound-<R>rank.log (builds and runs of the two probes).
set -u
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=lib.sh
. tests/gpu/lib.sh
RANKS=${RANKS:-2}
OUT=${OUT:-/tmp/cuco-two-rank}
SIZES=${SIZES:-small_b,full_4k,full_8k,full_16k}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 CUCO_CACHE_DIR=${CUCO_CACHE_DIR:-/tmp/cuco-cache}
nvidia-smi topo -m >"$OUT/topo.txt" 2>&1
./cuco eval workloads/gemm_allgather --impl all --ranks "$RANKS" \
  --sizes "$SIZES" --out /tmp/cuco-two-rank-work --json \
  >"$OUT/eval-${RANKS}rank.json" 2>"$OUT/eval-${RANKS}rank.log"
rc=$?
tail -40 "$OUT/eval-${RANKS}rank.log"
echo "cuco eval exit $rc"

# ---- the overlap bound of every full size --------------------------------------
WL=workloads/gemm_allgather
BL=$OUT/bound-${RANKS}rank.log
: >"$BL"
FULL=$(echo "$SIZES" | tr ',' '\n' | grep '^full_' || true)
if [ -z "$FULL" ]; then echo "no full size in SIZES: no bound"; exit $rc; fi
gpu_nccl_home "$BL" "no NCCL (nvidia-nccl-cu13): no bound"
W=$(mktemp -d /tmp/cuco-bound.XXXXXX)
gpu_libnccl_link "$NCCL_HOME" "$W/lib"
LIBS=(-L"$W/lib" -L"$NCCL_HOME/lib" -L"$CUDA_LIB" -Xlinker -rpath -Xlinker "$NCCL_HOME/lib"
      -lnccl -lcublas -lcublasLt)
NV=(nvcc -arch=sm_90 -std=c++17 -O3 -Iruntime -I"$WL" -I"$NCCL_HOME/include")
echo "== build $(date -u +%T)" >>"$BL"
for f in runtime/*.cu $WL/reference.cu $WL/tools/gemm_only.cu; do
  ("${NV[@]}" -c "$f" -o "$W/$(basename "$f" .cu).o" >>"$BL" 2>&1 || echo "BUILD FAIL $f" >>"$BL") &
done
(nvcc -arch=sm_90 -std=c++17 -O3 -I"$NCCL_HOME/include" -o "$W/coll_sweep" bench/coll_sweep.cu \
  "${LIBS[@]}" >>"$BL" 2>&1 || echo "BUILD FAIL coll_sweep" >>"$BL") &
wait
nvcc -arch=sm_90 -o "$W/gemm_only" "$W"/*.o "${LIBS[@]}" >>"$BL" 2>&1 || echo "BUILD FAIL gemm_only link" >>"$BL"
pval() { echo "$1" | tr ',' '\n' | sed -n "s/^$2=//p"; }
AGB=()
for s in $FULL; do
  p=$(gpu_size_params "$WL/workload.ini" "$s")
  M=$(pval "$p" M) K=$(pval "$p" K) N=$(pval "$p" N)
  if [ -z "$M" ] || [ -z "$K" ] || [ -z "$N" ] || [ $((N % RANKS)) -ne 0 ]; then
    echo "size $s: cannot read M,K,N (or N % RANKS != 0) from workload.ini" | tee -a "$BL"; continue
  fi
  AGB+=($((M * K * 2)))
  echo "== gemm_only $s: M=$M K=$K N=$((N / RANKS)) (N/R) at 1 rank, GPU 0" >>"$BL"
  CUDA_VISIBLE_DEVICES=${GEMM_GPU:-0} timeout 300 "$W/gemm_only" --params "M=$M,K=$K,N=$((N / RANKS))" \
    --size-name "$s" --mode bench --rank 0 --nranks 1 --seed 1234 --warmup 5 --iters 50 \
    --min-time 1 --workload gemm_allgather --impl tools/gemm_only.cu \
    --out "$W/gemm_only-$s.json" >>"$BL" 2>&1
  echo "gemm_only $s exit $?" >>"$BL"
done
AG_LIST=$(IFS=,; echo "${AGB[*]}")
echo "== coll_sweep allgather at $RANKS ranks, bytes $AG_LIST" >>"$BL"
[ -n "$AG_LIST" ] && timeout 300 "$W/coll_sweep" --ranks "$RANKS" --sizes "$AG_LIST" --ops allgather \
  --iters 50 --warmup 5 --out "$W/ag.json" 2>>"$BL"
echo "coll_sweep exit $?" >>"$BL"
python3 - "$OUT/eval-${RANKS}rank.json" "$W" "$RANKS" "$OUT/bound-${RANKS}rank.json" $FULL <<'PY'
import json, os, sys
ev, w, R, out, sizes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
e = load(ev)
e = e if isinstance(e, list) else ([e] if e else [])
ag = load(os.path.join(w, "ag.json")) or {}
agt = {r["bytes"]: r["allgather"] for r in ag.get("results", [])}
rows = []
for s in sizes:
    row = {"size": s}
    g = load(os.path.join(w, "gemm_only-%s.json" % s)) or {}
    gt = g.get("timing", {})
    row["gemm_alone_ms"] = gt.get("median_ms") if g.get("status") == "ok" else None
    row["gemm_alone_params"] = g.get("params")
    pr = g.get("params") or {}
    b = pr.get("M", 0) * pr.get("K", 0) * 2
    a = agt.get(b)
    row["allgather_alone_ms"] = a["median_ms"] if a and a.get("verified") else None
    row["allgather_bytes"] = b or None
    if a: row["allgather_busbw_GBps"] = a.get("busbw_GBps")
    parts = [row["gemm_alone_ms"], row["allgather_alone_ms"]]
    row["bound_ms"] = max(parts) if None not in parts else None
    for x in e:
        t = (((x.get("metrics") or {}).get("bench") or {}).get(s) or {}).get("timing") or {}
        m = t.get("median_ms")
        name = x.get("impl", "?")
        row[name] = {"median_ms": m, "p10_ms": t.get("p10_ms"), "p90_ms": t.get("p90_ms"),
                     "status": x.get("status")}
        if m and row["bound_ms"]:
            row[name]["fraction_of_bound"] = row["bound_ms"] / m
            row[name]["over_bound"] = m / row["bound_ms"]
    rows.append(row)
doc = {"what": "GEMM+AllGather overlap bound at %d ranks: max(GEMM alone, AllGather alone), "
               "measured in the same run as the eval medians" % R,
       "gemm_alone": "tools/gemm_only.cu at 1 rank, [M,K]x[K,N/R], cuBLASLt plan of wl_gemm.cuh",
       "allgather_alone": "bench/coll_sweep.cu ncclAllGather, M*K*2 bytes out, %d ranks" % R,
       "fraction_of_bound": "bound / median (1 = at the bound); over_bound = median / bound",
       "sizes": rows, "allgather_machine": ag.get("machine"), "allgather_error": ag.get("error")}
json.dump(doc, open(out, "w"), indent=1)
for r in rows:
    print(r["size"], "gemm_alone", r["gemm_alone_ms"], "ag_alone", r["allgather_alone_ms"],
          "bound", r["bound_ms"],
          " ".join("%s %.4g (x%.3f)" % (k, v["median_ms"], v.get("over_bound", float("nan")))
                   for k, v in r.items() if isinstance(v, dict) and "median_ms" in v
                   and v["median_ms"]))
PY
brc=$?
tail -5 "$BL"
rm -rf "$W"
[ "$rc" -ne 0 ] && exit $rc
exit $brc
