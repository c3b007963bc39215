// runtime/gemm_tile.cuh - cuco's shared, frozen bf16 tensor-core GEMM tile library.
//
// FROZEN: baselines and candidates #include and call this header; they never edit
// it (the evaluator treats runtime/ as outside every EVOLVE block).  Candidates
// fuse communication into the GEMM through three caller-supplied functors:
//
//   Prologue  "wait until this tile's inputs are ready" (e.g. poll the flag of
//             the all-gathered A chunk the tile reads),
//   Epilogue  "put the finished tile somewhere" (default: store to C; e.g. store
//             to a peer's window and raise a flag),
//   Scheduler the order in which a persistent CTA visits tiles.
//
// Math: C[M,N] = A[M,K] * B[K,N], bf16 inputs, fp32 accumulation, bf16 output.
// Layouts (fixed, "NN" row-major):
//   A row-major, element (m,k) at A[m*lda + k]   (lda >= K)
//   B row-major, element (k,n) at B[k*ldb + n]   (ldb >= N)   -- a column slice
//     of a wider B (GEMM+AllGather's B_r) is B + col0 with ldb = full width.
//   C row-major, element (m,n) at C[m*ldc + n]   (default epilogue)
// Requirements (checked by gemm_tile_check_args / gemm_tile_run):
//   lda % 8 == 0, ldb % 8 == 0, A and B 16-byte aligned (cp.async moves 16 B);
//   M, N, K are ANY non-negative values: tails are zero-filled by predicated
//   loads (bytes beyond K or N are never read) and stores are predicated.
//
// Grouped variant (MoE experts): groups of consecutive rows of A/C, each group
// with its own B.  Group g owns rows [off[g], off[g+1]) where off[] is an int
// array of num_groups+1 entries in DEVICE memory (no host sync); B of group g
// is B + g*b_group_stride.  Offsets are clamped to [0, M] (M = rows allocated),
// and a group whose end is below its start is empty, so poisoned or wrong
// offsets can never make the kernel read or write outside A/B/C.  Every CTA
// reads the offsets once at its start: they must be final by then (stream
// order), or CTAs disagree on the tile list.  At most kMaxGroups (1024) groups.
//
// Version 1 (this file): mma.sync.m16n8k16 (bf16 -> fp32) + ldmatrix + cp.async
// multi-stage pipeline, XOR-swizzled shared memory (conflict-free ldmatrix),
// persistent CTAs (grid = SM count by default) looping over a tile schedule.
// Builds with -arch=sm_80 or newer (the project builds with -arch=sm_90).
//
// Hook contracts (all functors are passed by value as kernel parameters, so
// they must be trivially copyable and hold device pointers only):
//
//   struct Prologue {
//     // Called by ONE thread of the CTA (v1: thread 0; v2: the TMA producer
//     // thread -- do not assume which, do not call __syncthreads) before any
//     // load of the tile's inputs is issued; the library orders every load of
//     // the tile after its return (v1: __syncthreads; v2: same thread, plus a
//     // proxy fence for TMA).  Typical: spin on a flag with an acquire load
//     // (gemm_wait_geq).
//     __device__ void wait(const GemmTile &t) const;
//   };
//   struct Epilogue {
//     // Called for every pair of finished elements (row, col) and (row, col+1)
//     // of the tile inside [m0,m_end) x [n0,n_end); col is even relative to n0
//     // (n0 is a multiple of the tile width); `two` is false when col+1 is
//     // outside the tile (odd N).  Values are fp32 accumulators.
//     __device__ void store(const GemmTile &t, int row, int col, float v0,
//                           float v1, bool two) const;
//     // Called by every thread that calls store() (v1: all threads; v2: the
//     // math warpgroups, which include threadIdx.x == 0) after a barrier over
//     // them that follows all of their store() calls of the tile (v1:
//     // __syncthreads).  Typical: thread 0 publishes a flag
//     // with gemm_publish (fence + release store).  A barrier followed by a
//     // fence in one thread orders all threads' earlier stores (PTX memory
//     // model cumulativity; the same pattern as CUTLASS's Semaphore::release).
//     __device__ void tile_end(const GemmTile &t) const;
//   };
//   struct Scheduler {
//     // Map work item w in [0, tiles_m*tiles_n) to a tile (tm, tn).  It must
//     // be a bijection; CTA b handles w = b, b+grid, b+2*grid, ...  For the
//     // grouped GEMM tiles_m counts the row tiles of all groups, concatenated
//     // in group order (the library maps tm to its group).
//     __device__ void map(int w, int tiles_m, int tiles_n, int *tm,
//                         int *tn) const;
//   };
//
// DEADLOCK NOTE: a prologue that waits on data produced by another kernel on
// the SAME GPU needs that kernel to be resident: launch it first, and/or give
// the GEMM fewer CTAs than SMs (grid argument).  The GEMM CTA uses most of an
// SM's shared memory and up to 255 registers per thread.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

