/* transform.c - the loop of `cuco transform` (see transform.h) and the
 * command. */
#define _GNU_SOURCE
#include "transform.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "analyze.h"
#include "buf.h"
#include "candidate.h"
#include "cmd.h"
#include "config.h"
#include "db.h"
#include "directive.h"
#include "doctor.h"
#include "eval.h"
#include "file.h"
#include "llm.h"
#include "log.h"
#include "toolchain.h"
#include "workload.h"

#define CODE_MAX   CANDIDATE_MAX_BYTES
#define PROMPT_MAX (4u << 20)
#define DIAG_MAX   4000

struct tstate {
  const struct transform_opts *o;
  struct workload wl;
  struct toolchain tc;
  json_t *machine;
  struct llm_pool *pool;
  const struct llm_model *model;
  char root[1024];
  char runtime_dir[1100];
  char work[1024];
  int gpu;           /* verification possible */
  int seq;           /* file counter in the work folder */
  struct buf system; /* the system prompt */
  char *analysis;    /* analyze text of the baseline */
  struct db *db;     /* --db: run row and llm_calls, else NULL */
  int64_t run_id;
};

static int write_text(const char *dir, const char *name, const char *text,
                      struct err *e)
{
  char p[2048];

  snprintf(p, sizeof(p), "%s/%s", dir, name);
  return file_write(p, text, strlen(text), e);
}

/* Every LLM call, as the DB's llm_calls row, one JSON line. */
static long long record_call(void *ud, const struct llm_record *rec)
{
  struct tstate *t = ud;
  char p[2048];
  FILE *f;
  json_t *j = json_pack(
      "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:f, s:f, s:f}",
      "provider", rec->provider ? rec->provider : "", "model",
      rec->model ? rec->model : "", "model_name",
      rec->model_name ? rec->model_name : "", "purpose",
      rec->purpose ? rec->purpose : "", "outcome", rec->outcome, "error",
      rec->error ? rec->error : "", "prompt", rec->prompt ? rec->prompt : "",
      "response", rec->response ? rec->response : "", "tokens_in",
      (json_int_t)rec->tokens_in, "tokens_out", (json_int_t)rec->tokens_out,
      "cost_usd", rec->cost_usd, "latency_s", rec->latency_s, "created_at",
      (double)time(NULL));
  char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

  int64_t id = 0;

  snprintf(p, sizeof(p), "%s/llm_calls.jsonl", t->work);
  f = fopen(p, "a");
  if (f && s)
    fprintf(f, "%s\n", s);
  if (f)
    fclose(f);
  free(s);
  json_decref(j);
  if (t->db) {
    struct err e;
    if (db_llm_call_record(t->db, t->run_id, rec, &id, &e))
      log_warn("transform: database: %s", e.msg);
  }
  return (long long)id;
}

/* --db: open the database and create the run row. */
static int open_db(struct tstate *t, struct err *e)
{
  struct db_run run;
  char cfgjson[256];
  char *mj;
  int rc;

  if ((rc = db_open(t->o->db_path, 0, &t->db, e)) != 0)
    return rc;
  memset(&run, 0, sizeof(run));
  snprintf(cfgjson, sizeof(cfgjson), "{\"command\": \"transform\"}");
  mj = json_dumps(t->machine, JSON_COMPACT | JSON_SORT_KEYS);
  /* db_run holds non-const strings; they are only read */
  run.workload = (char *)t->wl.name;
  run.workload_dir = (char *)t->wl.dir;
  run.config_json = cfgjson;
  run.machine_json = mj;
  run.llm = (char *)t->model->name;
  run.budget_usd = llm_pool_budget(t->pool);
  rc = db_run_create(t->db, &run, e);
  free(mj);
  t->run_id = run.id;
  return rc;
}

