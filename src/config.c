/* config.c - INI + environment configuration (inih does the parsing). */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <ctype.h>
#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "suggest.h"

struct config {
  struct config_entry *v;
  size_t n, cap;
};

struct config *config_new(void)
{
  return calloc(1, sizeof(struct config));
}

static void entry_free(struct config_entry *en)
{
  free((char *)en->section);
  free((char *)en->key);
  free((char *)en->value);
  free((char *)en->origin);
}

void config_free(struct config *c)
{
  size_t i;

  if (!c)
    return;
  for (i = 0; i < c->n; i++)
    entry_free(&c->v[i]);
  free(c->v);
  free(c);
}

int config_set(struct config *c, const char *section, const char *key,
               const char *value, const char *origin)
{
  struct config_entry en;

  if (c->n == c->cap) {
    size_t ncap = c->cap ? c->cap * 2 : 32;
    struct config_entry *nv = realloc(c->v, ncap * sizeof(*nv));
    if (!nv)
      return ERR_NOMEM;
    c->v = nv;
    c->cap = ncap;
  }
  en.section = strdup(section ? section : "");
  en.key = strdup(key);
  en.value = strdup(value ? value : "");
  en.origin = strdup(origin ? origin : "set");
  if (!en.section || !en.key || !en.value || !en.origin) {
    entry_free(&en);
    return ERR_NOMEM;
  }
  c->v[c->n++] = en;
  return 0;
}

/* Debian's inih is built without line numbers in the handler, so we feed
 * it through ini_parse_stream with a reader that counts lines: the handler
 * always runs for the line read last.  The reader also sees what inih
 * hides: a line longer than inih's fixed buffer (it would be cut, and the
 * rest parsed as a line of its own, possibly a bogus key), and whether a
 * line is indented (a continuation of the previous value). */
struct load_ctx {
  struct config *c;
  const char *name;
  int oom;
  int line;
  int too_long; /* line number of a line over inih's limit, or 0 */
  int limit;    /* the longest line inih takes, in characters */
  int indented; /* the line read last starts with a blank */
  struct config_entry *last; /* the entry the previous value went to */
  FILE *f;                   /* file source, or */
  const char *text;          /* string source */
};

static char *read_line(char *str, int num, void *stream)
{
  struct load_ctx *lc = stream;
  size_t n = 0;

  if (lc->f) {
    if (!fgets(str, num, lc->f))
      return NULL;
    n = strlen(str);
    if (n == (size_t)num - 1 && str[n - 1] != '\n' && !feof(lc->f)) {
      int ch = fgetc(lc->f); /* exactly full and the newline is next? */
      if (ch != '\n' && ch != EOF)
        goto too_long;
    }
  } else {
    if (!*lc->text || num < 2)
      return NULL;
    while (lc->text[n] && lc->text[n] != '\n' && n < (size_t)num - 2)
      n++;
    if (lc->text[n] && lc->text[n] != '\n')
      goto too_long;
    if (lc->text[n] == '\n')
      n++;
    memcpy(str, lc->text, n);
    str[n] = '\0';
    lc->text += n;
  }
  lc->line++;
  lc->indented = str[0] == ' ' || str[0] == '\t';
  return str;

too_long:
  lc->line++;
  lc->too_long = lc->line;
  lc->limit = num - 2;
  return NULL; /* ends the parse; parse_result names the line */
}

/* An indented line after KEY = VALUE continues that value: inih hands it
 * to us as another value of the same key; join it with a space. */
static int append_value(struct config_entry *en, const char *more)
{
  size_t a = strlen(en->value), b = strlen(more);
  char *v = malloc(a + b + 2);

  if (!v)
    return ERR_NOMEM;
  memcpy(v, en->value, a);
  v[a] = ' ';
  memcpy(v + a + 1, more, b + 1);
  free((char *)en->value);
  en->value = v;
  return 0;
}

