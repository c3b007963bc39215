/* prompt.c - mutation prompts (prompt.h). */
#include "prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "patch.h"
#include "utf8.h"
#include "workload.h"

#define PROMPT_MAX      (256 * 1024)
#define ERROR_QUOTE_MAX 300

/* Condensed from docs/nccl-device-api.md (NCCL 2.28.9), the rules a
 * candidate most often breaks. */
static const char notes_lsa[] =
    "LSA backend (NCCL 2.28.9 device API, load/store over NVLink):\n"
    "- Peers' buffers are symmetric windows: ncclGetLsaPointer(win, "
    "byteOffset, lsaPeer) gives a raw pointer; lsaPeer is an LSA rank in "
    "[0, dc.lsaSize), not a world rank.  Use 16-byte vector stores; start "
    "the peer loop at (lsaRank+1) % lsaSize so GPUs do not all hit one "
    "peer.\n"
    "- ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, "
    "ncclTeamTagLsa(), blockIdx.x): index < lsaBarrierCount, one coop per "
    "index at a time, the same arrive/wait/sync sequence and the same grid "
    "on every rank, all CTAs co-resident (barriers spin).\n"
    "- Memory order: relaxed to rendezvous (peers finished reading the "
    "buffer I overwrite), acq_rel after writing to peers when the result "
    "is read in the same kernel, release when only a later kernel reads.\n"
    "- A barrier i synchronises only coop i of every rank; a whole buffer "
    "complete inside one kernel needs a grid-wide step too.\n"
    "- Point-to-point readiness: flags in symmetric memory with "
    "system-scope atomics (__threadfence_system then a release store of a "
    "monotonically increasing sequence number; the consumer spins with an "
    "acquire load and __nanosleep), one flag per producer/consumer pair, a "
    "credit flag back when a slot is reused.\n"
    "- Every API that takes a coop is collective over it: call it from "
    "convergent code only.  Never use multimem; NCCL_NVLS_ENABLE=0.\n";

static const char notes_gin[] =
    "GIN backend (GPU-initiated network, NCCL 2.28.9):\n"
    "- ncclGin gin(dc, ctx); gin.put(team, peer, dstWin, dstOff, srcWin, "
    "srcOff, bytes, ncclGin_SignalInc{sig}, ncclGin_CounterInc{ctr}, coop): "
    "both buffers must be registered windows.\n"
    "- A signal lives on the receiver (waitSignal(coop, sig, least)), a "
    "counter on the sender; the receiver must wait with the same context "
    "index the sender used; no ordering across contexts.\n"
    "- flush() means the source is reusable, not delivered.  Signals are "
    "not reset between kernels: read a baseline before a barrier or reset "
    "in setup then barrier, and count absolutely.\n"
    "- Guard every GIN path with dc.ginContextCount > 0; single-node "
    "machines without a NIC have no GIN and the workload may restrict "
    "backend to lsa.\n";

const char *prompt_backend_notes(const char *backend)
{
  if (backend && !strcmp(backend, "lsa"))
    return notes_lsa;
  if (backend && !strcmp(backend, "gin"))
    return notes_gin;
  return "";
}

void prompt_machine(const json_t *machine, char *out, size_t n)
{
  const json_t *g = machine ? json_object_get(machine, "gpus") : NULL;
  const json_t *list = g ? json_object_get(g, "list") : NULL;
  const json_t *cpu = machine ? json_object_get(machine, "cpu") : NULL;
  const json_t *g0 = list ? json_array_get(list, 0) : NULL;
  const char *topo =
      g ? json_string_value(json_object_get(g, "topology")) : NULL;
  size_t o;

  if (!machine) {
    snprintf(out, n, "unknown machine (no probe)");
    return;
  }
  o = (size_t)snprintf(
      out, n, "CPU: %s, %lld cores. GPUs: %lld",
      cpu ? json_string_value(json_object_get(cpu, "model")) ?: "?" : "?",
      cpu ? json_integer_value(json_object_get(cpu, "cores")) : 0,
      g ? json_integer_value(json_object_get(g, "count")) : 0);
  if (g0 && o < n)
    o += (size_t)snprintf(
        out + o, n - o, " x %s (%lld MiB, max SM clock %lld MHz)",
        json_string_value(json_object_get(g0, "name")) ?: "?",
        json_integer_value(json_object_get(g0, "memory_mib")),
        json_integer_value(json_object_get(g0, "max_sm_clock_mhz")));
  if (topo && o + 32 < n)
    snprintf(out + o, n - o, ".\nLink matrix (nvidia-smi topo -m):\n%.*s",
             (int)(n - o - 32 < 1500 ? n - o - 32 : 1500), topo);
}

