/* report.c - `cuco report`: HTML (inline SVG, no script) or Markdown. */
#include "report.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bar.h"
#include "charts.h"
#include "cmd.h"
#include "file.h"
#include "headline.h"
#include "html.h"
#include "rundb.h"

#define REPORT_CAP   (64u * 1024 * 1024)
#define MACHINE_ROWS 40

static const char CSS[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;"
    "padding:3px 8px;text-align:left;vertical-align:top}"
    "pre{background:#f7f7f7;padding:8px;overflow:auto;max-height:40em}"
    ".diff .add{background:#e6ffec}.diff .del{background:#ffebe9}"
    ".diff .hunk{color:#6f42c1}.scroll{overflow:auto;max-width:100%}"
    ".node.failed,.node.rejected{stroke:#d62728;stroke-width:2;"
    "fill-opacity:.25}.node.running,.node.pending{fill-opacity:.3;"
    "stroke:#555;stroke-dasharray:2 2}.tick{font-size:10px}"
    ".label{font-size:12px}.note{color:#666}"
    ".nid{font-size:8px;fill:#555}.legend{font-size:11px;fill:#333}"
    ".pt.migrate{fill:#fff;stroke:#777;stroke-width:1.2}"
    ".best-ring{fill:none;stroke:#111;stroke-width:1.8}";

static double num(const json_t *o, const char *k)
{
  const json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str(const json_t *o, const char *k)
{
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

/* "best #12: 14.6x the bar, 95% CI [13.9, 15.3], confirmed over 3
 * rounds" (headline.h) or "none yet": the run's one speedup. */
static const char *headline_line(const json_t *run, char *out, size_t n)
{
  struct headline h;
  char t[256];

  headline_parse(json_object_get(run, "headline"), &h);
  if (h.program_id <= 0)
    snprintf(out, n, "none yet");
  else
    snprintf(out, n, "best #%lld: %s", h.program_id,
             headline_text(&h, t, sizeof t));
  return out;
}

/* A size's median from metrics or baseline JSON.  Shapes seen: the
 * contract's {"SIZE": {"median_ms"}}, RESULT.json's {"SIZE": {"timing":
 * {"median_ms"}}}, and cuco evolve's {"bench": {"SIZE": {...}}}. */
static double size_ms(const json_t *m, const char *size)
{
  const json_t *s = json_object_get(m, size);
  double v = num(s, "median_ms");

  if (!isfinite(v))
    v = num(json_object_get(s, "timing"), "median_ms");
  if (!isfinite(v) && json_is_object(json_object_get(m, "bench")))
    v = size_ms(json_object_get(m, "bench"), size);
  return v;
}

/* The object whose keys name the timed sizes: the baseline's, else the
 * seed's bench metrics. */
static const json_t *size_keys(const json_t *baseline, const json_t *sm)
{
  if (json_is_object(baseline) && json_object_size(baseline))
    return baseline;
  if (json_is_object(json_object_get(sm, "bench")))
    return json_object_get(sm, "bench");
  return json_is_object(sm) ? sm : NULL;
}

static void fmt_time(char *out, size_t n, double t)
{
  time_t tt = (time_t)t;
  struct tm tm;

  if (!isfinite(t) || t <= 0 || !gmtime_r(&tt, &tm))
    snprintf(out, n, "-");
  else
    strftime(out, n, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static void fmt_dur(char *out, size_t n, double s)
{
  if (!isfinite(s))
    snprintf(out, n, "-");
  else if (s < 120)
    snprintf(out, n, "%.0f s", s);
  else if (s < 7200)
    snprintf(out, n, "%.1f min", s / 60);
  else
    snprintf(out, n, "%.2f h", s / 3600);
}

/* One summary row; the value is escaped (html) or written as is (md). */
static void row(struct buf *o, enum report_format f, const char *k,
                const char *v)
{
  if (f == REPORT_MD) {
    buf_printf(o, "| %s | ", k);
    /* A '|' or newline would break the Markdown table. */
    for (; *v; v++) {
      if (*v == '|')
        buf_puts(o, "\\|");
      else
        buf_putc(o, *v == '\n' ? ' ' : *v);
    }
    buf_puts(o, " |\n");
    return;
  }
  buf_printf(o, "<tr><th>%s</th><td>", k);
  html_escape(o, v);
  buf_puts(o, "</td></tr>\n");
}

/* The string at o.a.b; NULL when absent or empty. */
static const char *msub(const json_t *o, const char *a, const char *b)
{
  const json_t *v = json_object_get(json_object_get(o, a), b);

  return json_is_string(v) && *json_string_value(v) ? json_string_value(v)
                                                    : NULL;
}

/* A string at o.a (when o.a is a string) or o.a.b; NULL when absent. */
static const char *mstr(const json_t *o, const char *a, const char *b)
{
  const json_t *v = json_object_get(o, a);

  if (!json_is_string(v))
    v = json_object_get(v, b);
  return json_is_string(v) && *json_string_value(v) ? json_string_value(v)
                                                    : NULL;
}

/* The machine in four rows (GPU, CUDA, NCCL, host), none blank: cuco
 * doctor's description, or the older shapes of it (strings for cuda and
 * nccl, gpus.count and gpus.model). */
static void machine_rows(struct buf *o, enum report_format f, const json_t *m,
                         int *left)
{
  const json_t *gp = json_object_get(m, "gpus");
  const json_t *gl = json_object_get(gp, "list");
  const json_t *g = json_array_get(gl, 0);
  const char *name = g ? mstr(g, "name", NULL) : mstr(gp, "model", NULL);
  long long count =
      gl ? (long long)json_array_size(gl)
         : (long long)json_integer_value(json_object_get(gp, "count"));
  const char *cores = NULL;
  char v[512], cb[32];

  (void)left;
  if (!json_is_object(m))
    return;
  if (count > 0)
    snprintf(v, sizeof v, "%lld x %s%s%s", count, name ? name : "?",
             mstr(gp, "driver", NULL) ? ", driver " : "",
             mstr(gp, "driver", NULL) ? mstr(gp, "driver", NULL) : "");
  else
    snprintf(v, sizeof v, "none found");
  row(o, f, "GPU", v);
  snprintf(v, sizeof v, "%s%s%s",
           mstr(m, "cuda", "nvcc_version") ? mstr(m, "cuda", "nvcc_version")
                                           : "unknown",
           msub(m, "cuda", "arch") ? ", " : "",
           msub(m, "cuda", "arch") ? msub(m, "cuda", "arch") : "");
  row(o, f, "CUDA", v);
  snprintf(
      v, sizeof v, "%s%s%s",
      mstr(m, "nccl", "header_version") ? mstr(m, "nccl", "header_version")
                                        : "unknown",
      msub(m, "nccl", "library_version") ? ", library " : "",
      msub(m, "nccl", "library_version") ? msub(m, "nccl", "library_version")
                                         : "");
  row(o, f, "NCCL", v);
  if (json_integer_value(
          json_object_get(json_object_get(m, "cpu"), "cores"))) {
    snprintf(cb, sizeof cb, " (%lld cores)",
             (long long)json_integer_value(
                 json_object_get(json_object_get(m, "cpu"), "cores")));
    cores = cb;
  }
  snprintf(v, sizeof v, "%s%s%s%s",
           mstr(m, "cpu", "model") ? mstr(m, "cpu", "model") : "unknown CPU",
           cores ? cores : "", mstr(m, "os", "name") ? ", " : "",
           mstr(m, "os", "name") ? mstr(m, "os", "name") : "");
  row(o, f, "host", v);
}

/* Text from the database into a table cell: escaped for HTML, '|' and
 * newlines defused for Markdown. */
static void cell_text(struct buf *o, enum report_format f, const char *v)
{
  if (f == REPORT_HTML) {
    html_escape(o, v);
    return;
  }
  for (; *v; v++) {
    if (*v == '|')
      buf_puts(o, "\\|");
    else
      buf_putc(o, *v == '\n' ? ' ' : *v);
  }
}

/* The bar cell of SIZE: which baseline is the bar and the other measured
 * baselines' medians; a database from before the bar stored the first
 * baseline only. */
static void bar_cell(struct buf *o, enum report_format f,
                     const json_t *baseline, const char *size)
{
  const char *name = bar_name(baseline, size), *k;
  const json_t *all =
      json_object_get(json_object_get(baseline, size), "baselines");
  const json_t *v;
  int n = 0;

  if (!name) {
    buf_puts(o, json_is_object(json_object_get(baseline, size))
                    ? "the first baseline"
                    : "-");
    return;
  }
  cell_text(o, f, name);
  json_object_foreach((json_t *)all, k, v)
  {
    double m = num(v, "median_ms");
    if (!strcmp(k, name) || !isfinite(m))
      continue;
    buf_puts(o, n++ ? "; " : " (");
    cell_text(o, f, k);
    buf_printf(o, " %.4g ms", m);
  }
  if (n)
    buf_puts(o, ")");
}

/* The header of the per-size table; without a bar (a workload without
 * baselines) it has no bar columns and speedups are over the seed. */
static void sizes_head(struct buf *o, enum report_format f, int have_base)
{
  if (f == REPORT_MD && have_base)
    buf_puts(o, "\n| size | bar ms | bar baseline | seed ms (speedup) | "
                "best ms (speedup) |\n|---|---|---|---|---|\n");
  else if (f == REPORT_MD)
    buf_puts(o, "\n| size | seed ms | best ms (speedup over the seed) |\n"
                "|---|---|---|\n");
  else if (have_base)
    buf_puts(o, "<table id=\"sizes\"><tr><th>size</th><th>bar ms</th>"
                "<th>bar baseline</th><th>seed ms (speedup)</th><th>best ms "
                "(speedup)</th></tr>\n");
  else
    buf_puts(o, "<table id=\"sizes\"><tr><th>size</th><th>seed ms</th>"
                "<th>best ms (speedup over the seed)</th></tr>\n");
}

/* One row of the per-size table: CELL is bar ms, seed ms, best ms; the
 * bar's cells only with a baseline. */
static void sizes_row(struct buf *o, enum report_format f,
                      const json_t *baseline, const char *size,
                      char (*cell)[64])
{
  int md = f == REPORT_MD;

  if (md) {
    buf_puts(o, "| ");
    cell_text(o, f, size);
  } else {
    buf_puts(o, "<tr><td>");
    html_escape(o, size);
  }
  if (baseline) {
    buf_printf(o, md ? " | %s | " : "</td><td>%s</td><td>", cell[0]);
    bar_cell(o, f, baseline, size);
  }
  buf_printf(o, md ? " | %s | %s |\n" : "</td><td>%s</td><td>%s</td></tr>\n",
             cell[1], cell[2]);
}

/* The per-size table: the bar (which baseline, its median) when the
 * workload has one, seed and best median with speedups against the bar
 * (else over the seed).  Its speedups are the search's measurements: the
 * note under it says so and points at the headline. */
static void sizes_table(struct buf *o, enum report_format f,
                        const json_t *baseline, const json_t *seed,
                        const json_t *best)
{
  const char *size;
  const json_t *v;
  const json_t *sm = json_object_get(seed, "metrics");
  const json_t *bm = json_object_get(best, "metrics");
  const json_t *keys = size_keys(baseline, sm);
  int have_base = json_is_object(baseline) && json_object_size(baseline);
  char cell[3][64];

  sizes_head(o, f, have_base);
  json_object_foreach((json_t *)keys, size, v)
  {
    double s = size_ms(sm, size), x = size_ms(bm, size);
    double b = have_base ? size_ms(baseline, size) : NAN;
    double ref = have_base ? b : s;
    if (!json_is_object(v))
      continue;
    snprintf(cell[0], sizeof cell[0], isfinite(b) ? "%.4g" : "-", b);
    if (isfinite(s) && isfinite(b))
      snprintf(cell[1], sizeof cell[1], "%.4g (%.2fx)", s, b / s);
    else if (isfinite(s))
      snprintf(cell[1], sizeof cell[1], "%.4g", s);
    else
      snprintf(cell[1], sizeof cell[1], "-");
    if (isfinite(x) && isfinite(ref))
      snprintf(cell[2], sizeof cell[2], "%.4g (%.2fx)", x, ref / x);
    else
      snprintf(cell[2], sizeof cell[2], "-");
    sizes_row(o, f, have_base ? baseline : NULL, size, cell);
  }
  buf_puts(o, f == REPORT_HTML ? "</table>\n<p class=\"note\">" : "\n");
  buf_puts(o, "Per-size speedups are the search's single measurements "
              "(unconfirmed); the speedup above is the run's headline.");
  buf_puts(o, f == REPORT_HTML ? "</p>\n" : "\n");
}

/* "+-27.3% > 5%, measured again (kept +-2.9%)" of a noise_watch object. */
static int watch_text(char *out, size_t n, const json_t *w)
{
  double kept = num(w, "kept_rel"), thr = num(w, "threshold");

  return snprintf(
      out, n, "+-%.1f%% > %.0f%%, measured again (kept +-%.1f%%%s)",
      100 * num(w, "first_rel"), 100 * thr, 100 * kept,
      kept > thr ? ", still beyond: its speedups are uncertain" : "");
}

/* The noise watch's row: the bar per size, the seed, how many candidates
 * were measured again (docs/evolve.md, "Confirmation and noise"). */
static void noise_row(struct buf *o, enum report_format f, const json_t *run,
                      const json_t *seed)
{
  const json_t *b = json_object_get(run, "baseline"), *v, *w;
  const char *k;
  char t[1024] = "";
  size_t len = 0;
  double nr = num(json_object_get(run, "counts"), "noise_repeated");

  json_object_foreach((json_t *)b, k, v)
  {
    w = json_object_get(v, "noise_watch");
    if (!w || len >= sizeof t)
      continue;
    len += (size_t)snprintf(t + len, sizeof t - len,
                            "%sbar at %s (%s): ", len ? "; " : "", k,
                            str(v, "bar"));
    if (len < sizeof t)
      len += (size_t)watch_text(t + len, sizeof t - len, w);
  }
  w = json_object_get(json_object_get(seed, "metrics"), "noise_watch");
  if (w && len < sizeof t) {
    len +=
        (size_t)snprintf(t + len, sizeof t - len,
                         "%sseed #%.0f: ", len ? "; " : "", num(seed, "id"));
    if (len < sizeof t)
      len += (size_t)watch_text(t + len, sizeof t - len, w);
  }
  if (nr > 0 && len < sizeof t)
    len += (size_t)snprintf(t + len, sizeof t - len,
                            "%s%.0f candidate%s (the seed included) measured "
                            "again",
                            len ? "; " : "", nr, nr == 1 ? "" : "s");
  if (len)
    row(o, f, "noise watch", t);
}

static void summary(struct buf *o, enum report_format f, const json_t *run,
                    const json_t *seed, const json_t *best)
{
  const json_t *c = json_object_get(run, "counts");
  const json_t *l = json_object_get(run, "llm_totals");
  const json_t *cfg = json_object_get(run, "config");
  char v[512], t1[64], t2[64];
  int left = MACHINE_ROWS;

  if (f == REPORT_HTML)
    buf_puts(o, "<section id=\"summary\"><h2>Summary</h2><table>\n");
  else
    buf_puts(o, "## Summary\n\n| | |\n|---|---|\n");
  row(o, f, "speedup", headline_line(run, v, sizeof v));
  row(o, f, "workload", str(run, "workload"));
  row(o, f, "workload folder", str(run, "workload_dir"));
  row(o, f, "status", str(run, "status"));
  fmt_time(t1, sizeof t1, num(run, "started_at"));
  fmt_dur(t2, sizeof t2, num(run, "wall_s"));
  snprintf(v, sizeof v, "%s, wall time %s", t1, t2);
  row(o, f, "started", v);
  if (json_is_integer(json_object_get(cfg, "seed"))) {
    snprintf(v, sizeof v, "%lld",
             (long long)json_integer_value(json_object_get(cfg, "seed")));
    row(o, f, "random seed", v);
  }
  snprintf(v, sizeof v,
           "%.0f: %.0f ok, %.0f failed, %.0f rejected, %.0f interrupted, "
           "%.0f pending, %.0f running",
           num(c, "total"), fmax(num(c, "ok"), 0), fmax(num(c, "failed"), 0),
           fmax(num(c, "rejected"), 0), fmax(num(c, "interrupted"), 0),
           fmax(num(c, "pending"), 0), fmax(num(c, "running"), 0));
  if (num(c, "migrated") > 0) {
    size_t vl = strlen(v);
    snprintf(v + vl, sizeof v - vl,
             "; besides, %.0f migrate cop%s (a program copied to another "
             "island, not evaluated again)",
             num(c, "migrated"), num(c, "migrated") == 1 ? "y" : "ies");
  }
  if (num(c, "duplicates") > 0) {
    size_t vl = strlen(v);
    snprintf(v + vl, sizeof v - vl,
             "; besides, %.0f duplicate%s (a proposal that compiles to a "
             "program already evaluated: answered from the database, not "
             "evaluated)",
             num(c, "duplicates"), num(c, "duplicates") == 1 ? "" : "s");
  }
  row(o, f, "candidates", v);
  noise_row(o, f, run, seed);
  snprintf(v, sizeof v, "#%.0f", num(seed, "id"));
  row(o, f, "seed program", seed ? v : "-");
  if (best) {
    snprintf(v, sizeof v,
             "#%.0f (island %.0f, generation %.0f, %s), "
             "score %.4g (= 1000 / geomean median ms)",
             num(best, "id"), num(best, "island"), num(best, "generation"),
             str(best, "edit_kind"), num(best, "score"));
    row(o, f, "best program", v);
  } else {
    row(o, f, "best program", "none yet");
  }
  {
    double budget = num(run, "budget_usd");
    char bs[48];
    if (budget > 0)
      snprintf(bs, sizeof bs, " of a $%.2f budget", budget);
    else
      snprintf(bs, sizeof bs, " (no budget set)");
    snprintf(v, sizeof v,
             "%s; %.0f calls (%.0f failed), %.0f tokens in, "
             "%.0f out, $%.4f spent%s",
             *str(run, "llm") ? str(run, "llm") : "none", num(l, "calls"),
             fmax(num(l, "failed"), 0), num(l, "tokens_in"),
             num(l, "tokens_out"), num(l, "cost_usd"), bs);
  }
  row(o, f, "LLM", v);
  machine_rows(o, f, json_object_get(run, "machine"), &left);
  if (f == REPORT_HTML)
    buf_puts(o, "</table>\n<h3>Times per size (median)</h3>\n");
  else
    buf_puts(o, "\n### Times per size (median)\n");
  sizes_table(o, f, json_object_get(run, "baseline"), seed, best);
  if (f == REPORT_HTML)
    buf_puts(o, "</section>\n");
}

static void diff_html(struct buf *o, const char *d)
{
  buf_puts(o, "<pre class=\"diff\">");
  while (*d) {
    size_t n = strcspn(d, "\n");
    const char *cls = *d == '+' && strncmp(d, "+++", 3)   ? "add"
                      : *d == '-' && strncmp(d, "---", 3) ? "del"
                      : *d == '@'                         ? "hunk"
                                                          : NULL;
    if (cls)
      buf_printf(o, "<span class=\"%s\">", cls);
    html_escape_n(o, d, n);
    buf_puts(o, cls ? "</span>\n" : "\n");
    d += n + (d[n] == '\n');
  }
  buf_puts(o, "</pre>\n");
}

static int is_failure(const json_t *p)
{
  return !strcmp(str(p, "status"), "failed") ||
         !strcmp(str(p, "status"), "rejected");
}

/* Failed and rejected candidates with their errors (the newest 50); no
 * section at all when none failed. */
static void failures(struct buf *o, const json_t *programs)
{
  size_t n = json_array_size(programs), i, shown = 0, nfail = 0;

  for (i = 0; i < n; i++)
    nfail += is_failure(json_array_get(programs, i));
  if (!nfail)
    return;
  buf_puts(o, "<section id=\"failures\"><h2>Failures</h2><table>"
              "<tr><th>id</th><th>island</th><th>kind</th><th>stage</th>"
              "<th>error</th></tr>\n");
  for (i = n; i-- > 0 && shown < 50;) {
    const json_t *p = json_array_get(programs, i);
    if (!is_failure(p))
      continue;
    buf_printf(o, "<tr><td>%.0f</td><td>%.0f</td><td>", num(p, "id"),
               num(p, "island"));
    html_escape(o, str(p, "edit_kind"));
    buf_puts(o, "</td><td>");
    html_escape(o, str(p, "stage"));
    buf_puts(o, "</td><td>");
    html_escape(o, str(p, "error"));
    buf_puts(o, "</td></tr>\n");
    shown++;
  }
  buf_puts(o, "</table></section>\n");
}

/* A figure that cannot be drawn (values the SVG cannot hold, such as an
 * infinite range) becomes a note; only running out of memory or of the
 * output cap stops the report. */
static int figure(int rc, struct buf *o, struct err *e)
{
  if (rc != ERR_PARSE)
    return rc;
  buf_puts(o, "<p class=\"note\">Figure not drawn: ");
  html_escape(o, e->msg);
  buf_puts(o, "</p>\n");
  return buf_error(o);
}

static int html_page(struct rundb *db, const json_t *run, const json_t *seed,
                     const json_t *best, struct buf *o, struct err *e)
{
  struct rundb_filter all = {-1, NULL, NULL, 0, 0, 0};
  json_t *programs = NULL, *plot = NULL;
  struct headline h;
  char *diff = NULL, line[320], label[160];
  int rc = ERR_DB;

  programs = rundb_programs(db, &all, e);
  plot = programs ? rundb_plot(db, e) : NULL;
  if (!plot)
    goto out;
  buf_puts(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
              "charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-"
              "Policy\" content=\"default-src 'none'; style-src "
              "'unsafe-inline'; img-src data:\">\n<title>cuco report: ");
  html_escape(o, str(run, "workload"));
  buf_printf(o,
             "</title>\n<style>%s</style></head><body>\n<h1>cuco run: ", CSS);
  html_escape(o, str(run, "workload"));
  buf_puts(o, "</h1>\n<p id=\"headline\"><strong>Speedup:</strong> ");
  html_escape(o, headline_line(run, line, sizeof line));
  buf_puts(o, "</p>\n");
  summary(o, REPORT_HTML, run, seed, best);
  buf_puts(o, "<section id=\"scores\"><h2>Score over candidates per "
              "island</h2>\n<div class=\"scroll\">");
  headline_parse(json_object_get(run, "headline"), &h);
  if ((rc =
           figure(charts_scores(json_object_get(plot, "points"), best,
                                headline_short(&h, label, sizeof label), o, e),
                  o, e)))
    goto out;
  buf_puts(o, "</div></section>\n<section id=\"lineage\"><h2>Lineage</h2>"
              "<p class=\"note\">One row per generation; dashed edges lead "
              "to a second parent (crossover); hover a node for its "
              "details.</p>\n<div class=\"scroll\">");
  if ((rc = figure(charts_lineage(programs, o, e), o, e)))
    goto out;
  buf_puts(o, "</div></section>\n<section id=\"directives\"><h2>Score by "
              "directive value</h2>\n");
  if ((rc = figure(
           charts_directives(json_object_get(plot, "by_directive"), o, e), o,
           e)))
    goto out;
  buf_puts(o, "</section>\n<section id=\"cost\"><h2>LLM cost over time</h2>"
              "\n");
  if ((rc = figure(charts_cost(json_object_get(plot, "cost"),
                               num(run, "started_at"), o, e),
                   o, e)))
    goto out;
  buf_puts(o, "</section>\n<section id=\"best-diff\"><h2>Best kernel "
              "against the seed</h2>\n");
  if (best && seed) {
    diff = rundb_diff(db, (long long)num(seed, "id"),
                      (long long)num(best, "id"), e);
    if (!diff) {
      rc = ERR_DB;
      goto out;
    }
    if (*diff)
      diff_html(o, diff);
    else
      buf_puts(o, "<p class=\"note\">The best program is the seed.</p>\n");
  } else {
    buf_puts(o, "<p class=\"note\">No best program yet.</p>\n");
  }
  buf_puts(o, "</section>\n");
  failures(o, programs);
  buf_puts(o, "</body></html>\n");
  rc = buf_error(o);
  if (rc)
    err_set(e, rc, "report: over its size cap");
out:
  free(diff);
  json_decref(programs);
  json_decref(plot);
  return rc;
}

static int md_page(struct rundb *db, const json_t *run, const json_t *seed,
                   const json_t *best, struct buf *o, struct err *e)
{
  char *diff = NULL, line[320];

  buf_printf(o, "# cuco run: %s\n\n**Speedup:** %s\n\n", str(run, "workload"),
             headline_line(run, line, sizeof line));
  summary(o, REPORT_MD, run, seed, best);
  if (best && seed) {
    diff = rundb_diff(db, (long long)num(seed, "id"),
                      (long long)num(best, "id"), e);
    if (!diff)
      return ERR_DB;
    buf_printf(o, "\n## Best kernel against the seed\n\n```diff\n%s```\n",
               diff);
    free(diff);
  }
  return buf_error(o) ? err_set(e, buf_error(o), "report: over its cap") : 0;
}

/* The program with id k of the run (NULL when k is not a positive id). */
static json_t *program_or_null(struct rundb *db, const json_t *run,
                               const char *k, struct err *e, int *rc)
{
  double id = num(run, k);
  json_t *p;

  if (!(id > 0))
    return NULL;
  p = rundb_program(db, (long long)id, e);
  if (!p && e->code != ERR_NOTFOUND)
    *rc = e->code;
  return p;
}

int report_render(struct rundb *db, enum report_format fmt, struct buf *out,
                  struct err *e)
{
  json_t *run, *seed = NULL, *best = NULL;
  int rc = 0;

  run = rundb_run(db, e);
  if (!run)
    return e->code ? e->code : ERR_DB;
  seed = program_or_null(db, run, "seed_program_id", e, &rc);
  best = rc ? NULL : program_or_null(db, run, "best_program_id", e, &rc);
  if (!rc)
    rc = fmt == REPORT_MD ? md_page(db, run, seed, best, out, e)
                          : html_page(db, run, seed, best, out, e);
  json_decref(run);
  json_decref(seed);
  json_decref(best);
  return rc;
}

int cmd_report(struct cmd_ctx *ctx, int argc, char **argv)
{
  static const struct option opts[] = {
      {"help", no_argument, NULL, 'h'},
      {"output", required_argument, NULL, 'o'},
      {"format", required_argument, NULL, 'f'},
      {NULL, 0, NULL, 0}};
  const char *outpath = NULL;
  enum report_format fmt = REPORT_HTML;
  struct buf out = BUF_INIT(REPORT_CAP);
  struct err e = {0, ""};
  struct rundb *db;
  int opt, rc = CMD_FAIL;

  while ((opt = getopt_long(argc, argv, "ho:f:", opts, NULL)) != -1) {
    switch (opt) {
    case 'h':
      return cmd_usage(ctx, 1);
    case 'o':
      outpath = optarg;
      break;
    case 'f':
      if (!strcmp(optarg, "html"))
        fmt = REPORT_HTML;
      else if (!strcmp(optarg, "md"))
        fmt = REPORT_MD;
      else
        return cmd_bad_usage(ctx, "--format must be html or md, not '%s'",
                             optarg);
      break;
    default:
      return cmd_usage(ctx, 0);
    }
  }
  if (optind != argc - 1)
    return cmd_bad_usage(ctx, "give exactly one run database");
  db = rundb_open(argv[optind], &e);
  if (!db)
    goto fail;
  if (report_render(db, fmt, &out, &e))
    goto fail;
  if (outpath) {
    if (file_write(outpath, buf_str(&out), out.len, &e))
      goto fail;
  } else if (fwrite(buf_str(&out), 1, out.len, stdout) != out.len) {
    err_set(&e, ERR_IO, "stdout: write failed");
    goto fail;
  }
  rc = CMD_OK;
  goto done;
fail:
  fprintf(stderr, "cuco report: %s\n", e.msg);
done:
  rundb_close(db);
  buf_release(&out);
  return rc;
}
