// SPDX-License-Identifier: Apache-2.0
// From measurements to a tuner profile: fitted terms recover known latency/bandwidth, rejected
// and not-forced points stay out, link and protocol parameters come from the measurements, the
// key names the machine, and the written file reads back through topo_profile_load.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include <cmocka.h>

#include "calibrate.h"
#include "profile.h"

/* time = lat + bytes / (bw * 1e3) at every size 1 KB .. 1 GB (x4). */
static void add_curve(topo_cal_results *r, int setting, int coll, double lat, double bw,
                      int status_at_1mb) {
  for (uint64_t b = 1024; b <= (1ull << 30); b *= 4) {
    topo_cal_point p;
    memset(&p, 0, sizeof p);
    p.setting = setting;
    p.coll = coll;
    p.bytes = b;
    double t = lat + (double)b / (bw * 1e3);
    p.stats.n = 20;
    p.stats.median = p.stats.p25 = p.stats.p75 = p.stats.min = p.stats.max = t;
    p.ran_algo = p.ran_proto = p.ran_channels = -1;
    p.status = b == (1u << 20) ? status_at_1mb : TOPO_CAL_OK;
    if (p.status != TOPO_CAL_OK) p.stats.median = t / 100; /* a bogus figure that must not count */
    assert_true(topo_cal_results_add_point(r, &p) >= 0);
  }
}

static void make_results(topo_cal_results *r) {
  topo_cal_results_init(r);
  snprintf(r->gpu_model, sizeof r->gpu_model, "H200");
  r->nranks = 2;
  r->nnodes = 1;
  r->nccl_version = 22809;
  r->nccl_channels = 24;
  r->ndev = 2;
  r->dev[0].multicast = 1;
  r->dev[1].multicast = 1;
  r->floor_graph_us = 1.5;
  assert_int_equal(topo_cal_results_alloc_p2p(r, 2), 0);
  r->p2p_ce_bw[1] = r->p2p_ce_bw[2] = 380;
  r->p2p_sm_lat[1] = r->p2p_sm_lat[2] = 2.0; /* round trip */
  topo_cal_setting simple = {TOPO_CAL_FORCED, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 0, 0};
  topo_cal_setting ll = {TOPO_CAL_FORCED, NCCL_ALGO_RING, NCCL_PROTO_LL, 0, 0};
  topo_cal_setting ll128ch4 = {TOPO_CAL_FORCED, NCCL_ALGO_RING, NCCL_PROTO_LL128, 4, 0};
  topo_cal_setting def = {TOPO_CAL_DEFAULT, -1, -1, 0, 0};
  topo_cal_setting simplech4 = {TOPO_CAL_FORCED, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 4, 0};
  int s0 = topo_cal_results_add_setting(r, &simple);
  int s1 = topo_cal_results_add_setting(r, &ll);
  int s2 = topo_cal_results_add_setting(r, &ll128ch4);
  int s3 = topo_cal_results_add_setting(r, &def);
  /* AllReduce on 2 ranks: busbw = algbw */
  add_curve(r, s0, ncclFuncAllReduce, 12.0, 360.0, TOPO_CAL_REJECTED);
  add_curve(r, s1, ncclFuncAllReduce, 7.0, 120.0, TOPO_CAL_MISMATCH);
  add_curve(r, s2, ncclFuncAllReduce, 14.0, 80.0, TOPO_CAL_OK);
  add_curve(r, s3, ncclFuncAllReduce, 7.0, 360.0, TOPO_CAL_OK);
  add_curve(r, s0, ncclFuncAllGather, 6.0, 700.0, TOPO_CAL_OK);
  int s4 = topo_cal_results_add_setting(r, &simplech4);
  add_curve(r, s4, ncclFuncAllReduce, 12.0, 100.0, TOPO_CAL_OK);
}

