/* Unit tests for launcher.c: templates, slurmstepd's cancel lines, the
 * slots of an allocation, [launch] config, and runs through a stand-in
 * launcher (env + sh) that needs neither mpirun nor Slurm. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "launcher.h"

static char dir[64];

static int setup(void **st)
{
  (void)st;
  snprintf(dir, sizeof(dir), "/tmp/cuco-launcher.XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
  char cmd[128];
  (void)st;
  /* the test's own temp dir: the files it made */
  snprintf(cmd, sizeof(cmd), "%s/x.rank0.progress", dir);
  unlink(cmd);
  snprintf(cmd, sizeof(cmd), "%s/x.rank1.progress", dir);
  unlink(cmd);
  snprintf(cmd, sizeof(cmd), "%s/secret-seen", dir);
  unlink(cmd);
  rmdir(dir);
  return 0;
}

static char *join(char **argv)
{
  static char out[2048];
  size_t n = 0;
  int i;

  out[0] = '\0';
  for (i = 0; argv[i]; i++)
    n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", i ? "|" : "",
                          argv[i]);
  return out;
}

static void test_expand(void **st)
{
  const char *bin[] = {"/w/cand.bin", "--mode", "verify", NULL};
  const char *names[] = {"NCCL_NVLS_ENABLE", "LD_LIBRARY_PATH", NULL};
  struct launcher_vars v = {0};
  struct err e;
  char **a;
  (void)st;

  v.argv = bin;
  v.nranks = 4;
  v.name = "cuco-1-2";
  v.env_names = names;
  a = launcher_expand(launcher_default_template(LAUNCHER_MPIRUN), &v, &e);
  assert_non_null(a);
  assert_string_equal(join(a), "mpirun|-np|4|--bind-to|none|-x|"
                               "NCCL_NVLS_ENABLE|-x|LD_LIBRARY_PATH|"
                               "/w/cand.bin|--mode|verify");
  tmpl_argv_free(a);
  v.hostfile = "/h/hosts";
  v.as_root = 1;
  v.env_names = NULL;
  a = launcher_expand(launcher_default_template(LAUNCHER_MPIRUN), &v, &e);
  assert_non_null(a);
  assert_string_equal(join(a), "mpirun|-np|4|--hostfile|/h/hosts|"
                               "--allow-run-as-root|--bind-to|none|"
                               "/w/cand.bin|--mode|verify");
  tmpl_argv_free(a);
  v.gpus_per_rank = 1;
  v.allocation_gpus = 1;
  v.timeout_s = 130;
  a = launcher_expand(launcher_default_template(LAUNCHER_SRUN), &v, &e);
  assert_non_null(a);
  assert_string_equal(join(a), "srun|--ntasks=4|--exact|--kill-on-bad-exit=1|"
                               "--job-name=cuco-1-2|--gpus-per-task=1|"
                               "--time=4|-v|/w/cand.bin|--mode|verify");
  tmpl_argv_free(a);
  v.allocation_gpus = 0; /* a CPU allocation: no GPU binding */
  a = launcher_expand("srun -n{nranks} {gpus} {bin}", &v, &e);
  assert_string_equal(join(a), "srun|-n4|/w/cand.bin");
  tmpl_argv_free(a);
  assert_null(launcher_expand("mpirun {bogus} {bin}", &v, &e));
  assert_int_equal(e.code, ERR_CONFIG);
  assert_non_null(strstr(e.msg, "'{bogus}'"));
  assert_null(launcher_expand("mpirun -np{nranks {bin}", &v, &e));
  assert_non_null(strstr(e.msg, "unclosed"));
  assert_null(launcher_expand("   ", &v, &e));
}

