/* evolve.h - `cuco evolve`: the multi-island evolutionary search.
 *
 * evolve.c owns the command line, the run setup (database, baseline,
 * seed, resume) and the final summary; propose.c owns the loop
 * (search_run: the workers, islands, selection, proposals, novelty,
 * evaluation slots); search.c the members and their bookkeeping
 * (evaluation, migration, meta summaries, progress, the best program).
 * All three share struct evolve (defined in search_impl.h, internal).
 */
#ifndef CUCO_EVOLVE_H
#define CUCO_EVOLVE_H

#include "err.h"
#include "select.h"

#define EVOLVE_MAX_ISLANDS 16
#define EVOLVE_MAX_SLOTS   16
#define EVOLVE_MAX_WORKERS                                                    \
  (3 * EVOLVE_MAX_SLOTS) /* slots x (1 + build_ahead <= 2) */

/* Options; defaults in evolve_opts_init (docs/evolve.md says why). */
struct evolve_opts {
  const char *workload_dir;
  const char *llm; /* NULL: the configured pool if any, else offline;
                      "none": offline; else a model name of the pool */
  int generations; /* per island */
  int islands;
  const char *out_dir;
  int resume;
  double budget_usd;   /* <= 0: none */
  double time_limit_s; /* <= 0: none */
  int ranks, vranks;
  unsigned long seed;
  int slots; /* evaluation slots; 0 = one per GPU group (runtime) or 1 */
  /* [evolve] build_ahead: workers per slot beyond the first, that check
   * and build their candidate while the slot's GPUs run another's (its
   * runs wait for the slot); -1 = 1 for runtime workloads, 0 freeform */
  int build_ahead;
  /* [evolve] process_per_size: 1 runs every size of a candidate in a
   * process of its own (eval_opts.per_size_process); 0, the default, a
   * stage's sizes in one process */
  int process_per_size;
  const char *sizes;    /* --sizes LIST for every evaluation; NULL = sets */
  const char *launcher; /* --launcher NAME; NULL = [launch] launcher */
  int executor_slurm;   /* [evolve] executor = slurm / --executor slurm:
                           verify and bench as srun steps (launcher.h) */
  /* [evolve] in cuco.ini */
  int migrate_every;       /* generations between migrations (per island) */
  int meta_every;          /* generations between meta summaries */
  int stagnation;          /* finished generations without an island best
                              before explore -> exploit (0 = auto) */
  double explore_fraction; /* fallback switch: fraction of generations */
  double novelty;          /* shingle Jaccard rejection threshold */
  double novelty_embed;    /* cosine threshold with embeddings */
  int novelty_attempts;    /* proposals per generation slot */
  int inspirations;
  struct select_params sel;
  int confirm;            /* contenders re-measured at the end (0: none) */
  int confirm_rounds;     /* interleaved rounds of that confirmation */
  int confirm_max_rounds; /* paired rounds the best and the next may get
                             until their interval separates them */
  int noise_floor_rounds; /* paired rounds of the seed against itself at
                             the start (0: not measured) */
  double noise_threshold; /* relative spread beyond which a measurement
                             is called noisy and repeated */
  /* [evolve] edit_sequence = diff, full, cross: a fixed cycle of edit
   * kinds instead of the phase mix (ablations and replayed tests) */
  int nseq;
  char seq[16][8];
};

struct config;

/* Defaults, then [evolve] of cfg.  ERR_CONFIG naming file:line. */
int evolve_opts_init(struct evolve_opts *o, const struct config *cfg,
                     struct err *e) WARN_UNUSED;

#endif
