/* workload.c - load workload.ini; see workload.h and contracts §2. */
#include "workload.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "suggest.h"
#include "transform.h"

#define LIST_MAX 64

static const char *const backends[] = {"lsa", "gin", NULL};
static const char *const placements[] = {"deferred", "per_tile", "split",
                                         NULL};
static const char *const syncs[] = {"global", "per_peer", "per_chunk", NULL};
static const char *const issuers[] = {"thread", "warp", "cta", NULL};

/* Split `s` on commas into trimmed tokens (copied into tok[]); empty
 * tokens are kept as "" so the caller can report them. */
static int split_list(const char *s, char tok[][WORKLOAD_VALUE * 4], int max)
{
  int n = 0;

  while (n < max) {
    size_t len = strcspn(s, ","), a = 0, b = len;
    while (a < b && isspace((unsigned char)s[a]))
      a++;
    while (b > a && isspace((unsigned char)s[b - 1]))
      b--;
    snprintf(tok[n], WORKLOAD_VALUE * 4, "%.*s", (int)(b - a), s + a);
    n++;
    if (!s[len])
      return n;
    s += len + 1;
  }
  return -1;
}

/* A param choice: an identifier or an integer (it becomes a -D value). */
static int is_choice(const char *s)
{
  long v;

  return config_is_ident(s) || config_parse_long(s, &v) == 0;
}

static int in_list(const char *v, const char *const *list)
{
  for (; *list; list++)
    if (!strcmp(v, *list))
      return 1;
  return 0;
}

static int file_there(const struct workload *w, const char *name)
{
  char p[WORKLOAD_PATH + 256];

  snprintf(p, sizeof(p), "%s/%s", w->dir, name);
  return access(p, R_OK) == 0;
}

/* A file name in the workload folder: no directories, no "..". */
static int set_file(const struct workload *w, const struct config_entry *en,
                    const char *v, char *dst, struct err *e)
{
  if (!*v || strchr(v, '/') || !strcmp(v, "..") || strlen(v) >= 128)
    return err_set(e, ERR_CONFIG, "%s: '%s' is not a file name in the folder",
                   en->origin, v);
  if (!file_there(w, v))
    return err_set(e, ERR_CONFIG, "%s: %s: no such file in %s", en->origin, v,
                   w->dir);
  snprintf(dst, 128, "%s", v);
  return 0;
}

int workload_parse_shape(const char *text, struct workload_size *s,
                         struct err *e)
{
  char tok[LIST_MAX][WORKLOAD_VALUE * 4];
  int n = split_list(text, tok, LIST_MAX), i, j;
  size_t used = 0;

  memset(s, 0, sizeof(*s));
  if (n < 0 || n > WORKLOAD_MAX_KV)
    return err_set(e, ERR_PARSE, "shape '%.80s': more than %d keys", text,
                   WORKLOAD_MAX_KV);
  for (i = 0; i < n; i++) {
    char *eq = strchr(tok[i], '=');
    long v;
    if (!eq)
      return err_set(e, ERR_PARSE, "shape '%.80s': '%s' is not KEY=VALUE",
                     text, tok[i]);
    *eq = '\0';
    if (!config_is_ident(tok[i]) || strlen(tok[i]) >= 32)
      return err_set(e, ERR_PARSE, "shape '%.80s': bad key '%s'", text,
                     tok[i]);
    if (config_parse_long(eq + 1, &v) || v <= 0 || v > (1L << 40))
      return err_set(e, ERR_PARSE,
                     "shape '%.80s': '%s' for %s is not a positive integer",
                     text, eq + 1, tok[i]);
    for (j = 0; j < s->nkv; j++)
      if (!strcmp(s->keys[j], tok[i]))
        return err_set(e, ERR_PARSE, "shape '%.80s': %s given twice", text,
                       tok[i]);
    snprintf(s->keys[s->nkv], 32, "%s", tok[i]);
    s->vals[s->nkv++] = v;
    used += (size_t)snprintf(s->params + used, sizeof(s->params) - used,
                             "%s%s=%ld", i ? "," : "", tok[i], v);
    if (used >= sizeof(s->params))
      return err_set(e, ERR_PARSE, "shape '%.80s' too long", text);
  }
  snprintf(s->name, sizeof(s->name), "%.63s", s->params);
  return 0;
}

