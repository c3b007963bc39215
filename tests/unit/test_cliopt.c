/* Unit tests for cliopt.c: exact names, unique prefixes with a note,
 * ambiguous prefixes, deprecated spellings, unit suffixes and global
 * options anywhere, as main.c runs them before a command's parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliopt.h"

static const struct cliopt cmd_opts[] = {
    {"generations", 0, CLIOPT_VALUE, NULL, NULL, 0},
    {"seed", 0, CLIOPT_VALUE, NULL, NULL, 0},
    {"sizes", 0, CLIOPT_VALUE, NULL, NULL, 0},
    {"timeout", 0, CLIOPT_DURATION, NULL, NULL, 0},
    {"max-bytes", 0, CLIOPT_SIZE, NULL, NULL, 0},
    {"output", 'o', CLIOPT_VALUE, NULL, NULL, 0},
    {"out", 0, CLIOPT_VALUE, "output", NULL, 0},
    {"budget-usd", 0, CLIOPT_VALUE, NULL, NULL, 0},
    {"budget", 0, CLIOPT_VALUE, "budget-usd", NULL, 0},
    {"out-dir", 0, CLIOPT_VALUE, NULL, "work", 0},
    {"json", 'j', CLIOPT_FLAG, NULL, NULL, 0},
    {"help", 'h', CLIOPT_FLAG, NULL, NULL, 0},
    {NULL, 0, CLIOPT_FLAG, NULL, NULL, 0}};

static const struct cliopt globals[] = {
    {"verbose", 'v', CLIOPT_FLAG, NULL, NULL, 1},
    {"quiet", 'q', CLIOPT_FLAG, NULL, NULL, 2},
    {"config", 'c', CLIOPT_VALUE, NULL, NULL, 3},
    {NULL, 0, CLIOPT_FLAG, NULL, NULL, 0}};

/* One run: argv from a NULL-terminated list; the rewritten line joined
 * by '|' into line, the notes into notes, the globals "id=value" joined
 * by ',' into globs.  Returns cliopt_normalize's result. */
struct run {
  char line[512], notes[512], globs[256];
  struct err e;
};

static int run_flags(struct run *r, int flags, ...)
{
  char *argv[32], *buf = NULL;
  size_t len = 0, used = 0;
  struct cliopt_args a;
  FILE *notes = open_memstream(&buf, &len);
  va_list ap;
  int argc = 0, rc, k;

  memset(r, 0, sizeof(*r));
  memset(&a, 0, sizeof(a));
  argv[argc++] = "cuco x";
  va_start(ap, flags);
  while ((argv[argc] = va_arg(ap, char *)) != NULL)
    argc++;
  va_end(ap);
  rc = cliopt_normalize("cuco x", cmd_opts, globals, flags, argc, argv, notes,
                        &a, &r->e);
  fclose(notes);
  snprintf(r->notes, sizeof(r->notes), "%s", buf ? buf : "");
  free(buf);
  for (k = 1; !rc && k < a.argc; k++)
    used += (size_t)snprintf(r->line + used, sizeof(r->line) - used, "%s%s",
                             k > 1 ? "|" : "", a.argv[k]);
  if (!rc)
    assert_null(a.argv[a.argc]);
  used = 0;
  for (k = 0; !rc && k < a.nglobals; k++)
    used += (size_t)snprintf(r->globs + used, sizeof(r->globs) - used,
                             "%s%d=%s", k ? "," : "", a.globals[k].opt->id,
                             a.globals[k].value ? a.globals[k].value : "");
  cliopt_args_release(&a);
  return rc;
}
#define run(r, ...) run_flags(r, 0, __VA_ARGS__, (char *)NULL)

static void test_exact_names_pass_unchanged(void **state)
{
  struct run r;
  (void)state;
  assert_int_equal(
      run(&r, "WL", "--generations", "3", "--json", "-o", "f", "--seed=7"), 0);
  assert_string_equal(r.line, "WL|--generations|3|--json|-o|f|--seed|7");
  assert_string_equal(r.notes, "");
  assert_string_equal(r.globs, "");
}

static void test_unique_prefix_is_taken_with_a_note(void **state)
{
  struct run r;
  (void)state;
  assert_int_equal(run(&r, "--gen", "3", "--js", "--time=5"), 0);
  assert_string_equal(r.line, "--generations|3|--json|--timeout|5");
  assert_string_equal(r.notes, "cuco x: --gen taken as --generations\n"
                               "cuco x: --js taken as --json\n"
                               "cuco x: --time taken as --timeout\n");
}

static void test_ambiguous_prefix_lists_candidates(void **state)
{
  struct run r;
  (void)state;
  assert_int_equal(run(&r, "--s", "1"), ERR_USAGE);
  assert_string_equal(r.e.msg, "--s is ambiguous: --seed, --sizes");
  /* across the command's and the global options */
  assert_int_equal(run(&r, "--o", "x"), ERR_USAGE);
  assert_string_equal(r.e.msg, "--o is ambiguous: --output, --out-dir");
  /* a prefix of one global only: unique */
  assert_int_equal(run(&r, "WL", "--q"), 0);
  assert_string_equal(r.globs, "2=");
  assert_string_equal(r.notes, "cuco x: --q taken as --quiet\n");
}

