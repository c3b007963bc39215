// runtime/attn_step_v2.cuh - version 2 of cuco's attention step: the same
// contract as attn_step.h (layouts, fp32 state between steps, masks, the
// state kernels), computed with Hopper's wgmma fed by TMA, in the manner of
// FlashAttention-3:
//   - warp specialisation: 384 threads a CTA; warpgroup 0 is the producer
//     (thread 0 streams K and V blocks of 128 keys with TMA into a two-stage
//     ring; mbarriers k_full, v_full, empty) and gives its registers away
//     (setmaxnreg 24), warpgroups 1 and 2 are the consumers (query rows 0-63
//     and 64-127 of the CTA's 128-row Q tile, setmaxnreg 240: S, O and P of
//     a row block need about 200 registers a thread, and 9 or 12 warps at
//     the launch's even split get 168);
//   - both GEMMs on wgmma: S = Q K^T with Q and K from shared memory, O += P V
//     with P straight from the registers that held S (the accumulator layout
//     of S is the A-fragment layout of P) and V from shared memory;
//   - intra-warpgroup overlap: block j's S = Q K_j is issued, then block j-1's
//     P V_{j-1}; block j's softmax runs while that second GEMM is in flight;
//     the two warpgroups interleave on the tensor cores besides.
// BUILD WITH -gencode=arch=compute_90a,code=sm_90a; built for another target
// the kernel traps (as gemm_tile_v2).  D in {64, 128}; the host call checks
// the arguments with attn_step_check, so what v1 refuses v2 refuses.
//
//   cudaError_t attn_step_v2(const attn_step_args *a, cudaStream_t stream);
//   bool attn_step_v2_available();   // this device and this build run it
//   cudaError_t attn_step_best(const attn_step_args *a, cudaStream_t stream);
//                                    // v2 at d = 128 where available, else attn_step
//   cudaError_t attn_fwd_v2(const attn_step_args *a, __nv_bfloat16 *o,
//                           float *lse, cudaStream_t stream);
//                                    // init + step + finalize, no state
//   size_t attn_step_v2_smem_bytes(int d);
//   attn_step_v2_maps / attn_step_v2_tiles: the device entry for persistent
//                                    kernels (below), v2's attn_step_tile
//
// attn_state_init / merge / finalize are v1's (attn_step.cuh): the state is
// the same, so v1 and v2 steps may fold into one state in any order.
#pragma once

#include "attn_step.cuh"
#include "gemm_tile_v2.cuh"

namespace cuco_attn_v2 {

using cuco_gemm::v2::make_desc;
using cuco_gemm::v2::mbar_arrive;
using cuco_gemm::v2::mbar_expect_tx;
using cuco_gemm::v2::mbar_init;
using cuco_gemm::v2::tma_2d;
using cuco_gemm::v2::wgmma_commit;
using cuco_gemm::v2::wgmma_fence;
using cuco_gemm::v2::wgmma_wait;

constexpr int kBM = 128;      // query rows a CTA (2 consumer warpgroups x 64)
constexpr int kBN = 128;      // keys a block
// Overridable for tests/gpu/attn_v2.sh's A/B builds.
#ifndef ATTN_V2_STAGES
#define ATTN_V2_STAGES 3
#endif
#ifndef ATTN_V2_PINGPONG
#define ATTN_V2_PINGPONG 1
#endif
constexpr int kStages = ATTN_V2_STAGES;  // K/V blocks in flight
constexpr bool kPingPong = ATTN_V2_PINGPONG;  // warpgroups take turns at the GEMMs
#ifndef ATTN_V2_LAZY_RESCALE
#define ATTN_V2_LAZY_RESCALE 1
#endif
constexpr bool kLazyRescale = ATTN_V2_LAZY_RESCALE;  // skip O *= 1
// 1: the host calls launch one CTA an SM looping over (Q tile, head), the
// longest tiles first, instead of one CTA a tile.
#ifndef ATTN_V2_PERSISTENT
#define ATTN_V2_PERSISTENT 0
#endif
constexpr bool kPersistent = ATTN_V2_PERSISTENT;
// The host calls' launch order: Q tiles of one head side by side, up to
// kGroup of them, so that the CTAs in flight share K/V blocks in L2.  With
// MHA every head has its own K/V, and head-first order (group 1) streams
// ~32 heads' K/V at once: on one H200, MHA full S = 32768 ran 497 TFLOP/s
// at 1, 538 at 4, 566 at 8, 572 at 16, GQA within noise of 1
// (bench/attn-v2-group-2026-12-03-h200.json).  A step of few tiles takes
// groups of tiles / 8 (group_for): a group spans that many tile lengths,
// and a wide spread under a causal mask leaves long tiles for the last wave.
#ifndef ATTN_V2_GROUP
#define ATTN_V2_GROUP 16
#endif
constexpr int kGroup = ATTN_V2_GROUP;
static_assert(kGroup >= 1, "ATTN_V2_GROUP is a count of Q tiles");
constexpr int kThreads = 384; // the producer warpgroup + 2 consumer warpgroups
constexpr int kBars = 2 + 3 * kStages;  // q_full, q_empty, k_full[], v_full[], empty[]

template <int D>
struct Cfg {
  static constexpr int kBoxes = D / 64;           // 64-column (128-byte) boxes a row
  static constexpr int kQBytes = kBM * D * 2;
  static constexpr int kKVBytes = kBN * D * 2;    // one K (or V) block
  static constexpr int kSmem = kQBytes + kStages * 2 * kKVBytes + 1024;  // + alignment
};

// mbarrier wait: a plain spin, without gemm_tile_v2's 10 s trap.  Any trap
// or call on the consumers' path makes ptxas allocate them at the launch's
// 168 registers despite setmaxnreg (spills and serialised wgmma, C7512) or
// fail (C7600).  A pipeline that never completes hangs until the caller's
// deadline (cuco's step timeout, the GPU scripts' timeout).
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity) {
  while (!cuco_gemm::v2::mbar_try_wait(bar, parity)) {
  }
}

