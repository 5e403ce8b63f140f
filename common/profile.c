// SPDX-License-Identifier: Apache-2.0
// The tuner profile (see profile.h, docs/profile-format.md): built-in defaults for H200/H100/A100
// NVLink nodes, the text reader (best-matching section, one warning per malformed line, never
// crashes), the exact writer, fitted terms and their weighted least-squares fit, name tables.
// Called at tuner init, by topo-tune, topo-calibrate and topo-report fit; never on a hot path.
#include "profile.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "file.h"
#include "log.h"
#include "nccl_vocab.h"

#define PROFILE_MAX_FILE (16u << 20) /* a profile larger than this is not a profile */
#define PROFILE_MAX_LINE 1024
#define PROFILE_MAX_TOKENS 16
#define PROFILE_MAX_TERMS 65536      /* per section */
#define PROFILE_MAX_WARNINGS 32      /* bad lines warned per file; the rest only counted */

static const char *const link_names[TOPO_LINK_COUNT] = {"nvlink", "pci", "net"};

/* ---------------------------------------------------------------------------------------------
 * Built-in defaults. Where every number comes from: docs/profile-format.md, "Built-in defaults".
 * H200 and H100: 18 NVLink 4 links to NVSwitch 3 (same fabric); link and protocol figures from the
 * CUDA-graph sweep on 2 x H200 (tests/data/nccl-2.28.9-2xh200/graph-sweep.txt) and the published
 * limits (shared/reference/tuner-anchors.md section 5). A100: 12 NVLink 3 links, NCCL's own
 * per-link figure and constants (not measured by us).
 */

typedef struct builtin_profile {
  const char *gpu;
  topo_profile_link link[TOPO_LINK_COUNT];
  topo_profile_proto proto[NCCL_NUM_PROTOCOLS];
  double launch_us;
  int max_channels;
  int nvls;
} builtin_profile;

/* H200 and H100 share the NVLink 4 / NVSwitch fabric (only their memory differs): one set of
 * numbers, measured on 2 x H200 (graph-sweep.txt; docs/profile-format.md). */
#define TOPO_HOPPER_NVLINK4(name)                                                        \
  {.gpu = name,                                                                          \
   .link = {{.bw_gbs = 370.0, .lat_us = 0.6}, {.bw_gbs = 50.0, .lat_us = 1.0},           \
            {.bw_gbs = 45.0, .lat_us = 5.0}},                                            \
   .proto = {{.bw_eff = 0.333, .lat_us = 0.0, .ch_bw_gbs = 5.2},                         \
             {.bw_eff = 0.825, .lat_us = 4.0, .ch_bw_gbs = 16.0},                        \
             {.bw_eff = 0.888, .lat_us = 5.7, .ch_bw_gbs = 20.9}},                       \
   .launch_us = 5.7,                                                                     \
   .max_channels = 24,                                                                   \
   .nvls = -1}
static const builtin_profile builtins[] = {
    TOPO_HOPPER_NVLINK4("H200"),
    TOPO_HOPPER_NVLINK4("H100"),
    {.gpu = "A100",
     .link = {{.bw_gbs = 240.0, .lat_us = 0.6}, {.bw_gbs = 24.0, .lat_us = 1.0},
              {.bw_gbs = 23.0, .lat_us = 5.0}},
     .proto = {{.bw_eff = 0.365, .lat_us = 0.0, .ch_bw_gbs = 5.0},
               {.bw_eff = 0.92, .lat_us = 4.0, .ch_bw_gbs = 20.0},
               {.bw_eff = 0.95, .lat_us = 5.7, .ch_bw_gbs = 20.0}},
     .launch_us = 6.5,
     .max_channels = 24,
     .nvls = 0},
};
#define NBUILTINS ((int)(sizeof builtins / sizeof builtins[0]))

/* "generic": for a GPU none of the above describes. Not a measurement of anything: NCCL's own
 * per-link figures and constants (the A100 set, the oldest fabric NCCL 2.28 tunes for), channel
 * count unknown, NVLS unknown. Not listed by topo_profile_builtin_name (it is no GPU model). */
static const builtin_profile generic_builtin = {
    .gpu = "generic",
    .link = {{.bw_gbs = 240.0, .lat_us = 0.6}, {.bw_gbs = 24.0, .lat_us = 1.0},
             {.bw_gbs = 23.0, .lat_us = 5.0}},
    .proto = {{.bw_eff = 0.365, .lat_us = 0.0, .ch_bw_gbs = 5.0},
              {.bw_eff = 0.92, .lat_us = 4.0, .ch_bw_gbs = 20.0},
              {.bw_eff = 0.95, .lat_us = 5.7, .ch_bw_gbs = 20.0}},
    .launch_us = 6.5,
    .max_channels = 0,
    .nvls = -1};

const char *topo_profile_builtin_name(int i) {
  return i >= 0 && i < NBUILTINS ? builtins[i].gpu : NULL;
}

