/* Unit tests for llm*.c and http.c against a real HTTP server (fakellm on
 * 127.0.0.1) replaying the recorded answers in tests/data/llm/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "config.h"
#include "fakellm_client.h"
#include "http.h"
#include "llm.h"
#include "llm_impl.h" /* the provider functions, tested directly */

#define KEY    "sk-test-secret-value-0000"
#define KEYENV "CUCO_TEST_LLM_KEY"
#define DATA   "tests/data/llm/"

/* What the recorder saw. */
static int n_records;
static struct buf rec_all = BUF_INIT(1 << 24); /* every string, for greps */
static char rec_purpose[32], rec_outcome[32], rec_error[256];
static long rec_tin, rec_tout;
static double rec_cost;

static long long recorder(void *ud, const struct llm_record *r)
{
  (void)ud;
  n_records++;
  snprintf(rec_purpose, sizeof(rec_purpose), "%s", r->purpose);
  snprintf(rec_outcome, sizeof(rec_outcome), "%s", r->outcome);
  snprintf(rec_error, sizeof(rec_error), "%s", r->error);
  rec_tin = r->tokens_in;
  rec_tout = r->tokens_out;
  rec_cost = r->cost_usd;
  buf_printf(&rec_all, "%s|%s|%s|%s|%s|%s|%s|%s\n", r->provider, r->model,
             r->model_name, r->purpose, r->outcome, r->error, r->prompt,
             r->response);
  return 40 + n_records;
}

/* Sleeps requested between retries (not slept: tests stay fast). */
static double sleeps[16];
static int n_sleeps;

static void fake_sleep(void *ud, double s)
{
  (void)ud;
  if (n_sleeps < 16)
    sleeps[n_sleeps] = s;
  n_sleeps++;
}

static int setup(void **state)
{
  (void)state;
  n_records = 0;
  n_sleeps = 0;
  buf_reset(&rec_all);
  setenv(KEYENV, KEY, 1);
  /* libcurl honours proxy variables; the fake server is on loopback. */
  unsetenv("http_proxy");
  unsetenv("HTTP_PROXY");
  unsetenv("https_proxy");
  unsetenv("HTTPS_PROXY");
  unsetenv("all_proxy");
  unsetenv("ALL_PROXY");
  return 0;
}

static struct llm_pool *pool_from(const char *ini)
{
  struct config *c = config_new();
  struct err e = {0, ""};
  struct llm_pool *p;

  assert_int_equal(config_load_string(c, "t.ini", ini, &e), 0);
  p = llm_pool_new(c, &e);
  if (!p)
    fail_msg("llm_pool_new: %s", e.msg);
  config_free(c);
  return p;
}

/* A pool with one model of provider at url, plus extra config lines. */
static struct llm_pool *pool_for(const char *provider, const char *url,
                                 const char *extra)
{
  char ini[2048];

  snprintf(ini, sizeof(ini),
           "[llm]\nprovider = %s\nmodel = %s\nbase_url = %s/v1\n"
           "api_key_env = " KEYENV "\ntimeout = 5\nconnect_timeout = 2\n"
           "max_retries = 2\nretry_base = 0.01\nretry_max = 5\n%s",
           provider,
           !strcmp(provider, "anthropic") ? "claude-sonnet-4-5" : "gpt-4.1",
           url, extra ? extra : "");
  return pool_from(ini);
}

static const struct llm_message std_msgs[] = {
    {LLM_ROLE_USER, "Make it faster."}};
static const char *const std_stop[] = {"<END>"};
static const struct llm_request std_req = {"You are a CUDA expert.",
                                           std_msgs,
                                           1,
                                           0.7,
                                           512,
                                           std_stop,
                                           1,
                                           "mutate",
                                           NULL};

