/* Unit tests for build.c: freeform command templates, cache folder; the
 * toolchain's target words (toolchain.c), which every nvcc command takes. */
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
#include "config.h"
#include "file.h"
#include "toolchain.h"

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

/* The target as nvcc words: an arch-specific target (wgmma, setmaxnreg)
 * only through -gencode, a plain one through -arch. */
static void test_arch_flag(void **state)
{
  struct toolchain tc;
  char f[96];
  (void)state;
  memset(&tc, 0, sizeof(tc));
  snprintf(tc.arch, sizeof(tc.arch), "sm_90a");
  tc_arch_flag(&tc, f, sizeof(f));
  assert_string_equal(f, "-gencode=arch=compute_90a,code=sm_90a");
  snprintf(tc.arch, sizeof(tc.arch), "sm_90");
  tc_arch_flag(&tc, f, sizeof(f));
  assert_string_equal(f, "-arch=sm_90");
  snprintf(tc.arch, sizeof(tc.arch), "sm_100a");
  tc_arch_flag(&tc, f, sizeof(f));
  assert_string_equal(f, "-gencode=arch=compute_100a,code=sm_100a");
}

/* [build] arch: sm_90a when unset; a value that is not sm_NN[a] is a config
 * error naming it (it would become compiler words), before any probing. */
static void test_arch_config(void **state)
{
  static const char *const bad[] = {
      "sm_9", "sm90", "sm_90 -Xlinker", "sm_90b", "compute_90", "sm_90aa", ""};
  struct config *c = config_new();
  struct toolchain tc;
  struct err e = {0, ""};
  size_t i;
  (void)state;
  assert_non_null(c);
  assert_int_equal(tc_probe(c, &tc, &e),
                   0); /* nvcc found or not: not an error */
  assert_string_equal(tc.arch, "sm_90a");
  assert_int_equal(config_set(c, "build", "arch", "sm_90", NULL), 0);
  assert_int_equal(tc_probe(c, &tc, &e), 0);
  assert_string_equal(tc.arch, "sm_90");
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    assert_int_equal(config_set(c, "build", "arch", bad[i], NULL), 0);
    assert_int_equal(tc_probe(c, &tc, &e), ERR_CONFIG);
    assert_non_null(strstr(e.msg, "[build] arch"));
    assert_non_null(strstr(e.msg, "sm_90a"));
  }
  config_free(c);
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
      cmocka_unit_test(test_arch_flag),
      cmocka_unit_test(test_arch_config),
      cmocka_unit_test(test_mkdirs_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
