/* headline.c - the run's headline speedup; see headline.h. */
#include "headline.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *versus(const struct headline *h)
{
  return h->has_bar ? "the bar" : "the seed";
}

const char *headline_text(const struct headline *h, char *out, size_t n)
{
  if (h->is_seed && !h->has_bar)
    snprintf(out, n, "1x: the best is the seed");
  else if (!(h->speedup > 0))
    snprintf(out, n, "no speedup measured yet");
  else if (h->confirmed)
    snprintf(out, n,
             "%.3gx %s, 95%% CI [%.3g, %.3g], confirmed over %d round%s",
             h->speedup, versus(h), h->lo, h->hi, h->rounds,
             h->rounds == 1 ? "" : "s");
  else
    snprintf(out, n, "%.3gx %s, unconfirmed (the search's single measurement)",
             h->speedup, versus(h));
  return out;
}

const char *headline_short(const struct headline *h, char *out, size_t n)
{
  if ((h->is_seed && !h->has_bar) || !(h->speedup > 0))
    return headline_text(h, out, n);
  if (h->confirmed)
    snprintf(out, n, "%.3gx %s, confirmed [%.3g, %.3g]", h->speedup, versus(h),
             h->lo, h->hi);
  else
    snprintf(out, n, "%.3gx %s, unconfirmed", h->speedup, versus(h));
  return out;
}

static double num(const json_t *o, const char *k)
{
  const json_t *v = json_object_get(o, k);

  return json_is_number(v) ? json_number_value(v) : NAN;
}

static int is(const json_t *o, const char *k, const char *want)
{
  const char *v = json_string_value(json_object_get(o, k));

  return v && !strcmp(v, want);
}

void headline_pick(struct headline *h, const json_t *rows)
{
  const json_t *r;
  size_t i;

  json_array_foreach(rows, i, r)
  {
    double ratio = num(r, "ratio");
    if ((long long)num(r, "program_id") != h->program_id ||
        !is(r, "verdict", "best") ||
        !is(r, "versus", h->has_bar ? "bar" : "seed") || !(ratio > 0))
      continue;
    h->confirmed = 1; /* rows come by id: the newest wins */
    h->speedup = ratio;
    h->lo = num(r, "lo");
    h->hi = num(r, "hi");
    h->rounds = (int)num(r, "rounds");
  }
}

json_t *headline_json(const struct headline *h)
{
  char text[256];
  json_t *j;

  headline_text(h, text, sizeof(text));
  j = json_pack("{s:I, s:b, s:b, s:s, s:s}", "program_id",
                (json_int_t)h->program_id, "confirmed", h->confirmed,
                "is_seed", h->is_seed, "versus", h->has_bar ? "bar" : "seed",
                "text", text);
  if (!j)
    return NULL;
  json_object_set_new(j, "speedup",
                      h->speedup > 0 ? json_real(h->speedup) : json_null());
  json_object_set_new(j, "lo",
                      h->confirmed && isfinite(h->lo) ? json_real(h->lo)
                                                      : json_null());
  json_object_set_new(j, "hi",
                      h->confirmed && isfinite(h->hi) ? json_real(h->hi)
                                                      : json_null());
  json_object_set_new(j, "rounds", json_integer(h->rounds));
  return j;
}

void headline_parse(const json_t *j, struct headline *h)
{
  memset(h, 0, sizeof(*h));
  h->program_id = json_integer_value(json_object_get(j, "program_id"));
  h->speedup = json_number_value(json_object_get(j, "speedup"));
  h->lo = json_number_value(json_object_get(j, "lo"));
  h->hi = json_number_value(json_object_get(j, "hi"));
  h->rounds = (int)json_integer_value(json_object_get(j, "rounds"));
  h->confirmed = json_is_true(json_object_get(j, "confirmed"));
  h->has_bar = is(j, "versus", "bar");
  h->is_seed = json_is_true(json_object_get(j, "is_seed"));
}
