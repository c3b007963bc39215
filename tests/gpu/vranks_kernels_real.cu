// tests/gpu/vranks_kernels_real.cu - compile-only: the protocol-test kernels
// of vranks_kernels.cuh built against the REAL NCCL 2.28.9 device API (no
// -DCUCO_VRANKS), proving that the same source builds in both modes.
#include "vranks_kernels.cuh"

#ifdef CUCO_VRANKS
#error "vranks_kernels_real.cu is the real-NCCL build; compile it without -DCUCO_VRANKS"
#endif

template __global__ void vr_barrier_order<ncclCoopCta>(ncclDevComm, ncclWindow_t, int, int, int,
                                                       unsigned long long *);
template __global__ void vr_barrier_order<ncclCoopWarp>(ncclDevComm, ncclWindow_t, int, int, int,
                                                        unsigned long long *);
template __global__ void vr_allgather<VR_AG_OK>(ncclDevComm, ncclWindow_t, ncclWindow_t,
                                                const float *, float *, int, unsigned long long,
                                                unsigned long long);
template __global__ void vr_allgather<VR_AG_FLAG_OK>(ncclDevComm, ncclWindow_t, ncclWindow_t,
                                                     const float *, float *, int,
                                                     unsigned long long, unsigned long long);
