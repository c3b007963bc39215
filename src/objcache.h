/* objcache.h - a content-addressed cache of compiler outputs.
 *
 * One compile is keyed by the compiler's identity (its path and version
 * text), the working directory (unless the caller's paths are all
 * absolute), the exact arguments minus the output path
 * and, where the caller names one, the text of the main source file (so a
 * candidate found again in a fresh work dir is the same compile).  Under
 * that key a manifest lists every file the compile read (nvcc -MD) with
 * the xxhash and size of its text; the entry (the compiler's stdout, stderr
 * and the output file) is found only while every one of them is unchanged.
 *
 *   DIR/m/KEY       manifest: entry name, then "HASH SIZE PATH" per input
 *                   (beside the named source "@S/NAME", under the K-th -I
 *                   folder of a relocated compile "@K/NAME")
 *   DIR/o/ENTRY     "cuco-objcache-entry 1 OUTLEN ERRLEN OBJLEN OBJHASH\n"
 *                   then stdout, stderr, the object
 *   DIR/lock/KEY    flock()ed while one process compiles KEY
 *
 * Everything is written to DIR/tmp and renamed into place; DIR is created
 * with mode 0700.  An entry whose length or hash is wrong (truncated,
 * corrupted) is a miss, removed, and rebuilt by the caller: nothing read
 * from the cache is trusted without its hash.  A hit only saves the
 * compile: the caller judges the object as any other (the allowlist, the
 * link).
 */
#ifndef CUCO_OBJCACHE_H
#define CUCO_OBJCACHE_H

#include <stddef.h>

#include "err.h"

struct buf;

#define OBJCACHE_PATH      4096
#define OBJCACHE_MAX_BASES 8

struct objcache {
  char dir[OBJCACHE_PATH];
  char key[17];
  char src[OBJCACHE_PATH];   /* "" or the source whose text is in the key */
  int relocate;              /* OBJCACHE_RELOCATE applies */
  char bases[OBJCACHE_PATH]; /* its -I folders, NUL after each, */
  size_t base_off[OBJCACHE_MAX_BASES]; /* ... starting here */
  size_t bases_len;
  int nbases;
  int lock_fd;
};

/* objcache_open's flag OBJCACHE_RELOCATE: when every path of the command
 * is absolute (its -I folders and its words that are not options), the
 * working directory is left out of the key, so one compile is found again
 * from any folder (t0503 compiled the runtime once per scaffold folder),
 * and the -I folders are named by their place ("-I@0", "-I@1" in the key,
 * "@K/NAME" for an input under one in the manifest, resolved against this
 * compile's folders): a copy of a workload folder (cuco init's scaffold)
 * finds the compile of the original while every input has the same text.
 * Otherwise, and without the flag, the working directory is in the key.
 * With src given, the word that names it is "SRC=NAME" in the key either
 * way (its text is hashed), and an input beside it "@S/NAME". */
enum { OBJCACHE_RELOCATE = 1 };

/* Compute the key of one compile and create DIR's folders.  kargv (kargc
 * entries) is the command minus its output path; ident names the
 * compiler (path and version); src may be NULL.  0, ERR_IO or ERR_NOMEM. */
int objcache_open(struct objcache *c, const char *dir, const char *ident,
                  const char *const *kargv, int kargc, const char *src,
                  unsigned flags, struct err *e) WARN_UNUSED;

/* Look the compile up.  1: a hit, the object written to out_path (by
 * rename, never half) and the stored stdout/stderr appended to out/err
 * (either may be NULL); 0: a miss (also for a corrupt entry, which is
 * removed); < 0: ERR_IO writing out_path. */
int objcache_get(struct objcache *c, const char *out_path, struct buf *out,
                 struct buf *err, struct err *e) WARN_UNUSED;

/* Store a successful compile: depfile is what the compiler wrote for
 * -MD -MF (every input), obj its output.  0, or ERR_IO/ERR_PARSE/ERR_TOOBIG
 * (nothing stored; the compile itself stands). */
int objcache_put(struct objcache *c, const char *depfile, const char *obj,
                 const char *out, size_t outlen, const char *err,
                 size_t errlen, struct err *e) WARN_UNUSED;

/* Hold KEY's lock (blocking) so that two processes do not compile the
 * same thing at once; call objcache_get again after it.  0 or ERR_IO. */
int objcache_lock(struct objcache *c, struct err *e) WARN_UNUSED;
void objcache_unlock(struct objcache *c);

/* A fresh temporary path in DIR/tmp (for the compiler's -o and -MF). */
void objcache_tmp(const struct objcache *c, const char *suffix, char *out,
                  size_t n);

/* What names a compiler in the key: the resolved path of COMPILER (found
 * on $PATH) and the text its --version prints, appended to id.  0, or -1
 * when it cannot be run. */
int objcache_ident(const char *compiler, struct buf *id);

/* Append "WHAT SECONDS ARGV..." to $CUCO_CC_LOG when it is set (WHAT: hit,
 * miss, fail or uncached): cuco cc and cuco eval's builds log there, so a
 * test run can count every compile it paid for. */
void objcache_log(const char *what, double seconds, int argc,
                  const char *const *argv);

#endif
