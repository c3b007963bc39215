// bench/gemm_tile_util.cuh - helpers of bench/gemm_tile_bench.cu (one translation
// unit: everything here is static): error macros, random and poison fills, the
// cuBLAS reference, output checking (NaN, poison left, stray writes, relative L2,
// max-error location), JSON check records, NaN-guarded matrices, and the
// producer/consumer kernels and schedulers of the hook tests.
#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gemm_tile.cuh"
#include "gemm_tile_v2.cuh"

using namespace cuco_gemm;
typedef __nv_bfloat16 bf16;

#define CK(x)                                                                            \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__,   \
              __LINE__, cudaGetErrorString(e_));                                         \
      exit(4);                                                                           \
    }                                                                                    \
  } while (0)
#define CB(x)                                                                            \
  do {                                                                                   \
    cublasStatus_t s_ = (x);                                                             \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
      fprintf(stderr, "cuBLAS error %d at %s:%d\n", (int)s_, __FILE__, __LINE__);        \
      exit(4);                                                                           \
    }                                                                                    \
  } while (0)

// Tile-config tag for the v2 (wgmma + TMA) kernel; run_gemm dispatches on it.
struct V2Tag {
  static constexpr int BM = v2::BM, BN = v2::BN;
};
template <class Cfg, class P, class E, class S = GemmRasterSched<8>>
static cudaError_t run_gemm(const GemmArgs &a, P p, E e, S s = S(), int grid = 0,
                            cudaStream_t st = 0) {
  if constexpr (std::is_same<Cfg, V2Tag>::value) return gemm_tile_v2_run(a, p, e, s, grid, st);
  else return gemm_tile_run<Cfg>(a, p, e, s, grid, st);
}

static const double kTol = 1e-2;
static const uint16_t kPoison = 0xFFFF;  // bf16 NaN
static cublasHandle_t g_blas;
static FILE *g_json;  // current JSON output
static int g_failures, g_checks;

// ---------------------------------------------------------------------------
// Device helpers.

__device__ __forceinline__ uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return (uint32_t)x;
}

// Fill the rows x cols region of a matrix with leading dimension ld with
// uniform values in [-1, 1) (never all zero); padding is left as it is.
__global__ void fill_random(bf16 *p, long long rows, long long cols, long long ld,
                            uint64_t seed) {
  long long n = rows * cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    long long r = i / cols, c = i % cols;
    uint32_t h = hash32(seed * 0x9E3779B97F4A7C15ULL + (uint64_t)i);
    float v = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
    p[r * ld + c] = __float2bfloat16_rn(v);
  }
}

__global__ void fill_u16(uint16_t *p, long long n, uint16_t v) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    p[i] = v;
}

static void poison(void *p, long long elems) {
  if (elems > 0) fill_u16<<<1024, 256>>>((uint16_t *)p, elems, kPoison);
  CK(cudaGetLastError());
}
static void randomize(bf16 *p, long long rows, long long cols, long long ld, uint64_t seed) {
  if (rows * cols > 0) fill_random<<<1024, 256>>>(p, rows, cols, ld, seed);
  CK(cudaGetLastError());
}

// ---------------------------------------------------------------------------
// cuBLAS reference: R[M,N] (fp32, ld N) = A[M,K] (lda) * B[K,N] (ldb), row-major,
// computed as the column-major R^T = B^T * A^T.
static void ref_gemm(const bf16 *A, long long lda, const bf16 *B, long long ldb, float *R,
                     int M, int N, int K) {
  if (M == 0 || N == 0) return;
  float one = 1.f, zero = 0.f;
  CB(cublasGemmEx(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, CUDA_R_16BF, (int)ldb,
                  A, CUDA_R_16BF, (int)lda, &zero, R, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                  CUBLAS_GEMM_DEFAULT));
}

