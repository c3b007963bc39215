/* Unit tests for the frozen host code of workloads/moe_dsv3: the routing
 * generator (moe_routing.c) and the plain-C twin of the FP8 quantizer
 * (moe_fp8.h).  The twin is compared bit for bit with cuda_fp8.h by
 * tests/cli/t1102 (needs nvcc, runs on the CPU). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moe_fp8.h"
#include "moe_routing.h"

/* Generate rank RANK's routing of C with KEY into fresh arrays. */
static void gen(const struct moe_route_cfg *c, uint64_t key, int rank,
                int32_t **idx, float **w)
{
  *idx = malloc(sizeof(int32_t) * (size_t)c->T * c->K);
  *w = malloc(sizeof(float) * (size_t)c->T * c->K);
  assert_non_null(*idx);
  assert_non_null(*w);
  assert_int_equal(moe_route_gen(c, key, rank, *idx, *w), 0);
}

/* Every token: K distinct experts in range, from at most TG groups,
 * positive weights summing to the scale. */
static void assert_valid(const struct moe_route_cfg *c, const int32_t *idx,
                         const float *w)
{
  for (int t = 0; t < c->T; t++) {
    unsigned char gseen[MOE_ROUTE_MAX_G] = {0};
    int ng = 0;
    double sum = 0;
    for (int k = 0; k < c->K; k++) {
      int e = idx[t * c->K + k];
      assert_in_range(e, 0, c->E - 1);
      for (int j = 0; j < k; j++)
        assert_int_not_equal(e, idx[t * c->K + j]);
      if (c->mode != MOE_ROUTE_PAPER) {
        int g = e / (c->E / c->G);
        if (!gseen[g])
          gseen[g] = 1, ng++;
      }
      assert_true(w[t * c->K + k] > 0.0f);
      sum += w[t * c->K + k];
    }
    assert_true(ng <= c->TG);
    assert_true(fabs(sum - c->scale) <= 1e-5 * c->scale);
  }
}

static void test_check_rejects(void **state)
{
  struct moe_route_cfg c;
  char err[160];
  (void)state;
  moe_route_defaults(&c, 4096, 8);
  assert_int_equal(moe_route_check(&c, err, sizeof err), 0);
  c.E = 252; /* not a multiple of 8 ranks */
  assert_int_equal(moe_route_check(&c, err, sizeof err), -1);
  assert_non_null(strstr(err, "E (experts)"));
  moe_route_defaults(&c, 4096, 8);
  c.K = 129; /* over MAX_K */
  assert_int_equal(moe_route_check(&c, err, sizeof err), -1);
  assert_non_null(strstr(err, "K (experts per token)"));
  moe_route_defaults(&c, 16, 1);
  c.E = 16, c.G = 8, c.TG = 2, c.K = 5; /* 2 groups of 2 experts hold only 4 */
  assert_int_equal(moe_route_check(&c, err, sizeof err), -1);
  assert_non_null(strstr(err, "TG * E / G"));
  moe_route_defaults(&c, 16, 2);
  c.rho = 0.5;
  assert_int_equal(moe_route_check(&c, err, sizeof err), -1);
  assert_non_null(strstr(err, "rho"));
  moe_route_defaults(&c, 16, 2);
  c.alpha = 5;
  assert_int_equal(moe_route_check(&c, err, sizeof err), -1);
  assert_non_null(strstr(err, "alpha"));
  moe_route_defaults(&c, 16, 2);
  c.mode = MOE_ROUTE_PAPER; /* needs E = R and K = 1 */
  assert_int_equal(moe_route_check(&c, err, sizeof err), -1);
  assert_non_null(strstr(err, "paper mode"));
  moe_route_defaults(&c, 0, 2);
  assert_int_equal(moe_route_check(&c, err, sizeof err), -1);
  assert_non_null(strstr(err, "T (tokens"));
  moe_route_defaults(&c, 16, 1);
  c.E = 16, c.G = 8, c.TG = 2, c.K = 3, c.mode = MOE_ROUTE_EDGE;
  assert_int_equal(moe_route_check(&c, err, sizeof err), -1);
  assert_non_null(strstr(err, "edge mode"));
}