const struct workload_size *workload_find_size(const struct workload *w,
                                               const char *name)
{
  int i;

  for (i = 0; i < w->nsizes; i++)
    if (!strcmp(w->sizes[i].name, name))
      return &w->sizes[i];
  return NULL;
}

const struct workload_param *workload_find_param(const struct workload *w,
                                                 const char *name)
{
  int i;

  for (i = 0; i < w->nparams; i++)
    if (!strcmp(w->params[i].name, name))
      return &w->params[i];
  return NULL;
}

int workload_allows_ranks(const struct workload *w, int nranks)
{
  int i;

  for (i = 0; i < w->nranks; i++)
    if (w->ranks[i] == nranks)
      return 1;
  return 0;
}

#define KEYS_MAX (WORKLOAD_MAX_SIZES * WORKLOAD_MAX_KV)

static int size_has(const struct workload_size *s, const char *key)
{
  int i;

  for (i = 0; i < s->nkv; i++)
    if (!strcmp(s->keys[i], key))
      return 1;
  return 0;
}

/* The parameters any size of w sets, in first-seen order. */
static size_t size_params(const struct workload *w, const char **keys)
{
  size_t n = 0, k;
  int i, j;

  for (i = 0; i < w->nsizes; i++)
    for (j = 0; j < w->sizes[i].nkv; j++) {
      for (k = 0; k < n && strcmp(keys[k], w->sizes[i].keys[j]); k++)
        ;
      if (k == n && n < KEYS_MAX)
        keys[n++] = w->sizes[i].keys[j];
    }
  return n;
}

/* The parameters a --sizes shape gives must be the workload's, and those
 * every size of it sets must be there: else the run would blame the
 * candidate for the shape. */
static int check_shape(const struct workload *w, const char *text,
                       const struct workload_size *s, struct err *e)
{
  const char *keys[KEYS_MAX], *near;
  char list[200], miss[120] = "";
  size_t n = size_params(w, keys), k, m = 0;
  int i, j;

  suggest_list(list, sizeof(list), keys, n);
  for (j = 0; j < s->nkv && n; j++) {
    for (k = 0; k < n && strcmp(keys[k], s->keys[j]); k++)
      ;
    if (k < n)
      continue;
    near = suggest_nearest(s->keys[j], keys, n);
    return err_set(e, ERR_USAGE,
                   "--sizes: '%s' in shape '%.80s' is not a parameter of %s "
                   "(%s%s%sparameters: %s)",
                   s->keys[j], text, w->name, near ? "did you mean '" : "",
                   near ? near : "", near ? "'? " : "", list);
  }
  for (k = 0; k < n; k++) {
    for (i = 0; i < w->nsizes && size_has(&w->sizes[i], keys[k]); i++)
      ;
    if (i == w->nsizes && !size_has(s, keys[k]) && m < sizeof(miss))
      m += (size_t)snprintf(miss + m, sizeof(miss) - m, "%s%s", m ? ", " : "",
                            keys[k]);
  }
  if (m)
    return err_set(e, ERR_USAGE,
                   "--sizes: shape '%.80s' lacks %s, which every size of %s "
                   "sets (parameters: %s)",
                   text, miss, w->name, list);
  return 0;
}

/* "--sizes: 'smal_a' is not a size of W (did you mean ...?)". */
static int unknown_size(const struct workload *w, const char *tok,
                        struct err *e)
{
  const char *names[WORKLOAD_MAX_SIZES], *near;
  char list[200];
  int i;

