/* llm.h - the LLM provider interface every agent uses.
 *
 * A struct llm_pool holds the configured models (the [llm] section is the
 * default model "default"; every [model.NAME] section adds one more, with a
 * weight for sampling), a dollar budget and a recording callback.  One call
 * is llm_chat(): it builds the provider's request (OpenAI-compatible Chat
 * Completions or Anthropic Messages), sends it through http.c (timeouts,
 * retries with backoff honouring Retry-After, capped body), parses the
 * answer, computes the cost from the model's prices, records the call and
 * adds the cost to the pool's spending.  Once spending reaches the budget,
 * llm_chat() refuses new calls with ERR_BUDGET (a call already under way
 * may overshoot by its own cost).
 *
 * Secrets: a model holds only the NAME of the environment variable with its
 * key; the key is read at call time, put into one request header and never
 * into an error message, a log line, a record or the doctor output.
 *
 * Thread safety: llm_chat() and llm_embed() may be called concurrently on
 * one pool (spending and recording are serialised by a mutex); configuring
 * the pool (set_recorder, set_budget, set_spent) is not concurrent-safe.
 */
#ifndef CUCO_LLM_H
#define CUCO_LLM_H

#include <stddef.h>
#include <stdio.h>

#include "err.h"

struct config;
struct json_t;

/* The API a model speaks: an index into the provider table (llm_impl.h),
 * which holds everything that differs between them. */
enum llm_provider {
  LLM_PROVIDER_OPENAI = 0,    /* OpenAI-compatible /chat/completions */
  LLM_PROVIDER_ANTHROPIC = 1, /* Anthropic /v1/messages */
  LLM_PROVIDER_COUNT
};

enum llm_role { LLM_ROLE_USER = 0, LLM_ROLE_ASSISTANT = 1 };

struct llm_message {
  enum llm_role role;
  const char *content; /* UTF-8 text */
};

/* What a caller asks.  All pointers are borrowed for the call. */
struct llm_request {
  const char *system; /* system prompt; NULL or "" for none */
  const struct llm_message *messages;
  size_t n_messages;       /* at least 1; the first should be a user message */
  double temperature;      /* < 0: the provider's default (not sent) */
  int max_tokens;          /* <= 0: the model's configured max_tokens */
  const char *const *stop; /* stop sequences, may be NULL */
  size_t n_stop;
  const char *purpose; /* mutate|meta|judge|transform|embed|doctor; recorded */
  void *tag;           /* passed through to the recorder untouched */
};

/* How a call ended.  Each failure kind is distinct so callers can decide
 * (e.g. retry a mutation on TRUNCATED with a larger max_tokens, stop the
 * run on AUTH or BUDGET). */
enum llm_outcome {
  LLM_OK = 0,
  LLM_TRANSPORT, /* no HTTP answer (connect refused, reset, DNS), after
                    retries */
  LLM_TIMEOUT,   /* connect or total timeout (not retried) */
  LLM_HTTP,      /* another HTTP status (4xx other than 401/403/429) */
  LLM_AUTH,      /* 401 or 403: wrong or missing key (not retried) */
  LLM_RATELIMIT, /* still 429 after max_retries */
  LLM_SERVER,    /* still 5xx after max_retries */
  LLM_MALFORMED, /* 2xx but not the provider's JSON shape */
  LLM_EMPTY,     /* 2xx, valid JSON, but no choices / no content */
  LLM_REFUSAL,   /* the model refused (refusal field / stop_reason) */
  LLM_TRUNCATED, /* finish reason length / max_tokens: text is partial */
  LLM_TOOBIG,    /* response body over max_response_bytes */
  LLM_BUDGET,    /* refused before sending: budget spent */
  LLM_NOKEY,     /* refused before sending: key variable unset/empty */
  LLM_OUTCOME_COUNT
};

/* Short stable name of an outcome: "ok", "transport", "timeout", "http",
 * "auth", "ratelimit", "server", "malformed", "empty", "refusal",
 * "truncated", "toobig", "budget", "nokey".  Stored in llm_calls.outcome. */
const char *llm_outcome_name(enum llm_outcome o);

