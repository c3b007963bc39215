#!/bin/bash
# scripts/unity.py (one translation unit for many variants of a workload
# file: how the suite checks that every cheat compiles, t0601/t0701): the
# sections are isolated from each other, each sees its own directives and
# the defaults otherwise, entry points do not clash, and an error names the
# section's own file.  Small files, nvcc's front end only.
. "$(dirname "$0")/lib.sh"
need_nvcc
U="$ROOT/scripts/unity.py"
# (front ends only, as t0701's fe)
fe() { local o=$1; shift; "$NVCC" -arch=sm_90 -std=c++17 -I"$ROOT/runtime" -cuda -fdevice-syntax-only "$@" -o "$o"; }
mkdir -p "$TMP/s"
# Two files like two cheats of one seed: the same entry points, the same
# static names and macros with different values, a header both include.
cat >"$TMP/s/h.cuh" <<'H'
#ifndef H_CUH
#define H_CUH
#include "cuco_directives.h"
extern "C" int wl_setup(int);
static inline int h_twice(int x) { return 2 * x; }
#endif
H
cat >"$TMP/s/a.cu" <<'A'
#include "h.cuh"
#define SD_SLOTS 16
#ifndef CUCO_PARAM_ctas
#define CUCO_PARAM_ctas 8
#endif
static constexpr int only_in_a = SD_SLOTS;
__global__ void k(int *p) { p[0] = only_in_a + CUCO_PARAM_ctas; }
static_assert(CUCO_SYNC == CUCO_SYNC_PER_CHUNK, "a: its own sync");
static_assert(CUCO_PARAM_ctas == 4, "a: its own param");
extern "C" int wl_setup(int x) { return h_twice(x) + only_in_a; }
A
cat >"$TMP/s/b.cu" <<'B'
#include "h.cuh"
#define SD_SLOTS 1024
#ifndef CUCO_PARAM_ctas
#define CUCO_PARAM_ctas 8
#endif
static constexpr int only_in_b = SD_SLOTS;
__global__ void k(int *p) { p[0] = only_in_b; }
static_assert(CUCO_SYNC == CUCO_SYNC_GLOBAL, "b: the default sync");
static_assert(CUCO_PARAM_ctas == 8, "b: the default param");
extern "C" int wl_setup(int x) { return h_twice(x) + only_in_b; }
B
expect_rc "unity.py writes the unit" 0 python3 "$U" "$TMP/u.cu" \
  "$TMP/s/a.cu@CUCO_SYNC=CUCO_SYNC_PER_CHUNK,CUCO_PARAM_ctas=4" "$TMP/s/b.cu"
expect_rc "two variants with the same names, macros and entry points compile as one unit" 0 \
  fe "$TMP/u.ii" -I"$TMP/s" "$TMP/u.cu"
expect_grep "each section's entry point is renamed" "$TMP/u.ii" "cuco_u1_wl_setup"
# a section that uses what only another one declares is an error: the
# namespaces keep them apart, as separate compiles would
sed 's/only_in_b;/only_in_b + only_in_a;/' "$TMP/s/b.cu" >"$TMP/s/c.cu"
python3 "$U" "$TMP/u2.cu" "$TMP/s/a.cu@CUCO_SYNC=CUCO_SYNC_PER_CHUNK,CUCO_PARAM_ctas=4" "$TMP/s/c.cu"
expect_rc "a section cannot see another's names" 2 fe "$TMP/u2.ii" -I"$TMP/s" "$TMP/u2.cu"
expect_grep "the error names the section's own file" "$TMP/err" "s/c.cu\\([0-9]+\\): error: identifier \"only_in_a\" is undefined"
# directives do not leak from one section into the next
python3 "$U" "$TMP/u3.cu" "$TMP/s/a.cu@CUCO_SYNC=CUCO_SYNC_PER_CHUNK,CUCO_PARAM_ctas=4" \
  "$TMP/s/b.cu@CUCO_SYNC=CUCO_SYNC_PER_CHUNK"
expect_rc "a section that is given a directive sees it" 2 fe "$TMP/u3.ii" -I"$TMP/s" "$TMP/u3.cu"
expect_grep "and the failing check is that section's" "$TMP/err" "b: the default sync"
expect_rc "a bad section definition is refused" 1 python3 "$U" "$TMP/u4.cu" "$TMP/s/a.cu@=3"
expect_grep "naming it" "$TMP/err" "bad definition"
expect_rc "a missing file is refused" 1 python3 "$U" "$TMP/u5.cu" "$TMP/s/nope.cu"
expect_grep "naming it" "$TMP/err" "nope.cu"
done_testing
