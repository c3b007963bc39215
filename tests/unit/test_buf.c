/* Unit tests for buf.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <stdlib.h>

#include "buf.h"

static void test_append_and_cap(void **state)
{
  struct buf b = BUF_INIT(10);
  (void)state;
  assert_int_equal(buf_puts(&b, "hello"), 0);
  assert_string_equal(buf_str(&b), "hello");
  assert_int_equal(buf_puts(&b, " world!"), ERR_TOOBIG);
  assert_int_equal(b.len, 10);
  assert_string_equal(buf_str(&b), "hello worl");
  assert_true(b.toobig);
  assert_int_equal(buf_error(&b), ERR_TOOBIG);
  /* sticky: still flagged after a later small append */
  (void)buf_puts(&b, "");
  assert_int_equal(buf_error(&b), ERR_TOOBIG);
  buf_release(&b);
}

static void test_printf_large(void **state)
{
  struct buf b = BUF_INIT(1 << 20);
  char big[1000];
  (void)state;
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  assert_int_equal(buf_printf(&b, "%s-%d", big, 42), 0);
  assert_int_equal(b.len, 999 + 3);
  assert_string_equal(buf_str(&b) + 999, "-42");
  buf_release(&b);
}

static void test_empty_and_detach(void **state)
{
  struct buf b = BUF_INIT(100);
  size_t n = 7;
  char *d;
  (void)state;
  assert_string_equal(buf_str(&b), "");
  d = buf_detach(&b, &n);
  assert_non_null(d);
  assert_int_equal(n, 0);
  assert_string_equal(d, "");
  free(d);
  assert_int_equal(buf_puts(&b, "abc"), 0);
  d = buf_detach(&b, &n);
  assert_string_equal(d, "abc");
  assert_int_equal(n, 3);
  assert_null(b.data);
  free(d);
  buf_reset(&b);
  buf_release(&b);
  buf_release(NULL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_append_and_cap),
      cmocka_unit_test(test_printf_large),
      cmocka_unit_test(test_empty_and_detach),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
