/* Unit tests for patch.c: SEARCH/REPLACE (exact, whitespace-tolerant,
 * unmatched, malformed), full rewrites, crossover, line setting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "patch.h"

static const char *prog = "#include <x.h>\n"
                          "int frozen(void) { return 1; }\n"
                          "// EVOLVE-BLOCK-START\n"
                          "// CUCO-DIRECTIVES backend=lsa chunk=64KiB\n"
                          "// CUCO-PARAM comm_ctas=2\n"
                          "int f(int x)\n"
                          "{\n"
                          "    int y = x * 2;\n"
                          "    return y;\n"
                          "}\n"
                          "// EVOLVE-BLOCK-END\n"
                          "int tail(void) { return 2; }\n";

static void test_blocks(void **state)
{
  struct patch_block b[4];
  struct err e = {0, ""};
  (void)state;
  assert_int_equal(patch_blocks(prog, b, 4, &e), 1);
  assert_int_equal(strncmp(prog + b[0].start, "// CUCO-DIRECTIVES", 18), 0);
  assert_int_equal(strncmp(prog + b[0].end, "// EVOLVE-BLOCK-END", 19), 0);
  assert_int_equal(patch_blocks("int x;\n", b, 4, &e), ERR_PARSE);
  assert_int_equal(
      patch_blocks("// EVOLVE-BLOCK-START\n// EVOLVE-BLOCK-START\n", b, 4, &e),
      ERR_PARSE);
  assert_int_equal(patch_blocks("// EVOLVE-BLOCK-END\n", b, 4, &e), ERR_PARSE);
  assert_int_equal(patch_blocks("// EVOLVE-BLOCK-START\nx\n", b, 4, &e),
                   ERR_PARSE);
}

static void test_diff_exact(void **state)
{
  struct patch_stats st;
  struct err e = {0, ""};
  char *out = NULL;
  const char *d = "I will triple it.\n"
                  "<<<<<<< SEARCH\n"
                  "    int y = x * 2;\n"
                  "=======\n"
                  "    int y = x * 3;\n"
                  ">>>>>>> REPLACE\n";
  (void)state;
  assert_int_equal(patch_apply_diff(prog, d, &out, &st, &e), 0);
  assert_non_null(strstr(out, "int y = x * 3;"));
  assert_null(strstr(out, "x * 2"));
  assert_int_equal(st.exact, 1);
  assert_int_equal(st.whitespace, 0);
  free(out);
}

static void test_diff_line_anchored(void **state)
{
  struct patch_stats st;
  struct err e = {0, ""};
  char *out = NULL;
  /* "return y;" occurs mid-line; the SEARCH without indentation must go
   * through the whitespace-tolerant path and keep the indentation */
  const char *d = "<<<<<<< SEARCH\nreturn y;\n=======\nreturn y + 1;\n"
                  ">>>>>>> REPLACE\n";
  (void)state;
  assert_int_equal(patch_apply_diff(prog, d, &out, &st, &e), 0);
  assert_int_equal(st.exact, 0);
  assert_int_equal(st.whitespace, 1);
  assert_non_null(strstr(out, "\n    return y + 1;\n}\n"));
  free(out);
}

static void test_diff_whitespace_reindent(void **state)
{
  struct patch_stats st;
  struct err e = {0, ""};
  char *out = NULL;
  /* the model dropped the indentation */
  const char *d = "<<<<<<< SEARCH\n"
                  "int y = x * 2;\n"
                  "return y;\n"
                  "=======\n"
                  "int y = x * 4;\n"
                  "if (y > 8)\n"
                  "  y--;\n"
                  "return y;\n"
                  ">>>>>>> REPLACE\n";
  (void)state;
  assert_int_equal(patch_apply_diff(prog, d, &out, &st, &e), 0);
  assert_int_equal(st.whitespace, 1);
  assert_non_null(strstr(out, "{\n    int y = x * 4;\n    if (y > 8)\n"
                              "      y--;\n    return y;\n}\n"));
  free(out);
}

