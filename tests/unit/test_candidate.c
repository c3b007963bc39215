/* Unit tests for candidate.c: blocks, frozen text, forbidden calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"

static const char *seed = "#include \"rt.cuh\"\n"                   /* 1 */
                          "static int frozen_a = 1;\n"              /* 2 */
                          "// EVOLVE-BLOCK-START\n"                 /* 3 */
                          "__global__ void k(int *x) { *x = 1; }\n" /* 4 */
                          "// EVOLVE-BLOCK-END\n"                   /* 5 */
                          "int wl_step(struct wl_ctx *c) {\n"       /* 6 */
                          "  // EVOLVE-BLOCK-START\n"               /* 7 */
                          "  k<<<1, 1>>>(0);\n"                     /* 8 */
                          "  // EVOLVE-BLOCK-END\n"                 /* 9 */
                          "  return 0;\n"                           /* 10 */
                          "}\n";                                    /* 11 */

static void test_blocks(void **state)
{
  struct candidate_blocks bl;
  struct err e = {0, ""};
  char *t;
  (void)state;
  assert_int_equal(candidate_blocks(seed, &bl, &e), 0);
  assert_int_equal(bl.n, 2);
  assert_int_equal(bl.b[0].start_line, 3);
  assert_int_equal(bl.b[0].end_line, 5);
  assert_int_equal(bl.b[1].start_line, 7);
  t = candidate_block_text(seed, &bl, 1);
  assert_string_equal(t, "  k<<<1, 1>>>(0);\n");
  free(t);
  assert_null(candidate_block_text(seed, &bl, 2));
}

static void bad_blocks(const char *code, const char *want)
{
  struct candidate_blocks bl;
  struct err e = {0, ""};

  assert_int_equal(candidate_blocks(code, &bl, &e), ERR_CHECK);
  if (!strstr(e.msg, want))
    fail_msg("'%s' lacks '%s'", e.msg, want);
}

static void test_blocks_bad(void **state)
{
  (void)state;
  bad_blocks("a\n// EVOLVE-BLOCK-END\n", "line 2: EVOLVE-BLOCK-END without");
  bad_blocks("// EVOLVE-BLOCK-START\nx\n", "line 1: EVOLVE-BLOCK-START is "
                                           "never closed");
  bad_blocks("// EVOLVE-BLOCK-START\n// EVOLVE-BLOCK-START\n"
             "// EVOLVE-BLOCK-END\n// EVOLVE-BLOCK-END\n",
             "line 2: EVOLVE-BLOCK-START inside the block opened at line 1");
}

static void test_replace(void **state)
{
  const char *contents[2] = {"__global__ void k(int *x) { *x = 2; }\n",
                             "  k<<<2, 32>>>(0);"};
  struct err e = {0, ""};
  char *out;
  (void)state;
  out = candidate_replace_blocks(seed, contents, 2, &e);
  assert_non_null(out);
  assert_non_null(strstr(out, "*x = 2;"));
  assert_non_null(strstr(out, "  k<<<2, 32>>>(0);\n  // EVOLVE-BLOCK-END\n"));
  assert_int_equal(candidate_check_frozen(seed, out, &e), 0);
  free(out);
  assert_null(candidate_replace_blocks(seed, contents, 1, &e));
  assert_non_null(strstr(e.msg, "the code has 2 blocks"));
}

static void frozen_bad(const char *from, const char *to, const char *want)
{
  char cand[2048], *p;
  struct err e = {0, ""};

  snprintf(cand, sizeof(cand), "%s", seed);
  p = strstr(cand, from);
  assert_non_null(p);
  {
    char rest[2048];
    snprintf(rest, sizeof(rest), "%s", p + strlen(from));
    snprintf(p, sizeof(cand) - (size_t)(p - cand), "%s%s", to, rest);
  }
  assert_int_equal(candidate_check_frozen(seed, cand, &e), ERR_CHECK);
  if (!strstr(e.msg, want))
    fail_msg("'%s' lacks '%s'", e.msg, want);
}

