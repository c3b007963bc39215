/* webassets.h - the web UI's files (web/), embedded into the binary at
 * build time with xxd -i (scripts/embed-web.sh writes the table). */
#ifndef CUCO_WEBASSETS_H
#define CUCO_WEBASSETS_H

#include <stddef.h>

struct webasset {
  const char *name; /* path inside web/, e.g. "index.html" */
  const unsigned char *data;
  size_t len;
  const char *type; /* Content-Type */
};

/* The generated table, ended by an entry with name NULL. */
extern const struct webasset webassets_table[];

/* The asset called name, or NULL.  Borrowed, static storage. */
const struct webasset *webassets_find(const char *name);

#endif
