/* llm_config.c - the model pool built from configuration, and the default
 * price table.  See llm.h for the keys. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "llm_impl.h"
#include "log.h"

/* Default prices in USD per million tokens (input, output), from the
 * providers' public price lists (late 2025).  They are DEFAULTS only:
 * prices change, so price_in/price_out in the config always win.  The
 * longest matching prefix of the model id is used. */
static const struct {
  const char *prefix;
  double in, out;
} price_table[] = {
    {"gpt-4o-mini", 0.15, 0.60},
    {"gpt-4o", 2.50, 10.00},
    {"gpt-4.1-nano", 0.10, 0.40},
    {"gpt-4.1-mini", 0.40, 1.60},
    {"gpt-4.1", 2.00, 8.00},
    {"gpt-5-nano", 0.05, 0.40},
    {"gpt-5-mini", 0.25, 2.00},
    {"gpt-5", 1.25, 10.00},
    {"o3-mini", 1.10, 4.40},
    {"o3", 2.00, 8.00},
    {"o4-mini", 1.10, 4.40},
    {"claude-opus-4-5", 5.00, 25.00},
    {"claude-opus-4", 15.00, 75.00},
    {"claude-sonnet-4", 3.00, 15.00},
    {"claude-haiku-4", 1.00, 5.00},
    {"text-embedding-3-small", 0.02, 0.0},
    {"text-embedding-3-large", 0.13, 0.0},
};

int llm_default_price(const char *model, double *in, double *out)
{
  size_t i, best = 0, bestlen = 0;

  for (i = 0; model && i < sizeof(price_table) / sizeof(price_table[0]); i++) {
    size_t l = strlen(price_table[i].prefix);
    if (!strncmp(model, price_table[i].prefix, l) && l > bestlen) {
      best = i;
      bestlen = l;
    }
  }
  if (!bestlen)
    return 0;
  *in = price_table[best].in;
  *out = price_table[best].out;
  return 1;
}

static int is_reasoning_model(const char *id)
{
  return !strncmp(id, "o1", 2) || !strncmp(id, "o3", 2) ||
         !strncmp(id, "o4", 2) || !strncmp(id, "gpt-5", 5);
}

/* Read key from section, else (when inherit) from [llm]. */
static const struct config_entry *
lookup(const struct config *c, const char *sec, const char *key, int inherit)
{
  const struct config_entry *v = config_find(c, sec, key);

  if (!v && inherit && strcmp(sec, "llm"))
    v = config_find(c, "llm", key);
  return v;
}

static int get_dbl(const struct config *c, const char *sec, const char *key,
                   int inherit, double def, double lo, double hi, double *out,
                   struct err *e)
{
  const struct config_entry *v = lookup(c, sec, key, inherit);

  return config_get_double(c, v ? v->section : sec, key, def, lo, hi, out, e);
}

static int copy_str(char *dst, size_t n, const struct config_entry *v,
                    const char *what, struct err *e)
{
  size_t i, l = strlen(v->value);

  if (l >= n)
    return err_set(e, ERR_CONFIG,
                   "%s: %s is too long (%zu bytes, at most %zu)", v->origin,
                   what, l, n - 1);
  for (i = 0; i < l; i++)
    if (iscntrl((unsigned char)v->value[i]))
      return err_set(e, ERR_CONFIG, "%s: %s holds a control character",
                     v->origin, what);
  memcpy(dst, v->value, l + 1);
  return 0;
}

/* An environment variable NAME, never a key: a value that is not a
 * valid name is refused without echoing it (it may be a pasted key). */
static int check_env_name(const struct config_entry *v, struct err *e)
{
  const char *s = v->value;
  size_t i;

  for (i = 0; s[i]; i++)
    if (!(isalpha((unsigned char)s[i]) || s[i] == '_' ||
          (i && isdigit((unsigned char)s[i]))))
      break;
  if (s[i] || i > 100 || !strncmp(s, "sk-", 3))
    return err_set(e, ERR_CONFIG,
                   "%s: api_key_env must be the NAME of an environment "
                   "variable (like OPENAI_API_KEY), not the key itself",
                   v->origin);
  return 0;
}

/* "openai, anthropic": the names of the provider table, for an error. */
static void provider_names(char *out, size_t n)
{
  size_t i, l = 0;

  out[0] = '\0';
  for (i = 0; i < LLM_PROVIDER_COUNT && l < n; i++)
    l += (size_t)snprintf(out + l, n - l, "%s%s", i ? ", " : "",
                          llm_providers[i].name);
}

/* Fill m from section sec (with [llm] as fallback for shared keys). */
int llm_model_from_config(const struct config *c, const char *sec,
                          const char *name, int embed, struct llm_model *m,
                          struct err *e)
{
  const struct config_entry *v, *llm_prov = config_find(c, "llm", "provider");
  const struct llm_provider_ops *ops;
  enum llm_provider llm_p = LLM_PROVIDER_OPENAI;
  char names[128];
  int same_provider, rc;
  double d;
  long l;