/* What came back.  Zero it (or use LLM_RESPONSE_INIT) before llm_chat();
 * free with llm_response_release(). */
struct llm_response {
  enum llm_outcome outcome;
  char *text;             /* malloc'd; set on OK and on TRUNCATED (partial),
                             and the refusal text on REFUSAL; else NULL */
  char finish_reason[32]; /* provider's own word: stop, length, end_turn.. */
  long tokens_in;         /* from the provider's usage; 0 when absent */
  long tokens_out;
  double latency_s;       /* wall time of the whole call incl. retries */
  double cost_usd;        /* tokens * the model's prices */
  char model[128];        /* the model the server says answered */
  char provider[16];      /* "openai" or "anthropic" */
  const char *model_name; /* pool entry name ("default", NAME); borrowed */
  int http_status;        /* last HTTP status, 0 if none */
  int attempts;           /* HTTP attempts made (1 + retries) */
  long long call_id;      /* what the recorder returned (0 without one) */
};

#define LLM_RESPONSE_INIT                                                     \
  {                                                                           \
    0                                                                         \
  }

void llm_response_release(struct llm_response *r);

/* One configured model.  Filled from config; read-only for callers. */
struct llm_model {
  char name[64]; /* "default" for [llm], else NAME of [model.NAME] */
  enum llm_provider provider;
  char model[128];       /* model id sent to the server */
  char base_url[512];    /* e.g. https://api.openai.com/v1 */
  char api_key_env[128]; /* NAME of the env var holding the key; "" = none
                            (local servers) */
  double timeout_s;      /* total per attempt */
  double connect_timeout_s;
  int max_retries;            /* retries after the first attempt */
  double retry_base_s;        /* first backoff delay; doubles each retry */
  double retry_max_s;         /* cap on one delay (also on Retry-After) */
  size_t max_response;        /* cap on the response body, bytes */
  int max_tokens;             /* default max_tokens of a request */
  double price_in;            /* USD per million input tokens */
  double price_out;           /* USD per million output tokens */
  int price_from_table;       /* 1: prices are cuco's built-in defaults */
  double weight;              /* sampling weight (> 0) */
  char anthropic_version[32]; /* anthropic-version header */
  int reasoning; /* OpenAI reasoning model (o1/o3/o4/gpt-5 by default):
                    max_completion_tokens, no temperature */
};

/* One recorded call, as the database stores it (llm_calls).  All strings
 * are borrowed for the duration of the callback; none holds a secret. */
struct llm_record {
  const char *provider, *model, *model_name, *purpose;
  const char *outcome;  /* llm_outcome_name() */
  const char *error;    /* one line, "" on success */
  const char *prompt;   /* the request rendered as text (system + messages) */
  const char *response; /* the text returned, "" when none */
  long tokens_in, tokens_out;
  double cost_usd, latency_s;
  void *tag; /* the request's tag */
};

/* The recorder: returns the stored id (> 0) or 0.  Called once per
 * llm_chat()/llm_embed() that sent a request (also failed ones); calls
 * refused before sending (budget, no key) are not recorded. */
typedef long long (*llm_record_fn)(void *ud, const struct llm_record *rec);

struct llm_pool;

/* Build the pool from cfg: [llm] (provider, model, base_url, api_key_env,
 * timeout, connect_timeout, max_retries, retry_base, retry_max,
 * max_response_bytes, max_tokens, price_in, price_out, budget_usd,
 * weight, anthropic_version), [model.NAME] sections with the same keys
 * (unset keys inherit from [llm]), and [embed] (the optional embedding
 * endpoint).  No model configured is not an error: the pool is empty
 * (llm_pool_count() == 0) and the search runs its offline tuner.  A model
 * whose prices are neither configured nor in the default table gets price
 * 0 and a warning.  ERR_CONFIG naming file:line for a bad value.  Returns
 * NULL with *e set on failure. */
struct llm_pool *llm_pool_new(const struct config *cfg, struct err *e);
void llm_pool_free(struct llm_pool *p);

size_t llm_pool_count(const struct llm_pool *p);
/* The i-th model (i < count), or NULL. */
const struct llm_model *llm_pool_model(const struct llm_pool *p, size_t i);
/* The model named name, or NULL. */
const struct llm_model *llm_pool_find(const struct llm_pool *p,
                                      const char *name);
