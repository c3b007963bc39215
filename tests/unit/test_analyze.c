/* Unit tests for cutok.c and analyze.c: exact findings on the tricky
 * inputs under tests/data/analyze/ and on small inline sources. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "cutok.h"

static struct analyze_report *load(const char *path)
{
  struct err e = {0, ""};
  struct analyze_report *r = analyze_file(path, &e);
  if (!r)
    fail_msg("%s", e.msg);
  return r;
}

/* The n-th op (0-based) named name, or fail. */
static const struct analyze_op *op_named(const struct analyze_report *r,
                                         const char *name, int n)
{
  size_t i;
  for (i = 0; i < r->nops; i++)
    if (!strcmp(r->ops[i].name, name) && n-- == 0)
      return &r->ops[i];
  fail_msg("no op %s", name);
  return NULL;
}

static int count_named(const struct analyze_report *r, const char *name)
{
  size_t i;
  int n = 0;
  for (i = 0; i < r->nops; i++)
    n += !strcmp(r->ops[i].name, name);
  return n;
}

static int has_flow(const struct analyze_report *r, const char *buf,
                    const char *from, const char *to)
{
  size_t i;
  for (i = 0; i < r->nflows; i++)
    if (!strcmp(r->flows[i].buffer, buf) &&
        !strcmp(r->ops[r->flows[i].producer].name, from) &&
        !strcmp(r->ops[r->flows[i].consumer].name, to))
      return 1;
  return 0;
}

static void test_lexer(void **state)
{
  static const char src[] =
      "#define X(a) \\\n  ncclSend(a)\n"
      "int f() { /* ( */ return g(\"(\", ')', R\"d()\")d\", 1'000, "
      "k<<<1, 2>>>(x)); }\n";
  struct cutok_list l;
  struct err e = {0, ""};
  char t[64];
  (void)state;
  assert_int_equal(cutok_lex(src, sizeof(src) - 1, &l, &e), 0);
  assert_int_equal(l.v[0].kind, CUTOK_PP);
  assert_int_equal(l.v[1].line, 3); /* continuation folded into line 1-2 */
  assert_string_equal(cutok_text(&l, 1, t, sizeof(t)), "int");
  /* "(" string, ')' char, raw string with )" inside, 1'000 one number */
  assert_int_equal(l.v[9].kind, CUTOK_STRING);
  assert_int_equal(l.v[11].kind, CUTOK_CHAR);
  assert_int_equal(l.v[13].kind, CUTOK_STRING);
  assert_string_equal(cutok_text(&l, 13, t, sizeof(t)), "R\"d()\")d\"");
  assert_string_equal(cutok_text(&l, 15, t, sizeof(t)), "1'000");
  assert_true(cutok_is(&l, 18, "<<<"));
  assert_true(cutok_is(&l, (size_t)l.v[18].match, ">>>"));
  assert_int_equal(l.v[8].match, (long)l.n - 3); /* g( ... ) */
  assert_int_equal(l.v[18].line, 3);
  assert_int_equal(l.v[18].col, 57);
  cutok_release(&l);
}

static void test_lexer_errors(void **state)
{
  struct cutok_list l;
  struct err e = {0, ""};
  (void)state;
  assert_int_equal(cutok_lex("int x;\n/* open", 14, &l, &e), ERR_PARSE);
  assert_string_equal(e.msg, "2:1: unterminated comment");
  cutok_release(&l);
  assert_int_equal(cutok_lex("f(\"abc\n", 7, &l, &e), ERR_PARSE);
  assert_string_equal(e.msg, "1:3: unterminated string literal");
  cutok_release(&l);
  assert_int_equal(cutok_lex("{ (a] }", 7, &l, &e), ERR_PARSE);
  assert_string_equal(e.msg, "1:5: ']' does not match the '(' opened at 1:3");
  cutok_release(&l);
  assert_int_equal(cutok_lex("void f() {\n g(1);\n", 18, &l, &e), ERR_PARSE);
  assert_string_equal(e.msg, "1:10: '{' is never closed");
  cutok_release(&l);
}

