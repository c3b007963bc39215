/* charts.c - the report's SVG figures; see charts.h. */
#include "charts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "svg.h"

#define SVG_CAP   (8u * 1024 * 1024)
#define MAX_NODES 5000 /* a tree larger than this is drawn in part */
#define LINEAGE_LEGEND                                                        \
  "a node per candidate (its id below it), coloured by island; a row per "    \
  "generation; grey: parent, red dashed: second parent (cross)"

static double num(const json_t *o, const char *k, double dflt)
{
  const json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : dflt;
}

static const char *str(const json_t *o, const char *k)
{
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

/* Finish s, append it to out, release it. */
static int emit(struct svg *s, struct buf *out, struct err *e)
{
  int rc = svg_finish(s, e);

  if (rc == 0) {
    buf_puts(out, svg_str(s));
    rc = buf_error(out);
    if (rc)
      err_set(e, rc, "report: output over its cap");
  }
  svg_release(s);
  return rc;
}

static int note(struct buf *out, const char *text)
{
  buf_puts(out, "<p class=\"note\">");
  html_escape(out, text);
  buf_puts(out, "</p>\n");
  return buf_error(out);
}

static int is_copy(const json_t *pt)
{
  return !strcmp(str(pt, "edit_kind"), "migrate");
}

/* One entry of the score plot's legend: an island's swatch, or the run's
 * best (island < 0). */
struct legend_item {
  int island;
  char text[240];
  double w, x, y;
};

#define LEGEND_ROW 14.0 /* pixels between legend rows */
#define LEGEND_GAP 14.0 /* pixels between entries */

/* The legend's entries: every island with a score, then the best (when
 * it has a score).  Returns how many. */
static int legend_items(const double *best, const json_t *bestp,
                        const char *best_label, struct legend_item *it)
{
  int n = 0, isl;

  for (isl = 0; isl < 64; isl++) {
    if (!(best[isl] > -INFINITY))
      continue;
    it[n].island = isl;
    snprintf(it[n].text, sizeof it[n].text, "island %d", isl);
    it[n].w = 14 + svg_text_width(it[n].text, 10);
    n++;
  }
  if (bestp && isfinite(num(bestp, "score", NAN))) {
    it[n].island = -1;
    snprintf(it[n].text, sizeof it[n].text, "best #%.0f: %s%sscore %.4g",
             num(bestp, "id", 0), best_label ? best_label : "",
             best_label ? ", " : "", num(bestp, "score", 0));
    it[n].w = 14 + svg_text_width(it[n].text, 11);
    n++;
  }
  return n;
}

/* Flow the entries left to right from x0, wrapping before right; rows
 * from y 13 down.  Returns the number of rows. */
static int legend_layout(struct legend_item *it, int n, double x0,
                         double right)
{
  double x = x0;
  int rows = 1, i;

  for (i = 0; i < n; i++) {
    if (x > x0 && x + it[i].w > right) {
      rows++;
      x = x0;
    }
    it[i].x = x;
    it[i].y = 13 + (rows - 1) * LEGEND_ROW;
    x += it[i].w + LEGEND_GAP;
  }
  return rows;
}

static void legend_draw(struct svg *s, const struct legend_item *it, int n)
{
  int i;

  for (i = 0; i < n; i++) {
    if (it[i].island >= 0) {
      svg_rect(s, it[i].x, it[i].y - 9, 10, 10, svg_palette(it[i].island),
               NULL, NULL);
      svg_text(s, it[i].x + 14, it[i].y, "start", "tick", "%s", it[i].text);
    } else {
      svg_circle(s, it[i].x + 6, it[i].y - 4, 6, "none", "best-ring", NULL,
                 NULL);
      svg_text(s, it[i].x + 14, it[i].y, "start", "legend", "%s", it[i].text);
    }
  }
}

/* best[isl]: island isl's highest score (-INFINITY: none), copies left
 * out. */
static void island_best(const json_t *points, double *best)
{
  const json_t *pt;
  size_t k;
  int isl;

  for (isl = 0; isl < 64; isl++)
    best[isl] = -INFINITY;
  json_array_foreach(points, k, pt)
  {
    double y = num(pt, "score", NAN);
    isl = (int)num(pt, "island", 0);
    if (isl >= 0 && isl < 64 && isfinite(y) && !is_copy(pt))
      best[isl] = fmax(best[isl], y);
  }
}

/* Each island's best-so-far as a step line (drawn under the points).
 * 0 or ERR_NOMEM. */
static int island_lines(struct svg *s, const struct svg_plot *p,
                        const json_t *points)
{
  double best[64];
  size_t k, n = json_array_size(points), nline;
  double lastx[64], *line;
  const json_t *pt;
  int isl;

  /* Each improvement adds two points (a step), plus the final one. */
  line = malloc((4 * n + 4) * sizeof *line);
  if (!line)
    return ERR_NOMEM;
  for (isl = 0; isl < 64; isl++) {
    nline = 0;
    best[isl] = -INFINITY;
    json_array_foreach(points, k, pt)
    {
      double y = num(pt, "score", NAN);
      if ((int)num(pt, "island", 0) != isl || !isfinite(y) || is_copy(pt))
        continue;
      if (y > best[isl]) {
        if (nline) {
          line[2 * nline] = svg_plot_x(p, num(pt, "id", 0));
          line[2 * nline + 1] = line[2 * nline - 1];
          nline++;
        }
        best[isl] = y;
        line[2 * nline] = svg_plot_x(p, num(pt, "id", 0));
        line[2 * nline + 1] = svg_plot_y(p, y);
        nline++;
      }
      lastx[isl] = svg_plot_x(p, num(pt, "id", 0));
    }
    if (nline >= 1) {
      line[2 * nline] = lastx[isl];
      line[2 * nline + 1] = line[2 * nline - 1];
      svg_polyline(s, line, nline + 1, svg_palette(isl), 1.2);
    }
  }
  free(line);
  return 0;
}

/* One mark per evaluated candidate; failures in the band below. */
static void score_points(struct svg *s, const struct svg_plot *p,
                         const json_t *points)
{
  char title[160], attrs[48];
  const json_t *pt;
  size_t k;

  svg_group_open(s, "points");
  json_array_foreach(points, k, pt)
  {
    double id = num(pt, "id", 0), y = num(pt, "score", NAN);
    int island = (int)num(pt, "island", 0);
    snprintf(title, sizeof title, "#%.0f island %d %s %s score %s", id, island,
             str(pt, "edit_kind"), str(pt, "status"), isfinite(y) ? "" : "-");
    if (isfinite(y))
      snprintf(title + strlen(title), sizeof title - strlen(title), "%.4g", y);
    snprintf(attrs, sizeof attrs, "data-id=\"%.0f\"", id);
    if (is_copy(pt)) {
      snprintf(title, sizeof title,
               "#%.0f island %d: migrate copy of #%.0f (not a candidate)", id,
               island, num(pt, "parent_id", 0));
      if (isfinite(y))
        svg_circle(s, svg_plot_x(p, id), svg_plot_y(p, y), 3.5,
                   svg_palette(island), "pt migrate", title, attrs);
    } else if (isfinite(y))
      svg_circle(s, svg_plot_x(p, id), svg_plot_y(p, y), 4,
                 svg_palette(island), "pt ok", title, attrs);
    else
      svg_circle(s, svg_plot_x(p, id), p->py + p->ph + 44, 3.5, "#d62728",
                 "pt fail", title, attrs);
  }
  svg_group_close(s);
}

/* The plot's frame: x over the ids, y over the scores (from 0). */
static void score_frame(struct svg_plot *p, const json_t *points)
{
  const json_t *pt;
  int have = 0;
  size_t k;

  p->xmin = p->xmax = num(json_array_get(points, 0), "id", 0);
  json_array_foreach(points, k, pt)
  {
    double x = num(pt, "id", 0), y = num(pt, "score", NAN);
    p->xmin = fmin(p->xmin, x);
    p->xmax = fmax(p->xmax, x);
    if (isfinite(y)) {
      p->ymin = have ? fmin(p->ymin, y) : y;
      p->ymax = have ? fmax(p->ymax, y) : y;
      have = 1;
    }
  }
  if (!have)
    p->ymin = 0, p->ymax = 1;
  p->ymin = fmin(p->ymin, 0);
}

int charts_scores(const json_t *points, const json_t *bestp,
                  const char *best_label, struct buf *out, struct err *e)
{
  struct svg s;
  struct svg_plot p = {70, 44, 620, 236, 0, 0, 0, 0};
  struct legend_item it[65];
  double best[64], extra;
  size_t k, n = json_array_size(points);
  const json_t *pt;
  int nit, rows, nfail = 0;

  if (n == 0)
    return note(out, "No candidate has been evaluated yet.");
  score_frame(&p, points);
  /* the legend is laid out first: the plot moves down by its extra rows
   * (a legend wider than the figure wraps instead of being cut) */
  island_best(points, best);
  nit = legend_items(best, bestp, best_label, it);
  rows = legend_layout(it, nit, p.px + 10, 720 - 10);
  extra = (rows - 1) * LEGEND_ROW;
  p.py += extra;
  svg_begin(&s, SVG_CAP, 720, 340 + extra, "score over candidates per island");
  svg_axes(&s, &p, "candidate id", "score (higher is better)");
  json_array_foreach(points, k, pt) nfail += !isfinite(num(pt, "score", NAN));
  if (nfail) /* the lane of failed candidates only when there is one */
    svg_text(&s, p.px - 6, p.py + p.ph + 48, "end", "tick", "failed");
  if (island_lines(&s, &p, points)) {
    svg_release(&s);
    return err_set(e, ERR_NOMEM, "out of memory");
  }
  score_points(&s, &p, points);
  /* the run's best (the summary's: runs.best_program_id, which the noise
   * rule and the confirmation chose, not necessarily the highest mark) */
  if (bestp && isfinite(num(bestp, "score", NAN))) {
    double bid = num(bestp, "id", 0);
    json_array_foreach(points, k, pt)
    {
      if (num(pt, "id", 0) == bid)
        svg_circle(&s, svg_plot_x(&p, bid),
                   svg_plot_y(&p, num(bestp, "score", 0)), 7, "none",
                   "best-ring", NULL, NULL);
    }
  }
  legend_draw(&s, it, nit);
  return emit(&s, out, e);
}

struct tnode {
  long long id, parent, parent2;
  int gen, island;
  double x, y;
  const json_t *j;
};

static int by_gen_island(const void *a, const void *b)
{
  const struct tnode *x = a, *y = b;
  if (x->gen != y->gen)
    return x->gen < y->gen ? -1 : 1;
  if (x->island != y->island)
    return x->island < y->island ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static const struct tnode *find_node(const struct tnode *v, size_t n,
                                     long long id)
{
  size_t i;
  /* Linear: at most MAX_NODES, and the report is drawn once. */
  for (i = 0; i < n; i++)
    if (v[i].id == id)
      return &v[i];
  return NULL;
}

int charts_lineage(const json_t *programs, struct buf *out, struct err *e)
{
  struct tnode *v;
  size_t n = json_array_size(programs), i;
  int maxrow = 1, rows = 0, col = 0;
  struct svg s;
  char title[200], attrs[48], cls[32];
  const json_t *pj;

  if (n == 0)
    return note(out, "The run has no programs yet.");
  if (n > MAX_NODES)
    n = MAX_NODES;
  v = calloc(n, sizeof *v);
  if (!v)
    return err_set(e, ERR_NOMEM, "out of memory");
  for (i = 0; i < n; i++) {
    pj = json_array_get(programs, i);
    v[i].j = pj;
    v[i].id = (long long)num(pj, "id", 0);
    v[i].parent = (long long)num(pj, "parent_id", -1);
    v[i].parent2 = (long long)num(pj, "parent2_id", -1);
    v[i].gen = (int)num(pj, "generation", 0);
    v[i].island = (int)num(pj, "island", 0);
  }
  qsort(v, n, sizeof *v, by_gen_island);
  for (i = 0; i < n; i++) {
    if (i > 0 && v[i].gen != v[i - 1].gen) {
      rows++;
      col = 0;
    }
    v[i].x = 70 + col * 26;
    v[i].y = 50 + rows * 60;
    col++;
    if (col > maxrow)
      maxrow = col;
  }
  /* as wide as its legend too: a figure never cuts its own words */
  svg_begin(&s, SVG_CAP,
            fmax(fmax(100 + maxrow * 26, 560),
                 20 + svg_text_width(LINEAGE_LEGEND, 11)),
            80 + rows * 60, "lineage tree");
  /* what the marks mean, and a label per generation row */
  svg_text(&s, 10, 14, "start", "legend", "%s", LINEAGE_LEGEND);
  for (i = 0; i < n; i++)
    if (i == 0 || v[i].gen != v[i - 1].gen)
      svg_text(&s, 10, v[i].y + 4, "start", "label", "gen %d", v[i].gen);
  svg_group_open(&s, "edges");
  for (i = 0; i < n; i++) {
    const struct tnode *p1 = find_node(v, n, v[i].parent);
    const struct tnode *p2 = find_node(v, n, v[i].parent2);
    if (p1)
      svg_line(&s, p1->x, p1->y, v[i].x, v[i].y, "#999", 1, 0);
    if (p2)
      svg_line(&s, p2->x, p2->y, v[i].x, v[i].y, "#c77", 1, 1);
  }
  svg_group_close(&s);
  svg_group_open(&s, "nodes");
  for (i = 0; i < n; i++) {
    const char *stt = str(v[i].j, "status");
    double sc = num(v[i].j, "score", NAN);
    snprintf(title, sizeof title, "#%lld gen %d island %d %s %s%s%s", v[i].id,
             v[i].gen, v[i].island, str(v[i].j, "edit_kind"), stt,
             *str(v[i].j, "error") ? ": " : "", str(v[i].j, "error"));
    if (isfinite(sc))
      snprintf(title + strlen(title), sizeof title - strlen(title),
               " score %.4g", sc);
    snprintf(attrs, sizeof attrs, "data-id=\"%lld\"", v[i].id);
    /* The status becomes a class only when it is a known word. */
    snprintf(cls, sizeof cls, "node %s",
             !strcmp(stt, "ok") || !strcmp(stt, "failed") ||
                     !strcmp(stt, "rejected") || !strcmp(stt, "running") ||
                     !strcmp(stt, "pending")
                 ? stt
                 : "other");
    svg_circle(&s, v[i].x, v[i].y, 8, svg_palette(v[i].island), cls, title,
               attrs);
    svg_text(&s, v[i].x, v[i].y + 20, "middle", "nid", "%lld", v[i].id);
  }
  svg_group_close(&s);
  free(v);
  if (json_array_size(programs) > MAX_NODES)
    note(out, "Only the first 5000 programs are drawn.");
  return emit(&s, out, e);
}

int charts_directives(const json_t *by, struct buf *out, struct err *e)
{
  const char *dim;
  const json_t *vals, *r;
  size_t k, nrows = 0;
  double maxs = 0, y = 20;
  struct svg s;

  json_object_foreach((json_t *)by, dim, vals)
  {
    if (json_array_size(vals))
      nrows += json_array_size(vals) + 1;
    json_array_foreach(vals, k, r) maxs = fmax(maxs, num(r, "best", 0));
  }
  if (nrows == 0 || maxs <= 0)
    return note(out, "No candidate with a score yet.");
  svg_begin(&s, SVG_CAP, 820, 50 + nrows * 20, "score by directive value");
  /* legend: the two bars of every value */
  svg_rect(&s, 160, 6, 14, 10, "#9ecae1", "bar", NULL);
  svg_text(&s, 178, 15, "start", "legend", "best score with this value");
  svg_rect(&s, 360, 8, 14, 6, "#3182bd", "bar-mean", NULL);
  svg_text(&s, 378, 15, "start", "legend",
           "mean score of its correct candidates");
  y += 16;
  json_object_foreach((json_t *)by, dim, vals)
  {
    if (json_array_size(vals) == 0)
      continue;
    svg_text(&s, 10, y + 10, "start", "label", "%s", dim);
    y += 20;
    json_array_foreach(vals, k, r)
    {
      const json_t *val = json_object_get(r, "value");
      double best = num(r, "best", NAN), mean = num(r, "mean", NAN);
      char vs[80];
      if (json_is_integer(val))
        snprintf(vs, sizeof vs, "%lld", (long long)json_integer_value(val));
      else
        snprintf(vs, sizeof vs, "%s",
                 json_string_value(val) ? json_string_value(val) : "?");
      svg_text(&s, 150, y + 10, "end", "tick", "%s", vs);
      if (isfinite(best)) {
        svg_rect(&s, 160, y, 400 * best / maxs, 14, "#9ecae1", "bar", NULL);
        if (isfinite(mean))
          svg_rect(&s, 160, y + 4, 400 * fmax(mean, 0) / maxs, 6, "#3182bd",
                   "bar-mean", NULL);
      }
      if (isfinite(best))
        svg_text(&s, 570, y + 11, "start", "tick",
                 "best %.3g, mean %.3g, %.0f ok of %.0f", best, mean,
                 num(r, "n_ok", 0), num(r, "n", 0));
      else
        svg_text(&s, 570, y + 11, "start", "tick", "no score, 0 ok of %.0f",
                 num(r, "n", 0));
      y += 20;
    }
  }
  return emit(&s, out, e);
}

int charts_cost(const json_t *cost, double t0, struct buf *out, struct err *e)
{
  struct svg s;
  struct svg_plot p = {70, 20, 620, 200, 0, 0, 0, 0};
  size_t n = json_array_size(cost), k;
  const json_t *c;
  double *xy;
  int rc;

  if (n == 0)
    return note(out, "No LLM call was made in this run.");
  xy = malloc(2 * (n + 1) * sizeof *xy);
  if (!xy)
    return err_set(e, ERR_NOMEM, "out of memory");
  json_array_foreach(cost, k, c)
  {
    double t = (num(c, "t", t0) - t0) / 60.0;
    p.xmax = fmax(p.xmax, t);
    p.ymax = fmax(p.ymax, num(c, "cum_usd", 0));
  }
  svg_begin(&s, SVG_CAP, 720, 260, "LLM cost over time");
  svg_axes(&s, &p, "minutes since start", "cumulative LLM cost (USD)");
  xy[0] = svg_plot_x(&p, 0);
  xy[1] = svg_plot_y(&p, 0);
  json_array_foreach(cost, k, c)
  {
    xy[2 * k + 2] = svg_plot_x(&p, (num(c, "t", t0) - t0) / 60.0);
    xy[2 * k + 3] = svg_plot_y(&p, num(c, "cum_usd", 0));
  }
  svg_polyline(&s, xy, n + 1, "#2ca02c", 1.5);
  free(xy);
  rc = emit(&s, out, e);
  return rc;
}