// Keep the compiler from moving reads or writes of a register across the
// asynchronous wgmma that owns it (the wait instructions name no registers).
__device__ __forceinline__ void fence_reg(float &r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void fence_reg(unsigned &r) { asm volatile("" : "+r"(r)::"memory"); }

// The accumulators of one warpgroup MMA as asm operands: d[0..31], d[0..63].
#define AV2_F8(i)                                                                              \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define AV2_F32 AV2_F8(0), AV2_F8(8), AV2_F8(16), AV2_F8(24)
#define AV2_F64 AV2_F32, AV2_F8(32), AV2_F8(40), AV2_F8(48), AV2_F8(56)
// S(64x128) += Q(64x16, smem, K-major) * K^T(16x128, smem, K-major: the keys' rows).
__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      :
        AV2_F64
      : "l"(da), "l"(db), "r"(scale_d));
}
// O(64x128) += P(64x16, registers) * V(16x128, smem, N-major: the keys' rows of D).
__device__ __forceinline__ void wgmma_rs_n128(float (&d)[64], const unsigned (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n"
      "}\n"
      :
        AV2_F64
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}
// O(64x64) += P(64x16, registers) * V(16x64, smem, N-major).
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const unsigned (&a)[4], uint64_t db, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n"
      "}\n"
      :
        AV2_F32
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}
#undef AV2_F64
#undef AV2_F32
#undef AV2_F8

template <int D>
__device__ __forceinline__ void wgmma_pv(float (&o)[D / 2], const unsigned (&a)[4], uint64_t db) {
  if constexpr (D == 128)
    wgmma_rs_n128(o, a, db, 1);
  else
    wgmma_rs_n64(o, a, db, 1);
}

// Where tile (q_tile) of a step stands: its rows, the key blocks it visits
// (up to the largest key its last row sees) and the blocks below lim_first,
// which need no mask.  skip: no row of it exists or sees a key.
struct TileInfo {
  int row0, rows, nblk, lim_first;
  bool skip;
};
__device__ __forceinline__ TileInfo tile_info(const attn_step_args &a, int q_tile) {
  TileInfo t;
  t.row0 = q_tile * kBM;
  t.rows = a.q_rows - t.row0 < kBM ? a.q_rows - t.row0 : kBM;
  const int lim_last = t.rows > 0 ? cuco_attn::row_lim(a, t.row0 + t.rows - 1) : -1;
  t.skip = lim_last < 0;
  t.nblk = t.skip ? 0 : (lim_last + kBN) / kBN;
  t.lim_first = t.skip ? -1 : cuco_attn::row_lim(a, t.row0);
  return t;
}

// The host calls' order of the hq * tiles items (Q tile, head): groups of
// `group` Q tiles, the longest (last under a causal mask) first; within a
// group, heads in order (those sharing a KV head side by side), each head's
// tiles of the group side by side.  group = 1: every head's last tile, then
// every head's tile before it, ...
struct LongestFirst {
  int hq, tiles, group;
  __host__ __device__ void map(int w, int *q_tile, int *head) const {
    const int per = group * hq;
    const int g = w / per, r = w - g * per;
    const int left = tiles - g * group;
    const int gs = left < group ? left : group;  // the last group may be short
    *head = r / gs;
    *q_tile = tiles - 1 - (g * group + r % gs);
  }
};
inline int group_for(int tiles) {
  const int g = tiles / 8;
  return g < 1 ? 1 : g > kGroup ? kGroup : g;
}

