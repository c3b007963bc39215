/* Unit tests for tuner.c and meta.c: moves stay in the space, unseen
 * configurations only, exhaustion, the statistics of what paid. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"
#include "db.h"
#include "directive.h"
#include "meta.h"
#include "tuner.h"
#include "workload.h"

static void space(struct workload *w)
{
  memset(w, 0, sizeof(*w));
  w->space.present = 1;
  w->space.backend.n = 1;
  snprintf(w->space.backend.v[0], 16, "lsa");
  w->space.placement.n = 3;
  snprintf(w->space.placement.v[0], 16, "deferred");
  snprintf(w->space.placement.v[1], 16, "per_tile");
  snprintf(w->space.placement.v[2], 16, "split");
  w->space.chunk_min = 64 * 1024;
  w->space.chunk_max = 1024 * 1024;
  w->nparams = 1;
  snprintf(w->params[0].name, sizeof(w->params[0].name), "ctas");
  w->params[0].nchoices = 3;
  snprintf(w->params[0].choices[0], 64, "2");
  snprintf(w->params[0].choices[1], 64, "4");
  snprintf(w->params[0].choices[2], 64, "8");
}

static void start(struct directive_set *d)
{
  memset(d, 0, sizeof(*d));
  d->has_line = 1;
  snprintf(d->backend, sizeof(d->backend), "lsa");
  snprintf(d->placement, sizeof(d->placement), "deferred");
  snprintf(d->chunk_text, sizeof(d->chunk_text), "64KiB");
  d->chunk_bytes = 64 * 1024;
  d->nparams = 1;
  snprintf(d->params[0].name, sizeof(d->params[0].name), "ctas");
  snprintf(d->params[0].value, sizeof(d->params[0].value), "2");
}

/* The seen set: configurations as "placement/chunk/ctas" strings. */
struct seen {
  int n;
  char key[128][64];
};

static void key_of(const struct directive_set *d, char *k, size_t n)
{
  snprintf(k, n, "%s/%llu/%s", d->placement, d->chunk_bytes,
           d->params[0].value);
}

static int is_seen(void *ud, const struct directive_set *d)
{
  struct seen *s = ud;
  char k[64];
  int i;

  key_of(d, k, sizeof(k));
  for (i = 0; i < s->n; i++)
    if (!strcmp(s->key[i], k))
      return 1;
  return 0;
}

static void test_space_and_format(void **state)
{
  struct workload w;
  char b[32];
  (void)state;
  space(&w);
  /* 1 backend x 3 placements x 5 chunks (64K..1M) x 3 ctas */
  assert_true(tuner_space_size(&w) == 45);
  tuner_format_bytes(65536, b, sizeof(b));
  assert_string_equal(b, "64KiB");
  tuner_format_bytes(2 << 20, b, sizeof(b));
  assert_string_equal(b, "2MiB");
  tuner_format_bytes(1000, b, sizeof(b));
  assert_string_equal(b, "1000");
}

static void test_coordinate_move(void **state)
{
  struct workload w;
  struct directive_set d, out;
  struct select_rng r;
  char what[256];
  int i, changed;
  (void)state;
  space(&w);
  start(&d);
  select_rng_seed(&r, 5);
  for (i = 0; i < 50; i++) {
    assert_int_equal(
        tuner_propose(&w, &d, 0, &r, NULL, NULL, &out, what, sizeof(what)), 0);
    /* exploit: exactly one or two coordinates, each one step */
    changed = strcmp(out.placement, d.placement) != 0;
    changed += out.chunk_bytes != d.chunk_bytes;
    changed += strcmp(out.params[0].value, d.params[0].value) != 0;
    assert_true(changed >= 1 && changed <= 2);
    assert_true(out.chunk_bytes == 64 * 1024 || out.chunk_bytes == 128 * 1024);
    assert_true(!strcmp(out.params[0].value, "2") ||
                !strcmp(out.params[0].value, "4"));
    assert_string_equal(out.backend, "lsa");
    assert_true(strstr(what, " -> ") != NULL);
  }
}