/* One LLM call; prompt and answer go to NN-TAG-prompt.md/-response.md. */
static int ask(struct tstate *t, const char *purpose, const char *tag,
               const char *system, const char *user, double temperature,
               char **answer, struct err *e)
{
  struct llm_message m = {LLM_ROLE_USER, user};
  struct llm_request rq;
  struct llm_response rs = LLM_RESPONSE_INIT;
  char name[128];
  int rc;

  memset(&rq, 0, sizeof(rq));
  rq.system = system;
  rq.messages = &m;
  rq.n_messages = 1;
  rq.temperature = temperature;
  rq.purpose = purpose;
  t->seq++;
  snprintf(name, sizeof(name), "%02d-%s-prompt.md", t->seq, tag);
  if ((rc = write_text(t->work, name, user, e)) != 0)
    return rc;
  rc = llm_chat(t->pool, t->model, &rq, &rs, e);
  snprintf(name, sizeof(name), "%02d-%s-response.md", t->seq, tag);
  if (rc == 0) {
    rc = write_text(t->work, name, rs.text ? rs.text : "", e);
    if (rc == 0)
      *answer = rs.text, rs.text = NULL;
  } else {
    struct err e2;
    char line[600];
    snprintf(line, sizeof(line), "(no answer: %s: %s)\n",
             llm_outcome_name(rs.outcome), e->msg);
    (void)write_text(t->work, name, line, &e2);
  }
  llm_response_release(&rs);
  return rc;
}

static int has_ident(const char *code, const char *const *names)
{
  const char *const *n;
  for (n = names; *n; n++) {
    const char *p = code;
    size_t l = strlen(*n);
    while ((p = strstr(p, *n)) != NULL) {
      char before = p == code ? ' ' : p[-1], after = p[l];
      if (!(before == '_' || (before >= 'a' && before <= 'z') ||
            (before >= 'A' && before <= 'Z') ||
            (before >= '0' && before <= '9')) &&
          !(after == '_' || (after >= 'a' && after <= 'z') ||
            (after >= 'A' && after <= 'Z') || (after >= '0' && after <= '9')))
        return 1;
      p += l;
    }
  }
  return 0;
}

/* Static checks of one stage; 0 or ERR_CHECK with the reason in *e. */
static int static_checks(struct tstate *t, int stage, const char *code,
                         struct err *e)
{
  static const char *const infra[] = {"rt_devcomm_create", NULL};
  static const char *const windows[] = {"RT_WINDOW", "rt_window", NULL};
  static const char *const devapi[] = {"ncclGetLsaPointer",
                                       "ncclGetPeerPointer",
                                       "ncclLsaBarrierSession",
                                       "ncclBarrierSession",
                                       "ncclGin",
                                       "ncclSymPtr",
                                       "ncclLLA2ASession",
                                       NULL};
  struct analyze_report *r =
      analyze_source("candidate", code, strlen(code), e);
  struct directive_set d;
  size_t i;
  int rc = 0;

  if (!r)
    return err_set(e, ERR_CHECK, "%s", e->msg);
  if (!r->nfuncs) {
    rc = err_set(e, ERR_CHECK, "no function definitions found");
    goto out;
  }
  for (i = 0; i < 3; i++) {
    static const char *const abi[] = {"wl_setup", "wl_step", "wl_teardown"};
    size_t f;
    int found = 0;
    for (f = 0; f < r->nfuncs; f++)
      found |= !strcmp(r->funcs[f].name, abi[i]);
    if (!found) {
      rc = err_set(e, ERR_CHECK, "%s is not defined", abi[i]);
      goto out;
    }
  }
  if ((rc = candidate_check_forbidden(code, stage == 2, e)) != 0)
    goto out;
  if (!has_ident(code, infra) || !has_ident(code, windows)) {
    rc = err_set(e, ERR_CHECK,
                 "no %s: the device communicator and the "
                 "RT_WINDOW buffers are the stage 1 infrastructure",
                 has_ident(code, infra) ? "RT_WINDOW/rt_window"
                                        : "rt_devcomm_create");
    goto out;
  }
  if (stage == 1)
    goto out;
  if (analyze_host_comm_count(r)) {
    for (i = 0; i < r->nops; i++)
      if (r->ops[i].kind == ANALYZE_NCCL &&
          (!strcmp(r->ops[i].category, "collective") ||
           !strcmp(r->ops[i].category, "p2p")))
        break;
    rc = err_set(e, ERR_CHECK, "line %d: host %s is left", r->ops[i].line,
                 r->ops[i].name);
    goto out;
  }
  if (!has_ident(code, devapi)) {
    rc = err_set(e, ERR_CHECK,
                 "no NCCL device API call (ncclGetLsaPointer, "
                 "ncclLsaBarrierSession, ncclGin...) found");
    goto out;
  }
  if ((rc = directive_parse(code, &d, e)) != 0 ||
      (rc = directive_validate(&d, &t->wl, e)) != 0)
    goto out;
out:
  analyze_report_free(r);
  return rc;
}

