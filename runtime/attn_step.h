// runtime/attn_step.h - the contract of cuco's frozen attention step.
//
// FROZEN like gemm_tile.cuh: the flash_attn_cp baselines and candidates call
// it, never edit it.  Candidates own scheduling and communication; the math
// (scores, causal mask, online softmax, the fp32 state) is this step's.
// The implementation is runtime/attn_step.cuh (include that from .cu files);
// this header only states the data layout and the calls, so a workload can be
// written against it.
//
// Shapes: B=1 (a batch is a loop), Hq query heads, Hkv KV heads with
// Hq % Hkv == 0 (GQA: query head h reads KV head h / (Hq/Hkv)), head dim
// D in {64, 128}, scale 1/sqrt(D) unless the caller sets another.
//
// Layouts (all token-major, the layouts workloads.md section 1 fixes):
//   Q   bf16 [q_rows][Hq][D]        row i is the token at global position
//                                    q_pos0 + i
//   K,V bf16 [kv_rows][Hkv][D] each row j is the token at kv_pos0 + j; a
//                                    ring hop's buffer is K then V
//                                    ([2][kv_rows][Hkv][D]), pass k and
//                                    v = k + kv_rows*Hkv*D
//   state (fp32, the running softmax of every query row, kept in global
//   memory between steps):
//     acc [rows][Hq][D]   un-normalised output sum_j p_ij v_j
//     m   [Hq][rows]      running max of the scaled scores, log2 units
//                         (score * scale * log2(e)); -INFINITY = nothing seen
//     l   [Hq][rows]      running sum of 2^(s - m)
//   A step's query row i updates state row state_row0 + i.
//   O   bf16 [rows][Hq][D] = acc / l
//   LSE fp32 [Hq][rows]    = (m + log2(l)) * ln(2)   (natural log; -INF and
//                            O = 0 for a row that saw no key)
//
// Masks: ATTN_MASK_NONE (every key visible) or ATTN_MASK_CAUSAL (key at
// global position p_k is visible to the query at p_q iff p_k <= p_q).  With
// CAUSAL the step skips key blocks that are fully masked for a Q tile, so a
// call whose KV range lies entirely after its Q range does no work.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

enum attn_mask { ATTN_MASK_NONE = 0, ATTN_MASK_CAUSAL = 1 };

struct attn_shape {
  int hq, hkv, d; // d is 64 or 128
  float scale;    // 0 means 1/sqrt(d)
};

struct attn_state {
  float *acc, *m, *l;
  int rows; // rows of the state (the leading size of acc, the stride of m, l)
};

// One step: the query rows [0, q_rows) of q against the keys [0, kv_rows) of
// k and v, folded into the state rows [state_row0, state_row0 + q_rows).
struct attn_step_args {
  struct attn_shape shape;
  const __nv_bfloat16 *q;
  int q_rows;
  long long q_pos0;
  const __nv_bfloat16 *k, *v;
  int kv_rows;
  long long kv_pos0;
  enum attn_mask mask;
  struct attn_state state;
  int state_row0;
};

// Host calls (implemented in attn_step.cuh, all asynchronous on `stream`,
// errors are the cudaError_t of the launch; bad arguments give
// cudaErrorInvalidValue before anything is launched):
//
//   cudaError_t attn_state_init(struct attn_state st, int hq, int d,
//                               cudaStream_t stream);      // m=-inf, l=0, acc=0
//   cudaError_t attn_step(const struct attn_step_args *a, cudaStream_t stream);
//   cudaError_t attn_state_merge(struct attn_state dst, struct attn_state src,
//                                int hq, int d, cudaStream_t stream);
//                   // dst <- softmax-merge(dst, src), row by row (baseline A's
//                   // "partials then a merge kernel")
//   cudaError_t attn_finalize(struct attn_state st, int hq, int d,
//                             __nv_bfloat16 *o, float *lse,
//                             cudaStream_t stream);        // O and LSE from state
//   size_t attn_step_smem_bytes(int d);   // dynamic shared memory of one CTA
//
// Device entry for persistent (placement=per_tile) kernels, documented in
// attn_step.cuh: one CTA folds one Q tile of one query head against a KV
// range, `attn_step_tile(a, q_tile, head, smem)`, with the same state rules.
//
// Completing the calls above (added with the implementation; nothing above
// changed): attn_state_merge needs dst.rows == src.rows; attn_finalize takes
// o or lse as NULL (not both); q, k, v must be 16-byte aligned and acc
// 8-byte aligned; hq <= 65535; q_rows <= 65535 * ATTN_Q_TILE.  Also in
// attn_step.cuh: attn_step_check(&a) (the validation alone, launches
// nothing), attn_step_q_tiles(q_rows), and the constants ATTN_STEP_THREADS
// (256, the block size attn_step_tile needs), ATTN_Q_TILE (128 query rows
// per tile), ATTN_KV_TILE (64 keys per block).