topo_status topo_profile_builtin(const char *gpu, topo_profile *out) {
  if (!out) return TOPO_ERR_INVALID;
  int idx = 0;
  topo_status st = TOPO_OK;
  if (gpu && *gpu && strcmp(gpu, "*") != 0) {
    idx = -1;
    for (int i = 0; i < NBUILTINS; i++)
      if (strcasecmp(gpu, builtins[i].gpu) == 0) idx = i;
    if (idx < 0) {
      idx = 0;
      st = TOPO_ERR_INVALID;
    }
  }
  const builtin_profile *b = &builtins[idx];
  if (gpu && strcasecmp(gpu, generic_builtin.gpu) == 0) {
    b = &generic_builtin;
    st = TOPO_OK;
  }
  memset(out, 0, sizeof *out);
  snprintf(out->key.gpu, sizeof out->key.gpu, "%s", b->gpu);
  memcpy(out->link, b->link, sizeof out->link);
  memcpy(out->proto, b->proto, sizeof out->proto);
  out->launch_us = b->launch_us;
  out->max_channels = b->max_channels;
  out->nvls = b->nvls;
  snprintf(out->source, sizeof out->source, "builtin:%s", b->gpu);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Terms
 */

static int valid_term(const topo_profile_term *t) {
  return t->coll >= 0 && t->coll < NCCL_NUM_FUNCTIONS && t->algo >= 0 &&
         t->algo < NCCL_NUM_ALGORITHMS && t->proto >= 0 && t->proto < NCCL_NUM_PROTOCOLS &&
         t->nchannels >= 0 && t->nchannels <= 64 && isfinite(t->lat_us) && t->lat_us >= 0 &&
         isfinite(t->bw_gbs) && t->bw_gbs > 0 && t->min_bytes <= t->max_bytes &&
         isfinite(t->rel_err) && t->rel_err >= 0 && t->npoints >= 0;
}

/* Terms are kept sorted by (coll, algo, proto, nchannels, min_bytes); the ranges of one key are
 * disjoint, so the first term of a key whose min_bytes exceeds `bytes` follows the one covering
 * it. <0 / 0 / >0 as a sorts before / with / after (key, bytes). */
/* The order of terms and points alike: (coll, algo, proto, nchannels, bytes). */
static int key_cmp(int a_coll, int a_algo, int a_proto, int a_nch, uint64_t a_bytes, int coll,
                   int algo, int proto, int nch, uint64_t bytes) {
  int d[4] = {a_coll - coll, a_algo - algo, a_proto - proto, a_nch - nch};
  for (int i = 0; i < 4; i++)
    if (d[i]) return d[i] < 0 ? -1 : 1;
  return a_bytes < bytes ? -1 : a_bytes > bytes ? 1 : 0;
}

static int term_cmp(const topo_profile_term *a, int coll, int algo, int proto, int nch,
                    uint64_t bytes) {
  return key_cmp(a->coll, a->algo, a->proto, a->nchannels, a->min_bytes, coll, algo, proto, nch, bytes);
}

/* Insert `elem` at index i of a sorted array of n elements of `size` bytes, growing it (doubling,
 * from `first`) when full. */
static topo_status insert_at(void **arr, int *n, int *cap, size_t size, int first, int i,
                             const void *elem) {
  if (*n >= *cap) {
    int grown_cap = *cap ? 2 * *cap : first;
    void *grown = topo_realloc(*arr, (size_t)grown_cap * size);
    if (!grown) return TOPO_ERR_NOMEM;
    *arr = grown;
    *cap = grown_cap;
  }
  char *base = *arr;
  memmove(base + (size_t)(i + 1) * size, base + (size_t)i * size, (size_t)(*n - i) * size);
  memcpy(base + (size_t)i * size, elem, size);
  (*n)++;
  return TOPO_OK;
}

/* The search key of term_lower_bound / point_lower_bound. */
typedef struct sort_key {
  int coll, algo, proto, nch;
  uint64_t bytes;
} sort_key;

/* Index of the first of n sorted elements (terms or points) not sorting before `k`. */
static int lower_bound(const void *base, size_t size, int n, const sort_key *k,
                       int (*cmp)(const void *, const sort_key *)) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (cmp((const char *)base + (size_t)mid * size, k) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int term_cmp_key(const void *a, const sort_key *k) {
  return term_cmp(a, k->coll, k->algo, k->proto, k->nch, k->bytes);
}

static int term_lower_bound(const topo_profile *p, int coll, int algo, int proto, int nch,
                            uint64_t bytes) {
  sort_key k = {coll, algo, proto, nch, bytes};
  return lower_bound(p->terms, sizeof *p->terms, p->nterms, &k, term_cmp_key);
}

static int same_key(const topo_profile_term *t, int coll, int algo, int proto, int nch) {
  return t->coll == coll && t->algo == algo && t->proto == proto && t->nchannels == nch;
}

const topo_profile_term *topo_profile_find_term(const topo_profile *p, int coll, int algo,
                                                int proto, int nchannels) {
  if (!p || !p->terms || p->nterms <= 0) return NULL;
  int i = term_lower_bound(p, coll, algo, proto, nchannels, 0);
  return i < p->nterms && same_key(&p->terms[i], coll, algo, proto, nchannels) ? &p->terms[i] : NULL;
}

const topo_profile_term *topo_profile_find_term_at(const topo_profile *p, int coll, int algo,
                                                   int proto, int nchannels, uint64_t bytes) {
  if (!p || !p->terms || p->nterms <= 0) return NULL;
  /* The last term of the key starting at or below `bytes`. */
  int i = term_lower_bound(p, coll, algo, proto, nchannels, bytes);
  if (i < p->nterms && same_key(&p->terms[i], coll, algo, proto, nchannels) &&
      p->terms[i].min_bytes == bytes)
    return &p->terms[i];
  if (i == 0) return NULL;
  const topo_profile_term *t = &p->terms[i - 1];
  return same_key(t, coll, algo, proto, nchannels) && t->min_bytes <= bytes && bytes <= t->max_bytes
             ? t : NULL;
}

topo_status topo_profile_set_term(topo_profile *p, const topo_profile_term *t) {
  if (!p || !t || !valid_term(t)) return TOPO_ERR_INVALID;
  int i = term_lower_bound(p, t->coll, t->algo, t->proto, t->nchannels, t->min_bytes);
  if (i < p->nterms && same_key(&p->terms[i], t->coll, t->algo, t->proto, t->nchannels) &&
      p->terms[i].min_bytes == t->min_bytes && p->terms[i].max_bytes == t->max_bytes) {
    p->terms[i] = *t;
    return TOPO_OK;
  }
  /* Disjoint ranges per key: the neighbours on either side must not reach into [min, max]. */
  if (i < p->nterms && same_key(&p->terms[i], t->coll, t->algo, t->proto, t->nchannels) &&
      p->terms[i].min_bytes <= t->max_bytes)
    return TOPO_ERR_INVALID;
  if (i > 0 && same_key(&p->terms[i - 1], t->coll, t->algo, t->proto, t->nchannels) &&
      p->terms[i - 1].max_bytes >= t->min_bytes)
    return TOPO_ERR_INVALID;
  if (p->nterms >= PROFILE_MAX_TERMS) return TOPO_ERR_INVALID;
  return insert_at((void **)&p->terms, &p->nterms, &p->cap_terms, sizeof *p->terms, 16, i, t);
}

static int point_cmp(const topo_profile_point *a, int coll, int algo, int proto, int nch,
                     uint64_t bytes) {
  return key_cmp(a->coll, a->algo, a->proto, a->nchannels, a->bytes, coll, algo, proto, nch, bytes);
}

static int point_cmp_key(const void *a, const sort_key *k) {
  return point_cmp(a, k->coll, k->algo, k->proto, k->nch, k->bytes);
}

static int point_lower_bound(const topo_profile *p, int coll, int algo, int proto, int nch,
                             uint64_t bytes) {
  sort_key k = {coll, algo, proto, nch, bytes};
  return lower_bound(p->points, sizeof *p->points, p->npoints, &k, point_cmp_key);
}

topo_status topo_profile_add_point(topo_profile *p, const topo_profile_point *pt) {
  if (!p || !pt || pt->coll < 0 || pt->coll >= NCCL_NUM_FUNCTIONS || pt->algo < 0 ||
      pt->algo >= NCCL_NUM_ALGORITHMS || pt->proto < 0 || pt->proto >= NCCL_NUM_PROTOCOLS ||
      pt->nchannels < 0 || pt->nchannels > 64 || !(pt->median_us > 0) || !(pt->median_us < 1e12) ||
      !(pt->noise_us >= 0) || !(pt->noise_us < 1e12))
    return TOPO_ERR_INVALID;
  int i = point_lower_bound(p, pt->coll, pt->algo, pt->proto, pt->nchannels, pt->bytes);
  if (i < p->npoints &&
      point_cmp(&p->points[i], pt->coll, pt->algo, pt->proto, pt->nchannels, pt->bytes) == 0) {
    p->points[i] = *pt;
    return TOPO_OK;
  }
  if (p->npoints >= PROFILE_MAX_TERMS) return TOPO_ERR_INVALID;
  topo_profile_point q = *pt;
  q.is_default = pt->is_default < 0 ? -1 : pt->is_default ? 1 : 0;
  return insert_at((void **)&p->points, &p->npoints, &p->cap_points, sizeof *p->points, 64, i, &q);
}

const topo_profile_point *topo_profile_find_points(const topo_profile *p, int coll, int algo,
                                                   int proto, int nchannels, int *n) {
  *n = 0;
  if (!p || !p->points || p->npoints <= 0) return NULL;
  int i = point_lower_bound(p, coll, algo, proto, nchannels, 0);
  int j = i;
  while (j < p->npoints && point_cmp(&p->points[j], coll, algo, proto, nchannels, 0) >= 0 &&
         p->points[j].coll == coll && p->points[j].algo == algo && p->points[j].proto == proto &&
         p->points[j].nchannels == nchannels)
    j++;
  *n = j - i;
  return j > i ? &p->points[i] : NULL;
}

void topo_profile_free(topo_profile *p) {
  if (!p) return;
  topo_free(p->terms);
  p->terms = NULL;
  p->nterms = p->cap_terms = 0;
  topo_free(p->points);
  p->points = NULL;
  p->npoints = p->cap_points = 0;
}

/* Weighted least squares: minimise sum(((lat + b*x - t) / t)^2), b = 1 / (bw * 1e3). With
 * w = 1/t^2 the normal equations are those of an ordinary weighted fit. A negative intercept is
 * clamped to 0 and the slope refitted alone; a non-positive slope is rejected. */
topo_status topo_profile_fit_term(const uint64_t *bytes, const double *time_us, int n,
                                  topo_profile_term *term) {
  if (!bytes || !time_us || !term || n < 2) return TOPO_ERR_INVALID;
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < n; i++) {
    double t = time_us[i];
    if (!isfinite(t) || t <= 0) return TOPO_ERR_INVALID;
    double x = (double)bytes[i], w = 1.0 / (t * t);
    sw += w, sx += w * x, sy += w * t, sxx += w * x * x, sxy += w * x * t;
    if (bytes[i] < lo) lo = bytes[i];
    if (bytes[i] > hi) hi = bytes[i];
  }
  if (lo == hi) return TOPO_ERR_INVALID; /* one size says nothing about bandwidth */
  double det = sw * sxx - sx * sx;
  if (!(det > 0) || !isfinite(det)) return TOPO_ERR_INVALID;
  double slope = (sw * sxy - sx * sy) / det;
  double lat = (sy - slope * sx) / sw;
  if (lat < 0) {
    lat = 0;
    slope = sxy / sxx;
  }
  if (!(slope > 0) || !isfinite(slope) || !isfinite(lat)) return TOPO_ERR_INVALID;
  double bw = 1.0 / (slope * 1e3);
  if (!isfinite(bw) || bw <= 0) return TOPO_ERR_INVALID;
  double sq = 0;
  for (int i = 0; i < n; i++) {
    double r = (lat + (double)bytes[i] * slope - time_us[i]) / time_us[i];
    sq += r * r;
  }
  term->lat_us = lat;
  term->bw_gbs = bw;
  term->min_bytes = lo;
  term->max_bytes = hi;
  term->rel_err = sqrt(sq / n);
  term->npoints = n;
  return TOPO_OK;
}

/* Fit of points [i, j] (sorted): the weighted least-squares line, or where its slope is not
 * positive (a flat small-message range) the constant minimising the relative error with a
 * negligible slope. *max_err receives the largest relative error of one point. */
static topo_status fit_segment(const uint64_t *bytes, const double *time_us, int i, int j,
                               topo_profile_term *t, double *max_err) {
  int n = j - i + 1;
  if (topo_profile_fit_term(bytes + i, time_us + i, n, t) != TOPO_OK) {
    double s1 = 0, s2 = 0;
    for (int k = i; k <= j; k++) {
      if (!isfinite(time_us[k]) || time_us[k] <= 0) return TOPO_ERR_INVALID;
      s1 += 1.0 / time_us[k];
      s2 += 1.0 / (time_us[k] * time_us[k]);
    }
    t->lat_us = s1 / s2;
    t->bw_gbs = TOPO_PROFILE_FLAT_BW_GBS;
    t->min_bytes = bytes[i];
    t->max_bytes = bytes[j];
    t->npoints = n;
  }
  double sq = 0, worst = 0;
  for (int k = i; k <= j; k++) {
    double r = fabs(t->lat_us + (double)bytes[k] / (t->bw_gbs * 1e3) - time_us[k]) / time_us[k];
    sq += r * r;
    if (r > worst) worst = r;
  }
  t->rel_err = sqrt(sq / n);
  *max_err = worst;
  return TOPO_OK;
}

/* `v` to 7 significant digits (far below any measurement's precision). */
static double round_sig(double v) {
  if (!(v > 0) || !isfinite(v)) return v;
  double scale = pow(10.0, 6 - (int)floor(log10(v)));
  double r = round(v * scale) / scale;
  return r > 0 && isfinite(r) ? r : v;
}

/* Geometric midpoint of two sizes, rounded down. */
static uint64_t geo_mid(uint64_t a, uint64_t b) {
  double m = sqrt((double)a * (double)b);
  uint64_t r = m >= 1.8e19 ? UINT64_MAX : (uint64_t)m;
  if (r < a) r = a;
  if (r >= b) r = b - 1;
  return r;
}

int topo_profile_fit_piecewise(const uint64_t *bytes, const double *time_us, int n,
                               double max_rel_err, topo_profile_term *out, int max_terms) {
  if (!bytes || !time_us || !out || n < 2 || max_terms < 1 || !(max_rel_err >= 0)) return 0;
  uint64_t *b = topo_malloc((size_t)n * sizeof *b);
  double *y = topo_malloc((size_t)n * sizeof *y);
  if (!b || !y) {
    topo_free(b);
    topo_free(y);
    return -1;
  }
  /* Insertion sort by size (sweeps arrive sorted or nearly). */
  for (int k = 0; k < n; k++) {
    int m = k;
    while (m > 0 && b[m - 1] > bytes[k]) {
      b[m] = b[m - 1];
      y[m] = y[m - 1];
      m--;
    }
    b[m] = bytes[k];
    y[m] = time_us[k];
  }
  int nout = 0, i = 0;
  while (i < n) {
    int g = i; /* end of the group of points of size b[i] */
    while (g + 1 < n && b[g + 1] == b[i]) g++;
    topo_profile_term t;
    double err;
    if (g + 1 >= n) {
      /* One size left (greedy would have taken it into the previous segment had it fitted): a
       * segment of its own from the previous one's end, fitted with the previous last size. */
      if (nout == 0) break;
      int start = i - 1;
      while (start > 0 && b[start - 1] == b[i - 1]) start--;
      if (nout < max_terms && fit_segment(b, y, start, n - 1, &t, &err) == TOPO_OK) {
        t.min_bytes = out[nout - 1].max_bytes + 1;
        t.max_bytes = b[n - 1];
        t.npoints = n - start;
        out[nout++] = t;
      } else {
        out[nout - 1].max_bytes = b[n - 1];
      }
      break;
    }
    /* Greedy: the longest run from i, ending on a whole group of equal sizes, that fits within
     * max_rel_err (two sizes always fit); the last allowed segment takes the rest. */
    int last = nout + 1 >= max_terms, best_j = -1;
    topo_profile_term best;
    memset(&best, 0, sizeof best);
    for (int k = g + 1; k < n; k++) {
      if (k + 1 < n && b[k + 1] == b[k]) continue;
      if (last) k = n - 1;
      if (fit_segment(b, y, i, k, &t, &err) != TOPO_OK) break;
      if (err > max_rel_err && best_j >= 0 && !last) break;
      best = t;
      best_j = k;
      if (err > max_rel_err && !last) break;
    }
    if (best_j < 0) break;
    best.npoints = best_j - i + 1;
    best.min_bytes = nout ? out[nout - 1].max_bytes + 1 : b[i];
    best.max_bytes = best_j + 1 < n ? geo_mid(b[best_j], b[best_j + 1]) : b[best_j];
    out[nout++] = best;
    i = best_j + 1;
  }
  for (int k = 0; k < nout; k++) { /* 7 significant digits: short to write, quick to read */
    out[k].lat_us = round_sig(out[k].lat_us);
    out[k].bw_gbs = round_sig(out[k].bw_gbs);
    out[k].rel_err = round_sig(out[k].rel_err);
  }
  topo_free(b);
  topo_free(y);
  return nout;
}

/* ---------------------------------------------------------------------------------------------
 * Section keys
 */

static int gpu_is_any(const char *g) { return !g[0] || strcmp(g, "*") == 0; }

int topo_profile_key_score(const topo_profile_key *have, const topo_profile_key *want) {
  static const topo_profile_key any;
  if (!have) return -1;
  if (!want) want = &any;
  int score = 0;
  if (!gpu_is_any(have->gpu) && !gpu_is_any(want->gpu)) {
    if (strcasecmp(have->gpu, want->gpu) != 0) return -1;
    score += 8;
  }
  if (have->nnodes > 0 && want->nnodes > 0) {
    if (have->nnodes != want->nnodes) return -1;
    score += 4;
  }
  if (have->nranks > 0 && want->nranks > 0) {
    if (have->nranks != want->nranks) return -1;
    score += 2;
  }
  if (have->nccl_version > 0 && want->nccl_version > 0) {
    if (have->nccl_version != want->nccl_version) return -1;
    score += 1;
  }
  return score;
}

/* ---------------------------------------------------------------------------------------------
 * Reader
 */

typedef struct parser {
  const char *name;
  int line;
  int nbad;
} parser;

static void bad(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(parser *ps, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (ps->nbad < PROFILE_MAX_WARNINGS)
    TOPO_WARN("%s:%d: %s; line skipped", ps->name, ps->line, what);
  ps->nbad++;
}

static int parse_double(const char *s, double lo, double hi, double *out) {
  if (!*s) return 0;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno == ERANGE || !isfinite(v) || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
  if (!*s) return 0;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*end || errno == ERANGE || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

static int parse_u64(const char *s, uint64_t *out) {
  if (!isdigit((unsigned char)*s)) return 0;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno == ERANGE) return 0;
  *out = v;
  return 1;
}

/* Split "key=value" in place; returns the value or NULL when there is no '='. */
static char *split_kv(char *tok) {
  char *eq = strchr(tok, '=');
  if (!eq) return NULL;
  *eq = '\0';
  return eq + 1;
}

static int valid_gpu_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= sizeof(((topo_profile_key *)0)->gpu)) return 0;
  if (strcmp(s, "*") == 0) return 1;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.') return 0;
  return 1;
}

