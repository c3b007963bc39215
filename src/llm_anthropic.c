/* llm_anthropic.c - Anthropic Messages API: the request body and the
 * answer's parser (content blocks, stop_reason, usage). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm.h"
#include "llm_impl.h"

char *llm_anthropic_body(const struct llm_model *m,
                         const struct llm_request *r, int max_tokens)
{
  json_t *root = json_object(), *msgs = json_array(), *stop;
  char *out = NULL;
  size_t i;

  if (!root || !msgs)
    goto out;
  json_object_set_new(root, "model", json_string(m->model));
  json_object_set_new(root, "max_tokens", json_integer(max_tokens));
  /* Anthropic takes the system prompt as a top-level field, not a
   * message. */
  if (r->system && *r->system)
    json_object_set_new(root, "system", json_string(r->system));
  for (i = 0; i < r->n_messages; i++)
    json_array_append_new(
        msgs, json_pack("{s:s, s:s}", "role",
                        r->messages[i].role == LLM_ROLE_ASSISTANT ? "assistant"
                                                                  : "user",
                        "content", r->messages[i].content));
  json_object_set(root, "messages", msgs);
  if (r->temperature >= 0)
    json_object_set_new(root, "temperature", json_real(r->temperature));
  if (r->n_stop) {
    stop = json_array();
    for (i = 0; i < r->n_stop; i++)
      json_array_append_new(stop, json_string(r->stop[i]));
    json_object_set_new(root, "stop_sequences", stop);
  }
  if (json_array_size(msgs) != r->n_messages ||
      (r->system && *r->system && !json_object_get(root, "system")))
    goto out;
  out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER |
                             JSON_REAL_PRECISION(10));
out:
  json_decref(msgs);
  json_decref(root);
  return out;
}

static int is_text_block(json_t *blk)
{
  const char *type = json_string_value(json_object_get(blk, "type"));

  return type && !strcmp(type, "text");
}

enum llm_outcome llm_anthropic_parse(const char *body, size_t len,
                                     struct llm_response *resp, char *why,
                                     size_t whylen)
{
  json_error_t je;
  json_t *root = json_loadb(body, len, 0, &je);
  json_t *content, *sr, *blk;
  enum llm_outcome o = LLM_OK;
  size_t i, n = 0;
  char *p;

  why[0] = '\0';
  if (!root || !json_is_object(root)) {
    snprintf(why, whylen, "response is not a JSON object (%s)",
             root ? "other JSON value" : je.text);
    o = LLM_MALFORMED;
    goto out;
  }
  llm_read_usage_model(root, "input_tokens", "output_tokens", resp);
  sr = json_object_get(root, "stop_reason");
  if (json_is_string(sr))
    snprintf(resp->finish_reason, sizeof(resp->finish_reason), "%s",
             json_string_value(sr));
  content = json_object_get(root, "content");
  if (!json_is_array(content)) {
    snprintf(why, whylen, "response has no \"content\" array");
    o = LLM_MALFORMED;
    goto out;
  }
  /* Concatenate the text blocks; thinking and tool blocks are skipped. */
  json_array_foreach(content, i, blk)
  {
    json_t *t = json_object_get(blk, "text");
    if (!json_is_object(blk)) {
      snprintf(why, whylen, "content[%zu] is not an object", i);
      o = LLM_MALFORMED;
      goto out;
    }
    if (is_text_block(blk) && json_is_string(t))
      n += json_string_length(t);
  }
  resp->text = p = malloc(n + 1);
  if (!p) {
    snprintf(why, whylen, "out of memory");
    o = LLM_MALFORMED;
    goto out;
  }
  json_array_foreach(content, i, blk)
  {
    json_t *t = json_object_get(blk, "text");
    if (is_text_block(blk) && json_is_string(t)) {
      memcpy(p, json_string_value(t), json_string_length(t));
      p += json_string_length(t);
    }
  }
  *p = '\0';
  if (!strcmp(resp->finish_reason, "refusal")) {
    snprintf(why, whylen, "the model refused (stop_reason refusal)%s%.120s",
             *resp->text ? ": " : "", resp->text);
    o = LLM_REFUSAL;
  } else if (!strcmp(resp->finish_reason, "max_tokens")) {
    snprintf(why, whylen,
             "the answer was cut at max_tokens (stop_reason max_tokens, %ld "
             "tokens out)",
             resp->tokens_out);
    o = LLM_TRUNCATED;
  } else if (!*resp->text) {
    snprintf(why, whylen, "response has no text content block");
    o = LLM_EMPTY;
  }
out:
  json_decref(root);
  return o;
}
