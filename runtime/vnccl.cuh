// runtime/vnccl.cuh - virtual ranks: a device-side emulation of the subset of
// NCCL 2.28.9's device API that cuco kernels use, for R virtual ranks that
// share ONE GPU (design.md section 3, issue 17). Selected at compile time by
// runtime/cuco_nccl.cuh when CUCO_VRANKS is defined, so candidate source is
// the same in the real and the virtual build.
//
// It is a PROTOCOL test instrument: it checks peer pointers, barriers, flags
// and epochs. Times measured with it are never performance numbers.
//
// What is emulated (names and signatures as in nccl_device/*.h of 2.28.9):
//   ncclDevComm (rank, nRanks, lsaRank, lsaSize, ginContextCount = 0,
//   lsaBarrier, resourceWindow), ncclWindow_t, ncclTeam, ncclTeamWorld/Lsa/
//   Rail, ncclTeamTagWorld/Lsa/Rail, ncclTeamRankToWorld/ToLsa/IsMember/
//   ToTeam, ncclTeamInner/OuterFactor, ncclTeamRankInDifference,
//   ncclGetLocalPointer, ncclGetLsaPointer, ncclGetPeerPointer (both
//   overloads), ncclSymPtr<T> (arithmetic, localPtr/lsaPtr/peerPtr),
//   resource buffers (ncclGetResourceBuffer*Pointer, ncclGetResourceBuffer),
//   the coop types (NCCL's own coop.h, included unchanged),
//   ncclLsaBarrierSession<Coop> (both constructors, arrive/wait/sync) with
//   NCCL's exact inbox/epoch layout and memory orders (release part of the
//   order on arrive stores, acquire part on wait loads, system scope), epochs
//   persisted in device memory between kernels, ncclBarrierSession<Coop> in
//   its LSA-only form, ncclDevCommRequirements / ncclDevResourceRequirements
//   and ncclLsaBarrierCreateRequirement (host, in vnccl_host.h).
//
// What the emulation adds (a protocol test should catch what NCCL silently
// lets through): every pointer call checks the peer range and the offset
// against the window size, and every barrier wait gives up after
// VNCCL_WAIT_TIMEOUT_NS with a message naming rank, peer, index and epoch,
// then traps (the host sees a failed kernel instead of a hang). Define
// VNCCL_NO_CHECKS to drop the pointer checks.
//
// What is NOT supported and fails to COMPILE when used: GIN (ncclGin, GIN
// barriers, world/rail ncclBarrierSession), LL all-to-all (ncclLLA2ASession,
// ncclLLA2ACreateRequirement), multimem (ncclGetMultimemPointer,
// ncclGetLsaMultimemPointer, ncclSymPtr::multimemPtr/lsaMultimemPtr,
// resource-buffer multimem pointers), ncclFindWindow, and the host
// ncclDevCommCreate/Destroy (the runtime creates virtual comms). A barrier
// constructed with multimem=true traps at run time (the flag is a run-time
// bool in NCCL's signature).
#ifndef CUCO_VNCCL_CUH
#define CUCO_VNCCL_CUH

#if defined(_NCCL_DEVICE_CORE_H_) || defined(_NCCL_DEVICE_CORE__TYPES_H_) || \
    defined(_NCCL_DEVICE_MEM_BARRIER_H_)
#error "cuco vranks: the real <nccl_device.h> was included before cuco_nccl.cuh; include only cuco_nccl.cuh in a candidate"
#endif

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <type_traits>

#include <cuda/atomic>
#include <nccl.h>             // host types: ncclResult_t, ncclComm_t, ncclWindow_t
#include <nccl_device/coop.h> // NCCL's own coop types (header-only, no NCCL state)

