/* settings.c - see settings.h. */
#include "settings.h"

#include <stdlib.h>
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
