#!/bin/bash
# tests/gpu/sandbox.sh - issue 21 on a GPU machine (H200): which isolation
# candidates get there (`cuco doctor`: bubblewrap, or the subreaper alone
# when bwrap is absent, as on the Ubuntu images), and that GPU ranks still
# run through the supervisor: the GEMM+AllGather seed through the whole
# cascade with [sandbox] mode=auto, then mode=none.  One call, ~3 minutes.
#
#   run from the repository root with ./cuco built (carry it and .gpulibs/):
#     RANKS=1 tests/gpu/sandbox.sh     (2/4/8 on bigger hosts)
# Writes to $OUT: sandbox-gpu.txt (log), sandbox-doctor.json, and
# sandbox-eval-{auto,none}.json.  Exit 0 when both evals pass.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_script_dirs
gpu_cuco_env "$ROOT" "$ROOT/build/cuco-cache"
WORK=$(mktemp -d /tmp/cuco-gpu-sandbox.XXXXXX)
log=$OUT/sandbox-gpu.txt
status=0
{
  echo "# issue 21 sandbox on $(hostname), $(date -u +%FT%TZ), ranks=$RANKS"
  echo "# bwrap: $(command -v bwrap || echo absent)"
  ./cuco doctor 2>&1 | grep -E '^(cuco|gpus|sandbox)|sandbox'
} >"$log" 2>&1
./cuco doctor --json -o "$OUT/sandbox-doctor.json" >/dev/null 2>>"$log"
for mode in auto none; do
  t0=$(date +%s)
  CUCO_SANDBOX=$mode ./cuco eval workloads/gemm_allgather --ranks "$RANKS" \
    --out "$WORK/$mode" --json >"$OUT/sandbox-eval-$mode.json" 2>>"$log"
  rc=$?
  [ "$rc" -eq 0 ] || status=1
  echo "mode=$mode: exit $rc in $(( $(date +%s) - t0 )) s" >>"$log"
  # nothing the ranks started may survive the eval
  if pgrep -af "$WORK/$mode" >>"$log"; then
    echo "mode=$mode: processes left running (above)" >>"$log"; status=1
  fi
done
echo "status $status" >>"$log"
rm -rf "$WORK"
exit $status
