/* db.c - the run database: schema, migrations, runs, programs, llm calls.
 *
 * Every value goes through sqlite3_bind_*; SQL text is only ever one of
 * the constant strings below (column names for the setters come from a
 * fixed allow-list, never from input).
 */
#include "db.h"
#include "llm.h"
#include "redact.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct db {
  sqlite3 *h;
  int readonly;
};

/* Migration i brings the schema from version i to i + 1.  Append only:
 * a released migration is never edited. */
static const char *const migrations[] = {
    /* 0 -> 1: docs/contracts.md section 5 */
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY, workload TEXT NOT NULL, workload_dir TEXT,"
    " started_at REAL, finished_at REAL, status TEXT,"
    " config_json TEXT, machine_json TEXT, baseline_json TEXT,"
    " seed_program_id INTEGER, best_program_id INTEGER,"
    " llm TEXT, budget_usd REAL, spent_usd REAL DEFAULT 0);"
    "CREATE TABLE programs ("
    " id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL,"
    " parent_id INTEGER, parent2_id INTEGER, island INTEGER,"
    " generation INTEGER, edit_kind TEXT, phase TEXT,"
    " code TEXT, code_hash TEXT, directives_json TEXT,"
    " backend TEXT, placement TEXT, sync TEXT, issuer TEXT,"
    " chunk_bytes INTEGER, status TEXT, stage TEXT,"
    " error TEXT, build_log TEXT, verify_log TEXT, metrics_json TEXT,"
    " score REAL, median_ms REAL, noise_ms REAL, speedup REAL,"
    " llm_call_id INTEGER, rationale TEXT,"
    " created_at REAL, started_at REAL, finished_at REAL);"
    "CREATE INDEX programs_run ON programs(run_id, status);"
    "CREATE INDEX programs_hash ON programs(run_id, code_hash);"
    "CREATE TABLE llm_calls ("
    " id INTEGER PRIMARY KEY, run_id INTEGER, program_id INTEGER,"
    " provider TEXT, model TEXT, purpose TEXT, prompt TEXT, response TEXT,"
    " tokens_in INTEGER, tokens_out INTEGER, cost_usd REAL,"
    " latency_s REAL, outcome TEXT, error TEXT, created_at REAL);"
    "CREATE TABLE meta_summaries ("
    " id INTEGER PRIMARY KEY, run_id INTEGER, island INTEGER,"
    " generation INTEGER, text TEXT, created_at REAL);",
    /* 1 -> 2: end-of-run confirmations (docs/evolve.md) */
    "CREATE TABLE confirmations ("
    " id INTEGER PRIMARY KEY, run_id INTEGER, program_id INTEGER,"
    " versus_id INTEGER, versus TEXT, rounds INTEGER, ratio REAL, lo REAL,"
    " hi REAL, verdict TEXT, samples_json TEXT, created_at REAL);",
    /* 2 -> 3: one program, one evaluation (issue 49): a proposal that
     * compiles to a program already evaluated is a row of status
     * 'duplicate' that names the program answering it */
    "ALTER TABLE programs ADD COLUMN same_as INTEGER;",
};
#define NMIGRATIONS (sizeof(migrations) / sizeof(migrations[0]))

