/* eval_cli.c - `cuco eval`: the cascade from the command line. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bar.h"
#include "build.h"
#include "candidate.h"
#include "cmd.h"
#include "config.h"
#include "doctor.h"
#include "eval.h"
#include "launcher.h"
#include "file.h"
#include "toolchain.h"
#include "workload.h"

struct cli {
  FILE *out; /* progress goes here (stderr with --json) */
  const char *label;
};

static void on_progress(void *ud, enum eval_stage st, int ok,
                        const char *verdict)
{
  struct cli *c = ud;

  fprintf(c->out, "  %-7s %s%s\n", eval_stage_name(st), ok ? "" : "FAIL ",
          verdict);
  fflush(c->out);
}

static void save_logs(const char *dir, const struct eval_result *r)
{
  char p[WORKLOAD_PATH + 32];
  struct err e;
  json_t *j = eval_result_json(r);

  if (file_mkdirs(dir, &e))
    fprintf(stderr, "cuco eval: %s\n", e.msg);
  snprintf(p, sizeof(p), "%s/build.log", dir);
  if (r->build_log && file_write(p, r->build_log, strlen(r->build_log), &e))
    fprintf(stderr, "cuco eval: %s\n", e.msg);
  snprintf(p, sizeof(p), "%s/run.log", dir);
  if (r->verify_log && file_write(p, r->verify_log, strlen(r->verify_log), &e))
    fprintf(stderr, "cuco eval: %s\n", e.msg);
  snprintf(p, sizeof(p), "%s/eval.json", dir);
  if (j && json_dump_file(j, p, JSON_INDENT(2)))
    fprintf(stderr, "cuco eval: cannot write %s\n", p);
  json_decref(j);
}

/* Whether name is file without its extension ("baseline" for
 * "baseline.cu"). */
static int same_stem(const char *name, const char *file)
{
  const char *dot = strrchr(file, '.');
  size_t n = dot ? (size_t)(dot - file) : strlen(file);
  return strlen(name) == n && !strncmp(name, file, n);
}

/* What --impl NAME names: -1 the seed ("seed", its file, or its file
 * without the extension), i >= 0 baselines[i] (file or stem), -2 none. */
static int impl_index(const struct workload *w, const char *name)
{
  int i;

  if (!strcmp(name, "seed") || !strcmp(name, w->seed) ||
      same_stem(name, w->seed))
    return -1;
  for (i = 0; i < w->nbaselines; i++)
    if (!strcmp(name, w->baselines[i]) || same_stem(name, w->baselines[i]))
      return i;
  return -2;
}

/* Evaluate one implementation; 0 ok, 1 failed verdict, <0 error. */
static int eval_one(struct eval_opts *o, struct cli *c, const char *path,
                    const char *name, int candidate, const char *outdir,
                    json_t *all, struct err *e)
{
  char wd[WORKLOAD_PATH];
  struct eval_result r;
  char *code;
  int rc;

  code = file_read_text(path, CANDIDATE_MAX_BYTES * 2, e);
  if (!code)
    return ERR_IO;
  o->impl_name = name;
  o->device_candidate = candidate;
  if (outdir) {
    snprintf(wd, sizeof(wd), "%s/%.*s", outdir,
             (int)(strrchr(name, '.') ? strrchr(name, '.') - name
                                      : (long)strlen(name)),
             name);
    o->work_dir = wd;
  }
  fprintf(c->out, "%s: %s (%s)\n", o->wl->name, name,
          candidate ? "candidate" : "baseline");
  rc = eval_candidate(o, code, &r, e);
  free(code);
  if (rc == 0) {
    json_t *j = eval_result_json(&r);
    if (r.status == EVAL_STATUS_OK)
      fprintf(c->out, "%s: ok%s", name,
              o->static_only    ? " (static checks)"
              : o->compile_only ? " (compiled)"
                                : "");
    else
      fprintf(c->out, "%s: %s: %s", name, eval_status_name(r.status), r.error);
    if (r.has_score)
      fprintf(c->out,
              "; median %.4g ms, noise %.2g ms, score %.4g (= 1000 / "
              "geomean median ms, higher is faster)",
              r.median_ms, r.noise_ms, r.score);
    fputc('\n', c->out);
    if (outdir)
      save_logs(wd, &r);
    if (j) {
      json_object_set_new(j, "impl", json_string(name));
      json_object_set_new(j, "workload", json_string(o->wl->name));
      json_array_append_new(all, j);
    }
    rc = r.status != EVAL_STATUS_OK;
  }
  eval_result_release(&r);
  return rc;
}