/* Run std_req against scenario DATA/prov/name; fake sleeps when fake. */
static int run_case(const char *prov, const char *name, const char *extra,
                    int fake, struct llm_response *resp, struct err *e,
                    json_t **reqs)
{
  struct fakellm f;
  struct llm_pool *p;
  char dir[256];
  int rc;

  snprintf(dir, sizeof(dir), DATA "%s/%s", prov, name);
  assert_int_equal(fakellm_start(&f, dir), 0);
  p = pool_for(prov, f.url, extra);
  llm_pool_set_recorder(p, recorder, NULL);
  if (fake)
    llm_pool_set_sleep(p, fake_sleep, NULL);
  rc = llm_chat(p, NULL, &std_req, resp, e);
  *reqs = fakellm_stop(&f);
  /* resp->model_name points into the pool: keep only what we check. */
  resp->model_name = NULL;
  llm_pool_free(p);
  return rc;
}

static void assert_no_key(const char *s)
{
  if (s && strstr(s, KEY))
    fail_msg("the API key leaked into: %.200s", s);
}

static void test_openai_ok(void **state)
{
  struct llm_response r;
  struct err e = {0, ""};
  json_t *reqs;

  (void)state;
  assert_int_equal(run_case("openai", "ok", NULL, 1, &r, &e, &reqs), 0);
  assert_int_equal(r.outcome, LLM_OK);
  assert_non_null(strstr(r.text, ">>>>>>> REPLACE"));
  assert_string_equal(r.finish_reason, "stop");
  assert_string_equal(r.model, "gpt-4.1-2025-04-14");
  assert_string_equal(r.provider, "openai");
  assert_int_equal(r.tokens_in, 1200);
  assert_int_equal(r.tokens_out, 350);
  /* gpt-4.1 default prices: $2 in, $8 out per million. */
  assert_true(fabs(r.cost_usd - (1200 * 2.0 + 350 * 8.0) / 1e6) < 1e-12);
  assert_int_equal(r.attempts, 1);
  assert_int_equal(r.call_id, 41);
  assert_true(r.latency_s > 0 && r.latency_s < 5);
  assert_int_equal(json_array_size(reqs), 1);
  assert_string_equal(fakellm_field(reqs, 0, "method"), "POST");
  assert_string_equal(fakellm_field(reqs, 0, "path"), "/v1/chat/completions");
  assert_string_equal(
      fakellm_field(reqs, 0, "body"),
      "{\"model\":\"gpt-4.1\",\"messages\":[{\"role\":\"system\",\"content\":"
      "\"You are a CUDA expert.\"},{\"role\":\"user\",\"content\":\"Make it "
      "faster.\"}],\"max_tokens\":512,\"temperature\":0.7,\"stop\":[\"<END>\""
      "]}");
  assert_string_equal(fakellm_header(reqs, 0, "authorization"), "Bearer " KEY);
  assert_string_equal(fakellm_header(reqs, 0, "content-type"),
                      "application/json");
  assert_null(fakellm_header(reqs, 0, "x-api-key"));
  assert_null(fakellm_header(reqs, 0, "expect"));
  assert_int_equal(n_records, 1);
  assert_string_equal(rec_purpose, "mutate");
  assert_string_equal(rec_outcome, "ok");
  assert_int_equal(rec_tin, 1200);
  assert_int_equal(rec_tout, 350);
  assert_true(rec_cost == r.cost_usd);
  assert_non_null(strstr(buf_str(&rec_all), "[system]\nYou are a CUDA "
                                            "expert.\n[user]\nMake it "
                                            "faster.\n"));
  assert_no_key(buf_str(&rec_all));
  llm_response_release(&r);
  json_decref(reqs);
}

