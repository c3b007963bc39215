/* transform_prompt.c - the prompts of `cuco transform`: system context
 * (rules, backend notes, strategy notes, probed hardware), the two stage
 * tasks, the judge and the EVOLVE marking. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "buf.h"
#include "file.h"
#include "transform.h"
#include "workload.h"

static int exists(const char *dir, const char *rel)
{
  char p[PATH_MAX + 64];
  snprintf(p, sizeof(p), "%s/%s", dir, rel);
  return access(p, R_OK) == 0;
}

int transform_find_root(char *out, size_t n, struct err *e)
{
  char exe[PATH_MAX], cand[4][PATH_MAX];
  const char *env = getenv("CUCO_ROOT");
  ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  int i, nc = 0;

  if (env && *env)
    snprintf(cand[nc++], PATH_MAX, "%s", env);
  if (k > 0) {
    char *slash;
    exe[k] = '\0';
    if ((slash = strrchr(exe, '/')) != NULL) {
      *slash = '\0';
      snprintf(cand[nc++], PATH_MAX, "%s", exe);    /* ./cuco */
      snprintf(cand[nc++], PATH_MAX, "%s/..", exe); /* build/cuco */
      /* make install: PREFIX/bin/cuco, PREFIX/share/cuco */
      snprintf(cand[nc++], PATH_MAX, "%s/../share/cuco", exe);
    }
  }
  for (i = 0; i < nc; i++)
    if (exists(cand[i], "docs/backend-lsa.md") &&
        exists(cand[i], "runtime/runtime.h")) {
      snprintf(out, n, "%s", cand[i]);
      return 0;
    }
  return err_set(e, ERR_NOTFOUND,
                 "cannot find cuco's docs/backend-lsa.md "
                 "and runtime/runtime.h (set CUCO_ROOT to the source tree "
                 "or cuco's installed share/cuco)");
}

/* Append file root/rel, cut at max bytes. */
static int add_file(struct buf *out, const char *root, const char *rel,
                    size_t max, struct err *e)
{
  char p[PATH_MAX + 64];
  size_t len;
  char *s;

  snprintf(p, sizeof(p), "%s/%s", root, rel);
  s = file_read(p, max, &len, e);
  if (!s)
    return e->code;
  buf_append(out, s, len);
  free(s);
  return buf_error(out);
}

int transform_prompt_system(struct buf *out, const char *root,
                            const char *hardware, struct err *e)
{
  buf_puts(out,
           "You are a CUDA and NCCL expert who turns host-driven multi-GPU "
           "programs into\ndevice-initiated ones (NCCL 2.28.9 device API), "
           "correctness first.\n\n"
           "Rules:\n"
           "- The program implements the cuco workload ABI (runtime.h and "
           "rt.cuh below): wl_setup,\n  wl_step, wl_teardown.  The runtime "
           "owns ranks, the communicator, inputs, timing\n  and "
           "verification; never add main(), file I/O, process control or "
           "getenv.\n"
           "- wl_step only enqueues work on rt_stream(ctx); no host "
           "synchronisation inside it.\n"
           "- Allocate every device buffer with rt_alloc (RT_WINDOW for "
           "symmetric windows); create\n  device communicators only with "
           "rt_devcomm_create (never ncclDevCommCreate).\n"
           "- Never use multimem/NVLS; request no GIN resources unless "
           "rt_gin_possible(ctx).\n"
           "- A step may not rely on state left by an earlier step (LSA "
           "barrier sessions are fine:\n  they keep their own epochs).\n"
           "- Answer with the complete file in ONE ```cuda fenced block, "
           "then at most 5 lines.\n\n");
  buf_puts(out, "## Runtime API (runtime/runtime.h)\n\n```c\n");
  if (add_file(out, root, "runtime/runtime.h", 64u << 10, e))
    return e->code;
  buf_puts(out, "```\n\n## Runtime C++ side (runtime/rt.cuh)\n\n```cpp\n");
  if (add_file(out, root, "runtime/rt.cuh", 64u << 10, e))
    return e->code;
  buf_puts(out, "```\n\n");
  if (add_file(out, root, "docs/backend-lsa.md", 64u << 10, e) ||
      buf_puts(out, "\n") ||
      add_file(out, root, "docs/backend-gin.md", 64u << 10, e) ||
      buf_puts(out, "\n") ||
      add_file(out, root, "docs/strategy.md", 64u << 10, e))
    return e->code ? e->code : ERR_NOMEM;
  buf_printf(out, "\n## Probed hardware (cuco doctor)\n\n```json\n%s\n```\n",
             hardware);
  return buf_error(out);
}

