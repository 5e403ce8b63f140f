// SPDX-License-Identifier: Apache-2.0
// Launch delay and queue length of one stream (kernels.h), on HTA's definitions. Launch delay of
// a GPU event = its start - the end of the CPU call that launched it (the same correlation id),
// 0 when negative; outliers as HTA flags them (call > 50 us, delay > 100 us, GPU time shorter
// than the call). Queue length = launches so far - GPU starts so far on the stream, taken after
// each of those points in time order (HTA's series); the points are sorted through a bounded
// reorder heap. Called by idle.c as each event comes out in time order.
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "kernel_stats.h"

typedef struct qpoint {
  int64_t t;
  int delta; /* +1 launch, -1 GPU start */
} qpoint;

struct rp_queue_state {
  rp_heap pend;
  int64_t cursor, value;
  int started;
};

/* Time order; at the same time a launch counts before a start (an empty queue stays >= 0). */
static int q_less(const void *a, const void *b) {
  const qpoint *x = a, *y = b;
  return x->t < y->t || (x->t == y->t && x->delta > y->delta);
}

rp_queue_state *rp_queue_state_new(size_t window) {
  rp_queue_state *q = topo_calloc(1, sizeof *q);
  if (q) rp_heap_init(&q->pend, sizeof(qpoint), 2 * window, q_less);
  return q;
}

static void q_take(rp_gstream *out, rp_queue_state *q, const qpoint *p) {
  if (q->started && p->t < q->cursor) out->late++;
  q->started = 1;
  if (p->t > q->cursor) q->cursor = p->t;
  q->value += p->delta;
  int64_t v = q->value;
  if (!out->q_n || v < out->q_min) out->q_min = v;
  if (!out->q_n || v > out->q_max) out->q_max = v;
  out->q_n++;
  out->q_sum += (double)v;
  out->q_sumsq += (double)v * (double)v;
  rp_quant_add(&out->queue, v < 0 ? 0 : v);
}

static void q_push(rp_gstream *out, rp_queue_state *q, int64_t t, int delta) {
  qpoint p = {t, delta}, top;
  if (!rp_heap_push(&q->pend, &p)) {
    q_take(out, q, &p);
    return;
  }
  if (rp_heap_full(&q->pend) && rp_heap_pop(&q->pend, &top)) q_take(out, q, &top);
}

void rp_launch_add(rp_gstream *out, rp_queue_state *q, const rp_gevent *e, const rp_launch *l) {
  int64_t call_end = l->start + l->dur, gpu = e->stop - e->start;
  int64_t delay = e->start > call_end ? e->start - call_end : 0;
  rp_quant_add(&out->delay, delay);
  rp_quant_add(&out->cpu_dur, l->dur);
  rp_quant_add(&out->gpu_dur, gpu);
  out->runtime_outliers += l->dur > RP_GPU_RUNTIME_CUTOFF_NS;
  out->delay_outliers += delay > RP_GPU_DELAY_CUTOFF_NS;
  out->short_kernels += gpu < l->dur;
  q_push(out, q, l->start, +1);
  q_push(out, q, e->start, -1);
}

void rp_queue_finish(rp_gstream *out, rp_queue_state *q) {
  qpoint p;
  while (rp_heap_pop(&q->pend, &p)) q_take(out, q, &p);
}

void rp_queue_state_free(rp_queue_state *q) {
  if (!q) return;
  rp_heap_free(&q->pend);
  topo_free(q);
}
