/* log.h - the process-wide logger (the one allowed piece of global state
 * besides the parsed config).  Messages go to stderr. */
#ifndef CUCO_LOG_H
#define CUCO_LOG_H

#include "err.h"

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/* Set the threshold; messages above it are dropped.  Default LOG_INFO. */
void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);

void log_msg(enum log_level lvl, const char *fmt, ...) PRINTF_LIKE(2, 3);

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
