/* webassets.c - lookup in the embedded web/ files; see webassets.h. */
#include "webassets.h"

#include <string.h>

const struct webasset *webassets_find(const char *name)
{
  const struct webasset *a;

  for (a = webassets_table; a->name; a++)
    if (!strcmp(a->name, name))
      return a;
  return NULL;
}
