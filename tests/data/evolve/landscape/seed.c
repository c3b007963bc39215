/* seed.c - test fixture for cuco evolve (see workload.ini): the candidate
 * computes a sum of squares; the frozen part checks it and reports a cost
 * that is a known function of the params. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAT_(a, b) a##b
#define CAT(a, b)  CAT_(a, b)
#define ORDER_a    0
#define ORDER_b    1
#define ORDER_c    2

// EVOLVE-BLOCK-START
// CUCO-PARAM order=a
// CUCO-PARAM tile=128
// CUCO-PARAM unroll=1
#ifndef CUCO_PARAM_order
#define CUCO_PARAM_order a
#endif
#ifndef CUCO_PARAM_tile
#define CUCO_PARAM_tile 128
#endif
#ifndef CUCO_PARAM_unroll
#define CUCO_PARAM_unroll 1
#endif

/* The sum of x[i]^2 over i < n. */
static double kernel(const double *x, int n)
{
  double s = 0;
  int i;

  for (i = 0; i < n; i++)
    s += x[i] * x[i];
  return s;
}
// EVOLVE-BLOCK-END

#define ORDER CAT(ORDER_, CUCO_PARAM_order)

/* The known landscape: optimum order=b, tile=32, unroll=4. */
static double cost(void)
{
  return 1.0 + (ORDER == ORDER_b ? 0 : 0.6) +
         0.25 * fabs(log2((double)CUCO_PARAM_tile) - 5) +
         0.2 * fabs(log2((double)CUCO_PARAM_unroll) - 2);
}

int main(int argc, char **argv)
{
  const char *params = "";
  unsigned long seed = 1;
  double *x, ref = 0, got;
  long n = 0;
  int i, ok;

  for (i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--params"))
      params = argv[i + 1];
    else if (!strcmp(argv[i], "--seed"))
      seed = strtoul(argv[i + 1], NULL, 10);
  }
  if (!strncmp(params, "N=", 2))
    n = strtol(params + 2, NULL, 10);
  if (n < 1 || n > 1000000) {
    fprintf(stderr, "usage: --params N=.. --mode verify|bench\n");
    return 2;
  }
  x = malloc(sizeof(*x) * (size_t)n);
  if (!x)
    return 4;
  for (i = 0; i < n; i++) {
    x[i] = (double)((seed * 2654435761u + (unsigned long)i * 40503u) % 1000) /
           100.0;
    ref += x[i] * x[i];
  }
  got = kernel(x, (int)n);
  ok = fabs(got - ref) <= 1e-9 * fabs(ref);
  printf("{\"cost_ms\": %.6f, \"ok\": %s, \"sum\": %.6f}\n", cost(),
         ok ? "true" : "false", got);
  free(x);
  return ok ? 0 : 3;
}
