// bench/attn_step_bench.cu - correctness tests and benchmark of the frozen
// attention step (runtime/attn_step.cuh), standalone (no cuco runtime; run on
// a GPU by tests/gpu/attn_step.sh).
//
//   attn_step_bench --mode test|bench|all --out DIR [--small] [--reps N]
//                   [--sizes 8192,16384,32768]
//
// test:  against an fp64 CPU reference (inputs are the bf16 values), at small
//        and awkward shapes: S = 1, 48, 129, 200, 1000, 2126; D = 64, 128; Hq/Hkv =
//        32/8, 4/1, 8/8; causal and unmasked; a custom scale; large scores.
//        Folding: the KV range split into chunks (awkward boundaries, a 1-key
//        chunk) and folded call by call must match one call and the
//        reference; attn_state_merge of two partial states (either order, so
//        a destination row that saw nothing is covered) likewise; zigzag
//        context-parallel chunks (q and kv position offsets, fully masked
//        pairs); rows that see no key are untouched bit for bit (a poisoned
//        state pattern); rows with m = -inf are not read (NaN acc/l there
//        fold like a clean state); kv_rows == 0 is a no-op; the device entry
//        attn_step_tile (few CTAs looping over tiles) is bitwise equal to
//        attn_step.  Pass: rel L2(O) <= 1e-2, every row's rel error <= 2e-2,
//        |dLSE| <= 1e-3, no NaN; fold/merge vs one call rel L2 <= 2e-3.
// bench: Hq=32, D=128 (Llama-3.1-8B), Hkv (--hkv, 8) and mask (--mask,
//        causal) at each S: median of timed runs (CUDA events, after
//        warm-up) of attn_step alone (state init outside the timing), of
//        init+step+finalize (comparable with SDPA, which writes O) and, with
//        v2, of attn_fwd_v2, taking turns within each run; TFLOP/s with FLOP
//        = 2*S^2*Hq*D causal, 4*S^2*Hq*D full.  The last timed output is
//        verified on sampled rows (the last rows, random rows) of three heads
//        against fp64.
// Writes DIR/attn_step_test.json and DIR/attn_step_bench.json.
// Exit: 0 all passed, 3 a check failed, 4 CUDA error, 2 usage.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "attn_step.cuh"
#include "attn_step_ref.h"
// -DATTN_BENCH_V2 (an sm_90a build): every check and the benchmark call
// attn_step_v2 (runtime/attn_step_v2.cuh) instead of attn_step, and the
// device entry check runs attn_step_v2_tiles instead of attn_step_tile.
#ifdef ATTN_BENCH_V2
#include "attn_step_v2.cuh"
#define BENCH_STEP attn_step_v2
#define BENCH_IMPL "attn_step_v2"
#else
#define BENCH_STEP attn_step
#define BENCH_IMPL "attn_step_v1"
#endif

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, \
              __LINE__, #x);                                                           \
      exit(4);                                                                         \
    }                                                                                  \
  } while (0)

static FILE *g_json;
static int g_checks, g_failures;

// ---------------------------------------------------------------------------
// Host data.

static uint16_t f2bf(float f) { return attn_ref_f2bf(f); }
static float bf2f(uint16_t b) { return attn_ref_bf2f(b); }
using Rng = AttnRng;

// One global sequence of S tokens: Q [S][Hq][D], K and V [S][Hkv][D] in one
// buffer (K then V), bf16, on host and device.
struct Seq {
  int S, hq, hkv, d;
  std::vector<uint16_t> q, kv;
  __nv_bfloat16 *dq = nullptr, *dkv = nullptr;
  const __nv_bfloat16 *dk() const { return dkv; }
  const __nv_bfloat16 *dv() const { return dkv + (size_t)S * hkv * d; }
  float qh(int t, int h, int i) const { return bf2f(q[((size_t)t * hq + h) * d + i]); }
  float kh(int t, int h, int i) const { return bf2f(kv[((size_t)t * hkv + h) * d + i]); }
  float vh(int t, int h, int i) const {
    return bf2f(kv[(size_t)S * hkv * d + ((size_t)t * hkv + h) * d + i]);
  }
};