double db_now(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int db_fail(struct db *db, struct err *e, const char *what)
{
  return err_set(e, ERR_DB, "database: %s: %s", what,
                 db && db->h ? sqlite3_errmsg(db->h) : "no handle");
}

static char *dup_col(sqlite3_stmt *st, int i)
{
  const unsigned char *t = sqlite3_column_text(st, i);

  return t ? strdup((const char *)t) : NULL;
}

static int64_t int_col(sqlite3_stmt *st, int i)
{
  return sqlite3_column_type(st, i) == SQLITE_NULL
             ? 0
             : (int64_t)sqlite3_column_int64(st, i);
}

static double real_col(sqlite3_stmt *st, int i, double null_value)
{
  return sqlite3_column_type(st, i) == SQLITE_NULL
             ? null_value
             : sqlite3_column_double(st, i);
}

/* Bind helpers: NULL pointers and "unset" markers become SQL NULL.  Text
 * goes through redact.h: no configured secret reaches the database. */
static int bind_text(sqlite3_stmt *st, int i, const char *s)
{
  char *r;
  int rc;

  if (!s)
    return sqlite3_bind_null(st, i);
  if (!redact_has(s))
    return sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
  r = redact_text(s);
  rc = r ? sqlite3_bind_text(st, i, r, -1, SQLITE_TRANSIENT)
         : sqlite3_bind_text(st, i, REDACT_MARK, -1, SQLITE_STATIC);
  free(r);
  return rc;
}

static int bind_id(sqlite3_stmt *st, int i, int64_t v)
{
  return v ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
}

static int bind_real_opt(sqlite3_stmt *st, int i, double v)
{
  return v >= 0 ? sqlite3_bind_double(st, i, v) : sqlite3_bind_null(st, i);
}

static int prepare(struct db *db, const char *sql, sqlite3_stmt **st,
                   struct err *e)
{
  if (sqlite3_prepare_v2(db->h, sql, -1, st, NULL) != SQLITE_OK)
    return db_fail(db, e, "prepare");
  return 0;
}

/* Step a statement that returns no rows and finalize it. */
static int step_done(struct db *db, sqlite3_stmt *st, const char *what,
                     struct err *e)
{
  int rc = sqlite3_step(st);

  if (rc != SQLITE_DONE) {
    db_fail(db, e, what);
    sqlite3_finalize(st);
    return ERR_DB;
  }
  sqlite3_finalize(st);
  return 0;
}

int db_exec(struct db *db, const char *sql, struct err *e)
{
  char *msg = NULL;

  if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
    err_set(e, ERR_DB, "database: %s", msg ? msg : sqlite3_errmsg(db->h));
    sqlite3_free(msg);
    return ERR_DB;
  }
  return 0;
}

int db_begin(struct db *db, struct err *e)
{
  return db_exec(db, "BEGIN IMMEDIATE", e);
}

int db_commit(struct db *db, struct err *e)
{
  return db_exec(db, "COMMIT", e);
}

void db_rollback(struct db *db)
{
  (void)sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

char *db_meta_get(struct db *db, const char *key)
{
  sqlite3_stmt *st;
  char *v = NULL;

  if (sqlite3_prepare_v2(db->h, "SELECT value FROM meta WHERE key = ?", -1,
                         &st, NULL) != SQLITE_OK)
    return NULL; /* no meta table yet */
  sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st) == SQLITE_ROW)
    v = dup_col(st, 0);
  sqlite3_finalize(st);
  return v;
}

int db_meta_set(struct db *db, const char *key, const char *value,
                struct err *e)
{
  sqlite3_stmt *st;

  if (prepare(db, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
              &st, e))
    return ERR_DB;
  bind_text(st, 1, key);
  bind_text(st, 2, value);
  return step_done(db, st, "meta", e);
}

int db_schema_version(struct db *db)
{
  char *v = db_meta_get(db, "schema_version");
  char *end = NULL;
  long n = 0;

  if (v) {
    n = strtol(v, &end, 10);
    if (end == v || *end)
      n = 0;
  }
  free(v);
  return (int)n;
}

/* Bring the schema up to DB_SCHEMA_VERSION, one transaction per step. */
static int migrate(struct db *db, struct err *e)
{
  int v = db_schema_version(db);
  char num[16];

  if (v > DB_SCHEMA_VERSION)
    return err_set(e, ERR_DB,
                   "database: schema version %d is newer than this cuco "
                   "(%d)",
                   v, DB_SCHEMA_VERSION);
  for (; v < (int)NMIGRATIONS; v++) {
    if (db_begin(db, e))
      return ERR_DB;
    snprintf(num, sizeof(num), "%d", v + 1);
    if (db_exec(db, migrations[v], e) ||
        db_meta_set(db, "schema_version", num, e)) {
      db_rollback(db);
      return err_wrap(e, "migration to schema %d", v + 1);
    }
    if (db_commit(db, e))
      return ERR_DB;
  }
  return 0;
}