// The rest of the real device headers must stay out of a virtual build: a
// later #include <nccl_device.h> becomes a no-op instead of a redefinition.
#define _NCCL_DEVICE_CORE_H_
#define _NCCL_DEVICE_CORE__TYPES_H_
#define _NCCL_DEVICE_CORE__FUNCS_H_
#define _NCCL_DEVICE_COMM_H_
#define _NCCL_DEVICE_COMM__TYPES_H_
#define _NCCL_DEVICE_COMM__FUNCS_H_
#define _NCCL_DEVICE_MEM_BARRIER_H_
#define _NCCL_DEVICE_MEM_BARRIER__TYPES_H_
#define _NCCL_DEVICE_MEM_BARRIER__FUNCS_H_
#define _NCCL_DEVICE_BARRIER_H_
#define _NCCL_DEVICE_BARRIER__TYPES_H_
#define _NCCL_DEVICE_BARRIER__FUNCS_H_
#define _NCCL_DEVICE_GIN_SESSION_H_
#define _NCCL_DEVICE_GIN_SESSION__TYPES_H_
#define _NCCL_DEVICE_GIN_SESSION__FUNCS_H_
#define _NCCL_DEVICE_GIN_BARRIER_H_
#define _NCCL_DEVICE_GIN_BARRIER__TYPES_H_
#define _NCCL_DEVICE_GIN_BARRIER__FUNCS_H_
#define _NCCL_DEVICE_LL_A2A_H_
#define _NCCL_DEVICE_LL_A2A__TYPES_H_
#define _NCCL_DEVICE_LL_A2A__FUNCS_H_
#define _NCCL_DEVICE_PTR_H_
#define _NCCL_DEVICE_PTR__TYPES_H_
#define _NCCL_DEVICE_PTR__FUNCS_H_
#define _NCCL_GIN_DEVICE_API_H_
#define _NCCL_GIN_DEVICE_HOST_COMMON_H_
#define _NCCL_GIN_DEVICE_COMMON_H_

#define CUCO_VNCCL 1

#ifndef VNCCL_WAIT_TIMEOUT_NS
#define VNCCL_WAIT_TIMEOUT_NS 20000000000ull // 20 s: far above any protocol test step
#endif

// A false that depends on template arguments: a static_assert on it fires
// only when the template is instantiated, i.e. when a kernel uses the API.
template <typename... T> struct vnccl_unsupported {
  static constexpr bool value = false;
};
#define VNCCL_UNSUPPORTED(what)                                                                    \
  "cuco vranks: " what " is not supported by the virtual-rank emulation (runtime/vnccl.cuh); "     \
  "virtual mode tests LSA protocols only (GIN, LL all-to-all and multimem are not emulated)"

////////////////////////////////////////////////////////////////////////////////
// Types (layouts of the public fields follow 2.28.9)

struct ncclDevComm;
typedef struct ncclDevComm ncclDevComm_t;
struct ncclTeam {
  int nRanks, rank, stride;
};
typedef struct ncclTeam ncclTeam_t;
struct ncclTeamTagWorld {};
struct ncclTeamTagLsa {};
struct ncclTeamTagRail {};

struct ncclMultimemHandle {
  void *mcBasePtr;
};
typedef struct ncclMultimemHandle ncclMultimemHandle_t;
typedef uint32_t ncclDevResourceHandle;
typedef ncclDevResourceHandle ncclDevResourceHandle_t;
typedef uint32_t ncclGinSignal_t;
typedef uint32_t ncclGinCounter_t;

struct ncclLsaBarrierHandle {
  ncclDevResourceHandle_t bufHandle;
  int nBarriers;
};
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
struct ncclGinBarrierHandle {
  ncclGinSignal_t signal0;
  ncclDevResourceHandle_t bufHandle;
};
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
struct ncclLLA2AHandle {
  ncclDevResourceHandle_t bufHandle;
  uint32_t nSlots;
};
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;

struct ncclDevResourceRequirements;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
struct ncclTeamRequirements;
typedef struct ncclTeamRequirements ncclTeamRequirements_t;

struct ncclDevCommRequirements {
  ncclDevResourceRequirements_t *resourceRequirementsList;
  ncclTeamRequirements_t *teamRequirementsList;
  bool lsaMultimem;
  int barrierCount;
  int lsaBarrierCount;
  int railGinBarrierCount;
  int lsaLLA2ABlockCount, lsaLLA2ASlotCount;
  bool ginForceEnable;
  int ginContextCount;
  int ginSignalCount;
  int ginCounterCount;
};
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;

struct ncclDevResourceRequirements {
  ncclDevResourceRequirements_t *next;
  size_t bufferSize, bufferAlign;
  ncclDevResourceHandle_t *outBufferHandle;
  int ginSignalCount;
  int ginCounterCount;
  ncclGinSignal_t *outGinSignalStart;
  ncclGinCounter_t *outGinCounterStart;
};

struct ncclTeamRequirements {
  ncclTeamRequirements_t *next;
  ncclTeam_t team;
  bool multimem;
  ncclMultimemHandle_t *outMultimemHandle;
};