static void test_anthropic_ok(void **state)
{
  struct llm_response r;
  struct err e = {0, ""};
  json_t *reqs;

  (void)state;
  assert_int_equal(run_case("anthropic", "ok", NULL, 1, &r, &e, &reqs), 0);
  assert_int_equal(r.outcome, LLM_OK);
  assert_non_null(strstr(r.text, "Use per-tile puts."));
  assert_string_equal(r.finish_reason, "end_turn");
  assert_string_equal(r.model, "claude-sonnet-4-5-20250929");
  assert_string_equal(r.provider, "anthropic");
  assert_int_equal(r.tokens_in, 2095);
  assert_int_equal(r.tokens_out, 503);
  /* claude-sonnet-4 default prices: $3 in, $15 out per million. */
  assert_true(fabs(r.cost_usd - (2095 * 3.0 + 503 * 15.0) / 1e6) < 1e-12);
  assert_string_equal(fakellm_field(reqs, 0, "path"), "/v1/messages");
  assert_string_equal(
      fakellm_field(reqs, 0, "body"),
      "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":512,\"system\":\"You "
      "are a CUDA expert.\",\"messages\":[{\"role\":\"user\",\"content\":"
      "\"Make it faster.\"}],\"temperature\":0.7,\"stop_sequences\":[\"<END>"
      "\"]}");
  assert_string_equal(fakellm_header(reqs, 0, "x-api-key"), KEY);
  assert_string_equal(fakellm_header(reqs, 0, "anthropic-version"),
                      "2023-06-01");
  assert_null(fakellm_header(reqs, 0, "authorization"));
  assert_int_equal(n_records, 1);
  llm_response_release(&r);
  json_decref(reqs);
}

static void test_configured_prices_win(void **state)
{
  struct llm_response r;
  struct err e = {0, ""};
  json_t *reqs;

  (void)state;
  assert_int_equal(run_case("openai", "ok", "price_in = 10\nprice_out = 20\n",
                            1, &r, &e, &reqs),
                   0);
  assert_true(fabs(r.cost_usd - (1200 * 10.0 + 350 * 20.0) / 1e6) < 1e-12);
  llm_response_release(&r);
  json_decref(reqs);
}

static void retry_then_ok(const char *prov, const char *scen, int ra)
{
  struct llm_response r;
  struct err e = {0, ""};
  json_t *reqs;

  assert_int_equal(run_case(prov, scen, NULL, 1, &r, &e, &reqs), 0);
  assert_int_equal(r.outcome, LLM_OK);
  assert_int_equal(r.attempts, 2);
  assert_int_equal(json_array_size(reqs), 2);
  assert_string_equal(fakellm_field(reqs, 0, "body"),
                      fakellm_field(reqs, 1, "body"));
  assert_int_equal(n_sleeps, 1);
  if (ra) /* Retry-After: 1 replaces the 0.01 s backoff */
    assert_true(sleeps[0] == 1.0);
  else /* equal jitter around retry_base = 0.01 */
    assert_true(sleeps[0] >= 0.005 && sleeps[0] <= 0.01);
  assert_int_equal(n_records, 1);
  assert_true(r.cost_usd > 0);
  llm_response_release(&r);
  json_decref(reqs);
}

static void test_ratelimit_then_ok(void **state)
{
  (void)state;
  retry_then_ok("openai", "ratelimit_then_ok", 1);
  setup(NULL);
  retry_then_ok("anthropic", "ratelimit_then_ok", 1);
}

static void test_server_error_then_ok(void **state)
{
  (void)state;
  retry_then_ok("openai", "server_error_then_ok", 0);
  setup(NULL);
  retry_then_ok("anthropic", "server_error_then_ok", 0); /* 529 */
  setup(NULL);
  retry_then_ok("openai", "dropped_then_ok", 0);
  setup(NULL);
  retry_then_ok("anthropic", "dropped_then_ok", 0);
}

/* One failing case: expected return code and outcome, number of requests
 * the server saw, and a word the error must hold. */
static void fail_case(const char *prov, const char *scen, const char *extra,
                      int want_rc, enum llm_outcome want, size_t nreq,
                      const char *word)
{
  struct llm_response r;
  struct err e = {0, ""};
  json_t *reqs;
  int rc;

  setup(NULL);
  rc = run_case(prov, scen, extra, 1, &r, &e, &reqs);
  if (rc != want_rc || r.outcome != want)
    fail_msg("%s/%s: rc %d outcome %s (%s), wanted rc %d outcome %s", prov,
             scen, rc, llm_outcome_name(r.outcome), e.msg, want_rc,
             llm_outcome_name(want));
  assert_int_equal(json_array_size(reqs), nreq);
  if (!strstr(e.msg, word))
    fail_msg("%s/%s: '%s' not in '%s'", prov, scen, word, e.msg);
  assert_no_key(e.msg);
  assert_no_key(r.text);
  assert_no_key(buf_str(&rec_all));
  assert_int_equal(n_records, 1);
  assert_string_equal(rec_outcome, llm_outcome_name(want));
  assert_string_equal(rec_error, e.msg);
  llm_response_release(&r);
  json_decref(reqs);
}

