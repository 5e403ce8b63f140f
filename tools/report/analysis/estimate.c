// SPDX-License-Identifier: Apache-2.0
// Estimated GPU durations for collectives that have none (not sampled, or their kernel-channel
// events were lost): the mean and spread of the measured durations by (communicator size,
// function, size bucket, algorithm, protocol, channels) and phase (start-up or after it: a call
// is estimated from the measured calls of its own phase where there are some, else from both),
// filled in pass 0 of the analysis
// (analyze.c), frozen by rp_est_finish, then asked by the join (pass 1) and once per untimed
// collective in pass 2. Rules and error model:
// docs/metrics.md, "Estimated durations". Single-threaded; memory grows with distinct keys only.
// A key is found through a hash table; the size-scaled fallback by a binary search over the pooled
// entries sorted at rp_est_finish: each call costs O(log keys), however many keys the input names.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "report.h"
#include "report_analysis.h"

#define ANY_CHANNELS (-1)
#define ANY_SOURCE   (-1)
#define ANY_PHASE    (-1)

typedef struct scaled_ref {
  rp_est_key key;
  uint32_t at; /* its entry */
} scaled_ref;

typedef struct est_entry {
  rp_est_key key;    /* nchannels == ANY_CHANNELS: pooled over channel counts; phase ==
                      * ANY_PHASE: over both phases */
  uint64_t n;        /* measured calls */
  double mean, m2;   /* their durations' running mean and sum of squared deviations (Welford) */
  double size_sum;   /* nccl-tests sizes of the measured calls */
  double sd, dof, q; /* set by rp_est_finish: the spread of one call, its degrees of freedom, and
                      * the two-sided 95 % t quantile of those (1 when nothing gives a spread) */
} est_entry;

struct rp_estimator {
  est_entry *e;
  size_t n, cap;
  uint32_t *slot; /* open addressing over the keys: entry index + 1, 0 = empty; at most half full */
  size_t nslot;
  /* rp_est_finish: the pooled entries a size-scaled estimate may come from, sorted by (nranks,
   * func, algo, proto, bucket) */
  struct scaled_ref *scaled;
  size_t nscaled;
  int oom;
};

static int key_eq(const rp_est_key *a, const rp_est_key *b) {
  return a->nranks == b->nranks && a->func == b->func && a->bucket == b->bucket &&
         a->algo == b->algo && a->proto == b->proto && a->nchannels == b->nchannels &&
         a->src == b->src && a->phase == b->phase;
}

static uint64_t key_hash(const rp_est_key *k) {
  const int v[8] = {k->nranks, k->func,      k->bucket, k->algo,
                    k->proto,  k->nchannels, k->src,    k->phase};
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 8; i++) {
    h = (h ^ (uint32_t)v[i]) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  return h;
}

/* The slot of key k: the one holding it, or the empty one where it would go. */
static size_t slot_of(const rp_estimator *x, const rp_est_key *k) {
  size_t i = key_hash(k) & (x->nslot - 1);
  while (x->slot[i] && !key_eq(&x->e[x->slot[i] - 1].key, k)) i = (i + 1) & (x->nslot - 1);
  return i;
}

static est_entry *find(const rp_estimator *x, const rp_est_key *k) {
  if (!x->nslot) return NULL;
  uint32_t at = x->slot[slot_of(x, k)];
  return at ? &x->e[at - 1] : NULL;
}

/* Room for one more entry: the array and the table (rehashed at half full). 0 out of memory. */
static int reserve(rp_estimator *x) {
  if (x->n == x->cap) {
    size_t cap = x->cap ? x->cap * 2 : 16;
    est_entry *v = x->n < UINT32_MAX - 1 ? topo_realloc(x->e, cap * sizeof *v) : NULL;
    if (!v) return 0;
    x->e = v;
    x->cap = cap;
  }
  if (2 * (x->n + 1) <= x->nslot) return 1;
  size_t nslot = x->nslot ? 2 * x->nslot : 64;
  uint32_t *slot = topo_calloc(nslot, sizeof *slot);
  if (!slot) return 0;
  topo_free(x->slot);
  x->slot = slot;
  x->nslot = nslot;
  for (size_t i = 0; i < x->n; i++) x->slot[slot_of(x, &x->e[i].key)] = (uint32_t)i + 1;
  return 1;
}