// The items of one CTA: the standalone kernel's one (item blockIdx.x of
// LongestFirst), or a persistent caller's w = blockIdx.x, + gridDim.x, ...
// < n mapped by its scheduler.
struct OneItem {
  LongestFirst order;
  __device__ int count() const { return 1; }
  __device__ void get(int, int *q_tile, int *head) const {
    order.map((int)blockIdx.x, q_tile, head);
  }
};
template <class Sched>
struct StrideItems {
  Sched sched;
  int n;
  __device__ int count() const {
    return n > (int)blockIdx.x ? (n - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
  }
  __device__ void get(int i, int *q_tile, int *head) const {
    sched.map((int)blockIdx.x + i * (int)gridDim.x, q_tile, head);
  }
};

// The producer hook of a persistent caller: wait(q_tile, head) returns once
// that tile's inputs (its Q rows, the step's K and V) are in memory; the TMA
// loads follow it.  NoWait: they are there from the start.
struct AttnNoWait {
  __device__ void wait(int, int) const {}
};

// The CTA's tiles, one after the other, Q, K and V through one ring whose
// position runs on across tiles (the producer loads the next tile's K and V
// while the consumers finish the last one).  TMQ, TMK, TMV: 2-D maps of q,
// k, v ({heads * D, rows}, boxes of 64 columns x 128 rows, 128-byte
// swizzle); SMEM_RAW: attn_step_v2_smem_bytes(D) bytes.  Called by all
// kThreads threads; the producer and the consumers return without meeting
// again: a join would make ptxas allocate the consumers' registers at the
// launch's 168 a thread, and spill.
// FUSED (attn_fwd_v2): the state is neither read nor written; the tile's
// rows start from nothing and end as O = acc / l (bf16) and LSE, at the
// state's row places (O row state_row0 + i; LSE [h][state_row0 + i], h's
// rows state.rows apart), as init + step + attn_finalize would leave them.
template <int D, bool kFused, class Items, class Pro>
__device__ __forceinline__ void run_tiles(const CUtensorMap *tmQ, const CUtensorMap *tmK,
                                          const CUtensorMap *tmV, const attn_step_args &a,
                                          const Items &items, const Pro &pro,
                                          unsigned char *smem_raw, __nv_bfloat16 *out_o,
                                          float *out_lse) {
  using C = Cfg<D>;
  using cuco_attn::row_lim;
  __shared__ __align__(8) uint64_t bars[kBars];
  unsigned char *smem = reinterpret_cast<unsigned char *>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~(uintptr_t)1023);
  unsigned char *sQ = smem;
  auto sK = [&](int s) { return smem + C::kQBytes + s * 2 * C::kKVBytes; };
  auto sV = [&](int s) { return sK(s) + C::kKVBytes; };
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int hq = a.shape.hq, hkv = a.shape.hkv;
  uint64_t *q_full = bars, *q_empty = bars + 1, *k_full = bars + 2,
           *v_full = bars + 2 + kStages, *empty = bars + 2 + 2 * kStages;

