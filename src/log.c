/* log.c - see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static enum log_level threshold = LOG_INFO;

void log_set_level(enum log_level lvl)
{
  threshold = lvl;
}

enum log_level log_get_level(void)
{
  return threshold;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
  static const char *const names[] = {"error", "warning", "info", "debug"};
  va_list ap;

  if (lvl > threshold)
    return;
  fprintf(stderr, "cuco: %s: ", names[lvl]);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}
