// tests/cli/attn_step_emu.cu - runs the attention step's CTA code
// (cuco_attn::step_tile of runtime/attn_step.cuh, the very source the GPU
// runs) on the CPU, so its index math, masks, pipeline barriers and state
// fold are tested without a GPU (t1009).
//
// How: CUCO_ATTN_EMU makes the header's primitives call the functions below.
// A CTA is 256 fibers on one OS thread, switched at barriers:
//   __syncthreads    a 256-party barrier;
//   ldmatrix, mma.sync, shuffles   warp collectives (32-party barriers), each
//     lane's registers built from the PTX ISA fragment layouts (ldmatrix
//     m8n8.x4 [.trans]; mma m16n8k16 A row / B col / C, bf16 -> fp32);
//   cp.async        queued per thread in commit groups; wait_group N lands
//     all but the newest N groups (mode "late": data arrives as late as
//     allowed) or copies land at issue (mode "early").
// Checked on every access: shared-memory bounds; global source bounds (every
// cp.async source lies inside Q or K/V); no read of shared data that is still
// in flight or was written since the last CTA barrier; no async write over
// data read since the last barrier (write-after-read); no barrier
// divergence or deadlock; shared memory starts as NaN.  State buffers carry
// poisoned guard zones that must stay intact.
// Results are compared with fp64 (bench/attn_step_ref.h) and with each other
// (fold == one call, merge, untouched rows bit for bit).
//   attn_step_emu [--quick] [--stop]   prints PASS/FAIL lines and "checks N failed
//   N"; exit 1 on a failure (--stop: at the first), 2 usage
#define CUCO_ATTN_EMU 1
#include <setjmp.h>
#include <ucontext.h>
#if defined(__USE_FORTIFY_LEVEL) && __USE_FORTIFY_LEVEL > 0
// __longjmp_chk refuses a jump to a stack below the current one: from the
// scheduler into a fiber's (heap) stack
#error "build attn_step_emu with -U_FORTIFY_SOURCE: fibers switch with _longjmp"
#endif

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../bench/attn_step_ref.h"
#include "attn_step.cuh"

