// workloads/kv_transfer/seed.cu - device-initiated KV handoff (LSA push).
//
// The seed is placement=split: prefill ranks compute each layer's [K|V] =
// X * W_l and RoPE (the frozen cuBLAS core in wl_kv.cuh) into staging; as
// soon as a layer is there, a push kernel on a communication stream (132
// CTAs of one warp, copy=bulk: a lane moves 4-row items through a 16 KiB
// shared-memory ring with cp.async.bulk, small enough to share an SM with
// the GEMM) copies its K and V rows straight into the decode rank's paged
// pool (symmetric window "pool") through ncclGetLsaPointer, under the next
// layer's GEMM, then release-stores the layer's ready flag(s) on that decode rank
// with the current epoch (nccl-device-api.md 3.6 / 5.3).  The decode rank's
// wait kernel spins until every flag of every layer from every sender
// carries the epoch; only then does its step stream move on, so its clock
// stops when all KV is in place.  At R = 1 the rank pushes into its own
// pool through the same window path and waits on its own flags.
//
// Flags carry rt_epoch(): the runtime advances it before every step, so no
// flag is ever reset and nothing from an earlier step satisfies a wait.
//
// Other points of the search space (directives in the EVOLVE block):
//  - direction=pull (CUCO-PARAM): the prefill rank only computes into its
//    staging window and raises each layer's ready flag on the decode rank;
//    the decode rank's pull kernel waits for a layer's flags, then reads
//    its rows from the senders' staging (ncclGetLsaPointer on "stage") into
//    its own pages.  Staging is rewritten only in the next step, which every
//    rank enters after the runtime's cross-rank barrier, i.e. after every
//    decode rank finished its pulls.
//  - placement=deferred: one push of every layer after the last GEMM.
//  - placement=per_tile: the KV projection runs on the shared GEMM tile
//    (runtime/gemm_tile_v2.cuh) per layer; its epilogue stores the tile
//    into the local staging rows, and tile_end applies RoPE (wl_kv.cuh's
//    kv_rope_pair and table) and stores the tile straight into the decode
//    rank's pages (push) or back into staging (pull); the layer's last tile
//    raises the layer's flag.
// Code outside the EVOLVE blocks is frozen.
#include <stdlib.h>
#include <string.h>

#include <cuda/atomic>

#include "gemm_tile_v2.cuh"  // wgmma + TMA (sm_90a); includes gemm_tile.cuh
#include "rt.cuh"
#include "wl_kv.cuh"

#define SD_FLAG_SLOTS 16  // flags per (sender, layer): one per comm CTA at most

struct sd {
  struct kv_shape s;
  struct kv_core core;
  void *X, *W, *pool, *stage;
  unsigned long long *flags;  // window [R][L][SD_FLAG_SLOTS]: epochs
  unsigned long long *done;   // local [L]: CTA completion counters
  int *dst;                   // device [S]: decode (LSA) rank of each row
  long long *slot;            // device [S]: slab offset of each row
  int *in_src;                // device [nin]: prefill rank of each incoming row
  long long *in_row;          // device [nin]: its row in that rank's staging
  long long *in_slot;         // device [nin]: its slab offset here
  long long nin;              // rows this (decode) rank receives
  unsigned long long dmask;   // decode ranks I send to
  unsigned long long pmask;   // prefill ranks that send to me
  ncclWindow_t pool_win, flag_win, stage_win;
  ncclDevComm dc;
  cudaStream_t comm;
  cudaStream_t hi;  // the prefill compute at the device's greatest priority (compute=hi)
  cudaEvent_t fork, join, *layer;
  cudaEvent_t join_hi;
};

// EVOLVE-BLOCK-START
// CUCO-DIRECTIVES backend=lsa placement=split sync=per_peer issuer=warp chunk=16KiB
// CUCO-PARAM comm_ctas=132
// CUCO-PARAM push_threads=32
// CUCO-PARAM direction=push
// CUCO-PARAM tile_launch=layer
// CUCO-PARAM compute=step
// CUCO-PARAM rope=kernel
// CUCO-PARAM copy=bulk
// CUCO-PARAM bulk_kib=16
#ifndef CUCO_PARAM_comm_ctas
#define CUCO_PARAM_comm_ctas 16
#endif
#ifndef CUCO_PARAM_push_threads
#define CUCO_PARAM_push_threads 1024
#endif
#ifndef CUCO_PARAM_direction
#define CUCO_PARAM_direction push
#endif
// direction=push|pull (a word, not a number): SD_DIR is 1 or 2, 0 if unknown.
#define SD_DIR_push 1
#define SD_DIR_pull 2
#define SD_CAT_(a, b) a##b
#define SD_CAT(a, b) SD_CAT_(a, b)
#define SD_DIR SD_CAT(SD_DIR_, CUCO_PARAM_direction)
#if SD_DIR != 1 && SD_DIR != 2
#error "CUCO-PARAM direction must be push or pull"
#endif
#define SD_PULL (SD_DIR == 2)
#ifndef CUCO_PARAM_tile_launch
#define CUCO_PARAM_tile_launch layer
#endif
// tile_launch=layer|all (per_tile only): one GEMM launch per layer, or one
// batched launch of the tile v2 for every layer (X shared, W_l per batch).
#define SD_TL_layer 1
#define SD_TL_all 2
#define SD_TL SD_CAT(SD_TL_, CUCO_PARAM_tile_launch)
#if SD_TL != 1 && SD_TL != 2
#error "CUCO-PARAM tile_launch must be layer or all"
#endif
#define SD_TILE_ALL (SD_TL == 2)
#ifndef CUCO_PARAM_compute
#define CUCO_PARAM_compute step
#endif
// compute=step|hi (a word): the prefill compute on the step stream, or on a
// stream of the device's greatest priority.  The push (comm stream) then
// gets SMs only where the next layer's GEMM leaves them: the block scheduler
// serves a higher-priority stream's waiting CTAs first, so a push of layer l
// does not hold SMs that GEMM l+1 needs for its wave (the step stream has
// the default priority, which is the least).
#define SD_CS_step 1
#define SD_CS_hi 2
#define SD_CS SD_CAT(SD_CS_, CUCO_PARAM_compute)
#if SD_CS != 1 && SD_CS != 2
#error "CUCO-PARAM compute must be step or hi"
#endif
#ifndef CUCO_PARAM_rope
#define CUCO_PARAM_rope kernel
#endif
// rope=kernel|push (a word; push direction, placements deferred and split):
// K's RoPE by the frozen kv_rope_kernel after each layer's GEMM, or by the
// push kernel itself with the frozen kv_rope_pair as it copies K into the
// pages (the layer's K is then read and written once, not twice, and the
// compute stream runs the GEMMs back to back).  Needs HD % 16 == 0 (a head
// half is whole 16-byte vectors); other HD take the kernel.  per_tile
// rotates in its epilogue whatever this says.
#define SD_RP_kernel 1
#define SD_RP_push 2
#define SD_RP SD_CAT(SD_RP_, CUCO_PARAM_rope)
#if SD_RP != 1 && SD_RP != 2
#error "CUCO-PARAM rope must be kernel or push"
#endif
#define SD_ROPE_PUSH (SD_RP == 2 && !SD_PULL && !SD_PER_TILE && CUCO_BACKEND != CUCO_BACKEND_GIN)
#define SD_PER_TILE (CUCO_PLACEMENT == CUCO_PLACEMENT_PER_TILE)
#ifndef CUCO_PARAM_copy
#define CUCO_PARAM_copy lanes
#endif
#ifndef CUCO_PARAM_bulk_kib
#define CUCO_PARAM_bulk_kib 64
#endif
// copy=lanes|bulk (a word; push direction, placements deferred and split):
// how the push moves a row.  lanes: the threads load 16-byte vectors into
// registers and store them (sd_copy16).  bulk: in each warp one lane moves
// whole rows with the copy engine of its SM (cp.async.bulk: a row into
// shared memory, then its K and V halves out to the pages), bulk_kib KiB of
// shared memory a CTA split among its warps as a ring of row buffers.  Many
// bytes in flight for a few registers: a push CTA then holds little of an
// SM besides that buffer, so fewer SMs are taken from the next layer's GEMM.
#define SD_CP_lanes 1
#define SD_CP_bulk 2
#define SD_CP SD_CAT(SD_CP_, CUCO_PARAM_copy)
#if SD_CP != 1 && SD_CP != 2
#error "CUCO-PARAM copy must be lanes or bulk"
#endif
#define SD_BULK (SD_CP == 2 && !SD_PULL && !SD_PER_TILE && CUCO_BACKEND != CUCO_BACKEND_GIN)
#if SD_BULK && SD_RP == 2
#error "copy=bulk moves rows as they are: it cannot rotate K (use rope=kernel)"
#endif
#if CUCO_PARAM_bulk_kib < 1 || CUCO_PARAM_bulk_kib > 220
#error "CUCO-PARAM bulk_kib must be 1..220 (KiB of row buffers a push CTA)"
#endif
#if CUCO_BACKEND == CUCO_BACKEND_GIN && (SD_PULL || SD_PER_TILE)
#error "direction=pull and placement=per_tile are LSA designs (loads/stores through windows)"
#endif
// sync=global is not in this workload's space (a barrier over all ranks
// would also stall prefill ranks on each other); it builds as per_peer.
// One flag per (sender, layer) where the layer has no per-CTA chunks: with
// per_tile (the layer's last tile raises it) and with pull (the prefill
// rank raises it once the layer is in its staging), per_chunk is per_peer.
#define SD_CHUNK_FLAGS (CUCO_SYNC == CUCO_SYNC_PER_CHUNK && !SD_PER_TILE && !SD_PULL)
// Per-CTA flags need a slot each; per_peer counts CTAs, so any number will do.
#if SD_CHUNK_FLAGS && CUCO_PARAM_comm_ctas > SD_FLAG_SLOTS
#error "sync=per_chunk needs comm_ctas <= 16 (SD_FLAG_SLOTS flags per sender and layer)"
#endif

