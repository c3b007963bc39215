/* fakellm.c - a real HTTP server on 127.0.0.1 that replays scripted LLM
 * responses and records every request.  Test helper (build/tests/fakellm),
 * documented in tests/data/llm/README.md.
 *
 *   fakellm --scenario DIR --log FILE [--port N]
 *
 * Prints "port N" (the port actually bound; --port 0 or none = any free
 * port) on stdout once listening, then serves until SIGTERM/SIGINT or until
 * its stdin reaches end of file when started with --stdin-eof.
 *
 * DIR holds response files answered in name order, one per request (only
 * names starting with a digit count: 001-429.http, 002-ok.http, ...):
 *
 *   # comment
 *   @status 429          HTTP status (default 200)
 *   @delay_ms 1500       wait before answering
 *   @close               drop the connection without an answer
 *   @repeat 1000         send the body this many times (big bodies)
 *   Retry-After: 1       any other "Name: value" line is a response header
 *                        (Content-Type defaults to application/json)
 *   <empty line>
 *   body, sent verbatim
 *
 * A file whose first line is neither "@...", "#..." nor "Name: value" has
 * no header block: all of it is the body (status 200).
 *
 * A request after the last file gets HTTP 410 with a JSON error (a status
 * no client retries), so a test that sends too much fails fast.
 *
 * FILE gets one JSON object per request, one per line:
 *   {"seq":1,"method":"POST","path":"/v1/chat/completions",
 *    "headers":{"content-type":"application/json",...},   (names lowercase)
 *    "body":"<the raw request body>","response":"001-429.http"}
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES 256
#define MAX_REQ   (64 * 1024 * 1024)

struct scripted {
  char name[256];
  unsigned status;
  long delay_ms;
  int close;
  long repeat;
  json_t *headers; /* name -> value */
  char *body;
  size_t body_len;
};

static struct scripted script[MAX_FILES];
static size_t n_script, next_idx;
static unsigned long seq;
static FILE *logf_;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t stop;
static sigset_t waitmask; /* the mask to wait with: SIGTERM/SIGINT open */

static void die(const char *fmt, const char *a)
{
  fprintf(stderr, "fakellm: ");
  fprintf(stderr, fmt, a);
  fprintf(stderr, "\n");
  exit(2);
}

static int cmp_name(const void *a, const void *b)
{
  return strcmp(((const struct scripted *)a)->name,
                ((const struct scripted *)b)->name);
}

static char *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *s = NULL;
  long n;

  if (!f)
    return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
      fseek(f, 0, SEEK_SET) == 0 && (s = malloc((size_t)n + 1))) {
    *len = fread(s, 1, (size_t)n, f);
    s[*len] = '\0';
  }
  fclose(f);
  return s;
}

/* "@...", "#..." or "Name: value" with a token name. */
static int is_header_line(const char *p)
{
  const char *q = p;

  if (*p == '@' || *p == '#')
    return 1;
  while (isalnum((unsigned char)*q) || *q == '-' || *q == '_')
    q++;
  return q > p && *q == ':';
}

