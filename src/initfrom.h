/* initfrom.h - what `cuco init --from` reads out of an ordinary CUDA
 * program (one with its own main(), not written to the runtime ABI), to
 * wrap it as a freeform workload (docs/contracts.md, "Freeform
 * workloads"):
 *
 * - its command-line sizes: getopt options ("case 'm': m = atoi(optarg)"),
 *   flags compared by name ("!strcmp(argv[i], "--tokens")" followed by
 *   "tokens = atoi(argv[++i])", or "--tokens=N"), and positional arguments
 *   ("argc > 1 ? atoi(argv[1]) : 2048"), each with the default the program
 *   gives it;
 * - the line it prints its time on: a printf format (or a C++ stream
 *   literal) with a number followed by a unit ("%.3f ms/iter");
 * - its own check: the PASS and FAIL words it prints;
 * - the kernels the search may change (for EVOLVE blocks), the libraries it
 *   uses, and the C library functions its host code calls.
 * Everything is a guess from the source text; init lists what it could not
 * find.
 */
#ifndef CUCO_INITFROM_H
#define CUCO_INITFROM_H

#include <stddef.h>

#include "err.h"

struct analyze_report;

#define INITFROM_MAX_ARGS  24
#define INITFROM_MAX_CALLS 64
#define INITFROM_MAX_LIBS  8

/* One command-line argument of the program. */
struct initfrom_arg {
  char name[32]; /* the size key: the variable it sets ("m", "tokens") */
  char flag[48]; /* "-m", "--tokens"; "" for a positional argument */
  int pos;       /* positional: argv index (1-based); 0 for a flag */
  int joined;    /* "--tokens=N" rather than "--tokens N" */
  char def[48];  /* the program's default as written, "" unknown */
  long defval;   /* the default as a positive integer, 0 when it is not */
  int line;      /* where it is parsed */
};

struct initfrom_info {
  struct initfrom_arg args[INITFROM_MAX_ARGS];
  int nargs;
  const char *parse_style; /* "getopt", "flags", "positional", mixed: "" */
  /* the time line: the number right before SUFFIX, times FACTOR, is ms */
  char time_suffix[48];
  double time_factor;
  int time_line; /* 0: none found */
  /* the program's own check: a passing run prints PASS and never FAIL */
  char pass[32], fail[32];
  int check_line; /* 0: none found */
  /* kernels and device functions, for EVOLVE blocks: lines [lo, hi] */
  int kernel_lo[32], kernel_hi[32];
  int nkernels;
  char libs[INITFROM_MAX_LIBS][16]; /* "cublas", "curand", ... */
  int nlibs;
  int uses_mpi;
  int local_includes; /* #include "x.h" */
  /* functions the host code calls that the file does not define: C
   * library calls (getopt, exit) and the CUDA/NCCL API (cudaSetDevice) */
  char calls[INITFROM_MAX_CALLS][48];
  int ncalls;
};

/* Read SRC[0..LEN) (named NAME in messages), with R its analysis, into
 * *INFO.  0, or ERR_PARSE (the tokenizer refused it), ERR_NOMEM. */
int initfrom_infer(const char *name, const char *src, size_t len,
                   const struct analyze_report *r, struct initfrom_info *info,
                   struct err *e) WARN_UNUSED;

#endif