static void test_terms_recover_latency_and_bandwidth(void **state) {
  (void)state;
  topo_cal_results r;
  make_results(&r);
  topo_profile p;
  int n = topo_cal_fit_profile(&r, &p);
  assert_int_equal(n, 5); /* four AllReduce settings + one AllGather; no term for "default" */
  const topo_profile_term *t =
      topo_profile_find_term(&p, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 0);
  assert_non_null(t);
  assert_true(fabs(t->lat_us - 12.0) < 1e-6 * 12);
  assert_true(fabs(t->bw_gbs - 360.0) < 1e-6 * 360);
  assert_int_equal(t->npoints, 10); /* 11 sizes less the rejected one */
  assert_int_equal(t->min_bytes, 1024);
  assert_int_equal(t->max_bytes, 1ull << 30);
  t = topo_profile_find_term(&p, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL128, 4);
  assert_non_null(t);
  assert_true(fabs(t->bw_gbs - 80.0) < 1e-6 * 80);
  assert_null(topo_profile_find_term(&p, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL128, 0));
  assert_string_equal(p.key.gpu, "H200");
  assert_int_equal(p.key.nranks, 2);
  assert_int_equal(p.key.nnodes, 1);
  assert_int_equal(p.key.nccl_version, 22809);
  assert_int_equal(p.max_channels, 24);
  assert_int_equal(p.nvls, 1);
  topo_profile_free(&p);
  topo_cal_results_free(&r);
}

static void test_link_and_protocol_parameters_come_from_measurements(void **state) {
  (void)state;
  topo_cal_results r;
  make_results(&r);
  topo_profile p;
  assert_true(topo_cal_fit_profile(&r, &p) > 0);
  /* link: the best of the large-message busbw (~359 GB/s at 1 GB for ring/simple) and the
   * copy-engine p2p (380) */
  assert_true(fabs(p.link[TOPO_LINK_NVLINK].bw_gbs - 380.0) < 1e-9);
  assert_true(fabs(p.link[TOPO_LINK_NVLINK].lat_us - 1.0) < 1e-9); /* half the round trip */
  /* protocols: efficiencies relative to the link */
  double simple_peak = (double)(1ull << 30) / ((12.0 + (double)(1ull << 30) / 360e3) * 1e3);
  assert_true(fabs(p.proto[NCCL_PROTO_SIMPLE].bw_eff - simple_peak / 380.0) < 1e-6);
  /* LL's 1 GB point is accepted (only 1 MB was marked not-forced) */
  assert_true(p.proto[NCCL_PROTO_LL].bw_eff < 0.35 && p.proto[NCCL_PROTO_LL].bw_eff > 0.3);
  /* Simple with 4 channels reaches ~100 of ~360 GB/s: channel-limited, 25 GB/s per channel */
  double ch4 = (double)(1ull << 30) / ((12.0 + (double)(1ull << 30) / 100e3) * 1e3);
  assert_true(fabs(p.proto[NCCL_PROTO_SIMPLE].ch_bw_gbs - ch4 / 4) < 1e-6);
  /* LL128 was measured with 4 channels only: nothing to compare with, the built-in value stays */
  topo_profile b;
  topo_profile_builtin("H200", &b);
  assert_true(p.proto[NCCL_PROTO_LL128].ch_bw_gbs == b.proto[NCCL_PROTO_LL128].ch_bw_gbs);
  /* launch: ring/LL latency (7 us) less 2 hops of 1 us */
  assert_true(fabs(p.launch_us - 5.0) < 1e-6);
  /* Simple's extra latency per step over LL: (12 - 7) / 2 */
  assert_true(fabs(p.proto[NCCL_PROTO_SIMPLE].lat_us - (2.5 + p.proto[NCCL_PROTO_LL].lat_us)) <
              1e-6);
  topo_profile_free(&p);
  topo_cal_results_free(&r);
}

