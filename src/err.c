/* err.c - error records; see err.h. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(struct err *e, int code, const char *fmt, ...)
{
  va_list ap;

  if (!e)
    return code;
  e->code = code;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
  va_end(ap);
  return code;
}

int err_wrap(struct err *e, const char *fmt, ...)
{
  char prefix[128];
  char old[sizeof(e->msg)];
  va_list ap;

  if (!e)
    return ERR_INTERNAL;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof(prefix), fmt, ap);
  va_end(ap);
  memcpy(old, e->msg, sizeof(old));
  snprintf(e->msg, sizeof(e->msg), "%s: %s", prefix, old);
  return e->code;
}

const char *err_name(int code)
{
  switch (code) {
  case ERR_OK:
    return "ok";
  case ERR_NOMEM:
    return "out of memory";
  case ERR_IO:
    return "i/o error";
  case ERR_PARSE:
    return "parse error";
  case ERR_USAGE:
    return "usage error";
  case ERR_CONFIG:
    return "config error";
  case ERR_TOOBIG:
    return "too big";
  case ERR_TIMEOUT:
    return "timeout";
  case ERR_PROC:
    return "process error";
  case ERR_HTTP:
    return "http error";
  case ERR_LLM:
    return "llm error";
  case ERR_DB:
    return "database error";
  case ERR_BUILD:
    return "build error";
  case ERR_VERIFY:
    return "verification failed";
  case ERR_BUDGET:
    return "budget spent";
  case ERR_NOTFOUND:
    return "not found";
  case ERR_CHECK:
    return "check failed";
  default:
    return "internal error";
  }
}