/* `section gpu=H200 nranks=8 nnodes=1 nccl=22809`; absent or "*" fields match anything. */
static int parse_section(parser *ps, char **tok, int ntok, topo_profile_key *key) {
  memset(key, 0, sizeof *key);
  for (int i = 1; i < ntok; i++) {
    char *v = split_kv(tok[i]);
    long n;
    if (!v) return bad(ps, "section: expected key=value, got '%s'", tok[i]), 0;
    if (strcmp(tok[i], "gpu") == 0) {
      if (!valid_gpu_name(v)) return bad(ps, "section: bad gpu name '%s'", v), 0;
      memset(key->gpu, 0, sizeof key->gpu); /* a repeated gpu= leaves no tail of the first */
      snprintf(key->gpu, sizeof key->gpu, "%s", strcmp(v, "*") == 0 ? "" : v);
    } else if (strcmp(tok[i], "nranks") == 0 || strcmp(tok[i], "nnodes") == 0 ||
               strcmp(tok[i], "nccl") == 0) {
      if (strcmp(v, "*") == 0) {
        n = 0;
      } else if (!parse_long(v, 0, 100000000, &n)) {
        return bad(ps, "section: bad number '%s' (want an integer >= 0 or *)", v), 0;
      }
      if (tok[i][1] == 'r') key->nranks = (int)n;
      else if (tok[i][1] == 'n') key->nnodes = (int)n;
      else key->nccl_version = (int)n;
    } else {
      return bad(ps, "section: unknown key '%s' (gpu, nranks, nnodes, nccl)", tok[i]), 0;
    }
  }
  return 1;
}

