/* suggest.c - see suggest.h. */
#include "suggest.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define NAME_MAX_LEN 63

int suggest_distance(const char *a, const char *b)
{
  int d[NAME_MAX_LEN + 1][NAME_MAX_LEN + 1];
  size_t la = strlen(a), lb = strlen(b), i, j;

  la = la > NAME_MAX_LEN ? NAME_MAX_LEN : la;
  lb = lb > NAME_MAX_LEN ? NAME_MAX_LEN : lb;
  for (i = 0; i <= la; i++)
    d[i][0] = (int)i;
  for (j = 0; j <= lb; j++)
    d[0][j] = (int)j;
  for (i = 1; i <= la; i++)
    for (j = 1; j <= lb; j++) {
      int ca = tolower((unsigned char)a[i - 1]);
      int cb = tolower((unsigned char)b[j - 1]);
      int v = d[i - 1][j - 1] + (ca != cb);
      if (d[i - 1][j] + 1 < v)
        v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v)
        v = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
          cb == tolower((unsigned char)a[i - 2]) && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[la][lb];
}

const char *suggest_nearest(const char *name, const char *const *valid,
                            size_t n)
{
  const char *best = NULL;
  int bestd = 0;
  size_t i;

  for (i = 0; i < n; i++) {
    size_t l =
        strlen(valid[i]) > strlen(name) ? strlen(valid[i]) : strlen(name);
    int d = suggest_distance(name, valid[i]);
    if (d <= (int)(l / 3) && (!best || d < bestd)) {
      best = valid[i];
      bestd = d;
    }
  }
  return best;
}

void suggest_list(char *out, size_t outn, const char *const *valid, size_t n)
{
  size_t i, k = 0;

  if (!outn)
    return;
  out[0] = '\0';
  for (i = 0; i < n && k < outn; i++)
    k += (size_t)snprintf(out + k, outn - k, "%s%s", i ? ", " : "", valid[i]);
  if (k >= outn && outn > 4)
    snprintf(out + outn - 4, 4, "...");
}
