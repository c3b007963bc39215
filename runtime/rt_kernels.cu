// runtime/rt_kernels.cu - the runtime's own device work: seeded random
// inputs, poison, input hashes, output comparison, and the frozen
// perturbation kernels (spin delay, SM/HBM hog).  Nothing here is timed.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_cmp_elem.cuh"
#include "rt_internal.cuh"

// splitmix64 finaliser: a good 64-bit mixer, identical on host and device.
__host__ __device__ static inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t rt_mix64(uint64_t x) { return mix64(x); }

// Uniform in [-1, 1) from 24 random bits: never constant, never NaN/Inf.
__device__ static inline float unit_float(uint64_t h) {
  return (float)((int32_t)(h >> 40) - (1 << 23)) * (1.0f / (1 << 23));
}

#define RT_GAMMA 0x9E3779B97F4A7C15ull

// Word I (bytes 8I..8I+7) of an input filled under KEY: all its bits come
// from ONE splitmix64 output, h = mix64(key + I * gamma): four bf16/f16
// elements from 16 random bits each, two f32 from 24, one f64, or the raw
// bits of integers and bytes.  (The fill used to mix twice per element: at
// moe_dsv3's 22.5 GB of bf16 weights that was ~35 ms of integer multiplies
// a step, more than the step; this is one mix per 8 bytes, bound by HBM.)
__device__ static inline uint64_t fill_word(uint64_t key, size_t i, int dtype) {
  const uint64_t h = mix64(key + (uint64_t)i * RT_GAMMA);
  uint64_t w = 0;
  switch (dtype) {
    case RT_BF16:
    case RT_F16:
      for (int j = 0; j < 4; j++) {
        const float f = (float)((int)((h >> (16 * j)) & 0xFFFF) - 32768) * (1.0f / 32768);
        const unsigned short b = dtype == RT_BF16 ? __bfloat16_as_ushort(__float2bfloat16(f))
                                                  : __half_as_ushort(__float2half(f));
        w |= (uint64_t)b << (16 * j);
      }
      return w;
    case RT_F32:
      for (int j = 0; j < 2; j++) {
        const uint32_t q = (uint32_t)(h >> (32 * j));
        const float f = (float)((int32_t)(q >> 8) - (1 << 23)) * (1.0f / (1 << 23));
        w |= (uint64_t)__float_as_uint(f) << (32 * j);
      }
      return w;
    case RT_F64:
      return (uint64_t)__double_as_longlong((double)unit_float(h));
    default:
      return h;
  }
}

// The input hash: the sum over 8-byte words I (a short last word
// zero-padded) of mix64(w ^ (hk + (I + 1) * gamma)).  HK is a PRF of the
// per-run secret (RT_PRF_HASH): an unkeyed sum of an invertible mix could
// be forged, a candidate changing two words so that the sum stays.
__device__ static inline uint64_t hash_term(uint64_t w, uint64_t hk, size_t i) {
  return mix64(w ^ (hk + (uint64_t)(i + 1) * RT_GAMMA));
}

// Word I of the BYTES at P, zero-padded past the end (8-byte loads where P
// is aligned).
__device__ static inline uint64_t load_word(const unsigned char *p, size_t bytes, size_t i,
                                            bool aligned) {
  const size_t left = bytes - i * 8;
  if (left >= 8 && aligned) return ((const uint64_t *)p)[i];
  uint64_t w = 0;
  for (size_t b = 0; b < 8 && b < left; b++) w |= (uint64_t)p[i * 8 + b] << (8 * b);
  return w;
}

__device__ static inline void warp_add(unsigned long long *out, uint64_t acc) {
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, (unsigned long long)acc);
}

