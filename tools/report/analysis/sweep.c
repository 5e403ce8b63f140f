// SPDX-License-Identifier: Apache-2.0
// The per-rank interval sweep: unions of communication, compute and memory intervals, their
// intersection, and the same figures inside each training step, in one pass over intervals that
// arrive nearly sorted. A min-heap of `reorder_window` intervals sorts them by start; a second
// heap holds the ends of open intervals. The same unions are also kept restricted to the
// coverage windows (where compute is recorded), and the comm time that only estimated intervals
// cover. A step's figures are differences of the running totals at its two ends, taken when the
// sweep passes them: steps may overlap or nest in any number, each costs O(1). Every figure is
// clipped to the figure window (rp_sweep_window); the overlap model's chunks (rp_sweep_chunks) get
// the covered communication and overlap of the whole input, so for a sweep with chunks the
// intervals outside the window that meet the coverage are swept too, for the chunks only.
// Memory: the two heaps (open intervals + window), the steps' and chunks' order by end, the
// coverage's running sums.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "report.h"
#include "report_analysis.h"

typedef struct end_ev {
  int64_t t;
  uint8_t cls;
  uint8_t est; /* an estimated comm interval */
} end_ev;

/* Ranges whose figures are differences of running totals at their ends: the steps (the figures'
 * totals) or the model's chunks (the covered totals of the whole input). */
typedef struct ends_list {
  rp_step *v;
  size_t n, next_start, next_stop;
  size_t *by_start, *by_stop; /* indices sorted by start, by stop */
} ends_list;

struct rp_sweep {
  rp_interval *pend;
  size_t npend, cap_pend, window;
  end_ev *ends;
  size_t nends, cap_ends;
  int64_t cursor;
  int started;
  int open[RP_CLASSES];
  int open_est; /* estimated comm intervals open */
  rp_times t;
  const int64_t *cover;
  size_t ncover, cover_idx;
  int64_t *cover_sum;        /* cover_sum[i]: length of the windows before window i */
  ends_list list[2];         /* the steps, the model's chunks */
  int64_t win_from, win_to;  /* the figure window */
  int64_t m_comm, m_overlap; /* covered comm and overlap of the whole input (the chunks' totals) */
  int64_t keep_from, keep_to;
  size_t keep_cap;
  rp_interval *kept;
  size_t nkept;
  uint64_t kept_dropped;
  int oom;
};

static int iv_less(const rp_interval *a, const rp_interval *b) {
  return a->start < b->start || (a->start == b->start && a->stop < b->stop);
}

static void pend_push(rp_sweep *s, const rp_interval *iv) {
  size_t i = s->npend++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!iv_less(iv, &s->pend[p])) break;
    s->pend[i] = s->pend[p];
    i = p;
  }
  s->pend[i] = *iv;
}

static rp_interval pend_pop(rp_sweep *s) {
  rp_interval top = s->pend[0];
  rp_interval last = s->pend[--s->npend];
  size_t i = 0, n = s->npend;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && iv_less(&s->pend[c + 1], &s->pend[c])) c++;
    if (!iv_less(&s->pend[c], &last)) break;
    s->pend[i] = s->pend[c];
    i = c;
  }
  if (n) s->pend[i] = last;
  return top;
}

static int end_push(rp_sweep *s, int64_t t, uint8_t cls, uint8_t est) {
  if (s->nends == s->cap_ends) {
    size_t cap = s->cap_ends ? s->cap_ends * 2 : 256;
    end_ev *e = topo_realloc(s->ends, cap * sizeof *e);
    if (!e) return 0;
    s->ends = e;
    s->cap_ends = cap;
  }
  size_t i = s->nends++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (s->ends[p].t <= t) break;
    s->ends[i] = s->ends[p];
    i = p;
  }
  s->ends[i].t = t;
  s->ends[i].cls = cls;
  s->ends[i].est = est;
  return 1;
}

static end_ev end_pop(rp_sweep *s) {
  end_ev top = s->ends[0];
  end_ev last = s->ends[--s->nends];
  size_t i = 0, n = s->nends;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && s->ends[c + 1].t < s->ends[c].t) c++;
    if (s->ends[c].t >= last.t) break;
    s->ends[i] = s->ends[c];
    i = c;
  }
  if (n) s->ends[i] = last;
  return top;
}

/* Account [a, b) (inside one coverage state, inside the figure window or outside it) under the
 * current open counts. */
