#!/bin/bash
# tests/gpu/plancheck.sh - the --plan change of 0633c2b on a GPU: each size
# of a stage restarts epoch and step at 0 and mixes its index into every
# PRF (rt_prf_round).  Through cuco only:
#   1. cuco eval --json --impl all of moe_dsv3 and kv_transfer (the seed
#      beside its baselines: issue 24's vs_bar), of gemm_allgather and of
#      flash_attn_cp at short,mid (the seed): NAME.json;
#   2. issue 24's variants, beside the seed: moe_dsv3 with combine=fused
#      (the seed is combine=wide) and kv_transfer with tile_launch=all
#      (the seed: layer), through --candidate: NAME-VARIANT.json;
#   3. the cheat suites of kv_transfer (public_steps hung at its 2nd size
#      before the restart), moe_dsv3 and gemm_allgather, verify only:
#      cheats-WL.txt.
# Nothing starts after LIMIT s (default 540).  Carry build-gpu.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_eval_env "$ROOT"
gpu_capped_init plancheck
gpu_capped moe_dsv3 150 "$OUT/moe_dsv3.json" ./cuco eval workloads/moe_dsv3 --json --impl all
gpu_seed_variant moe_dsv3 fused "// CUCO-PARAM combine=fused"
gpu_capped kv_transfer 150 "$OUT/kv_transfer.json" ./cuco eval workloads/kv_transfer --json --impl all
gpu_seed_variant kv_transfer all "// CUCO-PARAM tile_launch=all"
for wl in kv_transfer moe_dsv3; do
  gpu_capped "cheats-$wl" 120 "$OUT/cheats-$wl.txt" ./cuco eval "workloads/$wl" --cheats --no-bench --timeout 40
done
gpu_capped gemm_allgather 100 "$OUT/gemm_allgather.json" ./cuco eval workloads/gemm_allgather --json
gpu_capped flash_attn_cp 100 "$OUT/flash_attn_cp.json" ./cuco eval workloads/flash_attn_cp --json --sizes short,mid
gpu_capped cheats-gemm_allgather 120 "$OUT/cheats-gemm_allgather.txt" ./cuco eval workloads/gemm_allgather --cheats --no-bench --timeout 40
cat "$T"