  for (i = 0; i < w->nsizes; i++)
    names[i] = w->sizes[i].name;
  suggest_list(list, sizeof(list), names, (size_t)w->nsizes);
  near = suggest_nearest(tok, names, (size_t)w->nsizes);
  if (near)
    return err_set(e, ERR_USAGE,
                   "--sizes: '%s' is not a size of %s (did you mean '%s'? "
                   "sizes: %s)",
                   tok, w->name, near, list);
  return err_set(e, ERR_USAGE,
                 "--sizes: '%s' is neither a size of %s (%s) nor a shape "
                 "K=V,...",
                 tok, w->name, list);
}

int workload_resolve_sizes(const struct workload *w, const char *list,
                           struct workload_size *out, int max, int *n,
                           struct err *e)
{
  char shape[512] = "";
  char seen[WORKLOAD_MAX_KV][32];
  int nseen = 0, rc;
  const char *p = list;

  *n = 0;
  for (;;) {
    size_t len = strcspn(p, ", \t;");
    char tok[256];
    int flush = !*p;
    if (len >= sizeof(tok))
      return err_set(e, ERR_USAGE, "--sizes: token too long");
    snprintf(tok, sizeof(tok), "%.*s", (int)len, p);
    if (!flush && len && strchr(tok, '=')) {
      size_t klen = strcspn(tok, "=");
      int k, dup = 0;
      for (k = 0; k < nseen; k++)
        if (strlen(seen[k]) == klen && !strncmp(seen[k], tok, klen))
          dup = 1;
      if (!dup && nseen < WORKLOAD_MAX_KV) {
        snprintf(seen[nseen++], 32, "%.*s", (int)(klen < 31 ? klen : 31), tok);
        if (strlen(shape) + len + 2 >= sizeof(shape))
          return err_set(e, ERR_USAGE, "--sizes: shape too long");
        if (*shape)
          strncat(shape, ",", sizeof(shape) - strlen(shape) - 1);
        strncat(shape, tok, sizeof(shape) - strlen(shape) - 1);
        p += len;
        p += *p ? 1 : 0;
        continue;
      }
    }
    /* A name, a repeated key, or the end: flush a pending shape. */
    if (*shape) {
      if (*n >= max)
        return err_set(e, ERR_TOOBIG, "--sizes: more than %d sizes", max);
      rc = workload_parse_shape(shape, &out[*n], e);
      if (rc)
        return err_wrap(e, "--sizes"), ERR_USAGE;
      if (check_shape(w, shape, &out[*n], e))
        return ERR_USAGE;
      (*n)++;
      *shape = '\0';
      nseen = 0;
      continue; /* re-read the token that caused the flush */
    }
    if (flush)
      break;
    if (len) {
      const struct workload_size *s = workload_find_size(w, tok);
      if (!s)
        return unknown_size(w, tok, e);
      if (*n >= max)
        return err_set(e, ERR_TOOBIG, "--sizes: more than %d sizes", max);
      out[(*n)++] = *s;
    }
    p += len;
    p += *p ? 1 : 0;
  }
  if (*n == 0)
    return err_set(e, ERR_USAGE, "--sizes: no size given");
  return 0;
}

int workload_check_seed(const struct workload *w, struct err *e)
{
  char p[WORKLOAD_PATH + 256], head[64] = "";
  size_t n = strlen(TRANSFORM_PLACEHOLDER);
  FILE *f;

  snprintf(p, sizeof(p), "%s/%s", w->dir, w->seed);
  f = fopen(p, "r");
  if (!f)
    return 0; /* unreadable: the build names it */
  if (!fgets(head, sizeof(head), f) || strncmp(head, TRANSFORM_PLACEHOLDER, n))
    n = 0;
  fclose(f);
  if (!n)
    return 0;
  return err_set(e, ERR_CONFIG,
                 "%s is the placeholder `cuco init` wrote (a copy of the "
                 "baseline): run `cuco transform %s` first",
                 p, w->dir);
}

