#!/bin/bash
# tests/gpu/diag8.sh - issue 26: moe_dsv3 under --plan (cuco eval
# --one-process).  On 2026-12-03 the bench's second size (decode, after
# prefill in the same process) failed its first step with "counts of rank
# 0 CTA 0 ... invalid (72)": 72 = 8 tokens + 64 pairs counted at expert -1,
# i.e. route_idx read as all 0xFF, the allocation's poison.  The runtime
# poisoned new buffers with a plain cudaMemset (legacy stream, not ordered
# with its non-blocking step stream); it now poisons on the step stream and
# waits.  Probes, each on the runtime binary that cuco eval built:
#   plan_pd      bench plan prefill,decode (the failing case)
#   if it fails: plan_dd (decode twice), plan_pd_blocking
#   (CUDA_LAUNCH_BLOCKING=1), plan_vd_memcheck (compute-sanitizer, v_mid,decode)
# then cuco eval --one-process on moe_dsv3 and the four cheat suites with
# --one-process.  Nothing starts after LIMIT s (500).  Writes diag8.txt.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$ROOT/tests/gpu/lib.sh"
gpu_diag_env "$ROOT" diag8
LIMIT=${LIMIT:-500}
WL=workloads/moe_dsv3
INI=$WL/workload.ini
left() { echo $((LIMIT - ($(date +%s) - T0))); }
# bin NAME CAP ARGS...: the runtime binary, one line in $D
bin() {
  local name=$1 cap=$2 s rc l
  shift 2
  l=$(left)
  [ "$l" -lt 15 ] && { echo "$name skipped (limit)" >>"$D"; return 1; }
  [ "$cap" -gt "$l" ] && cap=$l
  s=$(date +%s)
  timeout -k 5 "$cap" "$@" >"$W/$name.txt" 2>&1
  rc=$?
  printf '%-20s rc=%-3d %3d s  %s\n' "$name" $rc $(($(date +%s) - s)) \
    "$(grep -E 'error|verification failed|ERROR SUMMARY|Invalid' "$W/$name.txt" | head -3 |
      tr '\n' ' ' | cut -c1-300)" >>"$D"
  { echo "#### $name"; tail -30 "$W/$name.txt"; } >>"$W/tails.txt"
  return $rc
}
probe() {
  local name=$1 cap=$2 s rc l
  shift 2
  l=$(left)
  [ "$l" -lt 20 ] && { echo "$name skipped (limit)" >>"$D"; return; }
  [ "$cap" -gt "$l" ] && cap=$l
  s=$(date +%s)
  timeout -k 5 "$cap" ./cuco eval "$@" --out "$W/$name" >"$W/$name.txt" 2>&1
  rc=$?
  printf '%-20s rc=%-3d %3d s  %s\n' "$name" $rc $(($(date +%s) - s)) \
    "$(grep -E '^  (verify|bench)|cheats:|FAIL|NOT' "$W/$name.txt" | tr '\n' ' ' | cut -c1-600)" >>"$D"
  { echo "#### $name"; tail -40 "$W/$name.txt"; } >>"$W/tails.txt"
}
./cuco eval $WL --compile-only --out "$W/build" >"$W/build.txt" 2>&1
B=$(find "$W/build" -name '*.bin' | head -1)
echo "binary: ${B:-none}" >>"$D"
plan() { # FILE SIZE...: a plan of the named sizes, tolerances from the command line
  local f=$1 z
  shift
  : >"$f"
  for z in "$@"; do echo "$z $(gpu_size_params "$INI" "$z") - - -" >>"$f"; done
}
if [ -n "$B" ]; then
  plan "$W/pd.plan" prefill decode
  plan "$W/dd.plan" decode decode
  plan "$W/vd.plan" v_mid decode
  RUNB=("$B" --mode bench --seed 1234 --tol 0.01 --min-time 0.3)
  if ! bin plan_pd 90 "${RUNB[@]}" --plan "$W/pd.plan" --out "$W/pd.json"; then
    bin plan_dd 60 "${RUNB[@]}" --plan "$W/dd.plan" --out "$W/dd.json"
    CUDA_LAUNCH_BLOCKING=1 bin plan_pd_blocking 90 "${RUNB[@]}" --plan "$W/pd.plan" \
      --out "$W/pdb.json"
    bin plan_vd_memcheck 150 "$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)" --tool memcheck "${RUNB[@]}" --min-time 0.05 \
      --plan "$W/vd.plan" --out "$W/vd.json"
  fi
fi
probe moe_one 150 $WL --one-process --json
probe moe_cheats_one 150 $WL --cheats --one-process --no-bench --timeout 40
probe kv_cheats_one 150 workloads/kv_transfer --cheats --one-process --no-bench --timeout 40
probe gemm_cheats_one 150 workloads/gemm_allgather --cheats --one-process --no-bench --timeout 40
probe flash_cheats_one 150 workloads/flash_attn_cp --cheats --one-process --timeout 60
echo "total $(($(date +%s) - T0)) s" >>"$D"
cp "$W/tails.txt" "$OUT/diag8-tails.txt" 2>/dev/null
cp "$W"/moe_one/*.json "$OUT/" 2>/dev/null
cat "$D"