static Seq make_seq(int S, int hq, int hkv, int d, uint64_t seed, float qscale = 1.f) {
  Seq s;
  s.S = S, s.hq = hq, s.hkv = hkv, s.d = d;
  s.q.resize((size_t)S * hq * d);
  s.kv.resize((size_t)2 * S * hkv * d);
  // Filled in parallel slices (the bench's tensors are hundreds of MB).
  auto fill = [](std::vector<uint16_t> &v, uint64_t sd, float sc) {
    unsigned nt = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> th;
    size_t per = (v.size() + nt - 1) / nt;
    for (unsigned t = 0; t < nt; t++)
      th.emplace_back([&, t] {
        Rng r(sd * 131 + t);
        for (size_t i = t * per; i < std::min(v.size(), (t + 1) * per); i++)
          v[i] = f2bf(r.normalish() * sc);
      });
    for (auto &x : th) x.join();
  };
  fill(s.q, seed * 2 + 1, qscale);
  fill(s.kv, seed * 2 + 2, 1.f);
  CK(cudaMalloc(&s.dq, std::max<size_t>(16, s.q.size() * 2)));
  CK(cudaMalloc(&s.dkv, std::max<size_t>(16, s.kv.size() * 2)));
  CK(cudaMemcpy(s.dq, s.q.data(), s.q.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(s.dkv, s.kv.data(), s.kv.size() * 2, cudaMemcpyHostToDevice));
  return s;
}
static void free_seq(Seq &s) {
  CK(cudaFree(s.dq));
  CK(cudaFree(s.dkv));
}

// fp64 reference for the token at global position p, query head h: O (d
// values) and the natural-log LSE, over the keys [0, S) (causal: [0, p]).
static void ref_row(const Seq &s, int p, int h, bool causal, double scale, double *o,
                    double *lse) {
  int kvh = h / (s.hq / s.hkv);
  long long ld = (long long)s.hkv * s.d;
  const uint16_t *k = s.kv.data() + (size_t)kvh * s.d;
  *lse = attn_ref_row(s.q.data() + ((size_t)p * s.hq + h) * s.d, k, k + (size_t)s.S * ld, ld,
                      causal ? p + 1 : s.S, s.d, scale, o);
}

// Device state of `rows` rows.
struct State {
  attn_state st{};
  int hq, d;
};
static State make_state(int rows, int hq, int d) {
  State s;
  s.hq = hq, s.d = d;
  s.st.rows = rows;
  size_t n = std::max<size_t>(1, (size_t)rows * hq);
  CK(cudaMalloc(&s.st.acc, n * d * 4));
  CK(cudaMalloc(&s.st.m, n * 4));
  CK(cudaMalloc(&s.st.l, n * 4));
  CK(attn_state_init(s.st, hq, d, 0));
  return s;
}
static void free_state(State &s) {
  CK(cudaFree(s.st.acc));
  CK(cudaFree(s.st.m));
  CK(cudaFree(s.st.l));
}

// O and LSE of a state, finalized on the GPU and copied back.
struct Out {
  std::vector<uint16_t> o;
  std::vector<float> lse;
};
// O and LSE of ROWS rows written by WRITE(o, lse) into NaN-filled buffers
// (unwritten shows), copied back.
template <class W>
static Out outputs(int rows, int hq, int d, W write) {
  Out r;
  size_t n = (size_t)rows * hq;
  __nv_bfloat16 *o;
  float *lse;
  CK(cudaMalloc(&o, std::max<size_t>(1, n * d) * 2));
  CK(cudaMalloc(&lse, std::max<size_t>(1, n) * 4));
  CK(cudaMemset(o, 0xff, std::max<size_t>(1, n * d) * 2));
  CK(cudaMemset(lse, 0xff, std::max<size_t>(1, n) * 4));
  CK(write(o, lse));
  CK(cudaDeviceSynchronize());
  r.o.resize(n * d);
  r.lse.resize(n);
  CK(cudaMemcpy(r.o.data(), o, n * d * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(r.lse.data(), lse, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaFree(o));
  CK(cudaFree(lse));
  return r;
}
static Out finalize(const State &s) {
  return outputs(s.st.rows, s.hq, s.d, [&](__nv_bfloat16 *o, float *lse) {
    return attn_finalize(s.st, s.hq, s.d, o, lse, 0);
  });
}

// One step: query rows [q0, q0+nq) of the sequence against keys [k0, k0+nk),
// into state rows [srow0, +nq).
static attn_step_args args_for(const Seq &s, int q0, int nq, int k0, int nk, attn_mask mask,
                               float scale) {
  attn_step_args a{};
  a.shape = {s.hq, s.hkv, s.d, scale};
  a.q = s.dq + (size_t)q0 * s.hq * s.d;
  a.q_rows = nq;
  a.q_pos0 = q0;
  a.k = s.dk() + (size_t)k0 * s.hkv * s.d;
  a.v = s.dv() + (size_t)k0 * s.hkv * s.d;
  a.kv_rows = nk;
  a.kv_pos0 = k0;
  a.mask = mask;
  return a;
}
static cudaError_t step(const Seq &s, State &st, int q0, int nq, int k0, int nk, int srow0,
                        attn_mask mask, float scale = 0.f) {
  attn_step_args a = args_for(s, q0, nq, k0, nk, mask, scale);
  a.state = st.st;
  a.state_row0 = srow0;
  return BENCH_STEP(&a, 0);
}

#ifdef ATTN_BENCH_V2
// attn_fwd_v2 (init + step + finalize in one kernel, no state) over query
// rows [q0, q0+nq) and keys [k0, k0+nk), into NaN-filled O and LSE.
static Out fused(const Seq &s, int q0, int nq, int k0, int nk, attn_mask mask, float scale = 0.f) {
  attn_step_args a = args_for(s, q0, nq, k0, nk, mask, scale);
  a.state.rows = nq;  // the outputs' layout; no state buffers
  return outputs(nq, s.hq, s.d, [&](__nv_bfloat16 *o, float *lse) {
    return attn_fwd_v2(&a, o, lse, 0);
  });
}
#endif

// ---------------------------------------------------------------------------
// Checking.

struct Err {
  double rel_l2 = 0, worst_row = 0, worst_lse = 0;
  long long nan = 0, rows = 0;
  int worst_pos = -1, worst_head = -1;
};

// Compare O/LSE rows (state row r <-> global position pos[r]) with fp64, for
// the given heads (all when empty) and rows (all when empty).
static Err check_vs_ref(const Seq &s, const Out &out, const std::vector<int> &pos, bool causal,
                        double scale, std::vector<int> rows = {}, std::vector<int> heads = {}) {
  if (rows.empty())
    for (size_t r = 0; r < pos.size(); r++) rows.push_back((int)r);
  if (heads.empty())
    for (int h = 0; h < s.hq; h++) heads.push_back(h);
  std::vector<std::pair<int, int>> work;
  for (int r : rows)
    for (int h : heads) work.push_back({r, h});
  unsigned nt = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<Err> part(nt);
  std::vector<double> num(nt), den(nt);
  std::vector<std::thread> th;
  for (unsigned t = 0; t < nt; t++)
    th.emplace_back([&, t] {
      std::vector<double> o(s.d);
      for (size_t w = t; w < work.size(); w += nt) {
        int r = work[w].first, h = work[w].second;
        double lse;
        ref_row(s, pos[r], h, causal, scale, o.data(), &lse);
        double n2 = 0, d2 = 0;
        for (int i = 0; i < s.d; i++) {
          double g = bf2f(out.o[((size_t)r * s.hq + h) * s.d + i]);
          if (std::isnan(g)) part[t].nan++;
          n2 += (g - o[i]) * (g - o[i]);
          d2 += o[i] * o[i];
        }
        double gl = out.lse[(size_t)h * pos.size() + r];
        if (std::isnan(gl)) part[t].nan++;
        double dl = fabs(gl - lse);
        double re = sqrt(n2 / std::max(d2, 1e-30));
        num[t] += n2, den[t] += d2;
        if (re > part[t].worst_row || std::isnan(re))
          part[t].worst_row = re, part[t].worst_pos = pos[r], part[t].worst_head = h;
        if (dl > part[t].worst_lse || std::isnan(dl)) part[t].worst_lse = dl;
        part[t].rows++;
      }
    });
  for (auto &x : th) x.join();
  Err e;
  double n2 = 0, d2 = 0;
  for (unsigned t = 0; t < nt; t++) {
    n2 += num[t], d2 += den[t];
    e.nan += part[t].nan, e.rows += part[t].rows;
    if (part[t].worst_row > e.worst_row || std::isnan(part[t].worst_row))
      e.worst_row = part[t].worst_row, e.worst_pos = part[t].worst_pos,
      e.worst_head = part[t].worst_head;
    e.worst_lse = std::max(e.worst_lse, part[t].worst_lse);
    if (std::isnan(part[t].worst_lse)) e.worst_lse = NAN;
  }
  e.rel_l2 = sqrt(n2 / std::max(d2, 1e-30));
  return e;
}

// Relative L2 distance of two outputs (O) and the largest LSE difference.
static void compare_outs(const Out &a, const Out &b, double *rel, double *dlse) {
  double n2 = 0, d2 = 0;
  for (size_t i = 0; i < a.o.size(); i++) {
    double x = bf2f(a.o[i]), y = bf2f(b.o[i]);
    n2 += (x - y) * (x - y);
    d2 += y * y;
  }
  *rel = sqrt(n2 / std::max(d2, 1e-30));
  if (std::isnan(n2)) *rel = NAN;
  double m = 0;
  for (size_t i = 0; i < a.lse.size(); i++) {
    double d = fabs((double)a.lse[i] - b.lse[i]);
    if (std::isinf(a.lse[i]) && a.lse[i] == b.lse[i]) d = 0;
    if (!(d <= m)) m = d;
  }
  *dlse = m;
}

static void record(const char *name, const char *shape, bool pass, const char *detail) {
  g_checks++;
  if (!pass) g_failures++;
  printf("%s %-28s %-34s %s\n", pass ? "PASS" : "FAIL", name, shape, detail);
  fflush(stdout);
  fprintf(g_json, "%s\n  {\"name\": \"%s\", \"shape\": \"%s\", \"pass\": %s, \"detail\": \"%s\"}",
          g_checks > 1 ? "," : "", name, shape, pass ? "true" : "false", detail);
  fflush(g_json);
}

static bool err_ok(const Err &e) {
  return e.nan == 0 && e.rel_l2 <= 1e-2 && e.worst_row <= 2e-2 && e.worst_lse <= 1e-3;
}
static void record_err(const char *name, const char *shape, const Err &e) {
  char det[300];
  snprintf(det, sizeof det,
           "rows %lld rel_l2 %.3g worst_row %.3g (pos %d head %d) max_dlse %.3g nan %lld", e.rows,
           e.rel_l2, e.worst_row, e.worst_pos, e.worst_head, e.worst_lse, e.nan);
  record(name, shape, err_ok(e), det);
}

static std::vector<int> iota_pos(int n, int first = 0) {
  std::vector<int> p(n);
  for (int i = 0; i < n; i++) p[i] = first + i;
  return p;
}

static void shape_str(char *b, size_t n, const Seq &s, const char *extra = "") {
  snprintf(b, n, "S%d_hq%d_hkv%d_d%d%s", s.S, s.hq, s.hkv, s.d, extra);
}

// ---------------------------------------------------------------------------
// Tests.

// One call over the whole sequence.
static Out test_single(const Seq &s, attn_mask mask, float scale, const char *tag) {
  State st = make_state(s.S, s.hq, s.d);
  CK(step(s, st, 0, s.S, 0, s.S, 0, mask, scale));
  Out out = finalize(st);
  double sc = scale > 0 ? scale : 1.0 / sqrt((double)s.d);
  Err e = check_vs_ref(s, out, iota_pos(s.S), mask == ATTN_MASK_CAUSAL, sc);
  char sh[96];
  shape_str(sh, sizeof sh, s, tag);
  record_err(mask == ATTN_MASK_CAUSAL ? "single_causal" : "single_nomask", sh, e);
  free_state(st);
#ifdef ATTN_BENCH_V2
  // The fused call: against fp64, and bit for bit the state path's O and LSE
  // (the same fp32 sums, scaled by the same 1/l).
  Out f = fused(s, 0, s.S, 0, s.S, mask, scale);
  record_err(mask == ATTN_MASK_CAUSAL ? "fused_causal" : "fused_nomask", sh,
             check_vs_ref(s, f, iota_pos(s.S), mask == ATTN_MASK_CAUSAL, sc));
  bool same = f.o == out.o && memcmp(f.lse.data(), out.lse.data(), f.lse.size() * 4) == 0;
  record("fused_bitwise_state_path", sh, same,
         same ? "attn_fwd_v2 == step + finalize" : "fused O/LSE differ from step + finalize");
#endif
  return out;
}

#ifdef ATTN_BENCH_V2
// Fused rows that see no key: O = 0 and LSE = -inf (finalize's rules), as a
// step that leaves the state alone and then attn_finalize would give.
static void test_fused_unseen(const Seq &s) {
  char sh[96];
  shape_str(sh, sizeof sh, s);
  const int nq = s.S / 2, k0 = s.S / 2;  // Q [0, S/2) before every key [S/2, S)
  Out f = fused(s, 0, nq, k0, s.S - k0, ATTN_MASK_CAUSAL);
  long long bad = 0;
  for (uint16_t x : f.o) bad += x != 0;  // +0.0 in bf16
  for (float x : f.lse) bad += !(std::isinf(x) && x < 0);
  record("fused_unseen_rows", sh, bad == 0,
         bad ? "rows that see no key are not O = 0, LSE = -inf" : "O = 0, LSE = -inf");
}
#endif

// The KV range folded in chunks (boundaries `cuts`, increasing, inside (0,S))
// must match one call; so must two partial states merged (both orders).
static void test_fold_merge(const Seq &s, const Out &one, std::vector<int> cuts) {
  char sh[96];
  shape_str(sh, sizeof sh, s);
  cuts.insert(cuts.begin(), 0);
  cuts.push_back(s.S);
  State st = make_state(s.S, s.hq, s.d);
  for (size_t c = 0; c + 1 < cuts.size(); c++)
    CK(step(s, st, 0, s.S, cuts[c], cuts[c + 1] - cuts[c], 0, ATTN_MASK_CAUSAL));
  Out f = finalize(st);
  double rel, dl;
  compare_outs(f, one, &rel, &dl);
  char det[200];
  snprintf(det, sizeof det, "%zu chunks: rel_l2 vs one call %.3g, max_dlse %.3g",
           cuts.size() - 1, rel, dl);
  record("fold_vs_one_call", sh, rel <= 2e-3 && dl <= 1e-3, det);
  record_err("fold_vs_ref", sh, check_vs_ref(s, f, iota_pos(s.S), true, 1 / sqrt((double)s.d)));
  free_state(st);

  // Merge: A folds keys [0, mid), B folds [mid, S).  merge(A <- B) and
  // merge(B <- A); in B the rows before mid saw nothing (m = -inf).
  int mid = cuts[cuts.size() / 2];
  for (int order = 0; order < 2; order++) {
    State A = make_state(s.S, s.hq, s.d), B = make_state(s.S, s.hq, s.d);
    CK(step(s, A, 0, s.S, 0, mid, 0, ATTN_MASK_CAUSAL));
    CK(step(s, B, 0, s.S, mid, s.S - mid, 0, ATTN_MASK_CAUSAL));
    State &dst = order ? B : A, &src = order ? A : B;
    CK(attn_state_merge(dst.st, src.st, s.hq, s.d, 0));
    Out m = finalize(dst);
    compare_outs(m, one, &rel, &dl);
    snprintf(det, sizeof det, "split at %d, %s: rel_l2 vs one call %.3g, max_dlse %.3g", mid,
             order ? "B<-A" : "A<-B", rel, dl);
    record("merge_vs_one_call", sh, rel <= 2e-3 && dl <= 1e-3, det);
    free_state(A), free_state(B);
  }
}

// Zigzag context parallelism: S cut into 2R chunks at floor(i*S/2R); rank r
// holds chunks r and 2R-1-r as its Q rows (state rows: the two chunks one
// after the other) and folds every chunk's KV, one call per (Q chunk, KV
// chunk) pair, with global positions (fully masked pairs do nothing).
static void test_zigzag(const Seq &s, int R) {
  char sh[96], tag[32];
  snprintf(tag, sizeof tag, "_R%d", R);
  shape_str(sh, sizeof sh, s, tag);
  auto cut = [&](int i) { return (int)((long long)i * s.S / (2 * R)); };
  for (int r = 0; r < R; r++) {
    int qa = cut(r), na = cut(r + 1) - qa;
    int qb = cut(2 * R - 1 - r), nb = cut(2 * R - r) - qb;
    State st = make_state(na + nb, s.hq, s.d);
    for (int step_i = 0; step_i < 2 * R; step_i++) {
      int c = (2 * r + step_i) % (2 * R);  // any order: the fold is order-free
      int k0 = cut(c), nk = cut(c + 1) - k0;
      CK(step(s, st, qa, na, k0, nk, 0, ATTN_MASK_CAUSAL));
      CK(step(s, st, qb, nb, k0, nk, na, ATTN_MASK_CAUSAL));
    }
    Out out = finalize(st);
    std::vector<int> pos = iota_pos(na, qa), pb = iota_pos(nb, qb);
    pos.insert(pos.end(), pb.begin(), pb.end());
    char name[48];
    snprintf(name, sizeof name, "zigzag_rank%d", r);
    record_err(name, sh, check_vs_ref(s, out, pos, true, 1 / sqrt((double)s.d)));
    free_state(st);
  }
}

// Rows that see no key are untouched bit for bit: a state filled with a
// pattern (finite, not the init values); KV positions [k0, S) against Q
// positions [0, nq): rows before k0 must keep the pattern, the others change.
static void test_untouched(const Seq &s) {
  char sh[96];
  shape_str(sh, sizeof sh, s);
  const int nq = s.S * 7 / 10, k0 = s.S * 6 / 10;
  State st = make_state(nq, s.hq, s.d);
  size_t n = (size_t)nq * s.hq;
  std::vector<float> pm(n, 3.25f), pl(n, 2.5f), pa(n * s.d, 7.125f);
  for (size_t i = 0; i < n; i++) pm[i] = 3.25f + (float)(i % 7);
  auto put = [&] {
    CK(cudaMemcpy(st.st.m, pm.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(st.st.l, pl.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(st.st.acc, pa.data(), n * s.d * 4, cudaMemcpyHostToDevice));
  };
  std::vector<float> m(n), l(n), acc(n * s.d);
  auto get = [&] {
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(m.data(), st.st.m, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(l.data(), st.st.l, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(acc.data(), st.st.acc, n * s.d * 4, cudaMemcpyDeviceToHost));
  };
  put();
  CK(step(s, st, 0, nq, k0, s.S - k0, 0, ATTN_MASK_CAUSAL));
  get();
  long long kept_bad = 0, changed_bad = 0;
  for (int r = 0; r < nq; r++)
    for (int h = 0; h < s.hq; h++) {
      size_t iml = (size_t)h * nq + r;
      bool same = memcmp(&m[iml], &pm[iml], 4) == 0 && memcmp(&l[iml], &pl[iml], 4) == 0 &&
                  memcmp(&acc[((size_t)r * s.hq + h) * s.d], &pa[((size_t)r * s.hq + h) * s.d],
                         (size_t)s.d * 4) == 0;
      if (r < k0 && !same) kept_bad++;
      if (r >= k0 && same) changed_bad++;
    }
  char det[200];
  snprintf(det, sizeof det, "KV [%d,%d) vs Q [0,%d): %lld unseen rows modified, %lld seen rows "
           "unchanged", k0, s.S, nq, kept_bad, changed_bad);
  record("untouched_rows", sh, kept_bad == 0 && changed_bad == 0, det);

  // KV entirely after Q; kv_rows == 0: the whole state unchanged.
  put();
  CK(step(s, st, 0, k0, k0, s.S - k0, 0, ATTN_MASK_CAUSAL));
  CK(step(s, st, 0, nq, 0, 0, 0, ATTN_MASK_CAUSAL));
  get();
  bool same = memcmp(m.data(), pm.data(), n * 4) == 0 && memcmp(l.data(), pl.data(), n * 4) == 0 &&
              memcmp(acc.data(), pa.data(), n * s.d * 4) == 0;
  record("untouched_all", sh, same, same ? "KV after Q and kv_rows=0: state bitwise unchanged"
                                         : "state modified");
  free_state(st);
}

// Rows with m = -inf have seen nothing: their acc and l are not read, so NaN
// there (cudaMemset 0xff) folds exactly like a clean state.
static void test_fresh_rows(const Seq &s) {
  char sh[96];
  shape_str(sh, sizeof sh, s);
  State clean = make_state(s.S, s.hq, s.d), dirty = make_state(s.S, s.hq, s.d);
  size_t n = (size_t)s.S * s.hq;
  CK(cudaMemset(dirty.st.acc, 0xff, n * s.d * 4));
  CK(cudaMemset(dirty.st.l, 0xff, n * 4));
  CK(step(s, clean, 0, s.S, 0, s.S, 0, ATTN_MASK_CAUSAL));
  CK(step(s, dirty, 0, s.S, 0, s.S, 0, ATTN_MASK_CAUSAL));
  CK(cudaDeviceSynchronize());
  std::vector<float> a(n * s.d), b(n * s.d), la(n), lb(n);
  CK(cudaMemcpy(a.data(), clean.st.acc, n * s.d * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(b.data(), dirty.st.acc, n * s.d * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(la.data(), clean.st.l, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(lb.data(), dirty.st.l, n * 4, cudaMemcpyDeviceToHost));
  bool same = memcmp(a.data(), b.data(), n * s.d * 4) == 0 && memcmp(la.data(), lb.data(), n * 4) == 0;
  record("fresh_rows_not_read", sh, same,
         same ? "m=-inf rows with NaN acc/l fold like a clean state" : "state differs");
  free_state(clean), free_state(dirty);
}

// The device entry in a persistent kernel: `grid` CTAs loop over (tile, head)
// items, reusing their shared memory; must equal attn_step bit for bit.
__global__ void __launch_bounds__(ATTN_STEP_THREADS, 1)
    persistent_kernel(attn_step_args a, int tiles) {
  extern __shared__ __align__(128) unsigned char smem[];
  int items = tiles * a.shape.hq;
  for (int w = blockIdx.x; w < items; w += gridDim.x)
    attn_step_tile(a, w / a.shape.hq, w % a.shape.hq, smem);
}
#ifdef ATTN_BENCH_V2
// v2's device entry in the same role (items w -> (w / hq, w % hq)).
struct BenchSched {
  int hq;
  __device__ void map(int w, int *q_tile, int *head) const { *q_tile = w / hq, *head = w % hq; }
};
__global__ void __launch_bounds__(ATTN_V2_THREADS, 1)
    persistent_v2(const __grid_constant__ attn_v2_maps maps, attn_step_args a, int items) {
  extern __shared__ __align__(128) unsigned char smem[];
  if (a.shape.d == 128)
    attn_step_v2_tiles<128>(maps, a, BenchSched{a.shape.hq}, items, smem);
  else
    attn_step_v2_tiles<64>(maps, a, BenchSched{a.shape.hq}, items, smem);
}
#endif

static void test_device_entry(const Seq &s) {
  char sh[96];
  shape_str(sh, sizeof sh, s);
  State x = make_state(s.S, s.hq, s.d), y = make_state(s.S, s.hq, s.d);
  int k0 = s.S / 3;
  CK(step(s, x, 0, s.S, 0, k0, 0, ATTN_MASK_CAUSAL));  // a non-trivial start state
  CK(step(s, y, 0, s.S, 0, k0, 0, ATTN_MASK_CAUSAL));
  CK(step(s, x, 0, s.S, k0, s.S - k0, 0, ATTN_MASK_CAUSAL));
  attn_step_args a{};
  a.shape = {s.hq, s.hkv, s.d, 0.f};
  a.q = s.dq, a.q_rows = s.S, a.q_pos0 = 0;
  a.k = s.dk() + (size_t)k0 * s.hkv * s.d, a.v = s.dv() + (size_t)k0 * s.hkv * s.d;
  a.kv_rows = s.S - k0, a.kv_pos0 = k0, a.mask = ATTN_MASK_CAUSAL, a.state = y.st;
  a.state_row0 = 0;
  CK(attn_step_check(&a));
#ifdef ATTN_BENCH_V2
  attn_v2_maps maps;
  CK(attn_step_v2_maps(&a, &maps));
  size_t smem = attn_step_v2_smem_bytes(s.d);
  CK(cudaFuncSetAttribute(persistent_v2, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  persistent_v2<<<7, ATTN_V2_THREADS, smem>>>(maps, a, attn_step_q_tiles(s.S) * s.hq);
#else
  size_t smem = attn_step_smem_bytes(s.d);
  CK(cudaFuncSetAttribute(persistent_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          (int)smem));
  persistent_kernel<<<7, ATTN_STEP_THREADS, smem>>>(a, attn_step_q_tiles(s.S));
#endif
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  size_t n = (size_t)s.S * s.hq;
  std::vector<float> ax(n * s.d), ay(n * s.d), mx(n), my(n), lx(n), ly(n);
  CK(cudaMemcpy(ax.data(), x.st.acc, n * s.d * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ay.data(), y.st.acc, n * s.d * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(mx.data(), x.st.m, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(my.data(), y.st.m, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(lx.data(), x.st.l, n * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ly.data(), y.st.l, n * 4, cudaMemcpyDeviceToHost));
  bool same = memcmp(ax.data(), ay.data(), n * s.d * 4) == 0 &&
              memcmp(mx.data(), my.data(), n * 4) == 0 && memcmp(lx.data(), ly.data(), n * 4) == 0;
  record("device_entry_bitwise", sh, same,
         same ? "7 persistent CTAs == " BENCH_IMPL : "state differs from " BENCH_IMPL);
  free_state(x), free_state(y);
}

// Bad arguments are refused before any launch (the host-only program in
// tests/cli checks more; this one runs the real call on a real device).
static void test_args(const Seq &s) {
  State st = make_state(s.S, s.hq, s.d);
  attn_step_args a{};
  a.shape = {s.hq, s.hkv, 96, 0.f};
  a.q = s.dq, a.q_rows = s.S, a.k = s.dk(), a.v = s.dv(), a.kv_rows = s.S;
  a.state = st.st;
  cudaError_t e1 = BENCH_STEP(&a, 0);
  a.shape.d = s.d;
  a.state_row0 = 1;  // rows [1, S+1) exceed the state
  cudaError_t e2 = BENCH_STEP(&a, 0);
  bool ok = e1 == cudaErrorInvalidValue && e2 == cudaErrorInvalidValue &&
            cudaGetLastError() == cudaSuccess;
  record("bad_args_refused", "", ok, ok ? "d=96 and state overflow: cudaErrorInvalidValue" : "not refused");
  free_state(st);
}

static int run_tests(bool small) {
  struct Sh { int S, hq, hkv, d; };
  std::vector<Sh> shapes = {{48, 4, 1, 64}, {48, 32, 8, 128}, {1, 4, 1, 128}, {129, 8, 8, 64},
                            {200, 4, 1, 128}};
  if (!small) {
    shapes.push_back({1000, 32, 8, 128});
    shapes.push_back({1000, 8, 8, 64});
    shapes.push_back({1000, 4, 1, 128});
    shapes.push_back({2126, 4, 2, 128});  // 17 Q tiles: v2's launch groups of 2, the last short
  }
  uint64_t seed = 1;
  for (const Sh &x : shapes) {
    Seq s = make_seq(x.S, x.hq, x.hkv, x.d, seed++);
    Out one = test_single(s, ATTN_MASK_CAUSAL, 0.f, "");
    if (x.S >= 48) {
      std::vector<int> cuts = {x.S / 3, x.S / 3 + 1, (int)(x.S * 0.64)};
      test_fold_merge(s, one, cuts);
      test_zigzag(s, 2);
      if (x.S >= 200) test_zigzag(s, 3);
      test_untouched(s);
      test_device_entry(s);
      test_fresh_rows(s);
#ifdef ATTN_BENCH_V2
      test_fused_unseen(s);
#endif
    }
    free_seq(s);
  }
  {
    Seq s = make_seq(small ? 129 : 1000, 4, 1, 64, 77);
    test_single(s, ATTN_MASK_NONE, 0.f, "");
    test_single(s, ATTN_MASK_NONE, 0.05f, "_scale0.05");
    free_seq(s);
  }
  {
    Seq s = make_seq(small ? 48 : 1000, 8, 8, 128, 78, 4.f);  // large scores
    test_single(s, ATTN_MASK_CAUSAL, 0.f, "_qx4");
    test_args(s);
    free_seq(s);
  }
  return g_failures;
}

// ---------------------------------------------------------------------------
// Benchmark.

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

static void run_bench(const std::vector<int> &sizes, int reps, int hkv, attn_mask mask) {
  const int hq = 32, d = 128;
  const bool causal = mask == ATTN_MASK_CAUSAL;
  static bool first = true;  // one JSON list over every call
  for (int S : sizes) {
    Seq s = make_seq(S, hq, hkv, d, 1000 + S);
    State st = make_state(S, hq, d);
    __nv_bfloat16 *o;
    float *lse;
    CK(cudaMalloc(&o, (size_t)S * hq * d * 2));
    CK(cudaMalloc(&lse, (size_t)S * hq * 4));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    // The timings take turns within each run (step alone, init + step +
    // finalize, fused), so that none of them runs on a warmer GPU than the
    // others; 3 warm-up runs.
    auto timed = [&](auto &&work) {
      CK(cudaEventRecord(e0));
      work();
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      return (double)ms;
    };
    std::vector<double> t_step, t_full, t_fused;
#ifdef ATTN_BENCH_V2
    attn_step_args fa = args_for(s, 0, S, 0, S, mask, 0.f);  // attn_fwd_v2: no state
    fa.state.rows = S;
#endif
    for (int it = 0; it < reps + 3; it++) {
      CK(attn_state_init(st.st, hq, d, 0));  // outside the step's timing
      double ms = timed([&] { CK(step(s, st, 0, S, 0, S, 0, mask)); });
      if (it >= 3) t_step.push_back(ms);
      ms = timed([&] {
        CK(attn_state_init(st.st, hq, d, 0));
        CK(step(s, st, 0, S, 0, S, 0, mask));
        CK(attn_finalize(st.st, hq, d, o, lse, 0));
      });
      if (it >= 3) t_full.push_back(ms);
#ifdef ATTN_BENCH_V2
      ms = timed([&] { CK(attn_fwd_v2(&fa, o, lse, 0)); });  // the same O and LSE
      if (it >= 3) t_fused.push_back(ms);
#endif
    }
    // Verify the last timed output (fused when timed, else init + step +
    // finalize) on sampled rows of three heads.
    Out out;
    out.o.resize((size_t)S * hq * d);
    out.lse.resize((size_t)S * hq);
    CK(cudaMemcpy(out.o.data(), o, out.o.size() * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(out.lse.data(), lse, out.lse.size() * 4, cudaMemcpyDeviceToHost));
    std::vector<int> rows = {0, 1, 63, 64, 127, 128, S / 2};
    for (int i = 1; i <= 8; i++) rows.push_back(S - i);
    Rng r(S);
    for (int i = 0; i < 24; i++) rows.push_back((int)(r.next() % S));
    Err e = check_vs_ref(s, out, iota_pos(S), causal, 1 / sqrt((double)d), rows, {0, 5, 31});
    bool ok = err_ok(e);
    if (!ok) g_failures++;
    double flop = (causal ? 2.0 : 4.0) * S * (double)S * hq * d;
    double ms_step = median(t_step), ms_full = median(t_full), ms_fused = median(t_fused);
    printf("BENCH " BENCH_IMPL " (d=128 min blocks/SM %d) %s S=%d hq=%d hkv=%d d=%d: step %.3f ms (%.1f TFLOP/s), "
           "fused %.3f ms (%.1f TFLOP/s), "
           "init+step+finalize %.3f ms (%.1f TFLOP/s), verify %s (rel_l2 %.3g, max_dlse %.3g)\n",
           ATTN_STEP_MIN_BLOCKS_D128, causal ? "causal" : "full", S, hq, hkv, d, ms_step,
           flop / ms_step * 1e-9, ms_fused, ms_fused > 0 ? flop / ms_fused * 1e-9 : 0.0, ms_full,
           flop / ms_full * 1e-9, ok ? "ok" : "FAILED", e.rel_l2, e.worst_lse);
    fflush(stdout);
    fprintf(g_json,
            "%s\n  {\"impl\": \"" BENCH_IMPL "\", \"min_blocks_d128\": %d, \"S\": %d, \"hq\": %d, \"hkv\": %d, \"d\": %d, "
            "\"causal\": %s, \"flop\": %.6g, \"reps\": %d, \"step_median_ms\": %.5f, "
            "\"step_tflops\": %.2f, \"full_median_ms\": %.5f, \"full_tflops\": %.2f, "
            "\"fused_median_ms\": %.5f, \"fused_tflops\": %.2f, \"verified_output\": \"%s\", "
            "\"verified\": %s, \"verify_rows\": %lld, \"verify_rel_l2\": %.4g, "
            "\"verify_max_dlse\": %.4g}",
            first ? "" : ",", ATTN_STEP_MIN_BLOCKS_D128, S, hq, hkv, d, causal ? "true" : "false",
            flop, reps, ms_step, flop / ms_step * 1e-9, ms_full, flop / ms_full * 1e-9, ms_fused,
            ms_fused > 0 ? flop / ms_fused * 1e-9 : 0.0, t_fused.empty() ? "full" : "fused",
            ok ? "true" : "false", e.rows, e.rel_l2, e.worst_lse);
    fflush(g_json);
    first = false;
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(o));
    CK(cudaFree(lse));
    free_state(st);
    free_seq(s);
  }
}

static FILE *open_json(const std::string &dir, const char *file, const char *what) {
  std::string path = dir + "/" + file;
  FILE *f = fopen(path.c_str(), "w");
  if (!f) {
    fprintf(stderr, "cannot write %s: %s\n", path.c_str(), strerror(errno));
    exit(2);
  }
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  fprintf(f, "{\"schema\": 1, \"what\": \"%s\", \"device\": \"%s\", \"sms\": %d, "
          "\"cuda_runtime\": %d, \"cuda_driver\": %d, \"q_tile\": %d, \"kv_tile\": %d, "
          "\"threads\": %d, \"min_blocks_d128\": %d",
          what, p.name, p.multiProcessorCount, rt, drv, ATTN_Q_TILE, ATTN_KV_TILE,
          ATTN_STEP_THREADS, ATTN_STEP_MIN_BLOCKS_D128);
  return f;
}

int main(int argc, char **argv) {
  std::string mode, out;
  bool small = false;
  int reps = 20;
  std::vector<int> sizes = {8192, 16384, 32768};
  std::vector<int> hkvs = {8};
  std::vector<attn_mask> masks = {ATTN_MASK_CAUSAL};
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--mode" && i + 1 < argc) mode = argv[++i];
    else if (a == "--out" && i + 1 < argc) out = argv[++i];
    else if (a == "--small") small = true;
    else if (a == "--reps" && i + 1 < argc) reps = (int)strtol(argv[++i], nullptr, 10);
    else if (a == "--hkv" && i + 1 < argc) {  // "8", "32" or "8,32": KV heads of the bench
      hkvs.clear();
      for (char *p = argv[++i]; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || 32 % v) {
          fprintf(stderr, "--hkv: bad list '%s' (divisors of 32)\n", argv[i]);
          return 2;
        }
        hkvs.push_back((int)v);
        p = *end == ',' ? end + 1 : end;
      }
    } else if (a == "--mask" && i + 1 < argc) {  // causal, none or causal,none
      std::string m = argv[++i];
      masks.clear();
      if (m == "causal" || m == "causal,none") masks.push_back(ATTN_MASK_CAUSAL);
      if (m == "none" || m == "causal,none") masks.push_back(ATTN_MASK_NONE);
      if (masks.empty()) {
        fprintf(stderr, "--mask: '%s' is not causal, none or causal,none\n", m.c_str());
        return 2;
      }
    }
    else if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      for (char *p = argv[++i]; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > (1 << 20)) {
          fprintf(stderr, "--sizes: bad size list '%s'\n", argv[i]);
          return 2;
        }
        sizes.push_back((int)v);
        p = *end == ',' ? end + 1 : end;
      }
    } else {
      fprintf(stderr, "usage: attn_step_bench --mode test|bench|all --out DIR [--small] "
              "[--reps N] [--sizes S1,S2,...] [--hkv 8,32] [--mask causal,none] (unknown argument '%s')\n", argv[i]);
      return 2;
    }
  }
  if ((mode != "test" && mode != "bench" && mode != "all") || out.empty() || reps < 1) {
    fprintf(stderr, "usage: attn_step_bench --mode test|bench|all --out DIR [--small] "
            "[--reps N >= 1] [--sizes S1,S2,...]\n");
    return 2;
  }
  if (mode != "bench") {
    g_json = open_json(out, "attn_step_test.json", BENCH_IMPL " correctness vs fp64");
    fprintf(g_json, ",\n\"checks\": [");
    run_tests(small);
    fprintf(g_json, "\n], \"checks_run\": %d, \"failures\": %d, \"passed\": %s}\n", g_checks,
            g_failures, g_failures ? "false" : "true");
    fclose(g_json);
    printf("tests: %d checks, %d failed\n", g_checks, g_failures);
  }
  if (mode != "test") {
    int before = g_failures;
    g_json = open_json(out, "attn_step_bench.json", BENCH_IMPL " timing");
    fprintf(g_json, ",\n\"results\": [");
    for (attn_mask m : masks)
      for (int hkv : hkvs) run_bench(sizes, reps, hkv, m);
    fprintf(g_json, "\n], \"verify_failures\": %d}\n", g_failures - before);
    fclose(g_json);
  }
  return g_failures ? 3 : 0;
}
