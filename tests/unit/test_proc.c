/* Unit tests for proc.c.  The binary is its own child helper (libuv's
 * spawn_helper): `test_proc child MODE` runs one behaviour. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

static char self[1024];

static int child_main(const char *mode, const char *arg)
{
  if (!strcmp(mode, "echo")) {
    printf("out:%s\n", arg);
    fprintf(stderr, "err:%s\n", arg);
    return 0;
  }
  if (!strcmp(mode, "exit"))
    return atoi(arg); /* cuco: allow atoi in the test helper */
  if (!strcmp(mode, "env")) {
    const char *v = getenv(arg);
    printf("%s=%s\n", arg, v ? v : "(unset)");
    return 0;
  }
  if (!strcmp(mode, "flood")) {
    static char chunk[65536];
    int i;
    memset(chunk, 'z', sizeof(chunk));
    for (i = 0; i < 64; i++)
      fwrite(chunk, 1, sizeof(chunk), stdout);
    return 0;
  }
  if (!strcmp(mode, "segv")) {
    raise(SIGUSR1); /* not SEGV: sanitizers catch that one */
    return 0;
  }
  if (!strcmp(mode, "sleep-with-grandchild")) {
    /* Print partial output, fork a grandchild that records its pid,
     * ignore SIGTERM so SIGKILL is needed, then sleep past the deadline. */
    pid_t gc = fork();
    if (gc == 0) {
      for (;;)
        pause();
    }
    FILE *f = fopen(arg, "w");
    if (f) {
      fprintf(f, "%d\n", (int)gc);
      fclose(f);
    }
    signal(SIGTERM, SIG_IGN);
    printf("partial output\n");
    fflush(stdout);
    sleep(30);
    return 0;
  }
  if (!strcmp(mode, "pwd")) {
    char d[1024];
    if (getcwd(d, sizeof(d)))
      printf("%s\n", d);
    return 0;
  }
  return 99;
}

/* Alive = exists and is not a zombie (an orphan may wait for init to reap
 * it, which says nothing about whether we killed it). */
