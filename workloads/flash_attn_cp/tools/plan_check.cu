// workloads/flash_attn_cp/tools/plan_check.cu - host-only checks of the
// frozen plan (wl_attn_plan.h); runs on the CPU, no GPU (t1003 builds it
// with nvcc and runs it).  Prints one "ok"/"FAIL" line per check, exits 1
// on any failure.
//  1. Zigzag work balance: every rank's pairs over all R steps sum to
//     exactly 2R chunk^2 units (a diagonal = 1/2) when chunks are equal,
//     and within one row-length of 2R for awkward S; contiguous is
//     unbalanced (its last rank does ~2x the average).
//  2. Coverage: every visible (query, key) token pair is computed exactly
//     once over (rank, step, pair, mask), no invisible pair ever.
//  3. Owner/position maps are inverse; chunk boundaries are floor(i*S/2R).
//  4. Needles: keys land in visible chunks of their row; planting is
//     deterministic; dropping or doubling any visible chunk moves a needle
//     row's output by > 2e-2 relative, or its LSE by > 1e-3, in fp64.
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include "wl_attn_plan.h"

static int fails = 0;
static void check(int ok, const char *what, const char *detail) {
  printf("%s %s%s%s\n", ok ? "ok" : "FAIL", what, detail[0] ? ": " : "", detail);
  fails += !ok;
}

static int init(struct wa_shape *s, long long S, long long HQ, long long HKV, long long D,
                long long B, int contig, int R, int me) {
  char err[256];
  if (wa_shape_init(s, S, HQ, HKV, D, B, contig, R, me, err, sizeof err) != 0) {
    check(0, "shape", err);
    return -1;
  }
  return 0;
}

// Work units and coverage of (S, R, layout).
static void plan_case(long long S, int R, int contig) {
  char what[128], det[256] = "";
  struct wa_shape s;
  if (init(&s, S, 4, 1, 64, 1, contig, R, 0)) return;
  snprintf(what, sizeof what, "S=%lld R=%d %s", S, R, contig ? "contiguous" : "zigzag");
  // boundaries
  int okb = 1;
  for (int c = 0; c <= 2 * R; c++) okb &= s.cb[c] == (long long)c * S / (2 * R);
  snprintf(det, sizeof det, "%s", okb ? "" : "a boundary is not floor(i*S/2R)");
  char w2[160];
  snprintf(w2, sizeof w2, "%s: chunk boundaries", what);
  check(okb, w2, det);
  // coverage (token level) and work (token pairs, diagonal pairs count the visible half)
  std::vector<unsigned char> cov((size_t)S * S, 0);
  std::vector<double> work(R, 0);
  int bad_mask = 0;
  for (int r = 0; r < R; r++)
    for (int k = 0; k < R; k++) {
      int src = wa_src(R, r, k);
      struct wa_pair pr[4];
      int np = wa_pairs(&s, r, src, pr);
      for (int i = 0; i < np; i++) {
        int qc = wa_chunk(&s, r, pr[i].qj), kc = wa_chunk(&s, src, pr[i].kj);
        if ((pr[i].mask == WA_MASK_CAUSAL) != (qc == kc)) bad_mask++;
        for (long long q = s.cb[qc]; q < s.cb[qc + 1]; q++)
          for (long long kk = s.cb[kc]; kk < s.cb[kc + 1]; kk++) {
            if (pr[i].mask == WA_MASK_CAUSAL && kk > q) continue;
            cov[(size_t)q * S + kk]++;
            work[r] += 1;
          }
      }
    }
  long long twice = 0, missing = 0, invisible = 0;
  for (long long q = 0; q < S; q++)
    for (long long k = 0; k < S; k++) {
      unsigned char c = cov[(size_t)q * S + k];
      if (k <= q && c == 0) missing++;
      if (k <= q && c > 1) twice++;
      if (k > q && c) invisible++;
    }
  snprintf(det, sizeof det, "%lld missing, %lld more than once, %lld invisible, %d wrong masks",
           missing, twice, invisible, bad_mask);
  snprintf(w2, sizeof w2, "%s: every visible pair exactly once", what);
  check(!missing && !twice && !invisible && !bad_mask, w2, det);
  // balance: zigzag = 2R units of chunk^2 (diagonal chunk^2/2 + chunk/2 tokens)
  double c = (double)S / (2 * R), lo = 1e300, hi = 0;
  for (int r = 0; r < R; r++) lo = work[r] < lo ? work[r] : lo, hi = work[r] > hi ? work[r] : hi;
  double unit = c * c, want = 2.0 * R * unit + 2 * c / 2;  // + the two diagonals' halves
  if (!contig) {
    int exact = S % (2 * R) == 0;
    double tol = exact ? 0.5 : 4.0 * R * (c + 1);
    snprintf(det, sizeof det, "per-rank token pairs %.0f..%.0f, 2R chunk^2 (+diagonals) = %.1f",
             lo, hi, want);
    snprintf(w2, sizeof w2, "%s: every rank does 2R chunk^2 units", what);
    check(lo >= want - tol && hi <= want + tol, w2, det);
  } else if (R > 1) {
    double mean = 0;
    for (int r = 0; r < R; r++) mean += work[r] / R;
    snprintf(det, sizeof det, "slowest/mean = %.2f", hi / mean);
    snprintf(w2, sizeof w2, "%s: contiguous is unbalanced (slowest > 1.5x mean)", what);
    check(hi / mean > 1.5 || R < 3, w2, det);
  }
  // owner/pos inverse
  int inv = 1;
  for (long long p = 0; p < S; p++) {
    int r;
    long long l;
    wa_owner(&s, p, &r, &l);
    inv &= l >= 0 && l < s.rows[r] && wa_pos(&s, r, l) == p;
  }
  snprintf(w2, sizeof w2, "%s: wa_owner and wa_pos are inverse", what);
  check(inv, w2, "");
}