// Fill BYTES at P under KEY; with OUT, add the hash (under HK) of what was
// written, so that a fresh input needs no second pass to be hashed.
__global__ void k_fill(unsigned char *p, size_t bytes, int dtype, uint64_t key, uint64_t hk,
                       unsigned long long *out) {
  const size_t nw = (bytes + 7) / 8, stride = (size_t)gridDim.x * blockDim.x;
  const bool aligned = ((uintptr_t)p & 7) == 0;
  uint64_t acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nw; i += stride) {
    uint64_t w = fill_word(key, i, dtype);
    const size_t left = bytes - i * 8;
    if (left >= 8 && aligned) {
      ((uint64_t *)p)[i] = w;
    } else {
      for (size_t b = 0; b < 8 && b < left; b++) p[i * 8 + b] = (unsigned char)(w >> (8 * b));
      if (left < 8) w &= (1ull << (8 * left)) - 1;
    }
    if (out) acc += hash_term(w, hk, i);
  }
  if (out) warp_add(out, acc);
}

static int grid_for(size_t n, int threads) {
  size_t g = (n + threads - 1) / threads;
  if (g > 4096) g = 4096;
  return g ? (int)g : 1;
}

// HK, the hash key: read from the vault just for the launch.
static uint64_t hash_key(void) { return rt_prf(RT_PRF_HASH, 0, 0, 0); }

int rt_fill_random(void *dev, size_t bytes, int dtype, uint64_t key, unsigned long long *hash_out,
                   cudaStream_t stream) {
  if (hash_out) CUDA_CHECK(cudaMemsetAsync(hash_out, 0, sizeof *hash_out, stream));
  if (!bytes) return 0;
  const uint64_t hk = hash_out ? hash_key() : 0;
  k_fill<<<grid_for((bytes + 7) / 8, 256), 256, 0, stream>>>((unsigned char *)dev, bytes, dtype,
                                                             key, hk, hash_out);
  CUDA_CHECK(cudaGetLastError());
  return 0;
}

// Poison is all-ones bytes: a NaN in bf16/f16/f32/f64, 0xFFFFFFFF for
// counts, never zero.
int rt_poison(void *dev, size_t bytes, int dtype, int counts,
              cudaStream_t stream) {
  (void)dtype;
  (void)counts;
  CUDA_CHECK(cudaMemsetAsync(dev, 0xFF, bytes, stream));
  return 0;
}

__global__ void k_hash(const unsigned char *p, size_t bytes, uint64_t hk,
                       unsigned long long *out) {
  const size_t nw = (bytes + 7) / 8, stride = (size_t)gridDim.x * blockDim.x;
  const bool aligned = ((uintptr_t)p & 7) == 0;
  uint64_t acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nw; i += stride)
    acc += hash_term(load_word(p, bytes, i, aligned), hk, i);
  warp_add(out, acc);
}

int rt_hash(const void *dev, size_t bytes, unsigned long long *out_dev,
            cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(out_dev, 0, sizeof *out_dev, stream));
  if (!bytes) return 0;
  const uint64_t hk = hash_key();
  k_hash<<<grid_for((bytes + 7) / 8, 256), 256, 0, stream>>>((const unsigned char *)dev, bytes,
                                                             hk, out_dev);
  CUDA_CHECK(cudaGetLastError());
  return 0;
}

// Two sums under two keys (HK0, HK1): the worker's commitment to an
// output (docs/contracts.md 4f).  One 64-bit sum of an invertible mix
// could be steered to any value by choosing one word; two independent
// sums leave a forger two 64-bit equations.
__global__ void k_hash2(const unsigned char *p, size_t bytes, uint64_t hk0, uint64_t hk1,
                        unsigned long long *out) {
  const size_t nw = (bytes + 7) / 8, stride = (size_t)gridDim.x * blockDim.x;
  const bool aligned = ((uintptr_t)p & 7) == 0;
  uint64_t a0 = 0, a1 = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nw; i += stride) {
    const uint64_t w = load_word(p, bytes, i, aligned);
    a0 += hash_term(w, hk0, i);
    a1 += hash_term(w ^ 0xA5A5A5A5A5A5A5A5ull, hk1, i);
  }
  warp_add(out, a0);
  warp_add(out + 1, a1);
}

int rt_hash_keyed(const void *dev, size_t bytes, uint64_t hk0, uint64_t hk1,
                  unsigned long long *out_dev, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(out_dev, 0, 2 * sizeof *out_dev, stream));
  if (!bytes) return 0;
  k_hash2<<<grid_for((bytes + 7) / 8, 256), 256, 0, stream>>>((const unsigned char *)dev, bytes,
                                                              hk0, hk1, out_dev);
  CUDA_CHECK(cudaGetLastError());
  return 0;
}