namespace cuco_gemm {

// ---------------------------------------------------------------------------
// Tile configurations.  BK is fixed at 64 (128-byte smem rows for A: the XOR
// swizzle below needs rows of >= 8 16-byte chunks).

template <int BM_, int BN_, int WARPS_M_, int WARPS_N_, int STAGES_>
struct GemmConfig {
  static constexpr int BM = BM_;
  static constexpr int BN = BN_;
  static constexpr int BK = 64;
  static constexpr int WARPS_M = WARPS_M_;
  static constexpr int WARPS_N = WARPS_N_;
  static constexpr int STAGES = STAGES_;
  static constexpr int kThreads = 32 * WARPS_M * WARPS_N;
  static constexpr int WM = BM / WARPS_M;  // warp tile rows
  static constexpr int WN = BN / WARPS_N;  // warp tile cols
  static constexpr int MI = WM / 16;       // m16 fragments per warp
  static constexpr int NI = WN / 8;        // n8 fragments per warp
  static constexpr int kStageElems = BM * BK + BK * BN;
  static constexpr int kSmemBytes = STAGES * kStageElems * 2;
  static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be 16x16 multiples");
  static_assert(BN % 64 == 0, "B rows need >= 8 16-byte chunks for the swizzle");
  static_assert((BM * BK / 8) % kThreads == 0, "A tile chunks must split evenly");
  static_assert((BK * BN / 8) % kThreads == 0, "B tile chunks must split evenly");
  static_assert(STAGES >= 2, "at least two stages");
};

// 128x256 tile, 8 warps (2x4, 64x64 each), 4 stages: 192 KiB smem, 1 CTA/SM.
using GemmCfg128x256 = GemmConfig<128, 256, 2, 4, 4>;
// 128x128 tile, 4 warps (2x2, 64x64 each), 3 stages: 96 KiB smem, 2 CTAs/SM.
using GemmCfg128x128 = GemmConfig<128, 128, 2, 2, 3>;

constexpr int kMaxGroups = 1024;  // grouped GEMM: groups per launch

// ---------------------------------------------------------------------------
// Arguments and the per-tile description handed to hooks.

struct GemmArgs {
  const __nv_bfloat16 *A;  // [M, K], lda
  const __nv_bfloat16 *B;  // [K, N], ldb (group g: B + g*b_group_stride)
  long long lda, ldb;
  int M, N, K;             // grouped: M = rows allocated in A and C
  const int *group_offsets;  // nullptr: dense; else num_groups+1 device ints
  int num_groups;
  long long b_group_stride;  // elements between consecutive groups' B
};

struct GemmTile {
  int w;            // work index given to the scheduler
  int tm, tn;       // tile coordinates (tm over all groups when grouped)
  int group;        // 0 for dense
  int m0, m_end;    // rows [m0, m_end) of A and C
  int n0, n_end;    // cols [n0, n_end)
  int group_row0;   // first row of the tile's group (0 for dense)
};

// ---------------------------------------------------------------------------
// Synchronization helpers for hooks (system scope: observers may be peer GPUs).

// Spin until *flag >= value (acquire).  Returns false after timeout_ns
// (0 = wait forever) so tests can report a hang instead of hanging.
__device__ __forceinline__ bool gemm_wait_geq(const unsigned *flag, unsigned value,
                                              unsigned long long timeout_ns = 0) {
  unsigned long long t0 = 0;
  if (timeout_ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) {
    unsigned v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    if (v >= value) return true;
    if (timeout_ns) {
      unsigned long long t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      if (t - t0 > timeout_ns) return false;
    }
    __nanosleep(64);
  }
}

// Make this thread's earlier writes (and, after a __syncthreads, the CTA's)
// visible system-wide, then store value to *flag with release semantics.
__device__ __forceinline__ void gemm_publish(unsigned *flag, unsigned value) {
  __threadfence_system();
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}

// Store a pair of results as bf16 at p (p[0], and p[1] when two).
__device__ __forceinline__ void gemm_store_pair(__nv_bfloat16 *p, float v0, float v1,
                                                bool two) {
  if (two && ((reinterpret_cast<uintptr_t>(p) & 3) == 0)) {
    *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(v0, v1);
  } else {
    p[0] = __float2bfloat16_rn(v0);
    if (two) p[1] = __float2bfloat16_rn(v1);
  }
}

// ---------------------------------------------------------------------------
// Default hooks.

struct GemmNoWait {
  __device__ void wait(const GemmTile &) const {}
};

struct GemmStoreC {
  __nv_bfloat16 *C;
  long long ldc;
  __device__ void store(const GemmTile &, int row, int col, float v0, float v1,
                        bool two) const {
    gemm_store_pair(C + (long long)row * ldc + col, v0, v1, two);
  }
  __device__ void tile_end(const GemmTile &) const {}
};

// Row-panel raster: GROUP_M tile rows at a time, column by column inside the
// panel, so concurrently running CTAs share A rows and B columns in L2.
template <int GROUP_M = 8>
struct GemmRasterSched {
  __device__ void map(int w, int tiles_m, int tiles_n, int *tm, int *tn) const {
    int per_panel = GROUP_M * tiles_n;
    int panel = w / per_panel;
    int first = panel * GROUP_M;
    int rows = tiles_m - first < GROUP_M ? tiles_m - first : GROUP_M;
    int in = w - panel * per_panel;
    *tm = first + in % rows;
    *tn = in / rows;
  }
};

// GemmRasterSched over tile rows rotated to start at first_tm: with
// GEMM+AllGather, rank r sets first_tm to the first tile row of its own A chunk,
// so it computes on local data while the peers' chunks arrive (in ring order).
template <int GROUP_M = 8>
struct GemmRotateSched {
  int first_tm;
  __device__ void map(int w, int tiles_m, int tiles_n, int *tm, int *tn) const {
    GemmRasterSched<GROUP_M>{}.map(w, tiles_m, tiles_n, tm, tn);
    int f = tiles_m > 0 ? first_tm % tiles_m : 0;
    if (f < 0) f += tiles_m;
    *tm = (*tm + f) % tiles_m;
  }
};

// Prologue: wait until every chunk of chunk_rows rows of A that the tile
// touches has flags[chunk] >= epoch (e.g. all-gathered A: chunk = one rank's
// rows, flag raised by the sender after its data).  The calling thread polls; a wait
// longer than timeout_ns (0 = forever) sets *timed_out (if not null) and the
// tile goes on (a test then reports a hang instead of hanging).
struct GemmWaitRowChunks {
  const unsigned *flags;
  int chunk_rows;
  unsigned epoch;
  unsigned long long timeout_ns;
  unsigned *timed_out;
  __device__ void wait(const GemmTile &t) const {
    int c0 = t.m0 / chunk_rows, c1 = (t.m_end - 1) / chunk_rows;
    for (int c = c0; c <= c1; c++)
      if (!gemm_wait_geq(flags + c, epoch, timeout_ns) && timed_out) atomicExch(timed_out, 1u);
  }
};

// Epilogue: store to C (any device pointer: local or a peer's window, row and
// column offsets folded into C) and, when the tile is complete, publish
// tile_flags[tm * tiles_n + tn] = epoch (release, system scope).
struct GemmStoreCFlag {
  __nv_bfloat16 *C;
  long long ldc;
  unsigned *tile_flags;
  int tiles_n;
  unsigned epoch;
  __device__ void store(const GemmTile &, int row, int col, float v0, float v1,
                        bool two) const {
    gemm_store_pair(C + (long long)row * ldc + col, v0, v1, two);
  }
  __device__ void tile_end(const GemmTile &t) const {
    if (threadIdx.x == 0) gemm_publish(tile_flags + t.tm * tiles_n + t.tn, epoch);
  }
};

// Plain row-major order (tile row by tile row).
struct GemmRowMajorSched {
  __device__ void map(int w, int, int tiles_n, int *tm, int *tn) const {
    *tm = w / tiles_n;
    *tn = w % tiles_n;
  }
};

// ---------------------------------------------------------------------------
// PTX wrappers.

namespace detail {

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16-byte async copy; bytes in [0,16] are read from src, the rest zero-filled.
__device__ __forceinline__ void cp_async16(unsigned dst, const void *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned &r0, unsigned &r1, unsigned &r2,
                                                  unsigned &r3, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// D = A*B + D, m16n8k16, A row / B col fragments (PTX ISA fragment layouts).
__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4],
                                         unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Element offset of 16-byte chunk `chunk` of smem row `row` (row length `row_elems`
// bf16, a multiple of 64).  XOR swizzle: 8 consecutive rows read at the same
// logical chunk land in 8 different bank groups (ldmatrix is conflict-free).
__device__ __forceinline__ int swz(int row, int chunk, int row_elems) {
  return row * row_elems + ((chunk ^ (row & 7)) << 3);
}

// Group table of the grouped GEMM, built once per CTA in shared memory.
struct GroupTable {
  int tile_start[kMaxGroups + 1];  // prefix sum of row tiles per group
  int row_start[kMaxGroups + 1];   // clamped offsets
};

template <int BM, int THREADS>
__device__ void build_group_table(GroupTable &gt, const int *off, int G, int M) {
  // Clamp offsets into [0, M]; empty groups get size 0.
  for (int g = threadIdx.x; g <= G; g += THREADS) {
    int v = off[g];
    v = v < 0 ? 0 : (v > M ? M : v);
    gt.row_start[g] = v;
  }
  __syncthreads();
  // Block-wide exclusive scan of tile counts: each thread sums a contiguous
  // range of groups, then warp 0 scans the THREADS partial sums (shuffles).
  __shared__ int partial[THREADS + 1];
  const int per = (G + THREADS - 1) / THREADS;
  const int g0 = threadIdx.x * per;
  int sum = 0;
  for (int g = g0; g < g0 + per && g < G; g++) {
    int rows = gt.row_start[g + 1] - gt.row_start[g];
    sum += rows > 0 ? (rows + BM - 1) / BM : 0;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  static_assert(THREADS % 32 == 0, "whole warps");
  if (threadIdx.x < 32) {
    constexpr int PER = THREADS / 32;
    const int lane = threadIdx.x;
    int vals[PER];
    int own = 0;
#pragma unroll
    for (int i = 0; i < PER; i++) {
      vals[i] = partial[lane * PER + i];
      own += vals[i];
    }
    int inc = own;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      int y = __shfl_up_sync(0xffffffffu, inc, d);
      if (lane >= d) inc += y;
    }
    int ex = inc - own;
#pragma unroll
    for (int i = 0; i < PER; i++) {
      partial[lane * PER + i] = ex;
      ex += vals[i];
    }
    if (lane == 31) partial[THREADS] = inc;
  }
  __syncthreads();
  int run = partial[threadIdx.x];
  for (int g = g0; g < g0 + per && g < G; g++) {
    gt.tile_start[g] = run;
    int rows = gt.row_start[g + 1] - gt.row_start[g];
    run += rows > 0 ? (rows + BM - 1) / BM : 0;
  }
  if (threadIdx.x == 0) gt.tile_start[G] = partial[THREADS];
  __syncthreads();
}

// Largest g in [0, G) with tile_start[g] <= tm (tm < tile_start[G]).  Empty
// groups share their tile_start with the next group; the largest such g is the
// non-empty one.
__device__ __forceinline__ int find_group(const GroupTable &gt, int G, int tm) {
  int lo = 0, hi = G - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) >> 1;
    if (gt.tile_start[mid] <= tm) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

}  // namespace detail

// ---------------------------------------------------------------------------
// The persistent kernel.

template <class Cfg, bool kGrouped, class Prologue, class Epilogue, class Sched>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    gemm_tile_kernel(GemmArgs args, Prologue pro, Epilogue epi, Sched sched) {
  using namespace detail;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, STAGES = Cfg::STAGES;
  constexpr int THREADS = Cfg::kThreads;
  constexpr int MI = Cfg::MI, NI = Cfg::NI;
  extern __shared__ __align__(128) unsigned char gemm_smem_raw[];
  __nv_bfloat16 *smem = reinterpret_cast<__nv_bfloat16 *>(gemm_smem_raw);

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int wm = warp / Cfg::WARPS_N;  // warp row in the CTA tile
  const int wn = warp % Cfg::WARPS_N;  // warp col

  const int M = args.M, N = args.N, K = args.K;
  const int tiles_n = (N + BN - 1) / BN;
  int tiles_m;
  __shared__ typename std::conditional<kGrouped, GroupTable, int>::type gt_storage;
  const int G = args.num_groups;
  if constexpr (kGrouped) {
    build_group_table<BM, THREADS>(gt_storage, args.group_offsets, G, M);
    tiles_m = gt_storage.tile_start[G];
  } else {
    tiles_m = (M + BM - 1) / BM;
  }
  const int total = tiles_m * tiles_n;
  const int ktiles = (K + BK - 1) / BK;

  for (int w = blockIdx.x; w < total; w += gridDim.x) {
    GemmTile t;
    t.w = w;
    sched.map(w, tiles_m, tiles_n, &t.tm, &t.tn);
    if constexpr (kGrouped) {
      int g = find_group(gt_storage, G, t.tm);
      t.group = g;
      t.group_row0 = gt_storage.row_start[g];
      t.m0 = t.group_row0 + (t.tm - gt_storage.tile_start[g]) * BM;
      t.m_end = gt_storage.row_start[g + 1];
      if (t.m_end > t.m0 + BM) t.m_end = t.m0 + BM;
    } else {
      t.group = 0;
      t.group_row0 = 0;
      t.m0 = t.tm * BM;
      t.m_end = t.m0 + BM < M ? t.m0 + BM : M;
    }
    t.n0 = t.tn * BN;
    t.n_end = t.n0 + BN < N ? t.n0 + BN : N;

    const __nv_bfloat16 *A = args.A;
    const __nv_bfloat16 *B = args.B;
    if constexpr (kGrouped) B += (long long)t.group * args.b_group_stride;

    if (tid == 0) pro.wait(t);
    __syncthreads();

    // Issue the copies of k-tile kt into stage slot `slot`.
    auto load_stage = [&](int slot, int kt) {
      __nv_bfloat16 *sA = smem + slot * Cfg::kStageElems;
      __nv_bfloat16 *sB = sA + BM * BK;
      const int k0 = kt * BK;
#pragma unroll
      for (int j = 0; j < (BM * BK / 8) / THREADS; j++) {
        int i = tid + j * THREADS;
        int r = i / (BK / 8), c = i % (BK / 8);
        int gr = t.m0 + r, gk = k0 + c * 8;
        int bytes = 0;
        const __nv_bfloat16 *src = A;
        if (gr < t.m_end && gk < K) {
          bytes = (K - gk >= 8 ? 8 : K - gk) * 2;
          src = A + (long long)gr * args.lda + gk;
        }
        cp_async16(smem_addr(sA + swz(r, c, BK)), src, bytes);
      }
#pragma unroll
      for (int j = 0; j < (BK * BN / 8) / THREADS; j++) {
        int i = tid + j * THREADS;
        int r = i / (BN / 8), c = i % (BN / 8);
        int gk = k0 + r, gn = t.n0 + c * 8;
        int bytes = 0;
        const __nv_bfloat16 *src = B;
        if (gk < K && gn < N) {
          bytes = (N - gn >= 8 ? 8 : N - gn) * 2;
          src = B + (long long)gk * args.ldb + gn;
        }
        cp_async16(smem_addr(sB + swz(r, c, BN)), src, bytes);
      }
    };

    float acc[MI][NI][4];
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
      for (int ni = 0; ni < NI; ni++)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
      if (s < ktiles) load_stage(s, s);
      cp_async_commit();
    }

    for (int kt = 0; kt < ktiles; kt++) {
      cp_async_wait<STAGES - 2>();
      __syncthreads();  // stage kt landed for all; slot (kt-1)%STAGES is free
      {
        int nk = kt + STAGES - 1;
        if (nk < ktiles) load_stage(nk % STAGES, nk);
        cp_async_commit();
      }
      const __nv_bfloat16 *sA = smem + (kt % STAGES) * Cfg::kStageElems;
      const __nv_bfloat16 *sB = sA + BM * BK;
#pragma unroll
      for (int kk = 0; kk < BK / 16; kk++) {
        unsigned af[MI][4];
        unsigned bf[NI][2];
#pragma unroll
        for (int mi = 0; mi < MI; mi++) {
          // lanes 0-15: rows 0-15 at k-chunk 2kk; lanes 16-31: same rows, chunk 2kk+1
          int r = wm * Cfg::WM + mi * 16 + (lane & 15);
          int c = kk * 2 + (lane >> 4);
          ldmatrix_x4(af[mi], smem_addr(sA + swz(r, c, BK)));
        }
#pragma unroll
        for (int nj = 0; nj < NI / 2; nj++) {
          // lanes 0-7: k 0-7, 8-15: k 8-15 (n chunk j); 16-31: the same for chunk j+1
          int r = kk * 16 + (lane & 15);
          int c = (wn * Cfg::WN + nj * 16) / 8 + (lane >> 4);
          ldmatrix_x4_trans(bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0],
                            bf[2 * nj + 1][1], smem_addr(sB + swz(r, c, BN)));
        }
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
          for (int ni = 0; ni < NI; ni++) mma_bf16(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
      }
    }
    cp_async_wait<0>();
    __syncthreads();  // every warp is done reading smem before the next tile's loads

    // Epilogue.  Accumulator fragment e of (mi, ni): row = groupID (+8 for e>=2),
    // col = 2*(lane%4) + (e&1).
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
#pragma unroll
      for (int half = 0; half < 2; half++) {
        int row = t.m0 + wm * Cfg::WM + mi * 16 + (lane >> 2) + half * 8;
        if (row < t.m_end) {
#pragma unroll
          for (int ni = 0; ni < NI; ni++) {
            int col = t.n0 + wn * Cfg::WN + ni * 8 + (lane & 3) * 2;
            if (col < t.n_end)
              epi.store(t, row, col, acc[mi][ni][half * 2], acc[mi][ni][half * 2 + 1],
                        col + 1 < t.n_end);
          }
        }
      }
    }
    __syncthreads();
    epi.tile_end(t);
  }
}

