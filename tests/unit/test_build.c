/* Unit tests for build.c: freeform command templates, cache folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "file.h"

static void test_template(void **state)
{
  const char *flags[] = {"-DCUCO_PARAM_a=1", "-DCUCO_PARAM_b=x"};
  struct build_vars v = {0};
  struct err e = {0, ""};
  char **argv;
  (void)state;
  v.src = "/w/cand.c";
  v.bin = "/w/cand.bin";
  v.params = "M=1,N=2";
  v.mode = "bench";
  v.flags = flags;
  v.nflags = 2;
  argv = build_template_argv("  gcc -O3 {flags} -o {bin}   {src} -lm", &v, &e);
  assert_non_null(argv);
  assert_string_equal(argv[0], "gcc");
  assert_string_equal(argv[2], "-DCUCO_PARAM_a=1");
  assert_string_equal(argv[3], "-DCUCO_PARAM_b=x");
  assert_string_equal(argv[5], "/w/cand.bin");
  assert_string_equal(argv[6], "/w/cand.c");
  assert_string_equal(argv[7], "-lm");
  assert_null(argv[8]);
  tmpl_argv_free(argv);
  /* placeholders inside a token; {flags} with no flags vanishes; a value
   * with blanks stays one argument (no shell) */
  v.nflags = 0;
  v.size = "a b";
  argv = build_template_argv("{bin} --p={params} {flags} x{size}y", &v, &e);
  assert_non_null(argv);
  assert_string_equal(argv[1], "--p=M=1,N=2");
  assert_string_equal(argv[2], "xa by");
  assert_null(argv[3]);
  tmpl_argv_free(argv);
  assert_null(build_template_argv("{bin} {nope}", &v, &e));
  assert_non_null(strstr(e.msg, "unknown placeholder '{nope}'"));
  assert_null(build_template_argv("{bin} {src", &v, &e));
  assert_non_null(strstr(e.msg, "unclosed"));
  assert_null(build_template_argv("   ", &v, &e));
}

static void test_mkdirs_cache(void **state)
{
  char d[64], sub[128], c[256];
  struct err e = {0, ""};
  (void)state;
  snprintf(d, sizeof(d), "/tmp/cuco-bt.XXXXXX");
  assert_non_null(mkdtemp(d));
  snprintf(sub, sizeof(sub), "%s/a/b/c", d);
  assert_int_equal(file_mkdirs(sub, &e), 0);
  assert_int_equal(access(sub, W_OK), 0);
  assert_int_equal(file_mkdirs(sub, &e), 0);
  setenv("CUCO_CACHE_DIR", sub, 1);
  build_default_cache(c, sizeof(c));
  assert_string_equal(c, sub);
  rmdir(sub);
  snprintf(sub, sizeof(sub), "%s/a/b", d);
  rmdir(sub);
  snprintf(sub, sizeof(sub), "%s/a", d);
  rmdir(sub);
  rmdir(d);
  assert_int_not_equal(build_find_runtime(NULL, d, c, sizeof(c), &e), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_template),
      cmocka_unit_test(test_mkdirs_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
