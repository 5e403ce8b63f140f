// SPDX-License-Identifier: Apache-2.0
// Per-stream analyses of one rank (kernels.h): GPU events arrive in file order, are sorted by
// start through a bounded reorder heap, and each, in time order, gets its idle gap classified on
// HTA's definitions (host wait: its CPU launch began after the previous kernel on the stream
// ended; kernel wait: a gap shorter than 30 us; other: the rest) and, when its CPU call is a
// launch, is handed to launch.c for the launch delay and queue length. Called by kernels.c.
#include <string.h>

#include "alloc.h"
#include "kernel_stats.h"

struct rp_gstream_state {
  rp_heap pend;   /* rp_gevent by start */
  int64_t cursor; /* start of the last event taken out */
  int started, have_prev;
  int64_t prev_end; /* end of the previous kernel/memcpy/memset on the stream */
  rp_queue_state *queue;
};

static int ev_less(const void *a, const void *b) {
  const rp_gevent *x = a, *y = b;
  return x->start < y->start || (x->start == y->start && x->stop < y->stop);
}

rp_gstream_state *rp_gstream_state_new(size_t window) {
  rp_gstream_state *s = topo_calloc(1, sizeof *s);
  if (!s) return NULL;
  rp_heap_init(&s->pend, sizeof(rp_gevent), window, ev_less);
  if (!(s->queue = rp_queue_state_new(window))) {
    topo_free(s);
    return NULL;
  }
  return s;
}

/* One event in time order. */
static void take(rp_gstream_state *s, rp_gstream *out, const rp_gevent *e,
                 const rp_launch *(*find)(void *, int64_t), void *ctx) {
  if (s->started && e->start < s->cursor) out->late++;
  s->started = 1;
  if (e->start > s->cursor) s->cursor = e->start;
  out->events++;
  const rp_launch *l = e->has_call ? &e->call : e->corr >= 0 ? find(ctx, e->corr) : NULL;
  out->matched += l != NULL;
  if (e->idle_kind) {
    if (s->have_prev) {
      int64_t gap = e->start - s->prev_end;
      int cat = l && l->start > s->prev_end    ? RP_IDLE_HOST
                : gap < RP_GPU_KERNEL_DELAY_NS ? RP_IDLE_KERNEL
                                               : RP_IDLE_OTHER;
      if (gap < 0) {
        out->overlapped++;
      } else {
        out->idle[cat] = rp_add_sat(out->idle[cat], gap);
        out->gaps[cat]++;
      }
    }
    s->have_prev = 1;
    s->prev_end = e->stop;
  }
  if (l && l->is_launch) rp_launch_add(out, s->queue, e, l);
}

void rp_gstream_push(rp_gstream_state *s, rp_gstream *out, const rp_gevent *e,
                     const rp_launch *(*find)(void *, int64_t), void *ctx) {
  rp_gevent top;
  if (!rp_heap_push(&s->pend, e)) { /* no memory to sort: take it as it comes */
    take(s, out, e, find, ctx);
    return;
  }
  if (rp_heap_full(&s->pend) && rp_heap_pop(&s->pend, &top)) take(s, out, &top, find, ctx);
}

void rp_gstream_finish(rp_gstream_state *s, rp_gstream *out,
                       const rp_launch *(*find)(void *, int64_t), void *ctx) {
  rp_gevent e;
  while (rp_heap_pop(&s->pend, &e)) take(s, out, &e, find, ctx);
  rp_queue_finish(out, s->queue);
}

void rp_gstream_state_free(rp_gstream_state *s) {
  if (!s) return;
  rp_heap_free(&s->pend);
  rp_queue_state_free(s->queue);
  topo_free(s);
}

const char *rp_idle_name(int cat) {
  static const char *names[] = {"host wait", "kernel wait", "other"};
  return cat >= 0 && cat < RP_IDLE_CATS ? names[cat] : "?";
}
