// runtime/rt_boot.cu - command line (docs/contracts.md section 4), rank
// discovery, NCCL bootstrap through an id file or NCCL_COMM_ID, progress
// files with the time per phase, and small JSON helpers.
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rt_internal.cuh"
#include "rt_phase.h"

double rt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int usage(const char *fmt, const char *arg) {
  fprintf(stderr, "usage error: ");
  fprintf(stderr, fmt, arg ? arg : "");
  fprintf(stderr,
          "\nusage: BIN --params K=V,... --mode verify|bench --out RESULT.json"
          " [--size-name S] [--warmup N] [--iters N] [--min-time S] [--ci-stop REL] [--seed N]"
          " [--tol X] [--local-tol X] [--block-tol X] [--machine M.json] [--vranks R]"
          " [--perturb] [--pace-ms P] [--secret-fd FD] [--skip-check NAME (tests only)]"
          " [--rank R --nranks N --local-rank L] [--id-file P] [--judge-worker CMDFILE]\n"
          "       BIN --worker-fd FD --rank R --nranks N --local-rank L [--id-file P]"
          " (a worker, started by its judge)\n");
  return -2;
}

static int parse_ll(const char *s, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 0);
  if (errno || end == s || *end) return -1;
  *out = v;
  return 0;
}

static int parse_d(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v == v)) return -1;
  *out = v;
  return 0;
}

static int parse_params(const char *text, struct wl_problem *p);

// --plan FILE (rt_opts.plan): one size a line, "NAME PARAMS TOL LTOL BTOL".
static struct rt_plan_size g_plan[RT_PLAN_MAX];
static double g_cli_tol[3];
static int read_plan(const char *path, struct rt_opts *o) {
  FILE *f = fopen(path, "r");
  char line[1024];
  int n = 0, ln = 0;
  if (!f) {
    usage("--plan: cannot open %s", path);
    return -1;
  }
  while (fgets(line, sizeof line, f)) {
    char name[64], params[600], t[3][32];
    ln++;
    if (line[0] == '\n' || line[0] == '#') continue;
    if (n >= RT_PLAN_MAX || sscanf(line, "%63s %599s %31s %31s %31s", name, params, t[0], t[1],
                                   t[2]) != 5 ||
        strlen(name) >= WL_NAME_MAX || strlen(params) >= sizeof g_plan[n].params) {
      fclose(f);
      fprintf(stderr, "usage error: --plan %s:%d: want NAME PARAMS TOL LTOL BTOL (at most %d "
              "sizes)\n", path, ln, RT_PLAN_MAX);
      return -1;
    }
    struct wl_problem probe;
    memset(&probe, 0, sizeof probe);
    double *tv[3] = {&g_plan[n].tol, &g_plan[n].local_tol, &g_plan[n].block_tol};
    for (int k = 0; k < 3; k++) {
      *tv[k] = -1;
      if (strcmp(t[k], "-") && (parse_d(t[k], tv[k]) || *tv[k] < 0)) {
        fclose(f);
        fprintf(stderr, "usage error: --plan %s:%d: bad tolerance '%s'\n", path, ln, t[k]);
        return -1;
      }
    }
    if (parse_params(params, &probe)) {
      fclose(f);
      fprintf(stderr, "usage error: --plan %s:%d: bad params '%s'\n", path, ln, params);
      return -1;
    }
    snprintf(g_plan[n].name, sizeof g_plan[n].name, "%s", name);
    snprintf(g_plan[n].params, sizeof g_plan[n].params, "%s", params);
    n++;
  }
  fclose(f);
  if (!n) {
    fprintf(stderr, "usage error: --plan %s: no size\n", path);
    return -1;
  }
  o->plan = g_plan;
  o->plan_n = n;
  return 0;
}

int rt_plan_select(struct rt_opts *o, int i) {
  if (i < 0 || i >= o->plan_n) {
    rt_errorf("--plan: no size %d", i);
    return -1;
  }
  const struct rt_plan_size *z = &o->plan[i];
  o->plan_cur = i;
  o->prob.nparams = 0;
  if (parse_params(z->params, &o->prob)) {
    rt_errorf("--plan: bad params '%s'", z->params);
    return -1;
  }
  snprintf(o->params_text, sizeof o->params_text, "%s", z->params);
  snprintf(o->prob.size_name, sizeof o->prob.size_name, "%s", z->name);
  o->tol = z->tol >= 0 ? z->tol : g_cli_tol[0];
  o->local_tol = z->local_tol >= 0 ? z->local_tol : g_cli_tol[1];
  o->block_tol = z->block_tol >= 0 ? z->block_tol : g_cli_tol[2];
  return 0;
}

