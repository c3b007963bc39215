// runtime/rt_bench.h - what the in-process runtime (rt_main.cu) and the
// judge of a separate worker (rt_split.cu) share of a bench: the order
// statistics, the stopping rule, the secret odds of a verified timed step,
// the speed-of-light bound and RESULT.json's timing section.  Runtime only.
#ifndef CUCO_RT_BENCH_H
#define CUCO_RT_BENCH_H

#include "rt_internal.cuh"
#include "rt_sol.h"

#define RT_MAX_SAMPLES 2000
// Host clock: events must not claim much less than the host saw (the
// judge of a separate worker adds its own allowance, rt_split.cu).
#define RT_HC_ABS_MS 0.25
#define RT_HC_REL 0.10
// the extra plain steps a verify takes before a host-clock excess is believed
#define RT_HC_MORE 8
#define RT_MAX_CHECKS 48  // check records of one rank and size
// No rule ends a bench before this many timed steps (rt_main.cu says why).
#define RT_CI_MIN_STEPS 32

struct rt_timing {
  int steps;
  double median, p10, p90, lo, hi, mean, host_median;
  double samples[RT_MAX_SAMPLES];
  const char *stop;  // why the timed steps ended: min_time, ci, max_samples, failed
  // speed-of-light (docs/contracts.md 4e): have = the reference declared work
  int have_bound;
  struct wl_work work;
  struct rt_peaks peaks;
  struct rt_bound bound;
  char device[256];
  // A separate worker (docs/contracts.md 4f): the judge's own clock per
  // step, what of it went to the inputs and output hashes (calibrated in
  // the judge), and the median of (judge - calibration - worker events).
  int judged, judge_clock_used;  // used: the figure is the judge's clock
  double judge_median, judge_cal, judge_gap, judge_gap_max;
};

int rt_cmp_double(const void *a, const void *b);
// Linear-interpolated percentile P of the N sorted values V.
double rt_pct(const double *v, int n, double p);
// Order-statistics 95% interval of the median of N sorted values.
void rt_median_ci(const double *sorted, int n, double *lo, double *hi);
// Is the median of the first N step times known to +-REL (95%)?
int rt_ci_tight(const float *ev, int n, double rel);
// Timed step N (from 0) is verified with odds 1 in rt_verify_odds(N).
unsigned rt_verify_odds(int n);
// Fill TM's bound from the reference's declared work (wl_work) for CTX's
// problem on CTX's device; TM->have_bound = 0 without a declaration.
void rt_sol_fill(struct wl_ctx *ctx, struct rt_timing *tm);
// RESULT.json's ",\n \"timing\": ..." and bound sections of TM (bench).
void rt_timing_write(FILE *f, const struct rt_opts *o, const struct rt_timing *tm);
// rt_result_write's TAIL for a bench: ARG is a struct rt_timing_arg
// (TM NULL: no timing section).
struct rt_timing_arg {
  const struct rt_opts *o;
  const struct rt_timing *tm;
};
void rt_timing_tail(FILE *f, const void *arg);
// --pace-ms: hold the host until P ms after the previous step started.
void rt_pace(const struct rt_opts *o, double *last);

#endif  // CUCO_RT_BENCH_H
