/* evolve.c - `cuco evolve`: options, run setup and resume, summary. */
#define _GNU_SOURCE
#include "evolve.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bar.h"
#include "buf.h"
#include "build.h"
#include "cmd.h"
#include "config.h"
#include "doctor.h"
#include "eval.h"
#include "file.h"
#include "llm.h"
#include "log.h"
#include "confirm.h"
#include "proc.h"
#include "search_impl.h"

#define CODE_MAX (2u * 1024u * 1024u)

int evolve_opts_init(struct evolve_opts *o, const struct config *cfg,
                     struct err *e)
{
  long v;
  const char *sel;
  int k;

  memset(o, 0, sizeof(*o));
  o->generations = 10;
  o->islands = 4;
  o->seed = 1;
  o->sel.kind = SELECT_WEIGHTED;
  o->sel.lambda = 8;
  o->sel.alpha = 1;
  if (config_get_long(cfg, "evolve", "migrate_every", 4, 0, 1000, &v, e))
    return e->code;
  o->migrate_every = (int)v;
  if (config_get_long(cfg, "evolve", "meta_every", 4, 0, 1000, &v, e))
    return e->code;
  o->meta_every = (int)v;
  if (config_get_long(cfg, "evolve", "stagnation", 0, 0, 1000, &v, e))
    return e->code;
  o->stagnation = (int)v;
  if (config_get_long(cfg, "evolve", "novelty_attempts", 3, 1, 10, &v, e))
    return e->code;
  o->novelty_attempts = (int)v;
  if (config_get_long(cfg, "evolve", "inspirations", 3, 0, 4, &v, e))
    return e->code;
  o->inspirations = (int)v;
  if (config_get_long(cfg, "evolve", "slots", 0, 0, EVOLVE_MAX_SLOTS, &v, e))
    return e->code;
  o->slots = (int)v;
  if (config_get_long(cfg, "evolve", "build_ahead", -1, -1, 2, &v, e))
    return e->code;
  o->build_ahead = (int)v;
  if (config_get_long(cfg, "evolve", "process_per_size", 0, 0, 1, &v, e))
    return e->code;
  o->process_per_size = (int)v;
  if (config_get_long(cfg, "evolve", "confirm", 2, 0, 6, &v, e))
    return e->code;
  o->confirm = (int)v;
  if (config_get_long(cfg, "evolve", "confirm_rounds", 3, 0, 32, &v, e))
    return e->code;
  o->confirm_rounds = (int)v;
  if (config_get_long(cfg, "evolve", "confirm_max_rounds", 16, 0, 32, &v, e))
    return e->code;
  o->confirm_max_rounds = (int)v;
  if (config_get_long(cfg, "evolve", "noise_floor_rounds", 3, 0, 16, &v, e))
    return e->code;
  o->noise_floor_rounds = (int)v;
  if (config_get_double(cfg, "evolve", "noise_threshold", 0.05, 0.001, 1,
                        &o->noise_threshold, e))
    return e->code;
  {
    const char *ex = config_get(cfg, "evolve", "executor", "local");
    if (strcmp(ex, "local") && strcmp(ex, "slurm")) {
      const struct config_entry *en = config_find(cfg, "evolve", "executor");
      return err_set(e, ERR_CONFIG, "%s: executor '%s' is not local or slurm",
                     en ? en->origin : "[evolve]", ex);
    }
    o->executor_slurm = !strcmp(ex, "slurm");
  }
  if (config_get_double(cfg, "evolve", "explore_fraction", 0.4, 0, 1,
                        &o->explore_fraction, e) ||
      config_get_double(cfg, "evolve", "novelty", 0.99, 0, 1, &o->novelty,
                        e) ||
      config_get_double(cfg, "evolve", "novelty_embed", 0.995, 0, 1,
                        &o->novelty_embed, e) ||
      config_get_double(cfg, "evolve", "lambda", 8, 0.01, 1000, &o->sel.lambda,
                        e) ||
      config_get_double(cfg, "evolve", "alpha", 1, 0.01, 100, &o->sel.alpha,
                        e))
    return e->code;
  {
    const char *q = config_get(cfg, "evolve", "edit_sequence", "");
    while (*q && o->nseq < 16) {
      size_t n = strcspn(q, ", ");
      if (n) {
        if ((n != 4 || (strncmp(q, "diff", 4) && strncmp(q, "full", 4) &&
                        strncmp(q, "tune", 4))) &&
            (n != 5 || strncmp(q, "cross", 5))) {
          const struct config_entry *en =
              config_find(cfg, "evolve", "edit_sequence");
          return err_set(e, ERR_CONFIG,
                         "%s: edit_sequence: '%.*s' is not diff, full, "
                         "cross or tune",
                         en ? en->origin : "[evolve]", (int)n, q);
        }
        snprintf(o->seq[o->nseq++], sizeof(o->seq[0]), "%.*s", (int)n, q);
      }
      q += n;
      q += strspn(q, ", ");
    }
  }
  sel = config_get(cfg, "evolve", "selection", "weighted");
  k = select_kind_parse(sel);
  if (k < 0) {
    const struct config_entry *en = config_find(cfg, "evolve", "selection");
    return err_set(e, ERR_CONFIG,
                   "%s: selection '%s' is not weighted, power or hill",
                   en ? en->origin : "[evolve]", sel);
  }
  o->sel.kind = k;
  return 0;
}

/* Geometric mean of the per-size bar medians in baseline_json. */
static double baseline_mean(const char *baseline_json)
{
  json_t *b = baseline_json ? json_loads(baseline_json, 0, NULL) : NULL;
  double m = bar_mean(b);

  json_decref(b);
  return m;
}

/* Evaluate one baseline; *metrics gets its eval metrics (new reference),
 * or NULL when it did not pass (warned).  Negative only when its file
 * cannot be read. */