/* The conservative directive line and the param lines for w. */
void transform_default_directives(const struct workload *w, char *line,
                                  size_t n)
{
  struct buf b = BUF_INIT(4096);
  unsigned long long chunk =
      w->space.chunk_max ? w->space.chunk_max : 64ull << 20;
  int i;

  buf_printf(&b, "// CUCO-DIRECTIVES backend=lsa placement=deferred "
                 "sync=global issuer=cta chunk=");
  if (chunk % (1ull << 20) == 0)
    buf_printf(&b, "%lluMiB\n", chunk >> 20);
  else
    buf_printf(&b, "%lluKiB\n", chunk >> 10);
  for (i = 0; i < w->nparams; i++)
    buf_printf(&b, "// CUCO-PARAM %s=%s\n", w->params[i].name,
               w->params[i].nchoices ? w->params[i].choices[0] : "");
  snprintf(line, n, "%s", buf_str(&b));
  buf_release(&b);
}

int transform_prompt_stage(struct buf *out, int stage,
                           const struct workload *w, const char *analysis,
                           const char *current, const char *failed,
                           const char *diagnosis)
{
  char dirs[2048];

  buf_printf(out, "# Workload %s\n\n%s\n\n", w->name, w->description);
  if (stage == 1) {
    buf_puts(out,
             "# Task: stage 1 of 2, communication infrastructure\n\n"
             "Add to the program below what a device-initiated version "
             "will need, and change\nnothing about its results:\n"
             "1. allocate the buffers that peers will write into or read "
             "from with RT_WINDOW and\n   look up their windows with "
             "rt_window(ctx, name) in wl_setup;\n"
             "2. create one device communicator in wl_setup with "
             "rt_devcomm_create: memset the\n   ncclDevCommRequirements to "
             "0, lsaBarrierCount >= the grid of every kernel that\n   will "
             "use a barrier; no GIN resources unless "
             "rt_gin_possible(ctx);\n"
             "3. keep every host collective: stage 2 replaces them.\n\n");
  } else {
    transform_default_directives(w, dirs, sizeof(dirs));
    buf_printf(out,
               "# Task: stage 2 of 2, device-initiated communication\n\n"
               "Replace every host NCCL collective and send/recv listed "
               "by the analysis below\nwith communication issued from "
               "the kernels through the NCCL device API, using\nthe "
               "windows and device communicator of stage 1.  Correctness "
               "first, the\nconservative design: placement=deferred "
               "(communicate after the compute),\nsync=global (one LSA "
               "barrier over all ranks), issuer=cta, one coarse chunk.\n"
               "Put these lines, exactly, immediately before the first "
               "kernel (they must end up\ninside the first EVOLVE block; "
               "kernels may read CUCO_PLACEMENT etc. from\n"
               "cuco_directives.h, other values may fall back to the "
               "default path):\n\n```\n%s```\n\n"
               "After this stage no ncclAllGather/ncclAllReduce/.../"
               "ncclSend/ncclRecv/ncclGroup*\nhost call may remain.\n\n",
               dirs);
  }
  buf_printf(out,
             "## What `cuco analyze` found in the baseline\n\n```\n%s"
             "```\n\n## The program (%s)\n\n```cuda\n%s```\n",
             analysis,
             stage == 1 ? "the host-driven baseline" : "after stage 1",
             current);
  if (failed && diagnosis)
    buf_printf(out,
               "\n## Your previous attempt failed\n\nA reviewer diagnosed "
               "it as follows; fix the cause, do not repeat it.\n\n%s\n\n"
               "The failed attempt:\n\n```cuda\n%s```\n",
               diagnosis, failed);
  return buf_error(out);
}

int transform_prompt_judge(struct buf *out, int stage, const char *code,
                           const char *verdict)
{
  buf_printf(out,
             "A candidate for stage %d of a host-to-device NCCL "
             "transformation failed its checks.\nDiagnose the failure from "
             "the errors and logs: name the root cause, the exact\n"
             "lines involved and what must change.  Do NOT rewrite the "
             "program and do not\nanswer with code blocks; at most 15 "
             "lines.\n\n## Verdict and logs\n\n```\n%s\n```\n\n"
             "## The candidate\n\n```cuda\n%s```\n",
             stage, verdict, code);
  return buf_error(out);
}

int transform_prompt_mark(struct buf *out, const char *code)
{
  buf_printf(out,
             "Mark the mutable regions of this device-initiated CUDA "
             "program for an\nevolutionary search by adding lines that "
             "hold exactly `// EVOLVE-BLOCK-START`\nand `// "
             "EVOLVE-BLOCK-END`.  Add NOTHING else and change no other "
             "line.\n- The first block must contain the CUCO-DIRECTIVES "
             "and CUCO-PARAM lines and the\n  kernels;\n"
             "- a second block may hold wl_step (the launch code);\n"
             "- wl_setup, wl_teardown, #include lines and the ABI "
             "signatures stay outside\n  the blocks when possible; blocks "
             "do not nest.\nAnswer with the complete file in one ```cuda "
             "block.\n\n```cuda\n%s```\n",
             code);
  return buf_error(out);
}
