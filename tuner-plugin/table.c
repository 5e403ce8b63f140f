// SPDX-License-Identifier: Apache-2.0
// Decision table (see table.h): built once per distinct communicator shape, read lock-free.
#include "table.h"

#include <math.h>
#include <string.h>

#include "alloc.h"

/* Bucket i covers [edge(i), edge(i+1)): two per octave, at 2^k and 1.5 x 2^k. */
static double edge_bytes(int i) { return i < 2 ? (double)i : ldexp(i % 2 ? 1.5 : 1.0, i / 2); }

int topo_table_bucket(size_t nbytes) {
  if (nbytes < 2) return (int)nbytes;
  int k = 63 - __builtin_clzll((unsigned long long)nbytes);
  int i = 2 * k + (int)((nbytes >> (k - 1)) & 1);
  return i < TOPO_TABLE_BUCKETS ? i : TOPO_TABLE_BUCKETS - 1;
}

/* Algorithms whose cost depends on regBuff in the model. */
static int uses_reg(int algo) {
  return algo == NCCL_ALGO_NVLS || algo == NCCL_ALGO_NVLS_TREE ||
         algo == NCCL_ALGO_COLLNET_DIRECT || algo == NCCL_ALGO_COLLNET_CHAIN;
}

/* Walks the pieces of one (coll, algo, proto, nch) in size order: queries must come with
 * non-decreasing sizes (the table is filled bucket by bucket), each O(1) amortised. */
typedef struct term_cursor {
  const topo_profile_term *cur, *end; /* cur == end: the key has no (more) pieces */
} term_cursor;

static term_cursor cursor_init(const topo_profile *p, int coll, int algo, int proto, int nch) {
  const topo_profile_term *t = topo_profile_find_term(p, coll, algo, proto, nch);
  const topo_profile_term *end = t ? p->terms + p->nterms : NULL;
  return (term_cursor){t, end};
}

/* The piece covering `bytes`, or NULL. */
static const topo_profile_term *cursor_at(term_cursor *c, double bytes) {
  if (c->cur == c->end) return NULL;
  const topo_profile_term *k = c->cur;
  while (c->cur + 1 < c->end && (double)c->cur->max_bytes < bytes && c->cur[1].coll == k->coll &&
         c->cur[1].algo == k->algo && c->cur[1].proto == k->proto &&
         c->cur[1].nchannels == k->nchannels)
    c->cur++;
  const topo_profile_term *t = c->cur;
  return (double)t->min_bytes <= bytes && bytes <= (double)t->max_bytes ? t : NULL;
}

/* A measured piece covering `bytes` with a fit error within TOPO_TABLE_CHANNEL_MAX_FIT_ERR: its
 * prediction there (us), else -1. */
static double measured_us(term_cursor *c, double bytes) {
  const topo_profile_term *t = cursor_at(c, bytes);
  if (!t || t->rel_err > TOPO_TABLE_CHANNEL_MAX_FIT_ERR || t->npoints < 2) return -1;
  return t->lat_us + bytes / (t->bw_gbs * 1e3);
}

/* Channel count below NCCL's own worth returning for (coll, algo, proto) in bucket [lo, hi):
 * "never worse than NCCL's default", so only on measured evidence: the smallest count k of
 * `counts` (ascending, those the profile has terms for) below NCCL's own count at lo whose
 * piece measured AT k covers both edges with a small fit error and predicts within the tolerance
 * of the piece measured for NCCL's own count (channels=0, same conditions) at both edges. 0
 * otherwise: a profile without such terms (the built-in one) never reduces channels.
 * `ref` walks channels=0, `cur[i]` counts[i]; called for ascending buckets. */
