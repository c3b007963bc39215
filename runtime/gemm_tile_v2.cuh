// runtime/gemm_tile_v2.cuh - version 2 of cuco's frozen bf16 GEMM tile library:
// wgmma (warpgroup MMA) fed by TMA (bulk tensor copies completing on mbarriers),
// warp-specialized and persistent.  Same math, layouts, hooks (GemmArgs,
// GemmTile, Prologue / Epilogue / Scheduler) and grouped variant as
// gemm_tile.cuh (read its header comment); differences:
//   - BUILD WITH -gencode=arch=compute_90a,code=sm_90a (wgmma needs sm_90a).
//     Built for another target the kernel traps at its first instruction
//     (the launch then fails with an "unspecified launch failure").
//   - CTA tile 128x256x64, 4 stages (192 KiB smem), 288 threads: warps 0-7 are
//     two math warpgroups (rows 0-63 and 64-127 of the tile; they call store()
//     and tile_end(); threadIdx.x == 0 is among them), warp 8 is the producer
//     whose lane 0 calls Prologue::wait() and then issues the tile's TMA copies.
//     So an epilogue shares a tile among kMathThreads (256) threads, and its
//     barrier is math_sync() (named barrier 1), never __syncthreads(): the
//     producer warp has returned by then.
//   - With GemmStoreC, a CTA's last tile goes out through shared memory in
//     16-byte row pieces (store_c_staged below); other epilogues get pairs.
//   - Tails (M, N, K not multiples of the tile) are zero-filled by TMA itself;
//     lda, ldb, b_group_stride multiples of 8 elements and A, B 16-byte
//     aligned, as for v1.  K == 0 writes zeros.
//   - A mbarrier wait that exceeds 10 s traps (a broken pipeline or a prologue
//     whose flag never comes fails loudly instead of hanging).
//   - Batched variant (v2 only): group_offsets == nullptr and num_groups = G > 1
//     is G GEMMs in one launch that share A [M, K]: C_g = A * B_g with
//     B_g = B + g*b_group_stride.  A tile of batch g has t.group = g and rows
//     [m0, m_end) of A (the same rows for every g); the epilogue places C_g
//     (GemmStoreC would write every batch over one C).  One launch instead of G
//     removes G-1 launch gaps and wave tails (kv_transfer's per-layer KV
//     projections: X times each layer's W).
#pragma once

#include <cuda.h>  // CUtensorMap (types only: the encoder comes from the runtime)
#include <cudaTypedefs.h>

#include "gemm_tile.cuh"

