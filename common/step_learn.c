// SPDX-License-Identifier: Apache-2.0
// The step learner (step_learn.h): the symbol period of a stream of NCCL operations, the step
// (the candidate period whose boundary gap stands out), its boundaries, and the steady state.
// Called by the profiler's writer thread (profiler-plugin/step_sched.c) and by topo-report
// (tools/report/steps.c), one learner per stream.
//
// History: the last H = (repeats + 1) x max_period operations' symbols (stored twice, at i and
// i + H, so that the max_period symbols before any operation are one contiguous slice) and enqueue
// times. While no step is known, run[p] counts the operations in a row that equal the one p
// earlier, for every p up to max_period (one compare per p and operation, which compilers
// vectorise); a period p qualifies once run[p] >= (repeats - 1) x p.
#include "step_learn.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#define RING        8  /* step durations and boundary gaps kept for the medians */
#define MAX_CAND    24 /* candidate steps tried per search */
#define FOLD_MAX    8  /* a symbol period may hold up to this many steps */
#define NEXT_LARGE  4  /* a long gap pairs with the next few long gaps */
#define SEARCH_STEP 32 /* a failed search is retried once the stretch grew by max(q, this) */

struct topo_step_learner {
  topo_step_config cfg;
  uint32_t pmax, reps, steady_k, hist; /* hist: H */
  uint32_t *sig2;                      /* 2 x H: symbol of operation x at x % H and x % H + H */
  int64_t *t;                          /* H: enqueue time of operation x at x % H */
  uint32_t *run;                       /* pmax: run[j] is the run for period pmax - j */
  int64_t *scratch;                    /* H + pmax: medians */
  int64_t *phase_med;                  /* pmax */
  uint8_t *mism;                       /* pmax: 1 where operation x differed from x - P (x % P) */
  uint64_t n;                          /* operations fed */
  /* search */
  uint32_t q_tried, len_tried;
  /* the step */
  int locked;
  uint32_t period, tol, mism_count;
  uint64_t anchor; /* an operation that begins a step */
  uint64_t step_no, bf_first, bf_count;
  uint64_t since;       /* the stream before a step's stretch is counted from here */
  uint64_t trusted_at;  /* the step is trusted (steady may hold) from this operation on */
  uint32_t good_period; /* the period of the last step that was trusted (0: none) */
  int64_t last_t;
  int64_t dur[RING], gap[RING];
  uint32_t ndur, ngap;
  uint32_t since_trust;    /* step durations measured since the step was trusted */
  int64_t step_ns, gap_ns; /* medians of dur and gap */
  uint64_t stretch;        /* where the stretch the step was found in began */
  uint64_t watch_until;    /* until then the repetitions of every period are still counted */
  uint32_t unit;           /* the symbol period the step is a multiple of (0: the step is it) */
  uint8_t verdicts;        /* the last 8 steps: bit set where the boundary gap did not stand out */
  uint8_t nverdicts;
  uint8_t steady;
};

/* ---- small helpers */
static inline uint32_t symbol(const topo_step_op *op) {
  uint64_t bucket = op->bytes ? (uint64_t)(64 - __builtin_clzll(op->bytes)) : 0;
  uint64_t x = op->comm * 0x9e3779b97f4a7c15ull ^ (uint64_t)op->func << 8 ^ bucket << 16 ^
               (op->p2p ? (uint64_t)(uint32_t)op->peer << 24 | 1ull << 63 : 0);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return (uint32_t)x | 1u; /* never 0: the empty history never matches */
}

static inline uint32_t sig_at(const topo_step_learner *l, uint64_t x) {
  return l->sig2[x % l->hist];
}
static inline int64_t t_at(const topo_step_learner *l, uint64_t x) { return l->t[x % l->hist]; }

/* Host gap before operation x (0 for the first operation, or when the clock went back). */
static inline int64_t gap_at(const topo_step_learner *l, uint64_t x) {
  if (x == 0) return 0;
  int64_t g = t_at(l, x) - t_at(l, x - 1);
  return g > 0 ? g : 0;
}

/* The median of v[0..n) (n >= 1; v is reordered): the lower middle for even n (Wirth's
 * selection). */
