// SPDX-License-Identifier: Apache-2.0
// Time per kernel-type combination of one rank (kernels.h): a sweep over its GPU events, sorted
// by start through a bounded reorder heap, that adds each stretch of time to the combination of
// types running then (HTA's kernel-type table: computation, communication, memory and their
// overlaps; "other" events count only as busy), to the union of all events (busy), and to each
// step's busy, compute, communication and overlap: running totals read as the sweep passes each
// step's start and stop (a step gets the difference), so nested or long steps cost nothing per
// stretch of time. Memory: the reorder window, the open events and two ends per step. Called by
// kernels.c.
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "kernel_stats.h"

typedef struct tiv {
  int64_t start, stop;
  int type;
} tiv;

typedef struct tend {
  int64_t t;
  int type;
} tend;

/* A step's start (sign -1) or stop (+1): where the running totals are read into it. */
typedef struct step_end {
  int64_t t;
  uint32_t step;
  int32_t sign;
} step_end;

/* Running totals since the sweep began: busy, compute, communication, overlap. */
typedef struct totals {
  int64_t busy, compute, comm, overlap;
} totals;

struct rp_ktime {
  rp_heap pend, ends;
  int open[RP_K_TYPES];
  int64_t cursor;
  int started;
  int64_t busy, combo[8];
  uint64_t late;
  rp_gstep *steps;
  step_end *step_ends; /* sorted by time */
  size_t nends, next_end;
  totals sum;
  int oom;
};

static int cmp_step_end(const void *a, const void *b) {
  const step_end *x = a, *y = b;
  return (x->t > y->t) - (x->t < y->t);
}

static int iv_less(const void *a, const void *b) {
  const tiv *x = a, *y = b;
  return x->start < y->start || (x->start == y->start && x->stop < y->stop);
}

static int end_less(const void *a, const void *b) {
  return ((const tend *)a)->t < ((const tend *)b)->t;
}

rp_ktime *rp_ktime_new(size_t window, rp_gstep *steps, size_t nsteps) {
  rp_ktime *t = topo_calloc(1, sizeof *t);
  if (!t) return NULL;
  rp_heap_init(&t->pend, sizeof(tiv), window, iv_less);
  rp_heap_init(&t->ends, sizeof(tend), (size_t)-1, end_less);
  t->steps = steps;
  if (nsteps && !(t->step_ends = topo_malloc(2 * nsteps * sizeof *t->step_ends))) {
    rp_ktime_free(t);
    return NULL;
  }
  for (size_t i = 0; i < nsteps; i++)
    if (steps[i].stop > steps[i].start) { /* an empty or inverted step gets nothing */
      t->step_ends[t->nends++] = (step_end){steps[i].start, (uint32_t)i, -1};
      t->step_ends[t->nends++] = (step_end){steps[i].stop, (uint32_t)i, 1};
    }
  if (t->nends) qsort(t->step_ends, t->nends, sizeof *t->step_ends, cmp_step_end);
  return t;
}

/* The step ends at or before `upto` not yet read: each takes the running totals, its stop adding
 * them to the step and its start taking them away. */
static void read_step_ends(rp_ktime *t, int64_t upto) {
  for (; t->next_end < t->nends && t->step_ends[t->next_end].t <= upto; t->next_end++) {
    const step_end *e = &t->step_ends[t->next_end];
    rp_gstep *st = &t->steps[e->step];
    st->busy += e->sign * t->sum.busy;
    st->compute += e->sign * t->sum.compute;
    st->comm += e->sign * t->sum.comm;
    st->overlap += e->sign * t->sum.overlap;
  }
}

/* d ns of the type combination `mask` (any: something runs). */
static void account(rp_ktime *t, int mask, int any, int64_t d) {
  if (!any || d <= 0) return;
  t->busy += d;
  t->combo[mask] += d;
  t->sum.busy += d;
  if (mask & 1) t->sum.compute += d;
  if (mask & 2) t->sum.comm += d;
  if ((mask & 3) == 3) t->sum.overlap += d;
}

/* Account [cursor, to) to what is open, reading the step ends inside it on the way, then move the
 * cursor. */
static void advance(rp_ktime *t, int64_t to) {
  int64_t a = t->cursor;
  if (to <= a) return;
  t->cursor = to;
  int mask =
      (t->open[RP_K_COMPUTE] > 0) | (t->open[RP_K_COMM] > 0) << 1 | (t->open[RP_K_MEMORY] > 0) << 2;
  int any = mask || t->open[RP_K_OTHER];
  while (t->next_end < t->nends && t->step_ends[t->next_end].t <= to) {
    int64_t b = t->step_ends[t->next_end].t;
    if (b > a) account(t, mask, any, b - a), a = b;
    read_step_ends(t, b);
  }
  account(t, mask, any, to - a);
}

static void process(rp_ktime *t, tiv iv) {
  tend e;
  while (t->ends.n && ((const tend *)t->ends.v)->t <= iv.start && rp_heap_pop(&t->ends, &e)) {
    advance(t, e.t);
    t->open[e.type]--;
  }
  if (!t->started) {
    t->started = 1;
    t->cursor = iv.start;
  }
  if (iv.start < t->cursor) {
    t->late++;
    if (iv.stop <= t->cursor) return;
    iv.start = t->cursor;
  }
  advance(t, iv.start);
  tend ne = {iv.stop, iv.type};
  if (!rp_heap_push(&t->ends, &ne)) {
    t->oom = 1;
    return;
  }
  t->open[iv.type]++;
}

int rp_ktime_add(rp_ktime *t, int64_t start, int64_t stop, int type) {
  if (stop <= start || type < 0 || type >= RP_K_TYPES) return 1;
  tiv iv = {start, stop, type}, top;
  if (!rp_heap_push(&t->pend, &iv)) {
    process(t, iv);
    return !t->oom;
  }
  if (rp_heap_full(&t->pend) && rp_heap_pop(&t->pend, &top)) process(t, top);
  return !t->oom;
}

int rp_ktime_finish(rp_ktime *t, int64_t *busy, int64_t combo[8], uint64_t *late) {
  tiv iv;
  tend e;
  while (rp_heap_pop(&t->pend, &iv)) process(t, iv);
  while (rp_heap_pop(&t->ends, &e)) {
    advance(t, e.t);
    t->open[e.type]--;
  }
  read_step_ends(t, INT64_MAX);
  *busy = t->busy;
  memcpy(combo, t->combo, sizeof t->combo);
  *late = t->late;
  return !t->oom;
}

void rp_ktime_free(rp_ktime *t) {
  if (!t) return;
  rp_heap_free(&t->pend);
  rp_heap_free(&t->ends);
  topo_free(t->step_ends);
  topo_free(t);
}
