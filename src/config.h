/* config.h - INI configuration with environment overrides.
 *
 * A struct config is a list of (section, key, value) entries, each with its
 * origin ("cuco.ini:12" or "env CUCO_LLM_MODEL"), so every error about a
 * value names where the value came from.  Later sets of the same key win.
 * Used for cuco.ini and for every workload.ini.
 */
#ifndef CUCO_CONFIG_H
#define CUCO_CONFIG_H

#include <stddef.h>

#include "err.h"

struct config;

struct config_entry {
  const char *section; /* "" for keys before any [section] */
  const char *key;
  const char *value;
  const char *origin; /* "path:line" or "env NAME" */
};

/* A new empty config; NULL on allocation failure. */
struct config *config_new(void);
void config_free(struct config *c);

/* Parse an INI file into c (adding to what is there).  ERR_IO if it cannot
 * be read, ERR_PARSE with "path:line: ..." for a malformed line or a line
 * longer than inih takes (about 200 characters).  An indented line after
 * KEY = VALUE continues the value (joined with one space), so long values
 * fit. */
int config_load(struct config *c, const char *path, struct err *e) WARN_UNUSED;

/* Parse INI text; `name` is used in origins and errors. */
int config_load_string(struct config *c, const char *name, const char *text,
                       struct err *e) WARN_UNUSED;

/* A section of a schema for config_check: NAME, or a prefix ending in '.'
 * ("model." takes [model.NAME]); KEYS, NULL-terminated, or NULL for a
 * section whose keys are free (a workload's [sizes]). */
struct config_section {
  const char *name;
  const char *const *keys;
};

/* Check every entry of c that came from a file against SCHEMA[0..n):
 * ERR_CONFIG naming the file and line, the unknown key or section and the
 * nearest valid name ("cuco.ini:3: unknown key 'modle' in [llm] (did you
 * mean 'model'?)"), else where the key belongs or the valid names.
 * Entries from the environment are not checked. */
int config_check(const struct config *c, const struct config_section *schema,
                 size_t n, struct err *e) WARN_UNUSED;

/* Set one value (copied). origin may be NULL ("set"). */
int config_set(struct config *c, const char *section, const char *key,
               const char *value, const char *origin) WARN_UNUSED;

/* Apply environment overrides: for each {ENV, section, key} triple whose
 * variable is set, set section.key from it. */
struct config_env_map {
  const char *env;
  const char *section;
  const char *key;
};
int config_apply_env(struct config *c, const struct config_env_map *map,
                     size_t n) WARN_UNUSED;

/* The last entry for section.key, or NULL. Borrowed. */
const struct config_entry *config_find(const struct config *c,
                                       const char *section, const char *key);

/* The value, or def when unset. Borrowed. */
const char *config_get(const struct config *c, const char *section,
                       const char *key, const char *def);

/* Typed getters: *out = def when unset; ERR_CONFIG naming the origin when
 * the value is not of the type or outside [lo, hi]. */
int config_get_long(const struct config *c, const char *section,
                    const char *key, long def, long lo, long hi, long *out,
                    struct err *e) WARN_UNUSED;
int config_get_double(const struct config *c, const char *section,
                      const char *key, double def, double lo, double hi,
                      double *out, struct err *e) WARN_UNUSED;
int config_get_bool(const struct config *c, const char *section,
                    const char *key, int def, int *out,
                    struct err *e) WARN_UNUSED;

/* Iterate: entries in file order; returns NULL past the end. */
const struct config_entry *config_at(const struct config *c, size_t i);
size_t config_count(const struct config *c);

/* Section names in first-seen order (for [model.x] style sections).
 * Returns the number found; names are borrowed. */
size_t config_sections(const struct config *c, const char *prefix,
                       const char **names, size_t max);

/* Strict parsers shared by the tool: whole string, no junk. 0 or
 * ERR_PARSE. */
int config_parse_long(const char *s, long *out) WARN_UNUSED;
int config_parse_double(const char *s, double *out) WARN_UNUSED;
/* A C identifier ([A-Za-z_][A-Za-z0-9_]*): names of params and sizes. */
int config_is_ident(const char *s);
/* "4KiB", "512KiB", "64MiB", "1GiB", "4096" -> bytes. */
int config_parse_bytes(const char *s, unsigned long long *out) WARN_UNUSED;

#endif
