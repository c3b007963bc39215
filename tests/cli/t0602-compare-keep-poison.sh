#!/bin/bash
# The runtime's per-element comparison classes (runtime/rt_cmp_elem.cuh,
# used by k_compare), checked on the CPU: an all-ones EXPECTED element means
# "must still hold the poison" (kv_transfer); still-poison there is kept, a
# written value is "outside"; ordinary expectations are unaffected.
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 1
if ! command -v nvcc >/dev/null 2>&1; then
  ok "# SKIP nvcc not installed"
  done_testing
  exit 0
fi
cat >"$TMP/t.cu" <<'EOF'
#include <stdio.h>
#include <string.h>
#include "rt_cmp_elem.cuh"
static int fails = 0;
static void want(const char *what, int got, int exp) {
  printf("%s %s (class %d, wanted %d)\n", got == exp ? "PASS" : "FAIL", what, got, exp);
  fails += got != exp;
}
int main(void) {
  // bf16 output, fp32 expectation: [value, unwritten, kept, outside]
  unsigned short g16[4] = {0x3F80, 0xFFFF, 0xFFFF, 0x4000};
  unsigned int e32[4] = {0x3F800000u, 0x40000000u, 0xFFFFFFFFu, 0xFFFFFFFFu};
  const char *n[4] = {"value", "poison", "kept", "outside"};
  int cls[4] = {RT_EL_VALUE, RT_EL_POISON, RT_EL_KEPT, RT_EL_OUTSIDE};
  char what[64];
  for (int i = 0; i < 4; i++) {
    snprintf(what, sizeof what, "bf16 %s", n[i]);
    want(what, rt_el_class((unsigned char *)g16, (unsigned char *)e32, i, RT_BF16), cls[i]);
  }
  // f32 output: a real NaN expectation that is not all-ones is no sentinel
  unsigned int g32[4] = {0x3F800000u, 0xFFFFFFFFu, 0xFFFFFFFFu, 0x12345678u};
  for (int i = 0; i < 4; i++) {
    snprintf(what, sizeof what, "f32 %s", n[i]);
    want(what, rt_el_class((unsigned char *)g32, (unsigned char *)e32, i, RT_F32), cls[i]);
  }
  unsigned int nan_exp = 0x7FC00000u, wrote = 0x3F800000u;
  want("f32 canonical-NaN expectation is a value", rt_el_class((unsigned char *)&wrote,
       (unsigned char *)&nan_exp, 0, RT_F32), RT_EL_VALUE);
  // 4-byte integers (counts): expectation in the own dtype
  unsigned int gi[2] = {0xFFFFFFFFu, 7u}, ei[2] = {0xFFFFFFFFu, 0xFFFFFFFFu};
  want("u32 kept", rt_el_class((unsigned char *)gi, (unsigned char *)ei, 0, RT_U32), RT_EL_KEPT);
  want("i32 outside", rt_el_class((unsigned char *)gi, (unsigned char *)ei, 1, RT_I32), RT_EL_OUTSIDE);
  // 8-byte
  unsigned long long g64[2] = {~0ull, 1ull}, e64[2] = {~0ull, ~0ull};
  want("f64 kept", rt_el_class((unsigned char *)g64, (unsigned char *)e64, 0, RT_F64), RT_EL_KEPT);
  want("i64 outside", rt_el_class((unsigned char *)g64, (unsigned char *)e64, 1, RT_I64), RT_EL_OUTSIDE);
  // bytes: 0xFF is an ordinary value, never a sentinel
  unsigned char gb[2] = {0xFF, 0x01}, eb[2] = {0xFF, 0xFF};
  want("u8 all-ones got is poison", rt_el_class(gb, eb, 0, RT_U8), RT_EL_POISON);
  want("u8 all-ones expectation is a value", rt_el_class(gb, eb, 1, RT_U8), RT_EL_VALUE);
  return fails ? 1 : 0;
}
EOF
if nvcc -std=c++17 -Iruntime -o "$TMP/t" "$TMP/t.cu" >"$TMP/build" 2>&1; then
  ok "the classifier compiles for the host"
  expect_rc "every element class is as specified" 0 "$TMP/t"
  expect_grep "kept and outside elements are told apart" "$TMP/out" "PASS bf16 kept"
  expect_no_grep "no failed case" "$TMP/out" "^FAIL"
else
  not_ok "the classifier compiles for the host" "$(head -c 500 "$TMP/build")"
fi
# The GPU check of rt_compare itself (run by tests/gpu/compare.sh) compiles.
expect_rc "tests/gpu/compare_keep.cu compiles" 0 nvcc -arch=sm_90 -std=c++17 -Iruntime \
  -c tests/gpu/compare_keep.cu -o "$TMP/ck.o"
done_testing
