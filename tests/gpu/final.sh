#!/bin/bash
# tests/gpu/final.sh - the checks left after a session's earlier GPU calls,
# one cuco eval at a time (never two on one GPU), in priority order, under
# a deadline (DEADLINE s, default 480: nothing starts after it); ONLY="a b"
# runs only the checks named.  Carry
# ./cuco and .gpulibs/.  Writes final.txt (verdict lines) and final.log.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd); cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
CUCO_NCCL_HOME=$(python3 -c 'import nvidia.nccl;print(list(nvidia.nccl.__path__)[0])' 2>/dev/null); export CUCO_NCCL_HOME
[ -d .gpulibs ] && export LD_LIBRARY_PATH="$ROOT/.gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUCO_CACHE_DIR=/tmp/cuco-cache CUCO_SANDBOX=${CUCO_SANDBOX:-auto}
DEADLINE=${DEADLINE:-480}; T0=$(date +%s); W=/tmp/final; mkdir -p $W
: >"$OUT/final.txt"; : >"$OUT/final.log"
ev() { # name timeout args...
  local n=$1 t=$2; shift 2
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $n "* ]]; then return; fi
  if [ $(( $(date +%s) - T0 )) -gt "$DEADLINE" ]; then echo "SKIP $n (deadline)" | tee -a "$OUT/final.txt"; return; fi
  local s=$(date +%s)
  timeout $((t + 60)) ./cuco eval "$@" --timeout "$t" --out "$W/$n" >"$W/$n.txt" 2>&1; local rc=$?
  echo "### $n rc=$rc $(( $(date +%s) - s )) s: cuco eval $*" >>"$OUT/final.log"; cat "$W/$n.txt" >>"$OUT/final.log"
  printf '%-4s %-22s rc=%d %4d s  %s\n' "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$n" $rc $(( $(date +%s) - s )) \
    "$(grep -E 'cheats:|: ok|failed:|FAIL' "$W/$n.txt" | tail -1 | cut -c1-150)" | tee -a "$OUT/final.txt"
}
ev fa_r1      90 workloads/flash_attn_cp --impl all --no-bench
ev fa_v2      90 workloads/flash_attn_cp --vranks 2 --no-bench
ev moe_v4     90 workloads/moe_dsv3 --vranks 4 --no-bench
ev kv_v2      60 workloads/kv_transfer --vranks 2 --no-bench
ev kv_r1      90 workloads/kv_transfer --impl all --no-bench
ev moe_r1     90 workloads/moe_dsv3 --impl all --no-bench
ev kv_v4      60 workloads/kv_transfer --vranks 4 --no-bench
ev gemm_r1    60 workloads/gemm_allgather --impl all --no-bench
ev fa_cheats  120 workloads/flash_attn_cp --cheats --no-bench
ev fa_v4      90 workloads/flash_attn_cp --vranks 4 --no-bench
ev moe_v8     90 workloads/moe_dsv3 --vranks 8 --no-bench
ev gemm_cheats 180 workloads/gemm_allgather --cheats --no-bench
ev kv_cheats  240 workloads/kv_transfer --cheats
ev moe_cheats 240 workloads/moe_dsv3 --cheats
for n in kv_v2 moe_v4; do for f in $(find $W/$n -name 'run.log' | head -2); do
  echo "#### $f" >>"$OUT/final-fail-logs.txt"; tail -c 6000 "$f" >>"$OUT/final-fail-logs.txt"; done; done
echo "total $(( $(date +%s) - T0 )) s" | tee -a "$OUT/final.txt"
