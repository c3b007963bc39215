// tests/gpu/vranks_kernels.cuh - protocol-test kernels for virtual ranks.
// They include only cuco_nccl.cuh, so the same source builds against NCCL
// 2.28.9 (real ranks) and against the emulation (-DCUCO_VRANKS); CI compiles
// both (tests/cli/t0701-vranks-compile.sh).
#ifndef CUCO_VRANKS_KERNELS_CUH
#define CUCO_VRANKS_KERNELS_CUH

#include "cuco_nccl.cuh"

// ---------------------------------------------------------------- helpers
// Coop traits: which unit (coop instance) a thread belongs to, its rank in
// it, and how many units the grid has. A unit owns barrier index `unit`.
template <typename Coop> struct vr_unit;
template <> struct vr_unit<ncclCoopCta> {
  static __device__ int id() { return blockIdx.x; }
  static __device__ int count() { return gridDim.x; }
};
template <> struct vr_unit<ncclCoopWarp> {
  static __device__ int id() { return blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; }
  static __device__ int count() { return gridDim.x * (blockDim.x / 32); }
};

// The value unit u of rank src sends to rank dst, element e, iteration it:
// distinct for every coordinate, never 0 (the window starts zeroed).
__device__ __forceinline__ unsigned vr_val(int src, int dst, int u, int e, int it) {
  unsigned h = 2166136261u;
  h = (h ^ (unsigned)src) * 16777619u;
  h = (h ^ (unsigned)dst) * 16777619u;
  h = (h ^ (unsigned)u) * 16777619u;
  h = (h ^ (unsigned)e) * 16777619u;
  h = (h ^ (unsigned)it) * 16777619u;
  return h | 1u;
}

// vr_spin_ge: spin until *flag >= v (acquire, system scope); trap with a
// message after timeout_ns so a protocol bug is a failed kernel, not a hang.
__device__ __forceinline__ void vr_spin_ge(unsigned long long *flag, unsigned long long v,
                                           unsigned long long timeout_ns) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> f(*flag);
  unsigned long long t0, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  while (f.load(cuda::memory_order_acquire) < v) {
    __nanosleep(100);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - t0 > timeout_ns) {
      printf("cuco vranks: flag wait timed out (want >= %llu) [block %d thread %d]\n", v,
             (int)blockIdx.x, (int)threadIdx.x);
      __assert_fail("cuco vranks: flag wait timed out", __FILE__, __LINE__, "vr_spin_ge");
    }
  }
}

// ---------------------------------------------------------------- barrier ordering
// Window layout (uint32): [src rank][unit][E]. Per iteration every unit
//   1. sync(acq_rel): peers finished reading the previous iteration,
//   2. writes vr_val(me, q, u, e, it) into peer q's [me][u][e], for all q,
//   3. arrive(release) then wait(acquire),
//   4. reads [p][u][e] of its own slice for all p and counts mismatches.
// Each iteration costs 2 epochs of barrier index u.
template <typename Coop>
__global__ void vr_barrier_order(ncclDevComm dc, ncclWindow_t win, int E, int it0, int iters,
                                 unsigned long long *errors) {
  Coop coop;
  const int u = vr_unit<Coop>::id(), nu = vr_unit<Coop>::count();
  const int me = dc.lsaRank, R = dc.lsaSize;
  ncclLsaBarrierSession<Coop> bar(coop, dc, ncclTeamTagLsa(), (uint32_t)u);
  unsigned long long bad = 0;
  for (int it = it0; it < it0 + iters; ++it) {
    bar.sync(coop, cuda::memory_order_acq_rel);
    for (int q0 = 0; q0 < R; ++q0) {
      int q = (me + 1 + q0) % R; // stagger peers, local last
      unsigned *dst = (unsigned *)ncclGetLsaPointer(win, ((size_t)me * nu + u) * E * 4, q);
      for (int e = coop.thread_rank(); e < E; e += coop.size())
        dst[e] = vr_val(dc.rank, ncclTeamRankToWorld(dc, ncclTeamLsa(dc), q), u, e, it);
    }
    bar.arrive(coop, cuda::memory_order_release);
    bar.wait(coop, cuda::memory_order_acquire);
    for (int p = 0; p < R; ++p) {
      const unsigned *src = (const unsigned *)ncclGetLocalPointer(win, ((size_t)p * nu + u) * E * 4);
      int pw = ncclTeamRankToWorld(dc, ncclTeamLsa(dc), p);
      for (int e = coop.thread_rank(); e < E; e += coop.size())
        bad += src[e] != vr_val(pw, dc.rank, u, e, it);
    }
  }
  if (bad)
    atomicAdd(&errors[dc.rank], bad);
}

