/* settings.c - see settings.h. */
#include "settings.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static const struct config_env_map env_map[] = {
    {"CUCO_LLM_PROVIDER", "llm", "provider"},
    {"CUCO_LLM_BASE_URL", "llm", "base_url"},
    {"CUCO_LLM_MODEL", "llm", "model"},
    {"CUCO_LLM_API_KEY_ENV", "llm", "api_key_env"},
    {"CUCO_NCCL_HOME", "build", "nccl_home"},
    {"CUCO_NVCC", "build", "nvcc"},
    {"CUCO_CUDA_ARCH", "build", "arch"},
    {"CUCO_SANDBOX", "sandbox", "mode"},
};

/* Every section and key cuco reads (README "Configuration",
 * docs/evolve.md, docs/cluster.md, docs/build.md): anything else in the
 * file is a mistake, said with the nearest valid name. */
#define LLM_KEYS                                                              \
  "provider", "model", "base_url", "api_key_env", "timeout",                  \
      "connect_timeout", "max_retries", "retry_base", "retry_max",            \
      "max_response_bytes", "max_tokens", "price_in", "price_out", "weight",  \
      "anthropic_version", "reasoning"
static const char *const llm_keys[] = {LLM_KEYS, "budget_usd", NULL};
static const char *const model_keys[] = {LLM_KEYS, NULL};
static const char *const evolve_keys[] = {"migrate_every",
                                          "meta_every",
                                          "stagnation",
                                          "novelty_attempts",
                                          "inspirations",
                                          "slots",
                                          "build_ahead",
                                          "process_per_size",
                                          "confirm",
                                          "confirm_rounds",
                                          "confirm_max_rounds",
                                          "noise_floor_rounds",
                                          "noise_threshold",
                                          "executor",
                                          "explore_fraction",
                                          "novelty",
                                          "novelty_embed",
                                          "lambda",
                                          "alpha",
                                          "edit_sequence",
                                          "selection",
                                          NULL};
static const char *const launch_keys[] = {"launcher", "mpirun", "srun",
                                          "hostfile", NULL};
static const char *const build_keys[] = {"nccl_home", "nvcc",        "arch",
                                         "cache_dir", "runtime_dir", NULL};
/* memory, file_size, tmp_size, processes: src/sandbox.c's limits */
static const char *const sandbox_keys[] = {
    "mode", "memory", "file_size", "tmp_size", "processes", NULL};
static const char *const transform_keys[] = {"max_iters", "budget_usd", NULL};

static const struct config_section schema[] = {
    {"llm", llm_keys},         {"model.", model_keys},
    {"embed", model_keys},     {"evolve", evolve_keys},
    {"launch", launch_keys},   {"build", build_keys},
    {"sandbox", sandbox_keys}, {"transform", transform_keys},
};

/* A key written in the file is refused by design (it would end up in
 * logs, copies and backups); say so rather than "unknown key". */
static int refuse_secrets(const struct config *c, struct err *e)
{
  size_t i;

  for (i = 0; i < config_count(c); i++) {
    const struct config_entry *en = config_at(c, i);
    if (!strcmp(en->key, "api_key") || !strcmp(en->key, "key"))
      return err_set(e, ERR_CONFIG,
                     "%s: [%s] %s: cuco never reads an API key from a file; "
                     "put it in an environment variable and set api_key_env "
                     "to that variable's name",
                     en->origin, en->section, en->key);
  }
  return 0;
}

int settings_load(struct cmd_ctx *ctx, const char *path, struct err *e)
{
  int rc;

  ctx->cfg = config_new();
  if (!ctx->cfg)
    return err_set(e, ERR_NOMEM, "out of memory");
  if (!path)
    path = getenv("CUCO_CONFIG");
  if (!path && access("cuco.ini", R_OK) == 0)
    path = "cuco.ini";
  if (path) {
    rc = config_load(ctx->cfg, path, e);
    if (!rc)
      rc = refuse_secrets(ctx->cfg, e);
    if (!rc)
      rc = config_check(ctx->cfg, schema, sizeof(schema) / sizeof(schema[0]),
                        e);
    if (rc)
      return rc;
    ctx->config_path = path;
  }
  rc = config_apply_env(ctx->cfg, env_map,
                        sizeof(env_map) / sizeof(env_map[0]));
  if (rc)
    return err_set(e, rc, "environment: out of memory");
  {
    /* [build] cache_dir: the object cache (and the threshold store) of
     * every command; $CUCO_CACHE_DIR wins, and build_default_cache() reads
     * it from there wherever it is needed */
    const char *cd = config_get(ctx->cfg, "build", "cache_dir", NULL);
    const char *env = getenv("CUCO_CACHE_DIR");
    if (cd && *cd && !(env && *env) && setenv("CUCO_CACHE_DIR", cd, 1))
      return err_set(e, ERR_NOMEM, "environment: out of memory");
  }
  return 0;
}
