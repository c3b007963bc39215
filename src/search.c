/* search.c - members, evaluation and bookkeeping of the search.
 *
 * Locking: one mutex (s->mu) guards the database connection and all the
 * search state.  It is released around the slow parts: LLM calls and
 * evaluations, so several slots evaluate while others wait for the LLM.
 * Member pointers are stable (an array of pointers), but a member's
 * strings are only read with the lock held; workers copy what they need.
 */
#include "search_impl.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "buf.h"
#include "directive.h"
#include "eval.h"
#include "file.h"
#include "llm.h"
#include "log.h"
#include "meta.h"
#include "patch.h"

volatile int search_interrupted;
volatile sig_atomic_t search_stop_signal;

void search_hash(const char *code, char out[17])
{
  snprintf(out, 17, "%016llx",
           (unsigned long long)XXH64(code, strlen(code), 0));
}

int search_ident(struct evolve *s, const char *code, char out[17])
{
  const char *defs[DIRECTIVE_MAX_FLAGS + PROGID_COMPILER_DEFS + 2];
  const char *const *cdefs = !strcmp(s->ext, ".cu")  ? progid_nvcc_defs
                             : !strcmp(s->ext, ".c") ? progid_cc_defs
                                                     : NULL;
  struct directive_set d;
  struct directive_flags f;
  struct err e;
  char why[160];
  int n = 0, i, rc;

  if (directive_parse(code, &d, &e))
    memset(&d, 0, sizeof(d)); /* refused before it is built: no flags */
  directive_flags(&d, &f);
  for (i = 0; i < f.n; i++)
    defs[n++] = f.v[i];
  for (i = 0; cdefs && i < PROGID_COMPILER_DEFS; i++)
    defs[n++] = cdefs[i];
  if (s->o.vranks)
    defs[n++] = "-DCUCO_VRANKS";
  /* the runtime's own units define it before rt.cuh, a build never */
  if (s->wl.kind == WORKLOAD_RUNTIME)
    defs[n++] = "-URT_HOST_ONLY";
  rc = s->pid ? progid_compute(s->pid, code, defs, n, out, why, sizeof(why))
              : ERR_NOMEM;
  if (rc == PROGID_EXACT) {
    s->ident_exact++;
  } else if (rc == PROGID_TEXT) {
    s->ident_text++;
    snprintf(s->ident_why, sizeof(s->ident_why), "%s", why);
  } else {
    search_hash(code, out);
    out[0] = 't'; /* never equal to an identity */
  }
  return rc;
}

const char *search_member_ident(struct evolve *s, struct member *m)
{
  if (!m->ident[0] && m->p.code)
    (void)search_ident(s, m->p.code, m->ident);
  return m->ident;
}

int search_is_duplicate(const struct member *m)
{
  return m->p.status && !strcmp(m->p.status, "duplicate");
}

/* Does m's verdict (or its evaluation under way) answer a program that
 * compiles to the same?  A failure at the static stage does not: that is
 * the text's, or the machine's. */
static int answers(const struct member *m)
{
  const char *st = m->p.status ? m->p.status : "";

  if (!strcmp(m->p.edit_kind ? m->p.edit_kind : "", "migrate"))
    return 0;
  return !strcmp(st, "ok") || !strcmp(st, "pending") ||
         !strcmp(st, "running") ||
         (!strcmp(st, "failed") && m->p.stage && strcmp(m->p.stage, "static"));
}

struct member *search_same_program(struct evolve *s, const char *ident)
{
  size_t i;

  for (i = 0; ident && ident[0] && i < s->nm; i++)
    if (answers(s->m[i]) && !strcmp(search_member_ident(s, s->m[i]), ident))
      return s->m[i];
  return NULL;
}

double search_time_left(const struct evolve *s)
{
  return s->deadline > 0 ? s->deadline - db_now() : -1;
}

struct member *search_find(struct evolve *s, int64_t id)
{
  size_t i;

  for (i = 0; id && i < s->nm; i++)
    if (s->m[i]->p.id == id)
      return s->m[i];
  return NULL;
}

