/* linediff.c - LCS line diff with a cap; see linediff.h. */
#include "linediff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct line {
  const char *p;
  size_t n;      /* without the newline */
  uint32_t hash; /* FNV-1a, to skip most memcmp calls */
};

enum { OP_EQ, OP_DEL, OP_ADD };

struct op {
  int kind;
  int ai, bi; /* line index in a (EQ, DEL) and b (EQ, ADD) */
};

/* Split s into lines; *out is malloc'd (caller frees). */
static int split(const char *s, struct line **out, int *count)
{
  size_t n = 0, cap = 0;
  struct line *v = NULL, *nv;
  const char *p = s;

  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    uint32_t h = 2166136261u;
    size_t i;

    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      if (cap > (size_t)INT32_MAX / 2)
        goto fail;
      nv = realloc(v, cap * sizeof *v);
      if (!nv)
        goto fail;
      v = nv;
    }
    for (i = 0; i < len; i++)
      h = (h ^ (unsigned char)p[i]) * 16777619u;
    v[n].p = p;
    v[n].n = len;
    v[n].hash = h;
    n++;
    p += len + (nl ? 1 : 0);
  }
  *out = v;
  *count = (int)n;
  return 0;
fail:
  free(v);
  return ERR_NOMEM;
}

static int same(const struct line *x, const struct line *y)
{
  return x->hash == y->hash && x->n == y->n && !memcmp(x->p, y->p, x->n);
}

/* The edit script of the middle a[p..p+n) -> b[p..p+m): LCS when it fits
 * in the cap, else delete-all then add-all. */
static int middle_ops(const struct line *a, const struct line *b, int p, int n,
                      int m, struct op *ops, int *nops, int *capped)
{
  uint32_t *t;
  int i, j, k = *nops;
  size_t w = (size_t)m + 1;

  if ((size_t)(n + 1) * w > LINEDIFF_MAX_CELLS) {
    *capped = 1;
    for (i = 0; i < n; i++)
      ops[k++] = (struct op){OP_DEL, p + i, -1};
    for (j = 0; j < m; j++)
      ops[k++] = (struct op){OP_ADD, -1, p + j};
    *nops = k;
    return 0;
  }
  t = calloc((size_t)(n + 1) * w, sizeof *t);
  if (!t)
    return ERR_NOMEM;
  for (i = n - 1; i >= 0; i--)
    for (j = m - 1; j >= 0; j--)
      if (same(&a[p + i], &b[p + j]))
        t[i * w + j] = t[(i + 1) * w + j + 1] + 1;
      else
        t[i * w + j] = t[(i + 1) * w + j] > t[i * w + j + 1]
                           ? t[(i + 1) * w + j]
                           : t[i * w + j + 1];
  i = j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && same(&a[p + i], &b[p + j])) {
      ops[k++] = (struct op){OP_EQ, p + i, p + j};
      i++, j++;
    } else if (i < n && (j == m || t[(i + 1) * w + j] >= t[i * w + j + 1])) {
      /* Removals before additions, as diff -u prints them. */
      ops[k++] = (struct op){OP_DEL, p + i, -1};
      i++;
    } else {
      ops[k++] = (struct op){OP_ADD, -1, p + j};
      j++;
    }
  }
  free(t);
  *nops = k;
  return 0;
}

static void put_line(struct buf *out, char mark, const struct line *l)
{
  buf_putc(out, mark);
  buf_append(out, l->p, l->n);
  buf_putc(out, '\n');
}

/* Print ops[from..to) as one hunk. */
static void hunk(struct buf *out, const struct op *ops, int from, int to,
                 const struct line *a, const struct line *b)
{
  int as = -1, bs = -1, al = 0, bl = 0, i, aprev = 0, bprev = 0;

  for (i = from; i < to; i++) {
    if (ops[i].ai >= 0) {
      if (as < 0)
        as = ops[i].ai;
      al++;
    }
    if (ops[i].bi >= 0) {
      if (bs < 0)
        bs = ops[i].bi;
      bl++;
    }
  }
  /* An empty side names the line before it, as diff -u does. */
  for (i = from - 1; i >= 0; i--) {
    if (aprev == 0 && ops[i].ai >= 0)
      aprev = ops[i].ai + 1;
    if (bprev == 0 && ops[i].bi >= 0)
      bprev = ops[i].bi + 1;
    if (aprev && bprev)
      break;
  }
  buf_printf(out, "@@ -%d,%d +%d,%d @@\n", al ? as + 1 : aprev, al,
             bl ? bs + 1 : bprev, bl);
  for (i = from; i < to; i++) {
    if (ops[i].kind == OP_EQ)
      put_line(out, ' ', &a[ops[i].ai]);
    else if (ops[i].kind == OP_DEL)
      put_line(out, '-', &a[ops[i].ai]);
    else
      put_line(out, '+', &b[ops[i].bi]);
  }
}

int linediff_unified(const char *a_text, const char *b_text,
                     const char *label_a, const char *label_b, int context,
                     struct buf *out, struct linediff_stat *st, struct err *e)
{
  struct line *a = NULL, *b = NULL;
  struct op *ops = NULL;
  struct linediff_stat s = {0, 0, 0, 0};
  int na = 0, nb = 0, pre = 0, suf = 0, nops = 0, i, rc = ERR_NOMEM;

  if (context < 0)
    context = 0;
  if (split(a_text ? a_text : "", &a, &na) ||
      split(b_text ? b_text : "", &b, &nb))
    goto out;
  while (pre < na && pre < nb && same(&a[pre], &b[pre]))
    pre++;
  while (suf < na - pre && suf < nb - pre &&
         same(&a[na - 1 - suf], &b[nb - 1 - suf]))
    suf++;
  ops = malloc(((size_t)na + nb + 1) * sizeof *ops);
  if (!ops)
    goto out;
  for (i = 0; i < pre; i++)
    ops[nops++] = (struct op){OP_EQ, i, i};
  if (middle_ops(a, b, pre, na - pre - suf, nb - pre - suf, ops, &nops,
                 &s.capped))
    goto out;
  for (i = 0; i < suf; i++)
    ops[nops++] = (struct op){OP_EQ, na - suf + i, nb - suf + i};
  for (i = 0; i < nops; i++) {
    if (ops[i].kind == OP_ADD)
      s.added++;
    else if (ops[i].kind == OP_DEL)
      s.removed++;
  }
  if (s.added || s.removed) {
    buf_printf(out, "--- %s\n+++ %s\n", label_a ? label_a : "a",
               label_b ? label_b : "b");
    i = 0;
    while (i < nops) {
      int start, end, last;
      while (i < nops && ops[i].kind == OP_EQ)
        i++;
      if (i == nops)
        break;
      start = i - context < 0 ? 0 : i - context;
      /* Extend while the next change is within 2*context lines. */
      last = i;
      end = i + 1;
      while (end < nops) {
        if (ops[end].kind != OP_EQ)
          last = end;
        else if (end - last > 2 * context)
          break;
        end++;
      }
      end = last + 1 + context > nops ? nops : last + 1 + context;
      hunk(out, ops, start, end, a, b);
      s.hunks++;
      i = end;
    }
  }
  rc = buf_error(out);
  if (rc)
    err_set(e, rc, "diff: %s",
            rc == ERR_TOOBIG ? "output over its cap" : "out of memory");
out:
  if (rc == ERR_NOMEM && !buf_error(out))
    err_set(e, rc, "diff: out of memory");
  if (st)
    *st = s;
  free(a);
  free(b);
  free(ops);
  return rc;
}