__device__ static inline uint64_t now_ns(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Frozen delay: one thread spins on the global timer.
__global__ void k_spin(uint64_t ns) {
  uint64_t t0 = now_ns();
  while (now_ns() - t0 < ns) {
  }
}

int rt_spin(double ms, cudaStream_t stream) {
  k_spin<<<1, 1, 0, stream>>>((uint64_t)(ms * 1e6));
  CUDA_CHECK(cudaGetLastError());
  return 0;
}

// Frozen SM/HBM hog: two CTAs of 992 threads on every SM (at most two fit:
// 3 x 992 > 2048 threads), streaming read-modify-write through SCRATCH until
// the time is up. It leaves 2 warps per SM free: a step's small kernels still
// start beside it, its big ones wait until it ends. A step that assumes one
// of its kernels runs before another (a time-bounded wait, "it is always done
// by then") sees that order flip, and every memory-bound kernel slows down.
#define RT_HOG_THREADS 992
__global__ void __launch_bounds__(RT_HOG_THREADS, 2)
    k_hog(uint4 *buf, size_t n, uint64_t ns, unsigned int *resident) {
  if (resident && threadIdx.x == 0) atomicAdd_system(resident, 1u);
  uint64_t t0 = now_ns();
  size_t stride = (size_t)gridDim.x * blockDim.x;
  while (now_ns() - t0 < ns) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += stride) {
      uint4 v = buf[i];
      v.x += 1;
      buf[i] = v;
    }
  }
}

int rt_hog(void *scratch, size_t bytes, double ms, cudaStream_t stream,
           unsigned int *resident_dev, int *ncta) {
  int dev = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  k_hog<<<2 * sms, RT_HOG_THREADS, 0, stream>>>((uint4 *)scratch, bytes / sizeof(uint4),
                                                (uint64_t)(ms * 1e6), resident_dev);
  CUDA_CHECK(cudaGetLastError());
  if (ncta) *ncta = 2 * sms;
  return 0;
}

struct cmp_dev {
  double err2, ref2;
  unsigned long long nan, poison, compared, worst; // worst: rel bits<<32|row
  unsigned long long outside;  // written where the expectation says poison
  unsigned long long max_abs;  // float bits of the largest |got - expected|
};

__device__ static inline double load_got(const unsigned char *p, size_t i,
                                         int dtype, int *is_poison) {
  switch (dtype) {
    case RT_BF16: {
      unsigned short b = ((const unsigned short *)p)[i];
      *is_poison = b == 0xFFFF;
      return (double)__bfloat162float(((const __nv_bfloat16 *)p)[i]);
    }
    case RT_F16: {
      unsigned short b = ((const unsigned short *)p)[i];
      *is_poison = b == 0xFFFF;
      return (double)__half2float(((const __half *)p)[i]);
    }
    case RT_F32: {
      unsigned int b = ((const unsigned int *)p)[i];
      *is_poison = b == 0xFFFFFFFFu;
      return (double)((const float *)p)[i];
    }
    case RT_F64: {
      unsigned long long b = ((const unsigned long long *)p)[i];
      *is_poison = b == ~0ull;
      return ((const double *)p)[i];
    }
    case RT_I32:
    case RT_U32: {
      unsigned int b = ((const unsigned int *)p)[i];
      *is_poison = b == 0xFFFFFFFFu;
      return (double)b;
    }
    case RT_I64: {
      unsigned long long b = ((const unsigned long long *)p)[i];
      *is_poison = b == ~0ull;
      return (double)b;
    }
    default:
      *is_poison = p[i] == 0xFF;
      return (double)p[i];
  }
}

__device__ static inline double load_exp(const unsigned char *p, size_t i,
                                         int dtype) {
  int dummy;
  if (dtype == RT_BF16 || dtype == RT_F16 || dtype == RT_F32)
    return (double)((const float *)p)[i];
  return load_got(p, i, dtype, &dummy);
}

