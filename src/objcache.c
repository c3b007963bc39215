/* objcache.c - content-addressed compiler output cache; see objcache.h. */
#define _GNU_SOURCE
#include "objcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "buf.h"
#include "file.h"
#include "proc.h"

#define MANIFEST_MAX (4u << 20)    /* 4 MiB of input names */
#define ENTRY_MAX    (1024u << 20) /* 1 GiB: an object is a few MiB */
#define MAGIC_M      "cuco-objcache-manifest 3\n" /* 2: "@S/", 3: "@K/" */
#define MAGIC_O      "cuco-objcache-entry 1"

/* The whole file (NUL after it, at most MAX bytes); NULL when missing,
 * unreadable or over MAX: the callers treat all three as a miss or say
 * which file, so file_read's reason is not kept. */
static char *slurp(const char *path, size_t max, size_t *len)
{
  struct err ignored = {0, ""};

  return file_read(path, max, len, &ignored);
}

/* xxhash and size of a file's text; 0 or -1 when it cannot be read. */
static int hash_file(const char *path, unsigned long long *h,
                     unsigned long long *size)
{
  char chunk[65536];
  XXH64_state_t *st;
  FILE *f = fopen(path, "rb");
  size_t r;

  if (!f)
    return -1;
  st = XXH64_createState();
  if (!st) {
    fclose(f);
    return -1;
  }
  XXH64_reset(st, 0);
  *size = 0;
  while ((r = fread(chunk, 1, sizeof(chunk), f)) > 0) {
    XXH64_update(st, chunk, r);
    *size += r;
  }
  r = (size_t)ferror(f);
  fclose(f);
  *h = XXH64_digest(st);
  XXH64_freeState(st);
  return r ? -1 : 0;
}

void objcache_tmp(const struct objcache *c, const char *suffix, char *out,
                  size_t n)
{
  static unsigned seq;
  unsigned k = __atomic_fetch_add(&seq, 1, __ATOMIC_SEQ_CST);

  snprintf(out, n, "%s/tmp/%s.%ld.%u%s", c->dir, c->key, (long)getpid(), k,
           suffix);
}

/* Write the parts to path through a temporary name and rename(). */
static int write_atomic(const struct objcache *c, const char *path,
                        const void *const *parts, const size_t *lens,
                        int nparts, struct err *e)
{
  char tmp[OBJCACHE_PATH + 64];
  FILE *f;
  int i, bad = 0;

  objcache_tmp(c, ".w", tmp, sizeof(tmp));
  f = fopen(tmp, "wb");
  if (!f)
    return err_set(e, ERR_IO, "%s: %s", tmp, strerror(errno));
  for (i = 0; i < nparts; i++)
    if (lens[i] && fwrite(parts[i], 1, lens[i], f) != lens[i])
      bad = 1;
  if (fclose(f) || bad) {
    unlink(tmp);
    return err_set(e, ERR_IO, "write %s: %s", tmp, strerror(errno));
  }
  if (rename(tmp, path)) {
    int er = errno;
    unlink(tmp);
    return err_set(e, ERR_IO, "rename %s: %s", path, strerror(er));
  }
  return 0;
}

/* Whether the command names every file by an absolute path: its -I
 * folders and its other words that are not options (the output path is
 * not in kargv). */
static int all_absolute(const char *const *kargv, int kargc)
{
  int i;

  for (i = 1; i < kargc; i++) {
    const char *v = kargv[i];
    if (!strncmp(v, "-I", 2) ? v[2] != '/' : v[0] != '-' && v[0] != '/')
      return 0;
  }
  return 1;
}

/* Remember a -I folder (RELOCATE), without a trailing '/': "-I/abs/dir"
 * is "-I@K" in the key, and an input under it "@K/NAME" in the manifest.
 * Its index, or -1 when there is no room (then it stays as written). */
static int add_base(struct objcache *c, const char *dir)
{
  size_t n = strlen(dir);

  while (n > 1 && dir[n - 1] == '/')
    n--;
  if (c->nbases >= OBJCACHE_MAX_BASES ||
      c->bases_len + n + 1 > sizeof(c->bases))
    return -1;
  memcpy(c->bases + c->bases_len, dir, n);
  c->bases[c->bases_len + n] = '\0';
  c->base_off[c->nbases] = c->bases_len;
  c->bases_len += n + 1;
  return c->nbases++;
}

static const char *base_at(const struct objcache *c, int k)
{
  return k >= 0 && k < c->nbases ? c->bases + c->base_off[k] : NULL;
}

