// runtime/rt_cmp_elem.cuh - how the runtime's k_compare classifies ONE
// output element (host + device, so tests/cli/t0602 checks it on the CPU).
//
// Poison is all-ones bytes (rt_poison). An EXPECTED element whose bits are
// all ones (0xFFFFFFFF in the fp32 expectation of bf16/f16/f32 outputs and
// of 4-byte integers; ~0 for 8-byte; not for 1-byte dtypes, where 0xFF is
// an ordinary value) means "nothing may be
// written here": the snapshot must still hold the poison (kv_transfer:
// slots past a request's end, blocks no table names, a prefill-only rank's
// pool). Such an element is KEPT when it is still poison (not a failure,
// not in the L2 sums) and OUTSIDE when something was written there (a
// failure of its own: "written outside"). An EXPECTED element whose bits are
// RT_EXP_ANY (0xFFFFFFFE, a NaN, only in the fp32 expectation of bf16/f16/f32
// outputs) means "must be written, value not compared" (flash_attn_cp at
// full shapes: the reference computes sampled rows only): still-poison
// there is POISON, anything else is ANY (not in the L2 sums; NaN/Inf still
// count as NaN). Every other element is a VALUE (compared) or POISON
// (unwritten or late: a failure).
#ifndef CUCO_RT_CMP_ELEM_CUH
#define CUCO_RT_CMP_ELEM_CUH

#include <stddef.h>

#include "runtime.h"

// RT_EXP_ANY is public (runtime.h): references write it.
enum { RT_EL_VALUE = 0, RT_EL_POISON = 1, RT_EL_KEPT = 2, RT_EL_OUTSIDE = 3, RT_EL_ANY = 4 };

// Bytes of one element of DTYPE in the snapshot.
__host__ __device__ static inline int rt_el_size(int dtype) {
  switch (dtype) {
    case RT_BF16:
    case RT_F16: return 2;
    case RT_F32:
    case RT_I32:
    case RT_U32: return 4;
    case RT_F64:
    case RT_I64: return 8;
    default: return 1;
  }
}

// Whether element I of a buffer of DTYPE, element size ES, has all bits set.
__host__ __device__ static inline int rt_el_all_ones(const unsigned char *p, size_t i, int es) {
  switch (es) {
    case 2: return ((const unsigned short *)p)[i] == 0xFFFFu;
    case 4: return ((const unsigned int *)p)[i] == 0xFFFFFFFFu;
    case 8: return ((const unsigned long long *)p)[i] == ~0ull;
    default: return p[i] == 0xFF;
  }
}

// Element size of the EXPECTED buffer: fp32 for the float dtypes below
// f64, else the output's own dtype (as rt_compare's contract says).
__host__ __device__ static inline int rt_el_exp_size(int dtype) {
  return dtype == RT_BF16 || dtype == RT_F16 || dtype == RT_F32 ? 4 : rt_el_size(dtype);
}

// The class (RT_EL_*) of element I: GOT is the snapshot, EXP the expectation.
__host__ __device__ static inline int rt_el_class(const unsigned char *got,
                                                  const unsigned char *exp, size_t i,
                                                  int dtype) {
  int poison = rt_el_all_ones(got, i, rt_el_size(dtype));
  int es = rt_el_exp_size(dtype);
  if (es > 1 && rt_el_all_ones(exp, i, es))
    return poison ? RT_EL_KEPT : RT_EL_OUTSIDE;
  if (es == 4 && (dtype == RT_BF16 || dtype == RT_F16 || dtype == RT_F32) &&
      ((const unsigned int *)exp)[i] == RT_EXP_ANY)
    return poison ? RT_EL_POISON : RT_EL_ANY;
  return poison ? RT_EL_POISON : RT_EL_VALUE;
}

#endif  // CUCO_RT_CMP_ELEM_CUH
