// SPDX-License-Identifier: Apache-2.0
// The per-rank interval sweep: unions of communication, compute and memory intervals, their
// intersection, and the same figures inside each training step, in one pass over intervals that
// arrive nearly sorted. A min-heap of `reorder_window` intervals sorts them by start; a second
// heap holds the ends of open intervals. The same unions are also kept restricted to the
// coverage windows (where compute is recorded), and the comm time that only estimated intervals
// cover. Memory: the two heaps (open intervals + window).
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "report.h"

typedef struct end_ev {
  int64_t t;
  uint8_t cls;
  uint8_t est;     /* an estimated comm interval */
} end_ev;

struct rp_sweep {
  rp_interval *pend;
  size_t npend, cap_pend, window;
  end_ev *ends;
  size_t nends, cap_ends;
  int64_t cursor;
  int started;
  int open[RP_CLASSES];
  int open_est;    /* estimated comm intervals open */
  rp_times t;
  const int64_t *cover;
  size_t ncover, cover_idx;
  rp_step *steps;
  size_t nsteps, step_idx;
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

/* Account [a, b) (inside one coverage state) under the current open counts. */
static void account(rp_sweep *s, int64_t a, int64_t b, int covered) {
  int comm = s->open[RP_COMM] > 0, comp = s->open[RP_COMPUTE] > 0;
  int mem = s->open[RP_MEMORY] > 0, est = comm && s->open_est == s->open[RP_COMM];
  int64_t d = b - a;
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
  while (s->step_idx < s->nsteps && s->steps[s->step_idx].stop <= a) s->step_idx++;
  for (size_t j = s->step_idx; j < s->nsteps && s->steps[j].start < b; j++) {
    rp_step *st = &s->steps[j];
    int64_t lo = a > st->start ? a : st->start, hi = b < st->stop ? b : st->stop;
    if (hi <= lo) continue;
    int64_t w = hi - lo;
    st->busy += w;
    if (comm) st->comm += w;
    if (est) st->comm_est += w;
    if (comp) st->compute += w;
    if (comm && comp) st->overlap += w;
    if (!covered) continue;
    st->cov_busy += w;
    if (comm) st->cov_comm += w;
    if (comp) st->cov_compute += w;
    if (comm && comp) st->cov_overlap += w;
  }
}

/* Account [cursor, to) under the current open counts, piece by piece along the coverage
 * windows, then move the cursor. */
static void advance(rp_sweep *s, int64_t to) {
  int64_t a = s->cursor;
  if (to <= a) return;
  s->cursor = to;
  if (!(s->open[RP_COMM] > 0 || s->open[RP_COMPUTE] > 0 || s->open[RP_MEMORY] > 0)) return;
  while (a < to) {
    while (s->cover_idx < s->ncover && s->cover[2 * s->cover_idx + 1] <= a) s->cover_idx++;
    if (s->cover_idx == s->ncover) {
      account(s, a, to, 0);
      return;
    }
    int64_t ca = s->cover[2 * s->cover_idx], cb = s->cover[2 * s->cover_idx + 1];
    if (a < ca) { /* uncovered up to the next window */
      int64_t b = to < ca ? to : ca;
      account(s, a, b, 0);
      a = b;
      continue;
    }
    int64_t b = to < cb ? to : cb;
    account(s, a, b, 1);
    a = b;
  }
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
    s->t.late++;
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

rp_sweep *rp_sweep_new(size_t reorder_window, rp_step *steps, size_t nsteps) {
  rp_sweep *s = topo_calloc(1, sizeof *s);
  if (!s) return NULL;
  s->window = reorder_window ? reorder_window : 1;
  s->cap_pend = s->window + 1;
  s->pend = topo_malloc(s->cap_pend * sizeof *s->pend);
  if (!s->pend) {
    topo_free(s);
    return NULL;
  }
  s->steps = steps;
  s->nsteps = nsteps;
  s->t.first = INT64_MAX;
  s->t.last = INT64_MIN;
  return s;
}

void rp_sweep_keep(rp_sweep *s, int64_t from, int64_t to, size_t cap) {
  s->keep_from = from;
  s->keep_to = to;
  s->keep_cap = cap;
}

void rp_sweep_cover(rp_sweep *s, const int64_t *win, size_t n) {
  s->cover = win;
  s->ncover = n;
  s->cover_idx = 0;
}

/* Length of [a, b) inside the coverage windows. */
static int64_t covered_in(const rp_sweep *s, int64_t a, int64_t b) {
  int64_t sum = 0;
  for (size_t i = 0; i < s->ncover; i++) {
    int64_t lo = a > s->cover[2 * i] ? a : s->cover[2 * i];
    int64_t hi = b < s->cover[2 * i + 1] ? b : s->cover[2 * i + 1];
    if (hi > lo) sum += hi - lo;
  }
  return sum;
}

topo_status rp_sweep_add(rp_sweep *s, const rp_interval *iv) {
  if (iv->stop <= iv->start || iv->cls >= RP_CLASSES) return TOPO_OK; /* empty or unknown */
  if (iv->start < s->t.first) s->t.first = iv->start;
  if (iv->stop > s->t.last) s->t.last = iv->stop;
  s->t.intervals[iv->cls]++;
  if (s->keep_cap && iv->stop > s->keep_from && iv->start < s->keep_to) {
    if (s->nkept < s->keep_cap) {
      if (!s->kept) s->kept = topo_malloc(s->keep_cap * sizeof *s->kept);
      if (s->kept) s->kept[s->nkept++] = *iv;
    } else {
      s->kept_dropped++;
    }
  }
  pend_push(s, iv);
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
  if (s->t.last > s->t.first) s->t.covered = covered_in(s, s->t.first, s->t.last);
  for (size_t j = 0; j < s->nsteps; j++)
    s->steps[j].covered = covered_in(s, s->steps[j].start, s->steps[j].stop);
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
  topo_free(s);
}