static void test_frozen(void **state)
{
  (void)state;
  frozen_bad("frozen_a = 1", "frozen_a = 2",
             "differs from the seed at line 2: 'static int frozen_a = 2;' "
             "(seed line 2: 'static int frozen_a = 1;')");
  frozen_bad("  return 0;\n", "  return 0; \n", "at line 10:");
  /* an edit inside a block moves later line numbers: still reported in
   * the candidate's own numbering */
  frozen_bad("  k<<<1, 1>>>(0);\n",
             "  k<<<1, 1>>>(0);\n  x();\n  y();\n"
             "  // EVOLVE-BLOCK-END\n  z();\n  // EVOLVE-BLOCK-START\n",
             "3 EVOLVE blocks, the seed has 2");
  frozen_bad("  return 0;\n}\n", "  return 0;\n}\nint main() {}\n",
             "at line 12: 'int main() {}'");
  frozen_bad("// EVOLVE-BLOCK-END\nint wl", "// EVOLVE-BLOCK-END \nint wl",
             "at line 5:");
}

static void forbid(const char *block, int device, const char *want)
{
  char code[2048];
  struct err e = {0, ""};
  int rc;

  snprintf(code, sizeof(code),
           "int x;\n// EVOLVE-BLOCK-START\n%s// EVOLVE-BLOCK-END\n", block);
  rc = candidate_check_forbidden(code, device, &e);
  if (want == NULL) {
    if (rc)
      fail_msg("'%s' rejected: %s", block, e.msg);
    return;
  }
  if (rc != ERR_CHECK || !strstr(e.msg, want))
    fail_msg("'%s' -> rc %d '%s' lacks '%s'", block, rc, e.msg, want);
}

#define SYS_CALL "system(\"rm -rf /\");\n" /* cuco: allow system */

static void test_forbidden(void **state)
{
  (void)state;
  forbid("ncclAllGather(a, b, n, t, c, s);\n", 1,
         "line 3: forbidden use of 'ncclAllGather' (host collective");
  forbid("auto f = ncclAllReduce;\n", 1, "'ncclAllReduce'");
  forbid("ncclAllGather(a, b, n, t, c, s);\n", 0, NULL);
  forbid("// ncclAllGather(a) was here\n", 1, NULL);
  forbid("/* ncclSend(x)\n ncclRecv(y) */\n", 1, NULL);
  forbid("const char *s = \"ncclGroupStart()\";\n", 1, NULL);
  forbid("char q = '\"'; ncclGroupStart();\n", 1, "'ncclGroupStart'");
  forbid("x = 1;\n  ncclGroupEnd ();\n", 1, "line 4:");
  forbid("int myncclSend2(int);\n", 1, NULL);
  /* cuco: allow system */
  forbid(SYS_CALL, 0, "forbidden call 'system'");
  forbid("std::exit(0);\n", 0, "'exit'");
  forbid("FILE *f = fopen(\"RESULT.json\", \"w\");\n", 0, "'fopen'");
  forbid("int main(void) { return 0; }\n", 0, "'main'");
  forbid("int exit_code = 0; obj.open(1); p->kill(2);\n", 0, NULL);
  forbid("#include <cuda_bf16.h>\n", 0, NULL);
  forbid("#include \"../reference.cu\"\n", 0,
         "forbidden '#include \"...\"' inside an EVOLVE block");
  forbid("#define R \"reference.cu\"\n#include R\n", 0, "line 4: forbidden");
  forbid("#undef CUCO_CHUNK_BYTES\n", 0, "#undef of a CUCO_");
  forbid("#define CUCO_PARAM_x 4\n", 0, "may only get a default");
  forbid("#ifndef CUCO_PARAM_x\n#define CUCO_PARAM_x 4\n#endif\n", 0, NULL);
  forbid("int y; /* swallow the frozen text\n", 0, "ends inside a comment");
  forbid("#if 0\n", 0, "unbalanced #if/#endif");
  forbid("#endif\n#if 1\n", 0, "unbalanced #if/#endif");
}

/* A workload's own forbidden names: any use inside a block, not in
 * comments, literals or frozen text, not as part of a longer name. */
static void test_names(void **state)
{
  const char *names[] = {"ridx_h", "moe_route_gen"};
  const char *ok =
      "int ridx_h;\n// EVOLVE-BLOCK-START\n"
      "int my_ridx_h = 1; // ridx_h\nconst char *s = \"ridx_h\";\n"
      "// EVOLVE-BLOCK-END\n";
  const char *bad = "int ridx_h;\n// EVOLVE-BLOCK-START\nint a = 0;\n"
                    "int b = c->ridx_h[0];\n// EVOLVE-BLOCK-END\n";
  struct err e = {0, ""};
  (void)state;
  assert_int_equal(candidate_check_names(ok, names, 2, "why", &e), 0);
  assert_int_equal(candidate_check_names(bad, names, 2, "why", &e), ERR_CHECK);
  assert_string_equal(e.msg, "line 4: forbidden use of 'ridx_h' (why)");
  assert_int_equal(candidate_check_names(bad, names, 0, "why", &e), 0);
  assert_int_equal(
      candidate_check_names("x = moe_route_gen (1);\n", names, 2, "w", &e),
      ERR_CHECK);
  assert_non_null(strstr(e.msg, "line 1: forbidden use of 'moe_route_gen'"));
}

