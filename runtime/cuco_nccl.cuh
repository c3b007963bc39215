// runtime/cuco_nccl.cuh - the one header a candidate includes for NCCL's
// device API. A normal build gets NCCL 2.28.9's own headers; a build with
// -DCUCO_VRANKS (virtual ranks: R ranks on one GPU, protocol tests only)
// gets the emulation in vnccl.cuh, with the same names and signatures, so
// candidate source is identical in both builds.
#ifndef CUCO_NCCL_CUH
#define CUCO_NCCL_CUH

#ifdef CUCO_VRANKS
#include "vnccl.cuh"
#else
#include <nccl.h>
#include <nccl_device.h>
#endif

#endif
