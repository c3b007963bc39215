/* eval_verdict.c - the words and verdicts every part of the cascade
 * shares: stage and status names (eval.h), eval_fail/eval_pass, the capped
 * logs, the clock (eval_int.h).  It calls no other part of eval, so the
 * parts form a DAG (eval_int.h draws it). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "eval.h"
#include "eval_int.h"

static const char *const stage_names[] = {"static", "build", "allowlist",
                                          "verify", "bench", "done"};
static const char *const status_names[] = {"failed", "rejected", "ok"};

/* The index of NAME in the N words of NAMES, or -1. */
static int word_index(const char *const *names, int n, const char *name)
{
  int i;

  for (i = 0; i < n; i++)
    if (!strcmp(names[i], name))
      return i;
  return -1;
}

const char *eval_stage_name(enum eval_stage s)
{
  return (unsigned)s <= EVAL_STAGE_DONE ? stage_names[s] : "?";
}

int eval_stage_parse(const char *name)
{
  return word_index(stage_names, EVAL_STAGE_DONE + 1, name);
}

const char *eval_status_name(enum eval_status s)
{
  return (unsigned)s <= EVAL_STATUS_OK ? status_names[s] : "?";
}

int eval_status_parse(const char *name)
{
  return word_index(status_names, EVAL_STATUS_OK + 1, name);
}

/* Set the verdict of a stage that failed. */
void eval_fail(struct eval_result *r, const struct eval_opts *o,
               enum eval_stage st, enum eval_status status, const char *fmt,
               ...)
{
  va_list ap;
  char msg[480];

  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  r->stage = st;
  r->status = status;
  snprintf(r->error, sizeof(r->error), "%s: %s", eval_stage_name(st), msg);
  if (o->progress)
    o->progress(o->progress_ud, st, 0, msg);
}

void eval_pass(const struct eval_opts *o, enum eval_stage st, const char *fmt,
               ...)
{
  va_list ap;
  char msg[480];

  if (!o->progress)
    return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  o->progress(o->progress_ud, st, 1, msg);
}

/* Append text to a capped log string owned by the result. */
void eval_log_append(char **log, const char *text)
{
  struct buf b = BUF_INIT(EVAL_LOG_MAX);

  if (*log)
    (void)buf_puts(&b, *log);
  /* keep the tail of long logs: the end says why */
  if (strlen(text) > EVAL_LOG_MAX / 2)
    text += strlen(text) - EVAL_LOG_MAX / 2;
  (void)buf_puts(&b, text);
  free(*log);
  *log = buf_detach(&b, NULL);
}

double eval_now(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
