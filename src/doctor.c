/* doctor.c - `cuco doctor`: probe and describe the machine. */
#define _GNU_SOURCE
#include "doctor.h"

#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cmd.h"
#include "config.h"
#include "llm.h"
#include "log.h"
#include "launcher.h"
#include "proc.h"
#include "redact.h"
#include "sandbox.h"
#include "toolchain.h"
#include "version.h"

static json_t *probe_cpu(void)
{
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512], model[256] = "unknown";

  while (f && fgets(line, sizeof(line), f)) {
    char *p = strchr(line, ':');
    if (!strncmp(line, "model name", 10) && p) {
      snprintf(model, sizeof(model), "%s", p + 2);
      model[strcspn(model, "\n")] = '\0';
      break;
    }
  }
  if (f)
    fclose(f);
  return json_pack("{s:s, s:i}", "model", model, "cores",
                   (int)sysconf(_SC_NPROCESSORS_ONLN));
}

static json_t *probe_os(void)
{
  FILE *f = fopen("/etc/os-release", "r");
  char line[512], pretty[256] = "unknown";
  struct utsname u;

  while (f && fgets(line, sizeof(line), f)) {
    if (!strncmp(line, "PRETTY_NAME=", 12)) {
      char *s = line + 12;
      size_t n;
      if (*s == '"')
        s++;
      n = strcspn(s, "\"\n");
      snprintf(pretty, sizeof(pretty), "%.*s", (int)n, s);
    }
  }
  if (f)
    fclose(f);
  if (uname(&u))
    memset(&u, 0, sizeof(u));
  return json_pack("{s:s, s:s, s:s}", "name", pretty, "kernel", u.release,
                   "arch", u.machine);
}

