// SPDX-License-Identifier: Apache-2.0
// GPU-clock alignment: one offset off = GPU clock - CLOCK_REALTIME per rank (process), chosen
// before pass 1 so that every GPU time the analysis sees is on the host clock. Called by
// analyze.c: rp_align_scan once per binary trace (pass 0, its own open/read/close; it hands the
// trace's collectives to the caller's sink too), then rp_align_solve once. Definitions and the reasoning: docs/metrics.md, Alignment.
//
// Three kinds of evidence, none fooled by a late callback:
//  - lower bounds: a stop is reported after it happened, so pTimer - realtime(callback) <= off
//    (the header's calibration, and channel records when present);
//  - upper bounds: a kernel starts after its collective was enqueued, so
//    gpu_start - realtime(enqueue) >= off;
//  - anchors: a collective GPU-timed on several ranks of a communicator ends on all of them at
//    nearly the same instant, so off_r - off_ref = median(stop_r - stop_ref).
// Anchored ranks form a group with one unknown shift; every member's bounds bound the shift.
// Memory: up to ALIGN_BUDGET anchor samples over all sources (thinned by seq, the same seqs on
// every rank); the rest is per source or per rank.
// Arithmetic: inputs are within +-2^62 (TIME_LIMIT), but a bound is a difference of two such
// times and offsets chain through communicators, so bounds, offsets and errors use the whole
// int64 range: every sum and difference of them saturates (rp_add_sat, rp_sub_sat; an error
// that saturates is "at least 2^63 - 1 ns", never negative).
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "report.h"
#include "report_analysis.h"
#include "report_inputs.h"

#define TIME_LIMIT        ((int64_t)1 << 62)
#define ALIGN_BUDGET      (1u << 22) /* anchor samples over all sources */
#define ALIGN_MIN_SAMPLES 256u       /* per source, whatever the budget */
#define ALIGN_MAX_SAMPLES 4096u
#define ALIGN_MIN_ANCHORS 3 /* joined GPU-timed collectives to tie two ranks */
#define NONE_LO           INT64_MIN
#define NONE_HI           INT64_MAX

typedef struct anchor {
  uint64_t key; /* func << 56 | seq */
  int64_t stop; /* raw GPU clock */
} anchor;

typedef struct align_src {
  int scanned;
  int64_t lower, upper; /* NONE_LO / NONE_HI: none */
  anchor *a;
  size_t n, cap;
  uint64_t stride; /* keep seqs divisible by it (a power of two) */
  int64_t mono_to_real;
} align_src;

struct rp_align {
  int nsrc;
  align_src *src;
};

const char *rp_align_method_name(int method) {
  switch (method) {
  case RP_ALIGN_ONE_BOUND: return "one bound";
  case RP_ALIGN_BOUNDS: return "bounds";
  case RP_ALIGN_ANCHORED: return "anchored";
  default: return "none";
  }
}

int rp_align_estimate(int64_t lower, int64_t upper, int64_t *off, int64_t *err, int *inconsistent) {
  *inconsistent = 0;
  *err = -1;
  if (lower == NONE_LO && upper == NONE_HI) {
    *off = 0;
    return RP_ALIGN_NONE;
  }
  if (lower == NONE_LO || upper == NONE_HI) {
    *off = lower != NONE_LO ? lower : upper;
    return RP_ALIGN_ONE_BOUND;
  }
  if (lower > upper) {
    /* The upper bound's premise broke: NCCL records the enqueue after the launch (microseconds
     * on real GPUs), or the input is not causal. A callback is never early: keep the lower bound,
     * and take the disagreement as the error. */
    *inconsistent = 1;
    *off = lower;
    *err = rp_sub_sat(lower, upper);
    return RP_ALIGN_BOUNDS;
  }
  /* Inside the bounds, the lower one: the best of many stop callbacks lags its stop by a poll
   * (microseconds), the best enqueue leads its kernel by a launch and any queueing before it. */
  *off = lower;
  *err = rp_sub_sat(upper, lower); /* each bound is a difference of two times: may saturate */
  return RP_ALIGN_BOUNDS;
}

