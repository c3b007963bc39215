// workloads/flash_attn_cp/wl_attn_plan.h - the FROZEN plan of flash_attn_cp:
// shape, zigzag/contiguous chunking, which (Q chunk, KV chunk) pairs a rank
// computes against a visiting shard, and the needle planting.  Plain C++
// with __host__ __device__ functions and no CUDA runtime calls, so the
// reference, every implementation and the host-only test
// (tests/cli/t1003-flash-attn-plan.sh) share one copy.
//
// Problem (workloads.md section 1): causal self-attention, bf16 in/out, B
// batches, HQ query heads, HKV KV heads (GQA), head dim D, scale 1/sqrt(D).
// The S tokens are cut into 2R chunks at floor(i*S/2R).  Rank r holds
// chunks r and 2R-1-r (zigzag, the default) or 2r and 2r+1 (CONTIG=1, the
// plain ring whose slowest rank does about 2x the average).  Its local rows
// are its first chunk's tokens then its second chunk's.
//
// Buffers of rank r (rows_r = its two chunks, M = the largest rows_r):
//   Q   INPUT  bf16 [B][M][HQ][D]        rows >= rows_r are never read
//   KV  INPUT  bf16 [B][2][M][HKV][D]    K then V per batch: one hop = one
//                                         contiguous transfer of the buffer
//   O   OUTPUT bf16 [B*rows_r][HQ][D]     (b, local row) flattened
//   LSE OUTPUT fp32 [HQ][B*rows_r]        natural log
// INPUT sizes use M so that every rank's inputs (and ring slots) have one
// size: rt_input_regen regenerates another rank's buffer at this rank's size.
#ifndef WL_ATTN_PLAN_H
#define WL_ATTN_PLAN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef __CUDACC__
#define __host__
#define __device__
#endif

#define WA_MAX_RANKS 64
#define WA_NEEDLES_PER_RANK 8   // needle query rows per rank and step
#define WA_NEEDLE_SCORE 10.0f   // needle score (natural units) above 0
#define WA_MASK_NONE 0
#define WA_MASK_CAUSAL 1

struct wa_shape {
  long long S, HQ, HKV, D, B;
  int contig;                             // 0 zigzag, 1 contiguous
  int R, me;
  long long cb[2 * WA_MAX_RANKS + 1];     // chunk c = [cb[c], cb[c+1])
  long long rows[WA_MAX_RANKS];           // local rows of each rank
  long long M;                            // max rows (INPUT stride)
};

// One (local Q chunk, visiting KV chunk) pair and its mask.
struct wa_pair {
  int qj, kj;  // 0 = the rank's first chunk, 1 = its second
  int mask;    // WA_MASK_NONE (every key before every query) or CAUSAL
};

// Global chunk index of local chunk J (0/1) of rank R_.
__host__ __device__ static inline int wa_chunk(const struct wa_shape *s, int r, int j) {
  if (s->contig) return 2 * r + j;
  return j == 0 ? r : 2 * s->R - 1 - r;
}

__host__ __device__ static inline long long wa_clen(const struct wa_shape *s, int c) {
  return s->cb[c + 1] - s->cb[c];
}

// Local row offset of local chunk J of rank R_.
__host__ __device__ static inline long long wa_loff(const struct wa_shape *s, int r, int j) {
  return j == 0 ? 0 : wa_clen(s, wa_chunk(s, r, 0));
}

// Ring: the rank whose KV rank R_ holds at step STEP (0 = its own).
__host__ __device__ static inline int wa_src(int R, int r, int step) {
  return ((r - step) % R + R) % R;
}

// The pairs rank R_ computes against the KV of rank SRC: a Q chunk sees a
// whole KV chunk that lies before it (mask NONE), its own chunk causally,
// nothing after it.  Fills OUT[0..3]; returns the count.
__host__ __device__ static inline int wa_pairs(const struct wa_shape *s, int r, int src,
                                               struct wa_pair out[4]) {
  int n = 0;
  for (int qj = 0; qj < 2; qj++)
    for (int kj = 0; kj < 2; kj++) {
      int qc = wa_chunk(s, r, qj), kc = wa_chunk(s, src, kj);
      if (kc > qc || wa_clen(s, qc) == 0 || wa_clen(s, kc) == 0) continue;
      out[n].qj = qj;
      out[n].kj = kj;
      out[n].mask = kc == qc ? WA_MASK_CAUSAL : WA_MASK_NONE;
      n++;
    }
  return n;
}