// The window descriptor (ncclWindow_t points at one, in device memory). One
// allocation holds the R slices of a window: slice of LSA rank i starts at
// lsaFlatBase + i * sliceStride. Every virtual rank has its own descriptor,
// so ncclGetLocalPointer(w, off) resolves to that rank's slice.
struct ncclWindow_vidmem {
  void *winHost;       // host bookkeeping (vnccl_window), never read on device
  char *lsaFlatBase;   // first byte of LSA rank 0's slice
  int lsaRank;         // owner of this descriptor, in its LSA team
  int worldRank;       // owner of this descriptor, in the world
  int lsaSize;         // slices reachable by load/store
  int pad_;            // keeps the 8-byte fields aligned
  size_t sliceStride;  // bytes between two slices (multiple of 4096)
  size_t sliceBytes;   // usable bytes of one slice (the registered size)
};

struct ncclDevComm {
  int rank, nRanks;
  uint32_t nRanks_rcp32; // kept for layout familiarity; unused by the emulation
  int lsaRank, lsaSize;
  uint32_t lsaSize_rcp32;
  void *windowTable; // ncclFindWindow is not emulated
  ncclWindow_t resourceWindow;
  struct ncclWindow_vidmem resourceWindow_inlined;
  ncclMultimemHandle_t lsaMultimem; // always {NULL}: multimem is off limits
  ncclLsaBarrierHandle_t lsaBarrier;
  ncclGinBarrierHandle_t railGinBarrier; // always zero: no GIN
  uint8_t ginContextCount;               // always 0: guard GIN code with it
  int ginSignalCount;
  int ginCounterCount;
};

////////////////////////////////////////////////////////////////////////////////
// Teams (pure arithmetic, as core__funcs.h of 2.28.9)

__host__ __device__ __forceinline__ ncclTeam ncclTeamWorld(ncclDevComm const &comm) {
  ncclTeam t;
  t.nRanks = comm.nRanks;
  t.rank = comm.rank;
  t.stride = 1;
  return t;
}
__host__ __device__ __forceinline__ ncclTeam ncclTeamLsa(ncclDevComm const &comm) {
  ncclTeam t;
  t.nRanks = comm.lsaSize;
  t.rank = comm.lsaRank;
  t.stride = 1;
  return t;
}
__host__ __device__ __forceinline__ ncclTeam ncclTeamRail(ncclDevComm const &comm) {
  ncclTeam t;
  t.nRanks = comm.nRanks / comm.lsaSize;
  t.rank = comm.rank / comm.lsaSize;
  t.stride = comm.lsaSize;
  return t;
}
__host__ __device__ __forceinline__ bool ncclTeamRankIsMember(ncclTeam_t a, ncclTeam_t b,
                                                               int brank) {
  int wrank = (brank - b.rank) * b.stride;
  uint32_t adelta = wrank / a.stride;
  uint32_t amod = wrank % a.stride;
  int arank = a.rank + adelta;
  return 0 <= arank && arank < a.nRanks && amod == 0;
}
__host__ __device__ __forceinline__ int ncclTeamRankToTeam(ncclTeam_t a, ncclTeam_t b, int brank) {
  int wrank = (brank - b.rank) * b.stride;
  uint32_t adelta = wrank / a.stride;
  return a.rank + adelta;
}
__host__ __device__ __forceinline__ int ncclTeamRankToWorld(ncclDevComm const &comm, ncclTeam tm,
                                                             int rank) {
  return comm.rank + (rank - tm.rank) * tm.stride;
}
__host__ __device__ __forceinline__ int ncclTeamRankToLsa(ncclDevComm const &comm, ncclTeam tm,
                                                           int rank) {
  return comm.lsaRank + (rank - tm.rank) * tm.stride;
}
__host__ __device__ __forceinline__ ncclTeam_t ncclTeamInnerFactor(ncclTeam_t parent,
                                                                   int innerSize) {
  ncclTeam_t t;
  t.nRanks = innerSize;
  t.rank = parent.rank % innerSize;
  t.stride = parent.stride;
  return t;
}
__host__ __device__ __forceinline__ ncclTeam_t ncclTeamOuterFactor(ncclTeam_t parent,
                                                                   int innerSize) {
  ncclTeam_t t;
  t.nRanks = parent.nRanks / innerSize;
  t.rank = parent.rank / innerSize;
  t.stride = parent.stride * innerSize;
  return t;
}
__host__ __device__ __forceinline__ int ncclTeamRankInDifference(ncclTeam_t parent,
                                                                  ncclTeam_t subset, int index) {
  int stride = subset.stride / parent.stride;
  int below = parent.rank - subset.rank * stride;
  if (stride < 0) {
    stride = -stride;
    below -= (subset.nRanks - 1) * stride;
  }
  if (index < below)
    return index;
  if (index - below < (subset.nRanks - 1) * (stride - 1))
    return below + 1 + ((index - below) / (stride - 1)) * stride + (index - below) % (stride - 1);
  return below + 1 + (subset.nRanks - 1) * stride +
         (index - below - (subset.nRanks - 1) * (stride - 1));
}