static int pick_channels(const topo_model *m, int algo, int proto, double lo, double hi,
                         const int *counts, int ncounts, term_cursor *ref, term_cursor *cur) {
  if (algo != NCCL_ALGO_RING && algo != NCCL_ALGO_TREE && algo != NCCL_ALGO_PAT) return 0;
  if (!ncounts || counts[0] >= m->model_channels) return 0;
  int own = topo_model_nccl_channels(m, algo, proto, lo);
  if (own <= 1 || counts[0] >= own) return 0;
  double r_lo = measured_us(ref, lo), r_hi = measured_us(ref, hi);
  if (r_lo <= 0 || r_hi <= 0) return 0;
  for (int i = 0; i < ncounts && counts[i] < own; i++) {
    double a = measured_us(&cur[i], lo), b = measured_us(&cur[i], hi);
    if (a < 0 || a > r_lo * TOPO_TABLE_CHANNEL_TOLERANCE) continue;
    if (b < 0 || b > r_hi * TOPO_TABLE_CHANNEL_TOLERANCE) continue;
    return counts[i];
  }
  return 0;
}

/* Fit error of the channels=0 piece behind a prediction at `bytes`; 0 if none (link model). */
static double fit_err(term_cursor *c, double bytes) {
  const topo_profile_term *t = cursor_at(c, bytes);
  return t && isfinite(t->rel_err) ? t->rel_err : 0.0;
}

/* Channel counts 1..64 the profile has terms for, per (coll, algo, proto): bit k-1 = count k.
 * One pass over the terms. */
typedef uint64_t count_masks[NCCL_NUM_FUNCTIONS][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];

static void term_counts(const topo_profile *p, count_masks masks) {
  memset(masks, 0, sizeof(count_masks));
  for (int i = 0; i < p->nterms; i++) {
    const topo_profile_term *t = &p->terms[i];
    if (t->coll < 0 || t->coll >= NCCL_NUM_FUNCTIONS || t->algo < 0 ||
        t->algo >= NCCL_NUM_ALGORITHMS || t->proto < 0 || t->proto >= NCCL_NUM_PROTOCOLS ||
        t->nchannels <= 0 || t->nchannels > 64)
      continue;
    masks[t->coll][t->algo][t->proto] |= 1ull << (t->nchannels - 1);
  }
}

static void fill_entry(const topo_model *m, topo_table *t, int coll, int algo, int proto, int reg,
                       uint64_t mask) {
  double lat_e[TOPO_TABLE_BUCKETS + 1], x_e[TOPO_TABLE_BUCKETS + 1];
  int counts[64], ncounts = 0;
  term_cursor cur[64], ref = cursor_init(m->prof, coll, algo, proto, 0), err = ref;
  for (int k = 0; k < 64 && !reg; k++)
    if (mask >> k & 1) {
      cur[ncounts] = cursor_init(m->prof, coll, algo, proto, k + 1);
      counts[ncounts++] = k + 1;
    }
  int ok = 1;
  for (int e = 0; e <= TOPO_TABLE_BUCKETS && ok; e++)
    ok = topo_model_parts(m, coll, algo, proto, 0, edge_bytes(e), reg, &lat_e[e], &x_e[e]) == 0;
  for (int b = 0; b < TOPO_TABLE_BUCKETS; b++) {
    topo_table_cell *c = &t->cells[coll][b][reg];
    if (!ok) {
      c->e[algo][proto].lat = -1.0f;
      continue;
    }
    double lo = edge_bytes(b), hi = edge_bytes(b + 1);
    double t_lo = lat_e[b] + x_e[b], t_hi = lat_e[b + 1] + x_e[b + 1];
    double slope = (t_hi - t_lo) / (hi - lo);
    c->e[algo][proto] = (topo_table_entry){(float)lat_e[b], (float)x_e[b],
                                           (float)(slope > 0 ? slope : 0),
                                           (float)fmax(fit_err(&err, lo), fit_err(&err, hi))};
    c->nch[algo][proto] = reg ? t->cells[coll][b][0].nch[algo][proto]
                              : (uint8_t)pick_channels(m, algo, proto, lo, hi, counts, ncounts, &ref, cur);
  }
}