__global__ void k_compare(const unsigned char *got, const unsigned char *exp,
                          int dtype, long long rows, long long cols,
                          long long sample, long long block_rows, double *blk,
                          int unpoisoned, struct cmp_dev *out) {
  __shared__ double s_e[32], s_r[32], s_m[32];
  __shared__ unsigned long long s_n[32], s_p[32], s_o[32];
  bool is_int = !(dtype == RT_BF16 || dtype == RT_F16 || dtype == RT_F32 ||
                  dtype == RT_F64);
  for (long long row = (long long)blockIdx.x * sample; row < rows;
       row += (long long)gridDim.x * sample) {
    double e2 = 0, r2 = 0, ma = 0;
    unsigned long long nn = 0, np = 0, no = 0;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
      size_t i = (size_t)row * cols + c;
      // An all-ones expectation: must still be poison (rt_cmp_elem.cuh).
      int cls = rt_el_class(got, exp, i, dtype);
      if (cls == RT_EL_KEPT) continue;
      if (cls == RT_EL_OUTSIDE) {
        if (unpoisoned) continue;  // never poisoned: "outside" is not knowable
        no++;
        continue;
      }
      int pz = 0;
      double g = load_got(got, i, dtype, &pz);
      if (cls == RT_EL_ANY) {  // written, not compared (rt_cmp_elem.cuh)
        if (!is_int && (isnan(g) || isinf(g))) nn++;
        continue;
      }
      double x = load_exp(exp, i, dtype);
      np += pz;
      if (is_int) {
        e2 += (g != x);
        r2 += 1;
      } else if (isnan(g) || isinf(g)) {
        nn++;
      } else {
        e2 += (g - x) * (g - x);
        r2 += x * x;
        if (!pz) ma = fmax(ma, fabs(g - x));
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      e2 += __shfl_down_sync(0xffffffff, e2, o);
      r2 += __shfl_down_sync(0xffffffff, r2, o);
      nn += __shfl_down_sync(0xffffffff, nn, o);
      np += __shfl_down_sync(0xffffffff, np, o);
      no += __shfl_down_sync(0xffffffff, no, o);
      ma = fmax(ma, __shfl_down_sync(0xffffffff, ma, o));
    }
    int w = threadIdx.x / 32, nw = blockDim.x / 32;
    if ((threadIdx.x & 31) == 0) {
      s_e[w] = e2;
      s_r[w] = r2;
      s_n[w] = nn;
      s_p[w] = np;
      s_o[w] = no;
      s_m[w] = ma;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int k = 1; k < nw; k++) {
        e2 += s_e[k];
        r2 += s_r[k];
        nn += s_n[k];
        np += s_p[k];
        no += s_o[k];
        ma = fmax(ma, s_m[k]);
      }
      if (ma > 0) atomicMax(&out->max_abs, (unsigned long long)__float_as_uint((float)ma));
      atomicAdd(&out->err2, e2);
      atomicAdd(&out->ref2, r2);
      atomicAdd(&out->nan, nn);
      atomicAdd(&out->poison, np);
      atomicAdd(&out->outside, no);
      atomicAdd(&out->compared, (unsigned long long)cols);
      float rel;
      if (nn || np || no)
        rel = INFINITY;  // a row with NaN, poison or an outside write is the worst
      else if (e2 == 0)
        rel = 0;
      else if (is_int)
        rel = (float)(e2 / (r2 > 0 ? r2 : 1));
      else
        rel = (float)sqrt(e2 / (r2 > 1e-30 ? r2 : 1e-30));
      unsigned long long key =
          ((unsigned long long)__float_as_uint(rel) << 32) | (uint32_t)row;
      atomicMax(&out->worst, key);
      if (blk) {  // per-block sums; a bad row makes its block infinitely bad
        long long bi = row / block_rows;
        atomicAdd(&blk[2 * bi], (nn || np || no) ? (double)INFINITY : e2);
        atomicAdd(&blk[2 * bi + 1], r2);
      }
    }
    __syncthreads();
  }
}

