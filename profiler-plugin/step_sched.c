// SPDX-License-Identifier: Apache-2.0
// The step schedule (step_sched.h): operations put back into enqueue order, the step learner fed
// with them, step records, and the CUPTI windows planned around the steps. The writer thread
// calls it (core.c wires it to the trace writer and to cupti.c).
#include "step_sched.h"

#include <string.h>

#include "alloc.h"
#include "step_learn.h"

#define HEAP_MAX    4096          /* operations held for order; more: the oldest goes on */
#define HOLD_MIN_NS 2000000LL     /* held at least this long after the largest lateness */
#define RECHECK_NS  20000000LL    /* a window waiting for a step or for its end looks this often */
#define LEAD_MIN_NS 1000000LL     /* a window opens at least this long before its first step */
#define TIME_MAX_NS 2000000000LL  /* a window without a step: min(cap, this) */
#define GAP_NS      5000000000LL  /* after the first window; doubles up to the period */
#define FALLBACK_NS 10000000000LL /* a due window waits this long for a steady step */

struct topo_sched {
  topo_sched_config cfg;
  topo_step_learner *learner; /* with the heap: NULL until the first operation (ready) */
  int broken;                 /* they could not be allocated */
  /* operations held for order: a min-heap by enqueue time */
  topo_sched_op *heap;
  uint32_t nheap;
  int64_t late[2];    /* the largest lateness seen in this and the previous second */
  int64_t late_since; /* when late[0] began */
  int timed_seen;     /* a GPU-timed record came: lateness is known */
  /* the learner's stream */
  topo_sched_op prev; /* the last operation fed: the one before a boundary */
  int have_prev;
  uint64_t fed, boundaries;
  uint32_t period;
  int steady;
  int writing; /* the step has been steady since it was found: its boundaries are written */
  int64_t step_ns;
  int64_t last_cut_t; /* enqueue of the operation before the last boundary */
  int64_t gpu_done_t; /* the latest enqueue among operations whose GPU work is over */
  /* start-up */
  int steady_seen; /* the step has been steady: start-up is over for good */
  int64_t first_t; /* enqueue of the first operation (INT64_MIN: none yet) */
  int64_t large_t; /* enqueue of the first operation of >= TOPO_TRACE_CUPTI_START_BYTES */
  /* the schedule */
  int begun;
  int64_t earliest;  /* the next window may open from here */
  int64_t wait_from; /* since when a window has been due */
  uint32_t windows;  /* opened since the schedule (re)started */
  uint32_t total;    /* opened in all */
  /* the open window */
  int open;
  uint8_t kind;
  int64_t opened;
  uint32_t want;  /* STEPS: whole steps */
  uint32_t seen;  /* STEPS: boundaries counted since it opened (its steps need want + 1) */
  int64_t last_b; /* STEPS: enqueue of the last boundary it needs */
};

void topo_sched_config_default(topo_sched_config *cfg, int64_t cap_ns, int64_t period_ns,
                               int64_t gpu_timeout_ns) {
  memset(cfg, 0, sizeof *cfg);
  cfg->cap_ns = cap_ns;
  cfg->period_ns = period_ns;
  cfg->first_gap_ns = GAP_NS < period_ns ? GAP_NS : period_ns;
  cfg->fallback_ns = FALLBACK_NS < period_ns ? FALLBACK_NS : period_ns;
  cfg->time_window_ns = cap_ns < TIME_MAX_NS ? cap_ns : TIME_MAX_NS;
  /* a record waiting for kernel channels is written at most the GPU timeout after its stop;
   * the writer passes over the ring at least every 25 ms */
  cfg->hold_max_ns = gpu_timeout_ns + 500000000LL;
  cfg->steps = 4;
}

topo_sched *topo_sched_new(const topo_sched_config *cfg) {
  topo_sched *s = topo_calloc(1, sizeof *s);
  if (!s) return NULL;
  s->cfg = *cfg;
  if (s->cfg.steps < 1) s->cfg.steps = 1;
  s->earliest = INT64_MAX;
  s->first_t = s->large_t = INT64_MIN;
  return s;
}

