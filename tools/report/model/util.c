// SPDX-License-Identifier: Apache-2.0
// Small shared pieces of topo-report: quantile estimator, NCCL names and nccl-tests factors, the
// NCCL kernel-name parser, number formatting. Pure functions; no global state.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "nccl_vocab.h"
#include "report.h"

#define HIST_BUCKETS (256 + 56 * 128)

static int hist_index(int64_t v) {
  if (v < 256) return v < 0 ? 0 : (int)v;
  int e = 63 - __builtin_clzll((unsigned long long)v);
  int sub = (int)((v >> (e - 7)) & 127);
  return 256 + (e - 8) * 128 + sub;
}

/* Midpoint of a histogram bucket. */
static int64_t hist_value(int i) {
  if (i < 256) return i;
  int e = (i - 256) / 128 + 8, sub = (i - 256) % 128;
  int64_t lo = (int64_t)(128 + sub) << (e - 7);
  return lo + ((int64_t)1 << (e - 7)) / 2;
}

void rp_quant_add(rp_quant *q, int64_t v) {
  if (q->n == 0 || v < q->min) q->min = v;
  if (q->n == 0 || v > q->max) q->max = v;
  q->sum += (double)v;
  if (q->n < RP_EXACT_SAMPLES) {
    uint64_t n = q->n; /* the buffer holds 16, then the next power of two: full when n is one */
    if (n == 0 || (q->exact && n >= 16 && !(n & (n - 1)))) {
      int64_t *grown = topo_realloc(q->exact, (n ? 2 * n : 16) * sizeof *grown);
      if (!grown) topo_free(q->exact); /* exact quantiles lost, as when nothing was allocated */
      q->exact = grown;
    }
    if (q->exact) q->exact[q->n] = v;
  } else if (!q->hist) {
    q->hist = topo_calloc(HIST_BUCKETS, sizeof *q->hist);
    if (q->hist && q->exact)
      for (uint64_t i = 0; i < q->n; i++) q->hist[hist_index(q->exact[i])]++;
  }
  if (q->hist) q->hist[hist_index(v)]++;
  q->n++;
}

int rp_quant_is_exact(const rp_quant *q) { return q->n <= RP_EXACT_SAMPLES; }

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Nearest rank: the ceil(p*n)-th smallest sample (at least the first). */
int64_t rp_quant_get(const rp_quant *q, double p) {
  if (q->n == 0) return 0;
  uint64_t k = (uint64_t)ceil(p * (double)q->n);
  if (k < 1) k = 1;
  if (k > q->n) k = q->n;
  if (k == q->n) return q->max;
  if (k == 1 && p <= 0) return q->min;
  if (q->n <= RP_EXACT_SAMPLES && q->exact) {
    int64_t *copy = topo_malloc(q->n * sizeof *copy);
    if (!copy) return q->min;
    memcpy(copy, q->exact, q->n * sizeof *copy);
    qsort(copy, q->n, sizeof *copy, cmp_i64);
    int64_t v = copy[k - 1];
    topo_free(copy);
    return v;
  }
  if (!q->hist) return q->min;
  uint64_t seen = 0;
  for (int i = 0; i < HIST_BUCKETS; i++) {
    seen += q->hist[i];
    if (seen >= k) {
      int64_t v = hist_value(i);
      return v < q->min ? q->min : v > q->max ? q->max : v;
    }
  }
  return q->max;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int rp_map_find(const rp_map *m, uint64_t key, uint32_t *val) {
  if (!m->cap) return 0;
  for (size_t i = mix64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->val[i]) return 0;
    if (m->key[i] == key) {
      *val = m->val[i] - 1;
      return 1;
    }
  }
}

static void map_put(rp_map *m, uint64_t key, uint32_t stored) {
  size_t i = mix64(key) & (m->cap - 1);
  while (m->val[i]) i = (i + 1) & (m->cap - 1);
  m->key[i] = key;
  m->val[i] = stored;
}

int rp_map_add(rp_map *m, uint64_t key, uint32_t val) {
  if (2 * (m->n + 1) > m->cap) { /* at most half full */
    size_t cap = m->cap ? 2 * m->cap : 64;
    rp_map old = *m;
    m->key = topo_malloc(cap * sizeof *m->key);
    m->val = topo_calloc(cap, sizeof *m->val);
    if (!m->key || !m->val) {
      topo_free(m->key), topo_free(m->val);
      *m = old;
      return 0;
    }
    m->cap = cap;
    for (size_t i = 0; i < old.cap; i++)
      if (old.val[i]) map_put(m, old.key[i], old.val[i]);
    topo_free(old.key), topo_free(old.val);
  }
  map_put(m, key, val + 1);
  m->n++;
  return 1;
}

