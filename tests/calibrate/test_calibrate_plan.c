// SPDX-License-Identifier: Apache-2.0
// topo-calibrate sweep planning: sizes, per-collective byte rounding, NCCL's enable rules, the
// order and filtering of forced settings, labels and TOPO_TUNER_FORCE values, timing choice.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "calibrate.h"

static void test_sizes_double_from_8_bytes_to_1_gigabyte(void **state) {
  (void)state;
  uint64_t s[TOPO_CAL_MAX_SIZES];
  int n = topo_cal_plan_sizes(8, 1ull << 30, 2.0, s, TOPO_CAL_MAX_SIZES);
  assert_int_equal(n, 28);
  assert_int_equal(s[0], 8);
  assert_int_equal(s[1], 16);
  assert_int_equal(s[n - 1], 1ull << 30);
  for (int i = 1; i < n; i++) assert_true(s[i] == 2 * s[i - 1]);
}

static void test_sizes_round_to_four_bytes_and_keep_the_top(void **state) {
  (void)state;
  uint64_t s[16];
  int n = topo_cal_plan_sizes(1, 100, 4.0, s, 16);
  /* 1 -> 4, 4, 16, 64, then the top (100) */
  assert_int_equal(n, 4);
  assert_int_equal(s[0], 4);
  assert_int_equal(s[1], 16);
  assert_int_equal(s[2], 64);
  assert_int_equal(s[3], 100);
  assert_int_equal(topo_cal_plan_sizes(100, 10, 2.0, s, 16), 0);
  assert_int_equal(topo_cal_plan_sizes(8, 1 << 20, 2.0, s, 3), 3);
}

static void test_gathered_collectives_round_to_ranks_times_element(void **state) {
  (void)state;
  size_t count;
  assert_int_equal(topo_cal_coll_bytes(ncclFuncAllGather, 8, 8, &count), 32);
  assert_int_equal(count, 1);
  assert_int_equal(topo_cal_coll_bytes(ncclFuncReduceScatter, 1 << 20, 2, &count), 1 << 20);
  assert_int_equal(count, (1 << 20) / 8);
  assert_int_equal(topo_cal_coll_bytes(ncclFuncAllReduce, 10, 8, &count), 8);
  assert_int_equal(count, 2);
  assert_int_equal(topo_cal_coll_bytes(ncclFuncBroadcast, 2, 2, &count), 4);
  assert_int_equal(count, 1);
}

static void test_rules_follow_nccl_on_one_node_and_two(void **state) {
  (void)state;
  topo_cal_allowed a;
  topo_cal_rules_allowed(2, 1, &a);
  assert_true(a.ok[ncclFuncAllReduce][NCCL_ALGO_TREE][NCCL_PROTO_LL128]);
  assert_true(a.ok[ncclFuncAllGather][NCCL_ALGO_RING][NCCL_PROTO_LL128]);
  assert_false(a.ok[ncclFuncAllGather][NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE]);
  assert_false(a.ok[ncclFuncAllGather][NCCL_ALGO_PAT][NCCL_PROTO_SIMPLE]);
  assert_false(a.ok[ncclFuncAllReduce][NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE]);
  topo_cal_rules_allowed(2, 2, &a);
  assert_false(a.ok[ncclFuncAllReduce][NCCL_ALGO_RING][NCCL_PROTO_LL128]);
  assert_true(a.ok[ncclFuncAllGather][NCCL_ALGO_PAT][NCCL_PROTO_SIMPLE]);
  assert_false(a.ok[ncclFuncAllGather][NCCL_ALGO_PAT][NCCL_PROTO_LL]);
  topo_cal_rules_allowed(4, 2, &a); /* 2 GPUs per node: no PAT */
  assert_false(a.ok[ncclFuncAllGather][NCCL_ALGO_PAT][NCCL_PROTO_SIMPLE]);
  topo_cal_rules_allowed(1, 1, &a);
  assert_false(a.ok[ncclFuncAllReduce][NCCL_ALGO_RING][NCCL_PROTO_SIMPLE]);
}

static void test_settings_put_ring_simple_first_for_each_channel_count(void **state) {
  (void)state;
  topo_cal_options o;
  topo_cal_options_default(&o);
  topo_cal_allowed a;
  topo_cal_rules_allowed(2, 1, &a);
  topo_cal_setting s[256];
  int n = topo_cal_plan_settings(&o, &a, s, 256);
  assert_int_equal(n, 6 * 6); /* ring x3 + tree x3, channels {0,4,8,16,24,32} */
  assert_int_equal(s[0].algo, NCCL_ALGO_RING);
  assert_int_equal(s[0].proto, NCCL_PROTO_SIMPLE);
  assert_int_equal(s[0].nchannels, 0);
  assert_int_equal(s[6].nchannels, 4);
  assert_int_equal(s[6].algo, NCCL_ALGO_RING);
  for (int i = 0; i < n; i++) assert_int_equal(s[i].kind, TOPO_CAL_FORCED);
}