/* The index of key k's entry, added when new; -1 out of memory. An index, not a pointer: adding
 * an entry may move them all. */
static long find_or_add(rp_estimator *x, const rp_est_key *k) {
  est_entry *e = find(x, k);
  if (e) return e - x->e;
  if (!reserve(x)) return -1;
  x->slot[slot_of(x, k)] = (uint32_t)x->n + 1;
  e = &x->e[x->n];
  memset(e, 0, sizeof *e);
  e->key = *k;
  return (long)x->n++;
}

rp_estimator *rp_est_new(void) { return topo_calloc(1, sizeof(rp_estimator)); }

static void add_to(est_entry *e, uint64_t size, int64_t dur) {
  double d = (double)dur - e->mean;
  e->n++;
  e->mean += d / (double)e->n;
  e->m2 += d * ((double)dur - e->mean);
  e->size_sum += (double)size;
}

/* The two-sided 95 % quantile of Student's t with `dof` degrees of freedom: exact to 3 decimals up
 * to 30, then the Cornish-Fisher expansion around the normal's 1.96 (error < 0.001). */
double rp_t975(double dof) {
  static const double t[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                               2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                               2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                               2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof < 1) return t[0];
  if (dof <= 30 && dof == floor(dof)) return t[(int)dof - 1];
  const double z = 1.959964;
  return z + (z * z * z + z) / (4 * dof) +
         (5 * pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * dof * dof);
}

/* A measured call counts in its own key (its trace), in the key over every trace, and in the
 * key over every trace and channel count; each of its own phase and over both phases. */
void rp_est_measured(rp_estimator *x, const rp_est_key *k, uint64_t size, int64_t dur) {
  rp_est_key keys[6];
  keys[0] = keys[1] = keys[2] = *k;
  keys[1].src = keys[2].src = ANY_SOURCE;
  keys[2].nchannels = ANY_CHANNELS;
  for (int i = 0; i < 3; i++) {
    keys[3 + i] = keys[i];
    keys[3 + i].phase = ANY_PHASE;
  }
  long at[6];
  for (int i = 0; i < 6; i++)
    if ((at[i] = find_or_add(x, &keys[i])) < 0) {
      x->oom = 1;
      return;
    }
  for (int i = 0; i < 6; i++) {
    int seen = 0;
    for (int j = 0; j < i; j++) seen |= at[j] == at[i];
    if (!seen) add_to(&x->e[at[i]], size, dur);
  }
}

/* Order of the entries a size-scaled estimate may come from: by (nranks, func, algo, proto),
 * then bucket. */
static int cmp_group(const rp_est_key *a, const rp_est_key *b) {
  const int va[4] = {a->nranks, a->func, a->algo, a->proto};
  const int vb[4] = {b->nranks, b->func, b->algo, b->proto};
  for (int i = 0; i < 4; i++)
    if (va[i] != vb[i]) return va[i] < vb[i] ? -1 : 1;
  return 0;
}

static int cmp_scaled_key(const rp_est_key *a, const rp_est_key *b) {
  int g = cmp_group(a, b);
  return g ? g : (a->bucket > b->bucket) - (a->bucket < b->bucket);
}

static int cmp_scaled(const void *a, const void *b) {
  return cmp_scaled_key(&((const scaled_ref *)a)->key, &((const scaled_ref *)b)->key);
}

