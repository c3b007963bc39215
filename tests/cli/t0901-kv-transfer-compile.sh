#!/bin/bash
# kv_transfer (issue 12): every file of the workload compiles for sm_90
# (baselines, reference, the seed under several directive sets incl. the
# GIN path, the compute-only bound tool, every cheat, and the seed and
# cheats in virtual-rank mode when the runtime has it); the cheats (edits of
# the seed) carry a CUCO-EXPECT-REJECT first line and differ from the seed
# only inside the EVOLVE block; workload.ini sizes match the GPU script.
# No GPU needed.
. "$(dirname "$0")/lib.sh"

WL=$ROOT/workloads/kv_transfer
# --- static checks (no compiler needed) ---
check_cheats "$WL" '^// CUCO-EXPECT-REJECT: (static|build|verify|bench) [a-z-]+' 6
awk '/EVOLVE-BLOCK-START/{s=1} s' "$WL/seed.cu" | head -4 >"$TMP/evhead"
expect_grep "seed: directives in its first EVOLVE block" "$TMP/evhead" \
  '^// CUCO-DIRECTIVES backend=lsa placement=split sync=per_peer issuer=warp chunk=16KiB$'
expect_grep "seed: comm_ctas param" "$TMP/evhead" '^// CUCO-PARAM comm_ctas=132$'
awk '/EVOLVE-BLOCK-START/{s=1} s' "$WL/seed.cu" | head -12 >"$TMP/evhead12"
expect_grep "seed: the bulk copy (copy=bulk)" "$TMP/evhead12" '^// CUCO-PARAM copy=bulk$'
expect_grep "workload.ini: copy lanes|bulk in [params]" "$WL/workload.ini" '^copy *= *lanes, bulk$'
expect_grep "workload.ini: compute and rope in [params]" "$WL/workload.ini" '^rope *= *kernel, push$'
awk '/EVOLVE-BLOCK-START/{s=1} s' "$WL/seed.cu" | head -6 >"$TMP/evhead6"
expect_grep "seed: direction param (push)" "$TMP/evhead6" '^// CUCO-PARAM direction=push$'
expect_grep "workload.ini: direction push|pull in [params]" "$WL/workload.ini" '^direction *= *push, pull$'
expect_grep "workload.ini: per_tile in the placement space" "$WL/workload.ini" \
  '^placement *= *deferred, per_tile, split$'
# workload.ini sizes == the GPU script's table (same strings)
grep -E '^[a-z_0-9]+ *= *L=' "$WL/workload.ini" | sed 's/ *= */=/' | sort >"$TMP/ini"
grep -oE '\[[a-z_0-9]+\]="L=[^"]*"' "$ROOT/tests/gpu/kv_transfer.sh" |
  sed -E 's/\[([a-z_0-9]+)\]="([^"]*)"/\1=\2/' | sort >"$TMP/gpu"
if [ -s "$TMP/ini" ] && cmp -s "$TMP/ini" "$TMP/gpu"; then ok "workload.ini sizes match tests/gpu/kv_transfer.sh"
else not_ok "workload.ini sizes match tests/gpu/kv_transfer.sh" "$(diff "$TMP/ini" "$TMP/gpu" | head -5)"; fi
expect_grep "verify set names only sizes without must-stay-poison elements" "$WL/workload.ini" \
  '^verify = v_tiny, v_small, v_odd, v_mid$'