static void test_failures(void **state)
{
  static const char *const provs[] = {"openai", "anthropic"};
  size_t i;

  (void)state;
  for (i = 0; i < 2; i++) {
    const char *p = provs[i];
    fail_case(p, "ratelimit_always", NULL, ERR_HTTP, LLM_RATELIMIT, 3, "429");
    fail_case(p, "timeout", "timeout = 0.3\n", ERR_TIMEOUT, LLM_TIMEOUT, 1,
              "timed out");
    fail_case(p, "malformed", NULL, ERR_LLM, LLM_MALFORMED, 1,
              "not a JSON object");
    fail_case(p, "oversized", "max_response_bytes = 64KiB\n", ERR_TOOBIG,
              LLM_TOOBIG, 1, "65536-byte cap");
    fail_case(p, "refusal", NULL, ERR_LLM, LLM_REFUSAL, 1, "refused");
    fail_case(p, "truncated", NULL, ERR_LLM, LLM_TRUNCATED, 1, "max_tokens");
    /* 401: one request only (not retried), names the variable, and the
     * body's echo of the key is masked. */
    fail_case(p, "unauthorized", NULL, ERR_HTTP, LLM_AUTH, 1, KEYENV);
  }
  fail_case("openai", "empty_choices", NULL, ERR_LLM, LLM_EMPTY, 1,
            "empty \"choices\"");
  fail_case("openai", "bad_request", NULL, ERR_HTTP, LLM_HTTP, 1,
            "Unsupported parameter");
}

static void test_partial_answers_count(void **state)
{
  struct llm_response r;
  struct err e = {0, ""};
  json_t *reqs;

  (void)state;
  assert_int_equal(run_case("openai", "truncated", NULL, 1, &r, &e, &reqs),
                   ERR_LLM);
  assert_string_equal(r.finish_reason, "length");
  assert_non_null(r.text);
  assert_non_null(strstr(r.text, "<<<<<<< SEARCH"));
  assert_int_equal(r.tokens_out, 512);
  assert_true(fabs(r.cost_usd - (1200 * 2.0 + 512 * 8.0) / 1e6) < 1e-12);
  llm_response_release(&r);
  json_decref(reqs);
  assert_int_equal(run_case("openai", "refusal", NULL, 1, &r, &e, &reqs),
                   ERR_LLM);
  assert_string_equal(r.text, "I'm sorry, I can't help with that.");
  llm_response_release(&r);
  json_decref(reqs);
}

static void test_transport_error(void **state)
{
  struct llm_pool *p = pool_for("openai", "http://127.0.0.1:1", NULL);
  struct llm_response r;
  struct err e = {0, ""};

  (void)state;
  llm_pool_set_sleep(p, fake_sleep, NULL);
  llm_pool_set_recorder(p, recorder, NULL);
  assert_int_equal(llm_chat(p, NULL, &std_req, &r, &e), ERR_HTTP);
  assert_int_equal(r.outcome, LLM_TRANSPORT);
  assert_int_equal(r.attempts, 3); /* max_retries = 2 */
  assert_int_equal(n_sleeps, 2);
  assert_true(sleeps[1] >= 0.01 && sleeps[1] <= 0.02); /* doubled */
  assert_non_null(strstr(e.msg, "127.0.0.1:1"));
  assert_int_equal(n_records, 1);
  assert_string_equal(rec_outcome, "transport");
  llm_pool_free(p);
  /* A URL curl cannot parse will not improve: no retry. */
  n_sleeps = 0;
  p = pool_for("openai", "http://[::1", NULL);
  llm_pool_set_sleep(p, fake_sleep, NULL);
  assert_int_equal(llm_chat(p, NULL, &std_req, &r, &e), ERR_HTTP);
  assert_int_equal(r.outcome, LLM_TRANSPORT);
  assert_int_equal(r.attempts, 1);
  assert_int_equal(n_sleeps, 0);
  llm_pool_free(p);
}

