/* llm_doctor.c - `cuco doctor --llm`: one tiny request per configured
 * model.  See llm_check_models() in llm.h. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "llm_impl.h"

int llm_check_models(const struct config *cfg, FILE *out, json_t **report,
                     struct err *e)
{
  static const struct llm_message msg[] = {
      {LLM_ROLE_USER, "Reply with the word ok."}};
  const struct llm_request req = {NULL, msg, 1,        -1,  16,
                                  NULL, 0,   "doctor", NULL};
  struct llm_pool *p = llm_pool_new(cfg, e);
  json_t *arr = NULL;
  size_t i, n;
  int failed = 0;

  if (!p)
    return e->code ? e->code : ERR_CONFIG;
  n = llm_pool_count(p);
  if (n == 0) {
    llm_pool_free(p);
    return err_set(e, ERR_CONFIG,
                   "no LLM model is configured: set [llm] provider and model "
                   "(or CUCO_LLM_PROVIDER and CUCO_LLM_MODEL), or add "
                   "[model.NAME] sections");
  }
  if (report)
    arr = json_array();
  for (i = 0; i < n; i++) {
    const struct llm_model *m = llm_pool_model(p, i);
    const char *prov = llm_providers[m->provider].name;
    struct llm_response r;
    struct err ce = {0, ""};
    int rc = llm_chat(p, m, &req, &r, &ce);
    int pass = rc == 0 || r.outcome == LLM_TRUNCATED;

    failed += !pass;
    if (out) {
      fprintf(out, "llm check: %-10s %-9s %-28s %-9s %6.2f s", m->name, prov,
              m->model, llm_outcome_name(r.outcome), r.latency_s);
      if (!pass)
        fprintf(out, ": %s", ce.msg);
      else if (r.outcome == LLM_TRUNCATED)
        fprintf(out, " (answer cut at 16 tokens: reachable)");
      fputc('\n', out);
    }
    if (arr)
      json_array_append_new(
          arr, json_pack("{s:s, s:s, s:s, s:s, s:b, s:f, s:I, s:I, s:f, s:s}",
                         "name", m->name, "provider", prov, "model", m->model,
                         "outcome", llm_outcome_name(r.outcome), "passed",
                         pass, "latency_s", r.latency_s, "tokens_in",
                         (json_int_t)r.tokens_in, "tokens_out",
                         (json_int_t)r.tokens_out, "cost_usd", r.cost_usd,
                         "error", pass ? "" : ce.msg));
    llm_response_release(&r);
  }
  llm_pool_free(p);
  if (report)
    *report = arr;
  return failed;
}
