/* candidate.h - EVOLVE blocks, frozen text and forbidden calls.
 *
 * Mutable code sits between lines holding `// EVOLVE-BLOCK-START` and
 * `// EVOLVE-BLOCK-END` (one or more blocks, balanced, not nested).  The
 * marker lines and everything outside the blocks are frozen: they must be
 * byte-identical to the seed's.  These are the cascade's static checks.
 */
#ifndef CUCO_CANDIDATE_H
#define CUCO_CANDIDATE_H

#include <stddef.h>

#include "err.h"

#define CANDIDATE_MAX_BLOCKS 32
#define CANDIDATE_MAX_BYTES  (512u * 1024u) /* a candidate's source cap */

/* One block: [start, end) are byte offsets of its contents in the code
 * (from just after the START line's newline to the first byte of the END
 * line); start_line/end_line are the 1-based marker line numbers. */
struct candidate_block {
  size_t start, end;
  int start_line, end_line;
};

struct candidate_blocks {
  int n;
  struct candidate_block b[CANDIDATE_MAX_BLOCKS];
};

/* Find the blocks of `code`.  ERR_CHECK for an END without START, a
 * nested START, a START never closed ("line N: ..."), more than
 * CANDIDATE_MAX_BLOCKS.  Zero blocks is not an error here. */
int candidate_blocks(const char *code, struct candidate_blocks *out,
                     struct err *e) WARN_UNUSED;

/* Copy of block i's contents; caller frees.  NULL on bad i or OOM. */
char *candidate_block_text(const char *code, const struct candidate_blocks *bl,
                           int i);

/* Return a copy of `code` with the contents of its n blocks replaced by
 * contents[0..n) (each should end in '\n'; one is added when missing).
 * n must equal the number of blocks (ERR_CHECK otherwise).  Caller frees;
 * NULL with *e set on failure. */
char *candidate_replace_blocks(const char *code, const char *const *contents,
                               int n, struct err *e);

/* Frozen-text check: cand has as many blocks as seed and every byte
 * outside the block contents equals the seed's.  ERR_CHECK naming the
 * first differing line: "frozen text differs from the seed at line N:
 * 'CAND LINE' (seed line M: 'SEED LINE')". */
int candidate_check_frozen(const char *seed, const char *cand,
                           struct err *e) WARN_UNUSED;

/* Forbidden constructs outside comments and string literals: host-side
 * NCCL collectives and group calls (when `device` is set: the candidate
 * must communicate from the device), and always main, process control
 * (system, popen, fork, exec*, exit, abort...), file writes (fopen...),
 * environment edits and a quoted #include inside an EVOLVE block.  ERR_CHECK
 * "line N: forbidden call 'ncclAllGather' (host collective in a device
 * candidate)". */
int candidate_check_forbidden(const char *code, int device,
                              struct err *e) WARN_UNUSED;

/* Names a workload forbids in its candidates (workload.ini `forbid`: the
 * frozen helpers that would hand a candidate the answer, e.g. the host copy
 * of an input it must receive by communicating): any use of one of the N
 * identifiers NAMES inside an EVOLVE block (in the whole code when there is
 * none), outside comments and literals, is ERR_CHECK "line N: forbidden use
 * of 'NAME' (WHY)".  0 when none is used. */
int candidate_check_names(const char *code, const char *const *names, int n,
                          const char *why, struct err *e) WARN_UNUSED;

/* The size cap, NUL bytes and valid markers; then frozen text against
 * seed (when seed != NULL) and forbidden calls.  The first failure is
 * returned (ERR_CHECK or ERR_TOOBIG). */
int candidate_check(const char *seed, const char *cand, int device,
                    struct err *e) WARN_UNUSED;

#endif
