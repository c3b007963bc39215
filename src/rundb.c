/* rundb.c - read-only access to a run database; see rundb.h. */
#include "rundb.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>

#include "buf.h"
#include "headline.h"
#include "linediff.h"

#define TEXT_CAP  (512u * 1024) /* logs, prompts, responses */
#define CODE_CAP  (2u * 1024 * 1024)
#define DIFF_CAP  (1u * 1024 * 1024)
#define ERROR_CAP 300 /* the one-line error of a summary */
#define PLOT_CAP                                                              \
  200 /* the short labels of a plot point (a cap of 0 cuts all) */

struct rundb {
  sqlite3 *db;
  long long run_id;
};

static int db_fail(struct rundb *db, struct err *e, const char *what)
{
  return err_set(e, ERR_DB, "%s: %s", what, sqlite3_errmsg(db->db));
}

/* Copy n bytes of s to a JSON string, replacing invalid UTF-8 with '?'
 * (jansson refuses invalid UTF-8) and cutting at cap with a note. */
static json_t *jstr(const char *s, size_t n, size_t cap)
{
  char *copy;
  size_t i = 0, k;
  json_t *j;
  int cut = n > cap;

  if (cut)
    n = cap;
  copy = malloc(n + 64);
  if (!copy)
    return NULL;
  memcpy(copy, s, n);
  while (i < n) {
    unsigned char c = (unsigned char)copy[i];
    size_t len = c < 0x80             ? 1
                 : (c & 0xe0) == 0xc0 ? 2
                 : (c & 0xf0) == 0xe0 ? 3
                 : (c & 0xf8) == 0xf0 ? 4
                                      : 0;
    int ok = len > 0 && i + len <= n;
    for (k = 1; ok && k < len; k++)
      ok = ((unsigned char)copy[i + k] & 0xc0) == 0x80;
    if (c == 0)
      ok = 0;
    if (!ok) {
      copy[i++] = '?';
      continue;
    }
    i += len;
  }
  if (cut)
    n += (size_t)snprintf(copy + n, 64, "\n[... cut at %zu bytes]", cap);
  j = json_stringn(copy, n);
  if (!j) {
    /* Overlong forms or surrogates passed the quick check: keep ASCII. */
    for (i = 0; i < n; i++)
      if ((unsigned char)copy[i] >= 0x80)
        copy[i] = '?';
    j = json_stringn(copy, n);
  }
  free(copy);
  return j;
}

/* The value of column i as JSON: numbers, text (capped), NULL; a column
 * whose name ends in _json is parsed and stored without the suffix. */
static int put_column(json_t *obj, sqlite3_stmt *st, int i, size_t cap)
{
  const char *name = sqlite3_column_name(st, i);
  size_t nl = strlen(name);
  json_t *v = NULL;
  char key[64];

  snprintf(key, sizeof key, "%s", name);
  switch (sqlite3_column_type(st, i)) {
  case SQLITE_INTEGER:
    v = json_integer(sqlite3_column_int64(st, i));
    break;
  case SQLITE_FLOAT: {
    double d = sqlite3_column_double(st, i);
    v = isfinite(d) ? json_real(d) : json_null();
    break;
  }
  case SQLITE_TEXT:
  case SQLITE_BLOB: {
    const char *t = (const char *)sqlite3_column_text(st, i);
    size_t n = (size_t)sqlite3_column_bytes(st, i);
    if (nl > 5 && !strcmp(name + nl - 5, "_json")) {
      key[nl - 5] = '\0';
      v = json_loadb(t ? t : "", n, JSON_DECODE_ANY, NULL);
    }
    if (!v)
      v = jstr(t ? t : "", n, cap);
    break;
  }
  default:
    v = json_null();
  }
  if (!v || json_object_set_new(obj, key, v))
    return ERR_NOMEM;
  return 0;
}

static json_t *row_json(sqlite3_stmt *st, size_t cap)
{
  json_t *o = json_object();
  int i, n = sqlite3_column_count(st);

  for (i = 0; o && i < n; i++)
    if (put_column(o, st, i, cap)) {
      json_decref(o);
      return NULL;
    }
  return o;
}