static int measure_baseline(struct evolve *s, const char *name,
                            json_t **metrics, struct err *e)
{
  struct eval_opts eo;
  struct eval_result r;
  char path[WORKLOAD_PATH + 200], *code, note[256];
  int rc;

  *metrics = NULL;
  snprintf(path, sizeof(path), "%s/%s", s->wl.dir, name);
  code = file_read(path, CODE_MAX, NULL, e);
  if (!code)
    return e->code;
  memset(&eo, 0, sizeof(eo));
  memset(&r, 0, sizeof(r));
  eo.wl = &s->wl;
  eo.tc = &s->tc;
  eo.impl_name = name;
  eo.ranks = s->o.ranks;
  eo.vranks = s->o.vranks;
  eo.sizes = s->o.sizes;
  eo.gpus = s->gpus[0][0] ? s->gpus[0] : NULL;
  eo.machine = s->machine;
  eo.seed = s->o.seed;
  eo.launcher = &s->launcher;
  eo.per_size_process = s->o.process_per_size;
  printf("baseline %s: evaluating...\n", name);
  fflush(stdout);
  rc = eval_candidate(&eo, code, &r, e);
  if (!rc && search_noise_watch(s, &eo, code, &r, note, sizeof(note))) {
    /* the bar divides every speedup: its noise is watched as a
     * candidate's is, and named in the summary and the report */
    printf("baseline %s: %s\n", name, note);
    search_noise_note(s, "the bar's baseline %s: %s", name, note);
  }
  free(code);
  if (rc || r.status != EVAL_STATUS_OK || !r.metrics)
    log_warn("evolve: baseline %s: %s; it is not part of the bar", name,
             rc           ? e->msg
             : r.error[0] ? r.error
                          : "no metrics");
  else
    *metrics = json_incref(r.metrics);
  eval_result_release(&r);
  return 0;
}

/* Evaluate the workload's first baseline and every bar baseline (same
 * options, one after the other) and store the per-size bar (bar.h) in
 * runs.baseline_json.  Without baselines, or when no bar baseline
 * passes, the seed is the reference (said in the summary). */
static int run_baseline(struct evolve *s, struct err *e)
{
  const char *names[WORKLOAD_MAX_FILES + 1];
  json_t *metrics[WORKLOAD_MAX_FILES + 1] = {0};
  json_t *out = NULL, *v;
  const char *k;
  char *txt = NULL;
  int n = 0, i, j, rc = 0;

  if (!s->wl.nbaselines)
    return 0;
  /* baselines[0] always runs: it freezes the accuracy thresholds */
  names[n++] = s->wl.baselines[0];
  for (i = 0; i < s->wl.nbar; i++) {
    for (j = 0; j < n && strcmp(names[j], s->wl.bar[i]); j++)
      ;
    if (j == n && n <= WORKLOAD_MAX_FILES)
      names[n++] = s->wl.bar[i];
  }
  for (i = 0; i < n; i++)
    if ((rc = measure_baseline(s, names[i], &metrics[i], e)) ||
        search_interrupted)
      goto out; /* interrupted: no bar yet, --resume measures it */
  out = bar_build(names, (const json_t *const *)metrics, n,
                  (const char(*)[128])s->wl.bar, s->wl.nbar);
  if (!out) {
    rc = err_set(e, ERR_NOMEM, "out of memory");
    goto out;
  }
  if (!json_object_size(out)) {
    log_warn("evolve: no bar baseline passed; speedups are relative to the "
             "seed");
    goto out;
  }
  /* what the noise watch did to the bar at each size (the report shows
   * it) */
  json_object_foreach(out, k, v)
  {
    for (i = 0; i < n && strcmp(names[i], bar_name(out, k) ?: ""); i++)
      ;
    if (i < n && json_object_get(metrics[i], "noise_watch"))
      json_object_set(v, "noise_watch",
                      json_object_get(metrics[i], "noise_watch"));
  }
  txt = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
  if (!txt) {
    rc = err_set(e, ERR_NOMEM, "out of memory");
    goto out;
  }
  json_object_foreach(out, k, v)
  {
    printf("bar %s: %s %.4g ms\n", k, bar_name(out, k),
           json_number_value(json_object_get(v, "median_ms")));
  }
  rc = db_run_set_text(s->db, s->run.id, "baseline_json", txt, e);
  s->baseline_ms = baseline_mean(txt);
  printf("bar: %.4g ms (geometric mean over sizes)\n", s->baseline_ms);
  free(s->run.baseline_json);
  s->run.baseline_json = txt;
  txt = NULL;
out:
  for (i = 0; i < n; i++)
    json_decref(metrics[i]);
  json_decref(out);
  free(txt);
  return rc;
}

/* The options that define a run, kept in runs.config_json. */
static char *config_json(const struct evolve *s)
{
  json_t *j =
      json_pack("{s:s, s:i, s:i, s:i, s:i, s:I, s:i, s:i, s:i, s:f, s:f, s:i}",
                "workload_dir", s->o.workload_dir, "generations",
                s->o.generations, "islands", s->o.islands, "ranks", s->o.ranks,
                "vranks", s->o.vranks, "seed", (json_int_t)s->o.seed, "slots",
                s->nslots, "migrate_every", s->o.migrate_every, "meta_every",
                s->o.meta_every, "novelty", s->o.novelty, "explore_fraction",
                s->o.explore_fraction, "llm", s->use_llm);
  /* what --resume keeps besides (evolve_resume.c) */
  if (j)
    json_object_update_new(
        j, json_pack("{s:s, s:s?, s:f}", "sizes", s->o.sizes ? s->o.sizes : "",
                     "llm_name", s->o.llm, "budget_usd",
                     s->o.budget_usd > 0 ? s->o.budget_usd : 0.0));
  char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;

  json_decref(j);
  return t;
}

