// runtime/rt_judge.cu - how one OUTPUT of one step is judged, shared by the
// real runtime (rt_main.cu) and the --vranks mode (rt_vranks.cu), so both
// give the same reasons. Every reason starts with the word of the mechanism
// that caught the candidate (docs/contracts.md section 4):
//   outside:       written where the reference requires the poison to stay
//   snapshot:      poison in the snapshot at the end event, gone from the
//                  live buffer later: work finished after the step claimed
//   poison:        poison in the snapshot and still in the buffer (unwritten)
//   recv-poison:   NaN in the output while receive windows were poisoned:
//                  something read a receive region before it was written
//   nan:           other NaN/Inf
//   fresh-inputs:  wrong, but equal to the result for an earlier step's
//                  inputs (a replayed output)
//   rel-l2:        the global relative L2 over the threshold
//   local-check:   the worst row or block over its threshold, or the largest
//                  |error| over the reference's bound (rt_output_max_abs)
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rt_bench.h"

void rt_reason_add(char *reason, const char *prefix, const char *text) {
  size_t n = strlen(reason);
  snprintf(reason + n, RT_REASON_MAX - n, "%s%s%s%s", n ? "; " : "", prefix ? prefix : "",
           prefix ? ": " : "", text);
}

static double rel_of(const struct rt_cmp *m) {
  return m->ref2 > 0 ? sqrt(m->err2 / m->ref2) : (m->err2 > 0 ? INFINITY : 0);
}

// rt_compare's MODE for output B under O's switched-off checks.
static int cmp_mode(const struct rt_buf *b, const struct rt_opts *o) {
  return ((b->flags & RT_COUNTS) ? RT_CMP_COUNTS : 0) |
         ((o->skip & RT_CK_POISON) ? RT_CMP_UNPOISONED : 0);
}

// The reference for the current step into b->expected (synchronised).
static int reference(struct wl_ctx *ctx, struct rt_buf *b) {
  // The vault stays open while the trusted reference runs: rt_input_regen
  // checks in_reference there (a candidate's call finds it closed).
  rt_vault_open();
  rt_set_in_reference(1);
  int rc = wl_reference(ctx, &ctx->prob, b->name, b->expected);
  rt_set_in_reference(0);
  rt_vault_close();
  if (rc != 0) {
    rt_errorf("reference for %s: %s", b->name, ctx->err);
    return -1;
  }
  CUDA_CHECK(cudaStreamSynchronize(ctx->ref_stream));
  return 0;
}

// Whether the snapshot equals the result for the inputs of step STEP (within
// TOL); the expectation is recomputed for that step and left in b->expected.
static int matches_step(struct wl_ctx *ctx, struct rt_buf *b, const struct rt_opts *o,
                        unsigned long long step, long long sample, int *match) {
  unsigned long long keep = ctx->input_step;
  struct rt_cmp m;
  ctx->input_step = step;
  int rc = reference(ctx, b);
  ctx->input_step = keep;
  RT_TRY(rc);
  RT_TRY(rt_compare(b->snap, b->expected, b->dtype, cmp_mode(b, o), b->rows, b->cols, sample,
                    0, &m, ctx->ref_stream));
  *match = !m.nan && !m.poison && rel_of(&m) <= o->tol;
  return 0;
}

