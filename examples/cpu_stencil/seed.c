/* seed.c - the CPU stencil example's candidate: a 5x5 convolution (float).
 *
 * A freeform cuco workload (see README.md): `cuco eval examples/cpu_stencil`
 * builds this file with gcc and runs it; it prints one JSON metrics line.
 * Only the EVOLVE block may change; the inputs, the timing and the check
 * against a double-precision reference are frozen.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PRAGMA_(x) _Pragma(#x)
#define PRAGMA(x)  PRAGMA_(x)

// EVOLVE-BLOCK-START
// CUCO-PARAM ty=256
// CUCO-PARAM tx=16
// CUCO-PARAM unroll=1
// CUCO-PARAM rows=1
#ifndef CUCO_PARAM_ty
#define CUCO_PARAM_ty 256
#endif
#ifndef CUCO_PARAM_tx
#define CUCO_PARAM_tx 16
#endif
#ifndef CUCO_PARAM_unroll
#define CUCO_PARAM_unroll 1
#endif
#ifndef CUCO_PARAM_rows
#define CUCO_PARAM_rows 1
#endif
#define TY   CUCO_PARAM_ty     /* output rows per tile */
#define TX   CUCO_PARAM_tx     /* output columns per tile */
#define UNR  CUCO_PARAM_unroll /* unroll of the column loop */
#define ROWS CUCO_PARAM_rows   /* output rows computed per pass */

/* out[(H-4) x (W-4)] = the 5x5 filter w applied to in[H x W] (valid
 * region, row-major).  out arrives poisoned.  Tiled TY x TX; each pass
 * over a tile's columns computes ROWS output rows, so each input row
 * loaded serves up to ROWS of them. */
static void stencil(const float *in, float *out, const float *w, int H,
                    int W)
{
  const int OH = H - 4, OW = W - 4;
  int y0, x0, y, x, r, dy, dx;

  for (y0 = 0; y0 < OH; y0 += TY)
    for (x0 = 0; x0 < OW; x0 += TX) {
      int y1 = y0 + TY < OH ? y0 + TY : OH;
      int x1 = x0 + TX < OW ? x0 + TX : OW;
      for (y = y0; y < y1; y += ROWS) {
        int nr = y + ROWS <= y1 ? ROWS : y1 - y;
        if (nr == ROWS) {
          PRAGMA(GCC unroll UNR)
          for (x = x0; x < x1; x++) {
            float acc[ROWS];
            for (r = 0; r < ROWS; r++)
              acc[r] = 0.0f;
            for (dy = 0; dy < ROWS + 4; dy++) {
              const float *row = in + (size_t)(y + dy) * W + x;
              for (dx = 0; dx < 5; dx++)
                for (r = 0; r < ROWS; r++)
                  if (dy - r >= 0 && dy - r < 5)
                    acc[r] += w[(dy - r) * 5 + dx] * row[dx];
            }
            for (r = 0; r < ROWS; r++)
              out[(size_t)(y + r) * OW + x] = acc[r];
          }
        } else {
          for (r = 0; r < nr; r++) /* the tile's last rows, one at a time */
            for (x = x0; x < x1; x++) {
              float s = 0.0f;
              for (dy = 0; dy < 5; dy++)
                for (dx = 0; dx < 5; dx++)
                  s += w[dy * 5 + dx] * in[(size_t)(y + r + dy) * W + x + dx];
              out[(size_t)(y + r) * OW + x] = s;
            }
        }
      }
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
  const char *params = NULL, *mode = "verify";
  unsigned long long seed = 1234;
  double times[5], num = 0, den = 0, rel;
  float *in, *out, w[25];
  long H, W, OH, OW;
  int i, j, k, reps, nan = 0;

  for (i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--params"))
      params = argv[i + 1];
    else if (!strcmp(argv[i], "--mode"))
      mode = argv[i + 1];
    else if (!strcmp(argv[i], "--seed"))
      seed = strtoull(argv[i + 1], NULL, 10);
  }
  H = param(params, "H");
  W = param(params, "W");
  if (H < 5 || W < 5 || H * W > (1L << 26)) {
    fprintf(stderr, "usage: --params H=..,W=.. --mode verify|bench\n");
    return 2;
  }
  OH = H - 4;
  OW = W - 4;
  in = malloc(sizeof(float) * H * W);
  out = malloc(sizeof(float) * OH * OW);
  if (!in || !out)
    return 4;
  rng_state = seed * 2654435761ULL + 88172645463325252ULL;
  for (i = 0; i < 25; i++)
    w[i] = rnd() / 8.0f;
  for (i = 0; i < H * W; i++)
    in[i] = rnd();
  reps = strcmp(mode, "bench") ? 1 : 5;
  for (i = 0; i < reps; i++) {
    double t0;
    for (j = 0; j < OH * OW; j++)
      out[j] = NAN; /* poison: every element must be written */
    t0 = now_ms();
    stencil(in, out, w, (int)H, (int)W);
    times[i] = now_ms() - t0;
  }
  qsort(times, (size_t)reps, sizeof(double), cmp_double);
  /* the output of the last timed call is checked against fp64 */
  for (i = 0; i < OH; i++)
    for (j = 0; j < OW; j++) {
      double s = 0, d;
      for (k = 0; k < 25; k++)
        s += (double)w[k] * in[(size_t)(i + k / 5) * W + j + k % 5];
      d = out[(size_t)i * OW + j] - s;
      if (isnan(out[(size_t)i * OW + j]))
        nan++;
      num += d * d;
      den += s * s;
    }
  rel = den > 0 ? sqrt(num / den) : sqrt(num);
  printf("{\"time_ms\": %.6f, \"ok\": %s, \"rel_l2\": %.3g, \"nan\": %d, "
         "\"H\": %ld, \"W\": %ld}\n",
         times[reps / 2], !nan && rel < 1e-4 ? "true" : "false", rel, nan, H,
         W);
  free(in);
  free(out);
  return !nan && rel < 1e-4 ? 0 : 3;
}