int rp_map_put(rp_map *m, uint64_t key, uint32_t val) {
  if (m->cap)
    for (size_t i = mix64(key) & (m->cap - 1); m->val[i]; i = (i + 1) & (m->cap - 1))
      if (m->key[i] == key) {
        m->val[i] = val + 1;
        return 1;
      }
  return rp_map_add(m, key, val);
}

void rp_map_free(rp_map *m) {
  topo_free(m->key);
  topo_free(m->val);
  memset(m, 0, sizeof *m);
}

void rp_quant_free(rp_quant *q) {
  topo_free(q->exact);
  topo_free(q->hist);
  q->exact = NULL;
  q->hist = NULL;
}

uint64_t rp_coll_size(int func, uint64_t bytes, int nranks) {
  return topo_nccl_tests_bytes(func, bytes, nranks);
}

double rp_busbw_factor(int func, int nranks) { return topo_nccl_busbw_factor(func, nranks); }

const char *rp_func_name(int func) {
  return func >= 0 && func < TOPO_NCCL_NUM_FUNCS ? topo_nccl_func_name(func, TOPO_NCCL_EVENT)
                                                 : "Other";
}

const char *rp_skew_name(int func) {
  return func == ncclFuncSend ? "Send/Recv" : rp_func_name(func);
}

const char *rp_algo_name(int algo) {
  return algo >= 0 && algo < NCCL_NUM_ALGORITHMS ? topo_nccl_algo_name(algo, TOPO_NCCL_TABLE) : "?";
}

const char *rp_proto_name(int proto) {
  return proto >= 0 && proto < NCCL_NUM_PROTOCOLS ? topo_nccl_proto_name(proto, TOPO_NCCL_TABLE)
                                                  : "?";
}

/* Names NCCL gives its kernels: ncclDevKernel_AllReduce_Sum_f32_RING_LL(...) (2.19-2.30),
 * ncclDevKernel_AllReduce_Sum_f32(...) (2.31's compact names), ncclKernel_AllReduce_RING_LL_Sum_
 * float(...) (older), ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32 (symmetric kernels),
 * ncclDevKernel_SendRecv, nccl*. The name up to its parameter list is read as '_'-separated
 * words; the first that NCCL's vocabulary (common/nccl_vocab.h) knows as a collective is its
 * function. Algorithm and protocol words are not read: a suffix names the kernel's entry point,
 * which dispatches at run time and was wrong for some kernels (NVIDIA/nccl#2196), and a
 * symmetric kernel's variant ("LL", "LD") names no NCCL protocol. */
int rp_nccl_kernel_parse(const char *name, int *func) {
  *func = -1;
  if (strncmp(name, "nccl", 4) != 0 && !strstr(name, "ncclKernel") &&
      !strstr(name, "ncclDevKernel"))
    return 0;
  char base[256];
  size_t len = strcspn(name, "(");
  if (len >= sizeof base) len = sizeof base - 1;
  memcpy(base, name, len);
  base[len] = 0;
  char *word[32];
  int n = 0;
  for (char *save = NULL, *w = strtok_r(base, "_", &save); w && n < 32;
       w = strtok_r(NULL, "_", &save))
    word[n++] = w;
  for (int i = 0; i < n && *func < 0; i++) *func = topo_nccl_func_from_name(word[i]);
  return 1;
}

void rp_row_choice_label(const rp_row *w, char *buf, size_t len) {
  int al, pr;
  double share;
  rp_row_top_choice(w, &al, &pr, &share);
  if (al < 0 && pr < 0 && w->sym * 2 > w->calls) /* mostly symmetric kernels */
    snprintf(buf, len, "sym%s%s", w->variants == 1 ? " " : "", w->variants == 1 ? w->variant : "");
  else if (al < 0 && pr < 0) snprintf(buf, len, "?");
  else snprintf(buf, len, "%s/%s", rp_algo_name(al), rp_proto_name(pr));
}

double rp_ratio(int64_t num, int64_t den) { return den > 0 ? (double)num / (double)den : 0.0; }

double rp_row_mean_ns(const rp_row *row) {
  return row->time.n ? row->time.sum / (double)row->time.n : 0.0;
}

double rp_row_algbw(const rp_row *row) {
  double t = rp_row_mean_ns(row);
  if (t <= 0 || !row->timed) return 0.0;
  return ((double)row->timed_size_sum / (double)row->timed) / t; /* bytes/ns = GB/s */
}

double rp_row_busbw(const rp_row *row) {
  return rp_row_algbw(row) * rp_busbw_factor(row->func, row->nranks);
}

