/* check.c - the cpu_matmul workload's own check, built and run by cuco
 * ([freeform] check_build, check): it makes the inputs of --seed as the
 * seed does, reads the C a run wrote to --output, and compares it with an
 * fp64 reference.  One JSON line: {"ok": ..., "rel_l2": ..., "nan": ...}.
 * A candidate cannot change it: its verdict, not the program's own, counts
 * (a program can define its own check away). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng_state;

/* the seed's generator, bit for bit */
static float rnd(void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)((rng_state >> 11) % 2001) / 1000.0f - 1.0f;
}

static long param(const char *params, const char *key)
{
  size_t kl = strlen(key);
  for (const char *p = params; p && *p;) {
    if (!strncmp(p, key, kl) && p[kl] == '=')
      return strtol(p + kl + 1, NULL, 10);
    p = strchr(p, ',');
    if (p)
      p++;
  }
  return -1;
}

static int verdict(int ok, double rel, long nan, const char *error)
{
  printf("{\"ok\": %s, \"rel_l2\": %.3g, \"nan\": %ld, \"error\": \"%s\"}\n",
         ok ? "true" : "false", isfinite(rel) ? rel : 1e308, nan, error);
  return 0;
}

int main(int argc, char **argv)
{
  const char *params = NULL, *output = NULL;
  unsigned long long seed = 1234;
  long M, N, K, i, j, k, nan = 0;
  double num = 0, den = 0, rel;

  for (i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--params"))
      params = argv[i + 1];
    else if (!strcmp(argv[i], "--seed"))
      seed = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--output"))
      output = argv[i + 1];
  }
  M = param(params, "M");
  N = param(params, "N");
  K = param(params, "K");
  if (M < 1 || N < 1 || K < 1 || M * N > (1L << 26) || M * K > (1L << 26) ||
      K * N > (1L << 26) || !output) {
    fprintf(stderr, "usage: check --params M=..,N=..,K=.. --seed S --output FILE\n");
    return 2;
  }
  float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N),
        *C = malloc(sizeof(float) * M * N);
  if (!A || !B || !C)
    return 4;
  rng_state = seed * 2654435761ULL + 88172645463325252ULL;
  for (i = 0; i < M * K; i++)
    A[i] = rnd();
  for (i = 0; i < K * N; i++)
    B[i] = rnd();
  FILE *f = fopen(output, "rb");
  size_t got = f ? fread(C, sizeof(float), (size_t)(M * N), f) : 0;
  int extra = f && fgetc(f) != EOF;
  if (f)
    fclose(f);
  if (got != (size_t)(M * N) || extra)
    return verdict(0, INFINITY, 0, "the run's output file does not hold M*N floats");
  for (i = 0; i < M; i++)
    for (j = 0; j < N; j++) {
      double s = 0, d, c = C[i * N + j];
      for (k = 0; k < K; k++)
        s += (double)A[i * K + k] * B[k * N + j];
      if (isnan(c) || isinf(c))
        nan++;
      d = c - s;
      num += d * d;
      den += s * s;
    }
  rel = den > 0 ? sqrt(num / den) : sqrt(num);
  return verdict(!nan && rel < 1e-4, rel, nan, nan ? "NaN or Inf in the output" :
                 rel < 1e-4 ? "" : "rel_l2 over 1e-4");
}