static void test_dsv3_valid_and_deterministic(void **state)
{
  struct moe_route_cfg c;
  int32_t *a, *b;
  float *wa, *wb;
  (void)state;
  moe_route_defaults(&c, 4096, 8);
  assert_int_equal(moe_route_check(&c, NULL, 0), 0);
  assert_int_equal(moe_route_calibrate(&c, NULL), 0);
  assert_true(c.bias == 1.0); /* rho = 1: no skew */
  gen(&c, moe_route_key(7, 3, 1), 3, &a, &wa);
  assert_valid(&c, a, wa);
  gen(&c, moe_route_key(7, 3, 1), 3, &b, &wb);
  assert_memory_equal(a, b, sizeof(int32_t) * 4096 * 8);
  assert_memory_equal(wa, wb, sizeof(float) * 4096 * 8);
  free(b), free(wb);
  /* another step, rank or seed: another routing */
  uint64_t keys[3] = {moe_route_key(7, 3, 2), moe_route_key(7, 4, 1),
                      moe_route_key(8, 3, 1)};
  for (int i = 0; i < 3; i++) {
    gen(&c, keys[i], 3, &b, &wb);
    assert_valid(&c, b, wb);
    assert_true(memcmp(a, b, sizeof(int32_t) * 4096 * 8) != 0);
    free(b), free(wb);
  }
  /* all 256 experts are used, each roughly equally (balanced) */
  long long load[8] = {0}, el[256] = {0};
  moe_route_loads(&c, a, load, el);
  for (int e = 0; e < 256; e++)
    assert_in_range(el[e], 64, 256); /* mean 128 */
  free(a), free(wa);
}

/* Realized ratio over R ranks x T tokens each at target RHO. */
static double realized(int R, double rho, double alpha, double *expected)
{
  struct moe_route_cfg c;
  moe_route_defaults(&c, 4096, R);
  c.rho = rho;
  c.alpha = alpha;
  assert_int_equal(moe_route_check(&c, NULL, 0), 0);
  assert_int_equal(moe_route_calibrate(&c, expected), 0);
  long long load[MOE_ROUTE_MAX_R] = {0};
  for (int r = 0; r < R; r++) {
    int32_t *idx;
    float *w;
    gen(&c, moe_route_key(99, r, 5), r, &idx, &w);
    if (r == 0)
      assert_valid(&c, idx, w);
    moe_route_loads(&c, idx, load, NULL);
    free(idx), free(w);
  }
  return moe_route_ratio(load, R);
}

static void test_skew_hits_target(void **state)
{
  (void)state;
  static const struct {
    int R;
    double rho, alpha;
  } cases[] = {{2, 1, 0}, {2, 2, 0}, {2, 3, 0},   {2, 5, 0},  {8, 1, 0},
               {8, 2, 0}, {8, 5, 0}, {8, 5, 1.2}, {4, 3, 0.6}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double exp_r = 0,
           got = realized(cases[i].R, cases[i].rho, cases[i].alpha, &exp_r);
    /* calibration's own estimate and an independent draw both near target */
    assert_true(fabs(exp_r - cases[i].rho) <= 0.05 * cases[i].rho);
    if (fabs(got - cases[i].rho) > 0.08 * cases[i].rho)
      fail_msg("R=%d rho=%g alpha=%g: realized %g", cases[i].R, cases[i].rho,
               cases[i].alpha, got);
  }
}

static void test_zipf_inside_groups(void **state)
{
  struct moe_route_cfg c;
  int32_t *idx;
  float *w;
  (void)state;
  moe_route_defaults(&c, 4096, 1);
  c.alpha = 1.2;
  assert_int_equal(moe_route_check(&c, NULL, 0), 0);
  gen(&c, moe_route_key(1, 0, 1), 0, &idx, &w);
  assert_valid(&c, idx, w);
  long long pos[32] = {0};
  for (int i = 0; i < 4096 * 8; i++)
    pos[idx[i] % 32]++;
  assert_true(pos[0] > 5 * pos[31]);
  assert_true(pos[0] > pos[1] && pos[1] > pos[3] && pos[3] > pos[15]);
  free(idx), free(w);
}

