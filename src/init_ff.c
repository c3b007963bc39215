/* init_ff.c - a freeform workload around an ordinary program (see
 * init_ff.h). */
#define _GNU_SOURCE
#include "init_ff.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allow.h"
#include "analyze.h"
#include "file.h"
#include "initfrom.h"
#include "toolchain.h"
#include "workload.h"

static int write_in(const char *dir, const char *name, const struct buf *b,
                    struct err *e)
{
  char path[PATH_MAX];

  if (buf_error(b))
    return err_set(e, ERR_NOMEM, "out of memory writing %s", name);
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  return file_write(path, buf_str(b), b->len, e);
}

/* Text that may sit between single quotes in sh and in a JSON string. */
static void sh_safe(const char *in, char *out, size_t n)
{
  size_t k = 0;

  for (; *in && k + 1 < n; in++)
    if (*in != '\'' && *in != '"' && *in != '\\' && *in != '\n' &&
        (unsigned char)*in >= ' ')
      out[k++] = *in;
  out[k] = '\0';
}

/* TEXT's words after FIRST, a new line starting with CONT before a word
 * that would pass column 76 (workload.ini lines stay under inih's limit:
 * an indented line continues a value, joined with a space). */
static void wrap(struct buf *b, const char *first, const char *cont,
                 const char *text)
{
  size_t col = strlen(first);
  int start = 1;

  buf_puts(b, first);
  while (*text) {
    size_t w;
    text += strspn(text, " \t");
    w = strcspn(text, " \t");
    if (!w)
      break;
    if (!start && col + 1 + w > 76) {
      buf_printf(b, "\n%s", cont);
      col = strlen(cont);
      start = 1;
    }
    buf_printf(b, "%s%.*s", start ? "" : " ", (int)w, text);
    col += w + !start;
    start = 0;
    text += w;
  }
  buf_puts(b, "\n");
}

/* The [sizes] keys: the arguments whose default is a positive integer
 * (workload.ini takes no other), at most WORKLOAD_MAX_KV. */
static int size_args(const struct initfrom_info *in, int *idx)
{
  int i, n = 0;

  for (i = 0; i < in->nargs && n < WORKLOAD_MAX_KV; i++)
    if (in->args[i].defval > 0)
      idx[n++] = i;
  return n;
}

/* The nvcc line: cuco's toolchain (cuco doctor) as found now. */
static void build_line(const struct init_ff_opts *o, struct buf *b,
                       struct buf *todo)
{
  const struct toolchain *tc = o->tc;
  const struct initfrom_info *in = o->info;
  char arch[96];
  int i;

  if (tc && tc->nvcc[0]) {
    tc_arch_flag(tc, arch, sizeof(arch));
    buf_printf(b, "%s %s", tc->nvcc, arch);
  } else {
    buf_puts(b, "nvcc -arch=sm_90");
    buf_puts(todo, "nvcc was not found (cuco doctor): [freeform] build names "
                   "plain `nvcc`, -arch=sm_90 and no NCCL folders; run `cuco "
                   "init --from` again where nvcc is, or edit the line\n");
  }
  /* the shared runtime: the program imports cudart's API by name, not
   * the static library's C library calls (the allowlist judges them) */
  buf_puts(b, " -O3 -cudart shared {flags}");
  if (in->local_includes)
    buf_puts(b, " -I{dir}");
  if (tc && tc->nccl_include[0] && strcmp(tc->nccl_include, "/usr/include") &&
      strcmp(tc->nccl_include, "/usr/local/include"))
    buf_printf(b, " -I%s", tc->nccl_include);
  buf_puts(b, " -o {bin} {src}");
  if (tc && tc->nccl_lib[0]) {
    char dev[PATH_MAX];
    snprintf(dev, sizeof(dev), "%s/libnccl.so", tc->nccl_lib);
    buf_printf(b, " -L%s -Xlinker=-rpath,%s", tc->nccl_lib, tc->nccl_lib);
    /* the nvidia-nccl wheel has libnccl.so.2 and no libnccl.so */
    buf_puts(b, access(dev, R_OK) ? " -Xlinker=-l:libnccl.so.2" : " -lnccl");
  } else {
    buf_puts(b, " -lnccl");
    if (tc && tc->nvcc[0])
      buf_puts(todo, "NCCL's library was not found (cuco doctor): the build "
                     "links with plain -lnccl; add -L<folder of "
                     "libnccl.so.2> to [freeform] build\n");
  }
  if (in->nlibs && tc && tc->cuda_lib[0] && strcmp(tc->cuda_lib, tc->nccl_lib))
    buf_printf(b, " -L%s -Xlinker=-rpath,%s", tc->cuda_lib, tc->cuda_lib);
  for (i = 0; i < in->nlibs; i++)
    buf_printf(b, " -l%s", in->libs[i]);
}

