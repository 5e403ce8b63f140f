/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The optional CUPTI compute timeline (timeline.c): kernels, memcpy and memset in spans of the
 * process-wide trace stream (comm.h), whose records it pushes to the trace writer itself. The
 * core configures it at a generation's first init, loads, begins and stops it, hands it the step
 * schedule, polls it from the writer's tick and notes the first large operation. Calls nothing of
 * the core's.
 */
#ifndef TOPO_PROFILER_TIMELINE_H
#define TOPO_PROFILER_TIMELINE_H

#include <stdint.h>

#include "comm.h"
#include "trace_format.h"

struct topo_sched;
/* First init: read the TOPO_PROFILER_CUPTI* variables (a bad mode warns once). 0 = mode off. */
int topo_timeline_configure(void);
/* Whether the mode is `window` (the default): its windows follow the step schedule. */
int topo_timeline_windowed(void);
/* The step schedule the windows follow (step_sched.h; NULL: windows of a fixed length every
 * period). Set at the first init before the writer starts; read only on the writer thread. */
void topo_timeline_set_sched(struct topo_sched *s);
/* The mode in words, for the init log line. */
const char *topo_timeline_describe(void);
/* How long after the first init the CUPTI start may wait for the first large collective: the
 * period in the `window` mode without a trigger file, else 0 (start with the writer). */
int64_t topo_timeline_defer_ns(void);
/* Before the file of `c` (the process-wide comm) is opened: look for an injected CUPTI client,
 * else dlopen CUPTI and set c's CUPTI clock offset. Touches no CUPTI state. 0 = mode off.
 * The writer thread when the start is due (dlopen of CUPTI costs milliseconds and 2.4 MB
 * resident: not on the init thread, and not before the timeline needs it). */
int topo_timeline_load(topo_comm *c);
/* After that file is handed to the writer: write FAILED when CUPTI could not be loaded, else
 * open the first window (or DECLINE it). The writer thread, right after topo_timeline_load. */
void topo_timeline_begin(void);
/* Training traffic has begun: an operation of >= TOPO_CUPTI_TRAFFIC_BYTES was issued. In the
 * window mode the first window opens there (a job's first seconds or minutes are model building,
 * compile and setup; its steady state starts with large collectives), or one period after init
 * when none came by then; a first large collective after that window closed starts the schedule
 * over. Hot path, any thread: one relaxed load once it is known. */
#define TOPO_CUPTI_TRAFFIC_BYTES TOPO_TRACE_CUPTI_START_BYTES
void topo_timeline_note_traffic(void);
/* The writer's tick (the core's): the span schedule (windows, trigger file, flushes, probes);
 * returns at once (one atomic load) when nothing is due. */
void topo_timeline_poll(int64_t now_ns);
/* When topo_timeline_poll next has something to do (monotonic ns; INT64_MAX = nothing scheduled):
 * the writer sleeps until then. */
int64_t topo_timeline_next_due(void);
/* Close the open span (RECORDED, or YIELDED when another client is there) and detach from the
 * comm (last finalize / exit); later buffer callbacks drop their records. */
void topo_timeline_stop(void);
#endif
