// workloads/flash_attn_cp/seed.cu - device-initiated context-parallel
// causal attention (zigzag ring over LSA), workloads.md section 1's seed.
//
// Per ring step s = 0..R-1 (rank r computes the KV shard of rank r-s):
//  1. (s < R-1) a copy kernel of comm_ctas CTAs stores the shard r holds now
//     (its own KV at s = 0, else ring slot s % slots) into slot
//     (s+1) % slots of rank r+1's ring window through ncclGetLsaPointer,
//     with 16-byte stores, then every CTA syncs its LSA barrier
//     (acq_rel): after it every rank's slot (s+1) % slots is complete;
//  2. the frozen attention step (runtime/attn_step.cuh, through wl_attn.cuh)
//     folds the pairs rank r computes against that shard into the fp32
//     state; O and LSE are finalized after the last step.
// Slot reuse: slot (s+1) % slots of rank r+1 was last read by its step
// s+1-slots.  With slots >= 3 the barrier of step s-1 already orders that
// read before this copy; with slots = 2 a credit barrier (one more LSA
// barrier, after step s-1's compute) comes first.  pattern=allgather pushes
// the own shard to every peer at step 0 (slot = source rank; R slots) and
// syncs once.  R = 1: nothing to send (a ring of one), and the rank holds
// the sequence in order: one fused attn_fwd_v2 per batch (sd_whole) where
// the step v2 runs, else the same steps as at R > 1.
// Code outside the EVOLVE block is frozen.
#include <stdlib.h>
#include <string.h>

#include "wl_attn.cuh"

#define SD_MAX_CTAS 32

struct sd {
  struct wa_shape s;
  struct wa_io io;
  struct attn_state st;
  __nv_bfloat16 *ring;  // window [nslots][KV shard], RECV
  int nslots;
  ncclWindow_t ring_win;
  ncclDevComm dc;
};

// EVOLVE-BLOCK-START
// CUCO-DIRECTIVES backend=lsa placement=deferred sync=global issuer=cta chunk=1MiB
// CUCO-PARAM pattern=ring
// CUCO-PARAM slots=2
// CUCO-PARAM comm_ctas=8
// CUCO-PARAM copy_threads=512
// CUCO-PARAM one_rank=fused
#ifndef CUCO_PARAM_pattern
#define CUCO_PARAM_pattern ring
#endif
#ifndef CUCO_PARAM_slots
#define CUCO_PARAM_slots 2
#endif
#ifndef CUCO_PARAM_comm_ctas
#define CUCO_PARAM_comm_ctas 8
#endif
#ifndef CUCO_PARAM_copy_threads
#define CUCO_PARAM_copy_threads 512
#endif
// one_rank=fused|steps (a word): with one rank holding the whole sequence
// in order, fused computes it with one attn_fwd_v2 call per batch where the
// step v2 runs, at D = 128 (sd_whole); steps takes the ring's path (init,
// the pairs' steps, finalize), as at R > 1.
#ifndef CUCO_PARAM_one_rank
#define CUCO_PARAM_one_rank fused
#endif
#define SD_OR_fused 1
#define SD_OR_steps 2
#define SD_PAT_ring 0
#define SD_PAT_allgather 1
#define SD_CAT2(a, b) a##b
#define SD_CAT(a, b) SD_CAT2(a, b)
#define SD_OR SD_CAT(SD_OR_, CUCO_PARAM_one_rank)
#if SD_OR != SD_OR_fused && SD_OR != SD_OR_steps
#error "CUCO-PARAM one_rank must be fused or steps"
#endif
#define SD_PATTERN SD_CAT(SD_PAT_, CUCO_PARAM_pattern)
#if CUCO_PLACEMENT != CUCO_PLACEMENT_DEFERRED
#error "this seed implements placement=deferred only (split/per_tile: per-chunk flags, attn_step_tile)"
#endif
// sync=per_peer/per_chunk (epoch flags and credits) are not in this
// workload's space yet (workload.ini narrows sync to global); they build as
// global.
#if CUCO_PARAM_comm_ctas < 1 || CUCO_PARAM_comm_ctas > SD_MAX_CTAS
#error "comm_ctas must be in 1..SD_MAX_CTAS"
#endif
#if CUCO_PARAM_slots < 2
#error "slots must be at least 2"
#endif

