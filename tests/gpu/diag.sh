#!/bin/bash
# tests/gpu/diag.sh - two short diagnostics for issue 23 on one H200, in
# under ~100 s: (1) moe_dsv3 --vranks 4: which barrier, peer and epoch the
# emulation's timeout names (the vnccl_fail lines, counted); (2) kv_transfer
# --vranks 2: where the host threads of the hung rank binary wait (gdb
# backtraces when gdb is there, else each thread's wchan and syscall).
# Carry ./cuco and .gpulibs/.  Writes diag.txt under $OUT as it goes.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd); cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/out}; mkdir -p "$OUT"; D=$OUT/diag.txt; : >"$D"
export NCCL_NVLS_ENABLE=0
CUCO_NCCL_HOME=$(python3 -c 'import nvidia.nccl;print(list(nvidia.nccl.__path__)[0])' 2>/dev/null); export CUCO_NCCL_HOME
[ -d .gpulibs ] && export LD_LIBRARY_PATH="$ROOT/.gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUCO_SANDBOX=none
W=/tmp/diag; mkdir -p $W
T0=$(date +%s)
sample() { # dir: after $2 s, dump the threads of the rank binary under it
  sleep "$2"
  for p in $(pgrep -f "$1/.*\.bin" | head -2); do
    echo "## pid $p $(tr '\0' ' ' </proc/$p/cmdline | cut -c1-200)"
    if command -v gdb >/dev/null; then
      timeout 20 gdb -batch -p "$p" -ex 'thread apply all bt 12' 2>&1 | grep -E '^#|^Thread' | cut -c1-220 | head -150
    else
      for t in /proc/$p/task/*; do echo "$t $(cat $t/wchan 2>/dev/null) $(cut -d' ' -f1-3 $t/syscall 2>/dev/null) $(cat $t/comm)"; done
    fi
  done >>"$D" 2>&1
}
echo "== moe_dsv3 --vranks 4 (start $(( $(date +%s) - T0 )) s)" >>"$D"
timeout 80 ./cuco eval workloads/moe_dsv3 --vranks 4 --no-bench --sizes v_t1,v_t7 --timeout 45 --out $W/moe >$W/moe.txt 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s" >>"$D"; tail -4 $W/moe.txt | cut -c1-400 >>"$D"
for f in $(find $W/moe -name run.log); do
  grep -h 'cuco vranks:' "$f" | grep -v Assertion | sed 's/ \[block.*//' | sort | uniq -c | sort -rn | head -20
  grep -vh 'cuco vranks\|Assertion' "$f" | tail -15 | cut -c1-300
done >>"$D" 2>&1
echo "== kv_transfer --vranks 2 (start $(( $(date +%s) - T0 )) s)" >>"$D"
sample $W/kv 20 &
timeout 60 ./cuco eval workloads/kv_transfer --vranks 2 --no-bench --sizes v_tiny --timeout 30 --out $W/kv >$W/kv.txt 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s" >>"$D"; wait
tail -4 $W/kv.txt | cut -c1-400 >>"$D"
for f in $(find $W/kv -name run.log); do tail -c 3000 "$f"; done >>"$D" 2>&1
echo "total $(( $(date +%s) - T0 )) s" >>"$D"