int rp_row_size_known(const rp_row *row) { return row->bucket != RP_BUCKET_UNKNOWN; }
int rp_row_ranks_known(const rp_row *row) { return row->nranks > 0; }
int rp_row_algbw_known(const rp_row *row) {
  return row->timed > 0 && rp_row_size_known(row) && row->time.sum > 0;
}
int rp_row_busbw_known(const rp_row *row) {
  return rp_row_algbw_known(row) && rp_row_ranks_known(row);
}

double rp_row_busbw_xfer(const rp_row *row) {
  if (!row->xfer.n || row->xfer.sum <= 0) return 0.0;
  double size = (double)row->xfer_size_sum / (double)row->xfer.n,
         t = row->xfer.sum / (double)row->xfer.n;
  return size / t * rp_busbw_factor(row->func, row->nranks);
}

void rp_row_top_choice(const rp_row *row, int *algo, int *proto, double *share) {
  uint64_t best = 0, total = 0;
  *algo = *proto = -1;
  for (int a = 0; a < 8; a++)
    for (int p = 0; p < 4; p++) {
      total += row->algo_proto[a][p];
      if (row->algo_proto[a][p] > best) {
        best = row->algo_proto[a][p];
        *algo = a == 7 ? -1 : a;
        *proto = p == 3 ? -1 : p;
      }
    }
  *share = total ? (double)best / (double)total : 0.0;
}

void rp_fmt_bytes(uint64_t v, char *buf, size_t len) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double d = (double)v;
  while (d >= 1024 && u < 4) {
    d /= 1024;
    u++;
  }
  if (u == 0) snprintf(buf, len, "%" PRIu64 " B", v);
  else snprintf(buf, len, d == floor(d) ? "%.0f %s" : "%.1f %s", d, unit[u]);
}

void rp_bucket_label(int bucket, char *buf, size_t len) {
  if (bucket == RP_BUCKET_UNKNOWN) {
    snprintf(buf, len, "?");
    return;
  }
  if (bucket < 0) {
    snprintf(buf, len, "0 B");
    return;
  }
  char lo[32];
  rp_fmt_bytes((uint64_t)1 << bucket, lo, sizeof lo);
  snprintf(buf, len, "%s+", lo);
}

void rp_fmt_ns(int64_t ns, char *buf, size_t len) {
  double a = fabs((double)ns);
  if (a < 1e3) snprintf(buf, len, "%" PRId64 " ns", ns);
  else if (a < 1e6) snprintf(buf, len, "%.2f us", (double)ns / 1e3);
  else if (a < 1e9) snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
  else snprintf(buf, len, "%.3f s", (double)ns / 1e9);
}

void rp_fmt_utc(int64_t ns, char *buf, size_t len) {
  time_t s = (time_t)(ns / 1000000000LL);
  struct tm tm;
  if (gmtime_r(&s, &tm)) strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
  else snprintf(buf, len, "?");
}

/* Close the open stretch: its ratio x and its chunks per ns of comm m count once in the
 * between-stretch sums. */
static void stretch_close(rp_omodel *m) {
  if (!(m->st_comm > 0)) return;
  double x = m->st_overlap / m->st_comm, c = m->st_n / m->st_comm;
  m->windows++;
  m->sx += x;
  m->sx2 += x * x;
  m->sm += c;
  m->sm2 += c * c;
  m->sxm += x * c;
  m->st_comm = m->st_overlap = m->st_n = 0;
}

void rp_omodel_add(rp_omodel *m, int64_t comm, int64_t overlap, int64_t stretch) {
  if (comm <= 0) return;
  double x = (double)overlap / (double)comm;
  if (m->st_comm > 0 && stretch != m->st_id) stretch_close(m);
  m->st_id = stretch;
  m->st_comm += (double)comm;
  m->st_overlap += (double)overlap;
  m->st_n += 1;
  m->chunks++;
  m->comm += (double)comm;
  m->overlap += (double)overlap;
  m->wx2 += (double)comm * x * x;
  m->c2 += (double)comm * (double)comm;
  m->inv += 1 / (double)comm;
  m->sx_c += x;
}

typedef struct wx {
  double x, w;
} wx;

static int cmp_wx(const void *a, const void *b) {
  double x = ((const wx *)a)->x, y = ((const wx *)b)->x;
  return (x > y) - (x < y);
}

/* The weighted median of v[0..n) (sorted here), weights > 0. */
static double weighted_median(wx *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_wx);
  double total = 0, run = 0;
  for (size_t i = 0; i < n; i++) total += v[i].w;
  for (size_t i = 0; i < n; i++) {
    run += v[i].w;
    if (run >= total / 2) return v[i].x;
  }
  return n ? v[n - 1].x : 0;
}

