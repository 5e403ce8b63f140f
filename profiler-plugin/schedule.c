// SPDX-License-Identifier: Apache-2.0
// The generation's schedule (schedule.h): the CUPTI timeline's start when due and its stop, and
// the step schedule (step_sched.h) fed from the records the writer drains, whose steps place
// CUPTI's windows, become STEP records and end start-up. The core begins and ends it under its
// mutex and stops it at the last finalize or exit; the writer's tick and observer run the rest
// on the writer thread.
#include "schedule.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "clock.h"
#include "contexts.h"
#include "env.h"
#include "sampling.h"
#include "settings.h"
#include "timeline.h"

/* CUPTI starts on the writer thread (cupti_tick) and stops on the stopping one
 * (topo_schedule_stop). cupti_state is generation << CUPTI_STATE_BITS | one of enum cupti_state;
 * cupti_lock orders the end of a start against a stop. */
static pthread_mutex_t cupti_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint cupti_state;
static _Atomic(int64_t) cupti_start_at; /* monotonic: the start is due, traffic or not */
static topo_comm *cupti_comm;           /* the process-wide CUPTI stream; NULL when CUPTI is off */
static topo_sched *sched; /* the step schedule (CUPTI windows, start-up's end), writer-owned */

/* The CUPTI start of a generation: IDLE -> STARTING (the writer loads CUPTI) -> STARTED (its
 * stream is open and its schedule runs) or OVER (the load declined); IDLE -> OVER when the last
 * finalize or exit comes first; STARTED -> OVER at the stop. A start begins only from IDLE and
 * finishes only from STARTING, so no start begins or finishes after a stop. The generation in the
 * high bits keeps a writer left behind by an earlier generation from finishing into this one. */
enum cupti_state { CUPTI_IDLE = 0, CUPTI_STARTING, CUPTI_STARTED, CUPTI_OVER };
#define CUPTI_STATE_BITS 2u
#define CUPTI_STATE_MASK ((1u << CUPTI_STATE_BITS) - 1)

/* Writer thread: load CUPTI and open the process-wide stream. `seen` is the IDLE state word. */
static void cupti_start(topo_writer *w, unsigned seen) {
  unsigned starting = (seen & ~CUPTI_STATE_MASK) | CUPTI_STARTING;
  if (!atomic_compare_exchange_strong(&cupti_state, &seen, starting)) return;
  /* dlopen of CUPTI takes milliseconds: outside the lock, which a stop takes. */
  int loaded = topo_timeline_load(cupti_comm);
  pthread_mutex_lock(&cupti_lock);
  if (atomic_load(&cupti_state) == starting) {
    if (loaded) {
      topo_writer_open(w, cupti_comm);
      topo_timeline_begin();
    }
    atomic_store(&cupti_state,
                 (starting & ~CUPTI_STATE_MASK) | (loaded ? CUPTI_STARTED : CUPTI_OVER));
  }
  pthread_mutex_unlock(&cupti_lock);
}

/* Writer tick: start CUPTI once it is due. In `window` mode without a trigger file that is the
 * first operation of >= TOPO_CUPTI_TRAFFIC_BYTES (the sampling room wakes the writer) or
 * TOPO_PROFILER_CUPTI_PERIOD_S after the first init, whichever comes first: until then the
 * process carries none of libcupti (2.4 MB resident) and no -cupti trace. Returns when it is due
 * (INT64_MAX once started or over). */
static int64_t cupti_tick(topo_writer *w, int64_t now) {
  unsigned s = atomic_load(&cupti_state);
  if ((s & CUPTI_STATE_MASK) != CUPTI_IDLE || !cupti_comm) return INT64_MAX;
  int64_t at = atomic_load_explicit(&cupti_start_at, memory_order_relaxed);
  if (now < at && !topo_sampling_traffic_seen()) return at;
  cupti_start(w, s);
  return INT64_MAX;
}

void topo_schedule_observe(void *steps, topo_comm *c, uint32_t life, const topo_trace_record *r,
                           int64_t now) {
  const topo_rec_coll *co = &r->coll;
  topo_sched_op op = {.comm_hash = c->hash,
                      .seq = co->seq,
                      .bytes = co->bytes,
                      .cpu_start_ns = co->cpu_start_ns,
                      .peer = co->peer,
                      .func = co->func,
                      .p2p = r->type == TOPO_REC_P2P,
                      .gpu_timed = (co->flags & TOPO_COLL_F_GPU_TIMED) != 0,
                      .slot = c->slot,
                      .life = life};
  topo_sched_add(steps, &op, now);
}