int db_open(const char *path, int readonly, struct db **out, struct err *e)
{
  struct db *db = calloc(1, sizeof(*db));
  int flags = readonly ? SQLITE_OPEN_READONLY
                       : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;

  *out = NULL;
  if (!db)
    return err_set(e, ERR_NOMEM, "database: out of memory");
  db->readonly = readonly;
  if (sqlite3_open_v2(path, &db->h, flags | SQLITE_OPEN_NOMUTEX, NULL) !=
      SQLITE_OK) {
    err_set(e, ERR_DB, "database %s: %s", path,
            db->h ? sqlite3_errmsg(db->h) : "cannot open");
    goto out_close;
  }
  sqlite3_busy_timeout(db->h, 30000);
  if (!readonly) {
    if (db_exec(db, "PRAGMA journal_mode=WAL", e) ||
        db_exec(db, "PRAGMA synchronous=NORMAL", e) ||
        db_exec(db, "PRAGMA foreign_keys=ON", e) || migrate(db, e)) {
      err_wrap(e, "%s", path);
      goto out_close;
    }
  } else {
    int v = db_schema_version(db);
    if (v < 1 || v > DB_SCHEMA_VERSION) {
      err_set(e, ERR_DB,
              "database %s: not a cuco run database "
              "(schema version %d)",
              path, v);
      goto out_close;
    }
  }
  *out = db;
  return 0;
out_close:
  sqlite3_close(db->h);
  free(db);
  return e ? e->code : ERR_DB;
}

void db_close(struct db *db)
{
  if (!db)
    return;
  sqlite3_close(db->h);
  free(db);
}

/* ---- runs ---- */

int db_run_create(struct db *db, struct db_run *r, struct err *e)
{
  sqlite3_stmt *st;

  if (prepare(db,
              "INSERT INTO runs (workload, workload_dir, started_at, status,"
              " config_json, machine_json, baseline_json, llm, budget_usd,"
              " spent_usd) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, 0)",
              &st, e))
    return ERR_DB;
  r->started_at = db_now();
  bind_text(st, 1, r->workload ? r->workload : "");
  bind_text(st, 2, r->workload_dir);
  sqlite3_bind_double(st, 3, r->started_at);
  bind_text(st, 4, r->config_json);
  bind_text(st, 5, r->machine_json);
  bind_text(st, 6, r->baseline_json);
  bind_text(st, 7, r->llm);
  bind_real_opt(st, 8, r->budget_usd);
  if (step_done(db, st, "insert run", e))
    return ERR_DB;
  r->id = (int64_t)sqlite3_last_insert_rowid(db->h);
  return 0;
}

void db_run_release(struct db_run *r)
{
  if (!r)
    return;
  free(r->workload);
  free(r->workload_dir);
  free(r->status);
  free(r->config_json);
  free(r->machine_json);
  free(r->baseline_json);
  free(r->llm);
  memset(r, 0, sizeof(*r));
}

int db_run_latest(struct db *db, struct db_run *r, struct err *e)
{
  sqlite3_stmt *st;
  int rc;

  memset(r, 0, sizeof(*r));
  if (prepare(db,
              "SELECT id, workload, workload_dir, started_at, finished_at,"
              " status, config_json, machine_json, baseline_json,"
              " seed_program_id, best_program_id, llm, budget_usd,"
              " spent_usd FROM runs ORDER BY id DESC LIMIT 1",
              &st, e))
    return ERR_DB;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    r->id = int_col(st, 0);
    r->workload = dup_col(st, 1);
    r->workload_dir = dup_col(st, 2);
    r->started_at = real_col(st, 3, 0);
    r->finished_at = real_col(st, 4, 0);
    r->status = dup_col(st, 5);
    r->config_json = dup_col(st, 6);
    r->machine_json = dup_col(st, 7);
    r->baseline_json = dup_col(st, 8);
    r->seed_program_id = int_col(st, 9);
    r->best_program_id = int_col(st, 10);
    r->llm = dup_col(st, 11);
    r->budget_usd = real_col(st, 12, -1);
    r->spent_usd = real_col(st, 13, 0);
    sqlite3_finalize(st);
    return 0;
  }
  sqlite3_finalize(st);
  if (rc == SQLITE_DONE)
    return err_set(e, ERR_NOTFOUND, "database: no run recorded");
  return db_fail(db, e, "load run");
}

