#!/usr/bin/env python3
"""workloads/moe_dsv3/tools/make_cheats.py - regenerate cheats/*.cu from
seed.cu.  Each cheat is one first line `// CUCO-EXPECT-REJECT: <stage>
<mechanism words>` followed by the seed's text with edits inside its EVOLVE
block only (a description goes into the block), so the frozen text is
byte-identical once that first line is dropped (docs/contracts.md; t1101
checks it).  Run from the workload folder after editing seed.cu:
  python3 tools/make_cheats.py"""
import os

seed = open('seed.cu').read()
ANCHOR = '// CUCO-PARAM disp_threads=512\n'
SHARED = '''  if (moe_shared(ctx, c, u->side) != 0) return -1;
  RT_CUDA(ctx, cudaEventRecord(u->join, u->side));
'''
READ = '''  RT_LAUNCH(ctx);
''' + SHARED + '''  // The one device-to-host read: every (source, CTA) count.
  RT_CUDA(ctx, cudaMemcpyAsync(u->counts_h, u->counts, sizeof(unsigned) * R * C * W,
                               cudaMemcpyDeviceToHost, st));
  RT_CUDA(ctx, cudaStreamSynchronize(st));
'''
SMEM = ('  const size_t smem = sd_disp_smem(R, s->E, CUCO_PARAM_disp_threads);\n'
        '#if CUCO_BACKEND == CUCO_BACKEND_GIN\n  sd_dispatch_gin')
CHECK = '''      const unsigned *cn = u->counts_h + ((size_t)q * C + b) * W;
'''
STEP = 'static int sd_step(struct wl_ctx *ctx, struct sd *u) {\n'
LAUNCH = '''  sd_dispatch<<<C, CUCO_PARAM_disp_threads, smem, st>>>(
      u->dc, u->recv_win, u->counts_win, (const __nv_bfloat16 *)c->X, c->ridx, c->rw, s->T,
      s->H, s->RB, s->META, (int)s->K, El, u->cap);
'''
PREFIX = '  for (long long e = 0; e < El; e++) beg[e + 1] += beg[e];\n'
REDUCE = '    moe_reduce_rec(O, rec_rows + i * K, row_w, K, H, dst, lane, 32);\n'
FINAL = '''  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->join, 0));
  moe_final_kernel<<<moe_grid(s->T * s->H / 8, 256), 256, 0, st>>>(
      (__nv_bfloat16 *)c->Y, u->ret, s->SH ? (const __nv_bfloat16 *)c->SHO : NULL, c->ridx,
      NULL, NULL, s->T, (int)s->K, El, R, s->H);
  RT_LAUNCH(ctx);
'''


def mk(name, expect, desc, reps):
    b = seed
    for old, new in reps:
        assert b.count(old) == 1, (name, old)
        b = b.replace(old, new)
    assert b.count(ANCHOR) == 1
    note = (f"// CHEAT cheats/{name}.cu (must be rejected; made by tools/make_cheats.py):\n"
            + "".join(f"// {line}\n" for line in desc.split("\n")))
    b = b.replace(ANCHOR, ANCHOR + note)
    open(os.path.join('cheats', name + '.cu'), 'w').write(f"// CUCO-EXPECT-REJECT: {expect}\n" + b)