static void test_paper_splits_exact(void **state)
{
  static const int want[4][2] = {
      {2731, 1365}, {3072, 1024}, {3277, 819}, {3413, 683}};
  (void)state;
  for (int rho = 2; rho <= 5; rho++) {
    struct moe_route_cfg c;
    double expected;
    moe_route_defaults(&c, 4096, 2);
    c.E = 2, c.K = 1, c.mode = MOE_ROUTE_PAPER, c.rho = rho;
    assert_int_equal(moe_route_check(&c, NULL, 0), 0);
    assert_int_equal(moe_route_calibrate(&c, &expected), 0);
    assert_true(fabs(expected - (double)want[rho - 2][0] / want[rho - 2][1]) <
                1e-12);
    for (int r = 0; r < 2; r++) {
      int32_t *idx;
      float *w;
      long long load[2] = {0};
      gen(&c, moe_route_key(5, r, 1), r, &idx, &w);
      moe_route_loads(&c, idx, load, NULL);
      assert_int_equal(load[0], want[rho - 2][0]);
      assert_int_equal(load[1], want[rho - 2][1]);
      for (int t = 0; t < 4096; t++)
        assert_true(w[t] == 2.5f);
      /* the hot tokens are a random subset, not a prefix */
      int prefix = 1;
      for (int t = 0; t < want[rho - 2][0]; t++)
        prefix &= idx[t] == 0;
      assert_false(prefix);
      free(idx), free(w);
    }
  }
}

static void test_small_and_edge_cases(void **state)
{
  static const int Ts[4] = {1, 7, 33, 130};
  (void)state;
  for (int i = 0; i < 4;
       i++) { /* small T, small expert counts, R = 1 with 8 experts */
    struct moe_route_cfg c;
    int32_t *idx;
    float *w;
    moe_route_defaults(&c, Ts[i], 1);
    c.E = 8, c.G = 4, c.TG = 2, c.K = 3;
    assert_int_equal(moe_route_check(&c, NULL, 0), 0);
    gen(&c, moe_route_key(2, 0, 1), 0, &idx, &w);
    assert_valid(&c, idx, w);
    free(idx), free(w);
  }
  /* edge: expert 1 gets no token, expert 2 exactly one over both ranks */
  struct moe_route_cfg c;
  moe_route_defaults(&c, 33, 2);
  c.E = 16, c.G = 4, c.TG = 2, c.K = 4, c.mode = MOE_ROUTE_EDGE;
  assert_int_equal(moe_route_check(&c, NULL, 0), 0);
  assert_int_equal(moe_route_calibrate(&c, NULL), 0);
  long long load[2] = {0}, el[16] = {0};
  for (int r = 0; r < 2; r++) {
    int32_t *idx;
    float *w;
    gen(&c, moe_route_key(3, r, 9), r, &idx, &w);
    assert_valid(&c, idx, w);
    if (r == 0)
      assert_int_equal(idx[0], 2);
    moe_route_loads(&c, idx, load, el);
    free(idx), free(w);
  }
  assert_int_equal(el[1], 0);
  assert_int_equal(el[2], 1);
  /* one: every token of every rank includes expert E-1 */
  moe_route_defaults(&c, 130, 4);
  c.mode = MOE_ROUTE_ONE;
  c.rho = 3;
  assert_int_equal(moe_route_check(&c, NULL, 0), 0);
  assert_int_equal(moe_route_calibrate(&c, NULL), 0);
  for (int r = 0; r < 4; r++) {
    int32_t *idx;
    float *w;
    gen(&c, moe_route_key(4, r, 1), r, &idx, &w);
    assert_valid(&c, idx, w);
    for (int t = 0; t < 130; t++)
      assert_int_equal(idx[t * 8], 255);
    free(idx), free(w);
  }
  /* top-1, all tokens on one expert: the other experts are empty */
  moe_route_defaults(&c, 7, 2);
  c.E = 4, c.G = 2, c.TG = 1, c.K = 1, c.mode = MOE_ROUTE_ONE;
  assert_int_equal(moe_route_check(&c, NULL, 0), 0);
  int32_t *idx;
  float *w;
  gen(&c, moe_route_key(4, 1, 1), 1, &idx, &w);
  for (int t = 0; t < 7; t++)
    assert_int_equal(idx[t], 3), assert_true(w[t] == 2.5f);
  free(idx), free(w);
}

