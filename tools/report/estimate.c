// SPDX-License-Identifier: Apache-2.0
// Estimated GPU durations for collectives that have none (not sampled, or their kernel-channel
// events were lost): a table of the measured durations by (communicator size, function, size
// bucket, algorithm, protocol, channels), filled in pass 1 of the analysis (analyze_pass1.c), frozen by
// rp_est_finish, then asked once per untimed collective in pass 2. Rules and error model:
// docs/metrics.md, "Estimated durations". Single-threaded; memory grows with distinct keys only.
// A key is found through a hash table; the size-scaled fallback by a binary search over the pooled
// entries sorted at rp_est_finish: each call costs O(log keys), however many keys the input names.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "report.h"

#define ANY_CHANNELS (-1)

typedef struct scaled_ref {
  rp_est_key key;
  uint32_t at; /* its entry */
} scaled_ref;

typedef struct est_entry {
  rp_est_key key; /* nchannels == ANY_CHANNELS: pooled over channel counts */
  rp_quant time;
  double size_sum;        /* nccl-tests sizes of the measured calls */
  int64_t median, spread; /* set by rp_est_finish; spread = (p90 - p10) / 2 */
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
         a->algo == b->algo && a->proto == b->proto && a->nchannels == b->nchannels;
}

static uint64_t key_hash(const rp_est_key *k) {
  const int v[6] = {k->nranks, k->func, k->bucket, k->algo, k->proto, k->nchannels};
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 6; i++) {
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
  rp_quant_add(&e->time, dur);
  e->size_sum += (double)size;
}

void rp_est_measured(rp_estimator *x, const rp_est_key *k, uint64_t size, int64_t dur) {
  rp_est_key pooled = *k;
  pooled.nchannels = ANY_CHANNELS;
  long e = find_or_add(x, k);
  long p = k->nchannels == ANY_CHANNELS ? e : find_or_add(x, &pooled);
  if (e < 0 || p < 0) {
    x->oom = 1;
    return;
  }
  add_to(&x->e[e], size, dur);
  if (p != e) add_to(&x->e[p], size, dur);
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
  for (size_t i = 0; i < x->n; i++) {
    est_entry *e = &x->e[i];
    e->median = rp_quant_get(&e->time, 0.5);
    e->spread = (rp_quant_get(&e->time, 0.9) - rp_quant_get(&e->time, 0.1)) / 2;
  }
  if (!x->n) return;
  if (!(x->scaled = topo_malloc(x->n * sizeof *x->scaled))) {
    x->oom = 1;
    return;
  }
  for (size_t i = 0; i < x->n; i++) {
    const est_entry *c = &x->e[i];
    if (c->key.nchannels == ANY_CHANNELS && c->time.n && c->key.bucket >= 0 && c->size_sum > 0)
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

/* The error terms of one estimate from an entry of k measurements: the scatter of one call
 * (the spread) and the uncertainty of the median that every call of the key shares
 * (spread / sqrt(k)). One measurement has no spread: half its value stands for both. */
static void from_entry(const est_entry *e, double scale, rp_estimate *out) {
  double k = (double)e->time.n;
  double dur = (double)e->median * scale, spread = (double)e->spread * scale;
  out->dur = rp_dbl_ns(dur);
  if (e->time.n < 2) {
    out->err = out->bias = rp_dbl_ns(dur / 2);
    return;
  }
  out->err = rp_dbl_ns(spread);
  out->bias = rp_dbl_ns(spread / sqrt(k));
}

int rp_est_get(const rp_estimator *x, const rp_est_key *k, uint64_t size, rp_estimate *out) {
  memset(out, 0, sizeof *out);
  const est_entry *e = find(x, k);
  if (e && e->time.n) {
    from_entry(e, 1.0, out);
    return out->level = RP_EST_KEY;
  }
  rp_est_key pooled = *k;
  pooled.nchannels = ANY_CHANNELS;
  e = find(x, &pooled);
  if (e && e->time.n) {
    from_entry(e, 1.0, out);
    return out->level = RP_EST_ANY_CHANNELS;
  }
  const est_entry *best = nearest_bucket(x, k);
  if (!best) return out->level = RP_EST_UNKNOWN;
  double scale = (double)size / (best->size_sum / (double)best->time.n);
  from_entry(best, scale, out);
  /* The size scaling is a model: half the estimate is its error, shared by every call. */
  if (out->bias < out->dur / 2) out->bias = out->dur / 2;
  if (out->err < out->bias) out->err = out->bias;
  return out->level = RP_EST_SCALED;
}

int rp_est_failed(const rp_estimator *x) { return x->oom; }

void rp_est_free(rp_estimator *x) {
  if (!x) return;
  for (size_t i = 0; i < x->n; i++) rp_quant_free(&x->e[i].time);
  topo_free(x->e);
  topo_free(x->slot);
  topo_free(x->scaled);
  topo_free(x);
}

void rp_err_add(rp_err *a, const rp_estimate *e) {
  a->var += (double)e->err * (double)e->err;
  a->bias += (double)e->bias;
}

void rp_err_sum(rp_err *a, const rp_err *b) {
  a->var += b->var;
  a->bias += b->bias;
}

int64_t rp_err_ns(const rp_err *a) { return rp_dbl_ns(sqrt(a->var + a->bias * a->bias) + 0.5); }