/* v = a - b when both are sane times and the result is too. */
static int diff_ok(int64_t a, int64_t b, int64_t *v) {
  if (a <= -TIME_LIMIT || a >= TIME_LIMIT || b <= -TIME_LIMIT || b >= TIME_LIMIT) return 0;
  *v = a - b;
  return 1;
}

static void add_anchor(align_src *s, uint64_t seq, int func, int64_t stop) {
  if (seq % s->stride) return;
  if (s->n == s->cap) { /* full: keep every other kept seq */
    s->stride *= 2;
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
      if (!((s->a[i].key & ((1ull << 56) - 1)) % s->stride)) s->a[k++] = s->a[i];
    s->n = k;
    if (seq % s->stride) return;
  }
  s->a[s->n].key = (uint64_t)func << 56 | (seq & ((1ull << 56) - 1));
  s->a[s->n].stop = stop;
  s->n++;
}

static void scan_record(void *vctx, int src, const topo_trace_record *rec) {
  align_src *s = vctx;
  int64_t v, real;
  (void)src;
  if (rec->type == TOPO_REC_COLL || rec->type == TOPO_REC_P2P) {
    const topo_rec_coll *c = &rec->coll;
    if (!(c->flags & TOPO_COLL_F_GPU_TIMED) || c->gpu_start_ns <= 0 ||
        c->gpu_stop_ns <= c->gpu_start_ns)
      return;
    if (c->cpu_start_ns > 0 && diff_ok(c->cpu_start_ns, -s->mono_to_real, &real) &&
        diff_ok(c->gpu_start_ns, real, &v) && v < s->upper)
      s->upper = v;
    if (rec->type == TOPO_REC_COLL && c->gpu_stop_ns < TIME_LIMIT)
      add_anchor(s, c->seq, c->func, c->gpu_stop_ns);
  } else if (rec->type == TOPO_REC_CHANNEL) {
    const topo_rec_channel *c = &rec->channel;
    if (c->cpu_stop_ns > 0 && c->gpu_stop_ns > 0 &&
        diff_ok(c->cpu_stop_ns, -s->mono_to_real, &real) && diff_ok(c->gpu_stop_ns, real, &v) &&
        v > s->lower)
      s->lower = v;
    if (c->cpu_start_ns > 0 && c->gpu_start_ns > 0 &&
        diff_ok(c->cpu_start_ns, -s->mono_to_real, &real) && diff_ok(c->gpu_start_ns, real, &v) &&
        v > s->lower)
      s->lower = v;
  }
}

/* The scan's sink context: the source's evidence, and the caller's sink for its collectives. */
typedef struct scan_ctx {
  align_src *as;
  const rp_sink *also;
} scan_ctx;

static void scan_rec(void *vctx, int src, const topo_trace_record *rec) {
  scan_record(((scan_ctx *)vctx)->as, src, rec);
}

static void scan_coll(void *vctx, int src, const rp_coll *c) {
  const rp_sink *also = ((scan_ctx *)vctx)->also;
  also->coll(also->ctx, src, c);
}

static int cmp_anchor(const void *a, const void *b) {
  uint64_t x = ((const anchor *)a)->key, y = ((const anchor *)b)->key;
  return (x > y) - (x < y);
}