int db_run_set_status(struct db *db, int64_t run_id, const char *status,
                      int finished, struct err *e)
{
  sqlite3_stmt *st;

  if (prepare(db,
              "UPDATE runs SET status = ?, finished_at = CASE WHEN ? THEN ?"
              " ELSE finished_at END WHERE id = ?",
              &st, e))
    return ERR_DB;
  bind_text(st, 1, status);
  sqlite3_bind_int(st, 2, finished);
  sqlite3_bind_double(st, 3, db_now());
  sqlite3_bind_int64(st, 4, run_id);
  return step_done(db, st, "run status", e);
}

/* The run columns a caller may set by name: a fixed allow-list, so the
 * SQL text never contains input. */
static const char *run_column_sql(const char *column)
{
  static const char *const cols[][2] = {
      {"config_json", "UPDATE runs SET config_json = ? WHERE id = ?"},
      {"machine_json", "UPDATE runs SET machine_json = ? WHERE id = ?"},
      {"baseline_json", "UPDATE runs SET baseline_json = ? WHERE id = ?"},
      {"llm", "UPDATE runs SET llm = ? WHERE id = ?"},
      {"seed_program_id", "UPDATE runs SET seed_program_id = ? WHERE id = ?"},
      {"best_program_id", "UPDATE runs SET best_program_id = ? WHERE id = ?"},
  };
  size_t i;

  for (i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
    if (!strcmp(cols[i][0], column))
      return cols[i][1];
  return NULL;
}

int db_run_set_text(struct db *db, int64_t run_id, const char *column,
                    const char *value, struct err *e)
{
  const char *sql = run_column_sql(column);
  sqlite3_stmt *st;

  if (!sql || strstr(column, "_id"))
    return err_set(e, ERR_INTERNAL, "database: no text column runs.%s",
                   column);
  if (prepare(db, sql, &st, e))
    return ERR_DB;
  bind_text(st, 1, value);
  sqlite3_bind_int64(st, 2, run_id);
  return step_done(db, st, "update run", e);
}

int db_run_set_program(struct db *db, int64_t run_id, const char *column,
                       int64_t program_id, struct err *e)
{
  const char *sql = run_column_sql(column);
  sqlite3_stmt *st;

  if (!sql || !strstr(column, "_id"))
    return err_set(e, ERR_INTERNAL, "database: no id column runs.%s", column);
  if (prepare(db, sql, &st, e))
    return ERR_DB;
  bind_id(st, 1, program_id);
  sqlite3_bind_int64(st, 2, run_id);
  return step_done(db, st, "update run", e);
}

int db_run_add_spent(struct db *db, int64_t run_id, double usd, struct err *e)
{
  sqlite3_stmt *st;

  if (prepare(db,
              "UPDATE runs SET spent_usd = COALESCE(spent_usd, 0) + ?"
              " WHERE id = ?",
              &st, e))
    return ERR_DB;
  sqlite3_bind_double(st, 1, usd);
  sqlite3_bind_int64(st, 2, run_id);
  return step_done(db, st, "run spent", e);
}

/* ---- programs ---- */

void db_program_init(struct db_program *p)
{
  memset(p, 0, sizeof(*p));
  p->median_ms = p->noise_ms = p->speedup = -1;
}

void db_program_release(struct db_program *p)
{
  if (!p)
    return;
  free(p->edit_kind);
  free(p->phase);
  free(p->code);
  free(p->code_hash);
  free(p->directives_json);
  free(p->backend);
  free(p->placement);
  free(p->sync);
  free(p->issuer);
  free(p->status);
  free(p->stage);
  free(p->error);
  free(p->build_log);
  free(p->verify_log);
  free(p->metrics_json);
  free(p->rationale);
  db_program_init(p);
}

int db_program_insert(struct db *db, struct db_program *p, struct err *e)
{
  sqlite3_stmt *st;

  if (prepare(db,
              "INSERT INTO programs (run_id, parent_id, parent2_id, island,"
              " generation, edit_kind, phase, code, code_hash,"
              " directives_json, backend, placement, sync, issuer,"
              " chunk_bytes, status, stage, error, metrics_json, score,"
              " median_ms, noise_ms, speedup, llm_call_id, rationale,"
              " created_at, finished_at, same_as) VALUES (?, ?, ?, ?, ?, ?,"
              " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
              " ?, ?)",
              &st, e))
    return ERR_DB;
  p->created_at = db_now();
  sqlite3_bind_int64(st, 1, p->run_id);
  bind_id(st, 2, p->parent_id);
  bind_id(st, 3, p->parent2_id);
  sqlite3_bind_int(st, 4, p->island);
  sqlite3_bind_int(st, 5, p->generation);
  bind_text(st, 6, p->edit_kind);
  bind_text(st, 7, p->phase);
  bind_text(st, 8, p->code);
  bind_text(st, 9, p->code_hash);
  bind_text(st, 10, p->directives_json);
  bind_text(st, 11, p->backend);
  bind_text(st, 12, p->placement);
  bind_text(st, 13, p->sync);
  bind_text(st, 14, p->issuer);
  bind_id(st, 15, p->chunk_bytes);
  bind_text(st, 16, p->status ? p->status : "pending");
  bind_text(st, 17, p->stage);
  bind_text(st, 18, p->error);
  bind_text(st, 19, p->metrics_json);
  if (p->has_score)
    sqlite3_bind_double(st, 20, p->score);
  else
    sqlite3_bind_null(st, 20);
  bind_real_opt(st, 21, p->median_ms);
  bind_real_opt(st, 22, p->noise_ms);
  bind_real_opt(st, 23, p->speedup);
  bind_id(st, 24, p->llm_call_id);
  bind_text(st, 25, p->rationale);
  sqlite3_bind_double(st, 26, p->created_at);
  if (p->finished_at > 0)
    sqlite3_bind_double(st, 27, p->finished_at);
  else
    sqlite3_bind_null(st, 27);
  bind_id(st, 28, p->same_as);
  if (step_done(db, st, "insert program", e))
    return ERR_DB;
  p->id = (int64_t)sqlite3_last_insert_rowid(db->h);
  return 0;
}

int db_program_start(struct db *db, int64_t id, struct err *e)
{
  sqlite3_stmt *st;

  if (prepare(db,
              "UPDATE programs SET status = 'running', started_at = ?"
              " WHERE id = ?",
              &st, e))
    return ERR_DB;
  sqlite3_bind_double(st, 1, db_now());
  sqlite3_bind_int64(st, 2, id);
  return step_done(db, st, "start program", e);
}

int db_program_finish(struct db *db, const struct db_program *p, struct err *e)
{
  sqlite3_stmt *st;

  if (prepare(db,
              "UPDATE programs SET status = ?, stage = ?, error = ?,"
              " build_log = ?, verify_log = ?, metrics_json = ?, score = ?,"
              " median_ms = ?, noise_ms = ?, speedup = ?,"
              " directives_json = COALESCE(?, directives_json),"
              " backend = COALESCE(?, backend),"
              " placement = COALESCE(?, placement),"
              " sync = COALESCE(?, sync), issuer = COALESCE(?, issuer),"
              " chunk_bytes = COALESCE(?, chunk_bytes), finished_at = ?"
              " WHERE id = ?",
              &st, e))
    return ERR_DB;
  bind_text(st, 1, p->status);
  bind_text(st, 2, p->stage);
  bind_text(st, 3, p->error);
  bind_text(st, 4, p->build_log);
  bind_text(st, 5, p->verify_log);
  bind_text(st, 6, p->metrics_json);
  if (p->has_score)
    sqlite3_bind_double(st, 7, p->score);
  else
    sqlite3_bind_null(st, 7);
  bind_real_opt(st, 8, p->median_ms);
  bind_real_opt(st, 9, p->noise_ms);
  bind_real_opt(st, 10, p->speedup);
  bind_text(st, 11, p->directives_json);
  bind_text(st, 12, p->backend);
  bind_text(st, 13, p->placement);
  bind_text(st, 14, p->sync);
  bind_text(st, 15, p->issuer);
  bind_id(st, 16, p->chunk_bytes);
  sqlite3_bind_double(st, 17, db_now());
  sqlite3_bind_int64(st, 18, p->id);
  return step_done(db, st, "finish program", e);
}

int db_program_set_llm(struct db *db, int64_t id, int64_t llm_call_id,
                       const char *rationale, struct err *e)
{
  sqlite3_stmt *st;

  if (prepare(db,
              "UPDATE programs SET llm_call_id = ?, rationale = ?"
              " WHERE id = ?",
              &st, e))
    return ERR_DB;
  bind_id(st, 1, llm_call_id);
  bind_text(st, 2, rationale);
  sqlite3_bind_int64(st, 3, id);
  return step_done(db, st, "program llm", e);
}

#define PROGRAM_COLS                                                          \
  "id, run_id, parent_id, parent2_id, island, generation, edit_kind,"         \
  " phase, code_hash, directives_json, backend, placement, sync, issuer,"     \
  " chunk_bytes, status, stage, error, metrics_json, score, median_ms,"       \
  " noise_ms, speedup, llm_call_id, rationale, created_at, started_at,"       \
  " finished_at, same_as"
#define PROGRAM_CODE_COLS ", code, build_log, verify_log"

static void read_program(sqlite3_stmt *st, int with_code, struct db_program *p)
{
  db_program_init(p);
  p->id = int_col(st, 0);
  p->run_id = int_col(st, 1);
  p->parent_id = int_col(st, 2);
  p->parent2_id = int_col(st, 3);
  p->island = (int)int_col(st, 4);
  p->generation = (int)int_col(st, 5);
  p->edit_kind = dup_col(st, 6);
  p->phase = dup_col(st, 7);
  p->code_hash = dup_col(st, 8);
  p->directives_json = dup_col(st, 9);
  p->backend = dup_col(st, 10);
  p->placement = dup_col(st, 11);
  p->sync = dup_col(st, 12);
  p->issuer = dup_col(st, 13);
  p->chunk_bytes = int_col(st, 14);
  p->status = dup_col(st, 15);
  p->stage = dup_col(st, 16);
  p->error = dup_col(st, 17);
  p->metrics_json = dup_col(st, 18);
  p->has_score = sqlite3_column_type(st, 19) != SQLITE_NULL;
  p->score = real_col(st, 19, 0);
  p->median_ms = real_col(st, 20, -1);
  p->noise_ms = real_col(st, 21, -1);
  p->speedup = real_col(st, 22, -1);
  p->llm_call_id = int_col(st, 23);
  p->rationale = dup_col(st, 24);
  p->created_at = real_col(st, 25, 0);
  p->started_at = real_col(st, 26, 0);
  p->finished_at = real_col(st, 27, 0);
  p->same_as = int_col(st, 28);
  if (with_code) {
    p->code = dup_col(st, 29);
    p->build_log = dup_col(st, 30);
    p->verify_log = dup_col(st, 31);
  }
}

int db_program_get(struct db *db, int64_t id, struct db_program *p,
                   struct err *e)
{
  sqlite3_stmt *st;
  int rc;

  db_program_init(p);
  if (prepare(db,
              "SELECT " PROGRAM_COLS PROGRAM_CODE_COLS
              " FROM programs WHERE id = ?",
              &st, e))
    return ERR_DB;
  sqlite3_bind_int64(st, 1, id);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW)
    read_program(st, 1, p);
  sqlite3_finalize(st);
  if (rc == SQLITE_ROW)
    return 0;
  if (rc == SQLITE_DONE)
    return err_set(e, ERR_NOTFOUND, "database: no program %lld",
                   (long long)id);
  return db_fail(db, e, "load program");
}