/* A job's first covered steps (allocator growth, the first backward building DDP's buckets, a
 * partial step at a window's start) can overlap three times as much as its steady state: on a
 * DDP job on an H200 two of twelve covered steps held 34-39 % against 6-12 % for the rest and
 * moved the model's ratio by 3 points. The median and MAD do not move with them; the floor keeps
 * steps that alternate between two nearby ratios (26 % and 29 %) all in. */
static double chunk_ratio(const rp_step *c) { return (double)c->cov_overlap / (double)c->cov_comm; }

/* Sums of a set of chunks for the weighted least squares of overlap on comm (weights 1 / comm). */
typedef struct lsq {
  double n, inv, c, x, o, wx2;
} lsq;

static void lsq_add(lsq *s, double c, double o, double sign) {
  s->n += sign;
  s->inv += sign / c;
  s->c += sign * c;
  s->x += sign * o / c;
  s->o += sign * o;
  s->wx2 += sign * o * o / c;
}

/* The affine fit of s (a + b c); 0 where it is not determined (< 3 chunks, the same comm). */
static int lsq_affine(const lsq *s, double *a, double *b) {
  double det = s->inv * s->c - s->n * s->n;
  if (!(s->n >= 3 - 1e-9) || !(det > 1e-9 * s->n * s->n)) return 0;
  *a = (s->c * s->x - s->n * s->o) / det;
  *b = (s->inv * s->o - s->n * s->x) / det;
  return 1;
}

/* Which line predicts a stretch it did not learn from better: each coverage stretch (each chunk
 * where all lie in one) is left out in turn, the ratio and the affine line fitted to the others
 * predict its chunks, and each chunk's squared error (weight 1 / comm, as in the fit) is its loss.
 * The affine form wins only where it is determined without every left-out stretch and its mean
 * loss lies more than one standard error (of that mean) below the ratio's (the one-standard-error
 * rule of cross-validation: the simpler model unless the other is clearly better): the intercept
 * must earn its place on data it did not see. */
static int affine_predicts_better(const double *c, const double *o, const int64_t *st, size_t k) {
  lsq all = {0, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < k; i++) lsq_add(&all, c[i], o[i], 1);
  int one = 1;
  for (size_t i = 1; i < k; i++) one &= st[i] == st[0];
  double er = 0, ea = 0, ea2 = 0;
  for (size_t i = 0; i < k;) {
    size_t j = i + 1;
    while (!one && j < k && st[j] == st[i]) j++;
    lsq rest = all;
    for (size_t x = i; x < j; x++) lsq_add(&rest, c[x], o[x], -1);
    double a, b;
    if (!(rest.c > 0) || !lsq_affine(&rest, &a, &b)) return 0;
    double r = rest.o / rest.c;
    for (size_t x = i; x < j; x++) {
      double dr = o[x] - r * c[x], da = o[x] - a - b * c[x];
      er += dr * dr / c[x];
      ea += da * da / c[x];
      ea2 += (da * da / c[x]) * (da * da / c[x]);
    }
    i = j;
  }
  double n = (double)k, mean = ea / n, var = k > 1 ? (ea2 - ea * mean) / (n - 1) : 0;
  return mean + sqrt(var > 0 ? var / n : 0) < er / n;
}

/* Step chunks far from the affine line through the others' (residual per ns of comm more than
 * max(RP_OMODEL_OUTLIER_MIN, 3 scaled MADs) from the median: a partial or first step of a window
 * of a few ms of comm weighs most in the fit) are marked in `out`. */
static void affine_outliers(const double *c, const double *o, size_t k, unsigned char *out, wx *v) {
  lsq s = {0, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < k; i++) lsq_add(&s, c[i], o[i], 1);
  double a, b;
  if (k < 4 || !lsq_affine(&s, &a, &b)) return;
  for (size_t i = 0; i < k; i++) v[i] = (wx){(o[i] - a - b * c[i]) / c[i], c[i]};
  double med = weighted_median(v, k);
  for (size_t i = 0; i < k; i++) v[i] = (wx){fabs((o[i] - a - b * c[i]) / c[i] - med), c[i]};
  double cut = 3 * 1.4826 * weighted_median(v, k);
  if (cut < RP_OMODEL_OUTLIER_MIN) cut = RP_OMODEL_OUTLIER_MIN;
  size_t kept = 0;
  for (size_t i = 0; i < k; i++) kept += fabs((o[i] - a - b * c[i]) / c[i] - med) <= cut;
  if (kept < 3) return;
  for (size_t i = 0; i < k; i++) out[i] = fabs((o[i] - a - b * c[i]) / c[i] - med) > cut;
}

