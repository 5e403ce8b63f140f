/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sampling choice (sampling.c): which operations get kernel-channel events. NCCL reads the
 * activation mask (a word NCCL owns, given at init) before the plugin hears of an operation, so
 * the mask for the next operation is set as each one starts, from a prediction of what comes
 * next (sampling.c states the rule). In start-up, until the job's step is steady (step_sched.h),
 * every operation gets them.
 *
 * Threads: the core attaches the mask at each init and detaches it at the end, under its mutex;
 * the records room calls topo_sampling_next_op for each operation and reads the mask and the
 * start-up flag (inline here) on any thread, lock-free; the writer's tick moves start-up's flag.
 */
#ifndef TOPO_PROFILER_SAMPLING_H
#define TOPO_PROFILER_SAMPLING_H

#include <stdatomic.h>
#include <stdint.h>

#include "comm.h"
#include "export.h"
#include "step_sched.h"

/* Operations of each kind (function, log2 of the size) measured before sampling takes over. */
#define TOPO_SAMPLING_FIRST 2

/* NCCL's mask word while a generation runs, NULL before, after and in a forked child: then
 * callbacks record nothing. */
extern _Atomic(int *) topo_sampling_mask TOPO_HIDDEN;
/* In start-up (the step not yet steady): every operation gets kernel channels. Set by the
 * writer's tick from the step schedule, read with one relaxed load on the hot path. */
extern atomic_int topo_sampling_startup TOPO_HIDDEN;

/* Whether a generation's mask is attached. Hot path: one relaxed load. */
static inline int topo_sampling_attached(void) {
  return atomic_load_explicit(&topo_sampling_mask, memory_order_relaxed) != NULL;
}
/* The mask NCCL reads now (0 when none is attached). Hot path: two relaxed loads. */
static inline int topo_sampling_read_mask(void) {
  int *p = atomic_load_explicit(&topo_sampling_mask, memory_order_relaxed);
  return p ? __atomic_load_n(p, __ATOMIC_RELAXED) : 0;
}
/* Whether the process is in start-up. Hot path: one relaxed load. */
static inline int topo_sampling_in_startup(void) {
  return atomic_load_explicit(&topo_sampling_startup, memory_order_relaxed);
}

/* An operation of `func` and `bytes` was issued on `c`, with kernel channels if `asked` (the mask
 * NCCL read for it): learn what followed the previous one, then set the mask for the next. The
 * first large one (>= TOPO_CUPTI_TRAFFIC_BYTES) is noted to the CUPTI timeline and wakes the
 * writer. Any thread, lock-free: fixed tables, relaxed atomics; concurrent callers can only
 * cause a misprediction, never an error. */
void topo_sampling_next_op(const topo_comm *c, int func, uint64_t bytes, int asked);

/* A generation's first init (the core's mutex, after topo_settings_read): forget what was
 * learnt; start-up on when the settings measure it. */
void topo_sampling_reset(void);
/* Turn start-up on or off (off: the core found no step schedule to end it). */
void topo_sampling_set_startup(int on);
/* The mask of the generation's first operation: every operation timed (its first init). */
void topo_sampling_first_mask(int abi_version);
/* Init: attach NCCL's mask word and write into it the mask chosen for the next operation (the
 * same value in every init). The core's mutex held. */
void topo_sampling_attach(int *mask);
/* Last finalize, exit or a forked child: no mask; callbacks record nothing from now on. */
void topo_sampling_detach(void);
/* Whether the first large operation has come (the CUPTI start waits for it). Any thread. */
int topo_sampling_traffic_seen(void);
/* The writer's tick: start-up's flag follows the step schedule's answer (step_sched.h,
 * topo_sched_startup); one INFO line when start-up ends or comes back. Returns when the answer
 * changes by the clock alone (INT64_MAX: not by the clock). */
int64_t topo_sampling_startup_tick(topo_sched *sched, int64_t now);
/* Finalize of `c`: one INFO line on how often the prediction was right, when it ran. */
void topo_sampling_report(const topo_comm *c);
#endif