int rt_compare(const void *got, const void *expected, int dtype, int mode,
               long long rows, long long cols, long long sample_stride,
               long long block_rows, struct rt_cmp *out, cudaStream_t stream) {
  struct cmp_dev *d = NULL, h;
  double *blk = NULL, *hblk = NULL;
  int rc = -1;
  if (sample_stride < 1) sample_stride = 1;
  long long nblk = block_rows > 0 ? (rows + block_rows - 1) / block_rows : 0;
  // Errors go to `done` (not CUDA_CHECK's plain return), which frees the
  // host block array and the device scratch: a verify that fails here
  // (every output, every step) must not leak.
#define CMP_CHECK(call)                                                     \
  do {                                                                      \
    cudaError_t ce_ = (call);                                               \
    if (ce_ != cudaSuccess) {                                               \
      rt_errorf("%s:%d: %s: %s", __FILE__, __LINE__, #call,                \
                cudaGetErrorString(ce_));                                   \
      goto done;                                                            \
    }                                                                       \
  } while (0)
  if (nblk > 0) {
    hblk = (double *)malloc(sizeof(double) * 2 * nblk);
    if (!hblk) {
      rt_errorf("rt_compare: out of host memory for %lld blocks", nblk);
      return -1;
    }
    CMP_CHECK(cudaMallocAsync((void **)&blk, sizeof(double) * 2 * nblk, stream));
    CMP_CHECK(cudaMemsetAsync(blk, 0, sizeof(double) * 2 * nblk, stream));
  }
  CMP_CHECK(cudaMallocAsync((void **)&d, sizeof *d, stream));
  CMP_CHECK(cudaMemsetAsync(d, 0, sizeof *d, stream));
  {
    long long nrows = (rows + sample_stride - 1) / sample_stride;
    int grid = nrows > 8192 ? 8192 : (int)(nrows ? nrows : 1);
    k_compare<<<grid, 256, 0, stream>>>((const unsigned char *)got,
                                        (const unsigned char *)expected, dtype,
                                        rows, cols, sample_stride, block_rows, blk,
                                        (mode & RT_CMP_UNPOISONED) != 0, d);
  }
  CMP_CHECK(cudaGetLastError());
  CMP_CHECK(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, stream));
  if (nblk > 0)
    CMP_CHECK(cudaMemcpyAsync(hblk, blk, sizeof(double) * 2 * nblk, cudaMemcpyDeviceToHost,
                              stream));
  CMP_CHECK(cudaStreamSynchronize(stream));
  rc = 0;
done:
#undef CMP_CHECK
  // Stream-ordered frees behind the copies (or whatever failed).
  if (d) cudaFreeAsync(d, stream);
  if (blk) cudaFreeAsync(blk, stream);
  if (rc != 0) {
    free(hblk);
    return -1;
  }
  out->err2 = h.err2;
  out->ref2 = h.ref2;
  out->nan = h.nan;
  out->poison = h.poison;
  out->outside = h.outside;
  out->compared = h.compared;
  {
    unsigned int mb = (unsigned int)h.max_abs;
    float ma;
    memcpy(&ma, &mb, sizeof ma);
    out->max_abs = ma;
  }
  unsigned int bits = (unsigned int)(h.worst >> 32);
  float rel;
  memcpy(&rel, &bits, sizeof rel);
  out->worst_row_rel = rel;
  out->worst_row = (long long)(h.worst & 0xFFFFFFFFull);
  out->worst_block_rel = 0;
  out->worst_block = -1;
  int is_int = !rt_dtype_is_float(dtype);
  for (long long i = 0; i < nblk; i++) {
    double e2 = hblk[2 * i], r2 = hblk[2 * i + 1], br;
    if (e2 == 0) continue;  // exact, or no sampled row in this block
    if (is_int) br = e2 / (r2 > 0 ? r2 : 1);
    else br = isinf(e2) ? INFINITY : sqrt(e2 / (r2 > 1e-30 ? r2 : 1e-30));
    if (br > out->worst_block_rel) out->worst_block_rel = br, out->worst_block = i;
  }
  free(hblk);
  return 0;
}