/* The learner and the heap (~400 KB) come with the first operation, on the caller's thread (the
 * writer's): a process without traffic carries none of it. 0 when they cannot be had: the
 * operations are then not learned from (no step: windows of a fixed length). */
static int ready(topo_sched *s) {
  if (s->learner) return 1;
  if (s->broken) return 0;
  topo_step_config lc = {.max_period = s->cfg.max_period};
  s->learner = topo_step_learn_new(&lc);
  s->heap = topo_malloc(HEAP_MAX * sizeof *s->heap);
  if (s->learner && s->heap) return 1;
  topo_step_learn_free(s->learner);
  topo_free(s->heap);
  s->learner = NULL;
  s->heap = NULL;
  s->broken = 1;
  return 0;
}

void topo_sched_free(topo_sched *s) {
  if (!s) return;
  topo_step_learn_free(s->learner);
  topo_free(s->heap);
  topo_free(s);
}

/* ---- the held operations */
static void heap_swap(topo_sched_op *a, topo_sched_op *b) {
  topo_sched_op t = *a;
  *a = *b;
  *b = t;
}

static void heap_push(topo_sched *s, const topo_sched_op *op) {
  uint32_t i = s->nheap++;
  s->heap[i] = *op;
  while (i && s->heap[(i - 1) / 2].cpu_start_ns > s->heap[i].cpu_start_ns) {
    heap_swap(&s->heap[(i - 1) / 2], &s->heap[i]);
    i = (i - 1) / 2;
  }
}

static topo_sched_op heap_pop(topo_sched *s) {
  topo_sched_op top = s->heap[0];
  s->heap[0] = s->heap[--s->nheap];
  for (uint32_t i = 0;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < s->nheap && s->heap[l].cpu_start_ns < s->heap[m].cpu_start_ns) m = l;
    if (r < s->nheap && s->heap[r].cpu_start_ns < s->heap[m].cpu_start_ns) m = r;
    if (m == i) break;
    heap_swap(&s->heap[m], &s->heap[i]);
    i = m;
  }
  return top;
}

/* How long an operation is held: the largest lateness of the last one to two seconds, and the
 * longest possible until the first GPU-timed record (the late ones) has shown how late they come. */
static int64_t hold_ns(const topo_sched *s) {
  if (!s->timed_seen) return s->cfg.hold_max_ns;
  int64_t h = (s->late[0] > s->late[1] ? s->late[0] : s->late[1]) + HOLD_MIN_NS;
  return h < s->cfg.hold_max_ns ? h : s->cfg.hold_max_ns;
}

/* ---- the learner's stream */
/* Operation op begins a step (ev): its record for the trace, and the open window's count. */
static void boundary(topo_sched *s, const topo_sched_op *op, const topo_step_event *ev,
                     topo_sched_emit_fn emit, void *arg) {
  s->boundaries++;
  s->last_cut_t = s->prev.cpu_start_ns;
  int counted = 0;
  if (s->open && s->kind == TOPO_CUPTI_WINDOW_STEPS && s->prev.cpu_start_ns >= s->opened &&
      s->seen <= s->want) {
    counted = 1;
    if (++s->seen == s->want + 1) s->last_b = op->cpu_start_ns;
  }
  if (!emit) return;
  topo_trace_record r;
  memset(&r, 0, sizeof r);
  r.step.type = TOPO_REC_STEP;
  r.step.flags =
      (uint8_t)((ev->steady ? TOPO_STEP_F_STEADY : 0) | (counted ? TOPO_STEP_F_WINDOW : 0));
  r.step.func = op->func;
  r.step.cut_func = s->prev.func;
  r.step.period = ev->period;
  r.step.seq = op->seq;
  r.step.cpu_start_ns = op->cpu_start_ns;
  r.step.cut_comm_hash = s->prev.comm_hash;
  r.step.cut_seq = s->prev.seq;
  r.step.cut_cpu_start_ns = s->prev.cpu_start_ns;
  r.step.step = ev->step;
  r.step.step_ns = ev->step_ns;
  emit(arg, op->slot, op->life, &r);
}

