#!/bin/bash
# tests/gpu/sandbox_gpu.sh - issue 47 on the GPU machine: the carried
# bubblewrap (scripts/gpu-bundle.sh) runs CUDA as the unprivileged uid with
# only the GPU device nodes bound; doctor's sandbox line; the GEMM+AllGather
# seed's bench figures with the sandbox off and on, alternating, in one call.
#   OUT=dir bash tests/gpu/sandbox_gpu.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
W=$(mktemp -d /tmp/cuco-sbg.XXXXXX)
T=$OUT/sandbox_gpu.txt
{
  echo "# $(hostname) $(date -u +%FT%TZ) bwrap=$(command -v bwrap) $(bwrap --version 2>&1)"
  echo "# userns: max=$(cat /proc/sys/user/max_user_namespaces)" \
    "unpriv=$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null)" \
    "apparmor_restrict=$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null)"
  ./cuco doctor 2>&1 | grep -iE 'sandbox|judge'
} >"$T" 2>&1
devs=(); for d in /dev/nvidia*; do devs+=(--dev-bind "$d" "$d"); done
probe='import ctypes,os
c=ctypes.CDLL("libcuda.so.1"); r=c.cuInit(0); n=ctypes.c_int(); c.cuDeviceGetCount(ctypes.byref(n))
print("uid", os.getuid(), "euid", os.geteuid(), "cuInit", r, "devices", n.value, "root readable", os.access("/root", os.R_OK))'
for who in root nobody; do
  pre=(); [ "$who" = nobody ] && pre=(setpriv --reuid 65534 --regid 65534 --clear-groups --)
  echo "== bwrap as $who (outside), --uid 65534 inside" >>"$T"
  "${pre[@]}" bwrap --unshare-all --die-with-parent --cap-drop ALL --uid 65534 --gid 65534 \
    --ro-bind / / --dev /dev "${devs[@]}" --proc /proc --tmpfs /tmp --tmpfs /root \
    -- python3 -c "$probe" >>"$T" 2>&1
  echo "exit $?" >>"$T"
done
for round in 1 2; do
  for mode in none bwrap; do
    s=$(date +%s)
    CUCO_SANDBOX=$mode timeout 150 ./cuco eval workloads/gemm_allgather --json \
      --out "$W/$mode-$round" >"$OUT/gemm-$mode-$round.json" 2>"$W/$mode-$round.log"
    echo "== eval sandbox=$mode round $round: exit $? after $(($(date +%s) - s)) s" >>"$T"
    grep -E "sandbox|judge|bench|verify|error" "$W/$mode-$round.log" | tail -n 12 >>"$T"
    [ -f "$W/$mode-$round/WORKER.argv" ] && tr '\0' ' ' <"$W/$mode-$round/WORKER.argv" | cut -c1-600 >>"$T" && echo >>"$T"
  done
done
tar czf "$OUT/logs.tgz" -C "$W" $(cd "$W" && ls *.log) 2>/dev/null
cat "$T"
