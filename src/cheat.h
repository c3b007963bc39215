/* cheat.h - the files of a workload's cheat suite (WORKLOAD/cheats/).
 *
 * A cheat is one of:
 *  - NAME.edit: `//` comment lines, its `// CUCO-EXPECT-REJECT: STAGE
 *    words` line first, then SEARCH/REPLACE blocks (blank lines between
 *    them, nothing else) that patch_apply_diff() applies to the seed, the
 *    very call an LLM's diff goes through; so the blocks may touch only
 *    EVOLVE blocks.
 *  - NAME.cu: a whole file, for a cheat that edits frozen text (which the
 *    patch path refuses); it says so in a comment.
 * Either way the cheat's source is its header comment lines followed by
 * the program, the form `cuco eval --write-cheats` writes as NAME.cu.
 */
#ifndef CUCO_CHEAT_H
#define CUCO_CHEAT_H

#include <stddef.h>

#include "err.h"

#define CHEAT_EDIT_EXT  ".edit"
#define CHEAT_WHOLE_EXT ".cu"

/* The length of NAME when FILE (a name, no folder) is NAME.edit or
 * NAME.cu with a non-empty NAME; 0 when it is no cheat file. */
size_t cheat_name_len(const char *file);

/* The whole source of the cheat at PATH whose text is TEXT: a copy of
 * TEXT for a .cu file; for a .edit file its header lines followed by
 * SEED with the blocks applied.  *out is malloc'd.  ERR_PARSE with a
 * one-line "PATH: what was wrong" (no CUCO-EXPECT-REJECT first line, a
 * line outside the blocks, a malformed block, a SEARCH that matches
 * nothing inside an EVOLVE block); ERR_TOOBIG, ERR_NOMEM. */
int cheat_source(const char *path, const char *text, const char *seed,
                 char **out, struct err *e) WARN_UNUSED;

#endif
