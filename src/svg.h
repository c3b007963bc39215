/* svg.h - a small SVG emitter with a sticky error (docs/c-style.md habit 7).
 *
 * Every drawing call appends to a capped buffer; a bad argument (a NaN or
 * infinite coordinate, a colour or class that is not a plain token) or a
 * full buffer sets the error once, and every later call does nothing.  The
 * caller checks once with svg_finish().  Text is always XML-escaped, so
 * strings from the database can be drawn directly.
 */
#ifndef CUCO_SVG_H
#define CUCO_SVG_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

struct svg {
  struct buf b;
  int code;      /* first error (0 = none); sticky */
  char msg[160]; /* what caused it */
  int depth;     /* open <g> elements */
};

/* The mapping of a data rectangle onto a pixel rectangle (y grows up). */
struct svg_plot {
  double px, py, pw, ph; /* pixel frame: left, top, width, height */
  double xmin, xmax, ymin, ymax;
};

/* Start a document of w x h pixels whose buffer holds at most max bytes.
 * `label` becomes the aria-label (escaped; may be NULL).  Caller owns *s
 * and releases it with svg_release() (after svg_detach() or not). */
void svg_begin(struct svg *s, size_t max, double w, double h,
               const char *label);
void svg_release(struct svg *s);

/* Shapes.  `cls` is a CSS class token (or NULL), `fill`/`stroke` a colour
 * token like "#1f77b4" or "none" (or NULL), `title` a tooltip (escaped,
 * may be NULL).  `attrs` (may be NULL) is trusted extra attribute text
 * that must come from the program, never from data (e.g. data-id="3"). */
void svg_rect(struct svg *s, double x, double y, double w, double h,
              const char *fill, const char *cls, const char *title);
void svg_line(struct svg *s, double x1, double y1, double x2, double y2,
              const char *stroke, double width, int dashed);
void svg_circle(struct svg *s, double cx, double cy, double r,
                const char *fill, const char *cls, const char *title,
                const char *attrs);
/* A polyline through n points xy[2*i], xy[2*i+1]. */
void svg_polyline(struct svg *s, const double *xy, size_t n,
                  const char *stroke, double width);
/* anchor: "start", "middle" or "end"; the text is printf-formatted and
 * escaped. */
void svg_text(struct svg *s, double x, double y, const char *anchor,
              const char *cls, const char *fmt, ...) PRINTF_LIKE(6, 7);
/* About how wide text is drawn at font_px in a sans-serif face (0.6 em a
 * character, a little over the average, so a layout that fits by it fits
 * on the page): for legends that must not run past the figure. */
double svg_text_width(const char *text, double font_px);
/* Group elements; each svg_group_open needs an svg_group_close. */
void svg_group_open(struct svg *s, const char *cls);
void svg_group_close(struct svg *s);

/* Draw axes with about five ticks each and labels inside the pixel frame
 * of p (which the caller filled); an empty data range is widened. */
void svg_axes(struct svg *s, struct svg_plot *p, const char *xlabel,
              const char *ylabel);
/* Data to pixels for the frame p. */
double svg_plot_x(const struct svg_plot *p, double x);
double svg_plot_y(const struct svg_plot *p, double y);

/* Close the document.  Returns 0 or the sticky error (ERR_PARSE for a bad
 * argument, ERR_TOOBIG, ERR_NOMEM) with its message in *e. */
int svg_finish(struct svg *s, struct err *e) WARN_UNUSED;

/* The finished text (borrowed, valid until svg_release). */
const char *svg_str(const struct svg *s);

/* One colour of a ten-colour palette, for island or series i. */
const char *svg_palette(int i);

#endif
