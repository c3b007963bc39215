/* analyze.h - static analysis of a host-driven CUDA program.
 *
 * Finds, per function and in source order: every NCCL host call (with its
 * arguments, communicator, stream, buffers read and written, and whether it
 * sits inside ncclGroupStart/End), kernel launches (<<<grid, block, smem,
 * stream>>> and cudaLaunchKernel*), cuBLAS/cuBLASLt GEMMs (compute), CUDA
 * copies, events and synchronisations, and the dataflow between them by
 * argument names: which kernel or GEMM produced the buffer a collective
 * sends, and who consumes what a collective received.  Built on cutok, so
 * calls inside comments and strings are ignored and calls wrapped in macros
 * (NCCLCHECK(ncclAllGather(...))) are seen, with the macro recorded.
 */
#ifndef CUCO_ANALYZE_H
#define CUCO_ANALYZE_H

#include <jansson.h>
#include <stddef.h>

#include "buf.h"
#include "err.h"

#define ANALYZE_MAX_ARGS  24
#define ANALYZE_TEXT      160
#define ANALYZE_MAX_BUFS  8
#define ANALYZE_MAX_LOOPS 4

enum analyze_kind {
  ANALYZE_NCCL = 0,    /* any nccl* host call */
  ANALYZE_LAUNCH,      /* kernel launch */
  ANALYZE_GEMM,        /* cuBLAS / cuBLASLt matrix multiply */
  ANALYZE_COPY,        /* cudaMemcpy*, cudaMemset* */
  ANALYZE_EVENT,       /* cudaEventRecord, cudaStreamWaitEvent */
  ANALYZE_SYNC,        /* cudaStreamSynchronize, cudaDeviceSynchronize, ... */
  ANALYZE_BLAS_STREAM, /* cublasSetStream: binds a handle to a stream */
  ANALYZE_CALL,        /* call of a function defined in the same file */
};

struct analyze_op {
  enum analyze_kind kind;
  char name[64];     /* callee: "ncclAllGather", kernel name, ... */
  char category[16]; /* nccl: collective|p2p|group|init|window|memory|
                        devcomm|teardown|query|other, device (device API
                        inside a kernel); else the kind */
  int func;          /* index into functions */
  int line, col;
  char via[64]; /* enclosing macro, e.g. "NCCLCHECK", or "" */
  int nargs;
  char args[ANALYZE_MAX_ARGS][ANALYZE_TEXT];
  char comm[ANALYZE_TEXT];     /* communicator expression, "" if none */
  char comm_key[ANALYZE_TEXT]; /* its base: "comms" for "comms[i]" */
  char stream[ANALYZE_TEXT];   /* stream expression, "" = default stream */
  char grid[ANALYZE_TEXT], block[ANALYZE_TEXT], smem[ANALYZE_TEXT];
  int nreads, nwrites;
  char reads[ANALYZE_MAX_BUFS][ANALYZE_TEXT];  /* buffer keys */
  char writes[ANALYZE_MAX_BUFS][ANALYZE_TEXT]; /* buffer keys */
  int writes_assumed; /* launch of a kernel not defined here: all args */
  int group;          /* ncclGroupStart/End id (1-based), 0 = not grouped */
  int external;       /* a function not defined in this file, kept only when it
                         consumes or produces a buffer of a collective */
  int in_place;       /* collective: sendbuf and recvbuf are one buffer;
                         launch: a buffer both read and written */
  int nscalars;       /* launch/call arguments that are values, not buffers */
  char scalars[ANALYZE_MAX_BUFS][ANALYZE_TEXT];
  long tok;   /* token index of the call (loop membership) */
  int nloops; /* enclosing loops, innermost first */
  long loop_lo[ANALYZE_MAX_LOOPS], loop_hi[ANALYZE_MAX_LOOPS];
};