namespace cuco_gemm {

namespace v2 {

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, kThreads = 288;
// The threads that call an epilogue's store() and tile_end(): the two math
// warpgroups, threadIdx.x 0..255 (the producer warp has left by then, so an
// epilogue must not use __syncthreads(): math_sync() is its barrier).
constexpr int kMathThreads = 256;
__device__ __forceinline__ void math_sync() { asm volatile("bar.sync 1, 256;" ::: "memory"); }
constexpr int kABytes = BM * BK * 2;               // 16 KiB per stage
constexpr int kBBytes = BK * BN * 2;               // 32 KiB per stage (4 boxes of 64 cols)
constexpr int kStageBytes = kABytes + kBBytes;
constexpr int kSmemBytes = STAGES * kStageBytes + 1024;  // + alignment slack

__device__ __forceinline__ unsigned smem_u32(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
// Whether the phase with the given parity has completed (one try).
__device__ __forceinline__ bool mbar_try_wait(uint64_t *bar, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
// Wait until the phase with the given parity has completed; trap after 10 s.
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity) {
  unsigned long long t0 = 0;
  for (int spins = 0;; spins++) {
    if (mbar_try_wait(bar, parity)) return;
    if (spins == 1024) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    if (spins > 1024 && (spins & 1023) == 0) {
      unsigned long long t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      if (t - t0 > 10000000000ull) __trap();
    }
  }
}

__device__ __forceinline__ void tma_2d(void *dst, const CUtensorMap *map, int c0, int c1,
                                       uint64_t *bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_u32(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}
__device__ __forceinline__ void tma_3d(void *dst, const CUtensorMap *map, int c0, int c1, int c2,
                                       uint64_t *bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_u32(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_u32(bar))
      : "memory");
}

// wgmma shared-memory matrix descriptor, 128-byte swizzle (layout type 1).
// lbo/sbo in bytes.  K-major A (rows of 64 bf16 = 128 B): sbo = 1024 (8 rows),
// lbo unused.  N-major B (64-column boxes of K rows x 128 B): lbo = distance
// between 64-column boxes, sbo = 1024 (8 k-rows).
__device__ __forceinline__ uint64_t make_desc(const void *p, unsigned lbo, unsigned sbo) {
  uint64_t d = 0;
  d |= (uint64_t)((smem_u32(p) & 0x3FFFF) >> 4);
  d |= (uint64_t)((lbo >> 4) & 0x3FFF) << 16;
  d |= (uint64_t)((sbo >> 4) & 0x3FFF) << 32;
  d |= (uint64_t)1 << 62;
  return d;
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// D(64x256, fp32) += A(64x16, smem, K-major) * B(16x256, smem, N-major).
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db,
                                                 int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, p, 1, 1, 0, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(scale_d));
}
// GemmStoreC's tile through shared memory: the math threads write their bf16
// pairs into a [BM][BN + 8] tile (528-byte rows: a warp's pair writes hit 32
// banks), then store it row by row in 16-byte pieces, where the pairs store
// 8 rows x 16 bytes a warp instruction.  Only for a CTA's last tile, when no
// stage will be loaded again: every tile of a grid of one CTA a tile.  On one
// H200 it took seed_tile (M = 4096/8192, K = 8192, N = 28672) from 1.057x /
// 1.042x of cuBLASLt's time to 1.007x / 0.999x in the same call
// (bench/gemm-seed-tile-staged-2026-12-03-h200.json).  -DCUCO_GEMM_V2_STAGED_C=0
// keeps the pair stores (an A/B).
#ifndef CUCO_GEMM_V2_STAGED_C
#define CUCO_GEMM_V2_STAGED_C 1
#endif
// R0, C0: the thread's first accumulator row and column inside the tile.
__device__ __forceinline__ void store_c_staged(const GemmTile &t, const float (&acc)[128],
                                               unsigned char *smem, const GemmStoreC &epi,
                                               int r0, int c0) {
  constexpr int kLd = BN + 8;
  math_sync();  // both warpgroups' wgmma reads of the stages are complete
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __nv_bfloat16 *cs = reinterpret_cast<__nv_bfloat16 *>(smem);
#pragma unroll
  for (int half = 0; half < 2; half++)
#pragma unroll
    for (int j = 0; j < 32; j++)
      *reinterpret_cast<__nv_bfloat162 *>(cs + (r0 + half * 8) * kLd + c0 + j * 8) =
          __floats2bfloat162_rn(acc[j * 4 + half * 2], acc[j * 4 + half * 2 + 1]);
  math_sync();
  const int rows = t.m_end - t.m0, cols = t.n_end - t.n0;
  const bool vec = (reinterpret_cast<uintptr_t>(epi.C) & 15) == 0 && epi.ldc % 8 == 0;
  for (int i = threadIdx.x; i < BM * (BN / 8); i += kMathThreads) {
    const int r = i / (BN / 8), c = (i % (BN / 8)) * 8;
    if (r >= rows || c >= cols) continue;
    __nv_bfloat16 *dst = epi.C + (long long)(t.m0 + r) * epi.ldc + t.n0 + c;
    const __nv_bfloat16 *src = cs + r * kLd + c;
    if (vec && c + 8 <= cols)
      *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
    else
      for (int e = 0; e < 8 && c + e < cols; e++) dst[e] = src[e];
  }
}

// Tile description shared by producer and math warps (same schedule).
template <bool kGrouped, class Sched>
__device__ __forceinline__ GemmTile make_tile(int w, int tiles_m, int tiles_n, const Sched &sched,
                                              const detail::GroupTable *gt, int G, int M, int N) {
  GemmTile t;
  t.w = w;
  sched.map(w, tiles_m, tiles_n, &t.tm, &t.tn);
  if constexpr (kGrouped) {
    int g = detail::find_group(*gt, G, t.tm);
    t.group = g;
    t.group_row0 = gt->row_start[g];
    t.m0 = t.group_row0 + (t.tm - gt->tile_start[g]) * BM;
    t.m_end = gt->row_start[g + 1];
    if (t.m_end > t.m0 + BM) t.m_end = t.m0 + BM;
  } else {  // dense, or batched (G > 1): tm runs over G copies of M's row tiles
    const int tpg = (M + BM - 1) / BM;
    t.group = G > 1 ? t.tm / tpg : 0;
    t.group_row0 = 0;
    t.m0 = (G > 1 ? t.tm - t.group * tpg : t.tm) * BM;
    t.m_end = t.m0 + BM < M ? t.m0 + BM : M;
  }
  t.n0 = t.tn * BN;
  t.n_end = t.n0 + BN < N ? t.n0 + BN : N;
  return t;
}

template <bool kGrouped, class Prologue, class Epilogue, class Sched>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_tile_v2_kernel(const __grid_constant__ CUtensorMap tmA,
                        const __grid_constant__ CUtensorMap tmB, GemmArgs args, Prologue pro,
                        Epilogue epi, Sched sched) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char v2_smem_raw[];
  // TMA 128-byte swizzle and the wgmma descriptors assume 1024-byte alignment.
  unsigned char *smem = reinterpret_cast<unsigned char *>(
      (reinterpret_cast<uintptr_t>(v2_smem_raw) + 1023) & ~(uintptr_t)1023);
  __shared__ __align__(8) uint64_t full_bar[STAGES];
  __shared__ __align__(8) uint64_t empty_bar[STAGES];
  __shared__ typename std::conditional<kGrouped, detail::GroupTable, int>::type gt_storage;

  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31;
  const int M = args.M, N = args.N, K = args.K, G = args.num_groups;
  const int tiles_n = (N + BN - 1) / BN;
  int tiles_m;
  const detail::GroupTable *gt = nullptr;
  if constexpr (kGrouped) {
    detail::build_group_table<BM, kThreads>(gt_storage, args.group_offsets, G, M);
    tiles_m = gt_storage.tile_start[G];
    gt = &gt_storage;
  } else {
    tiles_m = (M + BM - 1) / BM * (G > 1 ? G : 1);  // batched: G copies
  }
  const bool batched = !kGrouped && G > 1;  // B is then a 3-D map, as grouped
  const int total = tiles_m * tiles_n;
  const int ktiles = (K + BK - 1) / BK;

