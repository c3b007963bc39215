/* Unit tests for workload.c: workload.ini loading and sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

static char dir[64];

static void put(const char *name, const char *text)
{
  char p[256];
  FILE *f;

  snprintf(p, sizeof(p), "%s/%s", dir, name);
  f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int setup(void **state)
{
  (void)state;
  snprintf(dir, sizeof(dir), "/tmp/cuco-wl.XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  put("baseline.cu", "//b\n");
  put("seed.cu", "//s\n");
  put("reference.cu", "//r\n");
  return 0;
}

static int teardown(void **state)
{
  char p[256];
  (void)state;
  snprintf(p, sizeof(p), "%s/workload.ini", dir);
  unlink(p);
  snprintf(p, sizeof(p), "%s/baseline.cu", dir);
  unlink(p);
  snprintf(p, sizeof(p), "%s/seed.cu", dir);
  unlink(p);
  snprintf(p, sizeof(p), "%s/reference.cu", dir);
  unlink(p);
  snprintf(p, sizeof(p), "%s/b2.cu", dir);
  unlink(p);
  rmdir(dir);
  return 0;
}

static const char *good =
    "[workload]\n"
    "name        = gemm_allgather\n"
    "description = One line used in prompts.\n"
    "kind        = runtime          ; runtime or freeform\n"
    "ranks       = 1,2,4,8\n"
    "baselines   = baseline.cu\n"
    "seed        = seed.cu\n"
    "reference   = reference.cu\n"
    "libs        = cublas, cublasLt\n"
    "forbid      = route_host, ridx_h\n"
    "[sets]\n"
    "verify = small_a, small_b\n"
    "bench  = full_4k\n"
    "[sizes]\n"
    "small_a  = M=256,K=512,N=384\n"
    "small_b  = M=40, K=72, N=24\n"
    "full_4k  = M=4096,K=8192,N=28672\n"
    "[tolerance]\n"
    "rel_l2 = 2e-2\n"
    "[space]\n"
    "backend   = lsa\n"
    "placement = deferred, per_tile, split\n"
    "sync      = global, per_peer, per_chunk\n"
    "issuer    = thread, warp, cta\n"
    "chunk     = 64KiB..64MiB\n"
    "[params]\n"
    "comm_ctas = 1, 2, 4, 8, 16\n"
    "mode = fast, safe\n";

static void test_load_good(void **state)
{
  struct workload w;
  struct err e = {0, ""};
  (void)state;
  put("workload.ini", good);
  assert_int_equal(workload_load(dir, &w, &e), 0);
  assert_string_equal(w.name, "gemm_allgather");
  assert_int_equal(w.kind, WORKLOAD_RUNTIME);
  assert_int_equal(w.nranks, 4);
  assert_int_equal(w.ranks[3], 8);
  assert_int_equal(w.nlibs, 2);
  assert_string_equal(w.libs[1], "cublasLt");
  assert_int_equal(w.nforbid, 2);
  assert_string_equal(w.forbid[1], "ridx_h");
  assert_int_equal(w.nsizes, 3);
  assert_string_equal(w.sizes[1].params, "M=40,K=72,N=24");
  assert_int_equal(w.nverify, 2);
  assert_string_equal(w.sizes[w.bench[0]].name, "full_4k");
  assert_true(w.tol_rel_l2 == 2e-2);
  assert_int_equal(w.space.backend.n, 1);
  assert_int_equal(w.space.issuer.n, 3);
  assert_true(w.space.chunk_min == 65536ULL);
  assert_true(w.space.chunk_max == 64ULL << 20);
  assert_int_equal(w.nparams, 2);
  assert_string_equal(w.params[0].choices[4], "16");
  assert_string_equal(w.params[1].choices[1], "safe");
  assert_true(workload_allows_ranks(&w, 4));
  assert_false(workload_allows_ranks(&w, 3));
}

/* Replace one line of the good file and expect an error naming a line. */
static void expect_bad(const char *from, const char *to, const char *want)
{
  char text[4096], *p;
  struct workload w;
  struct err e = {0, ""};

  snprintf(text, sizeof(text), "%s", good);
  p = strstr(text, from);
  assert_non_null(p);
  {
    char rest[4096];
    snprintf(rest, sizeof(rest), "%s", p + strlen(from));
    snprintf(p, sizeof(text) - (size_t)(p - text), "%s%s", to, rest);
  }
  put("workload.ini", text);
  assert_int_not_equal(workload_load(dir, &w, &e), 0);
  if (!strstr(e.msg, want))
    fail_msg("error '%s' lacks '%s'", e.msg, want);
}