char *prompt_directive_table(const struct workload *wl)
{
  struct buf b = BUF_INIT(16 * 1024);
  const struct workload_dim *dims[4] = {&wl->space.backend,
                                        &wl->space.placement, &wl->space.sync,
                                        &wl->space.issuer};
  static const char *const names[4] = {"backend", "placement", "sync",
                                       "issuer"};
  int i, j;

  for (i = 0; i < 4; i++) {
    if (!dims[i]->n)
      continue;
    buf_printf(&b, "  %-10s", names[i]);
    for (j = 0; j < dims[i]->n; j++)
      buf_printf(&b, "%s%s", j ? ", " : " ", dims[i]->v[j]);
    buf_putc(&b, '\n');
  }
  if (wl->space.chunk_max)
    buf_printf(&b,
               "  %-10s powers of two, %llu..%llu bytes (write e.g. "
               "512KiB)\n",
               "chunk", wl->space.chunk_min, wl->space.chunk_max);
  for (i = 0; i < wl->nparams; i++) {
    buf_printf(&b, "  param %-4s", wl->params[i].name);
    for (j = 0; j < wl->params[i].nchoices; j++)
      buf_printf(&b, "%s%s", j ? ", " : " ", wl->params[i].choices[j]);
    buf_putc(&b, '\n');
  }
  if (!b.len)
    buf_puts(&b, "  (this workload has no directives)\n");
  return buf_error(&b) == ERR_NOMEM ? (buf_release(&b), NULL)
                                    : buf_detach(&b, NULL);
}

char *prompt_system(const struct prompt_ctx *c)
{
  struct buf b = BUF_INIT(PROMPT_MAX);

  buf_puts(&b,
           "You improve one program's performance by editing only the code "
           "between the lines '// EVOLVE-BLOCK-START' and "
           "'// EVOLVE-BLOCK-END'.  Everything outside those blocks is "
           "frozen and must not appear in your edit.  A harness you cannot "
           "see builds the program, verifies its output against a trusted "
           "reference and times it; incorrect programs score nothing.\n\n"
           "The first block holds the design choices as comment lines:\n"
           "  // CUCO-DIRECTIVES key=value ...   (the design dimensions)\n"
           "  // CUCO-PARAM name=value           (numeric knobs)\n"
           "They are compiled in as -D flags; use only allowed values.\n\n"
           "Answer format: first state the directives you choose and why, "
           "in at most five sentences.  Then the edit:\n");
  if (c->edit == PROMPT_DIFF)
    buf_puts(&b, "one or more SEARCH/REPLACE blocks, each exactly:\n"
                 "<<<<<<< SEARCH\n(lines copied exactly from the current "
                 "block)\n=======\n(the new lines)\n>>>>>>> REPLACE\n"
                 "The SEARCH text must match the program exactly and lie "
                 "inside one EVOLVE block.  Keep edits small and focused.\n");
  else
    buf_puts(&b, "one fenced code block (```) holding the complete new "
                 "contents of the EVOLVE block(s).  With several blocks, "
                 "include every block with its EVOLVE-BLOCK-START and "
                 "EVOLVE-BLOCK-END marker lines, in order.\n");
  return buf_error(&b) ? (buf_release(&b), NULL) : buf_detach(&b, NULL);
}

static const char *const variants[PROMPT_VARIANTS] = {
    "Rewrite the blocks to be faster.",
    "Rewrite the blocks using a different algorithm or communication "
    "schedule than the parent.",
    "Rewrite the blocks, motivated by the failures and recommendations "
    "above.",
    "Redesign the structure: how work is split between compute and "
    "communication, and where they overlap.",
    "Rewrite the blocks around a parametric design whose knobs are the "
    "directives and params, and pick good values.",
};

/* with_code: 0 none, 1 the whole program, 2 only its EVOLVE blocks (the
 * frozen text is the parent's, no need to pay for it twice). */
