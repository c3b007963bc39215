/* fuzz_directive.c - directive and param lines (directive.c): a
 * candidate's CUCO-DIRECTIVES / CUCO-PARAM text is untrusted code. */
#include <jansson.h>

#include "directive.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct directive_set d;
  struct directive_flags f;
  struct err e = {0, ""};
  char *text = fuzz_cstr(data, size);

  if (!text)
    return 0;
  if (directive_parse(text, &d, &e) == 0) {
    json_t *j = directive_to_json(&d);
    directive_flags(&d, &f);
    json_decref(j);
  } else if (!e.msg[0]) {
    abort();
  }
  free(text);
  return 0;
}