__device__ static inline void sd_store_release(unsigned long long *p, unsigned long long v) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> f(*p);
  f.store(v, cuda::memory_order_release);
}

// Release-store EPOCH into flag SLOT (0: the layer's; per_chunk: the CTA's)
// of sender ME's layer L on every decode rank in DMASK.
__device__ static inline void sd_raise_layer(ncclWindow_t flag_win, int me, long long L,
                                             long long l, unsigned long long dmask,
                                             unsigned long long epoch, int slot = 0) {
  for (int d = 0; d < 64; d++)
    if (dmask >> d & 1)
      sd_store_release((unsigned long long *)ncclGetLsaPointer(
                           flag_win, (((size_t)me * L + l) * SD_FLAG_SLOTS + slot) * 8, d),
                       epoch);
}

// Copy N 16-byte vectors SRC[0..N) to DST: vector k to d0[k] below SPLIT,
// to d1[k - SPLIT] from it (K and V of a row go to two places in the
// pages); lanes [LANE, .. by NLANES) of the issuer take them.  Eight loads
// in flight per lane before their stores: a load-then-store loop keeps one
// 16-byte load per lane in flight (the compiler cannot hoist a load above a
// store through another pointer), so a copy on a few CTAs is bound by
// memory latency, not bandwidth.
__device__ static inline void sd_copy16(uint4 *d0, uint4 *d1, long long split, const uint4 *src,
                                        long long n, unsigned lane, unsigned nlanes) {
  constexpr int U = 8;
  for (long long k0 = lane; k0 < n; k0 += (long long)U * nlanes) {
    uint4 v[U];
#pragma unroll
    for (int j = 0; j < U; j++) {
      const long long k = k0 + (long long)j * nlanes;
      if (k < n) v[j] = src[k];
    }
#pragma unroll
    for (int j = 0; j < U; j++) {
      const long long k = k0 + (long long)j * nlanes;
      if (k < n) (k < split ? d0 : d1 - split)[k] = v[j];
    }
  }
}

// Copy one token row (K and V, W elements each) of layer L to its slot in
// the decode rank's pool; VEC16 = W / 8 uint4 per half.
__device__ static inline void sd_row(ncclWindow_t pool_win, const uint4 *src, int d,
                                     long long slot, long long l, long long slab,
                                     long long vec16, unsigned lane, unsigned nlanes) {
  // The peer's K and V rows of this token (a window maps contiguously).
  uint4 *kd = (uint4 *)ncclGetLsaPointer(pool_win, ((size_t)(l * 2) * slab + slot) * 2, d);
  uint4 *vd = kd + (size_t)slab / 8;  // slab elements of bf16 = slab / 8 uint4
  sd_copy16(kd, vd, vec16, src, 2 * vec16, lane, nlanes);
}

