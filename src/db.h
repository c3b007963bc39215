/* db.h - the run database (SQLite, WAL), docs/contracts.md section 5.
 *
 * One file per run directory (DIR/run.db).  Writers open it read-write,
 * `cuco report`/`cuco serve` open it read-only.  Every value is bound as a
 * parameter.  A struct db is one connection and is NOT shared between
 * threads: open one per thread, or serialise calls with a mutex (the
 * search does the latter: one writer).
 *
 * Crash safety: a candidate's row is inserted `pending` before it is
 * evaluated (db_program_insert) and completed by db_program_finish; each
 * is one statement, hence atomic.  After a kill -9, db_programs_unfinished
 * lists the rows to evaluate again, so nothing is lost or duplicated.
 */
#ifndef CUCO_DB_H
#define CUCO_DB_H

#include <stdint.h>

#include "err.h"

#define DB_SCHEMA_VERSION 3

struct db;

/* Open (and for writers create and migrate) the database at path.
 * readonly: open an existing file without writing (no migration; a file
 * of a newer schema is an error).  Sets WAL, busy timeout 30 s and
 * synchronous NORMAL.  *out is freed with db_close.  ERR_DB on failure. */
int db_open(const char *path, int readonly, struct db **out,
            struct err *e) WARN_UNUSED;
void db_close(struct db *db);

/* The schema version stored in meta (0 if none). */
int db_schema_version(struct db *db);

/* Run a statement list (no parameters) in a transaction: for migrations
 * and tests.  ERR_DB on failure (rolled back). */
int db_exec(struct db *db, const char *sql, struct err *e) WARN_UNUSED;

/* Begin/commit an IMMEDIATE transaction around several calls. */
int db_begin(struct db *db, struct err *e) WARN_UNUSED;
int db_commit(struct db *db, struct err *e) WARN_UNUSED;
void db_rollback(struct db *db);

/* meta table: set key=value (replace); get returns a malloc'd copy or
 * NULL when absent. */
int db_meta_set(struct db *db, const char *key, const char *value,
                struct err *e) WARN_UNUSED;
char *db_meta_get(struct db *db, const char *key);

/* ---- runs ---- */

struct db_run {
  int64_t id;
  char *workload, *workload_dir;
  double started_at, finished_at;
  char *status; /* running|done|interrupted */
  char *config_json, *machine_json, *baseline_json;
  int64_t seed_program_id, best_program_id; /* 0 = none */
  char *llm;
  double budget_usd, spent_usd;
};

/* Insert a run (status "running", started_at now); r->id is set.
 * Strings may be NULL. */
int db_run_create(struct db *db, struct db_run *r, struct err *e) WARN_UNUSED;

/* Load the newest run (highest id) into *r (caller frees with
 * db_run_release).  ERR_NOTFOUND when the file has no run. */
int db_run_latest(struct db *db, struct db_run *r, struct err *e) WARN_UNUSED;
void db_run_release(struct db_run *r);

/* Update one run field. */
int db_run_set_status(struct db *db, int64_t run_id, const char *status,
                      int finished, struct err *e) WARN_UNUSED;
int db_run_set_text(struct db *db, int64_t run_id, const char *column,
                    const char *value, struct err *e) WARN_UNUSED;
int db_run_set_program(struct db *db, int64_t run_id, const char *column,
                       int64_t program_id, struct err *e) WARN_UNUSED;
/* Add cost to spent_usd (atomically in SQL). */
int db_run_add_spent(struct db *db, int64_t run_id, double usd,
                     struct err *e) WARN_UNUSED;

/* ---- programs ---- */

struct db_program {
  int64_t id, run_id, parent_id, parent2_id; /* 0 = NULL */
  int island, generation;
  char *edit_kind; /* seed|diff|full|cross|tune|migrate */
  char *phase;     /* explore|exploit */
  char *code, *code_hash;
  char *directives_json;
  char *backend, *placement, *sync, *issuer;
  int64_t chunk_bytes; /* 0 = NULL */
  char *status;        /* pending|running|ok|failed|rejected|interrupted|
                         duplicate */
  char *stage;         /* static|build|verify|bench|done */
  char *error, *build_log, *verify_log, *metrics_json;
  int has_score;
  double score;
  double median_ms, noise_ms, speedup; /* < 0 = NULL */
  int64_t llm_call_id;                 /* 0 = NULL */
  char *rationale;
  double created_at, started_at, finished_at; /* 0 = NULL */
  int64_t same_as; /* status duplicate: the program whose evaluation
                      answers this row (it compiles to the same); 0 = NULL */
};

