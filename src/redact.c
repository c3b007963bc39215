/* redact.c - secret values: scrubbed from our environment, replaced in
 * text; see redact.h. */
#define _GNU_SOURCE
#include "redact.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "config.h"

#define REDACT_MAX 64

extern char **environ;

struct secret {
  char *name; /* the variable it came from; NULL for redact_add() */
  char *value;
  size_t len;
};

static struct secret secrets[REDACT_MAX];
static size_t nsecrets;

size_t redact_count(void)
{
  return nsecrets;
}

void redact_reset(void)
{
  size_t i;

  for (i = 0; i < nsecrets; i++) {
    explicit_bzero(secrets[i].value, secrets[i].len);
    free(secrets[i].value);
    free(secrets[i].name);
  }
  memset(secrets, 0, sizeof(secrets));
  nsecrets = 0;
}

static int add(const char *name, const char *value)
{
  size_t i, l = value ? strlen(value) : 0;

  if (l < REDACT_MIN_LEN)
    return 0;
  for (i = 0; i < nsecrets; i++)
    if (secrets[i].len == l && !memcmp(secrets[i].value, value, l)) {
      if (name && !secrets[i].name && !(secrets[i].name = strdup(name)))
        return ERR_NOMEM;
      return 0;
    }
  if (nsecrets == REDACT_MAX)
    return ERR_TOOBIG;
  secrets[nsecrets].value = strdup(value);
  secrets[nsecrets].name = name ? strdup(name) : NULL;
  if (!secrets[nsecrets].value || (name && !secrets[nsecrets].name)) {
    free(secrets[nsecrets].value);
    free(secrets[nsecrets].name);
    return ERR_NOMEM;
  }
  secrets[nsecrets++].len = l;
  return 0;
}

int redact_add(const char *value)
{
  return add(NULL, value);
}

const char *redact_getenv(const char *name)
{
  size_t i;

  for (i = 0; name && i < nsecrets; i++)
    if (secrets[i].name && !strcmp(secrets[i].name, name))
      return secrets[i].value;
  return name ? getenv(name) : NULL;
}

/* A name that holds a secret by convention: *KEY, *TOKEN*, *SECRET*,
 * *PASSWORD*, *PASSWD*, *CREDENTIAL* (any case). */
static int secret_name(const char *kv, size_t klen)
{
  static const char *const inside[] = {"TOKEN",  "SECRET",     "PASSWORD",
                                       "PASSWD", "CREDENTIAL", NULL};
  char up[128];
  size_t i, l = klen < sizeof(up) - 1 ? klen : sizeof(up) - 1;

  for (i = 0; i < l; i++)
    up[i] = (char)toupper((unsigned char)kv[i]);
  up[l] = '\0';
  if (l >= 3 && up[l - 3] == 'K' && up[l - 2] == 'E' && up[l - 1] == 'Y')
    return 1;
  for (i = 0; inside[i]; i++)
    if (strstr(up, inside[i]))
      return 1;
  return 0;
}

/* Named by api_key_env somewhere in the config. */
static int configured_name(const struct config *cfg, const char *kv,
                           size_t klen)
{
  size_t i, n = cfg ? config_count(cfg) : 0;

  for (i = 0; i < n; i++) {
    const struct config_entry *c = config_at(cfg, i);
    if (!strcmp(c->key, "api_key_env") && strlen(c->value) == klen &&
        !strncmp(c->value, kv, klen))
      return 1;
  }
  return 0;
}

int redact_init(const struct config *cfg, struct err *e)
{
  char *names[REDACT_MAX];
  size_t i, n = 0;
  int rc = 0;

  for (i = 0; environ && environ[i] && n < REDACT_MAX; i++) {
    char *kv = environ[i], *val;
    size_t klen = strcspn(kv, "=");
    if (!kv[klen] ||
        !(secret_name(kv, klen) || configured_name(cfg, kv, klen)))
      continue;
    val = kv + klen + 1;
    if (!(names[n] = strndup(kv, klen))) {
      rc = err_set(e, ERR_NOMEM, "out of memory");
      break;
    }
    rc = add(names[n], val);
    n++;
    if (rc) {
      err_set(e, rc, "environment: cannot keep secret %s", names[n - 1]);
      break;
    }
    /* Wipe the bytes where they live (the initial block for variables we
     * inherited): unsetenv alone leaves them readable there. */
    explicit_bzero(val, strlen(val));
  }
  for (i = 0; i < n; i++) {
    (void)unsetenv(names[i]);
    free(names[i]);
  }
  /* Not dumpable: /proc/PID/{environ,mem,maps} become root's and ptrace
   * attach needs CAP_SYS_PTRACE.  Children get their own flag at exec. */
  (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  return rc;
}

/* The secret starting at s (n bytes left), or NULL. */
static const struct secret *at(const char *s, size_t n)
{
  size_t i;

  for (i = 0; i < nsecrets; i++)
    if (n >= secrets[i].len && s[0] == secrets[i].value[0] &&
        !memcmp(s, secrets[i].value, secrets[i].len))
      return &secrets[i];
  return NULL;
}

static int has_mem(const char *s, size_t n)
{
  size_t i;

  for (i = 0; s && nsecrets && i < n; i++)
    if (at(s + i, n - i))
      return 1;
  return 0;
}

int redact_has(const char *s)
{
  return s ? has_mem(s, strlen(s)) : 0;
}

/* s[0..n) into out with the secrets replaced. */
static int redact_mem(const char *s, size_t n, struct buf *out)
{
  size_t i = 0, run = 0;

  while (i < n) {
    const struct secret *x = at(s + i, n - i);
    if (!x) {
      i++;
      continue;
    }
    (void)buf_append(out, s + run, i - run);
    (void)buf_puts(out, REDACT_MARK);
    i += x->len;
    run = i;
  }
  (void)buf_append(out, s + run, n - run);
  return buf_error(out);
}

char *redact_text(const char *s)
{
  struct buf b = BUF_INIT((size_t)-1 / 2);

  if (!s)
    return NULL;
  if (!redact_has(s))
    return strdup(s);
  if (redact_mem(s, strlen(s), &b)) {
    buf_release(&b);
    return NULL;
  }
  return buf_detach(&b, NULL);
}

int redact_buf(struct buf *b)
{
  struct buf t;

  if (!b->data || !has_mem(b->data, b->len))
    return 0;
  /* Each mark is at most REDACT_MARK's length per REDACT_MIN_LEN bytes. */
  buf_init(&t, b->len + b->len / REDACT_MIN_LEN * sizeof(REDACT_MARK) + 1);
  if (redact_mem(b->data, b->len, &t)) {
    buf_release(&t);
    explicit_bzero(b->data, b->len);
    buf_reset(b);
    return ERR_NOMEM;
  }
  if (t.max < b->max)
    t.max = b->max;
  t.toobig = b->toobig;
  buf_release(b);
  *b = t;
  return 0;
}
