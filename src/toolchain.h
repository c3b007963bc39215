/* toolchain.h - where nvcc, CUDA and NCCL are on this machine.
 *
 * Nothing is hard-coded: [build] nvcc / nccl_home / arch in cuco.ini, or
 * CUCO_NVCC / CUCO_NCCL_HOME / CUCO_CUDA_ARCH, else nvcc on PATH; NCCL from
 * the nvidia-nccl Python package when present, else $NCCL_HOME, else next
 * to nvcc, else wherever nvcc resolves <nccl.h> (`nvcc -M`: its target
 * include directory, CPATH, /usr/include) and the loader libnccl.so.2.
 */
#ifndef CUCO_TOOLCHAIN_H
#define CUCO_TOOLCHAIN_H

#include "err.h"

struct config;

#define TC_PATH 1024

struct toolchain {
  char nvcc[TC_PATH];         /* "" when not found */
  char nvcc_version[64];      /* "13.0.88", "" when unknown */
  char cuda_home[TC_PATH];    /* dirname(dirname(realpath(nvcc))) */
  char cuda_lib[TC_PATH];     /* directory of libcudart / libcublas */
  char nccl_include[TC_PATH]; /* directory holding nccl.h, "" if none */
  char nccl_lib[TC_PATH];     /* directory holding libnccl.so.2 */
  int nccl_header_version;    /* NCCL_VERSION_CODE, 0 if unknown */
  int nccl_library_version;   /* ncclGetVersion(), 0 if unknown */
  char arch[64];              /* the target: "sm_90a" (default), "sm_90" */
};

/* The nvcc words that select TC's target, as build.c and
 * scripts/eval-nvcc.sh both spell them: "-arch=sm_90" for a plain target,
 * "-gencode=arch=compute_90a,code=sm_90a" for an architecture-specific one
 * (wgmma and setmaxnreg need it; nvcc's -arch=sm_90a shorthand may add a
 * plain sm_90 pass that rejects them). */
void tc_arch_flag(const struct toolchain *tc, char *buf, unsigned n);

/* Fill *tc.  Missing pieces are left empty (not an error); a present but
 * broken nvcc is ERR_BUILD. */
int tc_probe(const struct config *cfg, struct toolchain *tc,
             struct err *e) WARN_UNUSED;

/* "2.28.9" from 22809. */
void tc_version_str(int code, char *buf, unsigned n);

#endif
