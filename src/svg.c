/* svg.c - the sticky-error SVG emitter; see svg.h. */
#include "svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "html.h"

static const char *const palette[10] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

const char *svg_palette(int i)
{
  if (i < 0)
    i = -i;
  return palette[i % 10];
}

/* Record the first error; later calls see s->code and do nothing. */
static void fail(struct svg *s, int code, const char *what)
{
  if (s->code)
    return;
  s->code = code;
  snprintf(s->msg, sizeof s->msg, "svg: %s", what);
}

/* Check the buffer after an append; returns 1 when the document is dead. */
static int dead(struct svg *s)
{
  int be;

  if (s->code)
    return 1;
  be = buf_error(&s->b);
  if (be) {
    fail(s, be,
         be == ERR_TOOBIG ? "document over its size cap" : "out of memory");
    return 1;
  }
  return 0;
}

static int finite_all(struct svg *s, int n, ...)
{
  va_list ap;
  int i, ok = 1;

  va_start(ap, n);
  for (i = 0; i < n; i++)
    if (!isfinite(va_arg(ap, double)))
      ok = 0;
  va_end(ap);
  if (!ok)
    fail(s, ERR_PARSE, "a coordinate is not a finite number");
  return ok;
}

/* A colour/class token, or NULL for "leave the attribute out". */
static int token_ok(struct svg *s, const char *t)
{
  if (t && !html_is_token(t)) {
    fail(s, ERR_PARSE, "a colour or class is not a plain token");
    return 0;
  }
  return 1;
}

static void attr(struct svg *s, const char *name, const char *v)
{
  if (v)
    buf_printf(&s->b, " %s=\"%s\"", name, v);
}

static void title_close(struct svg *s, const char *elem, const char *title)
{
  if (title) {
    buf_puts(&s->b, "><title>");
    html_escape(&s->b, title);
    buf_printf(&s->b, "</title></%s>\n", elem);
  } else {
    buf_puts(&s->b, "/>\n");
  }
}

void svg_begin(struct svg *s, size_t max, double w, double h,
               const char *label)
{
  buf_init(&s->b, max);
  s->code = 0;
  s->msg[0] = '\0';
  s->depth = 0;
  if (!finite_all(s, 2, w, h))
    return;
  buf_printf(&s->b,
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
             "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\"",
             w, h, w, h);
  if (label) {
    buf_puts(&s->b, " aria-label=\"");
    html_escape(&s->b, label);
    buf_puts(&s->b, "\"");
  }
  buf_puts(&s->b, ">\n");
  dead(s);
}

void svg_release(struct svg *s)
{
  if (s)
    buf_release(&s->b);
}

void svg_rect(struct svg *s, double x, double y, double w, double h,
              const char *fill, const char *cls, const char *title)
{
  if (dead(s) || !finite_all(s, 4, x, y, w, h) || !token_ok(s, fill) ||
      !token_ok(s, cls))
    return;
  if (w < 0 || h < 0) {
    fail(s, ERR_PARSE, "a rectangle has a negative size");
    return;
  }
  buf_printf(&s->b,
             "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
             "height=\"%.1f\"",
             x, y, w, h);
  attr(s, "fill", fill);
  attr(s, "class", cls);
  title_close(s, "rect", title);
  dead(s);
}

void svg_line(struct svg *s, double x1, double y1, double x2, double y2,
              const char *stroke, double width, int dashed)
{
  if (dead(s) || !finite_all(s, 5, x1, y1, x2, y2, width) ||
      !token_ok(s, stroke))
    return;
  buf_printf(&s->b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"",
             x1, y1, x2, y2);
  attr(s, "stroke", stroke ? stroke : "#000");
  buf_printf(&s->b, " stroke-width=\"%.2g\"%s/>\n", width,
             dashed ? " stroke-dasharray=\"4 3\"" : "");
  dead(s);
}

void svg_circle(struct svg *s, double cx, double cy, double r,
                const char *fill, const char *cls, const char *title,
                const char *attrs)
{
  if (dead(s) || !finite_all(s, 3, cx, cy, r) || !token_ok(s, fill) ||
      !token_ok(s, cls))
    return;
  buf_printf(&s->b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"", cx, cy, r);
  attr(s, "fill", fill);
  attr(s, "class", cls);
  if (attrs)
    buf_printf(&s->b, " %s", attrs);
  title_close(s, "circle", title);
  dead(s);
}

void svg_polyline(struct svg *s, const double *xy, size_t n,
                  const char *stroke, double width)
{
  size_t i;

  if (dead(s) || !token_ok(s, stroke) || !finite_all(s, 1, width))
    return;
  for (i = 0; i < 2 * n; i++)
    if (!finite_all(s, 1, xy[i]))
      return;
  buf_puts(&s->b, "<polyline points=\"");
  for (i = 0; i < n; i++)
    buf_printf(&s->b, "%s%.1f,%.1f", i ? " " : "", xy[2 * i], xy[2 * i + 1]);
  buf_puts(&s->b, "\" fill=\"none\"");
  attr(s, "stroke", stroke ? stroke : "#000");
  buf_printf(&s->b, " stroke-width=\"%.2g\"/>\n", width);
  dead(s);
}