struct member *search_add(struct evolve *s, struct db_program *p)
{
  struct member *m, *parent;

  if (s->nm == s->capm) {
    size_t cap = s->capm ? s->capm * 2 : 64;
    struct member **g = realloc(s->m, cap * sizeof(*g));
    if (!g)
      return NULL;
    s->m = g;
    s->capm = cap;
  }
  m = calloc(1, sizeof(*m));
  if (!m)
    return NULL;
  m->p = *p;
  db_program_init(p); /* the strings now belong to m */
  s->m[s->nm++] = m;
  parent = search_find(s, m->p.parent_id);
  if (parent && strcmp(m->p.edit_kind ? m->p.edit_kind : "", "migrate") &&
      !search_is_duplicate(m))
    parent->children++;
  return m;
}

static int is_ok(const struct member *m)
{
  return m->p.status && !strcmp(m->p.status, "ok") && m->p.median_ms > 0;
}

long long search_record(void *ud, const struct llm_record *rec)
{
  struct evolve *s = ud;
  int64_t id;
  struct err e;

  pthread_mutex_lock(&s->mu);
  if (db_llm_call_record(s->db, s->run.id, rec, &id, &e))
    log_warn("evolve: %s", e.msg);
  s->run.spent_usd += rec->cost_usd;
  s->llm_calls++;
  if (rec->outcome && !strcmp(rec->outcome, "ok"))
    s->llm_ok++;
  else
    snprintf(s->llm_last_error, sizeof(s->llm_last_error), "%s: %.180s",
             rec->outcome ? rec->outcome : "?", rec->error ? rec->error : "");
  pthread_mutex_unlock(&s->mu);
  return (long long)id;
}

void search_headline(const struct evolve *s, const struct member *b,
                     struct headline *h)
{
  if (s->headline.program_id == b->p.id && s->headline.confirmed) {
    *h = s->headline;
    return;
  }
  memset(h, 0, sizeof(*h));
  h->program_id = b->p.id;
  h->speedup = b->p.speedup;
  h->has_bar = s->run.baseline_json != NULL;
  h->is_seed = b->p.id == s->seed_id;
}

/* b's code with a header line that names the run and its headline, put
 * right after the first EVOLVE-BLOCK-START line in that line's comment
 * style ("// ", "# "): inside the block, the file still passes the
 * frozen-text check as a candidate.  NULL: no such line (or a block
 * comment), or out of memory; then the code goes as it is. */
static char *with_header(const struct evolve *s, const struct member *b)
{
  const char *code = b->p.code, *mark = strstr(code, "EVOLVE-BLOCK-START");
  const char *bol = mark, *eol = mark ? strchr(mark, '\n') : NULL;
  struct buf out = BUF_INIT(2 * strlen(code) + 1024);
  struct headline h;
  char t[256];

  if (!eol)
    return NULL;
  while (bol > code && bol[-1] != '\n')
    bol--;
  if (memchr(bol, '*', (size_t)(mark - bol)))
    return NULL; /* a block comment would need closing */
  search_headline(s, b, &h);
  buf_append(&out, code, (size_t)(eol + 1 - code));
  buf_printf(&out, "%.*scuco evolve run %lld (%s): best #%lld: %s\n",
             (int)(mark - bol), bol, (long long)s->run.id, s->wl.name,
             (long long)b->p.id, headline_text(&h, t, sizeof(t)));
  buf_puts(&out, eol + 1);
  if (buf_error(&out)) {
    buf_release(&out);
    return NULL;
  }
  return buf_detach(&out, NULL);
}

/* Write the best program's code to DIR/best.EXT (atomically: temp file +
 * rename, so a kill never leaves half a file), headed by its headline. */
static void write_best(struct evolve *s, const struct member *b)
{
  char path[1200], *text;
  struct err e = {0, ""};

  if (!b || !b->p.code)
    return;
  text = with_header(s, b);
  snprintf(path, sizeof(path), "%s/best%s", s->o.out_dir, s->ext);
  if (file_write(path, text ? text : b->p.code,
                 strlen(text ? text : b->p.code), &e))
    log_warn("evolve: %s", e.msg);
  free(text);
}

