/* Unit tests for thresh.c: the freeze rule, error extraction from runtime
 * RESULT.json and freeform metrics, the key, the store (round trip, first
 * freeze wins, malformed files refused) and the check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "thresh.h"
#include "workload.h"

static char dir[64];

static int setup(void **state)
{
  (void)state;
  snprintf(dir, sizeof(dir), "/tmp/cuco-thresh.XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
  static const char *const files[] = {"thresholds/wl.json",
                                      "thresholds/wl.json.lock", "baseline.cu",
                                      "reference.cu", NULL};
  char p[160];
  int i;
  (void)state;
  for (i = 0; files[i]; i++) {
    snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
    unlink(p);
  }
  snprintf(p, sizeof(p), "%s/thresholds", dir);
  rmdir(p);
  return rmdir(dir);
}

static void write_file(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_freeze_rule(void **state)
{
  struct thresh t;
  (void)state;
  /* 2 x err between floor and cap */
  assert_true(fabs(thresh_freeze_one(3e-3, 1e-4, 2e-2) - 6e-3) < 1e-15);
  /* the floor when the baseline is (almost) exact */
  assert_true(thresh_freeze_one(0, 1e-4, 2e-2) == 1e-4);
  assert_true(thresh_freeze_one(4e-5, 1e-4, 2e-2) == 1e-4);
  /* never above the cap */
  assert_true(thresh_freeze_one(1.5e-2, 1e-4, 2e-2) == 2e-2);
  /* not measured / not a number: the cap */
  assert_true(thresh_freeze_one(-1, 1e-4, 2e-2) == 2e-2);
  assert_true(thresh_freeze_one(NAN, 1e-4, 2e-2) == 2e-2);
  assert_true(thresh_freeze_one(INFINITY, 1e-4, 2e-2) == 2e-2);
  thresh_freeze(&t, 1e-3, 2e-3, -1, 1e-4, 2e-2, "baseline.cu");
  assert_true(fabs(t.rel_l2 - 2e-3) < 1e-15 && fabs(t.row - 4e-3) < 1e-15);
  assert_true(t.block == 0); /* no blocks measured: no block check */
  assert_string_equal(t.baseline, "baseline.cu");
}

static void test_bounds(void **state)
{
  struct workload w;
  double fl, cap;
  (void)state;
  memset(&w, 0, sizeof(w));
  thresh_bounds(&w, &fl, &cap);
  assert_true(cap == 2e-2 && fabs(fl - 2e-4) < 1e-15);
  w.tol_rel_l2 = 1e-4;
  w.tol_floor = 1e-6;
  thresh_bounds(&w, &fl, &cap);
  assert_true(cap == 1e-4 && fl == 1e-6);
  w.tol_floor = 0.5; /* above the cap: clamped */
  thresh_bounds(&w, &fl, &cap);
  assert_true(fl == cap);
}

static void test_errors_runtime(void **state)
{
  double rel, row, blk;
  struct err e = {0, ""};
  json_t *j = json_loads(
      "{\"verify\": {\"checks\": ["
      "{\"output\": \"C\", \"passed\": true, \"rel_l2\": 1e-3, "
      "\"row_rel_l2\": "
      "2e-3, \"block_rel_l2\": 1.5e-3},"
      "{\"output\": \"C\", \"passed\": true, \"rel_l2\": 3e-3, "
      "\"row_rel_l2\": "
      "1e-3, \"block_rel_l2\": 1e-3},"
      "{\"output\": \"C\", \"passed\": false, \"rel_l2\": 0.5, "
      "\"row_rel_l2\": "
      "0.9, \"block_rel_l2\": 0.7},"
      "{\"output\": \"(timing)\", \"passed\": true, \"rel_l2\": 0.9}]}}",
      0, NULL);
  (void)state;
  assert_non_null(j);
  assert_int_equal(thresh_errors_runtime(j, &rel, &row, &blk, &e), 0);
  /* maxima over the passed output checks only */
  assert_true(rel == 3e-3 && row == 2e-3 && blk == 1.5e-3);
  json_decref(j);
  /* an old binary without block_rel_l2 */
  j = json_loads("{\"verify\": {\"checks\": [{\"output\": \"C\", \"passed\": "
                 "true, \"rel_l2\": 1e-3, \"row_rel_l2\": 2e-3}]}}",
                 0, NULL);
  assert_int_equal(thresh_errors_runtime(j, &rel, &row, &blk, &e), 0);
  assert_true(blk == -1);
  json_decref(j);
  /* nothing passed: nothing to freeze from */
  j = json_loads("{\"verify\": {\"checks\": [{\"output\": \"C\", \"passed\": "
                 "false, \"rel_l2\": 1e-3}]}}",
                 0, NULL);
  assert_int_equal(thresh_errors_runtime(j, &rel, &row, &blk, &e), ERR_PARSE);
  assert_non_null(strstr(e.msg, "no passed output check"));
  json_decref(j);
  j = json_loads("{\"verify\": {\"checks\": [{\"output\": \"C\", \"passed\": "
                 "true, \"rel_l2\": \"x\"}]}}",
                 0, NULL);
  assert_int_equal(thresh_errors_runtime(j, &rel, &row, &blk, &e), ERR_PARSE);
  json_decref(j);
}