int objcache_open(struct objcache *c, const char *dir, const char *ident,
                  const char *const *kargv, int kargc, const char *src,
                  unsigned flags, struct err *e)
{
  static const char *const sub[] = {"m", "o", "tmp", "lock"};
  XXH64_state_t *st;
  char p[OBJCACHE_PATH + 16], cwd[OBJCACHE_PATH], word[OBJCACHE_PATH + 16];
  const char *name = src ? strrchr(src, '/') : NULL;
  size_t i;
  int rc, abs = all_absolute(kargv, kargc);

  memset(c, 0, sizeof(*c));
  c->lock_fd = -1;
  if (strlen(dir) >= sizeof(c->dir) - 16)
    return err_set(e, ERR_IO, "cache path too long: %.80s", dir);
  snprintf(c->dir, sizeof(c->dir), "%s", dir);
  if ((rc = file_mkdirs_mode(dir, 0700, e)))
    return rc;
  for (i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
    snprintf(p, sizeof(p), "%s/%s", dir, sub[i]);
    if ((rc = file_mkdirs_mode(p, 0700, e)))
      return rc;
  }
  c->relocate = (flags & OBJCACHE_RELOCATE) && abs;
  if (c->relocate || !getcwd(cwd, sizeof(cwd)))
    cwd[0] = '\0';
  st = XXH64_createState();
  if (!st)
    return err_set(e, ERR_NOMEM, "out of memory");
  XXH64_reset(st, 0x6f626a63u);
  XXH64_update(st, MAGIC_M, sizeof(MAGIC_M));
  XXH64_update(st, ident, strlen(ident) + 1);
  XXH64_update(st, cwd, strlen(cwd) + 1);
  for (i = 0; i < (size_t)kargc; i++) {
    const char *w = kargv[i];
    int k;
    if (src && !strcmp(w, src)) {
      /* the source by its name: its text is hashed below */
      snprintf(word, sizeof(word), "SRC=%s", name ? name + 1 : src);
      w = word;
    } else if (c->relocate && !strncmp(w, "-I", 2) &&
               (k = add_base(c, w + 2)) >= 0) {
      snprintf(word, sizeof(word), "-I@%d", k);
      w = word;
    }
    XXH64_update(st, w, strlen(w) + 1);
  }
  if (src) {
    unsigned long long h, size;
    if (hash_file(src, &h, &size)) {
      XXH64_freeState(st);
      return err_set(e, ERR_IO, "%s: %s", src, strerror(errno));
    }
    XXH64_update(st, &h, sizeof(h));
    XXH64_update(st, &size, sizeof(size));
    snprintf(c->src, sizeof(c->src), "%s", src);
  }
  snprintf(c->key, sizeof(c->key), "%016llx",
           (unsigned long long)XXH64_digest(st));
  XXH64_freeState(st);
  return 0;
}

/* An input beside the named source is kept in the manifest as "@S/NAME"
 * and looked for beside the source of the lookup: the key holds the
 * source's name and text but not its folder (a candidate is found again
 * in a fresh work dir), so a header next to it must be the one next to
 * the source compiled now, not the one next to the first (two folders
 * with the same k.cu and different local h.cuh are two compiles).
 * SRCDIR_TAG is not a path a compiler writes: the manifest holds absolute
 * or working-folder paths. */
#define SRCDIR_TAG "@S/"

/* The length of the source's folder with its '/', or 0 without a source
 * or a folder. */
static size_t src_dir_len(const struct objcache *c)
{
  const char *sl = c->src[0] ? strrchr(c->src, '/') : NULL;
  return sl ? (size_t)(sl - c->src) + 1 : 0;
}

/* A manifest's path as this compile finds it: "@S/NAME" beside its
 * source, "@K/NAME" under its K-th -I folder, else as written.  -1 when
 * it names a place this compile does not have. */
static int resolve(const struct objcache *c, const char *m, char *out,
                   size_t n)
{
  const char *b;
  char *end;
  long k;

  if (m[0] != '@') {
    snprintf(out, n, "%s", m);
    return 0;
  }
  if (!strncmp(m, SRCDIR_TAG, strlen(SRCDIR_TAG))) {
    size_t dl = src_dir_len(c);
    if (!dl)
      return -1;
    snprintf(out, n, "%.*s%s", (int)dl, c->src, m + strlen(SRCDIR_TAG));
    return 0;
  }
  k = strtol(m + 1, &end, 10);
  if (end == m + 1 || *end != '/' || !(b = base_at(c, (int)k)))
    return -1;
  snprintf(out, n, "%s%s", b, end);
  return 0;
}

/* How the manifest names an input: under the longest -I folder of a
 * relocated compile "@K/NAME", else beside the source "@S/NAME", else as
 * is.  The folder comes first: `make cuda` compiles workloads/W/seed.cu
 * with -Iworkloads/W, where its headers are beside it too, and a candidate
 * in a work dir of its own finds the same headers through -I. */
