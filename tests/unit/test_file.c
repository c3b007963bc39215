/* Unit tests for file.c: the read cap, the atomic replace, mkdir -p, and
 * errors that name the path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

static char dir[64];

static int setup(void **state)
{
  (void)state;
  snprintf(dir, sizeof(dir), "/tmp/cuco-file.XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
  (void)state;
  file_rmtree(dir);
  return access(dir, F_OK) == 0 ? -1 : 0;
}

/* How many entries the folder holds (a left-over temp file shows). */
static int entries(const char *d)
{
  DIR *dp = opendir(d);
  struct dirent *de;
  int n = 0;

  assert_non_null(dp);
  while ((de = readdir(dp)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      n++;
  closedir(dp);
  return n;
}

static void test_read_cap(void **state)
{
  char p[128];
  struct err e = {0, ""};
  size_t len = 0;
  char *s;
  (void)state;
  snprintf(p, sizeof(p), "%s/ten", dir);
  assert_int_equal(file_write(p, "0123456789", 10, &e), 0);
  /* exactly at the cap is fine, one byte over is refused */
  s = file_read(p, 10, &len, &e);
  assert_non_null(s);
  assert_int_equal(len, 10);
  assert_string_equal(s, "0123456789");
  free(s);
  assert_null(file_read(p, 9, &len, &e));
  assert_int_equal(e.code, ERR_TOOBIG);
  assert_non_null(strstr(e.msg, p));
  assert_non_null(strstr(e.msg, "over 9 bytes"));
  /* an empty file reads as "" */
  assert_int_equal(file_write(p, "", 0, &e), 0);
  s = file_read_text(p, 1, &e);
  assert_non_null(s);
  assert_string_equal(s, "");
  free(s);
}

static void test_read_errors(void **state)
{
  char p[128];
  struct err e = {0, ""};
  (void)state;
  snprintf(p, sizeof(p), "%s/absent", dir);
  assert_null(file_read(p, 100, NULL, &e));
  assert_int_equal(e.code, ERR_IO);
  assert_non_null(strstr(e.msg, p));
  assert_non_null(strstr(e.msg, "No such file"));
  /* a NUL byte: fine for file_read, refused by file_read_text */
  snprintf(p, sizeof(p), "%s/nul", dir);
  assert_int_equal(file_write(p, "a\0b", 3, &e), 0);
  {
    size_t len;
    char *s = file_read(p, 100, &len, &e);
    assert_non_null(s);
    assert_int_equal(len, 3);
    assert_memory_equal(s, "a\0b", 3);
    free(s);
  }
  assert_null(file_read_text(p, 100, &e));
  assert_int_equal(e.code, ERR_CHECK);
  assert_non_null(strstr(e.msg, p));
  assert_non_null(strstr(e.msg, "NUL"));
  /* a folder is not a file */
  assert_null(file_read(dir, 100, NULL, &e));
  assert_non_null(strstr(e.msg, dir));
}

static void test_write_replaces(void **state)
{
  char p[128], q[160];
  struct err e = {0, ""};
  struct stat st;
  char *s;
  FILE *keep;
  (void)state;
  snprintf(p, sizeof(p), "%s/out.txt", dir);
  assert_int_equal(file_write(p, "old contents\n", 13, &e), 0);
  /* a reader that opened the old file keeps reading the old file: the
   * new one is a new inode renamed over the name, never rewritten in
   * place */
  keep = fopen(p, "rb");
  assert_non_null(keep);
  assert_int_equal(stat(p, &st), 0);
  assert_int_equal(file_write(p, "new", 3, &e), 0);
  {
    char got[32] = "";
    struct stat now;
    assert_non_null(fgets(got, sizeof(got), keep));
    assert_string_equal(got, "old contents\n");
    assert_int_equal(stat(p, &now), 0);
    assert_true(now.st_ino != st.st_ino);
    assert_int_equal(now.st_size, 3);
  }
  fclose(keep);
  s = file_read_text(p, 100, &e);
  assert_non_null(s);
  assert_string_equal(s, "new");
  free(s);
  /* no temporary file is left behind */
  assert_int_equal(entries(dir), 1);
  /* a folder that does not exist: the error names the path, the old
   * file elsewhere is untouched and nothing is left behind */
  snprintf(q, sizeof(q), "%s/no/such/out.txt", dir);
  assert_int_equal(file_write(q, "x", 1, &e), ERR_IO);
  assert_non_null(strstr(e.msg, q));
  /* a folder in the way of the rename: the old one stays, no temp file */
  snprintf(q, sizeof(q), "%s/sub", dir);
  assert_int_equal(mkdir(q, 0755), 0);
  snprintf(q, sizeof(q), "%s/sub/f", dir);
  assert_int_equal(mkdir(q, 0755), 0);
  assert_int_equal(file_write(q, "x", 1, &e), ERR_IO);
  assert_non_null(strstr(e.msg, q));
  assert_non_null(strstr(e.msg, "cannot replace"));
  snprintf(q, sizeof(q), "%s/sub", dir);
  assert_int_equal(entries(q), 1);
  s = file_read_text(p, 100, &e);
  assert_non_null(s);
  assert_string_equal(s, "new");
  free(s);
}

static void test_mkdirs(void **state)
{
  char p[160];
  struct err e = {0, ""};
  (void)state;
  snprintf(p, sizeof(p), "%s/a/b/c", dir);
  assert_int_equal(file_mkdirs(p, &e), 0);
  assert_int_equal(access(p, W_OK), 0);
  assert_int_equal(file_mkdirs(p, &e), 0); /* existing is fine */
  /* a file in the way: the error names the part that failed */
  snprintf(p, sizeof(p), "%s/plain", dir);
  assert_int_equal(file_write(p, "x", 1, &e), 0);
  snprintf(p, sizeof(p), "%s/plain/x/y", dir);
  assert_int_equal(file_mkdirs(p, &e), ERR_IO);
  assert_non_null(strstr(e.msg, "mkdir "));
  assert_non_null(strstr(e.msg, "/plain/x"));
  /* rmtree takes the whole tree */
  snprintf(p, sizeof(p), "%s/a", dir);
  file_rmtree(p);
  assert_int_not_equal(access(p, F_OK), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_read_cap, setup, teardown),
      cmocka_unit_test_setup_teardown(test_read_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_write_replaces, setup, teardown),
      cmocka_unit_test_setup_teardown(test_mkdirs, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
