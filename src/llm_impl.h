/* llm_impl.h - shared between llm.c and llm_config.c; not for agents. */
#ifndef CUCO_LLM_IMPL_H
#define CUCO_LLM_IMPL_H

#include "err.h"

#include <jansson.h>

struct config;
struct llm_model;
struct llm_response;

/* Fill *m from section sec of c (display name `name`); keys that belong to
 * every model (timeouts, retries, ...) fall back to [llm].  embed: the
 * [embed] section (OpenAI-compatible only, inherits nothing provider-
 * specific).  ERR_CONFIG naming file:line; never echoes a secret. */
int llm_model_from_config(const struct config *c, const char *sec,
                          const char *name, int embed, struct llm_model *m,
                          struct err *e) WARN_UNUSED;

/* Copy the token counts (non-negative integers under usage.IN_KEY and
 * usage.OUT_KEY) and the "model" string of a provider's answer into *resp;
 * absent or mistyped fields leave *resp unchanged. */
void llm_read_usage_model(json_t *root, const char *in_key,
                          const char *out_key, struct llm_response *resp);

#endif
