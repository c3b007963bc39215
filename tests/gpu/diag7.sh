#!/bin/bash
# tests/gpu/diag7.sh - issues 22 and 23 after the 2026-12-02 evening fixes:
#   - the --vranks boot now launches a kernel that uses printf and the device
#     heap (vnccl_warm_device): the kv seed (per_tile) hung at --vranks 2/4/8
#     at its first verify step; does it pass now, and the deferred push?
#   - the bench now stops at the first failed check: flash_attn_cp's
#     public_steps ran 781 verified microsecond steps into the 60 s timeout
#     instead of naming timed-verify.
#   - the kv and moe cheat suites (cuco eval --cheats) with the new seeds,
#     and kv's pull/split and tile/pull variants at --vranks 2.
# Each probe is one cuco eval; nothing starts after LIMIT seconds (470).
# Carry build-gpu (run-all.sh makes ./cuco).  Writes diag7.txt.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_diag_env "$ROOT" diag7
LIMIT=${LIMIT:-470}
# probe NAME CAP ARGS... : one cuco eval under CAP seconds, one line in $D
probe() {
  local name=$1 cap=$2 s rc
  shift 2
  s=$(date +%s)
  if [ $((s - T0 + 10)) -ge "$LIMIT" ]; then
    printf '%-22s skipped (limit)\n' "$name" >>"$D"
    return
  fi
  [ $((s - T0 + cap)) -gt "$LIMIT" ] && cap=$((LIMIT - s + T0))
  timeout -k 5 "$cap" ./cuco eval "$@" --out "$W/$name" >"$W/$name.txt" 2>&1
  rc=$?
  printf '%-22s rc=%-3d %3d s  %s\n' "$name" $rc $(($(date +%s) - s)) \
    "$(grep -E 'verify|bench|cheats:|FAIL' "$W/$name.txt" | tr '\n' ' ' | cut -c1-400)" >>"$D"
  { echo "#### $name"; tail -25 "$W/$name.txt"; } >>"$W/tails.txt"
}
KV=workloads/kv_transfer
./cuco eval workloads/flash_attn_cp --write-cheats "$W/fcheats" >/dev/null 2>&1
sed 1d "$W/fcheats/public_steps.cu" >"$W/f_public_steps.cu"
gpu_variant $KV/seed.cu "$W/deferred.cu" "placement=deferred"
gpu_variant $KV/seed.cu "$W/pull_split.cu" \
  "placement=split issuer=warp chunk=256KiB comm_ctas=16 direction=pull"
gpu_variant $KV/seed.cu "$W/tile_pull.cu" "placement=per_tile issuer=warp comm_ctas=16 direction=pull"
probe flash_public_steps 120 workloads/flash_attn_cp --candidate "$W/f_public_steps.cu" \
  --sizes mid --timeout 60
probe kv_seed_v2 90 $KV --vranks 2 --no-bench --timeout 30
probe kv_seed_v4 90 $KV --vranks 4 --no-bench --timeout 30
probe kv_seed_v8 100 $KV --vranks 8 --no-bench --timeout 30
probe kv_cheats 150 $KV --cheats --no-bench --timeout 40
probe moe_cheats 150 workloads/moe_dsv3 --cheats --no-bench --timeout 40
probe kv_deferred_v2 60 $KV --candidate "$W/deferred.cu" --vranks 2 --no-bench --sizes v_tiny \
  --timeout 30
probe kv_pull_split_v2 60 $KV --candidate "$W/pull_split.cu" --vranks 2 --no-bench --timeout 30
probe kv_tile_pull_v2 60 $KV --candidate "$W/tile_pull.cu" --vranks 2 --no-bench --timeout 30
echo "total $(($(date +%s) - T0)) s" >>"$D"
cp "$W/tails.txt" "$OUT/diag7-tails.txt" 2>/dev/null
cat "$D"
