/* serve.c - `cuco serve`: the web UI and its JSON API over a run database.
 *
 * One libmicrohttpd polling thread answers every request, so the single
 * read-only SQLite connection is never shared between threads.  The main
 * thread only waits for SIGINT/SIGTERM.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>

#include "cmd.h"
#include "log.h"
#include "router.h"
#include "rundb.h"
#include "webassets.h"

#define MEMORY_LIMIT (32u * 1024) /* per connection: headers and URL */

struct server {
  struct rundb *db;
  int loopback; /* bound to a loopback address: check the Host header */
};

/* On a loopback address only loopback names may be in Host, so a web page
 * elsewhere cannot reach the API by rebinding its DNS name to 127.0.0.1. */
static int host_ok(const char *host)
{
  static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};
  size_t i, n;

  if (!host)
    return 0;
  for (i = 0; i < sizeof names / sizeof names[0]; i++) {
    n = strlen(names[i]);
    if (!strncmp(host, names[i], n) && (host[n] == '\0' || host[n] == ':') &&
        strspn(host + n + (host[n] == ':'), "0123456789") ==
            strlen(host + n + (host[n] == ':')))
      return 1;
  }
  return 0;
}

/* Sum of the query arguments' sizes, to bound the whole URL. */
static enum MHD_Result count_arg(void *cls, enum MHD_ValueKind kind,
                                 const char *key, const char *value)
{
  size_t *n = cls;

  (void)kind;
  *n += strlen(key) + (value ? strlen(value) : 0) + 2;
  return MHD_YES;
}

struct arg_state {
  struct router_match *m;
  int status;
};

static enum MHD_Result apply_arg(void *cls, enum MHD_ValueKind kind,
                                 const char *key, const char *value)
{
  struct arg_state *st = cls;

  (void)kind;
  st->status = router_arg(st->m, key, value);
  return st->status == 200 ? MHD_YES : MHD_NO;
}

static void common_headers(struct MHD_Response *r, const char *type)
{
  MHD_add_response_header(r, "Content-Type", type);
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "Cache-Control", "no-store");
  MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
  MHD_add_response_header(r, "Content-Security-Policy",
                          "default-src 'self'; img-src 'self' data:; "
                          "frame-ancestors 'none'; form-action 'none'");
}

/* Queue text (copied) with status; returns MHD's verdict. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
                             const char *type, const void *data, size_t n,
                             enum MHD_ResponseMemoryMode mode)
{
  struct MHD_Response *r;
  enum MHD_Result ok;

  r = MHD_create_response_from_buffer(n, (void *)data, mode);
  if (!r)
    return MHD_NO;
  common_headers(r, type);
  ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status,
                                  json_t *j)
{
  char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

  json_decref(j);
  if (!s)
    return reply(c, 500, "application/json", "{\"error\":\"out of memory\"}",
                 25, MHD_RESPMEM_PERSISTENT);
  /* jansson allocates with malloc, so MHD may free() it. */
  return reply(c, status, "application/json", s, strlen(s),
               MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status,
                                   const char *why)
{
  return reply_json(c, status, json_pack("{s:s}", "error", why));
}

/* The API call of m; errors from the database become 404 or 500. */
static enum MHD_Result api(struct server *sv, struct MHD_Connection *c,
                           const struct router_match *m)
{
  struct err e = {0, ""};
  struct rundb_filter f = {-1, NULL, NULL, 0, 0, 0};
  json_t *j = NULL, *x;

  switch (m->kind) {
  case ROUTE_API_RUN:
    j = rundb_run(sv->db, &e);
    break;
  case ROUTE_API_PROGRAMS:
    f.island = m->island;
    f.status = m->status[0] ? m->status : NULL;
    f.edit_kind = m->edit_kind[0] ? m->edit_kind : NULL;
    x = rundb_programs(sv->db, &f, &e);
    if (x)
      j = json_pack("{s:o}", "programs", x);
    break;
  case ROUTE_API_PROGRAM:
    j = rundb_program(sv->db, m->id, &e);
    break;
  case ROUTE_API_PLOT:
    j = rundb_plot(sv->db, &e);
    break;
  case ROUTE_API_UPDATES:
    f.changes_only = 1;
    f.since_id = m->since;
    f.after_t = m->after;
    x = rundb_programs(sv->db, &f, &e);
    if (x) {
      json_t *run = rundb_run(sv->db, &e);
      if (run)
        j = json_pack("{s:o,s:o}", "programs", x, "run", run);
      else
        json_decref(x);
    }
    break;
  default:
    return reply_error(c, 500, "internal routing error");
  }
  if (!j) {
    if (e.code == ERR_NOTFOUND)
      return reply_error(c, 404, e.msg);
    log_warn("serve: %s", e.msg);
    return reply_error(c, 500, e.msg[0] ? e.msg : "database error");
  }
  return reply_json(c, 200, j);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload,
                              size_t *upload_size, void **req_cls)
{
  struct server *sv = cls;
  struct router_match m;
  struct arg_state st;
  size_t url_len = strlen(url);
  const char *cl, *te;
  int status;

  (void)version;
  (void)upload;
  (void)upload_size;
  /* Answer on the first call, before any body is read: a GET has none,
   * and anything else is refused without reading it. */
  if (*req_cls)
    return MHD_NO;
  *req_cls = sv;
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, count_arg, &url_len);
  status = router_route(method, url, url_len, &m);
  if (status == 200 && sv->loopback &&
      !host_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host"))) {
    status = 421;
    snprintf(m.why, sizeof m.why, "the Host header is not a loopback name");
  }
  if (status == 200) {
    cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    if ((cl && strcmp(cl, "0")) || te) {
      status = 413;
      snprintf(m.why, sizeof m.why, "a request body is not accepted");
    }
  }
  if (status == 200) {
    st.m = &m;
    st.status = 200;
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, apply_arg, &st);
    status = st.status;
  }
  log_debug("serve: %s %s -> %d", method, url, status);
  if (status != 200)
    return reply_error(c, (unsigned)status, m.why);
  if (m.kind == ROUTE_STATIC) {
    const struct webasset *a = webassets_find(m.asset);
    return reply(c, 200, a->type, a->data, a->len, MHD_RESPMEM_PERSISTENT);
  }
  return api(sv, c, &m);
}