// Copy BYTES from SRC to DST (16-byte aligned: shards are multiples of
// 16 bytes, D >= 64) with the directive's issuer: the whole CTA, one warp
// per slice, or one thread per slice.
__device__ static inline void sd_copy(uint4 *dst, const uint4 *src, size_t n16) {
  size_t tid = threadIdx.x, nt = blockDim.x;
#if CUCO_ISSUER == CUCO_ISSUER_WARP
  size_t nw = nt / 32, slice = (n16 + nw - 1) / nw, lo = slice * (tid / 32);
  size_t hi = lo + slice < n16 ? lo + slice : n16;
  for (size_t i = lo + (tid & 31); i < hi; i += 32) dst[i] = src[i];
#elif CUCO_ISSUER == CUCO_ISSUER_THREAD
  size_t slice = (n16 + nt - 1) / nt, lo = slice * tid, hi = lo + slice < n16 ? lo + slice : n16;
  for (size_t i = lo; i < hi; i++) dst[i] = src[i];
#else
  for (size_t i = tid; i < n16; i += nt) dst[i] = src[i];
#endif
}

// Push SRC (one shard, BYTES) into the ring window at byte offset DST_OFF
// of rank r+1 (ring) or of every peer (allgather), CUCO_CHUNK_BYTES per
// item, items dealt to CTAs round-robin; then every CTA syncs its LSA
// barrier (index blockIdx.x).
__global__ void __launch_bounds__(1024)
sd_push(ncclDevComm dc, ncclWindow_t ring_win, const __nv_bfloat16 *src, size_t bytes,
        size_t dst_off) {
  const int me = dc.lsaRank, R = dc.lsaSize;
  const size_t item = CUCO_CHUNK_BYTES < bytes ? CUCO_CHUNK_BYTES : bytes;
  const size_t items = (bytes + item - 1) / item;
#if SD_PATTERN == SD_PAT_allgather
  for (int i = 1; i < R; i++) {
    const int p = (me + i) % R;
#else
  {
    const int p = (me + 1) % R;
#endif
    char *dst = (char *)ncclGetLsaPointer(ring_win, dst_off, p);
    for (size_t it = blockIdx.x; it < items; it += gridDim.x) {
      size_t lo = it * item, n = lo + item < bytes ? item : bytes - lo;
      sd_copy((uint4 *)(dst + lo), (const uint4 *)((const char *)src + lo), n / 16);
    }
  }
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(), blockIdx.x);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// Credit (slots = 2): every rank finished the compute that read the slot
// about to be overwritten.  A rendezvous, one CTA, barrier index comm_ctas.
__global__ void sd_credit(ncclDevComm dc) {
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(),
                                         CUCO_PARAM_comm_ctas);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

#if CUCO_BACKEND == CUCO_BACKEND_GIN
// GIN variant (multi-node; compiled, not exercised on one node: no NIC):
// one put of the shard from this rank's ring slot SRC_OFF (a put's source
// must be a window) into rank r+1's slot DST_OFF, signal STEP counting
// comm_ctas arrivals per step; the receiver waits for epoch*comm_ctas on
// it.  Slots are never reused inside a step here (nslots = R), and the
// runtime separates steps.
__global__ void sd_push_gin(ncclDevComm dc, ncclWindow_t ring_win, size_t src_off,
                            size_t dst_off, size_t bytes, unsigned sig) {
  if (dc.ginContextCount == 0) return;
  ncclGin gin(dc, 0);
  // ceil(bytes / G) rounded up to 16: floor(bytes / G) lost the tail when it
  // was already a multiple of 16 (e.g. bytes = 1920, G = 17: 17 * 112 < 1920).
  const size_t part = ((bytes + gridDim.x - 1) / gridDim.x + 15) & ~(size_t)15;
  const size_t lo = part * blockIdx.x, n = lo < bytes ? (lo + part < bytes ? part : bytes - lo) : 0;
  gin.put(ncclTeamWorld(dc), (dc.rank + 1) % dc.nRanks, ring_win, dst_off + lo, ring_win,
          src_off + lo, n, ncclGin_SignalInc{sig}, ncclGin_None{}, ncclCoopCta());
  gin.flush(ncclCoopCta());
}

__global__ void sd_wait_gin(ncclDevComm dc, unsigned sig, unsigned long long want) {
  if (dc.ginContextCount == 0) return;
  ncclGin gin(dc, 0);
  gin.waitSignal(ncclCoopCta(), sig, want);
}
#endif

static int nslots_for(const struct wa_shape *s) {
#if CUCO_BACKEND == CUCO_BACKEND_GIN || SD_PATTERN == SD_PAT_allgather
  return s->R;
#else
  return CUCO_PARAM_slots;
#endif
}

// Whether this rank's two chunks are positions [0, S) in order: one rank,
// zigzag or contiguous alike (chunks 0 and 1).
static bool sd_whole_in_order(const struct wa_shape *s) {
  if (s->R != 1 || s->rows[s->me] != s->S) return false;
  for (int j = 0; j < 2; j++)
    if (s->cb[wa_chunk(s, s->me, j)] != wa_loff(s, s->me, j)) return false;
  return true;
}

// The whole sequence on this rank: per batch, one attn_fwd_v2 call (the
// step v2 with init and finalize fused, no state in memory) writes O and
// LSE: one launch instead of init, three steps and a finalize, and none of
// the fp32 state's traffic.
static int sd_whole(struct wl_ctx *ctx, struct sd *u) {
  const struct wa_shape *s = &u->s;
  const long long rows = s->rows[s->me];
  for (long long b = 0; b < s->B; b++) {
    struct attn_step_args a;
    memset(&a, 0, sizeof a);
    a.shape = wa_attn_shape(s);
    a.q = u->io.Q + wa_q_off(s, (int)b, 0, 0);
    a.q_rows = (int)rows;
    a.k = u->io.KV + wa_k_off(s, (int)b, 0, 0);
    a.v = u->io.KV + wa_v_off(s, (int)b, 0, 0);
    a.kv_rows = (int)rows;
    a.mask = ATTN_MASK_CAUSAL;
    a.state.rows = (int)(s->B * rows);  // O [B*rows][HQ][D], LSE [HQ][B*rows]
    a.state_row0 = (int)(b * rows);
    RT_CUDA(ctx, attn_fwd_v2<128>(&a, u->io.O, u->io.LSE, rt_stream(ctx)));
  }
  return 0;
}

static int step(struct wl_ctx *ctx, struct sd *u) {
  const struct wa_shape *s = &u->s;
  cudaStream_t st = rt_stream(ctx);
  const size_t n = wa_kv_elems(s), bytes = n * 2;
  const int G = CUCO_PARAM_comm_ctas, T = CUCO_PARAM_copy_threads;
  (void)G, (void)T;
  if (SD_OR == SD_OR_fused && s->D == 128 && sd_whole_in_order(s) && attn_step_v2_available())
    return sd_whole(ctx, u);
  if (wa_state_init(ctx, s, u->st, st) != 0) return -1;
#if SD_PATTERN == SD_PAT_allgather && CUCO_BACKEND == CUCO_BACKEND_LSA
  if (s->R > 1) {
    sd_push<<<G, T, 0, st>>>(u->dc, u->ring_win, u->io.KV, bytes, (size_t)s->me * bytes);
    RT_LAUNCH(ctx);
  }
  for (int k = 0; k < s->R; k++) {
    const int src = wa_src(s->R, s->me, k);
    const __nv_bfloat16 *kv = src == s->me ? u->io.KV : u->ring + (size_t)src * n;
    if (wa_fold(ctx, s, src, u->io.Q, kv, u->st, -1, st) != 0) return -1;
  }
#else
  for (int k = 0; k < s->R; k++) {
    const __nv_bfloat16 *cur = k == 0 ? u->io.KV : u->ring + (size_t)(k % u->nslots) * n;
    if (k + 1 < s->R) {
      const size_t dst_off = (size_t)((k + 1) % u->nslots) * bytes;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
      if (k == 0)
        RT_CUDA(ctx, cudaMemcpyAsync(u->ring, u->io.KV, bytes, cudaMemcpyDeviceToDevice, st));
      sd_push_gin<<<G, 32, 0, st>>>(u->dc, u->ring_win, (size_t)(k % u->nslots) * bytes, dst_off,
                                    bytes, (unsigned)k);
      RT_LAUNCH(ctx);
      sd_wait_gin<<<1, 32, 0, st>>>(u->dc, (unsigned)k,
                                    rt_epoch(ctx) * (unsigned long long)G);
      RT_LAUNCH(ctx);
#else
      if (u->nslots == 2 && k >= 1) {  // rank r+1 is done reading slot (k+1) % 2
        sd_credit<<<1, 32, 0, st>>>(u->dc);
        RT_LAUNCH(ctx);
      }
      sd_push<<<G, T, 0, st>>>(u->dc, u->ring_win, cur, bytes, dst_off);
      RT_LAUNCH(ctx);
#endif
    }
    if (wa_fold(ctx, s, wa_src(s->R, s->me, k), u->io.Q, cur, u->st, -1, st) != 0) return -1;
  }
#endif
  return wa_finalize(ctx, s, u->st, &u->io, st);
}
// EVOLVE-BLOCK-END

extern "C" int wl_setup(struct wl_ctx *ctx, const struct wl_problem *p) {
  struct sd *u = (struct sd *)calloc(1, sizeof *u);
  if (!u) return rt_fail(ctx, "out of memory");
  rt_set_user(ctx, u);
  struct wa_shape *s = &u->s;
  if (wa_shape_get(ctx, p, s) != 0 || wa_alloc_io(ctx, s, &u->io) != 0 ||
      wa_alloc_state(ctx, s, "st", &u->st) != 0)
    return -1;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  if (!rt_gin_possible(ctx))
    return rt_fail(ctx, "backend=gin: no GIN on a single LSA domain; use backend=lsa");
#else
  if (s->R > 1 && rt_lsa_size(ctx) != s->R)
    return rt_fail(ctx, "backend=lsa needs every rank in one LSA domain (%d of %d)",
                   rt_lsa_size(ctx), s->R);
#endif
  u->nslots = nslots_for(s);
  u->ring = (__nv_bfloat16 *)rt_alloc(ctx, "ring", wa_kv_elems(s) * 2 * u->nslots, RT_RECV,
                                      RT_BF16, RT_WINDOW);
  if (!u->ring) return -1;
  u->ring_win = rt_window(ctx, "ring");
  ncclDevCommRequirements reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.lsaBarrierCount = CUCO_PARAM_comm_ctas + 1;
#if CUCO_BACKEND == CUCO_BACKEND_GIN
  reqs.ginSignalCount = s->R;
#endif
  if (rt_devcomm_create(ctx, &reqs, &u->dc) != 0) return -1;
  if (s->R > 1 && rt_check_coresident(ctx, (const void *)sd_push, CUCO_PARAM_comm_ctas,
                                      CUCO_PARAM_copy_threads, 0) != 0)
    return -1;
  return 0;
}

extern "C" int wl_step(struct wl_ctx *ctx) { return step(ctx, (struct sd *)rt_get_user(ctx)); }

extern "C" void wl_teardown(struct wl_ctx *ctx) {
  free(rt_get_user(ctx));
  rt_set_user(ctx, NULL);
}