static void test_fp8_twin(void **state)
{
  (void)state;
  /* decode -> encode is the identity on every finite code */
  for (int v = 0; v < 256; v++) {
    if ((v & 0x7F) == 0x7F) {
      assert_true(isnan(moe_q8t_to_float((uint8_t)v)));
      continue;
    }
    float f = moe_q8t_to_float((uint8_t)v);
    if (v == 0x80)
      assert_true(f == 0.0f && signbit(f));
    else
      assert_int_equal(moe_q8t_from_float(f), v);
  }
  assert_true(moe_q8t_to_float(0x7E) == 448.0f);
  assert_true(moe_q8t_to_float(0x01) == ldexpf(1.0f, -9));
  /* ties to even: 1.0625 lies between 1.0 (0x38) and 1.125 (0x39) */
  assert_int_equal(moe_q8t_from_float(1.0625f), 0x38);
  assert_int_equal(moe_q8t_from_float(1.1875f),
                   0x3A); /* between 0x39 and 0x3A */
  assert_int_equal(moe_q8t_from_float(nextafterf(1.0625f, 2.0f)), 0x39);
  /* saturation, NaN, subnormal halfway */
  assert_int_equal(moe_q8t_from_float(1000.0f), 0x7E);
  assert_int_equal(moe_q8t_from_float(-INFINITY), 0xFE);
  assert_int_equal(moe_q8t_from_float(NAN), 0x7F);
  assert_int_equal(moe_q8t_from_float(ldexpf(1.0f, -10)), 0x00); /* tie to 0 */
  assert_int_equal(moe_q8t_from_float(ldexpf(3.0f, -10)), 0x02); /* tie to 2 */
  /* bf16 rounding */
  assert_int_equal(moe_q8t_bf16(1.0f), 0x3F80);
  assert_int_equal(moe_q8t_bf16(moe_q8t_float(0x3F808000u)),
                   0x3F80); /* tie to even */
  assert_int_equal(moe_q8t_bf16(moe_q8t_float(0x3F818000u)), 0x3F82);
  /* a row: the block maximum maps to +-448, errors within e4m3's 1/16 */
  uint16_t x[256];
  uint8_t q[256];
  float s[2];
  for (int i = 0; i < 256; i++)
    x[i] = moe_q8t_bf16(i < 128 ? (float)sin(i * 0.37) * 3.0f : 0.0f);
  moe_q8t_row(x, 256, q, s);
  assert_true(s[1] == 1.0f); /* zero block */
  float amax = 0;
  for (int i = 0; i < 128; i++) {
    float v = fabsf(moe_q8t_bf16_to_float(x[i]));
    if (v > amax)
      amax = v;
  }
  assert_true(s[0] == amax / 448.0f);
  int at_max = 0;
  for (int i = 0; i < 128; i++) {
    float v = moe_q8t_bf16_to_float(x[i]),
          d = moe_q8t_bf16_to_float(moe_q8t_decode(q[i], s[0]));
    if ((q[i] & 0x7F) == 0x7E)
      at_max++;
    if (fabsf(v) >= ldexpf(1.0f, -6) * s[0])
      assert_true(fabsf(d - v) <= fabsf(v) / 16 + 1e-7f);
  }
  assert_true(at_max >= 1);
  for (int i = 128; i < 256; i++)
    assert_int_equal(q[i], 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_check_rejects),
      cmocka_unit_test(test_dsv3_valid_and_deterministic),
      cmocka_unit_test(test_skew_hits_target),
      cmocka_unit_test(test_zipf_inside_groups),
      cmocka_unit_test(test_paper_splits_exact),
      cmocka_unit_test(test_small_and_edge_cases),
      cmocka_unit_test(test_fp8_twin),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