  if (tid == 0) {
    for (int s = 0; s < STAGES; s++) {
      mbar_init(&full_bar[s], 1);   // the producer's arrive.expect_tx
      mbar_init(&empty_bar[s], 8);  // one arrive per math warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (warp == 8) {
    // ---- producer: lane 0 waits for the tile's inputs, then streams k-tiles.
    if (lane == 0) {
      int stage = 0;
      unsigned phase = 0;
      for (int w = blockIdx.x; w < total; w += gridDim.x) {
        GemmTile t = make_tile<kGrouped>(w, tiles_m, tiles_n, sched, gt, G, M, N);
        pro.wait(t);
        // Data published by generic-proxy writes is read next by TMA (async proxy).
        asm volatile("fence.proxy.async;" ::: "memory");
        for (int kt = 0; kt < ktiles; kt++) {
          mbar_wait(&empty_bar[stage], phase ^ 1);
          unsigned char *sA = smem + stage * kStageBytes;
          unsigned char *sB = sA + kABytes;
          mbar_expect_tx(&full_bar[stage], kStageBytes);
          tma_2d(sA, &tmA, kt * BK, t.m0, &full_bar[stage]);
#pragma unroll
          for (int j = 0; j < BN / 64; j++) {
            if (kGrouped || batched)
              tma_3d(sB + j * (BK * 128), &tmB, t.n0 + j * 64, kt * BK, t.group,
                     &full_bar[stage]);
            else
              tma_2d(sB + j * (BK * 128), &tmB, t.n0 + j * 64, kt * BK, &full_bar[stage]);
          }
          if (++stage == STAGES) stage = 0, phase ^= 1;
        }
      }
    }
    return;
  }

  // ---- math warpgroups: wg 0 -> tile rows 0-63, wg 1 -> rows 64-127.
  const int wg = warp >> 2;
  const int wq = warp & 3;  // warp inside its warpgroup: rows 16*wq .. +15
  int stage = 0;
  unsigned phase = 0;
  for (int w = blockIdx.x; w < total; w += gridDim.x) {
    GemmTile t = make_tile<kGrouped>(w, tiles_m, tiles_n, sched, gt, G, M, N);
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; i++) acc[i] = 0.f;
    // One wgmma group (a k-tile) stays in flight while the next is issued; a
    // stage goes back to the producer once the group that read it completed.
    int prev_stage = -1;
    for (int kt = 0; kt < ktiles; kt++) {
      mbar_wait(&full_bar[stage], phase);
      const unsigned char *sA = smem + stage * kStageBytes + wg * (64 * 128);
      const unsigned char *sB = smem + stage * kStageBytes + kABytes;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; kk++) {
        uint64_t da = make_desc(sA + kk * 32, 16, 1024);
        uint64_t db = make_desc(sB + kk * 16 * 128, BK * 128, 1024);
        wgmma_m64n256k16(acc, da, db, 1);
      }
      wgmma_commit();
      wgmma_wait<1>();  // the group of k-tile kt-1 is complete
      if (prev_stage >= 0 && lane == 0) mbar_arrive(&empty_bar[prev_stage]);
      prev_stage = stage;
      if (++stage == STAGES) stage = 0, phase ^= 1;
    }
    wgmma_wait<0>();
    if (prev_stage >= 0 && lane == 0) mbar_arrive(&empty_bar[prev_stage]);
    // Accumulator i: n8 block i/4; row gid (+8 for i%4 >= 2), col 2*tig + (i&1).
    const int r0 = wg * 64 + wq * 16 + (lane >> 2), c0 = (lane & 3) * 2;
    if constexpr (CUCO_GEMM_V2_STAGED_C && std::is_same<Epilogue, GemmStoreC>::value) {
      if (w + (int)gridDim.x >= total) {  // the CTA's last tile (tile_end is empty)
        store_c_staged(t, acc, smem, epi, r0, c0);
        continue;
      }
    }
    const int row_base = t.m0 + r0, col_base = t.n0 + c0;
#pragma unroll
    for (int half = 0; half < 2; half++) {
      int row = row_base + half * 8;
      if (row < t.m_end) {
#pragma unroll
        for (int j = 0; j < 32; j++) {
          int col = col_base + j * 8;
          if (col < t.n_end)
            epi.store(t, row, col, acc[j * 4 + half * 2], acc[j * 4 + half * 2 + 1],
                      col + 1 < t.n_end);
        }
      }
    }
    math_sync();  // the two math warpgroups
    epi.tile_end(t);
  }
#else
  __trap();  // built without sm_90a: see the header comment
#endif
}

}  // namespace v2