int rt_judge_output(struct wl_ctx *ctx, struct rt_buf *b, const struct rt_opts *o,
                    long long sample, const char *prefix, struct rt_judgement *j) {
  struct rt_cmp m;
  char text[RT_REASON_MAX];
  memset(j, 0, sizeof *j);
  j->passed = 1;
  RT_TRY(reference(ctx, b));
  RT_TRY(rt_compare(b->snap, b->expected, b->dtype, cmp_mode(b, o), b->rows, b->cols, sample,
                    b->block_rows, &m, ctx->ref_stream));
  j->rel = rel_of(&m);
  j->row = m.worst_row_rel;
  j->block = m.worst_block_rel;
  j->nan = m.nan;
  j->poison = m.poison;
  j->outside = m.outside;
  if (m.outside) {
    snprintf(text, sizeof text,
             "outside: %llu elements written where nothing may be written (the reference "
             "requires the poison to stay)",
             m.outside);
    rt_reason_add(j->reason, prefix, text);
  }
  if (m.poison) {
    // Still poison in the live buffer now (after a device sync)? Then it was
    // never written; otherwise it was written after the end event.
    struct rt_cmp live;
    live.poison = m.poison;
    // (the judge of a separate worker has no live buffer: b->dev NULL;
    // its commitment check names late work instead)
    if (!(o->skip & RT_CK_SNAPSHOT) && b->dev)
      RT_TRY(rt_compare(b->dev, b->expected, b->dtype, cmp_mode(b, o), b->rows, b->cols,
                        sample, 0, &live, ctx->ref_stream));
    if (live.poison < m.poison)
      snprintf(text, sizeof text,
               "snapshot: %llu elements were still poison at the step's end event and "
               "written after it (work escaped the step)",
               m.poison - live.poison);
    else
      snprintf(text, sizeof text,
               "poison: %llu elements still hold the poison pattern (never written)", m.poison);
    rt_reason_add(j->reason, prefix, text);
  } else if (m.nan) {
    int recv = 0;
    for (int i = 0; i < ctx->nbufs; i++)
      recv |= ctx->bufs[i].kind == RT_RECV && rt_dtype_is_float(ctx->bufs[i].dtype);
    if (recv && !(o->skip & RT_CK_RECV_POISON))
      snprintf(text, sizeof text,
               "recv-poison: %llu NaN/Inf elements (receive windows hold NaN until written: "
               "read before written?)",
               m.nan);
    else
      snprintf(text, sizeof text, "nan: %llu NaN/Inf elements", m.nan);
    rt_reason_add(j->reason, prefix, text);
  }
  if (!(j->rel <= o->tol)) {
    // A replayed output: equal to the result for step 1's (or the previous
    // step's) inputs. Only when fresh inputs are on: otherwise every step
    // has step 1's inputs and the question is moot.
    int match = 0;
    unsigned long long cand[2] = {1, ctx->input_step - 1}, hit = 0;
    for (int k = 0; k < 2 && !m.nan && !m.poison && !(o->skip & RT_CK_FRESH); k++) {
      if (cand[k] < 1 || cand[k] >= ctx->input_step || (k == 1 && cand[1] == cand[0]))
        continue;
      RT_TRY(matches_step(ctx, b, o, cand[k], sample, &match));
      if (match) {
        hit = cand[k];
        break;
      }
    }
    if (hit)
      snprintf(text, sizeof text,
               "fresh-inputs: rel-l2 %.3g > tol %.3g, and the output equals the result for "
               "step %llu's inputs (replayed; inputs are fresh every step)",
               j->rel, o->tol, hit);
    else
      snprintf(text, sizeof text, "rel-l2: %.3g > tol %.3g", j->rel, o->tol);
    rt_reason_add(j->reason, prefix, text);
  }
  if (!(o->skip & RT_CK_LOCAL) && !m.nan && !m.poison && !m.outside) {
    if (b->max_abs > 0 && !(m.max_abs <= b->max_abs)) {  // rt_output_max_abs
      snprintf(text, sizeof text, "local-check: max |error| %.3g > %.3g", m.max_abs, b->max_abs);
      rt_reason_add(j->reason, prefix, text);
    }
    if (!(m.worst_row_rel <= o->local_tol)) {
      snprintf(text, sizeof text, "local-check: row %lld rel-l2 %.3g > %.3g", m.worst_row,
               m.worst_row_rel, o->local_tol);
      rt_reason_add(j->reason, prefix, text);
    }
    if (b->block_rows > 0 && !(m.worst_block_rel <= o->block_tol)) {
      snprintf(text, sizeof text, "local-check: block %lld (rows %lld..%lld) rel-l2 %.3g > %.3g",
               m.worst_block, m.worst_block * b->block_rows,
               (m.worst_block + 1) * b->block_rows - 1, m.worst_block_rel, o->block_tol);
      rt_reason_add(j->reason, prefix, text);
    }
  }
  j->passed = !j->reason[0];
  return 0;
}

const char *rt_judge_process = "in-process";

struct rt_check *rt_check_new(struct rt_check *checks, int *n, int rank, int kind,
                              const char *output) {
  if (kind == RT_STEP_TIMED)
    for (int i = 0; i < *n; i++)
      if (checks[i].kind == RT_STEP_TIMED && !strcmp(checks[i].output, output))
        return &checks[i];
  if (*n >= RT_MAX_CHECKS) return &checks[RT_MAX_CHECKS - 1];
  struct rt_check *c = &checks[(*n)++];
  memset(c, 0, sizeof *c);
  c->rank = rank;
  c->kind = kind;
  c->passed = 1;
  snprintf(c->output, sizeof c->output, "%s", output);
  return c;
}