static int parse_params(const char *text, struct wl_problem *p) {
  char buf[512];
  if (strlen(text) >= sizeof buf) return -1;
  snprintf(buf, sizeof buf, "%s", text);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok || (size_t)(eq - tok) >= WL_NAME_MAX) return -1;
    if (p->nparams >= WL_MAX_PARAMS) return -1;
    *eq = 0;
    for (char *c = tok; *c; c++)
      if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
            (*c >= '0' && *c <= '9') || *c == '_'))
        return -1;
    struct wl_param_kv *kv = &p->params[p->nparams];
    if (parse_ll(eq + 1, &kv->value)) return -1;
    for (int i = 0; i < p->nparams; i++)
      if (strcmp(p->params[i].name, tok) == 0) return -1;
    snprintf(kv->name, sizeof kv->name, "%s", tok);
    p->nparams++;
  }
  return p->nparams ? 0 : -1;
}

static int env_int(const char *name, int *out) {
  const char *v = getenv(name);
  long long x;
  if (!v || parse_ll(v, &x) || x < 0 || x > 1 << 20) return 0;
  *out = (int)x;
  return 1;
}

const char *const rt_pk_name[3] = {"perturb-delay", "perturb-hog", "perturb-order"};
const int rt_pk_bit[3] = {RT_CK_PERTURB_DELAY, RT_CK_PERTURB_HOG, RT_CK_PERTURB_ORDER};

// --skip-check names: each switches one mechanism off (testing the checks
// only: RESULT.json then carries checks_skipped != 0, which cuco refuses).
static const struct {
  const char *name;
  int bits;
} checks[] = {{"fresh-inputs", RT_CK_FRESH},
              {"output-poison", RT_CK_POISON},
              {"recv-poison", RT_CK_RECV_POISON},
              {"poison", RT_CK_POISON | RT_CK_RECV_POISON},
              {"snapshot", RT_CK_SNAPSHOT},
              {"input-hash", RT_CK_INPUT_HASH},
              {"host-clock", RT_CK_HOST_CLOCK},
              {"local-check", RT_CK_LOCAL},
              {"timed-verify", RT_CK_TIMED_VERIFY},
              {"perturb-delay", RT_CK_PERTURB_DELAY},
              {"perturb-hog", RT_CK_PERTURB_HOG},
              {"perturb-order", RT_CK_PERTURB_ORDER},
              {"perturb", RT_CK_PERTURB_DELAY | RT_CK_PERTURB_HOG | RT_CK_PERTURB_ORDER},
              {"speed-of-light", RT_CK_SOL},
              {"secret-steps", RT_CK_SECRET_STEPS},
              {"secret-inputs", RT_CK_SECRET_INPUTS},
              {"all", RT_CK_ALL}};