/* Fill *p with NULLs/zeros and the "unset" markers (median_ms etc. -1). */
void db_program_init(struct db_program *p);
/* Free every string of *p (not p itself). */
void db_program_release(struct db_program *p);

/* Insert a program row as given (normally status "pending", or "ok" for a
 * migrate copy); created_at is set to now; p->id is set. */
int db_program_insert(struct db *db, struct db_program *p,
                      struct err *e) WARN_UNUSED;

/* Mark a row running (started_at now). */
int db_program_start(struct db *db, int64_t id, struct err *e) WARN_UNUSED;

/* Write the outcome: status, stage, error, logs, metrics, score, median,
 * noise, speedup, directives and their columns; finished_at = now. */
int db_program_finish(struct db *db, const struct db_program *p,
                      struct err *e) WARN_UNUSED;

/* Attach an llm_calls row and a rationale to a program. */
int db_program_set_llm(struct db *db, int64_t id, int64_t llm_call_id,
                       const char *rationale, struct err *e) WARN_UNUSED;

/* Load one program by id (caller releases).  ERR_NOTFOUND if absent. */
int db_program_get(struct db *db, int64_t id, struct db_program *p,
                   struct err *e) WARN_UNUSED;

/* Load programs of a run ordered by id.  where: NULL (all), or one of the
 * fixed filters "unfinished" (pending|running), "ok".  with_code: 0 skips
 * the code/log columns (cheap listings).  *out is a malloc'd array the
 * caller frees with db_programs_free. */
int db_programs_load(struct db *db, int64_t run_id, const char *where,
                     int with_code, struct db_program **out, size_t *n,
                     struct err *e) WARN_UNUSED;
void db_programs_free(struct db_program *arr, size_t n);

/* Number of rows of the run with the given code hash and a finished or
 * in-flight status (used to avoid evaluating a configuration twice). */
int db_program_count_hash(struct db *db, int64_t run_id, const char *hash,
                          long *count, struct err *e) WARN_UNUSED;

/* ---- llm calls and meta summaries ---- */

struct db_llm_call {
  int64_t id, run_id, program_id; /* 0 = NULL */
  const char *provider, *model, *purpose, *prompt, *response;
  long tokens_in, tokens_out;
  double cost_usd, latency_s;
  const char *outcome, *error;
};

struct llm_record;

/* Insert an llm_calls row (created_at now); c->id is set.  Borrowed
 * strings. */
int db_llm_call_insert(struct db *db, struct db_llm_call *c,
                       struct err *e) WARN_UNUSED;

/* The body of every LLM recorder (llm.h's llm_record_fn): store one call
 * of run_id as the provider layer reports it (its llm_calls row) and add
 * its cost to the run's spent_usd.  *id is the row's id, 0 when it could
 * not be inserted.  ERR_DB with *e when either step failed. */
int db_llm_call_record(struct db *db, int64_t run_id,
                       const struct llm_record *rec, int64_t *id,
                       struct err *e) WARN_UNUSED;

/* Link an llm call to the program it produced. */
int db_llm_call_set_program(struct db *db, int64_t call_id, int64_t program_id,
                            struct err *e) WARN_UNUSED;

int db_meta_summary_insert(struct db *db, int64_t run_id, int island,
                           int generation, const char *text,
                           struct err *e) WARN_UNUSED;

/* The newest summary text for an island (or any island when island < 0);
 * malloc'd, NULL when none. */
char *db_meta_summary_latest(struct db *db, int64_t run_id, int island);

/* Wall-clock seconds since the epoch (sub-second). */
/* One paired comparison of the end-of-run confirmation: program_id
 * against versus_id ("#7", "seed") or the bar (versus_id 0, versus
 * "bar"); ratio = its time over the other's (speedup for the bar), with a
 * 95% interval; verdict "best", "adopted", "within noise", "slower",
 * "bar"; samples_json the per-round ms. */
struct db_confirmation {
  int64_t run_id, program_id, versus_id;
  const char *versus, *verdict, *samples_json;
  int rounds;
  double ratio, lo, hi;
};

/* Insert one confirmation row (schema 2; borrowed strings).  ERR_DB. */
int db_confirmation_insert(struct db *db, const struct db_confirmation *c,
                           struct err *e) WARN_UNUSED;

double db_now(void);

#endif
