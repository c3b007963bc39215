// runtime/cuco_nccl.cuh - the ONE include through which workloads and
// candidates use NCCL (host API and the 2.28 device API).
//
// Today this is plain NCCL.  The virtual-rank mode (-DCUCO_VRANKS, added by
// the vranks work) substitutes a device-side emulation of the subset of the
// device API cuco workloads use, so that R ranks run in one process on one
// GPU with unchanged candidate source.  Therefore: never include <nccl.h> or
// <nccl_device.h> directly in a workload; include this header (rt.cuh does).
#ifndef CUCO_NCCL_CUH
#define CUCO_NCCL_CUH

#ifdef CUCO_VRANKS
// Placeholder for the emulation (vranks helper); until it lands, the real
// headers keep candidates compiling in this mode too.
#include <nccl.h>
#include <nccl_device.h>
#else
#include <nccl.h>
#include <nccl_device.h>
#endif

#endif  // CUCO_NCCL_CUH