// cuBLAS bf16-output GEMM (what the benchmark compares against).
static void blas_bf16(const bf16 *A, long long lda, const bf16 *B, long long ldb, bf16 *C,
                      long long ldc, int M, int N, int K) {
  float one = 1.f, zero = 0.f;
  CB(cublasGemmEx(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, CUDA_R_16BF, (int)ldb,
                  A, CUDA_R_16BF, (int)lda, &zero, C, CUDA_R_16BF, (int)ldc,
                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// ---------------------------------------------------------------------------
// Checking.  C is given with one guard row before it and two after it; row_on
// says which rows must be written (others must stay poison); columns N..ldc-1
// are padding and must stay poison.

struct CheckResult {
  double rel_l2 = 0;
  long long nan = 0, poison_left = 0, stray = 0;
  double max_err = 0, max_err_got = 0, max_err_want = 0;
  int max_r = -1, max_c = -1;
  bool passed = false;
};

static inline float bf2f(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static CheckResult check_output(const bf16 *C_guarded, long long ldc, const float *R, int M,
                                int N, const std::vector<char> *row_on) {
  CheckResult cr;
  size_t total = (size_t)(M + 3) * ldc;
  std::vector<uint16_t> hc(total);
  std::vector<float> hr((size_t)M * N);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(hc.data(), C_guarded, total * 2, cudaMemcpyDeviceToHost));
  if ((size_t)M * N) CK(cudaMemcpy(hr.data(), R, hr.size() * 4, cudaMemcpyDeviceToHost));
  double e2 = 0, r2 = 0;
  for (long long c = 0; c < ldc; c++) {  // guard rows
    if (hc[c] != kPoison) cr.stray++;
    if (hc[(size_t)(M + 1) * ldc + c] != kPoison) cr.stray++;
    if (hc[(size_t)(M + 2) * ldc + c] != kPoison) cr.stray++;
  }
  for (int r = 0; r < M; r++) {
    const uint16_t *row = &hc[(size_t)(r + 1) * ldc];
    bool on = !row_on || (*row_on)[r];
    for (long long c = N; c < ldc; c++)
      if (row[c] != kPoison) cr.stray++;
    for (int c = 0; c < N; c++) {
      if (!on) {
        if (row[c] != kPoison) cr.stray++;
        continue;
      }
      if (row[c] == kPoison) cr.poison_left++;
      float g = bf2f(row[c]);
      double w = hr[(size_t)r * N + c];
      if (!std::isfinite(g)) {
        cr.nan++;
        if (cr.max_r < 0 || cr.max_err != INFINITY) {
          cr.max_err = INFINITY, cr.max_r = r, cr.max_c = c, cr.max_err_got = g;
          cr.max_err_want = w;
        }
        continue;
      }
      double d = g - w;
      e2 += d * d;
      r2 += w * w;
      if (fabs(d) > cr.max_err) {
        cr.max_err = fabs(d), cr.max_r = r, cr.max_c = c, cr.max_err_got = g;
        cr.max_err_want = w;
      }
    }
  }
  cr.rel_l2 = r2 > 0 ? sqrt(e2 / r2) : (e2 > 0 ? INFINITY : 0);
  bool any_on = false;
  for (int r = 0; r < M && !any_on; r++) any_on = !row_on || (*row_on)[r];
  bool ref_ok = !(any_on && N > 0 && r2 == 0);  // random inputs never give an all-zero ref
  cr.passed = cr.nan == 0 && cr.poison_left == 0 && cr.stray == 0 && cr.rel_l2 < kTol && ref_ok;
  return cr;
}

// Say which kernel runs next, so a crash or hang in it is attributed.
static void running(const char *name, int M, int N, int K) {
  printf("RUN  %s M=%d N=%d K=%d\n", name, M, N, K);
  fflush(stdout);
}

// Record one check in the log and the JSON array.
static void report(const char *name, const char *kind, int M, int N, int K, const CheckResult &cr,
                   const char *extra_fail = nullptr) {
  bool ok = cr.passed && !extra_fail;
  g_checks++;
  if (!ok) g_failures++;
  printf("%s %-34s %-10s M=%d N=%d K=%d rel_l2=%.3e nan=%lld poison_left=%lld stray_writes=%lld",
         ok ? "PASS" : "FAIL", name, kind, M, N, K, cr.rel_l2, cr.nan, cr.poison_left, cr.stray);
  if (cr.max_r >= 0)
    printf(" max_err=%.3e at (row %d, col %d) got %.5g want %.5g", cr.max_err, cr.max_r,
           cr.max_c, cr.max_err_got, cr.max_err_want);
  if (extra_fail) printf(" [%s]", extra_fail);
  printf("\n");
  fflush(stdout);
  fprintf(g_json,
          "%s\n  {\"name\": \"%s\", \"kind\": \"%s\", \"M\": %d, \"N\": %d, \"K\": %d, "
          "\"rel_l2\": %.6e, \"tol\": %g, \"nan\": %lld, \"poison_left\": %lld, "
          "\"stray_writes\": %lld, \"max_err\": %.6e, \"max_err_row\": %d, \"max_err_col\": %d, "
          "\"passed\": %s, \"reason\": \"%s\"}",
          g_checks > 1 ? "," : "", name, kind, M, N, K, std::isfinite(cr.rel_l2) ? cr.rel_l2 : -1.0,
          kTol, cr.nan, cr.poison_left, cr.stray, std::isfinite(cr.max_err) ? cr.max_err : -1.0,
          cr.max_r, cr.max_c, ok ? "true" : "false", extra_fail ? extra_fail : "");
}

// ---------------------------------------------------------------------------
// Matrices with NaN padding/guards.

struct Mat {
  bf16 *base = nullptr;  // allocation
  bf16 *p = nullptr;     // first element
  long long ld = 0, rows = 0;
};

// rows x cols matrix inside ld columns; guard rows before and after; everything
// NaN, then the rows x cols region random.
static Mat make_input(long long rows, long long cols, long long ld, uint64_t seed) {
  Mat m;
  m.ld = ld;
  m.rows = rows;
  long long elems = (rows + 4) * ld + 64;
  CK(cudaMalloc(&m.base, elems * 2));
  poison(m.base, elems);
  m.p = m.base + 2 * ld;  // 2*ld is a multiple of 16 elements -> 16-byte aligned
  randomize(m.p, rows, cols, ld, seed);
  return m;
}
// Output: one guard row before, two after, all poison.
static Mat make_output(long long rows, long long ld) {
  Mat m;
  m.ld = ld;
  m.rows = rows;
  CK(cudaMalloc(&m.base, (rows + 3) * ld * 2));
  poison(m.base, (rows + 3) * ld);
  m.p = m.base + ld;
  return m;
}
static void repoison(Mat &m) { poison(m.base, (m.rows + 3) * m.ld); }
static void free_mat(Mat &m) {
  if (m.base) CK(cudaFree(m.base));
  m.base = m.p = nullptr;
}
static long long ru8(long long x) { return (x + 7) / 8 * 8; }

// ---------------------------------------------------------------------------
// Hooks used by the tests.

struct ReverseSched {
  __device__ void map(int w, int tiles_m, int tiles_n, int *tm, int *tn) const {
    int r = tiles_m * tiles_n - 1 - w;
    *tm = r / tiles_n;
    *tn = r % tiles_n;
  }
};

struct RotateBy5 {
  __device__ void map(int w, int tiles_m, int tiles_n, int *tm, int *tn) const {
    GemmRotateSched<8>{5}.map(w, tiles_m, tiles_n, tm, tn);
  }
};

// Announce that this kernel is running: a system-scope store into mapped host
// memory that the host polls before it launches the next kernel, so that the
// kernels provably overlap (and a lazily loaded module, which would serialize
// them, is caught as "did not start" instead of silently passing).
__device__ __forceinline__ void announce_started(unsigned *started_host) {
  if (started_host && blockIdx.x == 0 && threadIdx.x == 0) {
    __threadfence_system();
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(started_host), "r"(1u) : "memory");
  }
}

// Producer: announces itself, then (when gate_flags is set) waits until all
// ngate flags reach epoch -- the control uses the GEMM's own tile flags, so the
// copy of A provably lands only after the unwaited GEMM has finished reading it --
// then after delay_ns copies A chunk by chunk (last chunk first) from src into
// dst and raises each chunk's flag; gap_ns between chunks.  *gate_timeout = 1
// when the gate did not open within 2 s (the GEMM did not run concurrently).
__global__ void produce_chunks(bf16 *dst, const bf16 *src, long long ld, int M, int K,
                               int chunk_rows, unsigned *flags, unsigned epoch,
                               unsigned long long delay_ns, unsigned long long gap_ns,
                               unsigned *started_host, const unsigned *gate_flags, int ngate,
                               unsigned *gate_timeout) {
  announce_started(started_host);
  if (gate_flags && threadIdx.x == 0) {
    for (int t = 0; t < ngate; t++)
      if (!gemm_wait_geq(gate_flags + t, epoch, 2000000000ull)) {
        atomicExch(gate_timeout, 1u);
        break;
      }
  }
  int nchunks = (M + chunk_rows - 1) / chunk_rows;
  for (int ci = 0; ci < nchunks; ci++) {
    int c = nchunks - 1 - ci;
    if (threadIdx.x == 0) {
      unsigned long long t0, t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
      do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      } while (t - t0 < (ci == 0 ? delay_ns : gap_ns));
    }
    __syncthreads();
    int r0 = c * chunk_rows, r1 = min(M, r0 + chunk_rows);
    long long n = (long long)(r1 - r0) * K;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
      long long r = r0 + i / K, k = i % K;
      dst[r * ld + k] = src[r * ld + k];
    }
    __syncthreads();
    if (threadIdx.x == 0) gemm_publish(flags + c, epoch);
  }
}

