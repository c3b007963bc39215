#!/bin/bash
# tests/gpu/diag6.sh - kv_transfer (issue 23).  First the seed (per_tile since
# 2026-12-02) at --vranks 2.  Then the deferred push's hang: diag5 showed that
# a printf at sd_wait's entry cures it at --vranks 2.  Which property of it?
#   stk    sd_wait with a stack frame (a volatile local array), no printf
#   pdead  a printf sd_wait never executes (the ELF's printf and frame only)
# and the two pull variants the issue names, at 1 rank, every verify size:
#   pull_split, tile_pull (they hung at verify before the launch reorder).
# Carry ./cuco and .gpulibs/.  Writes diag6.txt.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_diag_env "$ROOT" diag6
python3 - workloads/kv_transfer/seed.cu "$W" <<'PY'
import sys
s, w = open(sys.argv[1]).read(), sys.argv[2]
ent = "  for (int p = 0; p < 64; p++) {\n    if (!(pmask >> p & 1)) continue;\n"
assert ent in s
# the probes ask about the deferred push's hang (the seed is per_tile since 2026-12-02)
s = s.replace(" placement=per_tile ", " placement=deferred ", 1)
open(w + "/stk.cu", "w").write(s.replace(ent, "  volatile unsigned long long pad[8];\n"
    "  pad[threadIdx.x & 7] = epoch;\n  if (pad[(threadIdx.x + 1) & 7] == 12345ull) epoch++;\n" + ent, 1))
open(w + "/pdead.cu", "w").write(s.replace(ent, '  if (epoch == ~0ull) printf("PROBE %llu\\n", epoch);\n' + ent, 1))
PY
# the seed itself (per_tile on the tile v2: the epilogue pushes) at 2 virtual ranks
s=$(date +%s)
timeout 100 ./cuco eval workloads/kv_transfer --vranks 2 --no-bench --sizes v_tiny,v_small \
  --timeout 30 --out "$W/seed" >"$W/seed.txt" 2>&1
printf '%-10s v2 rc=%d %3d s  %s\n' seed $? $(($(date +%s) - s)) \
  "$(grep -E 'verify' "$W/seed.txt" | head -1 | cut -c1-200)" >>"$D"
for v in stk pdead; do
  s=$(date +%s)
  timeout 100 ./cuco eval workloads/kv_transfer --candidate "$W/$v.cu" --vranks 2 --no-bench \
    --sizes v_tiny --timeout 30 --out "$W/$v" >"$W/$v.txt" 2>&1
  printf '%-10s v2 rc=%d %3d s  %s\n' $v $? $(($(date +%s) - s)) \
    "$(grep -E 'verify' "$W/$v.txt" | head -1 | cut -c1-200)" >>"$D"
done
for v in pull_split tile_pull; do
  s=$(date +%s)
  timeout 200 ./cuco eval workloads/kv_transfer --candidate "$W/$v.cu" --no-bench --timeout 40 \
    --out "$W/$v" >"$W/$v.txt" 2>&1
  printf '%-10s r1 rc=%d %3d s  %s\n' $v $? $(($(date +%s) - s)) \
    "$(grep -E 'verify|static|build' "$W/$v.txt" | tr '\n' ' ' | cut -c1-300)" >>"$D"
done
for v in seed stk pdead pull_split tile_pull; do { echo "#### $v"; tail -15 "$W/$v.txt"; } >>"$D"; done
echo "total $(($(date +%s) - T0)) s" >>"$D"
cat "$D"