void svg_text(struct svg *s, double x, double y, const char *anchor,
              const char *cls, const char *fmt, ...)
{
  char tmp[512];
  va_list ap;

  if (dead(s) || !finite_all(s, 2, x, y) || !token_ok(s, cls))
    return;
  if (anchor && strcmp(anchor, "start") && strcmp(anchor, "middle") &&
      strcmp(anchor, "end")) {
    fail(s, ERR_PARSE, "text anchor is not start, middle or end");
    return;
  }
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  buf_printf(&s->b, "<text x=\"%.1f\" y=\"%.1f\"", x, y);
  attr(s, "text-anchor", anchor);
  attr(s, "class", cls);
  buf_puts(&s->b, ">");
  html_escape(&s->b, tmp);
  buf_puts(&s->b, "</text>\n");
  dead(s);
}

double svg_text_width(const char *text, double font_px)
{
  size_t chars = 0;

  for (; *text; text++)
    chars += ((unsigned char)*text & 0xc0) != 0x80; /* code points */
  return 0.6 * font_px * (double)chars;
}

void svg_group_open(struct svg *s, const char *cls)
{
  if (dead(s) || !token_ok(s, cls))
    return;
  buf_puts(&s->b, "<g");
  attr(s, "class", cls);
  buf_puts(&s->b, ">\n");
  s->depth++;
  dead(s);
}

void svg_group_close(struct svg *s)
{
  if (dead(s))
    return;
  if (s->depth == 0) {
    fail(s, ERR_PARSE, "group closed that was not open");
    return;
  }
  buf_puts(&s->b, "</g>\n");
  s->depth--;
  dead(s);
}

double svg_plot_x(const struct svg_plot *p, double x)
{
  return p->px + (x - p->xmin) / (p->xmax - p->xmin) * p->pw;
}

double svg_plot_y(const struct svg_plot *p, double y)
{
  return p->py + p->ph - (y - p->ymin) / (p->ymax - p->ymin) * p->ph;
}

/* A "nice" tick step (1, 2 or 5 times a power of ten) for a range. */
static double nice_step(double range)
{
  double raw = range / 5, mag, f;

  if (!(raw > 0))
    return 1;
  mag = pow(10, floor(log10(raw)));
  f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

void svg_axes(struct svg *s, struct svg_plot *p, const char *xlabel,
              const char *ylabel)
{
  double step, v, x0, y0;
  int guard;

  if (dead(s) || !finite_all(s, 4, p->xmin, p->xmax, p->ymin, p->ymax))
    return;
  /* An empty range (one point) still gets a visible frame. */
  if (p->xmax - p->xmin <= 0) {
    p->xmin -= 1;
    p->xmax += 1;
  }
  if (p->ymax - p->ymin <= 0) {
    double pad = fabs(p->ymin) * 0.1 + 1e-9;
    p->ymin -= pad;
    p->ymax += pad;
  }
  x0 = p->px;
  y0 = p->py + p->ph;
  svg_group_open(s, "axes");
  svg_line(s, x0, y0, x0 + p->pw, y0, "#444", 1, 0);
  svg_line(s, x0, p->py, x0, y0, "#444", 1, 0);
  step = nice_step(p->xmax - p->xmin);
  for (v = ceil(p->xmin / step) * step, guard = 0;
       v <= p->xmax + step * 1e-9 && guard < 20; v += step, guard++) {
    double x = svg_plot_x(p, v);
    svg_line(s, x, y0, x, y0 + 4, "#444", 1, 0);
    svg_text(s, x, y0 + 16, "middle", "tick", "%g", v);
  }
  step = nice_step(p->ymax - p->ymin);
  for (v = ceil(p->ymin / step) * step, guard = 0;
       v <= p->ymax + step * 1e-9 && guard < 20; v += step, guard++) {
    double y = svg_plot_y(p, v);
    svg_line(s, x0 - 4, y, x0, y, "#444", 1, 0);
    svg_line(s, x0, y, x0 + p->pw, y, "#eee", 1, 0);
    svg_text(s, x0 - 6, y + 4, "end", "tick", "%.4g", v);
  }
  if (xlabel)
    svg_text(s, x0 + p->pw / 2, y0 + 32, "middle", "label", "%s", xlabel);
  if (ylabel)
    svg_text(s, x0, p->py - 8, "start", "label", "%s", ylabel);
  svg_group_close(s);
}

int svg_finish(struct svg *s, struct err *e)
{
  if (!dead(s)) {
    if (s->depth)
      fail(s, ERR_PARSE, "a group was left open");
    else
      buf_puts(&s->b, "</svg>\n");
  }
  if (dead(s))
    return err_set(e, s->code, "%s", s->msg);
  return 0;
}

const char *svg_str(const struct svg *s)
{
  return buf_str(&s->b);
}
