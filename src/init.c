/* init.c - `cuco init`: scaffold a workload folder (contracts.md section
 * 2) that analyze, transform, eval and evolve accept. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allow.h"
#include "analyze.h"
#include "build.h"
#include "cmd.h"
#include "file.h"
#include "init_ff.h"
#include "initfrom.h"
#include "log.h"
#include "toolchain.h"
#include "transform.h"

/* The template implementation: compiled against runtime/ in the tests. */
static const char tpl_baseline[] =
    "// baseline.cu - host-driven implementation of workload \"@NAME@\".\n"
    "//\n"
    "// Scaffolded by `cuco init`: every rank scales its input shard\n"
    "// (y = 2 x + 1) in a kernel, then a host ncclAllGather assembles all\n"
    "// ranks' shards into the output.  Replace the kernel and the "
    "collective\n"
    "// with your problem; keep the three ABI functions (runtime/runtime.h).\n"
    "#include <stdlib.h>\n"
    "\n"
    "#include \"rt.cuh\"\n"
    "\n"
    "struct state {\n"
    "  float *x;   // INPUT: this rank's shard, n floats\n"
    "  float *y;   // SCRATCH: the scaled shard\n"
    "  float *out; // OUTPUT: nranks * n floats, rank r's shard at r * n\n"
    "  long long n;\n"
    "};\n"
    "\n"
    "__global__ void scale_kernel(const float *x, float *y, long long n)\n"
    "{\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i "
    "< n;\n"
    "       i += (long long)gridDim.x * blockDim.x)\n"
    "    y[i] = 2.0f * x[i] + 1.0f;\n"
    "}\n"
    "\n"
    "extern \"C\" int wl_setup(struct wl_ctx *ctx, const struct wl_problem "
    "*p)\n"
    "{\n"
    "  struct state *st = (struct state *)calloc(1, sizeof(*st));\n"
    "  if (!st)\n"
    "    return rt_fail(ctx, \"out of memory\");\n"
    "  rt_set_user(ctx, st);\n"
    "  st->n = wl_param(p, \"N\", 1 << 20);\n"
    "  if (st->n <= 0)\n"
    "    return rt_fail(ctx, \"N must be positive\");\n"
    "  st->x = (float *)rt_alloc(ctx, \"x\", st->n * sizeof(float), "
    "RT_INPUT,\n"
    "                            RT_F32, 0);\n"
    "  st->y = (float *)rt_alloc(ctx, \"y\", st->n * sizeof(float), "
    "RT_SCRATCH,\n"
    "                            RT_F32, 0);\n"
    "  st->out = (float *)rt_alloc(ctx, \"out\",\n"
    "                              st->n * sizeof(float) * p->nranks, "
    "RT_OUTPUT,\n"
    "                              RT_F32, 0);\n"
    "  if (!st->x || !st->y || !st->out)\n"
    "    return -1;\n"
    "  return rt_output_shape(ctx, \"out\", p->nranks, st->n);\n"
    "}\n"
    "\n"
    "extern \"C\" int wl_step(struct wl_ctx *ctx)\n"
    "{\n"
    "  struct state *st = (struct state *)rt_get_user(ctx);\n"
    "  cudaStream_t s = rt_stream(ctx);\n"
    "  int blocks = (int)((st->n + 255) / 256 < 1024 ? (st->n + 255) / 256 : "
    "1024);\n"
    "\n"
    "  scale_kernel<<<blocks, 256, 0, s>>>(st->x, st->y, st->n);\n"
    "  RT_LAUNCH(ctx);\n"
    "  RT_NCCL(ctx, ncclAllGather(st->y, st->out, st->n, ncclFloat, "
    "rt_comm(ctx),\n"
    "                             s));\n"
    "  return 0;\n"
    "}\n"
    "\n"
    "extern \"C\" void wl_teardown(struct wl_ctx *ctx)\n"
    "{\n"
    "  free(rt_get_user(ctx));\n"
    "  rt_set_user(ctx, NULL);\n"
    "}\n";

