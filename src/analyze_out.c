/* analyze_out.c - the analysis report as text and JSON, and the
 * `cuco analyze` command. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "cmd.h"
#include "log.h"

static const char *kind_name(enum analyze_kind k)
{
  switch (k) {
  case ANALYZE_NCCL:
    return "nccl";
  case ANALYZE_LAUNCH:
    return "launch";
  case ANALYZE_GEMM:
    return "gemm";
  case ANALYZE_COPY:
    return "copy";
  case ANALYZE_EVENT:
    return "event";
  case ANALYZE_SYNC:
    return "sync";
  case ANALYZE_BLAS_STREAM:
    return "blas_stream";
  case ANALYZE_CALL:
    return "call";
  }
  return "?";
}

/* The phase an op belongs to in the compute/communication order, or NULL
 * for bookkeeping calls (init, windows, queries...). */
static const char *phase_of(const struct analyze_op *o)
{
  if (o->kind == ANALYZE_NCCL)
    return !strcmp(o->category, "collective") || !strcmp(o->category, "p2p")
               ? "comm"
               : NULL;
  if (o->kind == ANALYZE_LAUNCH || o->kind == ANALYZE_GEMM)
    return "compute";
  if (o->kind == ANALYZE_COPY)
    return "copy";
  if (o->kind == ANALYZE_SYNC || o->kind == ANALYZE_EVENT)
    return o->kind == ANALYZE_SYNC ? "sync" : "event";
  return NULL;
}

/* Distinct non-empty values of a field over the ops, in first-seen order. */
static json_t *distinct(const struct analyze_report *r, int stream)
{
  json_t *a = json_array();
  size_t i, j;

  for (i = 0; a && i < r->nops; i++) {
    const char *v = stream ? r->ops[i].stream : r->ops[i].comm_key;
    int seen = 0;
    if (!*v || (stream && r->ops[i].kind == ANALYZE_BLAS_STREAM))
      continue;
    for (j = 0; j < json_array_size(a); j++)
      if (!strcmp(json_string_value(json_array_get(a, j)), v))
        seen = 1;
    if (!seen)
      json_array_append_new(a, json_string(v));
  }
  return a;
}

static json_t *str_array(char v[][ANALYZE_TEXT], int n)
{
  json_t *a = json_array();
  int i;
  for (i = 0; a && i < n; i++)
    json_array_append_new(a, json_string(v[i]));
  return a;
}

static json_t *op_json(const struct analyze_report *r, size_t i)
{
  const struct analyze_op *o = &r->ops[i];
  json_t *j = json_pack(
      "{s:i, s:s, s:s, s:s, s:s, s:i, s:i, s:o, s:o, s:o}", "id", (int)i,
      "kind", kind_name(o->kind), "name", o->name, "category", o->category,
      "function", r->funcs[o->func].name, "line", o->line, "col", o->col,
      "args", str_array((char(*)[ANALYZE_TEXT])o->args, o->nargs), "reads",
      str_array((char(*)[ANALYZE_TEXT])o->reads, o->nreads), "writes",
      str_array((char(*)[ANALYZE_TEXT])o->writes, o->nwrites));
  if (!j)
    return NULL;
  if (o->via[0])
    json_object_set_new(j, "via", json_string(o->via));
  if (o->comm[0])
    json_object_set_new(j, "comm", json_string(o->comm));
  if (o->comm_key[0])
    json_object_set_new(j, "comm_key", json_string(o->comm_key));
  if (o->kind == ANALYZE_NCCL || o->kind == ANALYZE_LAUNCH ||
      o->kind == ANALYZE_GEMM || o->kind == ANALYZE_COPY ||
      o->kind == ANALYZE_EVENT || o->kind == ANALYZE_SYNC)
    json_object_set_new(j, "stream",
                        o->stream[0] ? json_string(o->stream) : json_null());
  if (o->kind == ANALYZE_LAUNCH) {
    json_object_set_new(j, "grid", json_string(o->grid));
    json_object_set_new(j, "block", json_string(o->block));
    json_object_set_new(j, "smem", json_string(o->smem));
    json_object_set_new(j, "writes_assumed", json_boolean(o->writes_assumed));
  }
  if (o->kind == ANALYZE_NCCL)
    json_object_set_new(j, "group",
                        o->group ? json_integer(o->group) : json_null());
  if (o->nscalars)
    json_object_set_new(
        j, "scalars",
        str_array((char(*)[ANALYZE_TEXT])o->scalars, o->nscalars));
  if (o->in_place)
    json_object_set_new(j, "in_place", json_true());
  return j;
}