static void feed(topo_sched *s, const topo_sched_op *op, topo_sched_emit_fn emit, void *arg) {
  topo_step_op in = {.comm = op->comm_hash,
                     .bytes = op->bytes,
                     .t_ns = op->cpu_start_ns,
                     .peer = op->peer,
                     .func = op->func,
                     .p2p = op->p2p};
  topo_step_event ev;
  topo_step_learn_add(s->learner, &in, &ev);
  s->fed++;
  if (ev.found || ev.lost) s->writing = 0;
  if (ev.steady) s->writing = s->steady_seen = 1;
  s->period = ev.period;
  s->steady = ev.steady;
  s->step_ns = ev.step_ns;
  if (ev.boundary && s->have_prev) boundary(s, op, &ev, s->writing ? emit : NULL, arg);
  s->prev = *op;
  s->have_prev = 1;
}

void topo_sched_add(topo_sched *s, const topo_sched_op *op, int64_t now) {
  if (!ready(s)) return;
  if (s->first_t == INT64_MIN || op->cpu_start_ns < s->first_t) s->first_t = op->cpu_start_ns;
  if (op->bytes >= TOPO_TRACE_CUPTI_START_BYTES &&
      (s->large_t == INT64_MIN || op->cpu_start_ns < s->large_t))
    s->large_t = op->cpu_start_ns;
  int64_t late = now - op->cpu_start_ns;
  if (now - s->late_since >= 1000000000LL) {
    s->late[1] = now - s->late_since < 2000000000LL ? s->late[0] : 0;
    s->late[0] = 0;
    s->late_since = now;
  }
  if (late > s->late[0]) s->late[0] = late;
  s->timed_seen |= op->gpu_timed;
  if (op->gpu_timed && op->cpu_start_ns > s->gpu_done_t) s->gpu_done_t = op->cpu_start_ns;
  if (s->nheap == HEAP_MAX) {
    topo_sched_op oldest = heap_pop(s);
    feed(s, &oldest, NULL, NULL); /* its record is lost, the learner keeps the order */
  }
  heap_push(s, op);
}

int64_t topo_sched_poll(topo_sched *s, int64_t now, topo_sched_emit_fn emit, void *arg) {
  if (!s->learner) return INT64_MAX;
  int64_t hold = hold_ns(s);
  while (s->nheap && s->heap[0].cpu_start_ns <= now - hold) {
    topo_sched_op op = heap_pop(s);
    feed(s, &op, emit, arg);
  }
  return s->nheap ? s->heap[0].cpu_start_ns + hold : INT64_MAX;
}

/* ---- start-up */
int topo_sched_startup(topo_sched *s, int64_t now, int64_t *until) {
  *until = INT64_MAX;
  if (s->cfg.startup_ns <= 0 || s->broken || s->steady_seen) return 0;
  if (s->first_t == INT64_MIN) return 1; /* nothing seen yet: the first operations are measured */
  int64_t from = s->large_t != INT64_MIN ? s->large_t : s->first_t;
  int64_t end = from > INT64_MAX - s->cfg.startup_ns ? INT64_MAX : from + s->cfg.startup_ns;
  if (now >= end) return 0;
  *until = end;
  return 1;
}

/* ---- the windows */
void topo_sched_begin(topo_sched *s, int64_t now) {
  s->begun = 1;
  s->earliest = now;
  s->wait_from = 0;
  s->windows = 0;
}