static void test_written_profile_reads_back(void **state) {
  (void)state;
  topo_cal_results r;
  make_results(&r);
  char path[] = "/tmp/topo-cal-prof-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  char *buf = NULL;
  size_t len = 0;
  FILE *rep = open_memstream(&buf, &len);
  assert_int_equal(topo_cal_write_profile(&r, path, rep), 5);
  fclose(rep);
  assert_non_null(strstr(buf, "allreduce"));
  assert_non_null(strstr(buf, "ll128"));
  topo_profile_key want = {"H200", 2, 1, 22809};
  topo_profile p;
  assert_int_equal(topo_profile_load(path, &want, &p), TOPO_OK);
  assert_int_equal(p.nterms, 5);
  const topo_profile_term *t =
      topo_profile_find_term(&p, ncclFuncAllGather, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 0);
  assert_non_null(t);
  assert_true(fabs(t->bw_gbs - 700.0) < 1e-3);
  topo_profile_free(&p);
  free(buf);
  unlink(path);
  /* an unwritable path is an error, not a crash */
  assert_int_equal(topo_cal_write_profile(&r, "/nonexistent-dir/x.profile", NULL), -1);
  topo_cal_results_free(&r);
}

static void test_one_gpu_profile_keeps_builtin_links(void **state) {
  (void)state;
  topo_cal_results r;
  topo_cal_results_init(&r);
  snprintf(r.gpu_model, sizeof r.gpu_model, "H100");
  r.nranks = 1;
  r.floor_graph_us = 2.25;
  topo_profile p, b;
  assert_int_equal(topo_cal_fit_profile(&r, &p), 0);
  topo_profile_builtin("H100", &b);
  assert_true(p.link[TOPO_LINK_NVLINK].bw_gbs == b.link[TOPO_LINK_NVLINK].bw_gbs);
  assert_true(p.launch_us == 2.25);
  assert_int_equal(p.key.nranks, 1);
  topo_profile_free(&p);
  topo_cal_results_free(&r);
}

/* A sweep that is no straight line (a flat floor, then a slow and a fast regime, as LL's channel
 * count grows with size) is fitted piecewise: several terms for the one setting, meeting without
 * gaps over the measured range, each within 3 % of every point it covers. */
static void test_sweep_with_regimes_is_fitted_piecewise(void **state) {
  (void)state;
  topo_cal_results r;
  topo_cal_results_init(&r);
  snprintf(r.gpu_model, sizeof r.gpu_model, "H200");
  r.nranks = 2;
  r.nnodes = 1;
  topo_cal_setting ll = {TOPO_CAL_FORCED, NCCL_ALGO_RING, NCCL_PROTO_LL, 0, 0};
  int s = topo_cal_results_add_setting(&r, &ll);
  double us[32];
  uint64_t sizes[32];
  int n = 0;
  for (uint64_t b = 8; b <= (1ull << 30); b *= 2, n++) {
    double x = (double)b;
    us[n] = x <= 8192 ? 5.7 : x <= (1 << 20) ? 5.5 + x / 40e3 : 20 + x / 120e3;
    sizes[n] = b;
    topo_cal_point p;
    memset(&p, 0, sizeof p);
    p.setting = s;
    p.coll = ncclFuncAllReduce;
    p.bytes = b;
    p.stats.n = 20;
    p.stats.median = p.stats.p25 = p.stats.p75 = p.stats.min = p.stats.max = us[n];
    p.ran_algo = p.ran_proto = p.ran_channels = -1;
    p.status = TOPO_CAL_OK;
    assert_true(topo_cal_results_add_point(&r, &p) >= 0);
  }
  topo_profile prof;
  int nterms = topo_cal_fit_profile(&r, &prof);
  if (nterms < 2 || nterms > 6) fail_msg("%d pieces", nterms);
  assert_int_equal(prof.nterms, nterms);
  const topo_profile_term *first =
      topo_profile_find_term(&prof, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL, 0);
  assert_non_null(first);
  assert_int_equal(first->min_bytes, 8);
  uint64_t next = 8;
  for (int i = 0; i < nterms; i++) {
    const topo_profile_term *t = &prof.terms[i];
    assert_int_equal(t->min_bytes, next);
    next = t->max_bytes + 1;
  }
  assert_int_equal(next - 1, 1ull << 30);
  for (int i = 0; i < n; i++) {
    const topo_profile_term *t = topo_profile_find_term_at(&prof, ncclFuncAllReduce, NCCL_ALGO_RING,
                                                           NCCL_PROTO_LL, 0, sizes[i]);
    assert_non_null(t);
    double pred = t->lat_us + (double)sizes[i] / (t->bw_gbs * 1e3);
    if (fabs(pred - us[i]) / us[i] > 0.03)
      fail_msg("%llu B: %.3f us predicted, %.3f measured", (unsigned long long)sizes[i], pred,
               us[i]);
  }
  topo_profile_free(&prof);
  topo_cal_results_free(&r);
}

