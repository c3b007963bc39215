/* Unit tests for initfrom.c: what `cuco init --from` reads out of an
 * ordinary program (command-line sizes and their defaults, the time line,
 * the program's own check, kernels, libraries, library calls). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "initfrom.h"

static struct analyze_report *rep;
static struct initfrom_info info;

static void infer(const char *src)
{
  struct err e = {0, ""};

  analyze_report_free(rep);
  rep = analyze_source("t.cu", src, strlen(src), &e);
  if (!rep)
    fail_msg("%s", e.msg);
  if (initfrom_infer("t.cu", src, strlen(src), rep, &info, &e))
    fail_msg("%s", e.msg);
}

static const struct initfrom_arg *arg(const char *name)
{
  int i;
  for (i = 0; i < info.nargs; i++)
    if (!strcmp(info.args[i].name, name))
      return &info.args[i];
  fail_msg("no argument %s", name);
  return NULL;
}

static int has_call(const char *name)
{
  int i;
  for (i = 0; i < info.ncalls; i++)
    if (!strcmp(info.calls[i], name))
      return 1;
  return 0;
}

static void test_getopt(void **state)
{
  (void)state;
  infer("#include <cublas_v2.h>\n"
        "#define CK(x) do { if ((x) != 0) exit(1); } while (0)\n"
        "__global__ void k(float *p) { p[0] = 1; }\n"
        "__global__ void k2(float *p) { p[1] = 1; }\n"
        "\n"
        "int main(int argc, char **argv) {\n"
        "  int m = 1 << 12, n = 4096, gpus = 0, opt;\n"
        "  float alpha = 0.5f;\n"
        "  while ((opt = getopt(argc, argv, \"m:n:g:a:v\")) != -1) {\n"
        "    switch (opt) {\n"
        "    case 'm': m = atoi(optarg); break;\n" /* cuco: allow atoi */
        "    case 'n': n = (int)strtol(optarg, NULL, 10); break;\n"
        "    case 'g': sscanf(optarg, \"%d\", &gpus); break;\n"
        "    case 'a': alpha = atof(optarg); break;\n"
        "    case 'v': break;\n"
        "    }\n"
        "  }\n"
        "  CK(gettimeofday(0, 0));\n"
        "  printf(\"m=%d: avg %8.3f us per iter\\n\", m, 1.0);\n"
        "  printf(\"Result = %s\\n\", bad ? \"FAIL\" : \"PASS\");\n"
        "  return 0;\n"
        "}\n");
  assert_int_equal(info.nargs, 4);
  assert_string_equal(arg("m")->flag, "-m");
  assert_string_equal(arg("m")->def, "1<<12");
  assert_int_equal(arg("m")->defval, 4096);
  assert_int_equal(arg("n")->defval, 4096);
  assert_string_equal(arg("gpus")->flag, "-g");
  assert_int_equal(arg("gpus")->defval, 0); /* not a positive size */
  assert_string_equal(arg("alpha")->def, "0.5f");
  assert_int_equal(arg("alpha")->defval, 0);
  assert_string_equal(info.parse_style, "getopt");
  assert_string_equal(info.time_suffix, " us per iter");
  assert_true(info.time_factor > 0.0009 && info.time_factor < 0.0011);
  assert_string_equal(info.pass, "PASS");
  assert_string_equal(info.fail, "FAIL");
  /* two kernels with only a blank line between them: one block */
  assert_int_equal(info.nkernels, 1);
  assert_int_equal(info.kernel_lo[0], 3);
  assert_int_equal(info.kernel_hi[0], 4);
  assert_int_equal(info.nlibs, 1);
  assert_string_equal(info.libs[0], "cublas");
  /* calls of host code and of its macros; not its own functions, not
   * keywords, not what kernels call */
  assert_true(has_call("getopt") && has_call("exit") &&
              has_call("gettimeofday") && has_call("printf"));
  assert_false(has_call("CK") || has_call("main") || has_call("while") ||
               has_call("k"));
}

static void test_flags_and_positional(void **state)
{
  (void)state;
  infer("int main(int argc, char *argv[]) {\n"
        "  int seq = argc > 1 ? atoi(argv[1]) : 2048;\n" /* cuco: allow atoi */
        "  int heads = argc > 2 ? atoi(argv[2]) : 8;\n"  /* cuco: allow atoi */
        "  long tokens = 512, ngpus = 0;\n"
        "  if (argc > 3) ngpus = atoi(argv[3]);\n" /* cuco: allow atoi */
        "  for (int i = 4; i < argc; i++) {\n"
        "    if (!strcmp(argv[i], \"--tokens\") && i + 1 < argc)\n"
        "      tokens = atol(argv[++i]);\n" /* cuco: allow atol */
        "    else if (!strncmp(argv[i], \"--hidden=\", 9)) {\n"
        "      cfg.hidden = atoi(argv[i] + 9);\n" /* cuco: allow atoi */
        "    } else if (!strcmp(argv[i], \"-v\"))\n"
        "      verbose = 1;\n"
        "  }\n"
        "  std::cout << \"time \" << ms << \" ms/iter\" << std::endl;\n"
        "  return 0;\n"
        "}\n");
  assert_int_equal(arg("seq")->pos, 1);
  assert_int_equal(arg("seq")->defval, 2048);
  assert_int_equal(arg("heads")->pos, 2);
  assert_int_equal(arg("ngpus")->pos, 3);
  assert_string_equal(arg("ngpus")->def, "0");
  assert_string_equal(arg("tokens")->flag, "--tokens");
  assert_false(arg("tokens")->joined);
  assert_int_equal(arg("tokens")->defval, 512);
  assert_string_equal(arg("hidden")->flag, "--hidden");
  assert_true(arg("hidden")->joined);
  assert_string_equal(arg("hidden")->def, ""); /* none written */
  assert_int_equal(info.nargs, 5);             /* not -v: it sets no size */
  assert_string_equal(info.parse_style, "mixed");
  assert_string_equal(info.time_suffix, " ms/iter");
  assert_true(info.time_factor == 1);
  assert_string_equal(info.pass, ""); /* checks nothing */
}

/* A printf split over literals, as "%.3f " "ms/iter", is one format. */
static void test_joined_literals(void **state)
{
  (void)state;
  infer("int main() {\n"
        "  printf(\"init took %.1f ms\\n\", t0);\n"
        "  printf(\"x: %d gpus  %.3f \"\n"
        "         \"ms/iter\\n\", g, ms);\n"
        "  printf(\"check: %s\\n\", e ? \"FAILED\" : \"PASSED\");\n"
        "}\n");
  /* the per-iteration line beats the setup one */
  assert_string_equal(info.time_suffix, " ms/iter");
  assert_int_equal(info.time_line, 3);
  assert_string_equal(info.pass, "PASSED");
  assert_string_equal(info.fail, "FAILED");
  assert_int_equal(info.nargs, 0);
  assert_string_equal(info.parse_style, "");
}

static int teardown(void **state)
{
  (void)state;
  analyze_report_free(rep);
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_getopt),
      cmocka_unit_test(test_flags_and_positional),
      cmocka_unit_test(test_joined_literals),
  };
  return cmocka_run_group_tests(tests, NULL, teardown);
}
