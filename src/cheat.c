/* cheat.c - a cheat's source from its file (cheat.h). */
#include "cheat.h"

#include <stdlib.h>
#include <string.h>

#include "patch.h"

#define EXPECT_PREFIX "// CUCO-EXPECT-REJECT:"

static int ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), k = strlen(suffix);

  return n > k && !strcmp(s + n - k, suffix);
}

size_t cheat_name_len(const char *file)
{
  if (strchr(file, '/'))
    return 0;
  if (ends_with(file, CHEAT_EDIT_EXT))
    return strlen(file) - strlen(CHEAT_EDIT_EXT);
  if (ends_with(file, CHEAT_WHOLE_EXT))
    return strlen(file) - strlen(CHEAT_WHOLE_EXT);
  return 0;
}

/* [s, s + n) with surrounding blanks dropped equals what. */
static int line_is(const char *s, size_t n, const char *what)
{
  size_t k = strlen(what);

  while (n && (*s == ' ' || *s == '\t')) {
    s++;
    n--;
  }
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
    n--;
  return n == k && !memcmp(s, what, k);
}

static int is_comment(const char *s, size_t n)
{
  size_t i = strspn(s, " \t");

  return i + 1 < n && s[i] == '/' && s[i + 1] == '/';
}

static int is_blank(const char *s, size_t n)
{
  size_t i;

  for (i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
      return 0;
  return 1;
}

/* The header's length in bytes (its `//` lines, up to the first SEARCH
 * marker); ERR_PARSE when it does not open with the CUCO-EXPECT-REJECT
 * line, or a line outside the blocks is neither blank nor a marker. */
static int check_layout(const char *path, const char *text, size_t *hdr,
                        struct err *e)
{
  const char *p = text;
  int lineno = 0, state = 0, in_header = 1;

  if (strncmp(text, EXPECT_PREFIX, strlen(EXPECT_PREFIX)))
    return err_set(e, ERR_PARSE, "%s: line 1 is not a '%s STAGE words' line",
                   path, EXPECT_PREFIX);
  *hdr = 0;
  while (*p) {
    size_t n = strcspn(p, "\n");
    lineno++;
    if (state == 0 && line_is(p, n, "<<<<<<< SEARCH")) {
      state = 1;
      in_header = 0;
    } else if (state == 1 && line_is(p, n, "=======")) {
      state = 2;
    } else if (state == 2 && line_is(p, n, ">>>>>>> REPLACE")) {
      state = 0;
    } else if (state == 0 && in_header && is_comment(p, n)) {
      *hdr = (size_t)(p - text) + n + (p[n] ? 1 : 0);
    } else if (state == 0 && is_blank(p, n)) {
      in_header = 0;
    } else if (state == 0) {
      /* the markers out of order are the patch parser's to name */
      if (line_is(p, n, "=======") || line_is(p, n, ">>>>>>> REPLACE"))
        return 0;
      return err_set(e, ERR_PARSE,
                     "%s: line %d: '%.*s' is outside a SEARCH/REPLACE "
                     "block (only // lines before the first block, blank "
                     "lines between blocks)",
                     path, lineno, (int)(n < 60 ? n : 60), p);
    }
    p += n + (p[n] ? 1 : 0);
  }
  return 0;
}

int cheat_source(const char *path, const char *text, const char *seed,
                 char **out, struct err *e)
{
  struct err pe = {0, ""};
  size_t hdr = 0, n;
  char *patched = NULL;
  int rc;

  *out = NULL;
  if (!ends_with(path, CHEAT_EDIT_EXT)) {
    *out = strdup(text);
    return *out ? 0 : err_set(e, ERR_NOMEM, "%s: out of memory", path);
  }
  if ((rc = check_layout(path, text, &hdr, e)))
    return rc;
  /* exactly what an LLM's diff goes through (propose.c) */
  if ((rc = patch_apply_diff(seed, text, &patched, NULL, &pe)))
    return err_set(e, rc, "%s: %s", path, pe.msg);
  n = strlen(patched);
  *out = malloc(hdr + n + 1);
  if (!*out) {
    free(patched);
    return err_set(e, ERR_NOMEM, "%s: out of memory", path);
  }
  memcpy(*out, text, hdr);
  memcpy(*out + hdr, patched, n + 1);
  free(patched);
  return 0;
}
