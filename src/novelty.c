/* novelty.c - token-shingle signatures and similarities (novelty.h). */
#include "novelty.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "err.h"
#include "patch.h"

struct tok {
  const char *s;
  size_t n;
};

/* Tokenise text: identifiers/numbers, or single punctuation characters;
 * comments and whitespace are skipped, so reformatting does not look new.
 * Directive comments are kept (they are the tuner's whole difference). */
static size_t tokenize(const char *t, size_t len, struct tok *out, size_t max)
{
  size_t i = 0, n = 0;

  while (i < len && n < max) {
    unsigned char c = (unsigned char)t[i];
    if (isspace(c)) {
      i++;
    } else if (c == '/' && i + 1 < len && t[i + 1] == '/' &&
               strncmp(t + i, "// CUCO-", 8)) {
      while (i < len && t[i] != '\n')
        i++;
    } else if (c == '/' && i + 1 < len && t[i + 1] == '*') {
      const char *end = strstr(t + i + 2, "*/");
      i = end && (size_t)(end - t) < len ? (size_t)(end - t) + 2 : len;
    } else if (isalnum(c) || c == '_') {
      size_t j = i;
      while (j < len && (isalnum((unsigned char)t[j]) || t[j] == '_'))
        j++;
      out[n].s = t + i;
      out[n++].n = j - i;
      i = j;
    } else {
      out[n].s = t + i;
      out[n++].n = 1;
      i++;
    }
  }
  return n;
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

  return (x > y) - (x < y);
}

int novelty_sig_init(struct novelty_sig *s, const char *code)
{
  struct patch_block bl[64];
  struct tok *toks;
  size_t ntok = 0, cap = 1 << 18, i, j, k, u;
  int nb, b;

  memset(s, 0, sizeof(*s));
  toks = malloc(cap * sizeof(*toks));
  if (!toks)
    return ERR_NOMEM;
  nb = patch_blocks(code, bl, 64, NULL);
  if (nb <= 0)
    ntok = tokenize(code, strlen(code), toks, cap);
  for (b = 0; b < nb; b++)
    ntok += tokenize(code + bl[b].start, bl[b].end - bl[b].start, toks + ntok,
                     cap - ntok);
  k = ntok >= NOVELTY_K ? ntok - NOVELTY_K + 1 : (ntok ? 1 : 0);
  s->h = malloc((k ? k : 1) * sizeof(*s->h));
  if (!s->h) {
    free(toks);
    return ERR_NOMEM;
  }
  for (i = 0; i < k; i++) {
    uint64_t h = 0;
    for (j = i; j < i + NOVELTY_K && j < ntok; j++)
      h = XXH64(toks[j].s, toks[j].n, h + j - i);
    s->h[i] = h;
  }
  free(toks);
  qsort(s->h, k, sizeof(*s->h), cmp_u64);
  for (i = 0, u = 0; i < k; i++)
    if (!u || s->h[u - 1] != s->h[i])
      s->h[u++] = s->h[i];
  s->n = u;
  return 0;
}

void novelty_sig_release(struct novelty_sig *s)
{
  if (!s)
    return;
  free(s->h);
  s->h = NULL;
  s->n = 0;
}

double novelty_jaccard(const struct novelty_sig *a,
                       const struct novelty_sig *b)
{
  size_t i = 0, j = 0, inter = 0;

  if (!a->n && !b->n)
    return 1;
  while (i < a->n && j < b->n) {
    if (a->h[i] == b->h[j]) {
      inter++;
      i++;
      j++;
    } else if (a->h[i] < b->h[j]) {
      i++;
    } else {
      j++;
    }
  }
  return (double)inter / (double)(a->n + b->n - inter);
}

double novelty_cosine(const float *a, const float *b, size_t dim)
{
  double dot = 0, na = 0, nb = 0;
  size_t i;

  for (i = 0; i < dim; i++) {
    dot += (double)a[i] * b[i];
    na += (double)a[i] * a[i];
    nb += (double)b[i] * b[i];
  }
  return na > 0 && nb > 0 ? dot / (sqrt(na) * sqrt(nb)) : 0;
}