void rp_omodel_add_robust(rp_omodel *m, const rp_step *chunks, size_t n) {
  wx *v = topo_malloc((n ? n : 1) * sizeof *v);
  size_t k = 0;
  for (size_t i = 0; i < n && v; i++)
    if (chunks[i].cov_comm > 0) v[k++] = (wx){chunk_ratio(&chunks[i]), (double)chunks[i].cov_comm};
  double med = 0, cut = 2; /* ratios lie in [0, 1]: no chunk is out */
  if (k >= 3) {
    med = weighted_median(v, k);
    for (size_t i = 0; i < k; i++) v[i].x = fabs(v[i].x - med);
    cut = 3 * 1.4826 * weighted_median(v, k);
    if (cut < RP_OMODEL_OUTLIER_MIN) cut = RP_OMODEL_OUTLIER_MIN;
    size_t kept = 0;
    for (size_t i = 0; i < k; i++) kept += v[i].x <= cut; /* v holds the distances now */
    if (kept < 2) cut = 2;
  }
  /* the kept chunks, then (step chunks) those far from the affine line through them */
  double *c = topo_malloc((n ? n : 1) * 2 * sizeof *c);
  int64_t *st = topo_malloc((n ? n : 1) * sizeof *st);
  unsigned char *out = topo_calloc(n ? n : 1, 1);
  size_t kk = 0;
  int have = v && c && st && out;
  for (size_t i = 0; i < n && have; i++) {
    if (chunks[i].cov_comm <= 0 || fabs(chunk_ratio(&chunks[i]) - med) > cut) continue;
    c[kk] = (double)chunks[i].cov_comm;
    c[n + kk] = (double)chunks[i].cov_overlap;
    st[kk++] = chunks[i].stretch;
  }
  if (have && m->steps) affine_outliers(c, c + n, kk, out, v);
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    if (chunks[i].cov_comm <= 0) continue;
    if (fabs(chunk_ratio(&chunks[i]) - med) > cut) m->outliers++;
    else if (have && out[j++]) m->outliers++;
    else rp_omodel_add(m, chunks[i].cov_comm, chunks[i].cov_overlap, chunks[i].stretch);
  }
  if (have && m->steps) { /* the kept chunks once more, without the line's outliers */
    size_t q = 0;
    for (size_t i = 0; i < kk; i++)
      if (!out[i]) c[q] = c[i], c[n + q] = c[n + i], st[q++] = st[i];
    m->prefer_affine = affine_predicts_better(c, c + n, st, q);
  }
  topo_free(v);
  topo_free(c);
  topo_free(st);
  topo_free(out);
}

void rp_omodel_merge(rp_omodel *m, const rp_omodel *o) {
  m->steps = (m->chunks ? m->steps : 1) && o->steps;
  m->prefer_affine = (m->chunks ? m->prefer_affine : 1) && o->prefer_affine;
  m->outliers += o->outliers;
  m->chunks += o->chunks;
  m->comm += o->comm;
  m->overlap += o->overlap;
  m->wx2 += o->wx2;
  m->c2 += o->c2;
  m->inv += o->inv;
  m->sx_c += o->sx_c;
  m->windows += o->windows;
  m->sx += o->sx;
  m->sx2 += o->sx2;
  m->sm += o->sm;
  m->sm2 += o->sm2;
  m->sxm += o->sxm;
}

/* A chunk i of comm c_i overlaps a + b c_i + e_i, the e_i independent with variance s^2 c_i (the
 * scatter of a chunk adds over its parts): weighted least squares, weights 1 / c_i. With a = 0
 * this is the ratio model: b = sum overlap / sum comm. The affine fit (a free) needs >= 3 chunks
 * that are whole steps (the unit a counts in) and comm that differs between them; it is chosen
 * where its intercept differs from 0 by more than its 95 % interval (Student's t, n - 2 degrees of
 * freedom): the ratio unless the chunks reject it. The spread s: sqrt(residual sum of squares /
 * sum comm), the comm-weighted standard deviation of the chunks' residuals per ns of comm. The
 * drift d: the spread of a stretch's residual per ns of comm (e = x - a m - b, x its ratio, m its
 * chunks per ns of comm), from the W stretches' residuals (sample variance s_B^2, W - 1 degrees of
 * freedom) starting from the chunks' spread with the weight of one: d^2 = ((W - 1) s_B^2 + s^2) /
 * W, W degrees of freedom. Stretches that happen to agree do not make it 0, and one stretch gives
 * the chunks' spread with one degree of freedom. */