/* Build (and verify where a GPU exists) through the eval cascade.  0 when
 * it passed; else ERR_BUILD/ERR_VERIFY/... with the verdict and log tails
 * in *verdict (caller frees). */
static int evaluate(struct tstate *t, int stage, const char *code,
                    const char *tag, char **verdict, struct err *e)
{
  struct eval_opts eo;
  struct eval_result res;
  struct buf v = BUF_INIT(2u * EVAL_LOG_MAX + 4096);
  char dir[1100];
  int rc;

  memset(&eo, 0, sizeof(eo));
  memset(&res, 0, sizeof(res));
  snprintf(dir, sizeof(dir), "%s/%02d-%s-eval", t->work, t->seq, tag);
  if (mkdir(dir, 0777) && errno != EEXIST)
    return err_set(e, ERR_IO, "%s: %s", dir, strerror(errno));
  eo.wl = &t->wl;
  eo.tc = &t->tc;
  eo.impl_name = "transform.cu";
  eo.device_candidate = stage == 2;
  eo.seed_code = code; /* the seed is its own frozen reference */
  eo.ranks = t->o->ranks;
  eo.compile_only = !t->gpu;
  eo.skip_bench = 1;
  eo.work_dir = dir;
  eo.runtime_dir = t->runtime_dir;
  eo.machine = t->machine;
  rc = eval_candidate(&eo, code, &res, e);
  if (rc) {
    eval_result_release(&res);
    return rc; /* could not evaluate at all: stop */
  }
  buf_printf(&v, "stage reached: %s, status: %s%s%s\n",
             eval_stage_name(res.stage), eval_status_name(res.status),
             res.error[0] ? ", error: " : "", res.error);
  if (res.build_log && *res.build_log)
    buf_printf(&v, "--- build log (tail) ---\n%s\n", res.build_log);
  if (res.verify_log && *res.verify_log)
    buf_printf(&v, "--- run log (tail) ---\n%s\n", res.verify_log);
  *verdict = buf_detach(&v, NULL);
  rc = res.status != EVAL_STATUS_OK ? err_set(e, ERR_VERIFY, "%s", res.error)
                                    : 0;
  eval_result_release(&res);
  return rc;
}

/* The judge's diagnosis of a failed candidate (new string), or a copy of
 * the verdict when the judge could not answer. */
static char *judge(struct tstate *t, int stage, const char *code,
                   const char *verdict)
{
  struct buf p = BUF_INIT(PROMPT_MAX);
  char *ans = NULL;
  struct err e = {0, ""};

  if (transform_prompt_judge(&p, stage, code, verdict) == 0 &&
      ask(t, "judge", "judge",
          "You review failed CUDA/NCCL programs and diagnose the cause. "
          "You never write code.",
          buf_str(&p), 0.0, &ans, &e) == 0) {
    if (strlen(ans) > DIAG_MAX)
      ans[DIAG_MAX] = '\0';
  } else {
    log_warn("transform: judge unavailable (%s); passing the raw verdict",
             e.msg);
    ans = strndup(verdict, DIAG_MAX);
  }
  buf_release(&p);
  return ans;
}

static void save_verdict(struct tstate *t, const char *tag, int ok,
                         const char *what, const char *verdict)
{
  char name[128];
  struct buf b = BUF_INIT(2u * EVAL_LOG_MAX + 8192);
  struct err e;

  snprintf(name, sizeof(name), "%02d-%s-verdict.txt", t->seq, tag);
  buf_printf(&b, "%s: %s\n%s", ok ? "PASS" : "FAIL", what,
             verdict ? verdict : "");
  (void)write_text(t->work, name, buf_str(&b), &e);
  buf_release(&b);
}

