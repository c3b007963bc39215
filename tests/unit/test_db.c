/* Unit tests for db.c: schema, runs, programs, resume listing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"

static char path[64];

static int setup(void **state)
{
  int fd;
  (void)state;
  snprintf(path, sizeof(path), "/tmp/cuco-test-db.XXXXXX");
  fd = mkstemp(path);
  if (fd < 0)
    return -1;
  close(fd);
  unlink(path);
  return 0;
}

static int teardown(void **state)
{
  char p[80];
  (void)state;
  unlink(path);
  snprintf(p, sizeof(p), "%s-wal", path);
  unlink(p);
  snprintf(p, sizeof(p), "%s-shm", path);
  unlink(p);
  return 0;
}

static void test_schema_and_run(void **state)
{
  struct db *db = NULL, *ro = NULL;
  struct db_run r = {0}, got;
  struct err e = {0, ""};
  char *v;
  (void)state;
  assert_int_equal(db_open(path, 0, &db, &e), 0);
  assert_int_equal(db_schema_version(db), DB_SCHEMA_VERSION);
  v = db_meta_get(db, "schema_version");
  assert_string_equal(v, "3"); /* 2: confirmations; 3: programs.same_as */
  free(v);
  r.workload = "w'; DROP TABLE runs; --";
  r.budget_usd = -1;
  assert_int_equal(db_run_create(db, &r, &e), 0);
  assert_true(r.id > 0);
  assert_int_equal(db_run_add_spent(db, r.id, 0.25, &e), 0);
  assert_int_equal(db_run_add_spent(db, r.id, 0.5, &e), 0);
  assert_int_equal(db_run_set_text(db, r.id, "baseline_json", "{}", &e), 0);
  assert_int_not_equal(db_run_set_text(db, r.id, "status; --", "x", &e), 0);
  db_close(db);
  /* reopening migrates nothing and keeps the data */
  assert_int_equal(db_open(path, 1, &ro, &e), 0);
  assert_int_equal(db_run_latest(ro, &got, &e), 0);
  assert_string_equal(got.workload, "w'; DROP TABLE runs; --");
  assert_string_equal(got.status, "running");
  assert_string_equal(got.baseline_json, "{}");
  assert_true(got.spent_usd > 0.74 && got.spent_usd < 0.76);
  assert_true(got.budget_usd < 0);
  db_run_release(&got);
  db_close(ro);
}

static void test_programs_resume(void **state)
{
  struct db *db = NULL;
  struct db_run r = {0};
  struct db_program p, q, *arr;
  struct err e = {0, ""};
  size_t n;
  long cnt;
  int i;
  (void)state;
  assert_int_equal(db_open(path, 0, &db, &e), 0);
  r.workload = "x";
  assert_int_equal(db_run_create(db, &r, &e), 0);
  for (i = 0; i < 3; i++) {
    db_program_init(&p);
    p.run_id = r.id;
    p.island = i;
    p.generation = 1;
    p.edit_kind = "tune";
    p.code = "int main(){}";
    p.code_hash = i == 2 ? "h2" : "h";
    assert_int_equal(db_program_insert(db, &p, &e), 0);
    assert_true(p.id > 0);
  }
  assert_int_equal(db_program_start(db, 1, &e), 0);
  db_program_init(&q);
  q.id = 1;
  q.status = "ok";
  q.stage = "done";
  q.has_score = 1;
  q.score = 42.5;
  q.median_ms = 1.5;
  q.backend = "lsa";
  q.chunk_bytes = 65536;
  assert_int_equal(db_program_finish(db, &q, &e), 0);
  /* two unfinished, one ok */
  assert_int_equal(db_programs_load(db, r.id, "unfinished", 1, &arr, &n, &e),
                   0);
  assert_int_equal(n, 2);
  assert_int_equal(arr[0].id, 2);
  assert_string_equal(arr[0].status, "pending");
  assert_string_equal(arr[0].code, "int main(){}");
  db_programs_free(arr, n);
  assert_int_equal(db_programs_load(db, r.id, "ok", 0, &arr, &n, &e), 0);
  assert_int_equal(n, 1);
  assert_true(arr[0].has_score);
  assert_true(arr[0].score == 42.5);
  assert_true(arr[0].median_ms == 1.5);
  assert_true(arr[0].noise_ms < 0);
  assert_string_equal(arr[0].backend, "lsa");
  assert_int_equal(arr[0].chunk_bytes, 65536);
  assert_null(arr[0].code);
  db_programs_free(arr, n);
  assert_int_equal(db_program_count_hash(db, r.id, "h", &cnt, &e), 0);
  assert_int_equal(cnt, 2);
  assert_int_not_equal(db_programs_load(db, r.id, "bogus", 0, &arr, &n, &e),
                       0);
  /* a duplicate row names the program that answers it */
  db_program_init(&p);
  p.run_id = r.id;
  p.edit_kind = "tune";
  p.status = "duplicate";
  p.same_as = 1;
  assert_int_equal(db_program_insert(db, &p, &e), 0);
  assert_int_equal(db_program_get(db, p.id, &q, &e), 0);
  assert_string_equal(q.status, "duplicate");
  assert_int_equal(q.same_as, 1);
  db_program_release(&q);
  db_program_init(&p);
  assert_int_equal(db_program_get(db, 99, &p, &e), ERR_NOTFOUND);
  db_program_release(&p);
  db_close(db);
}

static void test_llm_and_summary(void **state)
{
  struct db *db = NULL;
  struct db_llm_call c = {0};
  struct err e = {0, ""};
  char *t;
  (void)state;
  assert_int_equal(db_open(path, 0, &db, &e), 0);
  c.run_id = 1;
  c.provider = "openai";
  c.purpose = "mutate";
  c.tokens_in = 10;
  c.cost_usd = 0.01;
  assert_int_equal(db_llm_call_insert(db, &c, &e), 0);
  assert_true(c.id > 0);
  assert_int_equal(db_llm_call_set_program(db, c.id, 3, &e), 0);
  assert_null(db_meta_summary_latest(db, 1, 0));
  assert_int_equal(db_meta_summary_insert(db, 1, 0, 4, "first", &e), 0);
  assert_int_equal(db_meta_summary_insert(db, 1, 1, 4, "second", &e), 0);
  t = db_meta_summary_latest(db, 1, 0);
  assert_string_equal(t, "first");
  free(t);
  t = db_meta_summary_latest(db, 1, -1);
  assert_string_equal(t, "second");
  free(t);
  db_close(db);
}

static void test_readonly_rejects_other_files(void **state)
{
  struct db *db = NULL;
  struct err e = {0, ""};
  FILE *f;
  (void)state;
  f = fopen(path, "w");
  assert_non_null(f);
  fputs("not a database at all, just text that is long enough........", f);
  fclose(f);
  assert_int_equal(db_open(path, 1, &db, &e), ERR_DB);
  assert_null(db);
  assert_non_null(strstr(e.msg, path));
  assert_int_equal(db_open("/nonexistent/dir/run.db", 0, &db, &e), ERR_DB);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_schema_and_run, setup, teardown),
      cmocka_unit_test_setup_teardown(test_programs_resume, setup, teardown),
      cmocka_unit_test_setup_teardown(test_llm_and_summary, setup, teardown),
      cmocka_unit_test_setup_teardown(test_readonly_rejects_other_files, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