/* Weighted sampling: u must be uniform in [0, 1) from the caller's RNG
 * (so runs are reproducible from the search's seed).  NULL when empty. */
const struct llm_model *llm_pool_pick(const struct llm_pool *p, double u);

/* Recording: fn may be NULL (no recording). */
void llm_pool_set_recorder(struct llm_pool *p, llm_record_fn fn, void *ud);
/* Budget in USD; <= 0 means unlimited.  Overrides [llm] budget_usd. */
void llm_pool_set_budget(struct llm_pool *p, double usd);
double llm_pool_budget(const struct llm_pool *p);
/* Spending so far (a resumed run sets what the database recorded). */
void llm_pool_set_spent(struct llm_pool *p, double usd);
double llm_pool_spent(struct llm_pool *p);

/* Test hook: replace the sleep between retries (seconds); NULL restores
 * nanosleep.  Lets unit tests observe the delays without waiting. */
void llm_pool_set_sleep(struct llm_pool *p, void (*fn)(void *ud, double s),
                        void *ud);

/* Price table lookup: the built-in default prices for a model id (prefix
 * match on known families).  Returns 1 and fills in/out when known. */
int llm_default_price(const char *model, double *in, double *out);

/* Send one chat request to model m (from this pool; NULL = the first).
 * Returns 0 when resp->outcome is LLM_OK; otherwise a negative code with
 * *e holding one line (never the key) and resp->outcome the kind:
 * ERR_BUDGET (budget), ERR_CONFIG (nokey), ERR_TIMEOUT (timeout),
 * ERR_HTTP (transport, http, auth, ratelimit, server), ERR_TOOBIG
 * (toobig), ERR_LLM (malformed, empty, refusal, truncated); also
 * ERR_CONFIG when no model is configured, ERR_INTERNAL for a request
 * without messages, ERR_PARSE when the prompt is not valid UTF-8.  resp is
 * filled as far as known in every case (tokens and cost too, so a
 * truncated answer still counts against the budget); release it with
 * llm_response_release() whatever the result.  Blocks for up to
 * (1 + max_retries) * timeout plus the waits. */
int llm_chat(struct llm_pool *p, const struct llm_model *m,
             const struct llm_request *req, struct llm_response *resp,
             struct err *e) WARN_UNUSED;

/* Embeddings (OpenAI-compatible POST {base_url}/embeddings), optional.
 * True when an [embed] endpoint is configured. */
int llm_embed_available(const struct llm_pool *p);

struct llm_embedding {
  size_t n;    /* number of vectors (= texts) */
  size_t dim;  /* length of each */
  float *data; /* n * dim floats, row-major; malloc'd */
  long tokens_in;
  double cost_usd;
};

/* Embed n texts (1..4096).  Same errors as llm_chat (ERR_NOTFOUND when
 * no [embed] is configured, ERR_USAGE for n out of range); recorded with
 * purpose "embed" and counted against the budget.  Row i of out->data is
 * texts[i]'s vector.  Free with llm_embedding_release(). */
int llm_embed(struct llm_pool *p, const char *const *texts, size_t n,
              struct llm_embedding *out, struct err *e) WARN_UNUSED;
void llm_embedding_release(struct llm_embedding *emb);

/* `cuco doctor --llm`: build the pool from cfg and send one tiny request
 * ("Reply with the word ok.", max 16 tokens, purpose "doctor", budget not
 * applied) to every configured model, one after the other.  Prints one
 * line per model to out (NULL: nothing): name, provider, model, outcome,
 * latency, and the error when it failed.  A truncated answer counts as a
 * pass (the endpoint, model and key work).  When report is non-NULL it
 * gets a new JSON array of {name, provider, model, outcome, latency_s,
 * tokens_in, tokens_out, cost_usd, error}.  Returns the number of models
 * that failed (0 = all answered), or a negative code with *e when the
 * configuration is bad or no model is configured (ERR_CONFIG). */
int llm_check_models(const struct config *cfg, FILE *out,
                     struct json_t **report, struct err *e);

#endif
