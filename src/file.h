/* file.h - whole-file helpers: capped reads, atomic writes, mkdir -p.
 *
 * Every error message names the path ("PATH: why"). */
#ifndef CUCO_FILE_H
#define CUCO_FILE_H

#include <stddef.h>

#include "err.h"

/* Read the whole file at PATH, at most CAP bytes, into a malloc'd,
 * NUL-terminated string the caller frees; *len (may be NULL) gets its
 * length.  NULL with *e set: ERR_IO (cannot open or read), ERR_TOOBIG
 * (over CAP bytes), ERR_NOMEM. */
char *file_read(const char *path, size_t cap, size_t *len,
                struct err *e) WARN_UNUSED;

/* file_read() of a text file: one with a NUL byte is refused (ERR_CHECK),
 * so the result's strlen() is its length. */
char *file_read_text(const char *path, size_t cap, struct err *e) WARN_UNUSED;

/* Replace PATH with the N bytes of DATA: written to a temporary file
 * beside it, then renamed over it, so a failed write or a kill never
 * leaves half a file and a reader sees the old or the new whole.  The
 * temporary file is removed on failure.  0 or ERR_IO. */
int file_write(const char *path, const void *data, size_t n,
               struct err *e) WARN_UNUSED;

/* mkdir -p PATH (mode 0755); existing folders are fine.  0 or ERR_IO. */
int file_mkdirs(const char *path, struct err *e) WARN_UNUSED;

/* file_mkdirs() whose last folder gets MODE (its parents 0755): a private
 * cache folder is 0700. */
int file_mkdirs_mode(const char *path, unsigned mode,
                     struct err *e) WARN_UNUSED;

/* XXH64 of the whole file at PATH into *H.  0, or ERR_IO naming it. */
int file_hash64(const char *path, unsigned long long *h,
                struct err *e) WARN_UNUSED;

/* Remove a directory tree, not following links (best effort). */
void file_rmtree(const char *dir);

#endif
