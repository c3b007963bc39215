/* Unit tests of the runtime's phase accounting (runtime/rt_phase.h, plain
 * C): which class a progress stage belongs to, time charged to the earlier
 * stage's class, time moved out of the open class ("judge"), and the
 * "phases_ms" object RESULT.json carries (valid JSON, 4 significant
 * digits), and the time from the process's start read from /proc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "rt_phase.h"

/* P's phases_ms as RESULT.json carries it, parsed; NULL if not JSON. */
static json_t *phases_at(const struct rt_phases *p, double now, char *text,
                         size_t cap)
{
  char doc[2048];
  FILE *f = fmemopen(text, cap, "w");

  assert_non_null(f);
  rt_phases_json(p, f, now);
  assert_int_equal(fclose(f), 0);
  snprintf(doc, sizeof(doc), "{\"schema\": 1%s}", text);
  return json_loads(doc, 0, NULL);
}

static double ms_of(json_t *doc, const char *cls)
{
  json_t *v = json_object_get(json_object_get(doc, "phases_ms"), cls);

  assert_true(json_is_number(v));
  return json_number_value(v);
}

static void test_class(void **state)
{
  (void)state;
  assert_int_equal(rt_phase_class_len("init"), 4);
  assert_int_equal(rt_phase_class_len("timed 12"), 5);
  assert_int_equal(rt_phase_class_len("perturb 0"), 7);
  assert_int_equal(rt_phase_class_len("perturb-hog"), 7); /* --vranks */
  assert_int_equal(rt_phase_class_len(""), 0);
  assert_int_equal(rt_phase_class_len("Init"), 0);
}

/* The stage sequence of a verify run, then a bench one, on a fake clock. */
static void test_sequence(void **state)
{
  struct rt_phases p;
  char text[1024];
  json_t *doc;
  const char *order[] = {"start", "init",    "boot",   "setup", "verify",
                         "judge", "perturb", "warmup", "timed"};
  size_t i;

  (void)state;
  rt_phases_init(&p);
  rt_phases_add(&p, "start", 120);
  rt_phases_mark(&p, "init", 1000);
  rt_phases_mark(&p, "boot", 1005);
  rt_phases_mark(&p, "setup", 3005);
  rt_phases_mark(&p, "verify", 3100);
  rt_phases_move(&p, "judge", 30); /* of the 50 ms below */
  rt_phases_mark(&p, "verify", 3150);
  rt_phases_mark(&p, "perturb 0", 3200);
  rt_phases_move(&p, "judge", 8);
  rt_phases_mark(&p, "perturb 1", 3220);
  rt_phases_mark(&p, "warmup", 3240);
  rt_phases_mark(&p, "warmup", 3250);
  rt_phases_mark(&p, "timed 0", 3260);
  rt_phases_move(&p, "judge", 2);
  rt_phases_mark(&p, "timed 1", 3270);
  doc = phases_at(&p, 3280, text, sizeof(text)); /* timed 1 still open */
  assert_non_null(doc);
  assert_true(ms_of(doc, "start") == 120);
  assert_true(ms_of(doc, "init") == 5);
  assert_true(ms_of(doc, "boot") == 2000);
  assert_true(ms_of(doc, "setup") == 95);
  assert_true(ms_of(doc, "verify") == 100 - 30);
  assert_true(ms_of(doc, "judge") == 30 + 8 + 2);
  assert_true(ms_of(doc, "perturb") == 40 - 8);
  assert_true(ms_of(doc, "warmup") == 20);
  assert_true(ms_of(doc, "timed") == 20 - 2);
  /* the classes in the order they first occurred, nothing else */
  assert_int_equal(json_object_size(json_object_get(doc, "phases_ms")),
                   sizeof(order) / sizeof(order[0]));
  for (i = 0; i + 1 < sizeof(order) / sizeof(order[0]); i++)
    assert_true(strstr(text, order[i]) < strstr(text, order[i + 1]));
  json_decref(doc);
}

static void test_format(void **state)
{
  struct rt_phases p;
  char text[1024];
  json_t *doc;

  (void)state;
  rt_phases_init(&p);
  doc = phases_at(&p, 0, text, sizeof(text));
  assert_non_null(doc);
  assert_int_equal(json_object_size(json_object_get(doc, "phases_ms")), 0);
  json_decref(doc);
  rt_phases_add(&p, "start", 0.123456);
  rt_phases_add(&p, "boot", 1234.56);
  rt_phases_add(&p, "setup", 61234.5);
  rt_phases_mark(&p, "verify", 0);
  rt_phases_move(&p, "judge", 5); /* more than the open class has had */
  doc = phases_at(&p, 2, text, sizeof(text));
  assert_non_null(doc);
  assert_non_null(strstr(text, "\"start\": 0.1235"));
  assert_non_null(strstr(text, "\"boot\": 1235"));
  assert_true(fabs(ms_of(doc, "setup") - 61230) < 1e-9);
  assert_true(ms_of(doc, "verify") == 0); /* clamped, never negative */
  json_decref(doc);
}

/* More classes than the table holds: the extra ones are not counted. */
static void test_full(void **state)
{
  struct rt_phases p;
  char stage[8];
  int i;

  (void)state;
  rt_phases_init(&p);
  for (i = 0; i < RT_PHASE_MAX + 4; i++) {
    stage[0] = (char)('a' + i % 26);
    stage[1] = (char)('a' + i / 26);
    stage[2] = 0;
    rt_phases_mark(&p, stage, i);
  }
  assert_int_equal(p.n, RT_PHASE_MAX);
  assert_int_equal(p.cur, -1);
  rt_phases_move(&p, "judge", 1); /* no slot left: ignored */
  assert_int_equal(p.n, RT_PHASE_MAX);
  assert_int_equal(rt_phases_slot(&p, "averyveryverylongclass", 22), -1);
}

/* This process started moments ago, whatever its command name holds. */
static void test_since_start(void **state)
{
  double ms = -1, again = -1;

  (void)state;
  if (rt_phase_since_start_ms(&ms) != 0)
    skip(); /* no /proc here */
  assert_true(ms >= 0 && ms < 600e3);
  /* a name that shifts every field for a parser stopping at its ')' */
  assert_int_equal(prctl(PR_SET_NAME, "t) 1 2 3 4 5 6", 0, 0, 0), 0);
  assert_int_equal(rt_phase_since_start_ms(&again), 0);
  assert_true(again >= ms && again - ms < 5e3);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_class),       cmocka_unit_test(test_sequence),
      cmocka_unit_test(test_format),      cmocka_unit_test(test_full),
      cmocka_unit_test(test_since_start),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
