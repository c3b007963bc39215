/* analyze.c - find communication, compute and synchronisation in CUDA
 * source (see analyze.h).  Output formatting is in analyze_out.c. */
#include "analyze.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cutok.h"
#include "file.h"

#define MAX_OPS   20000
#define MAX_FUNCS 4000

/* Argument positions of the NCCL host API (nccl.h 2.28); -1 = none. */
struct nccl_sig {
  const char *name;
  const char *category;
  int send, recv, comm, stream;
  int comm_is_out; /* comm argument is written (&comm) */
};

static const struct nccl_sig nccl_sigs[] = {
    {"ncclAllGather", "collective", 0, 1, 4, 5, 0},
    {"ncclAllReduce", "collective", 0, 1, 5, 6, 0},
    {"ncclReduceScatter", "collective", 0, 1, 5, 6, 0},
    {"ncclBroadcast", "collective", 0, 1, 5, 6, 0},
    {"ncclBcast", "collective", 0, 0, 4, 5, 0},
    {"ncclReduce", "collective", 0, 1, 6, 7, 0},
    {"ncclAlltoAll", "collective", 0, 1, 4, 5, 0},
    {"ncclGather", "collective", 0, 1, 5, 6, 0},
    {"ncclScatter", "collective", 0, 1, 5, 6, 0},
    {"ncclSend", "p2p", 0, -1, 4, 5, 0},
    {"ncclRecv", "p2p", -1, 0, 4, 5, 0},
    {"ncclGroupStart", "group", -1, -1, -1, -1, 0},
    {"ncclGroupEnd", "group", -1, -1, -1, -1, 0},
    {"ncclCommInitRank", "init", -1, -1, 0, -1, 1},
    {"ncclCommInitRankConfig", "init", -1, -1, 0, -1, 1},
    {"ncclCommInitRankScalable", "init", -1, -1, 0, -1, 1},
    {"ncclCommInitAll", "init", -1, -1, 0, -1, 1},
    {"ncclCommSplit", "init", -1, -1, 0, -1, 0},
    {"ncclCommShrink", "init", -1, -1, 0, -1, 0},
    {"ncclCommWindowRegister", "window", 1, -1, 0, -1, 0},
    {"ncclCommWindowDeregister", "window", -1, -1, 0, -1, 0},
    {"ncclCommRegister", "window", 1, -1, 0, -1, 0},
    {"ncclCommDeregister", "window", -1, -1, 0, -1, 0},
    {"ncclMemAlloc", "memory", -1, -1, -1, -1, 0},
    {"ncclMemFree", "memory", -1, -1, -1, -1, 0},
    {"ncclDevCommCreate", "devcomm", -1, -1, 0, -1, 0},
    {"ncclDevCommDestroy", "devcomm", -1, -1, 0, -1, 0},
    {"ncclCommDestroy", "teardown", -1, -1, 0, -1, 0},
    {"ncclCommFinalize", "teardown", -1, -1, 0, -1, 0},
    {"ncclCommAbort", "teardown", -1, -1, 0, -1, 0},
    {"ncclCommRevoke", "teardown", -1, -1, 0, -1, 0},
    {"ncclGetUniqueId", "query", -1, -1, -1, -1, 0},
    {"ncclGetVersion", "query", -1, -1, -1, -1, 0},
    {"ncclCommCount", "query", -1, -1, 0, -1, 0},
    {"ncclCommUserRank", "query", -1, -1, 0, -1, 0},
    {"ncclCommCuDevice", "query", -1, -1, 0, -1, 0},
    {"ncclCommGetAsyncError", "query", -1, -1, 0, -1, 0},
    {"ncclGetErrorString", "query", -1, -1, -1, -1, 0},
    {"ncclGetLastError", "query", -1, -1, -1, -1, 0},
};

/* CUDA runtime calls: kind, argument written (-1), stream argument (-1). */
struct cuda_sig {
  const char *name;
  enum analyze_kind kind;
  int write, read, stream;
};

static const struct cuda_sig cuda_sigs[] = {
    {"cudaMemcpy", ANALYZE_COPY, 0, 1, -1},
    {"cudaMemcpyAsync", ANALYZE_COPY, 0, 1, 4},
    {"cudaMemcpy2DAsync", ANALYZE_COPY, 0, 2, 7},
    {"cudaMemcpyPeerAsync", ANALYZE_COPY, 0, 2, 5},
    {"cudaMemset", ANALYZE_COPY, 0, -1, -1},
    {"cudaMemsetAsync", ANALYZE_COPY, 0, -1, 3},
    {"cudaMemset2DAsync", ANALYZE_COPY, 0, -1, 5},
    {"cudaEventRecord", ANALYZE_EVENT, -1, -1, 1},
    {"cudaEventRecordWithFlags", ANALYZE_EVENT, -1, -1, 1},
    {"cudaStreamWaitEvent", ANALYZE_EVENT, -1, -1, 0},
    {"cudaStreamSynchronize", ANALYZE_SYNC, -1, -1, 0},
    {"cudaDeviceSynchronize", ANALYZE_SYNC, -1, -1, -1},
    {"cudaEventSynchronize", ANALYZE_SYNC, -1, -1, -1},
    {"cudaLaunchKernel", ANALYZE_LAUNCH, -1, -1, 5},
    {"cudaLaunchCooperativeKernel", ANALYZE_LAUNCH, -1, -1, 5},
};

/* cuBLAS GEMMs: output argument and (Lt only) stream argument. */
struct blas_sig {
  const char *name;
  int a, b, c, stream;
};

static const struct blas_sig blas_sigs[] = {
    {"cublasGemmEx", 7, 10, 14, -1},
    {"cublasSgemm", 7, 9, 12, -1},
    {"cublasDgemm", 7, 9, 12, -1},
    {"cublasHgemm", 7, 9, 12, -1},
    {"cublasSgemm_v2", 7, 9, 12, -1},
    {"cublasGemmStridedBatchedEx", 7, 11, 16, -1},
    {"cublasGemmBatchedEx", 7, 10, 14, -1},
    {"cublasSgemmStridedBatched", 7, 10, 14, -1},
    {"cublasHgemmStridedBatched", 7, 10, 14, -1},
    {"cublasLtMatmul", 3, 5, 10, 15},
};

struct ctx {
  const struct cutok_list *l;
  struct analyze_report *r;
  struct err *e;
  int group_depth, group_next, group_cur;
};

static int tok_ident(const struct cutok_list *l, size_t i)
{
  return i < l->n && l->v[i].kind == CUTOK_IDENT;
}

static int tok_is(const struct cutok_list *l, size_t i, const char *s)
{
  return cutok_is(l, i, s);
}

static int is_keyword(const struct cutok_list *l, size_t i)
{
  static const char *const kw[] = {
      "if", "for",  "while", "switch", "return", "sizeof", "else",
      "do", "case", "new",   "delete", "throw",  "catch",  "decltype"};
  size_t k;
  for (k = 0; k < sizeof(kw) / sizeof(kw[0]); k++)
    if (tok_is(l, i, kw[k]))
      return 1;
  return 0;
}

/* Split the tokens strictly between open and its match at top-level
 * commas; starts[k]..ends[k] is argument k.  Returns the count. */
static int split_args(const struct cutok_list *l, size_t open, size_t *starts,
                      size_t *ends, int max)
{
  size_t close = (size_t)l->v[open].match, i;
  int n = 0;

  if (close == open + 1)
    return 0;
  starts[0] = open + 1;
  for (i = open + 1; i < close; i++) {
    if (l->v[i].match > (long)i && l->v[i].kind == CUTOK_PUNCT) {
      i = (size_t)l->v[i].match;
      continue;
    }
    if (tok_is(l, i, ",")) {
      if (n + 1 < max) {
        ends[n++] = i;
        starts[n] = i + 1;
      }
    }
  }
  ends[n++] = close;
  return n;
}

/* The buffer an argument expression names: casts, &, * stripped; the
 * member chain "ctx->C" kept; subscripts and offsets dropped.  "" for
 * literals and null pointers. */
