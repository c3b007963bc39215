/* directive.h - CUCO-DIRECTIVES / CUCO-PARAM lines (docs/contracts.md §3).
 *
 *   // CUCO-DIRECTIVES backend=lsa placement=per_tile sync=per_peer
 *   //                 issuer=warp chunk=512KiB            (one line)
 *   // CUCO-PARAM comm_ctas=8
 *
 * directive_parse() reads them from a candidate's source (only inside the
 * first EVOLVE block when there is one), directive_validate() checks them
 * against the workload's [space] and [params], and the result becomes nvcc
 * -D flags, a JSON object (the DB's directives_json) or rewritten lines.
 */
#ifndef CUCO_DIRECTIVE_H
#define CUCO_DIRECTIVE_H

#include <jansson.h>

#include "err.h"

struct workload;
struct buf;

#define DIRECTIVE_MAX_PARAMS 16
#define DIRECTIVE_MAX_FLAGS  (8 + DIRECTIVE_MAX_PARAMS)

struct directive_param {
  char name[64];
  char value[64];
};

/* Parsed choices.  Empty strings / 0 mean "not given". */
struct directive_set {
  int has_line;        /* a CUCO-DIRECTIVES line was found */
  int line;            /* its 1-based line number, 0 if none */
  char backend[16];    /* lsa | gin */
  char placement[16];  /* deferred | per_tile | split */
  char sync[16];       /* global | per_peer | per_chunk */
  char issuer[16];     /* thread | warp | cta */
  char chunk_text[32]; /* as written, e.g. "512KiB" */
  unsigned long long chunk_bytes;
  int nparams;
  struct directive_param params[DIRECTIVE_MAX_PARAMS];
};

/* nvcc -D flags, one per entry. */
struct directive_flags {
  int n;
  char v[DIRECTIVE_MAX_FLAGS][160];
};

/* Parse the directive and param lines of `code` into *d (zeroed first).
 * Syntax only: unknown keys, k=v without '=', a duplicate line or key, a
 * malformed chunk size are ERR_CHECK with "line N: ... 'TOKEN'". */
int directive_parse(const char *code, struct directive_set *d,
                    struct err *e) WARN_UNUSED;

/* Check *d against w's [space] and [params]: every value allowed, chunk a
 * power of two in 4KiB..64MiB and in the workload's range, every workload
 * param given exactly once (the seed's lines list them all), no unknown
 * param.  A workload with a [space] requires the directive line and all of
 * its dimensions.  ERR_CHECK quoting the offending token. */
int directive_validate(const struct directive_set *d, const struct workload *w,
                       struct err *e) WARN_UNUSED;

/* The -D flags of contracts §3 (CUCO_BACKEND=CUCO_BACKEND_LSA, ...,
 * CUCO_CHUNK_BYTES=524288, CUCO_PARAM_name=value), only for what is set. */
void directive_flags(const struct directive_set *d, struct directive_flags *f);

/* {"backend":"lsa","placement":..,"sync":..,"issuer":..,"chunk":"512KiB",
 *  "chunk_bytes":524288,"params":{"comm_ctas":8}} (numbers as numbers);
 * only what is set.  New reference, NULL on allocation failure. */
json_t *directive_to_json(const struct directive_set *d);

/* Render *d as the two kinds of comment lines (each ending in '\n') into
 * out; the directive line only when has_line. */
int directive_render(const struct directive_set *d,
                     struct buf *out) WARN_UNUSED;

/* Return a copy of `code` whose directive/param lines carry *d's values
 * (the existing lines are replaced in place, keeping their indentation;
 * params the code lacks are added after the last directive line).  For the
 * tuner.  Caller frees; NULL with *e set on failure. */
char *directive_apply(const char *code, const struct directive_set *d,
                      struct err *e);

#endif
