#!/bin/bash
# tests/gpu/coll_sweep.sh - the collectives sweep of issue 8
# (bench/coll_sweep.cu): ncclAllGather, ncclAlltoAll, the LSA store-copy
# ceiling and the local cudaMemcpy D2D ceiling, 1 MiB .. 1 GiB, at RANKS
# ranks (default: every GPU nvidia-smi lists; 1 works too).  Builds with
# nvcc here against NCCL 2.28.9 from the python package nvidia-nccl-cu13.
# Writes under $OUT (3 files): coll_sweep-<R>rank.json (the JSON document),
# topo.txt (nvidia-smi topo -m), coll_sweep.log (build + run output).
#   OUT=/tmp/out bash tests/gpu/coll_sweep.sh          (from the repo root)
#   RANKS=2 ITERS=50 MAX=256MiB ...                     (optional)
# Exit status: the program's (0 ok, 3 an output did not verify, 4 a rank
# failed), 2 when it cannot be built.
set -u
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=lib.sh
. tests/gpu/lib.sh
OUT=${OUT:-/tmp/cuco-coll-sweep}
mkdir -p "$OUT"
gpu_nvls_off
LOG=$OUT/coll_sweep.log
: >"$LOG"
gpu_nccl_home "$LOG"
W=$(mktemp -d /tmp/cuco-coll-sweep.XXXXXX)
gpu_libnccl_link "$NCCL_HOME" "$W/lib"
nvidia-smi topo -m >"$OUT/topo.txt" 2>&1
RANKS=${RANKS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
[ "$RANKS" -ge 1 ] 2>/dev/null || { echo "no GPU listed by nvidia-smi" | tee -a "$LOG"; exit 2; }
[ "$RANKS" -gt 8 ] && RANKS=8
echo "== build $(date -u +%T)" >>"$LOG"
if ! nvcc -arch=sm_90 -std=c++17 -O3 -I"$NCCL_HOME/include" -o "$W/coll_sweep" \
    bench/coll_sweep.cu -L"$W/lib" -L"$NCCL_HOME/lib" -Xlinker -rpath -Xlinker "$NCCL_HOME/lib" \
    -lnccl >>"$LOG" 2>&1; then
  echo "build failed (see $LOG)"; tail -20 "$LOG"; exit 2
fi
J=$OUT/coll_sweep-${RANKS}rank.json
echo "== run $(date -u +%T): RANKS=$RANKS" >>"$LOG"
"$W/coll_sweep" --ranks "$RANKS" --min "${MIN:-1MiB}" --max "${MAX:-1GiB}" \
  --iters "${ITERS:-20}" --warmup "${WARMUP:-5}" --out "$J" 2>>"$LOG"
rc=$?
echo "coll_sweep exit $rc" | tee -a "$LOG"
# A short table on stdout (the JSON is the record).
python3 - "$J" <<'PY' || true
import json, sys
d = json.load(open(sys.argv[1]))
if "results" not in d:
    print("no results:", d.get("error")); sys.exit(0)
ops = d["ops"]
print("ranks", d["ranks"], d.get("machine", {}).get("gpu"), "busbw GB/s (memcpy: copy GB/s)")
print("%10s " % "MiB" + " ".join("%12s" % o for o in ops))
for r in d["results"]:
    cells = []
    for o in ops:
        x = r.get(o)
        v = None if x is None else (x.get("busbw_GBps") if x.get("busbw_GBps") is not None
                                    else x.get("algbw_GBps"))
        cells.append("%12s" % ("-" if v is None else "%.1f%s" % (v, "" if x["verified"] else "!")))
    print("%10.0f " % r["MiB"] + " ".join(cells))
PY
rm -rf "$W"
exit $rc
