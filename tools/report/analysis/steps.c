// SPDX-License-Identifier: Apache-2.0
// Steps from topo traces alone: a training job enqueues the same sequence of operations every
// step, over all of a rank's communicators (DDP's buckets, FSDP's per-layer AllGathers and
// ReduceScatters, TP and DP communicators interleaved, a pipeline stage's sends and receives).
// Pass 1 hands every collective and p2p record here (rp_steps_coll); each report rank's
// operations, put back into CPU enqueue order, go to the step learner (common/step_learn.h), the
// one the profiler uses to place its CUPTI windows, so both cut at the same place: a step begins
// at the operation after the step's longest host gap. Definitions: docs/metrics.md, "Steps".
//
// Each step ends where the next begins: at the end of the operation before its first one (the
// previous step's last) on the GPU where every such operation of the rank is GPU-timed, else at
// the GPU start of its first operation where every first operation is, else at the CPU enqueue
// ends of the operations before them - never a mix in one rank. Steps are numbered by the first
// operation's seq on its communicator over the operations of its kind per step, the same on every
// rank of the same job. A step the learner saw before the steady state (warm-up) is marked.
//
// Memory per report rank with operations, whatever the number of steps: the learner (~250 KB at
// a step of up to 2048 operations, less beyond 64 ranks), a copy of its history (48 bytes an
// operation) for the boundaries it finds looking back, the operations held for order (those
// enqueued within the last LATE_NS, at most a budget), the boundaries that may still be taken
// back (those within the history, and a found step's first ones until it is trusted), the current
// stretch's steps awaiting their warm-up judgement (at most WARM_KEEP, ~72 bytes each) and the
// judged steps' rows at each of the three cuts (at most RP_STEPS_KEEP each, ~40 bytes a row): ~1.1
// MB beside the learner at 2048. A boundary leaves once final, with the one before it as a step.
// Time: O(1) per operation once a step is known (O(max period) while searching, see
// step_learn.h), plus O(log held) for the order.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "report.h"
#include "report_analysis.h"
#include "step_learn.h"

#define LATE_NS     2000000000LL /* a record comes at most this late in its file (GPU-timed ones) */
#define IDLE_NS     60000000000LL /* a communicator this far behind the rank's latest is idle */
#define COMMS_MAX   64            /* communicators of a rank whose progress is followed */
#define HEAP_BUDGET (1u << 22)    /* operations held for order, over all ranks */
#define HEAP_MIN    4096u
#define PMAX_BUDGET (1u << 17) /* max_period summed over ranks (memory ~ 120 bytes each) */
#define PMAX_MIN    256u
#define SHORT_LOCK  9    /* boundaries a step found must have had when lost mid-stream */
#define WARM_KEEP   4096 /* steps of a stretch judged for warm-up over all of them (judge) */

/* One operation, as much of it as a step boundary needs. */
typedef struct st_op {
  int64_t cpu_start, cpu_stop, gpu_start, gpu_stop;
  uint64_t comm, seq, bytes;
  int32_t peer;
  uint8_t func, p2p, timed;
} st_op;

/* A boundary: the operation that begins a step and the one before it. */
typedef struct st_bound {
  st_op at, cut;  /* cut: nothing before `at` (the stream's first operation): `at` itself */
  uint64_t value; /* the step's number */
  uint64_t index; /* at's index in the learner's stream */
  uint32_t lock;  /* boundaries of one found step: steps join consecutive ones of the same */
  uint32_t period;
  uint8_t first;   /* the first boundary of its lock: its cut may be untimed (step 0's start) */
  uint8_t closing; /* no boundary: the end of the stream's last complete repetition (its cut) */
} st_bound;

/* A boundary once final (nothing can remove it any more): where it cuts each way (cut_at). */
typedef struct st_edge {
  int64_t cpu_start;
  int64_t cut[3];
  uint64_t value;
  uint32_t lock, period;
  uint8_t closing;
} st_edge;

/* A step (consecutive final boundaries of one lock), as its rows and its warm-up need it. */
typedef struct st_step {
  int64_t a[3], b[3]; /* where it begins and ends, by cut (INT64_MIN: not known that way) */
  int64_t dur;        /* boundary to boundary, CPU enqueue */
  uint64_t value;
  uint32_t period;
  uint8_t closing; /* its end closes the stretch */
} st_step;

