/* settings.h - where cuco's own configuration comes from.
 *
 * Order (later wins): built-in defaults, the config file (--config FILE,
 * else $CUCO_CONFIG, else ./cuco.ini when present), then the environment
 * (CUCO_LLM_PROVIDER, CUCO_LLM_BASE_URL, CUCO_LLM_MODEL,
 * CUCO_LLM_API_KEY_ENV, CUCO_NCCL_HOME, CUCO_NVCC).
 */
#ifndef CUCO_SETTINGS_H
#define CUCO_SETTINGS_H

#include "cmd.h"
#include "err.h"

/* Fill ctx->cfg.  An explicitly named file that is missing is an error;
 * a missing ./cuco.ini is not. */
int settings_load(struct cmd_ctx *ctx, const char *path,
                  struct err *e) WARN_UNUSED;

#endif