static void test_diff_unmatched_and_outside(void **state)
{
  struct err e = {0, ""};
  char *out = NULL;
  const char *d = "<<<<<<< SEARCH\n"
                  "    int z = x * 2;\n"
                  "=======\n"
                  "    int z = 0;\n"
                  ">>>>>>> REPLACE\n";
  /* frozen text must not be patched even though it matches */
  const char *frozen = "<<<<<<< SEARCH\n"
                       "int frozen(void) { return 1; }\n"
                       "=======\n"
                       "int frozen(void) { return 0; }\n"
                       ">>>>>>> REPLACE\n";
  (void)state;
  assert_int_equal(patch_apply_diff(prog, d, &out, NULL, &e), ERR_PARSE);
  assert_null(out);
  assert_non_null(strstr(e.msg, "SEARCH block 1 of 1 matches nothing"));
  assert_non_null(strstr(e.msg, "int z = x * 2;"));
  assert_int_equal(patch_apply_diff(prog, frozen, &out, NULL, &e), ERR_PARSE);
  assert_non_null(strstr(e.msg, "int frozen(void)"));
}

static void test_diff_malformed(void **state)
{
  struct err e = {0, ""};
  char *out = NULL;
  (void)state;
  assert_int_equal(patch_apply_diff(prog, "just words", &out, NULL, &e),
                   ERR_PARSE);
  assert_non_null(strstr(e.msg, "no SEARCH/REPLACE block"));
  assert_int_equal(patch_apply_diff(prog,
                                    "<<<<<<< SEARCH\nint y\n>>>>>>> REPLACE\n",
                                    &out, NULL, &e),
                   ERR_PARSE);
  assert_non_null(strstr(e.msg, "no ======= line"));
  assert_int_equal(patch_apply_diff(prog, "<<<<<<< SEARCH\na\n=======\nb\n",
                                    &out, NULL, &e),
                   ERR_PARSE);
  assert_non_null(strstr(e.msg, "not closed"));
  /* 8-character markers are not markers */
  assert_int_equal(patch_apply_diff(prog,
                                    "<<<<<<<< SEARCH\na\n========\nb\n"
                                    ">>>>>>>> REPLACE\n",
                                    &out, NULL, &e),
                   ERR_PARSE);
  assert_null(out);
}

static void test_diff_empty_search_appends(void **state)
{
  struct err e = {0, ""};
  char *out = NULL;
  (void)state;
  assert_int_equal(patch_apply_diff(prog,
                                    "<<<<<<< SEARCH\n=======\n"
                                    "int g(void) { return 7; }\n"
                                    ">>>>>>> REPLACE\n",
                                    &out, NULL, &e),
                   0);
  assert_non_null(
      strstr(out, "}\nint g(void) { return 7; }\n// EVOLVE-BLOCK-END\n"));
  free(out);
}

static void test_full_rewrite(void **state)
{
  struct err e = {0, ""};
  char *out = NULL;
  const char *t = "New design.\n```c\n"
                  "// CUCO-DIRECTIVES backend=lsa chunk=1MiB\n"
                  "int f(int x) { return x << 1; }\n```\n";
  const char *with_markers = "```cuda\nint frozen_changed;\n"
                             "// EVOLVE-BLOCK-START\nint f(int x);\n"
                             "// EVOLVE-BLOCK-END\nint junk;\n```\n";
  (void)state;
  assert_int_equal(patch_apply_full(prog, t, &out, &e), 0);
  assert_non_null(strstr(out, "int frozen(void) { return 1; }\n"
                              "// EVOLVE-BLOCK-START\n"
                              "// CUCO-DIRECTIVES backend=lsa chunk=1MiB\n"
                              "int f(int x) { return x << 1; }\n"
                              "// EVOLVE-BLOCK-END\nint tail"));
  free(out);
  /* with markers: only the block contents are taken, frozen text stays */
  assert_int_equal(patch_apply_full(prog, with_markers, &out, &e), 0);
  assert_null(strstr(out, "frozen_changed"));
  assert_null(strstr(out, "junk"));
  assert_non_null(strstr(out, "START\nint f(int x);\n// EVOLVE-BLOCK-END"));
  free(out);
  assert_int_equal(patch_apply_full(prog, "no code here", &out, &e),
                   ERR_PARSE);
  assert_non_null(strstr(e.msg, "no fenced code block"));
  assert_int_equal(patch_apply_full(prog, "```c\nint x;\n", &out, &e),
                   ERR_PARSE);
  assert_non_null(strstr(e.msg, "not closed"));
}

