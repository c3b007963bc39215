/* propose.c - the workers: pick an island, select parents, propose a
 * candidate (the offline tuner or the LLM), reject near-duplicates,
 * insert the row and evaluate it.
 *
 * Edit-kind mix per phase (LLM runs; docs/evolve.md):
 *   explore: diff .15, full .55, cross .15, tune .15 at temperature .8/.5
 *   exploit: diff .55, full .15, cross .10, tune .20 at temperature .2/0
 * Offline: tune, and a directive crossover of two parents 10% of the time.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "directive.h"
#include "llm.h"
#include "log.h"
#include "patch.h"
#include "prompt.h"
#include "search_impl.h"
#include "tuner.h"

#define RATIONALE_MAX 2000
#define MAX_INSP      4
#define MAX_FAILS     3

/* One unit of work prepared under the lock. */
struct job {
  int island, generation, exploit;
  char kind[8]; /* tune|diff|full|cross */
  int64_t parent_id, parent2_id;
  char *code;   /* tune/offline cross: the candidate, ready */
  char *system; /* LLM prompt */
  char *user;
  double temperature;
  char what[256]; /* the tuner's move, stored as rationale */
  const struct llm_model *model;
};

static void job_release(struct job *j)
{
  free(j->code);
  free(j->system);
  free(j->user);
  memset(j, 0, sizeof(*j));
}

static int is_ok(const struct member *m)
{
  return m->p.status && !strcmp(m->p.status, "ok") && m->p.median_ms > 0;
}

/* Members of island k that are correct; returns the count. */
static size_t island_ok(struct evolve *s, int k, struct member **out,
                        size_t max)
{
  size_t i, n = 0;

  for (i = 0; i < s->nm && n < max; i++)
    if (s->m[i]->p.island == k && is_ok(s->m[i]))
      out[n++] = s->m[i];
  return n;
}

#define MAX_DUP_ROWS 32 /* duplicate rows one proposal records */

static struct member *insert_row(struct evolve *s, const struct job *j,
                                 const char *code, const char *status,
                                 const char *error, const char *rationale,
                                 int64_t llm_call_id, int64_t same_as,
                                 struct err *e);

static int seen_code(struct evolve *s, const char *code)
{
  char h[17];
  size_t i;

  search_hash(code, h);
  for (i = 0; i < s->nm; i++)
    if (s->m[i]->p.code_hash && !strcmp(s->m[i]->p.code_hash, h))
      return 1;
  return 0;
}

/* One program, one evaluation (issue 49): when code compiles to a program
 * already evaluated (or under way), record the proposal as a duplicate
 * row that names it, with no evaluation, and return that row (lock
 * held).  NULL when code is a new program (or the row could not be
 * written: then it is simply not proposed). */
static struct member *answer_duplicate(struct evolve *s, const struct job *j,
                                       const char *code, const char *rationale,
                                       const char *what, int64_t llm_call_id)
{
  struct member *orig, *m;
  struct err e;
  char ident[17], why[300];

  (void)search_ident(s, code, ident);
  orig = search_same_program(s, ident);
  if (!orig)
    return NULL;
  snprintf(why, sizeof(why),
           "the same program as #%lld (what it compiles to: %s): answered "
           "from the database, not evaluated",
           (long long)orig->p.id, ident);
  m = insert_row(s, j, code, "duplicate", why, rationale, llm_call_id,
                 orig->p.id, &e);
  if (!m) {
    log_warn("evolve: %s", e.msg);
    return orig; /* not recorded, still not evaluated */
  }
  snprintf(m->ident, sizeof(m->ident), "%s", ident);
  printf("[  =  ] #%-4lld gen %-3d island %d %-7s the same program as #%lld"
         "%s%s%s: answered from the database, not evaluated\n",
         (long long)m->p.id, m->p.generation, m->p.island,
         m->p.edit_kind ? m->p.edit_kind : "?", (long long)orig->p.id,
         what && *what ? " (" : "", what && *what ? what : "",
         what && *what ? ")" : "");
  fflush(stdout);
  return m;
}

/* Is there a row with the code this directive set gives the parent, or
 * one with the program it compiles to (then the proposal is answered from
 * it)? */