/* The real sleep path: Retry-After: 1 makes the call last >= 1 s. */
static void test_retry_after_really_waits(void **state)
{
  struct llm_response r;
  struct err e = {0, ""};
  json_t *reqs;

  (void)state;
  assert_int_equal(
      run_case("openai", "ratelimit_then_ok", NULL, 0, &r, &e, &reqs), 0);
  assert_true(r.latency_s >= 1.0 && r.latency_s < 4.0);
  llm_response_release(&r);
  json_decref(reqs);
}

static void test_retry_after_capped(void **state)
{
  struct llm_response r;
  struct err e = {0, ""};
  json_t *reqs;

  (void)state;
  assert_int_equal(run_case("openai", "ratelimit_then_ok", "retry_max = 0.2\n",
                            1, &r, &e, &reqs),
                   0);
  assert_true(sleeps[0] == 0.2);
  llm_response_release(&r);
  json_decref(reqs);
}

static void test_no_key(void **state)
{
  struct llm_pool *p = pool_for("openai", "http://127.0.0.1:1", NULL);
  struct llm_response r;
  struct err e = {0, ""};

  (void)state;
  unsetenv(KEYENV);
  llm_pool_set_recorder(p, recorder, NULL);
  assert_int_equal(llm_chat(p, NULL, &std_req, &r, &e), ERR_CONFIG);
  assert_int_equal(r.outcome, LLM_NOKEY);
  assert_non_null(strstr(e.msg, KEYENV));
  assert_int_equal(n_records, 0);
  llm_pool_free(p);
}

static void test_key_with_newline(void **state)
{
  struct llm_pool *p = pool_for("openai", "http://127.0.0.1:1", NULL);
  struct llm_response r;
  struct err e = {0, ""};

  (void)state;
  setenv(KEYENV, "sk-abc\r\nX-Evil: 1", 1);
  assert_int_equal(llm_chat(p, NULL, &std_req, &r, &e), ERR_CONFIG);
  assert_int_equal(r.outcome, LLM_NOKEY);
  assert_non_null(strstr(e.msg, "control character"));
  assert_null(strstr(e.msg, "sk-abc"));
  llm_pool_free(p);
}

struct thread_arg {
  struct llm_pool *p;
  int rc;
};

static void *chat_thread(void *ud)
{
  struct thread_arg *a = ud;
  struct llm_response r;
  struct err e = {0, ""};

  a->rc = llm_chat(a->p, NULL, &std_req, &r, &e);
  llm_response_release(&r);
  return NULL;
}

/* Four threads on one pool: every call counted and recorded once. */
static void test_concurrent_calls(void **state)
{
  struct thread_arg a[4];
  pthread_t t[4];
  struct fakellm f;
  struct llm_pool *p;
  json_t *reqs;
  int i;

  (void)state;
  assert_int_equal(fakellm_start(&f, DATA "openai/four_ok"), 0);
  p = pool_for("openai", f.url, NULL);
  llm_pool_set_recorder(p, recorder, NULL);
  for (i = 0; i < 4; i++) {
    a[i].p = p;
    assert_int_equal(pthread_create(&t[i], NULL, chat_thread, &a[i]), 0);
  }
  for (i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(a[i].rc, 0);
  }
  reqs = fakellm_stop(&f);
  assert_int_equal(json_array_size(reqs), 4);
  assert_int_equal(n_records, 4);
  assert_true(fabs(llm_pool_spent(p) - 4 * 0.0052) < 1e-12);
  json_decref(reqs);
  llm_pool_free(p);
}