static void test_tricky(void **state)
{
  struct analyze_report *r = load("tests/data/analyze/tricky.cu");
  const struct analyze_op *o;
  (void)state;
  /* comment, string, raw string and #define bodies are not calls */
  assert_int_equal(count_named(r, "ncclBroadcast"), 0);
  assert_int_equal(count_named(r, "ncclGetErrorString"), 0);
  assert_int_equal(count_named(r, "ncclAllReduce"), 1);
  assert_int_equal(count_named(r, "ncclSend"), 1);
  assert_int_equal(analyze_host_comm_count(r), 4);

  o = op_named(r, "ncclAllReduce", 0);
  assert_int_equal(o->line, 48);
  assert_string_equal(o->via, "NCCLCHECK");
  assert_string_equal(o->comm, "world");
  assert_string_equal(o->stream, "s0");
  assert_int_equal(o->group, 0);
  assert_string_equal(o->reads[0], "y");
  assert_string_equal(o->writes[0], "y");

  o = op_named(r, "ncclSend", 0);
  assert_int_equal(o->group, 1);
  assert_string_equal(o->comm, "tp");
  assert_string_equal(o->stream, "s1");
  assert_string_equal(o->reads[0], "z");
  assert_string_equal(o->args[0], "z+p*n");
  assert_int_equal(op_named(r, "ncclRecv", 0)->group, 1);
  assert_int_equal(op_named(r, "ncclGroupEnd", 0)->group, 1);

  o = op_named(r, "ncclAllGather", 0);
  assert_int_equal(o->group, 0);
  assert_string_equal(o->via, "");
  assert_string_equal(o->stream, "s0");  /* the comment is not the arg */
  assert_string_equal(o->reads[0], "z"); /* through the cast */

  o = op_named(r, "produce", 0); /* template launch */
  assert_int_equal(o->kind, ANALYZE_LAUNCH);
  assert_string_equal(o->grid, "dim3(n/256)");
  assert_string_equal(o->stream, "s0");
  assert_int_equal(o->nwrites, 1);
  assert_string_equal(o->writes[0], "z");
  o = op_named(r, "consume", 0); /* writes b and acc (through an alias) */
  assert_int_equal(o->nwrites, 2);
  assert_string_equal(o->writes[0], "x");
  assert_string_equal(o->writes[1], "acc");

  o = op_named(r, "cublasSgemm", 0);
  assert_int_equal(o->kind, ANALYZE_GEMM);
  assert_string_equal(o->writes[0], "y");
  assert_string_equal(o->stream, "s0"); /* from cublasSetStream */

  assert_true(has_flow(r, "y", "cublasSgemm", "ncclAllReduce"));
  assert_true(has_flow(r, "z", "produce", "ncclSend"));
  assert_true(has_flow(r, "z", "produce", "ncclAllGather"));
  assert_true(has_flow(r, "w", "ncclRecv", "consume"));
  assert_int_equal(r->nflows, 4);
  analyze_report_free(r);
}

static void test_multi(void **state)
{
  struct analyze_report *r = load("tests/data/analyze/multi.cu");
  json_t *j, *comms;
  const struct analyze_op *o;
  (void)state;
  assert_int_equal(r->nfuncs, 4);
  assert_true(r->funcs[0].is_kernel);
  o = op_named(r, "ncclCommWindowRegister", 0);
  assert_int_equal(o->group, 1);
  assert_string_equal(o->comm, "comms[i]");
  o = op_named(r, "ncclReduceScatter", 0);
  assert_int_equal(o->group, 2);
  assert_string_equal(o->comm_key, "comms");
  o = op_named(r, "ncclBroadcast", 0);
  assert_int_equal(o->group, 0);
  assert_string_equal(o->comm_key, "sub");
  o = op_named(r, "fill", 0); /* cudaLaunchKernel((void *)fill, ...) */
  assert_int_equal(o->kind, ANALYZE_LAUNCH);
  assert_string_equal(o->grid, "dim3(1)");
  assert_string_equal(o->stream, "s[0]");
  assert_string_equal(o->via, "CUDACHECK");
  j = analyze_report_json(r);
  comms = json_object_get(j, "communicators");
  assert_int_equal(json_array_size(comms), 2);
  assert_string_equal(json_string_value(json_array_get(comms, 0)), "comms");
  assert_string_equal(json_string_value(json_array_get(comms, 1)), "sub");
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(j, "summary"), "collectives")),
                   2);
  json_decref(j);
  assert_true(has_flow(r, "out", "ncclReduceScatter", "ncclBroadcast"));
  analyze_report_free(r);
}

