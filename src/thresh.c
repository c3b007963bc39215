/* thresh.c - accuracy thresholds frozen from the baseline; see thresh.h. */
#define _GNU_SOURCE
#include "thresh.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "file.h"
#include "workload.h"

#define THRESH_FILE_MAX (4u << 20)

void thresh_bounds(const struct workload *w, double *floor, double *cap)
{
  *cap = w->tol_rel_l2 > 0 ? w->tol_rel_l2 : 2e-2;
  *floor = w->tol_floor > 0 ? w->tol_floor : *cap / 100;
  if (*floor > *cap)
    *floor = *cap;
}

double thresh_freeze_one(double err, double floor, double cap)
{
  double t;

  if (!(err >= 0) || isinf(err))
    return cap;
  t = 2 * err > floor ? 2 * err : floor;
  return t < cap ? t : cap;
}

void thresh_freeze(struct thresh *t, double err_rel, double err_row,
                   double err_block, double floor, double cap,
                   const char *baseline)
{
  memset(t, 0, sizeof(*t));
  t->err_rel = err_rel;
  t->err_row = err_row;
  t->err_block = err_block;
  t->floor = floor;
  t->cap = cap;
  t->rel_l2 = thresh_freeze_one(err_rel, floor, cap);
  t->row = err_row >= 0 ? thresh_freeze_one(err_row, floor, cap) : 0;
  t->block = err_block >= 0 ? thresh_freeze_one(err_block, floor, cap) : 0;
  snprintf(t->baseline, sizeof(t->baseline), "%s", baseline ? baseline : "");
  t->frozen_at = (double)time(NULL);
}

/* A finite number >= 0 from key K of O, or -1 when absent. */
static int num_of(const json_t *o, const char *k, double *v)
{
  const json_t *j = json_object_get(o, k);

  *v = -1;
  if (!j)
    return 0;
  if (!json_is_number(j))
    return -1;
  *v = json_number_value(j);
  return *v >= 0 && isfinite(*v) ? 0 : -1;
}

int thresh_errors_runtime(const json_t *result, double *rel, double *row,
                          double *block, struct err *e)
{
  const json_t *checks =
      json_object_get(json_object_get(result, "verify"), "checks");
  size_t i;
  int n = 0;

  *rel = *row = 0;
  *block = -1;
  for (i = 0; i < json_array_size(checks); i++) {
    const json_t *c = json_array_get(checks, i);
    const char *out = json_string_value(json_object_get(c, "output"));
    double a, b, k;
    if (!out || out[0] == '(' || !json_is_true(json_object_get(c, "passed")))
      continue;
    if (num_of(c, "rel_l2", &a) || a < 0 || num_of(c, "row_rel_l2", &b) ||
        num_of(c, "block_rel_l2", &k))
      return err_set(e, ERR_PARSE,
                     "RESULT.json: check %zu has a bad rel_l2/row_rel_l2/"
                     "block_rel_l2",
                     i);
    if (a > *rel)
      *rel = a;
    if (b > *row)
      *row = b;
    if (k >= 0 && k > *block)
      *block = k;
    n++;
  }
  if (!n)
    return err_set(e, ERR_PARSE, "RESULT.json: no passed output check");
  return 0;
}

int thresh_errors_freeform(const json_t *metrics, double *rel, double *row,
                           double *block, struct err *e)
{
  if (num_of(metrics, "rel_l2", rel) || *rel < 0)
    return err_set(e, ERR_PARSE,
                   "metrics line: no finite \"rel_l2\" >= 0 (needed to "
                   "freeze thresholds)");
  if (num_of(metrics, "row_rel_l2", row) ||
      num_of(metrics, "block_rel_l2", block))
    return err_set(e, ERR_PARSE,
                   "metrics line: \"row_rel_l2\"/\"block_rel_l2\" must be "
                   "finite numbers >= 0");
  return 0;
}

