#!/bin/bash
# tests/gpu/diag4.sh - issue 23's last hang, kv_transfer --vranks 2 (v_tiny).
# diag3 (cuda-gdb, device side) found one kernel on the whole GPU: the
# decode rank's sd_wait, spinning; the prefill rank's work was not running.
# This probe is the seed with printf: sd_push's last CTA per layer prints
# its counter, epoch and destination mask; sd_wait prints what it waits
# for and, after 2 s, the flag values it sees, then gives up (so the step
# ends and the device printf buffer is flushed).  Then: cuco doctor
# --json (the machine, for bench/), and gemm_allgather's cheat suite.
# Carry ./cuco and .gpulibs/.  Writes diag4.txt.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_diag_env "$ROOT" diag4
python3 - workloads/kv_transfer/seed.cu $W/probe.cu <<'PY'
import sys
s = open(sys.argv[1]).read()
a = "      unsigned long long old = atomicAdd(&done[l], 1ull);\n"
assert a in s
s = s.replace(a, a + '      printf("PROBE push me=%d l=%lld old=%llu ep=%llu grid=%d dmask=%llx\\n", me, l, old, epoch, (int)gridDim.x, dmask);\n', 1)
w = "      while (f.load(cuda::memory_order_acquire) < epoch) __nanosleep(64);\n"
assert w in s
s = s.replace(w, """      unsigned long long t0, t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
      do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); }
      while (f.load(cuda::memory_order_acquire) < epoch && t - t0 < 2000000000ull);
      if (f.load(cuda::memory_order_acquire) < epoch)
        printf("PROBE wait gave up p=%d k=%lld flag=%llu ep=%llu at %p\\n", p, k, f.load(cuda::memory_order_acquire), epoch, (const void *)&flags[((size_t)p * L + k / nf) * SD_FLAG_SLOTS + k % nf]);
""", 1)
e = "  for (int p = 0; p < 64; p++) {\n    if (!(pmask >> p & 1)) continue;\n    for (long long k = threadIdx.x; k < L * nf; k += blockDim.x) {\n"
assert e in s
s = s.replace(e, '  if (threadIdx.x == 0) printf("PROBE wait pmask=%llx L=%lld nf=%d ep=%llu flags=%p\\n", pmask, L, nf, epoch, (const void *)flags);\n' + e, 1)
open(sys.argv[2], "w").write(s)
PY
echo "== kv probe --vranks 2 v_tiny" >>"$D"
timeout 120 ./cuco eval workloads/kv_transfer --candidate $W/probe.cu --vranks 2 --no-bench --sizes v_tiny \
  --timeout 60 --out $W/kv >$W/kv.txt 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s" >>"$D"
grep -E 'verify|failed|ok' $W/kv.txt | head -5 | cut -c1-300 >>"$D"
grep -rh "PROBE" $W/kv 2>/dev/null | sort | uniq -c | head -60 >>"$D"
./cuco doctor --json -o "$OUT/doctor.json" >/dev/null 2>&1; echo "doctor rc=$?" >>"$D"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >>"$D" 2>&1
echo "== gemm_allgather --cheats (start $(( $(date +%s) - T0 )) s)" >>"$D"
timeout 300 ./cuco eval workloads/gemm_allgather --cheats --no-bench --timeout 60 --out $W/ch >$W/ch.txt 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s" >>"$D"
grep -E '^[a-z_]+\.cu: |cheats:' $W/ch.txt | cut -c1-200 >>"$D"
cp $W/ch.txt "$OUT/gemm-cheats.txt"
echo "total $(( $(date +%s) - T0 )) s" >>"$D"
