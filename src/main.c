/* main.c - cuco's entry point: global flags and the subcommand table. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cliopt.h"
#include "cmd.h"
#include "config.h"
#include "log.h"
#include "redact.h"
#include "sandbox.h"
#include "settings.h"
#include "version.h"

/* Every option of every command, for the front door (cliopt.h): exact
 * names or a unique prefix, deprecated spellings, unit suffixes.  Each
 * command's own getopt table must know the names these pass on; an
 * option missing here still works, only unchecked (t0003 compares these
 * with the help texts). */
/* clang-format off */
#define FLAG(n)     {n, 0, CLIOPT_FLAG, NULL, NULL, 0}
#define VALUE(n)    {n, 0, CLIOPT_VALUE, NULL, NULL, 0}
#define SHORT(n, c) {n, c, CLIOPT_VALUE, NULL, NULL, 0}
#define DURATION(n) {n, 0, CLIOPT_DURATION, NULL, NULL, 0}
#define OLD(n, of)  {n, 0, CLIOPT_VALUE, of, NULL, 0}
#define HELP        {"help", 'h', CLIOPT_FLAG, NULL, NULL, 0}
#define END         {NULL, 0, CLIOPT_FLAG, NULL, NULL, 0}

static const struct cliopt doctor_opts[] = {
    FLAG("json"), SHORT("output", 'o'), FLAG("llm"), HELP, END};
static const struct cliopt analyze_opts[] = {FLAG("json"), HELP, END};
static const struct cliopt transform_opts[] = {
    VALUE("llm"), VALUE("max-iters"), SHORT("output", 'o'),
    OLD("out", "output"), VALUE("work"), VALUE("ranks"),
    VALUE("budget-usd"), OLD("budget", "budget-usd"), FLAG("compile-only"),
    VALUE("db"), HELP, END};
static const struct cliopt init_opts[] = {
    VALUE("from"), VALUE("name"), FLAG("force"), HELP, END};
static const struct cliopt eval_opts[] = {
    VALUE("candidate"), VALUE("impl"), VALUE("ranks"), VALUE("vranks"),
    VALUE("sizes"), FLAG("compile-only"), FLAG("static-only"),
    FLAG("no-bench"), FLAG("one-process"), FLAG("process-per-size"),
    VALUE("out"), FLAG("json"), DURATION("timeout"),
    DURATION("build-timeout"), VALUE("gpus"), VALUE("seed"),
    VALUE("secret"), FLAG("cheats"), VALUE("write-cheats"),
    VALUE("launcher"), HELP, END};
static const struct cliopt evolve_opts[] = {
    VALUE("llm"), VALUE("generations"), VALUE("islands"), VALUE("out"),
    FLAG("resume"), VALUE("budget-usd"), DURATION("time-limit"),
    VALUE("ranks"), VALUE("vranks"), VALUE("seed"), VALUE("slots"),
    VALUE("sizes"), VALUE("launcher"), VALUE("executor"), HELP, END};
static const struct cliopt report_opts[] = {
    SHORT("output", 'o'), SHORT("format", 'f'), HELP, END};
static const struct cliopt cc_opts[] = {VALUE("cache-dir"), HELP, END};
static const struct cliopt serve_opts[] = {
    SHORT("port", 'p'), SHORT("bind", 'b'), HELP, END};
static const struct cliopt help_opts[] = {HELP, END};
/* clang-format on */

/* Before the command: these and the global options; after it, only the
 * global options (main_opts + 2): -v and --config may stand anywhere. */
