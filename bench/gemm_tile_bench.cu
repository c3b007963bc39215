// bench/gemm_tile_bench.cu - correctness tests and benchmark of runtime/gemm_tile.cuh
// against cuBLAS, in one program (run on a GPU by tests/gpu/gemm_tile.sh).
//
//   gemm_tile_bench --mode test|bench|all [--impl v1|v2|all] --out DIR [--quick] [--small]
//                   [--iters N] [--warmup N]
//   (--impl: which kernels to test; bench always times v1 and cuBLAS, v2 too
//    unless --impl v1.  v2 needs a build with -gencode=arch=compute_90a,code=sm_90a)
//   (--quick: fewer shapes; --small: only tiny test shapes, for compute-sanitizer)
//
// test:  random inputs (never zeros) at many shapes, including ones not divisible
//        by the tile; NaN-filled padding of A/B (any read outside [M,K]/[K,N] poisons
//        the result); NaN-poisoned outputs with guard rows and padding columns
//        (any missing or out-of-bounds write is caught); hooks exercised (a
//        prologue waiting on flags raised by a producer kernel, an epilogue
//        writing elsewhere and raising per-tile flags that a consumer kernel
//        waits on, a negative control without the wait), the grouped variant
//        with device-side offsets (empty groups, clamped and poisoned offsets).
//        Reference: cuBLAS, bf16 inputs, fp32 accumulate and fp32 output.
//        Pass: relative L2 < 1e-2, no NaN, no poison left, no stray write.
// bench: medians of timed runs (CUDA events, after warm-up) of the tile library
//        (two tile configs) and cuBLAS (bf16 out, fp32 compute) on the workloads'
//        shapes; TFLOP/s and % of cuBLAS; the timed output is verified too.
// Writes DIR/gemm_tile_test.json (v1), DIR/gemm_tile_test_v2.json, DIR/gemm_tile_bench.json.
// Exit: 0 all passed, 3 a check failed, 4 CUDA/cuBLAS error, 2 usage.
#include "gemm_tile_util.cuh"

// ---------------------------------------------------------------------------
// Tests.

template <class Cfg, class Sched = GemmRasterSched<8>>
static void test_dense(const char *cfgname, int M, int N, int K, long long lda, long long ldb,
                       long long ldc, uint64_t seed, int grid = 0, const char *sched_name = "") {
  Mat A = make_input(M, K, lda, seed * 3 + 1);
  Mat B = make_input(K, N, ldb, seed * 3 + 2);
  Mat C = make_output(M, ldc);
  float *R;
  CK(cudaMalloc(&R, std::max<size_t>(1, (size_t)M * N) * 4));
  ref_gemm(A.p, lda, B.p, ldb, R, M, N, K);
  GemmArgs a{A.p, B.p, lda, ldb, M, N, K, nullptr, 0, 0};
  char name[160];
  snprintf(name, sizeof name, "dense_%s_lda%lld_ldb%lld_ldc%lld%s%s", cfgname, lda, ldb, ldc,
           sched_name, grid > 0 ? "_smallgrid" : "");
  running(name, M, N, K);
  CK((run_gemm<Cfg>(a, GemmNoWait{}, GemmStoreC{C.p, ldc}, Sched{}, grid, 0)));
  CK(cudaDeviceSynchronize());
  CheckResult cr = check_output(C.base, ldc, R, M, N, nullptr);
  report(name, "dense", M, N, K, cr);
  free_mat(A), free_mat(B), free_mat(C);
  CK(cudaFree(R));
}