struct seen_ctx {
  struct evolve *s;
  const struct job *j;
  const char *parent_code;
  const struct directive_set *parent;
  int ndup;
};

/* "kunroll 1 -> 4" for what d changes in parent. */
static void describe_change(const struct directive_set *a,
                            const struct directive_set *b, char *out, size_t n)
{
  size_t o = 0;
  int i, k;

  out[0] = '\0';
#define DIFF(f, name)                                                         \
  if (strcmp(a->f, b->f) && o < n)                                            \
    o += (size_t)snprintf(out + o, n - o, "%s%s %s -> %s", o ? ", " : "",     \
                          name, a->f, b->f);
  DIFF(backend, "backend")
  DIFF(placement, "placement")
  DIFF(sync, "sync")
  DIFF(issuer, "issuer")
  DIFF(chunk_text, "chunk")
#undef DIFF
  for (i = 0; i < b->nparams && o < n; i++)
    for (k = 0; k < a->nparams; k++)
      if (!strcmp(a->params[k].name, b->params[i].name) &&
          strcmp(a->params[k].value, b->params[i].value) && o < n)
        o += (size_t)snprintf(out + o, n - o, "%s%s %s -> %s", o ? ", " : "",
                              b->params[i].name, a->params[k].value,
                              b->params[i].value);
}

static int seen_directives(void *ud, const struct directive_set *d)
{
  struct seen_ctx *c = ud;
  struct err e;
  char *code = directive_apply(c->parent_code, d, &e);
  char what[256];
  int seen;

  if (!code)
    return 1; /* cannot render it: do not propose it */
  seen = seen_code(c->s, code);
  if (!seen && c->ndup < MAX_DUP_ROWS) {
    describe_change(c->parent, d, what, sizeof(what));
    if (answer_duplicate(c->s, c->j, code, what, what, 0)) {
      c->ndup++;
      seen = 1;
    }
  } else if (!seen) {
    char ident[17];
    (void)search_ident(c->s, code, ident);
    seen = search_same_program(c->s, ident) != NULL;
  }
  free(code);
  return seen;
}

/* XXH64 of code without its directive/param lines: two programs with the
 * same skeleton differ only in what the tuner sets. */
static void skeleton_hash(const char *code, char out[17])
{
  struct buf b = BUF_INIT(PATCH_MAX_CODE);
  const char *p = code;

  while (p && *p) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
    char line[256];
    snprintf(line, sizeof(line), "%.*s", (int)(n < 255 ? n : 255), p);
    if (!strstr(line, "CUCO-PARAM") && !strstr(line, "CUCO-DIRECTIVES"))
      buf_append(&b, p, n);
    p += n;
  }
  search_hash(buf_error(&b) ? code : buf_str(&b), out);
  buf_release(&b);
}

/* The evaluated programs with parent p's skeleton, as tuner observations
 * (correct: their median; failed: -1).  Copies, pending and rejected rows
 * are left out.  Caller frees; *n the count. */
static struct tuner_obs *history(struct evolve *s, const struct member *p,
                                 size_t *n)
{
  struct tuner_obs *o = calloc(s->nm + 1, sizeof(*o));
  char want[17], h[17];
  size_t i;

  *n = 0;
  if (!o)
    return NULL;
  skeleton_hash(p->p.code, want);
  for (i = 0; i < s->nm; i++) {
    struct member *m = s->m[i];
    /* a duplicate row is an observation of its configuration with the
     * program that answers it: the model learns the flat direction, the
     * tuner the inert parameter */
    const struct member *v =
        search_is_duplicate(m) ? search_find(s, m->p.same_as) : m;
    struct err e;
    int ok, failed;
    if (!v)
      continue;
    ok = is_ok(v);
    failed = v->p.status && !strcmp(v->p.status, "failed");
    if (!m->p.code || (!ok && !failed) ||
        !strcmp(m->p.edit_kind ? m->p.edit_kind : "", "migrate"))
      continue;
    skeleton_hash(m->p.code, h);
    if (strcmp(h, want) || directive_parse(m->p.code, &o[*n].d, &e))
      continue;
    snprintf(o[*n].ident, sizeof(o[*n].ident), "%s",
             search_member_ident(s, m));
    o[(*n)++].ms = ok ? v->p.median_ms : -1;
  }
  return o;
}

