// SPDX-License-Identifier: Apache-2.0
// Estimated GPU durations for collectives that have none (not sampled, or their kernel-channel
// events were lost): a table of the measured durations by (communicator size, function, size
// bucket, algorithm, protocol, channels), filled in pass 1 of the analysis (analyze_pass1.c), frozen by
// rp_est_finish, then asked once per untimed collective in pass 2. Rules and error model:
// docs/metrics.md, "Estimated durations". Single-threaded; memory grows with distinct keys only.
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "report.h"

#define ANY_CHANNELS (-1)

typedef struct est_entry {
  rp_est_key key; /* nchannels == ANY_CHANNELS: pooled over channel counts */
  rp_quant time;
  double size_sum;        /* nccl-tests sizes of the measured calls */
  int64_t median, spread; /* set by rp_est_finish; spread = (p90 - p10) / 2 */
} est_entry;

struct rp_estimator {
  est_entry *e;
  size_t n, cap;
  int oom;
};

static int key_eq(const rp_est_key *a, const rp_est_key *b) {
  return a->nranks == b->nranks && a->func == b->func && a->bucket == b->bucket &&
         a->algo == b->algo && a->proto == b->proto && a->nchannels == b->nchannels;
}

static est_entry *find(const rp_estimator *x, const rp_est_key *k) {
  for (size_t i = 0; i < x->n; i++)
    if (key_eq(&x->e[i].key, k)) return &x->e[i];
  return NULL;
}

static est_entry *find_or_add(rp_estimator *x, const rp_est_key *k) {
  est_entry *e = find(x, k);
  if (e) return e;
  if (x->n == x->cap) {
    size_t cap = x->cap ? x->cap * 2 : 16;
    est_entry *v = topo_realloc(x->e, cap * sizeof *v);
    if (!v) return NULL;
    x->e = v;
    x->cap = cap;
  }
  e = &x->e[x->n++];
  memset(e, 0, sizeof *e);
  e->key = *k;
  return e;
}

rp_estimator *rp_est_new(void) { return topo_calloc(1, sizeof(rp_estimator)); }

void rp_est_measured(rp_estimator *x, const rp_est_key *k, uint64_t size, int64_t dur) {
  rp_est_key pooled = *k;
  pooled.nchannels = ANY_CHANNELS;
  est_entry *e = find_or_add(x, k);
  est_entry *p = k->nchannels == ANY_CHANNELS ? e : find_or_add(x, &pooled);
  if (!e || !p) {
    x->oom = 1;
    return;
  }
  rp_quant_add(&e->time, dur);
  e->size_sum += (double)size;
  if (p != e) {
    rp_quant_add(&p->time, dur);
    p->size_sum += (double)size;
  }
}

void rp_est_finish(rp_estimator *x) {
  for (size_t i = 0; i < x->n; i++) {
    est_entry *e = &x->e[i];
    e->median = rp_quant_get(&e->time, 0.5);
    e->spread = (rp_quant_get(&e->time, 0.9) - rp_quant_get(&e->time, 0.1)) / 2;
  }
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
  /* The nearest measured bucket of the same (size, function, algorithm, protocol); ties go to
   * the larger bucket (closer to bandwidth-bound, which the size scaling assumes). */
  const est_entry *best = NULL;
  int best_d = 0;
  for (size_t i = 0; i < x->n; i++) {
    const est_entry *c = &x->e[i];
    if (c->key.nchannels != ANY_CHANNELS || !c->time.n || c->key.nranks != k->nranks ||
        c->key.func != k->func || c->key.algo != k->algo || c->key.proto != k->proto ||
        c->key.bucket < 0 || k->bucket < 0 || c->size_sum <= 0)
      continue;
    int d = c->key.bucket > k->bucket ? c->key.bucket - k->bucket : k->bucket - c->key.bucket;
    if (!best || d < best_d || (d == best_d && c->key.bucket > best->key.bucket))
      best = c, best_d = d;
  }
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
