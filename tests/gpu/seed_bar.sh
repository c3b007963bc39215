#!/bin/bash
# tests/gpu/seed_bar.sh - issue 24: a workload's seed and one directive
# variant of it against the bar at 1 rank, through `cuco eval` only:
#   1. the variant verified on every verify size (with --perturb)
#   2. cuco eval --impl all --json --sizes SIZES (baselines, the seed, vs_bar)
#   3. the variant benched at SIZES (--json)
#   4. HGMMA count in the variant's object (tensor cores)
#   WL=kv_transfer VARIANT="placement=deferred" SIZES=short,mid (defaults)
#   WL=moe_dsv3 VARIANT="experts=cublas" SIZES=decode,prefill
# Carry ./cuco and .gpulibs/.  $OUT: TAG.txt (table + verdicts),
# TAG-impl_all.json, TAG-variant.json, TAG.log (TAG defaults to WL).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
WL=${WL:-kv_transfer}
VARIANT=${VARIANT:-placement=deferred}
SIZES=${SIZES:-short,mid}
TAG=${TAG:-$WL}
W=$(mktemp -d /tmp/cuco-seedbar.XXXXXX)
T=$OUT/$TAG.txt LOG=$OUT/$TAG.log
: >"$T"
: >"$LOG"
T0=$(date +%s)
gpu_variant "workloads/$WL/seed.cu" "$W/tile.cu" "$VARIANT"
echo "variant: $VARIANT ($(grep -E '^// CUCO-(DIRECTIVES|PARAM)' "$W/tile.cu" | tr '\n' ' '))" >>"$T"
step() {  # NAME TIMEOUT JSONOUT ARGS...
  local name=$1 to=$2 js=$3 s rc
  shift 3
  s=$(date +%s)
  timeout "$to" ./cuco eval "workloads/$WL" "$@" >"$W/$name.out" 2>"$W/$name.err"
  rc=$?
  [ -n "$js" ] && cp "$W/$name.out" "$OUT/$js"
  { echo "### $name (exit $rc, $(($(date +%s) - s)) s): cuco eval $*"; cat "$W/$name.err" "$W/$name.out"; } >>"$LOG"
  printf '%-10s exit %d %4d s  %s\n' "$name" $rc $(($(date +%s) - s)) \
    "$(grep -E 'FAIL|rejected|: ok|vs bar|speedup' "$W/$name.err" "$W/$name.out" | tail -3 | tr '\n' ' ' | cut -c1-300)" >>"$T"
}
step variant_verify 200 "" --candidate "$W/tile.cu" --no-bench --out "$W/tv"
step impl_all 300 "$TAG-impl_all.json" --impl all --json --sizes "$SIZES" --out "$W/ia"
step variant 200 "$TAG-variant.json" --candidate "$W/tile.cu" --json --sizes "$SIZES" --out "$W/tb"
for o in $(find "$W/tv" -name "${WL}_impl.o" | head -1); do
  echo "HGMMA in the variant's object: $(cuobjdump --dump-sass "$o" 2>/dev/null | grep -c HGMMA)" >>"$T"
done
python3 - "$OUT/$TAG-impl_all.json" "$OUT/$TAG-variant.json" >>"$T" 2>&1 <<'PY'
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
    print("%-22s %-8s %s" % ("variant", e.get("status"), m))
    for size, ms in m.items():
        if size in bar and bar[size][1]:
            print("variant vs bar %s at %s: %.4g / %.4g ms = %.3fx" % (bar[size][0], size, bar[size][1], ms, bar[size][1] / ms))
PY
echo "total $(($(date +%s) - T0)) s" >>"$T"
cat "$T"
rm -rf "$W"
