/* http.c - JSON POST with retries; see http.h. */
#include "http.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define HTTP_DEFAULT_MAX_BODY (8u * 1024 * 1024)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
  curl_global_init(CURL_GLOBAL_DEFAULT);
}

void http_global_init(void)
{
  pthread_once(&curl_once, curl_init_once);
}

int http_status_retryable(long status)
{
  return status == 429 || (status >= 500 && status <= 599);
}

double http_parse_retry_after(const char *v)
{
  char *end;
  double d;

  if (!v)
    return -1;
  while (*v == ' ' || *v == '\t')
    v++;
  if (*v < '0' || *v > '9')
    return -1;
  errno = 0;
  d = strtod(v, &end);
  if (errno || end == v)
    return -1;
  while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
    end++;
  if (*end || !isfinite(d) || d < 0)
    return -1;
  return d;
}

static double now_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void real_sleep(void *ud, double s)
{
  struct timespec ts;

  (void)ud;
  if (s <= 0)
    return;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
    ;
}

/* Per-attempt state the curl callbacks write into. */
struct attempt {
  struct buf *body;
  double retry_after_s;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
  struct attempt *a = ud;
  size_t len = size * n;

  /* Returning less than len aborts the transfer: that is how the cap
   * stops a server that keeps sending. */
  if (buf_append(a->body, p, len))
    return 0;
  return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
  struct attempt *a = ud;
  size_t len = size * n;
  static const char name[] = "retry-after:";
  char v[64];

  if (len > sizeof(name) - 1 && !strncasecmp(p, name, sizeof(name) - 1)) {
    size_t vl = len - (sizeof(name) - 1);
    if (vl >= sizeof(v))
      vl = sizeof(v) - 1;
    memcpy(v, p + sizeof(name) - 1, vl);
    v[vl] = '\0';
    a->retry_after_s = http_parse_retry_after(v);
  }
  return len;
}

/* Equal jitter: half the exponential delay fixed, half random, so
 * concurrent callers spread out but never retry immediately. */
static double backoff_delay(const struct http_opts *o, int retry,
                            unsigned *seed)
{
  double base = o->retry_base_s > 0 ? o->retry_base_s : 1.0;
  double cap = o->retry_max_s > 0 ? o->retry_max_s : 60.0;
  double d = base * ldexp(1.0, retry);
  double r = (double)rand_r(seed) / ((double)RAND_MAX + 1.0);

  if (d > cap)
    d = cap;
  return d / 2 + d / 2 * r;
}

/* Connection failures worth another try; a bad URL, an unsupported
 * protocol or a certificate problem will not change. */
static int transient(CURLcode cc)
{
  switch (cc) {
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_GOT_NOTHING:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_PARTIAL_FILE:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
  case CURLE_SSL_CONNECT_ERROR:
    return 1;
  default:
    return 0;
  }
}

/* One transfer.  Returns the curl code; fills *status. */
static CURLcode do_attempt(CURL *c, const struct http_opts *o,
                           struct curl_slist *hdrs, struct attempt *a,
                           long *status)
{
  CURLcode cc;

  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_URL, o->url);
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, o->body);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->body_len);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
  curl_easy_setopt(
      c, CURLOPT_CONNECTTIMEOUT_MS,
      (long)((o->connect_timeout_s > 0 ? o->connect_timeout_s : 10) * 1000));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                   (long)((o->timeout_s > 0 ? o->timeout_s : 300) * 1000));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  /* Only http(s): a config value must not reach file:// or others. */
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(c, CURLOPT_PROTOCOLS, CURLPROTO_HTTP | CURLPROTO_HTTPS);
#endif
  curl_easy_setopt(c, CURLOPT_USERAGENT, "cuco");
  *status = 0;
  cc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
  return cc;
}

static struct curl_slist *make_headers(const struct http_opts *o)
{
  struct curl_slist *h = NULL, *t;
  size_t i;

  h = curl_slist_append(NULL, "Content-Type: application/json");
  if (!h)
    return NULL;
  /* Without this curl waits a second for "100 Continue" on big bodies. */
  t = curl_slist_append(h, "Expect:");
  if (!t)
    goto fail;
  h = t;
  for (i = 0; i < o->n_headers; i++) {
    t = curl_slist_append(h, o->headers[i]);
    if (!t)
      goto fail;
    h = t;
  }
  return h;
fail:
  curl_slist_free_all(h);
  return NULL;
}

int http_post_json(const struct http_opts *o, struct http_result *res,
                   struct err *e)
{
  void (*sleep_fn)(void *, double) = o->sleep_fn ? o->sleep_fn : real_sleep;
  size_t max = o->max_body ? o->max_body : HTTP_DEFAULT_MAX_BODY;
  struct curl_slist *hdrs = NULL;
  struct attempt a;
  double t0 = now_s();
  unsigned seed = (unsigned)(t0 * 1e6) ^ (unsigned)getpid();
  CURL *c = NULL;
  CURLcode cc = CURLE_OK;
  int rc = 0, retry;

  memset(res, 0, sizeof(*res));
  buf_init(&res->body, max);
  res->last_retry_after_s = -1;
  http_global_init();
  c = curl_easy_init();
  hdrs = make_headers(o);
  if (!c || !hdrs) {
    rc = err_set(e, ERR_NOMEM, "%s: out of memory setting up HTTP", o->url);
    goto out;
  }
  for (retry = 0;; retry++) {
    double wait;

    buf_reset(&res->body);
    a.body = &res->body;
    a.retry_after_s = -1;
    res->attempts++;
    cc = do_attempt(c, o, hdrs, &a, &res->status);
    if (a.retry_after_s >= 0)
      res->last_retry_after_s = a.retry_after_s;
    if (cc == CURLE_WRITE_ERROR && buf_error(&res->body) == ERR_TOOBIG) {
      res->fail = HTTP_BODY_TOOBIG;
      rc = err_set(e, ERR_TOOBIG,
                   "%s: response body over the %zu-byte cap (HTTP %ld)",
                   o->url, max, res->status);
      goto out;
    }
    if (cc == CURLE_OPERATION_TIMEDOUT) {
      res->fail = HTTP_TIMEDOUT;
      rc = err_set(e, ERR_TIMEOUT,
                   "%s: timed out (connect %.1f s, total %.1f s)", o->url,
                   o->connect_timeout_s > 0 ? o->connect_timeout_s : 10.0,
                   o->timeout_s > 0 ? o->timeout_s : 300.0);
      goto out;
    }
    if (cc == CURLE_OK && !http_status_retryable(res->status)) {
      res->fail = HTTP_DONE;
      goto out;
    }
    if (retry >= o->max_retries || (cc != CURLE_OK && !transient(cc))) {
      if (cc != CURLE_OK) {
        res->fail = HTTP_TRANSPORT;
        rc = err_set(e, ERR_HTTP, "%s: %s (%d attempts)", o->url,
                     curl_easy_strerror(cc), res->attempts);
      } else {
        res->fail = HTTP_DONE;
      }
      goto out;
    }
    wait = backoff_delay(o, retry, &seed);
    if (cc == CURLE_OK && a.retry_after_s >= 0) {
      double cap = o->retry_max_s > 0 ? o->retry_max_s : 60.0;
      wait = a.retry_after_s < cap ? a.retry_after_s : cap;
    }
    sleep_fn(o->sleep_ud, wait);
  }
out:
  res->elapsed_s = now_s() - t0;
  curl_slist_free_all(hdrs);
  if (c)
    curl_easy_cleanup(c);
  return rc;
}

void http_result_release(struct http_result *res)
{
  if (res)
    buf_release(&res->body);
}