static void write_run_sh(const struct init_ff_opts *o, struct buf *b)
{
  const struct initfrom_info *in = o->info;
  char suf[64], pass[40], fail[40];
  int i, maxpos = 0;

  sh_safe(in->time_suffix, suf, sizeof(suf));
  sh_safe(in->pass, pass, sizeof(pass));
  sh_safe(in->fail, fail, sizeof(fail));
  buf_printf(
      b,
      "#!/bin/sh\n"
      "# cuco_run.sh - written by `cuco init --from %s`.  cuco runs\n"
      "#   sh cuco_run.sh PROGRAM SIZES\n"
      "# (workload.ini [freeform] run), SIZES being one [sizes] line\n"
      "# (\"m=4096,n=4096\").  It runs PROGRAM with the command line those\n"
      "# sizes stand for, shows its output (each line after \"| \"), and\n"
      "# prints the one JSON line cuco reads: the time PROGRAM printed, in\n"
      "# ms, and whether the run passed.  Edit the settings where init\n"
      "# guessed wrong.\n\n"
      "# the text the program prints right after its time (\"%%.3f "
      "ms/iter\"),\n"
      "# and what one unit of that time is in ms\n"
      "TIME_SUFFIX='%s'\n"
      "TIME_FACTOR=%g\n"
      "# a passing run exits 0, prints PASS_WORD and never FAIL_WORD\n"
      "# ('' = the program prints no such word)\n"
      "PASS_WORD='%s'\n"
      "FAIL_WORD='%s'\n\n"
      "prog=$1\n"
      "sizes=$2\n",
      o->from, suf, in->time_factor > 0 ? in->time_factor : 1.0, pass, fail);
  /* positional arguments: their defaults, so that a later one can be
   * given alone */
  for (i = 0; i < in->nargs; i++)
    if (in->args[i].pos > maxpos)
      maxpos = in->args[i].pos;
  if (maxpos) {
    int p;
    buf_puts(b, "# positional arguments, with the program's defaults\n");
    for (p = 1; p <= maxpos; p++) {
      const char *def = "";
      char d[64];
      for (i = 0; i < in->nargs; i++)
        if (in->args[i].pos == p)
          def = in->args[i].def;
      sh_safe(def, d, sizeof(d));
      buf_printf(b, "p%d='%s'\n", p, d);
    }
    buf_puts(b, "np=0\n");
  }
  buf_puts(b, "args=''\n"
              "oldifs=$IFS\n"
              "IFS=,\n"
              "for kv in $sizes; do\n"
              "  IFS=$oldifs\n"
              "  key=${kv%%=*}\n"
              "  val=${kv#*=}\n"
              "  case $key in\n");
  for (i = 0; i < in->nargs; i++) {
    const struct initfrom_arg *a = &in->args[i];
    if (a->pos)
      buf_printf(b, "  %s) p%d=$val; [ $np -ge %d ] || np=%d ;;\n", a->name,
                 a->pos, a->pos, a->pos);
    else
      buf_printf(b, "  %s) args=\"$args %s%s$val\" ;;\n", a->name, a->flag,
                 a->joined ? "=" : " ");
  }
  buf_puts(b, "  *)\n"
              "    echo \"cuco_run.sh: size '$key' is not an argument of the "
              "program (edit cuco_run.sh)\" >&2\n"
              "    exit 2\n"
              "    ;;\n"
              "  esac\n"
              "done\n"
              "IFS=$oldifs\n");
  if (maxpos)
    buf_puts(b,
             "pos=''\n"
             "i=1\n"
             "while [ $i -le $np ]; do\n"
             "  eval \"v=\\$p$i\"\n"
             "  if [ -z \"$v\" ]; then\n"
             "    echo \"cuco_run.sh: positional argument $i has no default "
             "init could read: give it in the size\" >&2\n"
             "    exit 2\n"
             "  fi\n"
             "  pos=\"$pos $v\"\n"
             "  i=$((i + 1))\n"
             "done\n"
             "args=\"$pos $args\"\n");
  buf_puts(
      b,
      "# sizes are numbers: word splitting of $args is what is meant\n"
      "# shellcheck disable=SC2086\n"
      "out=$(\"$prog\" $args)\n"
      "rc=$?\n"
      "printf '%s\\n' \"$out\" | sed 's/^/| /'\n"
      "if [ $rc -ne 0 ]; then\n"
      "  echo \"cuco_run.sh: the program exited with status $rc\" >&2\n"
      "  exit $rc\n"
      "fi\n"
      "t=$(printf '%s\\n' \"$out\" | awk -v suf=\"$TIME_SUFFIX\" -v "
      "f=\"$TIME_FACTOR\" '\n"
      "  suf != \"\" && index($0, suf) {\n"
      "    s = substr($0, 1, index($0, suf) - 1)\n"
      "    if (match(s, /[0-9]+(\\.[0-9]*)?([eE][-+]?[0-9]+)?$/))\n"
      "      v = substr(s, RSTART, RLENGTH) * f\n"
      "  }\n"
      "  END { if (v != \"\") printf \"%.6g\", v }')\n"
      "err=''\n"
      "if [ -n \"$FAIL_WORD\" ] && printf '%s\\n' \"$out\" | grep -qw -- "
      "\"$FAIL_WORD\"; then\n"
      "  err=\"the program printed $FAIL_WORD\"\n"
      "elif [ -n \"$PASS_WORD\" ] && ! printf '%s\\n' \"$out\" | grep -qw -- "
      "\"$PASS_WORD\"; then\n"
      "  err=\"the program did not print $PASS_WORD\"\n"
      "elif [ -z \"$TIME_SUFFIX\" ]; then\n"
      "  err=\"TODO: set TIME_SUFFIX in cuco_run.sh (init found no time the "
      "program prints)\"\n"
      "elif [ -z \"$t\" ]; then\n"
      "  err=\"no line of the output has a number before '$TIME_SUFFIX' (edit "
      "TIME_SUFFIX in cuco_run.sh)\"\n"
      "fi\n"
      "ok=true\n"
      "[ -z \"$err\" ] || ok=false\n"
      "printf '{\"time_ms\": %s, \"ok\": %s, \"error\": \"%s\"}\\n' "
      "\"${t:-null}\" \"$ok\" \"$err\"\n");
}