/* Parse one response file (see the top comment). */
static void parse_file(const char *dir, struct scripted *r)
{
  char path[4096], *text, *p, *eol;
  size_t len;

  snprintf(path, sizeof(path), "%s/%s", dir, r->name);
  text = slurp(path, &len);
  if (!text)
    die("cannot read %s", path);
  r->status = 200;
  r->repeat = 1;
  r->headers = json_object();
  p = text;
  for (;;) {
    eol = strchr(p, '\n');
    if (!eol) { /* a file with headers only: empty body */
      eol = p + strlen(p);
    }
    if (eol == p || (eol == p + 1 && *p == '\r')) { /* blank: body next */
      p = *eol ? eol + 1 : eol;
      break;
    }
    if (!is_header_line(p)) /* no header block: the body starts here */
      break;
    *eol = '\0';
    if (eol > p && eol[-1] == '\r')
      eol[-1] = '\0';
    if (*p == '#') {
      /* comment */
    } else if (!strncmp(p, "@status ", 8)) {
      r->status = (unsigned)strtoul(p + 8, NULL, 10);
    } else if (!strncmp(p, "@delay_ms ", 10)) {
      r->delay_ms = strtol(p + 10, NULL, 10);
    } else if (!strcmp(p, "@close")) {
      r->close = 1;
    } else if (!strncmp(p, "@repeat ", 8)) {
      r->repeat = strtol(p + 8, NULL, 10);
    } else if (strchr(p, ':') && *p != '@') {
      char *c = strchr(p, ':'), *v = c + 1;
      *c = '\0';
      while (*v == ' ')
        v++;
      json_object_set_new(r->headers, p, json_string(v));
    } else {
      die("bad header line in %s", path);
    }
    if (eol >= text + len) {
      p = text + len;
      break;
    }
    p = eol + 1;
  }
  r->body_len = (size_t)(text + len - p);
  r->body = malloc(r->body_len + 1);
  memcpy(r->body, p, r->body_len);
  r->body[r->body_len] = '\0';
  free(text);
}

static void load_scenario(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *de;
  size_t i;

  if (!d)
    die("cannot open scenario folder %s", dir);
  while ((de = readdir(d))) {
    if (!isdigit((unsigned char)de->d_name[0]))
      continue;
    if (n_script == MAX_FILES)
      die("too many response files in %s", dir);
    snprintf(script[n_script].name, sizeof(script[0].name), "%s", de->d_name);
    n_script++;
  }
  closedir(d);
  qsort(script, n_script, sizeof(script[0]), cmp_name);
  for (i = 0; i < n_script; i++)
    parse_file(dir, &script[i]);
}

struct conn {
  char *body;
  size_t len;
  int toobig;
  json_t *headers;
};

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind,
                                  const char *key, const char *value)
{
  json_t *h = cls;
  char lower[256];
  size_t i;

  (void)kind;
  for (i = 0; key[i] && i + 1 < sizeof(lower); i++)
    lower[i] = (char)tolower((unsigned char)key[i]);
  lower[i] = '\0';
  json_object_set_new(h, lower, json_string(value ? value : ""));
  return MHD_YES;
}

