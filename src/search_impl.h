/* search_impl.h - the state evolve.c, propose.c and search.c share
 * (internal). */
#ifndef CUCO_SEARCH_IMPL_H
#define CUCO_SEARCH_IMPL_H

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "db.h"
#include "headline.h"
#include "evolve.h"
#include "launcher.h"
#include "novelty.h"
#include "progid.h"
#include "toolchain.h"
#include "workload.h"

#define SEARCH_MAX_NOTED 8 /* interrupted ids named in the stop message */
#define EVOLVE_REC_STR   4 /* recorded string settings (evolve_resume.c) */

struct llm_pool;
struct llm_record;
struct llm_model;

/* A program the search knows (every row of the run). */
struct member {
  struct db_program p; /* with code */
  int children;
  int has_sig;
  struct novelty_sig sig;
  float *emb; /* embedding of the blocks, or NULL */
  size_t dim;
  char ident[17]; /* what it compiles to (progid.h); "" not computed */
};

struct island {
  int issued;        /* generations handed out */
  int done;          /* generations finished */
  int exploit;       /* phase: 0 explore, 1 exploit */
  int since_improve; /* finished generations without a new island best */
  int64_t best_id;
  char *meta; /* latest meta summary text */
};

struct evolve {
  struct evolve_opts o;
  struct workload wl;
  struct toolchain tc;
  json_t *machine;
  struct db *db;
  pthread_mutex_t mu; /* guards db and everything below */
  struct db_run run;
  struct llm_pool *pool;
  const struct llm_model *model; /* NULL: offline tuner */
  char *seed_code;
  char ext[16];       /* ".cu", ".c": of the seed file */
  double baseline_ms; /* <= 0 unknown */
  struct member **m;  /* pointers stay valid while the table grows */
  size_t nm, capm;
  int use_llm;
  struct island isl[EVOLVE_MAX_ISLANDS];
  int64_t best_id, seed_id;
  struct select_rng rng;
  double t0, deadline;
  int stop;
  char stop_reason[128];
  int64_t *queue; /* unfinished rows to evaluate first (resume) */
  size_t nqueue;
  int nslots;
  int nworkers; /* nslots * (1 + build_ahead): worker i uses slot i % nslots */
  pthread_mutex_t run_mu[EVOLVE_MAX_SLOTS]; /* a slot's GPUs, from verify
                                               to the end of the bench */
  char gpus[EVOLVE_MAX_SLOTS][64];
  struct launcher launcher; /* how each run's ranks start */
  int total;                /* candidates planned: islands * generations */
  int count;                /* candidate rows this session finished */
  int n_ok, n_failed, n_rejected;
  int seq_pos;        /* next entry of o.seq */
  char *confirm_text; /* the confirmation's lines for the summary */
  int n_noisy;        /* measurements repeated because they were noisy */
  char *noise_text;   /* "noise: ..." summary lines of the bar and seed */
  /* LLM calls this session sent, those that succeeded, the last failure */
  int llm_calls, llm_ok;
  int already_done; /* --resume of a run that had finished: nothing run */
  char llm_last_error[200];
  /* candidates recorded "interrupted" this session (the first ids kept
   * for the stop message); --resume evaluates them again */
  int n_interrupted;
  int64_t interrupted_ids[SEARCH_MAX_NOTED];
  struct headline headline; /* the summary's and best.EXT's speedup */
  char resume_note[400];    /* "generation 7 of 20, settings as ..." */
  int session_started;      /* this session made the run "running" */
  int resume_overrides;     /* settings the command line changed */
  int recorded_generations; /* the run's length before an override */
  int argc;                 /* cmd_evolve's words, for evolve_given() */
  char **argv;
  char *rec_str[EVOLVE_REC_STR]; /* recorded strings now in o */
  int nrec_str;
  char llm_unusable[200];      /* why the LLM cannot be used (no key, refused
                                  key): the run stops and fails with it */
  struct progid *pid;          /* identities: what a candidate compiles to */
  int ident_exact, ident_text; /* identities computed each way */
  char ident_why[160];         /* why the last fallback was one */
  double floor_rel; /* the seed against itself: mean |log ratio| ... */
  double floor_lo, floor_hi; /* ... its 95% interval of the ratio */
  int floor_rounds;          /* paired rounds measured (0: none) */
  char *floor_text;          /* its summary line, or NULL */
  int seed_evaluated;        /* this session evaluated the seed */
};

/* search.c */

/* Add a loaded or new row to the member table (takes *p's strings; *p is
 * reset).  Returns the member or NULL on allocation failure. */
struct member *search_add(struct evolve *s, struct db_program *p);
struct member *search_find(struct evolve *s, int64_t id);