/* The seed did not pass: the error says why, keeping its end (what to
 * change, such as the [allow] symbols line to add) when the whole does
 * not fit an error line. */
static int seed_failed(const struct evolve *s, const struct member *m,
                       struct err *e)
{
  const char *why = m->p.error ? m->p.error : "", *hint;
  char head[160];
  size_t room;

  snprintf(head, sizeof(head),
           "the seed %s did not pass (%s at %s): ", s->wl.seed, m->p.status,
           m->p.stage ? m->p.stage : "?");
  if (strlen(head) + strlen(why) < sizeof(e->msg))
    return err_set(e, ERR_VERIFY, "%s%s", head, why);
  hint = strstr(why, "; to allow");
  if (!hint || strlen(hint) > sizeof(e->msg) / 2)
    hint = why + strlen(why) - sizeof(e->msg) / 3;
  room = sizeof(e->msg) - strlen(head) - strlen(hint) - 5;
  return err_set(e, ERR_VERIFY, "%s%.*s ...%s", head,
                 (int)(room < strlen(why) ? room : strlen(why)), why, hint);
}

/* The seed row: island 0, generation 0, evaluated now; copies go to the
 * other islands.  A seed that does not pass is the end of the run. */
static int start_seed(struct evolve *s, struct err *e)
{
  struct db_program p;
  struct member *m;
  char h[17];
  int k;

  m = search_find(s, s->seed_id);
  if (!m) {
    db_program_init(&p);
    p.run_id = s->run.id;
    p.edit_kind = strdup("seed");
    p.phase = strdup("explore");
    p.code = strdup(s->seed_code);
    search_hash(s->seed_code, h);
    p.code_hash = strdup(h);
    p.status = strdup("pending");
    if (db_program_insert(s->db, &p, e) ||
        db_run_set_program(s->db, s->run.id, "seed_program_id", p.id, e)) {
      db_program_release(&p);
      return e->code;
    }
    s->seed_id = p.id;
    m = search_add(s, &p);
    if (!m)
      return err_set(e, ERR_NOMEM, "out of memory");
  }
  if (!strcmp(m->p.status, "pending") || !strcmp(m->p.status, "running") ||
      !strcmp(m->p.status, "interrupted")) {
    if (search_evaluate(s, s->seed_id, 0, e))
      return e->code;
    s->seed_evaluated = 1;
  }
  if (search_interrupted)
    return 0; /* no verdict on the seed: --resume evaluates it */
  if (strcmp(m->p.status, "ok"))
    return seed_failed(s, m, e);
  if (s->baseline_ms <= 0 && m->p.median_ms > 0) {
    s->baseline_ms = m->p.median_ms; /* no baseline: relative to the seed */
    m->p.speedup = 1;
  }
  if (!s->best_id)
    s->best_id = s->seed_id;
  if (!s->isl[0].best_id)
    s->isl[0].best_id = s->seed_id;
  for (k = 1; k < s->o.islands; k++)
    if (search_copy(s, m, k, e))
      return e->code;
  return 0;
}

/* The resumed run is running again; overridden settings become the
 * run's (a later --resume keeps them). */
static int resume_record(struct evolve *s, struct err *e)
{
  char *cj;
  int rc = 0;

  if (s->resume_overrides) {
    cj = config_json(s);
    rc = cj ? db_run_set_text(s->db, s->run.id, "config_json", cj, e)
            : err_set(e, ERR_NOMEM, "out of memory");
    free(cj);
  }
  return rc ? rc : db_run_set_status(s->db, s->run.id, "running", 0, e);
}

/* Load an existing run (resume): members, island counters, queue. */
static int load_run(struct evolve *s, struct err *e)
{
  struct db_program *arr = NULL;
  size_t n, i;
  int gen = 0;

  if (strcmp(s->run.workload, s->wl.name))
    return err_set(e, ERR_USAGE,
                   "--resume: %s holds a run of workload '%s', not '%s'",
                   s->o.out_dir, s->run.workload, s->wl.name);
  s->seed_id = s->run.seed_program_id;
  s->baseline_ms = baseline_mean(s->run.baseline_json);
  if (db_programs_load(s->db, s->run.id, NULL, 1, &arr, &n, e))
    return e->code;
  s->queue = calloc(n + 1, sizeof(*s->queue));
  if (!s->queue) {
    db_programs_free(arr, n);
    return err_set(e, ERR_NOMEM, "out of memory");
  }
  for (i = 0; i < n; i++) {
    struct db_program *p = &arr[i];
    int k = p->island;
    int unfinished = p->status && (!strcmp(p->status, "pending") ||
                                   !strcmp(p->status, "running") ||
                                   !strcmp(p->status, "interrupted"));
    if (k >= 0 && k < EVOLVE_MAX_ISLANDS && p->id != s->seed_id) {
      if (p->generation > s->isl[k].issued)
        s->isl[k].issued = p->generation;
      if (p->phase && !strcmp(p->phase, "exploit"))
        s->isl[k].exploit = 1;
    }
    if (unfinished && p->id != s->seed_id)
      s->queue[s->nqueue++] = p->id;
    else if (!unfinished &&
             strcmp(p->edit_kind ? p->edit_kind : "", "migrate") &&
             strcmp(p->status ? p->status : "", "duplicate"))
      s->count++; /* progress lines go on counting evaluations */
    if (!search_add(s, p)) {
      db_programs_free(arr, n);
      return err_set(e, ERR_NOMEM, "out of memory");
    }
  }
  db_programs_free(arr, n);
  for (i = 0; i < EVOLVE_MAX_ISLANDS; i++) {
    s->isl[i].done = s->isl[i].issued;
    s->seq_pos += s->isl[i].issued;
    if (s->isl[i].issued > gen)
      gen = s->isl[i].issued;
  }
  for (i = 0; i < s->nqueue; i++) {
    struct member *m = search_find(s, s->queue[i]);
    if (m)
      s->isl[m->p.island].done--;
  }
  search_rebuild(s);
  llm_pool_set_spent(s->pool, s->run.spent_usd);
  printf("resuming run %lld: generation %d of %d, settings as recorded%s; "
         "%zu programs, %zu to evaluate again\n",
         (long long)s->run.id, gen,
         s->recorded_generations > 0 ? s->recorded_generations
                                     : s->o.generations,
         s->resume_note, s->nm, s->nqueue);
  return resume_record(s, e);
}