static void sleep_ms(long ms)
{
  struct timespec ts = {0, 20 * 1000000L};

  /* In slices, so a SIGTERM ends the server without waiting it out. */
  while (ms > 0 && !stop) {
    if (ms < 20)
      ts.tv_nsec = ms * 1000000L;
    nanosleep(&ts, NULL);
    ms -= 20;
  }
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload,
                              size_t *upload_size, void **ptr)
{
  struct conn *st = *ptr;
  struct scripted *r = NULL;
  struct MHD_Response *resp;
  const char *k;
  json_t *v, *rec;
  enum MHD_Result ret;
  char *line, *out;
  size_t i, n;

  (void)cls;
  (void)version;
  if (!st) {
    st = calloc(1, sizeof(*st));
    st->headers = json_object();
    *ptr = st;
    return MHD_YES;
  }
  if (*upload_size) {
    if (st->len + *upload_size > MAX_REQ) {
      st->toobig = 1;
    } else {
      st->body = realloc(st->body, st->len + *upload_size + 1);
      memcpy(st->body + st->len, upload, *upload_size);
      st->len += *upload_size;
      st->body[st->len] = '\0';
    }
    *upload_size = 0;
    return MHD_YES;
  }
  MHD_get_connection_values(c, MHD_HEADER_KIND, add_header, st->headers);
  pthread_mutex_lock(&mu);
  seq++;
  if (next_idx < n_script)
    r = &script[next_idx++];
  rec = json_pack("{s:I, s:s, s:s, s:O, s:s%, s:s}", "seq", (json_int_t)seq,
                  "method", method, "path", url, "headers", st->headers,
                  "body", st->body ? st->body : "", st->len, "response",
                  r ? r->name : "(exhausted)");
  line = rec ? json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  if (line) {
    fprintf(logf_, "%s\n", line);
    fflush(logf_);
  }
  free(line);
  json_decref(rec);
  pthread_mutex_unlock(&mu);
  if (!r) {
    static const char gone[] =
        "{\"error\":{\"message\":\"fakellm: scenario exhausted\"}}";
    resp = MHD_create_response_from_buffer(strlen(gone), (void *)gone,
                                           MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    ret = MHD_queue_response(c, 410, resp);
    MHD_destroy_response(resp);
    return ret;
  }
  sleep_ms(r->delay_ms);
  if (r->close)
    return MHD_NO;
  n = r->body_len * (size_t)(r->repeat > 0 ? r->repeat : 1);
  out = malloc(n + 1);
  for (i = 0; i < n; i += r->body_len ? r->body_len : n + 1)
    memcpy(out + i, r->body, r->body_len);
  resp = MHD_create_response_from_buffer(n, out, MHD_RESPMEM_MUST_FREE);
  if (!json_object_get(r->headers, "Content-Type"))
    MHD_add_response_header(resp, "Content-Type", "application/json");
  json_object_foreach(r->headers, k, v)
      MHD_add_response_header(resp, k, json_string_value(v));
  ret = MHD_queue_response(c, r->status, resp);
  MHD_destroy_response(resp);
  return ret;
}

static void done(void *cls, struct MHD_Connection *c, void **ptr,
                 enum MHD_RequestTerminationCode tc)
{
  struct conn *st = *ptr;

  (void)cls;
  (void)c;
  (void)tc;
  if (st) {
    free(st->body);
    json_decref(st->headers);
    free(st);
  }
  *ptr = NULL;
}

static void on_signal(int sig)
{
  (void)sig;
  stop = 1;
}

int main(int argc, char **argv)
{
  const char *scenario = NULL, *logpath = NULL;
  const union MHD_DaemonInfo *info;
  struct sockaddr_in sa;
  struct MHD_Daemon *d;
  int port = 0, stdin_eof = 0, i;

  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--scenario") && i + 1 < argc)
      scenario = argv[++i];
    else if (!strcmp(argv[i], "--log") && i + 1 < argc)
      logpath = argv[++i];
    else if (!strcmp(argv[i], "--port") && i + 1 < argc)
      port = (int)strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--stdin-eof"))
      stdin_eof = 1;
    else
      die("usage: fakellm --scenario DIR --log FILE [--port N] "
          "[--stdin-eof] (bad argument %s)",
          argv[i]);
  }
  if (!scenario || !logpath)
    die("usage: fakellm --scenario DIR --log FILE [--port N]%s", "");
  load_scenario(scenario);
  logf_ = fopen(logpath, "w");
  if (!logf_)
    die("cannot write %s", logpath);
  {
    /* No SA_RESTART: a read of stdin returns at the signal.  And the two
     * signals stay blocked outside sigsuspend: one that arrives between
     * the test of stop and the wait cannot be lost (pause() lost it, and
     * the server then never exited: 3 hangs in 25 runs, issue 48). */
    struct sigaction act;
    sigset_t block;
    memset(&act, 0, sizeof(act));
    act.sa_handler = on_signal;
    sigemptyset(&act.sa_mask);
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &waitmask);
  }
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons((unsigned short)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION |
                           MHD_USE_INTERNAL_POLLING_THREAD,
                       0, NULL, NULL, answer, NULL, MHD_OPTION_SOCK_ADDR, &sa,
                       MHD_OPTION_NOTIFY_COMPLETED, done, NULL,
                       MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
  if (!d)
    die("cannot listen on 127.0.0.1 (%s)", strerror(errno));
  info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  printf("port %u\n", info ? (unsigned)info->port : (unsigned)port);
  fflush(stdout);
  if (stdin_eof) {
    char tmp[256];
    /* the signals are let through while reading (read returns EINTR) */
    sigprocmask(SIG_SETMASK, &waitmask, NULL);
    while (!stop && read(0, tmp, sizeof(tmp)) > 0)
      ;
  } else {
    while (!stop)
      sigsuspend(&waitmask); /* unblocks and waits atomically */
  }
  MHD_stop_daemon(d);
  fclose(logf_);
  return 0;
}