static json_t *probe_gpus(void)
{
  const char *const q[] = {
      "nvidia-smi",
      "--query-gpu=name,memory.total,driver_version,clocks.max.sm,"
      "clocks.sm,pci.bus_id",
      "--format=csv,noheader,nounits", NULL};
  const char *const topo[] = {"nvidia-smi", "topo", "-m", NULL};
  json_t *list = json_array(), *g;
  char *out, *line, *save = NULL, *t;
  char driver[64] = "";
  int ok;

  out = proc_capture(q, 256 * 1024, &ok);
  if (out && ok) {
    for (line = strtok_r(out, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
      char name[128], bus[64];
      int mem = 0, maxclk = 0, clk = 0;
      if (sscanf(line, "%127[^,], %d, %63[^,], %d, %d, %63s", name, &mem,
                 driver, &maxclk, &clk, bus) >= 3)
        json_array_append_new(
            list, json_pack("{s:s, s:i, s:i, s:i, s:s}", "name", name,
                            "memory_mib", mem, "max_sm_clock_mhz", maxclk,
                            "sm_clock_mhz", clk, "pci_bus_id", bus));
    }
  }
  free(out);
  g = json_pack("{s:i, s:o}", "count", (int)json_array_size(list), "list",
                list);
  if (driver[0])
    json_object_set_new(g, "driver", json_string(driver));
  if (json_array_size(list) > 0) {
    t = proc_capture(topo, 256 * 1024, &ok);
    if (t && ok)
      json_object_set_new(g, "topology", json_string(t));
    free(t);
  }
  return g;
}

/* The first line of `prog --version`, or NULL. */
static json_t *version_of(const char *path)
{
  const char *argv[] = {path, "--version", NULL};
  char *t;
  json_t *v = NULL;
  int ok;

  t = proc_capture(argv, 4096, &ok);
  if (t && ok) {
    t[strcspn(t, "\n")] = '\0';
    v = json_string(t);
  }
  free(t);
  return v ? v : json_null();
}

/* mpirun, srun, sbatch, salloc: where (null: not found) and versions;
 * whether cuco runs inside a Slurm allocation and what it holds. */
static json_t *probe_mpi(void)
{
  static const char *const names[] = {"mpirun", "srun", "sbatch", "salloc"};
  static const char *const alloc_env[][2] = {
      {"job_id", "SLURM_JOB_ID"},
      {"nodelist", "SLURM_JOB_NODELIST"},
      {"nodes", "SLURM_JOB_NUM_NODES"},
      {"ntasks", "SLURM_NTASKS"},
      {"cpus_per_node", "SLURM_JOB_CPUS_PER_NODE"},
      {"gpus", "SLURM_GPUS"},
      {"gpus_on_node", "SLURM_GPUS_ON_NODE"},
      {"job_gpus", "SLURM_JOB_GPUS"},
      {"partition", "SLURM_JOB_PARTITION"}};
  json_t *o = json_object(), *ver = json_object(), *al;
  char cand[1024];
  size_t i;

  for (i = 0; i < 4; i++) {
    int found = proc_which(names[i], NULL, cand, sizeof(cand)) != NULL;
    json_object_set_new(o, names[i], found ? json_string(cand) : json_null());
    if (i < 2) /* sbatch and salloc are srun's version */
      json_object_set_new(ver, names[i],
                          found ? version_of(cand) : json_null());
  }
  json_object_set_new(o, "versions", ver);
  if (getenv("SLURM_JOB_ID")) {
    int gpus = 0, slots = launcher_slurm_slots(1, 1, &gpus);
    al = json_object();
    for (i = 0; i < sizeof(alloc_env) / sizeof(alloc_env[0]); i++) {
      const char *v = getenv(alloc_env[i][1]);
      if (v)
        json_object_set_new(al, alloc_env[i][0], json_string(v));
    }
    json_object_set_new(al, "slots_of_one", json_integer(slots));
    json_object_set_new(al, "has_gpus", json_boolean(gpus));
    json_object_set_new(o, "allocation", al);
  } else {
    json_object_set_new(o, "allocation", json_null());
  }
  return o;
}

/* A variable name, or "" for anything else: a key pasted into api_key_env
 * by mistake must not be printed. */
static const char *env_name_or_empty(const char *s)
{
  size_t i;

  for (i = 0; s && s[i]; i++)
    if (!(isalpha((unsigned char)s[i]) || s[i] == '_' ||
          (i && isdigit((unsigned char)s[i]))))
      return "";
  return s && strncmp(s, "sk-", 3) && i <= 100 ? s : "";
}

static json_t *probe_llm(const struct config *cfg)
{
  const char *keyenv =
      env_name_or_empty(config_get(cfg, "llm", "api_key_env", NULL));
  json_t *o = json_object();

  if (!*keyenv)
    keyenv = NULL;

  json_object_set_new(o, "provider",
                      json_string(config_get(cfg, "llm", "provider", "none")));
  json_object_set_new(o, "model",
                      json_string(config_get(cfg, "llm", "model", "")));
  json_object_set_new(o, "base_url",
                      json_string(config_get(cfg, "llm", "base_url", "")));
  /* The name of the variable, and whether it is set: never its value. */
  json_object_set_new(o, "api_key_env", json_string(keyenv ? keyenv : ""));
  json_object_set_new(
      o, "api_key_set",
      json_boolean(keyenv && redact_getenv(keyenv) && *redact_getenv(keyenv)));
  return o;
}

/* Which isolation candidate children get, and why (sandbox.h), with the
 * limits cuco-confine sets and what each executor gets; issue 47. */
static json_t *probe_sandbox(void)
{
  struct sandbox_state s;
  int bw;
  json_t *lim, *ex;

  sandbox_state(&s);
  bw = s.kind == SANDBOX_KIND_BWRAP;
  lim = json_pack(
      "{s:I, s:I, s:I, s:I, s:s}", "memory_bytes", (json_int_t)s.limits.memory,
      "file_size_bytes", (json_int_t)s.limits.file_size, "tmp_size_bytes",
      (json_int_t)s.limits.tmp_size, "processes_extra",
      (json_int_t)s.limits.processes, "processes_enforced",
      !bw ? "no (no sandbox)"
      : geteuid() == 0
          ? "no: cuco runs as root, and RLIMIT_NPROC never applies to uid 0; "
            "the deadline and the tree kill bound them"
          : "yes (RLIMIT_NPROC)");
  ex = json_pack(
      "{s:s, s:s, s:s}", "local",
      bw ? "bwrap + cuco-confine around every compile and run"
         : "none: candidates are refused unless [sandbox] mode = none",
      "mpirun",
      bw ? "every rank under the same bwrap command on its node (bwrap and "
           "cuco-confine at the same paths on every node; runtime workloads: "
           "the judge starts its worker so)"
         : "none",
      "srun", bw ? "as mpirun" : "none");
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:o, s:o}",
                   "mode", sandbox_mode_name(s.mode), "active",
                   sandbox_kind_name(s.kind), "bwrap", s.bwrap, "version",
                   s.version, "confine", s.confine, "why", s.why, "subreaper",
                   1, "secrets_redacted", redact_count() > 0, "limits", lim,
                   "executors", ex);
}