static void write_check_c(const struct init_ff_opts *o, struct buf *b)
{
  buf_printf(
      b,
      "/* check.c - the workload's own check of a run (workload.ini\n"
      " * [freeform] check_build and check), scaffolded by `cuco init --from\n"
      " * %s`.\n"
      " *\n"
      " * cuco builds it where no candidate can write, runs it after every\n"
      " * run of the program, and believes its verdict rather than the\n"
      " * program's own (a candidate could define its own check away).\n"
      " *\n"
      " * TODO: make the program write its output (say with an --output "
      "FILE\n"
      " * argument that cuco_run.sh passes as {work}/output.bin), then here\n"
      " * make the same inputs for the sizes in --params, compute the\n"
      " * expected output (in fp64 for small sizes) and compare: print one\n"
      " * line {\"ok\": true|false, \"error\": \"...\"}.  Until then every "
      "run\n"
      " * fails with the message below.  examples/cpu_matmul/check.c is a\n"
      " * complete one.\n"
      " */\n"
      "#include <stdio.h>\n"
      "\n"
      "int main(int argc, char **argv)\n"
      "{\n"
      "  (void)argc;\n"
      "  (void)argv;\n"
      "  printf(\"{\\\"ok\\\": false, \\\"error\\\": \\\"TODO: check.c is a "
      "scaffold: write the check of the program's output (see its "
      "comment)\\\"}\\n\");\n"
      "  return 0;\n"
      "}\n",
      o->from);
}

