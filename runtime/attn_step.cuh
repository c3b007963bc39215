// runtime/attn_step.cuh - cuco's frozen tensor-core attention step (v1).
//
// FROZEN: the flash_attn_cp baselines and candidates include and call this
// header; they never edit it.  The contract (layouts, the fp32 state, the
// calls) is runtime/attn_step.h; this file is its implementation.
//
// Version 1, FA2-style: one CTA of 8 warps (ATTN_STEP_THREADS = 256) folds a
// 128-row Q tile (ATTN_Q_TILE) of one query head against the KV range in
// 64-key blocks (ATTN_KV_TILE).  Each warp owns 16 query rows.  Per key block:
//   S = Q K^T      mma.sync m16n8k16 bf16 -> fp32, Q and K by ldmatrix
//   online softmax in registers, in log2 units (scale * log2(e) folded into
//                  one FFMA before ex2.approx)
//   acc += P V     P from the S registers (bf16), V by ldmatrix.trans
// K/V blocks are double-buffered with cp.async (the copy of block j+1 runs
// while block j is computed); shared memory rows are XOR-swizzled so every
// ldmatrix is bank-conflict free.  The fp32 state (acc, m, l) of the tile's
// rows is read from global memory at the tile start (acc and l only for
// rows with m > -inf: a fresh state costs no acc read) and written back at
// the end, so consecutive calls fold exactly like one call over the union of
// their key ranges.
//
// State rules (what makes folding and merging exact):
//   m_new = max(m_old, rowmax(S));  alpha = 2^(m_old - m_new) (1 when equal,
//   which covers -inf == -inf);  p = 2^(s - m_new) with m_new := 0 while it is
//   still -inf (a masked score is -inf, so p = 0, never NaN);
//   l = alpha * l + sum p;  acc = alpha * acc + P V.
//   A query row that sees no key in a call (causal: its position is before
//   every key; or kv_rows == 0) is neither read nor written: its state is
//   left untouched bit for bit.
//
// Causal skipping: keys are contiguous positions kv_pos0 + j, so the keys a
// query row sees are a prefix [0, lim] of the range.  A tile only visits the
// key blocks up to the largest lim among its rows; a tile whose rows see no
// key does nothing (no state read or write).  Blocks entirely below the
// tile's smallest lim skip the per-element mask.
//
// Requirements (attn_step_check returns cudaErrorInvalidValue otherwise, and
// nothing is launched): d in {64, 128}; hq, hkv >= 1; hq % hkv == 0;
// hq <= 65535; q, k, v, state.acc, state.m, state.l non-null; q, k, v 16-byte
// aligned (cp.async moves 16 bytes), acc 8-byte aligned; q_rows, kv_rows,
// state_row0 >= 0; q_rows <= 65535 * ATTN_Q_TILE (grid.y); state_row0 +
// q_rows <= state.rows; |q_pos0|, |kv_pos0| <= 2^60; scale finite and >= 0
// (0 means 1/sqrt(d)); mask one of the two kinds.
//
// Device entry for persistent kernels (placement=per_tile):
//
//   __device__ void attn_step_tile(const attn_step_args &a, int q_tile,
//                                  int head, void *smem);
//
// Called by ALL ATTN_STEP_THREADS threads of a CTA launched with
// blockDim.x == ATTN_STEP_THREADS (1-D), with `smem` pointing at >=
// attn_step_smem_bytes(a.shape.d) bytes of 16-byte aligned dynamic shared
// memory.  It folds query rows [q_tile*ATTN_Q_TILE, +ATTN_Q_TILE) ∩
// [0, q_rows) of query head `head` (0 <= head < hq) exactly as attn_step does;
// arguments must have passed attn_step_check on the host.  It contains
// __syncthreads() (so every thread must call it, with the same arguments);
// it either returns before touching `smem` (a tile with nothing to do) or
// ends with a barrier, so the caller may reuse `smem` right after it
// returns.  Registers: at d=128 the tile needs about 190 per thread to run
// without spilling, so give the persistent kernel
// __launch_bounds__(ATTN_STEP_THREADS, 1) (with (..., 2) ptxas caps it at
// 128 and spills a little; d=64 fits 128).
//
// Concurrency: one call writes only the state rows [state_row0, +q_rows) of
// every head; two calls on different streams must not touch the same state
// rows at once.  Q, K, V are only read.  Inside one persistent kernel, a
// (tile, head) folded again by the SAME CTA needs nothing more (the tile
// ends with a barrier); folded by ANOTHER CTA, the caller must order the two
// (a release/acquire flag with a fence, as with any global data).  Each
// thread reads and writes its own rows' acc fragments; m and l are written
// by one lane of each quad and read by all four.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "attn_step.h"