/* The workloads' own baselines and seed (runtime's gemm_allgather). */
static void test_workload_baselines(void **state)
{
  struct analyze_report *r = load("workloads/gemm_allgather/baseline.cu");
  const struct analyze_op *o;
  size_t i;
  int device = 0;
  (void)state;
  assert_int_equal(analyze_host_comm_count(r), 1);
  o = op_named(r, "ncclAllGather", 0);
  assert_string_equal(o->reads[0], "u->A");
  assert_string_equal(o->writes[0], "u->Ag");
  assert_string_equal(o->comm, "rt_comm(ctx)");
  assert_string_equal(o->stream, "st");
  assert_string_equal(o->via, "RT_NCCL");
  assert_int_equal(o->group, 0);
  assert_true(has_flow(r, "u->Ag", "ncclAllGather", "wl_gemm_run"));
  /* the GEMM's buffers are A, B, C: not the runtime context, the stream,
   * the cuBLASLt handle or the address of the host-side plan */
  o = op_named(r, "wl_gemm_run", 0);
  assert_non_null(o);
  assert_int_equal(o->nreads, 3);
  assert_int_equal(o->nwrites, 3);
  for (i = 0; i < (size_t)o->nreads; i++) {
    assert_string_not_equal(o->reads[i], "ctx");
    assert_string_not_equal(o->reads[i], "st");
    assert_string_not_equal(o->reads[i], "u->lt");
    assert_string_not_equal(o->writes[i], "st");
  }
  assert_string_equal(o->reads[0], "u->Ag");
  analyze_report_free(r);

  /* chunked all-gathers on a side stream; GEMMs read through aliases */
  r = load("workloads/gemm_allgather/baseline_overlap.cu");
  assert_int_equal(analyze_host_comm_count(r), 1);
  o = op_named(r, "ncclAllGather", 0);
  assert_string_equal(o->stream, "u->comm");
  assert_string_equal(o->writes[0], "u->Ag"); /* "Ag + off", Ag = u->Ag */
  assert_int_equal(count_named(r, "cudaStreamWaitEvent"), 3);
  assert_true(has_flow(r, "u->Ag", "ncclAllGather", "wl_gemm_run"));
  analyze_report_free(r);

  /* the device-initiated seed: no host collective, device API in kernels */
  r = load("workloads/gemm_allgather/seed.cu");
  assert_int_equal(analyze_host_comm_count(r), 0);
  for (i = 0; i < r->nops; i++)
    if (!strcmp(r->ops[i].category, "device")) {
      device++;
      assert_true(r->funcs[r->ops[i].func].is_kernel ||
                  r->funcs[r->ops[i].func].is_device);
    }
  assert_true(device > 0);
  assert_int_equal(count_named(r, "ncclCoopCta"), 0); /* tags are noise */
  analyze_report_free(r);
}

static void test_parse_error_named(void **state)
{
  struct err e = {0, ""};
  (void)state;
  assert_null(analyze_source("bad.cu", "void f() { g(); ", 16, &e));
  assert_int_equal(e.code, ERR_PARSE);
  assert_string_equal(e.msg, "bad.cu: 1:10: '{' is never closed");
  assert_null(analyze_file("/nonexistent/x.cu", &e));
  assert_int_equal(e.code, ERR_IO);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lexer),
      cmocka_unit_test(test_lexer_errors),
      cmocka_unit_test(test_tricky),
      cmocka_unit_test(test_multi),
      cmocka_unit_test(test_workload_baselines),
      cmocka_unit_test(test_parse_error_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