/* The tuner's candidate from parent p (lock held).  Offline runs: the
 * model over every evaluated configuration of p's skeleton; LLM runs:
 * a coordinate move near p (its code is the LLM's).  0, or ERR_NOTFOUND
 * when nothing unseen is left. */
static int propose_tune(struct evolve *s, struct job *j,
                        const struct member *p)
{
  struct directive_set cur, next;
  struct seen_ctx sc = {s, j, p->p.code, NULL, 0};
  struct tuner_obs *obs = NULL;
  struct err e;
  size_t nobs = 0;
  int rc;

  if (directive_parse(p->p.code, &cur, &e))
    return ERR_PARSE;
  sc.parent = &cur;
  obs = history(s, p, &nobs);
  if (!s->use_llm && obs)
    rc = tuner_suggest(&s->wl, obs, nobs, &cur, &s->rng, seen_directives, &sc,
                       &next, j->what, sizeof(j->what));
  else
    rc = tuner_propose(&s->wl, &cur, obs, nobs, !j->exploit, &s->rng,
                       seen_directives, &sc, &next, j->what, sizeof(j->what));
  free(obs);
  if (rc)
    return rc;
  j->code = directive_apply(p->p.code, &next, &e);
  return j->code ? 0 : ERR_NOMEM;
}

static void to_prompt(const struct member *m, struct prompt_program *pp)
{
  memset(pp, 0, sizeof(*pp));
  pp->id = (long long)m->p.id;
  pp->code = m->p.code;
  pp->directives = m->p.directives_json;
  pp->edit_kind = m->p.edit_kind;
  pp->status = m->p.status;
  pp->stage = m->p.stage;
  pp->error = m->p.error;
  pp->has_score = is_ok(m);
  pp->median_ms = m->p.median_ms;
  pp->speedup = m->p.speedup;
}

/* Build the LLM prompt for job j (lock held). */
static int build_prompt(struct evolve *s, struct job *j, struct member *p,
                        struct member *p2, struct member **ok, size_t nok)
{
  struct prompt_program parent, parent2, insp[MAX_INSP], fails[MAX_FAILS];
  struct prompt_ctx c;
  struct member *best = NULL, *div = NULL;
  double worst_sim = 2;
  size_t i, ni = 0, nf = 0;

  memset(&c, 0, sizeof(c));
  to_prompt(p, &parent);
  if (p2)
    to_prompt(p2, &parent2);
  /* inspirations: the island's best, the most different correct program,
   * then the run's best from other islands (one line each) */
  for (i = 0; i < nok; i++)
    if (ok[i] != p && (!best || ok[i]->p.score > best->p.score))
      best = ok[i];
  if (best)
    to_prompt(best, &insp[ni++]);
  if (!p->has_sig && !novelty_sig_init(&p->sig, p->p.code))
    p->has_sig = 1;
  for (i = 0; p->has_sig && i < nok; i++) {
    double sim;
    if (ok[i] == p || ok[i] == best)
      continue;
    if (!ok[i]->has_sig && !novelty_sig_init(&ok[i]->sig, ok[i]->p.code))
      ok[i]->has_sig = 1;
    sim = ok[i]->has_sig ? novelty_jaccard(&p->sig, &ok[i]->sig) : 2;
    if (sim < worst_sim) {
      worst_sim = sim;
      div = ok[i];
    }
  }
  if (div)
    to_prompt(div, &insp[ni++]);
  for (i = 0; i < s->nm && ni < (size_t)s->o.inspirations && ni < MAX_INSP;
       i++) {
    struct member *m = s->m[i];
    if (m->p.island != j->island && is_ok(m) && m->p.id == s->best_id)
      to_prompt(m, &insp[ni++]);
  }
  for (i = s->nm; i-- > 0 && nf < MAX_FAILS;) {
    struct member *m = s->m[i];
    if (m->p.island == j->island && m->p.status &&
        (!strcmp(m->p.status, "failed") || !strcmp(m->p.status, "rejected")))
      to_prompt(m, &fails[nf++]);
  }
  c.wl = &s->wl;
  c.machine = s->machine;
  c.meta = s->isl[j->island].meta;
  c.parent = &parent;
  c.parent2 = p2 ? &parent2 : NULL;
  c.insp = insp;
  c.ninsp = ni;
  c.fails = fails;
  c.nfails = nf;
  c.edit = !strcmp(j->kind, "diff")   ? PROMPT_DIFF
           : !strcmp(j->kind, "full") ? PROMPT_FULL
                                      : PROMPT_CROSS;
  c.variant = (int)select_rng_below(&s->rng, PROMPT_VARIANTS);
  j->system = prompt_system(&c);
  j->user = prompt_user(&c);
  return j->system && j->user ? 0 : ERR_NOMEM;
}