/* Evaluate one row (already inserted) on a slot and write the outcome.
 * Called without the lock.  Returns 0 or a fatal error (the evaluation
 * could not be run at all). */
int search_evaluate(struct evolve *s, int64_t id, int slot,
                    struct err *e) WARN_UNUSED;

/* propose.c: run the workers until every island has its generations or
 * a budget ends the run.  Returns 0, or a fatal error. */
int search_run(struct evolve *s, struct err *e) WARN_UNUSED;

/* Insert a copy of program src on island dst (edit kind "migrate"; no
 * evaluation).  With the lock held. */
int search_copy(struct evolve *s, const struct member *src, int dst,
                struct err *e) WARN_UNUSED;

struct eval_opts;
struct eval_result;

/* The noise watch (docs/evolve.md, "Confirmation and noise"): when r, a
 * passing measurement of code under eo, spreads beyond the noise
 * threshold, evaluate it again and keep the steadier of the two in *r
 * (the other is released); r's metrics get "noise_watch" {first_rel,
 * second_rel (-1: the repeat did not pass), kept_rel, threshold} and note
 * the progress text.  Returns
 * 1 when it measured again, else 0.  For candidates, the seed and the bar
 * alike.  Called without the lock. */
int search_noise_watch(struct evolve *s, const struct eval_opts *eo,
                       const char *code, struct eval_result *r, char *note,
                       size_t n);

/* Append a line "noise: ..." (printf-formatted) to the summary's noise
 * lines (lock held, or before the workers start). */
void search_noise_note(struct evolve *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* One progress line for a finished candidate (lock held). */
void search_progress(struct evolve *s, const struct member *m,
                     const char *note);

/* Island k finished a generation whose candidate is m (lock held):
 * island best, stagnation, migration.  Returns 1 when a meta summary is
 * due (call search_meta_summary without the lock). */
int search_generation_done(struct evolve *s, int k, const struct member *m);

/* Write island k's meta summary (statistics; with an LLM, its
 * recommendations too).  Lock NOT held. */
void search_meta_summary(struct evolve *s, int k);

/* The headline (headline.h) of member b: s->headline when the
 * confirmation measured b, else b's search figure, unconfirmed. */
void search_headline(const struct evolve *s, const struct member *b,
                     struct headline *h);

/* Write the run's best program to DIR/best.EXT, its first EVOLVE block
 * headed by a comment line with the run's headline (lock held). */
void search_write_best(struct evolve *s);

/* evolve_resume.c */

/* --resume: take the run's recorded settings (s->run.config_json) into
 * s->o wherever the command line did not give the option; an option
 * that changes one notes "; --generations 30 overrides 20" in
 * s->resume_note, one that changes what the run measured (islands,
 * ranks, vranks, sizes) is ERR_USAGE naming both values.  Before
 * prepare(); s->run is loaded. */
int evolve_recorded(struct evolve *s, struct err *e) WARN_UNUSED;

/* Whether the command line gave --FLAG (main.c passes canonical names). */
int evolve_given(const struct evolve *s, const char *flag);

/* The stop line on stderr: the signal, the candidates recorded as
 * interrupted, and the exact command that continues the run (the
 * command as typed, with --resume). */
void evolve_stop_message(const struct evolve *s);

/* Recompute the run's and islands' bests from the members (resume). */
void search_rebuild(struct evolve *s);

/* The LLM recorder (llm_record_fn): inserts an llm_calls row. */
long long search_record(void *ud, const struct llm_record *rec);

/* "1a2b..." hex XXH64 of code into out[17]. */
void search_hash(const char *code, char out[17]);

/* What code compiles to in this run (progid.h: its directive -D flags,
 * the compiler's macros, --vranks), into out[17].  Lock held (the context
 * is not thread-safe).  PROGID_EXACT or PROGID_TEXT (ERR_NOMEM: out gets
 * the text hash, which keeps every text apart). */
int search_ident(struct evolve *s, const char *code, char out[17]);

/* m's identity, computed once (lock held). */
const char *search_member_ident(struct evolve *s, struct member *m);

/* The program already evaluated, or being evaluated, that compiles to
 * ident (ok; failed past the static checks; pending; running), the
 * earliest; NULL when none (lock held). */
struct member *search_same_program(struct evolve *s, const char *ident);

/* A row answered from the database: status "duplicate" (lock held). */
int search_is_duplicate(const struct member *m);

/* Seconds since the run started in this process / left (<0: no limit). */
double search_time_left(const struct evolve *s);

/* Asynchronous stop request (the SIGINT/SIGTERM/SIGHUP handler sets it,
 * and search_stop_signal to the signal's number; an ended Slurm
 * allocation sets it alone). */
extern volatile int search_interrupted;
extern volatile sig_atomic_t search_stop_signal;

#endif
