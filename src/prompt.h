/* prompt.h - what the search asks the LLM.
 *
 * A mutation prompt holds: the task and answer format (directives and
 * why, then the edit), the workload, the directive table (the workload's
 * [space] and [params]), backend notes for the parent's backend (condensed
 * from docs/nccl-device-api.md), the probed hardware (doctor JSON, never
 * hard-coded), the island's latest meta recommendations, the parent
 * (code + score), inspirations (the first with code, the rest as one line
 * each: directives and speedup), and recent failures of the island as
 * negative examples.  Prompts stay small on purpose: full code only for
 * the parent, one inspiration and a crossover's second parent.
 */
#ifndef CUCO_PROMPT_H
#define CUCO_PROMPT_H

#include <jansson.h>
#include <stddef.h>

struct workload;

/* A program as a prompt shows it; every pointer borrowed, may be NULL. */
struct prompt_program {
  long long id;
  const char *code;
  const char *directives; /* directives_json */
  const char *edit_kind, *status, *stage, *error;
  int has_score;
  double median_ms, speedup;
};

enum prompt_edit { PROMPT_DIFF = 0, PROMPT_FULL = 1, PROMPT_CROSS = 2 };

struct prompt_ctx {
  const struct workload *wl;
  const json_t *machine; /* doctor JSON; may be NULL */
  const char *meta;      /* latest recommendations; may be NULL */
  const struct prompt_program *parent, *parent2;
  const struct prompt_program *insp;
  size_t ninsp;
  const struct prompt_program *fails;
  size_t nfails;
  enum prompt_edit edit;
  int variant; /* full rewrites: 0..PROMPT_VARIANTS-1 */
};

#define PROMPT_VARIANTS 5

/* The system prompt (role, rules, answer format); malloc'd or NULL. */
char *prompt_system(const struct prompt_ctx *c);

/* The user message; malloc'd or NULL (allocation failure). */
char *prompt_user(const struct prompt_ctx *c);

/* The backend notes for "lsa" or "gin" ("" for anything else). */
const char *prompt_backend_notes(const char *backend);

/* One paragraph about the machine from doctor JSON: GPU model, count, SMs,
 * memory, links; "unknown machine" when absent.  Writes into out[n]. */
void prompt_machine(const json_t *machine, char *out, size_t n);

/* The directive table of a workload as text (one line per dimension);
 * malloc'd. */
char *prompt_directive_table(const struct workload *wl);

#endif
