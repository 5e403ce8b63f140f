// SPDX-License-Identifier: Apache-2.0
// Steps from topo traces alone: data-parallel and FSDP jobs run the same sequence of collectives
// every training step, so each communicator's collectives, in CPU enqueue order, repeat with a
// period of P collectives. Pass 1 hands every collective here (rp_steps_coll); one rank of each
// communicator detects the period on its first collectives, and every rank of it then finds its
// step boundaries by the boundary collectives' (function, seq), which are the same on every rank:
// step k is the same repetition everywhere. Definitions: docs/metrics.md, "Steps".
//
// Detection, on one rank's first `cap` collectives (sorted by CPU enqueue start):
//  - symbol = (function, floor(log2 nccl-tests size), "long gap before it"); a gap is long when it
//    exceeds 8 x the median gap between consecutive collectives (and 20 us);
//  - a change point is a position whose symbol differs from the previous one; a period P scores
//    |change points i with sym[i] == sym[i+P]| / |positions where either is a change point|
//    (runs of identical collectives do not dilute the score);
//  - candidate periods are the distances from each change point to the next 1..4 change points of
//    the same symbol (at most 64 most frequent ones); the smallest candidate scoring >= 0.9 wins,
//    tried on the whole sequence and with its first 1/8, 1/4 and 1/2 left out (a warm-up prefix);
//  - the step's first collective is the phase with the longest mean gap before it; repetitions
//    extend backwards and forwards while >= 90 % of their (function, size) symbols match the
//    per-phase majority; at least 2 complete repetitions make steps.
// Time O(n log n) in the collectives kept for detection, O(1) per collective afterwards; memory
// bounded by `cap` entries per (communicator, rank) until its communicator is decided, then by the
// number of steps. Trackers are found through a map and listed per communicator: nothing is sized
// by the communicator size a header claims, nothing scans every tracker per rank.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "report.h"

#define ST_MIN_SCORE    0.9
#define ST_MATCH        0.9
#define ST_MAX_CAND     64
#define ST_NEXT         4
#define ST_NSYM         4096  /* symbols are < 4096: func(4 bits) << 8 | (bucket + 1) << 1 | long */
#define ST_MIN_LONG_GAP 20000 /* ns */

/* A boundary: the CPU enqueue time of its collective and, when GPU-timed, its GPU time
 * (INT64_MIN: none). */
typedef struct st_time {
  int64_t cpu, gpu;
} st_time;

typedef struct st_ent {
  int64_t cpu_start, cpu_stop;
  int64_t gpu_start, gpu_stop; /* 0 when not GPU-timed */
  uint64_t seq;
  uint8_t func;
  int8_t bucket;
} st_ent;

enum { ST_COLLECT = 0, ST_RESOLVED = 1, ST_NONE = 2 };

typedef struct st_tracker {
  size_t comm;
  size_t next; /* the next tracker of its communicator + 1 (0: none) */
  int rank, proc;
  st_ent *buf;
  size_t n;
  st_time start0; /* start of step 0 (INT64_MIN: not seen) */
  st_time *stop;  /* stop[k]: end of step k (INT64_MIN: not seen) */
  size_t nstop, cap_stop;
} st_tracker;

typedef struct st_comm {
  int state;
  int nranks;
  int seen;           /* 1 once a collective of it arrived */
  size_t first, last; /* its first and last tracker + 1 (0: none yet); between: along `next` */
  size_t ncolls;      /* collectives seen, all ranks */
  /* the period, once resolved */
  int period;
  size_t nsteps; /* SIZE_MAX: open-ended (continues past the detection buffer) */
  uint8_t f_last;
  uint64_t seq_last0, cnt_last;
  uint8_t f_start;
  uint64_t seq_start;
  int start_is_prev; /* 1: step 0 starts at the end of (f_start, seq_start), else at its start */
} st_comm;

struct rp_steps {
  int mode;   /* 0 auto, > 0 forced period */
  size_t cap; /* entries kept per tracker for detection */
  st_tracker *tr;
  size_t ntr, cap_tr;
  st_comm *comms;
  size_t ncomms;
  rp_map tr_of; /* comm << 32 | rank -> tracker index */
  int oom;
};

rp_steps *rp_steps_new(int mode, size_t ntrackers) {
  if (mode < 0) return NULL;
  rp_steps *d = topo_calloc(1, sizeof *d);
  if (!d) return NULL;
  d->mode = mode;
  size_t cap = ntrackers ? ((size_t)1 << 21) / ntrackers : RP_STEPS_DETECT_MAX;
  if (cap > RP_STEPS_DETECT_MAX) cap = RP_STEPS_DETECT_MAX;
  if (cap < 4096) cap = 4096;
  d->cap = cap;
  return d;
}