/* Checks of a marked seed: only markers added, blocks well-formed, the
 * directives inside the first block and valid. */
static int check_marked(struct tstate *t, const char *orig, const char *marked,
                        int strict, struct err *e)
{
  struct candidate_blocks bl;
  struct directive_set d;
  int rc;

  /* the rules move the directive lines; the LLM may only add markers */
  if (strict && !transform_same_but_markers(orig, marked, e))
    return ERR_CHECK;
  if ((rc = candidate_blocks(marked, &bl, e)) != 0)
    return rc;
  if (bl.n == 0)
    return err_set(e, ERR_CHECK, "no EVOLVE block");
  if ((rc = candidate_check(marked, marked, 1, e)) != 0)
    return rc;
  if ((rc = directive_parse(marked, &d, e)) != 0)
    return rc;
  if (!d.has_line)
    return err_set(e, ERR_CHECK,
                   "the CUCO-DIRECTIVES line is not inside "
                   "the first EVOLVE block");
  return directive_validate(&d, &t->wl, e);
}

/* EVOLVE blocks by the LLM, else by rule.  New string or NULL. */
static char *mark(struct tstate *t, const char *code, int *by_llm,
                  struct err *e)
{
  struct buf p = BUF_INIT(PROMPT_MAX);
  char *ans = NULL, *marked = NULL;
  struct err e2 = {0, ""};

  *by_llm = 0;
  if (transform_prompt_mark(&p, code) == 0 &&
      ask(t, "transform", "mark", buf_str(&t->system), buf_str(&p), 0.0, &ans,
          &e2) == 0 &&
      (marked = transform_extract_code(ans, CODE_MAX, &e2)) != NULL &&
      check_marked(t, code, marked, 1, &e2) == 0) {
    *by_llm = 1;
    save_verdict(t, "mark", 1, "EVOLVE blocks by the LLM", NULL);
    goto out;
  }
  save_verdict(t, "mark", 0, "LLM marking rejected, using the rules", e2.msg);
  log_info("transform: LLM marking rejected (%s); marking by rule", e2.msg);
  free(marked);
  marked = transform_mark_rules(code, e);
  if (marked && check_marked(t, code, marked, 0, e)) {
    err_wrap(e, "rule-based EVOLVE blocks");
    free(marked);
    marked = NULL;
  }
out:
  free(ans);
  buf_release(&p);
  return marked;
}

static int setup(struct tstate *t, const struct config *cfg,
                 struct transform_result *r, struct err *e)
{
  const char *base;
  char path[2048];
  size_t len;
  char *src;
  struct analyze_report *ar;
  struct buf txt = BUF_INIT(1u << 20);
  char *hw;
  json_t *g;
  double budget;
  int rc;

