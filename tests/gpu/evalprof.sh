#!/bin/bash
# tests/gpu/evalprof.sh - issue 26: where one candidate's evaluation time
# goes, through `cuco eval --json` only.  Each eval's JSON carries the
# stage times (build_s, verify_s, bench_s) and, per size and mode, the
# process's wall time as cuco saw it (wall_ms) and the runtime's phases
# (phases_ms: start, boot, setup, verify, perturb, judge, warmup, timed).
# Each eval runs twice: --process-per-size, then one process per stage
# (every size of a stage in one process, the runtime's --plan: the default
# since 2026-12-03; ONE=0 skips it).
# Then flash_attn_cp's slot_race cheat at --vranks 4
# (its race needs four ranks), and flash_attn_cp --impl all at short,mid
# with whatever time is left (the bar table of issues 23 and 25).
#   OUT=dir bash tests/gpu/run-all.sh tests/gpu/evalprof.sh:560
#   LIMIT (s, default 540): nothing starts that could end past it.
#   EVALS: "WL[:SIZES] ..." (default: moe_dsv3 kv_transfer flash_attn_cp:short,mid)
# $OUT: evalprof.txt (a line per eval), NAME.json (the eval's JSON),
#   NAME.log (its progress), profile.json (the wall and phase table).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
gpu_capped_init evalprof
# ev NAME CAP ARGS...: one cuco eval, capped at CAP s and the time left
ev() {
  local name=$1 cap=$2
  shift 2
  gpu_capped "$name" "$cap" "$OUT/$name.json" ./cuco eval "$@"
}
for spec in ${EVALS:-moe_dsv3 kv_transfer flash_attn_cp:short,mid}; do
  wl=${spec%%:*}
  sz=${spec#*:}
  if [ "$sz" = "$spec" ]; then
    ev "$wl" 200 "workloads/$wl" --json --process-per-size --out "/tmp/ep/$wl"
    [ "${ONE:-1}" = 1 ] && ev "${wl}_one" 200 "workloads/$wl" --json
  else
    ev "$wl" 200 "workloads/$wl" --json --sizes "$sz" --process-per-size --out "/tmp/ep/$wl"
    [ "${ONE:-1}" = 1 ] && ev "${wl}_one" 200 "workloads/$wl" --json --sizes "$sz"
  fi
done
# slot_race: rejected at 4 virtual ranks (perturbed steps), or not
W=$(mktemp -d)
./cuco eval workloads/flash_attn_cp --write-cheats "$W" >/dev/null 2>&1
# a written cheat starts with its header comment, which is not frozen text
f=$W/slot_race.cu
h=$(grep -n '^// workloads/flash_attn_cp/seed.cu' "$f" 2>/dev/null | head -1 | cut -d: -f1)
[ -n "$h" ] && sed -i "1,$((h - 1))d" "$f" &&
  ev slot_race_v4 120 workloads/flash_attn_cp --candidate "$W/slot_race.cu" --vranks 4 \
    --no-bench --json
ev flash_all 400 workloads/flash_attn_cp --impl all --json --sizes short,mid
python3 - "$OUT" >"$OUT/profile.json" <<'EOF'
import json, os, sys
out = sys.argv[1]
rows = []
for f in sorted(os.listdir(out)):
    if not f.endswith(".json") or f == "profile.json":
        continue
    try:
        d = json.load(open(os.path.join(out, f)))
    except Exception as ex:
        rows.append({"eval": f, "error": str(ex)})
        continue
    for r in d if isinstance(d, list) else [d]:
        row = {"eval": f[:-5], "impl": r.get("impl"), "status": r.get("status"),
               "build_s": r.get("build_s"), "verify_s": r.get("verify_s"),
               "bench_s": r.get("bench_s"), "runs": []}
        for mode, sizes in (r.get("metrics") or {}).items():
            if not isinstance(sizes, dict):
                continue
            for size, m in sizes.items():
                if isinstance(m, dict):
                    t = m.get("timing") or {}
                    row["runs"].append({"mode": mode, "size": size,
                                        "wall_ms": m.get("wall_ms"),
                                        "phases_ms": m.get("phases_ms"),
                                        "steps": t.get("steps"),
                                        "stop": t.get("stop"),
                                        "median_ms": t.get("median_ms")})
        rows.append(row)
json.dump(rows, sys.stdout, indent=1)
EOF
cat "$T"