// ---------------------------------------------------------------------------
// Host side.

// cudaSuccess when args satisfy the layout requirements above, else
// cudaErrorInvalidValue (nothing is launched).
inline cudaError_t gemm_tile_check_args(const GemmArgs &a) {
  if (a.M < 0 || a.N < 0 || a.K < 0) return cudaErrorInvalidValue;
  if (a.lda % 8 || a.ldb % 8 || a.lda < a.K || a.ldb < a.N) return cudaErrorInvalidValue;
  if ((reinterpret_cast<uintptr_t>(a.A) & 15) || (reinterpret_cast<uintptr_t>(a.B) & 15))
    return cudaErrorInvalidValue;
  if (a.group_offsets) {
    if (a.num_groups < 1 || a.num_groups > kMaxGroups) return cudaErrorInvalidValue;
    if (a.b_group_stride % 8) return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

// Launch C = A*B with the given hooks on `stream`.  grid <= 0 means one CTA per
// SM per resident slot (persistent).  Grouped when args.group_offsets != nullptr.
// Returns the first CUDA error (argument check, attribute, launch).
template <class Cfg, class Prologue = GemmNoWait, class Epilogue = GemmStoreC,
          class Sched = GemmRasterSched<8>>
cudaError_t gemm_tile_run(const GemmArgs &args, Prologue pro, Epilogue epi,
                          Sched sched = Sched(), int grid = 0, cudaStream_t stream = 0) {
  cudaError_t e = gemm_tile_check_args(args);
  if (e != cudaSuccess) return e;
  // v1 has no batched variant (num_groups > 1 without offsets: v2 only).
  if (!args.group_offsets && args.num_groups > 1) return cudaErrorNotSupported;
  const bool grouped = args.group_offsets != nullptr;
  auto kernel_dense = gemm_tile_kernel<Cfg, false, Prologue, Epilogue, Sched>;
  auto kernel_grouped = gemm_tile_kernel<Cfg, true, Prologue, Epilogue, Sched>;
  auto kernel = grouped ? kernel_grouped : kernel_dense;
  // Attribute and persistent grid size, once per device and kernel (host
  // overhead would otherwise show in the timing of small GEMMs).  Races are
  // benign: every thread computes the same values.
  static int cached_grid[2][64];
  int dev = 0;
  if ((e = cudaGetDevice(&dev)) != cudaSuccess) return e;
  int *slot = dev < 64 ? &cached_grid[grouped][dev] : nullptr;
  if (!slot || *slot == 0) {
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             Cfg::kSmemBytes);
    if (e != cudaSuccess) return e;
    int sms = 0, per_sm = 0;
    if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess)
      return e;
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Cfg::kThreads,
                                                      Cfg::kSmemBytes);
    if (e != cudaSuccess) return e;
    int g = sms * (per_sm > 0 ? per_sm : 1);
    if (!slot) {
      if (grid <= 0) grid = g;
    } else {
      *slot = g;
    }
  }
  if (grid <= 0) grid = slot ? *slot : 1;
  if (!grouped) {
    long long tiles = (long long)((args.M + Cfg::BM - 1) / Cfg::BM) *
                      ((args.N + Cfg::BN - 1) / Cfg::BN);
    if (tiles == 0) return cudaSuccess;
    if (tiles < grid) grid = (int)tiles;
  }
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(args, pro, epi, sched);
  return cudaGetLastError();
}