static int load_dim(const struct config_entry *en, const char *const *known,
                    struct workload_dim *d, struct err *e)
{
  char tok[LIST_MAX][WORKLOAD_VALUE * 4];
  int n = split_list(en->value, tok, LIST_MAX), i;

  if (n < 0 || n > 8)
    return err_set(e, ERR_CONFIG, "%s: too many values", en->origin);
  d->n = 0;
  for (i = 0; i < n; i++) {
    if (!in_list(tok[i], known))
      return err_set(e, ERR_CONFIG, "%s: '%s' is not a %s value", en->origin,
                     tok[i], en->key);
    snprintf(d->v[d->n++], 16, "%s", tok[i]);
  }
  return 0;
}

static int chunk_bound(const struct config_entry *en, const char *s,
                       unsigned long long *out, struct err *e)
{
  if (config_parse_bytes(s, out) || *out < 4096ULL || *out > (64ULL << 20) ||
      (*out & (*out - 1)))
    return err_set(e, ERR_CONFIG,
                   "%s: chunk bound '%s' is not a power of two in "
                   "4KiB..64MiB",
                   en->origin, s);
  return 0;
}

static int load_chunk(const struct config_entry *en, struct workload_space *sp,
                      struct err *e)
{
  const char *dots = strstr(en->value, "..");
  char lo[64];

  if (!dots)
    return chunk_bound(en, en->value, &sp->chunk_min, e) ||
                   chunk_bound(en, en->value, &sp->chunk_max, e)
               ? ERR_CONFIG
               : 0;
  snprintf(lo, sizeof(lo), "%.*s", (int)(dots - en->value), en->value);
  if (chunk_bound(en, lo, &sp->chunk_min, e) ||
      chunk_bound(en, dots + 2, &sp->chunk_max, e))
    return ERR_CONFIG;
  if (sp->chunk_min > sp->chunk_max)
    return err_set(e, ERR_CONFIG, "%s: empty chunk range '%s'", en->origin,
                   en->value);
  return 0;
}

static int load_set(struct workload *w, const struct config_entry *en,
                    int *idx, int *n, struct err *e)
{
  char tok[LIST_MAX][WORKLOAD_VALUE * 4];
  int k = split_list(en->value, tok, LIST_MAX), i;

  if (k < 0 || k > WORKLOAD_MAX_SET)
    return err_set(e, ERR_CONFIG, "%s: more than %d sizes", en->origin,
                   WORKLOAD_MAX_SET);
  for (i = 0; i < k; i++) {
    const struct workload_size *s = workload_find_size(w, tok[i]);
    if (!s)
      return err_set(e, ERR_CONFIG, "%s: '%s' is not a size in [sizes]",
                     en->origin, tok[i]);
    idx[i] = (int)(s - w->sizes);
  }
  *n = k;
  return 0;
}

static int load_workload_key(struct workload *w, const struct config_entry *en,
                             struct err *e)
{
  char tok[LIST_MAX][WORKLOAD_VALUE * 4];
  const char *k = en->key, *v = en->value;
  int n, i;