static void test_find_cancel(void **st)
{
  char id[32], why[96];
  int job;
  (void)st;

  assert_int_equal(
      launcher_find_cancel("srun: x\nslurmstepd-vm: error: *** STEP 3.3 ON vm "
                           "CANCELLED AT 2026-12-01T20:55:15 DUE TO TIME "
                           "LIMIT ***\nsrun: error: vm: task 0: Terminated\n",
                           id, sizeof(id), why, sizeof(why), &job),
      1);
  assert_string_equal(id, "3.3");
  assert_string_equal(why, "TIME LIMIT");
  assert_int_equal(job, 0);
  assert_int_equal(launcher_find_cancel("*** STEP 3.2 ON vm CANCELLED AT "
                                        "2026-12-01T20:53:56 ***",
                                        id, sizeof(id), why, sizeof(why),
                                        &job),
                   1);
  assert_string_equal(id, "3.2");
  assert_string_equal(why, "");
  assert_int_equal(launcher_find_cancel("slurmstepd: error: *** JOB 12 ON n1 "
                                        "CANCELLED AT T DUE TO PREEMPTION ***",
                                        id, sizeof(id), why, sizeof(why),
                                        &job),
                   1);
  assert_string_equal(id, "12");
  assert_string_equal(why, "PREEMPTION");
  assert_int_equal(job, 1);
  assert_int_equal(launcher_find_cancel("*** a program's own stars ***\nok\n",
                                        id, sizeof(id), why, sizeof(why),
                                        &job),
                   0);
  assert_int_equal(
      launcher_find_cancel("", id, sizeof(id), why, sizeof(why), &job), 0);
}

static void test_slots(void **st)
{
  int g;
  (void)st;

  unsetenv("SLURM_JOB_ID");
  assert_int_equal(launcher_slurm_slots(1, 1, &g), 0);
  setenv("SLURM_JOB_ID", "7", 1);
  unsetenv("SLURM_GPUS");
  unsetenv("SLURM_GPUS_ON_NODE");
  unsetenv("SLURM_JOB_GPUS");
  unsetenv("SLURM_NTASKS");
  setenv("SLURM_JOB_CPUS_PER_NODE", "4(x2),2", 1);
  assert_int_equal(launcher_slurm_slots(2, 1, &g), 5);
  assert_int_equal(g, 0);
  setenv("SLURM_NTASKS", "2", 1);
  assert_int_equal(launcher_slurm_slots(1, 1, &g), 2);
  setenv("SLURM_GPUS_ON_NODE", "8", 1);
  setenv("SLURM_NNODES", "2", 1);
  assert_int_equal(launcher_slurm_slots(4, 1, &g), 4); /* 16 GPUs / 4 */
  assert_int_equal(g, 1);
  setenv("SLURM_GPUS", "h200:6", 1);
  assert_int_equal(launcher_slurm_slots(2, 1, &g), 3);
  /* a CPU workload in a GPU allocation: its tasks */
  assert_int_equal(launcher_slurm_slots(1, 0, &g), 2);
  assert_int_equal(g, 1);
  unsetenv("SLURM_GPUS");
  unsetenv("SLURM_GPUS_ON_NODE");
  setenv("SLURM_JOB_GPUS", "0,1,2", 1);
  assert_int_equal(launcher_slurm_slots(1, 1, &g), 3);
  unsetenv("SLURM_JOB_GPUS");
  unsetenv("SLURM_NTASKS");
  unsetenv("SLURM_NNODES");
  unsetenv("SLURM_JOB_CPUS_PER_NODE");
  unsetenv("SLURM_JOB_ID");
}

static void test_config(void **st)
{
  struct config *c = config_new();
  struct launcher l;
  struct err e;
  (void)st;

  assert_int_equal(launcher_config(c, NULL, &l, &e), 0);
  assert_int_equal(l.kind, LAUNCHER_LOCAL);
  assert_int_equal(launcher_config(c, "pbs", &l, &e), ERR_USAGE);
  assert_int_equal(
      config_load_string(c, "cuco.ini", "[launch]\nlauncher = lsf\n", &e), 0);
  assert_int_equal(launcher_config(c, NULL, &l, &e), ERR_CONFIG);
  assert_non_null(strstr(e.msg, "cuco.ini:2"));
  assert_int_equal(config_load_string(c, "b.ini",
                                      "[launch]\nlauncher = mpirun\n"
                                      "mpirun = no-such-mpirun-x {bin}\n",
                                      &e),
                   0);
  assert_int_equal(launcher_config(c, NULL, &l, &e), ERR_NOTFOUND);
  assert_non_null(strstr(e.msg, "no-such-mpirun-x"));
  assert_int_equal(
      config_load_string(c, "c.ini", "[launch]\nmpirun = mpirun -np 2\n", &e),
      0);
  assert_int_equal(launcher_config(c, NULL, &l, &e), ERR_CONFIG);
  assert_non_null(strstr(e.msg, "no {bin}"));
  config_free(c);
}