static void buffer_key(const struct cutok_list *l, size_t a, size_t b,
                       char *out, size_t n)
{
  size_t i = a, j;

  out[0] = '\0';
  for (;;) {
    if (i >= b)
      return;
    if (tok_is(l, i, "&") || tok_is(l, i, "*") || tok_is(l, i, "+")) {
      i++;
      continue;
    }
    /* C cast "(T *)x": a parenthesised group followed by more tokens */
    if (tok_is(l, i, "(") && l->v[i].match > 0 &&
        (size_t)l->v[i].match + 1 < b) {
      size_t m = (size_t)l->v[i].match;
      if (tok_is(l, m - 1, "*") || tok_is(l, m - 1, "&") ||
          (m == i + 2 && tok_ident(l, i + 1))) {
        i = m + 1;
        continue;
      }
      i++; /* "(x + off)": look inside */
      continue;
    }
    if (tok_is(l, i, "(")) {
      i++;
      continue;
    }
    /* static_cast<T*>(x), reinterpret_cast<...>(x) */
    if (tok_ident(l, i) && tok_is(l, i + 1, "<")) {
      for (j = i + 1; j < b && !tok_is(l, j, "("); j++)
        ;
      if (j < b && (tok_is(l, j - 1, ">") || tok_is(l, j - 1, ">>"))) {
        i = j + 1;
        continue;
      }
    }
    break;
  }
  if (!tok_ident(l, i) || tok_is(l, i, "NULL") || tok_is(l, i, "nullptr") ||
      tok_is(l, i, "sizeof"))
    return;
  j = i + 1;
  while (j + 1 < b && (tok_is(l, j, ".") || tok_is(l, j, "->")) &&
         tok_ident(l, j + 1))
    j += 2;
  cutok_span(l, i, j, out, n);
}

static int add_key(char keys[][ANALYZE_TEXT], int *nk, const char *k)
{
  int i;
  if (!*k || *nk >= ANALYZE_MAX_BUFS)
    return 0;
  for (i = 0; i < *nk; i++)
    if (!strcmp(keys[i], k))
      return 0;
  snprintf(keys[(*nk)++], ANALYZE_TEXT, "%s", k);
  return 1;
}

static struct analyze_op *new_op(struct ctx *c, enum analyze_kind k,
                                 size_t name_tok, int func)
{
  struct analyze_report *r = c->r;
  struct analyze_op *op;

  if (r->nops >= MAX_OPS) {
    err_set(c->e, ERR_TOOBIG, "more than %d calls", MAX_OPS);
    return NULL;
  }
  if ((r->nops & (r->nops - 1)) == 0 || r->nops == 0) {
    size_t nc = r->nops ? r->nops * 2 : 16;
    struct analyze_op *nv = realloc(r->ops, nc * sizeof(*nv));
    if (!nv) {
      err_set(c->e, ERR_NOMEM, "out of memory");
      return NULL;
    }
    r->ops = nv;
  }
  op = &r->ops[r->nops++];
  memset(op, 0, sizeof(*op));
  op->kind = k;
  op->func = func;
  op->line = c->l->v[name_tok].line;
  op->col = c->l->v[name_tok].col;
  cutok_text(c->l, name_tok, op->name, sizeof(op->name));
  op->group = c->group_depth > 0 ? c->group_cur : 0;
  op->tok = (long)name_tok;
  return op;
}

/* The macro a call sits in: the nearest enclosing "(" whose owner is an
 * all-caps identifier (NCCLCHECK, CUDA_CHECK, ...). */
static void find_via(const struct cutok_list *l, size_t fbody, size_t at,
                     char *out, size_t n)
{
  size_t i = at;

  out[0] = '\0';
  while (i > fbody + 1) {
    i--;
    if (tok_is(l, i, "(") && l->v[i].match > (long)at && tok_ident(l, i - 1)) {
      char t[64];
      const char *p;
      int upper = 1;
      cutok_text(l, i - 1, t, sizeof(t));
      for (p = t; *p; p++)
        if (islower((unsigned char)*p))
          upper = 0;
      if (upper) {
        snprintf(out, n, "%s", t);
        return;
      }
    }
  }
}

static void fill_args(struct ctx *c, struct analyze_op *op, size_t open,
                      size_t *st, size_t *en)
{
  int k;
  op->nargs = split_args(c->l, open, st, en, ANALYZE_MAX_ARGS);
  for (k = 0; k < op->nargs; k++)
    cutok_span(c->l, st[k], en[k], op->args[k], ANALYZE_TEXT);
}

static void key_of(struct ctx *c, size_t *st, size_t *en, int nargs, int k,
                   char *out)
{
  out[0] = '\0';
  if (k >= 0 && k < nargs)
    buffer_key(c->l, st[k], en[k], out, ANALYZE_TEXT);
}

static int func_index(const struct analyze_report *r, const char *name)
{
  size_t i;
  for (i = 0; i < r->nfuncs; i++)
    if (!strcmp(r->funcs[i].name, name))
      return (int)i;
  return -1;
}

static int do_nccl(struct ctx *c, size_t t, size_t fbody, int func)
{
  size_t st[ANALYZE_MAX_ARGS], en[ANALYZE_MAX_ARGS];
  const struct nccl_sig *sig = NULL;
  struct analyze_op *op;
  char key[ANALYZE_TEXT];
  size_t k;

  for (k = 0; k < sizeof(nccl_sigs) / sizeof(nccl_sigs[0]); k++)
    if (tok_is(c->l, t, nccl_sigs[k].name))
      sig = &nccl_sigs[k];
  if (sig && !strcmp(sig->name, "ncclGroupStart") && c->group_depth++ == 0)
    c->group_cur = ++c->group_next;
  op = new_op(c, ANALYZE_NCCL, t, func);
  if (!op)
    return c->e->code;
  if (sig && !strcmp(sig->name, "ncclGroupEnd") && c->group_depth > 0)
    c->group_depth--;
  snprintf(op->category, sizeof(op->category), "%s",
           sig ? sig->category : "other");
  find_via(c->l, fbody, t, op->via, sizeof(op->via));
  fill_args(c, op, t + 1, st, en);
  if (!sig)
    return 0;
  if (sig->comm >= 0 && sig->comm < op->nargs) {
    /* the whole expression ("comms[i]", "rt_comm(ctx)"), minus a '&' */
    const char *a = op->args[sig->comm];
    snprintf(op->comm, sizeof(op->comm), "%s", a[0] == '&' ? a + 1 : a);
    buffer_key(c->l, st[sig->comm], en[sig->comm], op->comm_key,
               sizeof(op->comm_key));
  }
  if (sig->stream >= 0 && sig->stream < op->nargs)
    snprintf(op->stream, sizeof(op->stream), "%s", op->args[sig->stream]);
  key_of(c, st, en, op->nargs, sig->send, key);
  add_key(op->reads, &op->nreads, key);
  if (sig->send >= 0 && sig->recv >= 0 && *key) {
    char rkey[ANALYZE_TEXT];
    key_of(c, st, en, op->nargs, sig->recv, rkey);
    /* ncclAllReduce(y, y, ...), ncclAllGather(buf + r * n, buf, ...) */
    op->in_place = !strcmp(key, rkey) || sig->send == sig->recv;
  }
  key_of(c, st, en, op->nargs, sig->recv, key);
  add_key(op->writes, &op->nwrites, key);
  if (!strcmp(sig->name, "ncclMemAlloc")) {
    key_of(c, st, en, op->nargs, 0, key);
    add_key(op->writes, &op->nwrites, key);
  }
  return 0;
}

static int do_cuda(struct ctx *c, size_t t, size_t fbody, int func,
                   const struct cuda_sig *sig)
{
  size_t st[ANALYZE_MAX_ARGS], en[ANALYZE_MAX_ARGS];
  struct analyze_op *op = new_op(c, sig->kind, t, func);
  char key[ANALYZE_TEXT];
  int k;

  if (!op)
    return c->e->code;
  snprintf(op->category, sizeof(op->category), "%s",
           sig->kind == ANALYZE_COPY    ? "copy"
           : sig->kind == ANALYZE_EVENT ? "event"
           : sig->kind == ANALYZE_SYNC  ? "sync"
                                        : "launch");
  find_via(c->l, fbody, t, op->via, sizeof(op->via));
  fill_args(c, op, t + 1, st, en);
  if (sig->stream >= 0 && sig->stream < op->nargs)
    snprintf(op->stream, sizeof(op->stream), "%s", op->args[sig->stream]);
  key_of(c, st, en, op->nargs, sig->write, key);
  add_key(op->writes, &op->nwrites, key);
  key_of(c, st, en, op->nargs, sig->read, key);
  add_key(op->reads, &op->nreads, key);
  if (sig->kind == ANALYZE_EVENT || !strcmp(op->name, "cudaEventSynchronize"))
    add_key(op->reads, &op->nreads,
            op->nargs > 0 ? op->args[!strcmp(op->name, "cudaStreamWaitEvent")]
                          : "");
  if (sig->kind == ANALYZE_LAUNCH && op->nargs > 0) {
    /* cudaLaunchKernel((void *)kern, grid, block, args, smem, stream) */
    key_of(c, st, en, op->nargs, 0, key);
    if (key[0])
      snprintf(op->name, sizeof(op->name), "%s", key);
    for (k = 1; k <= 4 && k < op->nargs; k++)
      snprintf(k == 1   ? op->grid
               : k == 2 ? op->block
               : k == 4 ? op->smem
                        : key,
               ANALYZE_TEXT, "%s", op->args[k]);
    op->writes_assumed = 1;
  }
  return 0;
}

