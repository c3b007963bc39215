/* Unit tests for svg.c: output shape, escaping, the sticky error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "svg.h"

static void test_document(void **state)
{
  struct svg s;
  struct err e = {0, ""};
  const char *t;
  (void)state;
  svg_begin(&s, 1 << 16, 200, 100, "a <plot>");
  svg_circle(&s, 10, 20, 3, "#1f77b4", "pt ok", "#3 & <b>", "data-id=\"3\"");
  svg_text(&s, 5, 5, "middle", "tick", "%s", "<script>");
  svg_line(&s, 0, 0, 10, 10, NULL, 1, 1);
  assert_int_equal(svg_finish(&s, &e), 0);
  t = svg_str(&s);
  assert_non_null(strstr(t, "<svg xmlns=\"http://www.w3.org/2000/svg\" "
                            "width=\"200\" height=\"100\""));
  assert_non_null(strstr(t, "aria-label=\"a &lt;plot&gt;\""));
  assert_non_null(strstr(t, "<circle cx=\"10.0\" cy=\"20.0\" r=\"3.0\" "
                            "fill=\"#1f77b4\" class=\"pt ok\" data-id=\"3\">"
                            "<title>#3 &amp; &lt;b&gt;</title></circle>"));
  assert_non_null(strstr(t, ">&lt;script&gt;</text>"));
  assert_null(strstr(t, "<script>"));
  assert_non_null(strstr(t, "stroke-dasharray"));
  assert_non_null(strstr(t, "</svg>\n"));
  svg_release(&s);
}

static void test_sticky_nan(void **state)
{
  struct svg s;
  struct err e = {0, ""};
  size_t len;
  (void)state;
  svg_begin(&s, 1 << 16, 100, 100, NULL);
  svg_rect(&s, 1, 1, 2, 2, "red", NULL, NULL);
  len = strlen(svg_str(&s));
  svg_circle(&s, NAN, 1, 1, NULL, NULL, NULL, NULL);
  /* Later calls do nothing once the error is set. */
  svg_rect(&s, 1, 1, 2, 2, "red", NULL, NULL);
  assert_int_equal(strlen(svg_str(&s)), len);
  assert_int_equal(svg_finish(&s, &e), ERR_PARSE);
  assert_non_null(strstr(e.msg, "not a finite number"));
  svg_release(&s);
}

static void test_bad_tokens(void **state)
{
  struct svg s;
  struct err e = {0, ""};
  (void)state;
  svg_begin(&s, 1 << 16, 100, 100, NULL);
  svg_rect(&s, 0, 0, 1, 1, "red\" onload=\"x", NULL, NULL);
  assert_int_equal(svg_finish(&s, &e), ERR_PARSE);
  assert_null(strstr(svg_str(&s), "onload"));
  svg_release(&s);

  svg_begin(&s, 1 << 16, 100, 100, NULL);
  svg_text(&s, 0, 0, "left", NULL, "x");
  assert_int_equal(svg_finish(&s, &e), ERR_PARSE);
  svg_release(&s);

  svg_begin(&s, 1 << 16, 100, 100, NULL);
  svg_rect(&s, 0, 0, -1, 1, NULL, NULL, NULL);
  assert_int_equal(svg_finish(&s, &e), ERR_PARSE);
  svg_release(&s);
}

static void test_groups_and_cap(void **state)
{
  struct svg s;
  struct err e = {0, ""};
  int i;
  (void)state;
  svg_begin(&s, 1 << 16, 100, 100, NULL);
  svg_group_open(&s, "g");
  assert_int_equal(svg_finish(&s, &e), ERR_PARSE);
  assert_non_null(strstr(e.msg, "left open"));
  svg_release(&s);

  svg_begin(&s, 1 << 16, 100, 100, NULL);
  svg_group_close(&s);
  assert_int_equal(svg_finish(&s, &e), ERR_PARSE);
  svg_release(&s);

  svg_begin(&s, 2000, 100, 100, NULL);
  for (i = 0; i < 100; i++)
    svg_circle(&s, i, i, 1, NULL, NULL, NULL, NULL);
  assert_int_equal(svg_finish(&s, &e), ERR_TOOBIG);
  assert_non_null(strstr(e.msg, "size cap"));
  svg_release(&s);
}

static void test_axes(void **state)
{
  struct svg s;
  struct err e = {0, ""};
  struct svg_plot p = {10, 10, 100, 100, 5, 5, 2, 2};
  (void)state;
  svg_begin(&s, 1 << 16, 200, 200, NULL);
  /* A one-point range is widened, so the mapping stays finite. */
  svg_axes(&s, &p, "x", "y");
  assert_true(p.xmax > p.xmin && p.ymax > p.ymin);
  assert_true(isfinite(svg_plot_x(&p, 5)) && isfinite(svg_plot_y(&p, 2)));
  assert_float_equal(svg_plot_y(&p, p.ymin), 110, 1e-9);
  assert_float_equal(svg_plot_y(&p, p.ymax), 10, 1e-9);
  assert_int_equal(svg_finish(&s, &e), 0);
  assert_non_null(strstr(svg_str(&s), "class=\"tick\""));
  svg_release(&s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_document),   cmocka_unit_test(test_sticky_nan),
      cmocka_unit_test(test_bad_tokens), cmocka_unit_test(test_groups_and_cap),
      cmocka_unit_test(test_axes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
