/* Unit tests for select.c and novelty.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "novelty.h"
#include "select.h"

static void test_rng(void **state)
{
  struct select_rng a, b;
  int i, hist[4] = {0};
  (void)state;
  select_rng_seed(&a, 7);
  select_rng_seed(&b, 7);
  for (i = 0; i < 100; i++)
    assert_true(select_rng_next(&a) == select_rng_next(&b));
  for (i = 0; i < 4000; i++) {
    double u = select_rng_uniform(&a);
    assert_true(u >= 0 && u < 1);
    hist[select_rng_below(&a, 4)]++;
  }
  for (i = 0; i < 4; i++)
    assert_true(hist[i] > 800 && hist[i] < 1200);
}

static void test_weights(void **state)
{
  double s[5] = {1, 2, 3, 4, 100}, w[5];
  int ch[5] = {0, 0, 0, 0, 3};
  double eq[3] = {5, 5, 5}, we[3];
  (void)state;
  assert_true(select_median(s, 5) == 3);
  select_weights(s, NULL, 5, 8, w);
  /* monotone in score, median gets 0.5 */
  assert_true(w[0] < w[1] && w[1] < w[2] && w[2] < w[3] && w[3] < w[4]);
  assert_true(w[2] > 0.49 && w[2] < 0.51);
  assert_true(w[4] > 0.99);
  /* children damp the weight */
  select_weights(s, ch, 5, 8, w);
  assert_true(w[4] < 0.26 && w[4] > 0.24);
  select_weights(eq, NULL, 3, 8, we);
  assert_true(we[0] == 0.5 && we[2] == 0.5);
}

static void test_parent_schemes(void **state)
{
  double s[4] = {10, 40, 20, 30};
  int ch[4] = {0, 0, 0, 0}, hist[4] = {0}, i;
  struct select_params p = {SELECT_HILL, 8, 1};
  struct select_rng r;
  (void)state;
  select_rng_seed(&r, 1);
  assert_int_equal(select_parent(&p, s, ch, 4, &r), 1);
  p.kind = SELECT_POWER;
  for (i = 0; i < 4000; i++)
    hist[select_parent(&p, s, ch, 4, &r)]++;
  /* rank weights 1, 1/2, 1/3, 1/4: best (idx 1) most, worst (idx 0) least */
  assert_true(hist[1] > hist[3] && hist[3] > hist[2] && hist[2] > hist[0]);
  memset(hist, 0, sizeof(hist));
  p.kind = SELECT_WEIGHTED;
  for (i = 0; i < 4000; i++)
    hist[select_parent(&p, s, ch, 4, &r)]++;
  assert_true(hist[1] > hist[0] * 5);
  assert_int_equal(select_kind_parse("power"), SELECT_POWER);
  assert_int_equal(select_kind_parse("nope"), -1);
}

static void test_novelty(void **state)
{
  const char *a = "frozen1\n// EVOLVE-BLOCK-START\n"
                  "int f(int x) { int y = x * 2; return y + 1; }\n"
                  "int g(int x) { return x - 3; }\n"
                  "// EVOLVE-BLOCK-END\nfrozen2\n";
  /* same code, other comments and whitespace, other frozen text */
  const char *a2 = "other\n// EVOLVE-BLOCK-START\n// a comment\n"
                   "int f(int x)\n{\n  int y = x * 2;\n  return y + 1;\n}\n"
                   "int g(int x) { return x - 3; } /* c */\n"
                   "// EVOLVE-BLOCK-END\n";
  const char *b = "// EVOLVE-BLOCK-START\n"
                  "double h(double q) { while (q > 1) q /= 2; return q; }\n"
                  "// EVOLVE-BLOCK-END\n";
  const char *d1 = "// EVOLVE-BLOCK-START\n// CUCO-PARAM tile=8\nint f;\n"
                   "// EVOLVE-BLOCK-END\n";
  const char *d2 = "// EVOLVE-BLOCK-START\n// CUCO-PARAM tile=16\nint f;\n"
                   "// EVOLVE-BLOCK-END\n";
  struct novelty_sig sa, sa2, sb, s1, s2;
  float v1[3] = {1, 0, 0}, v2[3] = {1, 1, 0};
  (void)state;
  assert_int_equal(novelty_sig_init(&sa, a), 0);
  assert_int_equal(novelty_sig_init(&sa2, a2), 0);
  assert_int_equal(novelty_sig_init(&sb, b), 0);
  assert_int_equal(novelty_sig_init(&s1, d1), 0);
  assert_int_equal(novelty_sig_init(&s2, d2), 0);
  assert_true(novelty_jaccard(&sa, &sa2) == 1.0);
  assert_true(novelty_jaccard(&sa, &sb) < 0.1);
  /* directive comments count: a tuned copy is not identical */
  assert_true(novelty_jaccard(&s1, &s2) < 1.0);
  assert_true(novelty_cosine(v1, v1, 3) > 0.999);
  assert_true(novelty_cosine(v1, v2, 3) > 0.70 &&
              novelty_cosine(v1, v2, 3) < 0.71);
  novelty_sig_release(&sa);
  novelty_sig_release(&sa2);
  novelty_sig_release(&sb);
  novelty_sig_release(&s1);
  novelty_sig_release(&s2);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rng),
      cmocka_unit_test(test_weights),
      cmocka_unit_test(test_parent_schemes),
      cmocka_unit_test(test_novelty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