void rp_est_finish(rp_estimator *x) {
  topo_free(x->scaled);
  x->scaled = NULL;
  x->nscaled = 0;
  /* Keys over every trace first: their own spread (n - 1 degrees of freedom); measured once, the
   * relative spread pooled over the keys of the same phase (or over both) measured more than once
   * (weighted by their degrees of freedom); nothing measured twice anywhere: the value itself, no
   * coverage promised (q = 1). */
  double cv2[3] = {0}, dof[3] = {0}; /* by phase + 1: both, after start-up, start-up */
  for (size_t i = 0; i < x->n; i++) {
    const est_entry *e = &x->e[i];
    if (e->key.nchannels == ANY_CHANNELS || e->key.src != ANY_SOURCE || e->n < 2 || !(e->mean > 0))
      continue;
    cv2[e->key.phase + 1] += e->m2 / (e->mean * e->mean);
    dof[e->key.phase + 1] += (double)(e->n - 1);
  }
  for (size_t i = 0; i < x->n; i++) {
    est_entry *e = &x->e[i];
    if (e->key.src != ANY_SOURCE) continue;
    int p = dof[e->key.phase + 1] > 0 ? e->key.phase + 1 : 0;
    if (e->n >= 2) {
      e->sd = sqrt(e->m2 / (double)(e->n - 1));
      e->dof = (double)(e->n - 1);
    } else if (dof[p] > 0) {
      e->sd = sqrt(cv2[p] / dof[p]) * e->mean;
      e->dof = dof[p];
    } else {
      e->sd = e->mean;
      e->dof = 0;
    }
    e->q = e->dof > 0 ? rp_t975(e->dof) : 1;
  }
  /* A key of one trace (rank): its own spread, starting from its key's spread over every trace
   * with the weight of one degree of freedom (a call or two tell little about a spread; many
   * calls outweigh the start): sd^2 = ((n - 1) own^2 + all^2) / n, n degrees of freedom. */
  for (size_t i = 0; i < x->n; i++) {
    est_entry *e = &x->e[i];
    if (e->key.src == ANY_SOURCE) continue;
    rp_est_key k = e->key;
    k.src = ANY_SOURCE;
    const est_entry *all = find(x, &k);
    double own = e->n >= 2 ? e->m2 : 0, prior = all ? all->sd * all->sd : e->mean * e->mean;
    double prior_dof = all && all->dof > 0 ? 1 : 0;
    e->dof = (double)(e->n - 1) + prior_dof;
    e->sd = e->dof > 0 ? sqrt((own + prior_dof * prior) / e->dof) : e->mean;
    e->q = e->dof > 0 ? rp_t975(e->dof) : 1;
  }
  if (!x->n) return;
  if (!(x->scaled = topo_malloc(x->n * sizeof *x->scaled))) {
    x->oom = 1;
    return;
  }
  for (size_t i = 0; i < x->n; i++) {
    const est_entry *c = &x->e[i];
    if (c->key.nchannels == ANY_CHANNELS && c->key.src == ANY_SOURCE && c->key.phase == ANY_PHASE &&
        c->n && c->key.bucket >= 0 && c->size_sum > 0)
      x->scaled[x->nscaled++] = (scaled_ref){c->key, (uint32_t)i};
  }
  qsort(x->scaled, x->nscaled, sizeof *x->scaled, cmp_scaled);
}

/* The scaled entry for k: the measured bucket nearest to k's of the same (size, function,
 * algorithm, protocol); ties go to the larger bucket (closer to bandwidth-bound, which the size
 * scaling assumes). NULL when there is none. */
static const est_entry *nearest_bucket(const rp_estimator *x, const rp_est_key *k) {
  if (k->bucket < 0) return NULL;
  size_t lo = 0, hi = x->nscaled;
  while (lo < hi) { /* the first entry at or after k */
    size_t m = lo + (hi - lo) / 2;
    if (cmp_scaled_key(&x->scaled[m].key, k) < 0) lo = m + 1;
    else hi = m;
  }
  const scaled_ref *above = lo < x->nscaled ? &x->scaled[lo] : NULL;
  const scaled_ref *below = lo > 0 ? &x->scaled[lo - 1] : NULL;
  if (above && cmp_group(&above->key, k)) above = NULL;
  if (below && cmp_group(&below->key, k)) below = NULL;
  if (above && below && above->key.bucket - k->bucket > k->bucket - below->key.bucket) above = NULL;
  return above ? &x->e[above->at] : below ? &x->e[below->at] : NULL;
}

