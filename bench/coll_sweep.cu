// bench/coll_sweep.cu - the collectives sweep of issue 8: the measured
// bandwidth ceilings later figures are compared with.
//
// One process per GPU (forked from this program; rank r uses device r), so
// it runs the same on 1, 2, 4 or 8 GPUs of one host.  For every message
// size (default 1 MiB .. 1 GiB, powers of two) and every operation it runs
// warm-ups, then >= 20 timed repetitions back to back, each bracketed by
// CUDA events on the rank's stream; a repetition's time is the slowest
// rank's, and the medians (p10, p90) over repetitions are reported.
//
// Operations (S = the size in bytes, n = ranks; nccl-tests conventions):
//   allgather   ncclAllGather, S/n bytes in per rank, S out
//   alltoall    ncclAlltoAll, S in and S out per rank (S/n per peer)
//   lsa_copy    a kernel that stores this rank's S/n-byte shard into every
//               peer's symmetric window (its own at n = 1) at offset me*S/n
//               through ncclGetLsaPointer with 16-byte stores, between two
//               LSA barriers (so a repetition ends when every shard is in
//               place everywhere): an all-gather done by plain stores, the
//               measured NVLink store ceiling
//   memcpy_d2d  cudaMemcpyAsync device to device of S bytes on one GPU:
//               the local HBM copy ceiling (reads S and writes S)
// Bandwidths (GB/s = 1e9 B/s): algbw = S / t; busbw = algbw * (n-1)/n for
// allgather, alltoall and lsa_copy (0 at n = 1, reported as null); for
// memcpy_d2d busbw = algbw and hbm_GBps = 2 S / t.
// Every operation's result is checked once after its timed repetitions
// (sampled words of every segment against the sender's pattern).
//
// Output: one JSON document (stdout, or --out FILE).  `--plan` prints the
// plan (sizes, operations, formulas) without touching a GPU.
//   coll_sweep [--ranks N] [--min BYTES] [--max BYTES] [--sizes LIST]
//              [--ops LIST] [--iters N] [--warmup N] [--lsa-ctas N]
//              [--timeout S] [--out FILE] [--plan]
// Sizes take K/KiB, M/MiB, G/GiB suffixes (powers of 1024).
#include <cuda/atomic>
#include <cuda_runtime.h>
#include <errno.h>
#include <nccl.h>
#include <nccl_device.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CS_MAX_RANKS 8
#define CS_MAX_SIZES 64
#define CS_MAX_ITERS 1000
#define CS_NOPS 4
#define CS_THREADS 512

static const char *const cs_op_names[CS_NOPS] = {"allgather", "alltoall", "lsa_copy",
                                                 "memcpy_d2d"};
enum { CS_AG = 0, CS_A2A = 1, CS_LSA = 2, CS_MEMCPY = 3 };

struct cs_opts {
  int ranks;  // 0 = every visible GPU
  size_t sizes[CS_MAX_SIZES];
  int nsizes;
  int ops[CS_NOPS];  // 1 = run
  int iters, warmup, lsa_ctas, timeout_s, plan;
  const char *out;
};

// Shared between the parent and the rank processes (MAP_SHARED, anonymous).
struct cs_rank_info {
  int done;  // 1 when the rank finished and wrote everything below
  char err[256];
  char gpu[96];
  int sms, lsa_size;
  double clock_mhz, mem_gib;
  int verified[CS_MAX_SIZES][CS_NOPS];  // 1 ok, 0 not run, -1 mismatch
};
struct cs_shared {
  volatile int id_ready;
  ncclUniqueId id;
  int nccl_version, cuda_runtime, cuda_driver;
  struct cs_rank_info rank[CS_MAX_RANKS];
  // samples[rank][size][op][iter] in ms
  float samples[CS_MAX_RANKS][CS_MAX_SIZES][CS_NOPS][CS_MAX_ITERS];
};

static void cs_die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("coll_sweep: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

// ---------------------------------------------------------------------------
// Arguments (host only; `--plan` exercises them without a GPU).

// Parse "64MiB"-style sizes; 0 on a malformed or out-of-range value.
static size_t cs_parse_size(const char *s) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || errno || *s == '-') return 0;
  unsigned long long mul = 1;
  if (!strcmp(end, "") || !strcmp(end, "B")) mul = 1;
  else if (!strcmp(end, "K") || !strcmp(end, "KiB")) mul = 1ull << 10;
  else if (!strcmp(end, "M") || !strcmp(end, "MiB")) mul = 1ull << 20;
  else if (!strcmp(end, "G") || !strcmp(end, "GiB")) mul = 1ull << 30;
  else return 0;
  if (v == 0 || v > (64ull << 30) / mul) return 0;
  return (size_t)(v * mul);
}