# --- compile checks ---
NVCC=${CUCO_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if ! [ -x "$NVCC" ]; then
  echo "ok $((_n + 1)) # SKIP no nvcc"; _n=$((_n + 1)); done_testing; exit $?
fi
INC=(-I"$ROOT/runtime" -I"$WL")
[ -n "${NCCL_INCLUDE:-}" ] && INC+=(-I"$NCCL_INCLUDE")
NV=("${CCW[@]}" "$NVCC" -arch=sm_90 -std=c++17 "${INC[@]}")
cc() {  # NAME SRC [FLAGS...]
  local name=$1 src=$2; shift 2
  expect_rc "$name compiles" 0 "${NV[@]}" "$@" -c "$src" -o "$TMP/o.o"
}
W=workloads/kv_transfer
cw() {  # NAME SRC [FLAGS...]: make cuda's flags, shared with t0601 (lib.sh)
  local name=$1 src=$2; shift 2
  expect_rc "$name compiles" 0 nv_wl "$W" "$@" -- "$src" "$TMP/o.o"
}
cw "reference.cu" "$W/reference.cu"
cw "baseline.cu (A, deferred)" "$W/baseline.cu"
cw "baseline_streamed.cu (B)" "$W/baseline_streamed.cu"
cc "tools/compute_only.cu" "$WL/tools/compute_only.cu"
# make cuda's compile of the seed (a cache hit replays its warnings)
cw "seed.cu (its directives)" "$W/seed.cu"
expect_no_grep "seed.cu builds without warnings" "$TMP/err" "warning"
# The directive variants that must compile, in one unit (lib.sh unity_cc):
# direction=pull (decode reads the staging window) and placement=per_tile (the
# GEMM tile's epilogue applies RoPE and stores the pages) in every combination
S=$WL/seed.cu
unity_cc "seed.cu compiles in 11 directive variants (split per_chunk warp 16 CTAs; thread issuer; GIN split; pull deferred; pull split warp 64KiB; pull split thread per_chunk, built as per_peer; per_tile pull; per_tile in one batched launch; split with RoPE in the push on the high-priority stream; bulk copy split on 132 one-warp CTAs; bulk copy deferred with 4 warps)" -- \
  "$S@CUCO_PLACEMENT=3,CUCO_ISSUER=2,CUCO_PARAM_copy=bulk,CUCO_PARAM_comm_ctas=132,CUCO_PARAM_push_threads=32,CUCO_PARAM_bulk_kib=16" \
  "$S@CUCO_PARAM_copy=bulk,CUCO_PARAM_push_threads=128,CUCO_PARAM_bulk_kib=64" \
  "$S@CUCO_PLACEMENT=3,CUCO_SYNC=3,CUCO_ISSUER=2,CUCO_CHUNK_BYTES=65536,CUCO_PARAM_comm_ctas=16" \
  "$S@CUCO_ISSUER=1,CUCO_PARAM_push_threads=128" \
  "$S@CUCO_BACKEND=2,CUCO_PLACEMENT=3" \
  "$S@CUCO_PARAM_direction=pull" \
  "$S@CUCO_PARAM_direction=pull,CUCO_PLACEMENT=3,CUCO_ISSUER=2,CUCO_CHUNK_BYTES=65536,CUCO_PARAM_comm_ctas=16" \
  "$S@CUCO_PARAM_direction=pull,CUCO_PLACEMENT=3,CUCO_ISSUER=1,CUCO_SYNC=3" \
  "$S@CUCO_PLACEMENT=2,CUCO_PARAM_direction=pull" \
  "$S@CUCO_PLACEMENT=2,CUCO_PARAM_tile_launch=all" \
  "$S@CUCO_PLACEMENT=3,CUCO_ISSUER=2,CUCO_PARAM_rope=push,CUCO_PARAM_compute=hi"
# per_tile runs on the tile v2 (wgmma + TMA): sm_90a, as cuco eval builds
expect_rc "seed.cu per_tile push compiles for sm_90a" 0 "${NV[@]/-arch=sm_90/-gencode=arch=compute_90a,code=sm_90a}" \
  -DCUCO_PLACEMENT=2 -Xptxas -v -c "$WL/seed.cu" -o "$TMP/o.o"
cp "$TMP/err" "$TMP/ptxas_tile.log"
expect_grep "per_tile: ptxas built the GEMM tile v2 kernel with the epilogue" "$TMP/ptxas_tile.log" \
  "gemm_tile_v2_kernel.*SdTileEpi"
expect_no_grep "per_tile: the GEMM tile kernel does not spill" "$TMP/ptxas_tile.log" \
  "[1-9][0-9]* bytes spill"
expect_rc "seed.cu refuses an unknown direction" 1 \
  "${NV[@]}" -DCUCO_PARAM_direction=sideways -c "$WL/seed.cu" -o "$TMP/o.o"
expect_grep "the refusal names the param and its values" "$TMP/err" "direction must be push or pull"
expect_rc "seed.cu refuses pull on the GIN backend" 1 \
  "${NV[@]}" -DCUCO_BACKEND=2 -DCUCO_PARAM_direction=pull -c "$WL/seed.cu" -o "$TMP/o.o"
expect_grep "the GIN refusal names the reason" "$TMP/err" "are LSA designs"
expect_no_grep "per_tile builds without warnings" "$TMP/ptxas_tile.log" "warning"
expect_rc "seed.cu refuses copy=bulk with rope=push" 1 \
  "${NV[@]}" -DCUCO_PLACEMENT=3 -DCUCO_PARAM_copy=bulk -DCUCO_PARAM_rope=push -c "$WL/seed.cu" -o "$TMP/o.o"
expect_grep "the bulk refusal says why" "$TMP/err" "copy=bulk moves rows as they are"
expect_rc "seed.cu refuses sync=per_chunk on more than 16 CTAs" 1 \
  "${NV[@]}" -DCUCO_PLACEMENT=3 -DCUCO_SYNC=3 -DCUCO_PARAM_comm_ctas=32 -c "$WL/seed.cu" -o "$TMP/o.o"
expect_grep "the per_chunk refusal names the limit" "$TMP/err" "per_chunk needs comm_ctas <= 16"
# (the cheats compile in t0601, one unit per workload)
if [ -f "$ROOT/runtime/vnccl.cuh" ]; then
  cw "seed.cu in virtual-rank mode" "$W/seed.cu" -DCUCO_VRANKS
  unity_cc "seed.cu compiles in virtual-rank mode in 3 variants (split per_chunk; pull split; per_tile pull)" -DCUCO_VRANKS -- \
    "$S@CUCO_PLACEMENT=3,CUCO_SYNC=3" "$S@CUCO_PARAM_direction=pull,CUCO_PLACEMENT=3" \
    "$S@CUCO_PLACEMENT=2,CUCO_PARAM_direction=pull" \
  "$S@CUCO_PLACEMENT=2,CUCO_PARAM_tile_launch=all"
else
  ok "virtual-rank mode # SKIP runtime has no vnccl.cuh yet"
fi
done_testing
