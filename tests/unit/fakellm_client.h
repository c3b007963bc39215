/* fakellm_client.h - start and stop build/tests/fakellm from a cmocka test
 * and read back the requests it recorded.  Header-only (static functions)
 * so any tests/unit/test_*.c can include it.
 *
 *   struct fakellm f;
 *   assert_int_equal(fakellm_start(&f, "tests/data/llm/openai/ok"), 0);
 *   ... point base_url at f.url (e.g. "http://127.0.0.1:PORT/v1") ...
 *   json_t *reqs = fakellm_stop(&f);   // array of recorded requests
 *
 * The binary is $BUILD/tests/fakellm (BUILD defaults to "build"), relative
 * to the repository root where tests run.
 */
#ifndef CUCO_FAKELLM_CLIENT_H
#define CUCO_FAKELLM_CLIENT_H

#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct fakellm {
  pid_t pid;
  int port;
  char url[64];   /* "http://127.0.0.1:PORT" (no path) */
  char dir[64];   /* temporary folder holding the log */
  char log[128];  /* the request log (JSON lines) */
};

/* Start the server on a free port with the scenario folder dir.
 * Returns 0, or -1 (with a message on stderr). */
static int fakellm_start(struct fakellm *f, const char *scenario)
{
  const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
  char bin[256], line[128];
  posix_spawn_file_actions_t fa;
  int pfd[2];
  FILE *rd;
  char *argv[8];

  memset(f, 0, sizeof(*f));
  snprintf(bin, sizeof(bin), "%s/tests/fakellm", build);
  snprintf(f->dir, sizeof(f->dir), "/tmp/fakellm.XXXXXX");
  if (!mkdtemp(f->dir) || pipe(pfd))
    return -1;
  snprintf(f->log, sizeof(f->log), "%s/requests.jsonl", f->dir);
  argv[0] = bin;
  argv[1] = (char *)"--scenario";
  argv[2] = (char *)scenario;
  argv[3] = (char *)"--log";
  argv[4] = f->log;
  argv[5] = NULL;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
  posix_spawn_file_actions_addclose(&fa, pfd[0]);
  if (posix_spawn(&f->pid, bin, &fa, NULL, argv, environ)) {
    fprintf(stderr, "# cannot start %s\n", bin);
    posix_spawn_file_actions_destroy(&fa);
    return -1;
  }
  posix_spawn_file_actions_destroy(&fa);
  close(pfd[1]);
  rd = fdopen(pfd[0], "r");
  if (!rd || !fgets(line, sizeof(line), rd) ||
      sscanf(line, "port %d", &f->port) != 1) {
    fprintf(stderr, "# fakellm did not report its port\n");
    if (rd)
      fclose(rd);
    kill(f->pid, SIGKILL);
    waitpid(f->pid, NULL, 0);
    return -1;
  }
  fclose(rd);
  snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", f->port);
  return 0;
}

/* Stop the server; returns the recorded requests as a JSON array (caller
 * decrefs; empty array when none) and removes the temporary folder. */
static json_t *fakellm_stop(struct fakellm *f)
{
  json_t *arr = json_array();
  FILE *lf;

  if (f->pid > 0) {
    kill(f->pid, SIGTERM);
    waitpid(f->pid, NULL, 0);
    f->pid = 0;
  }
  lf = fopen(f->log, "r");
  /* One JSON value after the other (lines may be long: huge bodies). */
  if (lf) {
    json_error_t je;
    json_t *v;
    while ((v = json_loadf(lf, JSON_DISABLE_EOF_CHECK, &je)))
      json_array_append_new(arr, v);
    fclose(lf);
  }
  unlink(f->log);
  rmdir(f->dir);
  return arr;
}

/* The n-th recorded request's field (borrowed), e.g. "body", "path". */
static const char *fakellm_field(json_t *reqs, size_t n, const char *field)
{
  return json_string_value(json_object_get(json_array_get(reqs, n), field));
}

/* The n-th request's header (lowercase name), or NULL. */
static const char *fakellm_header(json_t *reqs, size_t n, const char *name)
{
  return json_string_value(json_object_get(
      json_object_get(json_array_get(reqs, n), "headers"), name));
}

#endif
