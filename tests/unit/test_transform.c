/* Unit tests for transform_mark.c and transform_prompt.c: code
 * extraction, the markers-only check, rule-based EVOLVE blocks, prompts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "buf.h"
#include "candidate.h"
#include "directive.h"
#include "file.h"
#include "transform.h"
#include "workload.h"

static void test_extract(void **state)
{
  struct err e = {0, ""};
  char *c;
  (void)state;
  c = transform_extract_code("Here:\n```cuda\nint a;\n```\nand\n```\nx\n```\n",
                             1000, &e);
  assert_non_null(c);
  assert_string_equal(c, "int a;\n"); /* the longest block */
  free(c);
  /* a fence inside a line does not open a block */
  c = transform_extract_code("say ``` hi\n```c\nk();\n```", 1000, &e);
  assert_string_equal(c, "k();\n");
  free(c);
  assert_null(transform_extract_code("no code at all", 1000, &e));
  assert_int_equal(e.code, ERR_LLM);
  assert_null(transform_extract_code("```cuda\nint a;\n", 1000, &e));
  assert_int_equal(e.code, ERR_LLM); /* truncated answer */
  assert_null(transform_extract_code("```\n0123456789\n```", 5, &e));
  assert_int_equal(e.code, ERR_TOOBIG);
}

static void test_markers_only(void **state)
{
  struct err e = {0, ""};
  (void)state;
  assert_true(transform_same_but_markers(
      "a\nb\nc\n", "a\n// EVOLVE-BLOCK-START\nb\n  // EVOLVE-BLOCK-END\nc\n",
      &e));
  assert_false(transform_same_but_markers(
      "a\nb\n", "a\n// EVOLVE-BLOCK-START\nB\n// EVOLVE-BLOCK-END\n", &e));
  assert_string_equal(e.msg, "marking changed line 2: 'b' became 'B'");
  assert_false(transform_same_but_markers("a\nb\n", "a\n", &e));
  assert_string_equal(e.msg, "marking dropped the rest of the file at line 2");
  assert_false(transform_same_but_markers("a\n", "a\nextra\n", &e));
}

static char *slurp(const char *path)
{
  struct err e = {0, ""};
  char *s = file_read(path, 1u << 20, NULL, &e);
  if (!s)
    fail_msg("%s", e.msg);
  return s;
}

static void test_drop_host_only(void **state)
{
  char code[] = "// a\n#define RT_HOST_ONLY  // why\n#include \"rt.cuh\"\n"
                "  #define RT_HOST_ONLY\n#define RT_HOST_ONLYX 1\n"
                "// #define RT_HOST_ONLY\n#define RT_HOST_ONLY";
  char none[] = "#include \"rt.cuh\"\n";
  (void)state;
  transform_drop_host_only(code);
  assert_string_equal(code,
                      "// a\n#include \"rt.cuh\"\n"
                      "#define RT_HOST_ONLYX 1\n// #define RT_HOST_ONLY\n");
  transform_drop_host_only(none);
  assert_string_equal(none, "#include \"rt.cuh\"\n");
}

static void test_mark_rules(void **state)
{
  struct err e = {0, ""};
  char *code = slurp("tests/data/transform/src/stage2.cu");
  char *m = transform_mark_rules(code, &e);
  struct candidate_blocks bl;
  struct directive_set d;
  char *b0, *b1;
  (void)state;
  assert_non_null(m);
  assert_int_equal(candidate_blocks(m, &bl, &e), 0);
  assert_int_equal(bl.n, 2);
  b0 = candidate_block_text(m, &bl, 0);
  b1 = candidate_block_text(m, &bl, 1);
  /* block 1: the directives, then the kernel; block 2: wl_step */
  assert_true(!strncmp(b0, "// CUCO-DIRECTIVES backend=lsa", 30));
  assert_non_null(strstr(b0, "ag_push_kernel("));
  assert_null(strstr(b0, "wl_setup"));
  assert_true(!strncmp(b1, "extern \"C\" int wl_step(", 23));
  assert_null(strstr(b1, "wl_teardown"));
  assert_int_equal(directive_parse(m, &d, &e), 0);
  assert_true(d.has_line);
  assert_string_equal(d.placement, "deferred");
  assert_int_equal(candidate_check(m, m, 1, &e), 0);
  free(b0);
  free(b1);
  free(m);
  free(code);
  /* no wl_step: refused with a reason */
  assert_null(transform_mark_rules("__global__ void k() {}\n", &e));
  assert_int_equal(e.code, ERR_CHECK);
}

static void test_prompts(void **state)
{
  struct workload w;
  struct err e = {0, ""};
  struct buf b = BUF_INIT(1u << 20);
  char line[512];
  (void)state;
  memset(&w, 0, sizeof(w));
  snprintf(w.name, sizeof(w.name), "demo");
  w.space.chunk_max = 64ull << 20;
  w.nparams = 1;
  snprintf(w.params[0].name, sizeof(w.params[0].name), "comm_ctas");
  w.params[0].nchoices = 2;
  snprintf(w.params[0].choices[0], WORKLOAD_VALUE, "4");
  transform_default_directives(&w, line, sizeof(line));
  assert_string_equal(line, "// CUCO-DIRECTIVES backend=lsa placement=deferred"
                            " sync=global issuer=cta chunk=64MiB\n"
                            "// CUCO-PARAM comm_ctas=4\n");
  assert_int_equal(transform_prompt_stage(&b, 2, &w, "ANALYSIS\n", "CODE\n",
                                          "FAILED\n", "DIAG"),
                   0);
  assert_non_null(strstr(buf_str(&b), "stage 2 of 2"));
  assert_non_null(strstr(buf_str(&b), "chunk=64MiB"));
  assert_non_null(strstr(buf_str(&b), "DIAG"));
  assert_non_null(strstr(buf_str(&b), "```cuda\nFAILED\n```"));
  buf_reset(&b);
  assert_int_equal(transform_prompt_system(&b, ".", "{\"gpus\":{}}", &e), 0);
  assert_non_null(strstr(buf_str(&b), "ncclGetLsaPointer"));
  assert_non_null(strstr(buf_str(&b), "int wl_setup("));
  assert_non_null(strstr(buf_str(&b), "\"gpus\""));
  buf_release(&b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_extract),
      cmocka_unit_test(test_markers_only),
      cmocka_unit_test(test_drop_host_only),
      cmocka_unit_test(test_mark_rules),
      cmocka_unit_test(test_prompts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
