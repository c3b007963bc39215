/* llm_impl.h - shared between llm.c and llm_config.c; not for agents. */
#ifndef CUCO_LLM_IMPL_H
#define CUCO_LLM_IMPL_H

#include "err.h"

struct config;
struct llm_model;

/* Fill *m from section sec of c (display name `name`); keys that belong to
 * every model (timeouts, retries, ...) fall back to [llm].  embed: the
 * [embed] section (OpenAI-compatible only, inherits nothing provider-
 * specific).  ERR_CONFIG naming file:line; never echoes a secret. */
int llm_model_from_config(const struct config *c, const char *sec,
                          const char *name, int embed, struct llm_model *m,
                          struct err *e) WARN_UNUSED;

#endif
