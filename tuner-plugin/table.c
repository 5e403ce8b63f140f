// SPDX-License-Identifier: Apache-2.0
// Decision table (see table.h): built once per distinct communicator shape, read lock-free.
#include "table.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
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
    c->e[algo][proto] =
        (topo_table_entry){(float)lat_e[b], (float)x_e[b], (float)(slope > 0 ? slope : 0),
                           (float)fmax(fit_err(&err, lo), fit_err(&err, hi))};
    c->nch[algo][proto] =
        reg ? t->cells[coll][b][0].nch[algo][proto]
            : (uint8_t)pick_channels(m, algo, proto, lo, hi, counts, ncounts, &ref, cur);
  }
}

/* ---- Decisions from measured points ---- */

typedef struct setting_points {
  int algo, proto, nch, n;
  const topo_profile_point *pt;
} setting_points;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Switch ranges of bucket b of `coll` for NCCL's pick `k` among the candidates `c[0..nc)`. */
static void decide_bucket(const topo_model *m, topo_table *t, int coll, int b,
                          const setting_points *k, const setting_points *c, int nc) {
  uint64_t lo = (uint64_t)edge_bytes(b),
           hi = b + 1 < TOPO_TABLE_BUCKETS ? (uint64_t)edge_bytes(b + 1) - 1 : UINT64_MAX;
  if (hi < lo) hi = lo;
  /* Nothing measured for the pick in this bucket's reach: no decision. */
  if (k->n <= 0 || (double)hi < (double)k->pt[0].bytes ||
      (double)lo > (double)k->pt[k->n - 1].bytes)
    return;
  uint64_t s[TOPO_TABLE_SWITCH_SAMPLES + 64];
  int ns = 0;
  double top =
      (double)hi > (double)k->pt[k->n - 1].bytes ? (double)k->pt[k->n - 1].bytes : (double)hi;
  double bot = (double)lo < (double)k->pt[0].bytes ? (double)k->pt[0].bytes : (double)lo;
  for (int i = 0; i < TOPO_TABLE_SWITCH_SAMPLES; i++)
    s[ns++] = (uint64_t)(bot + (top - bot) * i / (TOPO_TABLE_SWITCH_SAMPLES - 1));
  for (int i = 0; i < k->n && ns < (int)(sizeof s / sizeof *s); i++)
    if (k->pt[i].bytes >= lo && k->pt[i].bytes <= hi) s[ns++] = k->pt[i].bytes;
  qsort(s, (size_t)ns, sizeof *s, cmp_u64);

  double best_gain = 1.0;
  topo_table_switch best = {0, 0, 0, 0};
  for (int j = 0; j < nc; j++) {
    const setting_points *x = &c[j];
    if (x->algo == k->algo && x->proto == k->proto && x->nch == 0) continue;
    /* Fewer channels than NCCL runs at this size, never more (unknown count: never). */
    if (x->nch && x->nch >= topo_model_nccl_channels(m, x->algo, x->proto, edge_bytes(b))) continue;
    int win[TOPO_TABLE_SWITCH_SAMPLES + 64], arg = -1;
    double g_arg = 1.0;
    for (int i = 0; i < ns; i++) {
      double mk, nk, mx, nx;
      win[i] = 0;
      if (!topo_profile_points_at(k->pt, k->n, (double)s[i], &mk, &nk) ||
          !topo_profile_points_at(x->pt, x->n, (double)s[i], &mx, &nx))
        continue;
      double noise = nk > nx ? nk : nx;
      if (mk - mx > TOPO_TABLE_SWITCH_NOISE * noise && mx > 0) {
        win[i] = 1;
        if (mk / mx > g_arg) {
          g_arg = mk / mx;
          arg = i;
        }
      }
    }
    if (arg < 0 || g_arg <= best_gain) continue;
    int l = arg, r = arg;
    while (l > 0 && win[l - 1]) l--;
    while (r + 1 < ns && win[r + 1]) r++;
    best_gain = g_arg;
    best = (topo_table_switch){s[l], s[r], (uint8_t)(x->algo * NCCL_NUM_PROTOCOLS + x->proto + 1),
                               (uint8_t)x->nch};
  }
  if (best.to) {
    t->sw[coll][b][k->algo * NCCL_NUM_PROTOCOLS + k->proto] = best;
    t->any_switch[coll][b] = 1;
    t->nswitch++;
  }
}