static const char tpl_reference[] =
    "// reference.cu - the trusted reference of workload \"@NAME@\" "
    "(frozen).\n"
    "//\n"
    "// Scaffolded by `cuco init` for the template baseline: the expected "
    "output\n"
    "// is every rank's input shard scaled by 2 x + 1, in rank order.  If "
    "you\n"
    "// change the baseline's math, change this file to match.\n"
    "#include <string.h>\n"
    "\n"
    "#include \"rt.cuh\"\n"
    "\n"
    "__global__ void ref_scale_kernel(const float *x, float *y, long long n)\n"
    "{\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i "
    "< n;\n"
    "       i += (long long)gridDim.x * blockDim.x)\n"
    "    y[i] = 2.0f * x[i] + 1.0f;\n"
    "}\n"
    "\n"
    "extern \"C\" int wl_reference(struct wl_ctx *ctx, const struct "
    "wl_problem *p,\n"
    "                            const char *output_name, void "
    "*expected_dev)\n"
    "{\n"
    "  long long n = wl_param(p, \"N\", 1 << 20);\n"
    "  float *exp = (float *)expected_dev;\n"
    "  cudaStream_t s = rt_ref_stream(ctx);\n"
    "  int r;\n"
    "\n"
    "  if (strcmp(output_name, \"out\") != 0)\n"
    "    return rt_fail(ctx, \"reference: unknown output '%s'\", "
    "output_name);\n"
    "  for (r = 0; r < p->nranks; r++) {\n"
    "    // the input of rank r lands in its slot, then is scaled in place\n"
    "    if (rt_input_regen(ctx, \"x\", r, exp + r * n) != 0)\n"
    "      return -1;\n"
    "    ref_scale_kernel<<<256, 256, 0, s>>>(exp + r * n, exp + r * n, n);\n"
    "    RT_LAUNCH(ctx);\n"
    "  }\n"
    "  return 0;\n"
    "}\n";

