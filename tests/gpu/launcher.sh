#!/bin/bash
# tests/gpu/launcher.sh - the runtime's path through a launcher (issue 28)
# on ONE GPU, through `cuco eval`: no --rank flags, rank/size/local rank
# from Open MPI's variables, RESULT.json and the per-rank progress file
# through launch_ext.c.  Needs ./cuco (tests/gpu/run-all.sh provides it).
#   1. a stand-in launcher ([launch] mpirun = env OMPI_COMM_WORLD_*=... {bin}
#      {args}): works without Open MPI on the GPU machine
#   2. the real mpirun (1 rank) when it is installed, else said and skipped
#   3. a deadline through the launcher: --timeout 1 on a full size names
#      rank 0 as the hang
# Writes to $OUT: launcher-*.json/.log, summary.txt.  Exit 0 when all held.
# Under 3 minutes.
set -u
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-/tmp/cuco-launcher}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 CUCO_CACHE_DIR=${CUCO_CACHE_DIR:-/tmp/cuco-cache}
SUM=$OUT/summary.txt
: >"$SUM"
status=0
W=$(mktemp -d /tmp/cuco-launcher.XXXXXX)
trap 'rm -rf "$W"' EXIT
cat >"$W/stand-in.ini" <<'INI'
[launch]
mpirun = env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 OMPI_COMM_WORLD_LOCAL_RANK=0 {bin} {args}
INI
check() { # name file pattern
  if grep -qE -- "$3" "$2"; then echo "PASS $1" | tee -a "$SUM"
  else echo "FAIL $1 ('$3' not in $2)" | tee -a "$SUM"; status=1; fi
}
./cuco --config "$W/stand-in.ini" eval workloads/gemm_allgather --ranks 1 \
  --sizes small_b --launcher mpirun --out "$W/a" --json \
  >"$OUT/launcher-standin.json" 2>"$OUT/launcher-standin.log"
echo "stand-in: exit $?" | tee -a "$SUM"
cat "$W"/a/*/run.log >>"$OUT/launcher-standin.log" 2>/dev/null
check "stand-in launcher: seed passes" "$OUT/launcher-standin.json" '"status": "ok"'
check "stand-in launcher: ranks came from launch_ext" "$OUT/launcher-standin.log" "--- mpirun, 1 ranks ---"
if command -v mpirun >/dev/null 2>&1; then
  printf '[launch]\nmpirun = mpirun -np {nranks} {asroot} --bind-to none {env} {bin} {args}\n' >"$W/mpi.ini"
  ./cuco --config "$W/mpi.ini" eval workloads/gemm_allgather --ranks 1 \
    --sizes small_b --launcher mpirun --out "$W/b" --json \
    >"$OUT/launcher-mpirun.json" 2>"$OUT/launcher-mpirun.log"
  echo "mpirun: exit $?" | tee -a "$SUM"
  check "mpirun: seed passes" "$OUT/launcher-mpirun.json" '"status": "ok"'
else
  echo "SKIP mpirun: not installed on this machine" | tee -a "$SUM"
fi
./cuco --config "$W/stand-in.ini" eval workloads/gemm_allgather --ranks 1 \
  --sizes full_8k --launcher mpirun --timeout 1 --no-bench --out "$W/c" --json \
  >"$OUT/launcher-hang.json" 2>"$OUT/launcher-hang.log"
echo "deadline: exit $?" | tee -a "$SUM"
check "deadline through the launcher names rank 0" "$OUT/launcher-hang.json" 'hang: timed out after 1 s; rank 0 did not finish'
exit $status