static void add_rep(topo_cal_results *r, int setting, uint64_t bytes, double us, int algo,
                    int proto, int ch, int round, int pair) {
  topo_cal_point p;
  memset(&p, 0, sizeof p);
  p.setting = setting;
  p.coll = ncclFuncAllReduce;
  p.bytes = bytes;
  p.stats.n = 20;
  p.stats.median = p.stats.p25 = p.stats.p75 = p.stats.min = p.stats.max = us;
  p.ran_algo = algo, p.ran_proto = proto, p.ran_channels = ch;
  p.round = round, p.pair = pair;
  p.status = TOPO_CAL_OK;
  assert_true(topo_cal_results_add_point(r, &p) >= 0);
}

static const topo_profile_point *point_at(const topo_profile *p, int algo, int proto, int ch,
                                          uint64_t bytes) {
  int n = 0;
  const topo_profile_point *pt =
      topo_profile_find_points(p, ncclFuncAllReduce, algo, proto, ch, &n);
  for (int i = 0; i < n; i++)
    if (pt[i].bytes == bytes) return &pt[i];
  return NULL;
}

/* Measured points: one per in-reach effective setting and size, the median of its repeats; noise
 * from the A/A pair where it ran, else half the range of the repeats, else no point (never 0);
 * default=1 on what NCCL's default ran; beyond-reach results are left to advice; written with the
 * NCCL version in the section key, and read back. */