enum {
  OPT_HELP = 1,
  OPT_VERSION,
  OPT_VERBOSE,
  OPT_QUIET,
  OPT_CONFIG,
  OPT_SANDBOX
};
static const struct cliopt main_opts[] = {
    {"help", 'h', CLIOPT_FLAG, NULL, NULL, OPT_HELP},
    {"version", 'V', CLIOPT_FLAG, NULL, NULL, OPT_VERSION},
    {"verbose", 'v', CLIOPT_FLAG, NULL, NULL, OPT_VERBOSE},
    {"quiet", 'q', CLIOPT_FLAG, NULL, NULL, OPT_QUIET},
    {"config", 'c', CLIOPT_VALUE, NULL, NULL, OPT_CONFIG},
    {"sandbox", 0, CLIOPT_VALUE, NULL, NULL, OPT_SANDBOX},
    END};
#define GLOBAL_OPTS (main_opts + 2)

static int cmd_help(struct cmd_ctx *ctx, int argc, char **argv);

static const struct cmd commands[] = {
    {"doctor", cmd_doctor, "probe this machine: CPU, OS, CUDA, NCCL, GPUs",
     "usage: cuco doctor [--json] [-o FILE] [--llm]\n"
     "\n"
     "Probe the machine every result is recorded with: CPU, OS, nvcc,\n"
     "NCCL headers and library (and whether they match), GPUs with the\n"
     "link matrix (nvidia-smi topo -m), MPI launchers, and which LLM\n"
     "settings are present (secrets are never printed).\n"
     "\n"
     "  --json             print the description as JSON\n"
     "  -o, --output FILE  also write the JSON description to FILE\n"
     "  --llm              send one tiny request to each configured model\n",
     doctor_opts, 0},
    {"analyze", cmd_analyze,
     "find NCCL calls, kernels, GEMMs, syncs and their dataflow in a .cu",
     "usage: cuco analyze FILE.cu [--json]\n"
     "\n"
     "Static analysis of a host-driven CUDA program: every NCCL host call\n"
     "(arguments, communicator, stream, buffers, ncclGroupStart/End\n"
     "groups, the macro it is wrapped in), kernel launches with grid,\n"
     "block and stream, cuBLAS/cuBLASLt GEMMs, copies, events and\n"
     "synchronisations, the order of compute and communication per\n"
     "function, and which kernel or GEMM produces each buffer a\n"
     "collective sends (by argument names).  Comments and strings are\n"
     "ignored.  Macros that hide a call in their definition are not\n"
     "expanded.\n"
     "\n"
     "  --json      print the report as JSON\n",
     analyze_opts, 0},
    {"transform", cmd_transform,
     "turn a host-driven baseline into a device-initiated seed (LLM)",
     "usage: cuco transform WORKLOAD [--llm NAME] [--max-iters N]\n"
     "                      [-o FILE] [--work DIR] [--ranks N]\n"
     "                      [--budget-usd X] [--compile-only] [--db FILE]\n"
     "\n"
     "An LLM loop in two stages: (1) communication infrastructure\n"
     "(symmetric windows, device communicator, barriers), (2) every host\n"
     "collective replaced by device-initiated communication (NCCL device\n"
     "API), conservative design first (placement=deferred sync=global\n"
     "issuer=cta, one coarse chunk).  Each attempt is checked statically,\n"
     "built and, where a GPU exists, verified on the small sizes (else\n"
     "compiled only, and said so); a failure is diagnosed by an LLM judge\n"
     "and the diagnosis feeds the next attempt.  The result gets EVOLVE\n"
     "blocks (LLM, else by rule) and is checked again.  Every prompt,\n"
     "answer and verdict is kept in the work folder.\n"
     "\n"
     "  --llm NAME      the model ([model.NAME]; default: the first)\n"
     "  --max-iters N   generation attempts over both stages\n"
     "                  (default [transform] max_iters, else 8)\n"
     "  -o, --output FILE  where the seed goes (default WORK/seed.cu;\n"
     "                  --out, deprecated, still works)\n"
     "  --work DIR      prompts, answers, verdicts, llm_calls.jsonl\n"
     "                  (default WORKLOAD/transform)\n"
     "  --ranks N       ranks for verification (default: the smallest)\n"
     "  --budget-usd X  LLM budget in dollars (default [transform]\n"
     "                  budget_usd; --budget, deprecated, still works)\n"
     "  --compile-only  never run candidates, even with a GPU\n"
     "  --db FILE       also record a run and every LLM call (llm_calls)\n"
     "                  in this run database\n",
     transform_opts, 0},
    {"init", cmd_init, "scaffold a workload folder",
     "usage: cuco init DIR [--from FILE.cu] [--name NAME] [--force]\n"
     "\n"
     "Create DIR with workload.ini, baseline.cu and README.md.  With\n"
     "--from, baseline.cu is a copy of FILE.cu and the README summarises\n"
     "its communication (cuco analyze); without it, baseline.cu is a\n"
     "template implementing the runtime ABI with a kernel and a host\n"
     "ncclAllGather.  NAME defaults to the folder's name.  An existing\n"
     "non-empty DIR is refused unless --force (files are then replaced,\n"
     "others kept).\n",
     init_opts, 0},
    {"eval", cmd_eval, "evaluate a candidate: static, build, verify, bench",
     "usage: cuco eval WORKLOAD [--candidate FILE | --impl NAME|all | "
     "--cheats]\n"
     "       cuco eval WORKLOAD --write-cheats DIR\n"
     "                 [--ranks N] [--vranks R] [--sizes LIST] [--gpus LIST]\n"
     "                 [--static-only | --compile-only] [--no-bench] "
     "[--process-per-size]\n"
     "                 [--out DIR] [--json]\n"
     "                 [--timeout T] [--build-timeout T] [--seed N]\n"
     "                 [--secret HEX] [--launcher local|mpirun|srun]\n"
     "\n"
     "Run one implementation of a workload through the cascade: static\n"
     "checks (EVOLVE markers, frozen text, directives, forbidden calls),\n"
     "build (nvcc, or the freeform build command), allowlist (the built\n"
     "object may call only what runtime/symbols.allow lists), verify on the\n"
     "small sizes, bench on the full sizes.  Each stage prints its verdict; "
     "a\n"
     "failure names the stage and why (a hang: which rank).\n"
     "\n"
     "  --candidate FILE  a candidate source (checked against the seed)\n"
     "  --impl NAME       the seed (default), a baseline, or 'all'\n"
     "  --cheats          run the cheats (cheats/NAME.edit: an edit of the\n"
     "                    seed; NAME.cu: a whole file); each must be\n"
     "                    rejected at the stage its CUCO-EXPECT-REJECT\n"
     "                    line names\n"
     "  --write-cheats DIR  only write each cheat as the whole DIR/NAME.cu\n"
     "                    it stands for (its edit applied to the seed)\n"
     "  --ranks N         rank processes (default: the workload's smallest)\n"
     "  --vranks R        R virtual ranks on one GPU (protocol test only)\n"
     "  --sizes LIST      size names or shapes: "
     "small_a,M=4104,K=8192,N=28680\n"
     "  --gpus LIST       CUDA devices for the ranks, e.g. 0,1\n"
     "  --static-only     stop after the static checks (no build)\n"
     "  --compile-only    build, link and judge the allowlist (no GPU)\n"
     "  --no-bench        stop after verify\n"
     "  --process-per-size  a process of the binary for every size (the\n"
     "                    default runs all sizes of a stage in one process:\n"
     "                    runtime workloads, real ranks; --one-process)\n"
     "  --out DIR         keep sources, binary, RESULT.json, logs in DIR\n"
     "  --json            print the result as JSON (progress to stderr)\n"
     "  --timeout T       per run of the binary (default 120 s; T in\n"
     "                    seconds, or 90s, 10m, 2h)\n"
     "  --build-timeout T per compiler run (default 300 s; as --timeout)\n"
     "  --seed N          input seed (default 1234)\n"
     "  --secret HEX      replay a failure: the 32 hex digits of its\n"
     "                    RESULT.json replay.secret (default: a fresh\n"
     "                    secret per run, handed to the ranks on stdin)\n"
     "  --launcher NAME   how ranks start: local (children of cuco, the\n"
     "                    default), mpirun or srun ([launch] in cuco.ini\n"
     "                    holds their templates; docs/cluster.md)\n",
     eval_opts, 0},
    {"evolve", cmd_evolve, "evolutionary search: make a workload faster",
     "usage: cuco evolve WORKLOAD [--llm none|NAME] [--generations N]\n"
     "                   [--islands K] [--out DIR] [--resume]\n"
     "                   [--budget-usd X] [--time-limit T]\n"
     "                   [--ranks N] [--vranks R] [--seed N] [--slots N]\n"
     "                   [--sizes LIST] [--launcher local|mpirun|srun]\n"
     "                   [--executor local|slurm]\n"
     "\n"
     "Evolve the workload's seed: K islands (default 4) of N generations\n"
     "(default 10) each.  Every candidate goes through the cascade of\n"
     "'cuco eval'; one line per candidate shows its generation, island,\n"
     "edit kind, stage reached, result, the best so far, LLM cost and\n"
     "time left.  The run ends with a table (baseline, seed, best) and\n"
     "the best code in DIR/best.EXT; every candidate is a row of the\n"
     "table programs in DIR/run.db.\n"
     "\n"
     "  --llm none|NAME   'none': the offline tuner (directives and params\n"
     "                    only); NAME: a configured model; default: the\n"
     "                    configured models, else the tuner\n"
     "  --generations N   generations per island (default 10)\n"
     "  --islands K       islands (default 4)\n"
     "  --out DIR         run directory (default out/evolve-NAME)\n"
     "  --resume          continue the run in DIR after any interruption\n"
     "  --budget-usd X    stop when the LLM calls have cost X dollars\n"
     "  --time-limit T    stop handing out candidates after T (seconds,\n"
     "                    or 90s, 10m, 2h)\n"
     "  --ranks N         ranks per candidate (default: the smallest)\n"
     "  --vranks R        virtual ranks (protocol test, not performance)\n"
     "  --seed N          random seed of the search (default 1)\n"
     "  --slots N         candidates evaluated at once (default: one per\n"
     "                    group of N GPUs; 1 for CPU workloads)\n"
     "  --sizes LIST      sizes for every evaluation (default: the sets)\n"
     "  --launcher NAME   how each run's ranks start (see cuco eval)\n"
     "  --executor slurm  inside a Slurm allocation: builds run here,\n"
     "                    verify and bench as srun steps, one slot per\n"
     "                    GPU group (CPU tasks without GPUs); [evolve]\n"
     "                    executor in cuco.ini (docs/cluster.md)\n",
     evolve_opts, 0},
    {"report", cmd_report, "write a run database as an HTML or text report",
     "usage: cuco report RUN.db [-o FILE] [--format html|md]\n"
     "\n"
     "Write one self-contained HTML page (inline SVG, no script, nothing\n"
     "loaded from the network) about the newest run in RUN.db: summary\n"
     "(workload, baseline, seed and best times per size with speedups,\n"
     "machine, LLM cost, wall time), score over candidates per island,\n"
     "the lineage tree, score by directive value, LLM cost over time, the\n"
     "best kernel's diff against the seed, and the failures.  The\n"
     "database is opened read-only.\n"
     "\n"
     "  -o, --output FILE  write to FILE (default: standard output)\n"
     "  --format md        a Markdown summary instead of HTML\n",
     report_opts, 0},
    {"cc", cmd_cc, "run one compiler command through the object cache",
     "usage: cuco cc [--cache-dir DIR] [--] COMPILER ARGS... -o OUT\n"
     "\n"
     "Run a compile (nvcc, gcc, ...) through cuco's object cache, as\n"
     "ccache does: the same arguments (the output path aside) in the same\n"
     "folder with the same compiler, over inputs with the same text,\n"
     "replay the compiler's output and write the stored object without\n"
     "compiling.  The compiler lists its inputs (-MD -MF is added); a\n"
     "failed compile is never stored; a truncated or corrupted entry is\n"
     "rebuilt.  Exit status: the compiler's.  DIR: --cache-dir, else\n"
     "$CUCO_CACHE_DIR, else [build] cache_dir, else $XDG_CACHE_HOME/cuco\n"
     "(~/.cache/cuco).  $CUCO_CC_LOG=FILE appends one line per command\n"
     "(hit, miss, fail or uncached, seconds, the command).  See\n"
     "docs/build.md.\n"
     "\n"
     "  --cache-dir DIR  the cache folder (created with mode 0700)\n"
     "\n"
     "cuco's options end at COMPILER: the rest is the compiler's.\n",
     cc_opts, CLIOPT_STOP},
    {"serve", cmd_serve, "browse a run database in a local web UI",
     "usage: cuco serve RUN.db [--port N] [--bind ADDR]\n"
     "\n"
     "Serve a web UI over the newest run in RUN.db: the lineage tree\n"
     "(click a candidate for its code, diff to its parent, directives,\n"
     "stage reached, metrics, build and verify logs, LLM prompt and\n"
     "response), score plots, filters by island, status and edit kind,\n"
     "and live updates while a search writes the database.  The database\n"
     "is opened read-only.  JSON API: /api/run, /api/programs,\n"
     "/api/program/ID, /api/plot, /api/updates?since=ID&after=T.\n"
     "\n"
     "  --port N     TCP port (default 8077; 0 picks a free one)\n"
     "  --bind ADDR  address to listen on (default 127.0.0.1)\n",
     serve_opts, 0},
    {"help", cmd_help, "describe a command (as 'cuco COMMAND --help')",
     "usage: cuco help [COMMAND]\n"
     "\n"
     "Print the help of COMMAND, the same text as 'cuco COMMAND --help';\n"
     "without COMMAND, cuco's own ('cuco --help').\n",
     help_opts, 0},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct cmd *cmd_find(const char *name)
{
  size_t i;

  for (i = 0; i < NCOMMANDS; i++)
    if (!strcmp(commands[i].name, name))
      return &commands[i];
  return NULL;
}

static void usage(FILE *f)
{
  size_t i;

  fprintf(f, "usage: cuco [--version] [--help] [-v|-q] [--config FILE]\n"
             "            [--sandbox auto|bwrap|none] COMMAND [ARGS]\n\n"
             "cuco co-designs computation and communication of multi-GPU\n"
             "CUDA programs.  Commands:\n\n");
  for (i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fputs(
      "\n"
      "Options (-v, -q, --config and --sandbox also after the command):\n"
      "  -V, --version      print cuco's version\n"
      "  -h, --help         print this help\n"
      "  -v, --verbose      debug messages too\n"
      "  -q, --quiet        warnings and errors only\n"
      "  -c, --config FILE  settings (default $CUCO_CONFIG, else ./cuco.ini)\n"
      "  --sandbox MODE     how candidates run: auto, bwrap or none\n"
      "\n"
      "Option names are exact (a unique prefix is taken, with a note).\n"
      "Durations take s, m or h (90, 90s, 10m, 2h: a plain number is\n"
      "seconds); sizes take K, M or G (binary: 16M is 16 MiB).\n"
      "'cuco help COMMAND' or 'cuco COMMAND --help' describes a command.\n",
      f);
}

/* cuco help [COMMAND]: the table is here, so the command is too. */
static int cmd_help(struct cmd_ctx *ctx, int argc, char **argv)
{
  static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const struct cmd *c;
  int opt;

  while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1)
    return cmd_usage(ctx, opt == 'h');
  if (optind == argc) {
    usage(stdout);
    return CMD_OK;
  }
  if (optind + 1 < argc)
    return cmd_bad_usage(ctx, "one COMMAND at most");
  c = cmd_find(argv[optind]);
  if (!c) {
    fprintf(stderr,
            "cuco help: '%s' is not a cuco command; see 'cuco --help'\n",
            argv[optind]);
    return CMD_USAGE;
  }
  fputs(c->usage, stdout);
  return CMD_OK;
}

struct globals {
  const char *cfgpath, *sandbox;
};

/* The global options found, in the order given (the last one wins).
 * 1 when one of them was an action that ends the run (--help, --version;
 * possible only before the command). */
static int apply_globals(const struct cliopt_args *a, struct globals *g)
{
  int k;

  for (k = 0; k < a->nglobals; k++) {
    const struct cliopt_hit *h = &a->globals[k];
    switch (h->opt->id) {
    case OPT_HELP:
      usage(stdout);
      return 1;
    case OPT_VERSION:
      printf("cuco %s\n", CUCO_VERSION);
      return 1;
    case OPT_VERBOSE:
      log_set_level(LOG_DEBUG);
      break;
    case OPT_QUIET:
      log_set_level(LOG_WARN);
      break;
    case OPT_CONFIG:
      g->cfgpath = h->value;
      break;
    case OPT_SANDBOX:
      g->sandbox = h->value;
      break;
    }
  }
  return 0;
}

/* Load the settings and run c over its rewritten line; its exit status. */
static int run(struct cmd_ctx *ctx, const struct globals *g,
               struct cliopt_args *a)
{
  struct err e = {0, ""};
  char self[64];
  int rc;

  if (settings_load(ctx, g->cfgpath, &e) ||
      sandbox_configure(ctx->cfg, g->sandbox, &e) ||
      redact_init(ctx->cfg, &e)) {
    fprintf(stderr, "cuco: %s\n", e.msg);
    config_free(ctx->cfg);
    return CMD_FAIL;
  }
  /* Each command parses its own options, with argv[0] = "cuco NAME":
   * getopt's own messages then carry the prefix of every other error
   * ("cuco eval: unrecognized option '--x'"). */
  snprintf(self, sizeof(self), "cuco %s", ctx->self->name);
  a->argv[0] = self;
  optind = 0; /* 0 makes glibc's getopt reinitialise fully */
  rc = ctx->self->fn(ctx, a->argc, a->argv);
  config_free(ctx->cfg);
  return rc;
}

int main(int argc, char **argv)
{
  struct cliopt_args pre = {0}, args = {0};
  struct cmd_ctx ctx = {NULL, NULL, NULL};
  struct globals g = {NULL, NULL};
  struct err e = {0, ""};
  char self[64];
  int rc = CMD_USAGE;

  /* Up to the command: cuco's own options, nothing else. */
  if (cliopt_normalize("cuco", NULL, main_opts, CLIOPT_STRICT | CLIOPT_STOP,
                       argc, argv, stderr, &pre, &e)) {
    fprintf(stderr, "cuco: %s\nsee 'cuco --help'\n", e.msg);
    goto out;
  }
  if (apply_globals(&pre, &g)) {
    rc = CMD_OK;
    goto out;
  }
  if (pre.argc < 2) {
    usage(stderr);
    goto out;
  }
  ctx.self = cmd_find(pre.argv[1]);
  if (!ctx.self) {
    fprintf(stderr, "cuco: '%s' is not a cuco command\n\n", pre.argv[1]);
    usage(stderr);
    goto out;
  }
  /* After it: the command's options, and the global ones anywhere. */
  snprintf(self, sizeof(self), "cuco %s", ctx.self->name);
  if (cliopt_normalize(self, ctx.self->opts, GLOBAL_OPTS,
                       ctx.self->cliopt_flags, pre.argc - 1, pre.argv + 1,
                       stderr, &args, &e)) {
    rc = cmd_bad_usage(&ctx, "%s", e.msg);
    goto out;
  }
  (void)apply_globals(&args, &g); /* no action among GLOBAL_OPTS */
  rc = run(&ctx, &g, &args);
out:
  cliopt_args_release(&args);
  cliopt_args_release(&pre);
  return rc;
}
