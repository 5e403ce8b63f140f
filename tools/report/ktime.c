// SPDX-License-Identifier: Apache-2.0
// Time per kernel-type combination of one rank (kernels.h): a sweep over its GPU events, sorted
// by start through a bounded reorder heap, that adds each stretch of time to the combination of
// types running then (HTA's kernel-type table: computation, communication, memory and their
// overlaps; "other" events count only as busy), to the union of all events (busy), and to each
// step's busy, compute, communication and overlap. Memory: the reorder window and the open
// events. Called by kernels.c.
#include <string.h>

#include "alloc.h"
#include "kernels.h"

typedef struct tiv {
  int64_t start, stop;
  int type;
} tiv;

typedef struct tend {
  int64_t t;
  int type;
} tend;

struct rp_ktime {
  rp_heap pend, ends;
  int open[RP_K_TYPES];
  int64_t cursor;
  int started;
  int64_t busy, combo[8];
  uint64_t late;
  rp_gstep *steps;
  size_t nsteps, step_idx;
  int oom;
};

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
  t->nsteps = nsteps;
  return t;
}

/* Account [cursor, to) to what is open, then move the cursor. */
static void advance(rp_ktime *t, int64_t to) {
  int64_t a = t->cursor;
  if (to <= a) return;
  t->cursor = to;
  int mask =
      (t->open[RP_K_COMPUTE] > 0) | (t->open[RP_K_COMM] > 0) << 1 | (t->open[RP_K_MEMORY] > 0) << 2;
  if (!mask && !t->open[RP_K_OTHER]) return;
  int64_t d = to - a;
  t->busy += d;
  t->combo[mask] += d;
  while (t->step_idx < t->nsteps && t->steps[t->step_idx].stop <= a) t->step_idx++;
  for (size_t j = t->step_idx; j < t->nsteps && t->steps[j].start < to; j++) {
    rp_gstep *st = &t->steps[j];
    int64_t lo = a > st->start ? a : st->start, hi = to < st->stop ? to : st->stop;
    if (hi <= lo) continue;
    st->busy += hi - lo;
    if (mask & 1) st->compute += hi - lo;
    if (mask & 2) st->comm += hi - lo;
    if ((mask & 3) == 3) st->overlap += hi - lo;
  }
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
  *busy = t->busy;
  memcpy(combo, t->combo, sizeof t->combo);
  *late = t->late;
  return !t->oom;
}

void rp_ktime_free(rp_ktime *t) {
  if (!t) return;
  rp_heap_free(&t->pend);
  rp_heap_free(&t->ends);
  topo_free(t);
}
