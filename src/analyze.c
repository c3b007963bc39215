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
    buffer_key(l, st[k], en[k], key, sizeof(key));
    if (op->writes_assumed || (k < (size_t)c->r->funcs[fi].nparams &&
                               c->r->funcs[fi].param_written[k]))
      add_key(op->writes, &op->nwrites, key);
    else
      add_key(op->reads, &op->nreads, key);
  }
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
    if (!arg_may_be_buffer(c->l, st[k], en[k]))
      continue;
    buffer_key(c->l, st[k], en[k], key, sizeof(key));
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
    size_t e;
    if (!(tok_is(l, i, "=") && tok_ident(l, i - 1) && tok_is(l, i - 2, "*")))
      continue;
    for (e = i + 1; e < close && !tok_is(l, e, ";") && !tok_is(l, e, ",");)
      e = l->v[e].match > (long)e ? (size_t)l->v[e].match + 1 : e + 1;
    buffer_key(l, i + 1, e, keys[n], ANALYZE_TEXT);
    cutok_text(l, i - 1, names[n], 64);
    if (keys[n][0] && strcmp(keys[n], names[n]))
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
  if (!rc)
    resolve_aliases(c, open, first_op);
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

/* Which kernel parameters are stored through: "p[i] = ", "*p = ",
 * "cast<T*>(p)[i] = ", "atomicAdd(&p[i], ...)", also through a local
 * alias "T *q = p + off;". */
static void kernel_writes(const struct cutok_list *l, size_t open,
                          struct analyze_func *f)
{
  size_t close = (size_t)l->v[open].match, i, j;
  char alias[64][64];
  int alias_of[64], nalias = 0, k;

  for (i = open + 1; i < close; i++) {
    /* a declaration "... q = p ..." makes q an alias of p */
    if (tok_is(l, i, "=") && tok_ident(l, i - 1) && nalias < 64) {
      char key[ANALYZE_TEXT];
      size_t e = i + 1;
      while (e < close && !tok_is(l, e, ";") && !tok_is(l, e, ","))
        e = l->v[e].match > (long)e ? (size_t)l->v[e].match + 1 : e + 1;
      buffer_key(l, i + 1, e, key, sizeof(key));
      for (k = 0; k < f->nparams; k++)
        if (!strcmp(key, f->params[k]) && tok_is(l, i - 2, "*")) {
          cutok_text(l, i - 1, alias[nalias], 64);
          alias_of[nalias++] = k;
        }
    }
    if (is_assign(l, i) || tok_is(l, i, "++") || tok_is(l, i, "--")) {
      size_t s = lvalue_start(l, open, i);
      int deref = 0;
      for (j = s; j < i; j++)
        if (tok_is(l, j, "[") || tok_is(l, j, "*"))
          deref = 1;
      for (j = s; deref && j < i; j++) {
        if (!tok_ident(l, j))
          continue;
        if ((k = name_index(f->params, f->nparams, l, j)) >= 0)
          f->param_written[k] = 1;
        if ((k = name_index(alias, nalias, l, j)) >= 0)
          f->param_written[alias_of[k]] = 1;
      }
    }
    if (tok_ident(l, i) && tok_is(l, i + 1, "(") && l->v[i + 1].match > 0) {
      char nm[32];
      cutok_text(l, i, nm, sizeof(nm));
      if (!strncmp(nm, "atomic", 6)) {
        size_t e = i + 2;
        while (e < (size_t)l->v[i + 1].match && !tok_is(l, e, ","))
          e++;
        for (j = i + 2; j < e; j++) {
          if ((k = name_index(f->params, f->nparams, l, j)) >= 0)
            f->param_written[k] = 1;
          if ((k = name_index(alias, nalias, l, j)) >= 0)
            f->param_written[alias_of[k]] = 1;
        }
      }
    }
  }
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
    for (j = st[q]; j < en[q] && !tok_is(l, j, "="); j++)
      if (tok_ident(l, j))
        last = j;
    if (last)
      cutok_text(l, last, f->params[f->nparams++], 64);
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
      if (f.is_kernel)
        kernel_writes(l, i, &f);
      c->r->funcs[c->r->nfuncs++] = f;
    } else if ((rc = scan_body(c, i, fi++)) != 0) {
      return rc;
    }
    i = (size_t)l->v[i].match; /* nested lambdas belong to this body */
  }
  return 0;
}

static int add_flow(struct analyze_report *r, const char *buf, size_t p,
                    size_t q)
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

/* Edges into and out of communication: for each buffer a collective reads,
 * the latest earlier writer in the same function (else any function);
 * for each buffer it writes, the later readers in the same function. */
static int dataflow(struct analyze_report *r)
{
  size_t q, p;
  int k, m;

  for (q = 0; q < r->nops; q++) {
    const struct analyze_op *o = &r->ops[q];
    for (k = 0; k < o->nreads; k++) {
      long same = -1, other = -1, best;
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
        } else if (other < 0) {
          other = (long)p;
        }
      }
      best = same >= 0 ? same : other;
      if (best >= 0 && add_flow(r, o->reads[k], (size_t)best, q))
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
  if ((rc = walk(&c, 1)) != 0 || (rc = walk(&c, 0)) != 0) {
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
  free(r);
}

size_t analyze_host_comm_count(const struct analyze_report *r)
{
  size_t i, n = 0;
  for (i = 0; i < r->nops; i++)
    n += is_comm(&r->ops[i]);
  return n;
}
