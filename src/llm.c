/* llm.c - the provider table, the model pool, one chat call end to end,
 * embeddings, budget and recording.  See llm.h and llm_impl.h. */
#include "llm.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "http.h"
#include "llm_impl.h"
#include "log.h"
#include "redact.h"
#include "utf8.h"

#define LLM_MAX_MODELS 32
#define LLM_PROMPT_MAX (4u * 1024 * 1024)
#define LLM_EXCERPT    160

struct llm_pool {
  struct llm_model models[LLM_MAX_MODELS];
  size_t n;
  struct llm_model embed;
  int has_embed;
  double budget, spent;
  llm_record_fn record;
  void *record_ud;
  void (*sleep_fn)(void *ud, double s);
  void *sleep_ud;
  pthread_mutex_t mu;
};

const struct llm_provider_ops llm_providers[LLM_PROVIDER_COUNT] = {
    [LLM_PROVIDER_OPENAI] = {.name = "openai",
                             .base_url = "https://api.openai.com/v1",
                             .key_env = "OPENAI_API_KEY",
                             .key_env_url = "https://api.openai.com",
                             .chat_path = "/chat/completions",
                             .embed_path = "/embeddings",
                             .auth_prefix = "Authorization: Bearer ",
                             .body = llm_openai_body,
                             .parse = llm_openai_parse},
    [LLM_PROVIDER_ANTHROPIC] = {.name = "anthropic",
                                .base_url = "https://api.anthropic.com/v1",
                                .key_env = "ANTHROPIC_API_KEY",
                                .chat_path = "/messages",
                                .auth_prefix = "x-api-key: ",
                                .version_header = "anthropic-version",
                                .body = llm_anthropic_body,
                                .parse = llm_anthropic_parse},
};

int llm_provider_find(const char *name, enum llm_provider *p)
{
  int i;

  for (i = 0; name && i < LLM_PROVIDER_COUNT; i++)
    if (!strcmp(llm_providers[i].name, name)) {
      *p = (enum llm_provider)i;
      return 0;
    }
  return -1;
}

static const char *const outcome_names[LLM_OUTCOME_COUNT] = {
    "ok",        "transport", "timeout",   "http",  "auth",
    "ratelimit", "server",    "malformed", "empty", "refusal",
    "truncated", "toobig",    "budget",    "nokey"};

const char *llm_outcome_name(enum llm_outcome o)
{
  return (unsigned)o < LLM_OUTCOME_COUNT ? outcome_names[o] : "unknown";
}

void llm_response_release(struct llm_response *r)
{
  if (!r)
    return;
  free(r->text);
  r->text = NULL;
}

void llm_embedding_release(struct llm_embedding *emb)
{
  if (!emb)
    return;
  free(emb->data);
  emb->data = NULL;
  emb->n = emb->dim = 0;
}

struct llm_pool *llm_pool_new(const struct config *cfg, struct err *e)
{
  struct llm_pool *p = calloc(1, sizeof(*p));
  const char *secs[LLM_MAX_MODELS + 1];
  size_t ns, i;

