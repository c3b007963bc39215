#!/bin/bash
# flash_attn_cp (issue 13): every file of the workload compiles for sm_90
# (reference, baselines A/B/C, the seed under several directive sets incl.
# pattern=allgather and the GIN path, every cheat, and the seed, reference
# and a cheat in virtual-rank mode); the cheats (edits of the seed) carry a
# CUCO-EXPECT-REJECT first line and differ from the seed only inside the
# EVOLVE block (check_cheats); `cuco eval --static-only` passes
# the seed and the cheat suite; a candidate that defines the reference's
# input hook is refused; the runtime's "written, not compared" class
# (RT_EXP_ANY) on the CPU.  No GPU needed.
. "$(dirname "$0")/lib.sh"

WL=$ROOT/workloads/flash_attn_cp
# --- static checks (no compiler needed) ---
check_cheats "$WL" '^// CUCO-EXPECT-REJECT: (verify (recv-poison|poison|local-check|nan|snapshot|perturb|rel-l2|fresh-inputs)|bench timed-verify)' 7
awk '/EVOLVE-BLOCK-START/{s=1} s' "$WL/seed.cu" | head -6 >"$TMP/evhead"
expect_grep "seed: directives in its first EVOLVE block" "$TMP/evhead" \
  '^// CUCO-DIRECTIVES backend=lsa placement=deferred sync=global issuer=cta chunk=1MiB$'
expect_grep "seed: slots param" "$TMP/evhead" '^// CUCO-PARAM slots=2$'
expect_grep "workload.ini: the bar is min(B, C)" "$WL/workload.ini" \
  '^bar *= baseline_overlap.cu, baseline_allgather.cu$'
# every size the GPU script uses is the same string in workload.ini
grep -E '^[a-z_0-9]+ *= *SR?=' "$WL/workload.ini" | sed 's/ *= */=/' | sort >"$TMP/ini"
grep -oE '\[[a-z_0-9]+\]="SR?=[^"]*"' "$ROOT/tests/gpu/flash_attn.sh" |
  sed -E 's/\[([a-z_0-9]+)\]="([^"]*)"/\1=\2/' | sort >"$TMP/gpu"
if [ -s "$TMP/gpu" ] && [ -z "$(comm -13 "$TMP/ini" "$TMP/gpu")" ]; then
  ok "tests/gpu/flash_attn.sh sizes are workload.ini's"
else not_ok "tests/gpu/flash_attn.sh sizes are workload.ini's" "$(comm -13 "$TMP/ini" "$TMP/gpu" | head -3)"; fi
bash -n "$ROOT/tests/gpu/flash_attn.sh" && ok "tests/gpu/flash_attn.sh parses" ||
  not_ok "tests/gpu/flash_attn.sh parses" "bash -n"
if [ -x "$CUCO" ]; then
  expect_rc "cuco eval --static-only passes the seed" 0 "$CUCO" eval --static-only "$WL"
  expect_rc "cuco eval --static-only --cheats: every cheat passes the static checks" 0 \
    "$CUCO" eval --static-only --cheats "$WL"
  expect_grep "static cheat suite: none judged, all need a GPU" "$TMP/out" "^cheats: $NCHEATS need a GPU \(not judged\)$"
  sed 's|^static int nslots_for|extern "C" int wl_input_post(struct wl_ctx *, const char *, int, void *, unsigned long long, cudaStream_t) { return 0; }\nstatic int nslots_for|' \
    "$WL/seed.cu" >"$TMP/hook.cu"
  expect_rc "a candidate defining wl_input_post is refused" 1 \
    "$CUCO" eval --static-only --candidate "$TMP/hook.cu" "$WL"
  expect_grep "refusal names the hook" "$TMP/out" "wl_input_post"
fi

# --- the GIN path's split of one shard over the CTAs (host C, the seed's own
# line): every byte covered, 16-byte parts.  floor(bytes/G) rounded up to 16
# once lost the tail (bytes = 1920, G = 17: 17 * 112 = 1904).
grep -m1 'const size_t part = ' "$WL/seed.cu" >"$TMP/part.line"
cat >"$TMP/part.c" <<'EOT'
#include <stdio.h>
#include <stddef.h>
static struct { unsigned x; } gridDim;
static size_t part_of(size_t bytes, unsigned g) {
  gridDim.x = g;
#include "part.line"
  return part;
}
int main(void) {
  int bad = 0;
  for (unsigned g = 1; g <= 32; g++)          /* comm_ctas 1..32 */
    for (size_t t = 1; t <= 4096; t++) {      /* shards are multiples of 128 B */
      size_t bytes = 128 * t, p = part_of(bytes, g);
      if (p % 16 || p * g < bytes) {
        if (bad++ < 3) printf("bytes %zu G %u: part %zu covers %zu\n", bytes, g, p, p * g);
      }
    }
  printf(bad ? "FAIL %d\n" : "PASS\n", bad);
  return bad != 0;
}
EOT
if [ -s "$TMP/part.line" ] && command "${CC:-cc}" -std=c11 -I"$TMP" -o "$TMP/part" "$TMP/part.c" 2>"$TMP/part.err"; then
  expect_rc "seed GIN split: parts of 16 B cover every shard size for 1..32 CTAs" 0 "$TMP/part"
else not_ok "seed GIN split test builds" "$(head -c 300 "$TMP/part.err")"; fi