/* The step schedule's STEP records go into the trace of their boundary operation's comm. */
static void sched_emit(void *arg, uint32_t slot, uint32_t life, const topo_trace_record *r) {
  topo_writer_append_local(arg, slot, life, r, topo_clock_monotonic_ns());
}

int64_t topo_schedule_tick(topo_writer *w, int64_t now) {
  int64_t due = cupti_tick(w, now);
  if (sched) {
    int64_t held = topo_sched_poll(sched, now, sched_emit, w);
    if (held < due) due = held;
    if (topo_cfg.startup_ns) {
      int64_t until = topo_sampling_startup_tick(sched, now);
      if (until < due) due = until;
    }
  }
  topo_timeline_poll(now);
  int64_t timeline = topo_timeline_next_due();
  return timeline < due ? timeline : due;
}

void topo_schedule_begin(void) {
  /* The process-wide CUPTI stream: listed now, loaded and opened by the writer when due. */
  cupti_comm = NULL;
  atomic_store(
      &cupti_state,
      ((atomic_load(&cupti_state) >> CUPTI_STATE_BITS) + 1) << CUPTI_STATE_BITS | CUPTI_IDLE);
  atomic_store(&cupti_start_at, topo_clock_monotonic_ns() + topo_timeline_defer_ns());
  if (topo_cfg.cupti) {
    topo_comm *c = topo_contexts_take();
    if (c) {
      topo_contexts_clear(c);
      topo_contexts_open(c);
      c->rank = -1;
      snprintf(c->name, sizeof c->name, "cupti");
      atomic_store(&c->gpu_offset_best, INT64_MIN);
      c->header.flags = TOPO_TRACE_F_CUPTI;
      cupti_comm = c;
    } else {
      topo_cfg.cupti = 0; /* no slot: CUPTI off for this generation */
    }
  }
  /* The job's steps, learned on the writer thread: `window` mode's windows follow them, and
   * start-up ends when they are steady. Without memory for the learner (~200 KB) windows keep a
   * fixed length and start-up ends at once. */
  sched = NULL;
  int windowed = topo_cfg.cupti && topo_timeline_windowed();
  if (windowed || topo_cfg.startup_ns) {
    topo_sched_config sc;
    topo_sched_config_default(&sc, topo_env_int(TOPO_ENV_PROFILER_CUPTI_WINDOW_MS) * 1000000LL,
                              topo_env_int(TOPO_ENV_PROFILER_CUPTI_PERIOD_S) * 1000000000LL,
                              topo_cfg.gpu_timeout_ns);
    sc.steps = (uint32_t)topo_env_int(TOPO_ENV_PROFILER_CUPTI_STEPS);
    sc.startup_ns = topo_cfg.startup_ns;
    sched = topo_sched_new(&sc);
  }
  if (!sched) topo_sampling_set_startup(0);
  topo_timeline_set_sched(windowed ? sched : NULL);
}

topo_sched *topo_schedule_steps(void) { return sched; }

void topo_schedule_stop(int64_t wait_ns) {
  if (!cupti_comm) return;
  unsigned s = atomic_load(&cupti_state);
  unsigned gen = s & ~CUPTI_STATE_MASK;
  if ((s & CUPTI_STATE_MASK) == CUPTI_IDLE &&
      atomic_compare_exchange_strong(&cupti_state, &s, gen | CUPTI_OVER))
    return;
  struct timespec ms = {0, 1000000};
  for (int64_t t0 = topo_clock_monotonic_ns();
       atomic_load(&cupti_state) == (gen | CUPTI_STARTING) &&
       topo_clock_monotonic_ns() - t0 < wait_ns;)
    nanosleep(&ms, NULL);
  pthread_mutex_lock(&cupti_lock);
  if (atomic_load(&cupti_state) == (gen | CUPTI_STARTED)) topo_timeline_stop();
  atomic_store(&cupti_state, gen | CUPTI_OVER);
  pthread_mutex_unlock(&cupti_lock);
}

void topo_schedule_end(int writer_finished) {
  if (cupti_comm) {
    /* A finished writer closed it if CUPTI ever handed it over; if not, nobody holds it. */
    topo_contexts_end(cupti_comm);
    if (writer_finished) atomic_store(&cupti_comm->closed, 1);
    topo_contexts_retire(cupti_comm);
  }
  cupti_comm = NULL;
  /* A writer that did not finish may still be inside the schedule's calls: then it is kept. */
  topo_timeline_set_sched(NULL);
  if (writer_finished) topo_sched_free(sched);
  sched = NULL;
}
