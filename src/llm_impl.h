/* llm_impl.h - the provider table and what the llm*.c files share; not for
 * agents (they use llm.h).
 *
 * Everything that differs between the APIs cuco speaks is one row of
 * llm_providers[]: adding a provider is one enum llm_provider value
 * (llm.h), one row (llm.c) and its request-body builder and answer parser
 * (llm_NAME.c).  The rest (config, HTTP, retries, cost, budget, recording,
 * the doctor) reads the row and never names a provider. */
#ifndef CUCO_LLM_IMPL_H
#define CUCO_LLM_IMPL_H

#include <stddef.h>

#include "err.h"
#include "llm.h"

#include <jansson.h>

struct config;

struct llm_provider_ops {
  const char *name;           /* [llm] provider value, llm_calls.provider */
  const char *base_url;       /* default base_url */
  const char *key_env;        /* default api_key_env (NULL: none) ... */
  const char *key_env_url;    /* ... only for base_urls starting so (NULL:
                                 any base_url) */
  const char *chat_path;      /* chat endpoint, appended to base_url */
  const char *embed_path;     /* embeddings endpoint; NULL: no [embed] */
  const char *auth_prefix;    /* the key's header up to the key */
  const char *version_header; /* header carrying m->anthropic_version;
                                 NULL: none */
  /* The request body (JSON text, malloc'd; NULL when a string is not
   * valid UTF-8 or out of memory) for m and req. */
  char *(*body)(const struct llm_model *m, const struct llm_request *r,
                int max_tokens);
  /* Parse a 2xx body into resp (text, finish_reason, tokens, model);
   * returns the outcome (OK, MALFORMED, EMPTY, REFUSAL, TRUNCATED) and a
   * one-line detail in why. */
  enum llm_outcome (*parse)(const char *body, size_t len,
                            struct llm_response *resp, char *why,
                            size_t whylen);
};

/* Indexed by enum llm_provider; a model without provider = speaks
 * LLM_PROVIDER_OPENAI. */
extern const struct llm_provider_ops llm_providers[LLM_PROVIDER_COUNT];

/* The provider called name: 0 with *p set, or -1 (*p unchanged). */
int llm_provider_find(const char *name, enum llm_provider *p);

/* The rows' functions. */
char *llm_openai_body(const struct llm_model *m, const struct llm_request *r,
                      int max_tokens);
enum llm_outcome llm_openai_parse(const char *body, size_t len,
                                  struct llm_response *resp, char *why,
                                  size_t whylen);
char *llm_anthropic_body(const struct llm_model *m,
                         const struct llm_request *r, int max_tokens);
enum llm_outcome llm_anthropic_parse(const char *body, size_t len,
                                     struct llm_response *resp, char *why,
                                     size_t whylen);

/* Fill *m from section sec of c (display name `name`); keys that belong to
 * every model (timeouts, retries, ...) fall back to [llm].  embed: the
 * [embed] section (a provider with an embed_path only, inherits nothing
 * provider-specific).  ERR_CONFIG naming file:line; never echoes a
 * secret. */
int llm_model_from_config(const struct config *c, const char *sec,
                          const char *name, int embed, struct llm_model *m,
                          struct err *e) WARN_UNUSED;

/* JSON pieces the body builders and parsers share. */

/* Append r's messages to msgs as {role, content} objects.  json_string()
 * refuses invalid UTF-8, so the caller checks the array's size. */
void llm_json_messages(json_t *msgs, const struct llm_request *r);
/* Set root[key] to the array of r's stop sequences, when it has any. */
void llm_json_stop(json_t *root, const char *key, const struct llm_request *r);
/* root as compact JSON text in insertion order (malloc'd, NULL on
 * failure). */
char *llm_json_dump(const json_t *root);
/* A response body that must be a JSON object: the object (the caller
 * decrefs it), or NULL with the reason in why. */
json_t *llm_json_object(const char *body, size_t len, char *why,
                        size_t whylen);
/* The "text" strings of arr's elements joined (only elements whose "type"
 * is type, unless type is NULL); malloc'd, NULL when out of memory. */
char *llm_json_join_text(json_t *arr, const char *type);

/* Copy the token counts (non-negative integers under usage.IN_KEY and
 * usage.OUT_KEY) and the "model" string of a provider's answer into *resp;
 * absent or mistyped fields leave *resp unchanged. */
void llm_read_usage_model(json_t *root, const char *in_key,
                          const char *out_key, struct llm_response *resp);

#endif
