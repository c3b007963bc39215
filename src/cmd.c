/* cmd.c - helpers shared by the subcommands; the table is in main.c. */
#include "cmd.h"

#include <stdarg.h>
#include <stdio.h>

int cmd_usage(const struct cmd_ctx *ctx, int for_help)
{
  if (for_help) {
    fputs(ctx->self->usage, stdout);
    return CMD_OK;
  }
  /* after a usage error (ours or getopt's line): where the help is, not
   * the whole help */
  fprintf(stderr, "see 'cuco %s --help'\n", ctx->self->name);
  return CMD_USAGE;
}

int cmd_bad_usage(const struct cmd_ctx *ctx, const char *fmt, ...)
{
  va_list ap;

  fprintf(stderr, "cuco %s: ", ctx->self->name);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\n", stderr);
  return cmd_usage(ctx, 0);
}

void cmd_error(const struct cmd_ctx *ctx, const char *fmt, ...)
{
  va_list ap;

  fprintf(stderr, "cuco %s: ", ctx->self->name);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\n", stderr);
}
