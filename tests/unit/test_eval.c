/* Unit tests for eval_verdict.c: the stage and status words (the DB's and
 * the JSON's storage format) and their parsers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "eval.h"

static void test_status_words(void **state)
{
  (void)state;
  assert_string_equal(eval_status_name(EVAL_STATUS_OK), "ok");
  assert_string_equal(eval_status_name(EVAL_STATUS_FAILED), "failed");
  assert_string_equal(eval_status_name(EVAL_STATUS_REJECTED), "rejected");
  assert_string_equal(eval_status_name((enum eval_status)7), "?");
  assert_int_equal(eval_status_parse("ok"), EVAL_STATUS_OK);
  assert_int_equal(eval_status_parse("failed"), EVAL_STATUS_FAILED);
  assert_int_equal(eval_status_parse("rejected"), EVAL_STATUS_REJECTED);
  /* DB-only words of a program row are no verdict */
  assert_int_equal(eval_status_parse("pending"), -1);
  assert_int_equal(eval_status_parse("running"), -1);
  assert_int_equal(eval_status_parse(""), -1);
  assert_int_equal(eval_status_parse("OK"), -1);
  {
    /* a result never filled in is not a pass */
    struct eval_result r;
    memset(&r, 0, sizeof(r));
    assert_int_not_equal(r.status, EVAL_STATUS_OK);
  }
}

static void test_stage_words(void **state)
{
  int i;
  (void)state;
  for (i = EVAL_STAGE_STATIC; i <= EVAL_STAGE_DONE; i++)
    assert_int_equal(eval_stage_parse(eval_stage_name((enum eval_stage)i)), i);
  assert_string_equal(eval_stage_name(EVAL_STAGE_ALLOWLIST), "allowlist");
  assert_int_equal(eval_stage_parse("nope"), -1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_words),
      cmocka_unit_test(test_stage_words),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
