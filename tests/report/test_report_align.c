// SPDX-License-Identifier: Apache-2.0
// The GPU-clock alignment (align.c) on hand-made traces, exact to the nanosecond: the estimator
// on its own, three ranks whose GPU clocks differ and one of which reports its stops 5 ms late
// (anchored by simultaneous GPU stops), and two ranks too weakly tied to bound (a warning).
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "report.h"
#include "report_analysis.h"
#include "trace_fixture.h"

#define B 1000000000000LL /* realtime origin of the fixtures */

static char dir[64];

static void make_dir(void) {
  snprintf(dir, sizeof dir, "/tmp/topo-align-XXXXXX");
  assert_non_null(mkdtemp(dir));
}

static void remove_dir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* One rank's trace: `n` AllReduces, GPU clock = realtime + `off`, header calibration `lower`
 * (TOPO_TRACE_OFFSET_UNKNOWN: none). Collective i: enqueued at B + 10000 i + start - 100,
 * kernel [B + 10000 i + start, B + 10000 i + 5000) in realtime: every rank stops together. */
static void write_rank(int rank, int nranks, int n, int64_t off, int64_t lower, int64_t start) {
  topo_trace_header h;
  tf_header_init(&h, 0xa7, rank, nranks); /* mono = realtime = 0: mono ns are realtime ns */
  h.gpu_minus_realtime_ns = lower;
  h.cupti_minus_realtime_ns = TOPO_TRACE_OFFSET_UNKNOWN;
  tf_trace t;
  tf_begin(&t, &h, NULL);
  for (int i = 0; i < n; i++) {
    int64_t base = B + 10000LL * i;
    topo_trace_record r = tf_coll(4, (uint64_t)i, 1 << 20, base + start - 100, base + start - 90,
                                  base + start + off, base + 5000 + off, 1, 2, 4, 1);
    tf_add(&t, &r);
  }
  tf_footer(&t, NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/rank%d.trace", dir, rank);
  assert_int_equal(tf_save(&t, path), 0);
  tf_free(&t);
}

static void analyze(rp_report *r) {
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  assert_int_equal(rp_analyze(paths, 1, &opt, r), TOPO_OK);
}

static const rp_rank *rank_of(const rp_report *r, int world) {
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].world_rank == world) return &r->ranks[i];
  fail_msg("no rank %d", world);
  return NULL;
}

static void test_estimate_keeps_the_lower_bound_and_the_gap_as_error(void **state) {
  (void)state;
  int64_t off, err;
  int bad;
  assert_int_equal(rp_align_estimate(INT64_MIN, INT64_MAX, &off, &err, &bad), RP_ALIGN_NONE);
  assert_int_equal(off, 0);
  assert_int_equal(err, -1);
  assert_int_equal(rp_align_estimate(-70, INT64_MAX, &off, &err, &bad), RP_ALIGN_ONE_BOUND);
  assert_int_equal(off, -70);
  assert_int_equal(err, -1);
  assert_int_equal(rp_align_estimate(INT64_MIN, 40, &off, &err, &bad), RP_ALIGN_ONE_BOUND);
  assert_int_equal(off, 40);
  assert_int_equal(rp_align_estimate(100, 150, &off, &err, &bad), RP_ALIGN_BOUNDS);
  assert_int_equal(off, 100);
  assert_int_equal(err, 50);
  assert_int_equal(bad, 0);
  /* crossing bounds: the callbacks win, the disagreement is the error */
  assert_int_equal(rp_align_estimate(200, 150, &off, &err, &bad), RP_ALIGN_BOUNDS);
  assert_int_equal(off, 200);
  assert_int_equal(err, 50);
  assert_int_equal(bad, 1);
}

/* Rank 0: off 1000, stops seen 20 ns late. Rank 1: off -2000, 30 ns late, starts 100 ns after
 * rank 0. Rank 2: off 500, every stop seen 5 ms late (its header says 500 - 5 ms), starts 300 ns
 * after rank 0: the straggler. Bounds alone: rank 2 within [-4999500, 600], 5 ms wide. Anchors
 * (4 joined stops, exact): rank 1 = rank 0 - 3000, rank 2 = rank 0 - 500; the group's shift is
 * bounded by max(980, -2030 + 3000, -4999500 + 500) = 980 and min(1100, 1100, 1100) = 1100. */
static void test_anchors_defeat_late_callbacks(void **state) {
  (void)state;
  make_dir();
  write_rank(0, 3, 4, 1000, 980, 0);
  write_rank(1, 3, 4, -2000, -2030, 100);
  write_rank(2, 3, 4, 500, 500 - 5000000, 300);
  rp_report r;
  analyze(&r);
  const rp_rank *k0 = rank_of(&r, 0), *k1 = rank_of(&r, 1), *k2 = rank_of(&r, 2);
  assert_int_equal(k0->off_lower, 980);
  assert_int_equal(k0->off_upper, 1100);
  assert_int_equal(k2->off_lower, 500 - 5000000);
  assert_int_equal(k2->off_upper, 600);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(r.ranks[i].align_method, RP_ALIGN_ANCHORED);
    assert_int_equal(r.ranks[i].align_err, 0);
    assert_int_equal(r.ranks[i].anchors, 4);
  }
  assert_int_equal(k0->gpu_offset, 980);
  assert_int_equal(k1->gpu_offset, -2020);
  assert_int_equal(k2->gpu_offset, 480);
  assert_int_equal(r.align_err, 0);
  assert_int_equal(r.align_warn, 0);
  /* skew from GPU starts: 300 ns each time, rank 2 last by 200 ns */
  assert_int_equal(r.skew[4].n, 4);
  assert_int_equal(r.skew_gpu[4], 4);
  assert_int_equal(r.skew[4].max, 300);
  assert_int_equal(rp_quant_get(&r.skew_gpu_all, 0.5), 300);
  assert_int_equal(k2->last_count, 4);
  assert_int_equal(k2->late_total, 800);
  assert_int_equal(k0->wait_total, 1200);
  assert_int_equal(k1->wait_total, 800);
  assert_int_equal(k2->wait_total, 0);
  assert_int_equal(k0->joined_gpu, 4);
  assert_int_equal(k0->wait_clamped + k1->wait_clamped + k2->wait_clamped, 0);
  assert_int_equal(r.skew_clamped, 0);
  rp_report_free(&r);
  remove_dir();
}