void topo_sched_restart(topo_sched *s, int64_t now) {
  if (!s->begun || !s->windows) return;
  s->windows = 0;
  if (!s->open) {
    s->earliest = now;
    s->wait_from = 0;
  }
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Whole steps a window of the cap holds: one step of slack before the first (the window opens
 * ahead of a boundary) and one after the last (the GPU runs behind the enqueue). */
static uint32_t steps_fitting(const topo_sched *s) {
  uint32_t n = s->cfg.steps;
  while (n > 1 && (int64_t)(n + 2) * s->step_ns > s->cfg.cap_ns) n--;
  return n;
}

static void decide_closed(topo_sched *s, int64_t now, topo_sched_window *w) {
  if (!s->begun || now < s->earliest) {
    w->next = s->begun ? s->earliest : INT64_MAX;
    return;
  }
  if (!s->wait_from) s->wait_from = s->earliest;
  if (s->period && s->steady && s->step_ns > 0 && s->have_prev) {
    /* the next step's start as the learner predicts it: a whole number of steps after the last
     * boundary it saw (its view lags by the hold); the window opens a quarter step before */
    int64_t d = s->step_ns, lead = d / 4 > LEAD_MIN_NS ? d / 4 : LEAD_MIN_NS;
    int64_t k = now > s->last_cut_t ? (now - s->last_cut_t + d - 1) / d : 1;
    if (k < 1) k = 1;
    int64_t at = s->last_cut_t + k * d - lead;
    if (at > now) {
      w->next = at;
      return;
    }
    w->open = 1;
    w->kind = TOPO_CUPTI_WINDOW_STEPS;
    w->period = s->period;
    w->steps = steps_fitting(s);
    w->step_ns = d;
    w->next = now + RECHECK_NS;
    return;
  }
  /* No steady step: the first window of the schedule waits fallback_ns for one (a step that is
   * known but not steady yet - long steps take long to repeat - up to a period); a later one
   * opens for a fixed time at once, or waits fallback_ns for a known step to settle. */
  int64_t wait = s->period ? (s->windows ? s->cfg.fallback_ns : s->cfg.period_ns)
                           : (s->windows ? 0 : s->cfg.fallback_ns);
  if (now >= s->wait_from + wait) {
    w->open = 1;
    w->kind = TOPO_CUPTI_WINDOW_TIME;
    w->next = now + s->cfg.time_window_ns;
    return;
  }
  w->next = min64(s->wait_from + wait, now + RECHECK_NS);
}

static void decide_open(topo_sched *s, int64_t now, topo_sched_window *w) {
  w->kind = s->kind;
  w->open = 1;
  if (s->kind != TOPO_CUPTI_WINDOW_STEPS) {
    int64_t end = s->opened + s->cfg.time_window_ns;
    if (now >= end) w->open = 0;
    w->next = end;
    return;
  }
  int64_t cap = s->opened + s->cfg.cap_ns;
  if (now >= cap || !s->period) { /* the cap, or the step lost */
    w->open = 0;
    w->next = now;
    return;
  }
  if (s->seen == s->want + 1) {
    /* every step is enqueued; the GPU has done them once an operation enqueued as late as the
     * last boundary came back GPU-timed, or a step later without GPU timing */
    if (s->gpu_done_t >= s->last_b || now >= s->last_b + s->step_ns) {
      w->open = 0;
      w->next = now;
      return;
    }
  }
  w->next = min64(cap, now + RECHECK_NS);
}

void topo_sched_decide(topo_sched *s, int64_t now, topo_sched_window *w) {
  memset(w, 0, sizeof *w);
  w->next = INT64_MAX;
  if (s->open) decide_open(s, now, w);
  else decide_closed(s, now, w);
}

void topo_sched_opened(topo_sched *s, int64_t now, const topo_sched_window *w) {
  s->open = 1;
  s->kind = w->kind;
  s->opened = now;
  s->want = w->kind == TOPO_CUPTI_WINDOW_STEPS ? w->steps : 0;
  s->seen = 0;
  s->last_b = INT64_MAX;
  s->windows++;
  s->total++;
}

void topo_sched_closed(topo_sched *s, int64_t now, int retry) {
  s->open = 0;
  int64_t gap = s->cfg.first_gap_ns;
  for (uint32_t k = 1; k < s->windows && gap < s->cfg.period_ns; k++) gap *= 2;
  if (retry || gap > s->cfg.period_ns) gap = s->cfg.period_ns;
  /* from the window's start (a window every period), at least half a gap after its end */
  int64_t from_start = (s->total && !retry ? s->opened : now) + gap;
  s->earliest = from_start > now + gap / 2 ? from_start : now + gap / 2;
  s->wait_from = 0;
}

void topo_sched_get(const topo_sched *s, topo_sched_state *out) {
  out->period = s->period;
  out->steady = s->steady;
  out->step_ns = s->step_ns;
  out->fed = s->fed;
  out->boundaries = s->boundaries;
  out->held = s->nheap;
  out->hold_ns = hold_ns(s);
  out->windows = s->total;
}
