#!/bin/bash
# tests/gpu/seedwin.sh - issue 24: the seeds against their bars at R = 1,
# and the designs that might beat them, all through cuco eval in one call:
#   1. cuco eval --json --impl all of moe_dsv3 and kv_transfer (the seed and
#      the baselines: the bar of this run): WL.json;
#   2. variants of the seed (CUCO-PARAM and directive lines rewritten),
#      through --candidate: WL-VARIANT.json (WLS: the workloads, in order).  VARIANTS (default below)
#      lists them as WL:NAME:LINE|LINE...; a LINE replaces the seed's line
#      that starts with the same "// CUCO-PARAM KEY=" or "// CUCO-DIRECTIVES".
#   3. the outside anchors: torch's GEMM + RoPE on kv_transfer's shapes
#      (torch-kv_transfer.anchor.json), torch._grouped_mm on moe_dsv3's
#      expert GEMMs (torch-moe_dsv3.anchor.json);
#      gemm_allgather's: torch.matmul (tests/gpu/gemm_torch.py) when it is
#      in WLS;
#   4. CHEATS: the cheat suites of these workloads (verify only);
#   5. VRANKS: these workloads' seeds at --vranks 2 (verify only; a
#      protocol test, never a performance number).
# Nothing starts after LIMIT s (default 540).  Carry build-gpu.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
gpu_capped_init seedwin
SPLIT256='// CUCO-DIRECTIVES backend=lsa placement=split sync=per_peer issuer=warp chunk=256KiB'
# the default: what the 2026-12-03 calls left to measure around the seeds
# they settled on (kv: copy=bulk on 132 one-warp CTAs, chunk=16KiB; moe:
# expert_grid=tiles, expert_raster=2; bench/seedwin5-2026-12-03-h200.json).
# A variant names its params in full: it replaces the seed's lines only.
B='// CUCO-PARAM copy=bulk'
DS='// CUCO-DIRECTIVES backend=lsa placement=split sync=per_peer issuer=warp'
VARIANTS=${VARIANTS:-"kv_transfer:bulk132x64k32c16:$B|// CUCO-PARAM comm_ctas=132|// CUCO-PARAM push_threads=64|// CUCO-PARAM bulk_kib=32|$DS chunk=16KiB
kv_transfer:bulk132x32k16c8:$B|// CUCO-PARAM comm_ctas=132|// CUCO-PARAM push_threads=32|// CUCO-PARAM bulk_kib=16|$DS chunk=8KiB
moe_dsv3:raster1:// CUCO-PARAM expert_raster=1
moe_dsv3:c8:// CUCO-PARAM comm_ctas=8"}
for wl in ${WLS:-kv_transfer moe_dsv3}; do
  gpu_capped "$wl" 150 "$OUT/$wl.json" ./cuco eval "workloads/$wl" --json --impl all
  while IFS=: read -r vwl vname vlines; do
    [ "$vwl" = "$wl" ] && gpu_seed_variant "$vwl" "$vname" "$vlines"
  done <<<"$VARIANTS"
done
# the outside anchor of the same shapes, same call (issue 24): torch's
# GEMM + RoPE for kv_transfer (tests/gpu/kv_transfer_torch.py)
case " ${WLS:-kv_transfer moe_dsv3} " in
*" kv_transfer "*)
  gpu_capped torch-kv_transfer 120 "$OUT/torch-kv_transfer.anchor.json" \
    python3 "$ROOT/tests/gpu/kv_transfer_torch.py" ;;
esac
# moe_dsv3's: torch._grouped_mm for the routed experts' two GEMMs at prefill's
# (256 experts x 128 rows) and decode's (x 4) average shapes
case " ${WLS:-kv_transfer moe_dsv3} " in
*" moe_dsv3 "*)
  gpu_capped torch-moe_dsv3 120 "$OUT/torch-moe_dsv3.anchor.json" \
    python3 "$ROOT/tests/gpu/moe_torch.py" 256:128 256:4 ;;
esac
# gemm_allgather's: torch.matmul at its bench shapes
case " ${WLS:-kv_transfer moe_dsv3} " in
*" gemm_allgather "*)
  gpu_capped torch-gemm_allgather 120 "$OUT/torch-gemm_allgather.anchor.json" \
    python3 "$ROOT/tests/gpu/gemm_torch.py" ;;
esac
# CHEATS: workloads whose cheat suite runs after (verify only; the seed
# changed under them)
for wl in ${CHEATS:-}; do
  gpu_capped "cheats-$wl" 150 "$OUT/cheats-$wl.txt" ./cuco eval "workloads/$wl" --cheats --no-bench --timeout 40
done
for wl in ${VRANKS:-}; do
  gpu_capped "vranks2-$wl" 120 "$OUT/vranks2-$wl.txt" ./cuco eval "workloads/$wl" --vranks 2 --no-bench --timeout 60
done
# one line per implementation and bench size: median ms
python3 - "$OUT" >"$OUT/table.txt" <<'PY'
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    try:
        d = json.load(open(f))
    except Exception as ex:
        print(os.path.basename(f), "unreadable:", ex)
        continue
    for r in d.get("results", [d]) if isinstance(d, dict) else d:
        b = (r.get("metrics") or {}).get("bench") or {}
        name = r.get("impl") or r.get("file") or os.path.basename(f)
        print(os.path.basename(f), name, r.get("status"),
              " ".join("%s=%.4f" % (k, (v.get("timing") or {}).get("median_ms") or -1)
                       for k, v in b.items() if isinstance(v, dict)))
PY
cat "$T" "$OUT/table.txt" "$OUT"/*.anchor.json 2>/dev/null