static int cs_parse_int(const char *s, int lo, int hi, const char *what) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi)
    cs_die("%s: '%s' is not an integer in %d..%d", what, s, lo, hi);
  return (int)v;
}

static void cs_parse_args(int argc, char **argv, struct cs_opts *o) {
  size_t lo = 1 << 20, hi = (size_t)1 << 30;
  const char *list = NULL, *ops = "allgather,alltoall,lsa_copy,memcpy_d2d";
  memset(o, 0, sizeof *o);
  o->iters = 20, o->warmup = 5, o->lsa_ctas = 64, o->timeout_s = 900;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--plan")) {
      o->plan = 1;
      continue;
    }
    if (!strcmp(a, "--fake-samples")) {  // tests only: report synthetic samples
      o->plan = 2;
      continue;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      printf("usage: coll_sweep [--ranks N] [--min BYTES] [--max BYTES] [--sizes LIST]\n"
             "                  [--ops allgather,alltoall,lsa_copy,memcpy_d2d] [--iters N>=20]\n"
             "                  [--warmup N] [--lsa-ctas N] [--timeout S] [--out FILE] [--plan]\n");
      exit(0);
    }
    if (i + 1 >= argc) cs_die("%s needs a value (--help)", a);
    const char *v = argv[++i];
    if (!strcmp(a, "--ranks")) {
      o->ranks = cs_parse_int(v, 1, CS_MAX_RANKS, "--ranks");
    } else if (!strcmp(a, "--min")) {
      if (!(lo = cs_parse_size(v))) cs_die("--min: bad size '%s'", v);
    } else if (!strcmp(a, "--max")) {
      if (!(hi = cs_parse_size(v))) cs_die("--max: bad size '%s'", v);
    } else if (!strcmp(a, "--sizes")) list = v;
    else if (!strcmp(a, "--ops")) ops = v;
    else if (!strcmp(a, "--iters")) o->iters = cs_parse_int(v, 20, CS_MAX_ITERS, "--iters");
    else if (!strcmp(a, "--warmup")) o->warmup = cs_parse_int(v, 0, 1000, "--warmup");
    else if (!strcmp(a, "--lsa-ctas")) o->lsa_ctas = cs_parse_int(v, 1, 1024, "--lsa-ctas");
    else if (!strcmp(a, "--timeout")) o->timeout_s = cs_parse_int(v, 10, 86400, "--timeout");
    else if (!strcmp(a, "--out")) o->out = v;
    else cs_die("unknown option '%s' (--help)", a);
  }
  if (list) {
    char buf[1024];
    if (strlen(list) >= sizeof buf) cs_die("--sizes: list too long");
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (o->nsizes >= CS_MAX_SIZES) cs_die("--sizes: more than %d sizes", CS_MAX_SIZES);
      if (!(o->sizes[o->nsizes++] = cs_parse_size(t))) cs_die("--sizes: bad size '%s'", t);
    }
  } else {
    if (lo > hi) cs_die("--min is above --max");
    for (size_t s = lo; s <= hi && o->nsizes < CS_MAX_SIZES; s *= 2) o->sizes[o->nsizes++] = s;
  }
  if (o->nsizes == 0) cs_die("no sizes");
  char buf[256];
  if (strlen(ops) >= sizeof buf) cs_die("--ops: list too long");
  snprintf(buf, sizeof buf, "%s", ops);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int k = 0;
    while (k < CS_NOPS && strcmp(t, cs_op_names[k])) k++;
    if (k == CS_NOPS) cs_die("--ops: unknown operation '%s'", t);
    o->ops[k] = 1;
  }
}

// Every size must split into n equal 16-byte-aligned shards (16-byte stores
// of lsa_copy, bf16 elements of the NCCL calls).  NULL or the reason.
static const char *cs_check_sizes(const struct cs_opts *o, int n, char *why, size_t cap) {
  for (int i = 0; i < o->nsizes; i++)
    if (o->sizes[i] % (16 * (size_t)n)) {
      snprintf(why, cap, "size %zu bytes is not a multiple of 16 x %d ranks", o->sizes[i], n);
      return why;
    }
  return NULL;
}