/* A rank's step rows at one cut, grouped as rp_rank_add_step groups a rank's rows. */
typedef struct st_row {
  int64_t start, stop;
  uint64_t value, count;
  int32_t period, warmup;
} st_row;

typedef struct st_rows {
  st_row *v;
  size_t n, cap;
  int shift;
} st_rows;

typedef struct st_proc {
  topo_step_learner *l;
  st_op *heap; /* held for order: a min-heap by cpu_start */
  size_t nheap;
  int64_t newest; /* the latest cpu_start seen */
  /* How far the reader has come: the files are read merged by their frontier (a record's GPU
   * start where it is timed, else its CPU enqueue), a block at a time from the one furthest
   * behind, so the frontier of the file a record comes from, before that record, is behind
   * every file still read (by at most the span of a block: the profiler writes one at least
   * every TOPO_PROFILER_FLUSH_MS). Not the latest time seen: the file of a communicator used
   * once, at the end of the run (a barrier at exit), is read first. */
  int64_t reached;
  /* each communicator's latest cpu_start and frontier: its records come in its file's order, and
   * the files of a rank are read interleaved by time, so an operation is fed once every
   * communicator of the rank that is not idle (its latest IDLE_NS behind what the reader has
   * reached: its file has ended) has come LATE_NS past it */
  struct {
    uint64_t comm;
    int64_t latest, front;
  } seen[COMMS_MAX];
  int nseen;
  st_op *ring; /* the learner's history: operation x at x % hist */
  uint32_t hist;
  st_op prev;
  int have_prev;
  uint64_t fed;
  /* Boundaries not yet final: b[h..nb); b[i] is the rank's boundary number off + i (final ones
   * leave from the front, drain) */
  st_bound *b;
  size_t h, nb, cap_b;
  uint64_t off;
  uint32_t lock;     /* the current lock's number (0: none yet) */
  uint64_t per_step; /* operations of the boundary's kind per step (its seq advances by it) */
  int locked, trusted;
  uint64_t lock_from; /* the current lock's first boundary (its number) */
  size_t live;        /* its boundaries since it was found */
  uint64_t last_b;    /* index of its last boundary in the stream */
  uint32_t period;
  /* The last final boundary; the current stretch's steps awaiting their warm-up judgement
   * (judge_warmup): all of them, up to WARM_KEEP; past that (frozen) the last ones not yet
   * judged against the median of the first WARM_KEEP (med) */
  st_edge last;
  int have_last;
  st_step *warm;
  size_t nwarm;
  int frozen, settled;
  int64_t med;
  /* Judged steps: their rows at each cut, and what allowed_cut counts over them ([0] steady
   * steps, [1] all) */
  st_rows rows[3];
  size_t n_all[2], n_end[2], n_start[2];
  int any_steady;
  int cut, cut_start_ok; /* the cut its steps allow (allowed_cut) */
} st_proc;

struct rp_steps {
  int mode;            /* 0 auto, > 0 forced period */
  size_t heap_cap;     /* per rank */
  uint32_t max_period; /* per rank */
  st_proc *p;          /* by report rank */
  size_t np;
  size_t keep; /* step rows a rank keeps (RP_STEPS_KEEP; 0: all) */
  int oom;
};

rp_steps *rp_steps_new(int mode, size_t ntrackers) {
  if (mode < 0) return NULL;
  rp_steps *d = topo_calloc(1, sizeof *d);
  if (!d) return NULL;
  d->mode = mode;
  d->keep = RP_STEPS_KEEP;
  size_t n = ntrackers ? ntrackers : 1;
  d->heap_cap = HEAP_BUDGET / n > HEAP_MIN ? HEAP_BUDGET / n : HEAP_MIN;
  size_t pm = PMAX_BUDGET / n;
  if (pm > TOPO_STEP_MAX_PERIOD_DEFAULT) pm = TOPO_STEP_MAX_PERIOD_DEFAULT;
  if (pm < PMAX_MIN) pm = PMAX_MIN;
  d->max_period = (uint32_t)pm;
  return d;
}

static void proc_free(st_proc *p) {
  topo_step_learn_free(p->l);
  topo_free(p->heap);
  topo_free(p->ring);
  topo_free(p->b);
  topo_free(p->warm);
  for (int c = 0; c < 3; c++) topo_free(p->rows[c].v);
}