static void manifest_name(const struct objcache *c, const char *path,
                          char *out, size_t n)
{
  size_t dl = src_dir_len(c), best = 0;
  int k, at = -1;

  for (k = 0; c->relocate && k < c->nbases; k++) {
    const char *b = base_at(c, k);
    size_t bl = strlen(b);
    if (bl > best && !strncmp(path, b, bl) && path[bl] == '/') {
      best = bl;
      at = k;
    }
  }
  if (at >= 0)
    snprintf(out, n, "@%d%s", at, path + best);
  else if (dl && !strncmp(path, c->src, dl))
    snprintf(out, n, SRCDIR_TAG "%s", path + dl);
  else
    snprintf(out, n, "%s", path);
}

/* The entry named by the manifest while every input it lists still has
 * the same text; 0 and name[0] = '\0' otherwise. */
static void current_entry(const struct objcache *c, char *name, size_t n)
{
  char p[OBJCACHE_PATH + 32], *m, *line, *next;
  size_t len;
  int ok = 1;

  name[0] = '\0';
  snprintf(p, sizeof(p), "%s/m/%s", c->dir, c->key);
  m = slurp(p, MANIFEST_MAX, &len);
  if (!m)
    return;
  if (strncmp(m, MAGIC_M, sizeof(MAGIC_M) - 1)) {
    free(m);
    return;
  }
  line = m + sizeof(MAGIC_M) - 1;
  next = strchr(line, '\n');
  if (!next || next - line != 16) {
    free(m);
    return;
  }
  *next = '\0';
  snprintf(name, n, "%s", line);
  for (line = next + 1; ok && *line; line = next) {
    unsigned long long want_h, want_s, h, s;
    int off = 0;
    next = strchr(line, '\n');
    if (!next) {
      ok = 0;
      break;
    }
    *next++ = '\0';
    if (sscanf(line, "%16llx %llu %n", &want_h, &want_s, &off) != 2 || !off) {
      ok = 0;
      break;
    }
    if (resolve(c, line + off, p, sizeof(p)) || hash_file(p, &h, &s) ||
        h != want_h || s != want_s)
      ok = 0;
  }
  free(m);
  if (!ok)
    name[0] = '\0';
}

int objcache_get(struct objcache *c, const char *out_path, struct buf *out,
                 struct buf *err, struct err *e)
{
  char name[32], p[OBJCACHE_PATH + 32];
  unsigned long long outlen, errlen, objlen, objhash;
  char *d;
  size_t len;
  int hdr = 0, rc;

  current_entry(c, name, sizeof(name));
  if (!name[0])
    return 0;
  snprintf(p, sizeof(p), "%s/o/%s", c->dir, name);
  d = slurp(p, ENTRY_MAX, &len);
  if (!d)
    return 0;
  if (sscanf(d, MAGIC_O " %llu %llu %llu %16llx\n%n", &outlen, &errlen,
             &objlen, &objhash, &hdr) != 4 ||
      !hdr || (size_t)hdr + outlen + errlen + objlen != len ||
      XXH64(d + hdr + outlen + errlen, objlen, 0) != objhash) {
    /* truncated or corrupted: not trusted, rebuilt by the caller */
    free(d);
    unlink(p);
    return 0;
  }
  /* the object lands whole or not at all (a temporary beside it) */
  rc = file_write(out_path, d + hdr + outlen + errlen, objlen, e);
  if (rc) {
    free(d);
    return rc;
  }
  if (out)
    (void)buf_append(out, d + hdr, outlen);
  if (err)
    (void)buf_append(err, d + hdr + outlen, errlen);
  free(d);
  return 1;
}

/* Next file name of a make-style dependency list: blanks separate names,
 * "\ " is a blank inside one, a backslash-newline is a blank.  Returns
 * the name's length in out (0 at the end). */
static size_t dep_next(const char **pp, char *out, size_t n)
{
  const char *p = *pp;
  size_t k = 0;

  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' ||
         (*p == '\\' && (p[1] == '\n' || p[1] == '\r')))
    p += *p == '\\' ? 2 : 1;
  while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
    if (*p == '\\' && p[1] == ' ')
      p++;
    else if (*p == '\\' && (p[1] == '\n' || p[1] == '\r'))
      break;
    if (k + 1 < n)
      out[k++] = *p;
    p++;
  }
  out[k] = '\0';
  *pp = p;
  return k;
}