int rt_parse_args(int argc, char **argv, struct rt_opts *o) {
  memset(o, 0, sizeof *o);
  o->mode = -1;
  o->warmup = -1;
  o->iters = 20;
  o->min_time = 1.0;
  o->ci_stop = 0.005;
  o->tol = 2e-2;
  o->local_tol = -1;
  o->block_tol = -1;
  o->prob.seed = 12345;
  o->secret_fd = -1;
  o->prob.rank = o->prob.nranks = o->prob.local_rank = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    long long x;
    double d;
#define NEED()                                        \
  do {                                                \
    if (!v) return usage("%s needs a value", a);      \
    i++;                                              \
  } while (0)
    if (!strcmp(a, "--perturb")) {
      o->perturb = 1;
    } else if (!strcmp(a, "--params")) {
      NEED();
      if (parse_params(v, &o->prob)) return usage("bad --params '%s'", v);
      snprintf(o->params_text, sizeof o->params_text, "%s", v);
    } else if (!strcmp(a, "--size-name")) {
      NEED();
      if (strlen(v) >= WL_NAME_MAX) return usage("--size-name too long", NULL);
      snprintf(o->prob.size_name, sizeof o->prob.size_name, "%s", v);
    } else if (!strcmp(a, "--mode")) {
      NEED();
      if (!strcmp(v, "verify")) o->mode = RT_MODE_VERIFY;
      else if (!strcmp(v, "bench")) o->mode = RT_MODE_BENCH;
      else return usage("bad --mode '%s'", v);
    } else if (!strcmp(a, "--warmup") || !strcmp(a, "--iters") ||
               !strcmp(a, "--rank") || !strcmp(a, "--nranks") ||
               !strcmp(a, "--local-rank") || !strcmp(a, "--vranks") ||
               !strcmp(a, "--seed") || !strcmp(a, "--secret-fd")) {
      NEED();
      if (parse_ll(v, &x) || x < 0 || (strcmp(a, "--seed") && x > 1000000))
        return usage("bad number '%s'", v);
      if (!strcmp(a, "--warmup")) o->warmup = (int)x;
      else if (!strcmp(a, "--iters")) o->iters = (int)x;
      else if (!strcmp(a, "--rank")) o->prob.rank = (int)x;
      else if (!strcmp(a, "--nranks")) o->prob.nranks = (int)x;
      else if (!strcmp(a, "--local-rank")) o->prob.local_rank = (int)x;
      else if (!strcmp(a, "--vranks")) o->vranks = (int)x;
      else if (!strcmp(a, "--secret-fd")) o->secret_fd = (int)x;
      else o->prob.seed = (unsigned long long)x;
    } else if (!strcmp(a, "--min-time") || !strcmp(a, "--tol") ||
               !strcmp(a, "--local-tol") || !strcmp(a, "--block-tol") ||
               !strcmp(a, "--pace-ms") || !strcmp(a, "--ci-stop")) {
      NEED();
      if (parse_d(v, &d) || d < 0 || d > 1e6) return usage("bad number '%s'", v);
      if (!strcmp(a, "--min-time")) o->min_time = d;
      else if (!strcmp(a, "--pace-ms")) o->pace_ms = d;
      else if (!strcmp(a, "--ci-stop")) o->ci_stop = d;
      else if (!strcmp(a, "--tol")) o->tol = d;
      else if (!strcmp(a, "--block-tol")) o->block_tol = d;
      else o->local_tol = d;
    } else if (!strcmp(a, "--plan")) {
      NEED();
      if (read_plan(v, o)) return -2;
    } else if (!strcmp(a, "--out")) {
      NEED();
      o->out = v;
    } else if (!strcmp(a, "--machine")) {
      NEED();
      o->machine = v;
    } else if (!strcmp(a, "--id-file")) {
      NEED();
      o->id_file = v;
    } else if (!strcmp(a, "--judge-worker")) {
      NEED();
      o->judge_worker = v;
    } else if (!strcmp(a, "--impl")) {
      NEED();
      o->impl = v;
    } else if (!strcmp(a, "--workload")) {
      NEED();
      o->workload = v;
    } else if (!strcmp(a, "--skip-check")) {
      NEED();
      int found = 0;
      for (size_t k = 0; k < sizeof checks / sizeof checks[0]; k++)
        if (!strcmp(v, checks[k].name)) {
          o->skip |= checks[k].bits;
          found = 1;
        }
      if (!found) return usage("unknown check '%s'", v);
    } else {
      return usage("unknown argument '%s'", a);
    }
#undef NEED
  }
  if (o->mode < 0) return usage("--mode is required", NULL);
  if (!o->out) return usage("--out is required", NULL);
  if (!o->prob.nparams && !o->plan_n) return usage("--params or --plan is required", NULL);
  if (o->judge_worker && o->vranks)
    return usage("--judge-worker runs real ranks only (%s: one process)", "--vranks");
  if (o->plan_n && o->vranks)
    return usage("--plan runs real ranks only (%s: one size per run)", "--vranks");
  // Ranks: flags first, then the launchers' environment.
  if (o->prob.rank < 0 && !env_int("OMPI_COMM_WORLD_RANK", &o->prob.rank) &&
      !env_int("PMI_RANK", &o->prob.rank) && !env_int("SLURM_PROCID", &o->prob.rank))
    o->prob.rank = 0;
  if (o->prob.nranks < 0 && !env_int("OMPI_COMM_WORLD_SIZE", &o->prob.nranks) &&
      !env_int("PMI_SIZE", &o->prob.nranks) && !env_int("SLURM_NTASKS", &o->prob.nranks))
    o->prob.nranks = 1;
  if (o->prob.local_rank < 0 &&
      !env_int("OMPI_COMM_WORLD_LOCAL_RANK", &o->prob.local_rank) &&
      !env_int("MPI_LOCALRANKID", &o->prob.local_rank) &&
      !env_int("SLURM_LOCALID", &o->prob.local_rank))
    o->prob.local_rank = o->prob.rank;
  if (o->prob.nranks < 1 || o->prob.rank >= o->prob.nranks)
    return usage("rank %s out of range", NULL);
  if (o->prob.nranks > 1 && !o->id_file && !getenv("NCCL_COMM_ID"))
    return usage("%s ranks need --id-file or NCCL_COMM_ID", "several");
  if (o->warmup < 0) o->warmup = o->mode == RT_MODE_BENCH ? 5 : 1;
  if (o->iters < 1) o->iters = 1;
  if (o->local_tol < 0) o->local_tol = o->tol;
  if (o->block_tol < 0) o->block_tol = o->local_tol;
  // the command line's tolerances, for a plan's '-' entries
  g_cli_tol[0] = o->tol, g_cli_tol[1] = o->local_tol, g_cli_tol[2] = o->block_tol;
  o->prob.vranks = o->vranks;
  return 0;
}

// The phase accounting of this process (rt_phase.h).  Global because
// rt_progress, the one place every stage change passes through in both
// main paths, takes only the options.
static struct rt_phases g_phases;
static int g_phases_started;

