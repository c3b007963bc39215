// tests/gpu/vranks_proto.cu - standalone protocol harness for virtual ranks:
// R virtual ranks on one GPU run the kernels of vranks_kernels.cuh through
// the emulation (runtime/vnccl.cuh + vnccl_host.cu). Build with
// -DCUCO_VRANKS. A protocol test: it reports errors found, never a time.
//
//   vranks_proto --test NAME --vranks R [--lsa L] [--steps N] [--iters N]
//                [--delay-us U] [--seed S] [--out FILE]
//   tests: barrier_cta barrier_warp peers epochs allgather flag_ok
//          cheat_nowait cheat_skip cheat_stale coresidency hang bad_peer
//   exit: 0 passed, 3 protocol errors found, 4 setup/CUDA error, 2 usage
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>
#include <vector>

#include "vnccl_host.h"
#include "vranks_kernels.cuh"

#ifndef CUCO_VRANKS
#error "build vranks_proto with -DCUCO_VRANKS"
#endif

namespace {

struct opts {
  const char *test = nullptr;
  const char *out = nullptr;
  int R = 2, lsa = 0, steps = 6, iters = 50;
  long delay_us = 20000;
  unsigned long long seed = 12345;
};

struct check {
  int rank, step;
  unsigned long long errors;
};

struct harness {
  opts o;
  vnccl_world *world = nullptr;
  std::vector<cudaStream_t> streams;
  std::vector<check> checks;
  char err[512] = "";
  int R = 0;
};

bool cuda_ok(harness &h, cudaError_t rc, const char *what) {
  if (rc == cudaSuccess)
    return true;
  snprintf(h.err, sizeof h.err, "%s: %s", what, cudaGetErrorString(rc));
  return false;
}

// launch_all: enqueue fn(rank, stream) for every rank; rank `late` (or -1)
// first gets a delay kernel on its stream, so it starts after the others.
template <typename F> bool launch_all(harness &h, int late, F fn) {
  for (int r = 0; r < h.R; ++r) {
    if (r == late && h.o.delay_us > 0 &&
        vnccl_delay(h.streams[r], (unsigned long long)h.o.delay_us * 1000ull, h.err,
                    sizeof h.err) != 0)
      return false;
    fn(r, h.streams[r]);
    if (!cuda_ok(h, cudaGetLastError(), "kernel launch"))
      return false;
  }
  return cuda_ok(h, cudaDeviceSynchronize(), "kernel execution");
}

bool make_comms(harness &h, int nbar, std::vector<ncclDevComm> &dc) {
  ncclDevCommRequirements reqs;
  memset(&reqs, 0, sizeof reqs);
  reqs.lsaBarrierCount = nbar;
  dc.resize(h.R);
  return vnccl_devcomm_create(h.world, &reqs, dc.data(), h.err, sizeof h.err) == 0;
}

// ---------------------------------------------------------------- barrier ordering / epochs
template <typename Coop> bool run_barrier(harness &h, bool epochs) {
  const int G = 16, B = 128, E = 1000;
  const int units = std::is_same<Coop, ncclCoopWarp>::value ? G * (B / 32) : G;
  if (vnccl_check_coresident((const void *)vr_barrier_order<Coop>, G, B, 0, h.R, nullptr, h.err,
                             sizeof h.err) != 0)
    return false;
  std::vector<ncclDevComm> dc;
  if (!make_comms(h, units, dc))
    return false;
  vnccl_window *win;
  if (vnccl_window_alloc(h.world, (size_t)h.R * units * E * 4, &win, h.err, sizeof h.err) != 0)
    return false;
  unsigned long long *errs;
  if (!cuda_ok(h, cudaMalloc(&errs, sizeof(unsigned long long) * h.R), "cudaMalloc") ||
      !cuda_ok(h, cudaMemset(errs, 0, sizeof(unsigned long long) * h.R), "cudaMemset"))
    return false;
  // epochs: many short launches (1..3 iterations each); otherwise a few long ones.
  const int launches = epochs ? h.o.iters * 4 : 4;
  int it = 0;
  for (int k = 0; k < launches; ++k) {
    int iters = epochs ? 1 + k % 3 : h.o.iters;
    int late = k % (h.R + 1) < h.R ? k % (h.R + 1) : -1;
    if (epochs && k % 10 != 0)
      late = -1; // a delay on every launch would only make the test slow
    bool ok = launch_all(h, late, [&](int r, cudaStream_t s) {
      vr_barrier_order<Coop><<<G, B, 0, s>>>(dc[r], vnccl_window_handle(win, r), E, it, iters,
                                              errs);
    });
    if (!ok)
      return false;
    it += iters;
  }
  std::vector<unsigned long long> e(h.R);
  if (!cuda_ok(h, cudaMemcpy(e.data(), errs, sizeof(unsigned long long) * h.R,
                             cudaMemcpyDeviceToHost),
               "cudaMemcpy"))
    return false;
  for (int r = 0; r < h.R; ++r)
    h.checks.push_back({r, -1, e[r]});
  // Epochs persisted in device memory: 2 per iteration on every index.
  for (int r = 0; r < h.R; ++r) {
    std::vector<uint32_t> state(2 * units);
    const char *local = dc[r].resourceWindow_inlined.lsaFlatBase +
                        (size_t)dc[r].lsaRank * dc[r].resourceWindow_inlined.sliceStride;
    if (!cuda_ok(h, cudaMemcpy(state.data(), local, 4 * state.size(), cudaMemcpyDeviceToHost),
                 "cudaMemcpy(epochs)"))
      return false;
    unsigned long long bad = 0;
    for (int u = 0; u < units; ++u)
      bad += state[units + u] != (uint32_t)(2 * it);
    if (bad)
      fprintf(stderr, "rank %d: %llu barrier epochs differ from %d\n", r, bad, 2 * it);
    h.checks.push_back({r, -2, bad});
  }
  cudaFree(errs);
  return true;
}

// ---------------------------------------------------------------- peer pointers
bool run_peers(harness &h) {
  std::vector<ncclDevComm> dc;
  if (!make_comms(h, 1, dc))
    return false;
  const int L = vnccl_world_lsa_size(h.world);
  vnccl_window *win;
  if (vnccl_window_alloc(h.world, (size_t)4 * L * sizeof(int), &win, h.err, sizeof h.err) != 0)
    return false;
  if (!launch_all(h, 0, [&](int r, cudaStream_t s) {
        vr_peer_ptrs<<<1, 64, 0, s>>>(dc[r], vnccl_window_handle(win, r));
      }))
    return false;
  for (int r = 0; r < h.R; ++r) {
    std::vector<int> got(4 * L);
    if (!cuda_ok(h, cudaMemcpy(got.data(), vnccl_window_local(win, r), 4 * L * sizeof(int),
                               cudaMemcpyDeviceToHost),
                 "cudaMemcpy"))
      return false;
    unsigned long long bad = 0;
    int team0 = r - r % L; // world rank of LSA rank 0 of r's team
    for (int way = 0; way < 4; ++way)
      for (int p = 0; p < L; ++p)
        if (got[way * L + p] != team0 + p + 1) {
          if (bad == 0)
            fprintf(stderr, "rank %d way %d slot %d: got %d, want %d\n", r, way, p,
                    got[way * L + p], team0 + p + 1);
          ++bad;
        }
    h.checks.push_back({r, 0, bad});
  }
  return true;
}

// ---------------------------------------------------------------- all-gather + cheats
template <int V> bool run_allgather(harness &h) {
  const int G = 8, B = 256, n = (1 << 16) + 13;
  const unsigned long long timeout_ns = 5000000000ull;
  if (vnccl_check_coresident((const void *)vr_allgather<V>, G, B, 0, h.R, nullptr, h.err,
                             sizeof h.err) != 0)
    return false;
  std::vector<ncclDevComm> dc;
  if (!make_comms(h, G, dc))
    return false;
  vnccl_window *y, *flags;
  if (vnccl_window_alloc(h.world, (size_t)h.R * n * sizeof(float), &y, h.err, sizeof h.err) ||
      vnccl_window_alloc(h.world, (size_t)h.R * G * 8, &flags, h.err, sizeof h.err))
    return false;
  std::vector<float *> x(h.R), out(h.R);
  for (int r = 0; r < h.R; ++r)
    if (!cuda_ok(h, cudaMalloc(&x[r], n * sizeof(float)), "cudaMalloc(x)") ||
        !cuda_ok(h, cudaMalloc(&out[r], (size_t)h.R * n * sizeof(float)), "cudaMalloc(out)"))
      return false;
  std::vector<std::vector<float>> hx(h.R, std::vector<float>(n));
  std::vector<float> got((size_t)h.R * n);
  srand48((long)h.o.seed);
  for (int s = 0; s < h.o.steps; ++s) {
    // Fresh random inputs, poisoned receive buffers and outputs (0xFF = NaN).
    for (int r = 0; r < h.R; ++r) {
      for (int i = 0; i < n; ++i)
        hx[r][i] = (float)(drand48() * 2.0 - 1.0);
      if (!cuda_ok(h, cudaMemcpy(x[r], hx[r].data(), n * sizeof(float), cudaMemcpyHostToDevice),
                   "cudaMemcpy(x)") ||
          !cuda_ok(h, cudaMemset(vnccl_window_local(y, r), 0xFF, (size_t)h.R * n * sizeof(float)),
                   "poison(Y)") ||
          !cuda_ok(h, cudaMemset(out[r], 0xFF, (size_t)h.R * n * sizeof(float)), "poison(out)"))
        return false;
    }
    int late = s == 0 ? -1 : (s - 1) % h.R; // step 0 unperturbed, then each rank late in turn
    if (!launch_all(h, late, [&](int r, cudaStream_t st) {
          vr_allgather<V><<<G, B, 0, st>>>(dc[r], vnccl_window_handle(y, r),
                                           vnccl_window_handle(flags, r), x[r], out[r], n,
                                           (unsigned long long)s + 1, timeout_ns);
        }))
      return false;
    for (int r = 0; r < h.R; ++r) {
      if (!cuda_ok(h, cudaMemcpy(got.data(), out[r], got.size() * sizeof(float),
                                 cudaMemcpyDeviceToHost),
                   "cudaMemcpy(out)"))
        return false;
      unsigned long long bad = 0;
      int team0 = r - r % vnccl_world_lsa_size(h.world);
      int L = vnccl_world_lsa_size(h.world);
      for (int p = 0; p < L; ++p)
        for (int i = 0; i < n; ++i)
          bad += memcmp(&got[(size_t)p * n + i], &hx[team0 + p][i], sizeof(float)) != 0;
      h.checks.push_back({r, s, bad});
    }
  }
  for (int r = 0; r < h.R; ++r) {
    cudaFree(x[r]);
    cudaFree(out[r]);
  }
  return true;
}

// ---------------------------------------------------------------- co-residency
// The check must accept the largest grid whose R copies fit and refuse one
// CTA more, with a message.
bool run_coresidency(harness &h) {
  const void *k = (const void *)vr_allgather<VR_AG_OK>;
  long cap = 0;
  if (vnccl_check_coresident(k, 1, 256, 0, h.R, &cap, h.err, sizeof h.err) != 0)
    return false;
  int fit = (int)(cap / h.R);
  char msg[512] = "";
  unsigned long long bad = 0;
  bad += fit < 1 || vnccl_check_coresident(k, fit, 256, 0, h.R, nullptr, msg, sizeof msg) != 0;
  bad += vnccl_check_coresident(k, fit + 1, 256, 0, h.R, nullptr, msg, sizeof msg) != -1;
  bad += strstr(msg, "cannot all be resident") == nullptr;
  fprintf(stderr, "capacity %ld CTAs; grid %d x %d ranks fits; refusal: %s\n", cap, fit, h.R, msg);
  h.checks.push_back({0, 0, bad});
  return true;
}

// ---------------------------------------------------------------- deliberate faults
bool run_hang(harness &h) {
  std::vector<ncclDevComm> dc;
  if (!make_comms(h, 1, dc))
    return false;
  return launch_all(h, -1, [&](int r, cudaStream_t s) { vr_hang<<<1, 32, 0, s>>>(dc[r]); });
}

bool run_bad_peer(harness &h) {
  std::vector<ncclDevComm> dc;
  if (!make_comms(h, 1, dc))
    return false;
  vnccl_window *win;
  if (vnccl_window_alloc(h.world, 64, &win, h.err, sizeof h.err) != 0)
    return false;
  return launch_all(h, -1, [&](int r, cudaStream_t s) {
    vr_bad_peer<<<1, 32, 0, s>>>(dc[r], vnccl_window_handle(win, r));
  });
}

bool run_test(harness &h) {
  const char *t = h.o.test;
  if (!strcmp(t, "barrier_cta"))
    return run_barrier<ncclCoopCta>(h, false);
  if (!strcmp(t, "barrier_warp"))
    return run_barrier<ncclCoopWarp>(h, false);
  if (!strcmp(t, "epochs"))
    return run_barrier<ncclCoopCta>(h, true);
  if (!strcmp(t, "peers"))
    return run_peers(h);
  if (!strcmp(t, "allgather"))
    return run_allgather<VR_AG_OK>(h);
  if (!strcmp(t, "flag_ok"))
    return run_allgather<VR_AG_FLAG_OK>(h);
  if (!strcmp(t, "cheat_nowait"))
    return run_allgather<VR_AG_NOWAIT>(h);
  if (!strcmp(t, "cheat_skip"))
    return run_allgather<VR_AG_SKIP>(h);
  if (!strcmp(t, "cheat_stale"))
    return run_allgather<VR_AG_STALE>(h);
  if (!strcmp(t, "coresidency"))
    return run_coresidency(h);
  if (!strcmp(t, "hang"))
    return run_hang(h);
  if (!strcmp(t, "bad_peer"))
    return run_bad_peer(h);
  snprintf(h.err, sizeof h.err, "unknown test '%s'", t);
  return false;
}

// write_result: one JSON object; protocol_test is always true and there is
// deliberately no timing field.
void write_result(harness &h, const char *status, unsigned long long total) {
  FILE *f = h.o.out ? fopen(h.o.out, "w") : stdout;
  if (f == NULL) {
    fprintf(stderr, "vranks_proto: cannot write %s\n", h.o.out);
    return;
  }
  fprintf(f,
          "{\"schema\": 1, \"tool\": \"vranks_proto\", \"test\": \"%s\", \"vranks\": %d, "
          "\"lsa_size\": %d, \"protocol_test\": true, \"status\": \"%s\", \"errors\": %llu, "
          "\"delay_us\": %ld, \"seed\": %llu, \"error\": \"",
          h.o.test, h.R, h.world ? vnccl_world_lsa_size(h.world) : 0, status, total, h.o.delay_us,
          h.o.seed);
  for (const char *c = h.err; *c; ++c)
    fputc(*c == '"' || *c == '\\' ? '\'' : (*c < 32 ? ' ' : *c), f);
  fprintf(f, "\", \"checks\": [");
  for (size_t i = 0; i < h.checks.size(); ++i)
    fprintf(f, "%s{\"rank\": %d, \"step\": %d, \"errors\": %llu, \"passed\": %s}", i ? ", " : "",
            h.checks[i].rank, h.checks[i].step, h.checks[i].errors,
            h.checks[i].errors ? "false" : "true");
  fprintf(f, "]}\n");
  if (f != stdout)
    fclose(f);
}

bool parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  vnccl_prepare_env(); // before any CUDA call
  harness h;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    long x = 0;
    bool ok = v != nullptr;
    if (ok && !strcmp(a, "--test"))
      h.o.test = v;
    else if (ok && !strcmp(a, "--out"))
      h.o.out = v;
    else if (ok && !strcmp(a, "--vranks") && (ok = parse_long(v, 1, VNCCL_MAX_RANKS, &x)))
      h.o.R = (int)x;
    else if (ok && !strcmp(a, "--lsa") && (ok = parse_long(v, 0, VNCCL_MAX_RANKS, &x)))
      h.o.lsa = (int)x;
    else if (ok && !strcmp(a, "--steps") && (ok = parse_long(v, 1, 10000, &x)))
      h.o.steps = (int)x;
    else if (ok && !strcmp(a, "--iters") && (ok = parse_long(v, 1, 100000, &x)))
      h.o.iters = (int)x;
    else if (ok && !strcmp(a, "--delay-us") && (ok = parse_long(v, 0, 10000000, &x)))
      h.o.delay_us = x;
    else if (ok && !strcmp(a, "--seed") && (ok = parse_long(v, 0, 1L << 62, &x)))
      h.o.seed = (unsigned long long)x;
    else
      ok = false;
    if (!ok) {
      fprintf(stderr, "vranks_proto: bad argument '%s%s%s'\nusage: %s --test NAME --vranks R "
                      "[--lsa L] [--steps N] [--iters N] [--delay-us U] [--seed S] [--out F]\n",
              a, v ? " " : "", v ? v : "", argv[0]);
      return 2;
    }
    ++i;
  }
  if (h.o.test == nullptr) {
    fprintf(stderr, "vranks_proto: --test is required\n");
    return 2;
  }
  h.R = h.o.R;
  bool ok = vnccl_world_create(h.R, h.o.lsa, &h.world, h.err, sizeof h.err) == 0;
  if (ok) {
    h.streams.resize(h.R);
    for (int r = 0; r < h.R && ok; ++r)
      ok = cuda_ok(h, cudaStreamCreateWithFlags(&h.streams[r], cudaStreamNonBlocking),
                   "cudaStreamCreate");
  }
  ok = ok && run_test(h);
  unsigned long long total = 0;
  for (const check &c : h.checks)
    total += c.errors;
  const char *status = !ok ? "error" : total ? "failed" : "ok";
  write_result(h, status, total);
  fprintf(stderr, "vranks_proto: test %s, %d virtual ranks: %s (%llu errors)%s%s\n", h.o.test,
          h.R, status, total, h.err[0] ? ": " : "", h.err);
  if (ok)
    vnccl_world_destroy(h.world); // after a trap the context is gone: just exit
  return !ok ? 4 : total ? 3 : 0;
}