/* key=value pairs of a link / proto / term line. `names` lists the keys, `vals` receives them,
 * `seen` marks which came; returns 0 after warning on an unknown key or a bad value. */
typedef struct kv_spec {
  const char *key;
  double lo, hi;
} kv_spec;

static int parse_pairs(parser *ps, const char *what, char **tok, int first, int ntok,
                       const kv_spec *spec, int nspec, double *vals, int *seen) {
  for (int i = first; i < ntok; i++) {
    char *v = split_kv(tok[i]);
    if (!v) {
      return bad(ps, "%s: expected key=value, got '%s'", what, tok[i]), 0;
    }
    int k;
    for (k = 0; k < nspec; k++)
      if (strcmp(tok[i], spec[k].key) == 0) break;
    if (k == nspec) {
      return bad(ps, "%s: unknown key '%s'", what, tok[i]), 0;
    }
    if (!parse_double(v, spec[k].lo, spec[k].hi, &vals[k])) {
      return bad(ps, "%s: bad value for %s: '%s' (want %g..%g)", what, spec[k].key, v, spec[k].lo,
                 spec[k].hi), 0;
    }
    seen[k] = 1;
  }
  return 1;
}

static const kv_spec link_spec[] = {{"bw_gbs", 1e-6, 1e6}, {"lat_us", 0, 1e6}};
static const kv_spec proto_spec[] = {
    {"bw_eff", 1e-6, 1.0}, {"lat_us", 0, 1e6}, {"ch_bw_gbs", 0, 1e6}};