void rp_omodel_finish(rp_omodel *m, const char *reason) {
  stretch_close(m);
  m->ok = m->chunks >= 2 && m->comm > 0;
  m->reason = m->ok ? NULL : reason;
  m->form = RP_OMODEL_RATIO;
  m->fit = 0;
  m->a = m->b = m->va = m->vb = m->vab = m->dof = 0;
  if (!m->ok) {
    m->ratio = m->spread = m->drift = 0;
    return;
  }
  double n = (double)m->chunks, c = m->comm, ov = m->overlap;
  m->ratio = ov / c;
  m->b = m->ratio;
  double rss = m->wx2 - m->ratio * ov; /* about the ratio line */
  double det = m->inv * c - n * n;     /* >= 0; 0 when every chunk's comm is the same */
  if (m->steps && m->chunks >= 3 && det > 1e-9 * n * n) {
    double a = (c * m->sx_c - n * ov) / det, b = (m->inv * ov - n * m->sx_c) / det;
    double rss1 = m->wx2 - a * m->sx_c - b * ov;
    if (rss1 < 0) rss1 = 0;
    double s2 = rss1 / (n - 2);
    m->fit = 1;
    m->dof = n - 2;
    m->va = s2 * c / det;
    m->vb = s2 * m->inv / det;
    m->vab = -s2 * n / det;
    if (m->prefer_affine) {
      m->form = RP_OMODEL_AFFINE;
      m->a = a;
      m->b = b;
      rss = rss1;
    }
  }
  double v = rss / c;
  m->spread = v > 0 ? sqrt(v) : 0;
  double w = (double)(m->windows ? m->windows : 1), sb2 = 0, a = m->a, b = m->b;
  if (m->windows >= 2) {
    double se = m->sx - a * m->sm - b * w;
    double se2 =
        m->sx2 + a * a * m->sm2 + b * b * w - 2 * a * m->sxm - 2 * b * m->sx + 2 * a * b * m->sm;
    sb2 = (se2 - se * se / w) / (w - 1);
  }
  if (sb2 < 0) sb2 = 0;
  m->drift = sqrt(((w - 1) * sb2 + m->spread * m->spread) / w);
}

void rp_omodel_predict(const rp_omodel *m, double units, double comm, rp_opred *p) {
  if (!(m && m->ok) || !(comm > 0)) return;
  if (units < 0) units = comm * (double)m->chunks / m->comm;
  double ov = m->a * units + m->b * comm;
  if (ov < 0) ov = 0;
  if (ov > comm) ov = comm;
  p->units += units;
  p->comm += comm;
  p->overlap += ov;
}

/* Later communication u in N steps overlaps p->overlap + e: e = the error of the line at (N, u)
 * (its parameters' covariance, t quantile of n - 2 degrees of freedom: grows with the distance
 * from the covered chunks' comm, so an extrapolation is wide), plus its stretch's shift (the
 * drift, shared by all of u: a prediction for one more stretch, d sqrt(1 + 1/W), t quantile of W
 * degrees of freedom) plus the scatter of its chunks about that (independent: over u / c chunks
 * of the chunks' mean comm c, s sqrt(u c), t quantile of the chunks' degrees of freedom; one
 * chunk's s u for less than a chunk). Where the affine fit is not determined (the covered chunks
 * all hold the same comm, fewer than 3, or not steps), nothing measured says how the overlap
 * scales with comm: the line's term is the gap between the two limits, overlap in proportion to
 * comm (the ratio) and overlapped time per step constant (the chunks' mean), r |u - N c_n| (c_n:
 * the chunks' mean comm): 0 at the covered chunks' comm, growing away from it. The overlap of u
 * lies in [0, u]: the error is at most the distance from the estimate to the farther end. */
double rp_omodel_error(const rp_omodel *m, const rp_opred *p) {
  if (!(m && m->ok) || !p || !(p->comm > 0)) return 0;
  double u = p->comm, nu = p->units;
  double w = (double)(m->windows ? m->windows : 1), cbar = m->c2 / m->comm;
  double ed = rp_t975(w) * m->drift * sqrt(1 + 1 / w) * u;
  double part = u * cbar < u * u ? sqrt(u * cbar) : u;
  double dof = (double)m->chunks - (m->form == RP_OMODEL_AFFINE ? 2 : 1);
  double es = rp_t975(dof) * m->spread * part, el;
  if (m->fit) {
    double vl = nu * nu * m->va + u * u * m->vb + 2 * nu * u * m->vab;
    el = rp_t975(m->dof) * sqrt(vl > 0 ? vl : 0);
  } else {
    el = m->ratio * fabs(u - nu * m->comm / (double)m->chunks);
  }
  double e = sqrt(ed * ed + es * es + el * el);
  double cap = p->overlap > u - p->overlap ? p->overlap : u - p->overlap;
  return e < cap ? e : cap;
}