json_t *doctor_describe(const struct config *cfg, const struct toolchain *tc,
                        struct err *e)
{
  char hv[32], lv[32];
  json_t *root, *nccl, *cuda;

  tc_version_str(tc->nccl_header_version, hv, sizeof(hv));
  tc_version_str(tc->nccl_library_version, lv, sizeof(lv));
  cuda = json_pack("{s:s, s:s, s:s, s:s}", "nvcc", tc->nvcc, "nvcc_version",
                   tc->nvcc_version, "cuda_home", tc->cuda_home, "arch",
                   tc->arch);
  nccl = json_pack("{s:s, s:s, s:s, s:s, s:b}", "header_version", hv,
                   "library_version", lv, "include_dir", tc->nccl_include,
                   "library_dir", tc->nccl_lib, "match",
                   tc->nccl_header_version &&
                       tc->nccl_header_version == tc->nccl_library_version);
  root = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "cuco_version",
                   CUCO_VERSION, "cpu", probe_cpu(), "os", probe_os(), "cuda",
                   cuda, "nccl", nccl, "gpus", probe_gpus(), "mpi",
                   probe_mpi(), "llm", probe_llm(cfg));
  if (root && json_object_set_new(root, "sandbox", probe_sandbox())) {
    json_decref(root);
    root = NULL;
  }
  if (!root)
    err_set(e, ERR_NOMEM, "out of memory building the description");
  return root;
}

json_t *doctor_probe(const struct config *cfg, struct err *e)
{
  struct toolchain tc;

  if (tc_probe(cfg, &tc, e))
    return NULL;
  return doctor_describe(cfg, &tc, e);
}

static void print_launchers(json_t *m)
{
  json_t *v = json_object_get(m, "versions"), *al;
  static const char *const names[] = {"mpirun", "srun", "sbatch", "salloc"};
  int i;

  printf("launch: ");
  for (i = 0; i < 4; i++) {
    const char *p = json_string_value(json_object_get(m, names[i]));
    const char *ver = json_string_value(json_object_get(v, names[i]));
    printf("%s%s %s%s%s%s", i ? ", " : "", names[i], p ? p : "not found",
           ver ? " (" : "", ver ? ver : "",
           ver                              ? ")"
           : p && !strcmp(names[i], "srun") ? " (no Slurm configuration "
                                              "reachable)"
                                            : "");
  }
  printf("\n");
  al = json_object_get(m, "allocation");
  if (json_is_object(al))
    printf("slurm:  inside allocation %s: nodes %s, tasks %s, GPUs %s; "
           "executor slurm would use %lld slot%s of one rank\n",
           json_string_value(json_object_get(al, "job_id")),
           json_string_value(json_object_get(al, "nodelist")) ?: "?",
           json_string_value(json_object_get(al, "ntasks")) ?: "-",
           json_is_true(json_object_get(al, "has_gpus")) ? "yes" : "none",
           json_integer_value(json_object_get(al, "slots_of_one")),
           json_integer_value(json_object_get(al, "slots_of_one")) == 1 ? ""
                                                                        : "s");
  else
    printf("slurm:  not inside an allocation (salloc/sbatch set "
           "SLURM_JOB_ID); --launcher srun would make its own job\n");
}