static void test_budget(void **state)
{
  struct fakellm f;
  struct llm_pool *p;
  struct llm_response r;
  struct err e = {0, ""};
  json_t *reqs;

  (void)state;
  assert_int_equal(fakellm_start(&f, DATA "doctor"), 0); /* two answers */
  p = pool_for("openai", f.url, "budget_usd = 0.006\n");
  assert_true(llm_pool_budget(p) == 0.006);
  llm_pool_set_recorder(p, recorder, NULL);
  assert_int_equal(llm_chat(p, NULL, &std_req, &r, &e), 0); /* $0.0052 */
  llm_response_release(&r);
  assert_true(fabs(llm_pool_spent(p) - 0.0052) < 1e-12);
  assert_int_equal(llm_chat(p, NULL, &std_req, &r, &e), 0); /* $0.0104 */
  llm_response_release(&r);
  assert_int_equal(llm_chat(p, NULL, &std_req, &r, &e), ERR_BUDGET);
  assert_int_equal(r.outcome, LLM_BUDGET);
  assert_non_null(strstr(e.msg, "budget"));
  reqs = fakellm_stop(&f);
  assert_int_equal(json_array_size(reqs), 2); /* the third was not sent */
  assert_int_equal(n_records, 2);
  json_decref(reqs);
  /* A resumed run starts from what it had spent. */
  llm_pool_set_budget(p, 0.5);
  llm_pool_set_spent(p, 0.75);
  assert_int_equal(llm_chat(p, NULL, &std_req, &r, &e), ERR_BUDGET);
  llm_pool_set_budget(p, 0);
  assert_true(llm_pool_budget(p) == 0); /* unlimited */
  llm_pool_free(p);
}

static void test_pool_sampling(void **state)
{
  struct llm_pool *p = pool_from(
      "[llm]\nprovider = openai\nmodel = gpt-4.1\ntimeout = 7\n"
      "api_key_env = " KEYENV "\n"
      "[model.claude]\nprovider = anthropic\nmodel = claude-opus-4-1\n"
      "weight = 3\n"
      "[model.off]\nmodel = gpt-4o\nweight = 0\n");
  const struct llm_model *a, *b;
  unsigned seed = 12345;
  int i, nb = 0;

  (void)state;
  assert_int_equal(llm_pool_count(p), 3);
  a = llm_pool_find(p, "default");
  b = llm_pool_find(p, "claude");
  assert_non_null(a);
  assert_non_null(b);
  assert_ptr_equal(llm_pool_model(p, 0), a);
  assert_null(llm_pool_model(p, 3));
  /* [model.claude] inherits the timeout, but not [llm]'s OpenAI key or
   * base URL (another provider). */
  assert_true(b->timeout_s == 7);
  assert_int_equal(b->provider, LLM_PROVIDER_ANTHROPIC);
  assert_string_equal(b->base_url, "https://api.anthropic.com/v1");
  assert_string_equal(b->api_key_env, "ANTHROPIC_API_KEY");
  assert_true(b->price_in == 15 && b->price_out == 75 && b->price_from_table);
  assert_string_equal(llm_pool_find(p, "off")->api_key_env, KEYENV);
  assert_ptr_equal(llm_pool_pick(p, 0.0), a);
  assert_ptr_equal(llm_pool_pick(p, 0.2499), a);
  assert_ptr_equal(llm_pool_pick(p, 0.2501), b);
  assert_ptr_equal(llm_pool_pick(p, 0.9999), b);
  for (i = 0; i < 20000; i++) {
    const struct llm_model *m =
        llm_pool_pick(p, (double)rand_r(&seed) / ((double)RAND_MAX + 1.0));
    assert_true(m == a || m == b); /* weight 0 is never picked */
    nb += m == b;
  }
  assert_true(nb > 14700 && nb < 15300); /* 3/4 of 20000 */
  llm_pool_free(p);
  p = pool_from("[build]\nnvcc = x\n");
  assert_int_equal(llm_pool_count(p), 0);
  assert_null(llm_pool_pick(p, 0.5));
  llm_pool_free(p);
}

static void config_error(const char *ini, const char *word)
{
  struct config *c = config_new();
  struct err e = {0, ""};

  assert_int_equal(config_load_string(c, "t.ini", ini, &e), 0);
  assert_null(llm_pool_new(c, &e));
  assert_int_equal(e.code, ERR_CONFIG);
  if (!strstr(e.msg, word))
    fail_msg("'%s' not in '%s'", word, e.msg);
  assert_no_key(e.msg);
  config_free(c);
}