void search_write_best(struct evolve *s)
{
  write_best(s, search_find(s, s->best_id));
}

/* Does m beat the current best (NULL: anything correct does)? */
static int beats(const struct member *m, const struct member *best)
{
  if (!is_ok(m))
    return 0;
  if (!best || !is_ok(best))
    return 1;
  return meta_beats(&m->p, &best->p);
}

void search_rebuild(struct evolve *s)
{
  size_t i;
  int k;

  s->best_id = 0;
  for (k = 0; k < EVOLVE_MAX_ISLANDS; k++)
    s->isl[k].best_id = 0;
  for (i = 0; i < s->nm; i++) {
    struct member *m = s->m[i];
    int k2 = m->p.island;
    if (k2 < 0 || k2 >= EVOLVE_MAX_ISLANDS)
      continue;
    if (beats(m, search_find(s, s->isl[k2].best_id)))
      s->isl[k2].best_id = m->p.id;
    if (strcmp(m->p.edit_kind ? m->p.edit_kind : "", "migrate") &&
        beats(m, search_find(s, s->best_id)))
      s->best_id = m->p.id;
  }
}

int search_copy(struct evolve *s, const struct member *src, int dst,
                struct err *e)
{
  struct db_program p;
  size_t i;

  for (i = 0; i < s->nm; i++)
    if (s->m[i]->p.island == dst && s->m[i]->p.code_hash && src->p.code_hash &&
        !strcmp(s->m[i]->p.code_hash, src->p.code_hash))
      return 0; /* already there */
  db_program_init(&p);
  p.run_id = s->run.id;
  p.parent_id = src->p.id;
  p.island = dst;
  p.generation = s->isl[dst].issued;
  p.edit_kind = strdup("migrate");
  p.phase = strdup(s->isl[dst].exploit ? "exploit" : "explore");
  p.code = src->p.code ? strdup(src->p.code) : NULL;
  p.code_hash = src->p.code_hash ? strdup(src->p.code_hash) : NULL;
  p.directives_json =
      src->p.directives_json ? strdup(src->p.directives_json) : NULL;
  p.backend = src->p.backend ? strdup(src->p.backend) : NULL;
  p.placement = src->p.placement ? strdup(src->p.placement) : NULL;
  p.sync = src->p.sync ? strdup(src->p.sync) : NULL;
  p.issuer = src->p.issuer ? strdup(src->p.issuer) : NULL;
  p.chunk_bytes = src->p.chunk_bytes;
  p.status = strdup("ok");
  p.stage = strdup("done");
  p.metrics_json = src->p.metrics_json ? strdup(src->p.metrics_json) : NULL;
  p.has_score = src->p.has_score;
  p.score = src->p.score;
  p.median_ms = src->p.median_ms;
  p.noise_ms = src->p.noise_ms;
  p.speedup = src->p.speedup;
  p.finished_at = db_now();
  if (db_program_insert(s->db, &p, e)) {
    db_program_release(&p);
    return e->code;
  }
  if (!search_add(s, &p)) {
    db_program_release(&p);
    return err_set(e, ERR_NOMEM, "out of memory");
  }
  if (beats(s->m[s->nm - 1], search_find(s, s->isl[dst].best_id)))
    s->isl[dst].best_id = s->m[s->nm - 1]->p.id;
  return 0;
}

