/* Unit tests for rundb.c: the JSON shapes the API serves, untrusted
 * column contents, read-only access beside a WAL writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "rundb.h"

static const char SCHEMA[] =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE runs (id INTEGER PRIMARY KEY, workload TEXT NOT NULL,"
    " workload_dir TEXT, started_at REAL, finished_at REAL, status TEXT,"
    " config_json TEXT, machine_json TEXT, baseline_json TEXT,"
    " seed_program_id INTEGER, best_program_id INTEGER, llm TEXT,"
    " budget_usd REAL, spent_usd REAL DEFAULT 0);"
    "CREATE TABLE programs (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL,"
    " parent_id INTEGER, parent2_id INTEGER, island INTEGER, generation"
    " INTEGER, edit_kind TEXT, phase TEXT, code TEXT, code_hash TEXT,"
    " directives_json TEXT, backend TEXT, placement TEXT, sync TEXT, issuer"
    " TEXT, chunk_bytes INTEGER, status TEXT, stage TEXT, error TEXT,"
    " build_log TEXT, verify_log TEXT, metrics_json TEXT, score REAL,"
    " median_ms REAL, noise_ms REAL, speedup REAL, llm_call_id INTEGER,"
    " rationale TEXT, created_at REAL, started_at REAL, finished_at REAL);"
    "CREATE TABLE llm_calls (id INTEGER PRIMARY KEY, run_id INTEGER,"
    " program_id INTEGER, provider TEXT, model TEXT, purpose TEXT, prompt"
    " TEXT, response TEXT, tokens_in INTEGER, tokens_out INTEGER, cost_usd"
    " REAL, latency_s REAL, outcome TEXT, error TEXT, created_at REAL);"
    "CREATE TABLE meta_summaries (id INTEGER PRIMARY KEY, run_id INTEGER,"
    " island INTEGER, generation INTEGER, text TEXT, created_at REAL);"
    "INSERT INTO meta VALUES ('schema_version','1');"
    "INSERT INTO runs VALUES (1,'wl','workloads/wl',100,160,'done',"
    " '{\"seed\":3}','{\"gpus\":{\"count\":2}}','{\"full\":{\"median_ms\":2}}'"
    ","
    " 1,3,'openai:m',1.0,0.25);"
    "INSERT INTO programs (id, run_id, island, generation, edit_kind, code,"
    " directives_json, backend, placement, status, stage, score, metrics_json,"
    " created_at) VALUES (1,1,0,0,'seed','a\nb\nc\n','{\"backend\":\"lsa\"}',"
    " 'lsa','deferred','ok','done',1.0,'{\"full\":{\"median_ms\":2}}',100);"
    "INSERT INTO programs (id, run_id, parent_id, island, generation,"
    " edit_kind, code, directives_json, backend, placement, status, stage,"
    " error, build_log, created_at, finished_at) VALUES (2,1,1,1,1,'diff',"
    " 'a\nX\nc\n','not json','lsa','per_tile','failed','build',"
    " 'nvcc: bad <thing>\nsecond line','log',110,112);"
    "INSERT INTO programs (id, run_id, parent_id, parent2_id, island,"
    " generation, edit_kind, code, placement, status, stage, score,"
    " llm_call_id, created_at) VALUES (3,1,1,2,0,1,'cross','a\nb\nc\nd\n',"
    " 'split','ok','done',1.5,1,120);"
    "INSERT INTO programs (id, run_id, island, generation, status,"
    " created_at) VALUES (4,1,1,2,'pending',130);"
    "INSERT INTO llm_calls VALUES (1,1,3,'openai','m','mutate','the prompt',"
    " '<script>x</script>',10,5,0.25,1.5,'ok',NULL,115);";

static char path[64];

static int setup(void **state)
{
  sqlite3 *db;
  (void)state;
  snprintf(path, sizeof path, "/tmp/cuco-test-rundb-%ld.db", (long)getpid());
  unlink(path);
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, SCHEMA, NULL, NULL, NULL), SQLITE_OK);
  /* An error with invalid UTF-8 (as a crashing tool might print). */
  assert_int_equal(sqlite3_exec(db,
                                "UPDATE programs SET verify_log=CAST(X'ff41'"
                                " AS TEXT) WHERE id=2",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  return 0;
}

static int teardown(void **state)
{
  char p[80];
  (void)state;
  unlink(path);
  snprintf(p, sizeof p, "%s-wal", path);
  unlink(p);
  snprintf(p, sizeof p, "%s-shm", path);
  unlink(p);
  return 0;
}

static void test_open_errors(void **state)
{
  struct err e = {0, ""};
  sqlite3 *db;
  char other[80];
  (void)state;
  assert_null(rundb_open("/nonexistent/x.db", &e));
  assert_int_equal(e.code, ERR_IO);
  snprintf(other, sizeof other, "%s.other", path);
  unlink(other);
  assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  assert_null(rundb_open(other, &e));
  assert_int_equal(e.code, ERR_DB);
  assert_non_null(strstr(e.msg, "not a cuco run database"));
  unlink(other);
}

static void test_run(void **state)
{
  struct err e = {0, ""};
  struct rundb *db = rundb_open(path, &e);
  json_t *r;
  (void)state;
  assert_non_null(db);
  r = rundb_run(db, &e);
  assert_non_null(r);
  assert_string_equal(json_string_value(json_object_get(r, "workload")), "wl");
  assert_int_equal(
      json_integer_value(json_object_get(
          json_object_get(json_object_get(r, "machine"), "gpus"), "count")),
      2);
  assert_float_equal(json_real_value(json_object_get(r, "wall_s")), 60, 1e-9);
  assert_int_equal(json_integer_value(
                       json_object_get(json_object_get(r, "counts"), "total")),
                   4);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(r, "counts"), "pending")),
                   1);
  assert_int_equal(json_array_size(json_object_get(r, "islands")), 2);
  assert_float_equal(json_number_value(json_object_get(
                         json_object_get(r, "llm_totals"), "cost_usd")),
                     0.25, 1e-9);
  json_decref(r);
  rundb_close(db);
}

