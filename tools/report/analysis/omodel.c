// SPDX-License-Identifier: Apache-2.0
// The overlap model (docs/metrics.md, Coverage): what part of the communication outside the
// compute coverage is overlapped, learned from a rank's covered chunks (analyze_cover.c), and the
// exposed communication over a range with its error. Read by derive.c, analyze_summary.c and the
// renderers. Pure functions; no global state.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "report.h"
#include "report_analysis.h"

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