static void account(rp_sweep *s, int64_t a, int64_t b, int covered, int inside) {
  int comm = s->open[RP_COMM] > 0, comp = s->open[RP_COMPUTE] > 0;
  int mem = s->open[RP_MEMORY] > 0, est = comm && s->open_est == s->open[RP_COMM];
  int64_t d = b - a;
  if (covered && comm) {
    s->m_comm += d;
    if (comp) s->m_overlap += d;
  }
  if (!inside) return;
  s->t.busy += d;
  if (comm) s->t.comm += d;
  if (est) s->t.comm_est += d;
  if (comp) s->t.compute += d;
  if (comm && comp) s->t.overlap += d;
  if (mem) s->t.memory += d;
  if (covered) {
    s->t.cov_busy += d;
    if (comm) s->t.cov_comm += d;
    if (comp) s->t.cov_compute += d;
    if (comm && comp) s->t.cov_overlap += d;
    if (mem) s->t.cov_memory += d;
  }
}

/* A step end: add (stop) or subtract (start) the running totals, so that after both ends each
 * figure holds what was accounted between them. A chunk (model) gets the covered totals of the
 * whole input in cov_comm and cov_overlap. */
static void step_end(const rp_sweep *s, rp_step *st, int64_t sign, int model) {
  if (model) {
    st->cov_comm += sign * s->m_comm;
    st->cov_overlap += sign * s->m_overlap;
    return;
  }
  st->busy += sign * s->t.busy;
  st->comm += sign * s->t.comm;
  st->comm_est += sign * s->t.comm_est;
  st->compute += sign * s->t.compute;
  st->overlap += sign * s->t.overlap;
  st->cov_busy += sign * s->t.cov_busy;
  st->cov_comm += sign * s->t.cov_comm;
  st->cov_compute += sign * s->t.cov_compute;
  st->cov_overlap += sign * s->t.cov_overlap;
}

/* The next end of list l not yet taken (INT64_MAX: none). */
static int64_t next_end(const ends_list *l) {
  int64_t ts = l->next_start < l->n ? l->v[l->by_start[l->next_start]].start : INT64_MAX;
  int64_t tp = l->next_stop < l->n ? l->v[l->by_stop[l->next_stop]].stop : INT64_MAX;
  return ts < tp ? ts : tp;
}

/* Take every step and chunk end at or before `upto`, in time order (INT64_MAX: all that are
 * left); the totals do not move between ends at one time, so ties need no order. */
static void step_ends(rp_sweep *s, int64_t upto) {
  for (int m = 0; m < 2; m++) {
    ends_list *l = &s->list[m];
    for (;;) {
      int64_t ts = l->next_start < l->n ? l->v[l->by_start[l->next_start]].start : INT64_MAX;
      int64_t tp = l->next_stop < l->n ? l->v[l->by_stop[l->next_stop]].stop : INT64_MAX;
      if (l->next_start < l->n && ts <= tp && ts <= upto)
        step_end(s, &l->v[l->by_start[l->next_start++]], -1, m);
      else if (l->next_stop < l->n && tp <= upto)
        step_end(s, &l->v[l->by_stop[l->next_stop++]], 1, m);
      else break;
    }
  }
}

/* Account [a, to) (inside the figure window or not) piece by piece along the coverage windows. */
static void along_cover(rp_sweep *s, int64_t a, int64_t to, int inside) {
  if (!inside && !s->list[1].n) return; /* outside the window only the chunks count */
  while (a < to) {
    while (s->cover_idx < s->ncover && s->cover[2 * s->cover_idx + 1] <= a) s->cover_idx++;
    if (s->cover_idx == s->ncover) {
      account(s, a, to, 0, inside);
      return;
    }
    int64_t ca = s->cover[2 * s->cover_idx], cb = s->cover[2 * s->cover_idx + 1];
    if (a < ca) { /* uncovered up to the next window */
      int64_t b = to < ca ? to : ca;
      account(s, a, b, 0, inside);
      a = b;
      continue;
    }
    int64_t b = to < cb ? to : cb;
    account(s, a, b, 1, inside);
    a = b;
  }
}

/* Account [a, to) under the current open counts: before, inside and after the figure window. */
static void account_range(rp_sweep *s, int64_t a, int64_t to) {
  if (!(s->open[RP_COMM] > 0 || s->open[RP_COMPUTE] > 0 || s->open[RP_MEMORY] > 0)) return;
  if (a < s->win_from) {
    int64_t b = to < s->win_from ? to : s->win_from;
    along_cover(s, a, b, 0);
    a = b;
  }
  if (a < to && a < s->win_to) {
    int64_t b = to < s->win_to ? to : s->win_to;
    along_cover(s, a, b, 1);
    a = b;
  }
  if (a < to) along_cover(s, a, to, 0);
}