static int on_value(void *user, const char *section, const char *name,
                    const char *value)
{
  struct load_ctx *lc = user;
  char origin[512];

  if (!name) { /* a bare [section] line */
    lc->last = NULL;
    return 1;
  }
  if (lc->indented && lc->last && !strcmp(lc->last->key, name) &&
      !strcmp(lc->last->section, section ? section : "")) {
    if (append_value(lc->last, value)) {
      lc->oom = 1;
      return 0;
    }
    return 1;
  }
  snprintf(origin, sizeof(origin), "%s:%d", lc->name, lc->line);
  if (config_set(lc->c, section, name, value, origin)) {
    lc->oom = 1;
    return 0;
  }
  lc->last = &lc->c->v[lc->c->n - 1];
  return 1;
}

static int parse_result(struct load_ctx *lc, int r, struct err *e)
{
  if (lc->oom)
    return err_set(e, ERR_NOMEM, "%s: out of memory", lc->name);
  if (lc->too_long)
    return err_set(e, ERR_PARSE,
                   "%s:%d: line longer than %d characters (continue a long "
                   "value on indented lines)",
                   lc->name, lc->too_long, lc->limit);
  if (r > 0)
    return err_set(e, ERR_PARSE,
                   "%s:%d: malformed line (expected key = value or "
                   "[section])",
                   lc->name, r);
  if (r < 0)
    return err_set(e, ERR_IO, "%s: cannot read: %s", lc->name,
                   r == -1 ? strerror(errno) : "out of memory");
  return 0;
}

int config_load(struct config *c, const char *path, struct err *e)
{
  struct load_ctx lc = {c, path, 0, 0, 0, 0, 0, NULL, NULL, NULL};
  int r;

  lc.f = fopen(path, "r");
  if (!lc.f)
    return err_set(e, ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  r = ini_parse_stream(read_line, &lc, on_value, &lc);
  fclose(lc.f);
  return parse_result(&lc, r, e);
}

int config_load_string(struct config *c, const char *name, const char *text,
                       struct err *e)
{
  struct load_ctx lc = {c, name, 0, 0, 0, 0, 0, NULL, NULL, text};
  int r = ini_parse_stream(read_line, &lc, on_value, &lc);

  return parse_result(&lc, r, e);
}

int config_apply_env(struct config *c, const struct config_env_map *map,
                     size_t n)
{
  size_t i;

  for (i = 0; i < n; i++) {
    const char *v = getenv(map[i].env);
    char origin[128];
    int rc;
    if (!v || !*v)
      continue;
    snprintf(origin, sizeof(origin), "env %s", map[i].env);
    rc = config_set(c, map[i].section, map[i].key, v, origin);
    if (rc)
      return rc;
  }
  return 0;
}

const struct config_entry *config_find(const struct config *c,
                                       const char *section, const char *key)
{
  size_t i;

  if (!c)
    return NULL;
  for (i = c->n; i-- > 0;)
    if (!strcmp(c->v[i].section, section ? section : "") &&
        !strcmp(c->v[i].key, key))
      return &c->v[i];
  return NULL;
}

const char *config_get(const struct config *c, const char *section,
                       const char *key, const char *def)
{
  const struct config_entry *en = config_find(c, section, key);

  return en ? en->value : def;
}

int config_parse_long(const char *s, long *out)
{
  char *end;
  long v;

  errno = 0;
  v = strtol(s, &end, 0);
  if (errno || end == s || *end)
    return ERR_PARSE;
  *out = v;
  return 0;
}

int config_parse_double(const char *s, double *out)
{
  char *end;
  double v;

  errno = 0;
  v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v))
    return ERR_PARSE;
  *out = v;
  return 0;
}