static void test_programs_and_filter(void **state)
{
  struct err e = {0, ""};
  struct rundb *db = rundb_open(path, &e);
  struct rundb_filter f = {-1, NULL, NULL, 0, 0, 0};
  json_t *a, *p;
  (void)state;
  a = rundb_programs(db, &f, &e);
  assert_int_equal(json_array_size(a), 4);
  p = json_array_get(a, 1);
  assert_null(json_object_get(p, "code"));
  /* The summary's error is its first line; invalid JSON stays a string. */
  assert_string_equal(json_string_value(json_object_get(p, "error")),
                      "nvcc: bad <thing>");
  assert_string_equal(json_string_value(json_object_get(p, "directives")),
                      "not json");
  json_decref(a);
  f.island = 0;
  f.status = "ok";
  a = rundb_programs(db, &f, &e);
  assert_int_equal(json_array_size(a), 2);
  json_decref(a);
  f.island = -1;
  f.status = NULL;
  f.edit_kind = "cross";
  a = rundb_programs(db, &f, &e);
  assert_int_equal(json_array_size(a), 1);
  json_decref(a);
  /* Updates: ids above 3, or anything changed after t=111. */
  f.edit_kind = NULL;
  f.changes_only = 1;
  f.since_id = 3;
  a = rundb_programs(db, &f, &e);
  assert_int_equal(json_array_size(a), 1);
  json_decref(a);
  f.after_t = 111;
  a = rundb_programs(db, &f, &e);
  assert_int_equal(json_array_size(a), 3); /* 2 (finished 112), 3, 4 */
  json_decref(a);
  rundb_close(db);
}