void search_progress(struct evolve *s, const struct member *m,
                     const char *note)
{
  const struct member *b = search_find(s, s->best_id);
  double left = search_time_left(s);
  char res[96], tl[32], bs[48];

  if (is_ok(m))
    snprintf(res, sizeof(res), "%.4g ms %.3gx", m->p.median_ms,
             m->p.speedup > 0 ? m->p.speedup : 0);
  else
    snprintf(res, sizeof(res), "%s", m->p.status ? m->p.status : "?");
  if (s->deadline <= 0)
    snprintf(tl, sizeof(tl), "no limit");
  else
    snprintf(tl, sizeof(tl), "%.0fs left", left > 0 ? left : 0);
  if (b)
    snprintf(bs, sizeof(bs), "#%lld %.3gx", (long long)b->p.id,
             b->p.speedup > 0 ? b->p.speedup : 0);
  else
    snprintf(bs, sizeof(bs), "none");
  printf("[%3d/%d] #%-4lld gen %-3d island %d %-7s %-7s %-8s %-20s best %-14s "
         "$%.3f %s%s%s\n",
         s->count, s->total, (long long)m->p.id, m->p.generation, m->p.island,
         m->p.edit_kind ? m->p.edit_kind : "?", m->p.phase ? m->p.phase : "",
         m->p.stage ? m->p.stage : "?", res, bs, s->run.spent_usd, tl,
         note && *note ? "  " : "", note ? note : "");
  if (!is_ok(m) && m->p.error && *m->p.error)
    printf("        %.400s\n", m->p.error);
  fflush(stdout);
}

/* After a finished generation on island k (lock held): the phase, the
 * migration and whether a meta summary is due (returned). */
int search_generation_done(struct evolve *s, int k, const struct member *m)
{
  struct island *is = &s->isl[k];
  struct err e;

  is->done++;
  if (beats(m, search_find(s, is->best_id))) {
    is->best_id = m->p.id;
    is->since_improve = 0;
  } else {
    is->since_improve++;
  }
  if (s->o.islands > 1 && s->o.migrate_every > 0 &&
      is->done % s->o.migrate_every == 0 && is->best_id) {
    const struct member *b = search_find(s, is->best_id);
    int dst = (k + 1) % s->o.islands;
    if (b && search_copy(s, b, dst, &e))
      log_warn("evolve: migration: %s", e.msg);
  }
  return s->o.meta_every > 0 && is->done % s->o.meta_every == 0;
}

/* Write the meta summary of island k: statistics, and with an LLM its
 * recommendations.  Called without the lock. */
void search_meta_summary(struct evolve *s, int k)
{
  struct db_program *arr;
  char *stats, *text = NULL;
  struct err e;
  size_t i;
  int gen;

  pthread_mutex_lock(&s->mu);
  arr = malloc((s->nm ? s->nm : 1) * sizeof(*arr));
  if (!arr) {
    pthread_mutex_unlock(&s->mu);
    return;
  }
  for (i = 0; i < s->nm; i++)
    arr[i] = s->m[i]->p; /* shallow: not released */
  stats = meta_stats(arr, s->nm, k);
  gen = s->isl[k].done;
  free(arr);
  pthread_mutex_unlock(&s->mu);
  if (!stats)
    return;
  if (s->use_llm) {
    struct llm_message msg = {LLM_ROLE_USER, NULL};
    struct llm_request req;
    struct llm_response resp = LLM_RESPONSE_INIT;
    struct buf b = BUF_INIT(128 * 1024);
    const struct llm_model *mdl;
    buf_printf(&b,
               "These are the statistics of an evolutionary search on the "
               "workload %s (%s).\n\n%s\nWrite a short scratchpad of what "
               "worked and what did not, then exactly 5 numbered, concrete "
               "recommendations for the next candidates (directive values, "
               "code changes to try or avoid).",
               s->wl.name, s->wl.description, stats);
    msg.content = buf_str(&b);
    memset(&req, 0, sizeof(req));
    req.messages = &msg;
    req.n_messages = 1;
    req.temperature = 0.3;
    req.purpose = "meta";
    pthread_mutex_lock(&s->mu);
    mdl = s->model ? s->model
                   : llm_pool_pick(s->pool, select_rng_uniform(&s->rng));
    pthread_mutex_unlock(&s->mu);
    if (llm_chat(s->pool, mdl, &req, &resp, &e) == 0 && resp.text) {
      struct buf t = BUF_INIT(256 * 1024);
      buf_printf(&t, "%s\n\nLLM recommendations:\n%s", stats, resp.text);
      text = buf_error(&t) ? NULL : buf_detach(&t, NULL);
      buf_release(&t);
    } else {
      log_warn("evolve: meta summary LLM call failed: %s", e.msg);
    }
    llm_response_release(&resp);
    buf_release(&b);
  }
  if (!text) {
    text = stats;
    stats = NULL;
  }
  pthread_mutex_lock(&s->mu);
  if (db_meta_summary_insert(s->db, s->run.id, k, gen, text, &e))
    log_warn("evolve: %s", e.msg);
  free(s->isl[k].meta);
  s->isl[k].meta = text;
  pthread_mutex_unlock(&s->mu);
  free(stats);
}