// Convenience: plain C = A*B (bf16 row-major, leading dimensions as above).
template <class Cfg = GemmCfg128x256>
cudaError_t gemm_tile_bf16(const __nv_bfloat16 *A, long long lda, const __nv_bfloat16 *B,
                           long long ldb, __nv_bfloat16 *C, long long ldc, int M, int N,
                           int K, cudaStream_t stream = 0) {
  GemmArgs a{A, B, lda, ldb, M, N, K, nullptr, 0, 0};
  return gemm_tile_run<Cfg>(a, GemmNoWait{}, GemmStoreC{C, ldc}, GemmRasterSched<8>{}, 0,
                            stream);
}

// Convenience: grouped C = A*B_g over device-side row offsets (num_groups+1 ints).
template <class Cfg = GemmCfg128x256>
cudaError_t gemm_tile_grouped_bf16(const __nv_bfloat16 *A, long long lda,
                                   const __nv_bfloat16 *B, long long ldb,
                                   long long b_group_stride, __nv_bfloat16 *C, long long ldc,
                                   int M_alloc, int N, int K, const int *group_offsets,
                                   int num_groups, cudaStream_t stream = 0) {
  GemmArgs a{A, B, lda, ldb, M_alloc, N, K, group_offsets, num_groups, b_group_stride};
  return gemm_tile_run<Cfg>(a, GemmNoWait{}, GemmStoreC{C, ldc}, GemmRasterSched<8>{}, 0,
                            stream);
}

}  // namespace cuco_gemm
