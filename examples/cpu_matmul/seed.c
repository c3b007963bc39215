/* seed.c - the CPU matmul example's candidate: C = A * B (float).
 *
 * A freeform cuco workload: `cuco eval examples/cpu_matmul` builds this
 * file with gcc and runs it; it prints one JSON metrics line.  Only the
 * EVOLVE blocks may change; the rest (inputs, timing, the check against a
 * double-precision reference) is frozen, so a faster candidate cannot
 * fake its result.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAT_(a, b) a##b
#define CAT(a, b)  CAT_(a, b)
#define ORDER_ijk  1
#define ORDER_ikj  2
#define ORDER_jki  3

// EVOLVE-BLOCK-START
// CUCO-PARAM order=ijk
// CUCO-PARAM tile=256
// CUCO-PARAM kunroll=1
#ifndef CUCO_PARAM_order
#define CUCO_PARAM_order ijk
#endif
#ifndef CUCO_PARAM_tile
#define CUCO_PARAM_tile 256
#endif
#ifndef CUCO_PARAM_kunroll
#define CUCO_PARAM_kunroll 1
#endif
#define ORDER CAT(ORDER_, CUCO_PARAM_order)
#define TILE  CUCO_PARAM_tile
#define KU    CUCO_PARAM_kunroll

/* C[M x N] = A[M x K] * B[K x N], row-major.  C arrives poisoned.
 * Blocked over i and k by TILE; ORDER picks the loop nest; the ikj nest
 * consumes KU rows of B per pass over a row of C. */
static void matmul(const float *A, const float *B, float *C, int M, int N,
                   int K)
{
  int i0, k0, i, j, k;

  for (i = 0; i < M * N; i++)
    C[i] = 0.0f;
  for (i0 = 0; i0 < M; i0 += TILE)
    for (k0 = 0; k0 < K; k0 += TILE) {
      int i1 = i0 + TILE < M ? i0 + TILE : M;
      int k1 = k0 + TILE < K ? k0 + TILE : K;
#if ORDER == ORDER_ikj
      for (i = i0; i < i1; i++) {
        float *c = C + (size_t)i * N;
        for (k = k0; k + KU <= k1; k += KU) {
#if KU == 1
          const float a0 = A[(size_t)i * K + k], *b0 = B + (size_t)k * N;
          for (j = 0; j < N; j++)
            c[j] += a0 * b0[j];
#elif KU == 2
          const float a0 = A[(size_t)i * K + k], a1 = A[(size_t)i * K + k + 1];
          const float *b0 = B + (size_t)k * N, *b1 = b0 + N;
          for (j = 0; j < N; j++)
            c[j] += a0 * b0[j] + a1 * b1[j];
#else
          const float a0 = A[(size_t)i * K + k], a1 = A[(size_t)i * K + k + 1];
          const float a2 = A[(size_t)i * K + k + 2];
          const float a3 = A[(size_t)i * K + k + 3];
          const float *b0 = B + (size_t)k * N, *b1 = b0 + N, *b2 = b1 + N;
          const float *b3 = b2 + N;
          for (j = 0; j < N; j++)
            c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
#endif
        }
        for (; k < k1; k++) { /* the K % KU tail */
          const float a0 = A[(size_t)i * K + k], *b0 = B + (size_t)k * N;
          for (j = 0; j < N; j++)
            c[j] += a0 * b0[j];
        }
      }
#elif ORDER == ORDER_jki
      for (j = 0; j < N; j++)
        for (k = k0; k < k1; k++) {
          float b = B[(size_t)k * N + j];
          for (i = i0; i < i1; i++)
            C[(size_t)i * N + j] += A[(size_t)i * K + k] * b;
        }
#else
      for (i = i0; i < i1; i++)
        for (j = 0; j < N; j++) {
          float s = 0.0f;
          for (k = k0; k < k1; k++)
            s += A[(size_t)i * K + k] * B[(size_t)k * N + j];
          C[(size_t)i * N + j] += s;
        }
#endif
    }
}
// EVOLVE-BLOCK-END

static unsigned long long rng_state;

static float rnd(void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)((rng_state >> 11) % 2001) / 1000.0f - 1.0f;
}

static double now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return x < y ? -1 : x > y;
}

static long param(const char *params, const char *key)
{
  const char *p = params;
  size_t kl = strlen(key);

  while (p && *p) {
    if (!strncmp(p, key, kl) && p[kl] == '=')
      return strtol(p + kl + 1, NULL, 10);
    p = strchr(p, ',');
    if (p)
      p++;
  }
  return -1;
}

int main(int argc, char **argv)
{
  const char *params = NULL, *mode = "verify", *output = NULL;
  unsigned long long seed = 1234;
  double times[3], num = 0, den = 0, rel;
  long M, N, K;
  float *A, *B, *C;
  int i, j, k, reps, nan = 0;

  for (i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--params"))
      params = argv[i + 1];
    else if (!strcmp(argv[i], "--mode"))
      mode = argv[i + 1];
    else if (!strcmp(argv[i], "--seed"))
      seed = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--output"))
      output = argv[i + 1];
  }
  M = param(params, "M");
  N = param(params, "N");
  K = param(params, "K");
  if (M < 1 || N < 1 || K < 1 || M * N > (1L << 26) || M * K > (1L << 26) ||
      K * N > (1L << 26)) {
    fprintf(stderr, "usage: --params M=..,N=..,K=.. --mode verify|bench\n");
    return 2;
  }
  A = malloc(sizeof(float) * M * K);
  B = malloc(sizeof(float) * K * N);
  C = malloc(sizeof(float) * M * N);
  if (!A || !B || !C)
    return 4;
  rng_state = seed * 2654435761ULL + 88172645463325252ULL;
  for (i = 0; i < M * K; i++)
    A[i] = rnd();
  for (i = 0; i < K * N; i++)
    B[i] = rnd();
  reps = strcmp(mode, "bench") ? 1 : 3;
  for (i = 0; i < reps; i++) {
    double t0;
    for (j = 0; j < M * N; j++)
      C[j] = NAN; /* poison: every element must be written */
    t0 = now_ms();
    matmul(A, B, C, (int)M, (int)N, (int)K);
    times[i] = now_ms() - t0;
  }
  qsort(times, (size_t)reps, sizeof(double), cmp_double);
  /* the output of the last timed call, for the workload's own check
   * (check.c, run by cuco: its verdict, not the one below, decides) */
  if (output) {
    FILE *f = fopen(output, "wb");
    if (!f || fwrite(C, sizeof(float), (size_t)(M * N), f) != (size_t)(M * N)) {
      fprintf(stderr, "cannot write %s\n", output);
      return 4;
    }
    fclose(f);
  }
  /* the output of the last timed call is checked against fp64 */
  for (i = 0; i < M; i++)
    for (j = 0; j < N; j++) {
      double s = 0, d;
      for (k = 0; k < K; k++)
        s += (double)A[(size_t)i * K + k] * B[(size_t)k * N + j];
      d = C[(size_t)i * N + j] - s;
      if (isnan(C[(size_t)i * N + j]))
        nan++;
      num += d * d;
      den += s * s;
    }
  rel = den > 0 ? sqrt(num / den) : sqrt(num);
  printf("{\"time_ms\": %.6f, \"ok\": %s, \"rel_l2\": %.3g, \"nan\": %d, "
         "\"M\": %ld, \"N\": %ld, \"K\": %ld}\n",
         times[reps / 2], !nan && rel < 1e-4 ? "true" : "false", rel, nan, M,
         N, K);
  free(A);
  free(B);
  free(C);
  return !nan && rel < 1e-4 ? 0 : 3;
}
