#!/bin/bash
# tests/gpu/moeprof.sh - issue 24: where moe_dsv3's seed spends a prefill
# step beside baseline_overlap's, kernel by kernel (Nsight Compute's
# gpu__time_duration, clocks left alone).  ncu serialises kernels, so the
# sum is not the step time: it says which kernels differ.
#   1. cuco eval --compile-only --out DIR for the seed and baseline_overlap
#      (IMPLS), the binary kept;
#   2. ncu over the first LAUNCHES launches of a bench run at prefill
#      (--iters 2): ncu-IMPL.csv, and kernels-IMPL.txt (time per kernel
#      name, the fill and reference kernels included, by launch order).
# METRICS (default gpu__time_duration.sum) and KERNELS (an ncu -k filter,
# e.g. regex:gemm_tile_v2) narrow or widen what ncu collects; with several
# metrics, kernels-IMPL.txt has a line per kernel and metric.
# Carry build-gpu.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "no ncu"; exit 2; }
for impl in ${IMPLS:-seed.cu baseline_overlap.cu}; do
  d=/tmp/moeprof-${impl%.cu}
  rm -rf "$d"
  ./cuco eval workloads/moe_dsv3 --impl "$impl" --compile-only --out "$d" >"$OUT/build-${impl%.cu}.txt" 2>&1
  bin=$(find "$d" -type f -perm -u+x -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print | head -1)
  [ -n "$bin" ] || { echo "$impl: no binary in $d" | tee -a "$OUT/moeprof.txt"; continue; }
  timeout 240 "$NCU" --clock-control none --metrics "${METRICS:-gpu__time_duration.sum}" \
    ${KERNELS:+-k "$KERNELS"} --csv \
    --launch-count "${LAUNCHES:-700}" "$bin" --mode bench --params T=4096 --size-name prefill \
    --warmup 1 --iters 2 --out "/tmp/moeprof-${impl%.cu}.json" \
    >"$OUT/ncu-${impl%.cu}.csv" 2>"$OUT/ncu-${impl%.cu}.err"
  echo "$impl: ncu exit $?" >>"$OUT/moeprof.txt"
  python3 - "$OUT/ncu-${impl%.cu}.csv" >"$OUT/kernels-${impl%.cu}.txt" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1], errors="replace")) if len(r) > 10]
if not rows:
    sys.exit("no rows")
h = rows[0]
ki, ni, vi, ui, mi = (h.index("ID"), h.index("Kernel Name"), h.index("Metric Value"),
                      h.index("Metric Unit"), h.index("Metric Name"))
to_us = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
         "s": 1e6, "second": 1e6}
for r in rows[1:]:
    try:
        v = float(r[vi].replace(",", ""))
    except ValueError:
        continue
    if r[mi] == "gpu__time_duration.sum":
        print(r[ki], "%.1f" % (v * to_us.get(r[ui], float("nan"))), "us", r[ni][:110])
    else:
        print(r[ki], r[mi], "%.4g" % v, r[ui], r[ni][:80])
PY
done
cat "$OUT/moeprof.txt"