static void print_text(json_t *d)
{
  json_t *g = json_object_get(d, "gpus");
  json_t *n = json_object_get(d, "nccl");
  json_t *c = json_object_get(d, "cuda");
  json_t *l = json_object_get(d, "llm");
  json_t *m = json_object_get(d, "mpi");
  size_t i;
  json_t *gpu;

  printf("cuco %s\n", json_string_value(json_object_get(d, "cuco_version")));
  printf(
      "cpu:    %s (%d cores)\n",
      json_string_value(json_object_get(json_object_get(d, "cpu"), "model")),
      (int)json_integer_value(
          json_object_get(json_object_get(d, "cpu"), "cores")));
  printf(
      "os:     %s, kernel %s\n",
      json_string_value(json_object_get(json_object_get(d, "os"), "name")),
      json_string_value(json_object_get(json_object_get(d, "os"), "kernel")));
  if (*json_string_value(json_object_get(c, "nvcc")))
    printf("nvcc:   %s (%s), arch %s\n",
           json_string_value(json_object_get(c, "nvcc_version")),
           json_string_value(json_object_get(c, "nvcc")),
           json_string_value(json_object_get(c, "arch")));
  else
    printf("nvcc:   not found: GPU workloads cannot be built here\n");
  printf("nccl:   headers %s (%s), library %s (%s)%s\n",
         json_string_value(json_object_get(n, "header_version")),
         json_string_value(json_object_get(n, "include_dir")),
         json_string_value(json_object_get(n, "library_version")),
         json_string_value(json_object_get(n, "library_dir")),
         json_is_true(json_object_get(n, "match")) ? ", match"
                                                   : ", DO NOT MATCH");
  if (json_integer_value(json_object_get(g, "count")) == 0) {
    printf("gpus:   none: this machine has no GPU (evaluation of GPU "
           "workloads needs one; building does not)\n");
  } else {
    printf("gpus:   %d, driver %s\n",
           (int)json_integer_value(json_object_get(g, "count")),
           json_string_value(json_object_get(g, "driver")));
    json_array_foreach(json_object_get(g, "list"), i, gpu)
        printf("  [%zu] %s, %d MiB\n", i,
               json_string_value(json_object_get(gpu, "name")),
               (int)json_integer_value(json_object_get(gpu, "memory_mib")));
    if (json_object_get(g, "topology"))
      printf("topology:\n%s\n",
             json_string_value(json_object_get(g, "topology")));
  }
  print_launchers(m);
  {
    json_t *s = json_object_get(d, "sandbox");
    const char *act = json_string_value(json_object_get(s, "active"));
    printf("sandbox: %s (mode %s): %s\n",
           !strcmp(act, "bwrap")       ? "bubblewrap + subreaper"
           : !strcmp(act, "subreaper") ? "subreaper only, no namespaces"
                                       : "REFUSED: candidates will not run",
           json_string_value(json_object_get(s, "mode")),
           json_string_value(json_object_get(s, "why")));
    if (!strcmp(act, "bwrap")) {
      json_t *lim = json_object_get(s, "limits");
      printf("        limits: memory %lld MiB, file %lld MiB, /tmp and "
             "/dev/shm %lld MiB each, processes: %s\n",
             (long long)json_integer_value(
                 json_object_get(lim, "memory_bytes")) >>
                 20,
             (long long)json_integer_value(
                 json_object_get(lim, "file_size_bytes")) >>
                 20,
             (long long)json_integer_value(
                 json_object_get(lim, "tmp_size_bytes")) >>
                 20,
             json_string_value(json_object_get(lim, "processes_enforced")));
      printf("        mpirun/srun: %s\n",
             json_string_value(
                 json_object_get(json_object_get(s, "executors"), "mpirun")));
    }
  }
  /* docs/contracts.md 4f: what evaluations of runtime workloads use */
  printf(
      "judge:  separate process: the workload's baseline binary holds the "
      "secret, inputs, reference, clock and RESULT.json; the candidate runs "
      "as its worker%s (--vranks: in-process, a protocol test)\n",
      getenv("CUCO_JUDGE") && !strcmp(getenv("CUCO_JUDGE"), "in-process")
          ? " -- but CUCO_JUDGE=in-process is set: ONE process"
          : "");
  printf("llm:    provider %s, model %s%s%s\n",
         json_string_value(json_object_get(l, "provider")),
         *json_string_value(json_object_get(l, "model"))
             ? json_string_value(json_object_get(l, "model"))
             : "(none)",
         *json_string_value(json_object_get(l, "api_key_env")) ? ", key from $"
                                                               : "",
         json_string_value(json_object_get(l, "api_key_env")));
}