/* One estimate from an entry of k measurements (docs/metrics.md, Estimated durations): their
 * mean, and as error terms at ~95 % (t quantile q of the spread's degrees of freedom) the scatter
 * of one call, q x sd, and the error of the mean that every call estimated from the entry shares:
 * q x sd / sqrt(k) for its own key; for a borrowed one (another channel count), whose mean may lie
 * anywhere in the entry's spread, q x sd x sqrt(1 + 1 / k). */
static void from_entry(const est_entry *e, double scale, int borrowed, rp_estimate *out) {
  double k = (double)e->n, sd = e->sd * scale;
  out->dur = rp_dbl_ns(e->mean * scale);
  out->err = rp_dbl_ns(e->q * sd);
  out->bias = rp_dbl_ns(e->q * sd * (borrowed ? sqrt(1 + 1 / k) : 1 / sqrt(k)));
}

/* The estimate from measured calls of k's phase `phase` (ANY_PHASE: both): its key, other ranks',
 * any channel count. Its level, RP_EST_UNKNOWN when none of them has measured calls. */
static int from_phase(const rp_estimator *x, const rp_est_key *k, int phase, rp_estimate *out) {
  rp_est_key own = *k;
  own.phase = phase;
  const est_entry *e = find(x, &own);
  if (e && e->n) {
    from_entry(e, 1.0, 0, out);
    return out->level = RP_EST_KEY;
  }
  rp_est_key pooled = own;
  pooled.src = ANY_SOURCE;
  e = find(x, &pooled);
  if (e && e->n) { /* other ranks' calls: their mean may lie anywhere in their spread */
    from_entry(e, 1.0, 1, out);
    return out->level = RP_EST_OTHER_RANKS;
  }
  pooled.nchannels = ANY_CHANNELS;
  e = find(x, &pooled);
  if (e && e->n) {
    from_entry(e, 1.0, 1, out);
    return out->level = RP_EST_ANY_CHANNELS;
  }
  return RP_EST_UNKNOWN;
}

/* A call's own phase first: start-up's durations (first calls, waits for a peer's first step)
 * are not those of the steady state, nor the other way round; a phase without measured calls of
 * the key borrows from both. */
int rp_est_get(const rp_estimator *x, const rp_est_key *k, uint64_t size, rp_estimate *out) {
  memset(out, 0, sizeof *out);
  if (from_phase(x, k, k->phase, out) || from_phase(x, k, ANY_PHASE, out)) return out->level;
  rp_est_key any = *k;
  any.phase = ANY_PHASE;
  const est_entry *best = nearest_bucket(x, &any);
  if (!best) return out->level = RP_EST_UNKNOWN;
  double scale = (double)size / (best->size_sum / (double)best->n);
  from_entry(best, scale, 1, out);
  /* The size scaling is a model: half the estimate is its error, shared by every call. */
  if (out->bias < out->dur / 2) out->bias = out->dur / 2;
  if (out->err < out->bias) out->err = out->bias;
  return out->level = RP_EST_SCALED;
}

int rp_est_failed(const rp_estimator *x) { return x->oom; }

void rp_est_free(rp_estimator *x) {
  if (!x) return;
  topo_free(x->e);
  topo_free(x->slot);
  topo_free(x->scaled);
  topo_free(x);
}

void rp_err_add(rp_err *a, const rp_estimate *e) {
  a->var += (double)e->err * (double)e->err;
  a->bias += (double)e->bias;
  a->sum += (double)e->dur;
}

void rp_err_sum(rp_err *a, const rp_err *b) {
  a->var += b->var;
  a->bias += b->bias;
  a->sum += b->sum;
}

int64_t rp_err_ns(const rp_err *a) { return rp_dbl_ns(sqrt(a->var + a->bias * a->bias) + 0.5); }

int64_t rp_comm_error_ns(int64_t est, const rp_err *a) {
  if (!(a->sum > 0)) return 0;
  double hidden = a->sum - (double)est;
  return rp_add_sat(rp_err_ns(a), hidden > 0 ? rp_dbl_ns(hidden) : 0);
}
