/* rundb.h - read access to a run database (docs/contracts.md section 5)
 * for `cuco report` and `cuco serve`.
 *
 * The file is opened read-only (SQLITE_OPEN_READONLY) so a viewer can never
 * change a run, and it works while `cuco evolve` writes it in WAL mode:
 * every query is its own read transaction and sees the latest commit.
 * Results are jansson values the caller owns (json_decref).  Text from the
 * database is untrusted: invalid UTF-8 is replaced, the *_json columns are
 * parsed (a column that is not valid JSON comes back as a string), and the
 * large columns are cut at a cap with a note.
 */
#ifndef CUCO_RUNDB_H
#define CUCO_RUNDB_H

#include <jansson.h>

#include "err.h"

struct rundb;

/* Filters of rundb_programs(); a zeroed struct with island = -1 means
 * "every program". */
struct rundb_filter {
  int island;            /* -1 = any */
  const char *status;    /* NULL = any */
  const char *edit_kind; /* NULL = any */
  long long since_id;    /* only ids above this ... */
  double after_t;        /* ... or rows whose newest time is past this */
  int changes_only;      /* 1: apply since_id/after_t */
};

/* Open path read-only and pick its newest run.  Errors: ERR_IO (missing
 * or unreadable), ERR_DB (not a cuco run database, wrong schema version,
 * no run in it).  Free with rundb_close (NULL-safe). */
struct rundb *rundb_open(const char *path, struct err *e) WARN_UNUSED;
void rundb_close(struct rundb *db);

/* The run: its row (config, machine, baseline parsed), wall_s, counts by
 * status (interrupted apart), islands, LLM totals, max_program_id, its
 * confirmations (rows of that table) and "headline" (headline.h's JSON:
 * the best's confirmed speedup with its interval, else its search figure
 * with confirmed false).  NULL on error. */
json_t *rundb_run(struct rundb *db, struct err *e) WARN_UNUSED;

/* Summaries (no code or logs) of the programs matching f, by id; each has
 * id, parent_id, parent2_id, island, generation, edit_kind, phase,
 * status, stage, score, median_ms, noise_ms, speedup, directives, the
 * directive columns, error (first line), created_at, started_at,
 * finished_at, updated_at.  NULL on error. */
json_t *rundb_programs(struct rundb *db, const struct rundb_filter *f,
                       struct err *e) WARN_UNUSED;

/* One program in full: the summary fields plus code, metrics, build_log,
 * verify_log, error, rationale, children, diff_to_parent (unified text,
 * "" for the seed) with diff_stat, and llm (the call that wrote it, with
 * prompt and response, or null).  ERR_NOTFOUND when there is no such
 * program in this run. */
json_t *rundb_program(struct rundb *db, long long id,
                      struct err *e) WARN_UNUSED;

/* Data for the plots: points (every finished candidate: ok, failed or
 * rejected, by id), by_directive (per dimension and value: n, n_ok, best
 * and mean score), cost (per LLM call: t, cost_usd, cum_usd). */
json_t *rundb_plot(struct rundb *db, struct err *e) WARN_UNUSED;

/* Unified diff between the code of programs a and b ("" text for a
 * missing one); caller frees.  NULL on error. */
char *rundb_diff(struct rundb *db, long long a, long long b,
                 struct err *e) WARN_UNUSED;

#endif