void rt_progress(const struct rt_opts *o, const char *stage) {
  char path[4096], tmp[4200];
  if (!g_phases_started) {
    double ms;
    rt_phases_init(&g_phases);
    if (rt_phase_since_start_ms(&ms) == 0) rt_phases_add(&g_phases, "start", ms);
    g_phases_started = 1;
  }
  rt_phases_mark(&g_phases, stage, rt_now_ms());
  if (snprintf(path, sizeof path, "%s.rank%d.progress", o->out, o->prob.rank) >=
      (int)sizeof path)
    return;
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  fprintf(f, "%s\n", stage);
  // A --plan run: the size, so that a hang is charged to the size where the
  // hung rank was (cuco's launcher reads "size I").
  if (o->plan_n) fprintf(f, "size %d\n", o->plan_cur);
  if (fclose(f) == 0) rename(tmp, path);
}

void rt_phases_restart(void) {
  if (g_phases_started) rt_phases_init(&g_phases);
}

void rt_phase_move(const char *cls, double t0_ms) {
  if (g_phases_started) rt_phases_move(&g_phases, cls, rt_now_ms() - t0_ms);
}

void rt_phases_write(FILE *f) {
  if (g_phases_started) rt_phases_json(&g_phases, f, rt_now_ms());
}

// Rank 0 writes the unique id atomically; the others poll with a timeout.
static int exchange_id(const struct rt_opts *o, ncclUniqueId *id) {
  if (getenv("NCCL_COMM_ID") || o->prob.nranks == 1 || !o->id_file) {
    NCCL_CHECK(ncclGetUniqueId(id));
    return 0;
  }
  if (o->prob.rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(id));
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", o->id_file, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, id, sizeof *id) != (ssize_t)sizeof *id ||
        close(fd) != 0 || rename(tmp, o->id_file) != 0) {
      rt_errorf("cannot write id file %s: %s", o->id_file, strerror(errno));
      return -1;
    }
    return 0;
  }
  double deadline = rt_now_ms() + 120e3;
  for (;;) {
    int fd = open(o->id_file, O_RDONLY);
    if (fd >= 0) {
      ssize_t n = read(fd, id, sizeof *id);
      close(fd);
      if (n == (ssize_t)sizeof *id) return 0;
    }
    if (rt_now_ms() > deadline) {
      rt_errorf("timed out after 120 s waiting for id file %s from rank 0",
                o->id_file);
      return -1;
    }
    usleep(20000);
  }
}

int rt_boot_nccl(struct rt_opts *o, struct wl_ctx *ctx) {
  const char *nvls = getenv("NCCL_NVLS_ENABLE");
  if (nvls && strcmp(nvls, "0") != 0) {
    rt_errorf("NCCL_NVLS_ENABLE=%s: NVLink multicast must stay off (set 0)",
              nvls);
    return -1;
  }
  if (!nvls) setenv("NCCL_NVLS_ENABLE", "0", 1);
  int v = 0;
  NCCL_CHECK(ncclGetVersion(&v));
  if (v != NCCL_VERSION_CODE) {
    rt_errorf("NCCL library %d differs from headers %d: rebuild against the "
              "library in use (device API ABI is version-specific)",
              v, NCCL_VERSION_CODE);
    return -1;
  }
  int ndev = 0;
  CUDA_CHECK(cudaGetDeviceCount(&ndev));
  if (ndev < 1) {
    rt_errorf("no CUDA device");
    return -1;
  }
  ctx->device = o->prob.local_rank % ndev;
  CUDA_CHECK(cudaSetDevice(ctx->device));
  ncclUniqueId id;
  RT_TRY(exchange_id(o, &id));
  NCCL_CHECK(ncclCommInitRank(&ctx->comm, o->prob.nranks, id, o->prob.rank));
  CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->ref_stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->hog_stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->bar_stream, cudaStreamNonBlocking));
  return 0;
}

void rt_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

void rt_json_machine(FILE *f, const char *path) {
  FILE *m = path ? fopen(path, "r") : NULL;
  if (!m) {
    fputs("null", f);
    return;
  }
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, m);
  int truncated = !feof(m);
  fclose(m);
  buf[n] = 0;
  size_t a = 0, b = n;
  while (a < b && (buf[a] == ' ' || buf[a] == '\n' || buf[a] == '\t')) a++;
  while (b > a && (buf[b - 1] == ' ' || buf[b - 1] == '\n' || buf[b - 1] == '\t' ||
                   buf[b - 1] == '\r'))
    b--;
  // The tool writes this file; still refuse anything that is not one object.
  if (truncated || b - a < 2 || buf[a] != '{' || buf[b - 1] != '}') {
    fputs("null", f);
    return;
  }
  fwrite(buf + a, 1, b - a, f);
}