/* Account [cursor, to), stopping at each step and chunk end on the way, then move the cursor.
 * (Ends before the cursor are those before the first interval: the totals are still 0 there.) */
static void advance(rp_sweep *s, int64_t to) {
  if (to <= s->cursor) return;
  for (;;) {
    int64_t u0 = next_end(&s->list[0]), u1 = next_end(&s->list[1]);
    int64_t u = u0 < u1 ? u0 : u1;
    if (u >= to) break;
    if (u > s->cursor) {
      account_range(s, s->cursor, u);
      s->cursor = u;
    }
    step_ends(s, u);
  }
  account_range(s, s->cursor, to);
  s->cursor = to;
}

static void process(rp_sweep *s, rp_interval iv) {
  while (s->nends && s->ends[0].t <= iv.start) {
    end_ev e = end_pop(s);
    advance(s, e.t);
    s->open[e.cls]--;
    s->open_est -= e.est;
  }
  if (!s->started) {
    s->started = 1;
    s->cursor = iv.start;
  }
  if (iv.start < s->cursor) {
    s->t.late += iv.stop > s->win_from && iv.start < s->win_to; /* late for the figures */
    if (iv.stop <= s->cursor) return;
    iv.start = s->cursor;
  }
  advance(s, iv.start);
  uint8_t est = iv.cls == RP_COMM && iv.origin == RP_FROM_ESTIMATE;
  if (!end_push(s, iv.stop, iv.cls, est)) {
    s->oom = 1;
    return;
  }
  s->open[iv.cls]++;
  s->open_est += est;
}

typedef struct end_key {
  int64_t t;
  size_t index;
} end_key;

