/* runtime/cuco_directives.h - compile-time design-space directives
 * (docs/contracts.md section 3).  `cuco eval` passes them as -D flags from a
 * candidate's `// CUCO-DIRECTIVES` line; absent flags take the defaults
 * below so a file also builds by hand.  Plain C: usable from C and CUDA. */
#ifndef CUCO_DIRECTIVES_H
#define CUCO_DIRECTIVES_H

#define CUCO_BACKEND_LSA 1
#define CUCO_BACKEND_GIN 2

#define CUCO_PLACEMENT_DEFERRED 1 /* communicate after all compute */
#define CUCO_PLACEMENT_PER_TILE 2 /* right after each tile */
#define CUCO_PLACEMENT_SPLIT 3    /* dedicated CTAs/streams, tile queue */

#define CUCO_SYNC_GLOBAL 1    /* barrier over all ranks */
#define CUCO_SYNC_PER_PEER 2  /* pairwise signals */
#define CUCO_SYNC_PER_CHUNK 3 /* a flag per chunk */

#define CUCO_ISSUER_THREAD 1
#define CUCO_ISSUER_WARP 2
#define CUCO_ISSUER_CTA 3

#ifndef CUCO_BACKEND
#define CUCO_BACKEND CUCO_BACKEND_LSA
#endif
#ifndef CUCO_PLACEMENT
#define CUCO_PLACEMENT CUCO_PLACEMENT_DEFERRED
#endif
#ifndef CUCO_SYNC
#define CUCO_SYNC CUCO_SYNC_GLOBAL
#endif
#ifndef CUCO_ISSUER
#define CUCO_ISSUER CUCO_ISSUER_CTA
#endif
#ifndef CUCO_CHUNK_BYTES
#define CUCO_CHUNK_BYTES (1 << 20)
#endif

/* CUCO-PARAM knobs arrive as -DCUCO_PARAM_<name>=<value>; a workload gives
 * each its default with
 *   #ifndef CUCO_PARAM_comm_ctas
 *   #define CUCO_PARAM_comm_ctas 8
 *   #endif                                                              */

#if CUCO_BACKEND != CUCO_BACKEND_LSA && CUCO_BACKEND != CUCO_BACKEND_GIN
#error "CUCO_BACKEND must be CUCO_BACKEND_LSA or CUCO_BACKEND_GIN"
#endif
#if CUCO_PLACEMENT < 1 || CUCO_PLACEMENT > 3
#error "CUCO_PLACEMENT out of range"
#endif
#if CUCO_SYNC < 1 || CUCO_SYNC > 3
#error "CUCO_SYNC out of range"
#endif
#if CUCO_ISSUER < 1 || CUCO_ISSUER > 3
#error "CUCO_ISSUER out of range"
#endif
#if CUCO_CHUNK_BYTES < 4096
#error "CUCO_CHUNK_BYTES must be at least 4096"
#endif

#endif /* CUCO_DIRECTIVES_H */