// ---------------------------------------------------------------- peer pointers
// Slot layout (int) of every slice: [way][src], 4 ways of naming a peer:
// ncclGetLsaPointer, ncclGetPeerPointer(world rank), ncclGetPeerPointer(team,
// lsa rank), ncclSymPtr::lsaPtr. Rank me writes me+1 into slot [way][me] of
// every LSA peer's slice; the host checks every slice.
__global__ void vr_peer_ptrs(ncclDevComm dc, ncclWindow_t win) {
  const int R = dc.lsaSize, me = dc.lsaRank;
  ncclTeam lsa = ncclTeamLsa(dc), world = ncclTeamWorld(dc);
  for (int q = threadIdx.x; q < R; q += blockDim.x) {
    int qw = ncclTeamRankToWorld(dc, lsa, q);
    if (!ncclTeamRankIsMember(lsa, world, qw))
      continue; // cannot happen: qw comes from the LSA team
    *(int *)ncclGetLsaPointer(win, (0 * R + me) * sizeof(int), q) = dc.rank + 1;
    *(int *)ncclGetPeerPointer(win, (1 * R + me) * sizeof(int), qw) = dc.rank + 1;
    *(int *)ncclGetPeerPointer(win, (2 * R + me) * sizeof(int), lsa, q) = dc.rank + 1;
    ncclSymPtr<int> p(win, 0);
    p += 3 * R + me;
    *p.lsaPtr(q) = dc.rank + 1;
  }
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(), 0);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// ---------------------------------------------------------------- all-gather with cheats
// Y window: [src rank][n] float per slice; out: [R][n] float (plain device
// memory); flags window: [src rank][grid] uint64 per slice. CTA b owns
// chunk b of the n elements, both to send and to read back.
enum vr_ag_variant {
  VR_AG_OK = 0,       // barrier, correct
  VR_AG_NOWAIT = 1,   // cheat: reads before any wait (arrive, write, read, wait, sync)
  VR_AG_SKIP = 2,     // cheat: the last rank skips its sends
  VR_AG_STALE = 3,    // cheat: flags set to a constant 1 (stale after step 0)
  VR_AG_FLAG_OK = 4,  // flags carry the step sequence number, correct
};

template <int V>
__global__ void vr_allgather(ncclDevComm dc, ncclWindow_t yWin, ncclWindow_t flagWin,
                             const float *x, float *out, int n, unsigned long long seq,
                             unsigned long long timeout_ns) {
  const int R = dc.lsaSize, me = dc.lsaRank, b = blockIdx.x, G = gridDim.x;
  const int chunk = (n + G - 1) / G;
  const int i0 = b * chunk, i1 = min(n, i0 + chunk);
  const bool skip = V == VR_AG_SKIP && dc.rank == dc.nRanks - 1;
  if (V == VR_AG_OK || V == VR_AG_NOWAIT || V == VR_AG_SKIP) {
    ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(), (uint32_t)b);
    // The cheat arrives but postpones every wait until after its reads (same
    // arrive/wait counts as the correct protocol, so epochs stay in step).
    if (V == VR_AG_NOWAIT)
      bar.arrive(ncclCoopCta(), cuda::memory_order_relaxed);
    else
      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel); // peers are in this step
    if (!skip)
      for (int q = 0; q < R; ++q) {
        float *dst = (float *)ncclGetLsaPointer(yWin, (size_t)me * n * sizeof(float), q);
        for (int i = i0 + threadIdx.x; i < i1; i += blockDim.x)
          dst[i] = x[i];
      }
    if (V != VR_AG_NOWAIT)
      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
    const float *y = (const float *)ncclGetLocalPointer(yWin, 0);
    for (int p = 0; p < R; ++p)
      for (int i = i0 + threadIdx.x; i < i1; i += blockDim.x)
        out[(size_t)p * n + i] = y[(size_t)p * n + i];
    if (V == VR_AG_NOWAIT) { // too late: already read
      bar.wait(ncclCoopCta(), cuda::memory_order_acquire);
      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
    }
  } else {
    const unsigned long long mark = V == VR_AG_STALE ? 1ull : seq;
    for (int q = 0; q < R; ++q) {
      float *dst = (float *)ncclGetLsaPointer(yWin, (size_t)me * n * sizeof(float), q);
      for (int i = i0 + threadIdx.x; i < i1; i += blockDim.x)
        dst[i] = x[i];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      for (int q = 0; q < R; ++q) {
        unsigned long long *f =
            (unsigned long long *)ncclGetLsaPointer(flagWin, ((size_t)me * G + b) * 8, q);
        cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>(*f).store(
            mark, cuda::memory_order_release);
      }
    }
    for (int p = threadIdx.x; p < R; p += blockDim.x)
      vr_spin_ge((unsigned long long *)ncclGetLocalPointer(flagWin, ((size_t)p * G + b) * 8), mark,
                 timeout_ns);
    __syncthreads();
    const float *y = (const float *)ncclGetLocalPointer(yWin, 0);
    for (int p = 0; p < R; ++p)
      for (int i = i0 + threadIdx.x; i < i1; i += blockDim.x)
        out[(size_t)p * n + i] = y[(size_t)p * n + i];
  }
}

// ---------------------------------------------------------------- deliberate faults
// vr_hang: the last rank never arrives; its peers' wait must time out.
__global__ void vr_hang(ncclDevComm dc) {
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(), blockIdx.x);
  if (dc.rank != dc.nRanks - 1)
    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}
// vr_bad_peer: passes the WORLD rank of the next rank to ncclGetLsaPointer
// (NVIDIA/nccl#1953's bug); wrong whenever lsaSize < nRanks.
__global__ void vr_bad_peer(ncclDevComm dc, ncclWindow_t win) {
  if (threadIdx.x == 0) {
    int worldPeer = (dc.rank + 1) % dc.nRanks;
    *(int *)ncclGetLsaPointer(win, 0, worldPeer) = dc.rank + 1;
  }
}

#endif