static int alive(int pid)
{
  char path[64], st[512], *p;
  FILE *f;
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  f = fopen(path, "r");
  if (!f)
    return 0;
  if (!fgets(st, sizeof(st), f))
    st[0] = '\0';
  fclose(f);
  p = strrchr(st, ')');
  return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static int run(const char *const *argv, double timeout, size_t cap,
               struct proc_result *r)
{
  const char *const env[] = {"PATH=/usr/bin:/bin", "CUCO_X=1", NULL};
  struct proc_opts o = {0};
  struct err e;
  o.argv = argv;
  o.envp = env;
  o.timeout_s = timeout;
  o.grace_s = 0.3;
  o.out_max = cap;
  return proc_run(&o, r, &e);
}

static void test_exit_and_capture(void **state)
{
  const char *const a[] = {self, "child", "echo", "hi", NULL};
  const char *const b[] = {self, "child", "exit", "3", NULL};
  struct proc_result r;
  char d[64];
  (void)state;
  assert_int_equal(run(a, 10, 0, &r), 0);
  assert_true(proc_ok(&r));
  assert_string_equal(buf_str(&r.out), "out:hi\n");
  assert_string_equal(buf_str(&r.err), "err:hi\n");
  proc_result_release(&r);
  assert_int_equal(run(b, 10, 0, &r), 0);
  assert_int_equal(r.outcome, PROC_EXITED);
  assert_int_equal(r.exit_code, 3);
  assert_false(proc_ok(&r));
  assert_string_equal(proc_describe(&r, d, sizeof(d)), "exit 3");
  proc_result_release(&r);
}

static void test_signal(void **state)
{
  const char *const a[] = {self, "child", "segv", "", NULL};
  struct proc_result r;
  (void)state;
  assert_int_equal(run(a, 10, 0, &r), 0);
  assert_int_equal(r.outcome, PROC_SIGNALED);
  assert_int_equal(r.term_signal, SIGUSR1);
  proc_result_release(&r);
}

static void test_cap(void **state)
{
  const char *const a[] = {self, "child", "flood", "", NULL};
  struct proc_result r;
  (void)state;
  assert_int_equal(run(a, 20, 1000, &r), 0);
  assert_true(proc_ok(&r)); /* the child was not blocked by the cap */
  assert_int_equal(r.out.len, 1000);
  assert_true(r.out.toobig);
  proc_result_release(&r);
}

static void test_timeout_kills_group(void **state)
{
  char pidfile[] = "/tmp/cuco-proc-XXXXXX";
  int fd = mkstemp(pidfile);
  const char *const a[] = {self, "child", "sleep-with-grandchild", pidfile,
                           NULL};
  struct proc_result r;
  FILE *f;
  int gc = 0, tries;
  (void)state;
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(run(a, 1.0, 0, &r), 0);
  assert_int_equal(r.outcome, PROC_TIMEDOUT);
  assert_true(r.wall_s < 10);
  assert_string_equal(buf_str(&r.out), "partial output\n");
  f = fopen(pidfile, "r");
  assert_non_null(f);
  assert_int_equal(fscanf(f, "%d", &gc), 1);
  fclose(f);
  unlink(pidfile);
  /* the grandchild must be gone (killed with the group) */
  for (tries = 0; tries < 50 && alive(gc); tries++)
    usleep(20000);
  assert_false(alive(gc));
  proc_result_release(&r);
}

static void test_env_and_cwd(void **state)
{
  const char *const a[] = {self, "child", "env", "CUCO_X", NULL};
  const char *const h[] = {self, "child", "env", "HOME", NULL};
  const char *const p[] = {self, "child", "pwd", "", NULL};
  const char *const allow[] = {"CUCO_KEEP", NULL};
  const char *const extra[] = {"CUCO_NEW=2", NULL};
  struct proc_opts o = {0};
  struct proc_result r;
  struct err e;
  char **env;
  (void)state;
  assert_int_equal(run(a, 10, 0, &r), 0);
  assert_string_equal(buf_str(&r.out), "CUCO_X=1\n");
  proc_result_release(&r);
  assert_int_equal(run(h, 10, 0, &r), 0); /* HOME not passed */
  assert_string_equal(buf_str(&r.out), "HOME=(unset)\n");
  proc_result_release(&r);
  o.argv = p;
  o.cwd = "/tmp";
  assert_int_equal(proc_run(&o, &r, &e), 0);
  assert_string_equal(buf_str(&r.out), "/tmp\n");
  proc_result_release(&r);
  setenv("CUCO_KEEP", "k", 1);
  setenv("CUCO_DROP", "d", 1);
  env = proc_env_new(allow, extra);
  assert_non_null(env);
  assert_string_equal(env[0], "CUCO_KEEP=k");
  assert_string_equal(env[1], "CUCO_NEW=2");
  assert_null(env[2]);
  proc_env_free(env);
}

static void test_not_found(void **state)
{
  const char *const a[] = {"definitely-not-a-command-xyz", NULL};
  struct proc_opts o = {0};
  struct proc_result r;
  struct err e;
  (void)state;
  o.argv = a;
  assert_int_equal(proc_run(&o, &r, &e), ERR_PROC);
  assert_non_null(strstr(e.msg, "not found"));
  proc_result_release(&r);
}

/* stdin_data reaches the child's stdin whole, then EOF (the per-run
 * secret of the workload ranks travels so); over 4 KiB is refused. */
static void test_stdin_data(void **state)
{
  const char *const a[] = {"/bin/cat", NULL};
  static char big[5000];
  struct proc_opts o = {0};
  struct proc_result r;
  struct err e;
  (void)state;
  o.argv = a;
  o.timeout_s = 10;
  o.stdin_data = "0123456789abcdef0123456789abcdef\n";
  assert_int_equal(proc_run(&o, &r, &e), 0);
  assert_true(proc_ok(&r));
  assert_string_equal(buf_str(&r.out), "0123456789abcdef0123456789abcdef\n");
  proc_result_release(&r);
  memset(big, 'x', sizeof(big) - 1);
  o.stdin_data = big;
  assert_int_equal(proc_run(&o, &r, &e), ERR_PROC);
  assert_non_null(strstr(e.msg, "4 KiB"));
  proc_result_release(&r);
}

int main(int argc, char **argv)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exit_and_capture),
      cmocka_unit_test(test_signal),
      cmocka_unit_test(test_cap),
      cmocka_unit_test(test_timeout_kills_group),
      cmocka_unit_test(test_env_and_cwd),
      cmocka_unit_test(test_not_found),
      cmocka_unit_test(test_stdin_data),
  };
  if (argc >= 4 && !strcmp(argv[1], "child"))
    return child_main(argv[2], argv[3]);
  if (!realpath(argv[0], self))
    return 1;
  return cmocka_run_group_tests(tests, NULL, NULL);
}