// The host team queries take a real ncclComm_t, which virtual ranks do not
// have: fail to compile with a message (rt_lsa_size / rt_nranks instead).
// SFINAE keeps them out of overload resolution for ncclDevComm arguments.
#define VNCCL_HOST_TEAM(name)                                                                      \
  template <typename C, typename... A,                                                             \
            typename = typename std::enable_if<std::is_same<C, ncclComm_t>::value>::type>          \
  inline ncclTeam name(C, A...) {                                                                  \
    static_assert(vnccl_unsupported<C, A...>::value,                                               \
                  "cuco vranks: host " #name "(ncclComm_t) needs a real communicator; use "        \
                  "rt_lsa_size()/rt_nranks() on the host or the ncclDevComm overload");            \
    return ncclTeam{};                                                                             \
  }
VNCCL_HOST_TEAM(ncclTeamWorld)
VNCCL_HOST_TEAM(ncclTeamLsa)
VNCCL_HOST_TEAM(ncclTeamRail)
#undef VNCCL_HOST_TEAM

__host__ __device__ __forceinline__ size_t ncclGetResourceBufferOffset(ncclDevResourceHandle_t h) {
  return ((size_t)h) * 128;
}

////////////////////////////////////////////////////////////////////////////////
// Pointers

#ifdef __CUDACC__
// vnccl_fail: print one line naming the call and its numbers, then fail like
// a device assert (the driver prints the message; the context dies, so the
// host's next CUDA call fails instead of the kernel corrupting memory).
__device__ __noinline__ inline void vnccl_fail(const char *what, int a, int b, unsigned long long c,
                                               unsigned long long d) {
  printf("cuco vranks: %s (%d, %d, %llu, %llu) [block %d thread %d]\n", what, a, b, c, d,
         (int)blockIdx.x, (int)threadIdx.x);
  __assert_fail(what, "runtime/vnccl.cuh", __LINE__, "cuco vranks");
  __trap(); // not reached
}

__device__ __forceinline__ char *vnccl_slice(ncclWindow_t w, size_t off, int lsaPeer,
                                             const char *call) {
  // The descriptor is written once before any launch, so plain loads are fine.
  char *base = w->lsaFlatBase;
  size_t stride = w->sliceStride;
#ifndef VNCCL_NO_CHECKS
  int lsaSize = w->lsaSize;
  size_t bytes = w->sliceBytes;
  if (lsaPeer < 0 || lsaPeer >= lsaSize)
    vnccl_fail(call, lsaPeer, lsaSize, off, bytes); // peer outside [0, lsaSize)
  if (off > bytes)
    vnccl_fail(call, lsaPeer, lsaSize, off, bytes); // offset past the window
#else
  (void)call;
#endif
  return base + (size_t)lsaPeer * stride + off;
}

__device__ __forceinline__ void *ncclGetLocalPointer(ncclWindow_t w, size_t offset) {
  return vnccl_slice(w, offset, w->lsaRank, "ncclGetLocalPointer: bad offset");
}
__device__ __forceinline__ void *ncclGetLsaPointer(ncclWindow_t w, size_t offset, int peer) {
  return vnccl_slice(w, offset, peer,
                     "ncclGetLsaPointer: LSA peer out of range or offset past the window "
                     "(lsaPeer, lsaSize, offset, windowBytes)");
}
__device__ __forceinline__ void *ncclGetPeerPointer(ncclWindow_t w, size_t offset, int peer) {
  int i = w->lsaRank + (peer - w->worldRank);
  return vnccl_slice(w, offset, i,
                     "ncclGetPeerPointer: world peer not in my LSA team or offset past the "
                     "window (lsaPeer, lsaSize, offset, windowBytes)");
}
__device__ __forceinline__ void *ncclGetPeerPointer(ncclWindow_t w, size_t offset, ncclTeam tm,
                                                    int peer) {
  int i = w->lsaRank + (peer - tm.rank) * tm.stride;
  return vnccl_slice(w, offset, i,
                     "ncclGetPeerPointer(team): peer not in my LSA team or offset past the "
                     "window (lsaPeer, lsaSize, offset, windowBytes)");
}

