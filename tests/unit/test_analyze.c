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

static struct analyze_report *load_src(const char *src)
{
  struct err e = {0, ""};
  struct analyze_report *r = analyze_source("t.cu", src, strlen(src), &e);
  if (!r)
    fail_msg("%s", e.msg);
  return r;
}

static int has_key(char keys[][ANALYZE_TEXT], int n, const char *k)
{
  int i;
  for (i = 0; i < n; i++)
    if (!strcmp(keys[i], k))
      return 1;
  return 0;
}

#define READS(o, k) has_key((char(*)[ANALYZE_TEXT])(o)->reads, (o)->nreads, k)
#define WRITES(o, k)                                                          \
  has_key((char(*)[ANALYZE_TEXT])(o)->writes, (o)->nwrites, k)
#define SCALARS(o, k)                                                         \
  has_key((char(*)[ANALYZE_TEXT])(o)->scalars, (o)->nscalars, k)

static const struct analyze_flow *flow_of(const struct analyze_report *r,
                                          const char *buf, const char *from,
                                          int from_n, const char *to)
{
  size_t i;
  const struct analyze_op *p = op_named(r, from, from_n);
  for (i = 0; i < r->nflows; i++)
    if (!strcmp(r->flows[i].buffer, buf) &&
        &r->ops[r->flows[i].producer] == p &&
        !strcmp(r->ops[r->flows[i].consumer].name, to))
      return &r->flows[i];
  return NULL;
}

/* A kernel that updates a collective's result in place ("y[i] *= 2",
 * "acc[i] = acc[i] + x[i]") reads it: it is the collective's consumer.  A
 * collective whose send and receive buffers are one buffer is in place. */
static void test_in_place(void **state)
{
  static const char src[] =
      "__global__ void scale(float *y, int n)\n"
      "{ int i = threadIdx.x; if (i < n) y[i] *= 2.0f; }\n"
      "__global__ void addto(float *acc, const float *x, int n)\n"
      "{ int i = threadIdx.x; acc[i] = acc[i] + x[i]; }\n"
      "__global__ void put(float *out, const float *in, int n)\n"
      "{ out[threadIdx.x * n] = in[threadIdx.x]; }\n"
      "int main() {\n"
      "  float *d_y, *d_x; int n = 1024, rank = 0;\n"
      "  cudaMalloc(&d_y, n * sizeof(float));\n"
      "  cudaMalloc((void **)&d_x, n * sizeof(float));\n"
      "  ncclAllReduce(d_x, d_y, n, ncclFloat, ncclSum, comm, s);\n"
      "  scale<<<1, 256, 0, s>>>(d_y, n);\n"
      "  ncclAllGather(d_x + rank * n, d_x, n, ncclFloat, comm, s);\n"
      "  addto<<<1, 256, 0, s>>>(d_x, d_y, n);\n"
      "  ncclAllReduce(d_x, d_x, n, ncclFloat, ncclSum, comm, s);\n"
      "  put<<<1, 256, 0, s>>>(d_y, d_x, n);\n"
      "  return 0;\n"
      "}\n";
  struct analyze_report *r = load_src(src);
  const struct analyze_op *o;
  (void)state;
  o = op_named(r, "scale", 0);
  assert_true(READS(o, "d_y"));
  assert_true(WRITES(o, "d_y"));
  assert_true(o->in_place);
  assert_non_null(flow_of(r, "d_y", "ncclAllReduce", 0, "scale"));
  o = op_named(r, "addto", 0);
  assert_true(READS(o, "d_x") && WRITES(o, "d_x") && READS(o, "d_y"));
  assert_false(WRITES(o, "d_y"));
  assert_non_null(flow_of(r, "d_x", "ncclAllGather", 0, "addto"));
  /* out[i * n] = ...: a store only, n is no buffer */
  o = op_named(r, "put", 0);
  assert_true(WRITES(o, "d_y"));
  assert_false(READS(o, "d_y"));
  assert_false(o->in_place);
  assert_non_null(flow_of(r, "d_x", "ncclAllReduce", 1, "put"));
  /* in-place collectives: the same buffer, or the all-gather idiom */
  assert_false(op_named(r, "ncclAllReduce", 0)->in_place);
  assert_true(op_named(r, "ncclAllGather", 0)->in_place);
  assert_true(op_named(r, "ncclAllReduce", 1)->in_place);
  assert_non_null(flow_of(r, "d_x", "addto", 0, "ncclAllReduce"));
  analyze_report_free(r);
}

/* Values (sizes, scalars, constants, streams) passed to a kernel are not
 * buffers; pointers that cudaMalloc allocates are. */
