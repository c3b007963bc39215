/* Unit tests for config.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static void test_parse_and_get(void **state)
{
  struct config *c = config_new();
  struct err e = {0, ""};
  long l;
  double d;
  int b;
  (void)state;
  assert_int_equal(config_load_string(c, "t.ini",
                                      "top = 1\n[llm]\nmodel = gpt\n"
                                      "timeout = 30\nprice = 2.5\n"
                                      "stream = yes\n[llm]\nmodel = b\n",
                                      &e),
                   0);
  assert_string_equal(config_get(c, "", "top", NULL), "1");
  assert_string_equal(config_get(c, "llm", "model", NULL), "b");
  assert_string_equal(config_find(c, "llm", "model")->origin, "t.ini:8");
  assert_int_equal(config_get_long(c, "llm", "timeout", 5, 1, 100, &l, &e), 0);
  assert_int_equal(l, 30);
  assert_int_equal(config_get_long(c, "llm", "nope", 5, 1, 100, &l, &e), 0);
  assert_int_equal(l, 5);
  assert_int_equal(config_get_double(c, "llm", "price", 0, 0, 1e9, &d, &e), 0);
  assert_true(d == 2.5);
  assert_int_equal(config_get_bool(c, "llm", "stream", 0, &b, &e), 0);
  assert_int_equal(b, 1);
  config_free(c);
}

static void test_errors_name_origin(void **state)
{
  struct config *c = config_new();
  struct err e = {0, ""};
  long l;
  (void)state;
  assert_int_equal(config_load_string(c, "x.ini", "[a]\nk = v\nbroken\n", &e),
                   ERR_PARSE);
  assert_non_null(strstr(e.msg, "x.ini:3"));
  assert_int_equal(
      config_load_string(c, "y.ini", "[a]\nn = abc\nm = 500\n", &e), 0);
  assert_int_equal(config_get_long(c, "a", "n", 0, 0, 10, &l, &e), ERR_CONFIG);
  assert_non_null(strstr(e.msg, "y.ini:2"));
  assert_int_equal(config_get_long(c, "a", "m", 0, 0, 10, &l, &e), ERR_CONFIG);
  assert_non_null(strstr(e.msg, "outside"));
  assert_int_equal(config_load(c, "/nonexistent/z.ini", &e), ERR_IO);
  assert_non_null(strstr(e.msg, "/nonexistent/z.ini"));
  config_free(c);
}

/* inih cuts lines at a fixed buffer: a long line must be an error naming it
 * (not silently split into a bogus key), from a string and from a file, and
 * indented continuation lines must join into one value. */
static void test_long_lines_and_continuation(void **state)
{
  struct config *c = config_new();
  struct err e = {0, ""};
  char text[1200], path[] = "/tmp/cuco-test-config-XXXXXX";
  char fit[190];
  int fd;
  FILE *f;
  (void)state;
  memset(fit, 'f', sizeof fit - 1);
  fit[sizeof fit - 1] = '\0';
  snprintf(text, sizeof text, "[a]\nk = v\nlong = %0*d key = bogus\nz = 1\n",
           600, 7);
  assert_int_equal(config_load_string(c, "s.ini", text, &e), ERR_PARSE);
  assert_non_null(strstr(e.msg, "s.ini:3: line longer than"));
  assert_null(config_find(c, "a", "key"));
  /* a line just under the limit, then continuations */
  snprintf(text, sizeof text,
           "[w]\nd = %.*s\ndescription = first part\n  second part\n"
           "\tthird = part\nafter = 2\n[x]\n",
           150, fit);
  assert_int_equal(config_load_string(c, "c.ini", text, &e), 0);
  assert_string_equal(config_get(c, "w", "description", NULL),
                      "first part second part third = part");
  assert_string_equal(config_find(c, "w", "description")->origin, "c.ini:3");
  assert_string_equal(config_get(c, "w", "after", NULL), "2");
  assert_int_equal(strlen(config_get(c, "w", "d", "")), 150);
  /* the same through a file */
  fd = mkstemp(path);
  assert_true(fd >= 0);
  f = fdopen(fd, "w");
  assert_non_null(f);
  fprintf(f, "[a]\nok = 1\nlong = %0*d\n", 400, 1);
  fclose(f);
  assert_int_equal(config_load(c, path, &e), ERR_PARSE);
  assert_non_null(strstr(e.msg, ":3: line longer than"));
  f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "[a]\nok = 1\ntext = one\n    two\n");
  fclose(f);
  assert_int_equal(config_load(c, path, &e), 0);
  assert_string_equal(config_get(c, "a", "text", NULL), "one two");
  unlink(path);
  config_free(c);
}

static void test_env_override(void **state)
{
  struct config *c = config_new();
  struct config_env_map m[] = {{"CUCO_TEST_MODEL", "llm", "model"}};
  struct err e = {0, ""};
  (void)state;
  assert_int_equal(config_load_string(c, "t.ini", "[llm]\nmodel=a\n", &e), 0);
  setenv("CUCO_TEST_MODEL", "from-env", 1);
  assert_int_equal(config_apply_env(c, m, 1), 0);
  assert_string_equal(config_get(c, "llm", "model", NULL), "from-env");
  assert_string_equal(config_find(c, "llm", "model")->origin,
                      "env CUCO_TEST_MODEL");
  unsetenv("CUCO_TEST_MODEL");
  config_free(c);
}

static void test_bytes(void **state)
{
  unsigned long long v;
  (void)state;
  assert_int_equal(config_parse_bytes("512KiB", &v), 0);
  assert_true(v == 512 * 1024ULL);
  assert_int_equal(config_parse_bytes("64MiB", &v), 0);
  assert_true(v == 64ULL << 20);
  assert_int_equal(config_parse_bytes("4096", &v), 0);
  assert_true(v == 4096);
  assert_int_equal(config_parse_bytes("4 KiB", &v), ERR_PARSE);
  assert_int_equal(config_parse_bytes("KiB", &v), ERR_PARSE);
  assert_int_equal(config_parse_bytes("-1", &v), ERR_PARSE);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_and_get),
      cmocka_unit_test(test_errors_name_origin),
      cmocka_unit_test(test_env_override),
      cmocka_unit_test(test_bytes),
      cmocka_unit_test(test_long_lines_and_continuation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