  if (!strcmp(k, "name")) {
    if (!*v || strlen(v) >= WORKLOAD_NAME || strpbrk(v, "/ \t"))
      return err_set(e, ERR_CONFIG, "%s: bad workload name '%s'", en->origin,
                     v);
    snprintf(w->name, sizeof(w->name), "%s", v);
  } else if (!strcmp(k, "description")) {
    if (strlen(v) >= sizeof(w->description))
      return err_set(e, ERR_CONFIG,
                     "%s: description is %zu characters, at most %zu",
                     en->origin, strlen(v), sizeof(w->description) - 1);
    snprintf(w->description, sizeof(w->description), "%s", v);
  } else if (!strcmp(k, "kind")) {
    if (!strcmp(v, "runtime"))
      w->kind = WORKLOAD_RUNTIME;
    else if (!strcmp(v, "freeform"))
      w->kind = WORKLOAD_FREEFORM;
    else
      return err_set(e, ERR_CONFIG,
                     "%s: kind '%s' is neither runtime nor freeform",
                     en->origin, v);
  } else if (!strcmp(k, "ranks")) {
    n = split_list(v, tok, LIST_MAX);
    if (n < 0 || n > WORKLOAD_MAX_RANKS)
      return err_set(e, ERR_CONFIG, "%s: too many rank counts", en->origin);
    for (i = 0; i < n; i++) {
      long r;
      if (config_parse_long(tok[i], &r) || r < 1 || r > 4096 ||
          (i && r <= w->ranks[i - 1]))
        return err_set(e, ERR_CONFIG,
                       "%s: rank count '%s' is not an ascending positive "
                       "integer",
                       en->origin, tok[i]);
      w->ranks[i] = (int)r;
    }
    w->nranks = n;
  } else if (!strcmp(k, "baselines")) {
    n = split_list(v, tok, LIST_MAX);
    if (n < 0 || n > WORKLOAD_MAX_FILES)
      return err_set(e, ERR_CONFIG, "%s: too many baselines", en->origin);
    for (i = 0; i < n; i++)
      if (set_file(w, en, tok[i], w->baselines[i], e))
        return ERR_CONFIG;
    w->nbaselines = n;
  } else if (!strcmp(k, "bar")) {
    n = split_list(v, tok, LIST_MAX);
    if (n < 1 || n > WORKLOAD_MAX_FILES)
      return err_set(e, ERR_CONFIG, "%s: bar needs 1..%d baseline files",
                     en->origin, WORKLOAD_MAX_FILES);
    for (i = 0; i < n; i++)
      if (set_file(w, en, tok[i], w->bar[i], e))
        return ERR_CONFIG;
    w->nbar = n;
  } else if (!strcmp(k, "seed")) {
    return set_file(w, en, v, w->seed, e);
  } else if (!strcmp(k, "reference")) {
    return set_file(w, en, v, w->reference, e);
  } else if (!strcmp(k, "libs")) {
    n = split_list(v, tok, LIST_MAX);
    if (n < 0 || n > WORKLOAD_MAX_LIBS)
      return err_set(e, ERR_CONFIG, "%s: too many libs", en->origin);
    w->nlibs = 0;
    for (i = 0; i < n; i++) {
      if (!*tok[i] && n == 1)
        break;
      if (!config_is_ident(tok[i]) || strlen(tok[i]) >= WORKLOAD_NAME)
        return err_set(e, ERR_CONFIG, "%s: bad library name '%s'", en->origin,
                       tok[i]);
      snprintf(w->libs[w->nlibs++], WORKLOAD_NAME, "%s", tok[i]);
    }
  } else if (!strcmp(k, "forbid")) {
    n = split_list(v, tok, LIST_MAX);
    if (n < 0 || n > WORKLOAD_MAX_FORBID)
      return err_set(e, ERR_CONFIG, "%s: more than %d forbidden names",
                     en->origin, WORKLOAD_MAX_FORBID);
    w->nforbid = 0;
    for (i = 0; i < n; i++) {
      if (!*tok[i] && n == 1)
        break;
      if (!config_is_ident(tok[i]) || strlen(tok[i]) >= WORKLOAD_NAME)
        return err_set(e, ERR_CONFIG, "%s: forbid: '%s' is not an identifier",
                       en->origin, tok[i]);
      snprintf(w->forbid[w->nforbid++], WORKLOAD_NAME, "%s", tok[i]);
    }
  } else if (!strcmp(k, "needs_gpu")) {
    if (strcmp(v, "yes") && strcmp(v, "no"))
      return err_set(e, ERR_CONFIG, "%s: needs_gpu: '%s' is not yes or no",
                     en->origin, v);
    w->host_only = !strcmp(v, "no");
  } else {
    return err_set(e, ERR_CONFIG, "%s: unknown key '%s' in [workload]",
                   en->origin, k);
  }
  return 0;
}

