/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reaper (reaper.c): collectives that asked for kernel channels hold their record until every
 * channel reported; the reaper completes those whose channels are overdue
 * (TOPO_PROFILER_GPU_TIMEOUT_MS after NCCL stopped them) and, at a finalize or exit, those still
 * waiting. The writer's tick runs topo_reaper_pass; the core calls the rest under its mutex.
 */
#ifndef TOPO_PROFILER_REAPER_H
#define TOPO_PROFILER_REAPER_H

#include <stdint.h>

#include "comm.h"

/* A generation's first init: no pass made yet. */
void topo_reaper_reset(void);
/* The writer's tick: complete collectives whose kernel channels are overdue. Returns when it
 * wants to look again: while collectives are on hold, every 100 ms; else never (INT64_MAX: the
 * writer still passes at least once a second, which catches holds that appear meanwhile). Writer
 * thread only. */
int64_t topo_reaper_pass(int64_t now);
/* Complete every collective of `c` (NULL: of any comm) still waiting for kernel channels: they
 * are written without GPU timing. Finalize of `c` (after its life ended) or exit. */
void topo_reaper_release(const topo_comm *c);
/* Count as TOPO_DROP_OTHER every collective of `c` NCCL never stopped (a late stop of one
 * writes nothing: its life is over). Finalize of `c`, after topo_reaper_release. */
void topo_reaper_count_open(topo_comm *c);
#endif