/* After `--impl all`: the bar per bench size (bar.h: the fastest of the
 * workload's bar baselines that passed) and each passing candidate's
 * speedup over it, printed and added to its JSON as "vs_bar": {SIZE:
 * {"bar", "bar_ms", "median_ms", "speedup"}}.  Nothing when no bar
 * baseline passed. */
static void report_bar(struct cli *c, const struct workload *w, json_t *all)
{
  const char *names[WORKLOAD_MAX_FILES + 1];
  const json_t *metrics[WORKLOAD_MAX_FILES + 1];
  json_t *bar, *row, *j;
  const char *size;
  size_t i;
  int n = 0, b;

  json_array_foreach(all, i, j)
  {
    const char *impl = json_string_value(json_object_get(j, "impl"));
    for (b = 0; impl && b < w->nbaselines; b++)
      if (!strcmp(impl, w->baselines[b]) &&
          eval_status_parse(json_string_value(json_object_get(j, "status"))
                                ?: "") == EVAL_STATUS_OK &&
          n <= WORKLOAD_MAX_FILES) {
        names[n] = impl;
        metrics[n++] = json_object_get(j, "metrics");
      }
  }
  bar = bar_build(names, metrics, n, (const char(*)[128])w->bar, w->nbar);
  if (!json_object_size(bar)) {
    json_decref(bar);
    return;
  }
  json_object_foreach(bar, size, row)
  {
    const json_t *others = json_object_get(row, "baselines"), *v;
    const char *name = bar_name(bar, size), *k;
    int m = 0;
    fprintf(c->out, "bar %s: %s %.4g ms", size, name,
            json_number_value(json_object_get(row, "median_ms")));
    json_object_foreach((json_t *)others, k, v)
    {
      if (strcmp(k, name))
        fprintf(c->out, "%s%s %.4g ms", m++ ? "; " : " (", k,
                json_number_value(json_object_get(v, "median_ms")));
    }
    fputs(m ? ")\n" : "\n", c->out);
  }
  json_array_foreach(all, i, j)
  {
    const char *impl = json_string_value(json_object_get(j, "impl"));
    json_t *vs;
    if (!impl || strcmp(impl, w->seed) ||
        eval_status_parse(json_string_value(json_object_get(j, "status"))
                              ?: "") != EVAL_STATUS_OK)
      continue;
    vs = json_object();
    json_object_foreach(bar, size, row)
    {
      double x = bar_metrics_median(json_object_get(j, "metrics"), size);
      double bm = json_number_value(json_object_get(row, "median_ms"));
      if (!(x > 0))
        continue;
      fprintf(c->out, "%s %s: %.4g ms, %.3fx the bar (%s %.4g ms)\n", impl,
              size, x, bm / x, bar_name(bar, size), bm);
      json_object_set_new(vs, size,
                          json_pack("{s:s, s:f, s:f, s:f}", "bar",
                                    bar_name(bar, size), "bar_ms", bm,
                                    "median_ms", x, "speedup", bm / x));
    }
    json_object_set_new(j, "vs_bar", vs);
  }
  json_decref(bar);
}