static void test_scalars(void **state)
{
  static const char src[] =
      "#define NB 64\n"
      "struct state { float *y; long long n; };\n"
      "__global__ void k(float *p, size_t count, float a)\n"
      "{ p[threadIdx.x] = a * count; }\n"
      "void run(struct state *st, cudaStream_t s, float *out) {\n"
      "  int tokens = 4096, hidden = 2048;\n"
      "  float alpha = 0.5f;\n"
      "  size_t count = (size_t)tokens * hidden;\n"
      "  float *d_x;\n"
      "  cudaMalloc(&d_x, count * sizeof(float));\n"
      "  k<<<NB, 256, 0, s>>>(d_x, count, alpha);\n"
      "  ext_kernel<<<1, 32, 0, s>>>(st->y, st->n, tokens * hidden, NB, s);\n"
      "  helper(out, hidden, alpha);\n"
      "  ncclAllGather(d_x, out, count, ncclFloat, comm, s);\n"
      "}\n";
  struct analyze_report *r = load_src(src);
  const struct analyze_op *o;
  (void)state;
  o = op_named(r, "k", 0);
  assert_true(WRITES(o, "d_x"));
  assert_false(READS(o, "count") || WRITES(o, "count"));
  assert_true(SCALARS(o, "count") && SCALARS(o, "alpha"));
  /* a kernel defined elsewhere: by the arguments' declarations */
  o = op_named(r, "ext_kernel", 0);
  assert_true(READS(o, "st->y") && WRITES(o, "st->y"));
  assert_true(SCALARS(o, "st->n") && SCALARS(o, "tokens") &&
              SCALARS(o, "NB") && SCALARS(o, "s"));
  assert_int_equal(o->nreads, 1);
  assert_int_equal(o->nwrites, 1);
  assert_int_equal(analyze_value_kind(r, "d_x"), ANALYZE_VAL_BUFFER);
  assert_int_equal(analyze_value_kind(r, "st->y"), ANALYZE_VAL_BUFFER);
  assert_int_equal(analyze_value_kind(r, "hidden"), ANALYZE_VAL_SCALAR);
  assert_int_equal(analyze_value_kind(r, "NB"), ANALYZE_VAL_SCALAR);
  assert_int_equal(analyze_value_kind(r, "s"), ANALYZE_VAL_OTHER);
  assert_int_equal(analyze_value_kind(r, "nowhere"), ANALYZE_VAL_UNKNOWN);
  assert_int_equal(r->nbufs, 1);
  assert_string_equal(r->bufs[0].name, "d_x");
  assert_string_equal(r->bufs[0].alloc, "cudaMalloc");
  assert_string_equal(r->bufs[0].size, "count*sizeof(float)");
  analyze_report_free(r);
}

/* In a loop, what a receive writes is read by the next iteration's kernel
 * (a ring): the consumer comes first in the text. */
static void test_loop_carried(void **state)
{
  static const char src[] =
      "__global__ void attn(const float *kv, float *o, int n)\n"
      "{ o[threadIdx.x] += kv[threadIdx.x]; }\n"
      "void ring(float *kv[2], float *o, int steps, int n, ncclComm_t c,\n"
      "          cudaStream_t s, int next, int prev) {\n"
      "  for (int step = 0; step < steps; step++) {\n"
      "    int cur = step & 1;\n"
      "    attn<<<1, 128, 0, s>>>(kv[cur], o, n);\n"
      "    ncclGroupStart();\n"
      "    ncclSend(kv[cur], n, ncclFloat, next, c, s);\n"
      "    ncclRecv(kv[cur ^ 1], n, ncclFloat, prev, c, s);\n"
      "    ncclGroupEnd();\n"
      "  }\n"
      "}\n"
      "void ring2(float *a, float *b, int n, ncclComm_t c, cudaStream_t s) {\n"
      "  float *cur = a, *nxt = b;\n"
      "  for (int i = 0; i < 4; i++) {\n"
      "    attn<<<1, 128, 0, s>>>(cur, b, n);\n"
      "    ncclSend(cur, n, ncclFloat, 1, c, s);\n"
      "    ncclRecv(nxt, n, ncclFloat, 0, c, s);\n"
      "    std::swap(cur, nxt);\n"
      "  }\n"
      "}\n";
  struct analyze_report *r = load_src(src);
  const struct analyze_flow *f;
  (void)state;
  assert_true(op_named(r, "attn", 0)->in_place); /* o += ... */
  f = flow_of(r, "kv", "ncclRecv", 0, "attn");
  assert_non_null(f);
  assert_true(f->carried);
  f = flow_of(r, "a", "ncclRecv", 1, "attn");
  assert_non_null(f);
  assert_true(f->carried);
  analyze_report_free(r);
}

/* One count of the communication, for analyze's summary and init. */
static void test_comm_count(void **state)
{
  struct analyze_report *r = load("tests/data/analyze/tricky.cu");
  struct analyze_counts c;
  char phrase[96];
  json_t *j;
  (void)state;
  analyze_count(r, &c);
  assert_int_equal(c.collectives, 2);
  assert_int_equal(c.p2p, 2);
  assert_int_equal(analyze_host_comm_count(r), 4);
  assert_string_equal(analyze_comm_phrase(r, phrase, sizeof(phrase)),
                      "2 collectives, 2 send/recv");
  j = analyze_report_json(r);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(j, "summary"), "comm_calls")),
                   4);
  json_decref(j);
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
      cmocka_unit_test(test_in_place),
      cmocka_unit_test(test_scalars),
      cmocka_unit_test(test_loop_carried),
      cmocka_unit_test(test_comm_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