template <typename W = ncclWindow_t>
__device__ void *ncclGetMultimemPointer(W, size_t, ncclMultimemHandle) {
  static_assert(vnccl_unsupported<W>::value, VNCCL_UNSUPPORTED("ncclGetMultimemPointer (multimem)"));
  return nullptr;
}
template <typename W = ncclWindow_t>
__device__ void *ncclGetLsaMultimemPointer(W, size_t, ncclDevComm const &) {
  static_assert(vnccl_unsupported<W>::value,
                VNCCL_UNSUPPORTED("ncclGetLsaMultimemPointer (multimem)"));
  return nullptr;
}
template <typename Coop>
__device__ ncclWindow_t ncclFindWindow(Coop, ncclDevComm const &, void const *) {
  static_assert(vnccl_unsupported<Coop>::value, VNCCL_UNSUPPORTED("ncclFindWindow"));
  return nullptr;
}

// Resource buffers: carved out of the devComm's own R-slice resource window
// in 128-byte units, exactly like NCCL's handles.
__device__ __forceinline__ void *vnccl_resource(ncclDevComm const &comm, ncclDevResourceHandle h,
                                                int lsaPeer) {
#ifndef VNCCL_NO_CHECKS
  if (lsaPeer < 0 || lsaPeer >= comm.lsaSize)
    vnccl_fail("resource buffer: LSA peer out of range (lsaPeer, lsaSize, handle, 0)", lsaPeer,
               comm.lsaSize, h, 0);
#endif
  return comm.resourceWindow_inlined.lsaFlatBase +
         (size_t)lsaPeer * comm.resourceWindow_inlined.sliceStride + (size_t)h * 128;
}
__device__ __forceinline__ void *ncclGetResourceBufferLocalPointer(ncclDevComm const &comm,
                                                                   ncclDevResourceHandle h) {
  return vnccl_resource(comm, h, comm.lsaRank);
}
__device__ __forceinline__ void *ncclGetResourceBufferLsaPointer(ncclDevComm const &comm,
                                                                 ncclDevResourceHandle h,
                                                                 int peer) {
  return vnccl_resource(comm, h, peer);
}
__device__ __forceinline__ void *ncclGetResourceBufferPeerPointer(ncclDevComm const &comm,
                                                                  ncclDevResourceHandle h,
                                                                  ncclTeam team, int peer) {
  return vnccl_resource(comm, h, comm.lsaRank + (peer - team.rank) * team.stride);
}
template <typename C = ncclDevComm>
__device__ void *ncclGetResourceBufferMultimemPointer(C const &, ncclDevResourceHandle,
                                                      ncclMultimemHandle) {
  static_assert(vnccl_unsupported<C>::value,
                VNCCL_UNSUPPORTED("ncclGetResourceBufferMultimemPointer (multimem)"));
  return nullptr;
}
template <typename C = ncclDevComm>
__device__ void *ncclGetResourceBufferLsaMultimemPointer(C const &, ncclDevResourceHandle) {
  static_assert(vnccl_unsupported<C>::value,
                VNCCL_UNSUPPORTED("ncclGetResourceBufferLsaMultimemPointer (multimem)"));
  return nullptr;
}
#endif // __CUDACC__

////////////////////////////////////////////////////////////////////////////////
// ncclSymPtr<T>: a typed (window, offset) pair

