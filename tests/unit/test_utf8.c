/* Unit tests for utf8.c: cuts on character boundaries, cleaning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

static void test_cut(void **state)
{
  /* "a" then U+00E9 (2 bytes) then U+20AC (3 bytes) */
  const char *s = "a\xc3\xa9\xe2\x82\xac";
  char out[16];
  (void)state;
  assert_int_equal(utf8_cut(s, 100), 6);
  assert_int_equal(utf8_cut(s, 6), 6);
  assert_int_equal(utf8_cut(s, 2), 1); /* inside the e-acute */
  assert_int_equal(utf8_cut(s, 3), 3);
  assert_int_equal(utf8_cut(s, 4), 3); /* inside the euro sign */
  assert_int_equal(utf8_cut(s, 5), 3);
  assert_int_equal(utf8_cut(s, 0), 0);
  /* what a %.*s quote of the cut is: always valid */
  for (size_t m = 0; m <= 6; m++) {
    int n = snprintf(out, sizeof out, "%.*s", utf8_cut(s, m), s);
    assert_true(utf8_valid(out, (size_t)n));
  }
}

static void test_valid_and_sanitize(void **state)
{
  char latin1[] = "caf\xe9!";
  char cut[] = "x\xe2\x82";
  char overlong[] = "\xc0\xaf";
  char surrogate[] = "\xed\xa0\x80";
  (void)state;
  assert_true(utf8_valid("plain \xc3\xa9", 8));
  assert_false(utf8_valid(latin1, strlen(latin1)));
  assert_int_equal(utf8_sanitize(latin1, strlen(latin1)), 1);
  assert_string_equal(latin1, "caf?!");
  assert_int_equal(utf8_sanitize(cut, strlen(cut)), 2);
  assert_string_equal(cut, "x??");
  assert_false(utf8_valid(overlong, 2));
  assert_false(utf8_valid(surrogate, 3));
  assert_int_equal(utf8_sanitize(surrogate, 3), 3);
  assert_true(utf8_valid(surrogate, 3));
}

/* Issue 47: a candidate's escape sequences never reach a terminal. */
static void test_sanitize_text(void **state)
{
  /* OSC title, clear screen, bell, CR, DEL, C1 CSI (U+009B), then text */
  char s[] = "a\x1b]0;pwned\x07\x1b[2J\rb\x7f\xc2\x9b"
             "31m\tok\n\xc3\xa9";
  size_t bad;

  (void)state;
  bad = utf8_sanitize_text(s, strlen(s));
  assert_string_equal(s, "a?]0;pwned??[2J?b???31m\tok\n\xc3\xa9");
  assert_int_equal(bad, 7);
  assert_null(strchr(s, 0x1b));
  assert_int_equal(utf8_sanitize_text(NULL, 0), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cut),
      cmocka_unit_test(test_valid_and_sanitize),
      cmocka_unit_test(test_sanitize_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