static void test_crossover(void **state)
{
  const char *a = "h\n// EVOLVE-BLOCK-START\nA1\n// EVOLVE-BLOCK-END\nm\n"
                  "// EVOLVE-BLOCK-START\nA2\n// EVOLVE-BLOCK-END\nt\n";
  const char *b = "h\n// EVOLVE-BLOCK-START\nB1\n// EVOLVE-BLOCK-END\nm\n"
                  "// EVOLVE-BLOCK-START\nB2\n// EVOLVE-BLOCK-END\nt\n";
  const char *p2 = "#include <x.h>\n"
                   "int frozen(void) { return 1; }\n"
                   "// EVOLVE-BLOCK-START\n"
                   "// CUCO-DIRECTIVES backend=lsa chunk=4MiB\n"
                   "// CUCO-PARAM comm_ctas=8\n"
                   "int f(int x) { return 0; }\n"
                   "// EVOLVE-BLOCK-END\n"
                   "int tail(void) { return 2; }\n";
  struct err e = {0, ""};
  char *out = NULL;
  (void)state;
  assert_int_equal(patch_crossover(a, b, 2, &out, &e), 0);
  assert_string_equal(out, "h\n// EVOLVE-BLOCK-START\nA1\n// "
                           "EVOLVE-BLOCK-END\nm\n// EVOLVE-BLOCK-START\nB2\n"
                           "// EVOLVE-BLOCK-END\nt\n");
  free(out);
  assert_int_equal(patch_crossover(prog, p2, 0, &out, &e), 0);
  assert_non_null(strstr(out, "chunk=4MiB\n// CUCO-PARAM comm_ctas=8\n"
                              "int f(int x)\n{\n"));
  free(out);
  assert_int_equal(patch_crossover(a, prog, 1, &out, &e), ERR_PARSE);
}

static void test_set_line_and_rationale(void **state)
{
  struct err e = {0, ""};
  char *out = NULL, *r;
  (void)state;
  assert_int_equal(patch_set_line(prog, "// CUCO-PARAM",
                                  "// CUCO-PARAM comm_ctas=16", &out, &e),
                   0);
  assert_non_null(strstr(out, "\n// CUCO-PARAM comm_ctas=16\nint f"));
  free(out);
  assert_int_equal(patch_set_line("// EVOLVE-BLOCK-START\nx\n"
                                  "// EVOLVE-BLOCK-END\n",
                                  "// CUCO-PARAM", "// CUCO-PARAM a=1", &out,
                                  &e),
                   0);
  assert_string_equal(out, "// EVOLVE-BLOCK-START\n// CUCO-PARAM a=1\nx\n"
                           "// EVOLVE-BLOCK-END\n");
  free(out);
  r = patch_extract_rationale("  Directives: chunk=1MiB because X.\n\n```c\n"
                              "code\n```\n",
                              1000);
  assert_string_equal(r, "Directives: chunk=1MiB because X.");
  free(r);
  r = patch_extract_rationale("abcdef", 3);
  assert_string_equal(r, "abc");
  free(r);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_blocks),
      cmocka_unit_test(test_diff_exact),
      cmocka_unit_test(test_diff_line_anchored),
      cmocka_unit_test(test_diff_whitespace_reindent),
      cmocka_unit_test(test_diff_unmatched_and_outside),
      cmocka_unit_test(test_diff_malformed),
      cmocka_unit_test(test_diff_empty_search_appends),
      cmocka_unit_test(test_full_rewrite),
      cmocka_unit_test(test_crossover),
      cmocka_unit_test(test_set_line_and_rationale),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