static void fmt_duration(double s, char *out, size_t n)
{
  if (s < 120)
    snprintf(out, n, "%.1f s", s);
  else if (s < 7200)
    snprintf(out, n, "%dm%02ds", (int)s / 60, (int)s % 60);
  else
    snprintf(out, n, "%dh%02dm", (int)s / 3600, ((int)s / 60) % 60);
}

/* The bar row of the summary: its mean and which baseline it is per size
 * (a database from before the bar says only "baseline"). */
static void summary_bar(const struct evolve *s)
{
  json_t *b = json_loads(s->run.baseline_json, 0, NULL);
  const char *k;
  json_t *v;
  char who[600] = "";
  size_t len = 0;

  json_object_foreach(b, k, v)
  {
    const char *name = bar_name(b, k);
    if (len < sizeof(who))
      len += (size_t)snprintf(who + len, sizeof(who) - len, "%s%s=%s",
                              len ? ", " : "", k, name ? name : "baseline");
  }
  if (len >= sizeof(who))
    snprintf(who + sizeof(who) - 5, 5, "...");
  printf("%-9s %12.4g %12s %8.3fx  %s\n", "bar", s->baseline_ms, "-", 1.0,
         who);
  json_decref(b);
}

/* "speedup: best #12: 14.6x the bar, 95% CI [...], confirmed over 3
 * rounds": the run's one figure, first. */
static void summary_headline(const struct evolve *s, const struct member *best)
{
  struct headline h;
  char t[256];

  if (!best)
    return;
  search_headline(s, best, &h);
  printf("speedup: best #%lld: %s\n", (long long)best->p.id,
         headline_text(&h, t, sizeof(t)));
}

/* The best row: its speedup is the headline's (confirmed, with its
 * interval, or labelled unconfirmed). */
static void summary_best(const struct evolve *s, const struct member *best,
                         const char *where)
{
  struct headline h;
  char how[96];

  search_headline(s, best, &h);
  if (h.confirmed)
    snprintf(how, sizeof(how), "confirmed, 95%% CI [%.3g, %.3g]", h.lo, h.hi);
  else
    snprintf(how, sizeof(how), "unconfirmed");
  printf("%-9s %12.4g %12.3g %8.3fx  #%lld (island %d, generation %d, %s; "
         "%s) -> %s\n",
         "best", best->p.median_ms,
         best->p.noise_ms > 0 ? best->p.noise_ms : 0,
         h.speedup > 0 ? h.speedup : 0, (long long)best->p.id, best->p.island,
         best->p.generation, best->p.edit_kind ? best->p.edit_kind : "?", how,
         where);
}

