/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Records and their completion (records.c): the work of every event from its start to the record
 * it leaves in the trace. The core's start, stop and state entries (core.h) hand each event here
 * once they found its communicator open; the reaper (reaper.h) releases the holds of collectives
 * whose kernel channels are overdue.
 *
 * Threads: any, concurrently; lock-free, no allocation, no I/O (records go to the writer's ring).
 * Failure: an event without an object (full pool) gets a NULL handle and a count in its
 * communicator's drops; a stale, repeated or foreign handle does nothing.
 */
#ifndef TOPO_PROFILER_RECORDS_H
#define TOPO_PROFILER_RECORDS_H

#include <stdint.h>

#include "comm.h"
#include "event.h"
#include "pool.h"

/* The handle for event `d` on life `life` of the open communicator `c` (NULL: not recorded). */
void *topo_records_start(const topo_prof_descr *d, topo_comm *c, uint32_t life);
/* NCCL stopped the event `handle` names (anything NCCL passes: NULL, stale or foreign words are
 * ignored). */
void topo_records_stop(void *handle);
/* A state update (event.h's TOPO_ST_*) of the event `handle` names. */
void topo_records_state(void *handle, int state_kind, uint64_t value);
/* Release a collective's "waiting for kernel channels" reference exactly once; `expect` is its
 * hold word as read (gen << 1 | 1 while held). The reaper, any thread. */
void topo_records_release_hold(topo_obj *o, uint64_t expect);
#endif