static int do_blas(struct ctx *c, size_t t, size_t fbody, int func)
{
  size_t st[ANALYZE_MAX_ARGS], en[ANALYZE_MAX_ARGS];
  const struct blas_sig *sig = NULL;
  struct analyze_op *op;
  char key[ANALYZE_TEXT];
  size_t k;

  if (tok_is(c->l, t, "cublasSetStream") ||
      tok_is(c->l, t, "cublasSetStream_v2")) {
    op = new_op(c, ANALYZE_BLAS_STREAM, t, func);
    if (!op)
      return c->e->code;
    snprintf(op->category, sizeof(op->category), "blas_stream");
    fill_args(c, op, t + 1, st, en);
    if (op->nargs == 2)
      snprintf(op->stream, sizeof(op->stream), "%s", op->args[1]);
    return 0;
  }
  for (k = 0; k < sizeof(blas_sigs) / sizeof(blas_sigs[0]); k++)
    if (tok_is(c->l, t, blas_sigs[k].name))
      sig = &blas_sigs[k];
  if (!sig)
    return 0; /* handles, descriptors, math modes: not compute */
  op = new_op(c, ANALYZE_GEMM, t, func);
  if (!op)
    return c->e->code;
  snprintf(op->category, sizeof(op->category), "gemm");
  find_via(c->l, fbody, t, op->via, sizeof(op->via));
  fill_args(c, op, t + 1, st, en);
  key_of(c, st, en, op->nargs, sig->a, key);
  add_key(op->reads, &op->nreads, key);
  key_of(c, st, en, op->nargs, sig->b, key);
  add_key(op->reads, &op->nreads, key);
  key_of(c, st, en, op->nargs, sig->c, key);
  add_key(op->writes, &op->nwrites, key);
  if (sig->stream >= 0 && sig->stream < op->nargs)
    snprintf(op->stream, sizeof(op->stream), "%s", op->args[sig->stream]);
  else if (op->nargs > 0) {
    /* the stream bound to this handle by the latest cublasSetStream */
    size_t i = c->r->nops - 1;
    while (i-- > 0)
      if (c->r->ops[i].kind == ANALYZE_BLAS_STREAM &&
          c->r->ops[i].nargs == 2 &&
          !strcmp(c->r->ops[i].args[0], op->args[0])) {
        snprintf(op->stream, sizeof(op->stream), "%s", c->r->ops[i].stream);
        break;
      }
  }
  return 0;
}

/* A launch "name<T><<<cfg>>>(args)" whose "<<<" is token t. */
static int do_launch(struct ctx *c, size_t t, size_t fbody, int func)
{
  const struct cutok_list *l = c->l;
  size_t st[ANALYZE_MAX_ARGS], en[ANALYZE_MAX_ARGS];
  size_t name = t - 1, close = (size_t)l->v[t].match, k;
  struct analyze_op *op;
  char key[ANALYZE_TEXT];
  int n, fi;

  if (tok_is(l, name, ">")) { /* template arguments: back to the '<' */
    int depth = 0;
    while (name > fbody) {
      if (tok_is(l, name, ">"))
        depth++;
      else if (tok_is(l, name, ">>"))
        depth += 2;
      else if (tok_is(l, name, "<") && --depth == 0)
        break;
      name--;
    }
    name--;
  }
  if (!tok_ident(l, name))
    return 0;
  op = new_op(c, ANALYZE_LAUNCH, name, func);
  if (!op)
    return c->e->code;
  snprintf(op->category, sizeof(op->category), "launch");
  find_via(l, fbody, name, op->via, sizeof(op->via));
  n = split_args(l, t, st, en, ANALYZE_MAX_ARGS);
  for (k = 0; k < (size_t)n && k < 4; k++)
    cutok_span(l, st[k], en[k],
               k == 0   ? op->grid
               : k == 1 ? op->block
               : k == 2 ? op->smem
                        : op->stream,
               ANALYZE_TEXT);
  if (!tok_is(l, close + 1, "(") || l->v[close + 1].match < 0)
    return 0;
  fill_args(c, op, close + 1, st, en);
  fi = func_index(c->r, op->name);
  if (fi < 0 || !c->r->funcs[fi].is_kernel)
    op->writes_assumed = 1;
  for (k = 0; k < (size_t)op->nargs; k++) {
    const struct analyze_func *f =
        op->writes_assumed ? NULL : &c->r->funcs[fi];
    int known = f && k < (size_t)f->nparams;
    enum analyze_value v;
    buffer_key(l, st[k], en[k], key, sizeof(key));
    if (!*key)
      continue;
    v = analyze_value_kind(c->r, key);
    /* a value, not a buffer: the kernel's parameter is not a pointer, or
     * the argument is declared as a number, stream, struct... */
    if ((known && !f->param_ptr[k]) || v == ANALYZE_VAL_SCALAR ||
        v == ANALYZE_VAL_OTHER) {
      add_key(op->scalars, &op->nscalars, key);
      continue;
    }
    /* unknown kernels may load and store any buffer they get */
    if (!known || f->param_written[k])
      add_key(op->writes, &op->nwrites, key);
    if (!known || f->param_read[k] || !f->param_written[k])
      add_key(op->reads, &op->nreads, key);
  }
  for (k = 0; k < (size_t)op->nreads; k++)
    for (n = 0; n < op->nwrites; n++)
      if (!op->writes_assumed && !strcmp(op->reads[k], op->writes[n]))
        op->in_place = 1;
  return 0;
}

/* Library and runtime helpers that never move a collective's data. */
static int skip_external(const char *name)
{
  static const char *const skip[] = {
      "free",        "malloc",      "calloc",
      "realloc",     "memset",      "memcpy",
      "printf",      "fprintf",     "snprintf",
      "strcmp",      "rt_fail",     "rt_alloc",
      "rt_get_user", "rt_set_user", "rt_buffer",
      "rt_stream",   "rt_comm",     "rt_window",
      "wl_param",    "static_cast", "reinterpret_cast",
      "const_cast",  "dim3",        "min",
      "max"};
  size_t k;
  for (k = 0; k < sizeof(skip) / sizeof(skip[0]); k++)
    if (!strcmp(name, skip[k]))
      return 1;
  return 0;
}

/* Whether the single-identifier argument l[t] names something that is
 * not a device buffer: a variable declared somewhere in the file as a
 * stream, event, handle, communicator or the runtime's context ("struct
 * wl_ctx *ctx", "cudaStream_t st"). */
static int not_a_buffer(const struct cutok_list *l, size_t t)
{
  static const char *const types[] = {"cudaStream_t",   "cudaEvent_t",
                                      "cublasHandle_t", "cublasLtHandle_t",
                                      "ncclComm_t",     "wl_ctx",
                                      "wl_problem",     "cublasLtMatmulDesc_t",
                                      "cudaGraph_t",    "cudaGraphExec_t"};
  size_t i, k, j;

  for (i = 0; i + 1 < l->n; i++) {
    for (k = 0; k < sizeof(types) / sizeof(types[0]); k++)
      if (tok_is(l, i, types[k]))
        break;
    if (k == sizeof(types) / sizeof(types[0]))
      continue;
    for (j = i + 1; j < l->n && (tok_is(l, j, "*") || tok_is(l, j, "const"));)
      j++;
    if (tok_ident(l, j) && l->v[j].len == l->v[t].len &&
        !memcmp(l->src + l->v[j].off, l->src + l->v[t].off, l->v[t].len))
      return 1;
  }
  return 0;
}

/* Whether the argument l[st..en) may be a device buffer: not the address
 * of a host object ("&u->plan"), and not a name or member chain ("ctx",
 * "u->lt") whose last name is declared as a non-buffer type. */
static int arg_may_be_buffer(const struct cutok_list *l, size_t st, size_t en)
{
  size_t i;

  if (st >= en)
    return 0;
  if (tok_is(l, st, "&"))
    return 0;
  for (i = st; i < en; i++)
    if (!(i % 2 == st % 2 ? tok_ident(l, i)
                          : tok_is(l, i, "->") || tok_is(l, i, ".")))
      return 1; /* an expression: keep it */
  return (en - st) % 2 == 0 || !not_a_buffer(l, en - 1);
}

/* A call of a function defined elsewhere (e.g. a GEMM helper in a
 * header): its buffer arguments are read; a GEMM-like name also writes
 * them (assumed).  Dropped later unless it meets a collective's buffer. */
