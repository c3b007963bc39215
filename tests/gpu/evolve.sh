#!/bin/bash
# tests/gpu/evolve.sh - `cuco evolve` on a GPU machine (H200): the offline
# tuner on workloads/gemm_allgather, at least 20 candidates (4 islands x 5
# generations + the seed) at RANKS ranks (default 1).  Writes 3 files to
# $OUT: evolve-gpu.txt (progress + summary table), evolve-run.db (the run
# database), evolve-best.cu (the best candidate).
#
#   run from the repository root with ./cuco built (carry it, and .gpulibs/
#   holding the .so files `ldd ./cuco` misses there):
#     RANKS=1 tests/gpu/evolve.sh
# Each call stops handing out candidates after TIME_LIMIT seconds (default
# 300, inside run-all.sh's 400 s per script; the candidate in flight then
# finishes) so it fits one device call; calling it again on the same warm
# machine resumes the run in out/gpu-evolve-rN (kept between calls) until
# all 21 candidates are done.  Needs python3 (for the database copy).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_script_dirs
RUN=${RUN_DIR:-$ROOT/out/gpu-evolve-r$RANKS}
gpu_cuco_env "$ROOT" "/tmp/cuco-cache"
log=$OUT/evolve-gpu.txt
RESUME=()
[ -f "$RUN/run.db" ] && RESUME=(--resume)
{
  echo "# cuco evolve on $(hostname), $(date -u +%FT%TZ), ranks=$RANKS ${RESUME[*]}"
  ./cuco evolve workloads/gemm_allgather --llm none --ranks "$RANKS" \
    --generations "${GENERATIONS:-5}" --islands 4 --seed 1 \
    --time-limit "${TIME_LIMIT:-300}" --out "$RUN" "${RESUME[@]}" \
    ${SIZES:+--sizes "$SIZES"}
  echo "# exit $?"
  python3 - "$RUN/run.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select status, count(*) from programs where edit_kind <> 'migrate' group by status").fetchall()
print("# candidate rows by status:", ", ".join("%s %d" % r for r in rows))
PY
} >"$log" 2>&1
status=$(sed -n 's/^# exit //p' "$log")
[ -f "$RUN/run.db" ] && python3 -c 'import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d); d.close()' "$RUN/run.db" "$OUT/evolve-run.db"
[ -f "$RUN/best.cu" ] && cp "$RUN/best.cu" "$OUT/evolve-best.cu"
cat "$log"
exit "${status:-1}"