/* seed.cu: the program with its kernels between EVOLVE markers. */
static void write_seed(const struct init_ff_opts *o, struct buf *b)
{
  const struct initfrom_info *in = o->info;
  const char *p = o->src, *end = o->src + o->srclen;
  int line = 1, k = 0;

  buf_printf(b,
             "// seed.cu - %s with its kernels marked for the search "
             "(EVOLVE blocks),\n"
             "// written by `cuco init --from`; the search changes only the "
             "marked code.\n",
             o->from);
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
    if (k < in->nkernels && line == in->kernel_lo[k])
      buf_puts(b, "// EVOLVE-BLOCK-START\n");
    buf_append(b, p, n);
    if (!nl)
      buf_puts(b, "\n");
    if (k < in->nkernels && line == in->kernel_hi[k]) {
      buf_puts(b, "// EVOLVE-BLOCK-END\n");
      k++;
    }
    p += n;
    line++;
  }
}

/* C library calls of the program that the symbol list does not allow
 * (to widen it in [allow]), and the CUDA/NCCL calls it refuses. */
static void allow_lists(const struct init_ff_opts *o, struct buf *widen,
                        struct buf *refused)
{
  /* glibc 2.38+ (the GPU machines' 2.39) compiles these C++ calls to its
   * C23 entry points: atoi is __isoc23_strtol there */
  static const char *const c23[][2] = {
      {"atoi", "__isoc23_strtol"},       {"atol", "__isoc23_strtol"},
      {"strtol", "__isoc23_strtol"},     {"atoll", "__isoc23_strtoll"},
      {"strtoll", "__isoc23_strtoll"},   {"strtoul", "__isoc23_strtoul"},
      {"strtoull", "__isoc23_strtoull"}, {"sscanf", "__isoc23_sscanf"},
      {"sscanf", "__isoc99_sscanf"},     {NULL, NULL}};
  const struct initfrom_info *in = o->info;
  char names[INITFROM_MAX_CALLS + 16][48];
  int i, k, n = 0;

  for (i = 0; i < in->ncalls; i++) {
    snprintf(names[n++], sizeof(names[0]), "%s", in->calls[i]);
    for (k = 0; c23[k][0] && n < INITFROM_MAX_CALLS + 16; k++)
      if (!strcmp(in->calls[i], c23[k][0]))
        snprintf(names[n++], sizeof(names[0]), "%s", c23[k][1]);
  }
  for (i = 0; o->allow && i < n; i++) {
    const char *c = names[i];
    for (k = 0; k < i && strcmp(names[k], c); k++)
      ;
    if (k < i) /* said already */
      continue;
    int api = !strncmp(c, "cuda", 4) || !strncmp(c, "nccl", 4) ||
              !strncmp(c, "cublas", 6) || !strncmp(c, "cu", 2);
    if (allow_match_program(o->allow, c, NULL, 0, 1))
      continue;
    if (api)
      buf_printf(refused, "%s%s", refused->len ? ", " : "", c);
    else
      buf_printf(widen, "%s%s", widen->len ? ", " : "", c);
  }
}

