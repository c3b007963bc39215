/* eval_thresh.c - frozen accuracy thresholds in the eval cascade: looked up
 * before each size's run, frozen after the first baseline's first passing
 * run, checked for freeform programs, recorded in the metrics (thresh.h,
 * docs/contracts.md section 4c). */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "eval_int.h"
#include "thresh.h"

/* Whether this evaluation is of the workload's first baseline (the one
 * whose error freezes the thresholds). */
static int is_first_baseline(const struct eval_opts *o)
{
  return !o->device_candidate && o->impl_name && o->wl->nbaselines &&
         !strcmp(o->impl_name, o->wl->baselines[0]);
}

int eval_thresh_before(const struct eval_opts *o, const struct eval_ctx *x,
                       const struct workload_size *s, struct eval_thresh *th,
                       struct err *e)
{
  int rc;

  memset(th, 0, sizeof(*th));
  rc = thresh_key(o->wl, s->params, x->ranks, o->vranks, th->key,
                  sizeof(th->key), e);
  if (!rc)
    rc =
        thresh_load(x->cache_dir, o->wl->name, th->key, &th->t, &th->found, e);
  if (rc)
    return err_wrap(e, "thresholds");
  return 0;
}

int eval_thresh_after(const struct eval_opts *o, const struct eval_ctx *x,
                      const struct workload_size *s, enum eval_stage st,
                      const json_t *res, struct eval_result *r,
                      struct eval_thresh *th, json_t *size_metrics,
                      struct err *e)
{
  const json_t *met =
      o->wl->kind == WORKLOAD_FREEFORM ? json_object_get(res, "last") : res;
  double rel, row, block, fl, cap;
  struct err me = {0, ""};
  json_t *j;
  int rc = 0, stored = 0;

  if (th->found && o->wl->kind == WORKLOAD_FREEFORM) {
    char why[400];
    if (thresh_errors_freeform(met, &rel, &row, &block, &me)) {
      eval_fail(r, o, st, EVAL_STATUS_FAILED, "size %s: thresholds: %s",
                s->name, me.msg);
      rc = 1;
    } else if (thresh_check(&th->t, rel, row, block, why, sizeof(why))) {
      eval_fail(r, o, st, EVAL_STATUS_FAILED, "size %s: thresholds: %s",
                s->name, why);
      rc = 1;
    }
  }
  if (!th->found && is_first_baseline(o)) {
    int bad = o->wl->kind == WORKLOAD_FREEFORM
                  ? thresh_errors_freeform(met, &rel, &row, &block, &me)
                  : thresh_errors_runtime(met, &rel, &row, &block, &me);
    if (bad) {
      snprintf(th->why, sizeof(th->why), "not frozen: %s", me.msg);
    } else {
      thresh_bounds(o->wl, &fl, &cap);
      thresh_freeze(&th->t, rel, row, block, fl, cap, o->impl_name);
      if (thresh_store(x->cache_dir, o->wl->name, th->key, &th->t, &stored, e))
        return err_wrap(e, "thresholds");
      if (!stored) /* another eval froze them first: use those */
        if (thresh_load(x->cache_dir, o->wl->name, th->key, &th->t, &th->found,
                        e))
          return err_wrap(e, "thresholds");
      th->found = 1;
      th->now = stored;
    }
  } else if (!th->found && !o->wl->nbaselines) {
    snprintf(th->why, sizeof(th->why), "none (the workload has no baseline)");
  } else if (!th->found) {
    thresh_bounds(o->wl, &fl, &cap);
    snprintf(th->why, sizeof(th->why),
             "not frozen (no run of the first baseline %s at this size yet): "
             "cap %.3g",
             o->wl->nbaselines ? o->wl->baselines[0] : "(none)", cap);
  }
  if (th->found) {
    j = thresh_json(&th->t);
    if (j) {
      json_object_set_new(j, "frozen", json_true());
      json_object_set_new(j, "frozen_now", json_boolean(th->now));
    }
  } else {
    j = json_pack("{s:b, s:s}", "frozen", 0, "why", th->why);
  }
  if (j)
    json_object_set_new(size_metrics, "thresholds", j);
  return rc;
}

void eval_thresh_note(const struct workload_size *s,
                      const struct eval_thresh *th, char *text, size_t n)
{
  size_t l = strlen(text);

  if (l + 1 >= n)
    return;
  if (!th->found && !strncmp(th->why, "none", 4)) { /* said once */
    if (!l)
      snprintf(text, n, "%s", th->why);
    return;
  }
  if (th->found)
    snprintf(text + l, n - l,
             "%s%s rel_l2<=%.3g row<=%.3g block<=%.3g (%s %s)", l ? ", " : "",
             s->name, th->t.rel_l2, th->t.row, th->t.block,
             th->now ? "frozen now from" : "frozen from", th->t.baseline);
  else
    snprintf(text + l, n - l, "%s%s %s", l ? ", " : "", s->name, th->why);
}