static void test_errors_freeform(void **state)
{
  double rel, row, blk;
  struct err e = {0, ""};
  json_t *j = json_loads("{\"rel_l2\": 1e-7, \"row_rel_l2\": 2e-7}", 0, NULL);
  (void)state;
  assert_int_equal(thresh_errors_freeform(j, &rel, &row, &blk, &e), 0);
  assert_true(rel == 1e-7 && row == 2e-7 && blk == -1);
  json_decref(j);
  j = json_loads("{\"time_ms\": 1}", 0, NULL);
  assert_int_equal(thresh_errors_freeform(j, &rel, &row, &blk, &e), ERR_PARSE);
  assert_non_null(strstr(e.msg, "rel_l2"));
  json_decref(j);
  j = json_loads("{\"rel_l2\": -1}", 0, NULL);
  assert_int_equal(thresh_errors_freeform(j, &rel, &row, &blk, &e), ERR_PARSE);
  json_decref(j);
  j = json_loads("{\"rel_l2\": 0, \"block_rel_l2\": \"big\"}", 0, NULL);
  assert_int_equal(thresh_errors_freeform(j, &rel, &row, &blk, &e), ERR_PARSE);
  json_decref(j);
}

static void test_check(void **state)
{
  struct thresh t;
  char why[300];
  (void)state;
  thresh_freeze(&t, 1e-3, 2e-3, 1e-3, 1e-4, 2e-2, "baseline.cu");
  assert_int_equal(thresh_check(&t, 1.9e-3, 3.9e-3, 1.9e-3, why, sizeof(why)),
                   0);
  assert_int_equal(thresh_check(&t, 1e-3, 5e-3, 0, why, sizeof(why)), 1);
  assert_non_null(strstr(why, "row_rel_l2 0.005 > threshold 0.004"));
  assert_non_null(strstr(why, "frozen from baseline.cu"));
  assert_int_equal(thresh_check(&t, 1e-3, 1e-3, 3e-3, why, sizeof(why)), 1);
  assert_non_null(strstr(why, "block_rel_l2"));
  assert_int_equal(thresh_check(&t, NAN, 0, 0, why, sizeof(why)), 1);
  /* a block threshold of 0 means no block check */
  thresh_freeze(&t, 1e-3, 2e-3, -1, 1e-4, 2e-2, "b");
  assert_int_equal(thresh_check(&t, 1e-3, 1e-3, 0.5, why, sizeof(why)), 0);
}

static void test_key(void **state)
{
  struct workload w;
  char k1[600], k2[600], k3[600], p[128];
  struct err e = {0, ""};
  (void)state;
  memset(&w, 0, sizeof(w));
  snprintf(w.dir, sizeof(w.dir), "%s", dir);
  w.nbaselines = 1;
  snprintf(w.baselines[0], sizeof(w.baselines[0]), "baseline.cu");
  snprintf(w.reference, sizeof(w.reference), "reference.cu");
  snprintf(p, sizeof(p), "%s/baseline.cu", dir);
  write_file(p, "one");
  snprintf(p, sizeof(p), "%s/reference.cu", dir);
  write_file(p, "ref");
  assert_int_equal(thresh_key(&w, "M=1,K=2", 2, 0, k1, sizeof(k1), &e), 0);
  assert_int_equal(strncmp(k1, "M=1,K=2|r2|v0|", 14), 0);
  assert_int_equal(thresh_key(&w, "M=1,K=2", 2, 0, k2, sizeof(k2), &e), 0);
  assert_string_equal(k1, k2);
  snprintf(p, sizeof(p), "%s/reference.cu", dir);
  write_file(p, "ref2"); /* an edited reference: a new key */
  assert_int_equal(thresh_key(&w, "M=1,K=2", 2, 0, k3, sizeof(k3), &e), 0);
  assert_string_not_equal(k1, k3);
  assert_int_equal(thresh_key(&w, "M=1,K=2", 4, 0, k2, sizeof(k2), &e), 0);
  assert_string_not_equal(k2, k3);
  snprintf(w.reference, sizeof(w.reference), "missing.cu");
  assert_int_equal(thresh_key(&w, "M=1", 1, 0, k2, sizeof(k2), &e), ERR_IO);
  assert_non_null(strstr(e.msg, "missing.cu"));
}