static int over(const char *what, double got, double lim, double err,
                const struct thresh *t, char *why, size_t n)
{
  if (lim <= 0 || got <= lim)
    return 0;
  snprintf(why, n,
           "%s %.3g > threshold %.3g (frozen from %s: max(floor %.3g, 2 x "
           "its %.3g), cap %.3g)",
           what, got, lim, t->baseline[0] ? t->baseline : "the baseline",
           t->floor, err, t->cap);
  return 1;
}

int thresh_check(const struct thresh *t, double rel, double row, double block,
                 char *why, size_t n)
{
  if (!(rel >= 0) || isinf(rel)) {
    snprintf(why, n, "rel_l2 is not a finite number");
    return 1;
  }
  return over("rel_l2", rel, t->rel_l2, t->err_rel, t, why, n) ||
         over("row_rel_l2", row, t->row, t->err_row, t, why, n) ||
         over("block_rel_l2", block, t->block, t->err_block, t, why, n);
}

static int hash_into(XXH64_state_t *st, const char *dir, const char *file,
                     struct err *e)
{
  char p[WORKLOAD_PATH + 160], chunk[16384];
  FILE *f;
  size_t r;

  if (!file[0])
    return 0;
  snprintf(p, sizeof(p), "%s/%s", dir, file);
  f = fopen(p, "rb");
  if (!f)
    return err_set(e, ERR_IO, "%s: %s", p, strerror(errno));
  XXH64_update(st, file, strlen(file) + 1);
  while ((r = fread(chunk, 1, sizeof(chunk), f)) > 0)
    XXH64_update(st, chunk, r);
  fclose(f);
  return 0;
}

int thresh_key(const struct workload *w, const char *params, int ranks,
               int vranks, char *out, size_t n, struct err *e)
{
  XXH64_state_t *st = XXH64_createState();
  unsigned long long h;
  int rc;

  if (!st)
    return err_set(e, ERR_NOMEM, "out of memory");
  XXH64_reset(st, 0);
  rc = hash_into(st, w->dir, w->nbaselines ? w->baselines[0] : "", e);
  if (!rc)
    rc = hash_into(st, w->dir, w->reference, e);
  h = XXH64_digest(st);
  XXH64_freeState(st);
  if (rc)
    return rc;
  snprintf(out, n, "%s|r%d|v%d|%016llx", params, ranks, vranks, h);
  return 0;
}

static void file_path(const char *cache_dir, const char *wl, char *p, size_t n)
{
  snprintf(p, n, "%s/thresholds/%s.json", cache_dir, wl);
}

/* The whole store (an object with "entries"), or a new one when absent. */
static json_t *read_store(const char *path, struct err *e)
{
  json_error_t je;
  json_t *j, *en;
  FILE *f = fopen(path, "rb");

  if (!f) {
    if (errno != ENOENT) {
      err_set(e, ERR_IO, "%s: %s", path, strerror(errno));
      return NULL;
    }
    j = json_pack("{s:i, s:{}}", "schema", 1, "entries");
    if (!j)
      err_set(e, ERR_NOMEM, "out of memory");
    return j;
  }
  if (fseek(f, 0, SEEK_END) || ftell(f) > (long)THRESH_FILE_MAX ||
      fseek(f, 0, SEEK_SET)) {
    fclose(f);
    err_set(e, ERR_TOOBIG, "%s: over %u bytes", path, THRESH_FILE_MAX);
    return NULL;
  }
  j = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
  fclose(f);
  if (!j) {
    err_set(e, ERR_PARSE, "%s:%d: %s", path, je.line, je.text);
    return NULL;
  }
  en = json_object_get(j, "entries");
  if (!json_is_object(j) || !json_is_object(en)) {
    err_set(e, ERR_PARSE, "%s: not a thresholds file (no \"entries\" object)",
            path);
    json_decref(j);
    return NULL;
  }
  return j;
}

static int entry_num(const json_t *o, const char *k, double *v, int opt)
{
  const json_t *j = json_object_get(o, k);

  if (!j && opt) {
    *v = 0;
    return 0;
  }
  if (!json_is_number(j))
    return -1;
  *v = json_number_value(j);
  return isfinite(*v) && *v >= 0 && *v < 1 ? 0 : -1;
}