#define ATTN_STEP_THREADS 256
#define ATTN_Q_TILE 128
#define ATTN_KV_TILE 64
// CTAs per SM that attn_step's d=128 kernel is compiled for (launch bounds):
// 1 = up to 255 registers (ptxas uses about 200, no spill); 2 = 128
// registers (a small spill, twice the warps per SM).  Which is faster is for
// tests/gpu/attn_step.sh to measure (it builds both); d=64 always uses 2.
#ifndef ATTN_STEP_MIN_BLOCKS_D128
#define ATTN_STEP_MIN_BLOCKS_D128 1
#endif

// ---------------------------------------------------------------------------
// Primitives.  On the device: PTX (the same instructions as gemm_tile.cuh's
// v1).  A host program that defines CUCO_ATTN_EMU before including this
// header gets the tile code as host functions whose primitives call the
// cuco_attn_emu:: functions it defines (tests/cli/attn_step_emu.cu: 256
// fibers per CTA, warp-collective ldmatrix/mma/shuffle by the PTX fragment
// layouts), so the kernel's own index math runs on a CPU.  Without
// CUCO_ATTN_EMU nothing of this exists on the host.

#ifdef CUCO_ATTN_EMU
#define CUCO_ATTN_FN __host__ __device__ __forceinline__
namespace cuco_attn_emu {
int tid();
void sync_cta();
float shfl_xor(float v, int mask);
void cp_async16(void *dst, const void *src, int bytes);
void cp_async_commit();
void cp_async_wait(int n);
void ldmatrix_x4(unsigned (&r)[4], const void *p, bool trans);
void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1);
}  // namespace cuco_attn_emu
#else
#define CUCO_ATTN_FN __device__ __forceinline__
#endif

#if defined(__CUDA_ARCH__) || !defined(CUCO_ATTN_EMU)
#define CUCO_ATTN_DEV 1  // this pass compiles the PTX side
#else
#define CUCO_ATTN_DEV 0
#endif

namespace cuco_attn {

constexpr int kThreads = ATTN_STEP_THREADS;
constexpr int kBM = ATTN_Q_TILE;   // query rows per CTA (8 warps x 16)
constexpr int kBN = ATTN_KV_TILE;  // keys per block
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

CUCO_ATTN_FN int tid() {
#if CUCO_ATTN_DEV
  return threadIdx.x;
#else
  return cuco_attn_emu::tid();
#endif
}
CUCO_ATTN_FN void sync_cta() {
#if CUCO_ATTN_DEV
  __syncthreads();
#else
  cuco_attn_emu::sync_cta();
#endif
}
CUCO_ATTN_FN float shfl_xor(float v, int mask) {
#if CUCO_ATTN_DEV
  return __shfl_xor_sync(0xffffffffu, v, mask);
#else
  return cuco_attn_emu::shfl_xor(v, mask);
#endif
}

#if CUCO_ATTN_DEV
__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
#endif

// 16-byte async copy to shared memory; `bytes` (0 or 16 here) are read from
// src, the rest of the 16 are zero-filled.  With bytes == 0 nothing is read.
// The destination is element `off` of the shared array at `base` (the
// 32-bit shared address of base is loop-invariant, the offset is not).
CUCO_ATTN_FN void cp_async16(__nv_bfloat16 *base, int off, const void *src, int bytes) {
#if CUCO_ATTN_DEV
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(base) + off * 2),
               "l"(src), "r"(bytes)
               : "memory");
#else
  cuco_attn_emu::cp_async16(base + off, src, bytes);