static int table_exists(sqlite3 *db, const char *name)
{
  sqlite3_stmt *st;
  int found = 0;

  if (sqlite3_prepare_v2(db,
                         "SELECT 1 FROM sqlite_master WHERE type='table' "
                         "AND name=?1",
                         -1, &st, NULL) != SQLITE_OK)
    return 0;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  found = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return found;
}

struct rundb *rundb_open(const char *path, struct err *e)
{
  struct rundb *db;
  sqlite3_stmt *st = NULL;
  struct stat sb;
  static const char *const tables[] = {"meta", "runs", "programs",
                                       "llm_calls"};
  size_t i;

  if (stat(path, &sb) || !S_ISREG(sb.st_mode)) {
    err_set(e, ERR_IO, "%s: no such database file", path);
    return NULL;
  }
  db = calloc(1, sizeof *db);
  if (!db) {
    err_set(e, ERR_NOMEM, "out of memory");
    return NULL;
  }
  if (sqlite3_open_v2(path, &db->db, SQLITE_OPEN_READONLY, NULL) !=
      SQLITE_OK) {
    db_fail(db, e, path);
    goto fail;
  }
  sqlite3_busy_timeout(db->db, 5000);
  for (i = 0; i < sizeof tables / sizeof tables[0]; i++)
    if (!table_exists(db->db, tables[i])) {
      err_set(e, ERR_DB, "%s: not a cuco run database (no table %s)", path,
              tables[i]);
      goto fail;
    }
  if (sqlite3_prepare_v2(db->db,
                         "SELECT value FROM meta WHERE "
                         "key='schema_version'",
                         -1, &st, NULL) != SQLITE_OK) {
    db_fail(db, e, path);
    goto fail;
  }
  /* schema 1 (before the confirmations table), 2 and 3 (programs.same_as,
   * not read here: a duplicate's status says what it is) read alike */
  if (sqlite3_step(st) != SQLITE_ROW || !sqlite3_column_text(st, 0) ||
      (strcmp((const char *)sqlite3_column_text(st, 0), "1") &&
       strcmp((const char *)sqlite3_column_text(st, 0), "2") &&
       strcmp((const char *)sqlite3_column_text(st, 0), "3"))) {
    err_set(e, ERR_DB, "%s: schema version is not 1, 2 or 3", path);
    goto fail;
  }
  sqlite3_finalize(st);
  if (sqlite3_prepare_v2(db->db, "SELECT max(id) FROM runs", -1, &st, NULL) !=
      SQLITE_OK) {
    db_fail(db, e, path);
    goto fail;
  }
  if (sqlite3_step(st) != SQLITE_ROW ||
      sqlite3_column_type(st, 0) == SQLITE_NULL) {
    err_set(e, ERR_DB, "%s: the database holds no run", path);
    goto fail;
  }
  db->run_id = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return db;
fail:
  sqlite3_finalize(st);
  rundb_close(db);
  return NULL;
}

void rundb_close(struct rundb *db)
{
  if (!db)
    return;
  sqlite3_close(db->db);
  free(db);
}

/* Run sql (with ?1 = run id and, when the statement has it, ?2 = arg) and
 * collect each row with row_json. */
static json_t *query_rows(struct rundb *db, const char *sql, long long arg,
                          size_t cap, struct err *e)
{
  sqlite3_stmt *st;
  json_t *arr, *row;
  int rc;

  if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK) {
    db_fail(db, e, "query");
    return NULL;
  }
  sqlite3_bind_int64(st, 1, db->run_id);
  if (sqlite3_bind_parameter_count(st) >= 2)
    sqlite3_bind_int64(st, 2, arg);
  arr = json_array();
  while (arr && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    row = row_json(st, cap);
    if (!row || json_array_append_new(arr, row)) {
      json_decref(arr);
      arr = NULL;
      err_set(e, ERR_NOMEM, "out of memory");
    }
  }
  if (arr && rc != SQLITE_DONE) {
    db_fail(db, e, "query");
    json_decref(arr);
    arr = NULL;
  }
  sqlite3_finalize(st);
  return arr;
}

/* The first row of a query as an object (NULL: none, *e says why). */
static json_t *query_one(struct rundb *db, const char *sql, long long arg,
                         size_t cap, struct err *e)
{
  json_t *rows = query_rows(db, sql, arg, cap, e), *one = NULL;

  if (!rows)
    return NULL;
  if (json_array_size(rows) == 0)
    err_set(e, ERR_NOTFOUND, "not found");
  else
    one = json_incref(json_array_get(rows, 0));
  json_decref(rows);
  return one;
}

