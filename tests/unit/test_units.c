/* Unit tests for units.c: sizes ("16M") and durations ("10m"), their
 * results and their one-line errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "units.h"

static unsigned long long size_of(const char *s)
{
  unsigned long long v = 0;
  struct err e = {0, ""};

  assert_int_equal(units_parse_size("--x", s, &v, &e), 0);
  return v;
}

static double seconds_of(const char *s)
{
  double v = -1;
  struct err e = {0, ""};

  assert_int_equal(units_parse_duration("--x", s, &v, &e), 0);
  return v;
}

static void test_size_suffixes(void **state)
{
  (void)state;
  assert_true(size_of("0") == 0);
  assert_true(size_of("4096") == 4096);
  assert_true(size_of("512B") == 512);
  assert_true(size_of("64K") == 64ULL << 10);
  assert_true(size_of("64k") == 64ULL << 10);
  assert_true(size_of("16M") == 16ULL << 20);
  assert_true(size_of("16m") == 16ULL << 20);
  assert_true(size_of("16MiB") == 16ULL << 20);
  assert_true(size_of("16mib") == 16ULL << 20);
  assert_true(size_of("16MB") == 16ULL << 20); /* binary, as nccl-tests */
  assert_true(size_of("1G") == 1ULL << 30);
  assert_true(size_of("2gib") == 2ULL << 30);
  assert_true(size_of("1T") == 1ULL << 40);
  assert_true(size_of("16777216") == 16ULL << 20);
}

static void test_size_errors(void **state)
{
  static const char *const bad[] = {"",     "M",      "-1",   "+4",   " 4",
                                    "4 ",   "16X",    "16Mx", "16MM", "1.5G",
                                    "0x10", "16KiBB", "16i",  "16iB"};
  unsigned long long v = 77;
  struct err e = {0, ""};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    assert_int_equal(units_parse_size("--max", bad[i], &v, &e), ERR_USAGE);
    assert_true(v == 77); /* untouched on error */
  }
  assert_int_equal(units_parse_size("--max", "16X", &v, &e), ERR_USAGE);
  assert_string_equal(e.msg,
                      "--max: '16X' is not a size (e.g. 4096, 64K, 16M, 1G)");
  assert_int_equal(units_parse_size(NULL, "x", &v, &e), ERR_USAGE);
  assert_string_equal(e.msg, "'x' is not a size (e.g. 4096, 64K, 16M, 1G)");
  /* 2^64 and more: said so, not wrapped */
  assert_int_equal(units_parse_size("--max", "18446744073709551616", &v, &e),
                   ERR_USAGE);
  assert_string_equal(
      e.msg, "--max: '18446744073709551616' is not a size this program can "
             "hold");
  assert_int_equal(units_parse_size("--max", "17179869184G", &v, &e),
                   ERR_USAGE);
  assert_true(size_of("18446744073709551615") == ~0ULL);
}

static void test_duration_suffixes(void **state)
{
  (void)state;
  assert_true(seconds_of("90") == 90);
  assert_true(seconds_of("0") == 0);
  assert_true(seconds_of("1.5") == 1.5);
  assert_true(seconds_of(".5") == 0.5);
  assert_true(seconds_of("90s") == 90);
  assert_true(seconds_of("90S") == 90);
  assert_true(seconds_of("10m") == 600);
  assert_true(seconds_of("10M") == 600);
  assert_true(seconds_of("1.5m") == 90);
  assert_true(seconds_of("2h") == 7200);
  assert_true(seconds_of("2H") == 7200);
  assert_true(seconds_of("3.") == 3);
}

static void test_duration_errors(void **state)
{
  static const char *const bad[] = {"",     "s",   "-5",   "+5",  "1e3",
                                    "inf",  "nan", "0x10", "10x", "10ms",
                                    "10 m", " 10", "10d",  ".",   "1.2.3"};
  double v = 77;
  struct err e = {0, ""};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    assert_int_equal(units_parse_duration("--timeout", bad[i], &v, &e),
                     ERR_USAGE);
    assert_true(v == 77);
  }
  assert_int_equal(units_parse_duration("--timeout", "10x", &v, &e),
                   ERR_USAGE);
  assert_string_equal(
      e.msg, "--timeout: '10x' is not a duration (e.g. 90, 90s, 10m, 2h)");
  assert_int_equal(units_parse_duration(NULL, "soon", &v, &e), ERR_USAGE);
  assert_string_equal(e.msg,
                      "'soon' is not a duration (e.g. 90, 90s, 10m, 2h)");
}

static void test_has_suffix(void **state)
{
  (void)state;
  assert_true(units_has_suffix("10m"));
  assert_true(units_has_suffix("16MiB"));
  assert_false(units_has_suffix("600"));
  assert_false(units_has_suffix("1.5"));
  assert_false(units_has_suffix(""));
  assert_false(units_has_suffix(NULL));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_size_suffixes),
      cmocka_unit_test(test_size_errors),
      cmocka_unit_test(test_duration_suffixes),
      cmocka_unit_test(test_duration_errors),
      cmocka_unit_test(test_has_suffix),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