// sd_row with K's RoPE (rope=push): the K half as pair units (vector a at
// column h*HD + 8i of head h, its partner b HD/2 further), rotated by the
// frozen kv_rope_pair with row CS's table entries; then the V half as is.
// Two pair units (four loads) in flight per lane: four spill at 64 registers.
__device__ static inline void sd_row_rope(ncclWindow_t pool_win, const uint4 *src, int d,
                                          long long slot, long long l, long long slab,
                                          long long W, int hd, const float2 *cs_row,
                                          unsigned lane, unsigned nlanes) {
  uint4 *kd = (uint4 *)ncclGetLsaPointer(pool_win, ((size_t)(l * 2) * slab + slot) * 2, d);
  uint4 *vd = kd + (size_t)slab / 8;
  const int half = hd / 2, hv = half / 8;  // vectors per head half
  const long long nk = W / 16, nv = W / 8;
  constexpr int U = 2;  // 4: spills at 1024 threads (64 registers)
  for (long long u0 = lane; u0 < nk; u0 += (long long)U * nlanes) {
    uint4 a[U], b[U];
#pragma unroll
    for (int j = 0; j < U; j++) {
      const long long u = u0 + (long long)j * nlanes;
      if (u < nk) {
        const long long va = (u / hv) * (hd / 8) + u % hv;  // vector index of a
        a[j] = src[va];
        b[j] = src[va + hv];
      }
    }
#pragma unroll
    for (int j = 0; j < U; j++) {
      const long long u = u0 + (long long)j * nlanes;
      if (u >= nk) continue;
      const long long va = (u / hv) * (hd / 8) + u % hv;
      const float2 *cs = cs_row + (u % hv) * 8;
      __nv_bfloat16 *pa = (__nv_bfloat16 *)&a[j], *pb = (__nv_bfloat16 *)&b[j];
#pragma unroll
      for (int e = 0; e < 8; e++) {
        float ra, rb;
        kv_rope_pair(__bfloat162float(pa[e]), __bfloat162float(pb[e]), cs[e], &ra, &rb);
        pa[e] = __float2bfloat16(ra);
        pb[e] = __float2bfloat16(rb);
      }
      kd[va] = a[j];
      kd[va + hv] = b[j];
    }
  }
  sd_copy16(vd, vd, nv, src + nv, nv, lane, nlanes);
}

// One row of the push: plain, or with K's RoPE (ROPE: rope=push and HD % 16
// == 0; POS and TAB the frozen positions and cos/sin table).
__device__ static inline void sd_row_any(ncclWindow_t pool_win, const uint4 *src, int d,
                                         long long slot, long long l, long long slab,
                                         long long vec16, int rope, int hd, int pos,
                                         const float2 *tab, unsigned lane, unsigned nlanes) {
  if (rope)
    sd_row_rope(pool_win, src, d, slot, l, slab, vec16 * 8, hd, tab + (long long)pos * (hd / 2),
                lane, nlanes);
  else
    sd_row(pool_win, src, d, slot, l, slab, vec16, lane, nlanes);
}

// A push CTA's end of layer L (thread 0, after a CTA barrier): its stores
// made visible system-wide, then sync=per_chunk: its own flag on every decode
// rank in DMASK; per_peer: the layer's last CTA (by the counter DONE[l],
// which every step adds the grid size to) raises the layer's flag.
__device__ static inline void sd_layer_signal(ncclWindow_t flag_win, unsigned long long *done,
                                              long long l, long long L, int me,
                                              unsigned long long dmask,
                                              unsigned long long epoch) {
  __threadfence_system();
#if SD_CHUNK_FLAGS
  (void)done;
  sd_raise_layer(flag_win, me, L, l, dmask, epoch, (int)blockIdx.x);
#else
  unsigned long long old = atomicAdd(&done[l], 1ull);
  if (old == epoch * gridDim.x - 1) {  // the last CTA of layer l
    __threadfence_system();
    sd_raise_layer(flag_win, me, L, l, dmask, epoch);
  }
#endif
}

// Push layers [L0, L1) of this prefill rank: CTA b takes items b, b+G, ...
// of TPI rows each; then signals (sync=per_chunk: its own flag; per_peer:
// the last CTA of the layer raises the layer flag) on every decode rank in
// DMASK.
template <int ROPE>
__global__ void __launch_bounds__(1024)
sd_push(ncclWindow_t pool_win, ncclWindow_t flag_win, const __nv_bfloat16 *stage,
        const int *dst, const long long *slot, long long S, long long W, long long slab,
        long long L, long long l0, long long l1, long long tpi, int me,
        unsigned long long dmask, unsigned long long epoch, unsigned long long *done, int hd,
        const int *pos, const float2 *tab) {
  const long long vec16 = W / 8, items = (S + tpi - 1) / tpi;
  for (long long l = l0; l < l1; l++) {
    const uint4 *lay = (const uint4 *)(stage + (size_t)l * S * 2 * W);
    for (long long it = blockIdx.x; it < items; it += gridDim.x) {
      long long r0 = it * tpi, r1 = r0 + tpi < S ? r0 + tpi : S;
#if CUCO_ISSUER == CUCO_ISSUER_CTA
      for (long long r = r0; r < r1; r++)
        sd_row_any(pool_win, lay + r * 2 * vec16, dst[r], slot[r], l, slab, vec16, ROPE, hd,
                   pos[r], tab, threadIdx.x, blockDim.x);
#elif CUCO_ISSUER == CUCO_ISSUER_WARP
      for (long long r = r0 + threadIdx.x / 32; r < r1; r += blockDim.x / 32)
        sd_row_any(pool_win, lay + r * 2 * vec16, dst[r], slot[r], l, slab, vec16, ROPE, hd,
                   pos[r], tab, threadIdx.x & 31, 32);
#else
      for (long long r = r0 + threadIdx.x; r < r1; r += blockDim.x)
        sd_row_any(pool_win, lay + r * 2 * vec16, dst[r], slot[r], l, slab, vec16, ROPE, hd,
                   pos[r], tab, 0, 1);
#endif
    }
    __syncthreads();
    if (threadIdx.x == 0) sd_layer_signal(flag_win, done, l, L, me, dmask, epoch);
  }
}

#if SD_BULK
// cp.async.bulk (sm_90): global -> shared with the byte count on BAR, and
// shared -> global in the issuing thread's bulk group.
__device__ __forceinline__ void sd_bulk_load(void *sdst, const void *gsrc, unsigned bytes,
                                             uint64_t *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(cuco_gemm::v2::smem_u32(sdst)),
      "l"(gsrc), "r"(bytes), "r"(cuco_gemm::v2::smem_u32(bar))
      : "memory");
#else
  __trap();  // copy=bulk needs sm_90
#endif
}
__device__ __forceinline__ void sd_bulk_store(void *gdst, const void *ssrc, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(gdst),
               "r"(cuco_gemm::v2::smem_u32(ssrc)), "r"(bytes)
               : "memory");
#endif
}

#define SD_BULK_BARS 64  // row buffers a CTA at most (one mbarrier each)

