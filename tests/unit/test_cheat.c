/* Unit tests for cheat.c: a cheat's source from its edit file (header
 * lines + SEARCH/REPLACE blocks through patch_apply_diff) or whole file,
 * and a one-line error naming the file for every malformed edit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "cheat.h"

static const char *seed = "// seed.cu\n"
                          "int frozen(void) { return 1; }\n"
                          "// EVOLVE-BLOCK-START\n"
                          "// CUCO-PARAM n=2\n"
                          "int step(int x)\n"
                          "{\n"
                          "  return x * 2;\n"
                          "}\n"
                          "// EVOLVE-BLOCK-END\n";

#define PATH "wl/cheats/c.edit"

static void test_names(void **state)
{
  (void)state;
  assert_int_equal(cheat_name_len("skip_rank.edit"), 9);
  assert_int_equal(cheat_name_len("frozen_edit.cu"), 11);
  assert_int_equal(cheat_name_len(".edit"), 0);
  assert_int_equal(cheat_name_len("README.md"), 0);
  assert_int_equal(cheat_name_len("a/b.edit"), 0);
}

static void test_apply(void **state)
{
  struct err e = {0, ""};
  char *out = NULL;
  (void)state;
  assert_int_equal(cheat_source(PATH,
                                "// CUCO-EXPECT-REJECT: verify poison\n"
                                "// what it does\n"
                                "<<<<<<< SEARCH\n"
                                "  return x * 2;\n"
                                "=======\n"
                                "  return 0;  // skips the work\n"
                                ">>>>>>> REPLACE\n"
                                "\n"
                                "<<<<<<< SEARCH\n"
                                "// CUCO-PARAM n=2\n"
                                "=======\n"
                                "// CUCO-PARAM n=4\n"
                                ">>>>>>> REPLACE\n",
                                seed, &out, &e),
                   0);
  assert_string_equal(out, "// CUCO-EXPECT-REJECT: verify poison\n"
                           "// what it does\n"
                           "// seed.cu\n"
                           "int frozen(void) { return 1; }\n"
                           "// EVOLVE-BLOCK-START\n"
                           "// CUCO-PARAM n=4\n"
                           "int step(int x)\n"
                           "{\n"
                           "  return 0;  // skips the work\n"
                           "}\n"
                           "// EVOLVE-BLOCK-END\n");
  free(out);
  /* a whole file is its own source */
  assert_int_equal(cheat_source("wl/cheats/w.cu", "int x;\n", seed, &out, &e),
                   0);
  assert_string_equal(out, "int x;\n");
  free(out);
}

/* TEXT as an edit must fail with ERR_PARSE, a message that starts with the
 * file's path, contains WHAT and is one line. */
static void bad(const char *text, const char *what)
{
  struct err e = {0, ""};
  char *out = (char *)"unset";
  assert_int_equal(cheat_source(PATH, text, seed, &out, &e), ERR_PARSE);
  assert_null(out);
  assert_int_equal(strncmp(e.msg, PATH ": ", strlen(PATH) + 2), 0);
  if (!strstr(e.msg, what))
    fail_msg("'%s' not in '%s'", what, e.msg);
  assert_null(strchr(e.msg, '\n'));
}

static void test_malformed(void **state)
{
  (void)state;
  /* SEARCH text not in the seed */
  bad("// CUCO-EXPECT-REJECT: verify poison\n"
      "<<<<<<< SEARCH\n  return x * 3;\n=======\n  return 0;\n"
      ">>>>>>> REPLACE\n",
      "SEARCH block 1 of 1 matches nothing inside an EVOLVE block: "
      "\"  return x * 3;\\n\"");
  /* frozen text: the patch path refuses it */
  bad("// CUCO-EXPECT-REJECT: static frozen\n"
      "<<<<<<< SEARCH\nint frozen(void) { return 1; }\n=======\n"
      "int frozen(void) { return 0; }\n>>>>>>> REPLACE\n",
      "matches nothing inside an EVOLVE block");
  /* block syntax */
  bad("// CUCO-EXPECT-REJECT: verify poison\n"
      "<<<<<<< SEARCH\n  return x * 2;\n>>>>>>> REPLACE\n",
      "has no ======= line");
  bad("// CUCO-EXPECT-REJECT: verify poison\n"
      "<<<<<<< SEARCH\n  return x * 2;\n=======\n  return 0;\n",
      "is not closed by >>>>>>> REPLACE");
  bad("// CUCO-EXPECT-REJECT: verify poison\n// nothing to apply\n",
      "no SEARCH/REPLACE block");
  /* the header */
  bad("<<<<<<< SEARCH\n  return x * 2;\n=======\n  return 0;\n"
      ">>>>>>> REPLACE\n",
      "line 1 is not a '// CUCO-EXPECT-REJECT: STAGE words' line");
  /* anything but blank lines between blocks */
  bad("// CUCO-EXPECT-REJECT: verify poison\n"
      "<<<<<<< SEARCH\n  return x * 2;\n=======\n  return 0;\n"
      ">>>>>>> REPLACE\nstray text\n",
      "line 7: 'stray text' is outside a SEARCH/REPLACE block");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_apply),
      cmocka_unit_test(test_malformed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