/* The run's confirmations (schema 2; none before it) and its headline
 * (headline.h): the best's confirmed speedup, else its search figure
 * labelled unconfirmed.  Set on run; 0 or an error. */
static int run_headline(struct rundb *db, json_t *run, struct err *e)
{
  struct headline h;
  const json_t *b = json_object_get(run, "baseline");
  json_t *rows, *best;

  rows = table_exists(db->db, "confirmations")
             ? query_rows(db,
                          "SELECT id, program_id, versus_id, versus, rounds,"
                          " ratio, lo, hi, verdict FROM confirmations WHERE"
                          " run_id=?1 ORDER BY id",
                          0, PLOT_CAP, e)
             : json_array();
  if (!rows)
    return e->code ? e->code : ERR_NOMEM;
  memset(&h, 0, sizeof(h));
  h.program_id = json_integer_value(json_object_get(run, "best_program_id"));
  h.has_bar = json_is_object(b) && json_object_size(b) > 0;
  h.is_seed = h.program_id > 0 &&
              h.program_id ==
                  json_integer_value(json_object_get(run, "seed_program_id"));
  best = h.program_id > 0
             ? query_one(db,
                         "SELECT speedup FROM programs WHERE run_id=?1 AND"
                         " id=?2",
                         h.program_id, 0, e)
             : NULL;
  h.speedup = json_number_value(json_object_get(best, "speedup"));
  json_decref(best);
  headline_pick(&h, rows);
  json_object_set_new(run, "confirmations", rows);
  json_object_set_new(run, "headline", headline_json(&h));
  return 0;
}

json_t *rundb_run(struct rundb *db, struct err *e)
{
  json_t *run, *x;
  double t0, t1;

  run = query_one(db, "SELECT * FROM runs WHERE id=?1", 0, TEXT_CAP, e);
  if (!run)
    return NULL;
  x = query_one(db,
                /* migrate copies (a program copied to another island,
                 * not evaluated) and duplicates (a proposal that compiles
                 * to a program already evaluated, answered from it) are
                 * not candidates: counted apart, as cuco evolve's summary
                 * does */
                "SELECT coalesce(sum(c), 0) AS total,"
                " coalesce(sum(c AND status='ok'), 0) AS ok,"
                " coalesce(sum(c AND status='failed'), 0) AS failed,"
                " coalesce(sum(c AND status='rejected'), 0) AS rejected,"
                " coalesce(sum(c AND status='pending'), 0) AS pending,"
                " coalesce(sum(c AND status='running'), 0) AS running,"
                " coalesce(sum(c AND status='interrupted'), 0) AS"
                " interrupted,"
                " coalesce(sum(edit_kind IS 'migrate'), 0) AS migrated,"
                " coalesce(sum(status IS 'duplicate'), 0) AS duplicates,"
                " coalesce(sum(c AND json_valid(metrics_json) AND"
                " json_extract(metrics_json, '$.noise_watch') IS NOT NULL),"
                " 0) AS noise_repeated, max(id) AS max_id,"
                " max(max(coalesce(created_at,0), coalesce(started_at,0),"
                " coalesce(finished_at,0))) AS max_t"
                " FROM (SELECT *, edit_kind IS NOT 'migrate' AND status IS"
                " NOT 'duplicate' AS c FROM"
                " programs WHERE run_id=?1)",
                0, 0, e);
  if (!x)
    goto fail;
  json_object_set_new(run, "counts", x);
  x = query_rows(db,
                 "SELECT DISTINCT island FROM programs WHERE run_id=?1 AND"
                 " island IS NOT NULL ORDER BY island",
                 0, 0, e);
  if (!x)
    goto fail;
  {
    json_t *isl = json_array(), *r;
    size_t i;
    json_array_foreach(x, i, r)
        json_array_append(isl, json_object_get(r, "island"));
    json_decref(x);
    json_object_set_new(run, "islands", isl);
  }
  x = query_one(db,
                "SELECT count(*) AS calls, coalesce(sum(tokens_in),0) AS"
                " tokens_in, coalesce(sum(tokens_out),0) AS tokens_out,"
                " coalesce(sum(cost_usd),0.0) AS cost_usd,"
                " sum(outcome IS NOT NULL AND outcome!='ok') AS failed"
                " FROM llm_calls WHERE run_id=?1",
                0, 0, e);
  if (!x)
    goto fail;
  json_object_set_new(run, "llm_totals", x);
  if (run_headline(db, run, e))
    goto fail;
  t0 = json_number_value(json_object_get(run, "started_at"));
  t1 = json_number_value(json_object_get(run, "finished_at"));
  if (t0 > 0 && !(t1 > 0))
    t1 = (double)time(NULL);
  json_object_set_new(run, "wall_s",
                      t0 > 0 ? json_real(t1 - t0) : json_null());
  return run;
fail:
  json_decref(run);
  return NULL;
}