  if ((rc = workload_load(t->o->workload_dir, &t->wl, e)) != 0)
    return rc;
  if (t->wl.kind != WORKLOAD_RUNTIME)
    return err_set(e, ERR_USAGE,
                   "%s: transform needs a runtime workload "
                   "(kind = runtime)",
                   t->wl.ini_path);
  if ((rc = transform_find_root(t->root, sizeof(t->root), e)) != 0)
    return rc;
  snprintf(t->runtime_dir, sizeof(t->runtime_dir), "%s/runtime", t->root);
  if ((rc = tc_probe(cfg, &t->tc, e)) != 0)
    return rc;
  if (!t->tc.nvcc[0])
    return err_set(e, ERR_BUILD,
                   "nvcc not found: transform builds every "
                   "candidate (set [build] nvcc or CUCO_NVCC)");
  t->machine = doctor_describe(cfg, &t->tc, e);
  if (!t->machine)
    return e->code;
  g = json_object_get(json_object_get(t->machine, "gpus"), "count");
  t->gpu = !t->o->compile_only && json_integer_value(g) > 0;
  t->pool = llm_pool_new(cfg, e);
  if (!t->pool)
    return e->code;
  if (llm_pool_count(t->pool) == 0)
    return err_set(e, ERR_CONFIG,
                   "no LLM configured ([llm] in cuco.ini "
                   "or CUCO_LLM_*): transform needs one");
  t->model = t->o->llm_name ? llm_pool_find(t->pool, t->o->llm_name)
                            : llm_pool_model(t->pool, 0);
  if (!t->model)
    return err_set(e, ERR_USAGE, "no LLM model named '%s' is configured",
                   t->o->llm_name);
  budget = t->o->budget_usd;
  if (budget <= 0 && (rc = config_get_double(cfg, "transform", "budget_usd", 0,
                                             0, 1e6, &budget, e)) != 0)
    return rc;
  if (budget > 0)
    llm_pool_set_budget(t->pool, budget);
  llm_pool_set_recorder(t->pool, record_call, t);
  if (t->o->db_path && (rc = open_db(t, e)) != 0)
    return rc;
  if (t->o->work_dir)
    snprintf(t->work, sizeof(t->work), "%s", t->o->work_dir);
  else
    snprintf(t->work, sizeof(t->work), "%s/transform", t->wl.dir);
  if (mkdir(t->work, 0777) && errno != EEXIST)
    return err_set(e, ERR_IO, "%s: %s", t->work, strerror(errno));
  snprintf(r->work_dir, sizeof(r->work_dir), "%s", t->work);

  base = t->wl.baselines[0];
  snprintf(path, sizeof(path), "%s/%s", t->wl.dir, base);
  src = file_read(path, CODE_MAX, &len, e);
  if (!src)
    return e->code;
  ar = analyze_source(base, src, len, e);
  free(src);
  if (!ar)
    return e->code;
  if (analyze_host_comm_count(ar) == 0) {
    analyze_report_free(ar);
    return err_set(e, ERR_CHECK,
                   "%s has no host NCCL collective or "
                   "send/recv: nothing to transform",
                   path);
  }
  rc = analyze_report_text(ar, &txt);
  analyze_report_free(ar);
  if (rc)
    return err_set(e, rc, "out of memory");
  t->analysis = buf_detach(&txt, NULL);
  hw = json_dumps(t->machine, JSON_COMPACT | JSON_SORT_KEYS);
  buf_init(&t->system, PROMPT_MAX);
  rc = transform_prompt_system(&t->system, t->root, hw ? hw : "{}", e);
  free(hw);
  if (rc)
    return rc;
  if (!t->gpu)
    log_info("transform: %s: candidates are compiled, not run "
             "(verification needs a GPU)",
             t->o->compile_only ? "--compile-only" : "no GPU here");
  return 0;
}

int transform_run(const struct config *cfg, const struct transform_opts *o,
                  struct transform_result *r, struct err *e)
{
  struct tstate t;
  long max_iters = o->max_iters;
  char *current = NULL, *failed = NULL, *diag = NULL, *marked = NULL;
  char path[2048];
  int stage = 1, rc;
  struct err ie = {0, ""};