/* The final table: bar, seed, best; where the best code is. */
static void summary(struct evolve *s)
{
  const struct member *seed = search_find(s, s->seed_id);
  const struct member *best = search_find(s, s->best_id);
  char gpu[256] = "no GPU", wall[80], where[1200];
  const json_t *g = s->machine ? json_object_get(s->machine, "gpus") : NULL;
  const json_t *g0 = g ? json_array_get(json_object_get(g, "list"), 0) : NULL;
  int ok = 0, failed = 0, rejected = 0, pending = 0, n = 0, copies = 0;
  int interrupted = 0, dups = 0;
  char copied[96] = "", stopped[48] = "", duped[96] = "";
  size_t i;

  for (i = 0; i < s->nm; i++) {
    const struct db_program *p = &s->m[i]->p;
    if (p->edit_kind && !strcmp(p->edit_kind, "migrate")) {
      copies++; /* not candidates: the report counts them apart too */
      continue;
    }
    if (p->status && !strcmp(p->status, "duplicate")) {
      dups++; /* answered from the database: proposals, not candidates */
      continue;
    }
    n++;
    if (!p->status)
      continue;
    if (!strcmp(p->status, "ok"))
      ok++;
    else if (!strcmp(p->status, "rejected"))
      rejected++;
    else if (!strcmp(p->status, "failed"))
      failed++;
    else if (!strcmp(p->status, "interrupted"))
      interrupted++;
    else
      pending++;
  }
  if (g0)
    snprintf(gpu, sizeof(gpu), "%lld x %s",
             json_integer_value(json_object_get(g, "count")),
             json_string_value(json_object_get(g0, "name")) ?: "?");
  /* the run's wall time, as the report computes it (started_at to
   * finished_at), and this session's when it is a resumed one */
  {
    double t1 = s->already_done && s->run.finished_at > 0 ? s->run.finished_at
                                                          : db_now();
    char sess[32];
    fmt_duration(s->run.started_at > 0 ? t1 - s->run.started_at
                                       : db_now() - s->t0,
                 wall, sizeof(wall));
    if (s->o.resume && !s->already_done) {
      size_t l = strlen(wall);
      fmt_duration(db_now() - s->t0, sess, sizeof(sess));
      snprintf(wall + l, sizeof(wall) - l, " (this session %s)", sess);
    }
  }
  snprintf(where, sizeof(where), "%s/best%s", s->o.out_dir, s->ext);
  printf("\n== cuco evolve %s: %s ==\n", s->wl.name,
         s->stop_reason[0] ? s->stop_reason : "done");
  summary_headline(s, best);
  printf("machine: %s; ranks %d%s\n", gpu, s->o.ranks ? s->o.ranks : 1,
         s->o.vranks ? " (virtual ranks: protocol test, not performance)"
                     : "");
  printf("%-9s %12s %12s %9s  %s\n", "", "median_ms", "noise_ms", "speedup",
         "program");
  if (s->wl.nbaselines && s->run.baseline_json)
    summary_bar(s);
  if (seed && seed->p.median_ms > 0)
    printf("%-9s %12.4g %12.3g %8.3fx  #%lld %s\n", "seed", seed->p.median_ms,
           seed->p.noise_ms > 0 ? seed->p.noise_ms : 0,
           seed->p.speedup > 0 ? seed->p.speedup : 0, (long long)seed->p.id,
           s->wl.seed);
  if (best && best->p.median_ms > 0)
    summary_best(s, best, where);
  if (!s->run.baseline_json)
    printf("speedups are against the seed: %s\n",
           s->wl.nbaselines ? "no baseline passed"
                            : "the workload has no baseline");
  if (best && best->p.directives_json)
    printf("best directives: %s\n", best->p.directives_json);
  if (copies)
    snprintf(copied, sizeof(copied), " + %d migrate cop%s (not evaluated)",
             copies, copies == 1 ? "y" : "ies");
  if (interrupted)
    snprintf(stopped, sizeof(stopped), ", %d interrupted", interrupted);
  if (dups)
    snprintf(duped, sizeof(duped), " + %d duplicate%s (not evaluated)", dups,
             dups == 1 ? "" : "s");
  printf("candidates: %d (%d correct, %d failed, %d rejected before "
         "evaluation%s%s)%s%s; LLM: %s, $%.4f; wall %s\n",
         n, ok, failed, rejected, stopped, pending ? ", some unfinished" : "",
         copied, duped, s->use_llm ? "yes" : "none (offline tuner)",
         s->run.spent_usd, wall);
  /* one program, one evaluation: proposals that compile to a program
   * already evaluated were answered from the database */
  printf("duplicates: %d proposal%s compiled to a program already evaluated "
         "and %s answered from the database: %d candidate%s for %d "
         "proposals\n",
         dups, dups == 1 ? "" : "s", dups == 1 ? "was" : "were", n,
         n == 1 ? "" : "s", n + dups);
  if (s->floor_text)
    printf("%s\n", s->floor_text);
  if (s->confirm_text)
    fputs(s->confirm_text, stdout);
  if (s->noise_text)
    fputs(s->noise_text, stdout);
  if (s->n_noisy)
    printf("noise: %d measurement%s spread beyond %.0f%% of the median and "
           "%s measured again\n",
           s->n_noisy, s->n_noisy == 1 ? "" : "s", 100 * s->o.noise_threshold,
           s->n_noisy == 1 ? "was" : "were");
  printf("database: %s/run.db\n", s->o.out_dir);
  fflush(stdout);
}

static void on_signal(int sig)
{
  if (!search_stop_signal)
    search_stop_signal = sig;
  search_interrupted = 1; /* proc.c stops every child (proc_stop_on) */
}

/* --launcher / [launch], and for the Slurm executor: srun steps, one slot
 * per GPU group of the allocation (CPU tasks without GPUs), Slurm's GPU
 * binding instead of our CUDA_VISIBLE_DEVICES. */
static int prepare_launcher(struct evolve *s, struct cmd_ctx *ctx, int per,
                            struct err *e)
{
  int gpus = 0, n, k;

  if (s->o.executor_slurm) {
    if (s->o.launcher && strcmp(s->o.launcher, "srun"))
      return err_set(e, ERR_USAGE,
                     "--launcher %s: the slurm executor runs srun steps",
                     s->o.launcher);
    if (!getenv("SLURM_JOB_ID"))
      return err_set(e, ERR_USAGE,
                     "executor slurm: not inside a Slurm allocation "
                     "(SLURM_JOB_ID is not set): run cuco under salloc or "
                     "sbatch");
  }
  if (launcher_config(ctx->cfg, s->o.executor_slurm ? "srun" : s->o.launcher,
                      &s->launcher, e))
    return e->code;
  s->launcher.stop = &search_interrupted;
  if (s->launcher.kind != LAUNCHER_SRUN)
    return 0;
  /* {gpus}: Slurm binds one GPU to each rank of a GPU workload */
  s->launcher.gpus_per_rank = s->wl.kind == WORKLOAD_RUNTIME;
  snprintf(s->launcher.step_log, sizeof(s->launcher.step_log),
           "%s/slurm-steps.log", s->o.out_dir);
  if (!s->o.executor_slurm)
    return 0;
  n = s->wl.kind == WORKLOAD_RUNTIME ? launcher_slurm_slots(per, 1, &gpus)
                                     : launcher_slurm_slots(per, 0, &gpus);
  if (n < 1)
    return err_set(e, ERR_USAGE,
                   "executor slurm: the allocation has too few %s for one "
                   "candidate of %d rank%s",
                   gpus && s->wl.kind == WORKLOAD_RUNTIME ? "GPUs" : "tasks",
                   per, per == 1 ? "" : "s");
  if (s->o.slots > 0 && s->o.slots < n)
    n = s->o.slots;
  s->nslots = n < EVOLVE_MAX_SLOTS ? n : EVOLVE_MAX_SLOTS;
  for (k = 0; k < EVOLVE_MAX_SLOTS; k++)
    s->gpus[k][0] = '\0'; /* Slurm binds the GPUs of each step */
  return 0;
}