int cmd_eval(struct cmd_ctx *ctx, int argc, char **argv)
{
  static const struct option opts[] = {
      {"candidate", required_argument, NULL, 'c'},
      {"impl", required_argument, NULL, 'i'},
      {"ranks", required_argument, NULL, 'r'},
      {"vranks", required_argument, NULL, 'V'},
      {"sizes", required_argument, NULL, 's'},
      {"compile-only", no_argument, NULL, 'C'},
      {"static-only", no_argument, NULL, 'A'},
      {"no-bench", no_argument, NULL, 'B'},
      {"one-process", no_argument, NULL, 'P'},
      {"process-per-size", no_argument, NULL, 'Q'},
      {"out", required_argument, NULL, 'o'},
      {"json", no_argument, NULL, 'j'},
      {"timeout", required_argument, NULL, 't'},
      {"build-timeout", required_argument, NULL, 'T'},
      {"gpus", required_argument, NULL, 'g'},
      {"seed", required_argument, NULL, 'S'},
      {"secret", required_argument, NULL, 'K'},
      {"cheats", no_argument, NULL, 'X'},
      {"write-cheats", required_argument, NULL, 'W'},
      {"launcher", required_argument, NULL, 'L'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  struct eval_opts o = {0};
  struct toolchain tc;
  struct workload *w = calloc(1, sizeof(*w));
  struct cli c = {stdout, NULL};
  struct err e = {0, ""};
  const char *cand = NULL, *impl = NULL, *outdir = NULL, *lname = NULL;
  const char *cheats_to = NULL;
  struct launcher lau;
  json_t *machine = NULL, *all = json_array();
  int opt, json = 0, cheats = 0, rc = CMD_FAIL, failed = 0;
  long lv;
  double dv;

  if (!w || !all) {
    free(w);
    json_decref(all);
    fprintf(stderr, "cuco eval: out of memory\n");
    return CMD_FAIL;
  }
  while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (opt) {
    case 'c':
      cand = optarg;
      break;
    case 'i':
      impl = optarg;
      break;
    case 'r':
    case 'V':
      if (config_parse_long(optarg, &lv) || lv < (opt == 'r' ? 1 : 2) ||
          lv > 64) {
        rc = cmd_bad_usage(ctx, "--%s: '%s' is not a rank count",
                           opt == 'r' ? "ranks" : "vranks", optarg);
        goto out;
      }
      if (opt == 'r')
        o.ranks = (int)lv;
      else
        o.vranks = (int)lv;
      break;
    case 's':
      o.sizes = optarg;
      break;
    case 'C':
      o.compile_only = 1;
      break;
    case 'A':
      o.static_only = 1;
      break;
    case 'B':
      o.skip_bench = 1;
      break;
    case 'P': /* --one-process: the default now, kept for old scripts */
      o.per_size_process = 0;
      break;
    case 'Q':
      o.per_size_process = 1;
      break;
    case 'o':
      outdir = optarg;
      break;
    case 'j':
      json = 1;
      break;
    case 't':
    case 'T':
      if (config_parse_double(optarg, &dv) || !(dv > 0) || dv > 86400) {
        rc = cmd_bad_usage(ctx, "--%s: '%s' is not a number of seconds",
                           opt == 't' ? "timeout" : "build-timeout", optarg);
        goto out;
      }
      if (opt == 't')
        o.run_timeout_s = dv;
      else
        o.build_timeout_s = dv;
      break;
    case 'g':
      if (!*optarg || strspn(optarg, "0123456789,") != strlen(optarg)) {
        rc = cmd_bad_usage(ctx,
                           "--gpus: '%s' is not a list of device "
                           "numbers",
                           optarg);
        goto out;
      }
      o.gpus = optarg;
      break;
    case 'S':
      if (config_parse_long(optarg, &lv) || lv < 1) {
        rc = cmd_bad_usage(ctx, "--seed: '%s' is not a positive integer",
                           optarg);
        goto out;
      }
      o.seed = (unsigned long)lv;
      break;
    case 'K':
      if (strlen(optarg) != 32 ||
          strspn(optarg, "0123456789abcdefABCDEF") != 32) {
        rc = cmd_bad_usage(ctx,
                           "--secret: '%s' is not 32 hex digits (a "
                           "RESULT.json replay.secret)",
                           optarg);
        goto out;
      }
      o.secret = optarg;
      break;
    case 'X':
      cheats = 1;
      break;
    case 'W':
      cheats_to = optarg;
      cheats = 1;
      break;
    case 'L':
      lname = optarg;
      break;
    case 'h':
      rc = cmd_usage(ctx, 1);
      goto out;
    default:
      rc = cmd_usage(ctx, 0);
      goto out;
    }
  }
  if (optind != argc - 1) {
    rc = cmd_bad_usage(ctx, "give exactly one WORKLOAD folder");
    goto out;
  }
  if ((cand && impl) || (cheats && (cand || impl))) {
    rc = cmd_bad_usage(ctx, "--candidate, --impl and --cheats exclude each "
                            "other");
    goto out;
  }
  if (json)
    c.out = stderr;
  if (workload_load(argv[optind], w, &e)) {
    fprintf(stderr, "cuco eval: %s\n", e.msg);
    goto out;
  }
  if (cheats_to) {
    int nw;
    o.wl = w;
    if (eval_cheats_write(&o, cheats_to, &nw, &e)) {
      fprintf(stderr, "cuco eval: %s\n", e.msg);
      goto out;
    }
    fprintf(c.out, "%s: wrote %d cheats to %s\n", w->name, nw, cheats_to);
    rc = CMD_OK;
    goto out;
  }
  if (o.sizes) {
    struct workload_size *tmp = calloc(WORKLOAD_MAX_SIZES, sizeof(*tmp));
    int ns = 0;
    if (!tmp) {
      fprintf(stderr, "cuco eval: out of memory\n");
      goto out;
    }
    if (workload_resolve_sizes(w, o.sizes, tmp, WORKLOAD_MAX_SIZES, &ns, &e)) {
      free(tmp);
      rc = cmd_bad_usage(ctx, "%s", e.msg);
      goto out;
    }
    free(tmp);
  }
  if (impl && strcmp(impl, "all") && impl_index(w, impl) < -1) {
    char names[512];
    size_t k = 0;
    int i;
    names[0] = '\0';
    for (i = 0; i < w->nbaselines && k < sizeof(names); i++)
      k += (size_t)snprintf(names + k, sizeof(names) - k, ", %s",
                            w->baselines[i]);
    rc = cmd_bad_usage(ctx,
                       "--impl: '%s' is not an implementation of %s; valid: "
                       "seed (%s)%s, all",
                       impl, w->name, w->seed, names);
    goto out;
  }
  if (launcher_config(ctx->cfg, lname, &lau, &e)) {
    if (e.code == ERR_USAGE) {
      rc = cmd_bad_usage(ctx, "%s", e.msg);
      goto out;
    }
    fprintf(stderr, "cuco eval: %s\n", e.msg);
    goto out;
  }
  /* {gpus}: under srun, Slurm binds one GPU to each rank of a GPU workload */
  lau.gpus_per_rank = w->kind == WORKLOAD_RUNTIME;
  o.launcher = &lau;
  o.wl = w;
  o.progress = on_progress;
  o.progress_ud = &c;
  o.runtime_dir = config_get(ctx->cfg, "build", "runtime_dir", NULL);
  if (w->kind == WORKLOAD_RUNTIME) {
    if (tc_probe(ctx->cfg, &tc, &e)) {
      fprintf(stderr, "cuco eval: %s\n", e.msg);
      goto out;
    }
    o.tc = &tc;
    if (!o.compile_only && !o.static_only) {
      machine = doctor_describe(ctx->cfg, &tc, &e);
      if (!machine) {
        fprintf(stderr, "cuco eval: machine probe: %s\n", e.msg);
        goto out;
      }
      o.machine = machine;
      if (!w->host_only && !json_integer_value(json_object_get(
                               json_object_get(machine, "gpus"), "count"))) {
        fprintf(stderr, "cuco eval: %s\n", doctor_no_gpu_line("eval", w->dir));
        goto out;
      }
    }
  }
  if (cheats) {
    struct eval_cheat_tally t;
    char sum[400];
    o.work_dir = outdir;
    fprintf(c.out, "%s: cheat suite%s\n", w->name,
            o.static_only    ? " (static only)"
            : o.compile_only ? " (compile only)"
                             : "");
    if (eval_cheats(&o, &t, &e)) {
      fprintf(stderr, "cuco eval: %s\n", e.msg);
      goto out;
    }
    /* the exit status reflects the judged cheats only */
    eval_cheat_summary(&t, sum, sizeof(sum));
    fprintf(c.out, "%s\n", sum);
    rc = t.failures ? CMD_FAIL : CMD_OK;
    goto out;
  }
  if (!cand && (!impl || impl_index(w, impl) == -1 || !strcmp(impl, "all")) &&
      workload_check_seed(w, &e)) {
    fprintf(stderr, "cuco eval: %s\n", e.msg);
    goto out;
  }
  if (cand) {
    const char *base = strrchr(cand, '/') ? strrchr(cand, '/') + 1 : cand;
    failed = eval_one(&o, &c, cand, base, 1, outdir, all, &e);
  } else {
    char path[WORKLOAD_PATH + 200];
    int i, n = 0;
    const char *list[WORKLOAD_MAX_FILES + 1];
    int is_cand[WORKLOAD_MAX_FILES + 1];
    if (!impl || impl_index(w, impl) == -1) {
      list[n] = w->seed;
      is_cand[n++] = 1;
    } else if (!strcmp(impl, "all")) {
      for (i = 0; i < w->nbaselines; i++) {
        list[n] = w->baselines[i];
        is_cand[n++] = 0;
      }
      list[n] = w->seed;
      is_cand[n++] = 1;
    } else {
      list[n] = w->baselines[impl_index(w, impl)];
      is_cand[n++] = 0;
    }
    for (i = 0; i < n; i++) {
      int r1;
      snprintf(path, sizeof(path), "%s/%s", w->dir, list[i]);
      r1 = eval_one(&o, &c, path, list[i], is_cand[i], outdir, all, &e);
      if (r1 < 0) {
        failed = r1;
        break;
      }
      failed |= r1;
    }
    if (failed >= 0 && n > 1 && !o.static_only && !o.compile_only &&
        !o.skip_bench)
      report_bar(&c, w, all);
  }
  if (failed < 0) {
    fprintf(stderr, "cuco eval: %s\n", e.msg);
    rc = e.code == ERR_USAGE ? CMD_USAGE : CMD_FAIL;
    goto out;
  }
  if (json) {
    char *s =
        json_dumps(json_array_size(all) == 1 ? json_array_get(all, 0) : all,
                   JSON_INDENT(2));
    if (s)
      printf("%s\n", s);
    free(s);
  }
  rc = failed ? CMD_FAIL : CMD_OK;
out:
  json_decref(machine);
  json_decref(all);
  free(w);
  return rc;
}
