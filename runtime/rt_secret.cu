// runtime/rt_secret.cu - the per-run secret (docs/contracts.md section 4d).
//
// 128 bits handed to every rank by cuco over a pipe (--secret-fd N: read,
// then closed, before wl_setup) or drawn here from getrandom when a binary
// runs by hand. Never on the command line, in the environment or in a file
// the run can read before it ends (RESULT.json records it at the very end,
// for the replay). Everything a candidate must not predict is a PRF
// (SipHash-2-4) keyed by it: the input bits of every (buffer, rank, step),
// the choice of verified timed steps, the perturbations' victim and length.
// Knowing its own inputs (even their 64-bit keys) tells a candidate nothing
// about its peers' or about later steps: the PRF is not invertible.
//
// The vault: the secret and the in_reference flag (which lets the trusted
// reference call rt_input_regen) live in one page that is PROT_NONE except
// while the runtime's own code runs (input generation, reference,
// verification, RESULT.json): a candidate cannot mprotect (its object is
// allow-listed) and reading the page faults; the stack below the runtime's
// frames is scrubbed after every use.
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "rt_internal.cuh"

#define RT_PAGE 4096
struct rt_vault {
  uint64_t k0, k1;
  int in_reference;
};
static unsigned char g_page[RT_PAGE] __attribute__((aligned(RT_PAGE)));
static struct rt_vault *const g_vault = (struct rt_vault *)g_page;
static int g_depth;            // nesting of rt_vault_open (not a secret)
static int g_probe[2] = {-1, -1};
static int g_ready, g_drawn;

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                   \
  do {                                                             \
    v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);       \
    v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                          \
    v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                          \
    v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);       \
  } while (0)

// SipHash-2-4 of N little-endian 64-bit words under key (K0, K1).
uint64_t rt_siphash_words(uint64_t k0, uint64_t k1, const uint64_t *m, int n) {
  uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
  uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
  for (int i = 0; i < n; i++) {
    v3 ^= m[i];
    SIPROUND;
    SIPROUND;
    v0 ^= m[i];
  }
  uint64_t b = (uint64_t)(8 * n) << 56;
  v3 ^= b;
  SIPROUND;
  SIPROUND;
  v0 ^= b;
  v2 ^= 0xff;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

// Overwrite the stack the runtime's secret work used (below our frame).
__attribute__((noinline)) static void scrub_stack(void) {
  volatile unsigned char pad[16384];
  for (size_t i = 0; i < sizeof pad; i++) pad[i] = 0;
}

void rt_vault_open(void) {
  if (g_depth++ == 0) mprotect(g_page, RT_PAGE, PROT_READ | PROT_WRITE);
}

void rt_vault_close(void) {
  if (g_depth > 0 && --g_depth == 0) {
    mprotect(g_page, RT_PAGE, PROT_NONE);
    scrub_stack();
  }
}

// The size of a --plan run (0 for the first and for single-size runs): in
// every PRF, so that the sizes of one process, each counting its steps from
// 1 as a fresh process would, never share an input key, a verified step or a
// perturbation.  Not a secret.
static uint64_t g_round;
void rt_prf_round(unsigned r) { g_round = r; }
uint64_t rt_prf(uint64_t domain, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t m[4] = {domain ^ (g_round << 32), a, b, c};
  rt_vault_open();
  uint64_t h = rt_siphash_words(g_vault->k0, g_vault->k1, m, 4);
  rt_vault_close();
  return h;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int rt_secret_parse(const char *hex, uint64_t *k0, uint64_t *k1) {
  uint64_t w[2] = {0, 0};
  for (int i = 0; i < 32; i++) {
    int v = hexval((unsigned char)hex[i]);
    if (v < 0) return -1;
    w[i / 16] = w[i / 16] << 4 | (uint64_t)v;
  }
  if (hex[32] && hex[32] != '\n') return -1;
  *k0 = w[0];
  *k1 = w[1];
  return 0;
}

int rt_secret_init(int fd) {
  uint64_t k0 = 0, k1 = 0;
  if (pipe2(g_probe, O_CLOEXEC) != 0) {
    rt_errorf("secret: pipe: %s", strerror(errno));
    return -1;
  }
  if (fd >= 0) {
    char text[40];
    size_t got = 0;
    while (got < sizeof text - 1) {
      ssize_t r = read(fd, text + got, sizeof text - 1 - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    text[got] = 0;
    close(fd);
    if (fd == 0) {  // keep descriptor 0 taken (never reused for a file)
      int nul = open("/dev/null", O_RDONLY);
      if (nul > 0) {
        dup2(nul, 0);
        close(nul);
      }
    }
    if (got < 32 || rt_secret_parse(text, &k0, &k1) != 0) {
      rt_errorf("--secret-fd %d: expected 32 hex digits (the per-run secret), got %zu bytes",
                fd, got);
      return -1;
    }
  } else {
    uint64_t w[2];
    if (getrandom(w, sizeof w, 0) != (ssize_t)sizeof w) {
      rt_errorf("secret: getrandom: %s", strerror(errno));
      return -1;
    }
    k0 = w[0];
    k1 = w[1];
    memset(w, 0, sizeof w);
    g_drawn = 1;
  }
  memset(g_page, 0, RT_PAGE);
  g_vault->k0 = k0;
  g_vault->k1 = k1;
  k0 = k1 = 0;
  g_ready = 1;
  g_depth = 1;
  rt_vault_close();  // PROT_NONE from here on
  return 0;
}

int rt_secret_drawn(void) { return g_drawn; }

void rt_secret_hex(char out[33]) {
  rt_vault_open();
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)g_vault->k0,
           (unsigned long long)g_vault->k1);
  rt_vault_close();
}

void rt_set_in_reference(int v) {
  rt_vault_open();
  g_vault->in_reference = v;
  rt_vault_close();
}

// Whether the trusted reference is running. Read through a pipe so that a
// closed vault (a candidate's call) reads as "no" (EFAULT), not a crash.
int rt_in_reference(void) {
  int v = 0;
  if (!g_ready) return 0;
  if (write(g_probe[1], &g_vault->in_reference, sizeof v) != (ssize_t)sizeof v) return 0;
  if (read(g_probe[0], &v, sizeof v) != (ssize_t)sizeof v) return 0;
  return v == 1;
}
