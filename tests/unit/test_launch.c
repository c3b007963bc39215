/* Unit tests for launch.c: rank processes driven by a fake "binary" (a
 * shell script) that follows the contracts §4 command line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "launch.h"

static int write_str(const char *path, const char *text, struct err *e)
{
  return file_write(path, text, strlen(text), e);
}

static char dir[64], bin[128], resp[128];

/* The fake: writes its progress file, then behaves as $FAKE_<rank> says
 * (from its first argument): ok, hang (sleep), fail (exit 4). Rank 0
 * writes RESULT.json when all went well. */
static const char *script =
    "#!/bin/sh\n"
    "plan=$1; shift\n"
    "out=; rank=; mode=\n"
    "all=\"$*\"\n"
    "while [ $# -gt 0 ]; do case $1 in\n"
    "  --out) out=$2; shift;; --rank) rank=$2; shift;;\n"
    "  --mode) mode=$2; shift;; esac; shift; done\n"
    "echo init > $out.rank$rank.progress\n"
    "echo \"$NCCL_NVLS_ENABLE|$LD_LIBRARY_PATH|$SECRET_KEY|$all\" > $out.env\n"
    "echo setup > $out.rank$rank.progress\n"
    "what=$(echo $plan | cut -d, -f$((rank + 1)))\n"
    "case $what in\n"
    "  hang) echo 'timed 3' > $out.rank$rank.progress; exec sleep 60;;\n"
    "  wait) exec sleep 60;;\n"
    "  fail) echo 'NCCL error: peer gone' >&2; exit 4;;\n"
    "esac\n"
    "echo done > $out.rank$rank.progress\n"
    "if [ $rank = 0 ]; then\n"
    "  printf '{\"schema\":1,\"status\":\"ok\",\"mode\":\"%s\",\"verify\":"
    "{\"passed\":true},\"timing\":{\"median_ms\":1.5}}' $mode > $out\n"
    "fi\n"
    "exit 0\n";

static int setup(void **state)
{
  struct err e;
  (void)state;
  snprintf(dir, sizeof(dir), "/tmp/cuco-launch.XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(bin, sizeof(bin), "%s/fake.sh", dir);
  snprintf(resp, sizeof(resp), "%s/RESULT.json", dir);
  if (write_str(bin, script, &e))
    return -1;
  return chmod(bin, 0755);
}

static int teardown(void **state)
{
  (void)state;
  file_rmtree(dir);
  return 0;
}

static int run(const char *plan, int n, double timeout,
               struct launch_result *r)
{
  const char *args[] = {plan, "--mode", "bench", "--out", resp};
  struct launch_opts o = {0};
  struct err e = {0, ""};

  o.bin = bin;
  o.args = args;
  o.nargs = 5;
  o.nranks = n;
  o.work_dir = dir;
  o.result_path = resp;
  o.lib_dirs = "/opt/nccl/lib";
  o.timeout_s = timeout;
  o.fail_grace_s = 0.5;
  return launch_run(&o, r, &e);
}

static void test_all_ok(void **state)
{
  struct launch_result r;
  struct err e = {0, ""};
  char envf[160], *env;
  (void)state;
  setenv("NCCL_NVLS_ENABLE", "1", 1);
  setenv("SECRET_KEY", "sk-123", 1);
  assert_int_equal(run("ok,ok", 2, 20, &r), 0);
  snprintf(envf, sizeof(envf), "%s.env", resp);
  env = file_read_text(envf, 4096, &e);
  assert_non_null(env);
  /* NVLS always off, NCCL's lib first, no secrets, rank fields added */
  assert_true(!strncmp(env, "0|/opt/nccl/lib", 15));
  assert_null(strstr(env, "sk-123"));
  assert_non_null(strstr(env, "--nranks 2 --local-rank"));
  assert_non_null(strstr(env, "--id-file /tmp/cuco-launch."));
  free(env);
  assert_true(r.all_ok);
  assert_false(r.timed_out);
  assert_int_equal(r.exit_code, 0);
  assert_non_null(r.result);
  assert_true(json_number_value(json_object_get(
                  json_object_get(r.result, "timing"), "median_ms")) == 1.5);
  launch_result_release(&r);
}

static void test_hang_names_rank(void **state)
{
  struct launch_result r;
  (void)state;
  assert_int_equal(run("wait,hang,ok", 3, 1.5, &r), 0);
  assert_false(r.all_ok);
  assert_true(r.timed_out);
  /* rank 0 sits at 'setup', rank 1 reached 'timed 3', rank 2 finished:
   * the least advanced rank is named */
  assert_int_equal(r.hang_rank, 0);
  assert_string_equal(r.hang_stage, "setup");
  assert_non_null(strstr(r.what, "rank 0 did not finish (last stage "
                                 "'setup')"));
  assert_non_null(strstr(r.what, "rank 1 at 'timed 3'"));
  assert_true(r.wall_s < 10);
  launch_result_release(&r);
  assert_int_equal(run("ok,hang", 2, 1.5, &r), 0);
  assert_true(r.timed_out);
  assert_int_equal(r.hang_rank, 1);
  assert_non_null(strstr(r.what, "rank 1 did not finish"));
  launch_result_release(&r);
}

static void test_failed_rank_stops_others(void **state)
{
  struct launch_result r;
  (void)state;
  /* rank 1 fails at once; rank 0 would wait 60 s for it */
  assert_int_equal(run("wait,fail", 2, 30, &r), 0);
  assert_false(r.all_ok);
  assert_false(r.timed_out);
  assert_int_equal(r.failed_rank, 1);
  assert_non_null(strstr(r.what, "rank 1: exit 4: NCCL error: peer gone"));
  assert_true(r.wall_s < 10);
  assert_null(r.result);
  assert_non_null(strstr(r.result_error, "no RESULT.json"));
  launch_result_release(&r);
}

static void test_result_validation(void **state)
{
  struct err e = {0, ""};
  json_t *j;
  (void)state;
  assert_int_equal(write_str(resp, "{\"schema\":2}", &e), 0);
  assert_null(launch_read_result(resp, &e));
  assert_non_null(strstr(e.msg, "schema 1"));
  assert_int_equal(write_str(resp,
                             "{\"schema\":1,\"status\":\"ok\",\"mode\":"
                             "\"bench\",\"verify\":{\"passed\":true},"
                             "\"timing\":{\"median_ms\":0}}",
                             &e),
                   0);
  assert_null(launch_read_result(resp, &e));
  assert_non_null(strstr(e.msg, "median_ms"));
  assert_int_equal(write_str(resp,
                             "{\"schema\":1,\"status\":\"ok\",\"mode\":"
                             "\"verify\",\"verify\":{\"passed\":true},"
                             "\"checks_skipped\":4}",
                             &e),
                   0);
  assert_null(launch_read_result(resp, &e));
  assert_non_null(strstr(e.msg, "checks were skipped"));
  assert_int_equal(write_str(resp, "{\"schema\":1,", &e), 0);
  assert_null(launch_read_result(resp, &e));
  assert_int_equal(write_str(resp,
                             "{\"schema\":1,\"status\":\"verify_failed\""
                             ",\"mode\":\"verify\"}",
                             &e),
                   0);
  j = launch_read_result(resp, &e);
  assert_non_null(j);
  json_decref(j);
  assert_int_equal(launch_stage_rank("timed 17"), 4);
  assert_int_equal(launch_stage_rank(""), -1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_ok),
      cmocka_unit_test(test_hang_names_rank),
      cmocka_unit_test(test_failed_rank_stops_others),
      cmocka_unit_test(test_result_validation),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