static void make_ini(const struct init_ff_opts *o, struct buf *b,
                     const char *build, const char *widen, int self_check,
                     const char *todo)
{
  const struct initfrom_info *in = o->info;
  int idx[WORKLOAD_MAX_KV], n = size_args(in, idx), i;
  const char *t = todo;

  struct buf tmp = BUF_INIT(1u << 16);

  buf_printf(&tmp,
             "workload.ini of %s, made by `cuco init --from %s`: a freeform "
             "workload around the program as it is (docs/contracts.md, "
             "\"Freeform workloads\"). README.md says what was inferred "
             "and how.",
             o->name, o->from);
  wrap(b, "; ", "; ", buf_str(&tmp));
  if (*t)
    buf_puts(b, ";\n; TODO (init could not infer these; fill them in):\n");
  while (*t) {
    size_t k = strcspn(t, "\n");
    buf_reset(&tmp);
    buf_printf(&tmp, "%.*s", (int)k, t);
    wrap(b, ";   - ", ";     ", buf_str(&tmp));
    t += k + (t[k] == '\n');
  }
  buf_printf(b, "[workload]\nname        = %s\n", o->name);
  buf_reset(&tmp);
  buf_printf(&tmp,
             "User program %s imported with cuco init; describe it "
             "here.",
             o->from);
  wrap(b, "description = ", "  ", buf_str(&tmp));
  buf_printf(b,
             "kind        = freeform\n"
             "; %s\n"
             "ranks       = %s\n"
             "baselines   = baseline.cu\n"
             "seed        = seed.cu\n",
             in->uses_mpi ? "an MPI program: one process a rank"
                          : "one process drives the GPUs (the program picks "
                            "how many)",
             in->uses_mpi ? "1,2,4,8" : "1");
  buf_release(&tmp);
  buf_puts(b, "\n; the program's own defaults, read from its command line "
              "parsing\n; (cuco_run.sh turns a size into its arguments)\n"
              "[sizes]\ndefault = ");
  for (i = 0; i < n; i++)
    buf_printf(b, "%s%s=%ld", i ? "," : "", in->args[idx[i]].name,
               in->args[idx[i]].defval);
  buf_puts(b, "\n\n[sets]\nverify = default\nbench  = default\n");
  buf_printf(b, "\n[freeform]\n"
                "; nvcc, the target and NCCL as cuco's toolchain probe found "
                "them\n"
                "; (cuco doctor); run init again on another machine\n");
  wrap(b, "build  = ", "  ", build);
  buf_puts(b, "run    = sh {dir}/cuco_run.sh {bin} {params}\n"
              "metric = time_ms\n"
              "repeat = 3\n");
  if (self_check)
    buf_printf(b,
               "; The program checks itself (it prints %s): cuco_run.sh "
               "passes a run\n"
               "; on its word (results say verified_by: program).  For "
               "cuco's own\n"
               "; check of the output, write check.c and uncomment:\n"
               "; check_build = gcc -O2 -std=c11 -o {bin} {dir}/check.c\n"
               "; check       = {bin} --params {params} --work {work}\n",
               in->pass);
  else
    buf_puts(b, "; TODO: check.c is a scaffold that fails every run until it "
                "checks the\n"
                "; program's output (the program checks nothing init "
                "recognised)\n"
                "check_build = gcc -O2 -std=c11 -o {bin} {dir}/check.c\n"
                "check       = {bin} --params {params} --work {work}\n");
  if (*widen) {
    buf_puts(b, "\n[allow]\n"
                "; C library calls of the program's own host code (frozen "
                "text)\n");
    wrap(b, "symbols = ", "  ", widen);
  }
}

static void list_md(struct buf *b, const char *items)
{
  while (*items) {
    size_t k = strcspn(items, "\n");
    buf_printf(b, "- %.*s\n", (int)k, items);
    items += k + (items[k] == '\n');
  }
}

