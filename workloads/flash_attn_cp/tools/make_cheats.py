#!/usr/bin/env python3
"""workloads/flash_attn_cp/tools/make_cheats.py - regenerate cheats/*.cu from
seed.cu.  Each cheat is one first line `// CUCO-EXPECT-REJECT: verify
<mechanism words>` followed by the seed's text with edits inside its EVOLVE
block only (the description goes into the block), so the frozen text is
byte-identical once that first line is dropped (docs/contracts.md; t1002
checks it).  The mechanism words name the runtime mechanism that catches
the cheat; tests/gpu/flash_attn.sh checks the rejection's reason prefix.  Run from the workload folder
after editing seed.cu:  python3 tools/make_cheats.py"""
import os

seed = open('seed.cu').read()
ANCHOR = '// CUCO-PARAM copy_threads=512\n'
BARRIER = '''  ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, ncclTeamTagLsa(), blockIdx.x);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}'''
CREDIT = '''      if (u->nslots == 2 && k >= 1) {  // rank r+1 is done reading slot (k+1) % 2
        sd_credit<<<1, 32, 0, st>>>(u->dc);
        RT_LAUNCH(ctx);
      }'''
PUSH = '''      sd_push<<<G, T, 0, st>>>(u->dc, u->ring_win, cur, bytes, dst_off);
      RT_LAUNCH(ctx);'''
FOLD = '''    if (wa_fold(ctx, s, wa_src(s->R, s->me, k), u->io.Q, cur, u->st, -1, st) != 0) return -1;
  }
#endif'''
FINAL = '''  return wa_finalize(ctx, s, u->st, &u->io, st);
}
// EVOLVE-BLOCK-END'''


def mk(name, expect, desc, reps):
    b = seed
    for old, new in reps:
        assert b.count(old) == 1, (name, old)
        b = b.replace(old, new)
    assert b.count(ANCHOR) == 1
    note = (f"// CHEAT cheats/{name}.cu (must be rejected; made by tools/make_cheats.py):\n"
            + "".join(f"// {line}\n" for line in desc.split("\n")))
    b = b.replace(ANCHOR, ANCHOR + note)
    with open(os.path.join('cheats', name + '.cu'), 'w') as f:
        f.write(f"// CUCO-EXPECT-REJECT: {expect}\n" + b)


mk('stale_slot', 'verify recv-poison nan ranks>=2 (consumes the ring slot before the hop lands)',
   'The push kernel does not sync the LSA barrier: step k computes on slot k %\n'
   'slots whether or not rank r-1 has stored the shard there.  The slot is a\n'
   'RECV window, poisoned before every step: the early read sees NaN (R >= 2).',
   [(BARRIER, '  // CHEAT: no barrier; the consumer does not wait for the hop.\n  (void)me;\n}')])
mk('prev_shard', 'verify recv-poison nan ranks>=2 (replays the ring slots of an earlier step)',
   'Pushes only in the first step (epoch 1) and afterwards computes on whatever\n'
   'the slots hold from before.  The runtime poisons RECV windows before every\n'
   'step (and inputs are fresh), so the old shard is gone (R >= 2).',
   [(PUSH, '      if (rt_epoch(ctx) == 1) {  // CHEAT: later steps reuse old slots\n'
           '        sd_push<<<G, T, 0, st>>>(u->dc, u->ring_win, cur, bytes, dst_off);\n'
           '        RT_LAUNCH(ctx);\n      }')])
mk('slot_race', 'verify perturb local-check ranks>=2 (slot reuse without the credit barrier)',
   'slots=2 without the credit barrier: the push of step k overwrites rank\n'
   'r+1\'s slot (k+1) % 2 while r+1 may still compute step k-1 on it.  A race:\n'
   'only R >= 4 reuses a slot, and only a slow consumer (perturbed runs: delay,\n'
   'hog) loses; then its rows mix in the wrong shard (needles, rel-l2).',
   [(CREDIT, '      // CHEAT: no credit barrier before reusing a slot.')])