  if (tid == 0) {
    mbar_init(q_full, 1);
    mbar_init(q_empty, 8);  // one arrive a consumer warp
    for (int s = 0; s < kStages; s++) {
      mbar_init(&k_full[s], 1);
      mbar_init(&v_full[s], 1);
      mbar_init(&empty[s], 8);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int n_items = items.count();

  if (warp < 4) {
    // ---- producer: per tile, Q once (after the consumers let the last go),
    // then K and V of every block (K first: S needs only K, and P V comes a
    // softmax later).
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
    if (tid == 0) {
      unsigned ring = 0, tiles = 0;  // blocks and tiles loaded so far
      for (int i = 0; i < n_items; i++) {
        int q_tile, head;
        items.get(i, &q_tile, &head);
        const TileInfo t = tile_info(a, q_tile);
        if (t.skip) continue;
        const int kvh = head / (hq / hkv);
        pro.wait(q_tile, head);
        // Data published by generic-proxy writes is read next by TMA.
        asm volatile("fence.proxy.async;" ::: "memory");
        mbar_wait(q_empty, (tiles & 1) ^ 1);
        mbar_expect_tx(q_full, C::kQBytes);
        for (int b = 0; b < C::kBoxes; b++)
          tma_2d(sQ + b * kBM * 128, tmQ, head * D + b * 64, t.row0, q_full);
        for (int blk = 0; blk < t.nblk; blk++, ring++) {
          const int s = ring % kStages;
          mbar_wait(&empty[s], ((ring / kStages) & 1) ^ 1);
          mbar_expect_tx(&k_full[s], C::kKVBytes);
          for (int b = 0; b < C::kBoxes; b++)
            tma_2d(sK(s) + b * kBN * 128, tmK, kvh * D + b * 64, blk * kBN, &k_full[s]);
          mbar_expect_tx(&v_full[s], C::kKVBytes);
          for (int b = 0; b < C::kBoxes; b++)
            tma_2d(sV(s) + b * kBN * 128, tmV, kvh * D + b * 64, blk * kBN, &v_full[s]);
        }
        tiles++;
      }
    }
    return;  // no join with the consumers (see above)
  }
  // ---- consumers: warpgroup wg owns rows wg*64 .. +63 of a tile; warp wq
  // of it rows 16*wq + g and 16*wq + g + 8 (g = lane / 4), as wgmma's
  // accumulator.
  asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
  unsigned ring = 0, tiles = 0;  // blocks and tiles consumed so far
  for (int item = 0; item < n_items; item++) {
    int q_tile, head;
    items.get(item, &q_tile, &head);
    const TileInfo t = tile_info(a, q_tile);
    if (t.skip) {  // uniform: the state is left alone; fused, O = 0, LSE = -inf
      if (kFused)
        for (int i = tid - 128; i < (t.rows > 0 ? t.rows : 0) * D; i += kThreads - 128) {
          const long long sr = (long long)a.state_row0 + t.row0 + i / D;
          out_o[(sr * hq + head) * D + i % D] = __float2bfloat16_rn(0.f);
          if (i % D == 0) out_lse[(long long)head * a.state.rows + sr] = -INFINITY;
        }
      continue;
    }
    const int row0 = t.row0, nblk = t.nblk, lim_first = t.lim_first;
    const int wg = (warp >> 2) - 1, wq = warp & 3, g = lane >> 2, t4 = lane & 3;
    int lim[2];
    bool live[2];
    float m_run[2], l_run[2];
    long long srow[2];
    float o[D / 2];  // o[4j + 2r + c]: row r's column 8j + 2*t4 + c
    const long long srows = a.state.rows;
#pragma unroll
    for (int r = 0; r < 2; r++) {
      const int qi = row0 + wg * 64 + wq * 16 + g + r * 8;
      lim[r] = row_lim(a, qi);
      live[r] = qi < a.q_rows && lim[r] >= 0;
      srow[r] = (long long)a.state_row0 + qi;
      m_run[r] = -INFINITY;
      l_run[r] = 0.f;
      if (live[r] && !kFused) m_run[r] = a.state.m[(long long)head * srows + srow[r]];
      // As v1: a row that has seen nothing starts from l = 0, acc = 0 without
      // reading them; the quad's sum is kept by lane t4 == 0.
      const bool has = m_run[r] != -INFINITY;
      if (has && t4 == 0) l_run[r] = a.state.l[(long long)head * srows + srow[r]];
      const float *pa = a.state.acc + (srow[r] * hq + head) * D + t4 * 2;
#pragma unroll
      for (int j = 0; j < D / 8; j++) {
        float2 v = make_float2(0.f, 0.f);
        if (has) v = *reinterpret_cast<const float2 *>(pa + j * 8);
        o[4 * j + 2 * r] = v.x;
        o[4 * j + 2 * r + 1] = v.y;
      }
    }
    const float scale = a.shape.scale > 0.f ? a.shape.scale : 1.f / sqrtf((float)D);
    const float sl2 = scale * cuco_attn::kLog2e;
    const unsigned char *sQw = sQ + wg * 64 * 128;

    float s[kBN / 2];        // S of the block in flight, then its exponentials
    unsigned p[kBN / 16][4];  // P (bf16) of the previous block: the A operand of P V
    float alpha[2];

    auto issue_qk = [&](int st) {
      wgmma_fence();
#pragma unroll
      for (int b = 0; b < C::kBoxes; b++)
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
          wgmma_ss_n128(s, make_desc(sQw + b * kBM * 128 + kk * 32, 16, 1024),
                        make_desc(sK(st) + b * kBN * 128 + kk * 32, 16, 1024), (b | kk) != 0);
      wgmma_commit();
    };
    auto issue_pv = [&](int st) {
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBN / 16; kk++)
        wgmma_pv<D>(o, p[kk], make_desc(sV(st) + kk * 16 * 128, kBN * 128, 1024));
      wgmma_commit();
    };
    // Mask, running max, exponentials in place, running sum; alpha = the
    // factor that rescales the rows' earlier accumulator.
    auto softmax = [&](int blk) {
#pragma unroll
      for (int i = 0; i < kBN / 2; i++) fence_reg(s[i]);
      const int k0 = blk * kBN;
      if (k0 + kBN - 1 > lim_first) {
#pragma unroll
        for (int j = 0; j < kBN / 8; j++)
#pragma unroll
          for (int e = 0; e < 4; e++)
            if (k0 + j * 8 + t4 * 2 + (e & 1) > lim[e >> 1]) s[4 * j + e] = -INFINITY;
      }
      float mu[2];
#pragma unroll
      for (int r = 0; r < 2; r++) {
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < kBN / 8; j++) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m_run[r], mx * sl2);
        alpha[r] = m_new == m_run[r] ? 1.f : cuco_attn::ex2(m_run[r] - m_new);
        mu[r] = m_new == -INFINITY ? 0.f : m_new;
        m_run[r] = m_new;
      }
      float rs[2] = {0.f, 0.f};
#pragma unroll
      for (int j = 0; j < kBN / 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const float x = cuco_attn::ex2(fmaf(s[4 * j + e], sl2, -mu[e >> 1]));
          s[4 * j + e] = x;
          rs[e >> 1] += x;
        }
#pragma unroll
      for (int r = 0; r < 2; r++) l_run[r] = l_run[r] * alpha[r] + rs[r];
    };
    // After the previous P V completed: rescale O, and S's exponentials
    // become the next P.
    auto rescale_and_pack = [&]() {
#pragma unroll
      for (int i = 0; i < D / 2; i++) fence_reg(o[i]);
      // Once the running max settles most blocks leave it alone (alpha 1).
      if (!kLazyRescale || alpha[0] != 1.f || alpha[1] != 1.f) {
#pragma unroll
        for (int i = 0; i < D / 2; i++) o[i] *= alpha[(i >> 1) & 1];
      }
#pragma unroll
      for (int kk = 0; kk < kBN / 16; kk++)
#pragma unroll
        for (int q = 0; q < 4; q++) {
          fence_reg(p[kk][q]);
          p[kk][q] = cuco_attn::pack_bf16(s[8 * kk + 2 * q], s[8 * kk + 2 * q + 1]);
        }
    };