template <typename T> struct ncclSymPtr {
  using ElementType = T;
  ncclWindow_t window;
  size_t offset;

  __host__ __device__ constexpr ncclSymPtr(ncclWindow_t w = nullptr, size_t off = 0)
      : window(w), offset(off) {}
  template <typename U> __host__ __device__ operator ncclSymPtr<U>() const {
    return {window, offset};
  }
  template <typename Int> __host__ __device__ ncclSymPtr<T> &operator+=(Int d) {
    offset = (size_t)((long long)offset + (long long)d * (long long)sizeof(T));
    return *this;
  }
  template <typename Int> __host__ __device__ ncclSymPtr<T> &operator-=(Int d) {
    offset = (size_t)((long long)offset - (long long)d * (long long)sizeof(T));
    return *this;
  }
#ifdef __CUDACC__
  __device__ T *localPtr() const { return (T *)ncclGetLocalPointer(window, offset); }
  __device__ T *lsaPtr(int peer) const { return (T *)ncclGetLsaPointer(window, offset, peer); }
  __device__ T *peerPtr(int peer) const { return (T *)ncclGetPeerPointer(window, offset, peer); }
  __device__ T *peerPtr(ncclTeam team, int peer) const {
    return (T *)ncclGetPeerPointer(window, offset, team, peer);
  }
  template <typename M = ncclMultimemHandle> __device__ T *multimemPtr(M) const {
    static_assert(vnccl_unsupported<M>::value, VNCCL_UNSUPPORTED("ncclSymPtr::multimemPtr"));
    return nullptr;
  }
  template <typename C = ncclDevComm> __device__ T *lsaMultimemPtr(C const &) const {
    static_assert(vnccl_unsupported<C>::value, VNCCL_UNSUPPORTED("ncclSymPtr::lsaMultimemPtr"));
    return nullptr;
  }
#endif
};
template <typename T, typename Int>
__host__ __device__ ncclSymPtr<T> operator+(ncclSymPtr<T> p, Int d) {
  return p += d;
}
template <typename T, typename Int>
__host__ __device__ ncclSymPtr<T> operator-(ncclSymPtr<T> p, Int d) {
  return p -= d;
}
template <typename T> __host__ __device__ ptrdiff_t operator-(ncclSymPtr<T> a, ncclSymPtr<T> b) {
  return ((ptrdiff_t)a.offset - (ptrdiff_t)b.offset) / (ptrdiff_t)sizeof(T);
}
template <typename T> __host__ __device__ bool operator==(ncclSymPtr<T> a, ncclSymPtr<T> b) {
  return a.window == b.window && a.offset == b.offset;
}
template <typename T> __host__ __device__ bool operator!=(ncclSymPtr<T> a, ncclSymPtr<T> b) {
  return !(a == b);
}
#ifdef __CUDACC__
__device__ __forceinline__ ncclSymPtr<char> ncclGetResourceBuffer(ncclDevComm const &comm,
                                                                  ncclDevResourceHandle h) {
  return ncclSymPtr<char>(comm.resourceWindow, size_t(h) * 128);
}
#endif

////////////////////////////////////////////////////////////////////////////////
// LSA barrier (NCCL 2.28.9 lsa_barrier__funcs.h, unicast path). Resource
// buffer layout per rank, in uint32 words, n = handle.nBarriers:
//   [0, n)                multimem epochs (unused here)
//   [n, 2n)               unicast epochs, persisted between kernels
//   [2n, 3n)              multimem inbox (unused here)
//   [3n + i*nRanks + p]   inbox of barrier i, written by team peer p

#ifdef __CUDACC__
__device__ __forceinline__ unsigned long long vnccl_now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ cuda::memory_order vnccl_release_part(cuda::memory_order o) {
  return o == cuda::memory_order_acquire   ? cuda::memory_order_relaxed
         : o == cuda::memory_order_acq_rel ? cuda::memory_order_release
                                           : o;
}
__device__ __forceinline__ cuda::memory_order vnccl_acquire_part(cuda::memory_order o) {
  return o == cuda::memory_order_release   ? cuda::memory_order_relaxed
         : o == cuda::memory_order_acq_rel ? cuda::memory_order_acquire
                                           : o;
}

template <typename Coop> struct ncclLsaBarrierSession_internal {
  Coop coop;
  ncclDevComm const &comm;
  ncclTeam team;
  ncclLsaBarrierHandle handle;
  int index;
  bool multimem;
  ncclMultimemHandle mmHandle;
  uint32_t epoch;

  __device__ __forceinline__ uint32_t *ucInbox(int owner, int peer) {
    uint32_t *state =
        (uint32_t *)ncclGetResourceBufferPeerPointer(comm, handle.bufHandle, team, owner);
    return state + 3 * handle.nBarriers + index * team.nRanks + peer;
  }
};

