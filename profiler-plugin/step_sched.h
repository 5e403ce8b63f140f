/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The step schedule of the CUPTI windows (`window` mode): the process's operations, as the trace
 * writer drains their records, go in enqueue order to the step learner (common/step_learn.h);
 * its boundaries become topo_rec_step records, and the windows open just before a step
 * boundary once the step has reached its steady state and close once they hold whole steps
 * (docs/profiler.md, "Windows at step boundaries"). Without a step, windows of a fixed length.
 *
 * Pure: every time is an argument (monotonic ns), nothing here reads a clock, takes a lock or
 * does I/O, so tests drive it with simulated clocks (tests/profiler/test_step_sched.c). Memory is
 * allocated by topo_sched_new (the schedule) and by the first topo_sched_add (the learner and the
 * operations held, ~400 KB), nowhere else. One thread at a time: the profiler's writer thread calls
 * everything (topo_sched_add/poll from its drain and tick, the window calls from the CUPTI
 * schedule it runs).
 */
#ifndef TOPO_PROFILER_STEP_SCHED_H
#define TOPO_PROFILER_STEP_SCHED_H

#include <stdint.h>

#include "trace_format.h"

typedef struct topo_sched_config {
  int64_t cap_ns;         /* the longest window (TOPO_PROFILER_CUPTI_WINDOW_MS) */
  int64_t period_ns;      /* the longest gap between windows (TOPO_PROFILER_CUPTI_PERIOD_S) */
  int64_t first_gap_ns;   /* the gap after the first window; it doubles up to period_ns */
  int64_t fallback_ns;    /* a window that is due waits this long for a steady step */
  int64_t time_window_ns; /* the length of a window without a step */
  int64_t hold_max_ns;    /* the longest an operation waits for earlier-enqueued ones */
  uint32_t steps;         /* whole steps per window */
  uint32_t max_period;    /* the learner's longest step in operations (0: its default) */
  int64_t startup_ns;     /* start-up's bound (TOPO_PROFILER_STARTUP_MS; 0: no start-up) */
} topo_sched_config;

/* The defaults: the first gap min(5 s, period), the fallback min(10 s, period), windows without a
 * step of min(cap, 2 s), 4 steps, operations held up to the GPU timeout + 0.5 s, no start-up. */
void topo_sched_config_default(topo_sched_config *cfg, int64_t cap_ns, int64_t period_ns,
                               int64_t gpu_timeout_ns);

/* One operation's record as the writer drained it. */
typedef struct topo_sched_op {
  uint64_t comm_hash, seq, bytes;
  int64_t cpu_start_ns;
  int32_t peer;
  uint8_t func, p2p;
  uint8_t gpu_timed;   /* its GPU work is over (a record with kernel-channel times) */
  uint32_t slot, life; /* the trace its step record goes to */
} topo_sched_op;

typedef struct topo_sched topo_sched;

topo_sched *topo_sched_new(const topo_sched_config *cfg);
void topo_sched_free(topo_sched *s);

/* An operation's record was drained at `now`. Records come in completion order (those waiting
 * for GPU timing late): it is held until every operation enqueued before it has arrived as far as
 * the writer can tell (the largest lateness seen lately, at most hold_max_ns). */
void topo_sched_add(topo_sched *s, const topo_sched_op *op, int64_t now);

/* Feed the learner every operation held long enough; each step boundary, from the first one at
 * which the step is steady until it is lost, is handed to emit(arg, slot, life, record) as a
 * TOPO_REC_STEP record for the trace of its communicator.
 * Returns when it next has operations to release (INT64_MAX: none held). */
typedef void (*topo_sched_emit_fn)(void *arg, uint32_t slot, uint32_t life,
                                   const topo_trace_record *r);
int64_t topo_sched_poll(topo_sched *s, int64_t now, topo_sched_emit_fn emit, void *arg);

/* ---- start-up: every operation measured until the step is steady (docs/profiler.md, "Start-up
 * measured whole") */
/* Whether the process is still in its start-up at `now`: from its first operation until the
 * learner's steady state (never again after it), at most startup_ns after its first operation of
 * >= TOPO_TRACE_CUPTI_START_BYTES or, while none has come, after its first operation (a first
 * large one arriving after that opens start-up again, for startup_ns). No start-up when
 * startup_ns is 0 or the learner could not be allocated. *until: when the answer changes by
 * the clock alone (INT64_MAX: not by the clock). Times are the operations' enqueue clock. */
int topo_sched_startup(topo_sched *s, int64_t now, int64_t *until);

/* ---- the windows (window mode) */
typedef struct topo_sched_window {
  int open;        /* a window should be open now */
  uint8_t kind;    /* topo_cupti_window of the window to open: STEPS or TIME */
  uint32_t period; /* STEPS: operations per step */
  uint32_t steps;  /* STEPS: whole steps it is to hold */
  int64_t step_ns; /* STEPS: the step's duration */
  int64_t next;    /* ask again by then (monotonic ns; INT64_MAX: nothing scheduled) */
} topo_sched_window;

/* Windows may open from `now` on (CUPTI is loaded). */
void topo_sched_begin(topo_sched *s, int64_t now);
/* The first large collective came after the schedule began: a window opened before it
 * recorded set-up, so the schedule starts over (the next window is again the first). */
void topo_sched_restart(topo_sched *s, int64_t now);
/* Whether a window should be open at `now` (one is open after topo_sched_opened until
 * topo_sched_closed): opens once due and the step is steady, at the predicted start of a step,
 * or for a fixed time after fallback_ns without one (a period when a step is known but not steady
 * yet); closes once it holds `steps` whole steps
 * and the GPU has done them, at the cap, or when the step is lost. */
void topo_sched_decide(topo_sched *s, int64_t now, topo_sched_window *w);
/* The window w (from topo_sched_decide) opened at `now`. */
void topo_sched_opened(topo_sched *s, int64_t now, const topo_sched_window *w);
/* The window closed at `now`, or a start found another CUPTI client (`retry`: the next one a
 * period later). The next window is due a gap after this one's start (at least half a gap after
 * its end): first_gap_ns after the first window, doubling up to period_ns. */
void topo_sched_closed(topo_sched *s, int64_t now, int retry);

/* What the learner knows (tests, logs). */
typedef struct topo_sched_state {
  uint32_t period; /* 0: no step known */
  int steady;      /* warm-up is over */
  int64_t step_ns; /* median step duration */
  uint64_t fed;    /* operations fed to the learner */
  uint64_t boundaries;
  uint32_t held;    /* operations waiting for order */
  int64_t hold_ns;  /* how long they wait */
  uint32_t windows; /* windows opened */
} topo_sched_state;
void topo_sched_get(const topo_sched *s, topo_sched_state *out);
#endif