static void test_never_seen_and_exhaustion(void **state)
{
  struct workload w;
  struct directive_set d, out;
  struct select_rng r;
  struct seen s;
  char what[256];
  int i, rc;
  (void)state;
  space(&w);
  start(&d);
  memset(&s, 0, sizeof(s));
  key_of(&d, s.key[s.n++], sizeof(s.key[0]));
  select_rng_seed(&r, 9);
  /* walk the whole space: 44 new configurations, each unseen */
  for (i = 0; i < 44; i++) {
    rc = tuner_propose(&w, &d, i % 2, &r, is_seen, &s, &out, what,
                       sizeof(what));
    assert_int_equal(rc, 0);
    assert_false(is_seen(&s, &out));
    key_of(&out, s.key[s.n++], sizeof(s.key[0]));
    d = out;
  }
  assert_int_equal(
      tuner_propose(&w, &d, 1, &r, is_seen, &s, &out, what, sizeof(what)),
      ERR_NOTFOUND);
}

static void test_meta_stats(void **state)
{
  struct db_program p[4];
  char *t;
  int i;
  (void)state;
  for (i = 0; i < 4; i++) {
    db_program_init(&p[i]);
    p[i].id = i + 1;
    p[i].island = 0;
  }
  p[0].edit_kind = "seed";
  p[0].status = "ok";
  p[0].median_ms = 2.0;
  p[0].noise_ms = 0.1;
  p[0].speedup = 1.0;
  p[0].directives_json = "{\"params\":{\"tile\":128}}";
  p[1].edit_kind = "tune";
  p[1].parent_id = 1;
  p[1].status = "ok";
  p[1].median_ms = 1.0;
  p[1].noise_ms = 0.1;
  p[1].speedup = 2.0;
  p[1].directives_json = "{\"params\":{\"tile\":32}}";
  p[2].edit_kind = "tune";
  p[2].parent_id = 1;
  p[2].status = "ok";
  p[2].median_ms = 1.95; /* within the noise: not a win */
  p[2].noise_ms = 0.1;
  p[2].speedup = 1.02;
  p[2].directives_json = "{\"params\":{\"tile\":64}}";
  p[3].edit_kind = "tune";
  p[3].parent_id = 1;
  p[3].status = "failed";
  p[3].directives_json = "{\"params\":{\"tile\":8}}";
  assert_true(meta_beats(&p[1], &p[0]));
  assert_false(meta_beats(&p[2], &p[0]));
  assert_false(meta_beats(&p[3], &p[0]));
  t = meta_stats(p, 4, 0);
  assert_non_null(t);
  assert_non_null(strstr(t, "4 candidates evaluated, 3 correct"));
  assert_non_null(strstr(t, "tune 3 (correct 2, beat parent 1)"));
  assert_non_null(strstr(t, "tile=32: 2x over 1 of 1"));
  assert_non_null(strstr(t, "1. Prefer tile=32"));
  free(t);
}

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  char *b;
  long n;

  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  b = calloc(1, (size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  return b;
}

/* The GPU workload's tuner candidates pass the cascade's static checks
 * (frozen text, directives valid for its space), so a GPU run spends its
 * time on builds and benchmarks, not on rejected proposals. */
static void test_gemm_candidates_are_valid(void **state)
{
  struct workload w;
  struct directive_set d, next, chk;
  struct select_rng r;
  struct err e = {0, ""};
  char what[256], *seed, *code;
  int i;
  (void)state;
  if (workload_load("workloads/gemm_allgather", &w, &e)) {
    skip(); /* not merged into this tree */
    return;
  }
  seed = slurp("workloads/gemm_allgather/seed.cu");
  assert_non_null(seed);
  assert_int_equal(directive_parse(seed, &d, &e), 0);
  assert_int_equal(directive_validate(&d, &w, &e), 0);
  assert_true(tuner_space_size(&w) > 1000);
  select_rng_seed(&r, 11);
  for (i = 0; i < 40; i++) {
    assert_int_equal(tuner_propose(&w, &d, i % 2, &r, NULL, NULL, &next, what,
                                   sizeof(what)),
                     0);
    code = directive_apply(seed, &next, &e);
    assert_non_null(code);
    if (candidate_check(seed, code, 1, &e))
      fail_msg("candidate %d (%s): %s", i, what, e.msg);
    assert_int_equal(directive_parse(code, &chk, &e), 0);
    if (directive_validate(&chk, &w, &e))
      fail_msg("candidate %d (%s): %s", i, what, e.msg);
    assert_true(chk.chunk_bytes == next.chunk_bytes);
    free(code);
    d = next;
  }
  free(seed);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_space_and_format),
      cmocka_unit_test(test_coordinate_move),
      cmocka_unit_test(test_never_seen_and_exhaustion),
      cmocka_unit_test(test_meta_stats),
      cmocka_unit_test(test_gemm_candidates_are_valid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
