#!/bin/bash
# tests/gpu/sandbox_gpu.sh - issue 47 on the GPU machine: the carried
# bubblewrap (scripts/gpu-bundle.sh) runs CUDA as uid 65534 with only the
# GPU device nodes bound; doctor's sandbox line; what a sandboxed worker
# sees (uid, capabilities, seccomp, limits, network); the start cost of the
# sandbox; every workload's seed with the sandbox off and on, alternating,
# in one call.
#   OUT=dir WLS="gemm_allgather kv_transfer" bash tests/gpu/sandbox_gpu.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
WLS=${WLS:-"gemm_allgather kv_transfer flash_attn_cp moe_dsv3"}
W=$(mktemp -d /tmp/cuco-sbg.XXXXXX)
T=$OUT/sandbox_gpu.txt
{
  echo "# $(hostname) $(date -u +%FT%TZ) bwrap=$(command -v bwrap) $(bwrap --version 2>&1)"
  ./cuco doctor 2>&1 | grep -iE 'sandbox|judge'
} >"$T" 2>&1
devs=(); for d in /dev/nvidia*; do devs+=(--dev-bind "$d" "$d"); done
probe='import ctypes,os
c=ctypes.CDLL("libcuda.so.1"); r=c.cuInit(0); n=ctypes.c_int(); c.cuDeviceGetCount(ctypes.byref(n))
print("uid", os.getuid(), "euid", os.geteuid(), "cuInit", r, "devices", n.value)'
for who in root nobody; do
  pre=(); [ "$who" = nobody ] && pre=(setpriv --reuid 65534 --regid 65534 --clear-groups --)
  echo "== bwrap as $who (outside), --uid 65534 inside" >>"$T"
  "${pre[@]}" bwrap --unshare-all --die-with-parent --cap-drop ALL --uid 65534 --gid 65534 \
    --ro-bind / / --dev /dev "${devs[@]}" --proc /proc --tmpfs /tmp --tmpfs /root \
    -- python3 -c "$probe" >>"$T" 2>&1
  echo "exit $?" >>"$T"
done
for wl in $WLS; do
  for mode in none bwrap; do
    s=$(date +%s)
    CUCO_SANDBOX=$mode timeout 200 ./cuco eval "workloads/$wl" --json \
      --out "$W/$wl-$mode" >"$OUT/$wl-$mode.json" 2>"$W/$wl-$mode.log"
    echo "== $wl sandbox=$mode: exit $? after $(($(date +%s) - s)) s" >>"$T"
    grep -E "sandbox|judge|bench|verify|error|failed" "$W/$wl-$mode.log" | tail -n 6 | cut -c1-400 >>"$T"
  done
done
# what the worker's sandbox looks like from inside, and its start cost:
# the worker's own command with the candidate replaced by a probe
A=$(find "$W/gemm_allgather-bwrap" -name WORKER.argv | head -1)
if [ -n "$A" ] && [ -f "$A" ]; then
  mapfile -d '' argv <"$A"
  n=${#argv[@]}
  inside='import os,socket,ctypes
print("inside: uid", os.getuid(), "gid", os.getgid())
print("inside:", [l.strip() for l in open("/proc/self/status") if l.startswith(("CapEff","Seccomp","NoNewPrivs"))])
for p in ("/root", "/home", "/var", "/work", os.environ.get("HOME","/"), "/etc/shadow"):
    try: print("inside: list", p, len(os.listdir(p)) if os.path.isdir(p) else len(open(p).read()))
    except Exception as e: print("inside: list", p, type(e).__name__)
for fam in ("AF_INET", "AF_PACKET"):
    try: socket.socket(getattr(socket, fam), socket.SOCK_RAW if fam=="AF_PACKET" else socket.SOCK_STREAM); print("inside: socket", fam, "ok")
    except Exception as e: print("inside: socket", fam, e)
print("inside: interfaces", socket.if_nameindex())
c=ctypes.CDLL("libcuda.so.1"); print("inside: cuInit", c.cuInit(0))
import resource; print("inside: RLIMIT_DATA", resource.getrlimit(resource.RLIMIT_DATA), "FSIZE", resource.getrlimit(resource.RLIMIT_FSIZE))'
  "${argv[@]:0:n-1}" python3 -c "$inside" >>"$T" 2>&1
  echo "inside probe exit $?" >>"$T"
  t0=$(date +%s%N)
  for i in $(seq 20); do "${argv[@]:0:n-1}" /bin/true; done
  echo "sandbox start (bwrap + cuco-confine + /bin/true), mean of 20: $(( ($(date +%s%N) - t0) / 20000000 )) ms" >>"$T"
  t0=$(date +%s%N)
  for i in $(seq 20); do /bin/true; done
  echo "plain /bin/true, mean of 20: $(( ($(date +%s%N) - t0) / 20000000 )) ms" >>"$T"
fi
tar czf "$OUT/logs.tgz" -C "$W" $(cd "$W" && ls *.log) 2>/dev/null
cat "$T"