    // Ping-pong (kPingPong): the two warpgroups take turns at issuing their
    // GEMMs (named barriers 2 + wg), so one's softmax runs while the other's
    // GEMMs hold the tensor cores.  Each has nblk + 1 turns; warpgroup 1
    // opens warpgroup 0's first and does not open a turn after its last, so
    // every barrier phase gets exactly 128 + 128 threads.
    auto turn_begin = [&]() {
      if (kPingPong) asm volatile("bar.sync %0, 256;" ::"r"(2 + wg) : "memory");
    };
    auto turn_end = [&](bool last) {
      if (kPingPong && !(wg == 1 && last))
        asm volatile("bar.arrive %0, 256;" ::"r"(2 + (wg ^ 1)) : "memory");
    };
    if (kPingPong && wg == 1) asm volatile("bar.arrive 2, 256;" ::: "memory");
    // block blk of this tile is ring position ring + blk
    auto stage = [&](int blk) { return (int)((ring + blk) % kStages); };
    auto phase = [&](int blk) { return (unsigned)(((ring + blk) / kStages) & 1); };
    mbar_wait(q_full, tiles & 1);
    mbar_wait(&k_full[stage(0)], phase(0));
    turn_begin();
    issue_qk(stage(0));
    turn_end(false);
    wgmma_wait<0>();
    softmax(0);
    rescale_and_pack();
    for (int blk = 1; blk < nblk; blk++) {
      const int st = stage(blk), pst = stage(blk - 1);
      mbar_wait(&k_full[st], phase(blk));
      mbar_wait(&v_full[pst], phase(blk - 1));
      turn_begin();
      issue_qk(st);
      issue_pv(pst);
      turn_end(false);
      wgmma_wait<1>();  // S of block blk (groups complete in order)
      softmax(blk);
      wgmma_wait<0>();  // P V of block blk - 1: its stage goes back
      if (lane == 0) mbar_arrive(&empty[pst]);
      rescale_and_pack();
    }
    const int last = nblk - 1, lst = stage(last);
    mbar_wait(&v_full[lst], phase(last));
    turn_begin();
    issue_pv(lst);
    turn_end(true);
    wgmma_wait<0>();
    if (lane == 0) {
      mbar_arrive(&empty[lst]);
      mbar_arrive(q_empty);  // every wgmma of the tile is done: Q may be replaced
    }
    ring += nblk;
    tiles++;
#pragma unroll
    for (int i = 0; i < D / 2; i++) fence_reg(o[i]);