static int64_t median(int64_t *v, size_t n) {
  ptrdiff_t k = (ptrdiff_t)(n - 1) / 2, lo = 0, hi = (ptrdiff_t)n - 1;
  while (lo < hi) {
    int64_t x = v[k];
    ptrdiff_t i = lo, j = hi;
    do {
      while (v[i] < x) i++;
      while (x < v[j]) j--;
      if (i <= j) {
        int64_t s = v[i];
        v[i++] = v[j];
        v[j--] = s;
      }
    } while (i <= j);
    if (j < k) lo = i;
    if (k < i) hi = j;
  }
  return v[k];
}

static int64_t ring_median(const int64_t *ring, uint32_t count) {
  int64_t v[RING];
  uint32_t n = count < RING ? count : RING;
  if (!n) return 0;
  memcpy(v, ring, n * sizeof *v);
  return median(v, n);
}

static void ring_push(int64_t *ring, uint32_t *count, int64_t v) { ring[(*count)++ % RING] = v; }

/* ---- configuration and lifetime */
topo_step_learner *topo_step_learn_new(const topo_step_config *cfg) {
  topo_step_config c = cfg ? *cfg : (topo_step_config){0, 0, 0, 0};
  if (!c.max_period) c.max_period = TOPO_STEP_MAX_PERIOD_DEFAULT;
  if (c.max_period < 2) c.max_period = 2;
  if (c.force_period > TOPO_STEP_MAX_PERIOD_LIMIT) c.force_period = TOPO_STEP_MAX_PERIOD_LIMIT;
  if (c.force_period > c.max_period) c.max_period = c.force_period;
  if (c.max_period > TOPO_STEP_MAX_PERIOD_LIMIT) c.max_period = TOPO_STEP_MAX_PERIOD_LIMIT;
  c.max_period = (c.max_period + 7) / 8 * 8; /* whole vectors in count_runs */
  if (c.repeats < 2) c.repeats = c.repeats ? 2 : TOPO_STEP_REPEATS_DEFAULT;
  if (c.repeats > 8) c.repeats = 8;
  if (!c.steady_steps) c.steady_steps = TOPO_STEP_STEADY_DEFAULT;
  if (c.steady_steps > RING) c.steady_steps = RING;
  topo_step_learner *l = topo_calloc(1, sizeof *l);
  if (!l) return NULL;
  l->cfg = c;
  l->pmax = c.max_period;
  l->reps = c.repeats;
  l->steady_k = c.steady_steps;
  l->hist = (c.repeats + 1) * c.max_period;
  l->sig2 = topo_malloc(2 * (size_t)l->hist * sizeof *l->sig2);
  l->t = topo_malloc((size_t)l->hist * sizeof *l->t);
  l->run = topo_malloc((size_t)l->pmax * sizeof *l->run);
  l->scratch = topo_malloc(((size_t)l->hist + l->pmax) * sizeof *l->scratch);
  l->phase_med = topo_malloc((size_t)l->pmax * sizeof *l->phase_med);
  l->mism = topo_malloc(l->pmax);
  if (!l->sig2 || !l->t || !l->run || !l->scratch || !l->phase_med || !l->mism) {
    topo_step_learn_free(l);
    return NULL;
  }
  topo_step_learn_reset(l);
  return l;
}

void topo_step_learn_free(topo_step_learner *l) {
  if (!l) return;
  topo_free(l->sig2);
  topo_free(l->t);
  topo_free(l->run);
  topo_free(l->scratch);
  topo_free(l->phase_med);
  topo_free(l->mism);
  topo_free(l);
}

static void unlock(topo_step_learner *l) {
  if (l->locked) l->since = l->stretch;
  l->q_tried = l->len_tried = 0;
  l->locked = 0;
  l->period = 0;
  l->steady = 0;
  l->ndur = l->ngap = 0;
  l->step_ns = l->gap_ns = 0;
  l->verdicts = l->nverdicts = 0;
  l->bf_count = 0;
}

void topo_step_learn_reset(topo_step_learner *l) {
  l->locked = 0;
  l->since = 0;
  l->good_period = 0;
  memset(l->run, 0, (size_t)l->pmax * sizeof *l->run);
  memset(l->sig2, 0, 2 * (size_t)l->hist * sizeof *l->sig2);
  memset(l->t, 0, (size_t)l->hist * sizeof *l->t);
  l->n = 0;
  unlock(l);
}

