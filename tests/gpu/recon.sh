#!/bin/bash
# tests/gpu/recon.sh - a quick look at a fresh GPU machine and the known
# protocol failures (issue 23), all through `cuco eval`.  Carry ./cuco and
# .gpulibs/.  Writes a log and the failing runs' logs to $OUT.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd); cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
CUCO_NCCL_HOME=$(python3 -c 'import nvidia.nccl;print(list(nvidia.nccl.__path__)[0])' 2>/dev/null); export CUCO_NCCL_HOME
[ -d "$ROOT/.gpulibs" ] && export LD_LIBRARY_PATH="$ROOT/.gpulibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUCO_CACHE_DIR=/tmp/cuco-cache
W=/tmp/recon; mkdir -p $W
log=$OUT/recon.txt
{
echo "## machine"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
uname -a; cat /etc/os-release | head -2; nproc
echo "bwrap: $(command -v bwrap || echo none)  unshare: $(command -v unshare || echo none) nm: $(command -v nm) objdump: $(command -v objdump)"
echo "userns: $(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null) max_user_ns: $(cat /proc/sys/user/max_user_namespaces 2>/dev/null)"
unshare -Urp --fork true && echo "unshare -Urp works" || echo "unshare -Urp fails"
unshare -p --fork --mount-proc true && echo "unshare -p (root) works" || echo "unshare -p fails"
echo "cgroup: $(stat -fc %T /sys/fs/cgroup) $(cat /proc/self/cgroup)"
ldd ./cuco | grep "not found"
./cuco doctor
} >"$log" 2>&1
ev() { # name timeout args...
  local n=$1 t=$2; shift 2; local s=$(date +%s.%N)
  timeout $((t+30)) ./cuco eval "$@" --timeout $t --out $W/$n >$W/$n.txt 2>&1; local rc=$?
  echo "## $n rc=$rc $(echo "$(date +%s.%N) - $s" | bc) s: $*" >>"$log"; tail -25 $W/$n.txt >>"$log"
}
sed -e 's/^\/\/ CUCO-DIRECTIVES .*/\/\/ CUCO-DIRECTIVES backend=lsa placement=split sync=per_peer issuer=warp chunk=256KiB/' \
    -e 's/^\/\/ CUCO-PARAM direction=push/\/\/ CUCO-PARAM direction=pull/' -e 's/^\/\/ CUCO-PARAM comm_ctas=8/\/\/ CUCO-PARAM comm_ctas=16/' \
    workloads/kv_transfer/seed.cu >$W/kv_pull_split.cu
ev kv_pull_split 60 workloads/kv_transfer --candidate $W/kv_pull_split.cu --sizes v_tiny --no-bench
ev moe_v2 90 workloads/moe_dsv3 --candidate workloads/moe_dsv3/seed.cu --vranks 2 --sizes v_t7 --no-bench
ev moe_v1 90 workloads/moe_dsv3 --candidate workloads/moe_dsv3/seed.cu --sizes v_t7 --no-bench
for n in kv_pull_split moe_v2; do for f in $(find $W/$n -name '*.log' -o -name 'RESULT.json*' | head -6); do
  echo "#### $f" >>$OUT/fail-logs.txt; tail -c 20000 $f >>$OUT/fail-logs.txt; done; done
cp $W/gemm_all.txt $OUT/ 2>/dev/null
cat "$log"
