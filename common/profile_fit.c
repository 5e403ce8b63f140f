// SPDX-License-Identifier: Apache-2.0
// Fitting measured sweeps into profile terms (see profile.h): the relative-error weighted
// least-squares line of one sweep, and the piecewise fit (the fewest contiguous pieces each
// within a relative error). Called by topo-calibrate, topo-report fit and the tests; pure
// functions over their arguments (the piecewise fit allocates two scratch arrays).
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "profile.h"

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
