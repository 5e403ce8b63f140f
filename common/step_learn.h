/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The step learner: from a stream of NCCL operations (collectives and p2p of every communicator of
 * one process or rank, in enqueue order) it finds the job's training step, the smallest unit of
 * the sequence that repeats with the step's own timing, where each step begins, and when the
 * steady state is reached. The profiler's writer thread (profiler-plugin/step_sched.c: CUPTI
 * windows at step boundaries) and topo-report (tools/report/steps.c: the report's steps) both use
 * it, so they cut at the same place. Definitions: docs/metrics.md, "Steps".
 *
 * In short: an operation's symbol is (communicator, function, floor(log2 bytes), peer for p2p).
 * The symbol period q is the smallest p whose last `repeats` repetitions match exactly, taken over
 * the longest such periodic stretch (so a run of equal per-layer AllGathers inside a step is not
 * it). The step P is the smallest candidate - q, a divisor of q whose units agree >= 90 % (a
 * period holding several real steps folds to one), or a multiple of q at which long host gaps
 * recur - whose boundary gap stands out: at one phase of P the median host gap (enqueue to
 * enqueue) is at least twice the median of the other phases' medians, in >= 75 % of the
 * repetitions. The step begins at that phase: the operation after the step's longest gap (the
 * iteration start). Where a longer stretch of a larger period is already emerging (it has
 * repeated half a time: the layers' pattern inside a step, from the step's second repetition on),
 * the step must keep its timing over that stretch too. A per-layer pattern repeats, but without
 * the step's gap, so it is not the step (in a job's first step nothing can tell them apart yet:
 * it may be taken and is then lost at the next forward pass); a stream with no such gap
 * (irregular traffic, changing shapes, one kind of operation at an even pace) has no step.
 * Once found, the step is followed in O(1) per operation and kept while at most max(1, P / 16)
 * of the last P operations differ from one step earlier and fewer than 3 of the last 8 steps
 * lost the step's timing (boundary gap under twice the median of the step's other gaps); else
 * it is lost and searched again. Trusted: its stretch has lasted three times as long as the
 * stream before it (from the start, or from the stretch of the step lost before; at most the
 * history), or its period was trusted before - a pattern inside the real step ends sooner, the
 * first time the step's other part comes (a pattern that begins the stream, with nothing before
 * it, is trusted at once). Steady: trusted, and the last `steady_steps` step durations (boundary
 * to boundary), all measured since, lie within a factor of 1.5 of each other.
 *
 * Cost: memory fixed at topo_step_learn_new (about 50 bytes per operation of max_period), no
 * allocation after it. Per operation: O(1) while the step is known; while searching, one
 * compare per period up to max_period (four at a time), a look for the symbol period every 8th
 * operation, and a search over the periodic stretch (O(stretch)) at most every max(q, 32)
 * operations while a symbol period has no step yet; a loss recounts the repetitions from the
 * history (O(max_period x stretch) at most, once). Deterministic: the same stream gives the same
 * answer. Not thread-safe: one learner per thread of use.
 */
#ifndef TOPO_STEP_LEARN_H
#define TOPO_STEP_LEARN_H

#include <stddef.h>
#include <stdint.h>

#define TOPO_STEP_MAX_PERIOD_DEFAULT 2048u
#define TOPO_STEP_REPEATS_DEFAULT    3u
#define TOPO_STEP_STEADY_DEFAULT     3u
#define TOPO_STEP_MAX_PERIOD_LIMIT   16384u /* the largest max_period (and forced period) */

typedef struct topo_step_config {
  uint32_t max_period;   /* the longest step, in operations, rounded up to a multiple of 8 (0:
                          * TOPO_STEP_MAX_PERIOD_DEFAULT) */
  uint32_t repeats;      /* repetitions that make a period, >= 2 (0: the default, 3) */
  uint32_t steady_steps; /* step durations that must agree for the steady state (0: 3) */
  uint32_t force_period; /* > 0: the step is this many operations, wherever they have repeated
                          * `repeats` times (topo-report --steps P); it begins after the phase of
                          * the longest median gap, timing or not; at most max_period */
} topo_step_config;

/* One operation, as both the profiler's records and the report's collectives give it. */
typedef struct topo_step_op {
  uint64_t comm;  /* the communicator (its hash; any id stable within the stream) */
  uint64_t bytes; /* the record's bytes */
  int64_t t_ns;   /* CPU enqueue time (any clock, ns; one clock for the whole stream) */
  int32_t peer;   /* p2p: the peer; collectives: ignored */
  uint8_t func;   /* ncclFunc_t value */
  uint8_t p2p;    /* a send or receive */
} topo_step_op;

/* What the learner knows after one operation. */
typedef struct topo_step_event {
  uint64_t index;   /* the operation's index in the stream, from 0 */
  uint64_t step;    /* boundary: the number of the step it begins (0: the first step of the
                     * stretch in which this step was found; backfilled boundaries included) */
  int64_t step_ns;  /* median of the last (up to 8) step durations, 0 before two boundaries */
  int64_t gap_ns;   /* median host gap before the boundary operation */
  uint32_t period;  /* operations per step (0: no step known) */
  uint8_t boundary; /* this operation begins a step */
  uint8_t found;    /* the step was found at this operation (topo_step_learn_backfill) */
  uint8_t lost;     /* the step was lost at this operation (the sequence stopped repeating) */
  uint8_t trusted;  /* the step has outlasted a pattern inside a step (its stretch lasted three
                     * times as long as the stream before it, or its period was trusted before) */
  uint8_t steady;   /* trusted, and the last steady_steps durations agree */
} topo_step_event;

typedef struct topo_step_learner topo_step_learner;

/* A learner (cfg NULL: the defaults); NULL when out of memory. */
topo_step_learner *topo_step_learn_new(const topo_step_config *cfg);
void topo_step_learn_free(topo_step_learner *l);
/* Forget everything: a new stream. */
void topo_step_learn_reset(topo_step_learner *l);
/* Feed the next operation; *ev says what is known after it. */
void topo_step_learn_add(topo_step_learner *l, const topo_step_op *op, topo_step_event *ev);
/* Right after an event with `found`: the boundaries before that operation which the step was
 * found from, at operations *first, *first + period, ... (*count of them; steps 0 .. count - 1,
 * the found operation's own boundary, if it is one, comes as its event). 0 when none. */
int topo_step_learn_backfill(const topo_step_learner *l, uint64_t *first, uint64_t *count);
/* How many operations back the learner remembers (a caller that keeps its own copy of the
 * operations for the backfill needs this many). */
uint32_t topo_step_learn_history(const topo_step_learner *l);
/* The config in use (defaults filled in). */
topo_step_config topo_step_learn_config(const topo_step_learner *l);
#endif