/* Choose the edit kind for the phase. */
static const char *pick_kind(struct evolve *s, int exploit, size_t nok)
{
  static const double mix[2][4] = {{.15, .55, .15, .15}, {.55, .15, .10, .20}};
  static const char *const kinds[4] = {"diff", "full", "cross", "tune"};
  double u = select_rng_uniform(&s->rng);
  int i;

  if (s->o.nseq) {
    const char *k = s->o.seq[s->seq_pos++ % s->o.nseq];
    if (!strcmp(k, "cross") && nok < 2)
      return s->use_llm ? "diff" : "tune";
    return !s->use_llm && strcmp(k, "cross") ? "tune" : k;
  }
  if (!s->use_llm)
    return nok >= 2 && u < 0.1 ? "cross" : "tune";
  for (i = 0; i < 3; i++) {
    if (u < mix[exploit][i])
      break;
    u -= mix[exploit][i];
  }
  if (i == 2 && nok < 2)
    i = 0;
  return kinds[i];
}

/* Should the island switch to exploit? (lock held) */
static void update_phase(struct evolve *s, struct island *is)
{
  int stag = s->o.stagnation > 0
                 ? s->o.stagnation
                 : (s->o.generations / 4 > 2 ? s->o.generations / 4 : 2);
  double frac = s->o.explore_fraction;
  int by_time = 0;

  if (is->exploit)
    return;
  if (s->deadline > 0 && s->o.time_limit_s > 0)
    by_time = (db_now() - s->t0) > frac * s->o.time_limit_s;
  if (is->since_improve >= stag ||
      is->issued > (int)(frac * s->o.generations) || by_time ||
      (s->o.budget_usd > 0 && s->run.spent_usd > frac * s->o.budget_usd))
    is->exploit = 1;
}

/* The next unit of work (lock held): 1 = evaluate *id (resume), 2 = a new
 * job, 0 = nothing left. */
