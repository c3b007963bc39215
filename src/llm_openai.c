/* llm_openai.c - OpenAI-compatible Chat Completions: the request body and
 * the answer's parser.  The same shape is spoken by api.openai.com, vLLM,
 * SGLang, llama.cpp's server and Ollama's /v1 endpoint. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "llm_impl.h"

char *llm_openai_body(const struct llm_model *m, const struct llm_request *r,
                      int max_tokens)
{
  json_t *root = json_object(), *msgs = json_array();
  char *out = NULL;

  if (!root || !msgs)
    goto out;
  json_object_set_new(root, "model", json_string(m->model));
  if (r->system && *r->system)
    json_array_append_new(
        msgs, json_pack("{s:s, s:s}", "role", "system", "content", r->system));
  llm_json_messages(msgs, r);
  json_object_set(root, "messages", msgs);
  /* Reasoning models (o-series, gpt-5) reject max_tokens and any
   * temperature but the default; the others, and most local servers,
   * know only max_tokens. */
  json_object_set_new(root,
                      m->reasoning ? "max_completion_tokens" : "max_tokens",
                      json_integer(max_tokens));
  if (r->temperature >= 0 && !m->reasoning)
    json_object_set_new(root, "temperature", json_real(r->temperature));
  llm_json_stop(root, "stop", r);
  /* json_string() returns NULL for invalid UTF-8: check the count. */
  if (json_array_size(msgs) !=
      r->n_messages + (r->system && *r->system ? 1 : 0))
    goto out;
  out = llm_json_dump(root);
out:
  json_decref(msgs);
  json_decref(root);
  return out;
}

/* content is a string, or (some servers) an array of {type:text,text}. */
static char *content_text(json_t *content)
{
  if (json_is_string(content))
    return strdup(json_string_value(content));
  return json_is_array(content) ? llm_json_join_text(content, NULL) : NULL;
}

enum llm_outcome llm_openai_parse(const char *body, size_t len,
                                  struct llm_response *resp, char *why,
                                  size_t whylen)
{
  json_t *root = llm_json_object(body, len, why, whylen);
  json_t *choices, *c0, *msg, *fr, *refusal;
  enum llm_outcome o = LLM_OK;

  if (!root)
    return LLM_MALFORMED;
  llm_read_usage_model(root, "prompt_tokens", "completion_tokens", resp);
  choices = json_object_get(root, "choices");
  if (!choices) {
    json_t *em = json_object_get(json_object_get(root, "error"), "message");
    snprintf(why, whylen, "response has no \"choices\"%s%.120s",
             json_is_string(em) ? "; error: " : "",
             json_is_string(em) ? json_string_value(em) : "");
    o = LLM_MALFORMED;
    goto out;
  }
  if (!json_is_array(choices)) {
    snprintf(why, whylen, "\"choices\" is not an array");
    o = LLM_MALFORMED;
    goto out;
  }
  if (json_array_size(choices) == 0) {
    snprintf(why, whylen, "response has an empty \"choices\" array");
    o = LLM_EMPTY;
    goto out;
  }
  c0 = json_array_get(choices, 0);
  msg = json_object_get(c0, "message");
  if (!json_is_object(msg)) {
    snprintf(why, whylen, "choices[0] has no \"message\" object");
    o = LLM_MALFORMED;
    goto out;
  }
  fr = json_object_get(c0, "finish_reason");
  if (json_is_string(fr))
    snprintf(resp->finish_reason, sizeof(resp->finish_reason), "%s",
             json_string_value(fr));
  refusal = json_object_get(msg, "refusal");
  if (json_is_string(refusal) && json_string_length(refusal) > 0) {
    resp->text = strdup(json_string_value(refusal));
    snprintf(why, whylen, "the model refused: %.120s",
             json_string_value(refusal));
    o = LLM_REFUSAL;
    goto out;
  }
  if (!strcmp(resp->finish_reason, "content_filter")) {
    snprintf(why, whylen,
             "the answer was withheld (finish_reason "
             "content_filter)");
    o = LLM_REFUSAL;
    goto out;
  }
  resp->text = content_text(json_object_get(msg, "content"));
  if (!strcmp(resp->finish_reason, "length")) {
    snprintf(why, whylen,
             "the answer was cut at max_tokens (finish_reason length, %ld "
             "tokens out)",
             resp->tokens_out);
    o = LLM_TRUNCATED;
    goto out;
  }
  if (!resp->text || !*resp->text) {
    snprintf(why, whylen, "choices[0].message has no content");
    o = LLM_EMPTY;
  }
out:
  json_decref(root);
  return o;
}
