/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The results of one topo-calibrate run: machine facts, the p2p matrices, the floors, the settings
 * swept and one record per (setting, collective, size) point. Grown with topo_realloc; owned by
 * the caller of topo_cal_results_init, released by topo_cal_results_free.
 */
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

static volatile sig_atomic_t stop_flag;

void topo_cal_request_stop(void) { stop_flag = 1; }
int topo_cal_stop_requested(void) { return stop_flag != 0; }