    // Write the state back (live rows only), as v1; fused, O and LSE of
    // every row of the step (finalize_row's rules: nothing seen, O = 0).
#pragma unroll
    for (int r = 0; r < 2; r++) {
      float l = l_run[r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      if (kFused) {
        if (row0 + wg * 64 + wq * 16 + g + r * 8 >= a.q_rows) continue;
        const bool seen = live[r] && m_run[r] != -INFINITY && l > 0.f;
        const float inv = seen ? 1.f / l : 0.f;
        __nv_bfloat16 *po = out_o + (srow[r] * hq + head) * D + t4 * 2;
#pragma unroll
        for (int j = 0; j < D / 8; j++)
          *reinterpret_cast<__nv_bfloat162 *>(po + j * 8) =
              __floats2bfloat162_rn(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
        if (t4 == 0)
          out_lse[(long long)head * srows + srow[r]] =
              seen ? (m_run[r] + log2f(l)) * cuco_attn::kLn2 : -INFINITY;
        continue;
      }
      if (!live[r]) continue;
      if (t4 == 0) {
        a.state.m[(long long)head * srows + srow[r]] = m_run[r];
        a.state.l[(long long)head * srows + srow[r]] = l;
      }
      float *pa = a.state.acc + (srow[r] * hq + head) * D + t4 * 2;
#pragma unroll
      for (int j = 0; j < D / 8; j++)
        *reinterpret_cast<float2 *>(pa + j * 8) = make_float2(o[4 * j + 2 * r], o[4 * j + 2 * r + 1]);
    }
  }
}

template <int D, bool kFused>
__global__ void __launch_bounds__(kThreads, 1)
    step_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                const __grid_constant__ CUtensorMap tmV, attn_step_args a, __nv_bfloat16 *out_o,
                float *out_lse, LongestFirst order) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char attn_v2_smem[];
  run_tiles<D, kFused>(&tmQ, &tmK, &tmV, a, OneItem{order}, AttnNoWait{},
                       attn_v2_smem, out_o, out_lse);
#else
  __trap();  // built without sm_90a: see the header comment
#endif
}

// The host calls' persistent form (ATTN_V2_PERSISTENT): CTA b folds items
// b, b + gridDim.x, ... of LongestFirst.
template <int D, bool kFused>
__global__ void __launch_bounds__(kThreads, 1)
    step_kernel_persistent(const __grid_constant__ CUtensorMap tmQ,
                           const __grid_constant__ CUtensorMap tmK,
                           const __grid_constant__ CUtensorMap tmV, attn_step_args a,
                           __nv_bfloat16 *out_o, float *out_lse, LongestFirst order) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char attn_v2_smem[];
  run_tiles<D, kFused>(&tmQ, &tmK, &tmV, a,
                       StrideItems<LongestFirst>{order, order.tiles * order.hq},
                       AttnNoWait{}, attn_v2_smem, out_o, out_lse);
#else
  __trap();  // built without sm_90a: see the header comment
#endif
}

// 2-D map of a token-major [rows][heads][D] bf16 tensor: {heads * D, rows},
// boxes of 64 columns x box_rows rows.
inline cudaError_t make_rows_map(CUtensorMap *m, const void *base, int heads, int d, int rows,
                                 int box_rows) {
  cuuint64_t dims[2] = {(cuuint64_t)heads * d, (cuuint64_t)(rows > 0 ? rows : 1)};
  cuuint64_t strides[1] = {(cuuint64_t)heads * d * 2};
  cuuint32_t box[2] = {64, (cuuint32_t)box_rows};
  return cuco_gemm::detail::make_map(m, base, 2, dims, strides, box);
}
// The three maps of a step's q, k and v (A already checked).
inline cudaError_t make_maps(const attn_step_args *a, CUtensorMap *q, CUtensorMap *k,
                             CUtensorMap *v) {
  const attn_shape &s = a->shape;
  cudaError_t e;
  if ((e = make_rows_map(q, a->q, s.hq, s.d, a->q_rows, kBM)) != cudaSuccess ||
      (e = make_rows_map(k, a->k, s.hkv, s.d, a->kv_rows, kBN)) != cudaSuccess)
    return e;
  return make_rows_map(v, a->v, s.hkv, s.d, a->kv_rows, kBN);
}

}  // namespace cuco_attn_v2

