/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The results of one topo-calibrate run: machine facts, the p2p matrices, the floors, the settings
 * swept and one record per (setting, collective, size) point. Grown with topo_realloc; owned by
 * the caller of topo_cal_results_init, released by topo_cal_results_free.
 */
#include <math.h>
#include <signal.h>
#include <string.h>

#include "alloc.h"
#include "calibrate.h"

void topo_cal_results_init(topo_cal_results *r) {
  memset(r, 0, sizeof *r);
  r->tuner_loaded = -1;
  r->nnodes = 1;
  r->nprocs = 1;
}

void topo_cal_results_free(topo_cal_results *r) {
  if (!r) return;
  topo_free(r->p2p_ce_bw);
  topo_free(r->p2p_ce_lat);
  topo_free(r->p2p_sm_bw);
  topo_free(r->p2p_sm_lat);
  topo_free(r->settings);
  topo_free(r->points);
  topo_cal_results_init(r);
}

int topo_cal_results_alloc_p2p(topo_cal_results *r, int ndev) {
  if (ndev <= 0) return -1;
  size_t n = (size_t)ndev * (size_t)ndev;
  double **m[4] = {&r->p2p_ce_bw, &r->p2p_ce_lat, &r->p2p_sm_bw, &r->p2p_sm_lat};
  for (int i = 0; i < 4; i++) {
    topo_free(*m[i]);
    *m[i] = topo_calloc(n, sizeof(double));
    if (!*m[i]) return -1;
  }
  r->ndev = ndev;
  return 0;
}

static int grow(void **arr, int *cap, int need, size_t elem) {
  if (need <= *cap) return 0;
  int ncap = *cap ? *cap * 2 : 64;
  while (ncap < need) ncap *= 2;
  void *p = topo_realloc(*arr, (size_t)ncap * elem);
  if (!p) return -1;
  *arr = p;
  *cap = ncap;
  return 0;
}

int topo_cal_results_add_setting(topo_cal_results *r, const topo_cal_setting *s) {
  if (grow((void **)&r->settings, &r->cap_settings, r->nsettings + 1, sizeof *s)) return -1;
  r->settings[r->nsettings] = *s;
  return r->nsettings++;
}

int topo_cal_results_add_point(topo_cal_results *r, const topo_cal_point *p) {
  if (grow((void **)&r->points, &r->cap_points, r->npoints + 1, sizeof *p)) return -1;
  r->points[r->npoints] = *p;
  return r->npoints++;
}

int topo_cal_results_find_kind(const topo_cal_results *r, int kind) {
  for (int i = 0; i < r->nsettings; i++)
    if (r->settings[i].kind == kind) return i;
  return -1;
}

int topo_cal_results_best_forced(const topo_cal_results *r, int coll, uint64_t bytes) {
  int best = -1;
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    if (p->coll != coll || p->bytes != bytes || p->status != TOPO_CAL_OK) continue;
    if (r->settings[p->setting].kind != TOPO_CAL_FORCED) continue;
    if (best < 0 || p->stats.median < r->points[best].stats.median) best = i;
  }
  return best;
}

#define POOL_CAP 512 /* repeats pooled per result: rounds x settings that ran the same thing */

static int effective(const topo_cal_results *r, const topo_cal_point *p, int *algo, int *proto,
                     int *ch) {
  const topo_cal_setting *s = &r->settings[p->setting];
  if (s->kind != TOPO_CAL_FORCED || p->status != TOPO_CAL_OK) return 0;
  *algo = p->ran_algo >= 0 ? p->ran_algo : s->algo;
  *proto = p->ran_proto >= 0 ? p->ran_proto : s->proto;
  *ch = p->ran_channels > 0 ? p->ran_channels : s->nchannels > 0 ? s->nchannels : -1;
  return 1;
}

static double median_value(const double *v, int n) {
  topo_cal_stats st;
  return topo_cal_stats_compute(v, n, &st) == 0 ? st.median : 0;
}

