/* fuzz_router.c - the web UI's URL router (router.c): a request line's
 * method, path and query arguments from untrusted bytes.  Input layout:
 * "METHOD PATH\nkey=value\nkey=value..." (any bytes). */
#include "fuzz.h"
#include "router.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct router_match m;
  char *text = fuzz_cstr(data, size), *nl, *sp, *path, *line;
  int code;

  if (!text)
    return 0;
  nl = strchr(text, '\n');
  if (nl)
    *nl = '\0';
  sp = strchr(text, ' ');
  path = sp ? sp + 1 : text;
  if (sp)
    *sp = '\0';
  code = router_route(sp ? text : "GET", path, strlen(path), &m);
  if (code != 200 && code != 400 && code != 404 && code != 405 && code != 414)
    abort();
  for (line = nl ? nl + 1 : NULL; code == 200 && line && *line;) {
    char *next = strchr(line, '\n'), *eq;
    if (next)
      *next = '\0';
    eq = strchr(line, '=');
    if (eq) {
      *eq = '\0';
      code = router_arg(&m, line, eq + 1);
      if (code != 200 && code != 400)
        abort();
    }
    line = next ? next + 1 : NULL;
  }
  free(text);
  return 0;
}
