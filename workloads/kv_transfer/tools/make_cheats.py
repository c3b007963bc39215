#!/usr/bin/env python3
"""workloads/kv_transfer/tools/make_cheats.py - regenerate cheats/*.cu from
seed.cu.  Each cheat is one first line `// CUCO-EXPECT-REJECT: <stage>
<mechanism words>` followed by the seed's text with a few edits inside its
EVOLVE block only (the description goes into the block), so the frozen text
is byte-identical once that first line is dropped (docs/contracts.md; t0901
checks it).  Run from the workload folder after editing seed.cu:
  python3 tools/make_cheats.py"""
import os

seed = open('seed.cu').read()
body = seed
WAIT = '''    const int nf = SD_CHUNK_FLAGS ? CUCO_PARAM_comm_ctas : 1;
    sd_wait<<<1, 256, 0, st>>>(u->flags, u->pmask, s->L, nf, ep);'''
JOIN = '''  RT_CUDA(ctx, cudaEventRecord(u->join, u->comm));
  RT_CUDA(ctx, cudaStreamWaitEvent(st, u->join, 0));
  return 0;
}
// EVOLVE-BLOCK-END'''
NOJOIN = '''  // CHEAT: the step stream never joins the communication stream.
  return 0;
}
// EVOLVE-BLOCK-END'''
COMPUTE = '    for (long long l = 0; l < s->L; l++) {\n      if (compute_layer('


ANCHOR = '// CUCO-PARAM push_threads=512\n'


def mk(name, expect, desc, reps):
    b = body
    for old, new in reps:
        assert old in b, (name, old)
        b = b.replace(old, new)
    assert b.count(ANCHOR) == 1
    note = (f"// CHEAT cheats/{name}.cu (must be rejected; made by tools/make_cheats.py):\n"
            + "".join(f"// {line}\n" for line in desc.split("\n")))
    b = b.replace(ANCHOR, ANCHOR + note)
    open(os.path.join('cheats', name + '.cu'), 'w').write(f"// CUCO-EXPECT-REJECT: {expect}\n" + b)


mk('no_wait', 'verify poison snapshot (the decode rank does not wait for the ready flags)',
   "the decode rank never waits for the layers' ready flags and its step\n"
   "stream does not join the push, so its clock stops (and the snapshot is\n"
   "taken) while KV is still in flight.",
   [(WAIT, '    // CHEAT: no wait for the ready flags.\n    (void)0;'), (JOIN, NOJOIN)])
mk('stale_flags', 'verify poison stale flags (waits on flags left by the previous step)',
   "the wait accepts any non-zero flag instead of this step's epoch, so\n"
   "from the second step on the previous step's flags satisfy it early.",
   [(WAIT, WAIT.replace('nf, ep)', 'nf, 1ull)  /* CHEAT: stale epoch */')), (JOIN, NOJOIN)])
mk('partial_layers', 'verify poison (the last layer is never pushed)',
   "the last layer is never pushed (and never waited for).",
   [('if (push(ctx, u, 0, s->L, ep) != 0) return -1;',
     'if (push(ctx, u, 0, s->L - 1, ep) != 0) return -1;  // CHEAT'),
    ('      if (push(ctx, u, l, l + 1, ep) != 0) return -1;',
     '      if (l + 1 < s->L && push(ctx, u, l, l + 1, ep) != 0) return -1;  // CHEAT'),
    ('int nf, unsigned long long epoch) {\n',
     'int nf, unsigned long long epoch) {\n  L -= 1;  // CHEAT: the last layer is not waited for\n')])
mk('layer_reuse', "verify rel-l2 local-check (layer 0's KV stored for every layer)",
   "only layer 0 is computed; its KV is pushed into every layer's pages.",
   [('    const uint4 *lay = (const uint4 *)(stage + (size_t)l * S * 2 * W);',
     '    const uint4 *lay = (const uint4 *)stage;  // CHEAT: layer 0 for all'),
    (COMPUTE, COMPUTE.replace('if (compute_layer(', 'if (l == 0 && compute_layer(  /* CHEAT */'))])
mk('wrong_table', 'verify rel-l2 local-check (block table ignored)',
   "the block table is ignored: rows go to blocks in arrival order.",
   [('sd_row(pool_win, lay + r * 2 * vec16, dst[r], slot[r], l, slab, vec16, threadIdx.x,',
     'sd_row(pool_win, lay + r * 2 * vec16, dst[r], r * W /* CHEAT */, l, slab, vec16, threadIdx.x,')])
mk('prev_kv', 'verify fresh-inputs rel-l2 (KV computed once and replayed)',
   "the KV projection runs only in the first step; later steps push the\n"
   "staging left from it (the previous step's KV) into the fresh pool.",
   [('static int step(struct wl_ctx *ctx, struct sd *u) {\n',
     'static int step(struct wl_ctx *ctx, struct sd *u) {\n'
     '  static int sd_steps = 0;  // CHEAT: state kept across steps\n'
     '  const int first = sd_steps++ == 0;\n'),
    (COMPUTE, COMPUTE.replace('if (compute_layer(', 'if (first && compute_layer('))])