// Consumer: announces itself, waits on each tile's flag, then copies the tile
// from D to E.  After the first timeout (2 s) it stops waiting (bounded run time).
__global__ void consume_tiles(const bf16 *D, long long ldd, int row_off, bf16 *E, long long lde,
                              int M, int N, int BM, int BN, const unsigned *tile_flags,
                              unsigned epoch, unsigned *timeout, unsigned *started_host) {
  announce_started(started_host);
  int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  __shared__ int ok;
  for (int t = blockIdx.x; t < tiles_m * tiles_n; t += gridDim.x) {
    if (threadIdx.x == 0) {
      ok = !*(volatile unsigned *)timeout && gemm_wait_geq(tile_flags + t, epoch, 2000000000ull);
      if (!ok) atomicExch(timeout, 1u);
    }
    __syncthreads();
    int tm = t / tiles_n, tn = t % tiles_n;
    int r0 = tm * BM, c0 = tn * BN, rows = min(BM, M - r0), cols = min(BN, N - c0);
    if (ok) {
      for (int i = threadIdx.x; i < rows * cols; i += blockDim.x) {
        long long r = r0 + i / cols, c = c0 + i % cols;
        unsigned short v = __ldcg((const unsigned short *)(D + (r + row_off) * ldd + c));
        ((unsigned short *)E)[r * lde + c] = v;
      }
    }
    __syncthreads();
  }
}

// Host: poll a mapped-memory "started" word (2 s limit); true when it was set.
static bool host_wait_started(volatile unsigned *started) {
  auto t0 = std::chrono::steady_clock::now();
  while (!*started) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(2)) return false;
  }
  return true;
}