/* Machine, toolchain, LLM pool, slots: everything before the run. */
static int prepare(struct evolve *s, struct cmd_ctx *ctx, struct err *e)
{
  char path[WORKLOAD_PATH + 200];
  const char *dot;
  int ngpu, per, k;

  if (workload_load(s->o.workload_dir, &s->wl, e) ||
      workload_check_seed(&s->wl, e))
    return e->code;
  if (s->o.ranks && !workload_allows_ranks(&s->wl, s->o.ranks))
    return err_set(e, ERR_USAGE, "--ranks %d: %s allows other rank counts",
                   s->o.ranks, s->wl.name);
  if (!s->o.ranks)
    s->o.ranks = s->wl.nranks ? s->wl.ranks[0] : 1;
  if (tc_probe(ctx->cfg, &s->tc, e)) {
    if (s->wl.kind == WORKLOAD_RUNTIME)
      return e->code;
    s->machine = NULL; /* free-form: runs without a CUDA toolchain */
  } else {
    s->machine = doctor_describe(ctx->cfg, &s->tc, e);
  }
  if (!s->machine && s->wl.kind == WORKLOAD_RUNTIME)
    return e->code;
  /* say so before any build, in the words doctor uses */
  if (s->wl.kind == WORKLOAD_RUNTIME && !s->wl.host_only &&
      !json_integer_value(
          json_object_get(json_object_get(s->machine, "gpus"), "count")))
    return err_set(e, ERR_NOTFOUND, "%s",
                   doctor_no_gpu_line("evolve", s->wl.dir));
  snprintf(path, sizeof(path), "%s/%s", s->wl.dir, s->wl.seed);
  s->seed_code = file_read(path, CODE_MAX, NULL, e);
  if (!s->seed_code)
    return e->code;
  dot = strrchr(s->wl.seed, '.');
  snprintf(s->ext, sizeof(s->ext), "%s", dot && strlen(dot) < 12 ? dot : "");
  {
    /* identities read the workload's headers and the runtime's, as the
     * build finds them (-I) */
    char rt[WORKLOAD_PATH + 200] = "";
    const char *dirs[2] = {s->wl.dir, rt};
    struct err re;
    if (s->wl.kind == WORKLOAD_RUNTIME &&
        build_find_runtime(ctx->cfg, s->wl.dir, rt, sizeof(rt), &re))
      rt[0] = '\0';
    s->pid = progid_new(dirs, 2);
    if (!s->pid)
      return err_set(e, ERR_NOMEM, "out of memory");
  }
  s->pool = llm_pool_new(ctx->cfg, e);
  if (!s->pool)
    return e->code;
  if (s->o.llm && !strcmp(s->o.llm, "none")) {
    s->use_llm = 0;
  } else if (s->o.llm) {
    s->model = llm_pool_find(s->pool, s->o.llm);
    if (!s->model)
      return err_set(e, ERR_USAGE,
                     "--llm %s: no such model in the configuration ([llm] "
                     "is 'default', [model.NAME] adds NAME)",
                     s->o.llm);
    s->use_llm = 1;
  } else {
    s->use_llm = llm_pool_count(s->pool) > 0;
  }
  llm_pool_set_recorder(s->pool, search_record, s);
  if (s->o.budget_usd > 0)
    llm_pool_set_budget(s->pool, s->o.budget_usd);
  /* slots: one GPU group of `ranks` GPUs each (vranks: one GPU) */
  ngpu = s->machine ? (int)json_integer_value(json_object_get(
                          json_object_get(s->machine, "gpus"), "count"))
                    : 0;
  per = s->o.vranks ? 1 : s->o.ranks;
  if (s->wl.kind == WORKLOAD_RUNTIME && ngpu > 0) {
    s->nslots = ngpu / per > 0 ? ngpu / per : 1;
    if (s->o.slots > 0 && s->o.slots < s->nslots)
      s->nslots = s->o.slots;
    for (k = 0; k < s->nslots && k < EVOLVE_MAX_SLOTS; k++) {
      size_t o = 0;
      int r;
      for (r = 0; r < per && o < sizeof(s->gpus[k]); r++)
        o += (size_t)snprintf(s->gpus[k] + o, sizeof(s->gpus[k]) - o, "%s%d",
                              r ? "," : "", k * per + r);
    }
  } else {
    s->nslots = s->o.slots > 0 ? s->o.slots : 1;
  }
  if (s->nslots > EVOLVE_MAX_SLOTS)
    s->nslots = EVOLVE_MAX_SLOTS;
  {
    /* build-ahead: a second worker per slot checks and compiles the next
     * candidate while the slot's GPUs run this one (search_evaluate takes
     * the slot's run lock from verify to the end of the bench); a GPU
     * otherwise idles through every build */
    int ahead = s->o.build_ahead >= 0            ? s->o.build_ahead
                : s->wl.kind == WORKLOAD_RUNTIME ? 1
                                                 : 0;
    s->nworkers = s->nslots * (1 + ahead);
    if (s->nworkers > EVOLVE_MAX_WORKERS)
      s->nworkers = EVOLVE_MAX_WORKERS;
  }
  return prepare_launcher(s, ctx, per, e);
}

/* Whether a loaded run has nothing left: no unfinished row and every
 * island issued all its generations. */
static int run_complete(const struct evolve *s)
{
  int k;

  if (s->nqueue)
    return 0;
  for (k = 0; k < s->o.islands && k < EVOLVE_MAX_ISLANDS; k++)
    if (s->isl[k].issued < s->o.generations)
      return 0;
  return 1;
}

/* --resume: DIR/run.db holds the run; it and its recorded settings are
 * read before prepare() acts on the settings. */
static int resume_open(struct evolve *s, struct err *e)
{
  char path[1200];
  struct stat st;

  snprintf(path, sizeof(path), "%s/run.db", s->o.out_dir);
  if (stat(path, &st))
    return err_set(e, ERR_USAGE, "--resume: no run database at %s", path);
  if (db_open(path, 0, &s->db, e))
    return e->code;
  if (db_run_latest(s->db, &s->run, e))
    return err_wrap(e, "--resume %s", s->o.out_dir);
  return evolve_recorded(s, e);
}