static int parse_link(parser *ps, char **tok, int ntok, topo_profile *p) {
  int cls = ntok > 1 ? topo_nccl_name_index(tok[1], link_names, TOPO_LINK_COUNT) : -1;
  if (cls < 0) return bad(ps, "link: unknown link class '%s' (nvlink, pci, net)", ntok > 1 ? tok[1] : ""), 0;
  double v[2] = {p->link[cls].bw_gbs, p->link[cls].lat_us};
  int seen[2] = {0, 0};
  if (!parse_pairs(ps, "link", tok, 2, ntok, link_spec, 2, v, seen)) return 0;
  if (!seen[0] && !seen[1]) return bad(ps, "link %s: no bw_gbs= or lat_us=", tok[1]), 0;
  p->link[cls].bw_gbs = v[0];
  p->link[cls].lat_us = v[1];
  return 1;
}

static int parse_proto(parser *ps, char **tok, int ntok, topo_profile *p) {
  int pr = ntok > 1 ? topo_nccl_proto_from_name(tok[1]) : -1;
  if (pr < 0) return bad(ps, "proto: unknown protocol '%s' (ll, ll128, simple)", ntok > 1 ? tok[1] : ""), 0;
  double v[3] = {p->proto[pr].bw_eff, p->proto[pr].lat_us, p->proto[pr].ch_bw_gbs};
  int seen[3] = {0, 0, 0};
  if (!parse_pairs(ps, "proto", tok, 2, ntok, proto_spec, 3, v, seen)) return 0;
  if (!seen[0] && !seen[1] && !seen[2])
    return bad(ps, "proto %s: no bw_eff=, lat_us= or ch_bw_gbs=", tok[1]), 0;
  p->proto[pr].bw_eff = v[0];
  p->proto[pr].lat_us = v[1];
  p->proto[pr].ch_bw_gbs = v[2];
  return 1;
}

/* `term <coll> <algo> <proto> [channels=N] lat_us=X bw_gbs=Y [min_bytes= max_bytes= rel_err=
 * npoints=]` */
static topo_status parse_term(parser *ps, char **tok, int ntok, topo_profile_term *out) {
  if (ntok < 4) return bad(ps, "term: want <collective> <algorithm> <protocol> key=value..."), TOPO_ERR_PARSE;
  topo_profile_term t;
  memset(&t, 0, sizeof t);
  t.max_bytes = UINT64_MAX;
  if ((t.coll = topo_nccl_coll_from_name(tok[1])) < 0)
    return bad(ps, "term: unknown collective '%s'", tok[1]), TOPO_ERR_PARSE;
  if ((t.algo = topo_nccl_algo_from_name(tok[2])) < 0)
    return bad(ps, "term: unknown algorithm '%s'", tok[2]), TOPO_ERR_PARSE;
  if ((t.proto = topo_nccl_proto_from_name(tok[3])) < 0)
    return bad(ps, "term: unknown protocol '%s'", tok[3]), TOPO_ERR_PARSE;
  int have_lat = 0, have_bw = 0;
  for (int i = 4; i < ntok; i++) {
    char *v = split_kv(tok[i]);
    const char *k = tok[i];
    long n;
    if (!v) return bad(ps, "term: expected key=value, got '%s'", k), TOPO_ERR_PARSE;
    if (strcmp(k, "channels") == 0) {
      if (!parse_long(v, 0, 64, &n)) return bad(ps, "term: bad channels '%s' (0..64)", v), TOPO_ERR_PARSE;
      t.nchannels = (int)n;
    } else if (strcmp(k, "lat_us") == 0) {
      if (!parse_double(v, 0, 1e9, &t.lat_us)) return bad(ps, "term: bad lat_us '%s' (>= 0)", v), TOPO_ERR_PARSE;
      have_lat = 1;
    } else if (strcmp(k, "bw_gbs") == 0) {
      if (!parse_double(v, 1e-9, 1e9, &t.bw_gbs) || !(t.bw_gbs > 0))
        return bad(ps, "term: bad bw_gbs '%s' (must be > 0)", v), TOPO_ERR_PARSE;
      have_bw = 1;
    } else if (strcmp(k, "min_bytes") == 0) {
      if (!parse_u64(v, &t.min_bytes)) return bad(ps, "term: bad min_bytes '%s'", v), TOPO_ERR_PARSE;
    } else if (strcmp(k, "max_bytes") == 0) {
      if (!parse_u64(v, &t.max_bytes)) return bad(ps, "term: bad max_bytes '%s'", v), TOPO_ERR_PARSE;
    } else if (strcmp(k, "rel_err") == 0) {
      if (!parse_double(v, 0, 1e9, &t.rel_err)) return bad(ps, "term: bad rel_err '%s'", v), TOPO_ERR_PARSE;
    } else if (strcmp(k, "npoints") == 0) {
      if (!parse_long(v, 0, 1000000000, &n)) return bad(ps, "term: bad npoints '%s'", v), TOPO_ERR_PARSE;
      t.npoints = (int)n;
    } else {
      return bad(ps, "term: unknown key '%s'", k), TOPO_ERR_PARSE;
    }
  }
  if (!have_lat || !have_bw) return bad(ps, "term: lat_us= and bw_gbs= are required"), TOPO_ERR_PARSE;
  if (t.min_bytes > t.max_bytes) return bad(ps, "term: min_bytes > max_bytes"), TOPO_ERR_PARSE;
  *out = t;
  return TOPO_OK;
}

