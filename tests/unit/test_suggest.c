/* Unit tests for suggest.c and config_check (config.c): the nearest valid
 * name, and unknown keys and sections named with file, line and it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "suggest.h"

static const char *const llm_keys[] = {"provider", "model", "base_url",
                                       "api_key_env", NULL};
static const char *const evolve_keys[] = {"migrate_every", "budget_x", NULL};
static const struct config_section schema[] = {
    {"llm", llm_keys},
    {"model.", llm_keys},
    {"evolve", evolve_keys},
    {"sizes", NULL},
};
#define NSCHEMA (sizeof(schema) / sizeof(schema[0]))

static void test_distance(void **state)
{
  (void)state;
  assert_int_equal(suggest_distance("model", "model"), 0);
  assert_int_equal(suggest_distance("modle", "model"), 1); /* a swap */
  assert_int_equal(suggest_distance("mdel", "model"), 1);
  assert_int_equal(suggest_distance("Model", "model"), 0);
  assert_int_equal(suggest_distance("", "abc"), 3);
  assert_int_equal(suggest_distance("kitten", "sitting"), 3);
}

static void test_nearest(void **state)
{
  static const char *const keys[] = {"provider", "model", "base_url",
                                     "api_key_env"};
  static const char *const params[] = {"M", "K", "N"};
  (void)state;
  assert_string_equal(suggest_nearest("modle", keys, 4), "model");
  assert_string_equal(suggest_nearest("base-url", keys, 4), "base_url");
  assert_string_equal(suggest_nearest("api_key_evn", keys, 4), "api_key_env");
  assert_null(suggest_nearest("temperature", keys, 4));
  /* one-letter names: only a difference of case is a typo */
  assert_string_equal(suggest_nearest("k", params, 3), "K");
  assert_null(suggest_nearest("Q", params, 3));
}

static void test_list(void **state)
{
  static const char *const v[] = {"small_a", "small_b", "full"};
  char big[64], out[16];
  (void)state;
  suggest_list(big, sizeof(big), v, 2);
  assert_string_equal(big, "small_a, small_b");
  suggest_list(out, sizeof(out), v, 3);
  assert_string_equal(out, "small_a, sma..."); /* cut, and said so */
}

/* Load TEXT as "cuco.ini" and check it; the error message or "". */
static const char *check(const char *text, struct err *e)
{
  struct config *c = config_new();
  int rc;

  e->msg[0] = '\0';
  assert_int_equal(config_load_string(c, "cuco.ini", text, e), 0);
  rc = config_check(c, schema, NSCHEMA, e);
  config_free(c);
  return rc ? e->msg : "";
}

static void test_check(void **state)
{
  struct err e = {0, ""};
  (void)state;
  assert_string_equal(check("[llm]\nprovider = openai\n\n[sizes]\nany = M=1\n"
                            "[model.b]\nmodel = x\n",
                            &e),
                      "");
  assert_string_equal(check("[llm]\nprovider = openai\nmodle = gpt-4.1\n", &e),
                      "cuco.ini:3: unknown key 'modle' in [llm] (did you "
                      "mean 'model'?)");
  assert_int_equal(e.code, ERR_CONFIG);
  assert_string_equal(check("[lm]\nmodel = x\n", &e),
                      "cuco.ini:2: unknown section [lm] (did you mean "
                      "[llm]?)");
  assert_string_equal(check("[models.claude]\nmodel = x\n", &e),
                      "cuco.ini:2: unknown section [models.claude] (did you "
                      "mean [model.claude]?)");
  assert_string_equal(check("[web]\nport = 1\n", &e),
                      "cuco.ini:2: unknown section [web] (valid: llm, "
                      "model.NAME, evolve, sizes)");
  assert_string_equal(check("[evolve]\nmodel = x\n", &e),
                      "cuco.ini:2: unknown key 'model' in [evolve] (it is a "
                      "key of [llm])");
  assert_string_equal(check("[llm]\ntemperature = 1\n", &e),
                      "cuco.ini:2: unknown key 'temperature' in [llm] "
                      "(valid: provider, model, base_url, api_key_env)");
  assert_string_equal(check("model = x\n", &e),
                      "cuco.ini:1: key 'model' comes before any [section]");
}

/* The environment's entries are the program's own: never checked. */
static void test_check_skips_env(void **state)
{
  struct config *c = config_new();
  struct err e = {0, ""};
  (void)state;
  assert_int_equal(config_set(c, "llm", "nonsense", "1", "env CUCO_X"), 0);
  assert_int_equal(config_check(c, schema, NSCHEMA, &e), 0);
  config_free(c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_distance),
      cmocka_unit_test(test_nearest),
      cmocka_unit_test(test_list),
      cmocka_unit_test(test_check),
      cmocka_unit_test(test_check_skips_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