#endif
}
CUCO_ATTN_FN void cp_async_commit() {
#if CUCO_ATTN_DEV
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#else
  cuco_attn_emu::cp_async_commit();
#endif
}
template <int N>
CUCO_ATTN_FN void cp_async_wait() {
#if CUCO_ATTN_DEV
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#else
  cuco_attn_emu::cp_async_wait(N);
#endif
}

// Four 8x8 b16 matrices from element `off` of the shared array at `base`
// (each lane gives the address of one row).
CUCO_ATTN_FN void ldmatrix_x4(unsigned (&r)[4], const __nv_bfloat16 *base, int off) {
#if CUCO_ATTN_DEV
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(base) + off * 2));
#else
  cuco_attn_emu::ldmatrix_x4(r, base + off, false);
#endif
}
CUCO_ATTN_FN void ldmatrix_x4_trans(unsigned (&r)[4], const __nv_bfloat16 *base, int off) {
#if CUCO_ATTN_DEV
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(base) + off * 2));
#else
  cuco_attn_emu::ldmatrix_x4(r, base + off, true);
#endif
}

// D = A*B + D, m16n8k16, A row-major / B column-major fragments.
CUCO_ATTN_FN void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if CUCO_ATTN_DEV
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  cuco_attn_emu::mma_bf16(d, a, b0, b1);
#endif
}

// 2^x (MUFU.EX2; 2^-inf = +0).
CUCO_ATTN_FN float ex2(float x) {
#if CUCO_ATTN_DEV
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}

// Two floats as one register of two bf16 (lo in the low half).
CUCO_ATTN_FN unsigned pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<unsigned *>(&v);
}