static void make_readme(const struct init_ff_opts *o, struct buf *b,
                        const char *todo, const char *guessed)
{
  char dir[PATH_MAX];
  struct buf t = BUF_INIT(1u << 20);

  if (!realpath(o->dir, dir))
    snprintf(dir, sizeof(dir), "%s", o->dir);
  buf_printf(b,
             "# Workload %s\n\n"
             "Imported by `cuco init --from %s`: a **freeform** workload "
             "around the\n"
             "program as it is (docs/contracts.md, \"Freeform "
             "workloads\"). cuco builds it\n"
             "with nvcc, runs it through `cuco_run.sh` at the sizes of "
             "`workload.ini`,\n"
             "and reads the time it prints.\n\n"
             "| file | what |\n| --- | --- |\n"
             "| `baseline.cu` | the program as it is: the bar |\n"
             "| `seed.cu` | the same, its kernels in EVOLVE blocks: what "
             "`cuco evolve` may change |\n"
             "| `cuco_run.sh` | sizes to the program's command line; its "
             "time and verdict to one JSON line |\n"
             "| `check.c` | scaffold of cuco's own check of the output |\n"
             "| `workload.ini` | sizes, build and run commands |\n\n",
             o->name, o->from);
  buf_puts(b, "## TODO: what init could not infer\n\n");
  if (*todo)
    list_md(b, todo);
  else
    buf_puts(b, "Nothing: check the guesses below.\n");
  buf_puts(b, "\n## Guessed: check these\n\n");
  list_md(b, guessed);
  if (analyze_report_text(o->r, &t) == 0)
    buf_printf(b, "\n## Communication found by `cuco analyze`\n\n```\n%s```\n",
               buf_str(&t));
  buf_release(&t);
  buf_printf(b,
             "\n## Next steps\n\n"
             "1. Fill in the TODO list above.\n"
             "2. `cuco eval %s --compile-only` builds the seed (no GPU "
             "needed).\n"
             "3. `cuco eval %s --impl all` on the GPU machine runs "
             "`baseline.cu` and\n"
             "   `seed.cu` at the `[sets]` sizes.\n"
             "4. `cuco evolve %s`.\n\n"
             "Give cuco this folder's absolute path: `{dir}` in the run "
             "command is\n"
             "taken as written.\n",
             dir, dir, dir);
}

int init_ff_write(const struct init_ff_opts *o, struct buf *todo,
                  struct buf *guessed, struct err *e)
{
  const struct initfrom_info *in = o->info;
  struct buf ini = BUF_INIT(1u << 20), readme = BUF_INIT(8u << 20),
             run = BUF_INIT(1u << 20), check = BUF_INIT(1u << 16),
             seed = BUF_INIT(16u << 20), build = BUF_INIT(8192),
             widen = BUF_INIT(4096), refused = BUF_INIT(4096),
             base = BUF_INIT(16u << 20);
  int i, rc;
  int self_check = in->pass[0] != 0;

  /* what init could not infer */
  buf_puts(todo, "describe the problem in workload.ini [workload] "
                 "description (prompts use it)\n");
  build_line(o, &build, todo);
  if (!in->nargs)
    buf_puts(todo,
             "sizes: init found no command-line argument parsing it knows "
             "(getopt, \"--name\" compared with strcmp, argv[N]): the run "
             "passes no arguments; name the sizes in [sizes] and map each "
             "to the program's arguments in cuco_run.sh\n");
  for (i = 0; i < in->nargs; i++)
    if (!in->args[i].def[0])
      buf_printf(todo,
                 "size %s (%s%s%d): init could not read its default; give "
                 "it in [sizes] if the program needs it\n",
                 in->args[i].name, in->args[i].flag,
                 in->args[i].pos ? "argv[" : "",
                 in->args[i].pos ? in->args[i].pos : 0);
  if (!in->time_line)
    buf_puts(todo, "time: init found no printf of a time in ms, us or s; set "
                   "TIME_SUFFIX (the text the program prints right after its "
                   "time) and TIME_FACTOR in cuco_run.sh\n");
  if (!self_check)
    buf_puts(todo, "check: the program prints no PASS/FAIL verdict init "
                   "recognised, so check.c (a scaffold) fails every run "
                   "until it checks the program's output\n");
  if (!in->nkernels)
    buf_puts(todo, "seed.cu has no EVOLVE block (init found no kernel): "
                   "mark the code the search may change with "
                   "// EVOLVE-BLOCK-START and // EVOLVE-BLOCK-END\n");
  if (in->uses_mpi)
    buf_puts(todo, "MPI: add the MPI compile and link flags to [freeform] "
                   "build (`mpicxx --showme`), and run eval/evolve with "
                   "--launcher mpirun --ranks N\n");
  allow_lists(o, &widen, &refused);
  if (!o->allow)
    buf_puts(todo, "runtime/symbols.allow was not found: `cuco eval "
                   "--compile-only` names the C library calls to add under "
                   "[allow] symbols\n");
  if (refused.len)
    buf_printf(todo,
               "cuco's symbol allowlist (runtime/symbols.allow) refuses "
               "these calls of the program in every freeform program: %s. "
               "`cuco eval` stops at its allowlist stage until the list "
               "allows a freeform program its own NCCL setup and host "
               "collectives (a limitation of cuco, not of the program)\n",
               buf_str(&refused));

