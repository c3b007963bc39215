/* doctor.h - the machine description attached to every result. */
#ifndef CUCO_DOCTOR_H
#define CUCO_DOCTOR_H

#include <jansson.h>

#include "err.h"

struct config;
struct toolchain;

/* Probe this machine; returns a new JSON object (caller decrefs) or NULL
 * with *e set.  A machine without GPUs is not an error ("gpus.count": 0);
 * a broken toolchain is (ERR_BUILD). */
json_t *doctor_probe(const struct config *cfg, struct err *e);

/* The same description for a toolchain the caller has already probed
 * (tc_probe runs nvcc, Python and maybe `nvcc -M`: not twice per command). */
json_t *doctor_describe(const struct config *cfg, const struct toolchain *tc,
                        struct err *e);

/* The message of a command that needs a GPU on a machine with none
 * ("no GPU found ...", with what to do instead; the caller adds "cuco CMD:
 * "); a static string, overwritten by the next call. */
const char *doctor_no_gpu_line(const char *cmd, const char *workload_dir);

#endif