// Element offset of 16-byte chunk `chunk` of smem row `row` (rows of D bf16,
// D/8 >= 8 chunks).  8 consecutive rows read at one logical chunk land in 8
// different 16-byte bank groups.
template <int D>
CUCO_ATTN_FN int swz(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// swz(row, c + b) split for the ldmatrix loops, where c is even and known at
// compile time after unrolling and b in {0, 1} is per lane: with x = row & 7,
//   swz(row, c + b) = rowoff + ((c & ~6) + ((c & 6) ^ (x & 6))) * 8,
//   rowoff = row * D + ((b ^ x) & 1) * 8.
// The per-lane part is then one register per operand (plus x & 6) instead of
// one precomputed offset per unrolled step (which made ptxas spill).
CUCO_ATTN_FN int swz_c(int rowoff, int x6, int c) {
  return rowoff + (((c & ~6) + ((c & 6) ^ x6)) << 3);
}

// Copy `rows` rows of D bf16 (global row stride `ld` elements, valid rows
// [0, valid)) into a swizzled smem tile; rows >= valid are zero-filled.
template <int D, int ROWS>
CUCO_ATTN_FN void load_rows(__nv_bfloat16 *s, const __nv_bfloat16 *g, long long ld,
                                          int valid) {
  constexpr int kChunks = D / 8;
  constexpr int kPer = ROWS * kChunks / kThreads;
  static_assert((ROWS * kChunks) % kThreads == 0, "tile chunks must split evenly");
#pragma unroll
  for (int j = 0; j < kPer; j++) {
    int i = tid() + j * kThreads;
    int r = i / kChunks, c = i % kChunks;
    const __nv_bfloat16 *src = g;
    int bytes = 0;
    if (r < valid) {
      src = g + (long long)r * ld + c * 8;
      bytes = 16;
    }
    cp_async16(s, swz<D>(r, c), src, bytes);
  }
}

// Last key index (relative to the range) visible to query row i (relative),
// clamped to [-1, kv_rows - 1]; -1 = the row sees nothing.
CUCO_ATTN_FN int row_lim(const attn_step_args &a, int i) {
  long long lim = a.kv_rows - 1;
  if (a.mask == ATTN_MASK_CAUSAL) {
    long long c = a.q_pos0 + i - a.kv_pos0;  // key j visible iff j <= c
    if (c < lim) lim = c;
  }
  return lim < -1 ? -1 : (int)lim;
}

// ---------------------------------------------------------------------------
// The tile: 8 warps x 16 query rows, D in {64, 128}.

template <int D>
CUCO_ATTN_FN void step_tile(const attn_step_args &a, int q_tile, int head,
                                          void *smem_raw) {
  constexpr int kDK = D / 16;    // k-steps of S = Q K^T
  constexpr int kNS = kBN / 8;   // n8 fragments of S per warp (8)
  constexpr int kND = D / 8;     // n8 fragments of the output per warp
  constexpr int kKV = kBN * D;   // elements of one K (or V) block

  const int lane = tid() & 31, warp = tid() >> 5;
  const int hq = a.shape.hq, hkv = a.shape.hkv;
  const int kvh = head / (hq / hkv);
  const int row0 = q_tile * kBM;  // first query row of the tile
  if (row0 >= a.q_rows) return;   // uniform over the CTA
  const int rows = a.q_rows - row0 < kBM ? a.q_rows - row0 : kBM;

  // Key blocks to visit: up to the largest visible key of the tile's last row
  // (visibility grows with the row).  Nothing visible: leave the state alone.
  const int lim_last = row_lim(a, row0 + rows - 1);
  if (lim_last < 0) return;  // uniform
  const int nblk = (lim_last + kBN) / kBN;
  // Blocks whose last key is <= lim_first are fully visible to every row.
  const int lim_first = row_lim(a, row0);

  __nv_bfloat16 *sQ = reinterpret_cast<__nv_bfloat16 *>(smem_raw);
  __nv_bfloat16 *sKV = sQ + kBM * D;  // [2 stages][K block, V block]

  const long long ldq = (long long)hq * D, ldkv = (long long)hkv * D;
  const __nv_bfloat16 *gQ = a.q + (long long)row0 * ldq + (long long)head * D;
  const __nv_bfloat16 *gK = a.k + (long long)kvh * D;
  const __nv_bfloat16 *gV = a.v + (long long)kvh * D;

  auto load_kv = [&](int stage, int blk) {
    int k0 = blk * kBN;
    int valid = a.kv_rows - k0 < kBN ? a.kv_rows - k0 : kBN;
    __nv_bfloat16 *sK = sKV + stage * 2 * kKV;
    load_rows<D, kBN>(sK, gK + (long long)k0 * ldkv, ldkv, valid);
    load_rows<D, kBN>(sK + kKV, gV + (long long)k0 * ldkv, ldkv, valid);
  };

  load_rows<D, kBM>(sQ, gQ, ldq, rows);
  load_kv(0, 0);
  cp_async_commit();

  // This thread's two rows (r = 0: groupID, r = 1: groupID + 8) of the warp's
  // 16, and their state.
  const int g = lane >> 2, t4 = lane & 3;
  int qi[2], lim[2];
  bool live[2];  // a real row that sees >= 1 key: its state is read and written
  float m_run[2], l_run[2];
  float acc[kND][4];
  const long long srows = a.state.rows;
#pragma unroll
  for (int r = 0; r < 2; r++) {
    qi[r] = row0 + warp * 16 + g + r * 8;
    lim[r] = row_lim(a, qi[r]);
    live[r] = qi[r] < a.q_rows && lim[r] >= 0;
    long long srow = (long long)a.state_row0 + qi[r];
    m_run[r] = -INFINITY;
    l_run[r] = 0.f;
    if (live[r]) m_run[r] = a.state.m[(long long)head * srows + srow];
    // A row that has seen nothing (m = -inf) starts from l = 0, acc = 0
    // without reading them: the fold would scale them by 2^-inf = 0 anyway,
    // and a first call skips reading the whole fp32 acc.
    const bool has = m_run[r] != -INFINITY;
    // The sum is kept per thread (partial over this thread's columns) and
    // reduced over the quad at the end: give the old sum to one lane.
    if (has && t4 == 0) l_run[r] = a.state.l[(long long)head * srows + srow];
    const float *pa = a.state.acc + (srow * hq + head) * D + t4 * 2;
#pragma unroll
    for (int n = 0; n < kND; n++) {
      float2 v = make_float2(0.f, 0.f);
      if (has) v = *reinterpret_cast<const float2 *>(pa + n * 8);
      acc[n][r * 2] = v.x;
      acc[n][r * 2 + 1] = v.y;
    }
  }

  // ldmatrix row offsets (see swz_c); every operand's rows have row & 7 ==
  // lane & 7.  Q: rows warp*16 + lane%16, chunk 2kk + lane/16.  K (the B
  // operand, col-major = K rows): matrices (keys n*8+0..7, chunk 2kk),
  // (same keys, 2kk+1), (keys n*8+8..15, 2kk), (those, 2kk+1), so lane l
  // addresses key n*8 + l%8 + 8*(l/16), chunk 2kk + (l/8)%2.  V (.trans):
  // rows kk*16 + lane%16, chunk n + lane/16.
  const int x = lane & 7, x6 = lane & 6;
  const int offQ = (warp * 16 + (lane & 15)) * D + ((((lane >> 4) ^ x) & 1) << 3);
  const int offK = (x + ((lane >> 4) << 3)) * D + ((((lane >> 3) ^ x) & 1) << 3);
  const int offV = (lane & 15) * D + ((((lane >> 4) ^ x) & 1) << 3);

  float scale = a.shape.scale > 0.f ? a.shape.scale : 1.f / sqrtf((float)D);
  const float sl2 = scale * kLog2e;

  for (int blk = 0; blk < nblk; blk++) {
    // Prefetch the next block into the other stage (freed by the barrier at
    // the end of the previous iteration); one commit group per iteration.
    if (blk + 1 < nblk) load_kv((blk + 1) & 1, blk + 1);
    cp_async_commit();
    cp_async_wait<1>();  // all but the newest group: Q and block blk landed
    sync_cta();

    const __nv_bfloat16 *sK = sKV + (blk & 1) * 2 * kKV;
    const __nv_bfloat16 *sV = sK + kKV;

    // S = Q K^T (raw dot products).
    float s[kNS][4];
#pragma unroll
    for (int n = 0; n < kNS; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) s[n][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kDK; kk++) {
      unsigned qf[4];
      ldmatrix_x4(qf, sQ, swz_c(offQ, x6, kk * 2));
#pragma unroll
      for (int n = 0; n < kNS; n += 2) {
        // matrices: keys n*8+0..7 / d chunk 2kk, same keys / 2kk+1, keys
        // n*8+8..15 / 2kk, those keys / 2kk+1  ->  b[n][0], b[n][1], b[n+1][0..1]
        unsigned kf[4];
        ldmatrix_x4(kf, sK, swz_c(offK + n * 8 * D, x6, kk * 2));
        mma_bf16(s[n], qf, kf[0], kf[1]);
        mma_bf16(s[n + 1], qf, kf[2], kf[3]);
      }
    }

    // Mask: keys past a row's lim (causal or the range's end) score -inf.
    const int k0 = blk * kBN;
    if (k0 + kBN - 1 > lim_first) {
#pragma unroll
      for (int n = 0; n < kNS; n++)
#pragma unroll
        for (int e = 0; e < 4; e++)
          if (k0 + n * 8 + t4 * 2 + (e & 1) > lim[e >> 1]) s[n][e] = -INFINITY;
    }

    // Online softmax, per row.
    float alpha[2], mu[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
      float mx = -INFINITY;
#pragma unroll
      for (int n = 0; n < kNS; n++) mx = fmaxf(mx, fmaxf(s[n][r * 2], s[n][r * 2 + 1]));
      mx = fmaxf(mx, shfl_xor(mx, 1));
      mx = fmaxf(mx, shfl_xor(mx, 2));
      // mx is a raw score (or -inf); the state is in log2 units.
      float m_new = fmaxf(m_run[r], mx * sl2);
      alpha[r] = m_new == m_run[r] ? 1.f : ex2(m_run[r] - m_new);
      mu[r] = m_new == -INFINITY ? 0.f : m_new;
      m_run[r] = m_new;
    }
    float rs[2] = {0.f, 0.f};
#pragma unroll
    for (int n = 0; n < kNS; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        float p = ex2(fmaf(s[n][e], sl2, -mu[e >> 1]));
        s[n][e] = p;
        rs[e >> 1] += p;
      }
#pragma unroll
    for (int r = 0; r < 2; r++) l_run[r] = l_run[r] * alpha[r] + rs[r];
#pragma unroll
    for (int n = 0; n < kND; n++) {
      acc[n][0] *= alpha[0];
      acc[n][1] *= alpha[0];
      acc[n][2] *= alpha[1];
      acc[n][3] *= alpha[1];
    }

    // acc += P V: P's A fragment of k-step kk is S fragments 2kk and 2kk+1.
#pragma unroll
    for (int kk = 0; kk < kBN / 16; kk++) {
      unsigned pf[4];
      pf[0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
      pf[1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
      pf[2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pf[3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
      for (int n = 0; n < kND; n += 2) {
        // matrices: keys 0-7 / d chunk n, keys 8-15 / n, keys 0-7 / n+1,
        // keys 8-15 / n+1 (transposed)  ->  b[n][0], b[n][1], b[n+1][0..1]
        unsigned vf[4];
        ldmatrix_x4_trans(vf, sV, swz_c(offV + kk * 16 * D, x6, n));
        mma_bf16(acc[n], pf, vf[0], vf[1]);
        mma_bf16(acc[n + 1], pf, vf[2], vf[3]);
      }
    }
    sync_cta();  // every warp is done with this stage before it is refilled
  }
  cp_async_wait<0>();  // the last (empty) group; nothing is in flight on return

  // Write the state back (live rows only).
#pragma unroll
  for (int r = 0; r < 2; r++) {
    float l = l_run[r];
    l += shfl_xor(l, 1);
    l += shfl_xor(l, 2);
    if (!live[r]) continue;
    long long srow = (long long)a.state_row0 + qi[r];
    if (t4 == 0) {
      a.state.m[(long long)head * srows + srow] = m_run[r];
      a.state.l[(long long)head * srows + srow] = l;
    }
    float *pa = a.state.acc + (srow * hq + head) * D + t4 * 2;
#pragma unroll
    for (int n = 0; n < kND; n++)
      *reinterpret_cast<float2 *>(pa + n * 8) = make_float2(acc[n][r * 2], acc[n][r * 2 + 1]);
  }
  sync_cta();  // smem may be reused by the caller
}

template <int D>
__global__ void __launch_bounds__(kThreads, D == 128 ? ATTN_STEP_MIN_BLOCKS_D128 : 2) step_kernel(attn_step_args a) {
  extern __shared__ __align__(128) unsigned char attn_smem[];
  // x: head (heads sharing a KV head run side by side, sharing K/V in L2);
  // y: Q tile, the longest (last under a causal mask) first.
  int q_tile = gridDim.y - 1 - blockIdx.y;
  step_tile<D>(a, q_tile, blockIdx.x, attn_smem);
}

// The three state kernels are static: every translation unit that includes
// this header (reference.cu and each implementation of flash_attn_cp) gets
// its own copy, so they never collide at the link (`multiple definition of
// cuco_attn::init_kernel`).  step_kernel is a template (vague linkage).

// m = -inf, l = 0 for every [h][row]; acc = 0.
static __global__ void init_kernel(attn_state st, long long n_ml, long long n_acc) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_acc; i += stride) {
    st.acc[i] = 0.f;
    if (i < n_ml) {
      st.m[i] = -INFINITY;
      st.l[i] = 0.f;
    }
  }
}

// dst <- merge(dst, src) for one (row, head): its m, l and acc[0, d), by
// `lanes` threads (this is `lane`) that split acc.  A src row that saw
// nothing leaves dst untouched; a dst row that saw nothing takes src as is
// (its acc and l are not read, so they cannot turn into NaN via 0 * garbage).
CUCO_ATTN_FN void merge_row(float *md, float *ld, float *accd, float ms, float ls,
                            const float *accs, int d, int lane, int lanes) {
  float mo = *md;
  float m = fmaxf(mo, ms);
  if (m == -INFINITY || ms == -INFINITY) return;
  bool fresh = mo == -INFINITY;
  float ad = mo == m ? 1.f : ex2(mo - m);
  float as = ms == m ? 1.f : ex2(ms - m);
  for (int i = lane; i < d; i += lanes) accd[i] = (fresh ? 0.f : accd[i] * ad) + accs[i] * as;
  if (lane == 0) {
    *ld = (fresh ? 0.f : *ld * ad) + ls * as;
    *md = m;
  }
}

// O = acc / l (bf16, may be null) and LSE = (m + log2 l) ln 2 (may be null)
// of one (row, head), by `lanes` threads; a row that saw nothing: 0, -inf.
CUCO_ATTN_FN void finalize_row(float m, float l, const float *acc, int d, __nv_bfloat16 *o,
                               float *lse, int lane, int lanes) {
  bool seen = m != -INFINITY && l > 0.f;
  float inv = seen ? 1.f / l : 0.f;
  if (o)
    for (int i = lane; i < d; i += lanes) o[i] = __float2bfloat16_rn(seen ? acc[i] * inv : 0.f);
  if (lse && lane == 0) *lse = seen ? (m + log2f(l)) * kLn2 : -INFINITY;
}

// One warp per (row, head), lanes over d.
static __global__ void merge_kernel(attn_state dst, attn_state src, int hq, int d) {
  long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (w >= (long long)dst.rows * hq) return;
  long long row = w / hq;
  int h = (int)(w % hq);
  long long id = (long long)h * dst.rows + row, is = (long long)h * src.rows + row;
  merge_row(dst.m + id, dst.l + id, dst.acc + (row * hq + h) * d, src.m[is], src.l[is],
            src.acc + (row * hq + h) * d, d, threadIdx.x & 31, 32);
}

static __global__ void finalize_kernel(attn_state st, int hq, int d, __nv_bfloat16 *o, float *lse) {
  long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (w >= (long long)st.rows * hq) return;
  long long row = w / hq;
  int h = (int)(w % hq);
  long long iml = (long long)h * st.rows + row;
  finalize_row(st.m[iml], st.l[iml], st.acc + (row * hq + h) * d, d,
               o ? o + (row * hq + h) * d : nullptr, lse ? lse + iml : nullptr,
               threadIdx.x & 31, 32);
}

inline bool misaligned(const void *p, uintptr_t a) {
  return (reinterpret_cast<uintptr_t>(p) & (a - 1)) != 0;
}

inline bool bad_state(const attn_state &st, int hq, int d) {
  if (!st.acc || !st.m || !st.l || st.rows < 0) return true;
  if (hq < 1 || (d != 64 && d != 128)) return true;
  return misaligned(st.acc, 8) || misaligned(st.m, 4) || misaligned(st.l, 4);
}

// Blocks of 256 threads covering n warps (one per (row, head)), capped.
inline unsigned warp_grid(long long warps) {
  long long b = (warps * 32 + 255) / 256;
  return b < 1 ? 1u : (unsigned)b;
}

}  // namespace cuco_attn

// ---------------------------------------------------------------------------
// Host calls (see attn_step.h).

// cudaSuccess when a satisfies the requirements above, else
// cudaErrorInvalidValue.  Launches nothing.
inline cudaError_t attn_step_check(const attn_step_args *a) {
  using namespace cuco_attn;
  if (!a) return cudaErrorInvalidValue;
  const attn_shape &s = a->shape;
  if (s.d != 64 && s.d != 128) return cudaErrorInvalidValue;
  if (s.hq < 1 || s.hkv < 1 || s.hq % s.hkv || s.hq > 65535) return cudaErrorInvalidValue;
  if (!(s.scale >= 0.f) || isinf(s.scale)) return cudaErrorInvalidValue;  // NaN fails >=
  if (a->mask != ATTN_MASK_NONE && a->mask != ATTN_MASK_CAUSAL) return cudaErrorInvalidValue;
  if (!a->q || !a->k || !a->v) return cudaErrorInvalidValue;
  if (misaligned(a->q, 16) || misaligned(a->k, 16) || misaligned(a->v, 16))
    return cudaErrorInvalidValue;
  if (a->q_rows < 0 || a->kv_rows < 0 || a->state_row0 < 0) return cudaErrorInvalidValue;
  if (a->q_rows > 65535 * ATTN_Q_TILE) return cudaErrorInvalidValue;  // grid.y
  if (bad_state(a->state, s.hq, s.d)) return cudaErrorInvalidValue;
  if ((long long)a->state_row0 + a->q_rows > a->state.rows) return cudaErrorInvalidValue;
  // Positions: q_pos0 + q_rows and kv_pos0 + kv_rows must not overflow.
  const long long big = 1LL << 60;
  if (a->q_pos0 < -big || a->q_pos0 > big || a->kv_pos0 < -big || a->kv_pos0 > big)
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

// Dynamic shared memory of one CTA of attn_step (and of attn_step_tile): the
// Q tile plus two stages of a K and a V block.  0 for an unsupported d.
inline size_t attn_step_smem_bytes(int d) {
  if (d != 64 && d != 128) return 0;
  return (size_t)(ATTN_Q_TILE + 4 * ATTN_KV_TILE) * d * sizeof(__nv_bfloat16);
}

// Number of Q tiles (CTAs per query head) for q_rows query rows.
inline int attn_step_q_tiles(int q_rows) {
  return q_rows <= 0 ? 0 : (q_rows + ATTN_Q_TILE - 1) / ATTN_Q_TILE;
}

__device__ __forceinline__ void attn_step_tile(const attn_step_args &a, int q_tile, int head,
                                               void *smem) {
  if (a.shape.d == 128)
    cuco_attn::step_tile<128>(a, q_tile, head, smem);
  else
    cuco_attn::step_tile<64>(a, q_tile, head, smem);
}

inline cudaError_t attn_step(const attn_step_args *a, cudaStream_t stream) {
  using namespace cuco_attn;
  cudaError_t e = attn_step_check(a);
  if (e != cudaSuccess) return e;
  int tiles = attn_step_q_tiles(a->q_rows);
  if (tiles == 0 || a->kv_rows == 0) return cudaSuccess;  // nothing to fold
  size_t smem = attn_step_smem_bytes(a->shape.d);
  auto kernel = a->shape.d == 128 ? step_kernel<128> : step_kernel<64>;
  // The attribute once per device and d (a host call per step would show in
  // the timing of short steps).  Races are benign: all set the same value.
  static bool attr_set[2][64];
  int dev = 0;
  if ((e = cudaGetDevice(&dev)) != cudaSuccess) return e;
  bool *done = dev < 64 ? &attr_set[a->shape.d == 128][dev] : nullptr;
  if (!done || !*done) {
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    if (done) *done = true;
  }
  dim3 grid((unsigned)a->shape.hq, (unsigned)tiles);
  kernel<<<grid, kThreads, smem, stream>>>(*a);
  return cudaGetLastError();
}

inline cudaError_t attn_state_init(struct attn_state st, int hq, int d, cudaStream_t stream) {
  using namespace cuco_attn;
  if (bad_state(st, hq, d)) return cudaErrorInvalidValue;
  long long n_ml = (long long)hq * st.rows, n_acc = n_ml * d;
  if (n_acc == 0) return cudaSuccess;
  long long blocks = (n_acc + 255) / 256;
  if (blocks > 4096) blocks = 4096;
  init_kernel<<<(unsigned)blocks, 256, 0, stream>>>(st, n_ml, n_acc);
  return cudaGetLastError();
}

inline cudaError_t attn_state_merge(struct attn_state dst, struct attn_state src, int hq, int d,
                                    cudaStream_t stream) {
  using namespace cuco_attn;
  if (bad_state(dst, hq, d) || bad_state(src, hq, d) || dst.rows != src.rows)
    return cudaErrorInvalidValue;
  long long warps = (long long)dst.rows * hq;
  if (warps == 0) return cudaSuccess;
  merge_kernel<<<warp_grid(warps), 256, 0, stream>>>(dst, src, hq, d);
  return cudaGetLastError();
}

inline cudaError_t attn_finalize(struct attn_state st, int hq, int d, __nv_bfloat16 *o,
                                 float *lse, cudaStream_t stream) {
  using namespace cuco_attn;
  if (bad_state(st, hq, d) || (!o && !lse)) return cudaErrorInvalidValue;
  if (cuco_attn::misaligned(o, 2) || cuco_attn::misaligned(lse, 4)) return cudaErrorInvalidValue;
  long long warps = (long long)st.rows * hq;
  if (warps == 0) return cudaSuccess;
  finalize_kernel<<<warp_grid(warps), 256, 0, stream>>>(st, hq, d, o, lse);
  return cudaGetLastError();
}