static int cmp_end_key(const void *a, const void *b) {
  const end_key *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* order[k]: the index of the step with the k-th smallest start (stop = 0) or stop (stop = 1). */
static int step_order(const rp_step *steps, size_t n, int stop, size_t *order) {
  end_key *key = topo_malloc((n ? n : 1) * sizeof *key);
  if (!key) return 0;
  int sorted = 1;
  for (size_t i = 0; i < n; i++) {
    key[i] = (end_key){stop ? steps[i].stop : steps[i].start, i};
    sorted &= !i || key[i - 1].t <= key[i].t;
  }
  if (!sorted) qsort(key, n, sizeof *key, cmp_end_key); /* steps that do not nest come sorted */
  for (size_t i = 0; i < n; i++) order[i] = key[i].index;
  topo_free(key);
  return 1;
}

/* l holds `v` (n ranges) with its two orders; 0 out of memory. */
static int list_init(ends_list *l, rp_step *v, size_t n) {
  topo_free(l->by_start);
  topo_free(l->by_stop);
  memset(l, 0, sizeof *l);
  l->by_start = topo_malloc((n ? n : 1) * sizeof *l->by_start);
  l->by_stop = topo_malloc((n ? n : 1) * sizeof *l->by_stop);
  if (!l->by_start || !l->by_stop || !step_order(v, n, 0, l->by_start) ||
      !step_order(v, n, 1, l->by_stop))
    return 0;
  l->v = v;
  l->n = n;
  return 1;
}

rp_sweep *rp_sweep_new(size_t reorder_window, rp_step *steps, size_t nsteps) {
  rp_sweep *s = topo_calloc(1, sizeof *s);
  if (!s) return NULL;
  s->window = reorder_window ? reorder_window : 1;
  s->cap_pend = s->window + 1;
  s->pend = topo_malloc(s->cap_pend * sizeof *s->pend);
  if (!s->pend || !list_init(&s->list[0], steps, nsteps)) {
    rp_sweep_free(s);
    return NULL;
  }
  s->t.first = INT64_MAX;
  s->t.last = INT64_MIN;
  s->win_from = INT64_MIN;
  s->win_to = INT64_MAX;
  return s;
}

void rp_sweep_window(rp_sweep *s, int64_t from, int64_t to) {
  s->win_from = from;
  s->win_to = to;
}

void rp_sweep_chunks(rp_sweep *s, rp_step *chunks, size_t n) {
  if (!list_init(&s->list[1], chunks, n)) {
    s->list[1].n = 0;
    s->oom = 1;
  }
}

void rp_sweep_keep(rp_sweep *s, int64_t from, int64_t to, size_t cap) {
  s->keep_from = from;
  s->keep_to = to;
  s->keep_cap = cap;
}

void rp_sweep_cover(rp_sweep *s, const int64_t *win, size_t n) {
  topo_free(s->cover_sum);
  s->cover = win;
  s->ncover = n;
  s->cover_idx = 0;
  s->cover_sum = topo_malloc((n + 1) * sizeof *s->cover_sum);
  if (!s->cover_sum) {
    s->ncover = 0;
    s->oom = 1;
    return;
  }
  s->cover_sum[0] = 0;
  for (size_t i = 0; i < n; i++)
    s->cover_sum[i + 1] = s->cover_sum[i] + (win[2 * i + 1] - win[2 * i]);
}

/* Length of the coverage windows before t (binary search over them). */
static int64_t covered_before(const rp_sweep *s, int64_t t) {
  if (!s->cover_sum) return 0;
  size_t lo = 0, hi = s->ncover;
  while (lo < hi) { /* the first window ending after t */
    size_t m = lo + (hi - lo) / 2;
    if (s->cover[2 * m + 1] <= t) lo = m + 1;
    else hi = m;
  }
  int64_t v = s->cover_sum[lo];
  if (lo < s->ncover && t > s->cover[2 * lo]) v += t - s->cover[2 * lo];
  return v;
}

/* Length of [a, b) inside the coverage windows. */
static int64_t covered_in(const rp_sweep *s, int64_t a, int64_t b) {
  return b > a ? covered_before(s, b) - covered_before(s, a) : 0;
}

topo_status rp_sweep_add(rp_sweep *s, const rp_interval *iv) {
  if (iv->stop <= iv->start || iv->cls >= RP_CLASSES) return TOPO_OK; /* empty or unknown */
  rp_interval w = *iv; /* the part inside the figure window */
  if (w.start < s->win_from) w.start = s->win_from;
  if (w.stop > s->win_to) w.stop = s->win_to;
  int inside = w.stop > w.start;
  if (inside) {
    if (w.start < s->t.first) s->t.first = w.start;
    if (w.stop > s->t.last) s->t.last = w.stop;
    s->t.intervals[w.cls]++;
    if (s->keep_cap && w.stop > s->keep_from && w.start < s->keep_to) {
      if (s->nkept < s->keep_cap) {
        if (!s->kept) s->kept = topo_malloc(s->keep_cap * sizeof *s->kept);
        if (s->kept) s->kept[s->nkept++] = w;
      } else {
        s->kept_dropped++;
      }
    }
  }
  if (s->list[1].n) { /* the chunks see it whole, where it meets the coverage */
    if (!inside && !covered_in(s, iv->start, iv->stop)) return TOPO_OK;
    w = *iv;
  } else if (!inside) {
    return TOPO_OK;
  }
  pend_push(s, &w);
  if (s->npend > s->window) process(s, pend_pop(s));
  return s->oom ? TOPO_ERR_NOMEM : TOPO_OK;
}

void rp_sweep_finish(rp_sweep *s, rp_times *out) {
  while (s->npend) process(s, pend_pop(s));
  while (s->nends) {
    end_ev e = end_pop(s);
    advance(s, e.t);
    s->open[e.cls]--;
    s->open_est -= e.est;
  }
  step_ends(s, INT64_MAX);
  if (s->t.last > s->t.first) s->t.covered = covered_in(s, s->t.first, s->t.last);
  for (size_t j = 0; j < s->list[0].n; j++)
    s->list[0].v[j].covered = covered_in(s, s->list[0].v[j].start, s->list[0].v[j].stop);
  for (size_t j = 0; j < s->list[1].n; j++)
    s->list[1].v[j].covered = covered_in(s, s->list[1].v[j].start, s->list[1].v[j].stop);
  *out = s->t;
}

const rp_interval *rp_sweep_kept(const rp_sweep *s, size_t *n, uint64_t *dropped) {
  *n = s->nkept;
  *dropped = s->kept_dropped;
  return s->kept;
}

void rp_sweep_free(rp_sweep *s) {
  if (!s) return;
  topo_free(s->pend);
  topo_free(s->ends);
  topo_free(s->kept);
  for (int m = 0; m < 2; m++) topo_free(s->list[m].by_start), topo_free(s->list[m].by_stop);
  topo_free(s->cover_sum);
  topo_free(s);
}