// The push with copy=bulk: layers [L0, L1) as sd_push, CTA b taking items
// b, b+G, ... of TPI rows; within a CTA, warp w's lane 0 takes the CTA's
// rows w, w+NW, ... through its ring of NBUF row buffers (4W bytes each):
// a row's load is issued NBUF - 1 rows ahead, into the buffer of the row
// before, once that row's store has read it out.  Before
// the layer's flags every lane 0 waits until its stores are complete; the
// proxy fence orders those async-proxy writes before the generic release.
// At most 32 registers a thread (1024 threads, 2 CTAs an SM): the lone
// issuing lane needs few, and a CTA that small may share an SM with a GEMM
// CTA that leaves a warp's worth of the register file.
__global__ void __launch_bounds__(1024, 2)
sd_push_bulk(ncclWindow_t pool_win, ncclWindow_t flag_win, const __nv_bfloat16 *stage,
             const int *dst, const long long *slot, long long S, long long W, long long slab,
             long long L, long long l0, long long l1, long long tpi, int me,
             unsigned long long dmask, unsigned long long epoch, unsigned long long *done,
             int nbuf) {
  // dynamic shared memory: the mbarriers (SD_BULK_BARS), then the rows
  extern __shared__ __align__(128) unsigned char sd_sbuf[];
  namespace v2 = cuco_gemm::v2;
  const long long nw = blockDim.x / 32, w = threadIdx.x / 32, G = gridDim.x, b = blockIdx.x;
  const unsigned rb = (unsigned)(4 * W), hb = rb / 2;
  unsigned char *buf = sd_sbuf + SD_BULK_BARS * 8 + (size_t)w * nbuf * rb;
  uint64_t *bar = (uint64_t *)sd_sbuf + w * nbuf;
  const bool issuer = (threadIdx.x & 31) == 0;
  if (issuer)
    for (int i = 0; i < nbuf; i++) v2::mbar_init(&bar[i], 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  // This CTA's rows of a layer: the items b + m*G (m < full), TPI rows
  // each, less the tail of item ITEMS - 1 if it is this CTA's.
  const long long items = (S + tpi - 1) / tpi;
  const long long full = items > b ? (items - b + G - 1) / G : 0;
  const long long n = full * tpi - ((items - 1) % G == b ? items * tpi - S : 0);
  const long long m = n > w ? (n - w + nw - 1) / nw : 0;  // this warp's rows
  unsigned long long seq = 0;  // rows this warp has moved before this layer
  for (long long l = l0; l < l1; l++) {
    if (issuer && m > 0) {
      const unsigned char *lay = (const unsigned char *)(stage + (size_t)l * S * 2 * W);
      // the k-th row of this warp: row r of the layer
      auto row = [&](long long k) {
        const long long j = w + k * nw;
        return (b + (j / tpi) * G) * tpi + j % tpi;
      };
      const long long ahead = nbuf - 1;
      for (long long k = 0; k < ahead && k < m; k++) {
        const unsigned i = (unsigned)((seq + k) % nbuf);
        v2::mbar_expect_tx(&bar[i], rb);
        sd_bulk_load(buf + (size_t)i * rb, lay + (size_t)row(k) * rb, rb, &bar[i]);
      }
      for (long long k = 0; k < m; k++) {
        const unsigned long long q = seq + k;
        const unsigned i = (unsigned)(q % nbuf);
        v2::mbar_wait(&bar[i], (unsigned)((q / nbuf) & 1));
        const long long r = row(k);
        unsigned char *kd = (unsigned char *)ncclGetLsaPointer(
            pool_win, ((size_t)(l * 2) * slab + slot[r]) * 2, dst[r]);
        sd_bulk_store(kd, buf + (size_t)i * rb, hb);
        sd_bulk_store(kd + (size_t)slab * 2, buf + (size_t)i * rb + hb, hb);
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        if (k + ahead < m) {
          // row k + ahead goes into the buffer of row k - 1, whose store
          // group is the one before this row's
          asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
          const unsigned j = (unsigned)((q + ahead) % nbuf);
          v2::mbar_expect_tx(&bar[j], rb);
          sd_bulk_load(buf + (size_t)j * rb, lay + (size_t)row(k + ahead) * rb, rb, &bar[j]);
        }
      }
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
      asm volatile("fence.proxy.async.global;" ::: "memory");
    }
    seq += m;
    __syncthreads();
    if (threadIdx.x == 0) sd_layer_signal(flag_win, done, l, L, me, dmask, epoch);
  }
}
#endif

// Decode side: spin until every flag of every layer from every sender in
// PMASK holds EPOCH (NF flags per layer).
__global__ void sd_wait(const unsigned long long *flags, unsigned long long pmask, long long L,
                        int nf, unsigned long long epoch) {
  for (int p = 0; p < 64; p++) {
    if (!(pmask >> p & 1)) continue;
    for (long long k = threadIdx.x; k < L * nf; k += blockDim.x) {
      cuda::atomic_ref<const unsigned long long, cuda::thread_scope_system> f(
          flags[((size_t)p * L + k / nf) * SD_FLAG_SLOTS + k % nf]);
      while (f.load(cuda::memory_order_acquire) < epoch) __nanosleep(64);
    }
  }
  __syncthreads();
}

// direction=pull, prefill side: after layers [L0, L1) are in staging (stream
// order), raise their ready flags on every decode rank in DMASK.
__global__ void sd_ready(ncclWindow_t flag_win, int me, long long L, long long l0, long long l1,
                         unsigned long long dmask, unsigned long long epoch) {
  if (threadIdx.x != 0) return;
  __threadfence_system();  // the layers' staging rows, written by earlier kernels
  for (long long l = l0; l < l1; l++) sd_raise_layer(flag_win, me, L, l, dmask, epoch);
}

// Copy one incoming row (K and V halves, VEC16 uint4 each) from SRC (a
// sender's staging row) to KD (its K slot here; V is SLAB16 uint4 further),
// four 16-byte loads in flight per lane (remote loads are latency bound).
__device__ static inline void sd_pull_row(const uint4 *src, uint4 *kd, long long slab16,
                                          long long vec16, unsigned lane, unsigned nl) {
  uint4 *vd = kd + slab16 - vec16;  // element k >= vec16 goes to vd[k]
  const long long n = 2 * vec16;
  long long k = lane;
  for (; k + 3 * nl < n; k += 4 * nl) {
    uint4 a = src[k], b = src[k + nl], c = src[k + 2 * nl], e = src[k + 3 * nl];
    (k < vec16 ? kd : vd)[k] = a;
    (k + nl < vec16 ? kd : vd)[k + nl] = b;
    (k + 2 * nl < vec16 ? kd : vd)[k + 2 * nl] = c;
    (k + 3 * nl < vec16 ? kd : vd)[k + 3 * nl] = e;
  }
  for (; k < n; k += nl) (k < vec16 ? kd : vd)[k] = src[k];
}

// direction=pull, decode side: for each layer, wait until every sender in
// PMASK has raised its flag (one thread, acquire; then the CTA barrier),
// then copy items of TPI incoming rows (CTA b: items b, b+G, ...) from the
// senders' staging windows into this rank's pool.
__global__ void __launch_bounds__(1024)
sd_pull(ncclWindow_t stage_win, const unsigned long long *flags, __nv_bfloat16 *pool,
        const int *src, const long long *row, const long long *slot, long long nin,
        long long S, long long W, long long slab, long long L, long long tpi,
        unsigned long long pmask, unsigned long long epoch) {
  const long long vec16 = W / 8, items = (nin + tpi - 1) / tpi;
  for (long long l = 0; l < L; l++) {
    if (threadIdx.x == 0)
      for (int p = 0; p < 64; p++)
        if (pmask >> p & 1) {
          cuda::atomic_ref<const unsigned long long, cuda::thread_scope_system> f(
              flags[((size_t)p * L + l) * SD_FLAG_SLOTS]);
          while (f.load(cuda::memory_order_acquire) < epoch) __nanosleep(64);
        }
    __syncthreads();
    uint4 *kl = (uint4 *)(pool + (size_t)(l * 2) * slab);
    const size_t loff = (size_t)l * S * 2 * W;  // layer l's staging, elements
    for (long long it = blockIdx.x; it < items; it += gridDim.x) {
      long long r0 = it * tpi, r1 = r0 + tpi < nin ? r0 + tpi : nin;
#if CUCO_ISSUER == CUCO_ISSUER_CTA
      for (long long r = r0; r < r1; r++)
        sd_pull_row((const uint4 *)ncclGetLsaPointer(stage_win, (loff + row[r] * 2 * W) * 2,
                                                     src[r]),
                    kl + slot[r] / 8, slab / 8, vec16, threadIdx.x, blockDim.x);
#elif CUCO_ISSUER == CUCO_ISSUER_WARP
      for (long long r = r0 + threadIdx.x / 32; r < r1; r += blockDim.x / 32)
        sd_pull_row((const uint4 *)ncclGetLsaPointer(stage_win, (loff + row[r] * 2 * W) * 2,
                                                     src[r]),
                    kl + slot[r] / 8, slab / 8, vec16, threadIdx.x & 31, 32);
#else
      for (long long r = r0 + threadIdx.x; r < r1; r += blockDim.x)
        sd_pull_row((const uint4 *)ncclGetLsaPointer(stage_win, (loff + row[r] * 2 * W) * 2,
                                                     src[r]),
                    kl + slot[r] / 8, slab / 8, vec16, 0, 1);
#endif
    }
    __syncthreads();  // no CTA runs ahead into the next layer's wait alone
  }
}

// placement=per_tile: the epilogue of the shared GEMM tile (v1: every
// thread of the CTA calls store() and tile_end()).  store() puts the bf16
// pair into layer L's local staging rows; tile_end() (after the library's
// barrier, so the CTA sees all of them) takes the tile's K pairs (i, i+HD/2)
// of each head -- whole heads lie in one tile, as HD divides the tile width
// -- rotates them with the frozen kv_rope_pair and table, and stores K and V
// into row r's slot on decode rank dst[r] (push) or rotates K in place
// (pull).  Then the CTA barrier, and thread 0 counts the tile; the layer's
// last tile of this step raises the layer's flag on every decode rank.
struct SdTileEpi {
  __nv_bfloat16 *stage;  // staging [L][S][2W]; a tile's layer is l0 + its batch
  ncclWindow_t pool_win, flag_win;
  const int *dst;
  const long long *slot;
  const int *pos;
  const float2 *rope;
  unsigned long long *done;
  unsigned long long dmask, epoch;
  long long W, slab, l0, L, S;
  int hd, me, tiles;

  // Layer L's staging rows (t.group: the batch of a tile_launch=all launch).
  __device__ __nv_bfloat16 *layer_stage(long long l) const { return stage + l * S * 2 * W; }
  __device__ void store(const cuco_gemm::GemmTile &t, int row, int col, float v0, float v1,
                        bool two) const {
    cuco_gemm::gemm_store_pair(layer_stage(l0 + t.group) + (long long)row * 2 * W + col, v0, v1,
                               two);
  }
  // Element pointer of (row R, half KV, column C of the half) of layer L in R's pages.
  __device__ __nv_bfloat16 *page(long long l, int r, int kv, long long c) const {
    return (__nv_bfloat16 *)ncclGetLsaPointer(
        pool_win, ((size_t)(l * 2 + kv) * slab + slot[r] + c) * 2, dst[r]);
  }
  __device__ void tile_end(const cuco_gemm::GemmTile &t) const {
    const long long l = l0 + t.group;
    __nv_bfloat16 *const stage_l = layer_stage(l);
    const int half = hd / 2, rows = t.m_end - t.m0;
    if (hd % 16 == 0) {  // 16-byte vectors; a head half is whole vectors
      const int nv = (t.n_end - t.n0) / 8;
      for (int k = threadIdx.x; k < rows * nv; k += cuco_gemm::v2::kMathThreads) {
        const int r = t.m0 + k / nv;
        const long long col = t.n0 + (long long)(k % nv) * 8;
        __nv_bfloat16 *x = stage_l + (long long)r * 2 * W;
        if (col >= W) {  // V: as computed
          if (!SD_PULL) *(uint4 *)page(l, r, 1, col - W) = *(const uint4 *)(x + col);
          continue;
        }
        const int i0 = (int)(col % hd);
        if (i0 >= half) continue;  // the partner vector's thread rotates it
        uint4 va = *(const uint4 *)(x + col), vb = *(const uint4 *)(x + col + half);
        __nv_bfloat16 *pa = (__nv_bfloat16 *)&va, *pb = (__nv_bfloat16 *)&vb;
        const float2 *cs = rope + (long long)pos[r] * half + i0;
#pragma unroll
        for (int j = 0; j < 8; j++) {
          float ra, rb;
          kv_rope_pair(__bfloat162float(pa[j]), __bfloat162float(pb[j]), cs[j], &ra, &rb);
          pa[j] = __float2bfloat16(ra);
          pb[j] = __float2bfloat16(rb);
        }
#if SD_PULL
        *(uint4 *)(x + col) = va;
        *(uint4 *)(x + col + half) = vb;
#else
        *(uint4 *)page(l, r, 0, col) = va;
        *(uint4 *)page(l, r, 0, col + half) = vb;
#endif
      }
    } else {  // HD in {2, 4, 8}: one element pair at a time
      const int ne = t.n_end - t.n0;
      for (int k = threadIdx.x; k < rows * ne; k += cuco_gemm::v2::kMathThreads) {
        const int r = t.m0 + k / ne;
        const long long col = t.n0 + k % ne;
        __nv_bfloat16 *x = stage_l + (long long)r * 2 * W;
        if (col >= W) {
          if (!SD_PULL) *page(l, r, 1, col - W) = x[col];
          continue;
        }
        const int i = (int)(col % hd);
        if (i >= half) continue;
        float ra, rb;
        kv_rope_pair(__bfloat162float(x[col]), __bfloat162float(x[col + half]),
                     rope[(long long)pos[r] * half + i], &ra, &rb);
#if SD_PULL
        x[col] = __float2bfloat16(ra);
        x[col + half] = __float2bfloat16(rb);
#else
        *page(l, r, 0, col) = __float2bfloat16(ra);
        *page(l, r, 0, col + half) = __float2bfloat16(rb);
#endif
      }
    }
    cuco_gemm::v2::math_sync();  // v2: the producer warp is gone, no __syncthreads
    if (threadIdx.x == 0) {
      __threadfence_system();
      unsigned long long old = atomicAdd(&done[l], 1ull);
      if ((old + 1) % (unsigned long long)tiles == 0) {  // every step adds TILES per layer
        __threadfence_system();
        sd_raise_layer(flag_win, me, L, l, dmask, epoch);
      }
    }
  }
};

#if CUCO_BACKEND == CUCO_BACKEND_GIN
// GIN variant (multi-node; compiled, not exercised on one node): one put
// per row half from the staging window, one signal per (CTA, layer) and
// decode rank; signal id = sender * L + layer counts G arrivals per step.
__global__ void sd_push_gin(ncclDevComm dc, ncclWindow_t pool_win, ncclWindow_t stage_win,
                            const int *dst, const long long *slot, long long S, long long W,
                            long long slab, long long L, long long l0, long long l1,
                            long long tpi, int me, unsigned long long dmask) {
  if (dc.ginContextCount == 0) return;
  ncclGin gin(dc, 0);
  const long long items = (S + tpi - 1) / tpi;
  for (long long l = l0; l < l1; l++) {
    for (long long it = blockIdx.x; it < items; it += gridDim.x)
      for (long long r = it * tpi; r < (it + 1) * tpi && r < S; r++)
        for (int kv = 0; kv < 2; kv++)
          gin.put(ncclTeamWorld(dc), dst[r], pool_win,
                  ((size_t)(l * 2 + kv) * slab + slot[r]) * 2, stage_win,
                  ((size_t)l * S * 2 * W + r * 2 * W + kv * W) * 2, (size_t)W * 2,
                  ncclGin_None{}, ncclGin_None{}, ncclCoopCta());
    for (int d = 0; d < 64; d++)
      if (dmask >> d & 1)
        gin.signal(ncclTeamWorld(dc), d, ncclGin_SignalInc{(unsigned)(me * L + l)},
                   ncclCoopCta());
  }
  gin.flush(ncclCoopCta());
}

__global__ void sd_wait_gin(ncclDevComm dc, unsigned long long pmask, long long L, int g,
                            unsigned long long epoch) {
  if (dc.ginContextCount == 0) return;
  ncclGin gin(dc, 0);
  for (int p = 0; p < 64; p++)
    if (pmask >> p & 1)
      for (long long l = 0; l < L; l++)
        gin.waitSignal(ncclCoopCta(), (unsigned)(p * L + l), epoch * g);
}
#endif

// rope=push applies here: the push rotates K (HD % 16 == 0), the compute
// is the GEMM alone.
static inline int sd_rope_in_push(const struct kv_shape *s) {
  return SD_ROPE_PUSH && s->HD % 16 == 0;
}

[[maybe_unused]] static int push(struct wl_ctx *ctx, struct sd *u, long long l0,
                                 long long l1, unsigned long long ep) {
  const struct kv_shape *s = &u->s;
  long long tpi = CUCO_CHUNK_BYTES / (4 * s->W);
  if (tpi < 1) tpi = 1;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  sd_push_gin<<<CUCO_PARAM_comm_ctas, 32, 0, u->comm>>>(
      u->dc, u->pool_win, u->stage_win, u->dst, u->slot, s->S, s->W,
      (long long)kv_slab_elems(s), s->L, l0, l1, tpi, s->me, u->dmask);
#else
  // sd_push<1> only where rope=push is built (it spills a little at 64
  // registers, and needs no ptxas time elsewhere)
#if SD_BULK
  // copy=bulk: bulk_kib KiB of row buffers a CTA, shared by its warps
  // bulk_kib of row buffers, as many a warp as fit (small rows: at most
  // SD_BULK_BARS a CTA), after the mbarriers
  const int nwarp = CUCO_PARAM_push_threads / 32, cap = SD_BULK_BARS / nwarp;
  long long nbuf = CUCO_PARAM_bulk_kib * 1024LL / (nwarp * 4 * s->W);
  if (nbuf > cap) nbuf = cap;
  if (nbuf < 2)
    return rt_fail(ctx,
                   "copy=bulk: bulk_kib=%d holds %lld row buffers of %lld bytes for each of %d "
                   "warps; it needs 2 (more bulk_kib or fewer push_threads)",
                   CUCO_PARAM_bulk_kib, nbuf, 4 * s->W, nwarp);
  const int bytes = SD_BULK_BARS * 8 + CUCO_PARAM_bulk_kib * 1024;
  // over 48 KiB of dynamic shared memory must be asked for, once a process
  static const cudaError_t attr =
      cudaFuncSetAttribute(sd_push_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (attr != cudaSuccess)
    return rt_fail(ctx, "copy=bulk: %d bytes of shared memory: %s", bytes,
                   cudaGetErrorString(attr));
  sd_push_bulk<<<CUCO_PARAM_comm_ctas, CUCO_PARAM_push_threads, bytes, u->comm>>>(
      u->pool_win, u->flag_win, (const __nv_bfloat16 *)u->stage, u->dst, u->slot, s->S, s->W,
      (long long)kv_slab_elems(s), s->L, l0, l1, tpi, s->me, u->dmask, ep, u->done, (int)nbuf);
#else
  auto *kern = sd_rope_in_push(s) ? sd_push<SD_ROPE_PUSH> : sd_push<0>;
  kern<<<CUCO_PARAM_comm_ctas, CUCO_PARAM_push_threads, 0, u->comm>>>(
      u->pool_win, u->flag_win, (const __nv_bfloat16 *)u->stage, u->dst, u->slot, s->S, s->W,
      (long long)kv_slab_elems(s), s->L, l0, l1, tpi, s->me, u->dmask, ep, u->done, (int)s->HD,
      u->core.pos_dev, u->core.rope_tab);
#endif
#endif
  RT_LAUNCH(ctx);
  return 0;
}

// direction=pull: the decode rank's pull kernel on the communication stream.
[[maybe_unused]] static int pull(struct wl_ctx *ctx, struct sd *u, unsigned long long ep) {
  const struct kv_shape *s = &u->s;
  if (!s->is_decode || u->nin == 0) return 0;
  long long tpi = CUCO_CHUNK_BYTES / (4 * s->W);
  if (tpi < 1) tpi = 1;
  sd_pull<<<CUCO_PARAM_comm_ctas, CUCO_PARAM_push_threads, 0, u->comm>>>(
      u->stage_win, u->flags, (__nv_bfloat16 *)u->pool, u->in_src, u->in_row, u->in_slot, u->nin,
      s->S, s->W, (long long)kv_slab_elems(s), s->L, tpi, u->pmask, ep);
  RT_LAUNCH(ctx);
  return 0;
}

// direction=pull: raise the ready flags of layers [L0, L1) on STREAM.
[[maybe_unused]] static int ready(struct wl_ctx *ctx, struct sd *u, long long l0,
                                  long long l1, unsigned long long ep, cudaStream_t stream) {
  sd_ready<<<1, 32, 0, stream>>>(u->flag_win, u->s.me, u->s.L, l0, l1, u->dmask, ep);
  RT_LAUNCH(ctx);
  return 0;
}

// Layers [L, L + NL) of the compute into their staging rows on STREAM: the
// frozen cuBLAS GEMM + RoPE (NL = 1), or (per_tile) the shared GEMM tile with
// the epilogue above, which also moves each layer and raises its flag; NL > 1
// is one batched launch of the tile v2 (tile_launch=all).
static int compute_layers(struct wl_ctx *ctx, struct sd *u, long long l, long long nl,
                          unsigned long long ep, cudaStream_t stream) {
  const struct kv_shape *s = &u->s;
  const long long n = 2 * s->W;
#if SD_PER_TILE
  // The v2 tile (wgmma + TMA, persistent): its math warps store the layer's
  // tile into staging, then apply RoPE and move it into the pages (tile_end).
  constexpr int BM = cuco_gemm::v2::BM, BN = cuco_gemm::v2::BN;
  if (BN % s->HD)
    return rt_fail(ctx, "placement=per_tile needs HD to divide the tile width %d (HD=%lld)",
                   BN, s->HD);
  cuco_gemm::GemmArgs a{(const __nv_bfloat16 *)u->X,
                        (const __nv_bfloat16 *)u->W + (size_t)l * s->DM * n,
                        s->DM, n, (int)s->S, (int)n, (int)s->DM, nullptr, (int)nl,
                        s->DM * n};  // nl > 1: batch g multiplies by W of layer l + g
  SdTileEpi e;
  e.stage = (__nv_bfloat16 *)u->stage, e.pool_win = u->pool_win, e.flag_win = u->flag_win;
  e.dst = u->dst, e.slot = u->slot, e.pos = u->core.pos_dev, e.rope = u->core.rope_tab;
  e.done = u->done, e.dmask = u->dmask, e.epoch = ep;
  e.W = s->W, e.slab = (long long)kv_slab_elems(s), e.l0 = l, e.L = s->L, e.S = s->S;
  e.hd = (int)s->HD, e.me = s->me;
  e.tiles = (int)(((s->S + BM - 1) / BM) * ((n + BN - 1) / BN));
  cudaError_t err = cuco_gemm::gemm_tile_v2_run_dense(a, cuco_gemm::GemmNoWait{}, e,
                                                cuco_gemm::GemmRasterSched<8>{}, 0, stream);
  if (err != cudaSuccess)
    return rt_fail(ctx, "per_tile GEMM of layers %lld..%lld: %s", l, l + nl - 1,
                   cudaGetErrorString(err));
  return 0;
#else
  (void)ep, (void)nl;
  __nv_bfloat16 *out = (__nv_bfloat16 *)u->stage + (size_t)l * s->S * n;
  if (sd_rope_in_push(s)) return kv_gemm_layer(ctx, s, &u->core, u->X, u->W, l, out, stream);
  return kv_compute_layer(ctx, s, &u->core, u->X, u->W, l, out, stream);
#endif
}

static int step(struct wl_ctx *ctx, struct sd *u) {
  const struct kv_shape *s = &u->s;
  cudaStream_t st = rt_stream(ctx);
  const unsigned long long ep = rt_epoch(ctx);
  RT_CUDA(ctx, cudaEventRecord(u->fork, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->fork, 0));
  const cudaStream_t cs = SD_CS == SD_CS_hi ? u->hi : st;  // the prefill compute's stream
  if (SD_CS == SD_CS_hi) RT_CUDA(ctx, cudaStreamWaitEvent(cs, u->fork, 0));
  if (s->is_prefill) {
    for (long long l = 0; l < s->L; l++) {
#if SD_PER_TILE && SD_TILE_ALL
      // every layer in one batched launch, enqueued at l = 0
      if (l == 0 && compute_layers(ctx, u, 0, s->L, ep, cs) != 0) return -1;
#else
      if (compute_layers(ctx, u, l, 1, ep, cs) != 0) return -1;
#endif
#if CUCO_PLACEMENT == CUCO_PLACEMENT_SPLIT && SD_PULL
      if (ready(ctx, u, l, l + 1, ep, cs) != 0) return -1;
#elif CUCO_PLACEMENT == CUCO_PLACEMENT_SPLIT
      RT_CUDA(ctx, cudaEventRecord(u->layer[l], cs));
      RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->layer[l], 0));
      if (push(ctx, u, l, l + 1, ep) != 0) return -1;
#endif
    }
#if CUCO_PLACEMENT == CUCO_PLACEMENT_DEFERRED && SD_PULL
    if (ready(ctx, u, 0, s->L, ep, cs) != 0) return -1;
    RT_CUDA(ctx, cudaEventRecord(u->layer[0], cs));
    RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->layer[0], 0));