/* `point <coll> <algo> <proto> [channels=N] bytes=B median_us=X noise_us=Y [default=0|1]` */
static topo_status parse_point(parser *ps, char **tok, int ntok, topo_profile *p) {
  if (ntok < 4) return bad(ps, "point: want <collective> <algorithm> <protocol> key=value..."), TOPO_ERR_PARSE;
  topo_profile_point t;
  memset(&t, 0, sizeof t);
  if ((t.coll = topo_nccl_coll_from_name(tok[1])) < 0)
    return bad(ps, "point: unknown collective '%s'", tok[1]), TOPO_ERR_PARSE;
  if ((t.algo = topo_nccl_algo_from_name(tok[2])) < 0)
    return bad(ps, "point: unknown algorithm '%s'", tok[2]), TOPO_ERR_PARSE;
  if ((t.proto = topo_nccl_proto_from_name(tok[3])) < 0)
    return bad(ps, "point: unknown protocol '%s'", tok[3]), TOPO_ERR_PARSE;
  int have = 0;
  t.is_default = -1; /* no default=: not known */
  for (int i = 4; i < ntok; i++) {
    char *v = split_kv(tok[i]);
    const char *k = tok[i];
    long n;
    if (!v) return bad(ps, "point: expected key=value, got '%s'", k), TOPO_ERR_PARSE;
    if (strcmp(k, "channels") == 0) {
      if (!parse_long(v, 0, 64, &n)) return bad(ps, "point: bad channels '%s' (0..64)", v), TOPO_ERR_PARSE;
      t.nchannels = (int)n;
    } else if (strcmp(k, "bytes") == 0) {
      if (!parse_u64(v, &t.bytes)) return bad(ps, "point: bad bytes '%s'", v), TOPO_ERR_PARSE;
      have |= 1;
    } else if (strcmp(k, "median_us") == 0) {
      if (!parse_double(v, 1e-9, 1e9, &t.median_us) || !(t.median_us > 0))
        return bad(ps, "point: bad median_us '%s' (must be > 0)", v), TOPO_ERR_PARSE;
      have |= 2;
    } else if (strcmp(k, "noise_us") == 0) {
      if (!parse_double(v, 0, 1e9, &t.noise_us)) return bad(ps, "point: bad noise_us '%s' (>= 0)", v), TOPO_ERR_PARSE;
      have |= 4;
    } else if (strcmp(k, "default") == 0) {
      if (!parse_long(v, 0, 1, &n)) return bad(ps, "point: bad default '%s' (0 or 1)", v), TOPO_ERR_PARSE;
      t.is_default = (int)n;
    } else {
      return bad(ps, "point: unknown key '%s'", k), TOPO_ERR_PARSE;
    }
  }
  if (have != 7) return bad(ps, "point: bytes=, median_us= and noise_us= are required"), TOPO_ERR_PARSE;
  int n = 0;
  const topo_profile_point *same = topo_profile_find_points(p, t.coll, t.algo, t.proto, t.nchannels, &n);
  for (int i = 0; i < n; i++)
    if (same[i].bytes == t.bytes)
      return bad(ps, "point: duplicate (collective, algorithm, protocol, channels, bytes) in this section"),
             TOPO_ERR_PARSE;
  topo_status st = topo_profile_add_point(p, &t);
  if (st == TOPO_ERR_INVALID) return bad(ps, "point: too many points in one section"), st;
  return st;
}

static int parse_nvls(const char *v, int *out) {
  if (strcmp(v, "1") == 0 || strcasecmp(v, "yes") == 0) *out = 1;
  else if (strcmp(v, "0") == 0 || strcasecmp(v, "no") == 0) *out = 0;
  else if (strcmp(v, "-1") == 0 || strcasecmp(v, "unknown") == 0) *out = -1;
  else return 0;
  return 1;
}

/* Parse state across lines: the section being read and the best one so far. */
typedef struct reader {
  parser ps;
  topo_profile_key want;
  int in_section;      /* 1: lines apply to cur; 0 before any section; -1 skipping a bad one */
  int version_seen;
  topo_profile cur;
  int cur_score;
  topo_profile best;
  int best_score;      /* -1: none yet */
  topo_status nomem;
  /* The section's term lines as read, checked and sorted once when the section ends: one sort
   * instead of an insertion per line keeps any order of lines linear-logarithmic. */
  struct staged_term { topo_profile_term t; int line; } *stage;
  int nstage, cap_stage;
} reader;

static int staged_cmp(const void *pa, const void *pb) {
  const struct staged_term *a = pa, *b = pb;
  int c = term_cmp(&a->t, b->t.coll, b->t.algo, b->t.proto, b->t.nchannels, b->t.min_bytes);
  return c ? c : (a->line > b->line) - (a->line < b->line);
}

/* Move the staged terms into the section in (coll, algo, proto, nchannels, min_bytes) order. Of
 * two terms of one key whose ranges overlap, the one starting lower (then the earlier line) is
 * kept and the other warned about at its line. */
