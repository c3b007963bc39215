#!/bin/bash
# tests/gpu/diag5.sh - kv_transfer --vranks 2 v_tiny: diag4's printf probe
# PASSED where the seed hangs, so which of its three edits cures it?
#   ctrl  the seed as it is (hangs: 45 s timeout)
#   loop  sd_wait's spin bounded by %globaltimer, no __nanosleep, no printf
#   pwait a printf at sd_wait's entry only
#   ppush a printf in sd_push's last-CTA branch only
# Carry ./cuco and .gpulibs/.  Writes diag5.txt.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_diag_env "$ROOT" diag5
python3 - workloads/kv_transfer/seed.cu $W <<'PY'
import sys
s, w = open(sys.argv[1]).read(), sys.argv[2]
spin = "      while (f.load(cuda::memory_order_acquire) < epoch) __nanosleep(64);\n"
ent = "  for (int p = 0; p < 64; p++) {\n    if (!(pmask >> p & 1)) continue;\n"
last = "      unsigned long long old = atomicAdd(&done[l], 1ull);\n"
for x in (spin, ent, last): assert x in s
open(w + "/ctrl.cu", "w").write(s)
open(w + "/loop.cu", "w").write(s.replace(spin, """      unsigned long long t0, t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
      do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); }
      while (f.load(cuda::memory_order_acquire) < epoch && t - t0 < 2000000000ull);
""", 1))
open(w + "/pwait.cu", "w").write(s.replace(ent, '  if (threadIdx.x == 0) printf("PROBE wait ep=%llu\\n", epoch);\n' + ent, 1))
open(w + "/ppush.cu", "w").write(s.replace(last, last + '      printf("PROBE push old=%llu\\n", old);\n', 1))
PY
for v in loop pwait ppush ctrl; do
  s=$(date +%s)
  timeout 110 ./cuco eval workloads/kv_transfer --candidate $W/$v.cu --vranks 2 --no-bench --sizes v_tiny \
    --timeout 45 --out $W/$v >$W/$v.txt 2>&1
  printf '%-6s rc=%d %3d s  %s\n' $v $? $(( $(date +%s) - s )) \
    "$(grep -E 'verify' $W/$v.txt | head -1 | cut -c1-160)" >>"$D"
done
echo "total $(( $(date +%s) - T0 )) s" >>"$D"