  if (!p) {
    err_set(e, ERR_NOMEM, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&p->mu, NULL);
  if (config_find(cfg, "llm", "model") &&
      *config_get(cfg, "llm", "model", "")) {
    if (llm_model_from_config(cfg, "llm", "default", 0, &p->models[0], e))
      goto fail;
    p->n = 1;
  }
  ns = config_sections(cfg, "model.", secs, LLM_MAX_MODELS + 1);
  for (i = 0; i < ns; i++) {
    const char *name = secs[i] + 6;
    if (p->n == LLM_MAX_MODELS) {
      err_set(e, ERR_CONFIG, "[%s]: at most %d models may be configured",
              secs[i], LLM_MAX_MODELS);
      goto fail;
    }
    if (!*name || strlen(name) >= sizeof(p->models[0].name) ||
        !strcmp(name, "default")) {
      err_set(e, ERR_CONFIG,
              "[%.80s]: model section name must be 1-63 "
              "characters and not 'default'",
              secs[i]);
      goto fail;
    }
    if (llm_model_from_config(cfg, secs[i], name, 0, &p->models[p->n], e))
      goto fail;
    p->n++;
  }
  if (config_find(cfg, "embed", "model")) {
    if (llm_model_from_config(cfg, "embed", "embed", 1, &p->embed, e))
      goto fail;
    p->has_embed = 1;
  }
  if (config_get_double(cfg, "llm", "budget_usd", 0, 0, 1e9, &p->budget, e))
    goto fail;
  return p;
fail:
  llm_pool_free(p);
  return NULL;
}

void llm_pool_free(struct llm_pool *p)
{
  if (!p)
    return;
  pthread_mutex_destroy(&p->mu);
  free(p);
}

size_t llm_pool_count(const struct llm_pool *p)
{
  return p ? p->n : 0;
}

const struct llm_model *llm_pool_model(const struct llm_pool *p, size_t i)
{
  return p && i < p->n ? &p->models[i] : NULL;
}

const struct llm_model *llm_pool_find(const struct llm_pool *p,
                                      const char *name)
{
  size_t i;

  for (i = 0; p && i < p->n; i++)
    if (!strcmp(p->models[i].name, name))
      return &p->models[i];
  return NULL;
}

const struct llm_model *llm_pool_pick(const struct llm_pool *p, double u)
{
  double total = 0, acc = 0;
  size_t i, last = 0;

  for (i = 0; p && i < p->n; i++)
    total += p->models[i].weight;
  if (!p || total <= 0)
    return NULL;
  if (u < 0)
    u = 0;
  for (i = 0; i < p->n; i++) {
    if (p->models[i].weight <= 0)
      continue;
    acc += p->models[i].weight;
    last = i;
    if (u * total < acc)
      return &p->models[i];
  }
  return &p->models[last]; /* u >= 1 or rounding at the top end */
}

void llm_pool_set_recorder(struct llm_pool *p, llm_record_fn fn, void *ud)
{
  p->record = fn;
  p->record_ud = ud;
}

void llm_pool_set_budget(struct llm_pool *p, double usd)
{
  p->budget = usd > 0 ? usd : 0;
}

double llm_pool_budget(const struct llm_pool *p)
{
  return p->budget;
}

void llm_pool_set_spent(struct llm_pool *p, double usd)
{
  pthread_mutex_lock(&p->mu);
  p->spent = usd;
  pthread_mutex_unlock(&p->mu);
}

double llm_pool_spent(struct llm_pool *p)
{
  double s;

  pthread_mutex_lock(&p->mu);
  s = p->spent;
  pthread_mutex_unlock(&p->mu);
  return s;
}

void llm_pool_set_sleep(struct llm_pool *p, void (*fn)(void *ud, double s),
                        void *ud)
{
  p->sleep_fn = fn;
  p->sleep_ud = ud;
}

int llm_embed_available(const struct llm_pool *p)
{
  return p && p->has_embed;
}

/* Overwrite every occurrence of key in s with '*' (same length, in place):
 * a server that echoes the key must not carry it into errors or records. */
static void redact(char *s, const char *key)
{
  size_t kl = key ? strlen(key) : 0;
  char *hit;

  if (!s || kl < 4)
    return;
  while ((hit = strstr(s, key)))
    memset(hit, '*', kl);
}

/* Clear a header that held the key before freeing it. */
static void wipe(char *s)
{
  volatile char *v = s;

  while (v && *v)
    *v++ = '\0';
}

/* One line of at most n bytes of body: control characters and runs of
 * blanks become one space (pretty-printed JSON stays readable). */
static void excerpt(const char *body, size_t len, char *out, size_t n)
{
  size_t i, j = 0;

  for (i = 0; i < len && j + 1 < n; i++) {
    char ch = (unsigned char)body[i] < 0x20 ? ' ' : body[i];
    if (ch == ' ' && (j == 0 || out[j - 1] == ' '))
      continue;
    out[j++] = ch;
  }
  out[j] = '\0';
}

/* The request as text for the database: "[system]\n...\n[user]\n...". */
static char *render_prompt(const struct llm_request *r)
{
  struct buf b = BUF_INIT(LLM_PROMPT_MAX);
  size_t i;

  if (r->system && *r->system)
    buf_printf(&b, "[system]\n%s\n", r->system);
  for (i = 0; i < r->n_messages; i++)
    buf_printf(&b, "[%s]\n%s\n",
               r->messages[i].role == LLM_ROLE_ASSISTANT ? "assistant"
                                                         : "user",
               r->messages[i].content ? r->messages[i].content : "");
  return buf_detach(&b, NULL);
}

/* Budget gate; 0 or ERR_BUDGET. */
static int check_budget(struct llm_pool *p, struct err *e)
{
  int rc = 0;

  pthread_mutex_lock(&p->mu);
  if (p->budget > 0 && p->spent >= p->budget)
    rc = err_set(e, ERR_BUDGET,
                 "LLM budget spent: $%.4f of $%.4f; no new calls", p->spent,
                 p->budget);
  pthread_mutex_unlock(&p->mu);
  return rc;
}

/* Read the key from the environment: 0, or ERR_CONFIG (naming only the
 * variable).  *key is NULL for a model without api_key_env. */
static int get_key(const struct llm_model *m, const char **key, struct err *e)
{
  const char *p;

  *key = NULL;
  if (!m->api_key_env[0])
    return 0;
  *key = redact_getenv(m->api_key_env); /* main scrubbed the env */
  if (!*key || !**key)
    return err_set(e, ERR_CONFIG,
                   "llm %s (%s): environment variable %s (api_key_env) is "
                   "not set or empty",
                   m->name, m->model, m->api_key_env);
  /* A line break in the key would end the header and start another. */
  for (p = *key; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return err_set(e, ERR_CONFIG,
                     "llm %s: environment variable %s holds a control "
                     "character (a line break?)",
                     m->name, m->api_key_env);
  return 0;
}

/* Send body to m's path with the auth headers.  Fills *h. */
static int post(struct llm_pool *p, const struct llm_model *m,
                const char *path, const char *key, const char *body,
                struct http_result *h, struct err *e)
{
  const struct llm_provider_ops *ops = &llm_providers[m->provider];
  char url[600], ver[64];
  char *auth = NULL;
  const char *hdrs[2];
  size_t nh = 0, alen;
  struct http_opts o;
  int rc;

  memset(h, 0, sizeof(*h)); /* releasable even when we fail early */
  snprintf(url, sizeof(url), "%s%s", m->base_url, path);
  if (key) {
    alen = strlen(ops->auth_prefix) + strlen(key) + 1;
    auth = malloc(alen);
    if (!auth)
      return err_set(e, ERR_NOMEM, "out of memory");
    snprintf(auth, alen, "%s%s", ops->auth_prefix, key);
    hdrs[nh++] = auth;
  }
  if (ops->version_header) {
    snprintf(ver, sizeof(ver), "%s: %s", ops->version_header,
             m->anthropic_version);
    hdrs[nh++] = ver;
  }
  memset(&o, 0, sizeof(o));
  o.url = url;
  o.headers = hdrs;
  o.n_headers = nh;
  o.body = body;
  o.body_len = strlen(body);
  o.connect_timeout_s = m->connect_timeout_s;
  o.timeout_s = m->timeout_s;
  o.max_retries = m->max_retries;
  o.retry_base_s = m->retry_base_s;
  o.retry_max_s = m->retry_max_s;
  o.max_body = m->max_response;
  o.sleep_fn = p->sleep_fn;
  o.sleep_ud = p->sleep_ud;
  rc = http_post_json(&o, h, e);
  wipe(auth);
  free(auth);
  return rc;
}

/* Map a finished HTTP exchange that is not a 2xx (or a transport failure)
 * to an outcome and error.  Returns the error code. */
static int classify_http(const struct llm_model *m, int rc,
                         const struct http_result *h,
                         struct llm_response *resp, struct err *e)
{
  char ex[LLM_EXCERPT + 1];
  const char *who = m->name;

  if (rc == ERR_TIMEOUT) {
    resp->outcome = LLM_TIMEOUT;
    return err_wrap(e, "llm %s", who);
  }
  if (rc == ERR_TOOBIG) {
    resp->outcome = LLM_TOOBIG;
    return err_wrap(e, "llm %s", who);
  }
  if (rc) {
    resp->outcome = LLM_TRANSPORT;
    return err_wrap(e, "llm %s", who);
  }
  excerpt(buf_str(&h->body), h->body.len, ex, sizeof(ex));
  if (h->status == 401 || h->status == 403) {
    resp->outcome = LLM_AUTH;
    return err_set(
        e, ERR_HTTP, "llm %s: HTTP %ld from %s: key refused (check $%s): %s",
        who, h->status, m->base_url,
        m->api_key_env[0] ? m->api_key_env : "(no api_key_env)", ex);
  }
  if (h->status == 429) {
    resp->outcome = LLM_RATELIMIT;
    return err_set(e, ERR_HTTP,
                   "llm %s: still rate limited (HTTP 429) after %d attempts: "
                   "%s",
                   who, h->attempts, ex);
  }
  if (h->status >= 500) {
    resp->outcome = LLM_SERVER;
    return err_set(e, ERR_HTTP,
                   "llm %s: server error HTTP %ld after %d attempts: %s", who,
                   h->status, h->attempts, ex);
  }
  resp->outcome = LLM_HTTP;
  return err_set(e, ERR_HTTP, "llm %s: HTTP %ld from %s: %s", who, h->status,
                 m->base_url, ex);
}

/* Account and record a call that was sent. */
static void finish_call(struct llm_pool *p, const struct llm_model *m,
                        const char *purpose, const char *prompt,
                        const char *key, struct llm_response *resp,
                        struct err *e, void *tag)
{
  struct llm_record rec;

  resp->cost_usd = (double)resp->tokens_in * m->price_in / 1e6 +
                   (double)resp->tokens_out * m->price_out / 1e6;
  if (e && resp->outcome != LLM_OK)
    redact(e->msg, key);
  if (resp->text)
    redact(resp->text, key);
  pthread_mutex_lock(&p->mu);
  p->spent += resp->cost_usd;
  if (p->record) {
    memset(&rec, 0, sizeof(rec));
    rec.provider = resp->provider;
    rec.model = m->model;
    rec.model_name = m->name;
    rec.purpose = purpose ? purpose : "";
    rec.outcome = llm_outcome_name(resp->outcome);
    rec.error = resp->outcome == LLM_OK || !e ? "" : e->msg;
    rec.prompt = prompt ? prompt : "";
    rec.response = resp->text ? resp->text : "";
    rec.tokens_in = resp->tokens_in;
    rec.tokens_out = resp->tokens_out;
    rec.cost_usd = resp->cost_usd;
    rec.latency_s = resp->latency_s;
    rec.tag = tag;
    resp->call_id = p->record(p->record_ud, &rec);
  }
  pthread_mutex_unlock(&p->mu);
}

static int chat_valid(struct llm_pool *p, const struct llm_model *m,
                      const struct llm_request *req, struct llm_response *resp,
                      struct err *e)
{
  const struct llm_provider_ops *ops;
  struct http_result h;
  const char *key;
  char *body = NULL, *prompt = NULL, why[256];
  int rc, max_tokens, hrc;

  memset(resp, 0, sizeof(*resp));
  if (!m)
    m = llm_pool_model(p, 0);
  if (!m)
    return err_set(e, ERR_CONFIG,
                   "no LLM model is configured ([llm] model "
                   "or [model.NAME])");
  ops = &llm_providers[m->provider];
  snprintf(resp->provider, sizeof(resp->provider), "%s", ops->name);
  resp->model_name = m->name;
  if (!req || req->n_messages == 0 || !req->messages) {
    resp->outcome = LLM_HTTP;
    return err_set(e, ERR_INTERNAL, "llm %s: request without messages",
                   m->name);
  }
  if ((rc = check_budget(p, e))) {
    resp->outcome = LLM_BUDGET;
    return rc;
  }
  if ((rc = get_key(m, &key, e))) {
    resp->outcome = LLM_NOKEY;
    return rc;
  }
  max_tokens = req->max_tokens > 0 ? req->max_tokens : m->max_tokens;
  body = ops->body(m, req, max_tokens);
  prompt = render_prompt(req);
  if (!body || !prompt) {
    resp->outcome = LLM_HTTP;
    rc = err_set(e, ERR_PARSE,
                 "llm %s: cannot encode the request (invalid UTF-8 in the "
                 "prompt, or out of memory)",
                 m->name);
    goto out;
  }
  hrc = post(p, m, ops->chat_path, key, body, &h, e);
  resp->latency_s = h.elapsed_s;
  resp->http_status = (int)h.status;
  resp->attempts = h.attempts;
  if (hrc || h.status < 200 || h.status > 299) {
    rc = classify_http(m, hrc, &h, resp, e);
  } else {
    resp->outcome =
        ops->parse(buf_str(&h.body), h.body.len, resp, why, sizeof(why));
    rc = resp->outcome == LLM_OK
             ? 0
             : err_set(e, ERR_LLM, "llm %s (%s): %s", m->name, m->model, why);
  }
  http_result_release(&h);
  finish_call(p, m, req->purpose, prompt, key, resp, e, req->tag);
  if (rc)
    log_debug("llm: %s", e ? e->msg : llm_outcome_name(resp->outcome));
out:
  free(body);
  free(prompt);
  return rc;
}

/* A copy of s with invalid UTF-8 replaced by '?' (NULL: out of memory). */
static char *clean_copy(const char *s)
{
  size_t n = strlen(s);
  char *c = malloc(n + 1);

  if (c) {
    memcpy(c, s, n + 1);
    utf8_sanitize(c, n);
  }
  return c;
}

/* A compiler message cut in a character, or one stray byte in a seed, must
 * not make every later request unencodable: the text is cleaned first. */
int llm_chat(struct llm_pool *p, const struct llm_model *m,
             const struct llm_request *req, struct llm_response *resp,
             struct err *e)
{
  struct llm_request r2;
  struct llm_message *msgs;
  char *sys = NULL;
  size_t i;
  int rc, dirty = req && req->system &&
                  !utf8_valid(req->system, strlen(req->system));

  for (i = 0; req && req->messages && i < req->n_messages; i++)
    if (req->messages[i].content &&
        !utf8_valid(req->messages[i].content,
                    strlen(req->messages[i].content)))
      dirty = 1;
  if (!dirty)
    return chat_valid(p, m, req, resp, e);
  r2 = *req;
  msgs = calloc(req->n_messages, sizeof(*msgs));
  if (!msgs)
    return err_set(e, ERR_NOMEM, "out of memory");
  rc = 0;
  if (req->system && !(sys = clean_copy(req->system)))
    rc = ERR_NOMEM;
  for (i = 0; !rc && i < req->n_messages; i++) {
    msgs[i].role = req->messages[i].role;
    if (req->messages[i].content &&
        !(msgs[i].content = clean_copy(req->messages[i].content)))
      rc = ERR_NOMEM;
  }
  if (rc) {
    rc = err_set(e, ERR_NOMEM, "out of memory");
  } else {
    log_debug("llm: invalid UTF-8 in the prompt replaced by '?'");
    r2.system = sys;
    r2.messages = msgs;
    rc = chat_valid(p, m, &r2, resp, e);
  }
  for (i = 0; i < req->n_messages; i++)
    free((char *)msgs[i].content);
  free(msgs);
  free(sys);
  return rc;
}

/* Parse an embeddings answer into out. */
static int parse_embed(const char *body, size_t len, size_t n,
                       struct llm_embedding *out, char *why, size_t wl)
{
  json_error_t je;
  json_t *root = json_loadb(body, len, 0, &je), *data, *item, *vec, *x;
  size_t i, j, dim = 0;
  int rc = LLM_MALFORMED;
  char *seen = NULL;

  if (!json_is_object(root)) {
    snprintf(why, wl, "embeddings response is not a JSON object");
    goto out;
  }
  x = json_object_get(json_object_get(root, "usage"), "prompt_tokens");
  if (json_is_integer(x))
    out->tokens_in = (long)json_integer_value(x);
  data = json_object_get(root, "data");
  if (!json_is_array(data) || json_array_size(data) != n) {
    snprintf(why, wl, "embeddings response has %zu vectors for %zu texts",
             json_is_array(data) ? json_array_size(data) : 0, n);
    rc = json_is_array(data) && !json_array_size(data) ? LLM_EMPTY
                                                       : LLM_MALFORMED;
    goto out;
  }
  dim = json_array_size(json_object_get(json_array_get(data, 0), "embedding"));
  if (!dim || dim > 65536) {
    snprintf(why, wl, "embedding dimension %zu is out of range", dim);
    goto out;
  }
  out->data = calloc(n * dim, sizeof(float));
  seen = calloc(n, 1);
  if (!out->data || !seen) {
    snprintf(why, wl, "out of memory");
    goto out;
  }
  json_array_foreach(data, i, item)
  {
    json_t *ix = json_object_get(item, "index");
    size_t row = json_is_integer(ix) ? (size_t)json_integer_value(ix) : i;
    vec = json_object_get(item, "embedding");
    if (row >= n || seen[row] || json_array_size(vec) != dim) {
      snprintf(why, wl, "embedding %zu has a bad index or dimension", i);
      goto out;
    }
    seen[row] = 1;
    json_array_foreach(vec, j, x)
    {
      if (!json_is_number(x)) {
        snprintf(why, wl, "embedding %zu holds a non-number", i);
        goto out;
      }
      out->data[row * dim + j] = (float)json_number_value(x);
    }
  }
  out->n = n;
  out->dim = dim;
  rc = LLM_OK;
out:
  free(seen);
  json_decref(root);
  return rc;
}

int llm_embed(struct llm_pool *p, const char *const *texts, size_t n,
              struct llm_embedding *out, struct err *e)
{
  const struct llm_model *m = &p->embed;
  struct llm_response resp;
  struct http_result h;
  json_t *root, *in;
  const char *key;
  char *body = NULL, why[256];
  size_t i;
  int rc, hrc;

  memset(out, 0, sizeof(*out));
  memset(&resp, 0, sizeof(resp));
  if (!p->has_embed)
    return err_set(e, ERR_NOTFOUND, "no embedding endpoint ([embed] model)");
  if (n == 0 || n > 4096)
    return err_set(e, ERR_USAGE, "llm embed: %zu texts (1 to 4096 allowed)",
                   n);
  if ((rc = check_budget(p, e)) || (rc = get_key(m, &key, e)))
    return rc;
  snprintf(resp.provider, sizeof(resp.provider), "%s",
           llm_providers[m->provider].name);
  root = json_object();
  in = json_array();
  for (i = 0; i < n; i++)
    json_array_append_new(in, json_string(texts[i]));
  json_object_set_new(root, "model", json_string(m->model));
  json_object_set_new(root, "input", in);
  if (json_array_size(in) == n)
    body = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (!body)
    return err_set(e, ERR_PARSE, "llm embed: cannot encode %zu texts", n);
  hrc = post(p, m, llm_providers[m->provider].embed_path, key, body, &h, e);
  free(body);
  resp.latency_s = h.elapsed_s;
  resp.http_status = (int)h.status;
  resp.attempts = h.attempts;
  if (hrc || h.status < 200 || h.status > 299) {
    rc = classify_http(m, hrc, &h, &resp, e);
  } else {
    resp.outcome =
        parse_embed(buf_str(&h.body), h.body.len, n, out, why, sizeof(why));
    resp.tokens_in = out->tokens_in;
    rc = resp.outcome == LLM_OK
             ? 0
             : err_set(e, ERR_LLM, "llm embed (%s): %s", m->model, why);
  }
  http_result_release(&h);
  finish_call(p, m, "embed", "", key, &resp, e, NULL);
  out->cost_usd = resp.cost_usd;
  if (rc)
    llm_embedding_release(out);
  return rc;
}

void llm_read_usage_model(json_t *root, const char *in_key,
                          const char *out_key, struct llm_response *resp)
{
  json_t *usage = json_object_get(root, "usage");
  json_t *model = json_object_get(root, "model");

  if (json_is_object(usage)) {
    json_t *it = json_object_get(usage, in_key);
    json_t *ot = json_object_get(usage, out_key);
    if (json_is_integer(it) && json_integer_value(it) >= 0)
      resp->tokens_in = (long)json_integer_value(it);
    if (json_is_integer(ot) && json_integer_value(ot) >= 0)
      resp->tokens_out = (long)json_integer_value(ot);
  }
  if (json_is_string(model))
    snprintf(resp->model, sizeof(resp->model), "%s", json_string_value(model));
}

void llm_json_messages(json_t *msgs, const struct llm_request *r)
{
  size_t i;

  for (i = 0; i < r->n_messages; i++)
    json_array_append_new(
        msgs, json_pack("{s:s, s:s}", "role",
                        r->messages[i].role == LLM_ROLE_ASSISTANT ? "assistant"
                                                                  : "user",
                        "content", r->messages[i].content));
}

void llm_json_stop(json_t *root, const char *key, const struct llm_request *r)
{
  json_t *stop;
  size_t i;

  if (!r->n_stop)
    return;
  stop = json_array();
  for (i = 0; i < r->n_stop; i++)
    json_array_append_new(stop, json_string(r->stop[i]));
  json_object_set_new(root, key, stop);
}

char *llm_json_dump(const json_t *root)
{
  return json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER |
                              JSON_REAL_PRECISION(10));
}

json_t *llm_json_object(const char *body, size_t len, char *why, size_t whylen)
{
  json_error_t je;
  json_t *root = json_loadb(body, len, 0, &je);

  why[0] = '\0';
  if (json_is_object(root))
    return root;
  snprintf(why, whylen, "response is not a JSON object (%s)",
           root ? "other JSON value" : je.text);
  json_decref(root);
  return NULL;
}

/* part's "text" string when part is to be joined, else NULL. */
static json_t *join_part(json_t *part, const char *type)
{
  json_t *t = json_object_get(part, "text");
  const char *ty = json_string_value(json_object_get(part, "type"));

  return json_is_string(t) && (!type || (ty && !strcmp(ty, type))) ? t : NULL;
}

char *llm_json_join_text(json_t *arr, const char *type)
{
  size_t i, n = 0;
  json_t *part, *t;
  char *s, *p;

  json_array_foreach(arr, i, part)
  {
    if ((t = join_part(part, type)))
      n += json_string_length(t);
  }
  s = p = malloc(n + 1);
  if (!s)
    return NULL;
  json_array_foreach(arr, i, part)
  {
    if ((t = join_part(part, type))) {
      memcpy(p, json_string_value(t), json_string_length(t));
      p += json_string_length(t);
    }
  }
  *p = '\0';
  return s;
}