/* A name that is safe in file names, INI values and prompts. */
static int valid_name(const char *s)
{
  size_t n = strlen(s), i;
  if (n == 0 || n > 47)
    return 0;
  for (i = 0; i < n; i++)
    if (!(s[i] == '_' || s[i] == '-' || (s[i] >= 'a' && s[i] <= 'z') ||
          (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')))
      return 0;
  return 1;
}

static int write_file(const char *dir, const char *name, const char *text,
                      size_t len, struct err *e)
{
  char path[4096];

  snprintf(path, sizeof(path), "%s/%s", dir, name);
  return file_write(path, text, len, e);
}

/* The local files an imported program needs: every file it includes with
 * #include "NAME" that exists beside the including file, recursively
 * (rt.cuh and other runtime/ headers are not beside it and stay out).  Paths
 * are relative to the imported file's folder; rel[0] is the file itself. */
#define INIT_MAX_LOCAL 64
struct locals {
  char rel[INIT_MAX_LOCAL][256];
  int n;
};

static int locals_has(const struct locals *l, const char *rel)
{
  int i;
  for (i = 0; i < l->n; i++)
    if (!strcmp(l->rel[i], rel))
      return 1;
  return 0;
}

static void locals_add(struct locals *l, const char *rel)
{
  if (l->n < INIT_MAX_LOCAL && strlen(rel) < sizeof(l->rel[0]) &&
      !locals_has(l, rel))
    snprintf(l->rel[l->n++], sizeof(l->rel[0]), "%s", rel);
}

/* Add the files that text (the file srcdir/rel) includes to l. */
static void scan_includes(const char *srcdir, const char *rel,
                          const char *text, struct locals *l)
{
  const char *p = text, *slash = strrchr(rel, '/');
  int reldir = slash ? (int)(slash - rel + 1) : 0;

  while (p && *p) {
    const char *q = p, *name, *end;
    char cand[300], path[4096];
    while (*q == ' ' || *q == '\t')
      q++;
    p = strchr(p, '\n');
    if (p)
      p++;
    if (*q++ != '#')
      continue;
    while (*q == ' ' || *q == '\t')
      q++;
    if (strncmp(q, "include", 7))
      continue;
    q += 7;
    while (*q == ' ' || *q == '\t')
      q++;
    if (*q != '"' || !(end = strchr(q + 1, '"')) || end - q > 200 ||
        memchr(q, '\n', (size_t)(end - q)))
      continue;
    name = q + 1;
    snprintf(cand, sizeof(cand), "%.*s%.*s", reldir, rel, (int)(end - name),
             name);
    if (name[0] == '/' || strstr(cand, "..")) {
      log_warn("init: %s includes \"%.*s\": outside its folder, not copied",
               rel, (int)(end - name), name);
      continue;
    }
    snprintf(path, sizeof(path), "%s%s", srcdir, cand);
    if (access(path, R_OK) == 0)
      locals_add(l, cand);
  }
}

/* Follow the include graph from l's roots; the text of every file is
 * appended to all (for params_of).  Unreadable files are skipped. */
static void collect_locals(const char *srcdir, struct locals *l,
                           struct buf *all)
{
  int i;

  for (i = 0; i < l->n; i++) {
    char path[4096], *t;
    size_t len;
    struct err e2;
    snprintf(path, sizeof(path), "%s%s", srcdir, l->rel[i]);
    t = file_read(path, 8u << 20, &len, &e2);
    if (!t)
      continue;
    scan_includes(srcdir, l->rel[i], t, l);
    buf_append(all, t, len);
    buf_puts(all, "\n");
    free(t);
  }
}

/* One of the files the scaffold itself writes: never overwritten by a
 * copied include. */
static int is_ours(const char *rel)
{
  return !strcmp(rel, "workload.ini") || !strcmp(rel, "baseline.cu") ||
         !strcmp(rel, "reference.cu") || !strcmp(rel, "README.md") ||
         !strcmp(rel, "seed.cu") || !strcmp(rel, "cuco_run.sh") ||
         !strcmp(rel, "check.c");
}

/* Copy srcdir/rel to dir/rel, creating the folders in between. */
static int copy_local(const char *srcdir, const char *rel, const char *dir,
                      struct err *e)
{
  char path[4096], sub[4096];
  const char *s;
  size_t len;
  char *t;
  int rc;

  for (s = strchr(rel, '/'); s; s = strchr(s + 1, '/')) {
    snprintf(sub, sizeof(sub), "%s/%.*s", dir, (int)(s - rel), rel);
    if (mkdir(sub, 0777) && errno != EEXIST)
      return err_set(e, ERR_IO, "cannot create %s: %s", sub, strerror(errno));
  }
  snprintf(path, sizeof(path), "%s%s", srcdir, rel);
  t = file_read(path, 8u << 20, &len, e);
  if (!t)
    return e->code;
  rc = write_file(dir, rel, t, len, e);
  free(t);
  return rc;
}

/* The sections of an existing workload.ini beside the imported file that
 * fit the imported code as they are: [sizes], [sets], [tolerance], and the
 * ranks line.  Empty when there is none. */
static void workload_sections(const char *srcdir, struct buf *out, char *ranks,
                              char *libs, size_t n)
{
  char path[4096], *t, *line, *save = NULL;
  size_t len;
  struct err e2;
  int keep = 0, inwl = 0;

  snprintf(path, sizeof(path), "%sworkload.ini", srcdir);
  t = file_read(path, 1u << 20, &len, &e2);
  if (!t)
    return;
  for (line = strtok_r(t, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    if (line[0] == '[') {
      keep = !strncmp(line, "[sizes]", 7) || !strncmp(line, "[sets]", 6) ||
             !strncmp(line, "[tolerance]", 11);
      inwl = !strncmp(line, "[workload]", 10);
      if (keep)
        buf_printf(out, "\n%s\n", line);
      continue;
    }
    if (keep)
      buf_printf(out, "%s\n", line);
    else if (inwl && strchr(line, '=') &&
             (!strncmp(line, "ranks", 5) || !strncmp(line, "libs", 4))) {
      const char *v = strchr(line, '=') + 1;
      snprintf(line[0] == 'r' ? ranks : libs, n, "%s", v + strspn(v, " \t"));
    }
  }
  free(t);
}

/* Replace every "@NAME@" in tpl by name. */
static int expand(struct buf *out, const char *tpl, const char *name)
{
  const char *p;
  while ((p = strstr(tpl, "@NAME@")) != NULL) {
    buf_append(out, tpl, (size_t)(p - tpl));
    buf_puts(out, name);
    tpl = p + 6;
  }
  buf_puts(out, tpl);
  return buf_error(out);
}

/* The parameters a runtime implementation reads with
 * wl_param(p, "NAME", DEFAULT), as "NAME=DEFAULT,..." (first seen). */
static void params_of(const char *src, struct buf *out, struct buf *required)
{
  const char *p = src;
  int n = 0;

  while ((p = strstr(p, "wl_param(")) != NULL) {
    const char *q = strchr(p, '"'), *end, *def;
    char name[48];
    long long v;
    char *stop;
    p += 9;
    if (!q || q - p > 40 || !(end = strchr(q + 1, '"')) || end - q > 46)
      continue;
    snprintf(name, sizeof(name), "%.*s", (int)(end - q - 1), q + 1);
    def = end + 1;
    while (*def == ' ' || *def == ',')
      def++;
    v = strtoll(def, &stop, 0);
    if (stop == def || !valid_name(name) || strstr(buf_str(out), name) ||
        strstr(buf_str(required), name))
      continue;
    /* a negative default is the program's "no default: must be given" */
    if (v < 0)
      buf_printf(required, "%s%s", required->len ? " " : "", name);
    else
      buf_printf(out, "%s%s=%lld", n++ ? "," : "", name, v);
  }
}

static int has_func(const struct analyze_report *r, const char *name)
{
  size_t i;
  for (i = 0; i < r->nfuncs; i++)
    if (!strcmp(r->funcs[i].name, name))
      return 1;
  return 0;
}

static int uses_blas(const struct analyze_report *r)
{
  size_t i;
  for (i = 0; i < r->nops; i++)
    if (r->ops[i].kind == ANALYZE_GEMM ||
        r->ops[i].kind == ANALYZE_BLAS_STREAM)
      return 1;
  return 0;
}

/* The ini; sections (from a workload.ini beside the import) replace the
 * guessed [sizes], [sets] and [tolerance]; required names the parameters
 * the program reads without a default. */
static int make_ini(struct buf *o, const char *name, const char *from,
                    const struct analyze_report *r, const char *params,
                    const char *required, const char *sections,
                    const char *ranks, const char *libs)
{
  buf_printf(o,
             "; workload.ini of %s, scaffolded by cuco init%s%s.\n"
             "; Format: docs/contracts.md section 2.  Edit the sizes,\n"
             "; tolerance and space to fit the problem.\n"
             "[workload]\n"
             "name        = %s\n"
             "description = %s\n"
             "kind        = runtime\n"
             "ranks       = %s\n"
             "baselines   = baseline.cu\n"
             "seed        = seed.cu\n"
             "reference   = reference.cu\n"
             "libs        = %s\n",
             name, from ? " from " : "", from ? from : "", name,
             from ? "User program imported with cuco init; describe it here."
                  : "Each rank scales its shard (y = 2x + 1); an all-gather "
                    "assembles all shards.",
             ranks && *ranks ? ranks : "1,2,4,8",
             libs                ? libs
             : r && uses_blas(r) ? "cublas, cublasLt"
                                 : "");
  if (from && sections && *sections) {
    buf_printf(o,
               "\n; sizes, sets and tolerance from the workload.ini "
               "beside %s\n%s",
               from, sections);
  } else {
    if (from && !*params && !*required)
      buf_puts(o, "\n; no wl_param(...) reads found: name the sizes here\n"
                  "[sizes]\nsmall_a = N=4096\n");
    else if (from && *required) {
      const char *q = required;
      buf_printf(o,
                 "\n; the program reads %s with no default: 1024 is a "
                 "placeholder,\n; give them real values\n[sizes]\n"
                 "small_a = %s",
                 required, params);
      while (*q) {
        size_t k = strcspn(q, " ");
        buf_printf(o, "%s%.*s=1024", q == required && !*params ? "" : ",",
                   (int)k, q);
        q += k + (q[k] == ' ');
      }
      buf_puts(o, "\n");
    } else if (from)
      buf_printf(o,
                 "\n; the defaults the program reads with wl_param()\n"
                 "[sizes]\nsmall_a = %s\n",
                 params);
    else
      buf_puts(o, "\n[sizes]\nsmall_a  = N=4096\nsmall_b  = N=1000\n"
                  "full_64m = N=16777216\n");
    buf_printf(o,
               "\n[sets]\nverify = %s\nbench  = %s\n"
               "\n[tolerance]\nrel_l2 = %s\n",
               from ? "small_a" : "small_a, small_b",
               from ? "small_a" : "full_64m", from ? "2e-2" : "1e-6");
  }
  buf_puts(o, "\n[space]\nbackend   = lsa\n"
              "placement = deferred, per_tile, split\n"
              "sync      = global, per_peer, per_chunk\n"
              "issuer    = thread, warp, cta\n"
              "chunk     = 64KiB..64MiB\n"
              "\n[params]\ncomm_ctas = 1, 2, 4, 8, 16\n");
  return buf_error(o);
}

static int make_readme(struct buf *o, const char *name, const char *from,
                       const struct analyze_report *r, int have_ref)
{
  buf_printf(o, "# Workload %s\n\n", name);
  if (!from) {
    buf_puts(o, "Scaffolded by `cuco init` from the built-in template: "
                "every rank computes\n`y = 2x + 1` on its input shard "
                "`x` (N floats) in a kernel, then a host\n`ncclAllGather` "
                "assembles all shards into `out` (nranks x N).\n"
                "`reference.cu` computes the same on the runtime's "
                "regenerated inputs.\n");
  } else {
    buf_printf(o,
               "Imported by `cuco init` from `%s` (copied to "
               "`baseline.cu`).\n\n",
               from);
    if (!have_ref)
      buf_puts(o, "**Missing**: `reference.cu` (defining `wl_reference`, "
                  "see runtime/runtime.h).\nThe harness verifies against "
                  "it; write it before `cuco eval`.\n");
  }
  if (r) {
    struct buf t = BUF_INIT(1u << 20);
    if (analyze_report_text(r, &t) == 0)
      buf_printf(o,
                 "\n## Communication found by `cuco analyze`\n\n```\n%s"
                 "```\n",
                 buf_str(&t));
    buf_release(&t);
  }
  buf_puts(o, "\n## Next steps\n\nIn this folder:\n\n"
              "1. `cuco analyze baseline.cu`\n"
              "2. `cuco eval . --impl baseline.cu --compile-only` builds the "
              "baseline (no GPU needed)\n"
              "3. `cuco eval . --impl baseline.cu` verifies and times it "
              "(needs a GPU)\n"
              "4. `cuco transform .` writes `seed.cu` (device-initiated)\n"
              "5. `cuco evolve .`\n");
  return buf_error(o);
}

/* workload.ini must name an existing seed: until `cuco transform` writes
 * the real one, seed.cu is the baseline under a placeholder marker. */
static int write_placeholder_seed(const char *dir, const char *src, size_t len,
                                  struct err *e)
{
  struct buf b = BUF_INIT(16u << 20);
  int rc;

  buf_puts(&b, TRANSFORM_PLACEHOLDER
           " `cuco init` wrote this copy of baseline.cu so the\n"
           "// folder loads; `cuco transform` replaces it with the "
           "device-initiated seed.\n");
  buf_append(&b, src, len);
  rc = buf_error(&b) ? err_set(e, ERR_NOMEM, "out of memory")
                     : write_file(dir, "seed.cu", buf_str(&b), b.len, e);
  buf_release(&b);
  return rc;
}

/* Create dir (one level) or accept an existing one that is empty, or any
 * existing one with force. */
static int prepare_dir(const char *dir, int force, struct err *e)
{
  struct stat sb;
  static const char *const ours[] = {
      "workload.ini", "baseline.cu", "reference.cu", "README.md",
      "seed.cu",      "cuco_run.sh", "check.c"};
  size_t k;

  if (mkdir(dir, 0777) == 0)
    return 0;
  if (errno != EEXIST)
    return err_set(e, ERR_IO, "cannot create %s: %s", dir, strerror(errno));
  if (stat(dir, &sb) || !S_ISDIR(sb.st_mode))
    return err_set(e, ERR_IO, "%s exists and is not a folder", dir);
  for (k = 0; k < sizeof(ours) / sizeof(ours[0]) && !force; k++) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, ours[k]);
    if (stat(path, &sb) == 0)
      return err_set(e, ERR_USAGE,
                     "%s already exists (use --force to "
                     "replace the scaffold files)",
                     path);
  }
  return 0;
}

static const char *base_name(const char *path)
{
  static char b[64];
  size_t n = strlen(path);
  const char *s;

  while (n > 1 && path[n - 1] == '/')
    n--;
  s = path + n;
  while (s > path && s[-1] != '/')
    s--;
  snprintf(b, sizeof(b), "%.*s", (int)(path + n - s), s);
  return b;
}

/* Print the lines of ITEMS ("a\nb\n") as a list under HEAD. */
static void print_items(const char *head, const char *items)
{
  if (!*items)
    return;
  printf("%s\n", head);
  while (*items) {
    size_t k = strcspn(items, "\n");
    printf("  - %.*s\n", (int)k, items);
    items += k + (items[k] == '\n');
  }
}

/* An ordinary program (its own main(), not the runtime ABI): a freeform
 * workload around it (init_ff.h), in DIR, which is ready; COPIED names the
 * local files copied beside it (", a.h, b.h" or ""). */
static int init_freeform(struct cmd_ctx *ctx, const char *dir,
                         const char *name, const char *from, const char *src,
                         size_t srclen, const struct analyze_report *r,
                         const char *copied, struct err *e)
{
  struct initfrom_info *info = calloc(1, sizeof(*info));
  struct buf todo = BUF_INIT(1u << 16), guessed = BUF_INIT(1u << 16);
  struct init_ff_opts o;
  struct toolchain tc;
  struct allow *al = NULL;
  char rt[4096], path[4200], phrase[96], abs[4096];
  struct err e2 = {0, ""};
  int rc;

  if (!info)
    return err_set(e, ERR_NOMEM, "out of memory");
  memset(&o, 0, sizeof(o));
  if (tc_probe(ctx->cfg, &tc, &e2) == 0)
    o.tc = &tc;
  if (build_find_runtime(ctx->cfg, dir, rt, sizeof(rt), &e2) == 0) {
    snprintf(path, sizeof(path), "%s/%s", rt, ALLOW_FILE);
    al = allow_load(path, &e2);
  }
  if ((rc = initfrom_infer(from, src, srclen, r, info, e)) != 0)
    goto out;
  o.dir = dir;
  o.name = name;
  o.from = from;
  o.src = src;
  o.srclen = srclen;
  o.r = r;
  o.info = info;
  o.allow = al;
  if ((rc = init_ff_write(&o, &todo, &guessed, e)) != 0)
    goto out;
  if (!realpath(dir, abs))
    snprintf(abs, sizeof(abs), "%s", dir);
  printf("created %s: workload.ini, baseline.cu, seed.cu, cuco_run.sh, "
         "check.c, README.md%s (free-form: %s)\n",
         dir, copied, analyze_comm_phrase(r, phrase, sizeof(phrase)));
  print_items("TODO: init could not infer these; fill them in (also in "
              "README.md and workload.ini):",
              buf_str(&todo));
  print_items("guessed (check them; README.md has them too):",
              buf_str(&guessed));
  printf("next: cuco eval %s --compile-only (no GPU needed), then "
         "--impl all on a GPU\n",
         abs);
out:
  allow_free(al);
  buf_release(&todo);
  buf_release(&guessed);
  free(info);
  return rc;
}

int cmd_init(struct cmd_ctx *ctx, int argc, char **argv)
{
  static const struct option opts[] = {{"from", required_argument, NULL, 'f'},
                                       {"name", required_argument, NULL, 'n'},
                                       {"force", no_argument, NULL, 'F'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *from = NULL, *name = NULL, *dir;
  struct analyze_report *r = NULL;
  struct buf ini = BUF_INIT(1u << 20), readme = BUF_INIT(4u << 20);
  struct buf params = BUF_INIT(4096), tmp = BUF_INIT(1u << 20);
  struct buf required = BUF_INIT(4096), sections = BUF_INIT(1u << 20);
  struct buf alltext = BUF_INIT(64u << 20);
  struct locals *loc = NULL;
  char srcdir[4096] = "", ranks[128] = "", libs[128] = "", phrase[96];
  int i;
  char *src = NULL, *ref = NULL;
  size_t srclen = 0, reflen = 0;
  struct err e = {0, ""};
  int opt, force = 0, rc = CMD_FAIL, runtime_kind = 1;

  while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (opt == 'f')
      from = optarg;
    else if (opt == 'n')
      name = optarg;
    else if (opt == 'F')
      force = 1;
    else if (opt == 'h')
      return cmd_usage(ctx, 1);
    else
      return cmd_usage(ctx, 0);
  }
  if (optind + 1 != argc)
    return cmd_bad_usage(ctx,
                         optind < argc ? "one DIR expected" : "DIR missing");
  dir = argv[optind];
  if (!name)
    name = base_name(dir);
  if (!valid_name(name))
    return cmd_bad_usage(ctx,
                         "workload name '%s' must be 1-47 letters, "
                         "digits, '_' or '-' (use --name)",
                         name);
  if (from) {
    char refpath[4096];
    const char *slash = strrchr(from, '/');
    src = file_read(from, 8u << 20, &srclen, &e);
    if (!src)
      goto fail;
    r = analyze_source(from, src, srclen, &e);
    if (!r)
      goto fail;
    runtime_kind = has_func(r, "wl_setup") && has_func(r, "wl_step") &&
                   has_func(r, "wl_teardown");
    /* a reference.cu next to the imported file comes along */
    snprintf(srcdir, sizeof(srcdir), "%.*s",
             slash ? (int)(slash - from + 1) : 0, from);
    snprintf(refpath, sizeof(refpath), "%sreference.cu", srcdir);
    if (runtime_kind && strcmp(refpath, from)) {
      struct err e2;
      ref = file_read(refpath, 8u << 20, &reflen, &e2);
    }
    /* and every local file either includes, so the scaffold builds */
    loc = calloc(1, sizeof(*loc));
    if (!loc)
      goto oom;
    locals_add(loc, slash ? slash + 1 : from);
    if (ref)
      locals_add(loc, "reference.cu");
    collect_locals(srcdir, loc, &alltext);
    if (buf_error(&alltext))
      goto oom;
    params_of(loc->n ? buf_str(&alltext) : src, &params, &required);
    if (runtime_kind)
      workload_sections(srcdir, &sections, ranks, libs, sizeof(libs));
    /* the libraries of the whole include graph, not only of FILE */
    if (!*libs && (strstr(buf_str(&alltext), "cublasLt") ||
                   strstr(buf_str(&alltext), "cublas_v2.h")))
      snprintf(libs, sizeof(libs), "cublas, cublasLt");
  } else {
    if (expand(&tmp, tpl_baseline, name))
      goto oom;
    src = buf_detach(&tmp, &srclen);
    if (!src)
      goto oom;
    r = analyze_source("baseline.cu", src, srclen, &e);
    if (!r)
      goto fail;
    if (expand(&tmp, tpl_reference, name))
      goto oom;
    ref = buf_detach(&tmp, &reflen);
    if (!ref)
      goto oom;
  }
  if (runtime_kind &&
      (make_ini(&ini, name, from, r, buf_str(&params), buf_str(&required),
                buf_str(&sections), ranks, *libs ? libs : NULL) ||
       make_readme(&readme, name, from, r, ref != NULL)))
    goto oom;
  if (prepare_dir(dir, force, &e))
    goto fail;
  for (i = 1; loc && i < loc->n; i++) {
    struct stat sb;
    char path[4096];
    if (is_ours(loc->rel[i]))
      continue;
    snprintf(path, sizeof(path), "%s/%s", dir, loc->rel[i]);
    if (!force && stat(path, &sb) == 0) {
      err_set(&e, ERR_USAGE,
              "%s already exists (use --force to replace the scaffold "
              "files)",
              path);
      goto fail;
    }
    if (copy_local(srcdir, loc->rel[i], dir, &e))
      goto fail;
  }
  if (!runtime_kind) {
    for (i = 1; loc && i < loc->n; i++)
      if (!is_ours(loc->rel[i]))
        buf_printf(&tmp, ", %s", loc->rel[i]);
    if (buf_error(&tmp))
      goto oom;
    if (init_freeform(ctx, dir, name, from, src, srclen, r, buf_str(&tmp), &e))
      goto fail;
    rc = CMD_OK;
    goto out;
  }
  if (write_file(dir, "baseline.cu", src, srclen, &e) ||
      (ref && write_file(dir, "reference.cu", ref, reflen, &e)) ||
      write_placeholder_seed(dir, src, srclen, &e) ||
      write_file(dir, "workload.ini", buf_str(&ini), ini.len, &e) ||
      write_file(dir, "README.md", buf_str(&readme), readme.len, &e))
    goto fail;
  printf("created %s: workload.ini, baseline.cu%s, seed.cu (placeholder), "
         "README.md",
         dir, ref ? ", reference.cu" : "");
  for (i = 1; loc && i < loc->n; i++)
    if (!is_ours(loc->rel[i]))
      printf(", %s", loc->rel[i]);
  printf(" (runtime ABI: %s)\n",
         analyze_comm_phrase(r, phrase, sizeof(phrase)));
  printf("next: cd %s && cuco eval . --impl baseline.cu --compile-only "
         "(README.md has the steps after)\n",
         dir);
  rc = CMD_OK;
  goto out;
oom:
  err_set(&e, ERR_NOMEM, "out of memory");
fail:
  cmd_error(ctx, "%s", e.msg);
out:
  analyze_report_free(r);
  free(src);
  free(ref);
  buf_release(&ini);
  buf_release(&readme);
  buf_release(&params);
  buf_release(&tmp);
  buf_release(&required);
  buf_release(&sections);
  buf_release(&alltext);
  free(loc);
  return rc;
}
