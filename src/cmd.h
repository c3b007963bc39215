/* cmd.h - the subcommands.  Each returns the process exit status:
 * 0 success, 1 failure, 2 usage error.  main.c owns the table. */
#ifndef CUCO_CMD_H
#define CUCO_CMD_H

#define CMD_OK    0
#define CMD_FAIL  1
#define CMD_USAGE 2

struct config;

/* The global context every command gets: the parsed cuco.ini (with the
 * environment applied), never NULL. */
struct cmd;
struct cmd_ctx {
  struct config *cfg;
  const char *config_path; /* NULL when no file was loaded */
  const struct cmd *self;  /* the command being run */
};

struct cliopt;
struct cmd {
  const char *name;
  int (*fn)(struct cmd_ctx *ctx, int argc, char **argv);
  const char *summary;
  const char *usage; /* full help text printed by `cuco CMD --help` */
  /* every option of the command, for the front door (cliopt.h) that
   * checks names and converts values before fn's own parser runs */
  const struct cliopt *opts;
  int cliopt_flags; /* CLIOPT_STOP: options end at the first argument */
};

int cmd_doctor(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_analyze(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_init(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_eval(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_evolve(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_report(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_serve(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_transform(struct cmd_ctx *ctx, int argc, char **argv);
int cmd_cc(struct cmd_ctx *ctx, int argc, char **argv);

/* For --help: the running command's usage to stdout, CMD_OK.  Else (a
 * usage error already said): "see 'cuco NAME --help'" to stderr,
 * CMD_USAGE. */
int cmd_usage(const struct cmd_ctx *ctx, int for_help);

/* "cuco NAME: MESSAGE", "see 'cuco NAME --help'", and CMD_USAGE: for bad
 * arguments. */
int cmd_bad_usage(const struct cmd_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "cuco NAME: MESSAGE" on stderr: the one prefix of every error. */
void cmd_error(const struct cmd_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