/* Test hook (test_report_steps: the period past a full detection buffer needs a buffer smaller
 * than the 4096 rp_steps_new keeps at least); the tool never calls it. */
void rp_steps_set_cap(rp_steps *d, size_t cap) {
  if (d && cap >= 16) d->cap = cap;
}

void rp_steps_free(rp_steps *d) {
  if (!d) return;
  for (size_t i = 0; i < d->ntr; i++) topo_free(d->tr[i].buf), topo_free(d->tr[i].stop);
  topo_free(d->tr);
  topo_free(d->comms);
  rp_map_free(&d->tr_of);
  topo_free(d);
}

static int bucket_of(uint64_t size) { return size ? 63 - __builtin_clzll(size) : -1; }

static st_comm *comm_get(rp_steps *d, size_t comm, int nranks) {
  if (comm >= d->ncomms) {
    st_comm *v = topo_realloc(d->comms, (comm + 1) * sizeof *v);
    if (!v) return NULL;
    memset(v + d->ncomms, 0, (comm + 1 - d->ncomms) * sizeof *v);
    d->comms = v;
    d->ncomms = comm + 1;
  }
  st_comm *c = &d->comms[comm];
  if (!c->seen) {
    c->seen = 1;
    c->nranks = nranks;
  }
  return c;
}

static st_tracker *tracker_get(rp_steps *d, size_t comm, int rank, int proc) {
  st_comm *c = &d->comms[comm];
  if (rank >= c->nranks) return NULL;
  uint64_t key = (uint64_t)comm << 32 | (uint32_t)rank;
  uint32_t found;
  if (rp_map_find(&d->tr_of, key, &found)) return &d->tr[found];
  if (!rp_map_add(&d->tr_of, key, (uint32_t)d->ntr)) return NULL;
  if (d->ntr == d->cap_tr) {
    size_t cap = d->cap_tr ? d->cap_tr * 2 : 8;
    st_tracker *v = topo_realloc(d->tr, cap * sizeof *v);
    if (!v) return NULL;
    d->tr = v;
    d->cap_tr = cap;
  }
  st_tracker *t = &d->tr[d->ntr++];
  memset(t, 0, sizeof *t);
  t->comm = comm;
  t->rank = rank;
  t->proc = proc;
  t->start0 = (st_time){INT64_MIN, INT64_MIN};
  if (c->last) d->tr[c->last - 1].next = d->ntr;
  else c->first = d->ntr;
  c->last = d->ntr;
  return t;
}