static float bf16_round(float f) {  // round to nearest even bf16, back to float
  unsigned u;
  memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  u &= 0xFFFF0000u;
  memcpy(&f, &u, 4);
  return f;
}

// Needles at (S, R): plant into random inputs of every rank (host copy of
// what the reference's kernel does), then check every needle row in fp64.
static void needle_case(long long S, int R, long long HQ, long long HKV, long long D) {
  struct wa_shape s;
  if (init(&s, S, HQ, HKV, D, 1, 0, R, 0)) return;
  char what[128], det[256] = "";
  snprintf(what, sizeof what, "needles S=%lld R=%d HQ=%lld HKV=%lld D=%lld", S, R, HQ, HKV, D);
  const size_t nq = (size_t)s.M * HQ * D, nkv = (size_t)2 * s.M * HKV * D;
  std::vector<std::vector<float>> Q(R), KV(R), KV2(R);
  uint64_t h = 12345;
  for (int r = 0; r < R; r++) {
    Q[r].resize(nq), KV[r].resize(nkv);
    for (auto &x : Q[r]) h = wa_mix(h), x = bf16_round((float)((int64_t)(h >> 40) - (1 << 23)) / (1 << 23));
    for (auto &x : KV[r]) h = wa_mix(h), x = bf16_round((float)((int64_t)(h >> 40) - (1 << 23)) / (1 << 23));
  }
  const uint64_t seed = 777, step = 3;
  for (int r = 0; r < R; r++) KV2[r] = KV[r];  // the unplanted base
  for (int r = 0; r < R; r++) {
    for (int d0 = 0; d0 < D; d0++) {  // one "thread" per d, as the kernel
      wa_plant(&s, seed, step, r, 1, d0, (int)D,
               [&](long long off, float v) { Q[r][off] = bf16_round(v); });
      wa_plant(&s, seed, step, r, 0, d0, (int)D,
               [&](long long off, float v) { KV[r][off] = bf16_round(v); });
    }
  }
  // determinism: the base planted with the "threads" in the opposite order
  // gives the same bits (each element is written by one d only)
  int same = 1;
  for (int r = 0; r < R; r++) {
    for (int d0 = (int)D - 1; d0 >= 0; d0--)
      wa_plant(&s, seed, step, r, 0, d0, (int)D,
               [&](long long off, float v) { KV2[r][off] = bf16_round(v); });
    same &= KV2[r] == KV[r];
  }
  // key positions are visible and inside their chunk
  int vis = 1;
  for (int i = 0; i < wa_nneedles(&s); i++) {
    struct wa_needle n = wa_needle_get(&s, seed, step, i);
    for (int c = 0; c < 2 * R; c++) {
      if (s.cb[c] > n.pos) continue;
      long long kp = wa_needle_kpos(&s, &n, c);
      vis &= kp >= s.cb[c] && kp < s.cb[c + 1] && kp <= n.pos;
    }
  }
  char w2[200];
  snprintf(w2, sizeof w2, "%s: needle keys lie in visible chunks; planting is deterministic", what);
  check(vis && same, w2, "");
  auto kf = [&](long long p, int g, int d) {
    int r;
    long long l;
    wa_owner(&s, p, &r, &l);
    return (double)KV[r][wa_k_off(&s, 0, l, g) + d];
  };
  auto vf = [&](long long p, int g, int d) {
    int r;
    long long l;
    wa_owner(&s, p, &r, &l);
    return (double)KV[r][wa_v_off(&s, 0, l, g) + d];
  };
  int rows_ok = 0, rows = 0, worst_c = -1;
  double worst = 1e300;
  std::vector<double> o(D), o2(D);
  for (int i = 0; i < wa_nneedles(&s); i++) {
    struct wa_needle n = wa_needle_get(&s, seed, step, i);
    // a later needle may have overwritten this one's query or keys: skip those
    int intact = 1;
    for (int j = i + 1; j < wa_nneedles(&s); j++) {
      struct wa_needle m = wa_needle_get(&s, seed, step, j);
      if (m.g == n.g) intact = 0;  // conservative: shared KV head may collide
      if (m.rank == n.rank && m.lrow == n.lrow && m.h == n.h) intact = 0;
    }
    if (!intact) continue;
    rows++;
    auto qf = [&](int d) { return (double)Q[n.rank][wa_q_off(&s, 0, n.lrow, n.h) + d]; };
    double l = wa_attn_row64(&s, n.pos, n.h, qf, kf, vf, o.data(), -1, -1);
    int row_ok = 1;
    for (int c = 0; c < 2 * R && c <= 2 * R; c++) {
      if (s.cb[c] > n.pos) break;
      for (int mode = 0; mode < 2; mode++) {  // 0: chunk dropped, 1: doubled
        double l2 = wa_attn_row64(&s, n.pos, n.h, qf, kf, vf, o2.data(), mode ? -1 : c,
                                  mode ? c : -1);
        double e2 = 0, r2 = 0;
        for (int d = 0; d < D; d++) e2 += (o2[d] - o[d]) * (o2[d] - o[d]), r2 += o[d] * o[d];
        double rel = sqrt(e2 / r2), dl = fabs(l2 - l);
        double margin = rel / 2e-2 > dl / 1e-3 ? rel / 2e-2 : dl / 1e-3;
        if (margin < worst) worst = margin, worst_c = c;
        if (!(rel > 2e-2 || dl > 1e-3)) row_ok = 0;
      }
    }
    rows_ok += row_ok;
  }
  snprintf(det, sizeof det, "%d of %d intact needle rows detect every dropped/doubled chunk "
           "(weakest margin %.1fx at chunk %d)", rows_ok, rows, worst, worst_c);
  snprintf(w2, sizeof w2, "%s: a dropped or doubled chunk moves the row", what);
  check(rows > 0 && rows_ok == rows, w2, det);
}

int main(void) {
  plan_case(1000, 4, 0);
  plan_case(48, 2, 0);
  plan_case(1001, 4, 0);
  plan_case(64, 8, 0);
  plan_case(37, 3, 0);
  plan_case(512, 1, 0);
  plan_case(512, 4, 1);
  plan_case(1000, 8, 1);
  needle_case(48, 2, 4, 1, 64);
  needle_case(1000, 4, 8, 2, 64);
  needle_case(256, 8, 8, 8, 128);
  printf("%d failed\n", fails);
  return fails ? 1 : 0;
}