static void flush_terms(reader *r) {
  topo_profile *p = &r->cur;
  if (r->nstage == 0) return;
  qsort(r->stage, (size_t)r->nstage, sizeof *r->stage, staged_cmp);
  size_t want = (size_t)(p->nterms + r->nstage);
  topo_profile_term *terms = topo_realloc(p->terms, want * sizeof *terms);
  if (!terms) {
    r->nomem = TOPO_ERR_NOMEM;
    r->nstage = 0;
    return;
  }
  p->terms = terms;
  p->cap_terms = p->nterms + r->nstage;
  int line = r->ps.line;
  for (int i = 0; i < r->nstage; i++) {
    const topo_profile_term *t = &r->stage[i].t;
    const topo_profile_term *prev = p->nterms ? &p->terms[p->nterms - 1] : NULL;
    r->ps.line = r->stage[i].line;
    if (prev && same_key(prev, t->coll, t->algo, t->proto, t->nchannels) &&
        prev->max_bytes >= t->min_bytes) {
      if (prev->min_bytes == t->min_bytes && prev->max_bytes == t->max_bytes)
        bad(&r->ps, "term: duplicate (collective, algorithm, protocol, channels, range) in "
                    "this section");
      else
        bad(&r->ps, "term: byte range overlaps another term of this (collective, algorithm, "
                    "protocol, channels) in this section");
      continue;
    }
    if (!valid_term(t)) {
      bad(&r->ps, "term: invalid");
      continue;
    }
    p->terms[p->nterms++] = *t;
  }
  r->ps.line = line;
  r->nstage = 0;
}

static void finish_section(reader *r) {
  if (r->in_section != 1) return;
  flush_terms(r);
  r->in_section = 0;
  if (r->cur_score > r->best_score) {
    topo_profile_free(&r->best);
    r->best = r->cur;
    r->best_score = r->cur_score;
  } else {
    topo_profile_free(&r->cur);
  }
  memset(&r->cur, 0, sizeof r->cur);
}

static void handle_line(reader *r, char *line) {
  parser *ps = &r->ps;
  char *tok[PROFILE_MAX_TOKENS];
  int ntok = 0;
  for (char *s = line;;) {
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\v' || *s == '\f') s++;
    if (!*s || *s == '#') break;
    if (ntok == PROFILE_MAX_TOKENS) {
      bad(ps, "more than %d fields", PROFILE_MAX_TOKENS);
      return;
    }
    tok[ntok++] = s;
    while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\v' && *s != '\f' && *s != '#') s++;
    if (*s == '#') {
      *s = '\0';
      break;
    }
    if (*s) *s++ = '\0';
  }
  if (ntok == 0) return;
  const char *k = tok[0];

  if (strcmp(k, "topo-profile") == 0) {
    long v;
    r->version_seen = 1; /* a malformed one still counts: no second warning for its absence */
    if (ntok != 2 || !parse_long(tok[1], 1, 1000000, &v)) {
      bad(ps, "version line: want 'topo-profile <version>'");
      return;
    }
    if (v > TOPO_PROFILE_VERSION) {
      TOPO_WARN("%s:%d: profile version %ld is newer than this reader's %d; keys it does not know "
                "will be skipped", ps->name, ps->line, v, TOPO_PROFILE_VERSION);
    }
    return;
  }
  if (!r->version_seen) {
    TOPO_WARN("%s:%d: no 'topo-profile %d' line before the first entry; reading it as version %d",
              ps->name, ps->line, TOPO_PROFILE_VERSION, TOPO_PROFILE_VERSION);
    r->version_seen = 1;
  }
  if (strcmp(k, "section") == 0) {
    finish_section(r);
    topo_profile_key key;
    if (!parse_section(ps, tok, ntok, &key)) {
      r->in_section = -1; /* its lines belong to no usable section: skipped quietly */
      return;
    }
    topo_profile_builtin(key.gpu, &r->cur);
    r->cur.key = key;
    snprintf(r->cur.source, sizeof r->cur.source, "%s:%d", ps->name, ps->line);
    r->cur_score = topo_profile_key_score(&key, &r->want);
    r->in_section = 1;
    return;
  }
  if (r->in_section == -1) return;
  if (r->in_section == 0) { bad(ps, "'%s' before any 'section' line", k); return; }

  topo_profile *p = &r->cur;
  long n;
  double d;
  if (strcmp(k, "launch_us") == 0) {
    if (ntok != 2 || !parse_double(tok[1], 0, 1e6, &d))
      { bad(ps, "launch_us: want one number >= 0"); return; }
    p->launch_us = d;
  } else if (strcmp(k, "max_channels") == 0) {
    if (ntok != 2 || !parse_long(tok[1], 0, 64, &n))
      { bad(ps, "max_channels: want one integer 0..64"); return; }
    p->max_channels = (int)n;
  } else if (strcmp(k, "nvls") == 0) {
    int v;
    if (ntok != 2 || !parse_nvls(tok[1], &v)) { bad(ps, "nvls: want yes, no or unknown"); return; }
    p->nvls = v;
  } else if (strcmp(k, "link") == 0) {
    parse_link(ps, tok, ntok, p);
  } else if (strcmp(k, "proto") == 0) {
    parse_proto(ps, tok, ntok, p);
  } else if (strcmp(k, "term") == 0) {
    topo_profile_term t;
    if (parse_term(ps, tok, ntok, &t) != TOPO_OK) return;
    if (p->nterms + r->nstage >= PROFILE_MAX_TERMS) {
      bad(ps, "term: too many terms in one section");
      return;
    }
    if (r->nstage == r->cap_stage) {
      int cap = r->cap_stage ? 2 * r->cap_stage : 64;
      struct staged_term *grown = topo_realloc(r->stage, (size_t)cap * sizeof *grown);
      if (!grown) {
        r->nomem = TOPO_ERR_NOMEM;
        return;
      }
      r->stage = grown;
      r->cap_stage = cap;
    }
    r->stage[r->nstage].t = t;
    r->stage[r->nstage++].line = ps->line;
  } else if (strcmp(k, "point") == 0) {
    if (parse_point(ps, tok, ntok, p) == TOPO_ERR_NOMEM) r->nomem = TOPO_ERR_NOMEM;
  } else {
    bad(ps, "unknown key '%s'", k);
  }
}

