// tests/cli/attn_step_args.cu - host-only checks of runtime/attn_step.cuh's
// argument validation (built by nvcc, run on a machine WITHOUT a GPU by
// t1001): every bad argument gives cudaErrorInvalidValue before the CUDA
// runtime is touched, good ones pass attn_step_check, and calls with nothing
// to do return cudaSuccess without a launch.  Pointers are fake aligned
// addresses: nothing here may dereference or launch with them, and the
// program refuses to run where a GPU is visible (a launch there would use
// them).  Prints PASS/FAIL lines and "checks N failed N"; exit 1 on a failure.
// Built with -DATTN_ARGS_V2 (sm_90a, t1003) it also holds runtime/
// attn_step_v2.cuh to the same refusals: attn_step_v2 and attn_fwd_v2 (which
// needs no state buffers but its O and LSE), attn_step_v2_available() is
// false without a GPU and attn_step_best then takes v1's checks.
#include <math.h>
#include <stdio.h>

#include <vector>

#include "attn_step.cuh"
#ifdef ATTN_ARGS_V2
#include "attn_step_v2.cuh"
#endif

static int g_n, g_fail;

static void expect(const char *name, cudaError_t got, cudaError_t want) {
  g_n++;
  if (got == want) {
    printf("PASS %s\n", name);
  } else {
    g_fail++;
    printf("FAIL %s: got %d (%s), wanted %d (%s)\n", name, (int)got, cudaGetErrorName(got),
           (int)want, cudaGetErrorName(want));
  }
}
static void expect_true(const char *name, bool v) {
  g_n++;
  if (!v) g_fail++;
  printf("%s %s\n", v ? "PASS" : "FAIL", name);
}

template <class T>
static T *fake(uintptr_t addr) {
  return reinterpret_cast<T *>(addr);
}

// A valid step: 1000 query rows, Hq=32, Hkv=8, D=128, causal, into a state of
// 1000 rows.
static attn_step_args good() {
  attn_step_args a{};
  a.shape = {32, 8, 128, 0.f};
  a.q = fake<const __nv_bfloat16>(0x100000);
  a.q_rows = 1000;
  a.q_pos0 = 0;
  a.k = fake<const __nv_bfloat16>(0x200000);
  a.v = fake<const __nv_bfloat16>(0x300000);
  a.kv_rows = 1000;
  a.kv_pos0 = 0;
  a.mask = ATTN_MASK_CAUSAL;
  a.state = {fake<float>(0x400000), fake<float>(0x500000), fake<float>(0x600000), 1000};
  a.state_row0 = 0;
  return a;
}

// Both the pure check and the call must refuse `a` (and v2's calls; the
// fused one only where the fault is not in the state buffers it ignores).
static void bad(const char *name, const attn_step_args &a, bool fused_too = true) {
  char n[160];
  snprintf(n, sizeof n, "attn_step_check refuses %s", name);
  expect(n, attn_step_check(&a), cudaErrorInvalidValue);
  snprintf(n, sizeof n, "attn_step refuses %s (no launch)", name);
  expect(n, attn_step(&a, 0), cudaErrorInvalidValue);
#ifdef ATTN_ARGS_V2
  snprintf(n, sizeof n, "attn_step_v2 refuses %s (no launch)", name);
  expect(n, attn_step_v2(&a, 0), cudaErrorInvalidValue);
  snprintf(n, sizeof n, "attn_step_best refuses %s (no launch)", name);
  expect(n, attn_step_best(&a, 0), cudaErrorInvalidValue);
  if (fused_too) {
    snprintf(n, sizeof n, "attn_fwd_v2 refuses %s (no launch)", name);
    expect(n, attn_fwd_v2(&a, fake<__nv_bfloat16>(0x900000), fake<float>(0xa00000), 0),
           cudaErrorInvalidValue);
  }
#else
  (void)fused_too;
#endif
}

#ifdef ATTN_ARGS_V2
// The host calls' launch order visits every (Q tile, head) once, and no tile
// of a later group is longer (a larger Q tile) than one of an earlier group.
static void check_order() {
  static const int hqs[] = {1, 3, 32};
  bool ok = true;
  char why[160] = "";
  for (int tiles = 1; tiles <= 300 && ok; tiles++) {
    for (int hq : hqs) {
      const cuco_attn_v2::LongestFirst o{hq, tiles, cuco_attn_v2::group_for(tiles)};
      std::vector<int> seen((size_t)tiles * hq, 0);
      int prev_min = tiles;  // the smallest Q tile of the groups so far
      for (int w = 0; w < tiles * hq && ok; w++) {
        int t = -1, h = -1;
        o.map(w, &t, &h);
        if (t < 0 || t >= tiles || h < 0 || h >= hq || seen[(size_t)t * hq + h]++) {
          snprintf(why, sizeof why, "tiles %d hq %d: item %d -> (tile %d, head %d)", tiles, hq, w, t, h);
          ok = false;
        } else if (w % (o.group * hq) == 0 && w > 0 && t >= prev_min) {
          snprintf(why, sizeof why, "tiles %d hq %d: group at item %d starts at tile %d", tiles, hq, w, t);
          ok = false;
        }
        if (t < prev_min) prev_min = t;
      }
    }
  }
  if (!ok) printf("  %s\n", why);
  expect_true("v2 launch order: every (Q tile, head) once, groups longest first (tiles 1-300)", ok);
  expect_true("v2 launch order: groups of tiles / 8, 1 to 16",
              cuco_attn_v2::group_for(1) == 1 &&
                  cuco_attn_v2::group_for(64) == (8 < cuco_attn_v2::kGroup ? 8 : cuco_attn_v2::kGroup) &&
                  cuco_attn_v2::group_for(4096) == cuco_attn_v2::kGroup);
}
#endif