int cmd_doctor(struct cmd_ctx *ctx, int argc, char **argv)
{
  static const struct option opts[] = {
      {"json", no_argument, NULL, 'j'},
      {"output", required_argument, NULL, 'o'},
      {"llm", no_argument, NULL, 'l'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *outpath = NULL;
  int as_json = 0, check_llm = 0, opt, rc = CMD_OK, nfail = 0;
  struct err e = {0, ""};
  json_t *d;

  while ((opt = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (opt) {
    case 'j':
      as_json = 1;
      break;
    case 'l':
      check_llm = 1;
      break;
    case 'o':
      outpath = optarg;
      break;
    case 'h':
      return cmd_usage(ctx, 1);
    default:
      return cmd_usage(ctx, 0);
    }
  }
  if (optind < argc)
    return cmd_bad_usage(ctx, "unexpected argument '%s'", argv[optind]);
  d = doctor_probe(ctx->cfg, &e);
  if (!d) {
    cmd_error(ctx, "%s", e.msg);
    return CMD_FAIL;
  }
  /* --llm: one tiny request per configured model (llm_check_models). */
  if (check_llm && as_json) {
    json_t *rep = NULL;
    nfail = llm_check_models(ctx->cfg, NULL, &rep, &e);
    if (rep)
      json_object_set_new(json_object_get(d, "llm"), "check", rep);
  }
  if (as_json) {
    char *s = json_dumps(d, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (s)
      puts(s);
    free(s);
  } else {
    print_text(d);
    if (check_llm) {
      fflush(stdout);
      nfail = llm_check_models(ctx->cfg, stdout, NULL, &e);
    }
  }
  if (nfail < 0) {
    cmd_error(ctx, "--llm: %s", e.msg);
    rc = CMD_FAIL;
  } else if (nfail > 0) {
    cmd_error(ctx, "--llm: %d of the configured models failed", nfail);
    rc = CMD_FAIL;
  }
  if (outpath && json_dump_file(d, outpath, JSON_INDENT(2) | JSON_SORT_KEYS)) {
    cmd_error(ctx, "cannot write %s", outpath);
    rc = CMD_FAIL;
  }
  {
    json_t *n = json_object_get(d, "nccl");
    const char *hv = json_string_value(json_object_get(n, "header_version"));
    const char *lv = json_string_value(json_object_get(n, "library_version"));
    if (strcmp(hv, "unknown") && strcmp(lv, "unknown") &&
        !json_is_true(json_object_get(n, "match"))) {
      cmd_error(ctx,
                "NCCL headers %s and library %s differ: device-API "
                "binaries would break (set [build] nccl_home)",
                hv, lv);
      rc = CMD_FAIL;
    }
  }
  if (!strcmp(json_string_value(
                  json_object_get(json_object_get(d, "sandbox"), "active")),
              "refused")) {
    log_error("doctor: no sandbox: %s: candidates will not run",
              json_string_value(
                  json_object_get(json_object_get(d, "sandbox"), "why")));
    rc = CMD_FAIL;
  }
  json_decref(d);
  return rc;
}

const char *doctor_no_gpu_line(const char *cmd, const char *workload_dir)
{
  static char line[512];

  snprintf(line, sizeof(line),
           "no GPU found on this machine (see cuco doctor): %s needs one; "
           "build only with 'cuco eval %s --compile-only', or try the CPU "
           "example: cuco %s examples/cpu_matmul",
           workload_dir, workload_dir, cmd);
  return line;
}