static int load_entry(struct workload *w, const struct config_entry *en,
                      struct err *e)
{
  const char *s = en->section, *k = en->key;

  if (!strcmp(s, "workload"))
    return load_workload_key(w, en, e);
  if (!strcmp(s, "sizes")) {
    struct workload_size *sz;
    if (w->nsizes >= WORKLOAD_MAX_SIZES)
      return err_set(e, ERR_CONFIG, "%s: more than %d sizes", en->origin,
                     WORKLOAD_MAX_SIZES);
    if (!config_is_ident(k) || strlen(k) >= WORKLOAD_NAME ||
        workload_find_size(w, k))
      return err_set(e, ERR_CONFIG, "%s: bad or repeated size name '%s'",
                     en->origin, k);
    sz = &w->sizes[w->nsizes];
    if (workload_parse_shape(en->value, sz, e))
      return err_wrap(e, "%s", en->origin);
    snprintf(sz->name, sizeof(sz->name), "%s", k);
    w->nsizes++;
    return 0;
  }
  if (!strcmp(s, "sets")) {
    if (!strcmp(k, "verify"))
      return load_set(w, en, w->verify, &w->nverify, e);
    if (!strcmp(k, "bench"))
      return load_set(w, en, w->bench, &w->nbench, e);
    return err_set(e, ERR_CONFIG, "%s: unknown set '%s' (verify, bench)",
                   en->origin, k);
  }
  if (!strcmp(s, "tolerance")) {
    if (!strcmp(k, "floor")) {
      if (config_parse_double(en->value, &w->tol_floor) ||
          !(w->tol_floor > 0 && w->tol_floor < 1))
        return err_set(e, ERR_CONFIG, "%s: floor '%s' is not in (0, 1)",
                       en->origin, en->value);
      return 0;
    }
    if (strcmp(k, "rel_l2"))
      return err_set(e, ERR_CONFIG,
                     "%s: unknown tolerance '%s' (rel_l2, floor)", en->origin,
                     k);
    if (config_parse_double(en->value, &w->tol_rel_l2) ||
        !(w->tol_rel_l2 > 0 && w->tol_rel_l2 < 1))
      return err_set(e, ERR_CONFIG, "%s: rel_l2 '%s' is not in (0, 1)",
                     en->origin, en->value);
    return 0;
  }
  if (!strcmp(s, "space")) {
    w->space.present = 1;
    if (!strcmp(k, "backend"))
      return load_dim(en, backends, &w->space.backend, e);
    if (!strcmp(k, "placement"))
      return load_dim(en, placements, &w->space.placement, e);
    if (!strcmp(k, "sync"))
      return load_dim(en, syncs, &w->space.sync, e);
    if (!strcmp(k, "issuer"))
      return load_dim(en, issuers, &w->space.issuer, e);
    if (!strcmp(k, "chunk"))
      return load_chunk(en, &w->space, e);
    return err_set(e, ERR_CONFIG, "%s: unknown directive '%s' in [space]",
                   en->origin, k);
  }
  if (!strcmp(s, "params")) {
    char tok[LIST_MAX][WORKLOAD_VALUE * 4];
    struct workload_param *p;
    int n, i;
    if (w->nparams >= WORKLOAD_MAX_PARAMS)
      return err_set(e, ERR_CONFIG, "%s: more than %d params", en->origin,
                     WORKLOAD_MAX_PARAMS);
    if (!config_is_ident(k) || strlen(k) >= WORKLOAD_NAME ||
        workload_find_param(w, k))
      return err_set(e, ERR_CONFIG, "%s: bad or repeated param name '%s'",
                     en->origin, k);
    p = &w->params[w->nparams];
    n = split_list(en->value, tok, LIST_MAX);
    if (n < 0 || n > WORKLOAD_MAX_CHOICES)
      return err_set(e, ERR_CONFIG, "%s: more than %d choices", en->origin,
                     WORKLOAD_MAX_CHOICES);
    for (i = 0; i < n; i++) {
      if (!is_choice(tok[i]) || strlen(tok[i]) >= WORKLOAD_VALUE)
        return err_set(e, ERR_CONFIG,
                       "%s: choice '%s' is not an integer or identifier",
                       en->origin, tok[i]);
      snprintf(p->choices[i], WORKLOAD_VALUE, "%s", tok[i]);
    }
    snprintf(p->name, sizeof(p->name), "%s", k);
    p->nchoices = n;
    w->nparams++;
    return 0;
  }
  if (!strcmp(s, "freeform")) {
    if (!strcmp(k, "build") || !strcmp(k, "run") || !strcmp(k, "check") ||
        !strcmp(k, "check_build")) {
      char *dst = !strcmp(k, "build")   ? w->ff_build
                  : !strcmp(k, "run")   ? w->ff_run
                  : !strcmp(k, "check") ? w->ff_check
                                        : w->ff_check_build;
      if (strlen(en->value) >= sizeof(w->ff_build))
        return err_set(e, ERR_CONFIG, "%s: command too long", en->origin);
      snprintf(dst, sizeof(w->ff_build), "%s", en->value);
      return 0;
    }
    if (!strcmp(k, "metric")) {
      if (!config_is_ident(en->value) || strlen(en->value) >= WORKLOAD_NAME)
        return err_set(e, ERR_CONFIG, "%s: bad metric name '%s'", en->origin,
                       en->value);
      snprintf(w->ff_metric, sizeof(w->ff_metric), "%s", en->value);
      return 0;
    }
    if (!strcmp(k, "repeat")) {
      long r;
      if (config_parse_long(en->value, &r) || r < 1 || r > 50)
        return err_set(e, ERR_CONFIG, "%s: repeat '%s' is not in 1..50",
                       en->origin, en->value);
      w->ff_repeat = (int)r;
      return 0;
    }
    return err_set(e, ERR_CONFIG, "%s: unknown key '%s' in [freeform]",
                   en->origin, k);
  }
  if (!strcmp(s, "allow")) {
    if (strcmp(k, "symbols"))
      return err_set(e, ERR_CONFIG,
                     "%s: unknown key '%s' in [allow] (symbols)", en->origin,
                     k);
    if (strlen(en->value) >= sizeof(w->allow_symbols))
      return err_set(e, ERR_CONFIG, "%s: symbols: over %zu characters",
                     en->origin, sizeof(w->allow_symbols) - 1);
    snprintf(w->allow_symbols, sizeof(w->allow_symbols), "%s", en->value);
    return 0;
  }
  return err_set(e, ERR_CONFIG, "%s: unknown section [%s]", en->origin, s);
}