void rt_check_fold(struct rt_check *c, const struct rt_judgement *j, int append) {
  if (j->rel > c->rel_l2 || j->rel != j->rel) c->rel_l2 = j->rel;
  if (j->row > c->row_rel) c->row_rel = j->row;
  if (j->block > c->block_rel) c->block_rel = j->block;
  c->nan += j->nan;
  c->poison += j->poison;
  c->outside += j->outside;
  if (j->passed) return;
  size_t n = strlen(c->reason);
  if (!n || (append && n < sizeof c->reason - 2))
    snprintf(c->reason + n, sizeof c->reason - n, "%s%s", n ? "; " : "", j->reason);
  c->passed = 0;
}

void rt_check_note(const struct rt_check *c, int *failed, char *first, size_t n) {
  if (c->passed) return;
  if (!*failed)
    snprintf(first, n, "rank %d %s %s: %s", c->rank, rt_step_kind_name[c->kind], c->output,
             c->reason);
  *failed = 1;
}

const char *const rt_step_kind_name[3] = {"check", "timed", "perturb"};

void rt_result_write(const struct rt_opts *o, int nranks, int vranks, const char *status,
                     const char *error, const struct rt_check *checks, int n,
                     void (*tail)(FILE *f, const void *arg), const void *arg) {
  char tmp[4200];
  const char *path = o->result_out ? o->result_out : o->out;
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "cannot write %s\n", tmp);
    return;
  }
  fprintf(f, "{\"schema\": 1, \"workload\": ");
  rt_json_str(f, o->workload ? o->workload : CUCO_WORKLOAD_NAME);
  fprintf(f, ", \"impl\": ");
  rt_json_str(f, o->impl ? o->impl : CUCO_IMPL_NAME);
  fprintf(f, ",\n \"params\": {");
  for (int i = 0; i < o->prob.nparams; i++) {
    fprintf(f, "%s", i ? ", " : "");
    rt_json_str(f, o->prob.params[i].name);
    fprintf(f, ": %lld", o->prob.params[i].value);
  }
  fprintf(f, "}, \"size\": ");
  rt_json_str(f, o->prob.size_name);
  fprintf(f, ", \"nranks\": %d, \"vranks\": %d, \"protocol_test\": %s,"
             " \"mode\": \"%s\",\n \"status\": \"%s\", \"error\": ",
          nranks, vranks, vranks ? "true" : "false",
          o->mode == RT_MODE_BENCH ? "bench" : "verify", status);
  rt_json_str(f, error);
  char hex[33];
  rt_secret_hex(hex);
  fprintf(f, ", \"judge\": \"%s\"", rt_judge_process);
  fprintf(f, ", \"checks_skipped\": %d,\n \"replay\": {\"seed\": %llu, \"secret\": \"%s\","
             " \"secret_source\": \"%s\"},",
          o->skip, o->prob.seed, hex, rt_secret_drawn() ? "drawn" : "fd");
  memset(hex, 0, sizeof hex);
  fprintf(f, "\n \"verify\": {\"passed\": %s, \"seed\": %llu,"
             " \"tol\": %g, \"local_tol\": %g, \"block_tol\": %g, \"checks\": [",
          !strcmp(status, "ok") ? "true" : "false", o->prob.seed, o->tol, o->local_tol,
          o->block_tol);
  for (int i = 0; i < n; i++) {
    const struct rt_check *c = &checks[i];
    fprintf(f, "%s\n  {\"rank\": %d, \"output\": ", i ? "," : "", c->rank);
    rt_json_str(f, c->output);
    fprintf(f, ", \"step\": \"%s\", \"rel_l2\": %.6g, \"row_rel_l2\": %.6g,"
               " \"block_rel_l2\": %.6g, \"tol\": %g, \"nan\": %llu, \"poison\": %llu,"
               " \"outside\": %llu, \"passed\": %s, \"reason\": ",
            rt_step_kind_name[c->kind >= 0 && c->kind <= 2 ? c->kind : 0],
            isfinite(c->rel_l2) ? c->rel_l2 : 1e308, isfinite(c->row_rel) ? c->row_rel : 1e308,
            isfinite(c->block_rel) ? c->block_rel : 1e308, o->tol, c->nan, c->poison,
            c->outside, c->passed ? "true" : "false");
    rt_json_str(f, c->reason);
    fputc('}', f);
  }
  fprintf(f, "]}");
  if (tail) tail(f, arg);
  rt_phases_write(f);
  fprintf(f, ",\n \"machine\": ");
  rt_json_machine(f, o->machine);
  fprintf(f, "}\n");
  if (fclose(f) == 0 && rename(tmp, path) != 0) fprintf(stderr, "cannot rename %s\n", tmp);
}
