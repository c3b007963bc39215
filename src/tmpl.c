/* tmpl.c - command templates; see tmpl.h. */
#include "tmpl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

int tmpl_push(struct tmpl_argv *a, const char *s)
{
  if (a->n >= TMPL_MAX_ARGS)
    return -1;
  a->argv[a->n] = strdup(s);
  if (!a->argv[a->n])
    return -1;
  a->n++;
  return 0;
}

void tmpl_argv_free(char **argv)
{
  size_t i;

  for (i = 0; argv && argv[i]; i++)
    free(argv[i]);
  free(argv);
}

/* Expand the placeholders of one word (LEN bytes at P) into *TOK; 0 or
 * ERR_CONFIG with *e set. */
static int expand_word(const char *tmpl, const char *p, size_t len,
                       const struct tmpl_hooks *h, struct buf *tok,
                       struct err *e)
{
  size_t i;

  for (i = 0; i < len; i++) {
    size_t close;
    char tmp[64];
    const char *val;
    if (p[i] != '{') {
      (void)buf_putc(tok, p[i]);
      continue;
    }
    close = strcspn(p + i, "}");
    if (i + close >= len)
      return err_set(e, ERR_CONFIG, "unclosed '{' in %s '%.60s'", h->what,
                     tmpl);
    val = h->word(h->ud, p + i + 1, close - 1, tmp, sizeof(tmp));
    if (!val)
      return err_set(e, ERR_CONFIG,
                     "unknown placeholder '%.*s' in %s '%.60s' (%s)",
                     (int)close + 1, p + i, h->what, tmpl, h->known);
    (void)buf_puts(tok, val);
    i += close;
  }
  return 0;
}

char **tmpl_expand(const char *tmpl, const struct tmpl_hooks *h, struct err *e)
{
  struct tmpl_argv a = {calloc(TMPL_MAX_ARGS + 1, sizeof(char *)), 0};
  const char *p = tmpl;

  if (!a.argv) {
    err_set(e, ERR_NOMEM, "out of memory");
    return NULL;
  }
  while (*p) {
    struct buf tok = BUF_INIT(8192);
    size_t len;
    int lt = 0;
    p += strspn(p, " \t");
    if (!*p)
      break;
    len = strcspn(p, " \t");
    if (h->list && len > 2 && p[0] == '{' && p[len - 1] == '}' &&
        !memchr(p + 1, '{', len - 2))
      lt = h->list(h->ud, p + 1, len - 2, &a);
    if (lt < 0)
      goto toobig;
    if (lt == 0 && expand_word(tmpl, p, len, h, &tok, e)) {
      buf_release(&tok);
      goto fail;
    }
    if (lt == 0) {
      if (buf_error(&tok) || a.n >= TMPL_MAX_ARGS) {
        buf_release(&tok);
        goto toobig;
      }
      a.argv[a.n++] = buf_detach(&tok, NULL);
    }
    p += len;
  }
  if (!a.n) {
    err_set(e, ERR_CONFIG, "empty %s", h->what);
    goto fail;
  }
  return a.argv;
toobig:
  err_set(e, ERR_TOOBIG, "%s too long: '%.60s'", h->what, tmpl);
fail:
  tmpl_argv_free(a.argv);
  return NULL;
}