int main() {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0) {
    printf("SKIP a GPU is visible: this program uses fake pointers and is for GPU-less hosts\n");
    return 0;
  }
  (void)cudaGetLastError();

  attn_step_args a = good();
  expect("a valid causal step passes the check", attn_step_check(&a), cudaSuccess);
  a.shape.d = 64;
  expect("d=64 passes", attn_step_check(&a), cudaSuccess);
  a = good();
  a.shape.hq = 4, a.shape.hkv = 1;
  expect("hq 4 / hkv 1 passes", attn_step_check(&a), cudaSuccess);
  a = good();
  a.mask = ATTN_MASK_NONE, a.shape.scale = 0.05f, a.q_pos0 = -5, a.kv_pos0 = 1LL << 40;
  expect("no mask, own scale, any positions pass", attn_step_check(&a), cudaSuccess);
  a = good();
  a.state.rows = 5000, a.state_row0 = 4000;
  expect("state rows [4000, 5000) of 5000 pass", attn_step_check(&a), cudaSuccess);

  // Nothing to do: success and no launch (no GPU here, so a launch would fail).
  a = good();
  a.q_rows = 0;
  expect("q_rows=0 is a no-op", attn_step(&a, 0), cudaSuccess);
  a = good();
  a.kv_rows = 0;
  expect("kv_rows=0 is a no-op", attn_step(&a, 0), cudaSuccess);

  // Bad shapes.
  a = good(), a.shape.d = 96, bad("d=96", a);
  a = good(), a.shape.d = 0, bad("d=0", a);
  a = good(), a.shape.d = 256, bad("d=256", a);
  a = good(), a.shape.hq = 0, bad("hq=0", a);
  a = good(), a.shape.hkv = 0, bad("hkv=0", a);
  a = good(), a.shape.hkv = 6, bad("hq%hkv != 0 (32/6)", a);
  a = good(), a.shape.hq = -32, bad("hq<0", a);
  a = good(), a.shape.hq = 70000, a.shape.hkv = 1, bad("hq > 65535", a);
  a = good(), a.shape.scale = -1.f, bad("negative scale", a);
  a = good(), a.shape.scale = NAN, bad("NaN scale", a);
  a = good(), a.shape.scale = INFINITY, bad("infinite scale", a);
  a = good(), a.mask = (attn_mask)7, bad("unknown mask", a);
  // Null and misaligned pointers.
  a = good(), a.q = nullptr, bad("null q", a);
  a = good(), a.k = nullptr, bad("null k", a);
  a = good(), a.v = nullptr, bad("null v", a);
  a = good(), a.state.acc = nullptr, bad("null state.acc", a, false);
  a = good(), a.state.m = nullptr, bad("null state.m", a, false);
  a = good(), a.state.l = nullptr, bad("null state.l", a, false);
  a = good(), a.q = fake<const __nv_bfloat16>(0x100002), bad("q not 16-byte aligned", a);
  a = good(), a.k = fake<const __nv_bfloat16>(0x200008), bad("k not 16-byte aligned", a);
  a = good(), a.v = fake<const __nv_bfloat16>(0x300004), bad("v not 16-byte aligned", a);
  a = good(), a.state.acc = fake<float>(0x400004), bad("acc not 8-byte aligned", a, false);
  // Bad row counts.
  a = good(), a.q_rows = -1, bad("q_rows<0", a);
  a = good(), a.kv_rows = -1, bad("kv_rows<0", a);
  a = good(), a.state_row0 = -1, bad("state_row0<0", a);
  a = good(), a.state.rows = -1, bad("state.rows<0", a);
  a = good(), a.state_row0 = 1, bad("state rows past the state", a);
  a = good(), a.state.rows = 999, bad("state smaller than q_rows", a);
  a = good(), a.q_pos0 = 1LL << 62, bad("q position overflow", a);
  a = good(), a.q_rows = 65535 * 128 + 1, a.state.rows = a.q_rows, bad("q_rows past grid.y", a);
  a = good(), a.kv_pos0 = -(1LL << 62), bad("kv position overflow", a);
  expect("attn_step_check(NULL)", attn_step_check(nullptr), cudaErrorInvalidValue);
  expect("attn_step(NULL)", attn_step(nullptr, 0), cudaErrorInvalidValue);

  // State calls.
  attn_state st = good().state, st2 = st;
  st2.acc = fake<float>(0x700000);
  expect("init refuses d=96", attn_state_init(st, 32, 96, 0), cudaErrorInvalidValue);
  expect("init refuses hq=0", attn_state_init(st, 0, 128, 0), cudaErrorInvalidValue);
  attn_state z = st;
  z.m = nullptr;
  expect("init refuses a null m", attn_state_init(z, 32, 128, 0), cudaErrorInvalidValue);
  z = st, z.rows = -3;
  expect("init refuses rows<0", attn_state_init(z, 32, 128, 0), cudaErrorInvalidValue);
  z = st, z.rows = 0;
  expect("init of 0 rows is a no-op", attn_state_init(z, 32, 128, 0), cudaSuccess);
  z = st2, z.rows = 999;
  expect("merge refuses different row counts", attn_state_merge(st, z, 32, 128, 0),
         cudaErrorInvalidValue);
  z = st2, z.l = nullptr;
  expect("merge refuses a null src.l", attn_state_merge(st, z, 32, 128, 0),
         cudaErrorInvalidValue);
  expect("merge refuses d=32", attn_state_merge(st, st2, 32, 32, 0), cudaErrorInvalidValue);
  expect("finalize refuses o and lse both null", attn_finalize(st, 32, 128, nullptr, nullptr, 0),
         cudaErrorInvalidValue);
  expect("finalize refuses a misaligned lse",
         attn_finalize(st, 32, 128, nullptr, fake<float>(0x800002), 0), cudaErrorInvalidValue);
  expect("finalize refuses hq=0",
         attn_finalize(st, 0, 128, fake<__nv_bfloat16>(0x800000), nullptr, 0),
         cudaErrorInvalidValue);

  expect_true("smem bytes d=64 = (128 + 4*64) rows * 64 * 2",
              attn_step_smem_bytes(64) == (size_t)(128 + 256) * 64 * 2);
  expect_true("smem bytes d=128 = 96 KiB", attn_step_smem_bytes(128) == 98304);
  expect_true("smem bytes of a bad d is 0", attn_step_smem_bytes(80) == 0);
  expect_true("q tiles: 0 rows 0, 1 row 1, 128 rows 1, 129 rows 2",
              attn_step_q_tiles(0) == 0 && attn_step_q_tiles(1) == 1 &&
                  attn_step_q_tiles(128) == 1 && attn_step_q_tiles(129) == 2);