int thresh_load(const char *cache_dir, const char *wl_name, const char *key,
                struct thresh *t, int *found, struct err *e)
{
  char path[WORKLOAD_PATH + 160];
  const json_t *en, *be;
  json_t *store;
  const char *bl;

  *found = 0;
  memset(t, 0, sizeof(*t));
  file_path(cache_dir, wl_name, path, sizeof(path));
  store = read_store(path, e);
  if (!store)
    return e->code;
  en = json_object_get(json_object_get(store, "entries"), key);
  if (!en) {
    json_decref(store);
    return 0;
  }
  be = json_object_get(en, "baseline_error");
  bl = json_string_value(json_object_get(en, "baseline"));
  if (!json_is_object(en) || !json_is_object(be) || !bl ||
      entry_num(en, "rel_l2", &t->rel_l2, 0) || !(t->rel_l2 > 0) ||
      entry_num(en, "row_rel_l2", &t->row, 1) ||
      entry_num(en, "block_rel_l2", &t->block, 1) ||
      entry_num(en, "floor", &t->floor, 0) ||
      entry_num(en, "cap", &t->cap, 0) ||
      entry_num(be, "rel_l2", &t->err_rel, 0) ||
      entry_num(be, "row_rel_l2", &t->err_row, 1) ||
      entry_num(be, "block_rel_l2", &t->err_block, 1)) {
    json_decref(store);
    return err_set(e, ERR_PARSE,
                   "%s: entry '%s' is malformed (thresholds must be numbers "
                   "in [0, 1)); remove the file to freeze them anew",
                   path, key);
  }
  snprintf(t->baseline, sizeof(t->baseline), "%s", bl);
  t->frozen_at = json_number_value(json_object_get(en, "frozen_at"));
  *found = 1;
  json_decref(store);
  return 0;
}

json_t *thresh_json(const struct thresh *t)
{
  return json_pack("{s:f, s:f, s:f, s:s, s:{s:f, s:f, s:f}, s:f, s:f, s:f}",
                   "rel_l2", t->rel_l2, "row_rel_l2", t->row, "block_rel_l2",
                   t->block, "baseline", t->baseline, "baseline_error",
                   "rel_l2", t->err_rel, "row_rel_l2",
                   t->err_row > 0 ? t->err_row : 0.0, "block_rel_l2",
                   t->err_block > 0 ? t->err_block : 0.0, "floor", t->floor,
                   "cap", t->cap, "frozen_at", t->frozen_at);
}

int thresh_store(const char *cache_dir, const char *wl_name, const char *key,
                 const struct thresh *t, int *stored, struct err *e)
{
  char dir[WORKLOAD_PATH + 32], path[WORKLOAD_PATH + 160];
  char lock[WORKLOAD_PATH + 170], *text = NULL;
  json_t *store = NULL, *en;
  int fd, rc = 0;

  *stored = 0;
  snprintf(dir, sizeof(dir), "%s/thresholds", cache_dir);
  if ((rc = file_mkdirs(dir, e)))
    return rc;
  file_path(cache_dir, wl_name, path, sizeof(path));
  snprintf(lock, sizeof(lock), "%s.lock", path);
  fd = open(lock, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0 || flock(fd, LOCK_EX)) {
    rc = err_set(e, ERR_IO, "%s: %s", lock, strerror(errno));
    goto out;
  }
  store = read_store(path, e);
  if (!store) {
    rc = e->code;
    goto out;
  }
  if (json_object_get(json_object_get(store, "entries"), key))
    goto out; /* frozen already (another eval was first) */
  en = thresh_json(t);
  if (!en) {
    rc = err_set(e, ERR_NOMEM, "out of memory");
    goto out;
  }
  json_object_set_new(json_object_get(store, "entries"), key, en);
  text = json_dumps(store, JSON_INDENT(1) | JSON_SORT_KEYS);
  if (!text) {
    rc = err_set(e, ERR_NOMEM, "out of memory");
    goto out;
  }
  if ((rc = file_write(path, text, strlen(text), e)))
    goto out;
  *stored = 1;
out:
  free(text);
  json_decref(store);
  if (fd >= 0)
    close(fd); /* releases the lock */
  return rc;
}