void rp_steps_free(rp_steps *d) {
  if (!d) return;
  for (size_t i = 0; i < d->np; i++) proc_free(&d->p[i]);
  topo_free(d->p);
  topo_free(d);
}

static st_proc *proc_get(rp_steps *d, int proc) {
  if ((size_t)proc >= d->np) {
    size_t n = (size_t)proc + 1;
    st_proc *v = topo_realloc(d->p, n * sizeof *v);
    if (!v) return NULL;
    memset(v + d->np, 0, (n - d->np) * sizeof *v);
    d->p = v;
    d->np = n;
  }
  st_proc *p = &d->p[proc];
  if (!p->l) {
    topo_step_config cfg = {.max_period = d->max_period,
                            .force_period = d->mode > 0 ? (uint32_t)d->mode : 0};
    p->l = topo_step_learn_new(&cfg);
    p->hist = p->l ? topo_step_learn_history(p->l) : 0;
    p->ring = p->l ? topo_malloc((size_t)p->hist * sizeof *p->ring) : NULL;
    p->heap = topo_malloc(d->heap_cap * sizeof *p->heap);
    if (!p->l || !p->ring || !p->heap) return NULL;
  }
  return p;
}

/* ---- operations held for order */
static void heap_push(st_proc *p, const st_op *op) {
  size_t i = p->nheap++;
  p->heap[i] = *op;
  while (i && p->heap[(i - 1) / 2].cpu_start > p->heap[i].cpu_start) {
    st_op t = p->heap[i];
    p->heap[i] = p->heap[(i - 1) / 2];
    p->heap[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
}

static st_op heap_pop(st_proc *p) {
  st_op top = p->heap[0];
  p->heap[0] = p->heap[--p->nheap];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < p->nheap && p->heap[l].cpu_start < p->heap[m].cpu_start) m = l;
    if (r < p->nheap && p->heap[r].cpu_start < p->heap[m].cpu_start) m = r;
    if (m == i) break;
    st_op t = p->heap[i];
    p->heap[i] = p->heap[m];
    p->heap[m] = t;
    i = m;
  }
  return top;
}

/* ---- judged steps: each rank's rows at each cut (kept as rp_rank_add_step keeps a rank's) */
enum { CUT_CPU = 0, CUT_GPU_END = 1, CUT_GPU_START = 2 };

static int cmp_row(const void *a, const void *b) { /* as analyze_summary.c's cmp_group */
  const st_row *x = a, *y = b;
  if (x->value != y->value) return x->value < y->value ? -1 : 1;
  if (x->warmup != y->warmup) return y->warmup - x->warmup;
  return (x->start > y->start) - (x->start < y->start);
}

static void rows_group(st_rows *l, int shift) {
  if (shift <= l->shift || shift > 63) return;
  l->shift = shift;
  for (size_t i = 0; i < l->n; i++) l->v[i].value = l->v[i].value >> shift << shift;
  qsort(l->v, l->n, sizeof *l->v, cmp_row);
  size_t n = 0;
  for (size_t i = 0; i < l->n; i++) {
    const st_row *st = &l->v[i];
    st_row *g = n ? &l->v[n - 1] : NULL;
    if (g && g->value == st->value && g->warmup == st->warmup) {
      if (st->start < g->start) g->start = st->start;
      if (st->stop > g->stop) g->stop = st->stop;
      g->count += st->count;
      continue;
    }
    l->v[n++] = *st;
  }
  l->n = n;
}

/* rp_rank_add_step's rule on a list of its own: the same rows, in the same order. */
static int rows_add(st_rows *l, const st_row *in, size_t keep) {
  st_row st = *in;
  st.value = st.value >> l->shift << l->shift;
  if (l->shift && l->n) {
    st_row *g = &l->v[l->n - 1];
    if (g->value == st.value && g->warmup == st.warmup) {
      if (st.start < g->start) g->start = st.start;
      if (st.stop > g->stop) g->stop = st.stop;
      g->count++;
      return 0;
    }
  }
  if (keep && l->n >= keep) {
    int shift = l->shift + 1;
    do rows_group(l, shift++);
    while (l->n >= keep && l->shift < 63);
    return rows_add(l, in, keep);
  }
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    if (keep && cap > keep) cap = keep;
    st_row *v = topo_realloc(l->v, cap * sizeof *v);
    if (!v) return -1;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = st;
  return 0;
}