/* A stand-in launcher: `env` sets Open MPI's variables for one rank and
 * runs the "rank", a shell snippet. */
static int run_sh(const char *snippet, double timeout, int nranks,
                  struct launcher_result *r)
{
  struct launcher l = {0};
  struct launcher_run_opts o = {0};
  char prefix[128];
  const char *argv[] = {"-c", snippet, NULL};
  static const unsigned char secret[] = "s3cret";
  struct err e;

  l.kind = LAUNCHER_MPIRUN;
  snprintf(l.tmpl, sizeof(l.tmpl),
           "env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE={nranks} sh "
           "{bin} {args}");
  snprintf(prefix, sizeof(prefix), "%s/x", dir);
  o.l = &l;
  o.argv = argv;
  o.nranks = nranks;
  o.work_dir = dir;
  o.progress_prefix = prefix;
  o.secret = secret;
  o.secret_len = 6;
  o.timeout_s = timeout;
  return launcher_run(&o, r, &e);
}

static void test_run(void **st)
{
  struct launcher_result r;
  char p[128];
  (void)st;

  /* every rank's secret file is there, 0600, and the rank can read it */
  assert_int_equal(
      run_sh("echo done > x.rank0.progress; echo done > x.rank1.progress; "
             "cat $CUCO_SECRET_PREFIX.rank1 > secret-seen; "
             "stat -c %a $CUCO_SECRET_PREFIX.rank0; echo '{\"ok\": true}'",
             10, 2, &r),
      0);
  assert_int_equal(r.all_ok, 1);
  assert_non_null(strstr(buf_str(&r.out), "600"));
  assert_non_null(strstr(r.what, "all 2 ranks exited 0 (mpirun)"));
  launcher_result_release(&r);
  {
    char got[16] = "";
    FILE *f;
    snprintf(p, sizeof(p), "%s/secret-seen", dir);
    f = fopen(p, "r");
    assert_non_null(f);
    assert_non_null(fgets(got, sizeof(got), f));
    fclose(f);
    assert_string_equal(got, "s3cret");
  }
  snprintf(p, sizeof(p), "%s/.cuco-secret.rank0", dir);
  assert_int_not_equal(access(p, F_OK), 0); /* cuco removed what was left */
  /* a hang: rank 1 never starts; rank 0 is at init */
  assert_int_equal(
      run_sh("echo init > x.rank0.progress; exec sleep 30", 1, 2, &r), 0);
  assert_int_equal(r.timed_out, 1);
  assert_int_equal(r.hang_rank, 1);
  assert_non_null(strstr(r.what, "rank 1 did not finish (last stage 'none': "
                                 "it never started); rank 0 at 'init'"));
  assert_true(r.wall_s < 8);
  launcher_result_release(&r);
  /* slurmstepd's line: a named cancellation, not a bare exit code */
  assert_int_equal(
      run_sh("echo 'slurmstepd: error: *** STEP 9.4 ON n CANCELLED "
             "AT T DUE TO PREEMPTION ***' >&2; exit 143",
             10, 1, &r),
      0);
  assert_int_equal(r.cancelled, 1);
  assert_string_equal(r.what, "slurm step 9.4 cancelled: PREEMPTION");
  launcher_result_release(&r);
  /* a plain failure names the launcher and the last line of stderr */
  assert_int_equal(run_sh("echo 'bad thing' >&2; exit 3", 10, 1, &r), 0);
  assert_int_equal(r.all_ok, 0);
  assert_string_equal(r.what, "mpirun: exit 3: bad thing");
  launcher_result_release(&r);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_expand), cmocka_unit_test(test_find_cancel),
      cmocka_unit_test(test_slots),  cmocka_unit_test(test_config),
      cmocka_unit_test(test_run),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
