/* doctor.h - the machine description attached to every result. */
#ifndef CUCO_DOCTOR_H
#define CUCO_DOCTOR_H

#include <jansson.h>

#include "err.h"

struct config;

/* Probe this machine; returns a new JSON object (caller decrefs) or NULL
 * with *e set.  A machine without GPUs is not an error ("gpus.count": 0);
 * a broken toolchain is (ERR_BUILD). */
json_t *doctor_probe(const struct config *cfg, struct err *e);

#endif