/* Two collectives only (fewer than three anchors) and rank 1 without a header calibration: rank
 * 0 is bounded ([980, 1100]: error 120), rank 1 has its upper bound alone (-1900, unbounded),
 * so the cross-rank bound is unknown and the report warns. */
static void test_unbounded_alignment_warns(void **state) {
  (void)state;
  make_dir();
  write_rank(0, 2, 2, 1000, 980, 0);
  write_rank(1, 2, 2, -2000, TOPO_TRACE_OFFSET_UNKNOWN, 100);
  rp_report r;
  analyze(&r);
  const rp_rank *k0 = rank_of(&r, 0), *k1 = rank_of(&r, 1);
  assert_int_equal(k0->align_method, RP_ALIGN_BOUNDS);
  assert_int_equal(k0->gpu_offset, 980);
  assert_int_equal(k0->align_err, 120);
  assert_int_equal(k1->align_method, RP_ALIGN_ONE_BOUND);
  assert_int_equal(k1->gpu_offset, -1900);
  assert_int_equal(k1->align_err, -1);
  assert_int_equal(k0->anchors + k1->anchors, 0);
  assert_int_equal(r.align_err, -1);
  assert_int_equal(r.align_warn, 1);
  assert_int_equal(r.skew_gpu[4], 2);
  rp_report_free(&r);
  remove_dir();
}

/* Bounds as far apart as header clocks and GPU times inside the accepted +-2^62 make them: the
 * error saturates (it is at least that), never wraps to a negative "unbounded" or below 0. */
static void test_estimate_saturates_bounds_2_to_the_63_apart(void **state) {
  (void)state;
  const int64_t lim = (int64_t)1 << 62;
  int64_t off, err;
  int bad;
  assert_int_equal(rp_align_estimate(-(lim - 10), INT64_MAX - 20, &off, &err, &bad),
                   RP_ALIGN_BOUNDS);
  assert_int_equal(off, -(lim - 10));
  assert_true(err == INT64_MAX);
  assert_int_equal(rp_align_estimate(INT64_MAX - 20, -(lim - 10), &off, &err, &bad),
                   RP_ALIGN_BOUNDS);
  assert_int_equal(bad, 1);
  assert_true(err == INT64_MAX);
}

/* Ranks whose header clocks (realtime - mono = -(2^62 - 1 ms)), calibration (-(2^62 - 10)) and
 * GPU times (2^62 - 1 ms on) lie inside the accepted range: their bounds are ~2^63 + 2^62 apart.
 * Alone (on its bounds) or with a second rank tied by anchors, the analysis ends with every
 * error >= 0 (saturated), nothing wrapped. */
static void test_extreme_clocks_keep_errors_non_negative(void **state) {
  (void)state;
  const int64_t lim = (int64_t)1 << 62;
  for (int nranks = 1; nranks <= 2; nranks++) {
    make_dir();
    for (int rank = 0; rank < nranks; rank++) {
      topo_trace_header h;
      tf_header_init(&h, 0xe7, rank, 2);
      h.realtime_ns = -(lim - 1000000);
      h.mono_ns = 0;
      h.gpu_minus_realtime_ns = -(lim - 10);
      h.cupti_minus_realtime_ns = TOPO_TRACE_OFFSET_UNKNOWN;
      tf_trace t;
      tf_begin(&t, &h, NULL);
      for (int i = 0; i < 4; i++) {
        int64_t at = lim - 1000000 + 10000LL * i;
        topo_trace_record c = tf_coll(4, (uint64_t)i, 1 << 20, 1000 + 10000LL * i,
                                      1010 + 10000LL * i, at, at + 500 + rank, 1, 2, 4, 1);
        tf_add(&t, &c);
      }
      tf_footer(&t, NULL);
      char path[128];
      snprintf(path, sizeof path, "%s/rank%d.trace", dir, rank);
      assert_int_equal(tf_save(&t, path), 0);
      tf_free(&t);
    }
    rp_report r;
    analyze(&r);
    assert_int_equal(r.nranks, nranks);
    for (int k = 0; k < nranks; k++)
      if (r.ranks[k].align_err < 0)
        fail_msg("rank %d of %d: alignment error %" PRId64, k, nranks, r.ranks[k].align_err);
    if (r.align_err < 0) fail_msg("cross-rank alignment error %" PRId64, r.align_err);
    rp_report_free(&r);
    remove_dir();
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_estimate_keeps_the_lower_bound_and_the_gap_as_error),
      cmocka_unit_test(test_anchors_defeat_late_callbacks),
      cmocka_unit_test(test_unbounded_alignment_warns),
      cmocka_unit_test(test_estimate_saturates_bounds_2_to_the_63_apart),
      cmocka_unit_test(test_extreme_clocks_keep_errors_non_negative),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