/* Parse --bind into *ss; returns the address family or -1. */
static int parse_bind(const char *addr, unsigned port,
                      struct sockaddr_storage *ss)
{
  struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;

  memset(ss, 0, sizeof *ss);
  if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((unsigned short)port);
    return AF_INET;
  }
  if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((unsigned short)port);
    return AF_INET6;
  }
  return -1;
}

int cmd_serve(struct cmd_ctx *ctx, int argc, char **argv)
{
  static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
                                       {"port", required_argument, NULL, 'p'},
                                       {"bind", required_argument, NULL, 'b'},
                                       {NULL, 0, NULL, 0}};
  const char *bind = "127.0.0.1";
  unsigned long port = 8077;
  struct sockaddr_storage ss;
  struct server sv = {NULL, 0};
  struct MHD_Daemon *d = NULL;
  const union MHD_DaemonInfo *info;
  struct err e = {0, ""};
  sigset_t sigs;
  char *end;
  int opt, fam, sig, rc = CMD_FAIL;

  while ((opt = getopt_long(argc, argv, "hp:b:", opts, NULL)) != -1) {
    switch (opt) {
    case 'h':
      return cmd_usage(ctx, 1);
    case 'p':
      port = strtoul(optarg, &end, 10);
      if (*end || !*optarg || port > 65535)
        return cmd_bad_usage(ctx, "--port must be 0..65535, not '%s'", optarg);
      break;
    case 'b':
      bind = optarg;
      break;
    default:
      return cmd_usage(ctx, 0);
    }
  }
  if (optind != argc - 1)
    return cmd_bad_usage(ctx, "give exactly one run database");
  fam = parse_bind(bind, (unsigned)port, &ss);
  if (fam < 0)
    return cmd_bad_usage(ctx,
                         "--bind must be an IPv4 or IPv6 address, "
                         "not '%s'",
                         bind);
  sv.loopback = (fam == AF_INET && !strncmp(bind, "127.", 4)) ||
                (fam == AF_INET6 && !strcmp(bind, "::1"));
  sv.db = rundb_open(argv[optind], &e);
  if (!sv.db) {
    fprintf(stderr, "cuco serve: %s\n", e.msg);
    return CMD_FAIL;
  }
  /* Block the stop signals before MHD starts its thread, so it inherits
   * the mask and only sigwait() below sees them. */
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);
  d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
                           (fam == AF_INET6 ? MHD_USE_IPv6 : 0),
                       (uint16_t)port, NULL, NULL, handle, &sv,
                       MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                       MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                       (size_t)MEMORY_LIMIT, MHD_OPTION_CONNECTION_LIMIT, 64u,
                       MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
  if (!d) {
    fprintf(stderr, "cuco serve: cannot listen on %s port %lu (in use?)\n",
            bind, port);
    goto out;
  }
  if (!sv.loopback)
    log_warn("serve: listening on %s: anyone who can reach this address "
             "can read the run (code, prompts, logs)",
             bind);
  info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  printf("cuco serve: http://%s%s%s:%u/ (%s, read-only; Ctrl-C stops)\n",
         fam == AF_INET6 ? "[" : "", bind, fam == AF_INET6 ? "]" : "",
         info ? info->port : (unsigned)port, argv[optind]);
  fflush(stdout);
  if (sigwait(&sigs, &sig) == 0)
    log_info("serve: stopping on signal %d", sig);
  rc = CMD_OK;
out:
  if (d)
    MHD_stop_daemon(d);
  rundb_close(sv.db);
  return rc;
}