static void test_program_detail(void **state)
{
  struct err e = {0, ""};
  struct rundb *db = rundb_open(path, &e);
  json_t *p, *llm;
  char *s;
  (void)state;
  p = rundb_program(db, 3, &e);
  assert_non_null(p);
  assert_string_equal(json_string_value(json_object_get(p, "diff_to_parent")),
                      "--- program 1\n+++ program 3\n@@ -1,3 +1,4 @@\n a\n b\n"
                      " c\n+d\n");
  assert_int_equal(json_integer_value(json_object_get(p, "parent2_id")), 2);
  llm = json_object_get(p, "llm");
  assert_string_equal(json_string_value(json_object_get(llm, "prompt")),
                      "the prompt");
  assert_string_equal(json_string_value(json_object_get(llm, "response")),
                      "<script>x</script>");
  json_decref(p);

  p = rundb_program(db, 1, &e);
  assert_string_equal(json_string_value(json_object_get(p, "diff_to_parent")),
                      "");
  assert_int_equal(json_array_size(json_object_get(p, "children")), 2);
  assert_true(json_is_null(json_object_get(p, "llm")));
  assert_true(json_is_object(json_object_get(p, "metrics")));
  json_decref(p);

  /* Invalid UTF-8 comes back as valid JSON text. */
  p = rundb_program(db, 2, &e);
  assert_string_equal(json_string_value(json_object_get(p, "verify_log")),
                      "?A");
  assert_non_null(
      strstr(json_string_value(json_object_get(p, "error")), "second line"));
  s = json_dumps(p, 0);
  assert_non_null(s);
  free(s);
  json_decref(p);

  assert_null(rundb_program(db, 99, &e));
  assert_int_equal(e.code, ERR_NOTFOUND);
  rundb_close(db);
}

static void test_plot(void **state)
{
  struct err e = {0, ""};
  struct rundb *db = rundb_open(path, &e);
  json_t *p, *pl, *pt;
  (void)state;
  p = rundb_plot(db, &e);
  assert_non_null(p);
  /* Pending #4 is not a point. */
  assert_int_equal(json_array_size(json_object_get(p, "points")), 3);
  pl = json_object_get(json_object_get(p, "by_directive"), "placement");
  assert_int_equal(json_array_size(pl), 3);
  assert_int_equal(json_array_size(json_object_get(p, "cost")), 1);
  /* Text fields come back whole (they were once "\n[... cut at 0 bytes]"). */
  pt = json_array_get(json_object_get(p, "points"), 0);
  assert_string_equal(json_string_value(json_object_get(pt, "edit_kind")),
                      "seed");
  assert_string_equal(json_string_value(json_object_get(pt, "status")), "ok");
  assert_string_equal(json_string_value(json_object_get(pt, "stage")), "done");
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(pl, 0), "value")),
      "deferred");
  assert_string_equal(
      json_string_value(json_object_get(
          json_array_get(json_object_get(p, "cost"), 0), "purpose")),
      "mutate");
  json_decref(p);
  rundb_close(db);
}

static void test_beside_writer(void **state)
{
  struct err e = {0, ""};
  struct rundb *db = rundb_open(path, &e);
  struct rundb_filter f = {-1, NULL, NULL, 0, 0, 0};
  sqlite3 *w;
  json_t *a;
  (void)state;
  assert_int_equal(sqlite3_open(path, &w), SQLITE_OK);
  assert_int_equal(sqlite3_exec(w,
                                "BEGIN IMMEDIATE; INSERT INTO programs (id,"
                                " run_id, status) VALUES (5,1,'running');",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  /* A reader is never blocked by the writer and sees the last commit. */
  a = rundb_programs(db, &f, &e);
  assert_int_equal(json_array_size(a), 4);
  json_decref(a);
  assert_int_equal(sqlite3_exec(w, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
  a = rundb_programs(db, &f, &e);
  assert_int_equal(json_array_size(a), 5);
  json_decref(a);
  sqlite3_close(w);
  rundb_close(db);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_open_errors),
      cmocka_unit_test(test_run),
      cmocka_unit_test(test_programs_and_filter),
      cmocka_unit_test(test_program_detail),
      cmocka_unit_test(test_plot),
      cmocka_unit_test(test_beside_writer),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