/* Sections and keys of workload.ini (docs/contracts.md section 2); [sizes]
 * and [params] name their own keys. */
static const char *const workload_keys[] = {
    "name", "description", "kind", "ranks",  "baselines", "bar",
    "seed", "reference",   "libs", "forbid", "needs_gpu", NULL};
static const char *const sets_keys[] = {"verify", "bench", NULL};
static const char *const tolerance_keys[] = {"rel_l2", "floor", NULL};
static const char *const space_keys[] = {"backend", "placement", "sync",
                                         "issuer",  "chunk",     NULL};
static const char *const freeform_keys[] = {
    "build", "run", "check", "check_build", "metric", "repeat", NULL};
static const char *const allow_keys[] = {"symbols", NULL};
static const struct config_section schema[] = {
    {"workload", workload_keys},   {"sizes", NULL},       {"sets", sets_keys},
    {"tolerance", tolerance_keys}, {"space", space_keys}, {"params", NULL},
    {"freeform", freeform_keys},   {"allow", allow_keys},
};

/* [sizes] must be read before [sets] refers to them, whatever the order in
 * the file; everything else goes in file order. */
static int load_all(struct workload *w, const struct config *c, struct err *e)
{
  size_t i, n = config_count(c);
  int pass;

  for (pass = 0; pass < 2; pass++)
    for (i = 0; i < n; i++) {
      const struct config_entry *en = config_at(c, i);
      int is_sizes = !strcmp(en->section, "sizes");
      if ((pass == 0) != is_sizes)
        continue;
      if (load_entry(w, en, e))
        return ERR_CONFIG;
    }
  return 0;
}