#ifdef ATTN_ARGS_V2
  expect_true("attn_step_v2_available() is false without a GPU", !attn_step_v2_available());
  a = good();
  __nv_bfloat16 *fo = fake<__nv_bfloat16>(0x900000);
  float *fl = fake<float>(0xa00000);
  expect("attn_fwd_v2 refuses a null O", attn_fwd_v2(&a, nullptr, fl, 0), cudaErrorInvalidValue);
  expect("attn_fwd_v2 refuses a null LSE", attn_fwd_v2(&a, fo, nullptr, 0), cudaErrorInvalidValue);
  expect("attn_fwd_v2 refuses an O not 16-byte aligned",
         attn_fwd_v2(&a, fake<__nv_bfloat16>(0x900008), fl, 0), cudaErrorInvalidValue);
  expect("attn_fwd_v2 refuses a misaligned LSE",
         attn_fwd_v2(&a, fo, fake<float>(0xa00002), 0), cudaErrorInvalidValue);
  expect("attn_fwd_v2(NULL args)", attn_fwd_v2(nullptr, fo, fl, 0), cudaErrorInvalidValue);
  a.state.rows = 999;  // the outputs' rows are still checked against q_rows
  expect("attn_fwd_v2 refuses outputs smaller than q_rows", attn_fwd_v2(&a, fo, fl, 0),
         cudaErrorInvalidValue);
  a = good(), a.q_rows = 0;
  expect("attn_fwd_v2 takes an LSE aligned to 4 bytes only (a row offset)",
         attn_fwd_v2(&a, fo, fake<float>(0xa00004), 0), cudaSuccess);
  expect("attn_fwd_v2 of 0 rows is a no-op", attn_fwd_v2(&a, fo, fl, 0), cudaSuccess);
  a = good(), a.kv_rows = 0;
  expect("attn_step_v2 with kv_rows=0 is a no-op", attn_step_v2(&a, 0), cudaSuccess);
  expect_true("v2 smem bytes: d=128 = 32 KiB Q + 3 stages x 64 KiB K,V + 1 KiB",
              attn_step_v2_smem_bytes(128) == 32768 + 3 * 65536 + 1024);
  expect_true("v2 smem bytes of a bad d is 0", attn_step_v2_smem_bytes(96) == 0);
  check_order();
#endif
  printf("checks %d failed %d\n", g_n, g_fail);
  return g_fail ? 1 : 0;
}