/* Copy the eval result into the row's outcome fields. */
static void fill_outcome(struct evolve *s, struct db_program *p,
                         const struct eval_result *r)
{
  json_t *d = r->directives;

  p->status = strdup(eval_status_name(r->status));
  p->stage = strdup(eval_stage_name(r->stage));
  p->error = r->error[0] ? strdup(r->error) : NULL;
  p->build_log = r->build_log ? strdup(r->build_log) : NULL;
  p->verify_log = r->verify_log ? strdup(r->verify_log) : NULL;
  p->metrics_json = r->metrics
                        ? json_dumps(r->metrics, JSON_COMPACT | JSON_SORT_KEYS)
                        : NULL;
  if ((r->has_score || (r->protocol_test && r->median_ms > 0)) &&
      r->status == EVAL_STATUS_OK) {
    /* vranks runs rank candidates too; the summary says they are a
     * protocol test, not performance */
    p->has_score = 1;
    p->score = r->median_ms > 0 ? 1000.0 / r->median_ms : r->score;
    p->median_ms = r->median_ms;
    p->noise_ms = r->noise_ms;
    if (s->baseline_ms <= 0 && p->id == s->seed_id)
      s->baseline_ms = r->median_ms; /* no baseline: speedups vs the seed */
    if (s->baseline_ms > 0 && r->median_ms > 0)
      p->speedup = s->baseline_ms / r->median_ms;
  } else if (!strcmp(p->status, "ok")) {
    /* ran without a bench stage (should not happen in a search) */
    free(p->status);
    p->status = strdup("failed");
    if (!p->error)
      p->error = strdup("no benchmark result");
  }
  if (d) {
    p->directives_json = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
#define DSTR(k)                                                               \
  (json_string_value(json_object_get(d, k))                                   \
       ? strdup(json_string_value(json_object_get(d, k)))                     \
       : NULL)
    p->backend = DSTR("backend");
    p->placement = DSTR("placement");
    p->sync = DSTR("sync");
    p->issuer = DSTR("issuer");
#undef DSTR
    p->chunk_bytes =
        (int64_t)json_integer_value(json_object_get(d, "chunk_bytes"));
  }
}

/* Is a passing measurement's spread beyond the noise threshold? */
static int noisy(const struct evolve *s, const struct eval_result *r)
{
  return s->o.noise_threshold > 0 && r->status == EVAL_STATUS_OK &&
         r->has_score && r->median_ms > 0 &&
         r->noise_ms / r->median_ms > s->o.noise_threshold;
}

int search_noise_watch(struct evolve *s, const struct eval_opts *eo,
                       const char *code, struct eval_result *r, char *note,
                       size_t n)
{
  struct eval_result r2;
  struct err e2;
  double rel, rel2 = -1, kept;

  if (!noisy(s, r))
    return 0;
  /* a spread beyond the threshold is measured again and the steadier
   * measurement is kept */
  rel = r->noise_ms / r->median_ms;
  memset(&r2, 0, sizeof(r2));
  if (!eval_candidate(eo, code, &r2, &e2) && r2.status == EVAL_STATUS_OK &&
      r2.has_score && r2.median_ms > 0)
    rel2 = r2.noise_ms / r2.median_ms;
  if (rel2 >= 0 && rel2 < rel) {
    struct eval_result t = *r;
    *r = r2;
    r2 = t;
  }
  kept = r->noise_ms / r->median_ms;
  snprintf(note, n,
           "noisy: +-%.1f%% > %.0f%% of the median, measured again "
           "(kept +-%.1f%%%s)",
           100 * rel, 100 * s->o.noise_threshold, 100 * kept,
           kept > s->o.noise_threshold ? ", still beyond" : "");
  /* the report shows it: the row's metrics carry what the watch did */
  if (r->metrics)
    json_object_set_new(r->metrics, "noise_watch",
                        json_pack("{s:f, s:f, s:f, s:f}", "first_rel", rel,
                                  "second_rel", rel2, "kept_rel", kept,
                                  "threshold", s->o.noise_threshold));
  eval_result_release(&r2);
  return 1;
}