void db_programs_free(struct db_program *arr, size_t n)
{
  size_t i;

  for (i = 0; arr && i < n; i++)
    db_program_release(&arr[i]);
  free(arr);
}

int db_programs_load(struct db *db, int64_t run_id, const char *where,
                     int with_code, struct db_program **out, size_t *n,
                     struct err *e)
{
  static const char *const sql[2][3] = {
      {"SELECT " PROGRAM_COLS " FROM programs WHERE run_id = ? ORDER BY id",
       "SELECT " PROGRAM_COLS " FROM programs WHERE run_id = ? AND status"
       " IN ('pending', 'running') ORDER BY id",
       "SELECT " PROGRAM_COLS " FROM programs WHERE run_id = ? AND status"
       " = 'ok' ORDER BY id"},
      {"SELECT " PROGRAM_COLS PROGRAM_CODE_COLS
       " FROM programs WHERE run_id = ? ORDER BY id",
       "SELECT " PROGRAM_COLS PROGRAM_CODE_COLS
       " FROM programs WHERE run_id = ? AND status"
       " IN ('pending', 'running') ORDER BY id",
       "SELECT " PROGRAM_COLS PROGRAM_CODE_COLS
       " FROM programs WHERE run_id = ? AND status = 'ok' ORDER BY id"}};
  struct db_program *arr = NULL, *grown;
  size_t len = 0, cap = 0;
  sqlite3_stmt *st;
  int which = 0, rc;