int objcache_put(struct objcache *c, const char *depfile, const char *obj,
                 const char *out, size_t outlen, const char *err,
                 size_t errlen, struct err *e)
{
  struct buf man = BUF_INIT(MANIFEST_MAX);
  char *deps = NULL, *o = NULL, name[OBJCACHE_PATH], hdr[160];
  char path[OBJCACHE_PATH + 32], ent[17];
  const char *p;
  unsigned long long h, s;
  size_t dlen, olen;
  char mname[OBJCACHE_PATH + 16];
  int rc = 0, ndeps = 0;

  deps = slurp(depfile, MANIFEST_MAX, &dlen);
  if (!deps) {
    rc = err_set(e, ERR_IO, "no dependency list %s", depfile);
    goto out;
  }
  /* the target ("obj :"), then the inputs */
  p = strstr(deps, ": ");
  if (!p)
    p = strstr(deps, ":\n");
  if (!p) {
    rc = err_set(e, ERR_PARSE, "%s: no ':' in the dependency list", depfile);
    goto out;
  }
  p++;
  (void)buf_puts(&man, MAGIC_M);
  (void)buf_puts(&man, "0000000000000000\n"); /* the entry, set below */
  while (dep_next(&p, name, sizeof(name))) {
    if (c->src[0] && !strcmp(name, c->src))
      continue; /* its text is in the key */
    if (strchr(name, '\n') || hash_file(name, &h, &s)) {
      rc = err_set(e, ERR_IO, "input %s cannot be read", name);
      goto out;
    }
    manifest_name(c, name, mname, sizeof(mname));
    (void)buf_printf(&man, "%016llx %llu %s\n", h, s, mname);
    ndeps++;
  }
  if (buf_error(&man)) {
    rc = err_set(e, ERR_TOOBIG, "%s: too many inputs", depfile);
    goto out;
  }
  o = slurp(obj, ENTRY_MAX, &olen);
  if (!o) {
    rc = err_set(e, ERR_IO, "%s: unreadable or too large", obj);
    goto out;
  }
  /* the entry's name: the key and every input's text */
  snprintf(ent, sizeof(ent), "%016llx",
           (unsigned long long)XXH64(buf_str(&man), man.len,
                                     strtoull(c->key, NULL, 16)));
  memcpy(man.data + sizeof(MAGIC_M) - 1, ent, 16);
  snprintf(hdr, sizeof(hdr), MAGIC_O " %zu %zu %zu %016llx\n", outlen, errlen,
           olen, (unsigned long long)XXH64(o, olen, 0));
  {
    const void *parts[4] = {hdr, out, err, o};
    size_t lens[4] = {strlen(hdr), outlen, errlen, olen};
    snprintf(path, sizeof(path), "%s/o/%s", c->dir, ent);
    if ((rc = write_atomic(c, path, parts, lens, 4, e)))
      goto out;
  }
  {
    const void *parts[1] = {man.data};
    size_t lens[1] = {man.len};
    snprintf(path, sizeof(path), "%s/m/%s", c->dir, c->key);
    rc = write_atomic(c, path, parts, lens, 1, e);
  }
  (void)ndeps;
out:
  free(deps);
  free(o);
  buf_release(&man);
  return rc;
}

int objcache_lock(struct objcache *c, struct err *e)
{
  char p[OBJCACHE_PATH + 32];

  snprintf(p, sizeof(p), "%s/lock/%s", c->dir, c->key);
  c->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (c->lock_fd < 0)
    return err_set(e, ERR_IO, "%s: %s", p, strerror(errno));
  while (flock(c->lock_fd, LOCK_EX))
    if (errno != EINTR) {
      close(c->lock_fd);
      c->lock_fd = -1;
      return err_set(e, ERR_IO, "flock %s: %s", p, strerror(errno));
    }
  return 0;
}

void objcache_unlock(struct objcache *c)
{
  if (c->lock_fd >= 0)
    close(c->lock_fd);
  c->lock_fd = -1;
}

void objcache_log(const char *what, double seconds, int argc,
                  const char *const *argv)
{
  const char *path = getenv("CUCO_CC_LOG");
  FILE *f;
  int i;

  if (!path || !*path || !(f = fopen(path, "a")))
    return;
  fprintf(f, "%s %.2f", what, seconds);
  for (i = 0; i < argc; i++)
    fprintf(f, " %s", argv[i]);
  fputc('\n', f);
  fclose(f);
}

int objcache_ident(const char *compiler, struct buf *id)
{
  char path[OBJCACHE_PATH], real[PATH_MAX];
  const char *argv[3] = {NULL, "--version", NULL};
  char *ver;
  int ok = 0;

  if (!proc_which(compiler, NULL, path, sizeof(path)))
    return -1;
  /* "nvcc", "/usr/local/cuda/bin/nvcc" and its link target are one */
  if (realpath(path, real) && strlen(real) < sizeof(path))
    snprintf(path, sizeof(path), "%s", real);
  argv[0] = path;
  ver = proc_capture(argv, 64 * 1024, &ok);
  if (!ver || !ok) {
    free(ver);
    return -1;
  }
  (void)buf_printf(id, "%s\n%s", path, ver);
  free(ver);
  return buf_error(id) ? -1 : 0;
}
