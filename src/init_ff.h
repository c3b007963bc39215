/* init_ff.h - `cuco init --from PROGRAM` for an ordinary program (its own
 * main(), not the runtime ABI): a freeform workload around the program as
 * it is (docs/contracts.md, "Freeform workloads").
 *
 * The folder gets:
 *   workload.ini  kind = freeform; [sizes] from the program's command-line
 *                 defaults; [freeform] build (nvcc, the arch and NCCL as
 *                 cuco's toolchain probe found them), run, and the check
 *   baseline.cu   the program as it is (the bar)
 *   seed.cu       the same with its kernels in EVOLVE blocks (what the
 *                 search may change)
 *   cuco_run.sh   runs the program with a [sizes] line as its command line
 *                 and prints the JSON line cuco reads (time, ok)
 *   check.c       a scaffold of cuco's own check of the output: it fails
 *                 with a TODO until written
 *   README.md     what was inferred, the TODO list, the analysis
 */
#ifndef CUCO_INIT_FF_H
#define CUCO_INIT_FF_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

struct analyze_report;
struct initfrom_info;
struct toolchain;
struct allow;

struct init_ff_opts {
  const char *dir;  /* the workload folder (exists, empty of our files) */
  const char *name; /* the workload's name */
  const char *from; /* the program's path, as given */
  const char *src;  /* its text */
  size_t srclen;
  const struct analyze_report *r;
  const struct initfrom_info *info;
  const struct toolchain *tc; /* NULL or tc->nvcc "": nvcc not found */
  const struct allow *allow;  /* runtime/symbols.allow, NULL if not found */
};

/* Write the files above.  What the user must fill in is appended to TODO
 * and what init guessed (to check) to GUESSED, one item a line.  0, or
 * ERR_IO (naming the file), ERR_NOMEM. */
int init_ff_write(const struct init_ff_opts *o, struct buf *todo,
                  struct buf *guessed, struct err *e) WARN_UNUSED;

#endif
