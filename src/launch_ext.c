/* launch_ext.c - launch_run() through mpirun or srun; see launch.h and
 * launcher.h.  The ranks get no --rank flags: the runtime reads rank, size
 * and local rank from the launcher's variables (runtime/rt_boot.cu).  Rank
 * 0 writes the NCCL unique id to --id-file in the work dir and the others
 * poll it, so the work dir must be on a file system all nodes share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "launch.h"
#include "launcher.h"

#define ARGS_MAX 128

int launch_run_ext(const struct launch_opts *o, struct launch_result *r,
                   struct err *e)
{
  struct launcher_run_opts lo = {0};
  struct launcher_result lr;
  struct buf log = BUF_INIT(LAUNCH_LOG_MAX * 4);
  const char *argv[ARGS_MAX + 4], *extra[4];
  char idfile[2048], ldp[8192], cvd[512];
  const char *cur = getenv("LD_LIBRARY_PATH");
  struct timespec ts;
  int i, k = 0, rc;

  memset(r, 0, sizeof(*r));
  r->exit_code = -1;
  r->failed_rank = r->hang_rank = r->hang_size = -1;
  if (o->nranks < 1 || o->nranks > LAUNCH_MAX_RANKS || o->nargs > ARGS_MAX)
    return err_set(e, ERR_USAGE, "bad rank count %d", o->nranks);
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(idfile, sizeof(idfile), "%s/nccl-id.%ld.%ld", o->work_dir,
           (long)getpid(), (long)ts.tv_nsec);
  unlink(idfile);
  unlink(o->result_path);
  argv[k++] = o->bin;
  for (i = 0; i < o->nargs; i++) {
    /* the secret does not travel on stdin here (mpirun forwards it to rank
     * 0 only; srun's ranks sit on other nodes): per-rank files instead,
     * found through CUCO_SECRET_PREFIX (launcher.h) */
    if (o->stdin_data && !strcmp(o->args[i], "--secret-fd") &&
        i + 1 < o->nargs) {
      i++;
      continue;
    }
    argv[k++] = o->args[i];
  }
  argv[k++] = "--id-file";
  argv[k++] = idfile;
  argv[k] = NULL;
  snprintf(ldp, sizeof(ldp), "LD_LIBRARY_PATH=%s%s%s",
           o->lib_dirs ? o->lib_dirs : "",
           o->lib_dirs && *o->lib_dirs && cur && *cur ? ":" : "",
           cur ? cur : "");
  k = 0;
  extra[k++] = "NCCL_NVLS_ENABLE=0";
  extra[k++] = ldp;
  /* srun binds GPUs itself ({gpus}); mpirun on one node gets our slot's */
  if (o->gpus && o->launcher->kind == LAUNCHER_MPIRUN) {
    snprintf(cvd, sizeof(cvd), "CUDA_VISIBLE_DEVICES=%s", o->gpus);
    extra[k++] = cvd;
  }
  extra[k] = NULL;
  lo.l = o->launcher;
  lo.argv = argv;
  if (o->stdin_data) {
    lo.secret = (const unsigned char *)o->stdin_data;
    lo.secret_len = strlen(o->stdin_data);
  }
  lo.nranks = o->nranks;
  lo.env_extra = extra;
  lo.work_dir = o->work_dir;
  lo.progress_prefix = o->result_path;
  lo.label = o->result_path;
  lo.timeout_s = o->timeout_s > 0 ? o->timeout_s : 120;
  rc = launcher_run(&lo, &lr, e);
  unlink(idfile);
  if (rc) {
    launcher_result_release(&lr);
    return rc;
  }
  r->wall_s = lr.wall_s;
  r->all_ok = lr.all_ok;
  r->timed_out = lr.timed_out;
  r->exit_code = lr.exit_code;
  r->interrupted = lr.interrupted;
  if (lr.timed_out) {
    r->hang_rank = lr.hang_rank;
    r->hang_size = lr.hang_size;
    snprintf(r->hang_stage, sizeof(r->hang_stage), "%s", lr.hang_stage);
  } else if (!lr.all_ok) {
    r->failed_rank = 0; /* the launcher does not say which: rank 0 */
  }
  snprintf(r->what, sizeof(r->what), "%s", lr.what);
  (void)buf_printf(&log, "--- %s, %d ranks%s%s ---\n",
                   launcher_name(o->launcher->kind), o->nranks,
                   *lr.step_id ? ", slurm step " : "", lr.step_id);
  (void)buf_puts(&log, buf_str(&lr.out));
  (void)buf_puts(&log, buf_str(&lr.err));
  r->log = buf_detach(&log, NULL);
  {
    struct err re;
    r->result = launch_read_result(o->result_path, &re);
    if (!r->result)
      snprintf(r->result_error, sizeof(r->result_error), "%s", re.msg);
  }
  launcher_result_release(&lr);
  return 0;
}
