/* Unit tests for how results are worded: a confirmation's margin is never
 * a negative gain (meta.c), and "the bar" only where the workload has one
 * (prompt.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"
#include "prompt.h"
#include "workload.h"

static void test_margin_faster(void **state)
{
  char t[200];
  (void)state;
  assert_string_equal(meta_margin_text(t, sizeof t, 5, 3, 1.188, 1.12, 1.25),
                      "best #5 is 18.8% faster than #3 [12.0, 25.0]");
  assert_string_equal(meta_margin_text(t, sizeof t, 5, 3, 1.02, 0.99, 1.05),
                      "best #5 is 2.0% faster than #3 [-1.0, 5.0] (not "
                      "beyond the noise)");
}

/* The best slower than a contender: "slower", never "beats by -18.8%". */
static void test_margin_slower(void **state)
{
  char t[200];
  (void)state;
  assert_string_equal(meta_margin_text(t, sizeof t, 5, 3, 0.812, 0.75, 0.88),
                      "best #5 is 18.8% slower than #3 [12.0, 25.0]");
  assert_null(strstr(t, "beats"));
  assert_null(strstr(t, "-"));
  assert_string_equal(meta_margin_text(t, sizeof t, 5, 3, 0.97, 0.9, 1.01),
                      "best #5 is 3.0% slower than #3 [-1.0, 10.0] (not "
                      "beyond the noise)");
}

/* A user prompt for workload w whose parent has a speedup. */
static char *user_prompt(struct workload *w)
{
  struct prompt_program parent = {0};
  struct prompt_ctx c = {0};

  parent.id = 7;
  parent.code = "int x;\n";
  parent.directives = "{}";
  parent.has_score = 1;
  parent.median_ms = 2.5;
  parent.speedup = 1.47;
  c.wl = w;
  c.parent = &parent;
  return prompt_user(&c);
}

static void test_prompt_bar_only_with_a_bar(void **state)
{
  struct workload *w = calloc(1, sizeof(*w));
  char *p;
  (void)state;
  assert_non_null(w);
  snprintf(w->name, sizeof(w->name), "landscape");
  p = user_prompt(w); /* no baselines: speedups are over the seed */
  assert_non_null(p);
  assert_non_null(strstr(p, "(program 7, 2.5 ms, 1.47x the seed)"));
  assert_null(strstr(p, "the bar"));
  free(p);
  w->nbar = 1;
  snprintf(w->bar[0], sizeof(w->bar[0]), "baseline.cu");
  p = user_prompt(w);
  assert_non_null(p);
  assert_non_null(strstr(p, "1.47x the bar (fastest baseline)"));
  free(p);
  free(w);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_margin_faster),
      cmocka_unit_test(test_margin_slower),
      cmocka_unit_test(test_prompt_bar_only_with_a_bar),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