// Hooks: A arrives chunk by chunk from a producer kernel; tiles go to D (shifted,
// own ld) with per-tile flags that a consumer kernel waits on before copying
// them to E.  Run twice (epochs 1 and 2, flags NOT reset: stale flags must not
// satisfy a wait), then a negative control without the wait, which must read
// the poisoned A (else this test could not see a missing wait).
//
// Concurrency is made provable, not assumed (the first GPU run serialized the
// kernels: lazy module loading of a not-yet-launched kernel synchronizes the
// context, so a first launch waited for the spinning consumer):
//  - every kernel is launched once beforehand, serially, with preset flags
//    (modules loaded; main() also asks for CUDA_MODULE_LOADING=EAGER);
//  - each waiting kernel announces "started" in mapped host memory and the host
//    polls it before launching the next one (consumer, then producer, then GEMM);
//  - the producer sleeps 20 ms after it started before the first chunk, far
//    longer than a kernel launch, so the GEMM's prologue really waits;
//  - in the control the producer copies A only after every tile flag of the
//    unwaited GEMM is raised, so that GEMM must have read the poison; if the
//    flags never come (GEMM not concurrent) the control fails saying so.
template <class Cfg>
static void test_hooks(const char *tag) {
  const int M = 1000, N = 1000, K = 520, chunk = 250;
  const long long lda = ru8(K), ldb = ru8(N), ldd = N + 24, lde = N + 8;
  const int row_off = 3;
  const int tiles_m = (M + Cfg::BM - 1) / Cfg::BM, tiles_n = (N + Cfg::BN - 1) / Cfg::BN;
  const int ntiles = tiles_m * tiles_n;
  const int nchunks = (M + chunk - 1) / chunk;
  Mat Asrc = make_input(M, K, lda, 101);
  Mat B = make_input(K, N, ldb, 102);
  Mat A = make_input(M, K, lda, 103);
  Mat D = make_output(M + row_off, ldd);
  Mat E = make_output(M, lde);
  float *R;
  CK(cudaMalloc(&R, (size_t)M * N * 4));
  ref_gemm(Asrc.p, lda, B.p, ldb, R, M, N, K);
  unsigned *flags, *tile_flags, *timeout, *warm;
  CK(cudaMalloc(&flags, nchunks * 4));
  CK(cudaMalloc(&tile_flags, ntiles * 4));
  CK(cudaMalloc(&timeout, 12));  // [0] prologue, [1] consumer, [2] control gate
  CK(cudaMalloc(&warm, (nchunks + ntiles) * 4));
  CK(cudaMemset(flags, 0, nchunks * 4));
  CK(cudaMemset(tile_flags, 0, ntiles * 4));
  unsigned *started_h, *started_d;  // [0] producer, [1] consumer (mapped host memory)
  CK(cudaHostAlloc(&started_h, 8, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(&started_d, started_h, 0));
  cudaStream_t sp, sc, sg;
  CK(cudaStreamCreateWithFlags(&sp, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&sg, cudaStreamNonBlocking));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int grid = std::max(1, sms - 8);  // leave room for producer and consumer
  GemmArgs a{A.p, B.p, lda, ldb, M, N, K, nullptr, 0, 0};

  // Serial warm-up of every kernel used below (flags preset: nothing waits).
  CK(cudaMemset(warm, 0xFF, (nchunks + ntiles) * 4));
  CK(cudaMemset(timeout, 0, 12));
  produce_chunks<<<1, 256, 0, sp>>>(A.p, Asrc.p, lda, M, K, chunk, warm, 1, 0, 0, nullptr,
                                    warm, 1, timeout + 2);
  CK(cudaGetLastError());
  consume_tiles<<<4, 256, 0, sc>>>(D.p, ldd, row_off, E.p, lde, M, N, Cfg::BM, Cfg::BN, warm, 1,
                                   timeout + 1, nullptr);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  {
    GemmStoreCFlag wepi{D.p + row_off * ldd, ldd, warm + nchunks, tiles_n, 1};
    CK((run_gemm<Cfg>(a, GemmWaitRowChunks{warm, chunk, 1, 2000000000ull, timeout}, wepi,
                      GemmRasterSched<8>{}, grid, sg)));
    CK(cudaStreamSynchronize(sg));
    CK((run_gemm<Cfg>(a, GemmNoWait{}, wepi, GemmRasterSched<8>{}, grid, sg)));
    CK(cudaDeviceSynchronize());
  }

  for (unsigned epoch = 1; epoch <= 3; epoch++) {
    bool control = epoch == 3;
    char rname[64];
    snprintf(rname, sizeof rname, "hooks_%s_epoch%u%s", tag, epoch, control ? "_control" : "");
    running(rname, M, N, K);
    poison(A.base, (M + 4) * lda + 64);
    repoison(D);
    repoison(E);
    CK(cudaMemset(timeout, 0, 12));
    CK(cudaDeviceSynchronize());
    started_h[0] = started_h[1] = 0;
    char why[200] = "";
    if (!control) {
      consume_tiles<<<4, 256, 0, sc>>>(D.p, ldd, row_off, E.p, lde, M, N, Cfg::BM, Cfg::BN,
                                       tile_flags, epoch, timeout + 1, started_d + 1);
      CK(cudaGetLastError());
      if (!host_wait_started(started_h + 1))
        snprintf(why, sizeof why, "consumer kernel did not start within 2 s");
    }
    produce_chunks<<<1, 256, 0, sp>>>(A.p, Asrc.p, lda, M, K, chunk, flags, epoch,
                                      control ? 0ull : 20000000ull, 1000000ull, started_d,
                                      control ? tile_flags : nullptr, ntiles, timeout + 2);
    CK(cudaGetLastError());
    if (!host_wait_started(started_h) && !why[0])
      snprintf(why, sizeof why, "producer kernel did not start within 2 s (serialized?)");
    // The library's own hooks: row-chunk flags in, tile + flag out (D shifted by
    // row_off rows: "elsewhere").
    GemmStoreCFlag epi{D.p + row_off * ldd, ldd, tile_flags, tiles_n, epoch};
    if (!control)
      CK((run_gemm<Cfg>(a, GemmWaitRowChunks{flags, chunk, epoch, 2000000000ull, timeout}, epi,
                        GemmRasterSched<8>{}, grid, sg)));
    else
      CK((run_gemm<Cfg>(a, GemmNoWait{}, epi, GemmRasterSched<8>{}, grid, sg)));
    CK(cudaDeviceSynchronize());
    unsigned hto[3];
    std::vector<unsigned> tf(ntiles);
    CK(cudaMemcpy(hto, timeout, 12, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(tf.data(), tile_flags, tf.size() * 4, cudaMemcpyDeviceToHost));
    int bad_flags = 0;
    for (unsigned v : tf) bad_flags += v != epoch;
    if (why[0]) {
    } else if (hto[0]) snprintf(why, sizeof why, "prologue wait timed out (2 s)");
    else if (hto[1]) snprintf(why, sizeof why, "consumer wait on a tile flag timed out (2 s)");
    else if (hto[2])
      snprintf(why, sizeof why, "control: the GEMM's tile flags did not come while the producer "
                                "ran (GEMM not concurrent)");
    else if (bad_flags) snprintf(why, sizeof why, "%d tile flags != epoch %u", bad_flags, epoch);
    CheckResult cd = check_output(D.base + row_off * ldd, ldd, R, M, N, nullptr);
    char name[96];
    if (!control) {
      snprintf(name, sizeof name, "hooks_%s_epoch%u_D_epilogue_target", tag, epoch);
      report(name, "hooks", M, N, K, cd, why[0] ? why : nullptr);
      CheckResult ce = check_output(E.base, lde, R, M, N, nullptr);
      snprintf(name, sizeof name, "hooks_%s_epoch%u_E_consumer_copy", tag, epoch);
      report(name, "hooks", M, N, K, ce, why[0] ? why : nullptr);
    } else {
      // The control passes when the unwaited GEMM was caught reading poison.
      CheckResult cc = cd;
      cc.passed = !cd.passed && !why[0];
      snprintf(name, sizeof name, "hooks_%s_control_no_wait_must_fail", tag);
      report(name, "control", M, N, K, cc,
             why[0]      ? why
             : cc.passed ? nullptr
                         : "GEMM without the wait still matched: the test is blind");
    }
  }
  CK(cudaStreamDestroy(sp));
  CK(cudaStreamDestroy(sc));
  CK(cudaStreamDestroy(sg));
  CK(cudaFreeHost(started_h));
  CK(cudaFree(flags));
  CK(cudaFree(tile_flags));
  CK(cudaFree(timeout));
  CK(cudaFree(warm));
  CK(cudaFree(R));
  free_mat(Asrc), free_mat(B), free_mat(A), free_mat(D), free_mat(E);
}

// Layout probe: A = identity (128x128), B[k][n] = k (pass 0) or n (pass 1), all
// exact in bf16, so C[m][n] must be exactly m (pass 0) or n (pass 1).  The first
// mismatches tell a fragment/descriptor mix-up apart at a glance (e.g. rows
// coming out as m^8, or columns as n with their 64-blocks swapped).
template <class Cfg>
static void test_probe(const char *tag) {
  const int M = 128, N = 256, K = 128;
  std::vector<bf16> ha((size_t)M * K), hb((size_t)K * N);
  for (int m = 0; m < M; m++)
    for (int k = 0; k < K; k++) ha[(size_t)m * K + k] = __float2bfloat16(m == k ? 1.f : 0.f);
  bf16 *A, *B, *C;
  CK(cudaMalloc(&A, ha.size() * 2));
  CK(cudaMalloc(&B, hb.size() * 2));
  CK(cudaMalloc(&C, (size_t)M * N * 2));
  CK(cudaMemcpy(A, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
  for (int pass = 0; pass < 2; pass++) {
    for (int k = 0; k < K; k++)
      for (int n = 0; n < N; n++) hb[(size_t)k * N + n] = __float2bfloat16(pass ? n : k);
    CK(cudaMemcpy(B, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
    poison(C, (long long)M * N);
    char name[96];
    snprintf(name, sizeof name, "probe_%s_%s", tag, pass ? "C_equals_col" : "C_equals_row");
    running(name, M, N, K);
    GemmArgs a{A, B, K, N, M, N, K, nullptr, 0, 0};
    CK((run_gemm<Cfg>(a, GemmNoWait{}, GemmStoreC{C, N})));
    CK(cudaDeviceSynchronize());
    std::vector<uint16_t> hc((size_t)M * N);
    CK(cudaMemcpy(hc.data(), C, hc.size() * 2, cudaMemcpyDeviceToHost));
    int bad = 0;
    char first[400] = "";
    size_t used = 0;
    for (int m = 0; m < M; m++)
      for (int n = 0; n < N; n++) {
        float got = bf2f(hc[(size_t)m * N + n]), want = pass ? n : m;
        if (got != want) {
          if (bad < 8 && used < sizeof first - 40)
            used += snprintf(first + used, sizeof first - used, " (%d,%d)=%g", m, n, got);
          bad++;
        }
      }
    CheckResult cr;
    cr.passed = bad == 0;
    char why[480];
    snprintf(why, sizeof why, "%d of %d wrong; want %s; first:%s", bad, M * N,
             pass ? "C[m][n]=n" : "C[m][n]=m", first);
    report(name, "probe", M, N, K, cr, bad ? why : nullptr);
  }
  CK(cudaFree(A));
  CK(cudaFree(B));
  CK(cudaFree(C));
}

// Grouped GEMM with device-side offsets (raw values, clamped by the library
// exactly as documented: into [0, M_alloc], empty when end < start).
template <class Cfg>
static void test_grouped(const char *name, int M_alloc, int N, int K,
                         const std::vector<int> &offs, uint64_t seed) {
  const int G = (int)offs.size() - 1;
  const long long lda = ru8(K) + 8, ldb = ru8(N), ldc = N + 5;
  const long long stride = K * ldb + 16;
  Mat A = make_input(M_alloc, K, lda, seed);
  bf16 *Bbase;
  long long belems = G * stride + 4 * ldb + 64;
  CK(cudaMalloc(&Bbase, belems * 2));
  poison(Bbase, belems);
  bf16 *B = Bbase + 2 * ldb;
  for (int g = 0; g < G; g++) randomize(B + g * stride, K, N, ldb, seed * 1000 + g + 7);
  Mat C = make_output(M_alloc, ldc);
  float *R;
  CK(cudaMalloc(&R, std::max<size_t>(1, (size_t)M_alloc * N) * 4));
  std::vector<char> row_on(M_alloc, 0);
  for (int g = 0; g < G; g++) {
    int s = std::min(std::max(offs[g], 0), M_alloc);
    int e = std::min(std::max(offs[g + 1], 0), M_alloc);
    if (e <= s) continue;
    ref_gemm(A.p + s * lda, lda, B + g * stride, ldb, R + (size_t)s * N, e - s, N, K);
    for (int r = s; r < e; r++) row_on[r] = 1;
  }
  int *doffs;
  CK(cudaMalloc(&doffs, offs.size() * 4));
  CK(cudaMemcpy(doffs, offs.data(), offs.size() * 4, cudaMemcpyHostToDevice));
  GemmArgs a{A.p, B, lda, ldb, M_alloc, N, K, doffs, G, stride};
  running(name, M_alloc, N, K);
  CK((run_gemm<Cfg>(a, GemmNoWait{}, GemmStoreC{C.p, ldc}, GemmRasterSched<8>{}, 0, 0)));
  CK(cudaDeviceSynchronize());
  CheckResult cr = check_output(C.base, ldc, R, M_alloc, N, &row_on);
  report(name, "grouped", M_alloc, N, K, cr);
  CK(cudaFree(doffs));
  CK(cudaFree(Bbase));
  CK(cudaFree(R));
  free_mat(A), free_mat(C);
}

static void test_arg_checks() {
  bf16 *p;
  CK(cudaMalloc(&p, 1 << 20));
  struct {
    const char *what;
    GemmArgs a;
  } bad[] = {
      {"lda_not_multiple_of_8", {p, p, 12, 16, 4, 4, 4, nullptr, 0, 0}},
      {"ldb_less_than_N", {p, p, 16, 8, 4, 16, 4, nullptr, 0, 0}},
      {"A_not_16B_aligned", {p + 1, p, 16, 16, 4, 4, 4, nullptr, 0, 0}},
      {"negative_M", {p, p, 16, 16, -1, 4, 4, nullptr, 0, 0}},
      {"too_many_groups", {p, p, 16, 16, 4, 4, 4, (const int *)p, kMaxGroups + 1, 64}},
  };
  for (auto &b : bad) {
    cudaError_t e = gemm_tile_run<GemmCfg128x128>(b.a, GemmNoWait{}, GemmStoreC{p, 16});
    CheckResult cr;
    cr.passed = e == cudaErrorInvalidValue;
    char name[96];
    snprintf(name, sizeof name, "argcheck_%s", b.what);
    report(name, "argcheck", b.a.M, b.a.N, b.a.K, cr,
           cr.passed ? nullptr : "bad arguments were not refused with cudaErrorInvalidValue");
  }
  CK(cudaGetLastError());
  CK(cudaFree(p));
}

// small: only shapes cheap enough for compute-sanitizer, and no hook test (a
// sanitizer may serialize kernels, and the hook test needs them concurrent).
static void run_tests_v2(bool quick, bool small);
static void run_tests(bool quick, bool small) {
  test_probe<GemmCfg128x256>("v1_128x256");
  test_probe<GemmCfg128x128>("v1_128x128");
  struct S {
    int M, N, K;
  } shapes[] = {{1, 1, 1},       {1, 8, 8},       {5, 7, 3},        {16, 8, 16},
                {100, 200, 72},  {127, 255, 63},  {128, 256, 64},   {129, 257, 65},
                {255, 129, 200}, {300, 500, 1000}, {1000, 77, 520}, {64, 1000, 8},
                {513, 384, 4096}, {333, 1111, 777}, {2048, 2048, 2048}, {4096, 1024, 136}};
  int i = 0;
  for (auto s : shapes) {
    if (small && (double)s.M * s.N * s.K > 2e8) {
      i++;
      continue;
    }
    long long lda = ru8(s.K) + (i % 2) * 16;
    long long ldb = ru8(s.N) * (i % 3 == 0 ? 3 : 1);  // a column slice of a wider B
    long long ldc = s.N + 1 + (i % 4);                // odd ldc: unaligned pair stores
    test_dense<GemmCfg128x256>("128x256", s.M, s.N, s.K, lda, ldb, ldc, 10 + i);
    test_dense<GemmCfg128x128>("128x128", s.M, s.N, s.K, lda, ldb, ldc, 50 + i);
    i++;
  }
  test_dense<GemmCfg128x256, ReverseSched>("128x256", 777, 999, 300, 304, 1000, 1003, 7, 0,
                                           "_reverse_sched");
  test_dense<GemmCfg128x256, GemmRowMajorSched>("128x256", 1500, 1300, 264, 264, 1304, 1300,
                                                8, 3, "_rowmajor_sched");
  test_dense<GemmCfg128x128>("128x128", 1500, 1300, 264, 264, 1304, 1300, 9, 5);
  test_dense<GemmCfg128x256, RotateBy5>("128x256", 2000, 700, 136, 136, 704, 701, 13, 0,
                                        "_rotate5_sched");
  if (!quick && !small) {
    test_dense<GemmCfg128x256>("128x256", 4096, 7168, 8192, 8192, 7168, 7168, 11);
    test_dense<GemmCfg128x128>("128x128", 4096, 7168, 8192, 8192, 7168, 7168, 12);
  }
  if (!small) test_hooks<GemmCfg128x256>("v1_128x256");
  test_grouped<GemmCfg128x256>("grouped_8_empty_and_odd", 800, 203, 264,
                               {0, 0, 1, 128, 256, 385, 685, 685, 762}, 21);
  test_grouped<GemmCfg128x128>("grouped_8_empty_and_odd_128", 800, 203, 264,
                               {0, 0, 1, 128, 256, 385, 685, 685, 762}, 22);
  test_grouped<GemmCfg128x256>("grouped_clamped_offsets", 800, 136, 72, {0, 300, 5000}, 23);
  test_grouped<GemmCfg128x256>("grouped_poisoned_offsets", 300, 64, 64,
                               {-1, -1, -1, -1, -1}, 24);
  test_grouped<GemmCfg128x256>("grouped_first_offset_nonzero", 600, 256, 128, {40, 200, 550},
                               25);
  if (!small) {
    std::vector<int> offs{0};
    uint64_t x = 12345;
    for (int g = 0; g < 48; g++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      offs.push_back(offs.back() + (int)((x >> 33) % 401));
    }
    test_grouped<GemmCfg128x256>("grouped_48_random", offs.back() + 10, 520, 1032, offs, 26);
    test_grouped<GemmCfg128x128>("grouped_48_random_128", offs.back() + 10, 520, 1032, offs, 27);
  }
  {
    std::vector<int> offs{0};
    for (int g = 0; g < kMaxGroups; g++) offs.push_back(offs.back() + (g * 7) % 6);
    test_grouped<GemmCfg128x256>("grouped_max_groups", offs.back(), 64, 64, offs, 28);
    test_grouped<GemmCfg128x128>("grouped_max_groups_128", offs.back(), 64, 64, offs, 29);
  }
  test_arg_checks();
}

// The same checks for the v2 (wgmma + TMA) kernel.
static void run_tests_v2(bool quick, bool small) {
  test_probe<V2Tag>("v2");
  struct S {
    int M, N, K;
  } shapes[] = {{1, 1, 1},       {1, 8, 8},        {5, 7, 3},       {16, 8, 16},
                {100, 200, 72},  {127, 255, 63},   {128, 256, 64},  {129, 257, 65},
                {255, 129, 200}, {300, 500, 1000}, {1000, 77, 520}, {64, 1000, 8},
                {513, 384, 4096}, {333, 1111, 777}, {2048, 2048, 2048}, {4096, 1024, 136}};
  int i = 0;
  for (auto s : shapes) {
    if (!(small && (double)s.M * s.N * s.K > 2e8)) {
      long long lda = ru8(s.K) + (i % 2) * 16;
      long long ldb = ru8(s.N) * (i % 3 == 0 ? 3 : 1);
      long long ldc = s.N + 1 + (i % 4);
      test_dense<V2Tag>("v2", s.M, s.N, s.K, lda, ldb, ldc, 90 + i);
    }
    i++;
  }
  test_dense<V2Tag, ReverseSched>("v2", 777, 999, 300, 304, 1000, 1003, 7, 0, "_reverse_sched");
  test_dense<V2Tag, GemmRowMajorSched>("v2", 1500, 1300, 264, 264, 1304, 1300, 8, 3,
                                       "_rowmajor_sched");
  if (!quick && !small) test_dense<V2Tag>("v2", 4096, 7168, 8192, 8192, 7168, 7168, 11);
  if (!small) test_hooks<V2Tag>("v2");
  test_grouped<V2Tag>("grouped_v2_8_empty_and_odd", 800, 203, 264,
                      {0, 0, 1, 128, 256, 385, 685, 685, 762}, 21);
  test_grouped<V2Tag>("grouped_v2_clamped_offsets", 800, 136, 72, {0, 300, 5000}, 23);
  test_grouped<V2Tag>("grouped_v2_poisoned_offsets", 300, 64, 64, {-1, -1, -1, -1, -1}, 24);
  test_grouped<V2Tag>("grouped_v2_first_offset_nonzero", 600, 256, 128, {40, 200, 550}, 25);
  if (!small) {
    std::vector<int> offs{0};
    uint64_t x = 12345;
    for (int g = 0; g < 48; g++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      offs.push_back(offs.back() + (int)((x >> 33) % 401));
    }
    test_grouped<V2Tag>("grouped_v2_48_random", offs.back() + 10, 520, 1032, offs, 26);
  }
  {
    std::vector<int> offs{0};
    for (int g = 0; g < kMaxGroups; g++) offs.push_back(offs.back() + (g * 7) % 6);
    test_grouped<V2Tag>("grouped_v2_max_groups", offs.back(), 64, 64, offs, 28);
  }
}

// ---------------------------------------------------------------------------
// Benchmark.

static int g_iters = 30, g_warmup = 5, g_rows;
static bool g_v2;  // --impl all: time the v2 kernel too

template <class F>
static std::vector<float> time_runs(F fn) {
  for (int i = 0; i < g_warmup; i++) fn();
  CK(cudaDeviceSynchronize());
  std::vector<cudaEvent_t> ev(2 * g_iters);
  for (auto &e : ev) CK(cudaEventCreate(&e));
  for (int i = 0; i < g_iters; i++) {
    CK(cudaEventRecord(ev[2 * i]));
    fn();
    CK(cudaEventRecord(ev[2 * i + 1]));
  }
  CK(cudaDeviceSynchronize());
  std::vector<float> t(g_iters);
  for (int i = 0; i < g_iters; i++) CK(cudaEventElapsedTime(&t[i], ev[2 * i], ev[2 * i + 1]));
  for (auto &e : ev) CK(cudaEventDestroy(e));
  return t;
}

static double pct(std::vector<float> t, double q) {
  std::sort(t.begin(), t.end());
  double pos = q * (t.size() - 1);
  size_t lo = (size_t)pos;
  size_t hi = std::min(lo + 1, t.size() - 1);
  return t[lo] + (pos - lo) * (t[hi] - t[lo]);
}

struct Timed {
  const char *impl;
  std::vector<float> t;
  const CheckResult *cr;  // null: not verified here
};

static void bench_row(const char *name, const char *kind, int M, int N, int K, double flops,
                      const std::vector<Timed> &impls, const char *cublas_impl) {
  double base = 0;
  for (auto &x : impls)
    if (!strcmp(x.impl, cublas_impl)) base = pct(x.t, 0.5);
  for (auto &x : impls) {
    double med = pct(x.t, 0.5);
    double tf = flops / (med * 1e-3) / 1e12;
    double rel = base > 0 ? 100.0 * base / med : 0;
    bool ok = !x.cr || x.cr->passed;
    if (!ok) g_failures++;
    g_checks++;
    printf("BENCH %-26s %-22s M=%d N=%d K=%d median %.4f ms (p10 %.4f p90 %.4f) %.1f TFLOP/s "
           "%.1f%% of %s%s%s\n",
           name, x.impl, M, N, K, med, pct(x.t, 0.1), pct(x.t, 0.9), tf, rel, cublas_impl,
           x.cr ? (x.cr->passed ? " verify PASS" : " verify FAIL") : "",
           x.cr && !x.cr->passed ? "" : "");
    if (x.cr && !x.cr->passed)
      printf("      verify: rel_l2=%.3e nan=%lld poison_left=%lld max_err at (%d,%d)\n",
             x.cr->rel_l2, x.cr->nan, x.cr->poison_left, x.cr->max_r, x.cr->max_c);
    fprintf(g_json,
            "%s\n  {\"shape\": \"%s\", \"kind\": \"%s\", \"M\": %d, \"N\": %d, \"K\": %d, "
            "\"impl\": \"%s\", \"median_ms\": %.5f, \"p10_ms\": %.5f, \"p90_ms\": %.5f, "
            "\"tflops\": %.2f, \"pct_of_%s\": %.1f, \"warmup\": %d, \"iters\": %d, "
            "\"verified\": %s, \"rel_l2\": %.4e, \"samples_ms\": [",
            g_rows++ ? "," : "", name, kind, M, N, K, x.impl, med, pct(x.t, 0.1), pct(x.t, 0.9),
            tf, cublas_impl, rel, g_warmup, g_iters,
            x.cr ? (x.cr->passed ? "true" : "false") : "null",
            x.cr && std::isfinite(x.cr->rel_l2) ? x.cr->rel_l2 : -1.0);
    for (size_t i = 0; i < x.t.size(); i++) fprintf(g_json, "%s%.5f", i ? ", " : "", x.t[i]);
    fprintf(g_json, "]}");
  }
  fflush(g_json);
}

// Flags preset to 1 for the hook-overhead run.
__global__ void set_u32(unsigned *p, int n, unsigned v) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = v;
}

static void bench_dense(const char *name, int M, int N, int K, bool hooks) {
  running(name, M, N, K);
  Mat A = make_input(M, K, K, 1001);
  Mat B = make_input(K, N, N, 1002);
  Mat C1 = make_output(M, N), C2 = make_output(M, N), Cb = make_output(M, N);
  float *R;
  CK(cudaMalloc(&R, (size_t)M * N * 4));
  ref_gemm(A.p, K, B.p, N, R, M, N, K);
  GemmArgs a{A.p, B.p, K, N, M, N, K, nullptr, 0, 0};
  std::vector<Timed> impls;
  auto t1 = time_runs([&] { CK(gemm_tile_run<GemmCfg128x256>(a, GemmNoWait{}, GemmStoreC{C1.p, N})); });
  CheckResult c1 = check_output(C1.base, N, R, M, N, nullptr);
  auto t2 = time_runs([&] { CK(gemm_tile_run<GemmCfg128x128>(a, GemmNoWait{}, GemmStoreC{C2.p, N})); });
  CheckResult c2 = check_output(C2.base, N, R, M, N, nullptr);
  auto tb = time_runs([&] { blas_bf16(A.p, K, B.p, N, Cb.p, N, M, N, K); });
  CheckResult cb = check_output(Cb.base, N, R, M, N, nullptr);
  impls.push_back({"gemm_tile_v1_128x256", t1, &c1});
  impls.push_back({"gemm_tile_v1_128x128", t2, &c2});
  impls.push_back({"cublas", tb, &cb});
  CheckResult c3;
  std::vector<float> t3;
  if (g_v2) {
    repoison(C2);
    t3 = time_runs([&] { CK(gemm_tile_v2_run(a, GemmNoWait{}, GemmStoreC{C2.p, N})); });
    c3 = check_output(C2.base, N, R, M, N, nullptr);
    impls.push_back({"gemm_tile_v2_wgmma_128x256", t3, &c3});
  }
  CheckResult ch;
  std::vector<float> th;
  if (hooks) {  // flag-waiting prologue + flag-raising epilogue, flags already set
    const int chunk = (M + 7) / 8;
    const int tiles = ((M + 127) / 128) * ((N + 255) / 256);
    unsigned *flags, *tile_flags, *timeout;
    CK(cudaMalloc(&flags, 8 * 4));
    CK(cudaMalloc(&tile_flags, tiles * 4));
    CK(cudaMalloc(&timeout, 4));
    CK(cudaMemset(timeout, 0, 4));
    set_u32<<<1, 32>>>(flags, 8, 1u);
    CK(cudaGetLastError());
    repoison(C1);
    GemmStoreCFlag epi{C1.p, N, tile_flags, (N + 255) / 256, 1u};
    th = time_runs([&] {
      CK(gemm_tile_run<GemmCfg128x256>(a, GemmWaitRowChunks{flags, chunk, 1u, 0ull, timeout},
                                       epi));
    });
    ch = check_output(C1.base, N, R, M, N, nullptr);
    impls.push_back({"gemm_tile_v1_128x256_hooks", th, &ch});
    CK(cudaFree(flags));
    CK(cudaFree(tile_flags));
    CK(cudaFree(timeout));
  }
  bench_row(name, "dense", M, N, K, 2.0 * M * N * K, impls, "cublas");
  CK(cudaFree(R));
  free_mat(A), free_mat(B), free_mat(C1), free_mat(C2), free_mat(Cb);
}

static void bench_grouped(const char *name, int G, int rows, int K, int N) {
  running(name, G * rows, N, K);
  const int M = G * rows;
  Mat A = make_input(M, K, K, 2001);
  bf16 *B;
  long long stride = (long long)K * N;
  CK(cudaMalloc(&B, G * stride * 2));
  randomize(B, (long long)G * K, N, N, 2002);
  Mat C1 = make_output(M, N), C2 = make_output(M, N), Cb = make_output(M, N),
      Cd = make_output(M, N);
  float *R;
  CK(cudaMalloc(&R, (size_t)M * N * 4));
  std::vector<int> offs(G + 1);
  for (int g = 0; g <= G; g++) offs[g] = g * rows;
  for (int g = 0; g < G; g++)
    ref_gemm(A.p + (long long)g * rows * K, K, B + g * stride, N, R + (size_t)g * rows * N, rows,
             N, K);
  int *doffs;
  CK(cudaMalloc(&doffs, (G + 1) * 4));
  CK(cudaMemcpy(doffs, offs.data(), (G + 1) * 4, cudaMemcpyHostToDevice));
  GemmArgs a{A.p, B, K, N, M, N, K, doffs, G, stride};
  auto t1 = time_runs([&] { CK(gemm_tile_run<GemmCfg128x256>(a, GemmNoWait{}, GemmStoreC{C1.p, N})); });
  CheckResult c1 = check_output(C1.base, N, R, M, N, nullptr);
  auto t2 = time_runs([&] { CK(gemm_tile_run<GemmCfg128x128>(a, GemmNoWait{}, GemmStoreC{C2.p, N})); });
  CheckResult c2 = check_output(C2.base, N, R, M, N, nullptr);
  CheckResult c3;
  std::vector<float> t3;
  if (g_v2) {
    repoison(C1);
    t3 = time_runs([&] { CK(gemm_tile_v2_run(a, GemmNoWait{}, GemmStoreC{C1.p, N})); });
    c3 = check_output(C1.base, N, R, M, N, nullptr);
  }
  auto tb = time_runs([&] {
    for (int g = 0; g < G; g++)
      blas_bf16(A.p + (long long)g * rows * K, K, B + g * stride, N, Cb.p + (long long)g * rows * N,
                N, rows, N, K);
  });
  CheckResult cb = check_output(Cb.base, N, R, M, N, nullptr);
  // One dense GEMM over all rows with one weight: the bound a grouped GEMM aims at.
  auto td = time_runs([&] { blas_bf16(A.p, K, B, N, Cd.p, N, M, N, K); });
  std::vector<Timed> impls{{"gemm_tile_v1_grouped_128x256", t1, &c1},
                           {"gemm_tile_v1_grouped_128x128", t2, &c2},
                           {"cublas_loop_per_group", tb, &cb},
                           {"cublas_dense_one_weight_bound", td, nullptr}};
  if (g_v2) impls.push_back({"gemm_tile_v2_grouped_wgmma", t3, &c3});
  bench_row(name, "grouped", M, N, K, 2.0 * M * N * K, impls, "cublas_loop_per_group");
  CK(cudaFree(doffs));
  CK(cudaFree(B));
  CK(cudaFree(R));
  free_mat(A), free_mat(C1), free_mat(C2), free_mat(Cb), free_mat(Cd);
}

static void run_bench(bool quick) {
  // GEMM+AllGather: C_r = AllGather(A)[8192, 8192] * B_r[8192, 28672/R].
  // R=4 and R=2 are the M=8192,K=8192,N=7168/14336 acceptance shapes.
  bench_dense("ag_M8192_R4_N7168", 8192, 7168, 8192, true);
  bench_dense("ag_M8192_R2_N14336", 8192, 14336, 8192, false);
  if (!quick) {
    bench_dense("ag_M8192_R8_N3584", 8192, 3584, 8192, false);
    bench_dense("ag_M8192_R1_N28672", 8192, 28672, 8192, false);
    bench_dense("ag_M4096_R4_N7168", 4096, 7168, 8192, false);
  }
  // KV projection [S,4096] x [4096,2048].
  bench_dense("kvproj_S2048", 2048, 2048, 4096, false);
  bench_dense("kvproj_S8192", 8192, 2048, 4096, false);
  if (!quick) {
    bench_dense("kvproj_S512", 512, 2048, 4096, false);
    bench_dense("kvproj_S32768", 32768, 2048, 4096, false);
  }
  // MoE (DeepSeek-V3) experts: rows x 7168 -> 2048 (gate/up-like) and back.
  bench_grouped("moe_up_32x1024", 32, 1024, 7168, 2048);
  if (!quick) {
    bench_grouped("moe_up_64x512", 64, 512, 7168, 2048);
    bench_grouped("moe_up_256x128", 256, 128, 7168, 2048);
    bench_grouped("moe_down_32x1024", 32, 1024, 2048, 7168);
  }
}

// ---------------------------------------------------------------------------

static void write_machine(FILE *f) {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  int drv = 0, rt = 0, blas = 0, clk = 0;
  CK(cudaDriverGetVersion(&drv));
  CK(cudaRuntimeGetVersion(&rt));
  CB(cublasGetVersion(g_blas, &blas));
  cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  fprintf(f,
          "\"machine\": {\"gpu\": \"%s\", \"cc\": \"%d.%d\", \"sms\": %d, \"sm_clock_khz\": %d, "
          "\"smem_per_block_optin\": %zu, \"l2_bytes\": %d, \"driver\": %d, \"runtime\": %d, "
          "\"cublas\": %d}",
          p.name, p.major, p.minor, p.multiProcessorCount, clk, p.sharedMemPerBlockOptin,
          p.l2CacheSize, drv, rt, blas);
}

static FILE *open_json(const std::string &dir, const char *file) {
  std::string path = dir + "/" + file;
  FILE *f = fopen(path.c_str(), "w");
  if (!f) {
    fprintf(stderr, "cannot write %s: %s\n", path.c_str(), strerror(errno));
    exit(4);
  }
  return f;
}

// Run one test suite into DIR/file; returns its failure count.
static int test_suite(const std::string &out, const char *file, const char *what,
                      void (*suite)(bool, bool), bool quick, bool small) {
  g_failures = g_checks = 0;
  g_json = open_json(out, file);
  fprintf(g_json, "{\"schema\": 1, \"what\": \"%s\", ", what);
  write_machine(g_json);
  fprintf(g_json, ",\n\"checks\": [");
  suite(quick, small);
  fprintf(g_json, "\n], \"checks_run\": %d, \"failures\": %d, \"passed\": %s}\n", g_checks,
          g_failures, g_failures ? "false" : "true");
  fclose(g_json);
  printf("TESTS (%s): %d checks, %d failed\n", what, g_checks, g_failures);
  return g_failures;
}

int main(int argc, char **argv) {
  std::string mode = "all", out = ".", impl = "v1";
  bool quick = false, small = false;
  for (int i = 1; i < argc; i++) {
    std::string s = argv[i];
    if (s == "--mode" && i + 1 < argc) mode = argv[++i];
    else if (s == "--impl" && i + 1 < argc) impl = argv[++i];
    else if (s == "--out" && i + 1 < argc) out = argv[++i];
    else if (s == "--iters" && i + 1 < argc) g_iters = (int)strtol(argv[++i], NULL, 10);
    else if (s == "--warmup" && i + 1 < argc) g_warmup = (int)strtol(argv[++i], NULL, 10);
    else if (s == "--quick") quick = true;
    else if (s == "--small") small = true;
    else {
      fprintf(stderr,
              "usage: %s --mode test|bench|all [--impl v1|v2|all] --out DIR [--quick] [--small] "
              "[--iters N] [--warmup N]\n",
              argv[0]);
      return 2;
    }
  }
  if ((mode != "test" && mode != "bench" && mode != "all") ||
      (impl != "v1" && impl != "v2" && impl != "all") || g_iters < 1 || g_warmup < 0) {
    fprintf(stderr, "bad --mode (test|bench|all), --impl (v1|v2|all) or --iters/--warmup\n");
    return 2;
  }
  // Kernels must be loaded before the hook test runs them concurrently: lazy
  // loading of a first-launched kernel synchronizes the context (deadlock or
  // serialization with a kernel that spins on flags).
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  CK(cudaSetDevice(0));
  CB(cublasCreate(&g_blas));
  void *ws;
  CK(cudaMalloc(&ws, 64 << 20));
  CB(cublasSetWorkspace(g_blas, ws, 64 << 20));
  int fails = 0;
  if (mode != "bench") {
    if (impl != "v2")
      fails += test_suite(out, "gemm_tile_test.json", "gemm_tile v1 (mma.sync) correctness",
                          run_tests, quick, small);
    if (impl != "v1")
      fails += test_suite(out, "gemm_tile_test_v2.json", "gemm_tile v2 (wgmma+TMA) correctness",
                          run_tests_v2, quick, small);
  }
  if (mode != "test") {
    g_v2 = impl != "v1";
    g_failures = g_checks = 0;
    g_json = open_json(out, "gemm_tile_bench.json");
    fprintf(g_json,
            "{\"schema\": 1, \"what\": \"gemm_tile vs cuBLAS, bf16 in/out, fp32 accumulate\", ");
    write_machine(g_json);
    fprintf(g_json, ",\n\"results\": [");
    run_bench(quick);
    fprintf(g_json, "\n], \"verify_failures\": %d}\n", g_failures);
    fclose(g_json);
    printf("BENCH: %d timed rows, %d verify failures\n", g_checks, g_failures);
    fails += g_failures;
  }
  CB(cublasDestroy(g_blas));
  CK(cudaFree(ws));
  return fails ? 3 : 0;
}