// ---------------------------------------------------------------------------
// Host side.

namespace detail {
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!fn) {
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  return fn;
}

// rank-2 (or 3) bf16 tensor map: dims/strides innermost first, strides in bytes.
inline cudaError_t make_map(CUtensorMap *map, const void *base, int rank, const cuuint64_t *dims,
                            const cuuint64_t *strides, const cuuint32_t *box) {
  auto enc = tensor_map_encoder();
  if (!enc) return cudaErrorNotSupported;
  cuuint32_t estr[3] = {1, 1, 1};
  CUresult r = enc(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank, const_cast<void *>(base), dims,
                   strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                   CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

// The v2 kernel's tensor maps: A [M, K] in BK x BM boxes; B [K, N] (or G of
// them, 3-D) in 64-column boxes of BK rows.
inline cudaError_t v2_maps(const GemmArgs &args, CUtensorMap *ta_out, CUtensorMap *tb_out) {
  const bool grouped = args.group_offsets != nullptr;
  const bool batched = !grouped && args.num_groups > 1;
  cudaError_t e;
  // TMA wants non-zero extents; a K of 0 is described as 1 column that is never
  // loaded (ktiles = 0), so the kernel writes zeros.
  const cuuint64_t kdim = args.K > 0 ? (cuuint64_t)args.K : 1;
  CUtensorMap &ta = *ta_out, &tb = *tb_out;
  {
    cuuint64_t dims[2] = {kdim, (cuuint64_t)args.M};
    cuuint64_t strides[1] = {(cuuint64_t)(args.lda > 8 ? args.lda : 8) * 2};  // lda may be 0 when K is
    cuuint32_t box[2] = {v2::BK, v2::BM};
    if ((e = detail::make_map(&ta, args.A, 2, dims, strides, box)) != cudaSuccess) return e;
  }
  if (grouped || batched) {
    cuuint64_t dims[3] = {(cuuint64_t)args.N, kdim, (cuuint64_t)args.num_groups};
    cuuint64_t strides[2] = {(cuuint64_t)args.ldb * 2, (cuuint64_t)args.b_group_stride * 2};
    cuuint32_t box[3] = {64, v2::BK, 1};
    if ((e = detail::make_map(&tb, args.B, 3, dims, strides, box)) != cudaSuccess) return e;
  } else {
    cuuint64_t dims[2] = {(cuuint64_t)args.N, kdim};
    cuuint64_t strides[1] = {(cuuint64_t)args.ldb * 2};
    cuuint32_t box[2] = {64, v2::BK};
    if ((e = detail::make_map(&tb, args.B, 2, dims, strides, box)) != cudaSuccess) return e;
  }
  return cudaSuccess;
}

enum V2Kinds { kV2Any, kV2Dense, kV2Grouped };
// gemm_tile_v2_run and its dense / grouped forms: KINDS says which kernels
// this caller compiles (each is a wgmma kernel of its own, ~2 s of ptxas).
template <int Kinds, class Prologue, class Epilogue, class Sched>
cudaError_t v2_run(const GemmArgs &args, Prologue pro, Epilogue epi, Sched sched, int grid,
                   cudaStream_t stream) {
  cudaError_t e = gemm_tile_check_args(args);
  if (e != cudaSuccess) return e;
  const bool grouped = args.group_offsets != nullptr;
  const bool batched = !grouped && args.num_groups > 1;
  if ((Kinds == kV2Dense && grouped) || (Kinds == kV2Grouped && !grouped))
    return cudaErrorInvalidValue;
  if (batched && (args.num_groups > kMaxGroups || args.b_group_stride % 8))
    return cudaErrorInvalidValue;
  if (args.M == 0 || args.N == 0) return cudaSuccess;
  CUtensorMap ta, tb;
  if ((e = v2_maps(args, &ta, &tb)) != cudaSuccess) return e;
  using KernelFn = void (*)(CUtensorMap, CUtensorMap, GemmArgs, Prologue, Epilogue, Sched);
  KernelFn kernel = nullptr;
  if constexpr (Kinds != kV2Grouped)
    if (!grouped) kernel = v2::gemm_tile_v2_kernel<false, Prologue, Epilogue, Sched>;
  if constexpr (Kinds != kV2Dense)
    if (grouped) kernel = v2::gemm_tile_v2_kernel<true, Prologue, Epilogue, Sched>;
  static int cached_sms[2][64];  // attribute set + SM count, once per device and kernel
  int dev = 0;
  if ((e = cudaGetDevice(&dev)) != cudaSuccess) return e;
  int *slot = dev < 64 ? &cached_sms[grouped][dev] : nullptr;
  int sms = slot ? *slot : 0;
  if (sms == 0) {
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             v2::kSmemBytes);
    if (e != cudaSuccess) return e;
    if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess)
      return e;
    if (slot) *slot = sms;
  }
  if (grid <= 0) grid = sms;
  if (!grouped) {
    long long tiles = (long long)((args.M + v2::BM - 1) / v2::BM) * ((args.N + v2::BN - 1) / v2::BN) *
                      (batched ? args.num_groups : 1);
    if (tiles < grid) grid = (int)tiles;
  }
  kernel<<<grid, v2::kThreads, v2::kSmemBytes, stream>>>(ta, tb, args, pro, epi, sched);
  return cudaGetLastError();
}
}  // namespace detail