void search_noise_note(struct evolve *s, const char *fmt, ...)
{
  char line[400];
  size_t have = s->noise_text ? strlen(s->noise_text) : 0;
  char *t;
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  t = realloc(s->noise_text, have + strlen(line) + 16);
  if (!t)
    return;
  snprintf(t + have, strlen(line) + 16, "noise: %s\n", line);
  s->noise_text = t;
}

/* The signal that stopped the run, as a word ("SIGTERM"). */
static const char *stop_word(void)
{
  switch (search_stop_signal) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGHUP:
    return "SIGHUP";
  default:
    return "a stop request";
  }
}

/* Move the outcome strings of out into the member (lock held). */
static void move_outcome(struct member *m, struct db_program *out)
{
#define MOVE(f)                                                               \
  do {                                                                        \
    if (out->f) {                                                             \
      free(m->p.f);                                                           \
      m->p.f = out->f;                                                        \
      out->f = NULL;                                                          \
    }                                                                         \
  } while (0)
  MOVE(status);
  MOVE(stage);
  MOVE(error);
  MOVE(metrics_json);
  MOVE(directives_json);
  MOVE(backend);
  MOVE(placement);
  MOVE(sync);
  MOVE(issuer);
#undef MOVE
}

/* Row id was cut short because cuco is stopping (a signal, or the Slurm
 * allocation ended): no verdict.  It is recorded "interrupted" at the
 * stage it reached, and --resume evaluates it again.  Lock NOT held. */
static int record_interrupted(struct evolve *s, int64_t id,
                              const struct eval_result *r, int rc,
                              struct err *e)
{
  struct db_program out;
  struct member *m;
  char why[300];
  int drc;

  if (search_stop_signal)
    snprintf(why, sizeof(why), "interrupted by %s to cuco", stop_word());
  else
    snprintf(why, sizeof(why), "interrupted: %.200s",
             r->error[0] ? r->error
             : rc        ? e->msg
                         : "its run was stopped");
  db_program_init(&out);
  out.id = id;
  out.status = strdup("interrupted");
  out.stage = strdup(eval_stage_name(r->stage));
  out.error = strdup(why);
  pthread_mutex_lock(&s->mu);
  drc = db_program_finish(s->db, &out, e);
  m = search_find(s, id);
  if (!drc && m) {
    move_outcome(m, &out);
    m->p.has_score = 0;
    m->p.median_ms = m->p.speedup = -1;
    if (s->n_interrupted < SEARCH_MAX_NOTED)
      s->interrupted_ids[s->n_interrupted] = id;
    s->n_interrupted++;
    search_progress(s, m, "evaluated again on --resume");
  }
  pthread_mutex_unlock(&s->mu);
  db_program_release(&out);
  return drc;
}