static int next_job(struct evolve *s, struct job *j, int64_t *id)
{
  struct member **ok = NULL, *p, *p2 = NULL;
  size_t nok, pick;
  double *score = NULL;
  int *children = NULL, k, best_k = -1, rc = 0;
  const char *kind;

  if (search_interrupted && !s->stop) {
    s->stop = 1;
    snprintf(s->stop_reason, sizeof(s->stop_reason), "interrupted");
  }
  if (search_interrupted)
    return 0; /* queued rows wait for the next --resume */
  if (s->nqueue) {
    *id = s->queue[0];
    memmove(s->queue, s->queue + 1, --s->nqueue * sizeof(*s->queue));
    return 1;
  }
  if (!s->stop && s->deadline > 0 && db_now() >= s->deadline) {
    s->stop = 1;
    snprintf(s->stop_reason, sizeof(s->stop_reason), "time limit reached");
  }
  if (!s->stop && s->use_llm && s->o.budget_usd > 0 &&
      s->run.spent_usd >= s->o.budget_usd) {
    s->stop = 1;
    snprintf(s->stop_reason, sizeof(s->stop_reason), "LLM budget spent");
  }
  if (s->stop)
    return 0;
  for (k = 0; k < s->o.islands; k++)
    if (s->isl[k].issued < s->o.generations &&
        (best_k < 0 || s->isl[k].issued < s->isl[best_k].issued))
      best_k = k;
  if (best_k < 0)
    return 0;
  ok = malloc((s->nm + 1) * sizeof(*ok));
  score = malloc((s->nm + 1) * sizeof(*score));
  children = malloc((s->nm + 1) * sizeof(*children));
  if (!ok || !score || !children)
    goto out;
  nok = island_ok(s, best_k, ok, s->nm);
  if (!nok) {
    /* an island without a correct program takes the run's best */
    struct member *b = search_find(s, s->best_id);
    if (!b)
      b = search_find(s, s->seed_id);
    if (!b)
      goto out;
    ok[nok++] = b;
  }
  for (pick = 0; pick < nok; pick++) {
    score[pick] = ok[pick]->p.score;
    children[pick] = ok[pick]->children;
  }
  pick = select_parent(&s->o.sel, score, children, nok, &s->rng);
  /* the offline tuner exploits by hill-climbing: mostly from the best */
  if (!s->use_llm && s->isl[best_k].exploit &&
      select_rng_uniform(&s->rng) < 0.7) {
    struct select_params hill = s->o.sel;
    hill.kind = SELECT_HILL;
    pick = select_parent(&hill, score, children, nok, &s->rng);
  }
  p = ok[pick];
  s->isl[best_k].issued++;
  update_phase(s, &s->isl[best_k]);
  memset(j, 0, sizeof(*j));
  j->island = best_k;
  j->generation = s->isl[best_k].issued;
  j->exploit = s->isl[best_k].exploit;
  j->parent_id = p->p.id;
  kind = pick_kind(s, j->exploit, nok);
  snprintf(j->kind, sizeof(j->kind), "%s", kind);
  if (!strcmp(kind, "cross")) {
    size_t q = select_rng_below(&s->rng, nok - 1);
    p2 = ok[q >= pick ? q + 1 : q];
    j->parent2_id = p2->p.id;
  }
  if (!s->use_llm && p2) {
    struct err e;
    if (patch_crossover(p->p.code, p2->p.code, 1, &j->code, &e) ||
        seen_code(s, j->code) ||
        answer_duplicate(s, j, j->code, NULL,
                         "directives of the second parent", 0)) {
      free(j->code);
      j->code = NULL;
      snprintf(j->kind, sizeof(j->kind), "tune");
      j->parent2_id = 0;
    } else {
      snprintf(j->what, sizeof(j->what),
               "directives of #%lld with the code of #%lld",
               (long long)p2->p.id, (long long)p->p.id);
    }
  }
  if (!strcmp(j->kind, "tune")) {
    int trc = propose_tune(s, j, p);
    if (trc == ERR_NOTFOUND && s->best_id && s->best_id != p->p.id) {
      struct member *b = search_find(s, s->best_id);
      trc = propose_tune(s, j, b);
      if (!trc)
        j->parent_id = b->p.id;
    }
    if (trc && s->use_llm) {
      snprintf(j->kind, sizeof(j->kind), "diff"); /* the LLM edits code */
    } else if (trc) {
      log_info("evolve: island %d: no unseen configuration near #%lld "
               "(the space looks exhausted)",
               best_k, (long long)p->p.id);
      s->isl[best_k].issued = s->o.generations; /* island done */
      rc = 2;
      j->kind[0] = '\0';
      goto out;
    }
  }
  if (s->use_llm && strcmp(j->kind, "tune")) {
    double temps[2][2] = {{0.8, 0.5}, {0.2, 0.0}};
    j->temperature = temps[j->exploit][select_rng_below(&s->rng, 2)];
    j->model = s->model ? s->model
                        : llm_pool_pick(s->pool, select_rng_uniform(&s->rng));
    if (build_prompt(s, j, p, p2, ok, nok))
      goto out;
  }
  rc = 2;
out:
  free(ok);
  free(score);
  free(children);
  return rc;
}

/* Insert the job's row (lock held).  status "pending" for a candidate to
 * evaluate, "failed"/"rejected" for one that is not.  Returns the member
 * or NULL with *e set. */
static struct member *insert_row(struct evolve *s, const struct job *j,
                                 const char *code, const char *status,
                                 const char *error, const char *rationale,
                                 int64_t llm_call_id, int64_t same_as,
                                 struct err *e)
{
  struct db_program p;
  struct member *m;
  char h[17];