// Launch C = A*B with the v2 kernel (see gemm_tile_run for the arguments):
// dense, batched or grouped, as ARGS say.  grid <= 0: one CTA per SM.
// Returns the first CUDA error; cudaErrorNotSupported when the driver has no
// tensor-map encoder.  A caller that knows its kind compiles one kernel, not
// two: gemm_tile_v2_run_dense (dense or batched; grouped ARGS are
// cudaErrorInvalidValue) and gemm_tile_v2_run_grouped (grouped only).
template <class Prologue = GemmNoWait, class Epilogue = GemmStoreC,
          class Sched = GemmRasterSched<8>>
cudaError_t gemm_tile_v2_run(const GemmArgs &args, Prologue pro, Epilogue epi,
                             Sched sched = Sched(), int grid = 0, cudaStream_t stream = 0) {
  return detail::v2_run<detail::kV2Any>(args, pro, epi, sched, grid, stream);
}
template <class Prologue = GemmNoWait, class Epilogue = GemmStoreC,
          class Sched = GemmRasterSched<8>>
cudaError_t gemm_tile_v2_run_dense(const GemmArgs &args, Prologue pro, Epilogue epi,
                                   Sched sched = Sched(), int grid = 0, cudaStream_t stream = 0) {
  return detail::v2_run<detail::kV2Dense>(args, pro, epi, sched, grid, stream);
}
template <class Prologue = GemmNoWait, class Epilogue = GemmStoreC,
          class Sched = GemmRasterSched<8>>
cudaError_t gemm_tile_v2_run_grouped(const GemmArgs &args, Prologue pro, Epilogue epi,
                                     Sched sched = Sched(), int grid = 0,
                                     cudaStream_t stream = 0) {
  return detail::v2_run<detail::kV2Grouped>(args, pro, epi, sched, grid, stream);
}

}  // namespace cuco_gemm
