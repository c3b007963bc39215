/* file.c - whole-file helpers; see file.h. */
#define _GNU_SOURCE
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

#include <xxhash.h>

#define FILE_PATH_MAX 4096

char *file_read(const char *path, size_t cap, size_t *len, struct err *e)
{
  struct buf b = BUF_INIT(cap);
  char chunk[16384];
  FILE *f = fopen(path, "rb");
  size_t n;

  if (!f) {
    err_set(e, ERR_IO, "%s: %s", path, strerror(errno));
    return NULL;
  }
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
    if (buf_append(&b, chunk, n))
      break;
  if (ferror(f)) {
    err_set(e, ERR_IO, "%s: read error", path);
    goto fail;
  }
  if (buf_error(&b)) {
    if (b.toobig)
      err_set(e, ERR_TOOBIG, "%s: over %zu bytes", path, cap);
    else
      err_set(e, ERR_NOMEM, "%s: out of memory", path);
    goto fail;
  }
  fclose(f);
  return buf_detach(&b, len);
fail:
  fclose(f);
  buf_release(&b);
  return NULL;
}

char *file_read_text(const char *path, size_t cap, struct err *e)
{
  size_t len;
  char *s = file_read(path, cap, &len, e);

  if (s && memchr(s, '\0', len)) {
    err_set(e, ERR_CHECK, "%s: holds NUL bytes", path);
    free(s);
    return NULL;
  }
  return s;
}

int file_write(const char *path, const void *data, size_t n, struct err *e)
{
  /* pid and a counter: threads of one process may write the same path */
  static atomic_uint seq;
  char tmp[FILE_PATH_MAX];
  int fd, er = 0;

  if (snprintf(tmp, sizeof(tmp), "%s.tmp%ld.%u", path, (long)getpid(),
               atomic_fetch_add(&seq, 1)) >= (int)sizeof(tmp))
    return err_set(e, ERR_IO, "%s: path too long", path);
  fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) /* name the file asked for, not the temporary beside it */
    return err_set(e, ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  while (!er && n) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      er = w < 0 ? errno : ENOSPC;
      break;
    }
    data = (const char *)data + w;
    n -= (size_t)w;
  }
  if (close(fd) && !er)
    er = errno;
  if (er) {
    unlink(tmp);
    return err_set(e, ERR_IO, "%s: write failed: %s", path, strerror(er));
  }
  if (rename(tmp, path)) {
    er = errno;
    unlink(tmp);
    return err_set(e, ERR_IO, "%s: cannot replace: %s", path, strerror(er));
  }
  return 0;
}

int file_mkdirs(const char *path, struct err *e)
{
  return file_mkdirs_mode(path, 0755, e);
}

int file_mkdirs_mode(const char *path, unsigned mode, struct err *e)
{
  char p[FILE_PATH_MAX];
  size_t i;

  if (strlen(path) >= sizeof(p))
    return err_set(e, ERR_IO, "path too long: %.80s", path);
  snprintf(p, sizeof(p), "%s", path);
  for (i = 1; p[i]; i++) {
    if (p[i] != '/')
      continue;
    p[i] = '\0';
    if (mkdir(p, 0755) && errno != EEXIST)
      return err_set(e, ERR_IO, "mkdir %s: %s", p, strerror(errno));
    p[i] = '/';
  }
  if (mkdir(p, (mode_t)mode) && errno != EEXIST)
    return err_set(e, ERR_IO, "mkdir %s: %s", p, strerror(errno));
  return 0;
}

static int rm_one(const char *p, const struct stat *sb, int flag,
                  struct FTW *ftw)
{
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(p);
}

void file_rmtree(const char *dir)
{
  (void)nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int file_hash64(const char *path, unsigned long long *h, struct err *e)
{
  XXH64_state_t *st = XXH64_createState();
  char chunk[1 << 16];
  ssize_t n;
  int fd, rc = 0;

  if (!st)
    return err_set(e, ERR_NOMEM, "out of memory");
  (void)XXH64_reset(st, 0);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    XXH64_freeState(st);
    return err_set(e, ERR_IO, "%s: %s", path, strerror(errno));
  }
  while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      rc = err_set(e, ERR_IO, "%s: %s", path, strerror(errno));
      break;
    }
    (void)XXH64_update(st, chunk, (size_t)n);
  }
  close(fd);
  *h = XXH64_digest(st);
  XXH64_freeState(st);
  return rc;
}