inline size_t attn_step_v2_smem_bytes(int d) {
  if (d == 128) return cuco_attn_v2::Cfg<128>::kSmem;
  if (d == 64) return cuco_attn_v2::Cfg<64>::kSmem;
  return 0;
}

namespace cuco_attn_v2 {
// The launch behind attn_step_v2 and attn_fwd_v2 (A already checked, d = D).
template <int D, bool kFused>
inline cudaError_t launch_d(const attn_step_args *a, __nv_bfloat16 *o, float *lse,
                            cudaStream_t stream) {
  cudaError_t e;
  const attn_shape &s = a->shape;
  const int tiles = (a->q_rows + kBM - 1) / kBM;
  if (a->q_rows <= 0) return cudaSuccess;
  // an item is a block index (or a persistent CTA's w), an int
  const long long items = (long long)tiles * s.hq;
  if (items > 0x7fffffff) return cudaErrorInvalidValue;
  if (a->kv_rows == 0 && !kFused) return cudaSuccess;  // nothing to fold
  const LongestFirst order{s.hq, tiles, group_for(tiles)};
  CUtensorMap mq, mk, mv;
  if ((e = make_maps(a, &mq, &mk, &mv)) != cudaSuccess) return e;
  const size_t smem = attn_step_v2_smem_bytes(s.d);
  // only the form in use is compiled (both share this type)
  void (*kernel)(CUtensorMap, CUtensorMap, CUtensorMap, attn_step_args, __nv_bfloat16 *, float *,
                 LongestFirst);
  if constexpr (kPersistent)
    kernel = step_kernel_persistent<D, kFused>;
  else
    kernel = step_kernel<D, kFused>;
  static bool attr_set[2][64];  // once per device and d, as attn_step
  int dev = 0;
  if ((e = cudaGetDevice(&dev)) != cudaSuccess) return e;
  bool *done = dev < 64 ? &attr_set[D == 128][dev] : nullptr;
  if (!done || !*done) {
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    if (done) *done = true;
  }
  if (kPersistent) {
    int sms = 0;
    if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess)
      return e;
    const int grid = items < sms ? (int)items : sms;
    kernel<<<grid, kThreads, smem, stream>>>(mq, mk, mv, *a, o, lse, order);
  } else {
    kernel<<<(unsigned)items, kThreads, smem, stream>>>(mq, mk, mv, *a, o, lse, order);
  }
  return cudaGetLastError();
}
// KD = 0: the kernel of a's d (both are compiled); 64 or 128: that one only,
// another d is refused.
template <int kD, bool kFused>
inline cudaError_t launch(const attn_step_args *a, __nv_bfloat16 *o, float *lse,
                          cudaStream_t stream) {
  if constexpr (kD == 0)
    return a->shape.d == 128 ? launch_d<128, kFused>(a, o, lse, stream)
                             : launch_d<64, kFused>(a, o, lse, stream);
  else
    return a->shape.d == kD ? launch_d<kD, kFused>(a, o, lse, stream) : cudaErrorInvalidValue;
}
}  // namespace cuco_attn_v2

// The host calls are templates so that a unit that includes this header
// without calling them compiles no kernel; KD (0: any) limits a call to d =
// KD and compiles that kernel alone (a unit built only for d = 128 saves the
// d = 64 kernel's ptxas time, about 2 s).
template <int kD = 0>
inline cudaError_t attn_step_v2(const attn_step_args *a, cudaStream_t stream) {
  cudaError_t e = attn_step_check(a);
  return e != cudaSuccess ? e : cuco_attn_v2::launch<kD, false>(a, nullptr, nullptr, stream);
}

// init + step + attn_finalize in one kernel, without a state in memory: the
// step's rows end as O (bf16, o + row * hq * d) and LSE (fp32, lse + h *
// state.rows + row) of row = state_row0 + i, the layouts attn_finalize
// writes; a->state's acc, m and l are not used (may be NULL), its rows and
// state_row0 place the outputs.  kv_rows == 0 writes O = 0, LSE = -inf.
template <int kD = 0>
inline cudaError_t attn_fwd_v2(const attn_step_args *a, __nv_bfloat16 *o, float *lse,
                               cudaStream_t stream) {
  if (!a || !o || !lse || cuco_attn::misaligned(o, 16) || cuco_attn::misaligned(lse, 4))
    return cudaErrorInvalidValue;
  attn_step_args c = *a;  // the checks, with the outputs standing in for the state's buffers
  c.state.acc = reinterpret_cast<float *>(o);  // 16-byte aligned, as acc must be 8
  c.state.m = c.state.l = lse;
  cudaError_t e = attn_step_check(&c);
  return e != cudaSuccess ? e : cuco_attn_v2::launch<kD, true>(&c, o, lse, stream);
}

