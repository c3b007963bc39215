#!/bin/bash
# tests/gpu/kv_tile.sh - issue 24, kv_transfer at 1 rank through `cuco eval`
# only: placement=per_tile on the GEMM tile v2 (wgmma + TMA; the epilogue
# applies RoPE and stores into the pages) against the bar, in one run:
#   1. the per_tile variant verified on every verify size (with --perturb)
#   2. cuco eval --impl all --json --sizes SIZES (baselines, the seed, vs_bar)
#   3. the per_tile variant benched at SIZES (--json)
#   4. HGMMA count in the variant's object (the tensor-core path is there)
# Carry ./cuco and .gpulibs/.  $OUT: kv_tile.txt (table + verdicts),
# impl_all.json, tile.json, kv_tile.log.   SIZES=short,mid (default)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_script_dirs
gpu_cuco_env "$ROOT" "/tmp/cuco-cache"
export CUDA_DEVICE_MAX_CONNECTIONS=32
SIZES=${SIZES:-short,mid}
W=$(mktemp -d /tmp/cuco-kvt.XXXXXX)
T=$OUT/kv_tile.txt LOG=$OUT/kv_tile.log
: >"$T"
: >"$LOG"
T0=$(date +%s)
sed -E -e '/^\/\/ CUCO-DIRECTIVES /s/ placement=[^ ]*/ placement=per_tile/' \
  workloads/kv_transfer/seed.cu >"$W/tile.cu"
step() {  # NAME TIMEOUT JSONOUT ARGS...
  local name=$1 to=$2 js=$3 s rc
  shift 3
  s=$(date +%s)
  timeout "$to" ./cuco eval workloads/kv_transfer "$@" >"$W/$name.out" 2>"$W/$name.err"
  rc=$?
  [ -n "$js" ] && cp "$W/$name.out" "$OUT/$js"
  { echo "### $name (exit $rc, $(($(date +%s) - s)) s): cuco eval $*"; cat "$W/$name.err" "$W/$name.out"; } >>"$LOG"
  printf '%-10s exit %d %4d s  %s\n' "$name" $rc $(($(date +%s) - s)) \
    "$(grep -E 'FAIL|rejected|: ok|vs bar|speedup' "$W/$name.err" "$W/$name.out" | tail -3 | tr '\n' ' ' | cut -c1-300)" >>"$T"
}
step tile_verify 200 "" --candidate "$W/tile.cu" --no-bench --out "$W/tv"
step impl_all 300 impl_all.json --impl all --json --sizes "$SIZES"
step tile_bench 200 tile.json --candidate "$W/tile.cu" --json --sizes "$SIZES" --out "$W/tb"
o=$(find "$W/tv" -name 'kv_transfer_impl.o' | head -1)
[ -n "$o" ] && echo "HGMMA in the per_tile object: $(cuobjdump --dump-sass "$o" 2>/dev/null | grep -c HGMMA)" >>"$T"
python3 - "$OUT/impl_all.json" "$OUT/tile.json" >>"$T" 2>&1 <<'PY'
import json, sys
def load(p):
    try: j = json.load(open(p))
    except Exception as e: return []
    return j if isinstance(j, list) else [j]
def med(e):
    out = {}
    for k, v in ((e.get("metrics") or {}).get("bench") or {}).items():
        t = (v.get("timing") or v) if isinstance(v, dict) else {}
        if isinstance(t, dict) and isinstance(t.get("median_ms"), (int, float)): out[k] = t["median_ms"]
    return out
rows = load(sys.argv[1]); tile = load(sys.argv[2])
bar = {}
for e in rows:
    for size, v in (e.get("vs_bar") or {}).items(): bar[size] = (v.get("bar"), v.get("bar_ms"))
    print("%-22s %-8s %s" % (e.get("impl"), e.get("status"), med(e)))
for e in tile:
    m = med(e)
    print("%-22s %-8s %s" % ("per_tile (v2)", e.get("status"), m))
    for size, ms in m.items():
        if size in bar and bar[size][1]:
            print("per_tile vs bar %s at %s: %.4g / %.4g ms = %.3fx" % (bar[size][0], size, bar[size][1], ms, bar[size][1] / ms))
PY
echo "total $(($(date +%s) - T0)) s" >>"$T"
cat "$T"
rm -rf "$W"