namespace {

constexpr int kT = ATTN_STEP_THREADS;
int g_fail, g_checks;
std::string g_violation;  // first emulation violation of the current run

void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void violation(const char *fmt, ...) {
  if (!g_violation.empty()) return;
  char b[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  g_violation = b;
}

// ---------------------------------------------------------------------------
// Fibers and barriers.

struct Copy {
  unsigned char *dst;
  const unsigned char *src;
  int bytes;
};
// A fiber starts on its own stack through ucontext (setcontext) and then
// switches with _setjmp/_longjmp: swapcontext saves and restores the signal
// mask, a system call each way at every barrier of 256 fibers (15 s of sys
// time in the 33 s run, issue 27); _setjmp/_longjmp make none.
struct Fiber {
  ucontext_t ctx;  // the start: fiber_main(i) on stack
  jmp_buf jb;      // where it yielded
  bool started = false;
  std::vector<char> stack;
  bool done = false;
  std::vector<std::vector<Copy>> groups;  // committed, oldest first
  std::vector<Copy> open;                 // issued, not committed
};
Fiber g_f[kT];
jmp_buf g_sched;
int g_cur;
bool g_progress;
bool g_early;  // cp.async lands at issue

struct Barrier {
  int parties = 0, count = 0;
  long gen = 0;
};
Barrier g_cta, g_warp[kT / 32];

void yield() {
  if (!_setjmp(g_f[g_cur].jb)) _longjmp(g_sched, 1);
}
void bar_wait(Barrier &b) {
  long g = b.gen;
  g_progress = true;
  if (++b.count == b.parties) {
    b.count = 0;
    b.gen++;
    return;
  }
  while (b.gen == g) yield();
}

// Shared memory and its shadow: per byte, the CTA epoch (barrier generation)
// of the last landed write and of the last read, and whether an async write
// to it is in flight.
unsigned char *g_smem;
size_t g_smem_bytes;
std::vector<long> g_wgen, g_rgen;
std::vector<unsigned char> g_pending;
struct Range {
  const unsigned char *b, *e;
};
std::vector<Range> g_global;  // readable global ranges

size_t smem_off(const void *p, size_t n, const char *what) {
  const unsigned char *c = (const unsigned char *)p;
  if (c < g_smem || c + n > g_smem + g_smem_bytes) {
    violation("%s outside shared memory (offset %td, %zu bytes)", what, c - g_smem, n);
    return (size_t)-1;
  }
  return c - g_smem;
}

void land(const Copy &c) {
  size_t o = smem_off(c.dst, 16, "cp.async landing");
  if (o == (size_t)-1) return;
  for (int i = 0; i < 16; i++) {
    c.dst[i] = i < c.bytes ? c.src[i] : 0;
    g_pending[o + i] = 0;
    g_wgen[o + i] = g_cta.gen;
  }
}

void (*g_body)(int);  // runs the CTA code of fiber i
const attn_step_args *g_args;
int g_tile, g_head, g_d;

void fiber_main(int i) {
  g_body(i);
  g_f[i].done = true;
  g_progress = true;
  _longjmp(g_sched, 1);  // never returns (no uc_link)
}

// Runs fiber i until it yields or ends.  A function of its own, so that the
// scheduler loop's variables live in a frame the jumps never touch.
__attribute__((noinline)) void resume(int i) {
  Fiber &f = g_f[i];
  g_cur = i;
  if (_setjmp(g_sched)) return;
  if (!f.started) {
    f.started = true;
    setcontext(&f.ctx);
  }
  _longjmp(f.jb, 1);
}

template <int D>
void body(int) {
  cuco_attn::step_tile<D>(*g_args, g_tile, g_head, g_smem);
}

// Runs one CTA: 256 fibers until all finished.  False on a deadlock.
bool run_cta(const attn_step_args &a, int q_tile, int head) {
  g_args = &a, g_tile = q_tile, g_head = head, g_d = a.shape.d;
  g_body = a.shape.d == 128 ? body<128> : body<64>;
  memset(g_smem, 0xff, g_smem_bytes);  // bf16 NaN: a read of unwritten smem shows
  std::fill(g_pending.begin(), g_pending.end(), 0);
  g_cta = Barrier{kT, 0, g_cta.gen + 1000};
  std::fill(g_wgen.begin(), g_wgen.end(), g_cta.gen - 1);
  std::fill(g_rgen.begin(), g_rgen.end(), g_cta.gen - 1);
  for (auto &w : g_warp) w = Barrier{32, 0, 0};
  for (int i = 0; i < kT; i++) {
    Fiber &f = g_f[i];
    f.done = false;
    f.started = false;
    f.groups.clear();
    f.open.clear();
    if (f.stack.empty()) f.stack.resize(256 << 10);
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = f.stack.size();
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, (void (*)())fiber_main, 1, i);
  }
  for (;;) {
    bool all_done = true;
    g_progress = false;
    for (int i = 0; i < kT; i++) {
      if (g_f[i].done) continue;
      all_done = false;
      resume(i);
    }
    if (all_done) break;
    if (!g_progress) {
      violation("deadlock: barrier divergence (tile %d head %d)", q_tile, head);
      return false;  // the fibers are abandoned (their stacks are reused)
    }
  }
  for (int i = 0; i < kT; i++)
    if (!g_f[i].groups.empty() || !g_f[i].open.empty())
      violation("thread %d returned with cp.async in flight", i);
  return true;
}

// Per-warp exchange slots for the collectives.
struct Slot {
  const unsigned char *ptr;
  unsigned a[4], b0, b1;
  float c[4], v;
};
Slot g_slot[kT];

int lane() { return g_cur & 31; }
Barrier &wbar() { return g_warp[g_cur >> 5]; }
Slot *wslots() { return g_slot + (g_cur & ~31); }

float lo_bf(unsigned r) { return attn_ref_bf2f((uint16_t)(r & 0xffff)); }
float hi_bf(unsigned r) { return attn_ref_bf2f((uint16_t)(r >> 16)); }

void note_read(const unsigned char *p, int n) {
  size_t o = smem_off(p, n, "ldmatrix row");
  if (o == (size_t)-1) return;
  for (int i = 0; i < n; i++) {
    if (g_pending[o + i]) violation("ldmatrix reads smem offset %zu while a cp.async to it is in flight", o + i);
    else if (g_wgen[o + i] == g_cta.gen)
      violation("ldmatrix reads smem offset %zu written since the last barrier", o + i);
    g_rgen[o + i] = g_cta.gen;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// The primitives the header calls under CUCO_ATTN_EMU.

namespace cuco_attn_emu {
int tid() { return g_cur; }
void sync_cta() { bar_wait(g_cta); }
float shfl_xor(float v, int mask) {
  Slot *s = wslots();
  s[lane()].v = v;
  bar_wait(wbar());
  float r = s[lane() ^ mask].v;
  bar_wait(wbar());
  return r;
}
void cp_async16(void *dst, const void *src, int bytes) {
  size_t o = smem_off(dst, 16, "cp.async destination");
  if (o == (size_t)-1) return;
  if (((uintptr_t)dst & 15) || ((uintptr_t)src & 15)) violation("cp.async not 16-byte aligned");
  if (bytes != 0 && bytes != 16) violation("cp.async of %d bytes", bytes);
  if (bytes) {
    const unsigned char *s = (const unsigned char *)src;
    bool in = false;
    for (const Range &r : g_global) in |= s >= r.b && s + bytes <= r.e;
    if (!in) violation("cp.async reads outside Q, K and V");
  }
  for (int i = 0; i < 16; i++) {
    if (g_rgen[o + i] == g_cta.gen)
      violation("cp.async overwrites smem offset %zu read since the last barrier", o + i);
    if (g_pending[o + i]) violation("two cp.async in flight to smem offset %zu", o + i);
    g_pending[o + i] = 1;
  }
  Copy c{(unsigned char *)dst, (const unsigned char *)src, bytes};
  if (g_early) {  // the data lands now but counts as in flight until waited for
    land(c);
    for (int i = 0; i < 16; i++) g_pending[o + i] = 1;
  }
  g_f[g_cur].open.push_back(c);
}
void cp_async_commit() {
  Fiber &f = g_f[g_cur];
  f.groups.push_back(f.open);
  f.open.clear();
}
void cp_async_wait(int n) {
  Fiber &f = g_f[g_cur];
  while ((int)f.groups.size() > n) {
    for (const Copy &c : f.groups.front()) land(c);
    f.groups.erase(f.groups.begin());
  }
}
void ldmatrix_x4(unsigned (&r)[4], const void *p, bool trans) {
  Slot *s = wslots();
  s[lane()].ptr = (const unsigned char *)p;
  if (((uintptr_t)p & 15)) violation("ldmatrix row address not 16-byte aligned");
  note_read((const unsigned char *)p, 16);
  bar_wait(wbar());
  int t = lane();
  for (int m = 0; m < 4; m++) {
    uint16_t e0, e1;
    if (!trans) {  // row t/4, elements 2(t%4), 2(t%4)+1 of matrix m
      const uint16_t *row = (const uint16_t *)s[m * 8 + t / 4].ptr;
      e0 = row[2 * (t % 4)], e1 = row[2 * (t % 4) + 1];
    } else {  // (row 2(t%4), col t/4) and (row 2(t%4)+1, col t/4)
      e0 = ((const uint16_t *)s[m * 8 + 2 * (t % 4)].ptr)[t / 4];
      e1 = ((const uint16_t *)s[m * 8 + 2 * (t % 4) + 1].ptr)[t / 4];
    }
    r[m] = (unsigned)e0 | ((unsigned)e1 << 16);
  }
  bar_wait(wbar());
}
void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  Slot *s = wslots();
  Slot &me = s[lane()];
  for (int i = 0; i < 4; i++) me.a[i] = a[i], me.c[i] = d[i];
  me.b0 = b0, me.b1 = b1;
  bar_wait(wbar());
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; l++) {
    int g = l >> 2, t = l & 3;
    const Slot &x = s[l];
    A[g][2 * t] = lo_bf(x.a[0]), A[g][2 * t + 1] = hi_bf(x.a[0]);
    A[g + 8][2 * t] = lo_bf(x.a[1]), A[g + 8][2 * t + 1] = hi_bf(x.a[1]);
    A[g][2 * t + 8] = lo_bf(x.a[2]), A[g][2 * t + 9] = hi_bf(x.a[2]);
    A[g + 8][2 * t + 8] = lo_bf(x.a[3]), A[g + 8][2 * t + 9] = hi_bf(x.a[3]);
    B[2 * t][g] = lo_bf(x.b0), B[2 * t + 1][g] = hi_bf(x.b0);
    B[2 * t + 8][g] = lo_bf(x.b1), B[2 * t + 9][g] = hi_bf(x.b1);
  }
  int g = lane() >> 2, t = lane() & 3;
  for (int e = 0; e < 4; e++) {
    int row = g + (e >> 1) * 8, col = 2 * t + (e & 1);
    float acc = me.c[e];
    for (int k = 0; k < 16; k++) acc += A[row][k] * B[k][col];
    d[e] = acc;
  }
  bar_wait(wbar());
}
}  // namespace cuco_attn_emu

// ---------------------------------------------------------------------------
// Tests.

namespace {

// A buffer with poisoned guard zones on both sides.
template <class T>
struct Guarded {
  static constexpr size_t kG = 1024;
  std::vector<T> v;
  size_t n;
  explicit Guarded(size_t n_, T fill = T()) : v(n_ + 2 * kG), n(n_) {
    for (size_t i = 0; i < kG; i++) v[i] = v[kG + n + i] = poison();
    for (size_t i = 0; i < n; i++) v[kG + i] = fill;
  }
  static T poison() {
    T x;
    memset(&x, 0x5a, sizeof x);
    return x;
  }
  T *p() { return v.data() + kG; }
  T &operator[](size_t i) { return v[kG + i]; }
  bool guards_ok() const {
    T x = poison();
    for (size_t i = 0; i < kG; i++)
      if (memcmp(&v[i], &x, sizeof x) || memcmp(&v[kG + n + i], &x, sizeof x)) return false;
    return true;
  }
};

struct Seq {
  int S, hq, hkv, d;
  Guarded<uint16_t> q, kv;
  Seq(int S_, int hq_, int hkv_, int d_, uint64_t seed, float qs = 1.f)
      : S(S_), hq(hq_), hkv(hkv_), d(d_), q((size_t)S_ * hq_ * d_), kv((size_t)2 * S_ * hkv_ * d_) {
    AttnRng r(seed);
    for (size_t i = 0; i < q.n; i++) q[i] = attn_ref_f2bf(r.normalish() * qs);
    for (size_t i = 0; i < kv.n; i++) kv[i] = attn_ref_f2bf(r.normalish());
  }
  const uint16_t *k() { return kv.p(); }
  const uint16_t *v() { return kv.p() + (size_t)S * hkv * d; }
};

struct State {
  int rows, hq, d;
  Guarded<float> acc, m, l;
  State(int rows_, int hq_, int d_)
      : rows(rows_), hq(hq_), d(d_), acc((size_t)rows_ * hq_ * d_, 0.f),
        m((size_t)rows_ * hq_, -INFINITY), l((size_t)rows_ * hq_, 0.f) {}
  attn_state st() { return attn_state{acc.p(), m.p(), l.p(), rows}; }
  bool guards_ok() const { return acc.guards_ok() && m.guards_ok() && l.guards_ok(); }
};

bool g_stop;  // --stop: exit at the first failure

void check(const char *name, const std::string &shape, bool pass, const std::string &detail) {
  g_checks++;
  if (!pass) g_fail++;
  printf("%s %s %s: %s\n", pass ? "PASS" : "FAIL", name, shape.c_str(), detail.c_str());
  fflush(stdout);
  if (!pass && g_stop) {
    printf("checks %d failed %d (stopped at the first failure)\n", g_checks, g_fail);
    exit(1);
  }
}

// attn_step on the emulator: host validation, then every (tile, head) CTA.
// Returns false (and records a failure) on a violation.
bool emu_step(Seq &s, State &st, int q0, int nq, int k0, int nk, int srow0, attn_mask mask,
              float scale = 0.f) {
  attn_step_args a{};
  a.shape = {s.hq, s.hkv, s.d, scale};
  a.q = (const __nv_bfloat16 *)(s.q.p() + (size_t)q0 * s.hq * s.d);
  a.q_rows = nq, a.q_pos0 = q0;
  a.k = (const __nv_bfloat16 *)(s.k() + (size_t)k0 * s.hkv * s.d);
  a.v = (const __nv_bfloat16 *)(s.v() + (size_t)k0 * s.hkv * s.d);
  a.kv_rows = nk, a.kv_pos0 = k0, a.mask = mask;
  a.state = st.st(), a.state_row0 = srow0;
  if (attn_step_check(&a) != cudaSuccess) {
    check("emu_step_args", "", false, "attn_step_check refused valid arguments");
    return false;
  }
  // cp.async may read only the Q rows and K/V rows of this call.
  g_global.clear();
  g_global.push_back({(const unsigned char *)a.q, (const unsigned char *)(a.q + (size_t)nq * s.hq * s.d)});
  g_global.push_back({(const unsigned char *)a.k, (const unsigned char *)(a.k + (size_t)nk * s.hkv * s.d)});
  g_global.push_back({(const unsigned char *)a.v, (const unsigned char *)(a.v + (size_t)nk * s.hkv * s.d)});
  g_smem_bytes = attn_step_smem_bytes(s.d);
  if (nq == 0 || nk == 0) return true;  // attn_step launches nothing
  for (int t = 0; t < attn_step_q_tiles(nq); t++)
    for (int h = 0; h < s.hq; h++) {
      g_violation.clear();
      bool ok = run_cta(a, t, h);
      if (!ok || !g_violation.empty()) {
        char sh[64];
        snprintf(sh, sizeof sh, "tile %d head %d", t, h);
        check("emulation", sh, false, g_violation);
        return false;
      }
    }
  return true;
}

void emu_merge(State &dst, State &src) {
  for (int r = 0; r < dst.rows; r++)
    for (int h = 0; h < dst.hq; h++) {
      size_t iml = (size_t)h * dst.rows + r, ia = ((size_t)r * dst.hq + h) * dst.d;
      cuco_attn::merge_row(&dst.m[iml], &dst.l[iml], &dst.acc[ia], src.m[iml], src.l[iml],
                           &src.acc[ia], dst.d, 0, 1);
    }
}

struct Out {
  std::vector<uint16_t> o;
  std::vector<float> lse;
};
Out emu_finalize(State &st) {
  Out out;
  out.o.resize((size_t)st.rows * st.hq * st.d);
  out.lse.resize((size_t)st.rows * st.hq);
  for (int r = 0; r < st.rows; r++)
    for (int h = 0; h < st.hq; h++) {
      size_t iml = (size_t)h * st.rows + r, ia = ((size_t)r * st.hq + h) * st.d;
      cuco_attn::finalize_row(st.m[iml], st.l[iml], &st.acc[ia], st.d,
                              (__nv_bfloat16 *)&out.o[ia], &out.lse[iml], 0, 1);
    }
  return out;
}

// O/LSE of state row r (global position pos[r]) against fp64.
std::string vs_ref(Seq &s, const Out &out, const std::vector<int> &pos, bool causal,
                   double scale, bool *pass) {
  double n2 = 0, d2 = 0, worst = 0, wl = 0;
  long long nan = 0;
  std::vector<double> o(s.d);
  long long ld = (long long)s.hkv * s.d;
  for (size_t r = 0; r < pos.size(); r++)
    for (int h = 0; h < s.hq; h++) {
      int kvh = h / (s.hq / s.hkv);
      double lse = attn_ref_row(s.q.p() + ((size_t)pos[r] * s.hq + h) * s.d, s.k() + kvh * s.d,
                                s.v() + kvh * s.d, ld, causal ? pos[r] + 1 : s.S, s.d, scale,
                                o.data());
      double a = 0, b = 0;
      for (int i = 0; i < s.d; i++) {
        double g = attn_ref_bf2f(out.o[(r * s.hq + h) * s.d + i]);
        if (std::isnan(g)) nan++;
        a += (g - o[i]) * (g - o[i]), b += o[i] * o[i];
      }
      double gl = out.lse[(size_t)h * pos.size() + r];
      if (std::isnan(gl)) nan++;
      n2 += a, d2 += b;
      worst = std::max(worst, sqrt(a / std::max(b, 1e-30)));
      wl = std::max(wl, fabs(gl - lse));
    }
  double rel = sqrt(n2 / std::max(d2, 1e-30));
  *pass = nan == 0 && rel <= 1e-2 && worst <= 2e-2 && wl <= 1e-3;
  char b[200];
  snprintf(b, sizeof b, "rel_l2 %.3g worst_row %.3g max_dlse %.3g nan %lld", rel, worst, wl, nan);
  return b;
}

std::vector<int> iota(int n, int first = 0) {
  std::vector<int> p(n);
  for (int i = 0; i < n; i++) p[i] = first + i;
  return p;
}

std::string shape(const Seq &s, const char *extra = "") {
  char b[96];
  snprintf(b, sizeof b, "S%d_hq%d_hkv%d_d%d%s%s", s.S, s.hq, s.hkv, s.d, extra,
           g_early ? "_early" : "_late");
  return b;
}

double rel_between(const Out &x, const Out &y, double *dl) {
  double n2 = 0, d2 = 0;
  *dl = 0;
  for (size_t i = 0; i < x.o.size(); i++) {
    double a = attn_ref_bf2f(x.o[i]), b = attn_ref_bf2f(y.o[i]);
    n2 += (a - b) * (a - b), d2 += b * b;
  }
  for (size_t i = 0; i < x.lse.size(); i++)
    if (!(x.lse[i] == y.lse[i])) *dl = std::max(*dl, (double)fabs(x.lse[i] - y.lse[i]));
  return std::isnan(n2) ? NAN : sqrt(n2 / std::max(d2, 1e-30));
}

// One call, then the KV range folded in chunks, then two halves merged.
void test_seq(int S, int hq, int hkv, int d, attn_mask mask, float scale, bool fold,
              uint64_t seed, float qs = 1.f) {
  Seq s(S, hq, hkv, d, seed, qs);
  double sc = scale > 0 ? scale : 1 / sqrt((double)d);
  bool causal = mask == ATTN_MASK_CAUSAL, pass;
  std::string sh = shape(s, causal ? "_causal" : "_nomask");
  State one(S, hq, d);
  if (!emu_step(s, one, 0, S, 0, S, 0, mask, scale)) return;
  Out o1 = emu_finalize(one);
  std::string det = vs_ref(s, o1, iota(S), causal, sc, &pass);
  check("single_call_vs_fp64", sh, pass && one.guards_ok(), det + (one.guards_ok() ? "" : " GUARD"));
  if (!fold) return;
  int cuts[] = {0, S / 3, S / 3 + 1, S * 2 / 3, S};
  State f(S, hq, d);
  for (int c = 0; c < 4; c++)
    if (!emu_step(s, f, 0, S, cuts[c], cuts[c + 1] - cuts[c], 0, mask, scale)) return;
  Out of = emu_finalize(f);
  double dl, rel = rel_between(of, o1, &dl);
  char b[160];
  snprintf(b, sizeof b, "4 chunks vs one call: rel_l2 %.3g max_dlse %.3g", rel, dl);
  check("fold_vs_one_call", sh, rel <= 2e-3 && dl <= 1e-3 && f.guards_ok(), b);
  for (int order = 0; order < 2; order++) {
    State A(S, hq, d), B(S, hq, d);
    int mid = S / 2;
    if (!emu_step(s, A, 0, S, 0, mid, 0, mask, scale)) return;
    if (!emu_step(s, B, 0, S, mid, S - mid, 0, mask, scale)) return;
    if (order) emu_merge(B, A);
    else emu_merge(A, B);
    Out om = emu_finalize(order ? B : A);
    rel = rel_between(om, o1, &dl);
    snprintf(b, sizeof b, "%s: rel_l2 vs one call %.3g max_dlse %.3g", order ? "B<-A" : "A<-B",
             rel, dl);
    check("merge_vs_one_call", sh, rel <= 2e-3 && dl <= 1e-3, b);
  }
}

// Zigzag: rank r of R holds chunks r and 2R-1-r; every KV chunk folded.
void test_zigzag(int S, int R, int hq, int hkv, int d, uint64_t seed) {
  Seq s(S, hq, hkv, d, seed);
  char tag[16];
  snprintf(tag, sizeof tag, "_R%d", R);
  std::string sh = shape(s, tag);
  auto cut = [&](int i) { return (int)((long long)i * S / (2 * R)); };
  for (int r = 0; r < R; r++) {
    int qa = cut(r), na = cut(r + 1) - qa, qb = cut(2 * R - 1 - r), nb = cut(2 * R - r) - qb;
    State st(na + nb, hq, d);
    for (int c = 2 * R - 1; c >= 0; c--) {  // reverse order: folding is order-free
      int k0 = cut(c), nk = cut(c + 1) - k0;
      if (!emu_step(s, st, qa, na, k0, nk, 0, ATTN_MASK_CAUSAL)) return;
      if (!emu_step(s, st, qb, nb, k0, nk, na, ATTN_MASK_CAUSAL)) return;
    }
    std::vector<int> pos = iota(na, qa), pb = iota(nb, qb);
    pos.insert(pos.end(), pb.begin(), pb.end());
    bool pass;
    std::string det = vs_ref(s, emu_finalize(st), pos, true, 1 / sqrt((double)d), &pass);
    char name[32];
    snprintf(name, sizeof name, "zigzag_rank%d_vs_fp64", r);
    check(name, sh, pass && st.guards_ok(), det);
  }
}

// Rows that see no key keep their state bit for bit.
void test_untouched(int S, int hq, int hkv, int d, uint64_t seed) {
  Seq s(S, hq, hkv, d, seed);
  std::string sh = shape(s);
  int nq = S * 7 / 10, k0 = S * 6 / 10;
  State st(nq, hq, d);
  for (size_t i = 0; i < st.m.n; i++) st.m[i] = 3.25f + (float)(i % 7), st.l[i] = 2.5f;
  for (size_t i = 0; i < st.acc.n; i++) st.acc[i] = 7.125f + (float)(i % 5);
  State before = st;
  if (!emu_step(s, st, 0, nq, k0, S - k0, 0, ATTN_MASK_CAUSAL)) return;
  long long kept_bad = 0, changed_bad = 0;
  for (int r = 0; r < nq; r++)
    for (int h = 0; h < hq; h++) {
      size_t iml = (size_t)h * nq + r, ia = ((size_t)r * hq + h) * d;
      bool same = memcmp(&st.m[iml], &before.m[iml], 4) == 0 &&
                  memcmp(&st.l[iml], &before.l[iml], 4) == 0 &&
                  memcmp(&st.acc[ia], &before.acc[ia], (size_t)d * 4) == 0;
      if (r < k0 && !same) kept_bad++;
      if (r >= k0 && same) changed_bad++;
    }
  char b[160];
  snprintf(b, sizeof b, "%lld unseen rows modified, %lld seen rows unchanged", kept_bad,
           changed_bad);
  check("untouched_rows", sh, kept_bad == 0 && changed_bad == 0 && st.guards_ok(), b);
  State st2 = before;
  if (!emu_step(s, st2, 0, k0, k0, S - k0, 0, ATTN_MASK_CAUSAL)) return;  // KV after Q
  bool same = memcmp(st2.m.p(), before.m.p(), st2.m.n * 4) == 0 &&
              memcmp(st2.acc.p(), before.acc.p(), st2.acc.n * 4) == 0 &&
              memcmp(st2.l.p(), before.l.p(), st2.l.n * 4) == 0;
  check("untouched_all", sh, same, same ? "KV after Q: state bitwise unchanged" : "modified");
}

// A row with m = -inf is "nothing seen": its acc and l are not read, so a
// state whose acc and l hold NaN there folds exactly like a clean one.
void test_fresh_rows(int S, int hq, int hkv, int d, uint64_t seed) {
  Seq s(S, hq, hkv, d, seed);
  State clean(S, hq, d), dirty(S, hq, d);
  for (size_t i = 0; i < dirty.acc.n; i++) dirty.acc[i] = NAN;
  for (size_t i = 0; i < dirty.l.n; i++) dirty.l[i] = NAN;
  if (!emu_step(s, clean, 0, S, 0, S, 0, ATTN_MASK_CAUSAL)) return;
  if (!emu_step(s, dirty, 0, S, 0, S, 0, ATTN_MASK_CAUSAL)) return;
  bool same = memcmp(clean.acc.p(), dirty.acc.p(), clean.acc.n * 4) == 0 &&
              memcmp(clean.l.p(), dirty.l.p(), clean.l.n * 4) == 0 &&
              memcmp(clean.m.p(), dirty.m.p(), clean.m.n * 4) == 0;
  check("fresh_rows_not_read", shape(s), same,
        same ? "m=-inf rows with NaN acc/l fold like a clean state" : "state differs");
}

}  // namespace

int main(int argc, char **argv) {
  bool quick = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--stop")) g_stop = true;
    else {
      fprintf(stderr, "usage: attn_step_emu [--quick] [--stop] (unknown argument '%s')\n", argv[i]);
      return 2;
    }
  }
  g_smem = (unsigned char *)aligned_alloc(128, attn_step_smem_bytes(128));
  size_t nb = attn_step_smem_bytes(128);
  g_wgen.resize(nb), g_rgen.resize(nb), g_pending.resize(nb);
  for (int mode = 0; mode < 2; mode++) {
    g_early = mode == 1;
    // Tails (S not a multiple of 64 or 128), 2 Q tiles, GQA 4/1 and 2/1.
    // (Early landing only changes when data arrives: the pipeline tests.)
    test_seq(48, 4, 1, 64, ATTN_MASK_CAUSAL, 0.f, true, 1);
    test_seq(130, 2, 1, 128, ATTN_MASK_CAUSAL, 0.f, !quick && mode == 0, 2);
    if (mode == 1 || quick) continue;
    test_seq(77, 4, 2, 128, ATTN_MASK_NONE, 0.07f, false, 3, 3.f);  // 2 KV heads
    test_zigzag(200, 2, 2, 1, 64, 4);
    test_untouched(150, 2, 1, 64, 5);
    test_fresh_rows(40, 2, 1, 64, 6);
  }
  printf("checks %d failed %d\n", g_checks, g_fail);
  return g_fail ? 1 : 0;
}
