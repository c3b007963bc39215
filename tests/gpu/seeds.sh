#!/bin/bash
# tests/gpu/seeds.sh - issue 24 in one device call: every seed against its
# bar at 1 rank through `cuco eval` (tests/gpu/seed_bar.sh), each beside a
# directive variant, then the gemm_allgather per_tile seed (seed_tile.cu, the
# tile v2) beside the cuBLASLt baseline (tests/gpu/gemm_ag.sh ONLY=tile).
#   OUT=dir bash tests/gpu/seeds.sh    PARTS="kv kvall moe gemm" (default)
# kvall: the kv seed beside tile_launch=all (one batched tile v2 launch for
# every layer), not yet measured.
# Carry ./cuco and .gpulibs/.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
./cuco doctor --json -o "$OUT/machine.json" >/dev/null 2>&1 || echo "cuco doctor failed: $(ldd ./cuco | grep 'not found')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv >"$OUT/gpu.csv" 2>&1
for p in ${PARTS:-kv kvall moe gemm}; do
  s=$(date +%s)
  case $p in
    kv) WL=kv_transfer VARIANT="placement=deferred" SIZES=short,mid,long timeout 280 bash tests/gpu/seed_bar.sh ;;
    kvall) TAG=kv_all WL=kv_transfer VARIANT="tile_launch=all" SIZES=short,mid timeout 200 bash tests/gpu/seed_bar.sh ;;
    moe) WL=moe_dsv3 VARIANT="experts=cublas" SIZES=decode,prefill timeout 300 bash tests/gpu/seed_bar.sh ;;
    gemm) mkdir -p "$OUT/gemm_ag" && OUT=$OUT/gemm_ag ONLY=tile QUICK=1 timeout 150 bash tests/gpu/gemm_ag.sh | tail -30 ;;
  esac
  echo "=== seeds.sh part $p: exit $? after $(($(date +%s) - s)) s"
done