int search_evaluate(struct evolve *s, int64_t id, int slot, struct err *e)
{
  struct eval_opts eo;
  struct eval_result r;
  struct db_program out;
  struct member *m;
  char *code, impl[64], note[256] = "";
  int rc, meta_due = 0, k;

  if (search_interrupted)
    return 0; /* not started: the row stays pending for --resume */
  pthread_mutex_lock(&s->mu);
  m = search_find(s, id);
  code = m && m->p.code ? strdup(m->p.code) : NULL;
  k = m ? m->p.island : 0;
  rc = m ? db_program_start(s->db, id, e) : 0;
  pthread_mutex_unlock(&s->mu);
  if (!code || rc) {
    free(code);
    return rc ? rc
              : err_set(e, ERR_INTERNAL, "program %lld has no code",
                        (long long)id);
  }
  memset(&eo, 0, sizeof(eo));
  memset(&r, 0, sizeof(r));
  snprintf(impl, sizeof(impl), "cand_%lld%s", (long long)id, s->ext);
  eo.wl = &s->wl;
  eo.tc = &s->tc;
  eo.impl_name = impl;
  eo.device_candidate = 1;
  eo.seed_code = s->seed_code;
  eo.ranks = s->o.ranks;
  eo.vranks = s->o.vranks;
  eo.sizes = s->o.sizes;
  eo.gpus = s->gpus[slot][0] ? s->gpus[slot] : NULL;
  eo.machine = s->machine;
  eo.seed = s->o.seed ? s->o.seed : 1234;
  eo.launcher = &s->launcher;
  eo.per_size_process = s->o.process_per_size;
  if (s->nworkers > s->nslots) {
    eo.run_lock = &s->run_mu[slot];
    eo.build_nice = 10;
  }
  rc = eval_candidate(&eo, code, &r, e);
  if (!rc && search_noise_watch(s, &eo, code, &r, note, sizeof(note))) {
    pthread_mutex_lock(&s->mu);
    s->n_noisy++;
    if (id == s->seed_id)
      search_noise_note(s, "the seed #%lld: %s", (long long)id, note);
    pthread_mutex_unlock(&s->mu);
  }
  free(code);
  if (r.interrupted ||
      (search_interrupted && (rc || r.status != EVAL_STATUS_OK))) {
    /* cut short because cuco is stopping (a signal reached cuco, its
     * process group or a build, or the allocation ended): no verdict */
    search_interrupted = 1;
    rc = record_interrupted(s, id, &r, rc, e);
    eval_result_release(&r);
    return rc;
  }
  db_program_init(&out);
  out.id = id;
  if (rc) {
    /* the evaluation could not run at all: record it and stop */
    out.status = strdup("failed");
    out.stage = strdup("static");
    out.error = strdup(e->msg);
  } else {
    fill_outcome(s, &out, &r);
  }
  eval_result_release(&r);
  pthread_mutex_lock(&s->mu);
  if (db_program_finish(s->db, &out, e)) {
    pthread_mutex_unlock(&s->mu);
    db_program_release(&out);
    return e->code;
  }
  m = search_find(s, id);
  move_outcome(m, &out);
  m->p.has_score = out.has_score;
  m->p.score = out.score;
  m->p.median_ms = out.median_ms;
  m->p.noise_ms = out.noise_ms;
  m->p.speedup = out.speedup;
  if (out.chunk_bytes)
    m->p.chunk_bytes = out.chunk_bytes;
  db_program_release(&out);
  s->count++;
  if (is_ok(m))
    s->n_ok++;
  else
    s->n_failed++;
  if (m->p.id == s->seed_id && is_ok(m) && !s->best_id)
    s->best_id = m->p.id;
  if (m->p.id != s->seed_id) {
    const struct member *b = search_find(s, s->best_id);
    if (is_ok(m) && b && b != m && is_ok(b) &&
        m->p.median_ms < b->p.median_ms && !beats(m, b)) {
      size_t o = strlen(note);
      snprintf(note + o, sizeof(note) - o,
               "%swithin noise of #%lld (%.4g +- %.2g ms): not the best",
               o ? "; " : "", (long long)b->p.id, b->p.median_ms,
               b->p.noise_ms);
    }
    if (beats(m, b)) {
      s->best_id = m->p.id;
      write_best(s, m);
      if (db_run_set_program(s->db, s->run.id, "best_program_id", m->p.id, e))
        log_warn("evolve: %s", e->msg);
    }
    meta_due = search_generation_done(s, k, m);
  }
  search_progress(s, m, rc ? "evaluation could not run" : note);
  pthread_mutex_unlock(&s->mu);
  if (meta_due)
    search_meta_summary(s, k);
  return rc;
}