int config_parse_bytes(const char *s, unsigned long long *out)
{
  static const struct {
    const char *suffix;
    unsigned long long mul;
  } units[] = {{"", 1},
               {"B", 1},
               {"KiB", 1ULL << 10},
               {"K", 1ULL << 10},
               {"MiB", 1ULL << 20},
               {"M", 1ULL << 20},
               {"GiB", 1ULL << 30},
               {"G", 1ULL << 30}};
  char *end;
  unsigned long long v;
  size_t i;

  if (!s || *s < '0' || *s > '9')
    return ERR_PARSE;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno)
    return ERR_PARSE;
  for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
    if (!strcmp(end, units[i].suffix)) {
      if (v > ~0ULL / units[i].mul)
        return ERR_PARSE;
      *out = v * units[i].mul;
      return 0;
    }
  }
  return ERR_PARSE;
}

int config_get_long(const struct config *c, const char *section,
                    const char *key, long def, long lo, long hi, long *out,
                    struct err *e)
{
  const struct config_entry *en = config_find(c, section, key);
  long v;

  if (!en) {
    *out = def;
    return 0;
  }
  if (config_parse_long(en->value, &v))
    return err_set(e, ERR_CONFIG,
                   "%s: [%s] %s: expected an integer, got "
                   "'%.64s'",
                   en->origin, en->section, key, en->value);
  if (v < lo || v > hi)
    return err_set(e, ERR_CONFIG, "%s: [%s] %s: %ld is outside [%ld, %ld]",
                   en->origin, en->section, key, v, lo, hi);
  *out = v;
  return 0;
}

int config_get_double(const struct config *c, const char *section,
                      const char *key, double def, double lo, double hi,
                      double *out, struct err *e)
{
  const struct config_entry *en = config_find(c, section, key);
  double v;

  if (!en) {
    *out = def;
    return 0;
  }
  if (config_parse_double(en->value, &v))
    return err_set(e, ERR_CONFIG,
                   "%s: [%s] %s: expected a number, got "
                   "'%.64s'",
                   en->origin, en->section, key, en->value);
  if (v < lo || v > hi)
    return err_set(e, ERR_CONFIG, "%s: [%s] %s: %g is outside [%g, %g]",
                   en->origin, en->section, key, v, lo, hi);
  *out = v;
  return 0;
}

int config_get_bool(const struct config *c, const char *section,
                    const char *key, int def, int *out, struct err *e)
{
  const struct config_entry *en = config_find(c, section, key);
  static const char *const yes[] = {"1", "true", "yes", "on"};
  static const char *const no[] = {"0", "false", "no", "off"};
  size_t i;

  if (!en) {
    *out = def;
    return 0;
  }
  for (i = 0; i < 4; i++) {
    if (!strcasecmp(en->value, yes[i])) {
      *out = 1;
      return 0;
    }
    if (!strcasecmp(en->value, no[i])) {
      *out = 0;
      return 0;
    }
  }
  return err_set(e, ERR_CONFIG,
                 "%s: [%s] %s: expected true or false, got "
                 "'%.64s'",
                 en->origin, en->section, key, en->value);
}

const struct config_entry *config_at(const struct config *c, size_t i)
{
  return c && i < c->n ? &c->v[i] : NULL;
}

size_t config_count(const struct config *c)
{
  return c ? c->n : 0;
}

size_t config_sections(const struct config *c, const char *prefix,
                       const char **names, size_t max)
{
  size_t i, j, n = 0, plen = prefix ? strlen(prefix) : 0;

  for (i = 0; c && i < c->n; i++) {
    const char *s = c->v[i].section;
    int seen = 0;
    if (plen && strncmp(s, prefix, plen))
      continue;
    for (j = 0; j < n; j++)
      if (!strcmp(names[j], s))
        seen = 1;
    if (!seen && n < max)
      names[n++] = s;
  }
  return n;
}

int config_is_ident(const char *s)
{
  if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
    return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_')
      return 0;
  return 1;
}

/* ---- schema check ---- */

#define SCHEMA_MAX 64 /* sections of a schema, keys of a section */

static int section_is(const struct config_section *sec, const char *name)
{
  size_t l = strlen(sec->name);

  if (l && sec->name[l - 1] == '.')
    return !strncmp(name, sec->name, l) && name[l];
  return !strcmp(name, sec->name);
}