#define SUMMARY_COLS                                                          \
  "id, parent_id, parent2_id, island, generation, edit_kind, phase,"          \
  " status, stage, score, median_ms, noise_ms, speedup, directives_json,"     \
  " backend, placement, sync, issuer, chunk_bytes, llm_call_id,"              \
  " created_at, started_at, finished_at,"                                     \
  " max(coalesce(created_at,0), coalesce(started_at,0),"                      \
  " coalesce(finished_at,0)) AS updated_at"

/* Drop the folder of a finished evaluation ("/tmp/cuco-eval.Ab12Cd/")
 * from the paths of S (N bytes, in place): the folder is gone by the time
 * anyone reads the error, its file name is what says where.  The new
 * length. */
static size_t strip_eval_dirs(char *s, size_t n)
{
  static const char mark[] = "cuco-eval.";
  size_t ml = sizeof(mark) - 1, i = 0;

  while (i + ml + 7 <= n) {
    size_t a = i, end = i + ml + 6, k;
    int ok = !memcmp(s + i, mark, ml) && s[end] == '/';
    for (k = i + ml; ok && k < end; k++)
      ok = isalnum((unsigned char)s[k]) || s[k] == '_';
    if (!ok) {
      i++;
      continue;
    }
    while (a > 0 && !strchr(" \t'\"(=:", s[a - 1]))
      a--; /* back to the start of the path */
    memmove(s + a, s + end + 1, n - end - 1);
    n -= end + 1 - a;
    i = a;
  }
  return n;
}

/* strip_eval_dirs on the text of row's KEY (left as it is when out of
 * memory). */
static void strip_field(json_t *row, const char *key)
{
  const char *s = json_string_value(json_object_get(row, key));
  size_t n = s ? strlen(s) : 0;
  char *c;

  if (!s || !strstr(s, "cuco-eval.") || !(c = malloc(n + 1)))
    return;
  memcpy(c, s, n);
  n = strip_eval_dirs(c, n);
  json_object_set_new(row, key, jstr(c, n, n));
  free(c);
}

/* Cut a summary's error to its first line and ERROR_CAP bytes. */
static void first_line_error(json_t *row)
{
  const char *s = json_string_value(json_object_get(row, "error"));
  char line[ERROR_CAP + 1];
  size_t n;

  if (!s)
    return;
  n = strcspn(s, "\n");
  if (n > ERROR_CAP)
    n = ERROR_CAP;
  memcpy(line, s, n);
  n = strip_eval_dirs(line, n);
  /* Cutting can split a UTF-8 sequence; jstr repairs that. */
  json_object_set_new(row, "error", jstr(line, n, ERROR_CAP));
}

json_t *rundb_programs(struct rundb *db, const struct rundb_filter *f,
                       struct err *e)
{
  static const char sql[] =
      "SELECT " SUMMARY_COLS ", error FROM programs WHERE run_id=?1"
      " AND (?2 < 0 OR island=?2) AND (?3 IS NULL OR status=?3)"
      " AND (?4 IS NULL OR edit_kind=?4)"
      " AND (?5 = 0 OR id > ?6 OR (?7 > 0 AND max(coalesce(created_at,0),"
      " coalesce(started_at,0), coalesce(finished_at,0)) > ?7))"
      " ORDER BY id";
  sqlite3_stmt *st;
  json_t *arr, *row;
  int rc;

