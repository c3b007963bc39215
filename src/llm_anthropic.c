/* llm_anthropic.c - Anthropic Messages API: the request body and the
 * answer's parser (content blocks, stop_reason, usage). */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "llm_impl.h"

char *llm_anthropic_body(const struct llm_model *m,
                         const struct llm_request *r, int max_tokens)
{
  json_t *root = json_object(), *msgs = json_array();
  char *out = NULL;

  if (!root || !msgs)
    goto out;
  json_object_set_new(root, "model", json_string(m->model));
  json_object_set_new(root, "max_tokens", json_integer(max_tokens));
  /* Anthropic takes the system prompt as a top-level field, not a
   * message. */
  if (r->system && *r->system)
    json_object_set_new(root, "system", json_string(r->system));
  llm_json_messages(msgs, r);
  json_object_set(root, "messages", msgs);
  if (r->temperature >= 0)
    json_object_set_new(root, "temperature", json_real(r->temperature));
  llm_json_stop(root, "stop_sequences", r);
  if (json_array_size(msgs) != r->n_messages ||
      (r->system && *r->system && !json_object_get(root, "system")))
    goto out;
  out = llm_json_dump(root);
out:
  json_decref(msgs);
  json_decref(root);
  return out;
}

enum llm_outcome llm_anthropic_parse(const char *body, size_t len,
                                     struct llm_response *resp, char *why,
                                     size_t whylen)
{
  json_t *root = llm_json_object(body, len, why, whylen);
  json_t *content, *sr, *blk;
  enum llm_outcome o = LLM_OK;
  size_t i;

  if (!root)
    return LLM_MALFORMED;
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
  json_array_foreach(content, i, blk)
  {
    if (!json_is_object(blk)) {
      snprintf(why, whylen, "content[%zu] is not an object", i);
      o = LLM_MALFORMED;
      goto out;
    }
  }
  /* Concatenate the text blocks; thinking and tool blocks are skipped. */
  resp->text = llm_json_join_text(content, "text");
  if (!resp->text) {
    snprintf(why, whylen, "out of memory");
    o = LLM_MALFORMED;
    goto out;
  }
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
