#!/bin/bash
# moe_dsv3 (issue 18), no GPU needed: the cheats (edits of the seed) carry a
# CUCO-EXPECT-REJECT first line and differ from the seed only inside the
# EVOLVE block (check_cheats); `cuco eval --static-only` accepts
# the baselines and seed and every cheat passes the static stage; every .cu
# compiles for sm_90 (reference, both baselines, the seed, its GIN path, the
# seed and reference in virtual-rank mode, every cheat), two at a time.
. "$(dirname "$0")/lib.sh"

WL=$ROOT/workloads/moe_dsv3
check_cheats "$WL" '^// CUCO-EXPECT-REJECT: (static|build|verify|bench) [a-z-]+' 6
awk '/EVOLVE-BLOCK-START/{s=1} s' "$WL/seed.cu" | head -4 >"$TMP/evhead"
expect_grep "seed: directives in its first EVOLVE block" "$TMP/evhead" \
  '^// CUCO-DIRECTIVES backend=lsa placement=deferred sync=global issuer=warp chunk=64MiB$'
expect_grep "seed: comm_ctas param" "$TMP/evhead" '^// CUCO-PARAM comm_ctas=16$'
awk '/EVOLVE-BLOCK-START/{s=1} s' "$WL/seed.cu" | head -9 >"$TMP/evhead9"
expect_grep "seed: a CTA a tile for the expert GEMMs" "$TMP/evhead9" '^// CUCO-PARAM expert_grid=tiles$'
expect_grep "seed: panels of 2 M tiles" "$TMP/evhead9" '^// CUCO-PARAM expert_raster=2$'
expect_grep "workload.ini: expert_grid in [params]" "$WL/workload.ini" '^expert_grid *= *persistent, tiles$'

# --- the tool's static stage ---
expect_rc "static: baselines and seed" 0 "$CUCO" eval "$WL" --impl all --static-only
expect_grep "seed static ok" "$TMP/out" "seed.cu: ok \(static checks\)"
expect_grep "baseline A static ok" "$TMP/out" "^baseline.cu: ok \(static checks\)"
expect_grep "baseline B static ok" "$TMP/out" "baseline_overlap.cu: ok \(static checks\)"
expect_rc "static: cheat suite" 0 "$CUCO" eval "$WL" --cheats --static-only
expect_grep "every cheat passes static (judged later, on a GPU)" "$TMP/out" \
  "^cheats: $NCHEATS need a GPU \(not judged\)$"
sed 's/^\(\/\/ CUCO-DIRECTIVES .*\)sync=global/\1sync=per_peer/' "$WL/seed.cu" >"$TMP/pp.cu"
expect_rc "sync outside the space rejected" 1 "$CUCO" eval "$WL" --candidate "$TMP/pp.cu" --static-only
# The host copy of the routing would let a candidate skip the count
# exchange: workload.ini forbids it inside EVOLVE blocks.
awk '{print} /EVOLVE-BLOCK-START/ && !d {print "static int peek(const struct moe_core *c) { return c->ridx_h[0]; }"; d=1}' \
  "$WL/seed.cu" >"$TMP/peek.cu"
expect_rc "routing host copy in a candidate rejected" 1 "$CUCO" eval "$WL" --candidate "$TMP/peek.cu" --static-only
expect_grep "names the forbidden use" "$TMP/out" "forbidden use of 'ridx_h' \(workload.ini forbids it in candidates\)"