/* A new run in DIR/run.db, which must not hold one. */
static int create_run(struct evolve *s, struct err *e)
{
  char path[1200], *cj, *mj;
  const struct llm_model *m0 = llm_pool_model(s->pool, 0);
  struct stat st;

  if (file_mkdirs(s->o.out_dir, e))
    return e->code;
  snprintf(path, sizeof(path), "%s/run.db", s->o.out_dir);
  if (stat(path, &st) == 0)
    return err_set(e, ERR_USAGE,
                   "%s already holds a run: add --resume to continue it, or "
                   "choose another --out",
                   path);
  if (db_open(path, 0, &s->db, e))
    return e->code;
  cj = config_json(s);
  mj = s->machine ? json_dumps(s->machine, JSON_COMPACT) : NULL;
  s->run.workload = strdup(s->wl.name);
  s->run.workload_dir = strdup(s->wl.dir);
  s->run.config_json = cj;
  s->run.machine_json = mj;
  s->run.llm = strdup(!s->use_llm ? "none"
                      : s->model  ? s->model->model
                      : m0        ? m0->model
                                  : "none");
  s->run.budget_usd = s->o.budget_usd > 0 ? s->o.budget_usd : -1;
  return db_run_create(s->db, &s->run, e);
}

static int evolve_main(struct evolve *s, struct cmd_ctx *ctx, struct err *e)
{
  int rc, failed;

  if (s->o.resume && (rc = resume_open(s, e)))
    return rc;
  if ((rc = prepare(s, ctx, e)))
    return rc;
  s->t0 = db_now();
  if (s->o.time_limit_s > 0)
    s->deadline = s->t0 + s->o.time_limit_s;
  if ((rc = s->o.resume ? load_run(s, e) : create_run(s, e)))
    return rc;
  s->session_started = 1;
  select_rng_seed(&s->rng, (uint64_t)s->o.seed * 1000003u + s->nm);
  s->total = s->o.islands * s->o.generations + 1; /* + the seed */
  {
    char ahead[64] = "";
    if (s->nworkers > s->nslots)
      snprintf(ahead, sizeof(ahead), " (+%d building ahead)",
               s->nworkers - s->nslots);
    printf("cuco evolve %s: %d islands x %d generations, %d evaluation "
           "slot%s%s, proposer: %s; out %s\n",
           s->wl.name, s->o.islands, s->o.generations, s->nslots,
           s->nslots == 1 ? "" : "s", ahead,
           s->use_llm ? s->run.llm : "offline tuner", s->o.out_dir);
  }
  fflush(stdout);
  if (s->o.resume && s->run.status && !strcmp(s->run.status, "done") &&
      run_complete(s)) {
    /* nothing left to do: say so, and show the run as it ended */
    s->already_done = 1;
    snprintf(s->stop_reason, sizeof(s->stop_reason),
             "already finished, nothing to resume");
    confirm_headline(s);
    summary(s);
    return 0;
  }
  if (!s->run.baseline_json && (rc = run_baseline(s, e)))
    return rc;
  if ((rc = start_seed(s, e)))
    return rc;
  /* the machine's noise floor, before anything is compared (a resumed run
   * measured it when it started) */
  if (s->seed_evaluated && !search_interrupted && (rc = confirm_floor(s, e)))
    return rc;
  search_write_best(s);
  rc = search_run(s, e);
  /* an LLM run in which no call got an answer, or that the LLM's settings
   * stopped (no key, a refused key), is not "done" */
  failed = !rc && s->use_llm &&
           ((s->llm_calls > 0 && s->llm_ok == 0) || s->llm_unusable[0]);
  if (failed && s->llm_calls > 0 && s->llm_ok == 0) {
    snprintf(s->stop_reason, sizeof(s->stop_reason),
             "failed: none of %d LLM calls succeeded", s->llm_calls);
    rc = err_set(e, ERR_LLM,
                 "none of the %d LLM calls succeeded (last: %.110s); check "
                 "the model settings with 'cuco doctor --llm'",
                 s->llm_calls, s->llm_last_error);
  } else if (failed) {
    snprintf(s->stop_reason, sizeof(s->stop_reason), "failed: LLM not usable");
    rc = err_set(e, ERR_LLM,
                 "LLM not usable: %.150s; check the model settings with "
                 "'cuco doctor --llm'",
                 s->llm_unusable);
  }
  if (failed && db_run_set_status(s->db, s->run.id, "failed", 1, e))
    rc = e->code;
  if (!rc && !search_interrupted)
    rc = confirm_best(s, e);
  if (!rc) {
    const char *st2 = search_interrupted ? "interrupted" : "done";
    if (db_run_set_status(s->db, s->run.id, st2, 1, e) ||
        db_run_set_program(s->db, s->run.id, "best_program_id", s->best_id, e))
      rc = e->code;
  }
  /* the headline as the report will read it; best.EXT says it too */
  confirm_headline(s);
  search_write_best(s);
  summary(s);
  return rc;
}

static void evolve_free(struct evolve *s)
{
  size_t i;
  int k;

  for (i = 0; i < s->nm; i++) {
    db_program_release(&s->m[i]->p);
    novelty_sig_release(&s->m[i]->sig);
    free(s->m[i]->emb);
    free(s->m[i]);
  }
  free(s->m);
  for (k = 0; k < EVOLVE_MAX_ISLANDS; k++)
    free(s->isl[k].meta);
  free(s->queue);
  free(s->seed_code);
  free(s->confirm_text);
  free(s->noise_text);
  free(s->floor_text);
  progid_free(s->pid);
  for (k = 0; k < s->nrec_str; k++)
    free(s->rec_str[k]);
  db_run_release(&s->run);
  db_close(s->db);
  llm_pool_free(s->pool);
  json_decref(s->machine);
  pthread_mutex_destroy(&s->mu);
  for (k = 0; k < EVOLVE_MAX_SLOTS; k++)
    pthread_mutex_destroy(&s->run_mu[k]);
}