topo_status topo_table_build(const topo_model *m, topo_table **out) {
  topo_table *t = topo_calloc(1, sizeof *t);
  if (!t) return TOPO_ERR_NOMEM;
  t->nranks = m->nranks;
  count_masks masks;
  term_counts(m->prof, masks);
  for (int i = 0; i < TOPO_TABLE_BUCKETS; i++) t->edge[i] = (float)edge_bytes(i);
  for (int coll = 0; coll < NCCL_NUM_FUNCTIONS; coll++)
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
        fill_entry(m, t, coll, a, p, 0, masks[coll][a][p]);
        if (uses_reg(a)) {
          fill_entry(m, t, coll, a, p, 1, 0);
        } else {
          for (int b = 0; b < TOPO_TABLE_BUCKETS; b++) {
            topo_table_cell *c0 = &t->cells[coll][b][0], *c1 = &t->cells[coll][b][1];
            c1->e[a][p] = c0->e[a][p];
            c1->nch[a][p] = c0->nch[a][p];
          }
        }
      }
  *out = t;
  return TOPO_OK;
}

void topo_table_free(topo_table *t) {
  if (t) topo_rules_index_free(t->rules);
  topo_free(t);
}

topo_status topo_table_set_rules(topo_table *t, const topo_rules *rules, int nnodes, int nranks) {
  topo_rules_index *ix = NULL;
  topo_status st = topo_rules_index_build(rules, nnodes, nranks, &ix);
  topo_rules_index_free(t->rules);
  t->rules = ix;
  return st;
}

const topo_rule *topo_table_rule(const topo_table *t, int coll, size_t nbytes, int pipe_ops,
                                 int reg_buff, const float *cost, int num_algo, int num_proto,
                                 uint32_t allow, const topo_rule **ignored) {
  if (ignored) *ignored = NULL;
  if (!t || !t->rules) return NULL;
  return topo_rules_index_find(t->rules, coll, nbytes, pipe_ops, reg_buff, cost, num_algo,
                               num_proto, allow, ignored, NULL);
}

static float cell_time(const topo_table_cell *c, int b, size_t nbytes, int pipe_ops, int algo,
                       int proto) {
  const topo_table_entry *e = &c->e[algo][proto];
  if (e->lat < 0) return -1.0f;
  double t = e->lat * topo_model_latency_count(algo, pipe_ops) + e->xfer +
             e->slope * ((double)nbytes - edge_bytes(b));
  if (!(t >= 0)) t = 0;
  if (t > 2.9e9) t = 2.9e9;
  return (float)t;
}

float topo_table_time(const topo_table *t, int coll, size_t nbytes, int pipe_ops, int reg_buff,
                      int algo, int proto) {
  if (!t || coll < 0 || coll >= NCCL_NUM_FUNCTIONS || algo < 0 || algo >= NCCL_NUM_ALGORITHMS ||
      proto < 0 || proto >= NCCL_NUM_PROTOCOLS)
    return -1.0f;
  int b = topo_table_bucket(nbytes);
  return cell_time(&t->cells[coll][b][reg_buff ? 1 : 0], b, nbytes, pipe_ops, algo, proto);
}

int topo_table_select(const float *cost, int num_algo, int num_proto, int *algo, int *proto) {
  float best = 3.6e9f;
  int found = 0;
  for (int a = 0; a < num_algo; a++)
    for (int p = 0; p < num_proto; p++) {
      float v = cost[a * num_proto + p];
      if (v >= 0.0f && v < best) {
        best = v;
        *algo = a;
        *proto = p;
        found = 1;
      }
    }
  return found;
}