static int require(const struct workload *w, int ok, const char *what,
                   struct err *e)
{
  if (ok)
    return 0;
  return err_set(e, ERR_CONFIG, "%s: %s", w->ini_path, what);
}

int workload_load(const char *dir, struct workload *w, struct err *e)
{
  struct config *c;
  int rc;

  memset(w, 0, sizeof(*w));
  if (strlen(dir) >= sizeof(w->dir) - 16)
    return err_set(e, ERR_CONFIG, "workload path too long");
  snprintf(w->dir, sizeof(w->dir), "%s", dir);
  {
    size_t n = strlen(w->dir);
    while (n > 1 && w->dir[n - 1] == '/')
      w->dir[--n] = '\0';
  }
  snprintf(w->ini_path, sizeof(w->ini_path), "%s/workload.ini", w->dir);
  snprintf(w->ff_metric, sizeof(w->ff_metric), "time_ms");
  w->ff_repeat = 3;
  c = config_new();
  if (!c)
    return err_set(e, ERR_NOMEM, "out of memory");
  rc = config_load(c, w->ini_path, e);
  if (rc == 0)
    rc = config_check(c, schema, sizeof(schema) / sizeof(schema[0]), e);
  if (rc == 0)
    rc = load_all(w, c, e);
  config_free(c);
  if (rc)
    return rc;
  if ((rc = require(w, *w->name, "[workload] name is missing", e)) ||
      (rc = require(w, w->nranks > 0, "[workload] ranks is missing", e)) ||
      (rc = require(w, *w->seed, "[workload] seed is missing", e)) ||
      (rc = require(w, w->nverify > 0, "[sets] verify is missing", e)) ||
      (rc = require(w, w->nbench > 0, "[sets] bench is missing", e)))
    return rc;
  if (w->kind == WORKLOAD_RUNTIME) {
    if ((rc = require(w, *w->reference,
                      "[workload] reference is missing (runtime kind)", e)) ||
        (rc = require(w, w->nbaselines > 0,
                      "[workload] baselines is missing (runtime kind)", e)) ||
        (rc = require(w, !*w->ff_build && !*w->ff_run,
                      "[freeform] is only for kind = freeform", e)))
      return rc;
    for (int i = 0; i < w->nbar; i++) {
      int found = 0;
      for (int j = 0; j < w->nbaselines; j++)
        found |= !strcmp(w->bar[i], w->baselines[j]);
      if (!found)
        return err_set(e, ERR_CONFIG,
                       "%s/workload.ini: [workload] bar names '%s', which is "
                       "not one of the baselines",
                       w->dir, w->bar[i]);
    }
  } else {
    if ((rc = require(w, *w->ff_build && *w->ff_run,
                      "[freeform] build and run are required", e)) ||
        (rc = require(w, !*w->ff_check_build || *w->ff_check,
                      "[freeform] check_build without check", e)))
      return rc;
  }
  if (!w->nbar && w->nbaselines) { /* the bar is baselines[0] by default,
                                    * freeform workloads included */
    snprintf(w->bar[0], sizeof(w->bar[0]), "%s", w->baselines[0]);
    w->nbar = 1;
  }
  return 0;
}
