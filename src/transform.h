/* transform.h - `cuco transform`: host-driven baseline -> device-initiated
 * seed, by an LLM loop with static checks, builds and verification.
 *
 * Stage 1 adds the communication infrastructure (symmetric windows, the
 * device communicator, barriers) and keeps the host collectives; stage 2
 * replaces every host collective by device-initiated communication.  Each
 * iteration's candidate goes through static checks, then the eval cascade
 * (build; verification on the small sizes where a GPU exists, else
 * compile-only, said so).  A failure goes to an LLM judge for a diagnosis
 * (not a rewrite) that feeds the next iteration.  The final code gets its
 * EVOLVE blocks (LLM, with a rule-based fallback) and is checked again.
 * Every prompt, response and verdict is written to the work folder.
 */
#ifndef CUCO_TRANSFORM_H
#define CUCO_TRANSFORM_H

#include <stddef.h>

#include "err.h"

struct config;

/* First line of the seed.cu `cuco init` writes; transform replaces such a
 * file by default (and never a real seed unless --out names it). */
#define TRANSFORM_PLACEHOLDER "// CUCO-PLACEHOLDER:"

struct transform_opts {
  const char *workload_dir; /* required */
  const char *llm_name;     /* model name in the pool; NULL = first */
  int max_iters;            /* 0 = [transform] max_iters (default 8) */
  const char *out_path;     /* NULL = WORKLOAD/seed.cu when that is
                               init's placeholder, else WORK/seed.cu */
  const char *work_dir;     /* NULL = WORKLOAD/transform */
  int ranks;                /* verification ranks; 0 = smallest allowed */
  int compile_only;         /* never run, even with a GPU */
  double budget_usd;        /* <= 0: [transform] budget_usd / the pool's */
  const char *db_path;      /* run database: a run row + every LLM call in
                               llm_calls; NULL = files only */
};

struct transform_result {
  int ok;            /* a seed passed every check */
  int iterations;    /* LLM generation iterations used */
  int verified;      /* the seed was verified on a GPU (else compiled) */
  int marked_by_llm; /* EVOLVE blocks from the LLM (else by rule) */
  double cost_usd;   /* spent on LLM calls */
  char seed_path[1024];
  char work_dir[1024];
  char error[512]; /* why it stopped, when !ok */
};

/* Run the loop.  Returns 0 when it ran (r->ok says whether a seed came
 * out) and negative with *e set when it could not start (workload
 * unreadable, no LLM configured, no nvcc, work folder not writable). */
int transform_run(const struct config *cfg, const struct transform_opts *o,
                  struct transform_result *r, struct err *e) WARN_UNUSED;

/* The code of an LLM answer: the longest ``` fenced block (any language
 * tag).  New string (caller frees) or NULL with ERR_LLM "no ``` code
 * block" / ERR_TOOBIG over max bytes. */
char *transform_extract_code(const char *answer, size_t max, struct err *e);

/* True when `marked` equals `orig` once lines holding only an EVOLVE
 * marker are dropped (the marking changed nothing else).  On a difference
 * fills *e with the first differing line. */
int transform_same_but_markers(const char *orig, const char *marked,
                               struct err *e);

/* Drop, in place, the lines of code that are "#define RT_HOST_ONLY" (a
 * comment may follow): a host-driven baseline compiles without NCCL's
 * device API that way (runtime/rt.cuh), and its transformation needs it. */
void transform_drop_host_only(char *code);

/* Rule-based EVOLVE blocks: the CUCO-DIRECTIVES/CUCO-PARAM lines move to
 * the top of block 1, which spans the kernels (first to last __global__
 * definition); block 2 spans wl_step (the launch code).  Overlapping
 * ranges become one block.  New string or NULL with *e set (ERR_PARSE
 * when the code does not tokenize, ERR_CHECK without wl_step). */
char *transform_mark_rules(const char *code, struct err *e);

/* ---- prompts (transform_prompt.c); out is appended to, 0 or its error */
struct buf;
struct workload;

/* The folder holding docs/backend-lsa.md and runtime/runtime.h: $CUCO_ROOT,
 * else the executable's folder, its parent or, installed (make install),
 * its ../share/cuco.  ERR_NOTFOUND if none. */
int transform_find_root(char *out, size_t n, struct err *e) WARN_UNUSED;
/* Role, rules, runtime API, backend and strategy notes, hardware JSON. */
int transform_prompt_system(struct buf *out, const char *root,
                            const char *hardware, struct err *e) WARN_UNUSED;
/* The conservative CUCO-DIRECTIVES line and one CUCO-PARAM line per
 * workload knob (its first allowed value), newline-terminated. */
void transform_default_directives(const struct workload *w, char *line,
                                  size_t n);
/* Stage 1 or 2 task; failed/diagnosis NULL on the first attempt. */
int transform_prompt_stage(struct buf *out, int stage,
                           const struct workload *w, const char *analysis,
                           const char *current, const char *failed,
                           const char *diagnosis);
int transform_prompt_judge(struct buf *out, int stage, const char *code,
                           const char *verdict);
int transform_prompt_mark(struct buf *out, const char *code);

#endif
