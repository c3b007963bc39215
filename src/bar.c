/* bar.c - the per-size bar over a workload's bar baselines (bar.h). */
#include "bar.h"

#include <math.h>
#include <string.h>

double bar_metrics_median(const json_t *m, const char *size)
{
  const json_t *s = json_object_get(json_object_get(m, "bench"), size);
  const json_t *t = json_object_get(s, "timing");
  const json_t *v = json_object_get(t ? t : s, "median_ms");
  double d = json_is_number(v) ? json_number_value(v) : NAN;

  return isfinite(d) && d > 0 ? d : NAN;
}

/* Index of NAME in NAMES, -1 when absent. */
static int find(const char *const *names, int n, const char *name)
{
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name))
      return i;
  return -1;
}

/* The row of one size: the winner's timing keys, "bar", "baselines". */
static json_t *size_row(const char *const *names, const json_t *const *metrics,
                        int n, int win, const char *size)
{
  static const char *const keys[] = {"median_ms",  "p10_ms",     "p90_ms",
                                     "ci95_lo_ms", "ci95_hi_ms", "mean_ms"};
  const json_t *s =
      json_object_get(json_object_get(metrics[win], "bench"), size);
  const json_t *src =
      json_object_get(s, "timing") ? json_object_get(s, "timing") : s;
  json_t *row = json_object(), *all = json_object();
  size_t k;
  int i;

  if (!row || !all)
    goto fail;
  for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
    if (json_is_number(json_object_get(src, keys[k])) &&
        json_object_set(row, keys[k], json_object_get(src, keys[k])))
      goto fail;
  for (i = 0; i < n; i++) {
    double m = bar_metrics_median(metrics[i], size);
    if (isfinite(m) &&
        json_object_set_new(all, names[i], json_pack("{s:f}", "median_ms", m)))
      goto fail;
  }
  if (json_object_set_new(row, "bar", json_string(names[win])))
    goto fail;
  if (json_object_set_new(row, "baselines", all)) /* takes ALL either way */
    goto fail_row;
  return row;
fail:
  json_decref(all);
fail_row:
  json_decref(row);
  return NULL;
}

json_t *bar_build(const char *const *names, const json_t *const *metrics,
                  int n, const char (*bar)[128], int nbar)
{
  json_t *out = json_object();
  const char *size;
  const json_t *v;
  int b, i;

  if (!out)
    return NULL;
  /* The sizes: every bench size any bar baseline timed. */
  for (b = 0; b < nbar; b++) {
    i = find(names, n, bar[b]);
    if (i < 0 || !metrics[i])
      continue;
    json_object_foreach(json_object_get(metrics[i], "bench"), size, v)
    {
      int win = -1, c;
      double best = INFINITY;
      json_t *row;
      if (json_object_get(out, size))
        continue;
      for (c = 0; c < nbar; c++) {
        int j = find(names, n, bar[c]);
        double m = j >= 0 ? bar_metrics_median(metrics[j], size) : NAN;
        if (isfinite(m) && m < best) {
          best = m;
          win = j;
        }
      }
      if (win < 0)
        continue;
      row = size_row(names, metrics, n, win, size);
      if (!row || json_object_set_new(out, size, row)) {
        json_decref(out);
        return NULL;
      }
    }
  }
  return out;
}

const char *bar_name(const json_t *baseline, const char *size)
{
  return json_string_value(
      json_object_get(json_object_get(baseline, size), "bar"));
}

double bar_mean(const json_t *baseline)
{
  const char *k;
  const json_t *v;
  double logsum = 0;
  int n = 0;

  json_object_foreach((json_t *)baseline, k, v)
  {
    const json_t *m = json_object_get(v, "median_ms");
    double d = json_is_number(m) ? json_number_value(m) : 0;
    if (isfinite(d) && d > 0) {
      logsum += log(d);
      n++;
    }
  }
  return n ? exp(logsum / n) : -1;
}