// ---------------------------------------------------------------------------
// Statistics (host).

static int cs_cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}
// Percentile Q (0..1) of N sorted values, nearest-rank with interpolation.
static double cs_pct(const float *v, int n, double q) {
  double pos = q * (n - 1);
  int i = (int)pos;
  return i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[n - 1];
}

// ---------------------------------------------------------------------------
// Device side.

// Word j of the send pattern of rank R: checkable on any receiver.
__host__ __device__ static inline uint32_t cs_word(int r, size_t j) {
  return (uint32_t)r << 24 | (uint32_t)(j & 0xffffff);
}

__global__ void cs_fill(uint32_t *p, size_t words, int r) {
  for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < words;
       j += (size_t)gridDim.x * blockDim.x)
    p[j] = cs_word(r, j);
}

// The LSA all-gather by stores: every CTA takes a strided share of the
// shard's 16-byte vectors and stores them into each peer's window (peers
// in staggered order so the ranks do not all hit one peer at once).  Four
// loads in flight per thread before the stores.  The barriers: the first
// says every rank is inside the kernel (its window may be overwritten), the
// second (acq_rel) that every peer's stores into my window are complete.
__global__ void __launch_bounds__(CS_THREADS)
cs_lsa_copy(ncclDevComm dc, ncclWindow_t win, const uint4 *src, size_t vec) {
  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(), blockIdx.x);
  bar.sync(ncclCoopCta(), cuda::memory_order_relaxed);
  const int me = dc.lsaRank, n = dc.lsaSize;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  const size_t t0 = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  for (int i = n > 1 ? 1 : 0; i < n; i++) {
    const int p = (me + i) % n;
    uint4 *dst = (uint4 *)ncclGetLsaPointer(win, (size_t)me * vec * 16, p);
    size_t k = t0;
    for (; k + 3 * stride < vec; k += 4 * stride) {
      uint4 a = src[k], b = src[k + stride], c = src[k + 2 * stride], d = src[k + 3 * stride];
      dst[k] = a, dst[k + stride] = b, dst[k + 2 * stride] = c, dst[k + 3 * stride] = d;
    }
    for (; k < vec; k += stride) dst[k] = src[k];
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// ---------------------------------------------------------------------------
// One rank.

#define CS_CUDA(call)                                                                 \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      snprintf(ri->err, sizeof ri->err, "rank %d: %s:%d: %s: %s", rank, __FILE__,    \
               __LINE__, #call, cudaGetErrorString(e_));                              \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)
#define CS_NCCL(call)                                                                 \
  do {                                                                                \
    ncclResult_t r_ = (call);                                                         \
    if (r_ != ncclSuccess) {                                                          \
      snprintf(ri->err, sizeof ri->err, "rank %d: %s:%d: %s: %s", rank, __FILE__,    \
               __LINE__, #call, ncclGetErrorString(r_));                              \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

struct cs_bufs {
  void *send, *recv, *win_buf, *bar;
  ncclWindow_t win;
  ncclDevComm dc;
  int have_dc;
};

// Enqueue one repetition of OP at S bytes.
static cudaError_t cs_enqueue(int op, size_t S, int n, struct cs_bufs *b, ncclComm_t comm,
                              int ctas, cudaStream_t st, ncclResult_t *nr) {
  *nr = ncclSuccess;
  switch (op) {
    case CS_AG:
      *nr = ncclAllGather(b->send, b->recv, S / n / 2, ncclBfloat16, comm, st);
      return cudaSuccess;
    case CS_A2A:
      *nr = ncclAlltoAll(b->send, b->recv, S / n / 2, ncclBfloat16, comm, st);
      return cudaSuccess;
    case CS_LSA:
      cs_lsa_copy<<<ctas, CS_THREADS, 0, st>>>(b->dc, b->win, (const uint4 *)b->send,
                                               S / n / 16);
      return cudaGetLastError();
    default:
      return cudaMemcpyAsync(b->recv, b->send, S, cudaMemcpyDeviceToDevice, st);
  }
}

// Sampled check of OP's output on this rank: 1 ok, -1 mismatch.
static int cs_verify(int op, size_t S, int n, int rank, const struct cs_bufs *b, int *bad) {
  const size_t seg = S / n / 4;  // words per segment
  const void *out = op == CS_LSA ? b->win_buf : b->recv;
  const int nseg = op == CS_MEMCPY ? 1 : n;
  const size_t segw = op == CS_MEMCPY ? S / 4 : seg;
  *bad = 0;
  for (int p = 0; p < nseg; p++) {
    if (op == CS_LSA && n > 1 && p == rank) continue;  // no self copy at n > 1
    size_t idx[5] = {0, 1, segw / 2, segw - 2, segw - 1};
    for (int k = 0; k < 5; k++) {
      size_t j = idx[k] < segw ? idx[k] : segw - 1;
      uint32_t got = 0, want;
      if (cudaMemcpy(&got, (const uint32_t *)out + p * segw + j, 4, cudaMemcpyDeviceToHost))
        return -1;
      if (op == CS_A2A) want = cs_word(p, rank * seg + j);
      else if (op == CS_MEMCPY) want = cs_word(rank, j);
      else want = cs_word(p, j);
      if (got != want) {
        (*bad)++;
        return -1;
      }
    }
  }
  return 1;
}

static int cs_barrier(ncclComm_t comm, void *dev, cudaStream_t st, struct cs_rank_info *ri,
                      int rank) {
  CS_NCCL(ncclAllReduce(dev, dev, 1, ncclInt32, ncclSum, comm, st));
  CS_CUDA(cudaStreamSynchronize(st));
  return 0;
}

static int cs_rank_main(const struct cs_opts *o, int n, int rank, struct cs_shared *sh) {
  struct cs_rank_info *ri = &sh->rank[rank];
  struct cs_bufs b;
  memset(&b, 0, sizeof b);
  int ndev = 0;
  CS_CUDA(cudaGetDeviceCount(&ndev));
  if (ndev < n) {
    snprintf(ri->err, sizeof ri->err, "rank %d: %d ranks need %d GPUs, %d visible", rank, n, n,
             ndev);
    return 1;
  }
  CS_CUDA(cudaSetDevice(rank));
  if (rank == 0) {
    CS_NCCL(ncclGetUniqueId(&sh->id));
    __sync_synchronize();
    sh->id_ready = 1;
  } else {
    for (int t = 0; !sh->id_ready; t++) {
      if (t > 120000) {
        snprintf(ri->err, sizeof ri->err, "rank %d: rank 0 never published the NCCL id", rank);
        return 1;
      }
      usleep(1000);
    }
    __sync_synchronize();
  }
  ncclComm_t comm;
  CS_NCCL(ncclCommInitRank(&comm, n, sh->id, rank));
  cudaDeviceProp prop;
  CS_CUDA(cudaGetDeviceProperties(&prop, rank));
  snprintf(ri->gpu, sizeof ri->gpu, "%s", prop.name);
  ri->sms = prop.multiProcessorCount;
  int clk = 0;
  cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, rank);
  ri->clock_mhz = clk / 1000.0;
  ri->mem_gib = prop.totalGlobalMem / 1073741824.0;
  if (rank == 0) {
    ncclGetVersion(&sh->nccl_version);
    cudaRuntimeGetVersion(&sh->cuda_runtime);
    cudaDriverGetVersion(&sh->cuda_driver);
  }
  size_t smax = 0;
  for (int i = 0; i < o->nsizes; i++)
    if (o->sizes[i] > smax) smax = o->sizes[i];
  cudaStream_t st;
  CS_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CS_CUDA(cudaMalloc(&b.send, smax));
  CS_CUDA(cudaMalloc(&b.recv, smax));
  CS_CUDA(cudaMalloc(&b.bar, 64));
  CS_CUDA(cudaMemset(b.bar, 0, 64));
  cs_fill<<<1024, 256, 0, st>>>((uint32_t *)b.send, smax / 4, rank);
  CS_CUDA(cudaGetLastError());
  if (o->ops[CS_LSA]) {
    CS_NCCL(ncclMemAlloc(&b.win_buf, smax));
    CS_NCCL(ncclCommWindowRegister(comm, b.win_buf, smax, &b.win, NCCL_WIN_COLL_SYMMETRIC));
    ncclDevCommRequirements reqs;
    memset(&reqs, 0, sizeof reqs);
    reqs.lsaBarrierCount = o->lsa_ctas;
    CS_NCCL(ncclDevCommCreate(comm, &reqs, &b.dc));
    b.have_dc = 1;
    ri->lsa_size = b.dc.lsaSize;
  }
  CS_CUDA(cudaStreamSynchronize(st));
  const int reps = o->warmup + o->iters;
  cudaEvent_t *ev = (cudaEvent_t *)calloc(o->iters + 1, sizeof *ev);
  if (!ev) {
    snprintf(ri->err, sizeof ri->err, "rank %d: out of memory", rank);
    return 1;
  }
  for (int i = 0; i <= o->iters; i++) CS_CUDA(cudaEventCreate(&ev[i]));
  for (int si = 0; si < o->nsizes; si++) {
    const size_t S = o->sizes[si];
    for (int op = 0; op < CS_NOPS; op++) {
      if (!o->ops[op]) continue;
      if (op == CS_LSA && b.dc.lsaSize != n) continue;  // not one LSA domain: skipped
      if (cs_barrier(comm, b.bar, st, ri, rank)) return 1;
      for (int r = 0; r < reps; r++) {
        if (r >= o->warmup) CS_CUDA(cudaEventRecord(ev[r - o->warmup], st));
        ncclResult_t nr;
        CS_CUDA(cs_enqueue(op, S, n, &b, comm, o->lsa_ctas, st, &nr));
        CS_NCCL(nr);
      }
      CS_CUDA(cudaEventRecord(ev[o->iters], st));
      CS_CUDA(cudaStreamSynchronize(st));
      for (int i = 0; i < o->iters; i++) {
        float ms = 0;
        CS_CUDA(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
        sh->samples[rank][si][op][i] = ms;
      }
      int bad = 0;
      ri->verified[si][op] = cs_verify(op, S, n, rank, &b, &bad);
    }
  }
  if (cs_barrier(comm, b.bar, st, ri, rank)) return 1;
  for (int i = 0; i <= o->iters; i++) cudaEventDestroy(ev[i]);
  free(ev);
  if (b.have_dc) CS_NCCL(ncclDevCommDestroy(comm, &b.dc));
  if (b.win_buf) {
    CS_NCCL(ncclCommWindowDeregister(comm, b.win));
    CS_NCCL(ncclMemFree(b.win_buf));
  }
  CS_NCCL(ncclCommDestroy(comm));
  cudaFree(b.send), cudaFree(b.recv), cudaFree(b.bar);
  ri->done = 1;
  return 0;
}

// ---------------------------------------------------------------------------
// Parent: fork, wait (kill the rest when one rank fails), report.

// Visible GPUs, counted in a child so this process never initialises CUDA
// before forking the ranks.
static int cs_count_gpus(void) {
  pid_t pid = fork();
  if (pid < 0) cs_die("fork: %s", strerror(errno));
  if (pid == 0) {
    int n = 0;
    _exit(cudaGetDeviceCount(&n) == cudaSuccess ? (n > 100 ? 100 : n) : 101);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) > 100)
    cs_die("cannot count the GPUs (no CUDA device or driver)");
  return WEXITSTATUS(status);
}

static double cs_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// Wait for N children; 0 when all exited 0.  On the first failure (or the
// deadline) the others get 10 s, then SIGKILL.
static int cs_wait(pid_t *pids, int n, int timeout_s, char *why, size_t cap) {
  int left = n, rc = 0;
  double t0 = cs_now(), kill_at = 0;
  while (left > 0) {
    int status;
    pid_t p = waitpid(-1, &status, WNOHANG);
    if (p > 0) {
      for (int i = 0; i < n; i++)
        if (pids[i] == p) {
          pids[i] = 0;
          left--;
          if (!WIFEXITED(status) || WEXITSTATUS(status)) {
            if (!rc)
              snprintf(why, cap, "rank %d %s %d", i,
                       WIFEXITED(status) ? "exited with status" : "died of signal",
                       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            rc = 1;
            if (!kill_at) kill_at = cs_now() + 10;
          }
        }
      continue;
    }
    if (!rc && cs_now() - t0 > timeout_s) {
      snprintf(why, cap, "timed out after %d s", timeout_s);
      rc = 1;
      kill_at = cs_now();
    }
    if (kill_at && cs_now() >= kill_at)
      for (int i = 0; i < n; i++)
        if (pids[i] > 0) kill(pids[i], SIGKILL);
    usleep(20000);
  }
  return rc;
}

static void cs_json_op(FILE *f, const struct cs_opts *o, const struct cs_shared *sh, int n,
                       int si, int op) {
  static float v[CS_MAX_ITERS];
  const double S = (double)o->sizes[si];
  for (int i = 0; i < o->iters; i++) {
    float m = 0;
    for (int r = 0; r < n; r++)
      if (sh->samples[r][si][op][i] > m) m = sh->samples[r][si][op][i];
    v[i] = m;
  }
  qsort(v, o->iters, sizeof v[0], cs_cmp_float);
  const double med = cs_pct(v, o->iters, 0.5);
  const double alg = med > 0 ? S / (med * 1e-3) / 1e9 : 0;
  int ver = 1;
  for (int r = 0; r < n; r++)
    if (sh->rank[r].verified[si][op] != 1) ver = 0;
  fprintf(f, "\"%s\": {\"median_ms\": %.6f, \"p10_ms\": %.6f, \"p90_ms\": %.6f, "
             "\"min_ms\": %.6f, \"algbw_GBps\": %.3f, ",
          cs_op_names[op], med, cs_pct(v, o->iters, 0.1), cs_pct(v, o->iters, 0.9), v[0], alg);
  if (op == CS_MEMCPY) fprintf(f, "\"busbw_GBps\": %.3f, \"hbm_GBps\": %.3f, ", alg, 2 * alg);
  else if (n > 1) fprintf(f, "\"busbw_GBps\": %.3f, ", alg * (n - 1) / n);
  else fprintf(f, "\"busbw_GBps\": null, ");
  fprintf(f, "\"verified\": %s}", ver ? "true" : "false");
}

// Writes the document; returns 1 when every run operation verified.
static int cs_json(FILE *f, const struct cs_opts *o, const struct cs_shared *sh, int n,
                    int ran, const char *error) {
  char host[128] = "";
  gethostname(host, sizeof host - 1);
  const struct cs_rank_info *r0 = &sh->rank[0];
  fprintf(f, "{\"schema\": 1, \"program\": \"bench/coll_sweep.cu\", \"ranks\": %d, ", n);
  fprintf(f, "\"iters\": %d, \"warmup\": %d, \"lsa_ctas\": %d, \"lsa_threads\": %d,\n", o->iters,
          o->warmup, o->lsa_ctas, CS_THREADS);
  if (ran)
    fprintf(f, " \"machine\": {\"host\": \"%s\", \"gpu\": \"%s\", \"gpus\": %d, \"sms\": %d, "
               "\"max_clock_mhz\": %.0f, \"memory_gib\": %.1f, \"nccl_version\": %d, "
               "\"cuda_runtime\": %d, \"cuda_driver\": %d, \"lsa_size\": %d, "
               "\"NCCL_NVLS_ENABLE\": \"%s\"},\n",
            host, r0->gpu, n, r0->sms, r0->clock_mhz, r0->mem_gib, sh->nccl_version,
            sh->cuda_runtime, sh->cuda_driver, r0->lsa_size,
            getenv("NCCL_NVLS_ENABLE") ? getenv("NCCL_NVLS_ENABLE") : "");
  fprintf(f, " \"formulas\": {\"algbw\": \"bytes / median time (GB/s = 1e9 B/s)\", "
             "\"allgather\": \"bytes = total output per rank; busbw = algbw*(n-1)/n\", "
             "\"alltoall\": \"bytes = send buffer per rank; busbw = algbw*(n-1)/n\", "
             "\"lsa_copy\": \"each rank stores its bytes/n shard into every peer's window "
             "(own at n=1) with 16-byte stores between two LSA barriers; busbw = "
             "algbw*(n-1)/n\", \"memcpy_d2d\": \"local cudaMemcpyAsync; busbw = algbw; "
             "hbm = 2*algbw\", \"time\": \"per repetition the slowest rank; median over "
             "repetitions\"},\n");
  fprintf(f, " \"sizes\": [");
  for (int i = 0; i < o->nsizes; i++) fprintf(f, "%s%zu", i ? ", " : "", o->sizes[i]);
  fprintf(f, "],\n \"ops\": [");
  for (int k = 0, c = 0; k < CS_NOPS; k++)
    if (o->ops[k]) fprintf(f, "%s\"%s\"", c++ ? ", " : "", cs_op_names[k]);
  fprintf(f, "],\n");
  if (!ran) {
    fprintf(f, " \"status\": \"%s\"", error ? "error" : "plan");
    if (error) fprintf(f, ", \"error\": \"%s\"", error);
    fprintf(f, "}\n");
    return 0;
  }
  int all_ok = 1;
  fprintf(f, " \"results\": [\n");
  for (int si = 0; si < o->nsizes; si++) {
    fprintf(f, "  {\"bytes\": %zu, \"MiB\": %.3f", o->sizes[si], o->sizes[si] / 1048576.0);
    for (int op = 0; op < CS_NOPS; op++) {
      if (!o->ops[op]) continue;
      if (op == CS_LSA && r0->lsa_size != n) {
        fprintf(f, ", \"lsa_copy\": null");
        continue;
      }
      fprintf(f, ", ");
      cs_json_op(f, o, sh, n, si, op);
      for (int r = 0; r < n; r++)
        if (sh->rank[r].verified[si][op] != 1) all_ok = 0;
    }
    fprintf(f, "}%s\n", si + 1 < o->nsizes ? "," : "");
  }
  fprintf(f, " ],\n \"status\": \"%s\"", all_ok ? "ok" : "verify_failed");
  if (o->ops[CS_LSA] && r0->lsa_size != n)
    fprintf(f, ", \"note\": \"lsa_copy skipped: LSA team of %d, not all %d ranks\"",
            r0->lsa_size, n);
  fprintf(f, "}\n");
  return all_ok;
}

int main(int argc, char **argv) {
  struct cs_opts o;
  cs_parse_args(argc, argv, &o);
  int n = o.ranks;
  char why[256];
  if (o.plan) {
    if (!n) n = 1;
    if (cs_check_sizes(&o, n, why, sizeof why)) cs_die("%s", why);
    struct cs_shared *sh = (struct cs_shared *)calloc(1, sizeof *sh);
    if (!sh) cs_die("out of memory");
    if (o.plan == 2) {  // rank r, repetition i: (i + 1) * (r + 1) / 10 ms, all verified
      snprintf(sh->rank[0].gpu, sizeof sh->rank[0].gpu, "%s", "synthetic");
      sh->rank[0].lsa_size = n;
      for (int r = 0; r < n; r++)
        for (int si = 0; si < o.nsizes; si++)
          for (int op = 0; op < CS_NOPS; op++) {
            sh->rank[r].verified[si][op] = 1;
            for (int i = 0; i < o.iters; i++)
              sh->samples[r][si][op][o.iters - 1 - i] = (i + 1) * (r + 1) / 10.0f;
          }
    }
    (void)cs_json(stdout, &o, sh, n, o.plan == 2, NULL);
    free(sh);
    return 0;
  }
  if (!n) n = cs_count_gpus();
  if (n < 1) cs_die("no GPU visible");
  if (n > CS_MAX_RANKS) n = CS_MAX_RANKS;
  if (cs_check_sizes(&o, n, why, sizeof why)) cs_die("%s", why);
  FILE *f = stdout;
  if (o.out && !(f = fopen(o.out, "w"))) cs_die("cannot write %s: %s", o.out, strerror(errno));
  struct cs_shared *sh = (struct cs_shared *)mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) cs_die("mmap: %s", strerror(errno));
  memset(sh, 0, sizeof *sh);
  fflush(NULL);
  pid_t pids[CS_MAX_RANKS] = {0};
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] < 0) cs_die("fork: %s", strerror(errno));
    if (pids[r] == 0) {
      int rc = cs_rank_main(&o, n, r, sh);
      if (rc) fprintf(stderr, "coll_sweep: %s\n", sh->rank[r].err);
      fflush(NULL);
      _exit(rc);
    }
  }
  int rc = cs_wait(pids, n, o.timeout_s, why, sizeof why);
  if (rc) {
    for (int r = 0; r < n; r++)
      if (sh->rank[r].err[0]) {
        snprintf(why, sizeof why, "%s", sh->rank[r].err);
        break;
      }
    for (char *p = why; *p; p++)
      if (*p == '"' || *p == '\\' || (unsigned char)*p < 32) *p = '\'';
    (void)cs_json(f, &o, sh, n, 0, why);
    fprintf(stderr, "coll_sweep: %s\n", why);
    rc = 4;
  } else if (!cs_json(f, &o, sh, n, 1, NULL)) {
    fprintf(stderr, "coll_sweep: an operation's output did not verify (see \"verified\")\n");
    rc = 3;
  }
  if (f != stdout) fclose(f);
  return rc;
}