int topo_cal_results_measured(const topo_cal_results *r, topo_cal_measured *out, int cap) {
  int n = 0;
  double *pool = topo_malloc(sizeof(double) * POOL_CAP);
  if (!pool) return 0;
  for (int i = 0; i < r->npoints && n < cap; i++) {
    int a, p, ch;
    const topo_cal_point *pi = &r->points[i];
    if (!effective(r, pi, &a, &p, &ch)) continue;
    int seen = 0;
    for (int k = 0; k < n && !seen; k++)
      seen = out[k].coll == pi->coll && out[k].bytes == pi->bytes && out[k].algo == a &&
             out[k].proto == p && out[k].channels == ch;
    if (seen) continue;
    topo_cal_measured *m = &out[n];
    memset(m, 0, sizeof *m);
    m->coll = pi->coll, m->bytes = pi->bytes, m->algo = a, m->proto = p, m->channels = ch;
    m->setting = pi->setting;
    m->beyond_reach = 1;
    for (int j = i; j < r->npoints && m->n < POOL_CAP; j++) {
      const topo_cal_point *q = &r->points[j];
      int a2, p2, ch2;
      if (q->coll != pi->coll || q->bytes != pi->bytes || !effective(r, q, &a2, &p2, &ch2))
        continue;
      if (a2 != a || p2 != p || ch2 != ch) continue;
      pool[m->n++] = q->stats.median;
      if (!r->settings[q->setting].beyond_reach) m->beyond_reach = 0;
      if (r->settings[q->setting].nchannels == 0) m->own_channels = 1;
    }
    m->median_us = median_value(pool, m->n);
    m->spread_us = -1.0;
    if (m->n >= 2) {
      topo_cal_stats st;
      if (topo_cal_stats_compute(pool, m->n, &st) == 0) m->spread_us = (st.max - st.min) / 2;
    }
    n++;
  }
  topo_free(pool);
  return n;
}

int topo_cal_measured_best(const topo_cal_measured *m, int n, int coll, uint64_t bytes,
                           int in_reach_only) {
  int best = -1;
  for (int i = 0; i < n; i++) {
    if (m[i].coll != coll || m[i].bytes != bytes || (in_reach_only && m[i].beyond_reach)) continue;
    if (best < 0 || m[i].median_us < m[best].median_us) best = i;
  }
  return best;
}

int topo_cal_results_setting_median(const topo_cal_results *r, int setting, int coll,
                                    uint64_t bytes, double *median_us, int *n) {
  double v[POOL_CAP / 4];
  int k = 0, first = -1,
      kind = setting >= 0 && setting < r->nsettings ? r->settings[setting].kind : -1;
  for (int i = 0; i < r->npoints && k < (int)(sizeof v / sizeof v[0]); i++) {
    const topo_cal_point *p = &r->points[i];
    if (p->coll != coll || p->bytes != bytes || p->status != TOPO_CAL_OK) continue;
    /* The default's A/A communicators are two settings of the same kind: they pool. */
    if (p->setting != setting &&
        !(kind == TOPO_CAL_DEFAULT && r->settings[p->setting].kind == TOPO_CAL_DEFAULT))
      continue;
    if (first < 0) first = i;
    v[k++] = p->stats.median;
  }
  *n = k;
  *median_us = k ? median_value(v, k) : 0;
  return first;
}

double topo_cal_results_noise(const topo_cal_results *r, int coll, uint64_t bytes, int *npairs) {
  double a[TOPO_CAL_MAX_ROUNDS], b[TOPO_CAL_MAX_ROUNDS], d[TOPO_CAL_MAX_ROUNDS];
  unsigned char ha[TOPO_CAL_MAX_ROUNDS] = {0}, hb[TOPO_CAL_MAX_ROUNDS] = {0};
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    if (p->coll != coll || p->bytes != bytes || p->status != TOPO_CAL_OK) continue;
    if (r->settings[p->setting].kind != TOPO_CAL_DEFAULT || p->round < 0 ||
        p->round >= TOPO_CAL_MAX_ROUNDS)
      continue;
    if (p->pair == 0) a[p->round] = p->stats.median, ha[p->round] = 1;
    else b[p->round] = p->stats.median, hb[p->round] = 1;
  }
  int n = 0;
  for (int k = 0; k < TOPO_CAL_MAX_ROUNDS; k++)
    if (ha[k] && hb[k] && b[k] > 0) d[n++] = fabs(a[k] / b[k] - 1.0);
  *npairs = n;
  return n ? median_value(d, n) : -1.0;
}

static volatile sig_atomic_t stop_flag;

void topo_cal_request_stop(void) { stop_flag = 1; }
int topo_cal_stop_requested(void) { return stop_flag != 0; }