topo_status topo_profile_parse(const char *text, size_t len, const char *name,
                               const topo_profile_key *want, topo_profile *out, int *nbad) {
  if (nbad) *nbad = 0;
  if (!out) return TOPO_ERR_INVALID;
  reader r;
  memset(&r, 0, sizeof r);
  r.ps.name = name ? name : "<profile>";
  if (want) r.want = *want;
  r.best_score = -1;
  if (!text) len = 0;

  char line[PROFILE_MAX_LINE];
  size_t pos = 0;
  while (pos < len && r.nomem == TOPO_OK) {
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    r.ps.line++;
    size_t n = end - pos;
    if (memchr(text + pos, '\0', n)) {
      bad(&r.ps, "NUL byte in line");
    } else if (n >= sizeof line) {
      bad(&r.ps, "line longer than %d bytes", PROFILE_MAX_LINE - 1);
    } else {
      memcpy(line, text + pos, n);
      line[n] = '\0';
      handle_line(&r, line);
    }
    pos = end + 1;
  }
  finish_section(&r);
  topo_profile_free(&r.cur);
  topo_free(r.stage);
  if (nbad) *nbad = r.ps.nbad;
  if (r.ps.nbad > PROFILE_MAX_WARNINGS)
    TOPO_WARN("%d more bad lines in %s; skipped", r.ps.nbad - PROFILE_MAX_WARNINGS, r.ps.name);

  const char *gpu = want && want->gpu[0] ? want->gpu : NULL;
  if (r.nomem != TOPO_OK) {
    topo_profile_free(&r.best);
    TOPO_WARN("%s: out of memory while reading; using the built-in defaults", r.ps.name);
    topo_profile_builtin(gpu, out);
    return TOPO_ERR_NOMEM;
  }
  if (r.best_score < 0) {
    topo_profile_builtin(gpu, out);
    TOPO_WARN("%s: no section matches gpu=%s nranks=%d nnodes=%d nccl=%d; using %s", r.ps.name,
              gpu ? gpu : "*", want ? want->nranks : 0, want ? want->nnodes : 0,
              want ? want->nccl_version : 0, out->source);
    return TOPO_ERR_PARSE;
  }
  *out = r.best;
  return TOPO_OK;
}

topo_status topo_profile_load(const char *path, const topo_profile_key *want, topo_profile *out) {
  if (!out) return TOPO_ERR_INVALID;
  const char *gpu = want && want->gpu[0] ? want->gpu : NULL;
  char *buf, why[96];
  size_t len;
  topo_status st = topo_file_read(path, PROFILE_MAX_FILE, &buf, &len, why, sizeof why);
  if (st != TOPO_OK) {
    topo_profile_builtin(gpu, out);
    TOPO_WARN("cannot read profile '%s': %s; using %s", path ? path : "(null)", why, out->source);
    return st;
  }
  st = topo_profile_parse(buf, len, path, want, out, NULL);
  topo_free(buf);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Writer
 */

/* The shortest text that reads back to the same double: plain decimals ("370", "0.825") unless an
 * exponent form is shorter ("1e-07"). */
static void fmt_double(char *buf, size_t size, double v) {
  char exp_form[40] = "", fixed[64] = "";
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(exp_form, sizeof exp_form, "%.*g", prec, v);
    if (strtod(exp_form, NULL) == v) break;
  }
  if (fabs(v) < 1e15) {
    for (int dec = 0; dec <= 20; dec++) {
      snprintf(fixed, sizeof fixed, "%.*f", dec, v);
      if (strtod(fixed, NULL) == v) break;
      fixed[0] = '\0';
    }
  }
  snprintf(buf, size, "%s", fixed[0] && strlen(fixed) <= strlen(exp_form) ? fixed : exp_form);
}

topo_status topo_profile_write(FILE *f, const topo_profile *p) {
  if (!f || !p) return TOPO_ERR_INVALID;
  char a[40], b[40], c[40];
  fprintf(f, "topo-profile %d\n", p->npoints > 0 ? TOPO_PROFILE_VERSION : 1);
  char nr[16], nn[16], nv[16];
  snprintf(nr, sizeof nr, "%d", p->key.nranks);
  snprintf(nn, sizeof nn, "%d", p->key.nnodes);
  snprintf(nv, sizeof nv, "%d", p->key.nccl_version);
  fprintf(f, "section gpu=%s nranks=%s nnodes=%s nccl=%s\n", gpu_is_any(p->key.gpu) ? "*" : p->key.gpu,
          p->key.nranks > 0 ? nr : "*", p->key.nnodes > 0 ? nn : "*",
          p->key.nccl_version > 0 ? nv : "*");
  fmt_double(a, sizeof a, p->launch_us);
  fprintf(f, "launch_us %s\n", a);
  fprintf(f, "max_channels %d\n", p->max_channels);
  fprintf(f, "nvls %s\n", p->nvls > 0 ? "yes" : p->nvls == 0 ? "no" : "unknown");
  for (int i = 0; i < TOPO_LINK_COUNT; i++) {
    fmt_double(a, sizeof a, p->link[i].bw_gbs);
    fmt_double(b, sizeof b, p->link[i].lat_us);
    fprintf(f, "link %s bw_gbs=%s lat_us=%s\n", link_names[i], a, b);
  }
  for (int i = 0; i < NCCL_NUM_PROTOCOLS; i++) {
    fmt_double(a, sizeof a, p->proto[i].bw_eff);
    fmt_double(b, sizeof b, p->proto[i].lat_us);
    fmt_double(c, sizeof c, p->proto[i].ch_bw_gbs);
    fprintf(f, "proto %s bw_eff=%s lat_us=%s ch_bw_gbs=%s\n",
            topo_nccl_proto_name(i, TOPO_NCCL_FILE), a, b, c);
  }
  for (int i = 0; i < p->nterms; i++) {
    const topo_profile_term *t = &p->terms[i];
    fmt_double(a, sizeof a, t->lat_us);
    fmt_double(b, sizeof b, t->bw_gbs);
    fmt_double(c, sizeof c, t->rel_err);
    fprintf(f,
            "term %s %s %s channels=%d lat_us=%s bw_gbs=%s min_bytes=%llu max_bytes=%llu "
            "rel_err=%s npoints=%d\n",
            topo_nccl_func_name(t->coll, TOPO_NCCL_FILE),
            topo_nccl_algo_name(t->algo, TOPO_NCCL_FILE),
            topo_nccl_proto_name(t->proto, TOPO_NCCL_FILE),
            t->nchannels, a, b, (unsigned long long)t->min_bytes,
            (unsigned long long)t->max_bytes, c, t->npoints);
  }
  for (int i = 0; i < p->npoints; i++) {
    const topo_profile_point *t = &p->points[i];
    fmt_double(a, sizeof a, t->median_us);
    fmt_double(b, sizeof b, t->noise_us);
    fprintf(f, "point %s %s %s channels=%d bytes=%llu median_us=%s noise_us=%s%s\n",
            topo_nccl_func_name(t->coll, TOPO_NCCL_FILE),
            topo_nccl_algo_name(t->algo, TOPO_NCCL_FILE),
            topo_nccl_proto_name(t->proto, TOPO_NCCL_FILE),
            t->nchannels, (unsigned long long)t->bytes, a, b,
            t->is_default < 0 ? "" : t->is_default ? " default=1" : " default=0");
  }
  return ferror(f) ? TOPO_ERR_IO : TOPO_OK;
}
