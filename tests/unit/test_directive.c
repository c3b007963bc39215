/* Unit tests for directive.c: parsing, validation, flags, rewriting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "directive.h"
#include "workload.h"

static const char *code =
    "#include \"rt.cuh\"\n"
    "// CUCO-DIRECTIVES backend=gin   (outside the first block: ignored)\n"
    "// EVOLVE-BLOCK-START\n"
    "  // CUCO-DIRECTIVES backend=lsa placement=per_tile sync=per_peer "
    "issuer=warp chunk=512KiB\n"
    "// CUCO-PARAM comm_ctas=8\n"
    "// CUCO-PARAM mode=fast choices=fast,safe\n"
    "__global__ void k() {}\n"
    "// EVOLVE-BLOCK-END\n"
    "// EVOLVE-BLOCK-START\n"
    "// CUCO-PARAM ignored=1\n"
    "// EVOLVE-BLOCK-END\n";

static void space(struct workload *w)
{
  memset(w, 0, sizeof(*w));
  snprintf(w->name, sizeof(w->name), "wl");
  w->space.present = 1;
  w->space.backend.n = 1;
  snprintf(w->space.backend.v[0], 16, "lsa");
  w->space.placement.n = 2;
  snprintf(w->space.placement.v[0], 16, "deferred");
  snprintf(w->space.placement.v[1], 16, "per_tile");
  w->space.sync.n = 2;
  snprintf(w->space.sync.v[0], 16, "global");
  snprintf(w->space.sync.v[1], 16, "per_peer");
  w->space.issuer.n = 2;
  snprintf(w->space.issuer.v[0], 16, "warp");
  snprintf(w->space.issuer.v[1], 16, "cta");
  w->space.chunk_min = 64 * 1024;
  w->space.chunk_max = 4 << 20;
  w->nparams = 2;
  snprintf(w->params[0].name, 64, "comm_ctas");
  w->params[0].nchoices = 2;
  snprintf(w->params[0].choices[0], 64, "4");
  snprintf(w->params[0].choices[1], 64, "8");
  snprintf(w->params[1].name, 64, "mode");
  w->params[1].nchoices = 2;
  snprintf(w->params[1].choices[0], 64, "fast");
  snprintf(w->params[1].choices[1], 64, "safe");
}

static void test_parse_flags_json(void **state)
{
  struct directive_set d;
  struct directive_flags f;
  struct workload w;
  struct err e = {0, ""};
  json_t *j;
  char *s;
  (void)state;
  assert_int_equal(directive_parse(code, &d, &e), 0);
  assert_int_equal(d.has_line, 1);
  assert_int_equal(d.line, 4);
  assert_string_equal(d.backend, "lsa");
  assert_true(d.chunk_bytes == 524288ULL);
  assert_int_equal(d.nparams, 2);
  space(&w);
  assert_int_equal(directive_validate(&d, &w, &e), 0);
  directive_flags(&d, &f);
  assert_int_equal(f.n, 7);
  assert_string_equal(f.v[0], "-DCUCO_BACKEND=CUCO_BACKEND_LSA");
  assert_string_equal(f.v[1], "-DCUCO_PLACEMENT=CUCO_PLACEMENT_PER_TILE");
  assert_string_equal(f.v[2], "-DCUCO_SYNC=CUCO_SYNC_PER_PEER");
  assert_string_equal(f.v[3], "-DCUCO_ISSUER=CUCO_ISSUER_WARP");
  assert_string_equal(f.v[4], "-DCUCO_CHUNK_BYTES=524288");
  assert_string_equal(f.v[5], "-DCUCO_PARAM_comm_ctas=8");
  assert_string_equal(f.v[6], "-DCUCO_PARAM_mode=fast");
  j = directive_to_json(&d);
  s = json_dumps(j, JSON_COMPACT);
  assert_string_equal(s, "{\"backend\":\"lsa\",\"placement\":\"per_tile\","
                         "\"sync\":\"per_peer\",\"issuer\":\"warp\","
                         "\"chunk\":\"512KiB\",\"chunk_bytes\":524288,"
                         "\"params\":{\"comm_ctas\":8,\"mode\":\"fast\"}}");
  free(s);
  json_decref(j);
}

static void bad_parse(const char *line, const char *want)
{
  char text[1024];
  struct directive_set d;
  struct err e = {0, ""};

  snprintf(text, sizeof(text),
           "// EVOLVE-BLOCK-START\n%s\n// EVOLVE-BLOCK-END\n", line);
  assert_int_equal(directive_parse(text, &d, &e), ERR_CHECK);
  if (!strstr(e.msg, want))
    fail_msg("'%s' -> '%s' lacks '%s'", line, e.msg, want);
  assert_non_null(strstr(e.msg, "line 2"));
}

static void test_parse_bad(void **state)
{
  (void)state;
  bad_parse("// CUCO-DIRECTIVES backend=lsa colour=red", "'colour=red'");
  bad_parse("// CUCO-DIRECTIVES backend", "'backend' is not KEY=VALUE");
  bad_parse("// CUCO-DIRECTIVES backend=lsa backend=gin", "given twice");
  bad_parse("// CUCO-DIRECTIVES chunk=12parsecs", "'chunk=12parsecs'");
  bad_parse("// CUCO-DIRECTIVES backend=LSA", "'backend=LSA'");
  bad_parse("// CUCO-DIRECTIVES", "empty");
  bad_parse("// CUCO-PARAM a=1 a=2", "param 'a' given twice");
  bad_parse("// CUCO-PARAM a=$(rm)", "'a=$(rm)'");
  bad_parse("// CUCO-PARAM 9a=1", "bad param name");
}

static void bad_validate(const char *dir_line, const char *params,
                         const char *want)
{
  char text[1024];
  struct directive_set d;
  struct workload w;
  struct err e = {0, ""};

  snprintf(text, sizeof(text),
           "// EVOLVE-BLOCK-START\n%s\n%s// EVOLVE-BLOCK-END\n", dir_line,
           params);
  space(&w);
  assert_int_equal(directive_parse(text, &d, &e), 0);
  assert_int_equal(directive_validate(&d, &w, &e), ERR_CHECK);
  if (!strstr(e.msg, want))
    fail_msg("'%s' -> '%s' lacks '%s'", dir_line, e.msg, want);
}

#define OKP "// CUCO-PARAM comm_ctas=4\n// CUCO-PARAM mode=safe\n"
#define D(rest)                                                               \
  "// CUCO-DIRECTIVES backend=lsa placement=deferred sync=global " rest

static void test_validate_bad(void **state)
{
  (void)state;
  bad_validate(D("issuer=warp chunk=1MiB"), "// CUCO-PARAM comm_ctas=4\n",
               "param 'mode' is missing");
  bad_validate(D("issuer=thread chunk=1MiB"), OKP,
               "'issuer=thread' is not allowed by wl (warp|cta)");
  bad_validate(D("issuer=warp chunk=96KiB"), OKP,
               "'chunk=96KiB' is not a power of two");
  bad_validate(D("issuer=warp chunk=8MiB"), OKP, "outside wl's range");
  bad_validate(D("issuer=warp chunk=1MiB"), OKP "// CUCO-PARAM extra=1\n",
               "unknown param 'extra=1'");
  bad_validate(D("issuer=warp chunk=1MiB"),
               "// CUCO-PARAM comm_ctas=3\n// CUCO-PARAM mode=safe\n",
               "'comm_ctas=3' is not one of");
  bad_validate(D("chunk=1MiB"), OKP, "'issuer' is missing");
  bad_validate("// nothing", OKP, "no // CUCO-DIRECTIVES line");
}

static void test_apply(void **state)
{
  struct directive_set d, back;
  struct err e = {0, ""};
  char *out;
  (void)state;
  assert_int_equal(directive_parse(code, &d, &e), 0);
  snprintf(d.issuer, sizeof(d.issuer), "cta");
  snprintf(d.chunk_text, sizeof(d.chunk_text), "2MiB");
  d.chunk_bytes = 2 << 20;
  snprintf(d.params[0].value, 64, "4");
  snprintf(d.params[d.nparams].name, 64, "newp");
  snprintf(d.params[d.nparams++].value, 64, "7");
  out = directive_apply(code, &d, &e);
  assert_non_null(out);
  assert_non_null(strstr(out, "  // CUCO-DIRECTIVES backend=lsa "
                              "placement=per_tile sync=per_peer issuer=cta "
                              "chunk=2MiB\n"));
  assert_non_null(strstr(out, "// CUCO-PARAM comm_ctas=4\n"
                              "// CUCO-PARAM mode=fast\n"
                              "// CUCO-PARAM newp=7\n__global__"));
  /* the frozen line outside the block is untouched */
  assert_non_null(strstr(out, "backend=gin   (outside"));
  assert_int_equal(directive_parse(out, &back, &e), 0);
  assert_string_equal(back.issuer, "cta");
  assert_int_equal(back.nparams, 3);
  free(out);
}

static void test_render(void **state)
{
  struct directive_set d;
  struct buf b = BUF_INIT(4096);
  struct err e = {0, ""};
  (void)state;
  assert_int_equal(directive_parse(code, &d, &e), 0);
  assert_int_equal(directive_render(&d, &b), 0);
  assert_string_equal(buf_str(&b),
                      "// CUCO-DIRECTIVES backend=lsa placement=per_tile "
                      "sync=per_peer issuer=warp chunk=512KiB\n"
                      "// CUCO-PARAM comm_ctas=8\n// CUCO-PARAM mode=fast\n");
  buf_release(&b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_flags_json),
      cmocka_unit_test(test_parse_bad),
      cmocka_unit_test(test_validate_bad),
      cmocka_unit_test(test_apply),
      cmocka_unit_test(test_render),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