  *out = NULL;
  *n = 0;
  if (where && !strcmp(where, "unfinished"))
    which = 1;
  else if (where && !strcmp(where, "ok"))
    which = 2;
  else if (where)
    return err_set(e, ERR_INTERNAL, "database: unknown filter %s", where);
  if (prepare(db, sql[with_code ? 1 : 0][which], &st, e))
    return ERR_DB;
  sqlite3_bind_int64(st, 1, run_id);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (len == cap) {
      cap = cap ? cap * 2 : 16;
      grown = realloc(arr, cap * sizeof(*arr));
      if (!grown) {
        sqlite3_finalize(st);
        db_programs_free(arr, len);
        return err_set(e, ERR_NOMEM, "database: out of memory");
      }
      arr = grown;
    }
    read_program(st, with_code, &arr[len++]);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    db_programs_free(arr, len);
    return db_fail(db, e, "load programs");
  }
  *out = arr;
  *n = len;
  return 0;
}

int db_program_count_hash(struct db *db, int64_t run_id, const char *hash,
                          long *count, struct err *e)
{
  sqlite3_stmt *st;

  *count = 0;
  if (prepare(db,
              "SELECT COUNT(*) FROM programs WHERE run_id = ? AND"
              " code_hash = ? AND edit_kind <> 'migrate'",
              &st, e))
    return ERR_DB;
  sqlite3_bind_int64(st, 1, run_id);
  bind_text(st, 2, hash);
  if (sqlite3_step(st) == SQLITE_ROW)
    *count = (long)sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return 0;
}