double rp_step_uncovered_units(const rp_step *st) {
  int64_t len = st->stop - st->start, full = st->len0 > 0 ? st->len0 : len;
  if (full <= 0) return -1;
  int64_t un = len - (st->covered > 0 ? st->covered : 0);
  return un > 0 ? (double)un / (double)full : 0;
}

int rp_exposed_all(const rp_omodel *m, int64_t comm, int64_t cov_comm, int64_t cov_exposed,
                   int64_t covered, double units, const rp_opred *pred, int64_t *all, int64_t *est,
                   int64_t *err) {
  int64_t u = comm > cov_comm ? comm - cov_comm : 0;
  *all = *est = *err = 0;
  if (!(m && m->ok) && !(u == 0 && covered > 0)) return 0;
  if (covered <= 0) cov_exposed = 0;
  if (u > 0) { /* m->ok */
    rp_opred one = {0, 0, 0};
    if (!pred) {
      rp_omodel_predict(m, units, (double)u, &one);
      pred = &one;
    }
    double ex = (double)u - pred->overlap;
    *est = rp_dbl_ns(llround(ex > 0 ? ex : 0));
    *err = rp_dbl_ns(llround(rp_omodel_error(m, pred)));
  }
  *all = rp_add_sat(cov_exposed, *est);
  return u > 0 ? 2 : 1;
}

/* Compute-side figures hold over the covered time only (docs/metrics.md, Coverage). */
void rp_derive(const rp_times *t, rp_derived *d) {
  memset(d, 0, sizeof *d);
  if (t->last > t->first) d->span = t->last - t->first;
  d->comm = t->comm;
  d->comm_est = t->comm_est;
  d->comm_share = rp_ratio(d->comm, d->span);
  d->covered = t->covered < d->span ? t->covered : d->span;
  d->covered_share = rp_ratio(d->covered, d->span);
  d->known = d->covered > 0;
  if (!d->known) return;
  d->compute = t->cov_compute;
  d->overlap = t->cov_overlap;
  d->exposed = t->cov_comm - t->cov_overlap;
  d->memory = t->cov_memory;
  d->busy = t->cov_busy;
  d->idle = d->covered - t->cov_busy;
  d->overlap_ratio = rp_ratio(d->overlap, t->cov_comm);
  d->overlap_defined = t->cov_comm > 0;
  d->exposed_share = rp_ratio(d->exposed, d->covered);
  d->compute_share = rp_ratio(d->compute, d->covered);
  d->idle_share = rp_ratio(d->idle, d->covered);
  d->ranks_known = 1;
}

/* The whole-span exposed figures of rank k into d (after rp_derive). */
static void derive_exposed_all(const rp_rank *k, rp_derived *d) {
  d->model = k->model;
  /* the uncovered comm step by step (each step's own comm and share), the rest outside steps */
  rp_opred p = {0, 0, 0};
  double u = (double)(d->comm > k->t.cov_comm ? d->comm - k->t.cov_comm : 0), in_steps = 0;
  for (size_t i = 0; i < k->nsteps && k->model.ok; i++) {
    const rp_step *st = &k->steps[i];
    double su = (double)(st->comm > st->cov_comm ? st->comm - st->cov_comm : 0);
    if (in_steps + su > u) su = u - in_steps;
    if (!(su > 0)) continue;
    rp_omodel_predict(&k->model, rp_step_uncovered_units(st), su, &p);
    in_steps += su;
  }
  rp_omodel_predict(&k->model, -1, u - in_steps, &p);
  int how =
      rp_exposed_all(&k->model, d->comm, k->t.cov_comm, k->t.cov_comm - k->t.cov_overlap,
                     d->covered, -1, &p, &d->exposed_all, &d->exposed_est, &d->exposed_all_error);
  d->exposed_all_known = how > 0;
  d->exposed_all_estimated = how == 2;
  if (!d->exposed_all_known) return;
  d->ranks_exposed_all = 1;
  d->exposed_all_share = rp_ratio(d->exposed_all, d->span);
  d->overlap_all_ratio = 1 - rp_ratio(d->exposed_all, d->comm);
  d->overlap_all_defined = d->comm > 0;
}

void rp_derive_rank(const rp_rank *k, rp_derived *d) {
  rp_derive(&k->t, d);
  d->comm_error = rp_comm_error_ns(d->comm_est, &k->comm_err);
  derive_exposed_all(k, d);
}

