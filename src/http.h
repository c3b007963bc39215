/* http.h - JSON POST over libcurl with timeouts, retries and a capped body.
 *
 * One call sends one request, retrying on 429, 5xx and connection
 * failures with exponential backoff and jitter (a Retry-After header in
 * seconds replaces the computed delay, capped at retry_max_s).  Other 4xx
 * answers are final at once; a timeout is final too (the server may still
 * be generating, and a retry would be billed again).  The response body
 * goes into a capped struct buf: a body over the cap aborts the transfer.
 *
 * Headers are passed as "Name: value" strings and may hold a secret: they
 * never appear in an error message.
 */
#ifndef CUCO_HTTP_H
#define CUCO_HTTP_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

struct http_opts {
  const char *url;
  const char *const *headers; /* "Name: value", may be NULL */
  size_t n_headers;
  const char *body; /* JSON text to POST (Content-Type application/json) */
  size_t body_len;
  double connect_timeout_s; /* <= 0: 10 s */
  double timeout_s;         /* total per attempt; <= 0: 300 s */
  int max_retries;          /* retries after the first attempt */
  double retry_base_s;      /* first delay; doubled each retry */
  double retry_max_s;       /* cap on one delay (and on Retry-After) */
  size_t max_body;          /* response cap; 0: 8 MiB */
  /* Sleep between attempts; NULL = nanosleep.  For tests. */
  void (*sleep_fn)(void *ud, double s);
  void *sleep_ud;
};

enum http_fail {
  HTTP_DONE = 0,      /* an HTTP answer arrived (see status) */
  HTTP_TRANSPORT = 1, /* no answer: connect, DNS, reset, ... */
  HTTP_TIMEDOUT = 2,  /* connect or total timeout */
  HTTP_BODY_TOOBIG = 3,
};

struct http_result {
  enum http_fail fail;
  long status;     /* last HTTP status; 0 when none */
  struct buf body; /* last response body (capped) */
  int attempts;
  double elapsed_s;          /* all attempts and waits */
  double last_retry_after_s; /* last Retry-After seen, -1 when none */
};

/* POST o->body to o->url.  Returns 0 when an HTTP answer arrived (of any
 * status: the caller judges it), else ERR_HTTP (transport), ERR_TIMEOUT or
 * ERR_TOOBIG with *e naming the URL and what happened (never a header).
 * res is always filled; free it with http_result_release(). */
int http_post_json(const struct http_opts *o, struct http_result *res,
                   struct err *e) WARN_UNUSED;

void http_result_release(struct http_result *res);

/* Whether a status is worth retrying (429, 5xx). */
int http_status_retryable(long status);

/* Parse a Retry-After value in seconds ("3", " 2 "); -1 if not seconds
 * (an HTTP date or junk is ignored: the backoff is used instead). */
double http_parse_retry_after(const char *v);

/* Global libcurl setup; called once by http_post_json itself too. */
void http_global_init(void);

#endif