struct analyze_func {
  char name[96];
  int line, col, end_line;
  int start_line; /* first line of the definition (template, qualifiers) */
  int is_kernel;  /* __global__ */
  int is_device;  /* __device__ (not __host__): NCCL calls are device API */
  int nparams;
  char params[ANALYZE_MAX_ARGS][64];
  int param_written[ANALYZE_MAX_ARGS]; /* kernels: stored through */
  int param_read[ANALYZE_MAX_ARGS];    /* kernels: loaded from */
  int param_ptr[ANALYZE_MAX_ARGS];     /* declared as a pointer or array */
};

struct analyze_flow {
  char buffer[ANALYZE_TEXT];
  int producer; /* op index */
  int consumer; /* op index */
  int carried;  /* the producer comes later in a loop around both: the
                   consumer reads what the previous iteration wrote */
};

/* A device buffer: a pointer the program allocates (cudaMalloc and
 * friends, ncclMemAlloc, the runtime's rt_alloc). */
struct analyze_buffer {
  char name[ANALYZE_TEXT]; /* its key, as in reads/writes: "d_A" */
  char size[ANALYZE_TEXT]; /* the size argument as written, "" unknown */
  char alloc[32];          /* "cudaMalloc", "ncclMemAlloc", "rt_alloc" */
  int line;
};

/* What an argument names (analyze_value_kind). */
enum analyze_value {
  ANALYZE_VAL_UNKNOWN = 0, /* no declaration found: treated as a buffer */
  ANALYZE_VAL_BUFFER,      /* allocated on the device, or a pointer */
  ANALYZE_VAL_SCALAR,      /* an int/float value, a size, a constant */
  ANALYZE_VAL_OTHER,       /* a stream, handle, communicator, struct... */
};

/* One declared name and what it is (the strongest declaration wins:
 * buffer over scalar over other). */
struct analyze_decl {
  char name[64];
  enum analyze_value kind;
};

/* The communication calls of a report, counted once for every command
 * that reports them (analyze's summary, init's message, transform). */
struct analyze_counts {
  size_t collectives; /* category "collective": ncclAllGather, ... */
  size_t p2p;         /* ncclSend, ncclRecv */
  size_t launches, gemms, syncs;
};

struct analyze_report {
  char file[256];
  struct analyze_op *ops;
  size_t nops;
  struct analyze_func *funcs;
  size_t nfuncs;
  struct analyze_flow *flows;
  size_t nflows;
  struct analyze_buffer *bufs;
  size_t nbufs;
  /* name -> enum analyze_value, from the file's declarations */
  struct analyze_decl *decls;
  size_t ndecls;
};

/* Analyze src[0..len) (name is used in messages).  Returns a new report
 * (caller frees with analyze_report_free) or NULL with *e set: ERR_PARSE
 * naming name:line:col for source the tokenizer rejects, ERR_TOOBIG,
 * ERR_NOMEM. */
struct analyze_report *analyze_source(const char *name, const char *src,
                                      size_t len, struct err *e);

/* Read path (capped at 8 MiB) and analyze it; ERR_IO if unreadable. */
struct analyze_report *analyze_file(const char *path, struct err *e);

void analyze_report_free(struct analyze_report *r);

/* Count the report's calls into *c (call sites in the source: a call in a
 * loop counts once). */
void analyze_count(const struct analyze_report *r, struct analyze_counts *c);

/* "N collectives, M send/recv": the one wording of the count that analyze
 * and init both print.  Returns out. */
const char *analyze_comm_phrase(const struct analyze_report *r, char *out,
                                size_t n);

/* Number of NCCL data-movement calls left (collectives and send/recv):
 * what `cuco transform` must drive to zero (analyze_count's two). */
size_t analyze_host_comm_count(const struct analyze_report *r);

/* What NAME (a buffer key: "d_A", "st->n") stands for, by the file's
 * declarations: the last name of a member chain decides. */
enum analyze_value analyze_value_kind(const struct analyze_report *r,
                                      const char *name);

/* The report as JSON (new reference) or NULL on allocation failure. */
json_t *analyze_report_json(const struct analyze_report *r);

/* The human-readable report appended to out; 0 or the buffer's error. */
int analyze_report_text(const struct analyze_report *r, struct buf *out);

#endif
