/* patch.h - applying LLM edits to a candidate, inside its EVOLVE blocks.
 *
 * A candidate holds one or more regions between `// EVOLVE-BLOCK-START`
 * and `// EVOLVE-BLOCK-END` lines; everything else is frozen.  Edits:
 *
 *  - diff: SEARCH/REPLACE blocks with exactly 7-character markers
 *      <<<<<<< SEARCH
 *      old lines
 *      =======
 *      new lines
 *      >>>>>>> REPLACE
 *    matched exactly first, then line-wise ignoring surrounding whitespace
 *    (the replacement is re-indented by the difference); the match must
 *    lie inside one EVOLVE block; an empty SEARCH appends to the last
 *    block.  An unmatched SEARCH is an error quoting it (truncated).
 *  - full: new contents for every block (a fenced code block that either
 *    holds the EVOLVE markers, or, for a one-block candidate, just the
 *    contents).
 *  - cross: block-wise combination of two parents.
 *
 * All input is untrusted: sizes are capped and malformed text is an
 * ERR_PARSE with a one-line message.
 */
#ifndef CUCO_PATCH_H
#define CUCO_PATCH_H

#include <stddef.h>

#include "err.h"

#define PATCH_BLOCK_START "// EVOLVE-BLOCK-START"
#define PATCH_BLOCK_END   "// EVOLVE-BLOCK-END"

#define PATCH_MAX_TEXT  (512 * 1024) /* an LLM answer */
#define PATCH_MAX_CODE  (1024 * 1024)
#define PATCH_MAX_EDITS 64

/* One EVOLVE block: the byte range of its contents (after the START line,
 * up to the start of the END line). */
struct patch_block {
  size_t start, end;
};

/* Find the EVOLVE blocks of code.  Returns the number found (up to max)
 * or ERR_PARSE (unbalanced or nested markers, none at all). */
int patch_blocks(const char *code, struct patch_block *blocks, size_t max,
                 struct err *e) WARN_UNUSED;

struct patch_stats {
  int edits;      /* SEARCH/REPLACE pairs applied */
  int exact;      /* of which matched exactly */
  int whitespace; /* of which matched ignoring whitespace */
};

/* Apply every SEARCH/REPLACE block found in text to code.  *out is a new
 * malloc'd program.  ERR_PARSE: no edit found, a malformed block, or a
 * SEARCH that matches nowhere inside a block (message quotes it). */
int patch_apply_diff(const char *code, const char *text, char **out,
                     struct patch_stats *st, struct err *e) WARN_UNUSED;

/* Replace the contents of the blocks with those found in the LLM text
 * (see above).  *out is malloc'd. ERR_PARSE when no code or a block count
 * that does not match. */
int patch_apply_full(const char *code, const char *text, char **out,
                     struct err *e) WARN_UNUSED;

/* Block-wise crossover: block i from a or b as bit i of mask says (1 = b).
 * With one block, the directive/param lines come from b and the rest from
 * a.  Both parents must have the same number of blocks. */
int patch_crossover(const char *a, const char *b, unsigned long mask,
                    char **out, struct err *e) WARN_UNUSED;

/* The largest fenced code block (``` ... ```) of text, as a malloc'd
 * string; NULL with ERR_PARSE when there is none or it is unterminated. */
char *patch_extract_code(const char *text, struct err *e);

/* The prose before the first fence or SEARCH marker, trimmed and capped
 * at max bytes (the model's stated directives and reasons); malloc'd,
 * "" when none. */
char *patch_extract_rationale(const char *text, size_t max);

/* Replace the line starting with `prefix` (e.g. "// CUCO-DIRECTIVES")
 * inside the first block with `line` (no newline), or insert it after the
 * START line when absent.  *out is malloc'd. */
int patch_set_line(const char *code, const char *prefix, const char *line,
                   char **out, struct err *e) WARN_UNUSED;

#endif