static void put_program(struct buf *b, const char *title, const char *vs,
                        const struct prompt_program *p, int with_code)
{
  struct patch_block bl[64];
  int n, i;

  buf_printf(b, "## %s (program %lld", title, p->id);
  if (p->has_score)
    buf_printf(b, ", %.4g ms, %.3gx %s", p->median_ms, p->speedup, vs);
  buf_printf(b, ")\ndirectives: %s\n", p->directives ? p->directives : "{}");
  if (!with_code || !p->code) {
    buf_putc(b, '\n');
    return;
  }
  n = with_code == 2 ? patch_blocks(p->code, bl, 64, NULL) : 0;
  if (n <= 0) {
    buf_printf(b, "```\n%s```\n\n", p->code);
    return;
  }
  buf_puts(b, "```\n");
  for (i = 0; i < n; i++) {
    buf_puts(b, PATCH_BLOCK_START "\n");
    buf_append(b, p->code + bl[i].start, bl[i].end - bl[i].start);
    buf_puts(b, PATCH_BLOCK_END "\n");
  }
  buf_puts(b, "```\n\n");
}

char *prompt_user(const struct prompt_ctx *c)
{
  struct buf b = BUF_INIT(PROMPT_MAX);
  char machine[2048], *table = prompt_directive_table(c->wl);
  const char *backend = NULL;
  /* speedups divide the bar's time; a workload without one: the seed's */
  const char *vs = c->wl->nbar ? "the bar (fastest baseline)" : "the seed";
  json_t *dj = NULL;
  size_t i;

  prompt_machine(c->machine, machine, sizeof(machine));
  buf_printf(&b, "# Workload %s\n%s\n\n# Machine\n%s\n\n", c->wl->name,
             c->wl->description, machine);
  buf_printf(&b, "# Allowed directives\n%s\n", table ? table : "");
  free(table);
  if (c->parent && c->parent->directives) {
    dj = json_loads(c->parent->directives, 0, NULL);
    backend = dj ? json_string_value(json_object_get(dj, "backend")) : NULL;
  }
  if (backend && *prompt_backend_notes(backend))
    buf_printf(&b, "# Notes for backend=%s\n%s\n", backend,
               prompt_backend_notes(backend));
  json_decref(dj);
  if (c->meta && *c->meta)
    buf_printf(&b, "# What paid so far (meta summary)\n%s\n\n", c->meta);
  if (c->nfails) {
    buf_puts(&b, "# Recent failures on this island (do not repeat)\n");
    for (i = 0; i < c->nfails; i++) {
      const struct prompt_program *f = &c->fails[i];
      buf_printf(&b, "- program %lld (%s edit) %s at stage %s: %.*s\n", f->id,
                 f->edit_kind ? f->edit_kind : "?",
                 f->status ? f->status : "failed", f->stage ? f->stage : "?",
                 utf8_cut(f->error ? f->error : "", ERROR_QUOTE_MAX),
                 f->error ? f->error : "");
    }
    buf_putc(&b, '\n');
  }
  for (i = 0; i < c->ninsp; i++)
    put_program(&b,
                i ? "Another good program"
                  : "Inspiration (its EVOLVE blocks; the rest is as in the "
                    "parent)",
                vs, &c->insp[i], i == 0 ? 2 : 0);
  if (c->parent)
    put_program(&b, "Parent: the program to improve", vs, c->parent, 1);
  if (c->edit == PROMPT_CROSS && c->parent2) {
    put_program(&b,
                "Second parent (its EVOLVE blocks; the rest is as in the "
                "first)",
                vs, c->parent2, 2);
    buf_puts(&b, "# Task\nCombine the strengths of the two parents into one "
                 "program; answer with the full new block contents.\n");
  } else if (c->edit == PROMPT_FULL) {
    buf_printf(&b, "# Task\n%s\n",
               variants[(c->variant % PROMPT_VARIANTS + PROMPT_VARIANTS) %
                        PROMPT_VARIANTS]);
  } else {
    buf_puts(&b, "# Task\nImprove the parent with SEARCH/REPLACE edits.\n");
  }
  return buf_error(&b) == ERR_NOMEM ? (buf_release(&b), NULL)
                                    : buf_detach(&b, NULL);
}