static int do_external(struct ctx *c, size_t t, int func)
{
  size_t st[ANALYZE_MAX_ARGS], en[ANALYZE_MAX_ARGS];
  char key[ANALYZE_TEXT];
  struct analyze_op *op;
  int k, gemm;

  {
    char nm[64];
    cutok_text(c->l, t, nm, sizeof(nm));
    gemm = strstr(nm, "gemm") || strstr(nm, "Gemm") || strstr(nm, "matmul") ||
           strstr(nm, "Matmul") || strstr(nm, "GEMM");
  }
  op = new_op(c, gemm ? ANALYZE_GEMM : ANALYZE_CALL, t, func);
  if (!op)
    return c->e->code;
  op->external = 1;
  snprintf(op->category, sizeof(op->category), "%s", gemm ? "gemm" : "call");
  fill_args(c, op, t + 1, st, en);
  for (k = 0; k < op->nargs; k++) {
    enum analyze_value v;
    if (!arg_may_be_buffer(c->l, st[k], en[k]))
      continue;
    buffer_key(c->l, st[k], en[k], key, sizeof(key));
    v = analyze_value_kind(c->r, key);
    if (v == ANALYZE_VAL_SCALAR || v == ANALYZE_VAL_OTHER) {
      add_key(op->scalars, &op->nscalars, key);
      continue;
    }
    add_key(op->reads, &op->nreads, key);
    if (gemm)
      add_key(op->writes, &op->nwrites, key);
  }
  op->writes_assumed = gemm;
  return 0;
}

#define MAX_ALIASES 64

/* Host-side pointer aliases of a body: "T *q = (T *)p + off;" makes q
 * stand for p's buffer.  Keys of the body's ops are rewritten to the root
 * buffer so that "piece" and "u->Ag" meet in the dataflow. */
static void resolve_aliases(struct ctx *c, size_t open, size_t first_op)
{
  const struct cutok_list *l = c->l;
  size_t close = (size_t)l->v[open].match, i, o;
  char names[MAX_ALIASES][64], keys[MAX_ALIASES][ANALYZE_TEXT];
  int n = 0, k, m, hop;

  for (i = open + 1; i + 1 < close && n < MAX_ALIASES; i++) {
    size_t e, j;
    int call = 0;
    if ((tok_is(l, i, "swap") && tok_is(l, i + 1, "(")) &&
        l->v[i + 1].match > 0) {
      /* std::swap(cur, next): one double buffer under two names */
      size_t st[ANALYZE_MAX_ARGS], en[ANALYZE_MAX_ARGS];
      if (split_args(l, i + 1, st, en, ANALYZE_MAX_ARGS) == 2) {
        buffer_key(l, st[0], en[0], keys[n], ANALYZE_TEXT);
        buffer_key(l, st[1], en[1], names[n], 64);
        if (keys[n][0] && names[n][0] && strcmp(keys[n], names[n]))
          n++;
      }
      continue;
    }
    if (!(tok_is(l, i, "=") && tok_ident(l, i - 1) && tok_is(l, i - 2, "*")))
      continue;
    for (e = i + 1; e < close && !tok_is(l, e, ";") && !tok_is(l, e, ",");)
      e = l->v[e].match > (long)e ? (size_t)l->v[e].match + 1 : e + 1;
    buffer_key(l, i + 1, e, keys[n], ANALYZE_TEXT);
    cutok_text(l, i - 1, names[n], 64);
    /* "T *p = (T *)malloc(n)": a new buffer, not another name of one */
    for (j = i + 1; j + 1 < e; j++)
      if (tok_ident(l, j) && tok_is(l, j + 1, "(") &&
          l->v[j].len == strlen(keys[n]) &&
          !memcmp(l->src + l->v[j].off, keys[n], l->v[j].len))
        call = 1;
    if (keys[n][0] && strcmp(keys[n], names[n]) && !call)
      n++;
  }
  for (o = first_op; o < c->r->nops; o++) {
    struct analyze_op *op = &c->r->ops[o];
    for (m = 0; m < op->nreads + op->nwrites; m++) {
      char *key = m < op->nreads ? op->reads[m] : op->writes[m - op->nreads];
      for (hop = 0; hop < 4; hop++)
        for (k = n - 1; k >= 0; k--)
          if (!strcmp(key, names[k])) {
            snprintf(key, ANALYZE_TEXT, "%s", keys[k]);
            break;
          }
    }
  }
}

/* Device API names that are types or tags, not calls worth reporting. */
static int device_noise(const char *name)
{
  return !strncmp(name, "ncclCoop", 8) || !strncmp(name, "ncclTeamTag", 11) ||
         !strcmp(name, "ncclTeamWorld") || !strcmp(name, "ncclTeamLsa") ||
         !strcmp(name, "ncclTeamRail") || !strncmp(name, "ncclGin_", 8);
}

/* The loops of the body at OPEN ("for (...) {...}", "while (...) stmt;",
 * "do {...}") that hold each op, innermost first. */
static void mark_loops(const struct cutok_list *l, size_t open,
                       struct analyze_op *ops, size_t nops)
{
  size_t close = (size_t)l->v[open].match, i, o;

  for (i = open + 1; i < close; i++) {
    size_t lo, hi;
    if (tok_is(l, i, "do") && tok_is(l, i + 1, "{") && l->v[i + 1].match > 0) {
      lo = i + 1;
      hi = (size_t)l->v[i + 1].match;
    } else if ((tok_is(l, i, "for") || tok_is(l, i, "while")) &&
               tok_is(l, i + 1, "(") && l->v[i + 1].match > 0) {
      lo = (size_t)l->v[i + 1].match + 1;
      if (tok_is(l, lo, "{") && l->v[lo].match > (long)lo)
        hi = (size_t)l->v[lo].match;
      else
        for (hi = lo; hi < close && !tok_is(l, hi, ";");)
          hi = l->v[hi].match > (long)hi ? (size_t)l->v[hi].match + 1 : hi + 1;
    } else {
      continue;
    }
    for (o = 0; o < nops; o++) {
      struct analyze_op *op = &ops[o];
      int k, at;
      if (op->tok < (long)lo || op->tok > (long)hi)
        continue;
      /* keep innermost first: insert by range size */
      for (at = 0; at < op->nloops &&
                   op->loop_hi[at] - op->loop_lo[at] <= (long)(hi - lo);)
        at++;
      if (at >= ANALYZE_MAX_LOOPS)
        continue;
      for (k = op->nloops < ANALYZE_MAX_LOOPS ? op->nloops
                                              : ANALYZE_MAX_LOOPS - 1;
           k > at; k--) {
        op->loop_lo[k] = op->loop_lo[k - 1];
        op->loop_hi[k] = op->loop_hi[k - 1];
      }
      op->loop_lo[at] = (long)lo;
      op->loop_hi[at] = (long)hi;
      if (op->nloops < ANALYZE_MAX_LOOPS)
        op->nloops++;
    }
  }
}

static int scan_body(struct ctx *c, size_t open, int func)
{
  const struct cutok_list *l = c->l;
  size_t close = (size_t)l->v[open].match, i, first_op = c->r->nops;
  int rc = 0,
      device = c->r->funcs[func].is_kernel || c->r->funcs[func].is_device;
  char name[64];

  c->group_depth = 0;
  for (i = open + 1; i < close && !rc; i++) {
    if (tok_is(l, i, "<<<") && l->v[i].match > 0) {
      rc = do_launch(c, i, open, func);
      continue;
    }
    if (!tok_ident(l, i) || !tok_is(l, i + 1, "(") || l->v[i + 1].match < 0)
      continue;
    if (i > 0 && (tok_is(l, i - 1, ".") || tok_is(l, i - 1, "->")))
      continue; /* a method, not an API call */
    cutok_text(l, i, name, sizeof(name));
    if (!strncmp(name, "nccl", 4) && device) {
      if (!device_noise(name)) { /* device API use, for the record */
        struct analyze_op *op = new_op(c, ANALYZE_NCCL, i, func);
        size_t st[ANALYZE_MAX_ARGS], en[ANALYZE_MAX_ARGS];
        if (!op)
          return c->e->code;
        snprintf(op->category, sizeof(op->category), "device");
        op->group = 0;
        fill_args(c, op, i + 1, st, en);
      }
    } else if (!strncmp(name, "nccl", 4)) {
      rc = do_nccl(c, i, open, func);
    } else if (!strncmp(name, "cublas", 6)) {
      rc = do_blas(c, i, open, func);
    } else if (!strncmp(name, "cuda", 4)) {
      size_t k;
      for (k = 0; k < sizeof(cuda_sigs) / sizeof(cuda_sigs[0]); k++)
        if (!strcmp(name, cuda_sigs[k].name))
          rc = do_cuda(c, i, open, func, &cuda_sigs[k]);
    } else {
      int fi = func_index(c->r, name);
      if (fi >= 0 && fi != func && !c->r->funcs[fi].is_kernel) {
        size_t st[ANALYZE_MAX_ARGS], en[ANALYZE_MAX_ARGS];
        struct analyze_op *op = new_op(c, ANALYZE_CALL, i, func);
        if (!op)
          return c->e->code;
        snprintf(op->category, sizeof(op->category), "call");
        fill_args(c, op, i + 1, st, en);
      } else if (fi < 0 && !is_keyword(l, i) && !skip_external(name)) {
        rc = do_external(c, i, func);
      }
    }
  }
  if (!rc) {
    resolve_aliases(c, open, first_op);
    mark_loops(l, open, c->r->ops + first_op, c->r->nops - first_op);
  }
  return rc;
}