# cublasSetStream resets a handle to cuBLAS's default workspace pool: the
# frozen core must set its own workspace again right after every one.
setws_check() {  # FILE: prints each cublasSetStream(H, ...) line not followed by cublasSetWorkspace(H, ...)
  awk 'want { if ($0 !~ "cublasSetWorkspace\\(" want ",") print "line " NR - 1 ": " prev; want = "" }
       /cublasSetStream\(/ { s = $0; sub(/.*cublasSetStream\(/, "", s); sub(/,.*/, "", s)
                             want = s; gsub(/[][()>.-]/, "\\\\&", want); prev = $0 }' "$1"
}
if [ "$(grep -c 'cublasSetStream(' "$WL/wl_moe.cuh")" -ge 2 ] && [ -z "$(setws_check "$WL/wl_moe.cuh")" ]; then
  ok "wl_moe.cuh sets the workspace again after every cublasSetStream"
else not_ok "wl_moe.cuh sets the workspace again after every cublasSetStream" "$(setws_check "$WL/wl_moe.cuh")"; fi
sed '/cublasSetWorkspace(c->blas2, c->ws2/d' "$WL/wl_moe.cuh" >"$TMP/nows.cuh"
if [ -n "$(setws_check "$TMP/nows.cuh")" ]; then ok "a missing cublasSetWorkspace is caught"
else not_ok "a missing cublasSetWorkspace is caught" "check found nothing"; fi

# --- compile checks ---
NVCC=${CUCO_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if ! [ -x "$NVCC" ]; then
  echo "ok $((_n + 1)) # SKIP no nvcc"; _n=$((_n + 1)); done_testing; exit $?
fi
INC=(-I"$ROOT/runtime" -I"$WL")
[ -n "${NCCL_INCLUDE:-}" ] && INC+=(-I"$NCCL_INCLUDE")
NV=("${CCW[@]}" "$NVCC" -arch=sm_90 -std=c++17 "${INC[@]}" -diag-suppress 177)
expect_rc "seed.cu refuses placement=per_tile (not implemented)" 1 \
  "${NV[@]}" -DCUCO_PLACEMENT=2 -c "$WL/seed.cu" -o "$TMP/pt.o"
expect_grep "per_tile refusal names the reason" "$TMP/err" "only placement=deferred is implemented"
jobs_list=()
cc() {  # NAME SRC [FLAGS...]: compile in the background, two at a time
  local name=$1 src=$2 i=${#jobs_list[@]}; shift 2
  jobs_list+=("$name")
  ("${NV[@]}" "$@" -c "$src" -o "$TMP/o$i.o" >"$TMP/log$i" 2>&1; echo $? >"$TMP/rc$i") &
  [ $(((i + 1) % 2)) -eq 0 ] && wait
}
W=workloads/moe_dsv3
cw() {  # NAME SRC [FLAGS...]: cc with make cuda's flags, shared with t0601 (lib.sh)
  local name=$1 src=$2 i=${#jobs_list[@]}; shift 2
  jobs_list+=("$name")
  (nv_wl "$W" "$@" -- "$src" "$TMP/o$i.o" >"$TMP/log$i" 2>&1; echo $? >"$TMP/rc$i") &
  [ $(((i + 1) % 2)) -eq 0 ] && wait
}
cw "reference.cu" "$W/reference.cu"
cw "baseline.cu (A)" "$W/baseline.cu"
cw "baseline_overlap.cu (B)" "$W/baseline_overlap.cu"
if [ -f "$ROOT/runtime/vnccl.cuh" ]; then
  cw "seed.cu in virtual-rank mode" "$W/seed.cu" -DCUCO_VRANKS
  cc "reference.cu in virtual-rank mode" "$WL/reference.cu" -DCUCO_VRANKS
fi
# (the cheats compile in t0601 and t0701, one unit per workload and mode)
cc "tools/gemm_bench.cu" "$WL/tools/gemm_bench.cu"
wait
for i in "${!jobs_list[@]}"; do
  if [ "$(cat "$TMP/rc$i")" = 0 ] && ! grep -q "warning" "$TMP/log$i"; then ok "${jobs_list[$i]} compiles (no warnings)"
  else not_ok "${jobs_list[$i]} compiles (no warnings)" "$(head -c 600 "$TMP/log$i")"; fi
done
# the directive variants, in one unit (lib.sh unity_cc); the GIN path as
# make cuda compiles (and links) it, a section of the workload's unit
unity_cc "seed.cu compiles in 7 directive variants (its directives: warp issuer 16 CTAs; 32 CTAs of 1024 threads; experts by cuBLAS loop with the fused combine; experts=auto; the GIN path; a CTA a tile in panels of 2; persistent in panels of 1)" -- \
  "$WL/seed.cu@CUCO_PARAM_expert_grid=tiles,CUCO_PARAM_expert_raster=2" \
  "$WL/seed.cu@CUCO_PARAM_expert_grid=persistent,CUCO_PARAM_expert_raster=1" \
  "$WL/seed.cu@CUCO_ISSUER=2,CUCO_PARAM_comm_ctas=16" \
  "$WL/seed.cu@CUCO_PARAM_comm_ctas=32,CUCO_PARAM_disp_threads=1024" \
  "$WL/seed.cu@CUCO_PARAM_experts=cublas,CUCO_PARAM_combine=fused" \
  "$WL/seed.cu@CUCO_PARAM_experts=auto" \
  "$WL/seed.cu@CUCO_BACKEND=CUCO_BACKEND_GIN"
expect_no_grep "and without warnings" "$TMP/err" "warning"
expect_rc "seed.cu refuses an unknown expert_raster" 1 \
  "${NV[@]}" -DCUCO_PARAM_expert_raster=4 -c "$WL/seed.cu" -o "$TMP/o.o"
expect_grep "the refusal lists the panel heights" "$TMP/err" "expert_raster must be 8, 2 or 1"
done_testing