/* Sums over ranks; the compute-side sums only over the ranks where it is known. */
void rp_derive_overall(const rp_report *r, rp_derived *d) {
  memset(d, 0, sizeof *d);
  rp_err err = {0, 0, 0}, ea_err = {0, 0, 0};
  int64_t cov_comm = 0, ea_span = 0, ea_comm = 0;
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    rp_derived x;
    rp_derive(&k->t, &x);
    derive_exposed_all(k, &x);
    d->span = rp_add_sat(d->span, x.span);
    d->comm = rp_add_sat(d->comm, x.comm);
    d->comm_est = rp_add_sat(d->comm_est, x.comm_est);
    rp_err_sum(&err, &k->comm_err);
    if (k->model.ok) rp_omodel_merge(&d->model, &k->model);
    if (x.exposed_all_known) { /* the model's error is shared by the ranks: adds linearly */
      d->ranks_exposed_all++;
      d->exposed_all_estimated |= x.exposed_all_estimated;
      d->exposed_all = rp_add_sat(d->exposed_all, x.exposed_all);
      d->exposed_est = rp_add_sat(d->exposed_est, x.exposed_est);
      ea_err.bias += (double)x.exposed_all_error;
      ea_span = rp_add_sat(ea_span, x.span);
      ea_comm = rp_add_sat(ea_comm, x.comm);
    }
    if (!x.known) continue;
    d->ranks_known++;
    d->covered = rp_add_sat(d->covered, x.covered);
    cov_comm = rp_add_sat(cov_comm, k->t.cov_comm);
    d->compute = rp_add_sat(d->compute, x.compute);
    d->overlap = rp_add_sat(d->overlap, x.overlap);
    d->exposed = rp_add_sat(d->exposed, x.exposed);
    d->idle = rp_add_sat(d->idle, x.idle);
    d->memory = rp_add_sat(d->memory, x.memory);
    d->busy = rp_add_sat(d->busy, x.busy);
  }
  d->comm_error = rp_comm_error_ns(d->comm_est, &err);
  rp_omodel_finish(&d->model, RP_OMODEL_NO_RANK);
  d->exposed_all_known = d->ranks_exposed_all > 0;
  d->overlap_all_defined = d->exposed_all_known && ea_comm > 0;
  d->exposed_all_error = rp_err_ns(&ea_err);
  d->exposed_all_share = rp_ratio(d->exposed_all, ea_span);
  d->overlap_all_ratio = 1 - rp_ratio(d->exposed_all, ea_comm);
  d->comm_share = rp_ratio(d->comm, d->span);
  d->covered_share = rp_ratio(d->covered, d->span);
  d->known = d->ranks_known > 0;
  d->overlap_ratio = rp_ratio(d->overlap, cov_comm);
  d->overlap_defined = d->known && cov_comm > 0;
  d->exposed_share = rp_ratio(d->exposed, d->covered);
  d->compute_share = rp_ratio(d->compute, d->covered);
  d->idle_share = rp_ratio(d->idle, d->covered);
}

const char *rp_step_window_text(const rp_report *r, char *buf, size_t len) {
  if (r->step_window != RP_WINDOW_COMPLETE_STEPS) {
    snprintf(buf, len,
             "all (the default; --steps complete keeps the complete profiler steps only)");
    return buf;
  }
  int cut = 0, same = 1, rest = 0;
  const rp_rank *ref = NULL;
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    if (!k->win) {
      rest++;
      continue;
    }
    if (ref && (k->win_first != ref->win_first || k->win_last != ref->win_last ||
                k->win_dropped != ref->win_dropped))
      same = 0;
    if (!ref) ref = k;
    cut++;
  }
  size_t o = (size_t)snprintf(buf, len, "the complete profiler steps only (--steps complete): ");
  if (o >= len) return buf;
  if (!cut)
    o += (size_t)snprintf(buf + o, len - o, "no rank has two ProfilerSteps, so all events count");
  else if (same)
    o +=
        (size_t)snprintf(buf + o, len - o,
                         "%d rank%s from ProfilerStep#%" PRIu64 " to the end of #%" PRIu64
                         " (#%" PRIu64 ", the last, left out)",
                         cut, cut == 1 ? "" : "s", ref->win_first, ref->win_last, ref->win_dropped);
  else
    o += (size_t)snprintf(buf + o, len - o,
                          "%d ranks from their first ProfilerStep to the end of the one "
                          "before their last (steps per rank in --json)",
                          cut);
  if (cut && rest && o < len)
    snprintf(buf + o, len - o, "; %d rank%s without two ProfilerSteps: all events", rest,
             rest == 1 ? "" : "s");
  return buf;
}