/* Every (coll, bucket, NCCL pick): the measured setting to switch to, and where. Channel counts
 * other than NCCL's own are candidates only for the algorithms NCCL lets a tuner clamp. */
static void build_switches(topo_table *t, const topo_model *m) {
  const topo_profile *p = m->prof;
  if (!p || p->npoints <= 0) return;
  for (int coll = 0; coll < NCCL_NUM_FUNCTIONS; coll++) {
    setting_points c[NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS * 8];
    int nc = 0;
    for (int i = 0; i < p->npoints;) {
      const topo_profile_point *q = &p->points[i];
      int n = 0;
      const topo_profile_point *pt =
          topo_profile_find_points(p, q->coll, q->algo, q->proto, q->nchannels, &n);
      if (n <= 0) break;
      int clampable =
          q->algo == NCCL_ALGO_RING || q->algo == NCCL_ALGO_TREE || q->algo == NCCL_ALGO_PAT;
      if (q->coll == coll && (q->nchannels == 0 || clampable) && nc < (int)(sizeof c / sizeof *c))
        c[nc++] = (setting_points){q->algo, q->proto, q->nchannels, n, pt};
      i += n;
    }
    for (int k = 0; k < nc; k++) {
      if (c[k].nch) continue; /* NCCL's pick runs its own channel count */
      for (int b = 0; b < TOPO_TABLE_BUCKETS; b++) decide_bucket(m, t, coll, b, &c[k], c, nc);
    }
  }
}

topo_status topo_table_build(const topo_model *m, topo_table **out) {
  topo_table *t = topo_calloc(1, sizeof *t);
  if (!t) return TOPO_ERR_NOMEM;
  t->nranks = m->nranks;
  build_switches(t, m);
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

int topo_table_selectable(const float *cost, int num_algo, int num_proto) {
  for (int i = 0; i < num_algo * num_proto; i++)
    if (cost[i] >= 0.0f && cost[i] < 3.6e9f) return 1;
  return 0;
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
  (void)pipe_ops; /* the measured points are single collectives; the decision does not scale */
  if (!t || !cost || coll < 0 || coll >= NCCL_NUM_FUNCTIONS || num_algo <= 0 || num_proto <= 0)
    return -1;
  int a = -1, p = -1;
  if (!topo_table_select(cost, num_algo, num_proto, &a, &p)) return -1;
  *algo = a;
  *proto = p;
  if (reg_buff || a >= NCCL_NUM_ALGORITHMS || p >= NCCL_NUM_PROTOCOLS) return 0;
  int b = topo_table_bucket(nbytes);
  const topo_table_switch *sw = &t->sw[coll][b][a * NCCL_NUM_PROTOCOLS + p];
  if (!sw->to || (uint64_t)nbytes < sw->lo || (uint64_t)nbytes > sw->hi) return 0;
  int ta = (sw->to - 1) / NCCL_NUM_PROTOCOLS, tp = (sw->to - 1) % NCCL_NUM_PROTOCOLS;
  if (ta >= num_algo || tp >= num_proto) return 0;
  float *v = &cost[ta * num_proto + tp], best = cost[a * num_proto + p];
  if (!(*v >= 0.0f)) return 0; /* NCCL does not allow the measured winner here */
  if (best > 0.0f) {
    *v = nextafterf(best, 0.0f);
  } else {
    *v = 0.0f;
    cost[a * num_proto + p] = FLT_MIN; /* strictly above the winner's 0 */
  }
  *algo = ta;
  *proto = tp;
  return sw->nch;
}
