/* Unit tests for linediff.c: exact unified output, edge cases, the cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linediff.h"

static char *diff(const char *a, const char *b, int ctx,
                  struct linediff_stat *st)
{
  struct buf o = BUF_INIT(1 << 22);
  struct err e = {0, ""};
  assert_int_equal(linediff_unified(a, b, "a", "b", ctx, &o, st, &e), 0);
  return buf_detach(&o, NULL);
}

static void test_equal_is_empty(void **state)
{
  struct linediff_stat st;
  char *d;
  (void)state;
  d = diff("x\ny\n", "x\ny\n", 3, &st);
  assert_string_equal(d, "");
  assert_int_equal(st.added + st.removed + st.hunks, 0);
  free(d);
  d = diff(NULL, NULL, 3, NULL);
  assert_string_equal(d, "");
  free(d);
}

static void test_change_in_middle(void **state)
{
  struct linediff_stat st;
  char *d;
  (void)state;
  d = diff("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n", 2,
           &st);
  assert_string_equal(d, "--- a\n+++ b\n@@ -3,5 +3,5 @@\n 3\n 4\n-5\n+five\n"
                         " 6\n 7\n");
  assert_int_equal(st.added, 1);
  assert_int_equal(st.removed, 1);
  assert_int_equal(st.hunks, 1);
  free(d);
}

static void test_two_hunks_and_lcs(void **state)
{
  struct linediff_stat st;
  char *d;
  (void)state;
  /* Changes 8 lines apart with context 1 make two hunks. */
  d = diff("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n", "A\nb\nc\nd\ne\nf\ng\nh\ni\nJ\n",
           1, &st);
  assert_string_equal(d, "--- a\n+++ b\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n"
                         "@@ -9,2 +9,2 @@\n i\n-j\n+J\n");
  assert_int_equal(st.hunks, 2);
  free(d);
  /* LCS keeps the common lines of a reordering. */
  d = diff("x\na\nb\nc\n", "a\nb\nx\nc\n", 0, &st);
  assert_int_equal(st.added, 1);
  assert_int_equal(st.removed, 1);
  free(d);
}

static void test_insert_delete_edges(void **state)
{
  char *d;
  (void)state;
  d = diff("", "new\n", 3, NULL);
  assert_string_equal(d, "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+new\n");
  free(d);
  d = diff("old\n", "", 3, NULL);
  assert_string_equal(d, "--- a\n+++ b\n@@ -1,1 +0,0 @@\n-old\n");
  free(d);
  /* A missing final newline still compares by line. */
  d = diff("a\nb", "a\nc", 0, NULL);
  assert_string_equal(d, "--- a\n+++ b\n@@ -2,1 +2,1 @@\n-b\n+c\n");
  free(d);
  d = diff("a\nb\n", "a\nX\nb\n", 0, NULL);
  assert_string_equal(d, "--- a\n+++ b\n@@ -1,0 +2,1 @@\n+X\n");
  free(d);
}

static void test_cap(void **state)
{
  struct linediff_stat st;
  struct buf a = BUF_INIT(1 << 24), b = BUF_INIT(1 << 24);
  char *d;
  int i;
  (void)state;
  /* 3000 x 3000 changed lines exceed the LCS cap: the coarse form. */
  for (i = 0; i < 3000; i++) {
    buf_printf(&a, "a%d\n", i);
    buf_printf(&b, "b%d\n", i);
  }
  d = diff(buf_str(&a), buf_str(&b), 3, &st);
  assert_int_equal(st.capped, 1);
  assert_int_equal(st.added, 3000);
  assert_int_equal(st.removed, 3000);
  free(d);
  buf_release(&a);
  buf_release(&b);
}

static void test_output_cap(void **state)
{
  struct buf o = BUF_INIT(20);
  struct err e = {0, ""};
  (void)state;
  assert_int_equal(linediff_unified("a\n", "bbbbbbbbbbbbbbbbbbbbbbbb\n", "a",
                                    "b", 3, &o, NULL, &e),
                   ERR_TOOBIG);
  assert_non_null(strstr(e.msg, "cap"));
  buf_release(&o);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_equal_is_empty),
      cmocka_unit_test(test_change_in_middle),
      cmocka_unit_test(test_two_hunks_and_lcs),
      cmocka_unit_test(test_insert_delete_edges),
      cmocka_unit_test(test_cap),
      cmocka_unit_test(test_output_cap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
