/* Unit tests for bar.c: per-size minimum, ties, failed and missing
 * baselines, baselines outside the bar, the shapes of metrics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bar.h"

static json_t *parse(const char *s)
{
  json_t *j = json_loads(s, 0, NULL);
  assert_non_null(j);
  return j;
}

static double med(const json_t *bar, const char *size)
{
  return json_number_value(
      json_object_get(json_object_get(bar, size), "median_ms"));
}

/* Each baseline is faster at one size: the bar switches per size. */
static void test_min_per_size(void **state)
{
  json_t *a =
      parse("{\"bench\":{\"s1\":{\"timing\":{\"median_ms\":2,"
            "\"p10_ms\":1.9}},\"s2\":{\"timing\":{\"median_ms\":4}}}}");
  json_t *b = parse("{\"bench\":{\"s1\":{\"median_ms\":3},"
                    "\"s2\":{\"median_ms\":3}}}");
  const char *names[] = {"a.cu", "b.cu"};
  const json_t *m[] = {a, b};
  const char bar[2][128] = {"a.cu", "b.cu"};
  json_t *r;
  (void)state;

  r = bar_build(names, m, 2, bar, 2);
  assert_non_null(r);
  assert_int_equal(json_object_size(r), 2);
  assert_string_equal(bar_name(r, "s1"), "a.cu");
  assert_string_equal(bar_name(r, "s2"), "b.cu");
  assert_true(med(r, "s1") == 2 && med(r, "s2") == 3);
  /* the winner's other timing keys come along */
  assert_true(json_number_value(
                  json_object_get(json_object_get(r, "s1"), "p10_ms")) == 1.9);
  assert_true(
      json_number_value(json_object_get(
          json_object_get(
              json_object_get(json_object_get(r, "s2"), "baselines"), "a.cu"),
          "median_ms")) == 4);
  assert_true(fabs(bar_mean(r) - sqrt(6.0)) < 1e-12);
  json_decref(r);
  json_decref(a);
  json_decref(b);
}

/* Ties go to the earlier bar entry; a baseline outside the bar is listed
 * but never the bar, however fast. */
static void test_tie_and_outside(void **state)
{
  json_t *a = parse("{\"bench\":{\"s\":{\"median_ms\":3}}}");
  json_t *b = parse("{\"bench\":{\"s\":{\"median_ms\":3}}}");
  json_t *c = parse("{\"bench\":{\"s\":{\"median_ms\":1}}}");
  const char *names[] = {"a", "b", "c"};
  const json_t *m[] = {a, b, c};
  const char bar[2][128] = {"b", "a"};
  json_t *r;
  (void)state;

  r = bar_build(names, m, 3, bar, 2);
  assert_string_equal(bar_name(r, "s"), "b");
  assert_true(med(r, "s") == 3);
  assert_non_null(json_object_get(
      json_object_get(json_object_get(r, "s"), "baselines"), "c"));
  json_decref(r);
  json_decref(a);
  json_decref(b);
  json_decref(c);
}

/* A failed baseline (NULL), a size one baseline lacks, bad numbers. */
static void test_failed_and_missing(void **state)
{
  json_t *b =
      parse("{\"bench\":{\"s1\":{\"median_ms\":5},"
            "\"s2\":{\"median_ms\":-1},\"s3\":{\"median_ms\":\"x\"}}}");
  const char *names[] = {"a", "b"};
  const json_t *m[] = {NULL, b};
  const char bar[2][128] = {"a", "b"};
  json_t *r;
  (void)state;

  r = bar_build(names, m, 2, bar, 2);
  assert_int_equal(json_object_size(r), 1);
  assert_string_equal(bar_name(r, "s1"), "b");
  assert_null(bar_name(r, "s2"));
  json_decref(r);
  /* no bar baseline measured at all: empty, and no mean */
  r = bar_build(names, m, 1, bar, 1);
  assert_int_equal(json_object_size(r), 0);
  assert_true(bar_mean(r) < 0);
  json_decref(r);
  json_decref(b);
}

/* A baseline_json from before the bar: no name, the mean still works. */
static void test_old_shape(void **state)
{
  json_t *old = parse("{\"s\":{\"median_ms\":4},\"t\":{\"median_ms\":9}}");
  (void)state;
  assert_null(bar_name(old, "s"));
  assert_true(fabs(bar_mean(old) - 6) < 1e-12);
  assert_true(isnan(bar_metrics_median(old, "s")));
  json_decref(old);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_min_per_size),
      cmocka_unit_test(test_tie_and_outside),
      cmocka_unit_test(test_failed_and_missing),
      cmocka_unit_test(test_old_shape),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
