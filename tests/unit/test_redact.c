/* Unit tests for redact.c: secrets out of our environment block and out
 * of every text. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "config.h"
#include "redact.h"

/* The bytes /proc/self/environ shows (the initial block). */
static char *read_environ(size_t *n)
{
  static char data[1 << 20];
  FILE *f = fopen("/proc/self/environ", "rb");

  *n = 0;
  if (!f)
    return NULL;
  *n = fread(data, 1, sizeof(data), f);
  fclose(f);
  return data;
}

static int mem_has(const char *d, size_t n, const char *s)
{
  return memmem(d, n, s, strlen(s)) != NULL;
}

static void test_text(void **state)
{
  char *t;
  (void)state;
  assert_int_equal(redact_add("short"), 0); /* ignored: too short */
  assert_int_equal(redact_count(), 0);
  assert_int_equal(redact_add("sk-abcdefgh12345678"), 0);
  assert_int_equal(redact_add("sk-abcdefgh12345678"), 0); /* once */
  assert_int_equal(redact_add("tok-zzzzzzzz"), 0);
  assert_int_equal(redact_count(), 2);
  t = redact_text("key=sk-abcdefgh12345678;x=tok-zzzzzzzztok-zzzzzzzz end");
  assert_string_equal(t, "key=[redacted];x=[redacted][redacted] end");
  free(t);
  t = redact_text("sk-abcdefgh1234567 (one short) short");
  assert_string_equal(t, "sk-abcdefgh1234567 (one short) short");
  free(t);
  assert_true(redact_has("..sk-abcdefgh12345678"));
  assert_false(redact_has("nothing here"));
  assert_null(redact_text(NULL));
  redact_reset();
  assert_int_equal(redact_count(), 0);
}

/* A buffer holding binary bytes and a secret after a NUL; the cap grows
 * rather than cut. */
static void test_buf(void **state)
{
  struct buf b = BUF_INIT(24);
  static const char in[] = "a\0bSECRET-12\0c";
  (void)state;
  assert_int_equal(redact_add("SECRET-12"), 0);
  assert_int_equal(buf_append(&b, in, sizeof(in) - 1), 0);
  assert_int_equal(redact_buf(&b), 0);
  assert_int_equal(b.len, 3 + strlen(REDACT_MARK) + 2);
  assert_memory_equal(b.data, "a\0b[redacted]\0c", b.len);
  buf_release(&b);
  redact_reset();
}

/* A key in the environment, named by api_key_env or by its look, is kept
 * privately, wiped from the block /proc/self/environ shows and unset. */
static void test_init_scrubs_environ(void **state)
{
  const char *key = "sk-fake-0123456789abcdef-KEY";
  const char *tok = "ghp_fake_token_zyxwvut";
  struct config *c = config_new();
  struct err e;
  size_t n;
  char *env;
  (void)state;
  assert_non_null(c);
  assert_int_equal(config_set(c, "model.x", "api_key_env", "MY_LLM", NULL), 0);
  /* Inherited variables live in the initial block (see main below). */
  env = read_environ(&n);
  assert_non_null(env);
  assert_true(mem_has(env, n, key));
  assert_true(mem_has(env, n, tok));
  assert_int_equal(redact_init(c, &e), 0);
  env = read_environ(&n);
  assert_false(mem_has(env, n, key));
  assert_false(mem_has(env, n, tok));
  assert_null(getenv("MY_LLM"));
  assert_null(getenv("GH_TOKEN"));
  assert_string_equal(redact_getenv("MY_LLM"), key);
  assert_string_equal(redact_getenv("GH_TOKEN"), tok);
  assert_string_equal(redact_getenv("CUCO_PLAIN"), "visible-value"); /* kept */
  assert_int_equal(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
  assert_true(redact_has(key));
  config_free(c);
  redact_reset();
}

int main(int argc, char **argv)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text),
      cmocka_unit_test(test_buf),
      cmocka_unit_test(test_init_scrubs_environ),
  };
  (void)argc;
  /* Re-exec once with the secrets inherited, so they sit in our initial
   * environment block as they do for cuco. */
  if (!getenv("CUCO_PLAIN")) {
    setenv("MY_LLM", "sk-fake-0123456789abcdef-KEY", 1);
    setenv("GH_TOKEN", "ghp_fake_token_zyxwvut", 1);
    setenv("CUCO_PLAIN", "visible-value", 1);
    execv("/proc/self/exe", argv);
    return 1;
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
}