/* ---- llm calls and summaries ---- */

int db_llm_call_insert(struct db *db, struct db_llm_call *c, struct err *e)
{
  sqlite3_stmt *st;

  if (prepare(db,
              "INSERT INTO llm_calls (run_id, program_id, provider, model,"
              " purpose, prompt, response, tokens_in, tokens_out, cost_usd,"
              " latency_s, outcome, error, created_at) VALUES (?, ?, ?, ?,"
              " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
              &st, e))
    return ERR_DB;
  bind_id(st, 1, c->run_id);
  bind_id(st, 2, c->program_id);
  bind_text(st, 3, c->provider);
  bind_text(st, 4, c->model);
  bind_text(st, 5, c->purpose);
  bind_text(st, 6, c->prompt);
  bind_text(st, 7, c->response);
  sqlite3_bind_int64(st, 8, c->tokens_in);
  sqlite3_bind_int64(st, 9, c->tokens_out);
  sqlite3_bind_double(st, 10, c->cost_usd);
  sqlite3_bind_double(st, 11, c->latency_s);
  bind_text(st, 12, c->outcome);
  bind_text(st, 13, c->error);
  sqlite3_bind_double(st, 14, db_now());
  if (step_done(db, st, "insert llm call", e))
    return ERR_DB;
  c->id = (int64_t)sqlite3_last_insert_rowid(db->h);
  return 0;
}