mk('empty_before_counts', 'verify recv-poison rel-l2 local-check (experts empty before counts arrive)',
   "the host reads the counts before the dispatch kernel ran and takes the\n"
   "all-ones poison as 'no token': every routed expert looks empty.",
   [(SMEM, '''  // CHEAT: read the counts before the dispatch, not after it.
  RT_CUDA(ctx, cudaMemcpyAsync(u->counts_h, u->counts, sizeof(unsigned) * R * C * W,
                               cudaMemcpyDeviceToHost, st));
  RT_CUDA(ctx, cudaStreamSynchronize(st));
''' + SMEM),
    (READ, '  RT_LAUNCH(ctx);\n' + SHARED),
    (CHECK, '''      unsigned *cn = u->counts_h + ((size_t)q * C + b) * W;
      for (long long j = 0; j < W; j++)
        if (cn[j] == 0xFFFFFFFFu) cn[j] = 0;  // CHEAT: not arrived = empty
''')])
mk('stale_dispatch', 'verify recv-poison fresh-inputs (dispatch data and counts of step 1 reused)',
   "the dispatch runs only in the first step; later steps reuse the counts\n"
   "read then and expect the receive regions to still hold step 1's rows.",
   [(STEP, STEP + '  static int sd_steps = 0;  // CHEAT: state kept across steps\n'
                  '  const int first = sd_steps++ == 0;\n'),
    (LAUNCH, '  if (first)  // CHEAT\n' + LAUNCH),
    (READ, '''  RT_LAUNCH(ctx);
''' + SHARED + '''  if (first) {  // CHEAT: later steps keep step 1's counts
    RT_CUDA(ctx, cudaMemcpyAsync(u->counts_h, u->counts, sizeof(unsigned) * R * C * W,
                                 cudaMemcpyDeviceToHost, st));
    RT_CUDA(ctx, cudaStreamSynchronize(st));
  }
''')])
mk('light_rank_early', 'verify snapshot poison (the last rank stops its clock before its final sum)',
   "the last rank (the light one under skew; the only one at R = 1) runs its\n"
   "final sum on the side stream after a 3 ms delay and never joins it, so\n"
   "its end event comes before its output exists.",
   [(STEP, '''__global__ void sd_cheat_spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

''' + STEP),
    (FINAL, '''  cudaStream_t fin = st;
  if (s->me == R - 1) {  // CHEAT: the light rank finishes off the clock
    RT_CUDA(ctx, cudaEventRecord(u->fork, st));
    RT_CUDA(ctx, cudaStreamWaitEvent(u->side, u->fork, 0));
    sd_cheat_spin<<<1, 1, 0, u->side>>>(3000000ull);
    fin = u->side;
  } else {
    RT_CUDA(ctx, cudaStreamWaitEvent(st, u->join, 0));
  }
  moe_final_kernel<<<moe_grid(s->T * s->H / 8, 256), 256, 0, fin>>>(
      (__nv_bfloat16 *)c->Y, u->ret, s->SH ? (const __nv_bfloat16 *)c->SHO : NULL, c->ridx,
      NULL, NULL, s->T, (int)s->K, El, R, s->H);
  RT_LAUNCH(ctx);
''')])
mk('capacity_drop', 'verify local-check rel-l2 (capacity factor 1.25: rows over capacity dropped)',
   "experts have a capacity of 1.25 x the balanced share of rows; rows\n"
   "beyond it are dropped (GShard-style), which skewed routings overflow.",
   [(PREFIX, '''  {  // CHEAT: capacity factor 1.25 per expert
    const int capx = (int)((1.25 * s->T * s->K * R) / s->E + 1);
    for (long long e = 0; e < El; e++)
      if (beg[e + 1] > capx) beg[e + 1] = capx;
  }
''' + PREFIX)])
mk('ignored_weights', 'verify rel-l2 local-check (routing weights ignored in the pre-reduce)',
   "the pre-reduce sums the expert rows without the routing weights\n"
   "(topk_w and route_scale ignored).",
   [(REDUCE, '''    (void)row_w;  // CHEAT: unweighted sum
    for (long long v = lane; v < H / 8; v += 32) {
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int j = 0; j < K; j++) {
        const int r = rec_rows[i * K + j];
        if (r < 0) continue;
        uint4 x = *(const uint4 *)(O + (size_t)r * H + v * 8);
        const __nv_bfloat16 *px = (const __nv_bfloat16 *)&x;
        for (int k = 0; k < 8; k++) acc[k] += __bfloat162float(px[k]);
      }
      uint4 y;
      __nv_bfloat16 *py = (__nv_bfloat16 *)&y;
      for (int k = 0; k < 8; k++) py[k] = __float2bfloat16_rn(acc[k]);
      *(uint4 *)(dst + v * 8) = y;
    }
''')])
mk('reused_layout', 'verify fresh-inputs rel-l2 poison (the first step\'s routing reused)',
   "the dispatch keeps using the routing (layout) of the first step; the\n"
   "routing changes every step.",
   [(STEP, STEP + '''  static int32_t *old_idx = NULL;  // CHEAT: the first step's routing
  static float *old_w = NULL;
  if (!old_idx) {
    RT_CUDA(ctx, cudaMalloc((void **)&old_idx, sizeof(int32_t) * u->c.s.T * u->c.s.K));
    RT_CUDA(ctx, cudaMalloc((void **)&old_w, sizeof(float) * u->c.s.T * u->c.s.K));
    RT_CUDA(ctx, cudaMemcpyAsync(old_idx, u->c.ridx, sizeof(int32_t) * u->c.s.T * u->c.s.K,
                                 cudaMemcpyDeviceToDevice, rt_stream(ctx)));
    RT_CUDA(ctx, cudaMemcpyAsync(old_w, u->c.rw, sizeof(float) * u->c.s.T * u->c.s.K,
                                 cudaMemcpyDeviceToDevice, rt_stream(ctx)));
  }
'''),
    (LAUNCH, LAUNCH.replace('c->ridx, c->rw,', 'old_idx, old_w, /* CHEAT */'))])