int topo_table_apply(const topo_table *t, int coll, size_t nbytes, int pipe_ops, int reg_buff,
                     float *cost, int num_algo, int num_proto, int *algo, int *proto) {
  if (!t || !cost || coll < 0 || coll >= NCCL_NUM_FUNCTIONS || num_algo <= 0 || num_proto <= 0)
    return -1;
  int b = topo_table_bucket(nbytes);
  const topo_table_cell *c = &t->cells[coll][b][reg_buff ? 1 : 0];
  int na = num_algo < NCCL_NUM_ALGORITHMS ? num_algo : NCCL_NUM_ALGORITHMS;
  int np = num_proto < NCCL_NUM_PROTOCOLS ? num_proto : NCCL_NUM_PROTOCOLS;
  float dx = (float)nbytes - t->edge[b];
  float lc_ring = pipe_ops > 1 ? (float)pipe_ops : 1.0f;
  float lc_other = pipe_ops > 10 ? (float)((pipe_ops + 9) / 10) : 1.0f;

  /* NCCL multiplies RING entries by 1024 for FP8 reductions above 8 ranks (precision): keep
   * that penalty relative to the other algorithms when it is visible in the table. */
  float ring_scale = 1.0f;
  if (t->nranks > 8) {
    float min_other = -1.0f, max_ring = -1.0f;
    for (int a = 0; a < num_algo; a++)
      for (int p = 0; p < num_proto; p++) {
        float v = cost[a * num_proto + p];
        if (!(v >= 0.0f)) continue;
        if (a == NCCL_ALGO_RING) max_ring = v > max_ring ? v : max_ring;
        else if (min_other < 0 || v < min_other) min_other = v;
      }
    if (min_other > 0 && max_ring > 200.0f * min_other) ring_scale = 1024.0f;
  }

  /* One pass: note NCCL's own pick from the values it sent (strict minimum, lowest algorithm
   * then protocol), write the model's time into every allowed entry it predicts and follow
   * NCCL's selection over them. Allowed entries it cannot predict are remembered and, if it
   * predicted any, made usable-but-never-preferred. */
  float best = 3.6e9f, nccl_best = 3.6e9f;
  int ba = -1, bp = -1, na_ = -1, np_ = -1, predicted = 0;
  uint32_t unpredicted = 0;
  for (int a = 0; a < na; a++) {
    float *row = &cost[a * num_proto];
    const topo_table_entry *e = c->e[a];
    float lc = a == NCCL_ALGO_RING ? lc_ring * ring_scale : lc_other;
    float xs = a == NCCL_ALGO_RING ? ring_scale : 1.0f;
    for (int p = 0; p < np; p++) {
      if (!(row[p] >= 0.0f)) continue; /* ignored: -1, -1024, NaN */
      if (row[p] < nccl_best) {
        nccl_best = row[p];
        na_ = a;
        np_ = p;
      }
      if (e[p].lat < 0) {
        unpredicted |= 1u << (a * NCCL_NUM_PROTOCOLS + p);
        continue;
      }
      float v = e[p].lat * lc + (e[p].xfer + e[p].slope * dx) * xs;
      v = v >= 0.0f ? (v < 2.9e9f ? v : 2.9e9f) : 0.0f;
      row[p] = v;
      predicted++;
      if (v < best) { /* NCCL's selection: strict minimum, lowest algorithm then protocol */
        best = v;
        ba = a;
        bp = p;
      }
    }
  }
  /* Never worse than NCCL's default: leave NCCL's own pick unless the model predicts a gain
   * beyond its own error (TOPO_TABLE_SWITCH_MARGIN); it then gets a time just below the best. */
  if (na_ >= 0 && (na_ != ba || np_ != bp) && best > 0.0f && best < 2.9e9f &&
      !(unpredicted >> (na_ * NCCL_NUM_PROTOCOLS + np_) & 1)) {
    float *v = &cost[na_ * num_proto + np_];
    float margin = TOPO_TABLE_SWITCH_MARGIN, e1 = 2.0f * c->e[na_][np_].err, e2 = 2.0f * c->e[ba][bp].err;
    if (e1 > margin) margin = e1;
    if (e2 > margin) margin = e2;
    if (*v <= best * (1.0f + margin)) {
      *v = nextafterf(best, 0.0f);
      best = *v;
      ba = na_;
      bp = np_;
    }
  }
  if (!predicted) return -1; /* nothing we can speak for: NCCL's table stands */
  for (int i = 0; unpredicted; i++, unpredicted >>= 1)
    if (unpredicted & 1) cost[(i / NCCL_NUM_PROTOCOLS) * num_proto + i % NCCL_NUM_PROTOCOLS] = TOPO_TABLE_UNPREDICTED_US;
  /* Entries beyond what we model (a future NCCL's extra algorithms or protocols). */
  if (num_algo > na || num_proto > np)
    for (int a = 0; a < num_algo; a++)
      for (int p = a < na ? np : 0; p < num_proto; p++)
        if (cost[a * num_proto + p] >= 0.0f) cost[a * num_proto + p] = TOPO_TABLE_UNPREDICTED_US;
  *algo = ba;
  *proto = bp;
  return ba < na && bp < np ? c->nch[ba][bp] : 0;
}
