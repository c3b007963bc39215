/* log.c - see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

#include "buf.h"
#include "redact.h"
#include "utf8.h"

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
  struct buf b = BUF_INIT(64 * 1024);
  va_list ap;

  if (lvl > threshold)
    return;
  va_start(ap, fmt);
  (void)buf_vprintf(&b, fmt, ap);
  va_end(ap);
  (void)redact_buf(&b); /* the last line of defence (redact.h) */
  (void)utf8_sanitize_text(b.data, b.len); /* nor terminal control */
  fprintf(stderr, "cuco: %s: %s\n", names[lvl], buf_str(&b));
  buf_release(&b);
}