uint32_t topo_step_learn_history(const topo_step_learner *l) { return l->hist; }
topo_step_config topo_step_learn_config(const topo_step_learner *l) { return l->cfg; }

int topo_step_learn_backfill(const topo_step_learner *l, uint64_t *first, uint64_t *count) {
  if (!l->locked || !l->bf_count) return 0;
  *first = l->bf_first;
  *count = l->bf_count;
  return 1;
}

/* ---- the search: which candidate period is the step */

/* Whether the last unit of q (ending at cur) agrees with itself d earlier at >= 90 % of its
 * positions: the symbol period holds q / d steps that differ in a few operations. */
static int fold_similar(const topo_step_learner *l, uint64_t cur, uint32_t q, uint32_t d) {
  uint32_t same = 0;
  for (uint64_t x = cur + 1 - q; x <= cur; x++) same += sig_at(l, x) == sig_at(l, x - d);
  return (uint64_t)same * 10 >= (uint64_t)q * 9;
}

/* Whether period d over the stretch [s, s + len) has a boundary gap that stands out; *phase: its
 * phase (relative to s). */
static int stands_out(topo_step_learner *l, uint64_t s, uint32_t len, uint32_t d, uint32_t *phase) {
  uint32_t reps = len / d;
  if (d < 2 || reps < l->reps) return 0;
  int64_t *v = l->scratch;
  for (uint32_t ph = 0; ph < d; ph++) {
    for (uint32_t r = 0; r < reps; r++) v[r] = gap_at(l, s + ph + (uint64_t)r * d);
    l->phase_med[ph] = median(v, reps);
  }
  uint32_t b = 0;
  for (uint32_t ph = 1; ph < d; ph++)
    if (l->phase_med[ph] > l->phase_med[b]) b = ph;
  uint32_t k = 0;
  for (uint32_t ph = 0; ph < d; ph++)
    if (ph != b) v[k++] = l->phase_med[ph];
  int64_t other = median(v, k);
  int64_t thr = other > 0 ? 2 * other : 1;
  if (l->phase_med[b] < thr) return 0;
  uint32_t ok = 0;
  for (uint32_t r = 0; r < reps; r++) ok += gap_at(l, s + b + (uint64_t)r * d) >= thr;
  if ((uint64_t)ok * 4 < (uint64_t)reps * 3) return 0;
  *phase = b;
  return 1;
}

static void cand_add(uint32_t *cand, uint32_t *n, uint32_t d) {
  uint32_t i = 0;
  while (i < *n && cand[i] < d) i++;
  if (i < *n && cand[i] == d) return;
  if (*n == MAX_CAND) {
    if (i == MAX_CAND) return; /* larger than every kept one */
    (*n)--;                    /* the largest goes */
  }
  memmove(cand + i + 1, cand + i, (*n - i) * sizeof *cand);
  cand[i] = d;
  (*n)++;
}

/* Found: the step is d operations long, beginning at operation `anchor`; cur is the operation
 * being fed. Its earlier boundaries give the first durations and gaps. */
static void lock(topo_step_learner *l, uint64_t cur, uint32_t d, uint64_t anchor, uint64_t start) {
  l->locked = 1;
  /* A step is trusted once its stretch has lasted three times as long as the stream before it
   * (from the start, or from the stretch of the step lost before; at most the history): a
   * pattern inside the real step (its layers, its microbatches) ends sooner than that, the first
   * time the real step's other part comes. A period that was trusted before is trusted again. */
  uint64_t before = start > l->since ? start - l->since : 0;
  if (before > l->hist) before = l->hist;
  l->trusted_at = d == l->good_period ? cur : start + 3 * before;
  l->watch_until = cur + l->hist;
  l->since_trust = d == l->good_period ? l->steady_k : 0;
  l->stretch = start;
  l->period = d;
  l->unit = 0;
  l->tol = d / 16 > 1 ? d / 16 : 1;
  l->mism_count = 0;
  memset(l->mism, 0, d);
  l->anchor = anchor;
  l->bf_first = anchor;
  l->bf_count = anchor < cur ? (cur - 1 - anchor) / d + 1 : 0;
  l->step_no = l->bf_count;
  l->ndur = l->ngap = 0;
  l->verdicts = l->nverdicts = 0;
  uint64_t from = l->bf_count > RING + 1 ? l->bf_count - (RING + 1) : 0;
  for (uint64_t r = from; r < l->bf_count; r++) {
    uint64_t x = anchor + r * d;
    ring_push(l->gap, &l->ngap, gap_at(l, x));
    if (r > from) ring_push(l->dur, &l->ndur, t_at(l, x) - t_at(l, x - d));
    l->last_t = t_at(l, x);
  }
  l->step_ns = ring_median(l->dur, l->ndur);
  l->gap_ns = ring_median(l->gap, l->ngap);
}