static int cmp_ent(const void *a, const void *b) {
  const st_ent *x = a, *y = b;
  if (x->cpu_start != y->cpu_start)
    return (x->cpu_start > y->cpu_start) - (x->cpu_start < y->cpu_start);
  if (x->func != y->func) return x->func - y->func;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* ---- resolution: a rank's boundary times from (function, seq) */
static void resolve_one(rp_steps *d, st_tracker *t, const st_comm *c, const st_ent *e) {
  int timed = e->gpu_stop > e->gpu_start && e->gpu_start > 0;
  st_time stop = {e->cpu_stop > e->cpu_start ? e->cpu_stop : e->cpu_start,
                  timed ? e->gpu_stop : INT64_MIN};
  if (e->func == c->f_start && e->seq == c->seq_start)
    t->start0 = c->start_is_prev ? stop : (st_time){e->cpu_start, timed ? e->gpu_start : INT64_MIN};
  if (e->func != c->f_last || e->seq < c->seq_last0 || (e->seq - c->seq_last0) % c->cnt_last)
    return;
  uint64_t k = (e->seq - c->seq_last0) / c->cnt_last;
  if (k >= c->nsteps || k > t->nstop + (1u << 20)) return; /* past the pattern, or garbage */
  if (k >= t->cap_stop) {
    size_t cap = t->cap_stop ? t->cap_stop : 64;
    while (cap <= k) cap *= 2;
    st_time *v = topo_realloc(t->stop, cap * sizeof *v);
    if (!v) {
      d->oom = 1;
      return;
    }
    for (size_t i = t->cap_stop; i < cap; i++) v[i] = (st_time){INT64_MIN, INT64_MIN};
    t->stop = v;
    t->cap_stop = cap;
  }
  t->stop[k] = stop;
  if (k + 1 > t->nstop) t->nstop = (size_t)k + 1;
}

/* ---- detection on one rank's collectives */
typedef struct st_seq {
  size_t n;
  uint16_t *sym; /* with the long-gap bit */
  uint8_t *cp;   /* change point */
  int64_t *gap;
} st_seq;

/* Score of period p over positions [lo, n): change points that recur p later / change points. */
static double score(const st_seq *s, size_t lo, size_t p, size_t *matched) {
  size_t match = 0, uni = 0;
  for (size_t i = lo; i + p < s->n; i++) {
    int a = s->cp[i], b = s->cp[i + p];
    if (!a && !b) continue;
    uni++;
    match += a && b && s->sym[i] == s->sym[i + p];
  }
  if (matched) *matched = match;
  return uni ? (double)match / (double)uni : 0.0;
}

/* Smallest candidate period scoring >= ST_MIN_SCORE over [lo, n) (forced: that one); 0 none. */
static size_t find_period(const st_seq *s, size_t lo, int forced, double *best_score) {
  size_t len = s->n - lo;
  *best_score = 0;
  if (forced > 0) {
    if ((size_t)forced * 2 > len) return 0;
    *best_score = score(s, lo, (size_t)forced, NULL);
    return (size_t)forced;
  }
  int32_t(*last)[ST_NEXT] = topo_malloc(ST_NSYM * sizeof *last);
  uint32_t *dist = topo_malloc(len * ST_NEXT * sizeof *dist);
  size_t nd = 0, found = 0;
  if (!last || !dist) goto out;
  for (size_t i = 0; i < ST_NSYM; i++)
    for (int k = 0; k < ST_NEXT; k++) last[i][k] = -1;
  for (size_t i = lo; i < s->n; i++) {
    if (!s->cp[i]) continue;
    int32_t *l = last[s->sym[i]];
    for (int k = 0; k < ST_NEXT; k++)
      if (l[k] >= 0 && (i - (size_t)l[k]) * 2 <= len) dist[nd++] = (uint32_t)(i - (size_t)l[k]);
    memmove(l + 1, l, (ST_NEXT - 1) * sizeof *l);
    l[0] = (int32_t)i;
  }
  qsort(dist, nd, sizeof *dist, cmp_u32);
  /* (count, period) of the most frequent distances */
  uint64_t cand[ST_MAX_CAND];
  size_t nc = 0;
  for (size_t i = 0; i < nd;) {
    size_t j = i;
    while (j < nd && dist[j] == dist[i]) j++;
    uint64_t key = ((uint64_t)(j - i) << 32) | dist[i];
    if (j - i >= 2) {
      if (nc < ST_MAX_CAND) cand[nc++] = key;
      else {
        size_t m = 0;
        for (size_t k = 1; k < nc; k++)
          if (cand[k] < cand[m]) m = k;
        if (key > cand[m]) cand[m] = key;
      }
    }
    i = j;
  }
  for (size_t k = 0; k < nc; k++) {
    size_t p = (size_t)(cand[k] & 0xffffffffu), matched;
    double sc = score(s, lo, p, &matched);
    if (sc >= ST_MIN_SCORE && matched >= 2 && (!found || p < found)) {
      found = p;
      *best_score = sc;
    }
  }
out:
  topo_free(last);
  topo_free(dist);
  return found;
}

/* Repetition starting at q matches the per-phase majority T (phase of x: (x - lo) mod p). */
static int rep_match(const st_seq *s, const uint16_t *T, size_t lo, size_t p, size_t q) {
  size_t ok = 0;
  for (size_t x = q; x < q + p; x++) {
    size_t ph = (size_t)((((int64_t)x - (int64_t)lo) % (int64_t)p + (int64_t)p) % (int64_t)p);
    ok += (s->sym[x] >> 1) == T[ph];
  }
  return (double)ok >= ST_MATCH * (double)p;
}

/* The symbols of the sorted collectives e[0..n): (function, size bucket) and, with `gaps`, a bit
 * for a gap before it longer than 8 x the median gap (at least ST_MIN_LONG_GAP); change points. `sorted`:
 * scratch of n entries. */
static void symbols(const st_ent *e, size_t n, st_seq *s, int64_t *sorted, int gaps) {
  for (size_t i = 0; i < n; i++) {
    int64_t prev =
        i ? (e[i - 1].cpu_stop > e[i - 1].cpu_start ? e[i - 1].cpu_stop : e[i - 1].cpu_start)
          : e[0].cpu_start;
    int64_t g = e[i].cpu_start - prev;
    s->gap[i] = g > 0 ? g : 0;
    sorted[i] = s->gap[i];
  }
  qsort(sorted + 1, n - 1, sizeof *sorted, cmp_i64);
  int64_t med = sorted[1 + (n - 1) / 2], thr = med > INT64_MAX / 8 ? INT64_MAX : med * 8;
  if (thr < ST_MIN_LONG_GAP) thr = ST_MIN_LONG_GAP;
  for (size_t i = 0; i < n; i++) {
    s->sym[i] = (uint16_t)((e[i].func & 15) << 8 | (uint16_t)(e[i].bucket + 1) << 1 |
                           (gaps && i && s->gap[i] > thr));
    s->cp[i] = !i || s->sym[i] != s->sym[i - 1];
  }
}

/* The period, looked for from the start, an eighth, a quarter and half way in: auto takes the
 * first (longest) range with one, a forced period the best scoring. 0: none; *lo its range. */
static size_t choose_period(const rp_steps *d, const st_seq *s, size_t n, size_t *lo) {
  size_t los[4] = {0, n / 8, n / 4, n / 2}, p = 0;
  double best = -1;
  *lo = 0;
  for (int k = 0; k < 4; k++) {
    if (k && los[k] == los[k - 1]) continue;
    double sc;
    size_t q = find_period(s, los[k], d->mode, &sc);
    if (!q) continue;
    if (d->mode <= 0) { /* auto: the first (longest) range with a period */
      *lo = los[k], p = q;
      break;
    }
    if (sc > best) best = sc, *lo = los[k], p = q;
  }
  return p;
}

/* The template of one step: the per-phase majority of (function, size) into T[0..p), and *ph0,
 * the phase after the longest mean gap (where a step starts). 0 out of memory. */
static int phase_template(const st_seq *s, size_t lo, size_t p, uint16_t *T, size_t *ph0) {
  uint32_t(*vote)[2] = topo_calloc(p, sizeof *vote);
  double *gsum = topo_calloc(p, sizeof *gsum);
  uint32_t *gcnt = topo_calloc(p, sizeof *gcnt);
  int ok = vote && gsum && gcnt;
  for (size_t x = lo; ok && x < s->n; x++) {
    size_t ph = (x - lo) % p;
    uint16_t b = s->sym[x] >> 1;
    if (!vote[ph][1]) vote[ph][0] = b, vote[ph][1] = 1;
    else if (vote[ph][0] == b) vote[ph][1]++;
    else vote[ph][1]--;
    if (x) gsum[ph] += (double)s->gap[x], gcnt[ph]++;
  }
  *ph0 = 0;
  for (size_t ph = 0; ok && ph < p; ph++) {
    T[ph] = (uint16_t)vote[ph][0];
    double m = gcnt[ph] ? gsum[ph] / gcnt[ph] : 0, m0 = gcnt[*ph0] ? gsum[*ph0] / gcnt[*ph0] : 0;
    if (m > m0) *ph0 = ph;
  }
  topo_free(vote), topo_free(gsum), topo_free(gcnt);
  return ok;
}

/* The repetitions of template T (period p, phase 0 at lo + ph0) that match, and c resolved from
 * them when at least two do and their seq arithmetic holds. */
static void resolve(st_comm *c, const st_ent *e, const st_seq *s, const uint16_t *T, size_t lo,
                    size_t p, size_t ph0, int open) {
  size_t n = s->n;
  size_t p0 = lo + ph0;
  while (p0 >= p && rep_match(s, T, lo, p, p0 - p)) p0 -= p;
  size_t k = 0;
  while (p0 + (k + 1) * p <= n && rep_match(s, T, lo, p, p0 + k * p)) k++;
  int reached_end = p0 + (k + 1) * p > n;
  if (k < 2) return;
  const st_ent *l0 = &e[p0 + p - 1], *l1 = &e[p0 + 2 * p - 1];
  if (l0->func != l1->func || l1->seq <= l0->seq) return;
  c->f_last = l0->func;
  c->seq_last0 = l0->seq;
  c->cnt_last = l1->seq - l0->seq;
  for (size_t j = 2; j < k; j++) { /* the seq arithmetic holds over every verified repetition */
    const st_ent *lj = &e[p0 + (j + 1) * p - 1];
    if (lj->func != c->f_last || lj->seq != c->seq_last0 + j * c->cnt_last) {
      k = j, reached_end = 0;
      break;
    }
  }
  c->period = (int)p;
  c->nsteps = open && reached_end ? SIZE_MAX : k;
  c->start_is_prev = p0 > 0;
  c->f_start = e[p0 ? p0 - 1 : 0].func;
  c->seq_start = e[p0 ? p0 - 1 : 0].seq;
  c->state = ST_RESOLVED;
}

/* Detect on tracker t (its buffer sorted); fills c. `open`: more collectives follow the buffer. */
static void detect(rp_steps *d, st_comm *c, st_tracker *t, int open) {
  c->state = ST_NONE;
  size_t n = t->n;
  if (n < 4) return;
  st_ent *e = t->buf;
  qsort(e, n, sizeof *e, cmp_ent);
  st_seq s = {n, topo_malloc(n * sizeof(uint16_t)), topo_malloc(n),
              topo_malloc(n * sizeof(int64_t))};
  int64_t *sorted = topo_malloc(n * sizeof(int64_t));
  uint16_t *T = NULL;
  size_t lo, p, ph0;
  if (!s.sym || !s.cp || !s.gap || !sorted) {
    d->oom = 1;
  } else {
    symbols(e, n, &s, sorted, 1);
    p = choose_period(d, &s, n, &lo);
    /* A job whose threads are short of CPU enqueues with gaps of any length: long gaps that do
     * not repeat hide its period. The functions and sizes alone may still show it. */
    if (!p) {
      symbols(e, n, &s, sorted, 0);
      p = choose_period(d, &s, n, &lo);
    }
    if (p) {
      if (!(T = topo_malloc(p * sizeof *T)) || !phase_template(&s, lo, p, T, &ph0)) d->oom = 1;
      else resolve(c, e, &s, T, lo, p, ph0, open);
    }
  }
  topo_free(s.sym), topo_free(s.cp), topo_free(s.gap), topo_free(sorted);
  topo_free(T);
}

/* Decide communicator `ci` with detector tracker `det`; every tracker of it replays its buffer. */
static void decide(rp_steps *d, size_t ci, st_tracker *det, int open) {
  st_comm *c = &d->comms[ci];
  detect(d, c, det, open);
  for (size_t i = c->first; i; i = d->tr[i - 1].next) {
    st_tracker *t = &d->tr[i - 1];
    if (c->state == ST_RESOLVED)
      for (size_t j = 0; j < t->n; j++) resolve_one(d, t, c, &t->buf[j]);
    topo_free(t->buf);
    t->buf = NULL;
    t->n = 0;
  }
}

void rp_steps_coll(rp_steps *d, size_t comm, int nranks, int rank, int proc, const rp_coll *co) {
  if (!d || d->oom || co->p2p || rank < 0 || rank >= nranks) return;
  st_comm *c = comm_get(d, comm, nranks);
  st_tracker *t = c ? tracker_get(d, comm, rank, proc) : NULL;
  if (!t) {
    if (!c || rank < c->nranks) d->oom = 1;
    return;
  }
  c = &d->comms[comm];
  c->ncolls++;
  int func = co->func >= 0 && co->func < RP_MAX_FUNC ? co->func : RP_MAX_FUNC - 1;
  st_ent e = {co->cpu_start,
              co->cpu_stop,
              co->timed ? co->gpu_start : 0,
              co->timed ? co->gpu_stop : 0,
              co->seq,
              (uint8_t)func,
              (int8_t)bucket_of(rp_coll_size(func, co->bytes, co->nranks))};
  if (c->state == ST_RESOLVED) {
    resolve_one(d, t, c, &e);
    return;
  }
  if (c->state != ST_COLLECT) return;
  if (!t->buf && !(t->buf = topo_malloc(d->cap * sizeof *t->buf))) {
    d->oom = 1;
    return;
  }
  t->buf[t->n++] = e;
  if (t->n == d->cap) decide(d, comm, t, 1);
}

topo_status rp_steps_finish(rp_steps *d, rp_report *r) {
  if (!d) return TOPO_OK;
  for (size_t ci = 0; ci < d->ncomms; ci++) {
    if (d->comms[ci].state != ST_COLLECT) continue;
    st_tracker *det = NULL;
    for (size_t i = d->comms[ci].first; i; i = d->tr[i - 1].next)
      if (!det || d->tr[i - 1].n > det->n) det = &d->tr[i - 1];
    if (det) decide(d, ci, det, 0);
    else d->comms[ci].state = ST_NONE;
  }
  if (d->oom) return TOPO_ERR_NOMEM;
  /* the trackers of each report rank: head[p], then along by_proc (index + 1, 0 ends) */
  size_t *head = topo_calloc((size_t)(r->nranks > 0 ? r->nranks : 1), sizeof *head);
  size_t *by_proc = topo_calloc(d->ntr ? d->ntr : 1, sizeof *by_proc);
  if (!head || !by_proc) {
    topo_free(head), topo_free(by_proc);
    return TOPO_ERR_NOMEM;
  }
  for (size_t i = d->ntr; i-- > 0;)
    if (d->tr[i].proc >= 0 && d->tr[i].proc < r->nranks) {
      by_proc[i] = head[d->tr[i].proc];
      head[d->tr[i].proc] = i + 1;
    }
  int tried = 0;
  topo_status st = TOPO_OK;
  for (int p = 0; p < r->nranks && st == TOPO_OK; p++) {
    rp_rank *k = &r->ranks[p];
    const st_tracker *best = NULL;
    size_t best_n = 0;
    for (size_t i = head[p]; i; i = by_proc[i - 1]) {
      const st_tracker *t = &d->tr[i - 1];
      const st_comm *c = &d->comms[t->comm];
      if (c->state != ST_RESOLVED || !t->nstop) continue;
      if (!best || t->nstop > best_n ||
          (t->nstop == best_n && c->nranks > d->comms[best->comm].nranks))
        best = t, best_n = t->nstop;
    }
    int has_colls = head[p] != 0;
    if (k->nsteps || !has_colls) continue; /* Kineto steps or step marks win */
    tried = 1;
    if (!best) continue;
    const st_comm *c = &d->comms[best->comm];
    /* GPU times of the boundary collectives where every boundary the rank has is GPU-timed:
     * the steps then cut the GPU timeline between the same phases of the job every time (the
     * CPU runs ahead of the GPU by a varying queue); else the CPU enqueue times throughout, never
     * a mix of the two clocks' views in one rank. */
    int gpu = 1;
    for (size_t s = 0; s < best->nstop && gpu; s++)
      if (best->stop[s].cpu != INT64_MIN && best->stop[s].gpu == INT64_MIN) gpu = 0;
    k->steps_gpu = gpu;
    for (size_t s = 0; s < best->nstop; s++) {
      st_time ta = s ? best->stop[s - 1] : best->start0, tb = best->stop[s];
      /* step 0's start is the one boundary that may be an untimed collective (a job's first,
       * small ones): then its CPU enqueue time, which is earlier than its GPU work */
      int64_t a = gpu && ta.gpu != INT64_MIN ? ta.gpu : ta.cpu, b = gpu ? tb.gpu : tb.cpu;
      if (a == INT64_MIN || b == INT64_MIN || b <= a) continue; /* the window clips later */
      if (k->nsteps == k->cap_steps) {
        size_t cap = k->cap_steps ? k->cap_steps * 2 : 64;
        rp_step *v = topo_realloc(k->steps, cap * sizeof *v);
        if (!v) {
          st = TOPO_ERR_NOMEM;
          break;
        }
        k->steps = v;
        k->cap_steps = cap;
      }
      rp_step *step = &k->steps[k->nsteps++];
      memset(step, 0, sizeof *step);
      step->start = a;
      step->stop = b;
      step->value = s;
      step->period = c->period;
    }
    if (k->nsteps && !r->step_period) r->step_period = c->period;
  }
  topo_free(head), topo_free(by_proc);
  if (tried) r->steps_detect = r->step_period ? RP_STEPS_FOUND : RP_STEPS_NONE;
  return st;
}

/* ---- for the renderers */
const char *rp_steps_origin(const rp_report *r, char *buf, size_t len) {
  int kin = 0, per = 0, mark = 0, per_gpu = 0;
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    if (!k->nsteps) continue;
    if (k->steps[0].from_kineto) kin++;
    else if (k->steps[0].period) per++, per_gpu += k->steps_gpu;
    else mark++;
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
    ST_APPEND("%sfrom topo traces (period %d collectives, %d rank%s; %s)", sep, r->step_period, per,
              per == 1 ? "" : "s",
              per_gpu == per ? "cut at the boundary collectives' GPU times"
              : per_gpu      ? "cut at GPU times, on ranks with an untimed boundary collective at "
                               "CPU enqueue times"
                             : "cut at CPU enqueue times");
#undef ST_APPEND
  return buf;
}
