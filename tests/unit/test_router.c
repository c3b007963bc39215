/* Unit tests for router.c: routes, traversal, sizes, query arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "router.h"

static int route(const char *method, const char *path, struct router_match *m)
{
  return router_route(method, path, strlen(path), m);
}

static void test_routes(void **state)
{
  struct router_match m;
  (void)state;
  assert_int_equal(route("GET", "/", &m), 200);
  assert_int_equal(m.kind, ROUTE_STATIC);
  assert_string_equal(m.asset, "index.html");
  assert_int_equal(route("HEAD", "/app.js", &m), 200);
  assert_string_equal(m.asset, "app.js");
  assert_int_equal(route("GET", "/api/run", &m), 200);
  assert_int_equal(m.kind, ROUTE_API_RUN);
  assert_int_equal(route("GET", "/api/programs", &m), 200);
  assert_int_equal(m.kind, ROUTE_API_PROGRAMS);
  assert_int_equal(m.island, -1);
  assert_int_equal(route("GET", "/api/program/42", &m), 200);
  assert_int_equal(m.kind, ROUTE_API_PROGRAM);
  assert_int_equal(m.id, 42);
  assert_int_equal(route("GET", "/api/plot", &m), 200);
  assert_int_equal(m.kind, ROUTE_API_PLOT);
  assert_int_equal(route("GET", "/api/updates", &m), 200);
  assert_int_equal(m.kind, ROUTE_API_UPDATES);
}

static void test_not_found(void **state)
{
  struct router_match m;
  (void)state;
  assert_int_equal(route("GET", "/api/program/0", &m), 404);
  /* what is not an id at all is a bad request (400), not a missing
   * program, and the reason names the path and the value */
  assert_int_equal(route("GET", "/api/program/abc", &m), 400);
  assert_non_null(strstr(m.why, "/api/program/ID: 'abc' is not a program id"));
  assert_int_equal(route("GET", "/api/program/-1", &m), 400);
  assert_int_equal(route("GET", "/api/program/12a", &m), 400);
  assert_int_equal(route("GET", "/api/program/1234567890123456789", &m), 400);
  assert_int_equal(route("GET", "/api/program/", &m), 400); /* ends in / */
  assert_int_equal(route("GET", "/api/other", &m), 404);
  assert_int_equal(route("GET", "/etc/passwd", &m), 404);
  assert_int_equal(route("GET", "/index.htm", &m), 404);
}

static void test_traversal(void **state)
{
  static const char *const bad[] = {
      "/../etc/passwd", "/..",         "/a/../app.js", "/./app.js",
      "//app.js",       "/app.js/",    "/..\\app.js",  "/%2e%2e/x",
      "/a\x01",         "/app.js\x7f", "relative",     ""};
  struct router_match m;
  size_t i;
  (void)state;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(route("GET", bad[i], &m), 400);
    assert_true(m.why[0] != '\0');
  }
}

static void test_method_and_size(void **state)
{
  struct router_match m;
  char big[ROUTER_MAX_URL + 2];
  (void)state;
  assert_int_equal(route("POST", "/api/run", &m), 405);
  assert_int_equal(route("PUT", "/", &m), 405);
  assert_int_equal(route("DELETE", "/", &m), 405);
  memset(big, 'a', sizeof big - 1);
  big[0] = '/';
  big[sizeof big - 1] = '\0';
  assert_int_equal(route("GET", big, &m), 414);
  /* The whole URL counts: a short path with a long query too. */
  assert_int_equal(router_route("GET", "/api/run", ROUTER_MAX_URL + 1, &m),
                   414);
  assert_int_equal(router_route("GET", "/api/run", ROUTER_MAX_URL, &m), 200);
}

static void test_args(void **state)
{
  struct router_match m;
  char longv[ROUTER_MAX_ARG + 2];
  (void)state;
  assert_int_equal(route("GET", "/api/programs", &m), 200);
  assert_int_equal(router_arg(&m, "island", "3"), 200);
  assert_int_equal(m.island, 3);
  assert_int_equal(router_arg(&m, "status", "ok"), 200);
  assert_string_equal(m.status, "ok");
  assert_int_equal(router_arg(&m, "edit_kind", "cross"), 200);
  assert_string_equal(m.edit_kind, "cross");
  assert_int_equal(router_arg(&m, "island", ""), 200); /* "all" */
  assert_int_equal(router_arg(&m, "_", "123"), 200);
  assert_int_equal(router_arg(&m, "island", "-1"), 400);
  assert_int_equal(router_arg(&m, "island", "1e3"), 400);
  assert_int_equal(router_arg(&m, "island", "99999999999"), 400);
  assert_int_equal(router_arg(&m, "status", "ok' OR 1=1"), 400);
  assert_int_equal(router_arg(&m, "status", "OK"), 400);
  /* a word that is no status is refused with the valid ones named */
  assert_int_equal(router_arg(&m, "status", "bogus"), 400);
  assert_non_null(strstr(m.why, "status=bogus: not one of pending, running, "
                                "ok, failed, rejected, interrupted"));
  assert_int_equal(router_arg(&m, "status", "interrupted"), 200);
  assert_int_equal(router_arg(&m, "edit_kind", "bogus"), 400);
  assert_non_null(strstr(m.why, "seed, diff, full, cross, tune, migrate"));
  assert_int_equal(router_arg(&m, "since", "1"), 400); /* not this route */
  assert_int_equal(router_arg(&m, "nope", "1"), 400);
  memset(longv, 'a', sizeof longv - 1);
  longv[sizeof longv - 1] = '\0';
  assert_int_equal(router_arg(&m, "status", longv), 400);

  assert_int_equal(route("GET", "/api/updates", &m), 200);
  assert_int_equal(router_arg(&m, "since", "17"), 200);
  assert_int_equal(m.since, 17);
  assert_int_equal(router_arg(&m, "after", "1764400000.25"), 200);
  assert_true(m.after > 1764400000.2 && m.after < 1764400000.3);
  assert_int_equal(router_arg(&m, "since", "-2"), 400);
  assert_int_equal(router_arg(&m, "since", ""), 400);
  assert_int_equal(router_arg(&m, "after", "inf"), 400);
  assert_int_equal(router_arg(&m, "after", "nan"), 400);
  assert_int_equal(router_arg(&m, "island", "1"), 400);

  assert_int_equal(route("GET", "/api/run", &m), 200);
  assert_int_equal(router_arg(&m, "island", "1"), 400);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_routes),    cmocka_unit_test(test_not_found),
      cmocka_unit_test(test_traversal), cmocka_unit_test(test_method_and_size),
      cmocka_unit_test(test_args),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
