// runtime/cuco_nccl.cuh - the ONE include through which workloads and
// candidates use NCCL (host API and the 2.28 device API).
//
// A normal build gets NCCL 2.28.9's own headers. A build with -DCUCO_VRANKS
// (virtual ranks: R ranks in one process on one GPU, protocol tests only)
// gets the device-side emulation in vnccl.cuh, with the same names and
// signatures, so candidate source is identical in both builds; what the
// emulation does not support (GIN, LL all-to-all, multimem) fails to compile
// there with a message. Never include <nccl.h> or <nccl_device.h> directly in
// a workload; include this header (rt.cuh does).
#ifndef CUCO_NCCL_CUH
#define CUCO_NCCL_CUH

#ifdef CUCO_VRANKS
#include "vnccl.cuh"
#else
#include <nccl.h>
#include <nccl_device.h>
#endif

#endif  // CUCO_NCCL_CUH