#elif CUCO_PLACEMENT == CUCO_PLACEMENT_DEFERRED
    RT_CUDA(ctx, cudaEventRecord(u->layer[0], cs));
    RT_CUDA(ctx, cudaStreamWaitEvent(u->comm, u->layer[0], 0));
    if (push(ctx, u, 0, s->L, ep) != 0) return -1;
#endif
  }
  if (SD_CS == SD_CS_hi) {  // the step stream waits for the compute stream
    RT_CUDA(ctx, cudaEventRecord(u->join_hi, cs));
    RT_CUDA(ctx, cudaStreamWaitEvent(st, u->join_hi, 0));
  }
#if SD_PULL
  // The pull spins on flags that this rank's own compute raises when it is
  // also the prefill rank (R = 1), so it is launched only after all of that
  // compute: a spinning kernel launched first deadlocks as soon as a later
  // launch waits for the device (lazy loading of the GEMM or RoPE kernel,
  // a workspace allocation, a stack resize), which is what hung split and
  // per_tile pull at verify.  It still overlaps: the comm stream waits only
  // for the fork (split, per_tile) and checks each layer's flag.
  if (pull(ctx, u, ep) != 0) return -1;
#endif
  if (!SD_PULL && s->is_decode && u->pmask) {
#if CUCO_BACKEND == CUCO_BACKEND_GIN
    sd_wait_gin<<<1, 32, 0, st>>>(u->dc, u->pmask, s->L, CUCO_PARAM_comm_ctas, ep);
#else
    const int nf = SD_CHUNK_FLAGS ? CUCO_PARAM_comm_ctas : 1;
    sd_wait<<<1, 256, 0, st>>>(u->flags, u->pmask, s->L, nf, ep);
#endif
    RT_LAUNCH(ctx);
  }
  RT_CUDA(ctx, cudaEventRecord(u->join, u->comm));
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->join, 0));
  return 0;
}
// EVOLVE-BLOCK-END

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct sd *u = (struct sd *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  struct kv_shape *s = &u->s;
  if (kv_shape_get(ctx, p, s) != 0) return -1;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  if (!rt_gin_possible(ctx))
    return rt_fail(ctx, "backend=gin: no GIN on a single LSA domain; use backend=lsa");
#else
  if (s->R > 1 && rt_lsa_size(ctx) != s->R)
    return rt_fail(ctx, "backend=lsa needs every rank in one LSA domain (%d of %d)",
                   rt_lsa_size(ctx), s->R);
#endif
  const long long n = 2 * s->W;
  u->X = rt_alloc(ctx, "X", (size_t)s->S * s->DM * 2, RT_INPUT, RT_BF16, 0);
  u->W = rt_alloc(ctx, "W", (size_t)s->L * s->DM * n * 2, RT_INPUT, RT_BF16, 0);
  u->pool = rt_alloc(ctx, "pool", kv_pool_bytes(s), RT_OUTPUT, RT_BF16, RT_WINDOW);
  u->flags = (unsigned long long *)rt_alloc(
      ctx, "flags", (size_t)s->R * s->L * SD_FLAG_SLOTS * 8, RT_SCRATCH, RT_I64,
      RT_WINDOW | RT_ZERO);
  // Staging is a window: the source of GIN puts and of direction=pull.
  u->stage = rt_alloc(ctx, "stage", (size_t)s->L * s->S * n * 2, RT_SCRATCH, RT_BF16,
                      RT_WINDOW);
  u->done = (unsigned long long *)rt_alloc(ctx, "done", (size_t)s->L * 8, RT_SCRATCH, RT_I64,
                                           RT_ZERO);
  u->dst = (int *)rt_alloc(ctx, "dst", sizeof(int) * s->S, RT_SCRATCH, RT_I32, 0);
  u->slot = (long long *)rt_alloc(ctx, "slot", sizeof(long long) * s->S, RT_SCRATCH, RT_I64, 0);
  if (!u->X || !u->W || !u->pool || !u->flags || !u->stage || !u->done || !u->dst || !u->slot)
    return -1;
  if (rt_output_shape(ctx, "pool", s->L * 2 * s->NB, (long long)KV_BLOCK * s->W) != 0) return -1;
  u->pool_win = rt_window(ctx, "pool");
  u->flag_win = rt_window(ctx, "flags");
  u->stage_win = rt_window(ctx, "stage");
  int *dst = (int *)malloc(sizeof(int) * s->S), *pos = (int *)malloc(sizeof(int) * s->S);
  long long *slot = (long long *)malloc(sizeof(long long) * s->S);
  int rc = (!dst || !pos || !slot ||
            kv_plan_rows(s, p->seed, s->me, dst, slot, pos, -1, NULL, NULL, NULL, NULL) != 0)
               ? rt_fail(ctx, "out of memory")
               : 0;
  if (rc == 0 && s->is_prefill) {
    for (long long r = 0; r < s->S; r++) u->dmask |= 1ull << dst[r];
    rc = kv_core_init(ctx, s, &u->core, pos);
    if (rc == 0 && (cudaMemcpy(u->dst, dst, sizeof(int) * s->S, cudaMemcpyHostToDevice) ||
                    cudaMemcpy(u->slot, slot, sizeof(long long) * s->S,
                               cudaMemcpyHostToDevice)))
      rc = rt_fail(ctx, "copying the row plan failed");
  }
  free(dst), free(pos), free(slot);
  if (rc) return -1;
  if (s->is_decode)
    for (long long g = 0; g < (long long)s->P * s->NREQ; g++)
      if (kv_dest(s, g) == s->me) u->pmask |= 1ull << (g / s->NREQ);
  // The incoming rows (what a pulling decode rank reads, and from where).
  const long long nin = s->is_decode ? kv_recv_rows(s, s->me) : 0, cap = nin > 0 ? nin : 1;
  u->in_src = (int *)rt_alloc(ctx, "in_src", sizeof(int) * cap, RT_SCRATCH, RT_I32, 0);
  u->in_row = (long long *)rt_alloc(ctx, "in_row", sizeof(long long) * cap, RT_SCRATCH, RT_I64, 0);
  u->in_slot = (long long *)rt_alloc(ctx, "in_slot", sizeof(long long) * cap, RT_SCRATCH,
                                     RT_I64, 0);
  if (!u->in_src || !u->in_row || !u->in_slot) return -1;
  if (nin > 0) {
    int *isrc = (int *)malloc(sizeof(int) * nin);
    long long *irow = (long long *)malloc(sizeof(long long) * nin);
    long long *islot = (long long *)malloc(sizeof(long long) * nin);
    rc = (!isrc || !irow || !islot ||
          kv_plan_incoming(s, p->seed, s->me, isrc, irow, islot, &u->nin) != 0 || u->nin != nin)
             ? rt_fail(ctx, "out of memory")
             : 0;
    if (rc == 0 && (cudaMemcpy(u->in_src, isrc, sizeof(int) * nin, cudaMemcpyHostToDevice) ||
                    cudaMemcpy(u->in_row, irow, sizeof(long long) * nin, cudaMemcpyHostToDevice) ||
                    cudaMemcpy(u->in_slot, islot, sizeof(long long) * nin,
                               cudaMemcpyHostToDevice)))
      rc = rt_fail(ctx, "copying the incoming row plan failed");
    free(isrc), free(irow), free(islot);
    if (rc) return -1;
  }
  ncclDevCommRequirements reqs;
  memset(&reqs, 0, sizeof reqs);
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  reqs.ginSignalCount = (int)(s->R * s->L);
#endif
  if (rt_devcomm_create(ctx, &reqs, &u->dc) != 0) return -1;
  RT_CUDA(ctx, cudaStreamCreateWithFlags(&u->comm, cudaStreamNonBlocking));
  if (SD_CS == SD_CS_hi) {  // compute=hi only
    int least = 0, greatest = 0;
    RT_CUDA(ctx, cudaDeviceGetStreamPriorityRange(&least, &greatest));
    RT_CUDA(ctx, cudaStreamCreateWithPriority(&u->hi, cudaStreamNonBlocking, greatest));
    RT_CUDA(ctx, cudaEventCreateWithFlags(&u->join_hi, cudaEventDisableTiming));
  }
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->fork, cudaEventDisableTiming));
  RT_CUDA(ctx, cudaEventCreateWithFlags(&u->join, cudaEventDisableTiming));
  u->layer = (cudaEvent_t *)calloc(s->L, sizeof(cudaEvent_t));
  if (!u->layer) return rt_fail(ctx, "out of memory");
  for (long long l = 0; l < s->L; l++)
    RT_CUDA(ctx, cudaEventCreateWithFlags(&u->layer[l], cudaEventDisableTiming));
  return 0;
}

extern "C" int wl_step(struct wl_ctx *ctx) { return step(ctx, (struct sd *)rt_get_user(ctx)); }

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  struct sd *u = (struct sd *)rt_get_user(ctx);
  if (!u) return;
  if (u->layer)
    for (long long l = 0; l < u->s.L; l++)
      if (u->layer[l]) cudaEventDestroy(u->layer[l]);
  free(u->layer);
  if (u->fork) cudaEventDestroy(u->fork);
  if (u->join) cudaEventDestroy(u->join);
  if (u->comm) cudaStreamDestroy(u->comm);
  if (u->join_hi) cudaEventDestroy(u->join_hi);
  if (u->hi) cudaStreamDestroy(u->hi);
  kv_core_free(&u->core);
  free(u);
  rt_set_user(ctx, NULL);
}