  db_program_init(&p);
  p.run_id = s->run.id;
  p.parent_id = j->parent_id;
  p.parent2_id = j->parent2_id;
  p.island = j->island;
  p.generation = j->generation;
  p.edit_kind = strdup(j->kind);
  p.phase = strdup(j->exploit ? "exploit" : "explore");
  if (code) {
    p.code = strdup(code);
    search_hash(code, h);
    p.code_hash = strdup(h);
  }
  p.status = strdup(status);
  if (strcmp(status, "pending")) {
    p.stage = strdup("static");
    p.finished_at = db_now();
  }
  p.error = error ? strdup(error) : NULL;
  p.rationale = rationale && *rationale ? strdup(rationale) : NULL;
  p.llm_call_id = llm_call_id;
  p.same_as = same_as;
  if (same_as && code) {
    /* its configuration, for the report and the tuner's history */
    struct directive_set d;
    struct err de;
    json_t *dj = directive_parse(code, &d, &de) ? NULL : directive_to_json(&d);
    p.directives_json =
        dj ? json_dumps(dj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(dj);
  }
  if (db_program_insert(s->db, &p, e)) {
    db_program_release(&p);
    return NULL;
  }
  if (llm_call_id && db_llm_call_set_program(s->db, llm_call_id, p.id, e))
    log_warn("evolve: %s", e->msg);
  m = search_add(s, &p);
  if (!m) {
    db_program_release(&p);
    err_set(e, ERR_NOMEM, "out of memory");
  }
  return m;
}

/* The highest similarity of code to a correct program of island k
 * (shingles; lock held).  *who gets that program's id. */
static double max_similarity(struct evolve *s, int k, const char *code,
                             int64_t *who)
{
  struct novelty_sig sig;
  double best = 0;
  size_t i;

  *who = 0;
  if (novelty_sig_init(&sig, code))
    return 0;
  for (i = 0; i < s->nm; i++) {
    struct member *m = s->m[i];
    double sim;
    if (m->p.island != k || !is_ok(m) || !m->p.code)
      continue;
    if (!m->has_sig && !novelty_sig_init(&m->sig, m->p.code))
      m->has_sig = 1;
    if (!m->has_sig)
      continue;
    sim = novelty_jaccard(&sig, &m->sig);
    if (sim > best) {
      best = sim;
      *who = m->p.id;
    }
  }
  novelty_sig_release(&sig);
  return best;
}

/* The EVOLVE block contents of code, concatenated (for embeddings). */
static char *block_text(const char *code)
{
  struct patch_block bl[64];
  struct buf b = BUF_INIT(PATCH_MAX_CODE);
  int n = patch_blocks(code, bl, 64, NULL), i;

  for (i = 0; i < n; i++)
    buf_append(&b, code + bl[i].start, bl[i].end - bl[i].start);
  if (n <= 0)
    buf_puts(&b, code);
  return buf_error(&b) ? (buf_release(&b), NULL) : buf_detach(&b, NULL);
}

/* Embedding similarity (lock NOT held): embeds the island's correct
 * programs that have no vector yet, then the candidate.  Returns -1 when
 * embeddings could not be computed (the shingle check stands). */
static double max_similarity_embed(struct evolve *s, int k, const char *code,
                                   int64_t *who)
{
  struct llm_embedding emb;
  struct err e;
  char *texts[65];
  struct member *need[64];
  size_t n = 0, i, j;
  double best = 0;

  *who = 0;
  pthread_mutex_lock(&s->mu);
  for (i = 0; i < s->nm && n < 64; i++)
    if (s->m[i]->p.island == k && is_ok(s->m[i]) && !s->m[i]->emb &&
        s->m[i]->p.code)
      need[n++] = s->m[i];
  for (i = 0; i < n; i++)
    texts[i] = block_text(need[i]->p.code);
  pthread_mutex_unlock(&s->mu);
  texts[n] = block_text(code);
  for (i = 0; i <= n; i++)
    if (!texts[i])
      goto fail;
  memset(&emb, 0, sizeof(emb));
  if (llm_embed(s->pool, (const char *const *)texts, n + 1, &emb, &e) ||
      emb.n != n + 1) {
    log_warn("evolve: embeddings: %s", e.msg);
    llm_embedding_release(&emb);
    goto fail;
  }
  pthread_mutex_lock(&s->mu);
  for (i = 0; i < n; i++) {
    need[i]->emb = malloc(emb.dim * sizeof(float));
    if (need[i]->emb) {
      memcpy(need[i]->emb, emb.data + i * emb.dim, emb.dim * sizeof(float));
      need[i]->dim = emb.dim;
    }
  }
  for (j = 0; j < s->nm; j++) {
    struct member *m = s->m[j];
    double sim;
    if (m->p.island != k || !is_ok(m) || !m->emb || m->dim != emb.dim)
      continue;
    sim = novelty_cosine(emb.data + n * emb.dim, m->emb, emb.dim);
    if (sim > best) {
      best = sim;
      *who = m->p.id;
    }
  }
  pthread_mutex_unlock(&s->mu);
  llm_embedding_release(&emb);
  for (i = 0; i <= n; i++)
    free(texts[i]);
  return best;
fail:
  for (i = 0; i <= n; i++)
    free(texts[i]);
  return -1;
}

/* Ask the LLM for job j's candidate; the code is applied to the parent.
 * Returns the row id to evaluate, or 0 (failed/rejected row written, or
 * the run stops).  Lock not held on entry or exit. */
static int64_t propose_llm(struct evolve *s, struct job *j)
{
  int attempt;

  for (attempt = 0; attempt < s->o.novelty_attempts; attempt++) {
    struct llm_message msg = {LLM_ROLE_USER, j->user};
    struct llm_request req;
    struct llm_response resp = LLM_RESPONSE_INIT;
    char *parent = NULL, *parent2 = NULL, *code = NULL, *why = NULL;
    char errline[300] = "", note[160] = "";
    struct member *m = NULL;
    struct err e = {0, ""};
    int64_t who = 0, id = 0;
    double sim = 0, threshold = s->o.novelty;
    int rc, meta_due = 0;

    memset(&req, 0, sizeof(req));
    req.system = j->system;
    req.messages = &msg;
    req.n_messages = 1;
    req.temperature = j->temperature;
    req.purpose = "mutate";
    rc = llm_chat(s->pool, j->model, &req, &resp, &e);
    pthread_mutex_lock(&s->mu);
    parent = strdup(search_find(s, j->parent_id)->p.code);
    if (j->parent2_id)
      parent2 = strdup(search_find(s, j->parent2_id)->p.code);
    pthread_mutex_unlock(&s->mu);
    if (rc) {
      snprintf(errline, sizeof(errline), "LLM call failed: %s", e.msg);
      if (resp.outcome == LLM_BUDGET || resp.outcome == LLM_AUTH ||
          resp.outcome == LLM_NOKEY) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        snprintf(s->stop_reason, sizeof(s->stop_reason), "%s",
                 resp.outcome == LLM_BUDGET ? "LLM budget spent"
                                            : "LLM not usable");
        if (resp.outcome != LLM_BUDGET && !s->llm_unusable[0])
          snprintf(s->llm_unusable, sizeof(s->llm_unusable), "%s", e.msg);
        pthread_mutex_unlock(&s->mu);
        if (resp.outcome == LLM_BUDGET) {
          llm_response_release(&resp);
          free(parent);
          free(parent2);
          return 0; /* nothing was asked: no candidate */
        }
      }
    } else {
      why = patch_extract_rationale(resp.text, RATIONALE_MAX);
      if (!strcmp(j->kind, "diff"))
        rc = patch_apply_diff(parent, resp.text, &code, NULL, &e);
      else
        rc = patch_apply_full(parent, resp.text, &code, &e);
      if (rc)
        snprintf(errline, sizeof(errline), "edit did not apply: %s", e.msg);
    }
    if (code) {
      /* one program, one evaluation: a proposal that compiles to a
       * program already evaluated is answered from it */
      pthread_mutex_lock(&s->mu);
      m = answer_duplicate(s, j, code, why, NULL, resp.call_id);
      if (m && search_is_duplicate(m) && attempt + 1 == s->o.novelty_attempts)
        meta_due = search_generation_done(s, j->island, m);
      pthread_mutex_unlock(&s->mu);
      if (m) {
        if (meta_due)
          search_meta_summary(s, j->island);
        llm_response_release(&resp);
        free(parent);
        free(parent2);
        free(code);
        free(why);
        continue; /* like a rejection: asked again */
      }
    }
    if (code && llm_embed_available(s->pool)) {
      sim = max_similarity_embed(s, j->island, code, &who);
      threshold = s->o.novelty_embed;
    }
    pthread_mutex_lock(&s->mu);
    if (code && sim < 0)
      threshold = s->o.novelty;
    if (code && (sim < 0 || !llm_embed_available(s->pool)))
      sim = max_similarity(s, j->island, code, &who);
    if (code && sim >= threshold) {
      snprintf(errline, sizeof(errline),
               "novelty: %.4f similar to program %lld (threshold %.4g); "
               "not evaluated",
               sim, (long long)who, threshold);
      m = insert_row(s, j, code, "rejected", errline, why, resp.call_id, 0,
                     &e);
      if (m) {
        s->n_rejected++;
        search_progress(s, m, "rejected before evaluation");
        if (attempt + 1 == s->o.novelty_attempts)
          meta_due = search_generation_done(s, j->island, m);
      }
    } else if (!code) {
      m = insert_row(s, j, NULL, "failed", errline, why, resp.call_id, 0, &e);
      if (m) {
        s->n_failed++;
        s->count++;
        search_progress(s, m, "");
        meta_due = search_generation_done(s, j->island, m);
      }
    } else {
      m = insert_row(s, j, code, "pending", NULL, why, resp.call_id, 0, &e);
      if (m)
        id = m->p.id;
    }
    if (!m)
      log_warn("evolve: %s", e.msg);
    pthread_mutex_unlock(&s->mu);
    (void)note;
    if (meta_due)
      search_meta_summary(s, j->island);
    llm_response_release(&resp);
    free(parent);
    free(parent2);
    free(code);
    free(why);
    if (id || !m || strcmp(m->p.status, "rejected"))
      return id; /* a candidate, or a failure that is not retried */
  }
  return 0;
}