// Owner of global token POS: rank, local row.  Returns the chunk.
__host__ __device__ static inline int wa_owner(const struct wa_shape *s, long long pos, int *rank,
                                               long long *lrow) {
  int lo = 0, hi = 2 * s->R - 1;  // the chunk c with cb[c] <= pos < cb[c+1]
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (s->cb[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  int c = lo, r, j;
  if (s->contig) r = c / 2, j = c % 2;
  else if (c < s->R) r = c, j = 0;
  else r = 2 * s->R - 1 - c, j = 1;
  *rank = r;
  *lrow = wa_loff(s, r, j) + (pos - s->cb[c]);
  return c;
}

// Global token of local row LROW of rank R_.
__host__ __device__ static inline long long wa_pos(const struct wa_shape *s, int r,
                                                   long long lrow) {
  long long l0 = wa_clen(s, wa_chunk(s, r, 0));
  return lrow < l0 ? s->cb[wa_chunk(s, r, 0)] + lrow : s->cb[wa_chunk(s, r, 1)] + lrow - l0;
}

// Fill S from the problem values; ERR gets one line on failure (-1).
static inline int wa_shape_init(struct wa_shape *s, long long S, long long HQ, long long HKV,
                                long long D, long long B, long long contig, int R, int me,
                                char *err, size_t errn) {
  memset(s, 0, sizeof *s);
  s->S = S, s->HQ = HQ, s->HKV = HKV, s->D = D, s->B = B, s->contig = (int)contig;
  s->R = R, s->me = me;
  if (R < 1 || R > WA_MAX_RANKS || me < 0 || me >= R) {
    snprintf(err, errn, "flash_attn_cp supports 1..%d ranks (got rank %d of %d)", WA_MAX_RANKS,
             me, R);
    return -1;
  }
  if (!(D == 64 || D == 128) || HKV < 1 || HQ < HKV || HQ > 256 || HQ % HKV || B < 1 ||
      B > 64 || contig < 0 || contig > 1) {
    snprintf(err, errn,
             "flash_attn_cp needs D in {64,128}, 1 <= HKV <= HQ <= 256 with HQ %% HKV == 0, "
             "B in 1..64, CONTIG 0 or 1 (got D=%lld HQ=%lld HKV=%lld B=%lld CONTIG=%lld)",
             D, HQ, HKV, B, contig);
    return -1;
  }
  if (S < 2 * R || S > (1LL << 22)) {
    snprintf(err, errn, "flash_attn_cp needs 2R <= S <= 2^22 (every chunk non-empty; got S=%lld"
             " at R=%d)", S, R);
    return -1;
  }
  for (int c = 0; c <= 2 * R; c++) s->cb[c] = (long long)c * S / (2 * R);
  s->M = 0;
  for (int r = 0; r < R; r++) {
    s->rows[r] = wa_clen(s, wa_chunk(s, r, 0)) + wa_clen(s, wa_chunk(s, r, 1));
    if (s->rows[r] > s->M) s->M = s->rows[r];
  }
  double kv = 2.0 * B * 2 * s->M * HKV * D, q = 2.0 * B * s->M * HQ * D;
  if (kv > 8e9 || q > 8e9) {
    snprintf(err, errn, "flash_attn_cp: problem too large per rank (Q %.3g GB, KV %.3g GB)",
             q / 1e9, kv / 1e9);
    return -1;
  }
  return 0;
}

// ---- needles --------------------------------------------------------------
// For WA_NEEDLES_PER_RANK * R query rows per step (needle i lives on rank
// i % R, at a seeded local row, batch and head), every chunk the row can see
// gets one key (KV head of the row's head) whose K is beta*u and whose V is
// a seeded +-1 pattern of its own, where the row's Q is u (+-1 entries):
// the needle's score is WA_NEEDLE_SCORE, far above the rest (|score| ~ 0.6),
// so dropping or doubling any visible chunk changes the row's output by
// ~1/#chunks relative and its LSE by ~1/#chunks (absolute).  Keys of two
// needles may collide: planting is sequential in needle order, so the
// result is deterministic (the reference sees the same bits).

__host__ __device__ static inline uint64_t wa_mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct wa_needle {
  int rank, b, h, g;  // owner rank, batch, query head, its KV head
  long long lrow;     // local row on the owner
  long long pos;      // global token
  uint64_t key;       // seeds u and the V patterns
};

__host__ __device__ static inline int wa_nneedles(const struct wa_shape *s) {
  return WA_NEEDLES_PER_RANK * s->R;
}

// Needle I of the step keyed by (SEED, STEP).
__host__ __device__ static inline struct wa_needle wa_needle_get(const struct wa_shape *s,
                                                                 uint64_t seed, uint64_t step,
                                                                 int i) {
  struct wa_needle n;
  uint64_t h = wa_mix(wa_mix(seed ^ 0xA77E7ull) ^ wa_mix(step * 0x9E37ull + (uint64_t)i));
  n.rank = i % s->R;
  n.lrow = (long long)(h % (uint64_t)s->rows[n.rank]);
  n.b = (int)((h >> 24) % (uint64_t)s->B);
  n.h = (int)((h >> 32) % (uint64_t)s->HQ);
  n.g = (int)(n.h / (s->HQ / s->HKV));
  n.pos = wa_pos(s, n.rank, n.lrow);
  n.key = wa_mix(h ^ 0x5EEDull);
  return n;
}

// The key position needle N plants in chunk C (C must be visible: cb[C] <=
// N.pos), uniform over the chunk's keys the row can see.
__host__ __device__ static inline long long wa_needle_kpos(const struct wa_shape *s,
                                                           const struct wa_needle *n, int c) {
  long long hi = s->cb[c + 1] < n->pos + 1 ? s->cb[c + 1] : n->pos + 1;
  uint64_t h = wa_mix(n->key ^ (uint64_t)(c + 1) * 0xC0FFEEull);
  return s->cb[c] + (long long)(h % (uint64_t)(hi - s->cb[c]));
}

// Element d of the needle's query (+-1), of its key in any chunk
// (beta*u_d, beta = score/sqrt(D) as bf16-exact as it gets) and of its value
// in chunk C (+-1, its own pattern per chunk).
__host__ __device__ static inline float wa_needle_q(const struct wa_needle *n, int d) {
  return (wa_mix(n->key ^ (uint64_t)d) >> 63) ? 1.0f : -1.0f;
}
__host__ __device__ static inline float wa_needle_k(const struct wa_shape *s,
                                                    const struct wa_needle *n, int d) {
  return wa_needle_q(n, d) * (WA_NEEDLE_SCORE / sqrtf((float)s->D));
}
__host__ __device__ static inline float wa_needle_v(const struct wa_needle *n, int c, int d) {
  return (wa_mix(n->key ^ ((uint64_t)(c + 7) << 40) ^ (uint64_t)d) >> 63) ? 1.0f : -1.0f;
}

// Element offsets (in elements of bf16) of Q row (b, lrow, head h) and of
// K / V row (b, lrow, KV head g) in this rank's INPUT buffers.
__host__ __device__ static inline long long wa_q_off(const struct wa_shape *s, int b,
                                                     long long lrow, int h) {
  return (((long long)b * s->M + lrow) * s->HQ + h) * s->D;
}
__host__ __device__ static inline long long wa_k_off(const struct wa_shape *s, int b,
                                                     long long lrow, int g) {
  return (((long long)b * 2 * s->M + lrow) * s->HKV + g) * s->D;
}
__host__ __device__ static inline long long wa_v_off(const struct wa_shape *s, int b,
                                                     long long lrow, int g) {
  return wa_k_off(s, b, lrow, g) + s->M * s->HKV * s->D;
}

// Plant the needles of (SEED, STEP) into rank RANK's buffer: IS_Q selects
// Q or KV.  SET(off, value) stores one element.  Called by one thread per
// element index D of a row (d in [d0, D) step dstep), in needle order, so
// the last needle to touch an element wins on every device and the host.
#ifdef __CUDACC__
#pragma nv_exec_check_disable
#endif
template <class Set>
__host__ __device__ static inline void wa_plant(const struct wa_shape *s, uint64_t seed,
                                                uint64_t step, int rank, int is_q, int d0,
                                                int dstep, Set set) {
  for (int i = 0; i < wa_nneedles(s); i++) {
    struct wa_needle n = wa_needle_get(s, seed, step, i);
    if (is_q) {
      if (n.rank != rank) continue;
      for (int d = d0; d < s->D; d += dstep) set(wa_q_off(s, n.b, n.lrow, n.h) + d,
                                                 wa_needle_q(&n, d));
      continue;
    }
    for (int j = 0; j < 2; j++) {
      int c = wa_chunk(s, rank, j);
      if (s->cb[c] > n.pos) continue;  // the row cannot see this chunk
      long long kp = wa_needle_kpos(s, &n, c);
      long long lrow = wa_loff(s, rank, j) + (kp - s->cb[c]);
      for (int d = d0; d < s->D; d += dstep) {
        set(wa_k_off(s, n.b, lrow, n.g) + d, wa_needle_k(s, &n, d));
        set(wa_v_off(s, n.b, lrow, n.g) + d, wa_needle_v(&n, c, d));
      }
    }
  }
}

// fp64 attention of one query (global position POS, head H, batch B_) over
// keys [0, POS] (or keys of chunks other than SKIP, -1 none; or chunk
// DOUBLE counted twice, -1 none: for the host test of the needles).  QF(d),
// KF(pos, g, d) and VF(pos, g, d) read the inputs as doubles.  Writes
// O[0..D) and returns the LSE (natural log).
template <class QF, class KF, class VF>
static inline double wa_attn_row64(const struct wa_shape *s, long long pos, int h, QF qf, KF kf,
                                   VF vf, double *o, int skip, int twice) {
  const int g = (int)(h / (s->HQ / s->HKV));
  const double scale = 1.0 / sqrt((double)s->D);
  double mx = -INFINITY, l = 0;
  for (int d = 0; d < s->D; d++) o[d] = 0;
  for (int pass = 0; pass < 2; pass++)
    for (long long k = 0; k <= pos; k++) {
      int c = 0;
      while (s->cb[c + 1] <= k) c++;
      if (c == skip) continue;
      double sc = 0;
      for (int d = 0; d < s->D; d++) sc += qf(d) * kf(k, g, d);
      sc *= scale;
      if (pass == 0) {
        if (sc > mx) mx = sc;
        continue;
      }
      double w = exp(sc - mx) * (c == twice ? 2 : 1);
      l += w;
      for (int d = 0; d < s->D; d++) o[d] += w * vf(k, g, d);
    }
  for (int d = 0; d < s->D; d++) o[d] /= l;
  return mx + log(l);
}

#endif  // WL_ATTN_PLAN_H