  /* what init guessed */
  if (in->nargs) {
    buf_printf(guessed,
               "sizes: %d command-line argument%s (%s parsing):", in->nargs,
               in->nargs == 1 ? "" : "s", in->parse_style);
    for (i = 0; i < in->nargs; i++) {
      const struct initfrom_arg *a = &in->args[i];
      if (a->pos)
        buf_printf(guessed, "%s %s (argv[%d])", i ? "," : "", a->name, a->pos);
      else
        buf_printf(guessed, "%s %s (%s%s)", i ? "," : "", a->name, a->flag,
                   a->joined ? "=N" : " N");
    }
    buf_puts(guessed, "; [sizes] default = the program's defaults");
    for (i = 0; i < in->nargs; i++)
      if (in->args[i].defval <= 0 && in->args[i].def[0])
        buf_printf(guessed,
                   "; %s (default %s) is left out: a size is a "
                   "positive integer, the program's default applies",
                   in->args[i].name, in->args[i].def);
    buf_puts(guessed, "; verify and bench both run them: add a small size "
                      "to [sets] verify\n");
  }
  if (in->time_line)
    buf_printf(guessed,
               "time: the number before \"%s\" (line %d), x%g to ms; cuco "
               "believes it only within its own clock of the whole run\n",
               in->time_suffix, in->time_line, in->time_factor);
  if (self_check)
    buf_printf(
        guessed,
        "check: a run passes when the program exits 0 and prints %s%s%s "
        "(line %d): its own word, results say verified_by: program; "
        "check.c is the scaffold of cuco's own check (not enabled)\n",
        in->pass, in->fail[0] ? " and never " : "", in->fail, in->check_line);
  if (in->nkernels)
    buf_printf(guessed, "seed.cu: %d EVOLVE block%s around the kernels (lines",
               in->nkernels, in->nkernels == 1 ? "" : "s");
  for (i = 0; i < in->nkernels; i++)
    buf_printf(guessed, "%s %d-%d", i ? "," : "", in->kernel_lo[i],
               in->kernel_hi[i]);
  if (in->nkernels)
    buf_puts(guessed, " of the program): the host code stays frozen\n");
  if (in->nlibs) {
    buf_puts(guessed, "libraries from the includes:");
    for (i = 0; i < in->nlibs; i++)
      buf_printf(guessed, " -l%s", in->libs[i]);
    buf_puts(guessed, "\n");
  }
  if (widen.len)
    buf_printf(guessed,
               "[allow] symbols = %s: C library calls of the "
               "program's host code that runtime/symbols.allow does "
               "not list\n",
               buf_str(&widen));

  make_ini(o, &ini, buf_str(&build), buf_str(&widen), self_check,
           buf_str(todo));
  write_run_sh(o, &run);
  write_check_c(o, &check);
  write_seed(o, &seed);
  buf_append(&base, o->src, o->srclen);
  make_readme(o, &readme, buf_str(todo), buf_str(guessed));
  rc = buf_error(todo) || buf_error(guessed)
           ? err_set(e, ERR_NOMEM, "out of memory")
           : 0;
  if (!rc)
    rc = write_in(o->dir, "baseline.cu", &base, e);
  if (!rc)
    rc = write_in(o->dir, "seed.cu", &seed, e);
  if (!rc)
    rc = write_in(o->dir, "cuco_run.sh", &run, e);
  if (!rc)
    rc = write_in(o->dir, "check.c", &check, e);
  if (!rc)
    rc = write_in(o->dir, "workload.ini", &ini, e);
  if (!rc)
    rc = write_in(o->dir, "README.md", &readme, e);
  buf_release(&ini);
  buf_release(&readme);
  buf_release(&run);
  buf_release(&check);
  buf_release(&seed);
  buf_release(&build);
  buf_release(&widen);
  buf_release(&refused);
  buf_release(&base);
  return rc;
}