  memset(m, 0, sizeof(*m));
  snprintf(m->name, sizeof(m->name), "%s", name);
  v = lookup(c, sec, "provider", !embed);
  m->provider = LLM_PROVIDER_OPENAI;
  if (v && llm_provider_find(v->value, &m->provider)) {
    provider_names(names, sizeof(names));
    return err_set(e, ERR_CONFIG, "%s: provider '%.40s' is not one of %s",
                   v->origin, v->value, names);
  }
  ops = &llm_providers[m->provider];
  if (embed && !ops->embed_path)
    return err_set(e, ERR_CONFIG,
                   "%s: embeddings need an OpenAI-compatible endpoint",
                   v->origin);
  /* base_url and the key belong to a provider: inherit them from [llm]
   * only for the same provider ([llm]'s unknown provider: the default,
   * refused where [llm] itself is read). */
  if (llm_prov)
    (void)llm_provider_find(llm_prov->value, &llm_p);
  same_provider = m->provider == llm_p;
  v = config_find(c, sec, "model");
  if (!v || !*v->value)
    return err_set(e, ERR_CONFIG, "[%s]: 'model' is not set", sec);
  if ((rc = copy_str(m->model, sizeof(m->model), v, "model", e)))
    return rc;
  v = lookup(c, sec, "base_url", same_provider);
  if (v) {
    if ((rc = copy_str(m->base_url, sizeof(m->base_url), v, "base_url", e)))
      return rc;
    if (strncmp(m->base_url, "http://", 7) &&
        strncmp(m->base_url, "https://", 8))
      return err_set(e, ERR_CONFIG,
                     "%s: base_url must start with http:// or https://",
                     v->origin);
  } else {
    snprintf(m->base_url, sizeof(m->base_url), "%s", ops->base_url);
  }
  while (strlen(m->base_url) > 8 &&
         m->base_url[strlen(m->base_url) - 1] == '/')
    m->base_url[strlen(m->base_url) - 1] = '\0';
  v = lookup(c, sec, "api_key_env", same_provider);
  if (v && *v->value) {
    if ((rc = check_env_name(v, e)))
      return rc;
    snprintf(m->api_key_env, sizeof(m->api_key_env), "%s", v->value);
  } else if (!v && ops->key_env &&
             (!ops->key_env_url || !strncmp(m->base_url, ops->key_env_url,
                                            strlen(ops->key_env_url)))) {
    snprintf(m->api_key_env, sizeof(m->api_key_env), "%s", ops->key_env);
  } /* else: a local server without a key */
  if ((rc = get_dbl(c, sec, "timeout", 1, 300, 0.05, 86400, &m->timeout_s,
                    e)) ||
      (rc = get_dbl(c, sec, "connect_timeout", 1, 10, 0.05, 3600,
                    &m->connect_timeout_s, e)) ||
      (rc =
           get_dbl(c, sec, "retry_base", 1, 1, 0, 600, &m->retry_base_s, e)) ||
      (rc = get_dbl(c, sec, "retry_max", 1, 60, 0, 3600, &m->retry_max_s, e)))
    return rc;
  v = lookup(c, sec, "max_retries", 1);
  if ((rc = config_get_long(c, v ? v->section : sec, "max_retries", 4, 0, 20,
                            &l, e)))
    return rc;
  m->max_retries = (int)l;
  v = lookup(c, sec, "max_tokens", 1);
  if ((rc = config_get_long(c, v ? v->section : sec, "max_tokens", 8192, 1,
                            1000000, &l, e)))
    return rc;
  m->max_tokens = (int)l;
  m->max_response = 8u * 1024 * 1024;
  v = lookup(c, sec, "max_response_bytes", 1);
  if (v) {
    unsigned long long b;
    if (config_parse_bytes(v->value, &b) || b < 64 || b > (1ull << 31))
      return err_set(e, ERR_CONFIG,
                     "%s: max_response_bytes '%.40s' is not a size between "
                     "64 and 2GiB",
                     v->origin, v->value);
    m->max_response = (size_t)b;
  }
  v = lookup(c, sec, "anthropic_version", 1);
  snprintf(m->anthropic_version, sizeof(m->anthropic_version), "%s",
           v ? v->value : "2023-06-01");
  m->reasoning = is_reasoning_model(m->model);
  if ((rc = config_get_bool(c, sec, "reasoning", m->reasoning, &m->reasoning,
                            e)))
    return rc;
  /* Prices: configured, else the table, else 0 with a warning. */
  if (!llm_default_price(m->model, &m->price_in, &m->price_out)) {
    m->price_in = m->price_out = 0;
  } else {
    m->price_from_table = 1;
  }
  if (config_find(c, sec, "price_in") || config_find(c, sec, "price_out"))
    m->price_from_table = 0;
  if ((rc = config_get_double(c, sec, "price_in", m->price_in, 0, 1e6,
                              &m->price_in, e)) ||
      (rc = config_get_double(c, sec, "price_out", m->price_out, 0, 1e6,
                              &m->price_out, e)))
    return rc;
  if (!m->price_from_table && !config_find(c, sec, "price_in") &&
      !config_find(c, sec, "price_out"))
    log_warn("llm: no price known for model '%s' ([%s]): its calls count as "
             "$0 (set price_in and price_out)",
             m->model, sec);
  if ((rc = config_get_double(c, sec, "weight", 1, 0, 1e9, &d, e)))
    return rc;
  m->weight = d;
  return 0;
}