static void test_store(void **state)
{
  struct thresh t, u;
  struct err e = {0, ""};
  int found = -1, stored = -1;
  char path[160];
  (void)state;
  assert_int_equal(thresh_load(dir, "wl", "k1", &u, &found, &e), 0);
  assert_int_equal(found, 0); /* no file yet */
  thresh_freeze(&t, 1e-3, 2e-3, 1.5e-3, 1e-4, 2e-2, "baseline.cu");
  assert_int_equal(thresh_store(dir, "wl", "k1", &t, &stored, &e), 0);
  assert_int_equal(stored, 1);
  assert_int_equal(thresh_load(dir, "wl", "k1", &u, &found, &e), 0);
  assert_int_equal(found, 1);
  assert_true(u.rel_l2 == t.rel_l2 && u.row == t.row && u.block == t.block);
  assert_true(u.err_row == 2e-3 && u.floor == 1e-4 && u.cap == 2e-2);
  assert_string_equal(u.baseline, "baseline.cu");
  /* the first freeze wins */
  thresh_freeze(&t, 5e-3, 5e-3, 5e-3, 1e-4, 2e-2, "other.cu");
  assert_int_equal(thresh_store(dir, "wl", "k1", &t, &stored, &e), 0);
  assert_int_equal(stored, 0);
  assert_int_equal(thresh_load(dir, "wl", "k1", &u, &found, &e), 0);
  assert_string_equal(u.baseline, "baseline.cu");
  /* a second key beside it */
  assert_int_equal(thresh_store(dir, "wl", "k2", &t, &stored, &e), 0);
  assert_int_equal(thresh_load(dir, "wl", "k2", &u, &found, &e), 0);
  assert_true(found == 1 && u.rel_l2 == 1e-2);
  assert_int_equal(thresh_load(dir, "wl", "k1", &u, &found, &e), 0);
  assert_true(found == 1 && u.rel_l2 == 2e-3);
  /* malformed files are errors naming the file, never replaced */
  snprintf(path, sizeof(path), "%s/thresholds/wl.json", dir);
  write_file(path, "[1, 2]");
  assert_int_equal(thresh_load(dir, "wl", "k1", &u, &found, &e), ERR_PARSE);
  assert_non_null(strstr(e.msg, "wl.json"));
  assert_int_equal(thresh_store(dir, "wl", "k3", &t, &stored, &e), ERR_PARSE);
  write_file(path,
             "{\"entries\": {\"k1\": {\"rel_l2\": 2, \"baseline\": \"b\","
             " \"floor\": 0, \"cap\": 0.02, \"baseline_error\": "
             "{\"rel_l2\": 0}}}}");
  assert_int_equal(thresh_load(dir, "wl", "k1", &u, &found, &e), ERR_PARSE);
  assert_non_null(strstr(e.msg, "entry 'k1' is malformed"));
  write_file(path, "{\"entries\": {\"k1\": {\"rel_l2\": 0.01, \"baseline\": "
                   "\"b\", \"floor\": 0, \"cap\": 0.02, \"baseline_error\": "
                   "{\"rel_l2\": 0.005}}}, \"entries\": {}}");
  assert_int_equal(thresh_load(dir, "wl", "k1", &u, &found, &e), ERR_PARSE);
  write_file(path, "{\"entries\": {\"k1\": {\"rel_l2\": 0.01, \"baseline\": "
                   "\"b\", \"floor\": 0, \"cap\": 0.02, \"baseline_error\": "
                   "{\"rel_l2\": 0.005}}}}");
  assert_int_equal(thresh_load(dir, "wl", "k1", &u, &found, &e), 0);
  assert_true(found == 1 && u.rel_l2 == 0.01 && u.row == 0 && u.block == 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_freeze_rule),
      cmocka_unit_test(test_bounds),
      cmocka_unit_test(test_errors_runtime),
      cmocka_unit_test(test_errors_freeform),
      cmocka_unit_test(test_check),
      cmocka_unit_test(test_key),
      cmocka_unit_test(test_store),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
