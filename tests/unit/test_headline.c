/* Unit tests for headline.c: the one speedup of a run, in words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "headline.h"

static void test_text(void **state)
{
  struct headline h = {12, 14.6, 13.9, 15.3, 3, 1, 1, 0};
  char t[256];
  (void)state;
  assert_string_equal(headline_text(&h, t, sizeof t),
                      "14.6x the bar, 95% CI [13.9, 15.3], confirmed over 3 "
                      "rounds");
  assert_string_equal(headline_short(&h, t, sizeof t),
                      "14.6x the bar, confirmed [13.9, 15.3]");
  h.confirmed = 0;
  h.speedup = 36.6;
  h.has_bar = 0;
  assert_string_equal(headline_text(&h, t, sizeof t),
                      "36.6x the seed, unconfirmed (the search's single "
                      "measurement)");
  assert_string_equal(headline_short(&h, t, sizeof t),
                      "36.6x the seed, unconfirmed");
  h.is_seed = 1;
  assert_string_equal(headline_text(&h, t, sizeof t),
                      "1x: the best is the seed");
  h.is_seed = 0;
  h.speedup = -1;
  assert_string_equal(headline_text(&h, t, sizeof t),
                      "no speedup measured yet");
}

/* The confirmation of the best against the bar (or, without one, the
 * seed) is taken; other programs' rows and other verdicts are not. */
static void test_pick_and_json(void **state)
{
  json_t *rows = json_loads(
      "[{\"program_id\": 7, \"versus\": \"bar\", \"verdict\": \"best\","
      "  \"ratio\": 2.0, \"lo\": 1.9, \"hi\": 2.1, \"rounds\": 3},"
      " {\"program_id\": 12, \"versus\": \"incumbent\", \"verdict\": "
      "\"slower\", \"ratio\": 1.2, \"lo\": 1.1, \"hi\": 1.3, \"rounds\": 3},"
      " {\"program_id\": 12, \"versus\": \"seed\", \"verdict\": \"best\","
      "  \"ratio\": 9.1, \"lo\": 8.8, \"hi\": 9.4, \"rounds\": 6},"
      " {\"program_id\": 12, \"versus\": \"bar\", \"verdict\": \"best\","
      "  \"ratio\": 14.6, \"lo\": 13.9, \"hi\": 15.3, \"rounds\": 6}]",
      0, NULL);
  struct headline h = {12, 36.6, 0, 0, 0, 0, 1, 0}, back;
  json_t *j;
  (void)state;
  assert_non_null(rows);
  headline_pick(&h, rows);
  assert_true(h.confirmed);
  assert_true(h.speedup == 14.6 && h.lo == 13.9 && h.hi == 15.3);
  assert_int_equal(h.rounds, 6);
  h = (struct headline){12, 36.6, 0, 0, 0, 0, 0, 0};
  headline_pick(&h, rows);
  assert_true(h.confirmed && h.speedup == 9.1);
  h = (struct headline){5, 3.0, 0, 0, 0, 0, 1, 0};
  headline_pick(&h, rows);
  assert_false(h.confirmed);
  assert_true(h.speedup == 3.0);
  h = (struct headline){12, 14.6, 13.9, 15.3, 6, 1, 1, 0};
  j = headline_json(&h);
  assert_string_equal(json_string_value(json_object_get(j, "versus")), "bar");
  headline_parse(j, &back);
  assert_memory_equal(&h, &back, sizeof h);
  json_decref(j);
  json_decref(rows);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text),
      cmocka_unit_test(test_pick_and_json),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