topo_status rp_align_scan(rp_align **ap, int nsrc, rp_source *s, const rp_sink *also) {
  rp_align *a = *ap;
  if (!a) {
    if (!(a = topo_calloc(1, sizeof *a))) return TOPO_ERR_NOMEM;
    if (!(a->src = topo_calloc((size_t)(nsrc > 0 ? nsrc : 1), sizeof *a->src))) {
      topo_free(a);
      return TOPO_ERR_NOMEM;
    }
    a->nsrc = nsrc;
    *ap = a;
  }
  if (s->kind != RP_SRC_TRACE || s->index < 0 || s->index >= a->nsrc) return TOPO_OK;
  align_src *as = &a->src[s->index];
  size_t cap = ALIGN_BUDGET / (unsigned)(nsrc > 0 ? nsrc : 1);
  cap = cap < ALIGN_MIN_SAMPLES   ? ALIGN_MIN_SAMPLES
        : cap > ALIGN_MAX_SAMPLES ? ALIGN_MAX_SAMPLES
                                  : cap;
  if (!(as->a = topo_malloc(cap * sizeof *as->a))) return TOPO_ERR_NOMEM;
  as->cap = cap;
  as->stride = 1;
  as->lower = NONE_LO;
  as->upper = NONE_HI;
  if (rp_source_open(s, 0) != TOPO_OK || !s->header_ok) {
    rp_source_close(s);
    return TOPO_OK;
  }
  as->mono_to_real = s->mono_to_real;
  int64_t h = s->header.gpu_minus_realtime_ns;
  if (h != TOPO_TRACE_OFFSET_UNKNOWN && h > -TIME_LIMIT && h < TIME_LIMIT) as->lower = h;
  scan_ctx sc = {as, also};
  rp_sink sink = {&sc, also && also->coll ? scan_coll : NULL, NULL, NULL, scan_rec, NULL};
  while (rp_source_step(s, &sink, 0)) {}
  rp_source_close(s);
  qsort(as->a, as->n, sizeof *as->a, cmp_anchor);
  as->scanned = 1;
  return TOPO_OK;
}

