/* err.h - the one error convention of cuco.
 *
 * Fallible functions return int: 0 (ERR_OK) on success, a negative value of
 * enum err on failure, and put a one-line human message into a caller-owned
 * struct err.  Functions returning pointers return NULL on failure and fill
 * the struct err the same way.  Only main.c turns an error into an exit code.
 */
#ifndef CUCO_ERR_H
#define CUCO_ERR_H

#include <stddef.h>

#define WARN_UNUSED       __attribute__((warn_unused_result))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

enum err_code {
  ERR_OK = 0,
  ERR_NOMEM = -1,   /* allocation failed */
  ERR_IO = -2,      /* file or pipe I/O */
  ERR_PARSE = -3,   /* malformed input (config, JSON, patch, source) */
  ERR_USAGE = -4,   /* bad command line */
  ERR_CONFIG = -5,  /* bad configuration value */
  ERR_TOOBIG = -6,  /* input over its cap */
  ERR_TIMEOUT = -7, /* deadline passed */
  ERR_PROC = -8,    /* child process could not run or failed */
  ERR_HTTP = -9,    /* transport or HTTP status error */
  ERR_LLM = -10,    /* LLM answered, but not usably */
  ERR_DB = -11,     /* SQLite */
  ERR_BUILD = -12,  /* nvcc or build command failed */
  ERR_VERIFY = -13, /* candidate output wrong */
  ERR_BUDGET = -14, /* budget spent */
  ERR_NOTFOUND = -15,
  ERR_CHECK = -16, /* static check rejected a candidate */
  ERR_INTERNAL = -17,
};

struct err {
  int code;
  char msg[256];
};

/* Record code and a printf-style message in *e (e may be NULL); returns
 * code, so callers can write `return err_set(e, ERR_IO, "...")`. */
int err_set(struct err *e, int code, const char *fmt, ...) PRINTF_LIKE(3, 4);

/* Prefix the message already in *e with "what: " (keeps the code). */
int err_wrap(struct err *e, const char *fmt, ...) PRINTF_LIKE(2, 3);

/* Short name of an error code, e.g. "timeout". */
const char *err_name(int code);

#endif