static const struct config_section *
schema_find(const struct config_section *schema, size_t n, const char *name)
{
  size_t i;

  for (i = 0; i < n; i++)
    if (section_is(&schema[i], name))
      return &schema[i];
  return NULL;
}

static int has_key(const struct config_section *sec, const char *key)
{
  const char *const *k;

  for (k = sec->keys; k && *k; k++)
    if (!strcmp(*k, key))
      return 1;
  return !sec->keys;
}

/* The section names as a user writes them: "model." shows as "model.NAME"
 * and, for a suggestion, takes the suffix of what the user wrote. */
static size_t section_names(const struct config_section *schema, size_t n,
                            const char *wrote, char (*buf)[80],
                            const char **names)
{
  size_t i, k = 0;

  for (i = 0; i < n && k < SCHEMA_MAX; i++) {
    size_t l = strlen(schema[i].name);
    const char *dot = wrote ? strchr(wrote, '.') : NULL;
    if (l && schema[i].name[l - 1] == '.')
      snprintf(buf[k], sizeof(buf[k]), "%s%s", schema[i].name,
               dot && dot[1] ? dot + 1 : "NAME");
    else
      snprintf(buf[k], sizeof(buf[k]), "%s", schema[i].name);
    names[k] = buf[k];
    k++;
  }
  return k;
}

static int unknown_section(const struct config_entry *en,
                           const struct config_section *schema, size_t n,
                           struct err *e)
{
  char buf[SCHEMA_MAX][80];
  const char *names[SCHEMA_MAX], *near;
  char list[160];
  size_t k;

  if (!*en->section)
    return err_set(e, ERR_CONFIG, "%s: key '%s' comes before any [section]",
                   en->origin, en->key);
  k = section_names(schema, n, en->section, buf, names);
  near = suggest_nearest(en->section, names, k);
  if (near)
    return err_set(e, ERR_CONFIG,
                   "%s: unknown section [%s] (did you mean [%s]?)", en->origin,
                   en->section, near);
  k = section_names(schema, n, NULL, buf, names);
  suggest_list(list, sizeof(list), names, k);
  return err_set(e, ERR_CONFIG, "%s: unknown section [%s] (valid: %s)",
                 en->origin, en->section, list);
}

static int unknown_key(const struct config_entry *en,
                       const struct config_section *sec,
                       const struct config_section *schema, size_t n,
                       struct err *e)
{
  const char *near;
  char list[160];
  size_t i, k = 0;

  while (k < SCHEMA_MAX && sec->keys[k])
    k++;
  near = suggest_nearest(en->key, sec->keys, k);
  if (near)
    return err_set(e, ERR_CONFIG,
                   "%s: unknown key '%s' in [%s] (did you mean '%s'?)",
                   en->origin, en->key, en->section, near);
  for (i = 0; i < n; i++)
    if (&schema[i] != sec && schema[i].keys && has_key(&schema[i], en->key))
      return err_set(e, ERR_CONFIG,
                     "%s: unknown key '%s' in [%s] (it is a key of [%s%s])",
                     en->origin, en->key, en->section, schema[i].name,
                     schema[i].name[strlen(schema[i].name) - 1] == '.' ? "NAME"
                                                                       : "");
  suggest_list(list, sizeof(list), sec->keys, k);
  return err_set(e, ERR_CONFIG, "%s: unknown key '%s' in [%s] (valid: %s)",
                 en->origin, en->key, en->section, list);
}

int config_check(const struct config *c, const struct config_section *schema,
                 size_t n, struct err *e)
{
  size_t i;

  for (i = 0; c && i < c->n; i++) {
    const struct config_entry *en = &c->v[i];
    const struct config_section *sec;
    if (!strncmp(en->origin, "env ", 4) || !strcmp(en->origin, "set"))
      continue;
    sec = schema_find(schema, n, en->section);
    if (!sec)
      return unknown_section(en, schema, n, e);
    if (!has_key(sec, en->key))
      return unknown_key(en, sec, schema, n, e);
  }
  return 0;
}
