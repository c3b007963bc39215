#!/bin/bash
# tests/gpu/evalfast.sh - issue 26: the evaluation after the 2026-12-03
# changes (every size of a stage in one process by default, the fill that
# hashes in the same pass, the keyed input hash taken only for verified
# steps, timed steps verified with odds 1/2, 1/4, 1/8 and no stop before
# 32 steps), through cuco only:
#   1. cuco eval --json of each workload's seed (flash_attn_cp at
#      short,mid): NAME.json, with build/verify/bench seconds, each run's
#      phases_ms and timing;
#   2. cuco evolve workloads/moe_dsv3 --llm none (2 islands, build-ahead
#      default): evolve-moe.txt and evolve-moe.db, and rate.json with the
#      candidates/hour and the median time between finished candidates;
#   3. the cheat suites of the four workloads (cheats-WL.txt).
# Nothing starts after LIMIT s (default 540).  Carry build-gpu.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
gpu_capped_init evalfast
for spec in moe_dsv3 kv_transfer gemm_allgather flash_attn_cp:short,mid; do
  wl=${spec%%:*}
  sz=${spec#*:}
  [ "$sz" = "$spec" ] && sz=
  gpu_capped "$wl" 150 "$OUT/$wl.json" ./cuco eval "workloads/$wl" --json ${sz:+--sizes "$sz"}
done
EV=/tmp/evalfast-moe
rm -rf "$EV"
l=$((LIMIT - ($(date +%s) - T0)))
# the end-of-run confirmation (12 more evaluations) is left out: this
# measures the search's rate, not the confirmation's
printf '[evolve]\nconfirm = 0\n' >/tmp/evalfast.ini
export CUCO_CONFIG=/tmp/evalfast.ini
gpu_capped evolve-moe 200 "$OUT/evolve-moe.txt" ./cuco evolve workloads/moe_dsv3 --llm none \
  --islands 2 --generations 8 --seed 1 --time-limit $((l > 230 ? 150 : l / 2)) --out "$EV"
unset CUCO_CONFIG
cp "$EV/run.db" "$OUT/evolve-moe.db" 2>/dev/null
python3 - "$EV/run.db" >"$OUT/rate.json" <<'PY'
import json, sqlite3, statistics, sys
try:
    db = sqlite3.connect(sys.argv[1])
    rows = db.execute("select id, status, edit_kind, started_at, finished_at from programs "
                      "where edit_kind <> 'migrate' and finished_at is not null "
                      "order by finished_at").fetchall()
except Exception as ex:
    print(json.dumps({"error": str(ex)}))
    sys.exit(0)
fin = [r[4] for r in rows]
gaps = [b - a for a, b in zip(fin, fin[1:])]
own = [r[4] - r[3] for r in rows if r[3] is not None]
span = fin[-1] - min(r[3] for r in rows if r[3] is not None) if rows else 0
print(json.dumps({"candidates": len(rows),
                  "by_status": {s: sum(1 for r in rows if r[1] == s) for s in {r[1] for r in rows}},
                  "span_s": span,
                  "candidates_per_hour": len(rows) / span * 3600 if span > 0 else None,
                  "median_gap_s": statistics.median(gaps) if gaps else None,
                  "median_own_s": statistics.median(own) if own else None,
                  "gaps_s": gaps, "own_s": own}, indent=1))
PY
for wl in moe_dsv3 gemm_allgather flash_attn_cp kv_transfer; do
  nb=--no-bench
  [ "$wl" = flash_attn_cp ] && nb=
  gpu_capped "cheats-$wl" 150 "$OUT/cheats-$wl.txt" ./cuco eval "workloads/$wl" --cheats $nb --timeout 40
done
cat "$T" "$OUT/rate.json"