// ---------------------------------------------------------------------------
// Device entry for persistent kernels (placement=per_tile), v2's
// counterpart of attn_step_tile.  The caller's kernel:
//
//   struct MySched { __device__ void map(int w, int *q_tile, int *head) const; };
//   __global__ void __launch_bounds__(ATTN_V2_THREADS, 1)
//   k(const __grid_constant__ attn_v2_maps maps, attn_step_args a, int n, ...) {
//     extern __shared__ unsigned char smem[];  // attn_step_v2_smem_bytes(d)
//     attn_step_v2_tiles<128>(maps, a, MySched{...}, n, smem);  // the last thing it does
//   }
//
// launched with ATTN_V2_THREADS (384) threads, its dynamic shared memory set
// with cudaFuncSetAttribute, and the maps made by attn_step_v2_maps for
// those q, k, v (kernel parameters: TMA reads the maps where they are).  CTA
// b folds items w = b, b + gridDim.x, ... < n, item w being (q_tile, head)
// = sched.map(w), with the same state rules as attn_step_v2 (bit for bit the
// same results).  PRO (optional) is the producer's hook: pro.wait(q_tile,
// head) returns once that tile's inputs are in memory (e.g. polls a flag
// raised after a ring hop landed); the TMA loads come after it.
// The call ends the kernel for its threads: the producer warpgroup gives
// its registers to the consumers (setmaxnreg) and they never meet again.
#define ATTN_V2_THREADS 384
struct attn_v2_maps {
  CUtensorMap q, k, v;
};

template <int kUnused = 0>
inline cudaError_t attn_step_v2_maps(const attn_step_args *a, attn_v2_maps *m) {
  cudaError_t e = attn_step_check(a);
  if (e != cudaSuccess) return e;
  return m ? cuco_attn_v2::make_maps(a, &m->q, &m->k, &m->v) : cudaErrorInvalidValue;
}

template <int D, class Sched, class Pro = cuco_attn_v2::AttnNoWait>
__device__ __forceinline__ void attn_step_v2_tiles(const attn_v2_maps &maps,
                                                   const attn_step_args &a, Sched sched, int n,
                                                   void *smem, Pro pro = Pro()) {
  static_assert(D == 64 || D == 128, "attn_step_v2_tiles: D is 64 or 128");
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  cuco_attn_v2::run_tiles<D, false>(&maps.q, &maps.k, &maps.v, a,
                                    cuco_attn_v2::StrideItems<Sched>{sched, n}, pro,
                                    static_cast<unsigned char *>(smem), nullptr, nullptr);
#else
  (void)maps, (void)a, (void)sched, (void)n, (void)smem, (void)pro;
  __trap();  // built without sm_90a: see the header comment
#endif
}

// Whether attn_step_v2 runs on the current device: compute capability 9.0
// and this program built with its sm_90a body.  Built for another target the
// kernel is a trap without the barriers' static shared memory, which is how
// the build is told apart on the host (nvcc's host pass does not know
// whether it was sm_90a).  Once per device; launches nothing.
template <int kUnused = 0>
inline bool attn_step_v2_available() {
  static signed char known[64];  // 0 unknown, 1 yes, -1 no
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (dev < 64 && known[dev]) return known[dev] > 0;
  int major = 0, minor = 0;
  bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
            major == 9 && minor == 0;
  if (ok) {
    cudaFuncAttributes fa;
    cudaError_t e;
    if constexpr (cuco_attn_v2::kPersistent)
      e = cudaFuncGetAttributes(&fa, cuco_attn_v2::step_kernel_persistent<128, false>);
    else
      e = cudaFuncGetAttributes(&fa, cuco_attn_v2::step_kernel<128, false>);
    ok = e == cudaSuccess &&
         fa.sharedSizeBytes >= sizeof(uint64_t) * cuco_attn_v2::kBars;
    if (!ok) (void)cudaGetLastError();  // no image for this device: not sticky
  }
  if (dev < 64) known[dev] = ok ? 1 : -1;
  return ok;
}

// The step on the best implementation at hand: v2 at d = 128 where it runs
// (the d it was measured and tuned at), else v1's attn_step.  Same
// contract, same state; results differ from v1's in the last bits (another
// summation order).  Only v2's d = 128 kernel is compiled.
template <int kUnused = 0>
inline cudaError_t attn_step_best(const attn_step_args *a, cudaStream_t stream) {
  if (a && a->shape.d == 128 && attn_step_v2_available()) return attn_step_v2<128>(a, stream);
  return attn_step(a, stream);
}