struct worker {
  struct evolve *s;
  int slot;
  int rc;
  struct err e;
};

static void *worker_main(void *arg)
{
  struct worker *w = arg;
  struct evolve *s = w->s;

  for (;;) {
    struct job j;
    int64_t id = 0;
    int r;

    memset(&j, 0, sizeof(j));
    pthread_mutex_lock(&s->mu);
    r = s->stop && s->nqueue == 0 ? 0 : next_job(s, &j, &id);
    if (r == 2 && j.code) {
      struct member *m =
          insert_row(s, &j, j.code, "pending", NULL, j.what, 0, 0, &w->e);
      id = m ? m->p.id : 0;
    }
    pthread_mutex_unlock(&s->mu);
    if (r == 0)
      break;
    if (r == 2 && !j.code && j.kind[0] && s->use_llm)
      id = propose_llm(s, &j);
    job_release(&j);
    if (!id)
      continue;
    w->rc = search_evaluate(s, id, w->slot, &w->e);
    if (w->rc) {
      pthread_mutex_lock(&s->mu);
      s->stop = 1;
      snprintf(s->stop_reason, sizeof(s->stop_reason), "%.120s", w->e.msg);
      pthread_mutex_unlock(&s->mu);
      break;
    }
  }
  return NULL;
}

int search_run(struct evolve *s, struct err *e)
{
  struct worker w[EVOLVE_MAX_WORKERS];
  pthread_t th[EVOLVE_MAX_WORKERS];
  int ns = s->nslots > 0 ? s->nslots : 1;
  int i, n = s->nworkers > ns ? s->nworkers : ns, started = 0, rc = 0;

  for (i = 0; i < n; i++) {
    memset(&w[i], 0, sizeof(w[i]));
    w[i].s = s;
    w[i].slot = i % ns;
  }
  if (n == 1) {
    worker_main(&w[0]);
  } else {
    for (i = 0; i < n; i++) {
      if (pthread_create(&th[i], NULL, worker_main, &w[i]))
        break;
      started++;
    }
    if (!started)
      worker_main(&w[0]);
    for (i = 0; i < started; i++)
      pthread_join(th[i], NULL);
  }
  for (i = 0; i < n; i++)
    if (w[i].rc) {
      *e = w[i].e;
      rc = w[i].rc;
    }
  return rc;
}