/* A step judged (warm-up or steady): its rows, where its cut is known and it has a length (the
 * window clips later), and the counts allowed_cut needs. */
static void judged(rp_steps *d, st_proc *p, const st_step *s, int steady) {
  int end = s->a[CUT_GPU_END] != INT64_MIN && s->b[CUT_GPU_END] != INT64_MIN;
  int start = s->a[CUT_GPU_START] != INT64_MIN && (s->b[CUT_GPU_START] != INT64_MIN || s->closing);
  for (int k = !steady; k < 2; k++) {
    p->n_all[k]++;
    p->n_end[k] += end;
    p->n_start[k] += start;
  }
  p->any_steady |= steady;
  for (int c = 0; c < 3; c++) {
    if (s->a[c] == INT64_MIN || s->b[c] == INT64_MIN || s->b[c] <= s->a[c]) continue;
    st_row row = {.start = s->a[c],
                  .stop = s->b[c],
                  .value = s->value,
                  .count = 1,
                  .period = (int32_t)s->period,
                  .warmup = !steady};
    if (rows_add(&p->rows[c], &row, d->keep)) d->oom = 1;
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Within a factor of 1.5 of the median (in doubles: durations from a hostile trace may be near
 * the int64 limits; exact for any duration under 2^51 ns). */
static int settled(int64_t dur, int64_t med) {
  double x = (double)dur, m = (double)med;
  return 2 * x <= 3 * m && 3 * x >= 2 * m;
}

/* Warm-up, judged in hindsight over each stretch of one found step: the steps before the first
 * three in a row whose durations (boundary to boundary, CPU enqueue) lie within a factor of 1.5
 * of the stretch's median are warm-up; the rest are steady. The learner's own steady flag is
 * what a live reader could know (the profiler opens its windows on it); the report has the whole
 * run and judges the first steps by the ones that came after. A stretch of more than WARM_KEEP
 * steps is judged against the median of its first WARM_KEEP (docs/metrics.md, Steps). Judges the
 * n steps held (the whole stretch, or its first WARM_KEEP: `frozen`) and passes them on; when
 * frozen and none settled yet, keeps the last two (they may begin the first three). */
static void judge(rp_steps *d, st_proc *p, int frozen) {
  size_t n = p->nwarm;
  if (!n) return;
  int64_t *sorted = topo_malloc(n * sizeof *sorted);
  if (!sorted) {
    d->oom = 1;
    return;
  }
  for (size_t j = 0; j < n; j++) sorted[j] = p->warm[j].dur;
  qsort(sorted, n, sizeof *sorted, cmp_i64);
  int64_t med = sorted[(n - 1) / 2];
  topo_free(sorted);
  size_t first = n < 3 ? 0 : n; /* the first of three settled durations in a row */
  for (size_t j = 0; j + 2 < n && first == n; j++)
    if (settled(p->warm[j].dur, med) && settled(p->warm[j + 1].dur, med) &&
        settled(p->warm[j + 2].dur, med))
      first = j;
  size_t left = frozen && first == n ? 2 : 0;
  for (size_t j = 0; j + left < n; j++) judged(d, p, &p->warm[j], j >= first);
  if (left) memmove(p->warm, p->warm + n - left, left * sizeof *p->warm);
  p->nwarm = left;
  p->med = med;
  p->settled = first < n;
}

static void stretch_add(rp_steps *d, st_proc *p, const st_step *s) {
  if (p->frozen && p->settled) {
    judged(d, p, s, 1);
    return;
  }
  if (!p->warm) {
    p->warm = topo_malloc(WARM_KEEP * sizeof *p->warm);
    if (!p->warm) {
      d->oom = 1;
      return;
    }
  }
  p->warm[p->nwarm++] = *s;
  if (!p->frozen) {
    if (p->nwarm == WARM_KEEP) judge(d, p, p->frozen = 1);
    return;
  }
  if (p->nwarm < 3) return;
  int ok = 1;
  for (int i = 0; i < 3; i++) ok &= settled(p->warm[i].dur, p->med);
  if (ok) {
    for (int i = 0; i < 3; i++) judged(d, p, &p->warm[i], 1);
    p->nwarm = 0;
    p->settled = 1;
    return;
  }
  judged(d, p, &p->warm[0], 0);
  memmove(p->warm, p->warm + 1, 2 * sizeof *p->warm);
  p->nwarm = 2;
}

static void stretch_end(rp_steps *d, st_proc *p) {
  if (!p->frozen) judge(d, p, 0);
  for (size_t j = 0; j < p->nwarm; j++) judged(d, p, &p->warm[j], 0); /* never settled */
  p->nwarm = 0;
  p->frozen = p->settled = 0;
}

/* ---- the learner's stream */

/* Where boundary b cuts: the end of the operation before it, the start of its own, or the CPU
 * enqueue end of the one before it. INT64_MIN: not known that way. */
static int64_t cut_at(const st_bound *b, int cut) {
  switch (cut) {
  case CUT_GPU_END: return b->cut.timed ? b->cut.gpu_stop : b->first ? b->cut.cpu_stop : INT64_MIN;
  case CUT_GPU_START: return b->at.timed && !b->closing ? b->at.gpu_start : INT64_MIN;
  default: return b->cut.cpu_stop;
  }
}

/* A final boundary: with the one before it, of the same lock, a step of the current stretch;
 * else the stretch before it has ended. */
static void edge_add(rp_steps *d, st_proc *p, const st_bound *b) {
  st_edge e = {.cpu_start = b->at.cpu_start,
               .value = b->value,
               .lock = b->lock,
               .period = b->period,
               .closing = b->closing};
  for (int c = 0; c < 3; c++) e.cut[c] = cut_at(b, c);
  if (p->have_last && p->last.lock == e.lock) {
    st_step s = {.dur = rp_sub_sat(e.cpu_start, p->last.cpu_start),
                 .value = p->last.value,
                 .period = p->last.period,
                 .closing = e.closing};
    for (int c = 0; c < 3; c++) s.a[c] = p->last.cut[c], s.b[c] = e.cut[c];
    stretch_add(d, p, &s);
  } else if (p->have_last) {
    stretch_end(d, p);
  }
  p->last = e;
  p->have_last = 1;
}

/* Whether the front boundary b[h] is final: found() removes only boundaries that begin at or
 * after the earliest operation still in the learner's history (the stream comes in CPU enqueue
 * order, held for order), lost() only those of a lock not yet trusted with SHORT_LOCK boundaries.
 * `all`: the stream has ended. */
static int front_final(const st_proc *p, int all) {
  if (all) return 1;
  if (p->fed < p->hist) return 0;
  const st_bound *b = &p->b[p->h];
  uint64_t oldest = p->fed - p->hist + 1; /* the earliest a later step can be found from */
  if (b->index >= oldest || b->at.cpu_start >= p->ring[oldest % p->hist].cpu_start) return 0;
  return p->off + p->h < p->lock_from || !p->locked || (p->trusted && p->live >= SHORT_LOCK);
}

/* Final boundaries leave b[] in order, into steps. */
static void drain(rp_steps *d, st_proc *p, int all) {
  while (p->h < p->nb && !d->oom && front_final(p, all)) edge_add(d, p, &p->b[p->h++]);
}

static int same_kind(const st_op *a, const st_op *b) {
  return a->comm == b->comm && a->p2p == b->p2p && (a->p2p || a->func == b->func);
}

static void bound_add(rp_steps *d, st_proc *p, const st_op *at, const st_op *cut, uint32_t period,
                      uint64_t index, int closing) {
  if (p->nb == p->cap_b && p->h) { /* the drained front makes room */
    memmove(p->b, p->b + p->h, (p->nb - p->h) * sizeof *p->b);
    p->nb -= p->h;
    p->off += p->h;
    p->h = 0;
  }
  if (p->nb == p->cap_b) {
    size_t cap = p->cap_b ? 2 * p->cap_b : 64;
    st_bound *v = topo_realloc(p->b, cap * sizeof *v);
    if (!v) {
      d->oom = 1;
      return;
    }
    p->b = v;
    p->cap_b = cap;
  }
  st_bound *b = &p->b[p->nb++];
  memset(b, 0, sizeof *b);
  b->at = *at;
  b->first = p->off + p->nb - 1 == p->lock_from;
  if (cut) {
    b->cut = *cut;
  } else { /* nothing before it: the step begins at its own start */
    b->cut = *at;
    b->cut.cpu_stop = at->cpu_start;
    b->cut.gpu_stop = at->gpu_start;
  }
  b->lock = p->lock;
  b->period = period;
  b->index = index;
  b->closing = (uint8_t)closing;
  b->value = p->per_step ? at->seq / p->per_step : 0;
}

/* Found at operation `cur`: the kind of its boundaries per step, and the boundaries before it. */
static void found(rp_steps *d, st_proc *p, uint64_t cur, uint32_t period) {
  p->lock++;
  p->locked = 1;
  p->trusted = 0;
  p->period = period;
  uint64_t first, count;
  if (!topo_step_learn_backfill(p->l, &first, &count)) first = cur, count = 0;
  /* The stretch the step was found in explains its time with this step: boundaries of earlier
   * steps inside it were of a pattern the stretch shows was not the step (a false start). */
  int64_t from = p->ring[(count ? first : cur) % p->hist].cpu_start;
  while (p->nb > p->h && p->b[p->nb - 1].at.cpu_start >= from) p->nb--;
  p->lock_from = p->off + p->nb;
  p->live = 0;
  const st_op *b0 = &p->ring[first % p->hist];
  p->per_step = 0;
  for (uint64_t x = first; x < first + period && x <= cur; x++)
    p->per_step += same_kind(&p->ring[x % p->hist], b0);
  for (uint64_t k = 0; k < count; k++) {
    uint64_t x = first + k * period;
    if (x && cur - (x - 1) >= p->hist) continue; /* the operation before it is forgotten */
    bound_add(d, p, &p->ring[x % p->hist], x ? &p->ring[(x - 1) % p->hist] : NULL, period, x, 0);
    p->last_b = x;
  }
}

/* The step was lost (`end`: the stream ended): a lock never trusted, or lost mid-stream after
 * fewer than SHORT_LOCK boundaries since it was found (a pattern inside a step, taken in a job's
 * first step, ends in the next; a real step lasts) leaves no steps; else it ends with its last
 * complete repetition. */
static void lost(rp_steps *d, st_proc *p, int end) {
  if (!p->trusted || (!end && p->live < SHORT_LOCK)) {
    if (p->lock_from >= p->off + p->h) p->nb = (size_t)(p->lock_from - p->off);
  } else if (p->have_prev && p->fed - p->last_b == p->period && p->off + p->nb) {
    /* the repetition after the last boundary was whole: it ends at its last operation */
    bound_add(d, p, &p->prev, &p->prev, p->period, p->fed - 1, 1);
  }
  p->locked = p->trusted = 0;
}

static void feed(rp_steps *d, st_proc *p, const st_op *op) {
  topo_step_op in = {.comm = op->comm,
                     .bytes = op->bytes,
                     .t_ns = op->cpu_start,
                     .peer = op->peer,
                     .func = op->func,
                     .p2p = op->p2p};
  topo_step_event ev;
  topo_step_learn_add(p->l, &in, &ev);
  p->ring[ev.index % p->hist] = *op;
  if (ev.lost) lost(d, p, 0);
  if (ev.found) found(d, p, ev.index, ev.period);
  if (ev.boundary) {
    bound_add(d, p, op, p->have_prev ? &p->prev : NULL, ev.period, ev.index, 0);
    p->last_b = ev.index;
    p->live++;
  }
  p->trusted |= ev.trusted;
  p->prev = *op;
  p->have_prev = 1;
  p->fed++;
  drain(d, p, 0);
}

void rp_steps_set_cap(rp_steps *d, size_t cap) {
  if (d && cap >= 16) d->heap_cap = cap;
}

void rp_steps_set_keep(rp_steps *d, size_t keep) {
  if (d) d->keep = keep;
}

size_t rp_steps_bytes(const rp_steps *d) {
  size_t n = 0;
  for (size_t i = 0; d && i < d->np; i++) {
    const st_proc *p = &d->p[i];
    n += p->cap_b * sizeof *p->b + (p->warm ? WARM_KEEP * sizeof *p->warm : 0);
    for (int c = 0; c < 3; c++) n += p->rows[c].cap * sizeof *p->rows[c].v;
  }
  return n;
}

void rp_steps_coll(rp_steps *d, size_t comm, int nranks, int rank, int proc, const rp_coll *co) {
  (void)comm;
  (void)nranks;
  if (!d || d->oom || proc < 0 || rank < 0) return;
  st_proc *p = proc_get(d, proc);
  if (!p) {
    d->oom = 1;
    return;
  }
  st_op op = {.cpu_start = co->cpu_start,
              .cpu_stop = co->cpu_stop > co->cpu_start ? co->cpu_stop : co->cpu_start,
              .gpu_start = co->timed ? co->gpu_start : 0,
              .gpu_stop = co->timed ? co->gpu_stop : 0,
              .comm = co->comm,
              .seq = co->seq,
              .bytes = co->bytes,
              .peer = co->p2p ? co->peer : -1,
              .func = (uint8_t)(co->func >= 0 && co->func < 256 ? co->func : 255),
              .p2p = (uint8_t)(co->p2p != 0),
              .timed = (uint8_t)(co->timed && co->gpu_stop > co->gpu_start && co->gpu_start > 0)};
  if (op.cpu_start > p->newest) p->newest = op.cpu_start;
  int c = 0;
  while (c < p->nseen && p->seen[c].comm != op.comm) c++;
  if (c == p->nseen && c < COMMS_MAX) {
    p->seen[p->nseen++].comm = op.comm;
    p->seen[c].latest = 0;
    p->seen[c].front = INT64_MIN;
  }
  if (c < p->nseen) {
    int64_t front = co->timed ? co->gpu_start : co->cpu_start;
    if (p->seen[c].front > p->reached) p->reached = p->seen[c].front;
    if (front > p->seen[c].front) p->seen[c].front = front;
    if (op.cpu_start > p->seen[c].latest) p->seen[c].latest = op.cpu_start;
  }
  if (p->nheap == d->heap_cap) {
    st_op oldest = heap_pop(p);
    feed(d, p, &oldest);
  }
  heap_push(p, &op);
  int64_t mark = p->newest;
  for (int i = 0; i < p->nseen; i++)
    if (p->seen[i].latest >= p->reached - IDLE_NS && p->seen[i].latest < mark)
      mark = p->seen[i].latest;
  while (p->nheap && p->heap[0].cpu_start < mark - LATE_NS) {
    st_op next = heap_pop(p);
    feed(d, p, &next);
  }
}

/* ---- after pass 1: each rank's steps */

/* The cut a rank's steps allow: GPU times where (nearly) every boundary of its steady steps has
 * them: the steps then cut the GPU timeline between the same phases of the job every time (the
 * CPU runs ahead of the GPU by a varying queue); a step that cannot be cut so is left out
 * (warm-up, while the sampling's prediction of the next operation is still learning, or a
 * boundary it did not time). Without steady steps, over all of them. The end of a step's last
 * operation first, the start of its first next (*start_ok: that one is allowed). */
static int allowed_cut(const st_proc *p, int *start_ok) {
  int k = !p->any_steady;
  size_t all = p->n_all[k], gpu_end = p->n_end[k], gpu_start = p->n_start[k];
  /* >= 90 %: a boundary the sampling did not time now and then leaves its step out */
  *start_ok = all && gpu_start * 10 >= all * 9;
  return !all                      ? CUT_CPU
         : gpu_end * 10 >= all * 9 ? CUT_GPU_END
         : *start_ok               ? CUT_GPU_START
                                   : CUT_CPU;
}

/* Rank k's steps: the rows of the cut chosen (the storage: report.h, RP_STEPS_KEEP). */
static topo_status rows_to_rank(rp_rank *k, const st_rows *l, size_t keep) {
  rp_rank_group_steps(k, l->shift); /* the rows are groups of 2^shift: so are the rank's */
  for (size_t i = 0; i < l->n; i++) {
    const st_row *w = &l->v[i];
    rp_step st = {.start = w->start,
                  .stop = w->stop,
                  .value = w->value,
                  .count = w->count,
                  .period = w->period,
                  .warmup = w->warmup};
    if (rp_rank_add_step(k, &st, keep) != TOPO_OK) return TOPO_ERR_NOMEM;
  }
  return TOPO_OK;
}

topo_status rp_steps_finish(rp_steps *d, rp_report *r) {
  if (!d) return TOPO_OK;
  for (size_t i = 0; i < d->np; i++) {
    st_proc *p = &d->p[i];
    while (p->nheap && !d->oom) {
      st_op next = heap_pop(p);
      feed(d, p, &next);
    }
    if (p->locked) lost(d, p, 1); /* the stream ends: as if the step were lost there */
    drain(d, p, 1);
    if (!d->oom) stretch_end(d, p);
  }
  if (d->oom) return TOPO_ERR_NOMEM;
  /* The cut each rank allows; one for all where every rank allows it (a step then holds the
   * same phases of the job on every rank), else each rank its own. */
  int tried = 0, all_end = 1, all_start = 1;
  for (int pi = 0; pi < r->nranks; pi++) {
    st_proc *p = (size_t)pi < d->np ? &d->p[pi] : NULL;
    if (r->ranks[pi].nsteps || !p || !p->fed) continue; /* Kineto steps or step marks win */
    p->cut = allowed_cut(p, &p->cut_start_ok);
    all_end &= p->cut == CUT_GPU_END;
    all_start &= p->cut_start_ok;
  }
  for (int pi = 0; pi < r->nranks; pi++) {
    rp_rank *k = &r->ranks[pi];
    st_proc *p = (size_t)pi < d->np ? &d->p[pi] : NULL;
    if (k->nsteps || !p || !p->fed) continue;
    tried = 1;
    int cut = all_end ? CUT_GPU_END : all_start ? CUT_GPU_START : p->cut;
    k->steps_gpu = cut;
    if (rows_to_rank(k, &p->rows[cut], r->steps_keep) != TOPO_OK) return TOPO_ERR_NOMEM;
  }
  /* the period most ranks' steps have (ranks may differ: a rank of another job) */
  struct {
    int period;
    size_t steps;
  } tally[16];
  int nt = 0;
  for (int pi = 0; pi < r->nranks; pi++) {
    const rp_rank *k = &r->ranks[pi];
    if (!k->nsteps || !k->steps[0].period) continue;
    int t = 0;
    while (t < nt && tally[t].period != k->steps[0].period) t++;
    if (t == nt && nt < 16) tally[nt].period = k->steps[0].period, tally[nt++].steps = 0;
    if (t < nt) tally[t].steps += k->nsteps;
  }
  for (int t = 0, most = -1; t < nt; t++)
    if (most < 0 || tally[t].steps > tally[most].steps) most = t, r->step_period = tally[t].period;
  if (tried) r->steps_detect = r->step_period ? RP_STEPS_FOUND : RP_STEPS_NONE;
  return TOPO_OK;
}

/* ---- for the renderers */
const char *rp_steps_origin(const rp_report *r, char *buf, size_t len) {
  int kin = 0, per = 0, mark = 0, per_end = 0, per_start = 0;
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    if (!k->nsteps) continue;
    if (k->steps[0].from_kineto) kin++;
    else if (k->steps[0].period) {
      per++;
      per_end += k->steps_gpu == CUT_GPU_END;
      per_start += k->steps_gpu == CUT_GPU_START;
    } else {
      mark++;
    }
  }
  size_t o = 0;
  buf[0] = 0;
  const char *sep = "";
#define ST_APPEND(...)                                 \
  do {                                                 \
    if (o < len) {                                     \
      int w = snprintf(buf + o, len - o, __VA_ARGS__); \
      o += w > 0 ? (size_t)w : 0;                      \
    }                                                  \
  } while (0)
  if (kin) {
    ST_APPEND("%sfrom Kineto ProfilerSteps (%d rank%s)", sep, kin, kin == 1 ? "" : "s");
    sep = "; ";
  }
  if (mark) {
    ST_APPEND("%sfrom topo step marks (%d rank%s)", sep, mark, mark == 1 ? "" : "s");
    sep = "; ";
  }
  if (per)
    ST_APPEND("%sfrom topo traces (period %d operations, %d rank%s; %s)", sep, r->step_period, per,
              per == 1 ? "" : "s",
              per_end == per     ? "cut at the GPU end of each step's last operation"
              : per_start == per ? "cut at the GPU start of each step's first operation"
              : per_end + per_start
                  ? "cut at GPU times, on ranks with untimed boundary operations at CPU enqueue "
                    "times"
                  : "cut at CPU enqueue times");
#undef ST_APPEND
  return buf;
}