  if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK) {
    db_fail(db, e, "programs");
    return NULL;
  }
  sqlite3_bind_int64(st, 1, db->run_id);
  sqlite3_bind_int(st, 2, f->island);
  if (f->status)
    sqlite3_bind_text(st, 3, f->status, -1, SQLITE_STATIC);
  if (f->edit_kind)
    sqlite3_bind_text(st, 4, f->edit_kind, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 5, f->changes_only);
  sqlite3_bind_int64(st, 6, f->since_id);
  sqlite3_bind_double(st, 7, f->after_t);
  arr = json_array();
  while (arr && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    row = row_json(st, TEXT_CAP);
    if (!row || json_array_append_new(arr, row)) {
      json_decref(arr);
      arr = NULL;
      err_set(e, ERR_NOMEM, "out of memory");
      break;
    }
    first_line_error(row);
  }
  if (arr && rc != SQLITE_DONE) {
    db_fail(db, e, "programs");
    json_decref(arr);
    arr = NULL;
  }
  sqlite3_finalize(st);
  return arr;
}

/* The code of program id ("" when NULL); NULL + *e when missing. */
static char *program_code(struct rundb *db, long long id, struct err *e)
{
  sqlite3_stmt *st;
  char *code = NULL;

  if (sqlite3_prepare_v2(db->db,
                         "SELECT code FROM programs WHERE id=?1 AND"
                         " run_id=?2",
                         -1, &st, NULL) != SQLITE_OK) {
    db_fail(db, e, "code");
    return NULL;
  }
  sqlite3_bind_int64(st, 1, id);
  sqlite3_bind_int64(st, 2, db->run_id);
  if (sqlite3_step(st) == SQLITE_ROW) {
    const char *t = (const char *)sqlite3_column_text(st, 0);
    code = strdup(t ? t : "");
    if (!code)
      err_set(e, ERR_NOMEM, "out of memory");
  } else {
    err_set(e, ERR_NOTFOUND, "program %lld not found", id);
  }
  sqlite3_finalize(st);
  return code;
}

char *rundb_diff(struct rundb *db, long long a, long long b, struct err *e)
{
  char *ca = program_code(db, a, e), *cb = NULL, *out = NULL;
  char la[48], lb[48];
  struct buf d = BUF_INIT(DIFF_CAP);
  int rc;

  if (!ca)
    return NULL;
  cb = program_code(db, b, e);
  if (!cb)
    goto done;
  snprintf(la, sizeof la, "program %lld", a);
  snprintf(lb, sizeof lb, "program %lld", b);
  rc = linediff_unified(ca, cb, la, lb, 3, &d, NULL, e);
  /* A diff cut at its cap is still worth showing. */
  if (rc == 0 || rc == ERR_TOOBIG)
    out = buf_detach(&d, NULL);
done:
  buf_release(&d);
  free(ca);
  free(cb);
  return out;
}

json_t *rundb_program(struct rundb *db, long long id, struct err *e)
{
  json_t *p, *x;
  long long parent, call;
  char *diff;

  p = query_one(db,
                "SELECT " SUMMARY_COLS ", code, metrics_json, build_log,"
                " verify_log, error, rationale, code_hash FROM programs"
                " WHERE run_id=?1 AND id=?2",
                id, CODE_CAP, e);
  if (!p) {
    if (e && e->code == ERR_NOTFOUND)
      err_set(e, ERR_NOTFOUND, "program %lld not found", id);
    return NULL;
  }
  strip_field(p, "error");
  strip_field(p, "build_log");
  strip_field(p, "verify_log");
  x = query_rows(db,
                 "SELECT id FROM programs WHERE run_id=?1 AND (parent_id=?2"
                 " OR parent2_id=?2) ORDER BY id",
                 id, 0, e);
  if (!x)
    goto fail;
  {
    json_t *kids = json_array(), *r;
    size_t i;
    json_array_foreach(x, i, r)
        json_array_append(kids, json_object_get(r, "id"));
    json_decref(x);
    json_object_set_new(p, "children", kids);
  }
  parent = json_integer_value(json_object_get(p, "parent_id"));
  if (parent > 0) {
    diff = rundb_diff(db, parent, id, e);
    if (!diff && e->code != ERR_NOTFOUND)
      goto fail;
    json_object_set_new(
        p, "diff_to_parent",
        jstr(diff ? diff : "", diff ? strlen(diff) : 0, DIFF_CAP));
    free(diff);
  } else {
    json_object_set_new(p, "diff_to_parent", json_string(""));
  }
  call = json_integer_value(json_object_get(p, "llm_call_id"));
  if (call > 0)
    x = query_rows(db, "SELECT * FROM llm_calls WHERE run_id=?1 AND id=?2",
                   call, TEXT_CAP, e);
  else
    x = query_rows(db,
                   "SELECT * FROM llm_calls WHERE run_id=?1 AND"
                   " program_id=?2 ORDER BY id LIMIT 1",
                   id, TEXT_CAP, e);
  if (!x)
    goto fail;
  json_object_set(p, "llm",
                  json_array_size(x) ? json_array_get(x, 0) : json_null());
  json_decref(x);
  return p;
fail:
  json_decref(p);
  return NULL;
}