mk('skip_blocks', 'verify local-check rel-l2 (drops a visible, unmasked KV block)',
   'At step 0 the second local chunk is folded only against itself (causal),\n'
   'not against the first local chunk that lies wholly before it: a skipped\n'
   'block that is not fully masked.  Its rows lose the needle of that chunk.',
   [(FOLD, '''    if (k == 0) {  // CHEAT: (chunk y, chunk x) is never computed
      if (wa_fold(ctx, s, s->me, u->io.Q, cur, u->st, 0, st) != 0) return -1;
      struct attn_step_args a;
      memset(&a, 0, sizeof a);
      const int y = wa_chunk(s, s->me, 1);
      const long long off = wa_loff(s, s->me, 1);
      a.shape = wa_attn_shape(s);
      a.q_rows = a.kv_rows = (int)wa_clen(s, y);
      a.q_pos0 = a.kv_pos0 = s->cb[y];
      a.mask = ATTN_MASK_CAUSAL;
      a.state = u->st;
      for (int b = 0; b < s->B; b++) {
        a.q = u->io.Q + wa_q_off(s, b, off, 0);
        a.k = cur + wa_k_off(s, b, off, 0);
        a.v = cur + wa_v_off(s, b, off, 0);
        a.state_row0 = (int)(b * s->rows[s->me] + off);
        RT_CUDA(ctx, attn_step(&a, st));
      }
      continue;
    }
    if (wa_fold(ctx, s, wa_src(s->R, s->me, k), u->io.Q, cur, u->st, -1, st) != 0) return -1;
  }
#endif''')])
mk('doubled_hop', 'verify local-check (folds the last shard twice)',
   'The shard of the last ring step is folded twice.  At R = 1 that is the own\n'
   'shard: O is unchanged (every weight doubles) but LSE grows by ln 2, caught\n'
   'by the LSE bound; at R >= 2 the doubled chunk also shifts the needle rows.',
   [(FOLD, '''    if (wa_fold(ctx, s, wa_src(s->R, s->me, k), u->io.Q, cur, u->st, -1, st) != 0) return -1;
    if (k == s->R - 1 &&  // CHEAT: the last hop counted twice
        wa_fold(ctx, s, wa_src(s->R, s->me, k), u->io.Q, cur, u->st, -1, st) != 0)
      return -1;
  }
#endif''')])
mk('skipped_hop', 'verify nan rel-l2 (never folds the last ring step\'s shard)',
   'The shard of the last ring step is never folded.  At R = 1 that is the own\n'
   'shard: every row saw no key (O = 0, LSE = -inf, caught as NaN/Inf); at\n'
   'R >= 2 the rows that see that shard lose its needle (local-check, rel-l2).',
   [(FOLD, '''    if (k == s->R - 1) continue;  // CHEAT: the last hop is dropped
    if (wa_fold(ctx, s, wa_src(s->R, s->me, k), u->io.Q, cur, u->st, -1, st) != 0) return -1;
  }
#endif''')])
mk('early_clock', 'verify snapshot poison (stops the clock before O and LSE are written)',
   'O and LSE are finalized on a side stream that the step stream never\n'
   'joins, so the end event is recorded before the outputs exist: the\n'
   'snapshot taken at the end event still holds the poison.',
   [(FINAL, '''  static cudaStream_t side;  // CHEAT: a stream the step never joins
  static cudaEvent_t ev;
  if (!side) {
    RT_CUDA(ctx, cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    RT_CUDA(ctx, cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  }
  RT_CUDA(ctx, cudaEventRecord(ev, st));
  RT_CUDA(ctx, cudaStreamWaitEvent(side, ev, 0));
  return wa_finalize(ctx, s, u->st, &u->io, side);
}
// EVOLVE-BLOCK-END''')])