/* Walk back from the token before an assignment operator to the start of
 * its left-hand side ("reinterpret_cast<float4 *>(out)[i]", "*p",
 * "ctx->buf[k]"), stopping at keywords and statement boundaries. */
static size_t lvalue_start(const struct cutok_list *l, size_t lo, size_t eq)
{
  size_t j = eq;

  while (j > lo) {
    size_t p = j - 1;
    if ((tok_is(l, p, "]") || tok_is(l, p, ")")) && l->v[p].match >= 0) {
      size_t m = (size_t)l->v[p].match;
      if (m > lo && is_keyword(l, m - 1))
        break; /* "if (cond) x = ..." : the condition is not the lvalue */
      j = m;
      continue;
    }
    if (tok_is(l, p, ">")) { /* template arguments of a cast */
      int depth = 0;
      size_t q = p;
      while (q > lo) {
        if (tok_is(l, q, ">"))
          depth++;
        else if (tok_is(l, q, "<") && --depth == 0)
          break;
        q--;
      }
      j = q;
      continue;
    }
    if ((tok_ident(l, p) && !is_keyword(l, p)) || tok_is(l, p, ".") ||
        tok_is(l, p, "->") || tok_is(l, p, "::") || tok_is(l, p, "*")) {
      j = p;
      continue;
    }
    break;
  }
  return j;
}