static void test_points_carry_median_noise_and_default(void **state) {
  (void)state;
  topo_cal_results r;
  topo_cal_results_init(&r);
  snprintf(r.gpu_model, sizeof r.gpu_model, "H200");
  r.nranks = 2, r.nnodes = 1, r.nccl_version = 22809, r.nccl_channels = 24, r.rounds = 3;
  topo_cal_setting simple = {TOPO_CAL_FORCED, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 0, 0};
  topo_cal_setting ll = {TOPO_CAL_FORCED, NCCL_ALGO_RING, NCCL_PROTO_LL, 0, 0};
  topo_cal_setting ch8 = {TOPO_CAL_FORCED, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 8, 0};
  topo_cal_setting ch32 = {TOPO_CAL_FORCED, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 32, 1};
  topo_cal_setting def = {TOPO_CAL_DEFAULT, -1, -1, 0, 0};
  const uint64_t mb = 1 << 20, mb4 = 4 << 20;
  const int R = NCCL_ALGO_RING, S = NCCL_PROTO_SIMPLE, L = NCCL_PROTO_LL;
  for (int k = 0; k < 3; k++) {
    int s0 = topo_cal_results_add_setting(&r, &simple), s1 = topo_cal_results_add_setting(&r, &ll);
    int s2 = topo_cal_results_add_setting(&r, &ch8), s3 = topo_cal_results_add_setting(&r, &ch32);
    int d0 = topo_cal_results_add_setting(&r, &def), d1 = topo_cal_results_add_setting(&r, &def);
    add_rep(&r, s0, mb, 20.0 + k, R, S, 24, k, 0);
    add_rep(&r, s1, mb, 30.0 + k, R, L, 24, k, 0);
    add_rep(&r, s2, mb, 25.0 + k, R, S, 8, k, 0);
    add_rep(&r, s3, mb, 15.0, R, S, 32, k, 0);
    add_rep(&r, d0, mb, 20.0, R, S, 24, k, 0);
    add_rep(&r, d1, mb, k == 1 ? 21.0 : 20.2, R, S, 24, k, 1);
    /* 4 MB: no default there (no A/A figure); Simple repeats spread, LL ran in one round only */
    add_rep(&r, s0, mb4, k == 2 ? 44.0 : 40.0 + k, R, S, 24, k, 0);
    if (k == 0) add_rep(&r, s1, mb4, 60.0, R, L, 24, k, 0);
  }
  topo_profile p;
  assert_true(topo_cal_fit_profile(&r, &p) >= 0);
  assert_int_equal(p.key.nccl_version, 22809);
  int np = 0;
  double aa = topo_cal_results_noise(&r, ncclFuncAllReduce, mb, &np);
  assert_int_equal(np, 3);
  assert_true(aa > 0);
  const topo_profile_point *q = point_at(&p, R, S, 0, mb);
  assert_non_null(q);
  assert_true(fabs(q->median_us - 21.0) < 1e-9); /* median of 20, 21, 22 */
  assert_true(fabs(q->noise_us - aa * 21.0) < 1e-9);
  assert_int_equal(q->is_default, 1);
  q = point_at(&p, R, L, 0, mb);
  assert_non_null(q);
  assert_int_equal(q->is_default, 0);
  q = point_at(&p, R, S, 8, mb); /* fewer channels than NCCL's 24: within reach */
  assert_non_null(q);
  assert_true(fabs(q->median_us - 26.0) < 1e-9);
  assert_int_equal(q->is_default, 0);
  assert_null(point_at(&p, R, S, 32, mb)); /* beyond reach: advice, not a point */
  q = point_at(&p, R, S, 0, mb4);
  assert_non_null(q);
  assert_true(fabs(q->median_us - 41.0) < 1e-9);
  assert_true(fabs(q->noise_us - 2.0) < 1e-9); /* half of 44 - 40 */
  assert_int_equal(q->is_default, 0);
  assert_null(point_at(&p, R, L, 0, mb4)); /* one repeat, no A/A: noise unknown, no point */
  for (int i = 0; i < p.npoints; i++) assert_true(p.points[i].noise_us > 0);
  assert_int_equal(p.npoints, 4);

  char path[] = "/tmp/topo-cal-points-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_true(topo_cal_write_profile(&r, path, NULL) >= 0);
  topo_profile back;
  topo_profile_key want = {"H200", 2, 1, 22809};
  assert_int_equal(topo_profile_load(path, &want, &back), TOPO_OK);
  assert_int_equal(back.npoints, p.npoints);
  for (int i = 0; i < p.npoints; i++) {
    assert_true(back.points[i].median_us == p.points[i].median_us);
    assert_true(back.points[i].noise_us == p.points[i].noise_us);
    assert_int_equal(back.points[i].is_default, p.points[i].is_default);
  }
  topo_profile_free(&back);
  /* keyed by the version that ran: another NCCL version finds no section */
  topo_profile_key other = {"H200", 2, 1, 22803};
  assert_int_equal(topo_profile_load(path, &other, &back), TOPO_ERR_PARSE);
  assert_int_equal(back.npoints, 0);
  topo_profile_free(&back);
  unlink(path);
  topo_profile_free(&p);
  topo_cal_results_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_terms_recover_latency_and_bandwidth),
      cmocka_unit_test(test_sweep_with_regimes_is_fitted_piecewise),
      cmocka_unit_test(test_link_and_protocol_parameters_come_from_measurements),
      cmocka_unit_test(test_written_profile_reads_back),
      cmocka_unit_test(test_one_gpu_profile_keeps_builtin_links),
      cmocka_unit_test(test_points_carry_median_noise_and_default),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