# --- compile checks ---
NVCC=${CUCO_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if ! [ -x "$NVCC" ]; then
  echo "ok $((_n + 1)) # SKIP no nvcc"; _n=$((_n + 1)); done_testing; exit $?
fi
INC=(-I"$ROOT/runtime" -I"$WL")
[ -n "${NCCL_INCLUDE:-}" ] && INC+=(-I"$NCCL_INCLUDE")
NV=("${CCW[@]}" "$NVCC" -arch=sm_90 -std=c++17 "${INC[@]}")
# Two compilers at a time (CI has 2 cores); results are collected in order.
nj=0
cc() {  # NAME SRC [FLAGS...]
  local name=$1 src=$2; shift 2
  nj=$((nj + 1))
  echo "$name" >"$TMP/cc.$nj.name"
  ("${NV[@]}" "$@" -c "$src" -o "$TMP/cc.$nj.o" >"$TMP/cc.$nj.log" 2>&1; echo $? >"$TMP/cc.$nj.rc") &
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do sleep 0.2; done
}
W=workloads/flash_attn_cp
cw() {  # NAME SRC [FLAGS...]: cc with make cuda's flags, shared with t0601 (lib.sh)
  local name=$1 src=$2; shift 2
  nj=$((nj + 1))
  echo "$name" >"$TMP/cc.$nj.name"
  (nv_wl "$W" "$@" -- "$src" "$TMP/cc.$nj.o" >"$TMP/cc.$nj.log" 2>&1; echo $? >"$TMP/cc.$nj.rc") &
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do sleep 0.2; done
}
cc_collect() {
  wait
  for i in $(seq 1 "$nj"); do
    if [ "$(cat "$TMP/cc.$i.rc" 2>/dev/null)" = 0 ]; then ok "$(cat "$TMP/cc.$i.name") compiles"
    else not_ok "$(cat "$TMP/cc.$i.name") compiles" "$(head -c 500 "$TMP/cc.$i.log")"; fi
  done
}
cw "reference.cu" "$W/reference.cu"
cw "baseline.cu (A)" "$W/baseline.cu"
cw "baseline_overlap.cu (B)" "$W/baseline_overlap.cu"
cw "baseline_allgather.cu (C)" "$W/baseline_allgather.cu"
cw "seed.cu (its directives)" "$W/seed.cu"
expect_rc "seed.cu refuses placement=split" 1 "${NV[@]}" -DCUCO_PLACEMENT=3 -c "$WL/seed.cu" -o "$TMP/o.o"
expect_grep "split refusal names the reason" "$TMP/err" "placement=deferred only"
# (the cheats compile in t0601 and t0701, one unit per workload and mode)
cw "seed.cu in virtual-rank mode" "$W/seed.cu" -DCUCO_VRANKS
cc "reference.cu in virtual-rank mode" "$WL/reference.cu" -DCUCO_VRANKS
cc "tools/plan_check.cu" "$WL/tools/plan_check.cu"
cc_collect
# the directive variants, in one unit (lib.sh unity_cc); the GIN path as
# make cuda compiles (and links) it, a section of the workload's unit
unity_cc "seed.cu compiles in 3 directive variants (allgather warp issuer 16 CTAs; thread issuer slots=3 64KiB 128 copy threads; the GIN path)" -- \
  "$WL/seed.cu@CUCO_PARAM_pattern=allgather,CUCO_ISSUER=2,CUCO_PARAM_comm_ctas=16" \
  "$WL/seed.cu@CUCO_ISSUER=1,CUCO_PARAM_slots=3,CUCO_CHUNK_BYTES=65536,CUCO_PARAM_copy_threads=128" \
  "$WL/seed.cu@CUCO_BACKEND=CUCO_BACKEND_GIN"

# --- the runtime's RT_EXP_ANY class, on the CPU ---
cat >"$TMP/any.cu" <<'EOT'
#include <stdio.h>
#include "rt_cmp_elem.cuh"
int main(void) {
  // bf16 got: [written, poison]; expectation RT_EXP_ANY for both; f32 too.
  unsigned short g16[2] = {0x3F80, 0xFFFF};
  unsigned int e32[2] = {RT_EXP_ANY, RT_EXP_ANY}, g32[2] = {0x3F800000u, 0xFFFFFFFFu};
  int f = 0;
  f |= rt_el_class((const unsigned char *)g16, (const unsigned char *)e32, 0, RT_BF16) != RT_EL_ANY;
  f |= rt_el_class((const unsigned char *)g16, (const unsigned char *)e32, 1, RT_BF16) != RT_EL_POISON;
  f |= rt_el_class((const unsigned char *)g32, (const unsigned char *)e32, 0, RT_F32) != RT_EL_ANY;
  f |= rt_el_class((const unsigned char *)g32, (const unsigned char *)e32, 1, RT_F32) != RT_EL_POISON;
  // an integer output keeps its own value semantics
  unsigned int gi[1] = {RT_EXP_ANY};
  f |= rt_el_class((const unsigned char *)gi, (const unsigned char *)e32, 0, RT_U32) != RT_EL_VALUE;
  printf(f ? "FAIL\n" : "PASS\n");
  return f;
}
EOT
expect_rc "RT_EXP_ANY classes build" 0 "$NVCC" -std=c++17 -I"$ROOT/runtime" -o "$TMP/any" "$TMP/any.cu"
expect_rc "RT_EXP_ANY: written = not compared, poison = poison, ints unaffected" 0 "$TMP/any"
done_testing
