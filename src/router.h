/* router.h - the URL router of `cuco serve`, kept free of the HTTP library
 * so it can be tested alone.
 *
 * Requests are untrusted.  The router takes the decoded path (libmicro-
 * httpd has already undone %-escapes, so "%2e%2e" arrives as "..") and
 * answers with an HTTP status: only GET and HEAD, no path over
 * ROUTER_MAX_URL bytes, no "." or ".." segment, no empty segment, no
 * backslash, '%' or control byte.  Query arguments are checked one by one.
 */
#ifndef CUCO_ROUTER_H
#define CUCO_ROUTER_H

#include <stddef.h>

#define ROUTER_MAX_URL 2048 /* bytes of path plus query */
#define ROUTER_MAX_ARG 64   /* bytes of one query value */

enum router_kind {
  ROUTE_STATIC,       /* asset: an embedded file */
  ROUTE_API_RUN,      /* /api/run */
  ROUTE_API_PROGRAMS, /* /api/programs?island=&status=&edit_kind= */
  ROUTE_API_PROGRAM,  /* /api/program/ID */
  ROUTE_API_PLOT,     /* /api/plot */
  ROUTE_API_UPDATES   /* /api/updates?since=ID&after=T */
};

struct router_match {
  enum router_kind kind;
  long long id;    /* ROUTE_API_PROGRAM */
  char asset[128]; /* ROUTE_STATIC: name inside web/, e.g. "app.js" */
  int island;      /* -1 = any */
  char status[ROUTER_MAX_ARG + 1];    /* "" = any */
  char edit_kind[ROUTER_MAX_ARG + 1]; /* "" = any */
  long long since; /* updates: programs with a larger id ... */
  double after;    /* ... or changed after this time */
  char why[160];   /* the reason for a status other than 200 */
};

/* Match method and path (url_len = bytes of the request's whole URL as
 * received, for the size check).  Returns 200 and fills *m, or 400, 404,
 * 405 or 414 with m->why set (400 for /api/program/ID whose ID is not a
 * decimal number; 404 for an id no program can have).  Static names are
 * checked against the embedded files. */
int router_route(const char *method, const char *path, size_t url_len,
                 struct router_match *m);

/* Apply one query argument to *m (after router_route returned 200).
 * Returns 200, or 400 with m->why set for an unknown key, a key the route
 * does not take, or a bad value (status and edit_kind must be a value a
 * program row can hold; the reason lists them). */
int router_arg(struct router_match *m, const char *key, const char *value);

#endif