/* The steady state: the last steady_k durations within a factor of 1.5 of each other. */
static void judge_steady(topo_step_learner *l, uint64_t cur) {
  l->steady = 0;
  if (cur < l->trusted_at) return;
  if (l->since_trust < l->steady_k) l->since_trust++;
  if (l->since_trust < l->steady_k || l->ndur < l->steady_k) return;
  l->good_period = l->period;
  int64_t lo = INT64_MAX, hi = 0;
  for (uint32_t i = 0; i < l->steady_k; i++) {
    int64_t v = l->dur[(l->ndur - 1 - i) % RING];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  l->steady = lo > 0 && hi <= lo + lo / 2;
}

/* Whether the step that ends at boundary x (the operation after it begins the next step... x
 * itself begins one) kept the step's own timing: its boundary gap at least twice the median of
 * its other gaps. */
static int keeps_timing(topo_step_learner *l, uint64_t x, uint32_t p) {
  int64_t *v = l->scratch + l->hist; /* pmax entries, apart from what search() holds */
  for (uint32_t i = 1; i < p; i++) v[i - 1] = gap_at(l, x - p + i);
  int64_t other = median(v, p - 1);
  return gap_at(l, x) >= (other > 0 ? 2 * other : 1);
}

/* Whether the step of period p ending at x still dominates its units of u operations (p a
 * multiple of u): its boundary gap is at least 4 times the median gap at the other unit
 * boundaries inside it, the rule by which search() takes a multiple over the unit. */
static int dominates_here(topo_step_learner *l, uint64_t x, uint32_t p, uint32_t u) {
  int64_t *v = l->scratch + l->hist;
  uint32_t k = 0;
  for (uint32_t j = 1; j < p / u; j++) v[k++] = gap_at(l, x - (uint64_t)j * u);
  int64_t other = median(v, k), g = gap_at(l, x);
  return g > 0 && g >= 4 * other;
}

/* Whether >= 75 % of the steps of period p (boundaries at anchor + k p) that lie wholly in the
 * last `len` operations up to cur keep the step's timing. */
static int holds_over(topo_step_learner *l, uint64_t cur, uint32_t len, uint32_t p,
                      uint64_t anchor) {
  uint64_t from = cur + 1 - len + p; /* a boundary with its whole step before it */
  uint64_t x =
      anchor >= from ? anchor - (anchor - from) / p * p : anchor + (from - anchor + p - 1) / p * p;
  uint32_t ok = 0, all = 0;
  for (; x <= cur; x += p, all++) ok += keeps_timing(l, x, p);
  return all && ok * 4 >= all * 3;
}

/* Whether period D (a multiple of d) is the step rather than d: in >= 75 % of its repetitions
 * over [s, s + len), the gap before its longest-gap phase is at least 4 times the median of the
 * gaps at its other phases that are d's boundaries. *phase: that phase. */
static int dominates(topo_step_learner *l, uint64_t s, uint32_t len, uint32_t d, uint32_t D,
                     uint32_t *phase) {
  uint32_t reps = len / D;
  if (reps < 2 * l->reps || D / d < 2) return 0; /* more evidence than a find needs */
  int64_t *v = l->scratch;
  uint32_t b = 0;
  for (uint32_t ph = 0; ph < D; ph++) {
    for (uint32_t r = 0; r < reps; r++) v[r] = gap_at(l, s + ph + (uint64_t)r * D);
    l->phase_med[ph] = median(v, reps);
    if (l->phase_med[ph] > l->phase_med[b]) b = ph;
  }
  uint32_t ok = 0;
  for (uint32_t r = 0; r < reps; r++) {
    uint32_t k = 0;
    for (uint32_t ph = b % d; ph < D; ph += d)
      if (ph != b) v[k++] = gap_at(l, s + ph + (uint64_t)r * D);
    int64_t other = median(v, k), g = gap_at(l, s + b + (uint64_t)r * D);
    ok += g > 0 && g >= 4 * other;
  }
  *phase = b;
  return (uint64_t)ok * 4 >= (uint64_t)reps * 3;
}

/* Search the stretch of the last `len` operations (ending at cur), periodic with q, for the
 * step: 1 when found, with its period, an operation that begins a step and its median boundary
 * gap. */
static int search(topo_step_learner *l, uint64_t cur, uint32_t q, uint32_t len, uint32_t *period,
                  uint64_t *anchor, int64_t *gap) {
  uint64_t s = cur + 1 - len;
  uint32_t cand[MAX_CAND], nc = 0;
  if (len >= l->reps * q) cand_add(cand, &nc, q);
  for (uint32_t j = 2; j <= FOLD_MAX; j++)
    if (q % j == 0 && len >= l->reps * (q / j) && fold_similar(l, cur, q, q / j))
      cand_add(cand, &nc, q / j);
  /* multiples of q at which long gaps recur */
  int64_t *v = l->scratch;
  for (uint32_t i = 0; i < len; i++) v[i] = gap_at(l, s + i);
  int64_t med = median(v, len), thr = med > 0 ? 2 * med : 1;
  uint64_t recent[NEXT_LARGE];
  uint32_t nrecent = 0;
  for (uint64_t x = s; x <= cur; x++) {
    if (gap_at(l, x) < thr) continue;
    for (uint32_t k = 0; k < nrecent && k < NEXT_LARGE; k++) {
      uint64_t d = x - recent[k];
      if (d % q == 0 && d <= l->pmax && len >= l->reps * d) cand_add(cand, &nc, (uint32_t)d);
    }
    recent[nrecent++ % NEXT_LARGE] = x;
  }
  /* Of the candidates that stand out, the smallest - unless a multiple of it that stands out
   * too has a gap far longer than its other boundaries in the same repetition: a pattern inside
   * the step (a layer's AllGather and ReduceScatter) stands out as well, with a gap far shorter
   * than the step's own. */
  uint32_t found = 0, found_phase = 0;
  int64_t found_gap = 0;
  for (uint32_t i = 0; i < nc; i++) {
    uint32_t phase, d = cand[i];
    if (found && (d % found || !dominates(l, s, len, found, d, &phase))) continue;
    if (!stands_out(l, s, len, d, &phase)) continue;
    found = d;
    found_phase = phase;
    found_gap = l->phase_med[phase];
  }
  if (!found) return 0;
  *period = found;
  *anchor = s + found_phase;
  *gap = found_gap;
  return 1;
}

/* The longest host gap among operations [cur + 1 - len, cur]. */
static int64_t longest_gap(const topo_step_learner *l, uint64_t cur, uint32_t len) {
  int64_t m = 0;
  for (uint64_t x = cur + 1 - len; x <= cur; x++)
    if (gap_at(l, x) > m) m = gap_at(l, x);
  return m;
}

/* ---- per operation */
static void follow(topo_step_learner *l, uint64_t cur, uint32_t sig, int64_t t,
                   topo_step_event *ev) {
  uint32_t p = l->period;
  uint32_t slot = (uint32_t)(cur % p);
  uint8_t bad = sig != sig_at(l, cur - p);
  l->mism_count += bad;
  l->mism_count -= l->mism[slot];
  l->mism[slot] = bad;
  if (l->mism_count > l->tol) {
    unlock(l);
    ev->lost = 1;
    return;
  }
  if ((cur - l->anchor) % p) return;
  /* The step that ends here keeps the step's own timing when its boundary gap is at least twice
   * the median of its other gaps; a pattern inside the real step (a layer) fails that in the
   * part of the step where it does not have the step's gap. 3 failures in the last 8: lost. */
  if (p >= 2 && !l->cfg.force_period) {
    int kept = keeps_timing(l, cur, p) && (!l->unit || dominates_here(l, cur, p, l->unit));
    l->verdicts = (uint8_t)(l->verdicts << 1 | !kept);
    if (l->nverdicts < 8) l->nverdicts++;
    if (__builtin_popcount(l->verdicts) >= 3) {
      unlock(l);
      ev->lost = 1;
      return;
    }
  }
  ev->boundary = 1;
  ev->step = l->step_no++;
  ring_push(l->dur, &l->ndur, t - l->last_t); /* a lock leaves one boundary behind at least */
  ring_push(l->gap, &l->ngap, gap_at(l, cur));
  l->last_t = t;
  l->step_ns = ring_median(l->dur, l->ndur);
  l->gap_ns = ring_median(l->gap, l->ngap);
  judge_steady(l, cur);
}

/* run[] after operation cur (symbol sig): every period's run of repetitions. Four periods at a
 * time (GCC/Clang vector extensions: SSE2 on x86-64, NEON on ARM). */
typedef uint32_t v4u __attribute__((vector_size(16)));
static void count_runs(topo_step_learner *l, uint64_t cur, uint32_t sig) {
  uint32_t pmax = l->pmax, pos = (uint32_t)(cur % l->hist);
  const uint32_t *base = l->sig2 + pos + l->hist - pmax; /* base[j]: operation cur - (pmax - j) */
  uint32_t *run = l->run;
  const v4u want = {sig, sig, sig, sig}, limit = {1u << 30, 1u << 30, 1u << 30, 1u << 30};
  for (uint32_t j = 0; j < pmax; j += 4) {
    v4u b, r;
    memcpy(&b, base + j, sizeof b);
    memcpy(&r, run + j, sizeof r);
    r = (r - (v4u)(r < limit)) & (v4u)(b == want); /* + 1 below the limit, 0 on a mismatch */
    memcpy(run + j, &r, sizeof r);
  }
}

/* run[] rebuilt from the history at operation cur (the step was followed without it). */
static void rebuild_runs(topo_step_learner *l, uint64_t cur) {
  uint64_t oldest = cur + 1 > l->hist ? cur + 1 - l->hist : 0;
  for (uint32_t p = 1; p <= l->pmax; p++) {
    uint32_t m = 0;
    for (uint64_t x = cur; x >= oldest + p && sig_at(l, x) == sig_at(l, x - p); x--) m++;
    l->run[l->pmax - p] = m;
  }
}

/* No step known: the symbol period q of the longest stretch that repeats `reps` times; the
 * smallest on a tie. Its stretch is searched for the step. A longer stretch of a larger period
 * that has repeated at least half a time (a step whose layers repeat inside it, the step after
 * the first one) must then agree: the step found keeps its own timing in >= 75 % of its steps
 * there too, else it is a pattern inside the real step and no step is taken yet. */
/* Whether a step of period p (boundaries at anchor + k p, median boundary gap `gap`) fits the
 * longer stretch of the last `len` operations, in which a larger period is emerging: it keeps
 * its timing there (holds_over), and no gap there is more than 4 times its boundary gap (the
 * larger unit's own gap: the step found would be a part of it). */
static int fits(topo_step_learner *l, uint64_t cur, uint32_t len, uint32_t p, uint64_t anchor,
                int64_t gap) {
  return holds_over(l, cur, len, p, anchor) && longest_gap(l, cur, len) <= 4 * gap;
}

/* For a while after the step was found: a longer stretch of a larger period has emerged (the
 * real step, repeating, of which the step found is a part) and the step found does not keep its
 * timing over it. The step is then lost and searched again. */
static int outgrown(topo_step_learner *l, uint64_t cur) {
  /* (fits: below) */
  if (l->cfg.force_period) return 0;
  uint32_t pmax = l->pmax, p = l->period, cap = l->hist - 1, wide = 0;
  uint32_t mine = l->run[pmax - p] + p < cap ? l->run[pmax - p] + p : cap;
  for (uint32_t q = p + 1; q <= pmax; q++) {
    uint32_t m = l->run[pmax - q];
    if (2 * m < q || !m) continue;
    uint32_t cover = m + q < cap ? m + q : cap;
    if (cover > wide) wide = cover;
  }
  return wide > mine + p && !fits(l, cur, wide, p, l->anchor, l->gap_ns);
}

/* A forced period: the phase of the longest median gap over its repetitions. */
static void seek_forced(topo_step_learner *l, uint64_t cur, uint32_t sig, int64_t t,
                        topo_step_event *ev) {
  uint32_t p = l->cfg.force_period, m = l->run[l->pmax - p], cap = l->hist - 1;
  if (m < (l->reps - 1) * p) return;
  uint32_t len = m + p < cap ? m + p : cap, reps = len / p;
  uint64_t s = cur + 1 - len;
  uint32_t best = 0;
  for (uint32_t ph = 0; ph < p; ph++) {
    for (uint32_t r = 0; r < reps; r++) l->scratch[r] = gap_at(l, s + ph + (uint64_t)r * p);
    l->phase_med[ph] = median(l->scratch, reps);
    if (l->phase_med[ph] > l->phase_med[best]) best = ph;
  }
  lock(l, cur, p, s + best, s);
  ev->found = 1;
  follow(l, cur, sig, t, ev);
}

static void seek(topo_step_learner *l, uint64_t cur, uint32_t sig, int64_t t, topo_step_event *ev) {
  uint32_t pmax = l->pmax, q = 0, best = 0, wide = 0, cap = l->hist - 1;
  const uint32_t *run = l->run;
  if (l->cfg.force_period) {
    seek_forced(l, cur, sig, t, ev);
    return;
  }
  if (cur % 8) return; /* looked at every 8th operation: a step is found at most 7 later */
  for (uint32_t p = 1; p <= pmax; p++) {
    uint32_t m = run[pmax - p];
    if (2 * m < p || !m) continue;
    uint32_t cover = m + p < cap ? m + p : cap;
    if (cover > wide) wide = cover;
    if (m >= (l->reps - 1) * p && cover > best) best = cover, q = p;
  }
  if (!q) return;
  uint32_t step = q > SEARCH_STEP ? q : SEARCH_STEP;
  if (q == l->q_tried && best < l->len_tried + step) return;
  l->q_tried = q;
  l->len_tried = best;
  uint32_t period;
  uint64_t anchor;
  int64_t gap;
  if (!search(l, cur, q, best, &period, &anchor, &gap)) return;
  if (wide > best && !fits(l, cur, wide, period, anchor, gap)) return;
  lock(l, cur, period, anchor, cur + 1 - best);
  /* a step of several symbol periods: its halves (or thirds ...) must keep being dominated by
   * its own boundary; where they stop being (the early steps that made it stand out are over),
   * the step is lost and the unit is searched again */
  if (period > q && period % q == 0 && period / q <= FOLD_MAX) l->unit = q;
  ev->found = 1;
  follow(l, cur, sig, t, ev);
}

void topo_step_learn_add(topo_step_learner *l, const topo_step_op *op, topo_step_event *ev) {
  memset(ev, 0, sizeof *ev);
  uint64_t cur = l->n++;
  uint32_t sig = symbol(op), pos = (uint32_t)(cur % l->hist);
  l->sig2[pos] = l->sig2[pos + l->hist] = sig;
  l->t[pos] = op->t_ns;
  ev->index = cur;
  if (l->locked) {
    int watching = cur < l->watch_until;
    if (watching) count_runs(l, cur, sig);
    follow(l, cur, sig, op->t_ns, ev);
    if (!ev->lost && watching && !(cur % 8) && outgrown(l, cur)) {
      unlock(l);
      ev->lost = 1;
    }
    if (ev->lost && !watching) rebuild_runs(l, cur);
  } else {
    count_runs(l, cur, sig);
    seek(l, cur, sig, op->t_ns, ev);
  }
  ev->period = l->locked ? l->period : 0;
  ev->trusted = l->locked && cur >= l->trusted_at;
  ev->steady = l->locked && l->steady;
  ev->step_ns = l->locked ? l->step_ns : 0;
  ev->gap_ns = l->locked ? l->gap_ns : 0;
}
