/* Unit tests for html.c: escaping of untrusted text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "html.h"

static void esc(const char *in, size_t n, const char *want)
{
  struct buf b = BUF_INIT(1024);
  if (n == (size_t)-1)
    n = strlen(in);
  assert_int_equal(html_escape_n(&b, in, n), 0);
  assert_string_equal(buf_str(&b), want);
  buf_release(&b);
}

static void test_specials(void **state)
{
  (void)state;
  esc("<script>alert('x')</script> & \"q\"", (size_t)-1,
      "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
  esc("plain text\twith tab\n", (size_t)-1, "plain text\twith tab\n");
  esc("", 0, "");
}

static void test_control_and_utf8(void **state)
{
  (void)state;
  /* Control bytes, DEL and a NUL inside the length become U+FFFD. */
  esc("a\x01"
      "b\x7f"
      "c",
      5,
      "a\xef\xbf\xbd"
      "b\xef\xbf\xbd"
      "c");
  esc("x\0y", 3, "x\xef\xbf\xbdy");
  /* Valid UTF-8 stays, invalid sequences are replaced. */
  esc("\xc3\xa9t\xc3\xa9", 5, "\xc3\xa9t\xc3\xa9");
  esc("\xe2\x82", 2, "\xef\xbf\xbd\xef\xbf\xbd");
  esc("\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd"); /* overlong */
  esc("\xed\xa0\x80", 3,
      "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* surrogate */
  esc("\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80");
}

static void test_null_and_cap(void **state)
{
  struct buf b = BUF_INIT(8);
  (void)state;
  assert_int_equal(html_escape(&b, NULL), 0);
  assert_string_equal(buf_str(&b), "");
  assert_int_equal(html_escape(&b, "<<<<"), ERR_TOOBIG);
  buf_release(&b);
}

static void test_tokens(void **state)
{
  (void)state;
  assert_true(html_is_token("#1f77b4"));
  assert_true(html_is_token("node failed"));
  assert_true(html_is_token("rgb(1, 2, 3)"));
  assert_false(html_is_token(""));
  assert_false(html_is_token(NULL));
  assert_false(html_is_token("a\"b"));
  assert_false(html_is_token("x<y"));
  assert_false(html_is_token("url:javascript"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_specials),
      cmocka_unit_test(test_control_and_utf8),
      cmocka_unit_test(test_null_and_cap),
      cmocka_unit_test(test_tokens),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
