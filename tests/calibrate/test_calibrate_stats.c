// SPDX-License-Identifier: Apache-2.0
// topo-calibrate statistics and plausibility: median / quartiles, bandwidth conventions, the
// physical floor that rejects impossible timings, pruning, GPU model names and line rates.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "calibrate.h"

static void test_median_and_quartiles_interpolate(void **state) {
  (void)state;
  double v[] = {5, 1, 4, 2, 3};
  topo_cal_stats s;
  assert_int_equal(topo_cal_stats_compute(v, 5, &s), 0);
  assert_true(s.median == 3 && s.min == 1 && s.max == 5 && s.p25 == 2 && s.p75 == 4 && s.n == 5);
  double w[] = {10, 20, 30, 40};
  assert_int_equal(topo_cal_stats_compute(w, 4, &s), 0);
  assert_true(fabs(s.median - 25) < 1e-12);
  assert_true(fabs(s.p25 - 17.5) < 1e-12);
  assert_true(fabs(s.p75 - 32.5) < 1e-12);
  assert_true(fabs(topo_cal_stats_spread(&s) - 15.0 / 25) < 1e-12);
  /* the input is not reordered */
  assert_true(v[0] == 5 && v[4] == 3);
}

static void test_stats_refuse_empty_and_non_finite(void **state) {
  (void)state;
  topo_cal_stats s;
  double v[] = {1, NAN, 2};
  assert_int_equal(topo_cal_stats_compute(v, 0, &s), -1);
  assert_int_equal(topo_cal_stats_compute(v, 3, &s), -1);
  assert_int_equal(s.n, 0);
  double many[200];
  for (int i = 0; i < 200; i++) many[i] = 200 - i;
  assert_int_equal(topo_cal_stats_compute(many, 200, &s), 0);
  assert_true(fabs(s.median - 100.5) < 1e-12);
}

/* busbw factors: common/nccl_vocab.c (tests/common/test_nccl_vocab.c). */
static void test_algbw_is_bytes_over_time(void **state) {
  (void)state;
  assert_true(fabs(topo_cal_algbw(1000000, 10.0) - 100.0) < 1e-9); /* 1 MB in 10 us = 100 GB/s */
}

static void test_floor_rejects_too_fast_and_keeps_plausible(void **state) {
  (void)state;
  char why[256];
  /* 8 B in 0.5 us: below the 1 us floor */
  assert_int_equal(topo_cal_check_floor(ncclFuncAllReduce, 2, 8, 0.5, 1.0, 450, why, sizeof why),
                   1);
  assert_non_null(strstr(why, "floor"));
  /* 1 GB AllReduce on 2 ranks in 0.9 ms: 1193 GB/s x 1/2 = 597 GB/s through a link > 1.2 x 450 */
  assert_int_equal(
      topo_cal_check_floor(ncclFuncAllReduce, 2, 1ull << 30, 900.0, 1.0, 450, why, sizeof why), 1);
  assert_non_null(strstr(why, "line rate"));
  /* the measured 2 x H200 figure (470.9 us for 128 MB) is fine */
  assert_int_equal(
      topo_cal_check_floor(ncclFuncAllReduce, 2, 134217728, 470.89, 1.0, 450, why, sizeof why), 0);
  assert_string_equal(why, "");
  /* AllGather on 2 ranks may show algbw up to 2x the line rate: 128 MB in 290 us is plausible */
  assert_int_equal(
      topo_cal_check_floor(ncclFuncAllGather, 2, 134217728, 290.0, 1.0, 450, why, sizeof why), 0);
  /* Broadcast moves the full size through the root's links */
  assert_int_equal(
      topo_cal_check_floor(ncclFuncBroadcast, 2, 134217728, 200.0, 1.0, 450, why, sizeof why), 1);
  /* no line rate known: only the floor */
  assert_int_equal(
      topo_cal_check_floor(ncclFuncBroadcast, 2, 134217728, 200.0, 1.0, 0, why, sizeof why), 0);
  assert_int_equal(topo_cal_check_floor(ncclFuncBroadcast, 2, 8, NAN, 1.0, 0, why, sizeof why), 1);
}

static void test_prune_compares_with_the_best(void **state) {
  (void)state;
  assert_true(topo_cal_slower_than(41, 10, 4));
  assert_false(topo_cal_slower_than(40, 10, 4));
  assert_false(topo_cal_slower_than(1000, 10, 0));
  assert_false(topo_cal_slower_than(1000, 0, 4));
}

static void test_gpu_model_names_and_line_rates(void **state) {
  (void)state;
  char m[32];
  topo_cal_gpu_model("NVIDIA H200", m, sizeof m);
  assert_string_equal(m, "H200");
  topo_cal_gpu_model("NVIDIA H100 80GB HBM3", m, sizeof m);
  assert_string_equal(m, "H100");
  topo_cal_gpu_model("NVIDIA A100-SXM4-80GB", m, sizeof m);
  assert_string_equal(m, "A100");
  topo_cal_gpu_model("NVIDIA GeForce RTX 4090", m, sizeof m);
  assert_string_equal(m, "RTX4090");
  topo_cal_gpu_model("Tesla V100-SXM2-32GB", m, sizeof m);
  assert_string_equal(m, "V100");
  topo_cal_gpu_model("NVIDIA GH200 480GB", m, sizeof m);
  assert_string_equal(m, "GH200");
  topo_cal_gpu_model(NULL, m, sizeof m);
  assert_string_equal(m, "");
  assert_true(topo_cal_line_rate_for_model("H200") == 450);
  assert_true(topo_cal_line_rate_for_model("a100") == 300);
  assert_true(topo_cal_line_rate_for_model("RTX4090") == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_median_and_quartiles_interpolate),
      cmocka_unit_test(test_stats_refuse_empty_and_non_finite),
      cmocka_unit_test(test_algbw_is_bytes_over_time),
      cmocka_unit_test(test_floor_rejects_too_fast_and_keeps_plausible),
      cmocka_unit_test(test_prune_compares_with_the_best),
      cmocka_unit_test(test_gpu_model_names_and_line_rates),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