static void test_settings_skip_what_no_selected_collective_allows(void **state) {
  (void)state;
  topo_cal_options o;
  topo_cal_options_default(&o);
  o.colls = 1u << ncclFuncAllGather;
  o.nchannels = 1;
  topo_cal_allowed a;
  topo_cal_rules_allowed(2, 1, &a);
  topo_cal_setting s[64];
  int n = topo_cal_plan_settings(&o, &a, s, 64);
  assert_int_equal(n, 3); /* tree does not do AllGather */
  for (int i = 0; i < n; i++) assert_int_equal(s[i].algo, NCCL_ALGO_RING);
  o.protos = 1u << NCCL_PROTO_LL;
  assert_int_equal(topo_cal_plan_settings(&o, &a, s, 64), 1);
  assert_int_equal(s[0].proto, NCCL_PROTO_LL);
}

static void test_setting_applies_only_where_allowed(void **state) {
  (void)state;
  topo_cal_allowed a;
  topo_cal_rules_allowed(2, 1, &a);
  topo_cal_setting tree = {TOPO_CAL_FORCED, NCCL_ALGO_TREE, NCCL_PROTO_LL, 0, 0};
  assert_true(topo_cal_setting_applies(&tree, ncclFuncAllReduce, &a));
  assert_false(topo_cal_setting_applies(&tree, ncclFuncBroadcast, &a));
  topo_cal_setting def = {TOPO_CAL_DEFAULT, -1, -1, 0, 0};
  assert_true(topo_cal_setting_applies(&def, ncclFuncBroadcast, &a));
  a.ok[ncclFuncAllReduce][NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] = 1;
  topo_cal_setting nvls = {TOPO_CAL_FORCED, NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE, 8, 0};
  assert_false(topo_cal_setting_applies(&nvls, ncclFuncAllReduce, &a)); /* channels not honoured */
  nvls.nchannels = 0;
  assert_true(topo_cal_setting_applies(&nvls, ncclFuncAllReduce, &a));
}

static void test_labels_and_force_values(void **state) {
  (void)state;
  char buf[64];
  topo_cal_setting s = {TOPO_CAL_FORCED, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 8, 0};
  topo_cal_setting_label(&s, buf, sizeof buf);
  assert_string_equal(buf, "ring/simple/ch8");
  topo_cal_setting_force_value(&s, buf, sizeof buf);
  assert_string_equal(buf, "ring,simple,8");
  s.nchannels = 0;
  s.algo = NCCL_ALGO_TREE;
  s.proto = NCCL_PROTO_LL128;
  topo_cal_setting_force_value(&s, buf, sizeof buf);
  assert_string_equal(buf, "tree,ll128");
  s.kind = TOPO_CAL_TUNER;
  topo_cal_setting_label(&s, buf, sizeof buf);
  assert_string_equal(buf, "tuner");
  assert_string_equal(topo_nccl_algo_name(NCCL_ALGO_NVLS_TREE, TOPO_NCCL_TABLE), "NVLSTree");
  assert_string_equal(topo_nccl_proto_name(NCCL_PROTO_SIMPLE, TOPO_NCCL_TABLE), "Simple");
}

static void test_small_sizes_use_graphs_and_enough_calls(void **state) {
  (void)state;
  assert_true(topo_cal_use_graph(TOPO_CAL_TIMING_AUTO, 4 << 20, 8));
  assert_true(topo_cal_use_graph(TOPO_CAL_TIMING_AUTO, 4 << 20, 4 << 20));
  assert_false(topo_cal_use_graph(TOPO_CAL_TIMING_AUTO, 4 << 20, (4 << 20) + 4));
  assert_true(topo_cal_use_graph(TOPO_CAL_TIMING_GRAPH, 0, 1ull << 30));
  assert_false(topo_cal_use_graph(TOPO_CAL_TIMING_EAGER, 1ull << 40, 8));
  int k8 = topo_cal_graph_calls(8), k1m = topo_cal_graph_calls(1 << 20),
      k1g = topo_cal_graph_calls(1ull << 30);
  assert_true(k8 >= 20 && k8 <= 100);
  assert_true(k1m < k8);
  assert_int_equal(k1g, 2);
}

static void test_round_order_rotates(void **state) {
  (void)state;
  int seen[5][5] = {{0}}, order[5];
  for (int k = 0; k < 5; k++) {
    topo_cal_round_order(5, k, order);
    assert_int_equal(order[0], k);
    for (int i = 0; i < 5; i++) seen[order[i]][i]++;
  }
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 5; j++)
      assert_int_equal(seen[i][j], 1); /* every item, every position once */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_order_rotates),
      cmocka_unit_test(test_sizes_double_from_8_bytes_to_1_gigabyte),
      cmocka_unit_test(test_sizes_round_to_four_bytes_and_keep_the_top),
      cmocka_unit_test(test_gathered_collectives_round_to_ranks_times_element),
      cmocka_unit_test(test_rules_follow_nccl_on_one_node_and_two),
      cmocka_unit_test(test_settings_put_ring_simple_first_for_each_channel_count),
      cmocka_unit_test(test_settings_skip_what_no_selected_collective_allows),
      cmocka_unit_test(test_setting_applies_only_where_allowed),
      cmocka_unit_test(test_labels_and_force_values),
      cmocka_unit_test(test_small_sizes_use_graphs_and_enough_calls),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
