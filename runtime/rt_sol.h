/* runtime/rt_sol.h - the speed-of-light bound (plain C; the runtime and
 * tests/unit/test_sol.c include it).  docs/contracts.md section 4e.
 *
 * A workload's trusted reference declares the minimal work of one step of
 * one rank (wl_work, runtime.h); a step cannot take less than
 *   max(flops / peak, hbm_bytes / hbm_bw, link_bytes / link_bw)
 * on the GPU it ran on.  Peaks are upper bounds of the hardware: the
 * datasheet value of a known model (dense bf16/fp8, HBM, NVLink per
 * direction), raised to what the device's maximal clocks would give when
 * that is higher, so an honest kernel never trips the bound.  Unknown
 * models use the derived values and a generous link bandwidth. */
#ifndef CUCO_RT_SOL_H
#define CUCO_RT_SOL_H

#include <stdio.h>
#include <string.h>

#include "runtime.h"

struct rt_peaks {
  double bf16_flops, fp8_flops; /* FLOP/s, dense */
  double hbm_Bps;               /* bytes/s */
  double link_Bps;              /* bytes/s per direction per GPU */
  char source[96];              /* where the numbers came from */
};

/* What cudaDeviceProp / attributes say (0 where unknown). */
struct rt_devinfo {
  char name[256];
  int cc_major, sms;
  double max_clock_khz, mem_clock_khz, bus_bits;
};

struct rt_bound {
  double ms, compute_ms, hbm_ms, link_ms;
  const char *limit; /* "compute", "HBM", "link" or "none" */
};

/* Dense bf16 FLOP per clock per SM of compute capability MAJOR (generous:
 * the largest of the generation). */
static inline double rt_sol_flops_per_clk(int major) {
  return major >= 10 ? 8192.0 : major == 9 ? 4096.0 : major == 8 ? 2048.0 : 1024.0;
}

/* The peaks of device D: the datasheet table by model name, each raised to
 * the value derived from D's maximal clocks when that is higher.  Returns 1
 * for a known model, 0 for derived-only. */
static inline int rt_sol_peaks(const struct rt_devinfo *d, struct rt_peaks *p) {
  double dflops = d->sms * d->max_clock_khz * 1e3 * rt_sol_flops_per_clk(d->cc_major);
  double dhbm = 2.0 * d->mem_clock_khz * 1e3 * d->bus_bits / 8.0;
  int known = 1;
  memset(p, 0, sizeof *p);
  if (strstr(d->name, "H200")) {
    p->bf16_flops = 989e12, p->fp8_flops = 1979e12, p->hbm_Bps = 4.8e12, p->link_Bps = 450e9;
    snprintf(p->source, sizeof p->source, "datasheet H200 SXM");
  } else if (strstr(d->name, "H100") && (strstr(d->name, "HBM3") || strstr(d->name, "SXM"))) {
    p->bf16_flops = 989e12, p->fp8_flops = 1979e12, p->hbm_Bps = 3.35e12, p->link_Bps = 450e9;
    snprintf(p->source, sizeof p->source, "datasheet H100 SXM");
  } else {
    known = 0;
    p->link_Bps = 1800e9; /* NVLink 5 per direction: no device reports it */
    snprintf(p->source, sizeof p->source,
             "derived from cudaDeviceProp (unknown model); link assumed 1800 GB/s");
  }
  if (dflops > p->bf16_flops) p->bf16_flops = dflops;
  if (2 * dflops > p->fp8_flops) p->fp8_flops = 2 * dflops;
  if (dhbm > p->hbm_Bps) p->hbm_Bps = dhbm;
  return known;
}

/* The bound of work W at peaks P (a peak <= 0 leaves its term out; link
 * bytes count only with more than one rank). */
static inline void rt_sol_bound(const struct wl_work *w, const struct rt_peaks *p, int nranks,
                                struct rt_bound *b) {
  double peak = w->fp8 ? p->fp8_flops : p->bf16_flops;
  memset(b, 0, sizeof *b);
  b->compute_ms = peak > 0 ? w->flops / peak * 1e3 : 0;
  b->hbm_ms = p->hbm_Bps > 0 ? w->hbm_bytes / p->hbm_Bps * 1e3 : 0;
  b->link_ms = nranks > 1 && p->link_Bps > 0 ? w->link_bytes / p->link_Bps * 1e3 : 0;
  b->ms = b->compute_ms, b->limit = "compute";
  if (b->hbm_ms > b->ms) b->ms = b->hbm_ms, b->limit = "HBM";
  if (b->link_ms > b->ms) b->ms = b->link_ms, b->limit = "link";
  if (!(b->ms > 0)) b->ms = 0, b->limit = "none";
}

#endif