static int is_assign(const struct cutok_list *l, size_t i)
{
  static const char *const ops[] = {
      "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
  size_t k;
  if (l->v[i].kind != CUTOK_PUNCT)
    return 0;
  for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
    if (tok_is(l, i, ops[k]))
      return 1;
  return 0;
}

static int name_index(char names[][64], int n, const struct cutok_list *l,
                      size_t t)
{
  char s[64];
  int k;
  cutok_text(l, t, s, sizeof(s));
  for (k = 0; k < n; k++)
    if (!strcmp(names[k], s))
      return k;
  return -1;
}

/* Whether the lvalue tokens [s, e) declare a name ("float x", "const T
 * *q", ", *v") rather than store through one: two names side by side, or a
 * declarator that follows a comma. */
static int is_declaration(const struct cutok_list *l, size_t s, size_t e)
{
  size_t j;
  int prev_ident = 0;

  if (s > 0 && tok_is(l, s - 1, ",") && tok_is(l, s, "*"))
    return 1;
  for (j = s; j < e; j++) {
    if (tok_is(l, j, "[") && l->v[j].match > (long)j) {
      j = (size_t)l->v[j].match;
      prev_ident = 0;
      continue;
    }
    if (tok_ident(l, j)) {
      if (prev_ident)
        return 1;
      prev_ident = 1;
    } else if (!tok_is(l, j, "*") && !tok_is(l, j, "&")) {
      prev_ident = 0;
    }
  }
  return 0;
}

/* Mark base[j] = how for the names at the base of the lvalue [s, e): not
 * inside a subscript ("out[i * n]": out, not n). */
static void mark_bases(const struct cutok_list *l, size_t s, size_t e,
                       unsigned char *base, size_t off, unsigned char how)
{
  size_t j;

  for (j = s; j < e; j++) {
    if (tok_is(l, j, "[") && l->v[j].match > (long)j) {
      j = (size_t)l->v[j].match;
      continue;
    }
    if (tok_ident(l, j))
      base[j - off] = how;
  }
}

#define ACC_STORE  1 /* "p[i] = v": written */
#define ACC_UPDATE 2 /* "p[i] += v", "p[i]++", atomicAdd(&p[i], v) */
#define ACC_SKIP   3 /* a pointer reassigned, or an alias declared */

/* Which parameters a kernel or device function stores through and which
 * it loads from: "p[i] = ", "*p = ", "cast<T*>(p)[i] = " store; "p[i] +=",
 * "p[i]++", "atomicAdd(&p[i], ...)" store and load (in place); any other
 * use loads, also through a local alias "T *q = p + off;" and through a
 * call of a device function defined earlier in the file (FUNCS[0..NF)). */
static void kernel_access(const struct cutok_list *l, size_t open,
                          struct analyze_func *f,
                          const struct analyze_func *funcs, size_t nf)
{
  size_t close = (size_t)l->v[open].match, i, j;
  char alias[64][64];
  int alias_of[64], nalias = 0, k;
  unsigned char *base = calloc(close - open + 1, 1);

  if (!base)
    return;
  for (i = open + 1; i < close; i++) {
    /* a declaration "... *q = p ..." makes q an alias of p */
    if (tok_is(l, i, "=") && tok_ident(l, i - 1) && tok_is(l, i - 2, "*")) {
      char key[ANALYZE_TEXT];
      size_t e = i + 1;
      while (e < close && !tok_is(l, e, ";") && !tok_is(l, e, ","))
        e = l->v[e].match > (long)e ? (size_t)l->v[e].match + 1 : e + 1;
      buffer_key(l, i + 1, e, key, sizeof(key));
      for (k = 0; k < f->nparams && nalias < 64; k++)
        if (!strcmp(key, f->params[k])) {
          cutok_text(l, i - 1, alias[nalias], 64);
          alias_of[nalias++] = k;
          for (j = i - 1; j < e; j++) /* the declaration itself: no use */
            base[j - open] = ACC_SKIP;
        }
    }
  }
  for (i = open + 1; i < close; i++) {
    int plain = tok_is(l, i, "=");
    if (is_assign(l, i) || tok_is(l, i, "++") || tok_is(l, i, "--")) {
      size_t s = lvalue_start(l, open, i);
      int deref = 0;
      if (s == i && (tok_is(l, i, "++") || tok_is(l, i, "--"))) {
        /* prefix: "++p[i]" */
        s = i + 1;
        for (j = s; j < close && (tok_ident(l, j) || tok_is(l, j, "->") ||
                                  tok_is(l, j, ".") || tok_is(l, j, "["));)
          j = tok_is(l, j, "[") && l->v[j].match > (long)j
                  ? (size_t)l->v[j].match + 1
                  : j + 1;
        if (s < j && tok_is(l, s, "*") == 0)
          for (size_t q = s; q < j; q++)
            deref |= tok_is(l, q, "[");
        if (deref)
          mark_bases(l, s, j, base, open, ACC_UPDATE);
        continue;
      }
      for (j = s; j < i; j++)
        if (tok_is(l, j, "[") || tok_is(l, j, "*"))
          deref = 1;
      if (is_declaration(l, s, i))
        continue;
      if (!deref) { /* the pointer itself reassigned: no access */
        mark_bases(l, s, i, base, open, ACC_SKIP);
        continue;
      }
      mark_bases(l, s, i, base, open, plain ? ACC_STORE : ACC_UPDATE);
    }
    if (tok_ident(l, i) && tok_is(l, i + 1, "(") && l->v[i + 1].match > 0) {
      char nm[96];
      size_t e = i + 2;
      cutok_text(l, i, nm, sizeof(nm));
      if (!strncmp(nm, "atomic", 6)) {
        while (e < (size_t)l->v[i + 1].match && !tok_is(l, e, ","))
          e = l->v[e].match > (long)e ? (size_t)l->v[e].match + 1 : e + 1;
        mark_bases(l, i + 2, e, base, open, ACC_UPDATE);
        continue;
      }
      for (size_t fi = 0; fi < nf; fi++) {
        size_t st[ANALYZE_MAX_ARGS], en[ANALYZE_MAX_ARGS];
        int n;
        if (strcmp(funcs[fi].name, nm) || !funcs[fi].is_device)
          continue;
        /* a device function defined earlier: its own access decides */
        n = split_args(l, i + 1, st, en, ANALYZE_MAX_ARGS);
        for (k = 0; k < n && k < funcs[fi].nparams; k++)
          if (funcs[fi].param_written[k])
            mark_bases(l, st[k], en[k], base, open,
                       funcs[fi].param_read[k] ? ACC_UPDATE : ACC_STORE);
        break;
      }
    }
  }
  for (i = open + 1; i < close; i++) {
    unsigned char how = base[i - open];
    if (!tok_ident(l, i) || how == ACC_SKIP ||
        (i > 0 && (tok_is(l, i - 1, ".") || tok_is(l, i - 1, "->"))))
      continue;
    if ((k = name_index(f->params, f->nparams, l, i)) < 0 &&
        (k = name_index(alias, nalias, l, i)) >= 0)
      k = alias_of[k];
    if (k < 0)
      continue;
    if (how == ACC_STORE || how == ACC_UPDATE)
      f->param_written[k] = 1;
    if (how != ACC_STORE)
      f->param_read[k] = 1;
  }
  free(base);
}

/* If the "{" at index b opens a function body, fill *f and return 1. */
static int function_head(const struct cutok_list *l, size_t b,
                         struct analyze_func *f)
{
  static const char *const quals[] = {"const", "noexcept", "override",
                                      "final", "volatile", "mutable"};
  size_t p = b, open, name, k, st[ANALYZE_MAX_ARGS], en[ANALYZE_MAX_ARGS];
  int n, q, host;

  while (p > 0) {
    for (q = 0, k = 0; k < sizeof(quals) / sizeof(quals[0]); k++)
      if (tok_is(l, p - 1, quals[k]))
        q = 1;
    if (!q)
      break;
    p--;
  }
  if (p == 0 || !tok_is(l, p - 1, ")") || l->v[p - 1].match < 1)
    return 0;
  open = (size_t)l->v[p - 1].match;
  name = open - 1;
  if (!tok_ident(l, name) || is_keyword(l, name))
    return 0;
  memset(f, 0, sizeof(*f));
  if (name >= 2 && tok_is(l, name - 1, "::") && tok_ident(l, name - 2)) {
    char a[48], c2[48];
    snprintf(f->name, sizeof(f->name), "%s::%s",
             cutok_text(l, name - 2, a, sizeof(a)),
             cutok_text(l, name, c2, sizeof(c2)));
  } else {
    cutok_text(l, name, f->name, sizeof(f->name));
  }
  f->line = l->v[name].line;
  f->col = l->v[name].col;
  f->end_line = l->v[l->v[b].match].line;
  f->start_line = f->line;
  host = 0;
  for (k = name; k-- > 0;) {
    if (tok_is(l, k, ";") || tok_is(l, k, "}") || tok_is(l, k, "{") ||
        l->v[k].kind == CUTOK_PP)
      break;
    f->start_line = l->v[k].line;
    if (tok_is(l, k, "__global__"))
      f->is_kernel = 1;
    if (tok_is(l, k, "__device__"))
      f->is_device = 1;
    if (tok_is(l, k, "__host__"))
      host = 1;
  }
  if (host)
    f->is_device = 0; /* __host__ __device__: host calls count */
  n = split_args(l, open, st, en, ANALYZE_MAX_ARGS);
  for (q = 0; q < n; q++) {
    size_t j, last = 0;
    int ptr = 0;
    for (j = st[q]; j < en[q] && !tok_is(l, j, "="); j++) {
      if (tok_ident(l, j))
        last = j;
      if (tok_is(l, j, "*") || tok_is(l, j, "["))
        ptr = 1;
    }
    if (last) {
      f->param_ptr[f->nparams] = ptr;
      cutok_text(l, last, f->params[f->nparams++], 64);
    }
  }
  if (f->nparams == 1 && !strcmp(f->params[0], "void"))
    f->nparams = 0;
  return 1;
}

/* Pass 1 (find=1) collects function definitions; pass 2 scans bodies. */
static int walk(struct ctx *c, int find)
{
  const struct cutok_list *l = c->l;
  size_t i;
  int fi = 0, rc;

  for (i = 0; i < l->n; i++) {
    struct analyze_func f;
    if (!tok_is(l, i, "{") || l->v[i].match < 0)
      continue;
    if (!function_head(l, i, &f))
      continue; /* namespace, struct, extern "C", initializer: go inside */
    if (find) {
      struct analyze_func *nv;
      if (c->r->nfuncs >= MAX_FUNCS)
        return err_set(c->e, ERR_TOOBIG, "more than %d functions", MAX_FUNCS);
      nv = realloc(c->r->funcs, (c->r->nfuncs + 1) * sizeof(*nv));
      if (!nv)
        return err_set(c->e, ERR_NOMEM, "out of memory");
      c->r->funcs = nv;
      if (f.is_kernel || f.is_device)
        kernel_access(l, i, &f, c->r->funcs, c->r->nfuncs);
      c->r->funcs[c->r->nfuncs++] = f;
    } else if ((rc = scan_body(c, i, fi++)) != 0) {
      return rc;
    }
    i = (size_t)l->v[i].match; /* nested lambdas belong to this body */
  }
  return 0;
}

/* ---- declarations: what a name stands for ---- */

static int is_scalar_type(const struct cutok_list *l, size_t i)
{
  static const char *const t[] = {
      "int",           "long",          "short",        "unsigned",
      "signed",        "char",          "bool",         "float",
      "double",        "size_t",        "ssize_t",      "ptrdiff_t",
      "int8_t",        "int16_t",       "int32_t",      "int64_t",
      "uint8_t",       "uint16_t",      "uint32_t",     "uint64_t",
      "intptr_t",      "uintptr_t",     "half",         "__half",
      "__nv_bfloat16", "nv_bfloat16",   "float2",       "float4",
      "int2",          "int4",          "__half2",      "char16_t",
      "wchar_t",       "__nv_fp8_e4m3", "__nv_fp8_e5m2"};
  size_t k;
  for (k = 0; k < sizeof(t) / sizeof(t[0]); k++)
    if (tok_is(l, i, t[k]))
      return 1;
  return 0;
}

static int is_decl_qualifier(const struct cutok_list *l, size_t i)
{
  static const char *const q[] = {
      "const",        "static",       "volatile", "constexpr",
      "extern",       "register",     "inline",   "__shared__",
      "__constant__", "__device__",   "__host__", "__managed__",
      "struct",       "enum",         "class",    "mutable",
      "thread_local", "__restrict__", "restrict", "__forceinline__",
      "__global__",   "typename"};
  size_t k;
  for (k = 0; k < sizeof(q) / sizeof(q[0]); k++)
    if (tok_is(l, i, q[k]))
      return 1;
  return 0;
}

/* Words that start a statement, never a declaration. */
static int is_stmt_word(const struct cutok_list *l, size_t i)
{
  static const char *const w[] = {
      "goto",     "using",   "namespace", "template",  "operator",
      "public",   "private", "protected", "default",   "break",
      "continue", "typedef", "auto",      "co_return", "static_assert",
      "asm",      "__asm__", "true",      "false",     "nullptr",
      "NULL",     "this"};
  size_t k;
  if (is_keyword(l, i))
    return 1;
  for (k = 0; k < sizeof(w) / sizeof(w[0]); k++)
    if (tok_is(l, i, w[k]))
      return 1;
  return 0;
}

struct decl_table {
  struct analyze_decl *v;
  size_t n, cap;
};

static int decl_add(struct decl_table *t, const char *name,
                    enum analyze_value kind)
{
  static const int rank[] = {0, 3, 2, 1}; /* buffer > scalar > other */
  size_t i;

  if (!*name)
    return 0;
  for (i = 0; i < t->n; i++)
    if (!strcmp(t->v[i].name, name)) {
      if (rank[kind] > rank[t->v[i].kind])
        t->v[i].kind = kind;
      return 0;
    }
  if (t->n == t->cap) {
    size_t nc = t->cap ? t->cap * 2 : 64;
    struct analyze_decl *nv = realloc(t->v, nc * sizeof(*nv));
    if (!nv)
      return ERR_NOMEM;
    t->v = nv;
    t->cap = nc;
  }
  snprintf(t->v[t->n].name, sizeof(t->v[0].name), "%s", name);
  t->v[t->n++].kind = kind;
  return 0;
}

/* Past a template argument list at l[i] == "<": the index after its ">",
 * or 0 when what follows is not one (a comparison). */
static size_t skip_template(const struct cutok_list *l, size_t i, size_t end)
{
  int depth = 0;
  size_t j;

  for (j = i; j < end && j < i + 64; j++) {
    if (tok_is(l, j, "<"))
      depth++;
    else if (tok_is(l, j, ">"))
      depth--;
    else if (tok_is(l, j, ">>"))
      depth -= 2;
    else if (!tok_ident(l, j) && l->v[j].kind != CUTOK_NUMBER &&
             !tok_is(l, j, "::") && !tok_is(l, j, ",") && !tok_is(l, j, "*"))
      return 0;
    if (depth <= 0)
      return depth == 0 ? j + 1 : 0;
  }
  return 0;
}

static int ends_declarator(const struct cutok_list *l, size_t i)
{
  return tok_is(l, i, "=") || tok_is(l, i, ",") || tok_is(l, i, ";") ||
         tok_is(l, i, "[") || tok_is(l, i, ")") || tok_is(l, i, ":") ||
         tok_is(l, i, "{");
}

/* The declarators of a declaration whose type starts at token i ("int m =
 * 4096, n", "const float *x", "cudaStream_t s[8]"): each name and whether
 * it is a pointer, a value of a scalar type, or something else. */
static int decl_at(const struct cutok_list *l, size_t i, struct decl_table *t)
{
  size_t j = i;
  int words = 0, scalar = 1, rc = 0;

  while (j < l->n) { /* the type: qualifiers, names, ::, template args */
    if (is_decl_qualifier(l, j)) {
      j++;
      continue;
    }
    if (!tok_ident(l, j) || is_stmt_word(l, j))
      break;
    /* a name followed by the end of a declarator is the declared name */
    if (words > 0 && ends_declarator(l, j + 1))
      break;
    words++;
    scalar &= is_scalar_type(l, j);
    j++;
    if (tok_is(l, j, "::")) {
      j++;
      continue;
    }
    if (tok_is(l, j, "<")) {
      size_t k = skip_template(l, j, l->n);
      if (!k)
        return 0;
      scalar = 0;
      j = k;
    }
  }
  if (!words)
    return 0;
  for (;;) { /* declarators */
    int ptr = 0;
    char name[64];
    while (tok_is(l, j, "*") || tok_is(l, j, "&") || tok_is(l, j, "&&") ||
           tok_is(l, j, "const") || tok_is(l, j, "__restrict__") ||
           tok_is(l, j, "restrict"))
      ptr |= tok_is(l, j++, "*");
    if (!tok_ident(l, j) || is_stmt_word(l, j) || !ends_declarator(l, j + 1))
      return rc;
    cutok_text(l, j, name, sizeof(name));
    rc = decl_add(t, name,
                  ptr      ? ANALYZE_VAL_BUFFER
                  : scalar ? ANALYZE_VAL_SCALAR
                           : ANALYZE_VAL_OTHER);
    if (rc)
      return rc;
    j++;
    while (tok_is(l, j, "[") && l->v[j].match > (long)j)
      j = (size_t)l->v[j].match + 1;
    if (tok_is(l, j, "=")) /* the initializer, to the declarator's end */
      while (j < l->n && !tok_is(l, j, ",") && !tok_is(l, j, ";") &&
             !tok_is(l, j, ")"))
        j = l->v[j].match > (long)j ? (size_t)l->v[j].match + 1 : j + 1;
    if (!tok_is(l, j, ","))
      return 0;
    j++;
  }
}

/* Whether the "(" at OPEN lists a function's parameters ("void k(float
 * *p, int n) {", a prototype) or holds a for's declaration, rather than a
 * call's arguments ("f(a * b)", where "a * b" is a product). */
static int params_paren(const struct cutok_list *l, size_t open)
{
  size_t close = (size_t)l->v[open].match;

  if (open == 0 || l->v[open].match < 0)
    return 0;
  if (tok_is(l, open - 1, "for"))
    return 1;
  if (!tok_ident(l, open - 1) || is_keyword(l, open - 1) || open < 2)
    return 0;
  /* a type (or qualifier) before the name, not an operator or a "(" */
  if (!(tok_ident(l, open - 2) || tok_is(l, open - 2, "*") ||
        tok_is(l, open - 2, "&") || tok_is(l, open - 2, ">") ||
        tok_is(l, open - 2, "::")) ||
      is_keyword(l, open - 2) || tok_is(l, open - 2, "return"))
    return 0;
  return tok_is(l, close + 1, "{") || tok_is(l, close + 1, ";") ||
         tok_is(l, close + 1, "const") || tok_is(l, close + 1, "noexcept") ||
         tok_is(l, close + 1, "->") || tok_is(l, close + 1, "override") ||
         tok_is(l, close + 1, ":") || tok_is(l, close + 1, "__attribute__");
}

/* Whether a declaration may start at token I: after ; { } or a
 * preprocessor line, first in a parameter list or a for, or after a comma
 * of one (not of a call's arguments). */
static int decl_start(const struct cutok_list *l, size_t i)
{
  size_t j;

  if (i == 0 || tok_is(l, i - 1, ";") || tok_is(l, i - 1, "{") ||
      tok_is(l, i - 1, "}") || l->v[i - 1].kind == CUTOK_PP)
    return 1;
  if (tok_is(l, i - 1, "("))
    return params_paren(l, i - 1);
  if (!tok_is(l, i - 1, ","))
    return 0;
  for (j = i - 1; j-- > 0;) { /* the bracket the comma sits in */
    if ((tok_is(l, j, ")") || tok_is(l, j, "]") || tok_is(l, j, "}")) &&
        l->v[j].match >= 0 && (size_t)l->v[j].match < j) {
      j = (size_t)l->v[j].match;
      continue;
    }
    if (tok_is(l, j, "("))
      return params_paren(l, j);
    if (tok_is(l, j, "[") || tok_is(l, j, "{") || tok_is(l, j, ";") ||
        tok_is(l, j, "<<<"))
      return tok_is(l, j, ";") || tok_is(l, j, "{");
  }
  return 1;
}

/* "#define NAME 123": a constant. */
static int define_scalar(const struct cutok_list *l, size_t i,
                         struct decl_table *t)
{
  const char *p = l->src + l->v[i].off, *e = p + l->v[i].len;
  char name[64];
  size_t n;

  p++;
  while (p < e && (*p == ' ' || *p == '\t'))
    p++;
  if (e - p < 7 || strncmp(p, "define", 6) || (p[6] != ' ' && p[6] != '\t'))
    return 0;
  p += 7;
  while (p < e && (*p == ' ' || *p == '\t'))
    p++;
  for (n = 0; p + n < e && (isalnum((unsigned char)p[n]) || p[n] == '_');)
    n++;
  if (!n || n >= sizeof(name) || p[n] == '(')
    return 0;
  snprintf(name, sizeof(name), "%.*s", (int)n, p);
  p += n;
  while (p < e && (*p == ' ' || *p == '\t' || *p == '('))
    p++;
  if (p < e && (isdigit((unsigned char)*p) || *p == '-' || *p == '.'))
    return decl_add(t, name, ANALYZE_VAL_SCALAR);
  return 0;
}

static const char *const alloc_calls[] = {"cudaMalloc",
                                          "cudaMallocAsync",
                                          "cudaMallocManaged",
                                          "cudaMallocPitch",
                                          "cudaMallocFromPoolAsync",
                                          "ncclMemAlloc",
                                          "cuMemAlloc",
                                          NULL};

static int add_buffer(struct analyze_report *r, const char *name,
                      const char *size, const char *alloc, int line)
{
  struct analyze_buffer *nv;
  size_t i;

  if (!*name)
    return 0;
  for (i = 0; i < r->nbufs; i++)
    if (!strcmp(r->bufs[i].name, name))
      return 0;
  nv = realloc(r->bufs, (r->nbufs + 1) * sizeof(*nv));
  if (!nv)
    return ERR_NOMEM;
  r->bufs = nv;
  snprintf(nv[r->nbufs].name, ANALYZE_TEXT, "%s", name);
  snprintf(nv[r->nbufs].size, ANALYZE_TEXT, "%s", size);
  snprintf(nv[r->nbufs].alloc, sizeof(nv[0].alloc), "%s", alloc);
  nv[r->nbufs].line = line;
  r->nbufs++;
  return 0;
}

static int cmp_decl(const void *a, const void *b)
{
  return strcmp(((const struct analyze_decl *)a)->name,
                ((const struct analyze_decl *)b)->name);
}

/* Pass 0: the file's declarations and allocations. */
static int scan_decls(struct ctx *c)
{
  const struct cutok_list *l = c->l;
  struct decl_table t = {NULL, 0, 0};
  size_t i, st[ANALYZE_MAX_ARGS], en[ANALYZE_MAX_ARGS];
  char key[ANALYZE_TEXT], size[ANALYZE_TEXT];
  int rc = 0, k, n;

  for (i = 0; i < l->n && !rc; i++) {
    if (l->v[i].kind == CUTOK_PP) {
      rc = define_scalar(l, i, &t);
      continue;
    }
    if (tok_ident(l, i) && tok_is(l, i + 1, "(") && l->v[i + 1].match > 0) {
      char nm[64];
      cutok_text(l, i, nm, sizeof(nm));
      for (k = 0; alloc_calls[k] && strcmp(nm, alloc_calls[k]); k++)
        ;
      if (alloc_calls[k]) { /* cudaMalloc(&X, size): X is a buffer */
        n = split_args(l, i + 1, st, en, ANALYZE_MAX_ARGS);
        if (n >= 1) {
          buffer_key(l, st[0], en[0], key, sizeof(key));
          size[0] = '\0';
          if (n >= 2 && strcmp(nm, "cudaMallocPitch"))
            cutok_span(l, st[1], en[1], size, sizeof(size));
          rc = add_buffer(c->r, key, size, nm, l->v[i].line);
          if (!rc && *key && !strchr(key, '.') && !strchr(key, '>'))
            rc = decl_add(&t, key, ANALYZE_VAL_BUFFER);
        }
      } else if (!strcmp(nm, "rt_alloc") && i >= 2) {
        /* X = (T *)rt_alloc(ctx, "name", size, ...) */
        size_t eq = i;
        while (eq > 0 && !tok_is(l, eq, "=") && !tok_is(l, eq, ";") &&
               !tok_is(l, eq, "{"))
          eq--;
        n = split_args(l, i + 1, st, en, ANALYZE_MAX_ARGS);
        if (tok_is(l, eq, "=") && n >= 3) {
          size_t s = lvalue_start(l, 0, eq);
          buffer_key(l, s, eq, key, sizeof(key));
          cutok_span(l, st[2], en[2], size, sizeof(size));
          rc = add_buffer(c->r, key, size, "rt_alloc", l->v[i].line);
        }
      }
    }
    if (tok_ident(l, i) && !rc && decl_start(l, i))
      rc = decl_at(l, i, &t);
  }
  if (rc) {
    free(t.v);
    return err_set(c->e, ERR_NOMEM, "out of memory");
  }
  if (t.n)
    qsort(t.v, t.n, sizeof(t.v[0]), cmp_decl);
  c->r->decls = t.v;
  c->r->ndecls = t.n;
  return 0;
}

enum analyze_value analyze_value_kind(const struct analyze_report *r,
                                      const char *name)
{
  const char *last = name, *p;
  struct analyze_decl k = {"", ANALYZE_VAL_UNKNOWN}, *hit;

  for (p = name; *p; p++)
    if (*p == '.' || (*p == '>' && p > name && p[-1] == '-'))
      last = p + 1;
  if (!*last || !r->ndecls)
    return ANALYZE_VAL_UNKNOWN;
  snprintf(k.name, sizeof(k.name), "%s", last);
  hit = bsearch(&k, r->decls, r->ndecls, sizeof(k), cmp_decl);
  return hit ? hit->kind : ANALYZE_VAL_UNKNOWN;
}

static int add_flow(struct analyze_report *r, const char *buf, size_t p,
                    size_t q, int carried)
{
  struct analyze_flow *nv;
  size_t i;
  for (i = 0; i < r->nflows; i++)
    if (r->flows[i].producer == (int)p && r->flows[i].consumer == (int)q &&
        !strcmp(r->flows[i].buffer, buf))
      return 0;
  nv = realloc(r->flows, (r->nflows + 1) * sizeof(*nv));
  if (!nv)
    return ERR_NOMEM;
  r->flows = nv;
  snprintf(nv[r->nflows].buffer, ANALYZE_TEXT, "%s", buf);
  nv[r->nflows].producer = (int)p;
  nv[r->nflows].consumer = (int)q;
  nv[r->nflows].carried = carried;
  r->nflows++;
  return 0;
}

static int is_comm(const struct analyze_op *o)
{
  return o->kind == ANALYZE_NCCL &&
         (!strcmp(o->category, "collective") || !strcmp(o->category, "p2p"));
}

static int is_producer(const struct analyze_op *o)
{
  return o->kind == ANALYZE_LAUNCH ||
         (o->kind == ANALYZE_GEMM && (!o->external || o->writes_assumed)) ||
         o->kind == ANALYZE_COPY || is_comm(o);
}

/* Whether a loop holds both ops (same function): then a later P's writes
 * reach Q in the next iteration. */
static int share_loop(const struct analyze_op *p, const struct analyze_op *q)
{
  int k;
  for (k = 0; k < q->nloops; k++)
    if (p->tok >= q->loop_lo[k] && p->tok <= q->loop_hi[k])
      return 1;
  return 0;
}

/* Edges into and out of communication: for each buffer an op reads, the
 * latest earlier writer in the same function (else any function), and,
 * inside a loop, the last writer after it in that loop (what the previous
 * iteration wrote: a ring's receive read by the next step's kernel); one
 * side of every edge is a collective or send/recv. */
static int dataflow(struct analyze_report *r)
{
  size_t q, p;
  int k, m;

  for (q = 0; q < r->nops; q++) {
    const struct analyze_op *o = &r->ops[q];
    for (k = 0; k < o->nreads; k++) {
      long same = -1, other = -1, later = -1, best;
      if (!is_comm(o) && o->kind != ANALYZE_LAUNCH &&
          o->kind != ANALYZE_GEMM && o->kind != ANALYZE_COPY && !o->external)
        break;
      for (p = 0; p < r->nops; p++) {
        const struct analyze_op *w = &r->ops[p];
        int writes = 0;
        if (p == q || !is_producer(w) || (!is_comm(o) && !is_comm(w)))
          continue;
        for (m = 0; m < w->nwrites; m++)
          if (!strcmp(w->writes[m], o->reads[k]))
            writes = 1;
        if (!writes)
          continue;
        if (w->func == o->func) {
          if (p < q)
            same = (long)p; /* the latest earlier writer */
          else if (share_loop(w, o))
            later = (long)p; /* the last writer after it in the loop */
        } else if (other < 0) {
          other = (long)p;
        }
      }
      best = same >= 0 ? same : other;
      if (best >= 0 && add_flow(r, o->reads[k], (size_t)best, q, 0))
        return ERR_NOMEM;
      if (later >= 0 && add_flow(r, o->reads[k], (size_t)later, q, 1))
        return ERR_NOMEM;
    }
  }
  return 0;
}

/* Remove external calls that met no collective's buffer; renumber. */
static void drop_unused_external(struct analyze_report *r)
{
  size_t i, j = 0, f;
  long *map = malloc((r->nops + 1) * sizeof(long));

  if (!map)
    return; /* keeping them is harmless */
  for (i = 0; i < r->nops; i++) {
    int used = !r->ops[i].external;
    for (f = 0; !used && f < r->nflows; f++)
      used = r->flows[f].producer == (int)i || r->flows[f].consumer == (int)i;
    map[i] = used ? (long)j : -1;
    if (used)
      r->ops[j++] = r->ops[i];
  }
  r->nops = j;
  for (f = 0; f < r->nflows; f++) {
    r->flows[f].producer = (int)map[r->flows[f].producer];
    r->flows[f].consumer = (int)map[r->flows[f].consumer];
  }
  free(map);
}

struct analyze_report *analyze_source(const char *name, const char *src,
                                      size_t len, struct err *e)
{
  struct cutok_list l;
  struct analyze_report *r = calloc(1, sizeof(*r));
  struct ctx c;
  int rc;

  if (!r) {
    err_set(e, ERR_NOMEM, "out of memory");
    return NULL;
  }
  snprintf(r->file, sizeof(r->file), "%s", name);
  rc = cutok_lex(src, len, &l, e);
  if (rc) {
    err_wrap(e, "%s", name);
    goto fail;
  }
  memset(&c, 0, sizeof(c));
  c.l = &l;
  c.r = r;
  c.e = e;
  if ((rc = scan_decls(&c)) != 0 || (rc = walk(&c, 1)) != 0 ||
      (rc = walk(&c, 0)) != 0) {
    err_wrap(e, "%s", name);
    goto fail;
  }
  if (dataflow(r)) {
    err_set(e, ERR_NOMEM, "out of memory");
    goto fail;
  }
  drop_unused_external(r);
  cutok_release(&l);
  return r;
fail:
  cutok_release(&l);
  analyze_report_free(r);
  return NULL;
}

struct analyze_report *analyze_file(const char *path, struct err *e)
{
  size_t len;
  char *src = file_read(path, 8u << 20, &len, e);
  struct analyze_report *r;

  if (!src)
    return NULL;
  r = analyze_source(path, src, len, e);
  free(src);
  return r;
}

void analyze_report_free(struct analyze_report *r)
{
  if (!r)
    return;
  free(r->ops);
  free(r->funcs);
  free(r->flows);
  free(r->bufs);
  free(r->decls);
  free(r);
}

void analyze_count(const struct analyze_report *r, struct analyze_counts *c)
{
  size_t i;

  memset(c, 0, sizeof(*c));
  for (i = 0; i < r->nops; i++) {
    const struct analyze_op *o = &r->ops[i];
    c->collectives +=
        o->kind == ANALYZE_NCCL && !strcmp(o->category, "collective");
    c->p2p += o->kind == ANALYZE_NCCL && !strcmp(o->category, "p2p");
    c->launches += o->kind == ANALYZE_LAUNCH;
    c->gemms += o->kind == ANALYZE_GEMM;
    c->syncs += o->kind == ANALYZE_SYNC || o->kind == ANALYZE_EVENT;
  }
}

const char *analyze_comm_phrase(const struct analyze_report *r, char *out,
                                size_t n)
{
  struct analyze_counts c;

  analyze_count(r, &c);
  snprintf(out, n, "%zu collectives, %zu send/recv", c.collectives, c.p2p);
  return out;
}

size_t analyze_host_comm_count(const struct analyze_report *r)
{
  struct analyze_counts c;

  analyze_count(r, &c);
  return c.collectives + c.p2p;
}
