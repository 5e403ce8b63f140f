/* SPDX-License-Identifier: Apache-2.0 */
/* The profile into NCCL's tuning constants (constants.c): at a v5+ init the core (tuner_core.c)
 * writes the measured latencies and per-channel bandwidth caps into the table NCCL hands it, so
 * NCCL's own model is calibrated too; topo-tune does the same to show NCCL's pick beside ours. */
#ifndef TOPO_TUNER_CONSTANTS_H
#define TOPO_TUNER_CONSTANTS_H

#include "nccl/tuner.h"

/* Write the profile's measured latencies and bandwidth caps into NCCL's tuning constants
 * (docs/tuner-model.md lists every entry). Values outside [1/4, 4] x NCCL's own are not written.
 * Returns how many entries were written. `gpu` picks the compute-capability row. */
struct topo_model;
int topo_tuner_write_constants(const struct topo_model *m, const char *gpu,
                               ncclTunerConstants_v5_t *c);

#endif