json_t *rundb_plot(struct rundb *db, struct err *e)
{
  static const char *const dims[] = {"backend", "placement", "sync", "issuer",
                                     "chunk_bytes"};
  json_t *plot = json_object(), *x, *by;
  char sql[512];
  size_t i;

  x = query_rows(
      db,
      "SELECT id, parent_id, island, generation, edit_kind, status,"
      " stage, score, speedup, median_ms, created_at, finished_at FROM"
      " programs WHERE run_id=?1 AND status IN"
      " ('ok','failed','rejected') ORDER BY id",
      0, PLOT_CAP, e);
  if (!x)
    goto fail;
  json_object_set_new(plot, "points", x);
  by = json_object();
  json_object_set_new(plot, "by_directive", by);
  /* The column names are the constants above, never input. */
  for (i = 0; i < sizeof dims / sizeof dims[0]; i++) {
    snprintf(sql, sizeof sql,
             "SELECT %s AS value, count(*) AS n, sum(status='ok') AS n_ok,"
             " max(score) AS best, avg(score) AS mean FROM programs WHERE"
             " run_id=?1 AND status IN ('ok','failed','rejected') AND %s"
             " IS NOT NULL GROUP BY %s ORDER BY %s",
             dims[i], dims[i], dims[i], dims[i]);
    x = query_rows(db, sql, 0, PLOT_CAP, e);
    if (!x)
      goto fail;
    json_object_set_new(by, dims[i], x);
  }
  /* CUCO-PARAM knobs: one dimension "params.NAME" per knob. */
  x = query_rows(db,
                 "SELECT j.key AS dim, j.value AS value, count(*) AS n,"
                 " sum(status='ok') AS n_ok, max(score) AS best, avg(score)"
                 " AS mean FROM programs, json_each(CASE WHEN"
                 " json_valid(directives_json) THEN directives_json ELSE"
                 " '{}' END, '$.params') AS j WHERE run_id=?1 AND status IN"
                 " ('ok','failed','rejected') AND j.key IS NOT NULL AND"
                 " j.type IN ('text','integer','real') GROUP BY j.key,"
                 " j.value ORDER BY j.key, j.value",
                 0, PLOT_CAP, e);
  if (!x)
    goto fail;
  {
    json_t *r;
    char key[96];
    json_array_foreach(x, i, r)
    {
      json_t *arr;
      snprintf(key, sizeof key, "params.%s",
               json_string_value(json_object_get(r, "dim"))
                   ? json_string_value(json_object_get(r, "dim"))
                   : "?");
      arr = json_object_get(by, key);
      if (!arr) {
        arr = json_array();
        json_object_set_new(by, key, arr);
      }
      json_object_del(r, "dim");
      json_array_append(arr, r);
    }
    json_decref(x);
  }
  x = query_rows(db,
                 "SELECT id, created_at AS t, purpose, coalesce(cost_usd,0)"
                 " AS cost_usd, sum(coalesce(cost_usd,0)) OVER (ORDER BY"
                 " created_at, id) AS cum_usd FROM llm_calls WHERE"
                 " run_id=?1 ORDER BY created_at, id",
                 0, PLOT_CAP, e);
  if (!x)
    goto fail;
  json_object_set_new(plot, "cost", x);
  return plot;
fail:
  json_decref(plot);
  return NULL;
}