void rp_align_free(rp_align *a) {
  if (!a) return;
  for (int i = 0; i < a->nsrc; i++) topo_free(a->src[i].a);
  topo_free(a->src);
  topo_free(a);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Sorts v. The median (lower middle) and the 90th percentile of |v - median|. */
static void robust(int64_t *v, size_t n, int64_t *median, int64_t *spread) {
  qsort(v, n, sizeof *v, cmp_i64);
  *median = v[(n - 1) / 2];
  for (size_t i = 0; i < n; i++)
    v[i] = v[i] >= *median ? rp_sub_sat(v[i], *median) : rp_sub_sat(*median, v[i]);
  qsort(v, n, sizeof *v, cmp_i64);
  *spread = v[(n * 9 + 9) / 10 - 1];
}

/* Offset of `m` against `ref` from their common anchors: 1 when there are enough. */
static int tie(const align_src *m, const align_src *ref, int64_t *tmp, int64_t *d, int64_t *err,
               uint64_t *count) {
  size_t i = 0, k = 0, n = 0;
  while (i < m->n && k < ref->n) {
    if (m->a[i].key < ref->a[k].key) i++;
    else if (m->a[i].key > ref->a[k].key) k++;
    else {
      tmp[n++] = m->a[i].stop - ref->a[k].stop; /* both < 2^62 and > 0 */
      i++, k++;
    }
  }
  if (n < ALIGN_MIN_ANCHORS) return 0;
  robust(tmp, n, d, err);
  *count = n;
  return 1;
}

typedef struct comm_tie {
  uint64_t hash;
  int nranks;
  int nmembers, tied;
  int *member;      /* source indices (a slice of one array shared by all communicators) */
  int64_t *d, *err; /* against the reference member (slices too) */
  uint64_t *count;
  uint8_t *ok;
} comm_tie;

typedef struct member_key {
  uint64_t hash;
  int nranks, index;
} member_key;

static int cmp_member_key(const void *a, const void *b) {
  const member_key *x = a, *y = b;
  if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
  if (x->nranks != y->nranks) return x->nranks < y->nranks ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

static int cmp_tie(const void *a, const void *b) {
  const comm_tie *x = a, *y = b;
  if (x->tied != y->tied) return y->tied - x->tied;
  return (x->hash > y->hash) - (x->hash < y->hash);
}

/* The shared arrays behind every comm_tie's slices. */
typedef struct tie_store {
  int *member;
  int64_t *d, *err;
  uint64_t *count;
  uint8_t *ok;
} tie_store;

static void tie_store_free(tie_store *m) {
  topo_free(m->member), topo_free(m->d), topo_free(m->err), topo_free(m->count), topo_free(m->ok);
}

/* The communicators of the scanned sources, found by sorting the sources by (hash, size): memory
 * and time follow the number of sources, whatever the number of communicators. */
static topo_status build_ties(rp_align *a, const rp_report *r, tie_store *m, comm_tie **out,
                              size_t *nout) {
  comm_tie *t = NULL;
  size_t nt = 0, n = 0, maxn = 0;
  size_t ns = (size_t)(r->nsrc > 0 ? r->nsrc : 1);
  for (int i = 0; i < a->nsrc; i++) maxn = a->src[i].n > maxn ? a->src[i].n : maxn;
  int64_t *tmp = topo_malloc((maxn ? maxn : 1) * sizeof *tmp);
  member_key *key = topo_malloc(ns * sizeof *key);
  m->member = topo_malloc(ns * sizeof *m->member);
  m->d = topo_calloc(ns, sizeof *m->d);
  m->err = topo_calloc(ns, sizeof *m->err);
  m->count = topo_calloc(ns, sizeof *m->count);
  m->ok = topo_calloc(ns, 1);
  if (!tmp || !key || !m->member || !m->d || !m->err || !m->count || !m->ok) goto nomem;
  for (int i = 0; i < r->nsrc && i < a->nsrc; i++) {
    const rp_source *s = &r->src[i];
    if (!a->src[i].scanned || !s->header.comm_hash || s->rank < 0 || s->proc < 0) continue;
    key[n++] = (member_key){s->header.comm_hash, s->nranks, i};
  }
  qsort(key, n, sizeof *key, cmp_member_key);
  if (!(t = topo_calloc(n ? n : 1, sizeof *t))) goto nomem;
  for (size_t k = 0; k < n; k++) {
    if (!k || key[k].hash != key[k - 1].hash || key[k].nranks != key[k - 1].nranks) {
      comm_tie *c = &t[nt++];
      c->hash = key[k].hash;
      c->nranks = key[k].nranks;
      c->member = m->member + k, c->d = m->d + k, c->err = m->err + k;
      c->count = m->count + k, c->ok = m->ok + k;
    }
    comm_tie *c = &t[nt - 1];
    c->member[c->nmembers++] = key[k].index;
  }
  for (size_t k = 0; k < nt; k++) {
    comm_tie *c = &t[k];
    int ref = 0;
    for (int mb = 1; mb < c->nmembers; mb++)
      if (a->src[c->member[mb]].n > a->src[c->member[ref]].n) ref = mb;
    for (int mb = 0; mb < c->nmembers; mb++)
      if (mb != ref && tie(&a->src[c->member[mb]], &a->src[c->member[ref]], tmp, &c->d[mb],
                           &c->err[mb], &c->count[mb]))
        c->ok[mb] = 1, c->tied++;
    if (c->tied) {
      c->ok[ref] = 1;
      c->tied++;
      for (int mb = 0; mb < c->nmembers; mb++)
        if (mb != ref && c->ok[mb] && c->count[mb] > c->count[ref]) c->count[ref] = c->count[mb];
    }
  }
  qsort(t, nt, sizeof *t, cmp_tie);
  topo_free(tmp), topo_free(key);
  *out = t;
  *nout = nt;
  return TOPO_OK;
nomem:
  topo_free(tmp), topo_free(key), topo_free(t);
  return TOPO_ERR_NOMEM;
}

/* Place the ranks of every tied communicator into groups sharing one unknown shift, strongest
 * communicator first; a rank keeps the first placement it gets. */
static topo_status place(const rp_report *r, comm_tie *t, size_t nt, int *group, int64_t *rel,
                         int64_t *relerr, int *ngroups) {
  int64_t *tmp = topo_malloc((size_t)(r->nsrc > 0 ? r->nsrc : 1) * sizeof *tmp);
  if (!tmp) return TOPO_ERR_NOMEM;
  for (size_t k = 0; k < nt; k++) {
    comm_tie *c = &t[k];
    if (c->tied < 2) continue;
    int g = -1;
    for (int m = 0; m < c->nmembers && g < 0; m++)
      if (c->ok[m]) g = group[r->src[c->member[m]].proc];
    int64_t shift = 0, shift_err = 0;
    if (g < 0) {
      g = (*ngroups)++;
    } else {
      size_t n = 0;
      for (int m = 0; m < c->nmembers; m++) {
        int p = r->src[c->member[m]].proc;
        if (!c->ok[m] || group[p] != g) continue;
        tmp[n++] = rp_sub_sat(rel[p], c->d[m]);
        if (rp_add_sat(relerr[p], c->err[m]) > shift_err)
          shift_err = rp_add_sat(relerr[p], c->err[m]);
      }
      int64_t spread;
      robust(tmp, n, &shift, &spread);
      shift_err = rp_add_sat(shift_err, spread);
    }
    for (int m = 0; m < c->nmembers; m++) {
      int p = r->src[c->member[m]].proc;
      if (!c->ok[m] || group[p] >= 0) continue;
      group[p] = g;
      rel[p] = rp_add_sat(c->d[m], shift);
      relerr[p] = rp_add_sat(c->err[m], shift_err);
      r->ranks[p].anchors += c->count[m];
    }
  }
  topo_free(tmp);
  return TOPO_OK;
}

/* Every rank's offset bounds from its binary traces' (lower, upper); has_gpu: it has GPU times
 * or an upper bound. group[p] = -1 (no anchor group yet). */
static void rank_bounds(const rp_align *a, rp_report *r, int *group, uint8_t *has_gpu) {
  int np = r->nranks;
  for (int p = 0; p < np; p++) {
    group[p] = -1;
    r->ranks[p].off_lower = NONE_LO;
    r->ranks[p].off_upper = NONE_HI;
  }
  for (int i = 0; i < r->nsrc && i < a->nsrc; i++) {
    const align_src *s = &a->src[i];
    int p = r->src[i].proc;
    if (!s->scanned || p < 0) continue;
    rp_rank *k = &r->ranks[p];
    if (s->lower > k->off_lower) k->off_lower = s->lower;
    if (s->upper < k->off_upper) k->off_upper = s->upper;
    has_gpu[p] |= s->n > 0 || s->upper != NONE_HI;
  }
}

/* Each rank on its own bounds; the members of an anchored group (group[p], rel[p] the offset
 * against the group, relerr[p] its error) share one shift instead where that is tighter.
 * members[g] counts group g's ranks (overwritten). */
static topo_status solve_groups(rp_report *r, const int *group, int *members, const int64_t *rel,
                                const int64_t *relerr, const uint8_t *has_gpu, int ngroups) {
  int np = r->nranks;
  size_t n = (size_t)np;
  /* the ranks group by group (a counting sort): group g's are in_group[at[g] .. at[g + 1]) */
  int *at = topo_calloc(n + 1, sizeof *at), *in_group = topo_malloc(n * sizeof *in_group);
  if (!at || !in_group) {
    topo_free(at), topo_free(in_group);
    return TOPO_ERR_NOMEM;
  }
  for (int g = 0; g < ngroups; g++) at[g + 1] = at[g] + members[g];
  for (int g = 0; g < ngroups; g++) members[g] = at[g]; /* now: where its next rank goes */
  for (int p = 0; p < np; p++) in_group[members[group[p]]++] = p;
  /* Each rank on its own bounds; an anchored group instead shares one shift, bounded by every
   * member's bounds, when its anchors bound the members' errors more tightly than their own
   * bounds do (late callbacks loosen the bounds; anchors do not care). */
  for (int p = 0; p < np; p++) {
    rp_rank *k = &r->ranks[p];
    k->align_method = rp_align_estimate(k->off_lower, k->off_upper, &k->gpu_offset, &k->align_err,
                                        &k->align_inconsistent);
  }
  for (int g = 0; g < ngroups; g++) {
    if (at[g + 1] - at[g] < 2) continue;
    int64_t lo = NONE_LO, hi = NONE_HI, c, err, worst_bounds = 0, worst_anchor = 0;
    for (int q = at[g]; q < at[g + 1]; q++) {
      int p = in_group[q];
      if (!has_gpu[p]) continue;
      const rp_rank *k = &r->ranks[p];
      if (k->off_lower != NONE_LO && rp_sub_sat(k->off_lower, rel[p]) > lo)
        lo = rp_sub_sat(k->off_lower, rel[p]);
      if (k->off_upper != NONE_HI && rp_sub_sat(k->off_upper, rel[p]) < hi)
        hi = rp_sub_sat(k->off_upper, rel[p]);
      if (worst_bounds >= 0 && (k->align_err < 0 || k->align_err > worst_bounds))
        worst_bounds = k->align_err;
      if (relerr[p] > worst_anchor) worst_anchor = relerr[p];
    }
    if (worst_bounds >= 0 && worst_bounds <= worst_anchor) continue;
    int inconsistent;
    rp_align_estimate(lo, hi, &c, &err, &inconsistent);
    for (int q = at[g]; q < at[g + 1]; q++) {
      int p = in_group[q];
      rp_rank *k = &r->ranks[p];
      k->gpu_offset = rp_add_sat(c, rel[p]);
      k->align_inconsistent = inconsistent;
      k->align_method = RP_ALIGN_ANCHORED;
      k->align_err = relerr[p];
    }
  }
  topo_free(at), topo_free(in_group);
  return TOPO_OK;
}

/* Ranks without GPU times are not aligned; the sources of the others get their rank's offset. */
static void apply_offsets(const rp_align *a, rp_report *r, const uint8_t *has_gpu) {
  int np = r->nranks;
  for (int p = 0; p < np; p++)
    if (!has_gpu[p]) r->ranks[p].align_method = RP_ALIGN_NONE, r->ranks[p].align_err = 0;
  for (int i = 0; i < r->nsrc && i < a->nsrc; i++) {
    rp_source *s = &r->src[i];
    if (!a->src[i].scanned || s->proc < 0 || r->ranks[s->proc].align_method == RP_ALIGN_NONE)
      continue;
    int64_t off = r->ranks[s->proc].gpu_offset;
    s->gpu_to_real = off == INT64_MIN ? INT64_MAX : -off;
    s->gpu_aligned = 1;
  }
}

/* The bound on the error of two ranks' GPU times against each other; -1 unbounded. */
static int64_t cross_rank_error(const rp_report *r, const uint8_t *has_gpu) {
  int np = r->nranks;
  /* two ranks' GPU times are off against each other by at most the sum of their errors */
  int64_t e1 = 0, e2 = 0;
  for (int p = 0; p < np; p++) {
    if (!has_gpu[p]) continue;
    int64_t e = r->ranks[p].align_err;
    if (e < 0) {
      e1 = -1;
      break;
    }
    if (e > e1) e2 = e1, e1 = e;
    else if (e > e2) e2 = e;
  }
  return e1 < 0 ? -1 : rp_add_sat(e1, e2);
}

topo_status rp_align_solve(rp_align *a, rp_report *r) {
  int np = r->nranks;
  r->align_err = 0;
  if (!a || np <= 0) return TOPO_OK;
  size_t n = (size_t)np;
  int *group = topo_malloc(n * sizeof *group), *members = topo_calloc(n, sizeof *members);
  int64_t *rel = topo_calloc(n, sizeof *rel), *relerr = topo_calloc(n, sizeof *relerr);
  uint8_t *has_gpu = topo_calloc(n, 1);
  comm_tie *t = NULL;
  size_t nt = 0;
  tie_store store = {0};
  topo_status st = TOPO_ERR_NOMEM;
  if (!group || !members || !rel || !relerr || !has_gpu) goto out;
  rank_bounds(a, r, group, has_gpu);
  if ((st = build_ties(a, r, &store, &t, &nt)) != TOPO_OK) goto out;
  int ngroups = 0;
  if ((st = place(r, t, nt, group, rel, relerr, &ngroups)) != TOPO_OK) goto out;
  for (int p = 0; p < np; p++)
    if (group[p] < 0) group[p] = ngroups++;
  for (int p = 0; p < np; p++) members[group[p]]++;
  if ((st = solve_groups(r, group, members, rel, relerr, has_gpu, ngroups)) != TOPO_OK) goto out;
  apply_offsets(a, r, has_gpu);
  r->align_err = cross_rank_error(r, has_gpu);
  st = TOPO_OK;
out:
  tie_store_free(&store);
  topo_free(t);
  topo_free(group), topo_free(members), topo_free(rel), topo_free(relerr), topo_free(has_gpu);
  return st;
}
