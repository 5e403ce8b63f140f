/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NVTX emitter (nvtx.c): one range per collective in topo's own domain. The core starts it
 * at a generation's first init, opens a collective's range at its start and ends it at its
 * completion. Calls nothing of the core's.
 */
#ifndef TOPO_PROFILER_NVTX_H
#define TOPO_PROFILER_NVTX_H

#include <stdint.h>

#include "trace_format.h"

/* Create our "topo" domain, categories and registered strings (first init). 0 = no tool. */
int topo_nvtx_init(void);
/* Start a range for a collective at enqueue; returns its id (0 when NVTX is off). */
uint64_t topo_nvtx_coll_start(const topo_rec_coll *rec);
/* End it at completion; adds a mark with the GPU duration when the record is GPU-timed. */
void topo_nvtx_coll_end(uint64_t range, const topo_rec_coll *rec);
#endif