static int parse_number(struct cmd_ctx *ctx, const char *flag, const char *v,
                        double lo, double hi, double *out)
{
  if (config_parse_double(v, out) || *out < lo || *out > hi)
    return cmd_bad_usage(ctx, "%s: '%s' is not a number in [%g, %g]", flag, v,
                         lo, hi);
  return 0;
}

int cmd_evolve(struct cmd_ctx *ctx, int argc, char **argv)
{
  static const struct option opts[] = {
      {"llm", required_argument, NULL, 'l'},
      {"generations", required_argument, NULL, 'g'},
      {"islands", required_argument, NULL, 'i'},
      {"out", required_argument, NULL, 'o'},
      {"resume", no_argument, NULL, 'r'},
      {"budget-usd", required_argument, NULL, 'b'},
      {"time-limit", required_argument, NULL, 't'},
      {"ranks", required_argument, NULL, 'n'},
      {"vranks", required_argument, NULL, 'V'},
      {"seed", required_argument, NULL, 's'},
      {"slots", required_argument, NULL, 'S'},
      {"sizes", required_argument, NULL, 'z'},
      {"launcher", required_argument, NULL, 'L'},
      {"executor", required_argument, NULL, 'E'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  struct evolve *s = calloc(1, sizeof(*s));
  struct err e = {0, ""};
  struct sigaction sa;
  char outbuf[1024];
  double v;
  int opt, rc = CMD_FAIL;

  if (!s) {
    fprintf(stderr, "cuco evolve: out of memory\n");
    return CMD_FAIL;
  }
  pthread_mutex_init(&s->mu, NULL);
  for (int k = 0; k < EVOLVE_MAX_SLOTS; k++)
    pthread_mutex_init(&s->run_mu[k], NULL);
  if (evolve_opts_init(&s->o, ctx->cfg, &e)) {
    fprintf(stderr, "cuco evolve: %s\n", e.msg);
    goto out;
  }
  while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (opt) {
    case 'l':
      s->o.llm = optarg;
      break;
    case 'g':
      if ((rc = parse_number(ctx, "--generations", optarg, 1, 100000, &v)))
        goto out;
      s->o.generations = (int)v;
      break;
    case 'i':
      if ((rc = parse_number(ctx, "--islands", optarg, 1, EVOLVE_MAX_ISLANDS,
                             &v)))
        goto out;
      s->o.islands = (int)v;
      break;
    case 'o':
      s->o.out_dir = optarg;
      break;
    case 'r':
      s->o.resume = 1;
      break;
    case 'b':
      if ((rc = parse_number(ctx, "--budget-usd", optarg, 0, 1e6,
                             &s->o.budget_usd)))
        goto out;
      break;
    case 't':
      if ((rc = parse_number(ctx, "--time-limit", optarg, 1, 1e7,
                             &s->o.time_limit_s)))
        goto out;
      break;
    case 'n':
      if ((rc = parse_number(ctx, "--ranks", optarg, 1, 64, &v)))
        goto out;
      s->o.ranks = (int)v;
      break;
    case 'V':
      if ((rc = parse_number(ctx, "--vranks", optarg, 0, 64, &v)))
        goto out;
      s->o.vranks = (int)v;
      break;
    case 's':
      if ((rc = parse_number(ctx, "--seed", optarg, 0, 4e9, &v)))
        goto out;
      s->o.seed = (unsigned long)v;
      break;
    case 'S':
      if ((rc = parse_number(ctx, "--slots", optarg, 1, EVOLVE_MAX_SLOTS, &v)))
        goto out;
      s->o.slots = (int)v;
      break;
    case 'z':
      s->o.sizes = optarg;
      break;
    case 'L':
      s->o.launcher = optarg;
      break;
    case 'E':
      if (strcmp(optarg, "local") && strcmp(optarg, "slurm")) {
        rc = cmd_bad_usage(ctx, "--executor: '%s' is not local or slurm",
                           optarg);
        goto out;
      }
      s->o.executor_slurm = !strcmp(optarg, "slurm");
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
    rc = cmd_bad_usage(ctx, optind >= argc ? "missing WORKLOAD"
                                           : "one WORKLOAD only");
    goto out;
  }
  s->o.workload_dir = argv[optind];
  if (!s->o.out_dir) {
    const char *base = strrchr(s->o.workload_dir, '/');
    char name[256];
    snprintf(name, sizeof(name), "%s",
             base && base[1] ? base + 1 : s->o.workload_dir);
    name[strcspn(name, "/")] = '\0';
    snprintf(outbuf, sizeof(outbuf), "out/evolve-%s", name);
    s->o.out_dir = outbuf;
  }
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL); /* salloc's answer to an ended allocation */
  proc_stop_on(&search_interrupted);
  s->argc = argc;
  s->argv = argv;
  if (evolve_main(s, ctx, &e)) {
    fprintf(stderr, "cuco evolve: %s\n", e.msg);
    if (s->session_started)
      (void)!db_run_set_status(s->db, s->run.id, "interrupted", 1, &e);
    rc = e.code == ERR_USAGE ? CMD_USAGE : CMD_FAIL;
  } else {
    rc = search_interrupted ? CMD_FAIL : CMD_OK;
  }
  if (search_interrupted)
    evolve_stop_message(s);
  proc_stop_on(NULL);
out:
  evolve_free(s);
  free(s);
  return rc;
}