static void test_load_bad(void **state)
{
  (void)state;
  expect_bad("ranks       = 1,2,4,8", "ranks = 2,1", "workload.ini:5:");
  expect_bad("ranks       = 1,2,4,8", "rank = 2", "unknown key 'rank'");
  expect_bad("kind        = runtime", "kind = gpu", "workload.ini:4:");
  expect_bad("seed        = seed.cu", "seed = nope.cu",
             "nope.cu: no such file");
  expect_bad("seed        = seed.cu", "seed = ../x.cu", "not a file name");
  expect_bad("bench  = full_4k", "bench = full_9k", "workload.ini:13:");
  expect_bad("small_b  = M=40, K=72, N=24", "small_b = M=40,K",
             "'K' is not KEY=VALUE");
  expect_bad("small_b  = M=40, K=72, N=24", "small_b = M=-4",
             "not a positive");
  expect_bad("chunk     = 64KiB..64MiB", "chunk = 3KiB..1MiB",
             "workload.ini:25:");
  expect_bad("chunk     = 64KiB..64MiB", "chunk = 1MiB..64KiB", "empty chunk");
  expect_bad("backend   = lsa", "backend = lsa, mpi",
             "'mpi' is not a backend");
  expect_bad("mode = fast, safe", "mode = fa st",
             "not an integer or identifier");
  expect_bad("rel_l2 = 2e-2", "rel_l2 = 2", "not in (0, 1)");
  expect_bad("[params]", "[parms]", "unknown section [parms]");
  expect_bad("name        = gemm_allgather\n", "", "name is missing");
  expect_bad("reference   = reference.cu\n", "", "reference is missing");
  expect_bad("verify = small_a, small_b\n", "", "verify is missing");
  expect_bad("[sizes]", "[sizes]\nsmall_a = M=1\n", "repeated size name");
  expect_bad("seed        = seed.cu", "seed = seed.cu\nbar = seed.cu",
             "bar names 'seed.cu', which is not one of the baselines");
  expect_bad("seed        = seed.cu", "seed = seed.cu\nbar = nope.cu",
             "nope.cu: no such file");
  expect_bad("route_host, ridx_h", "route_host, x->y",
             "workload.ini:10: forbid: 'x->y' is not an identifier");
  {
    /* 6 continuation lines of 99: over the 511 the description may hold */
    char longd[1024] = "description = d";
    for (int i = 0; i < 6; i++)
      snprintf(longd + strlen(longd), sizeof(longd) - strlen(longd),
               "\n  %098d", i);
    expect_bad("description = One line used in prompts.", longd,
               "workload.ini:3: description is 595 characters, at most 511");
    snprintf(longd, sizeof(longd), "description = %0250d", 1);
    expect_bad("description = One line used in prompts.", longd,
               "workload.ini:3: line longer than");
  }
}

