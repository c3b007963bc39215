// tests/unit/rt_secret_check.cu - CPU test of runtime/rt_secret.cu (no GPU:
// host code only), run by tests/cli/t1203-secret.sh.  MODE:
//   fd HEX  : the secret read from a pipe (closed after), recorded, the vault
//             page unreadable when closed, in_reference only inside it
//   drawn   : no descriptor: drawn from getrandom, recorded as drawn
//   bad     : malformed data on the pipe: refused with a one-line reason
//   sip     : SipHash-2-4 test vector, PRF separation
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rt_internal.cuh"

char rt_last_error[RT_ERR_MAX];
void rt_errorf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rt_last_error, sizeof rt_last_error, fmt, ap);
  va_end(ap);
}

static int fails;
#define CHECK(c, ...)                      \
  do {                                     \
    if (!(c)) {                            \
      printf("FAIL %s: ", #c);             \
      printf(__VA_ARGS__);                 \
      printf("\n");                        \
      fails++;                             \
    }                                      \
  } while (0)

static int pipe_with(const char *text) {
  int p[2];
  if (pipe(p) != 0) return -1;
  if (write(p[1], text, strlen(text)) != (ssize_t)strlen(text)) return -1;
  close(p[1]);
  return p[0];
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  char hex[33];
  if (!strcmp(mode, "fd") && argc > 2) {
    char line[64];
    snprintf(line, sizeof line, "%s\n", argv[2]);
    int fd = pipe_with(line);
    CHECK(rt_secret_init(fd) == 0, "init: %s", rt_last_error);
    CHECK(fcntl(fd, F_GETFD) == -1, "descriptor %d still open", fd);
    CHECK(!rt_secret_drawn(), "recorded as drawn");
    rt_secret_hex(hex);
    CHECK(!strcmp(hex, argv[2]), "recorded %s", hex);
    CHECK(!rt_in_reference(), "in_reference outside the reference");
    rt_vault_open();
    rt_set_in_reference(1);
    CHECK(rt_in_reference() == 1, "in_reference inside the open vault");
    rt_vault_close();
    // Still 1 in the page, but the page is PROT_NONE now: reads as 0.
    CHECK(rt_in_reference() == 0, "closed vault still readable");
    rt_vault_open();
    CHECK(rt_in_reference() == 1, "reopened vault lost the flag");
    rt_set_in_reference(0);
    rt_vault_close();
    uint64_t a = rt_prf(RT_PRF_INPUT, 1, 2, 3);
    CHECK(a == rt_prf(RT_PRF_INPUT, 1, 2, 3), "PRF not deterministic");
    uint64_t k0, k1;
    CHECK(rt_secret_parse(argv[2], &k0, &k1) == 0, "parse");
    uint64_t m[4] = {RT_PRF_INPUT, 1, 2, 3};
    CHECK(a == rt_siphash_words(k0, k1, m, 4), "PRF is not SipHash(secret)");
    printf("prf %016llx\n", (unsigned long long)a);
  } else if (!strcmp(mode, "drawn")) {
    CHECK(rt_secret_init(-1) == 0, "init: %s", rt_last_error);
    CHECK(rt_secret_drawn(), "not recorded as drawn");
    rt_secret_hex(hex);
    CHECK(strlen(hex) == 32 && strspn(hex, "0123456789abcdef") == 32, "hex %s", hex);
    printf("secret %s\n", hex);
  } else if (!strcmp(mode, "bad")) {
    int fd = pipe_with("not-a-secret\n");
    CHECK(rt_secret_init(fd) == -1, "accepted a malformed secret");
    CHECK(strstr(rt_last_error, "--secret-fd") && strstr(rt_last_error, "32 hex digits"),
          "reason: %s", rt_last_error);
    printf("reason %s\n", rt_last_error);
  } else if (!strcmp(mode, "sip")) {
    // Reference vector (Aumasson & Bernstein): key 00..0f, empty message.
    uint64_t k0 = 0x0706050403020100ull, k1 = 0x0f0e0d0c0b0a0908ull;
    CHECK(rt_siphash_words(k0, k1, NULL, 0) == 0x726fdb47dd0e0e31ull, "empty-message vector");
    // 8 bytes 00..07: vector 0x93f5f5799a932462.
    uint64_t m8 = 0x0706050403020100ull;
    CHECK(rt_siphash_words(k0, k1, &m8, 1) == 0x93f5f5799a932462ull, "8-byte vector %016llx",
          (unsigned long long)rt_siphash_words(k0, k1, &m8, 1));
    uint64_t x[4] = {1, 2, 3, 4}, y[4] = {2, 2, 3, 4};
    CHECK(rt_siphash_words(k0, k1, x, 4) != rt_siphash_words(k0, k1, y, 4), "domains collide");
    CHECK(rt_siphash_words(k0, k1, x, 4) != rt_siphash_words(k0 ^ 1, k1, x, 4),
          "key ignored");
  } else {
    printf("usage: %s fd HEX | drawn | bad | sip\n", argv[0]);
    return 2;
  }
  return fails ? 1 : 0;
}