int db_llm_call_set_program(struct db *db, int64_t call_id, int64_t program_id,
                            struct err *e)
{
  sqlite3_stmt *st;

  if (prepare(db, "UPDATE llm_calls SET program_id = ? WHERE id = ?", &st, e))
    return ERR_DB;
  bind_id(st, 1, program_id);
  sqlite3_bind_int64(st, 2, call_id);
  return step_done(db, st, "llm call program", e);
}

int db_meta_summary_insert(struct db *db, int64_t run_id, int island,
                           int generation, const char *text, struct err *e)
{
  sqlite3_stmt *st;

  if (prepare(db,
              "INSERT INTO meta_summaries (run_id, island, generation, text,"
              " created_at) VALUES (?, ?, ?, ?, ?)",
              &st, e))
    return ERR_DB;
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_int(st, 2, island);
  sqlite3_bind_int(st, 3, generation);
  bind_text(st, 4, text);
  sqlite3_bind_double(st, 5, db_now());
  return step_done(db, st, "insert meta summary", e);
}

int db_confirmation_insert(struct db *db, const struct db_confirmation *c,
                           struct err *e)
{
  sqlite3_stmt *st;

  if (prepare(db,
              "INSERT INTO confirmations (run_id, program_id, versus_id,"
              " versus, rounds, ratio, lo, hi, verdict, samples_json,"
              " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
              &st, e))
    return ERR_DB;
  sqlite3_bind_int64(st, 1, c->run_id);
  sqlite3_bind_int64(st, 2, c->program_id);
  sqlite3_bind_int64(st, 3, c->versus_id);
  bind_text(st, 4, c->versus);
  sqlite3_bind_int(st, 5, c->rounds);
  sqlite3_bind_double(st, 6, c->ratio);
  sqlite3_bind_double(st, 7, c->lo);
  sqlite3_bind_double(st, 8, c->hi);
  bind_text(st, 9, c->verdict);
  bind_text(st, 10, c->samples_json);
  sqlite3_bind_double(st, 11, db_now());
  return step_done(db, st, "insert confirmation", e);
}

char *db_meta_summary_latest(struct db *db, int64_t run_id, int island)
{
  sqlite3_stmt *st;
  char *t = NULL;

  if (sqlite3_prepare_v2(db->h,
                         "SELECT text FROM meta_summaries WHERE run_id = ?"
                         " AND (? < 0 OR island = ?) ORDER BY id DESC"
                         " LIMIT 1",
                         -1, &st, NULL) != SQLITE_OK)
    return NULL;
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_int(st, 2, island);
  sqlite3_bind_int(st, 3, island);
  if (sqlite3_step(st) == SQLITE_ROW)
    t = dup_col(st, 0);
  sqlite3_finalize(st);
  return t;
}

/* *c from one LLM call of run_id; the strings are borrowed from rec. */
static void llm_call_from_record(struct db_llm_call *c, int64_t run_id,
                                 const struct llm_record *rec)
{
  memset(c, 0, sizeof(*c));
  c->run_id = run_id;
  c->provider = rec->provider;
  c->model = rec->model;
  c->purpose = rec->purpose;
  c->prompt = rec->prompt;
  c->response = rec->response;
  c->tokens_in = rec->tokens_in;
  c->tokens_out = rec->tokens_out;
  c->cost_usd = rec->cost_usd;
  c->latency_s = rec->latency_s;
  c->outcome = rec->outcome;
  c->error = rec->error;
}

int db_llm_call_record(struct db *db, int64_t run_id,
                       const struct llm_record *rec, int64_t *id,
                       struct err *e)
{
  struct db_llm_call c;

  *id = 0;
  llm_call_from_record(&c, run_id, rec);
  if (db_llm_call_insert(db, &c, e))
    return ERR_DB;
  *id = c.id;
  return db_run_add_spent(db, run_id, rec->cost_usd, e);
}