static void test_config_errors(void **state)
{
  (void)state;
  config_error("[llm]\nprovider = gemini\nmodel = x\n", "t.ini:2");
  config_error("[llm]\nmodel = x\napi_key_env = " KEY "\n", "t.ini:3");
  config_error("[llm]\nmodel = x\napi_key_env = " KEY "\n", "NAME");
  config_error("[llm]\nmodel = x\nbase_url = ftp://h/v1\n", "http://");
  config_error("[llm]\nmodel = x\ntimeout = soon\n", "t.ini:3");
  config_error("[model.b]\nweight = 2\n", "model.b");
  config_error("[llm]\nmodel = x\nmax_response_bytes = 1\n", "t.ini:3");
  config_error("[llm]\nmodel = x\nbudget_usd = -1\n", "t.ini:3");
}

static void test_price_table(void **state)
{
  double in, out;

  (void)state;
  assert_int_equal(llm_default_price("gpt-4o-mini-2024-07-18", &in, &out), 1);
  assert_true(in == 0.15 && out == 0.60);
  assert_int_equal(llm_default_price("gpt-4o", &in, &out), 1);
  assert_true(in == 2.50 && out == 10.00);
  assert_int_equal(llm_default_price("gpt-5-mini", &in, &out), 1);
  assert_true(in == 0.25 && out == 2.00);
  assert_int_equal(llm_default_price("claude-opus-4-5-20251101", &in, &out),
                   1);
  assert_true(in == 5 && out == 25);
  assert_int_equal(llm_default_price("claude-opus-4-1", &in, &out), 1);
  assert_true(in == 15 && out == 75);
  assert_int_equal(llm_default_price("llama-3.1-70b", &in, &out), 0);
}

static void test_reasoning_body(void **state)
{
  struct llm_pool *p = pool_from("[llm]\nmodel = gpt-5\n");
  const struct llm_model *m = llm_pool_model(p, 0);
  char *body;

  (void)state;
  assert_int_equal(m->reasoning, 1);
  assert_string_equal(m->api_key_env, "OPENAI_API_KEY");
  body = llm_openai_body(m, &std_req, 100);
  assert_string_equal(
      body, "{\"model\":\"gpt-5\",\"messages\":[{\"role\":\"system\","
            "\"content\":\"You are a CUDA expert.\"},{\"role\":\"user\","
            "\"content\":\"Make it faster.\"}],\"max_completion_tokens\":100,"
            "\"stop\":[\"<END>\"]}");
  free(body);
  llm_pool_free(p);
  /* A local server: no key variable unless named. */
  p = pool_from("[llm]\nmodel = qwen\nbase_url = http://127.0.0.1:8000/v1/\n");
  assert_string_equal(llm_pool_model(p, 0)->api_key_env, "");
  assert_string_equal(llm_pool_model(p, 0)->base_url,
                      "http://127.0.0.1:8000/v1");
  llm_pool_free(p);
}

