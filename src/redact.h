/* redact.h - secrets cuco knows, scrubbed from its memory image and
 * replaced by "[redacted]" in every text it stores or shows.
 *
 * The secrets are the values of the variables every configured model names
 * in api_key_env, and of any variable whose name looks secret (*_KEY, *KEY,
 * *TOKEN*, *SECRET*, *PASSWORD*, *PASSWD*, *CREDENTIAL*).  redact_init()
 * copies them into private memory (redact_getenv() hands them out), wipes
 * them from the initial environment block (the bytes /proc/PID/environ
 * shows), unsets them and makes cuco non-dumpable, so a child cannot read
 * them from cuco.  redact_text()/redact_buf() are the last line of defence:
 * the choke points (child output in proc.c, the database's text binds,
 * log lines, files cuco writes from child output) call them.
 *
 * The registry is process-global, like the parsed config it comes from;
 * it is filled once at start-up and only read afterwards (thread-safe).
 */
#ifndef CUCO_REDACT_H
#define CUCO_REDACT_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

struct config;

/* What replaces a secret. */
#define REDACT_MARK "[redacted]"
/* Values shorter than this are not treated as secrets (a TOKEN_LIMIT=4
 * would otherwise redact every "4"). */
#define REDACT_MIN_LEN 8

/* Collect the secrets named by cfg (may be NULL) and by the environment,
 * then scrub them from the environment and set PR_SET_DUMPABLE 0.  Call
 * once, early, before threads start.  ERR_NOMEM. */
int redact_init(const struct config *cfg, struct err *e) WARN_UNUSED;

/* Register one more secret value (copied).  Shorter than REDACT_MIN_LEN:
 * ignored (returns 0).  ERR_NOMEM, ERR_TOOBIG past 64 secrets. */
int redact_add(const char *value) WARN_UNUSED;

/* The value the environment held for name when redact_init() ran (which
 * removed it from the environment), else getenv(name).  Borrowed. */
const char *redact_getenv(const char *name);

/* How many secrets are registered. */
size_t redact_count(void);

/* s with every secret replaced by REDACT_MARK: a malloc'd copy (NULL only
 * on allocation failure, or when s is NULL). */
char *redact_text(const char *s);

/* True when s holds a registered secret. */
int redact_has(const char *s);

/* Replace every secret in b in place.  The result may exceed b's cap by
 * the growth of the marks; no bytes are ever cut.  0, or ERR_NOMEM with b
 * emptied (a secret is never left in place). */
int redact_buf(struct buf *b);

/* Forget every secret (unit tests). */
void redact_reset(void);

#endif