  memset(&t, 0, sizeof(t));
  memset(r, 0, sizeof(*r));
  t.o = o;
  buf_init(&t.system, PROMPT_MAX);
  if ((rc = setup(&t, cfg, r, e)) != 0)
    goto out;
  if (max_iters <= 0 && (rc = config_get_long(cfg, "transform", "max_iters", 8,
                                              1, 100, &max_iters, e)) != 0)
    goto out;
  snprintf(path, sizeof(path), "%s/%s", t.wl.dir, t.wl.baselines[0]);
  current = file_read(path, CODE_MAX, NULL, e);
  if (!current) {
    rc = e->code;
    goto out;
  }
  transform_drop_host_only(current); /* the result needs the device API */
  while (stage <= 2) {
    struct buf p = BUF_INIT(PROMPT_MAX);
    char *ans = NULL, *code = NULL, *verdict = NULL, tag[32];

    if (r->iterations >= max_iters) {
      snprintf(r->error, sizeof(r->error),
               "stage %d did not pass in %ld iterations; last: %s", stage,
               max_iters, ie.msg[0] ? ie.msg : "no attempt");
      break;
    }
    r->iterations++;
    snprintf(tag, sizeof(tag), "stage%d", stage);
    log_info("transform: iteration %d, stage %d", r->iterations, stage);
    if (transform_prompt_stage(&p, stage, &t.wl, t.analysis, current, failed,
                               diag)) {
      buf_release(&p);
      rc = err_set(e, ERR_NOMEM, "prompt too large or out of memory");
      goto out;
    }
    rc = ask(&t, "transform", tag, buf_str(&t.system), buf_str(&p), 0.2, &ans,
             e);
    buf_release(&p);
    if (rc) { /* budget, auth, network: the loop cannot go on */
      snprintf(r->error, sizeof(r->error), "LLM call failed: %s", e->msg);
      rc = 0;
      break;
    }
    code = transform_extract_code(ans, CODE_MAX, &ie);
    free(ans);
    if (code && static_checks(&t, stage, code, &ie) == 0) {
      rc = evaluate(&t, stage, code, tag, &verdict, &ie);
      if (rc && rc != ERR_VERIFY) { /* eval itself failed: stop */
        free(code);
        free(verdict);
        err_set(e, rc, "%s", ie.msg);
        goto out;
      }
    } else {
      rc = ERR_CHECK;
    }
    save_verdict(&t, tag, rc == 0,
                 rc == 0 ? (t.gpu ? "checks, build and verification passed"
                                  : "checks and compile passed (no GPU: "
                                    "not run)")
                         : ie.msg,
                 verdict);
    free(diag);
    free(failed);
    diag = failed = NULL;
    if (rc == 0) {
      log_info("transform: stage %d passed", stage);
      free(current);
      current = code;
      free(verdict);
      stage++;
      continue;
    }
    log_info("transform: stage %d attempt failed: %s", stage, ie.msg);
    {
      struct buf v = BUF_INIT(2u * EVAL_LOG_MAX + 4096);
      buf_printf(&v, "%s\n%s", ie.msg, verdict ? verdict : "");
      diag = judge(&t, stage, code ? code : "(no code block)", buf_str(&v));
      buf_release(&v);
    }
    failed = code ? code : strdup("(the answer held no code block)\n");
    free(verdict);
  }
  rc = 0;
  if (stage <= 2)
    goto out;
  marked = mark(&t, current, &r->marked_by_llm, &ie);
  if (!marked) {
    snprintf(r->error, sizeof(r->error), "EVOLVE marking failed: %s", ie.msg);
    goto out;
  }
  {
    char *verdict = NULL;
    int erc = evaluate(&t, 2, marked, "final", &verdict, &ie);
    save_verdict(&t, "final", erc == 0,
                 erc ? ie.msg
                     : "the marked seed "
                       "passed",
                 verdict);
    free(verdict);
    if (erc) {
      snprintf(r->error, sizeof(r->error), "the marked seed failed: %s",
               ie.msg);
      goto out;
    }
  }
  if (o->out_path)
    snprintf(r->seed_path, sizeof(r->seed_path), "%s", o->out_path);
  else {
    char sp[1100];
    char *old_seed;
    snprintf(sp, sizeof(sp), "%s/%s", t.wl.dir, t.wl.seed);
    old_seed = file_read(sp, CODE_MAX, NULL, &ie);
    if (old_seed && !strncmp(old_seed, TRANSFORM_PLACEHOLDER,
                             strlen(TRANSFORM_PLACEHOLDER)))
      snprintf(r->seed_path, sizeof(r->seed_path), "%s", sp);
    else
      snprintf(r->seed_path, sizeof(r->seed_path), "%s/seed.cu", t.work);
    free(old_seed);
  }
  {
    char *slash = strrchr(r->seed_path, '/');
    char dir[1024], name[256];
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - r->seed_path) : 1,
             slash ? r->seed_path : ".");
    snprintf(name, sizeof(name), "%s", slash ? slash + 1 : r->seed_path);
    if ((rc = write_text(dir, name, marked, e)) != 0)
      goto out;
  }
  r->ok = 1;
  r->verified = t.gpu;
