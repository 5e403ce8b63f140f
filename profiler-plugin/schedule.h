/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The generation's schedule (schedule.c): what the writer thread runs besides writing, for the
 * CUPTI timeline and the step schedule. The timeline's stream is listed at a generation's first
 * init and CUPTI is loaded on the writer thread only once it is due (the first large operation,
 * or a period after init); the step schedule (step_sched.h) learns the job's steps from the
 * records the writer drains, places CUPTI's windows, writes its STEP records and ends start-up.
 *
 * Threads: the core calls begin, stop and end under its mutex; the writer calls the tick and the
 * observer (passed in its topo_writer_config) on its thread. The CUPTI start: IDLE -> STARTING
 * (the writer loads CUPTI) -> STARTED (its stream is open and its schedule runs) or OVER (the
 * load declined); IDLE -> OVER when the last finalize or exit comes first; STARTED -> OVER at the
 * stop. A start begins only from IDLE and finishes only from STARTING, so no start begins or
 * finishes after a stop; a writer left behind by an earlier generation never finishes a start
 * into this one.
 */
#ifndef TOPO_PROFILER_SCHEDULE_H
#define TOPO_PROFILER_SCHEDULE_H

#include <stdint.h>

#include "comm.h"
#include "step_sched.h"
#include "trace_writer.h"

/* A generation's first init, after the settings and the sampling were reset: list the CUPTI
 * stream (a context slot; none to be had turns CUPTI off for the generation) and create the step
 * schedule when CUPTI's windows or start-up need it (without memory for it, windows keep a fixed
 * length and start-up ends at once). The core's mutex held, before the writer starts. */
void topo_schedule_begin(void);
/* The step schedule, NULL when there is none: the writer's observer argument. */
topo_sched *topo_schedule_steps(void);
/* The writer's observer: a collective or p2p record it drained goes to the step schedule. */
void topo_schedule_observe(void *steps, topo_comm *c, uint32_t life, const topo_trace_record *r,
                           int64_t now);
/* The writer's tick: CUPTI's start once due, the step schedule's released operations and STEP
 * records, start-up's end, the CUPTI timeline's own schedule. Returns when it next has something
 * to do (monotonic ns; INT64_MAX: nothing scheduled). Writer thread. */
int64_t topo_schedule_tick(topo_writer *w, int64_t now);
/* Last finalize or exit: a CUPTI start that was not due never happens (no wait); one in progress
 * gets at most wait_ns to finish; what it began is stopped. The core's mutex held. */
void topo_schedule_stop(int64_t wait_ns);
/* The generation's end, after the writer stopped (`writer_finished`: it finished, or never
 * started): the CUPTI stream's slot retired (reused once closed), the step schedule freed unless
 * a writer left behind may still be inside it. The core's mutex held. */
void topo_schedule_end(int writer_finished);
#endif