static void test_deprecated_spelling_is_renamed(void **state)
{
  struct run r;
  (void)state;
  assert_int_equal(run(&r, "--budget", "2", "--out=s.cu"), 0);
  assert_string_equal(r.line, "--budget-usd|2|--output|s.cu");
  assert_string_equal(r.notes,
                      "cuco x: --budget is deprecated; use --budget-usd\n"
                      "cuco x: --out is deprecated; use --output\n");
  /* a prefix of both spellings of one option is not ambiguous */
  assert_int_equal(run(&r, "--budg", "2"), 0);
  assert_string_equal(r.line, "--budget-usd|2");
  assert_string_equal(r.notes, "cuco x: --budg taken as --budget-usd\n");
  /* the name the command's parser reads (pass_as) */
  assert_int_equal(run(&r, "--out-dir", "d"), 0);
  assert_string_equal(r.line, "--work|d");
}

static void test_units_are_converted(void **state)
{
  struct run r;
  (void)state;
  assert_int_equal(run(&r, "--timeout", "10m", "--max-bytes=16M"), 0);
  assert_string_equal(r.line, "--timeout|600|--max-bytes|16777216");
  /* a plain number goes on as written */
  assert_int_equal(run(&r, "--timeout", "1.50", "--max-bytes", "4096"), 0);
  assert_string_equal(r.line, "--timeout|1.50|--max-bytes|4096");
  assert_int_equal(run(&r, "--timeout", "1.5h"), 0);
  assert_string_equal(r.line, "--timeout|5400");
  assert_int_equal(run(&r, "--timeout", "10x"), ERR_USAGE);
  assert_string_equal(
      r.e.msg, "--timeout: '10x' is not a duration (e.g. 90, 90s, 10m, 2h)");
  /* the message names the option by its full name, even from a prefix */
  assert_int_equal(run(&r, "--max=16Q"), ERR_USAGE);
  assert_string_equal(
      r.e.msg, "--max-bytes: '16Q' is not a size (e.g. 4096, 64K, 16M, 1G)");
}

static void test_globals_anywhere(void **state)
{
  struct run r;
  (void)state;
  assert_int_equal(run(&r, "WL", "-v", "--gen", "2", "--config", "a.ini", "-q",
                       "--conf=b.ini", "-cc.ini", "-vq"),
                   0);
  assert_string_equal(r.line, "WL|--generations|2");
  assert_string_equal(r.globs, "1=,3=a.ini,2=,3=b.ini,3=c.ini,1=,2=");
  /* a value is a value, even one that looks like a global option */
  assert_int_equal(run(&r, "--seed", "-v", "-o", "-q"), 0);
  assert_string_equal(r.line, "--seed|-v|-o|-q");
  assert_string_equal(r.globs, "");
  assert_int_equal(run(&r, "--config"), ERR_USAGE);
  assert_string_equal(r.e.msg, "option '--config' requires an argument");
  assert_int_equal(run(&r, "--verbose=1"), ERR_USAGE);
  assert_string_equal(r.e.msg, "option '--verbose' doesn't allow an argument");
}

static void test_unknown_and_end_of_options(void **state)
{
  struct run r;
  (void)state;
  /* unknown: for the command's parser to name */
  assert_int_equal(run(&r, "--no-such", "-x", "-jz", "-"), 0);
  assert_string_equal(r.line, "--no-such|-x|-jz|-");
  /* short clusters of known letters are split */
  assert_int_equal(run(&r, "-jvofile"), 0);
  assert_string_equal(r.line, "-j|-o|file");
  assert_string_equal(r.globs, "1=");
  /* a missing value is the command parser's to report */
  assert_int_equal(run(&r, "--seed"), 0);
  assert_string_equal(r.line, "--seed");
  /* after "--": nothing is touched */
  assert_int_equal(run(&r, "--gen", "1", "--", "--gen", "-v"), 0);
  assert_string_equal(r.line, "--generations|1|--|--gen|-v");
  assert_string_equal(r.globs, "");
  /* a flag given a value: the command's parser says so */
  assert_int_equal(run(&r, "--js=1"), 0);
  assert_string_equal(r.line, "--json=1");
}

static void test_strict_and_stop(void **state)
{
  struct run r;
  (void)state;
  assert_int_equal(
      run_flags(&r, CLIOPT_STRICT, "--no-such", "doctor", (char *)NULL),
      ERR_USAGE);
  assert_string_equal(r.e.msg, "unrecognized option '--no-such'");
  assert_int_equal(run_flags(&r, CLIOPT_STRICT, "-vx", (char *)NULL),
                   ERR_USAGE);
  assert_string_equal(r.e.msg, "unrecognized option '-x'");
  /* options end at the first argument: the rest is someone else's */
  assert_int_equal(run_flags(&r, CLIOPT_STRICT | CLIOPT_STOP, "-v", "gcc",
                             "-v", "--gen", "-c", "x.c", (char *)NULL),
                   0);
  assert_string_equal(r.line, "gcc|-v|--gen|-c|x.c");
  assert_string_equal(r.globs, "1=");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exact_names_pass_unchanged),
      cmocka_unit_test(test_unique_prefix_is_taken_with_a_note),
      cmocka_unit_test(test_ambiguous_prefix_lists_candidates),
      cmocka_unit_test(test_deprecated_spelling_is_renamed),
      cmocka_unit_test(test_units_are_converted),
      cmocka_unit_test(test_globals_anywhere),
      cmocka_unit_test(test_unknown_and_end_of_options),
      cmocka_unit_test(test_strict_and_stop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