json_t *analyze_report_json(const struct analyze_report *r)
{
  json_t *root = json_object(), *ops = json_array(), *funcs = json_array();
  json_t *flows = json_array(), *bufs = json_array(), *sum;
  struct analyze_counts cnt;
  size_t i;

  if (!root || !ops || !funcs || !flows || !bufs)
    goto fail;
  for (i = 0; i < r->nops; i++)
    json_array_append_new(ops, op_json(r, i));
  analyze_count(r, &cnt);
  for (i = 0; i < r->nbufs; i++)
    json_array_append_new(
        bufs, json_pack("{s:s, s:s, s:s, s:i}", "name", r->bufs[i].name,
                        "size", r->bufs[i].size, "alloc", r->bufs[i].alloc,
                        "line", r->bufs[i].line));
  for (i = 0; i < r->nfuncs; i++) {
    const struct analyze_func *f = &r->funcs[i];
    json_t *fj =
        json_pack("{s:s, s:i, s:i, s:b}", "name", f->name, "line", f->line,
                  "end_line", f->end_line, "kernel", f->is_kernel);
    json_t *order = json_array(), *ids = json_array(), *pw = json_array();
    size_t k;
    int p;
    const char *last = NULL;
    for (k = 0; k < r->nops; k++) {
      const char *ph;
      if (r->ops[k].func != (int)i)
        continue;
      json_array_append_new(ids, json_integer((json_int_t)k));
      ph = phase_of(&r->ops[k]);
      if (ph && (!last || strcmp(last, ph)))
        json_array_append_new(order, json_string(ph));
      if (ph)
        last = ph;
    }
    for (p = 0; f->is_kernel && p < f->nparams; p++)
      if (f->param_written[p])
        json_array_append_new(pw, json_string(f->params[p]));
    json_object_set_new(fj, "ops", ids);
    json_object_set_new(fj, "order", order);
    if (f->is_kernel)
      json_object_set_new(fj, "writes_params", pw);
    else
      json_decref(pw);
    json_array_append_new(funcs, fj);
  }
  for (i = 0; i < r->nflows; i++)
    json_array_append_new(
        flows, json_pack("{s:s, s:i, s:s, s:i, s:s, s:b}", "buffer",
                         r->flows[i].buffer, "producer", r->flows[i].producer,
                         "producer_name", r->ops[r->flows[i].producer].name,
                         "consumer", r->flows[i].consumer, "consumer_name",
                         r->ops[r->flows[i].consumer].name, "carried",
                         r->flows[i].carried));
  sum = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "collectives",
                  (int)cnt.collectives, "p2p", (int)cnt.p2p, "comm_calls",
                  (int)(cnt.collectives + cnt.p2p), "launches",
                  (int)cnt.launches, "gemms", (int)cnt.gemms, "syncs",
                  (int)cnt.syncs);
  json_object_set_new(root, "schema", json_integer(1));
  json_object_set_new(root, "file", json_string(r->file));
  json_object_set_new(root, "communicators", distinct(r, 0));
  json_object_set_new(root, "streams", distinct(r, 1));
  json_object_set_new(root, "summary", sum);
  json_object_set_new(root, "functions", funcs);
  json_object_set_new(root, "ops", ops);
  json_object_set_new(root, "dataflow", flows);
  json_object_set_new(root, "buffers", bufs);
  return root;
fail:
  json_decref(root);
  json_decref(ops);
  json_decref(funcs);
  json_decref(flows);
  json_decref(bufs);
  return NULL;
}

static void list(struct buf *out, const char *label, char v[][ANALYZE_TEXT],
                 int n)
{
  int i;
  if (!n)
    return;
  buf_printf(out, " %s=", label);
  for (i = 0; i < n; i++)
    buf_printf(out, "%s%s", i ? "," : "", v[i]);
}