/* bar: default = the first baseline; else the listed baselines. */
static void test_bar(void **state)
{
  struct workload w;
  struct err e = {0, ""};
  char text[4096], *p;
  const char *from = "baselines   = baseline.cu";
  (void)state;
  put("workload.ini", good);
  assert_int_equal(workload_load(dir, &w, &e), 0);
  assert_int_equal(w.nbar, 1);
  assert_string_equal(w.bar[0], "baseline.cu");
  put("b2.cu", "//b2\n");
  snprintf(text, sizeof(text), "%s", good);
  p = strstr(text, from);
  assert_non_null(p);
  {
    char rest[4096];
    snprintf(rest, sizeof(rest), "%s", p + strlen(from));
    snprintf(p, sizeof(text) - (size_t)(p - text), "%s%s",
             "baselines   = b2.cu, baseline.cu\nbar = baseline.cu, b2.cu",
             rest);
  }
  put("workload.ini", text);
  assert_int_equal(workload_load(dir, &w, &e), 0);
  assert_int_equal(w.nbaselines, 2);
  assert_int_equal(w.nbar, 2);
  assert_string_equal(w.bar[0], "baseline.cu");
  assert_string_equal(w.bar[1], "b2.cu");
}

static void test_missing_file(void **state)
{
  struct workload w;
  struct err e = {0, ""};
  (void)state;
  assert_int_not_equal(workload_load("/nonexistent/wl", &w, &e), 0);
  assert_non_null(strstr(e.msg, "/nonexistent/wl/workload.ini"));
}

static void test_freeform(void **state)
{
  struct workload w;
  struct err e = {0, ""};
  (void)state;
  put("workload.ini", "[workload]\nname=ff\nkind=freeform\nranks=1\n"
                      "seed=seed.cu\n[sizes]\ns=N=4\n[sets]\nverify=s\n"
                      "bench=s\n[freeform]\nbuild = cc -o {bin} {src}\n"
                      "run = {bin} {params}\nrepeat = 5\n");
  assert_int_equal(workload_load(dir, &w, &e), 0);
  assert_int_equal(w.kind, WORKLOAD_FREEFORM);
  assert_int_equal(w.ff_repeat, 5);
  assert_string_equal(w.ff_metric, "time_ms");
  put("workload.ini", "[workload]\nname=ff\nkind=freeform\nranks=1\n"
                      "seed=seed.cu\n[sizes]\ns=N=4\n[sets]\nverify=s\n"
                      "bench=s\n[freeform]\nbuild = cc -o {bin} {src}\n");
  assert_int_not_equal(workload_load(dir, &w, &e), 0);
  assert_non_null(strstr(e.msg, "build and run are required"));
}

static void test_sizes(void **state)
{
  struct workload w;
  struct workload_size s[8];
  struct err e = {0, ""};
  int n = 0;
  (void)state;
  put("workload.ini", good);
  assert_int_equal(workload_load(dir, &w, &e), 0);
  assert_int_equal(workload_resolve_sizes(&w,
                                          "small_a,M=4104,K=8192,N=28680,"
                                          "M=8,K=8,N=8 full_4k",
                                          s, 8, &n, &e),
                   0);
  assert_int_equal(n, 4);
  assert_string_equal(s[0].name, "small_a");
  assert_string_equal(s[1].params, "M=4104,K=8192,N=28680");
  assert_string_equal(s[1].name, "M=4104,K=8192,N=28680");
  assert_int_equal(s[1].vals[2], 28680);
  assert_string_equal(s[2].params, "M=8,K=8,N=8");
  assert_string_equal(s[3].name, "full_4k");
  assert_int_not_equal(workload_resolve_sizes(&w, "small_z", s, 8, &n, &e), 0);
  assert_non_null(strstr(e.msg, "'small_z'"));
  assert_int_not_equal(workload_resolve_sizes(&w, "M=x", s, 8, &n, &e), 0);
  assert_int_not_equal(workload_resolve_sizes(&w, "", s, 8, &n, &e), 0);
  assert_int_not_equal(workload_parse_shape("M=1,M=2", &s[0], &e), 0);
  assert_non_null(strstr(e.msg, "given twice"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load_good),    cmocka_unit_test(test_load_bad),
      cmocka_unit_test(test_missing_file), cmocka_unit_test(test_freeform),
      cmocka_unit_test(test_sizes),        cmocka_unit_test(test_bar),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
