/* router.c - URL routing and query checking for cuco serve; see router.h. */
#include "router.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webassets.h"

static int deny(struct router_match *m, int status, const char *why)
{
  snprintf(m->why, sizeof m->why, "%s", why);
  return status;
}

/* 1 when every segment of path (which starts with '/') is a plain name. */
static int clean_path(const char *path, const char **why)
{
  const char *p = path + 1, *seg;
  size_t n;

  for (n = 0; path[n]; n++) {
    unsigned char c = (unsigned char)path[n];
    if (c < 0x20 || c == 0x7f || c == '\\' || c == '%') {
      *why = "the path holds a control byte, backslash or '%'";
      return 0;
    }
  }
  if (!*p)
    return 1;
  while (*p) {
    seg = p;
    n = strcspn(seg, "/");
    if (n == 0) {
      *why = "the path has an empty segment";
      return 0;
    }
    if ((n == 1 && seg[0] == '.') || (n == 2 && !strncmp(seg, "..", 2))) {
      *why = "the path has a '.' or '..' segment";
      return 0;
    }
    p = seg + n + (seg[n] == '/');
    if (seg[n] == '/' && !*p) {
      *why = "the path ends in '/'";
      return 0;
    }
  }
  return 1;
}

/* A decimal id of 1..18 digits; -1 when s is not one. */
static long long parse_id(const char *s)
{
  size_t n = strspn(s, "0123456789");

  if (n == 0 || n > 18 || s[n])
    return -1;
  return strtoll(s, NULL, 10);
}

int router_route(const char *method, const char *path, size_t url_len,
                 struct router_match *m)
{
  const char *why = "";

  memset(m, 0, sizeof *m);
  m->island = -1;
  if (url_len > ROUTER_MAX_URL || strlen(path) > ROUTER_MAX_URL)
    return deny(m, 414, "the URL is longer than 2048 bytes");
  if (strcmp(method, "GET") && strcmp(method, "HEAD"))
    return deny(m, 405, "only GET and HEAD are served");
  if (path[0] != '/')
    return deny(m, 400, "the path does not start with '/'");
  if (!clean_path(path, &why))
    return deny(m, 400, why);
  if (!strcmp(path, "/api/run"))
    m->kind = ROUTE_API_RUN;
  else if (!strcmp(path, "/api/programs"))
    m->kind = ROUTE_API_PROGRAMS;
  else if (!strcmp(path, "/api/plot"))
    m->kind = ROUTE_API_PLOT;
  else if (!strcmp(path, "/api/updates"))
    m->kind = ROUTE_API_UPDATES;
  else if (!strncmp(path, "/api/program/", 13)) {
    m->kind = ROUTE_API_PROGRAM;
    m->id = parse_id(path + 13);
    if (m->id < 0) { /* not an id at all: the request is wrong */
      snprintf(m->why, sizeof m->why,
               "/api/program/ID: '%.40s' is not a program id (a decimal "
               "number of at most 18 digits)",
               path + 13);
      return 400;
    }
    if (m->id == 0)
      return deny(m, 404, "/api/program/0: ids start at 1");
  } else if (!strncmp(path, "/api/", 5) || !strcmp(path, "/api")) {
    return deny(m, 404, "no such API endpoint");
  } else {
    const char *name = path[1] ? path + 1 : "index.html";
    if (strlen(name) >= sizeof m->asset || !webassets_find(name))
      return deny(m, 404, "no such file");
    m->kind = ROUTE_STATIC;
    snprintf(m->asset, sizeof m->asset, "%s", name);
  }
  return 200;
}

/* Whether v is one of the comma-separated words of list. */
static int one_of(const char *v, const char *list)
{
  size_t n = strlen(v);

  while (*list) {
    size_t k = strcspn(list, ",");
    if (k == n && !strncmp(list, v, n))
      return 1;
    list += k + (list[k] == ',');
    list += strspn(list, " ");
  }
  return 0;
}

/* status or edit_kind=value: one of the values a program row can hold
 * (db.h), else 400 naming them. */
static int word_arg(struct router_match *m, const char *key, const char *value)
{
  static const char statuses[] =
      "pending, running, ok, failed, rejected, interrupted";
  static const char kinds[] = "seed, diff, full, cross, tune, migrate";
  const char *list = key[0] == 's' ? statuses : kinds;

  if (!*value)
    return 200;
  if (!one_of(value, list)) {
    snprintf(m->why, sizeof m->why, "%s=%.40s: not one of %s", key,
             strspn(value, "abcdefghijklmnopqrstuvwxyz_") == strlen(value)
                 ? value
                 : "(that value)",
             list);
    return 400;
  }
  snprintf(key[0] == 's' ? m->status : m->edit_kind, ROUTER_MAX_ARG + 1, "%s",
           value);
  return 200;
}

int router_arg(struct router_match *m, const char *key, const char *value)
{
  char *end;

  if (!value)
    value = "";
  if (strlen(value) > ROUTER_MAX_ARG)
    return deny(m, 400, "a query value is longer than 64 bytes");
  /* "_" is the usual cache-buster; ignore it anywhere. */
  if (!strcmp(key, "_"))
    return 200;
  if (m->kind == ROUTE_API_PROGRAMS) {
    if (!strcmp(key, "island")) {
      long v;
      if (!*value)
        return 200;
      errno = 0;
      v = strtol(value, &end, 10);
      if (errno || *end || v < 0 || v > 1000000)
        return deny(m, 400, "island must be a number from 0 to 1000000");
      m->island = (int)v;
      return 200;
    }
    if (!strcmp(key, "status") || !strcmp(key, "edit_kind"))
      return word_arg(m, key, value);
  }
  if (m->kind == ROUTE_API_UPDATES) {
    if (!strcmp(key, "since")) {
      errno = 0;
      m->since = strtoll(value, &end, 10);
      if (errno || *end || !*value || m->since < 0)
        return deny(m, 400, "since must be a program id (0 or more)");
      return 200;
    }
    if (!strcmp(key, "after")) {
      errno = 0;
      m->after = strtod(value, &end);
      if (errno || *end || !*value || !isfinite(m->after))
        return deny(m, 400, "after must be a time in seconds");
      return 200;
    }
  }
  return deny(m, 400, "unknown query argument");
}