int analyze_report_text(const struct analyze_report *r, struct buf *out)
{
  json_t *j = analyze_report_json(r);
  json_t *comms, *streams, *funcs, *sum;
  char phrase[96];
  size_t i, k;

  if (!j)
    return ERR_NOMEM;
  comms = json_object_get(j, "communicators");
  streams = json_object_get(j, "streams");
  funcs = json_object_get(j, "functions");
  sum = json_object_get(j, "summary");
  buf_printf(out, "file: %s\n", r->file);
  buf_printf(out,
             "summary: %s, %d kernel launches, %d GEMMs, %d events/syncs\n",
             analyze_comm_phrase(r, phrase, sizeof(phrase)),
             (int)json_integer_value(json_object_get(sum, "launches")),
             (int)json_integer_value(json_object_get(sum, "gemms")),
             (int)json_integer_value(json_object_get(sum, "syncs")));
  buf_puts(out, "communicators:");
  for (i = 0; i < json_array_size(comms); i++)
    buf_printf(out, " %s", json_string_value(json_array_get(comms, i)));
  buf_puts(out, json_array_size(comms) ? "\nstreams:" : " (none)\nstreams:");
  for (i = 0; i < json_array_size(streams); i++)
    buf_printf(out, " %s", json_string_value(json_array_get(streams, i)));
  buf_puts(out, "\n");
  if (r->nbufs)
    buf_puts(out, "device buffers:");
  for (i = 0; i < r->nbufs; i++)
    buf_printf(out, " %s (%s%s%s)%s", r->bufs[i].name, r->bufs[i].alloc,
               r->bufs[i].size[0] ? " " : "", r->bufs[i].size,
               i + 1 < r->nbufs ? "," : "\n");
  for (i = 0; i < r->nfuncs; i++) {
    const struct analyze_func *f = &r->funcs[i];
    json_t *order = json_object_get(json_array_get(funcs, i), "order");
    int any = 0;
    for (k = 0; k < r->nops; k++)
      any |= r->ops[k].func == (int)i;
    if (!any)
      continue;
    buf_printf(out, "\n%s %s (line %d)", f->is_kernel ? "kernel" : "function",
               f->name, f->line);
    for (k = 0; k < json_array_size(order); k++)
      buf_printf(out, "%s%s", k ? " -> " : "  order: ",
                 json_string_value(json_array_get(order, k)));
    buf_puts(out, "\n");
    for (k = 0; k < r->nops; k++) {
      const struct analyze_op *o = &r->ops[k];
      if (o->func != (int)i)
        continue;
      buf_printf(out, "  %4d:%-3d %-8s %s", o->line, o->col, o->category,
                 o->name);
      if (o->kind == ANALYZE_LAUNCH)
        buf_printf(out, " <<<%s, %s%s%s>>>", o->grid, o->block,
                   o->smem[0] ? ", " : "", o->smem);
      list(out, "reads", (char(*)[ANALYZE_TEXT])o->reads, o->nreads);
      list(out, "writes", (char(*)[ANALYZE_TEXT])o->writes, o->nwrites);
      if (o->writes_assumed)
        buf_puts(out, " (writes assumed)");
      if (o->comm[0])
        buf_printf(out, " comm=%s", o->comm);
      if (o->stream[0] && o->kind != ANALYZE_BLAS_STREAM)
        buf_printf(out, " stream=%s", o->stream);
      if (o->group)
        buf_printf(out, " [group %d]", o->group);
      if (o->via[0])
        buf_printf(out, " via %s", o->via);
      list(out, "scalars", (char(*)[ANALYZE_TEXT])o->scalars, o->nscalars);
      if (o->in_place)
        buf_puts(out, " (in place)");
      buf_puts(out, "\n");
    }
  }
  if (r->nflows)
    buf_puts(out, "\ndataflow:\n");
  for (i = 0; i < r->nflows; i++) {
    const struct analyze_op *p = &r->ops[r->flows[i].producer];
    const struct analyze_op *c = &r->ops[r->flows[i].consumer];
    buf_printf(out, "  %s: %s (line %d) -> %s (line %d)%s\n",
               r->flows[i].buffer, p->name, p->line, c->name, c->line,
               r->flows[i].carried ? " (next iteration)" : "");
  }
  json_decref(j);
  return buf_error(out);
}

int cmd_analyze(struct cmd_ctx *ctx, int argc, char **argv)
{
  static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  struct err e = {0, ""};
  struct analyze_report *r;
  int as_json = 0, opt, rc = CMD_OK;

  while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (opt == 'j')
      as_json = 1;
    else if (opt == 'h')
      return cmd_usage(ctx, 1);
    else
      return cmd_usage(ctx, 0);
  }
  if (optind + 1 != argc)
    return cmd_bad_usage(ctx, optind < argc ? "one FILE.cu expected"
                                            : "FILE.cu missing");
  r = analyze_file(argv[optind], &e);
  if (!r) {
    cmd_error(ctx, "%s", e.msg);
    return CMD_FAIL;
  }
  if (as_json) {
    json_t *j = analyze_report_json(r);
    char *s = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    if (s)
      puts(s);
    else
      rc = CMD_FAIL;
    free(s);
    json_decref(j);
  } else {
    struct buf out = BUF_INIT(64u << 20);
    if (analyze_report_text(r, &out))
      rc = CMD_FAIL;
    else
      fputs(buf_str(&out), stdout);
    buf_release(&out);
  }
  analyze_report_free(r);
  return rc;
}