template <typename Coop> struct ncclLsaBarrierSession : ncclLsaBarrierSession_internal<Coop> {
  __device__ ncclLsaBarrierSession(Coop coop, ncclDevComm const &comm, ncclTeam team,
                                   ncclLsaBarrierHandle handle, uint32_t index,
                                   bool multimem = false, ncclMultimemHandle mmHandle = {})
      : ncclLsaBarrierSession_internal<Coop>{coop,     comm,     team, handle, (int)index,
                                             multimem, mmHandle, 0} {
    if (multimem)
      vnccl_fail("ncclLsaBarrierSession: multimem=true is not supported (multimem is off "
                 "limits; index, nBarriers, 0, 0)",
                 (int)index, handle.nBarriers, 0, 0);
#ifndef VNCCL_NO_CHECKS
    if ((int)index < 0 || (int)index >= handle.nBarriers)
      vnccl_fail("ncclLsaBarrierSession: index >= barrier count (index, nBarriers, rank, 0); "
                 "request lsaBarrierCount >= gridDim.x",
                 (int)index, handle.nBarriers, (unsigned long long)comm.rank, 0);
#endif
    uint32_t *state = (uint32_t *)ncclGetResourceBufferLocalPointer(comm, handle.bufHandle);
    this->epoch = state[handle.nBarriers + this->index];
  }
  __device__ ncclLsaBarrierSession(Coop coop, ncclDevComm const &comm, ncclTeamTagLsa,
                                   uint32_t index, bool multimem = false)
      : ncclLsaBarrierSession(coop, comm, ncclTeamLsa(comm), comm.lsaBarrier, index, multimem,
                              comm.lsaMultimem) {}
  __device__ ~ncclLsaBarrierSession() {
    uint32_t *state =
        (uint32_t *)ncclGetResourceBufferLocalPointer(this->comm, this->handle.bufHandle);
    if (this->coop.thread_rank() == 0)
      state[this->handle.nBarriers + this->index] = this->epoch;
    this->coop.sync();
  }
  ncclLsaBarrierSession(ncclLsaBarrierSession const &) = delete;

  __device__ void arrive(Coop, cuda::memory_order order) {
    this->coop.sync();
    const cuda::memory_order rel = vnccl_release_part(order);
#pragma unroll 1
    for (int i = this->coop.thread_rank(); i < this->team.nRanks - 1; i += this->coop.size()) {
      int peer = i + (this->team.rank <= i ? 1 : 0);
      cuda::atomic_ref<uint32_t, cuda::thread_scope_system> inbox(
          *this->ucInbox(peer, this->team.rank));
      inbox.store(this->epoch + 1, rel);
    }
  }
  __device__ void wait(Coop, cuda::memory_order order) {
    const cuda::memory_order acq = vnccl_acquire_part(order);
#pragma unroll 1
    for (int i = this->coop.thread_rank(); i < this->team.nRanks - 1; i += this->coop.size()) {
      int peer = i + (this->team.rank <= i ? 1 : 0);
      cuda::atomic_ref<uint32_t, cuda::thread_scope_system> inbox(
          *this->ucInbox(this->team.rank, peer));
      unsigned long long t0 = 0;
      unsigned spins = 0;
#pragma unroll 1
      while (true) {
        uint32_t got = inbox.load(acq);
        if (got - (this->epoch + 1) <= uint32_t(-1) >> 1)
          break;
        // Timeout instead of a silent hang: name who waited on whom.
        if ((++spins & 1023u) == 0) {
          unsigned long long now = vnccl_now_ns();
          if (t0 == 0)
            t0 = now;
          else if (now - t0 > VNCCL_WAIT_TIMEOUT_NS)
            vnccl_fail("ncclLsaBarrierSession::wait timed out: a peer never arrived (team rank, "
                       "team peer, barrier index, my epoch+1)",
                       this->team.rank, peer, (unsigned long long)this->index,
                       (unsigned long long)this->epoch + 1);
        }
      }
    }
    this->epoch += 1;
    this->coop.sync();
  }
  __device__ void sync(Coop coop, cuda::memory_order order) {
    this->arrive(coop, order);
    this->wait(coop, order);
  }
};

////////////////////////////////////////////////////////////////////////////////
// GIN, hierarchical barriers, LL all-to-all: compile-time errors when used.

enum class ncclGinFenceLevel { Relaxed };
struct ncclGin_None {};
struct ncclGin_SignalAdd {
  ncclGinSignal_t signal;
  uint64_t value;
};
struct ncclGin_SignalInc {
  ncclGinSignal_t signal;
};
struct ncclGin_CounterInc {
  ncclGinCounter_t counter;
};

struct ncclGin {
  template <typename... A> __device__ ncclGin(A &&...) {
    static_assert(vnccl_unsupported<A...>::value, VNCCL_UNSUPPORTED("ncclGin (GIN)"));
  }
};

template <typename Coop> struct ncclGinBarrierSession {
  template <typename... A> __device__ ncclGinBarrierSession(A &&...) {
    static_assert(vnccl_unsupported<Coop, A...>::value,
                  VNCCL_UNSUPPORTED("ncclGinBarrierSession (GIN)"));
  }
};