static void test_parsers(void **state)
{
  struct llm_response r;
  char why[256];
  static const char oa_parts[] =
      "{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":"
      "\"ab\"},{\"type\":\"text\",\"text\":\"cd\"}]},\"finish_reason\":"
      "\"stop\"}]}";
  static const char an_think[] =
      "{\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\"},{\"type\":"
      "\"text\",\"text\":\"done\"}],\"stop_reason\":\"end_turn\"}";

  (void)state;
  memset(&r, 0, sizeof(r));
  assert_int_equal(
      llm_openai_parse(oa_parts, strlen(oa_parts), &r, why, sizeof(why)),
      LLM_OK);
  assert_string_equal(r.text, "abcd");
  llm_response_release(&r);
  memset(&r, 0, sizeof(r));
  assert_int_equal(
      llm_anthropic_parse(an_think, strlen(an_think), &r, why, sizeof(why)),
      LLM_OK);
  assert_string_equal(r.text, "done");
  llm_response_release(&r);
  memset(&r, 0, sizeof(r));
  assert_int_equal(llm_openai_parse("[1]", 3, &r, why, sizeof(why)),
                   LLM_MALFORMED);
  assert_int_equal(
      llm_anthropic_parse("{\"content\":[]}", 14, &r, why, sizeof(why)),
      LLM_EMPTY);
  llm_response_release(&r);
  assert_true(http_parse_retry_after("3") == 3);
  assert_true(http_parse_retry_after(" 2 \r\n") == 2);
  assert_true(http_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") < 0);
  assert_true(http_parse_retry_after("-1") < 0);
}

static void test_embeddings(void **state)
{
  struct fakellm f;
  struct llm_pool *p;
  struct llm_embedding emb;
  struct err e = {0, ""};
  const char *const texts[] = {"a", "b"};
  char extra[256];
  json_t *reqs;

  (void)state;
  assert_int_equal(fakellm_start(&f, DATA "openai/embeddings"), 0);
  snprintf(extra, sizeof(extra), "[embed]\nmodel = text-embedding-3-small\n");
  p = pool_for("openai", f.url, extra);
  llm_pool_set_recorder(p, recorder, NULL);
  assert_int_equal(llm_embed_available(p), 1);
  assert_int_equal(llm_embed(p, texts, 2, &emb, &e), 0);
  reqs = fakellm_stop(&f);
  assert_int_equal(emb.n, 2);
  assert_int_equal(emb.dim, 3);
  /* The answer lists index 1 first: rows follow "index". */
  assert_true(emb.data[0] == 0.125f && emb.data[2] == -1.5f);
  assert_true(emb.data[3] == 0.25f && emb.data[5] == 1.0f);
  assert_int_equal(emb.tokens_in, 8);
  assert_true(fabs(emb.cost_usd - 8 * 0.02 / 1e6) < 1e-15);
  assert_string_equal(fakellm_field(reqs, 0, "path"), "/v1/embeddings");
  assert_string_equal(fakellm_field(reqs, 0, "body"),
                      "{\"model\":\"text-embedding-3-small\",\"input\":[\"a\","
                      "\"b\"]}");
  assert_string_equal(fakellm_header(reqs, 0, "authorization"), "Bearer " KEY);
  assert_string_equal(rec_purpose, "embed");
  llm_embedding_release(&emb);
  json_decref(reqs);
  llm_pool_free(p);
  p = pool_for("openai", "http://127.0.0.1:1", NULL);
  assert_int_equal(llm_embed_available(p), 0);
  assert_int_equal(llm_embed(p, texts, 2, &emb, &e), ERR_NOTFOUND);
  llm_pool_free(p);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_openai_ok, setup),
      cmocka_unit_test_setup(test_anthropic_ok, setup),
      cmocka_unit_test_setup(test_configured_prices_win, setup),
      cmocka_unit_test_setup(test_ratelimit_then_ok, setup),
      cmocka_unit_test_setup(test_server_error_then_ok, setup),
      cmocka_unit_test_setup(test_failures, setup),
      cmocka_unit_test_setup(test_partial_answers_count, setup),
      cmocka_unit_test_setup(test_transport_error, setup),
      cmocka_unit_test_setup(test_retry_after_really_waits, setup),
      cmocka_unit_test_setup(test_retry_after_capped, setup),
      cmocka_unit_test_setup(test_no_key, setup),
      cmocka_unit_test_setup(test_key_with_newline, setup),
      cmocka_unit_test_setup(test_concurrent_calls, setup),
      cmocka_unit_test_setup(test_budget, setup),
      cmocka_unit_test_setup(test_pool_sampling, setup),
      cmocka_unit_test_setup(test_config_errors, setup),
      cmocka_unit_test_setup(test_price_table, setup),
      cmocka_unit_test_setup(test_reasoning_body, setup),
      cmocka_unit_test_setup(test_parsers, setup),
      cmocka_unit_test_setup(test_embeddings, setup),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);

  buf_release(&rec_all);
  return rc;
}