static void test_check(void **state)
{
  char *big;
  struct err e = {0, ""};
  char cand[2048];
  (void)state;
  assert_int_equal(candidate_check(seed, seed, 1, &e), 0);
  /* one more '{' in a block than the seed's block: captures frozen code */
  snprintf(cand, sizeof(cand), "%s", seed);
  {
    char *p = strstr(cand, "  k<<<1, 1>>>(0);\n");
    memcpy(p, "  if (1) {      \n", 17);
  }
  assert_int_equal(candidate_check(seed, cand, 1, &e), ERR_CHECK);
  assert_non_null(strstr(e.msg, "opens 1 more braces"));
  big = malloc(CANDIDATE_MAX_BYTES + 10);
  memset(big, 'x', CANDIDATE_MAX_BYTES + 9);
  big[CANDIDATE_MAX_BYTES + 9] = '\0';
  assert_int_equal(candidate_check(seed, big, 1, &e), ERR_TOOBIG);
  free(big);
  assert_int_equal(candidate_check(seed, "", 1, &e), ERR_CHECK);
}

/* Issue 47's static refusals: each block text replaces line 4 of the
 * seed; the message names the line and what was refused. */
static void test_static_refusals(void **state)
{
  static const struct {
    const char *block, *msg;
  } cases[] = {
      {"#include </etc/shadow>\n",
       "line 4: forbidden '#include' of an absolute"},
      {"#include <../../secret.h>\n",
       "line 4: forbidden '#include' of an absolute"},
      {"__asm__(\".inc\" \"bin \\\"/x\\\"\");\n", NULL}, /* joined: below */
      {"__asm__(\".incbin \\\"/etc/passwd\\\"\");\n",
       "line 4: forbidden assembler directive 'incbin'"},
      {"__asm__(\".section .init_array\");\n",
       "line 4: forbidden assembler directive 'init_array'"},
      {"__attribute__((constructor)) static void c(void) {}\n",
       "line 4: forbidden 'constructor'"},
      {"__attribute__((__destructor__)) static void d(void) {}\n",
       "line 4: forbidden '__destructor__'"},
      {"#define frozen_a 0\n",
       "line 4: forbidden #define of 'frozen_a', which the frozen text uses"},
      {"#undef wl_step\n",
       "line 4: forbidden #undef of 'wl_step', which the frozen text uses"},
      {"#define MY_TILE 64\n__global__ void k(int *x) { *x = MY_TILE; }\n",
       ""}, /* a macro of its own: fine */
      {"#include <cuda_fp16.h>\n__global__ void k(int *x) { *x = 1; }\n", ""},
  };
  struct err e = {0, ""};
  char cand[2048];
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *at = strstr(seed, "__global__ void k(int *x) { *x = 1; }\n");
    const char *rest = at + strlen("__global__ void k(int *x) { *x = 1; }\n");
    if (!cases[i].msg)
      continue; /* adjacent literals are the sandbox's (compiler's) job */
    snprintf(cand, sizeof(cand), "%.*s%s%s", (int)(at - seed), seed,
             cases[i].block, rest);
    e.msg[0] = '\0';
    if (!*cases[i].msg) {
      if (candidate_check(seed, cand, 1, &e))
        fail_msg("case %zu refused: %s", i, e.msg);
      continue;
    }
    assert_int_equal(candidate_check(seed, cand, 1, &e), ERR_CHECK);
    if (!strstr(e.msg, cases[i].msg))
      fail_msg("case %zu: %s", i, e.msg);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_blocks),    cmocka_unit_test(test_blocks_bad),
      cmocka_unit_test(test_replace),   cmocka_unit_test(test_frozen),
      cmocka_unit_test(test_forbidden), cmocka_unit_test(test_check),
      cmocka_unit_test(test_names),     cmocka_unit_test(test_static_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