// ncclBarrierSession: only the LSA form (tag before comm) is emulated; the
// world/rail/inner-outer forms need GIN.
template <typename Coop> struct ncclBarrierSession {
  ncclLsaBarrierSession<Coop> lsa;
  __device__ ncclBarrierSession(Coop coop, ncclTeamTagLsa tag, ncclDevComm const &comm,
                                uint32_t index, bool multimem = false)
      : lsa(coop, comm, tag, index, multimem) {}
  template <typename... A> __device__ ncclBarrierSession(Coop, ncclTeamTagWorld, A &&...) {
    static_assert(vnccl_unsupported<Coop, A...>::value,
                  VNCCL_UNSUPPORTED("ncclBarrierSession over the world team (GIN)"));
  }
  template <typename... A> __device__ ncclBarrierSession(Coop, ncclTeamTagRail, A &&...) {
    static_assert(vnccl_unsupported<Coop, A...>::value,
                  VNCCL_UNSUPPORTED("ncclBarrierSession over the rail team (GIN)"));
  }
  template <typename... A> __device__ ncclBarrierSession(Coop, ncclTeam, ncclTeam, A &&...) {
    static_assert(vnccl_unsupported<Coop, A...>::value,
                  VNCCL_UNSUPPORTED("ncclBarrierSession with inner/outer teams (GIN)"));
  }
  ncclBarrierSession(ncclBarrierSession const &) = delete;
  __device__ ncclLsaBarrierSession<Coop> &lsaBarrier() { return lsa; }
  template <typename C = Coop> __device__ ncclGinBarrierSession<C> &ginBarrier() {
    static_assert(vnccl_unsupported<C>::value,
                  VNCCL_UNSUPPORTED("ncclBarrierSession::ginBarrier (GIN)"));
    return *(ncclGinBarrierSession<C> *)nullptr;
  }
  __device__ void sync(Coop coop, cuda::memory_order order, ncclGinFenceLevel) {
    lsa.sync(coop, order);
  }
};

template <typename Coop> struct ncclLLA2ASession {
  template <typename... A> __device__ ncclLLA2ASession(A &&...) {
    static_assert(vnccl_unsupported<Coop, A...>::value,
                  VNCCL_UNSUPPORTED("ncclLLA2ASession (LL all-to-all)"));
  }
};
#endif // __CUDACC__

// Host calls that have no meaning without real NCCL ranks: they fail to
// compile in a virtual build (the runtime creates the virtual comms).
template <typename... A> inline ncclResult_t ncclLLA2ACreateRequirement(A &&...) {
  static_assert(vnccl_unsupported<A...>::value,
                VNCCL_UNSUPPORTED("ncclLLA2ACreateRequirement (LL all-to-all)"));
  return ncclInvalidUsage;
}
template <typename... A> inline int ncclLLA2ACalcSlots(A &&...) {
  static_assert(vnccl_unsupported<A...>::value,
                VNCCL_UNSUPPORTED("ncclLLA2ACalcSlots (LL all-to-all)"));
  return 0;
}
template <typename... A> inline ncclResult_t ncclGinBarrierCreateRequirement(A &&...) {
  static_assert(vnccl_unsupported<A...>::value,
                VNCCL_UNSUPPORTED("ncclGinBarrierCreateRequirement (GIN)"));
  return ncclInvalidUsage;
}
template <typename... A> inline ncclResult_t ncclDevCommCreate(A &&...) {
  static_assert(vnccl_unsupported<A...>::value,
                "cuco vranks: ncclDevCommCreate needs real NCCL ranks; in virtual mode the "
                "runtime creates the per-rank comms (rt_devcomm_create / vnccl_devcomm_create)");
  return ncclInvalidUsage;
}
template <typename... A> inline ncclResult_t ncclDevCommDestroy(A &&...) {
  static_assert(vnccl_unsupported<A...>::value,
                "cuco vranks: ncclDevCommDestroy needs real NCCL ranks; the runtime frees "
                "virtual comms");
  return ncclInvalidUsage;
}

// ncclLsaBarrierCreateRequirement: pure arithmetic in NCCL too (a barrier
// over a sub-team needs (3 + team.nRanks) words per barrier).
inline ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                                    ncclLsaBarrierHandle_t *outHandle,
                                                    ncclDevResourceRequirements_t *outReq) {
  if (nBarriers < 0 || team.nRanks < 1 || outHandle == nullptr || outReq == nullptr)
    return ncclInvalidArgument;
  *outReq = ncclDevResourceRequirements{};
  outHandle->nBarriers = nBarriers;
  outHandle->bufHandle = 0;
  outReq->bufferSize = (size_t)(3 + team.nRanks) * (size_t)nBarriers * sizeof(uint32_t);
  outReq->bufferAlign = 128;
  outReq->outBufferHandle = &outHandle->bufHandle;
  return ncclSuccess;
}

#endif // CUCO_VNCCL_CUH