out:
  if (t.pool)
    r->cost_usd = llm_pool_spent(t.pool);
  if (t.work[0]) {
    json_t *j = json_pack(
        "{s:b, s:i, s:b, s:b, s:f, s:s, s:s, s:s}", "ok", r->ok, "iterations",
        r->iterations, "verified", r->verified, "marked_by_llm",
        r->marked_by_llm, "cost_usd", r->cost_usd, "seed", r->seed_path,
        "error", r->error, "mode", t.gpu ? "verify" : "compile-only");
    if (j) {
      char p2[1100];
      snprintf(p2, sizeof(p2), "%s/transform.json", t.work);
      json_dump_file(j, p2, JSON_INDENT(2));
      json_decref(j);
    }
  }
  if (t.db) {
    struct err e2;
    if (db_run_set_status(t.db, t.run_id, r->ok ? "done" : "interrupted", 1,
                          &e2))
      log_warn("transform: database: %s", e2.msg);
    db_close(t.db);
  }
  free(current);
  free(failed);
  free(diag);
  free(marked);
  free(t.analysis);
  buf_release(&t.system);
  json_decref(t.machine);
  llm_pool_free(t.pool);
  return rc;
}

int cmd_transform(struct cmd_ctx *ctx, int argc, char **argv)
{
  static const struct option opts[] = {
      {"llm", required_argument, NULL, 'l'},
      {"max-iters", required_argument, NULL, 'm'},
      {"output", required_argument, NULL, 'o'},
      {"work", required_argument, NULL, 'w'},
      {"ranks", required_argument, NULL, 'r'},
      {"budget-usd", required_argument, NULL, 'b'},
      {"compile-only", no_argument, NULL, 'c'},
      {"db", required_argument, NULL, 'd'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  struct transform_opts o;
  struct transform_result r;
  struct err e = {0, ""};
  long v;
  double dv;
  int opt;

  memset(&o, 0, sizeof(o));
  while ((opt = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
    switch (opt) {
    case 'l':
      o.llm_name = optarg;
      break;
    case 'm':
    case 'r':
      if (config_parse_long(optarg, &v) || v < 1 || v > 100)
        return cmd_bad_usage(ctx, "--%s wants a number 1..100, not '%s'",
                             opt == 'm' ? "max-iters" : "ranks", optarg);
      *(opt == 'm' ? &o.max_iters : &o.ranks) = (int)v;
      break;
    case 'b':
      if (config_parse_double(optarg, &dv) || dv <= 0)
        return cmd_bad_usage(ctx, "--budget-usd wants dollars > 0, not '%s'",
                             optarg);
      o.budget_usd = dv;
      break;
    case 'o':
      o.out_path = optarg;
      break;
    case 'w':
      o.work_dir = optarg;
      break;
    case 'c':
      o.compile_only = 1;
      break;
    case 'd':
      o.db_path = optarg;
      break;
    case 'h':
      return cmd_usage(ctx, 1);
    default:
      return cmd_usage(ctx, 0);
    }
  }
  if (optind + 1 != argc)
    return cmd_bad_usage(ctx, optind < argc ? "one WORKLOAD folder expected"
                                            : "WORKLOAD missing");
  o.workload_dir = argv[optind];
  if (transform_run(ctx->cfg, &o, &r, &e)) {
    cmd_error(ctx, "%s", e.msg);
    return CMD_FAIL;
  }
  if (!r.ok) {
    cmd_error(ctx,
              "no seed: %s (prompts, answers and verdicts in "
              "%s)",
              r.error, r.work_dir);
    return CMD_FAIL;
  }
  printf("seed: %s\n%s after %d iterations, EVOLVE blocks by %s, LLM cost "
         "$%.4f\nlog: %s\n",
         r.seed_path,
         r.verified ? "verified on the small sizes"
                    : "passed static checks and compiled (no GPU run: "
                      "not verified)",
         r.iterations, r.marked_by_llm ? "the LLM" : "rule", r.cost_usd,
         r.work_dir);
  return CMD_OK;
}
