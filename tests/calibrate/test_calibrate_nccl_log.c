// SPDX-License-Identifier: Apache-2.0
// Reading NCCL 2.28's INFO log back: choice lines, the algorithm/protocol table (what NCCL
// allows), the channel count and the tuner-load line, on the log recorded on 2 x H200
// (tests/data/) and on lines written incrementally as NCCL does.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "calibrate.h"

static void test_choice_lines_parse_with_and_without_prefix(void **state) {
  (void)state;
  topo_cal_choice c;
  assert_int_equal(topo_cal_parse_choice("vm:599:599 [0] NCCL INFO AllGather: 524288 Bytes -> Algo "
                                         "RING proto SIMPLE channel{Lo..Hi}={0..1}",
                                         &c),
                   1);
  assert_int_equal(c.coll, ncclFuncAllGather);
  assert_int_equal(c.bytes, 524288);
  assert_int_equal(c.algo, NCCL_ALGO_RING);
  assert_int_equal(c.proto, NCCL_PROTO_SIMPLE);
  assert_int_equal(c.nchannels, 2);
  assert_int_equal(
      topo_cal_parse_choice(
          "ReduceScatter: 8 Bytes -> Algo NVLS_TREE proto LL128 channel{Lo..Hi}={4..11}", &c),
      1);
  assert_int_equal(c.coll, ncclFuncReduceScatter);
  assert_int_equal(c.algo, NCCL_ALGO_NVLS_TREE);
  assert_int_equal(c.proto, NCCL_PROTO_LL128);
  assert_int_equal(c.nchannels, 8);
  assert_int_equal(
      topo_cal_parse_choice("AlltoAll: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}", &c),
      0);
  assert_int_equal(
      topo_cal_parse_choice("AllReduce: 8 Bytes -> Algo WARP proto LL channel{Lo..Hi}={0..0}", &c),
      0);
  assert_int_equal(topo_cal_parse_choice("NCCL INFO 24 coll channels, 24 collnet channels", &c), 0);
}

static void test_recorded_log_gives_table_channels_tuner_and_choices(void **state) {
  (void)state;
  topo_cal_nccl_log log;
  topo_cal_nccl_log_init(&log);
  assert_int_equal(
      topo_cal_nccl_log_open(&log, TOPO_TEST_DATA_DIR "/nccl-2.28.9-2xh200/nccl-debug-log.txt"), 0);
  assert_true(topo_cal_nccl_log_poll(&log) > 100);
  assert_true(log.table_seen >= 5);
  /* 2 x H200, NVLS off: AllReduce Tree and Ring, every protocol; the others Ring only */
  for (int p = 0; p < 3; p++) {
    assert_true(log.allowed.ok[ncclFuncAllReduce][NCCL_ALGO_TREE][p]);
    assert_true(log.allowed.ok[ncclFuncAllReduce][NCCL_ALGO_RING][p]);
    assert_true(log.allowed.ok[ncclFuncAllGather][NCCL_ALGO_RING][p]);
    assert_false(log.allowed.ok[ncclFuncAllGather][NCCL_ALGO_TREE][p]);
    assert_false(log.allowed.ok[ncclFuncBroadcast][NCCL_ALGO_TREE][p]);
    assert_false(log.allowed.ok[ncclFuncAllReduce][NCCL_ALGO_NVLS][p]);
    assert_false(log.allowed.ok[ncclFuncAllReduce][NCCL_ALGO_PAT][p]);
  }
  /* CollNetChain AllReduce Simple has a latency but bandwidth 0: disabled */
  assert_false(log.allowed.ok[ncclFuncAllReduce][NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE]);
  assert_int_equal(log.coll_channels, 24);
  assert_int_equal(log.tuner_loaded, 1);
  assert_string_equal(log.tuner_name, "recorder");
  assert_int_equal(log.tuner_version, 5);
  assert_true(log.nchoices > 20);
  assert_true(log.have_last[ncclFuncAllReduce]);
  assert_int_equal(log.last[ncclFuncAllReduce].algo, NCCL_ALGO_RING);
  topo_cal_nccl_log_close(&log);
}

static void test_two_node_log_has_no_ll128(void **state) {
  (void)state;
  topo_cal_nccl_log log;
  topo_cal_nccl_log_init(&log);
  assert_int_equal(topo_cal_nccl_log_open(&log, TOPO_TEST_DATA_DIR
                                          "/nccl-2.28.9-2xh200-as-2-nodes/nccl-debug-log.txt"),
                   0);
  assert_true(topo_cal_nccl_log_poll(&log) > 10);
  assert_true(log.table_seen >= 5);
  assert_true(log.allowed.ok[ncclFuncAllReduce][NCCL_ALGO_RING][NCCL_PROTO_SIMPLE]);
  assert_false(log.allowed.ok[ncclFuncAllReduce][NCCL_ALGO_RING][NCCL_PROTO_LL128]);
  assert_true(log.allowed.ok[ncclFuncAllGather][NCCL_ALGO_PAT][NCCL_PROTO_SIMPLE]);
  topo_cal_nccl_log_close(&log);
}

static void test_incremental_reads_wait_for_complete_lines(void **state) {
  (void)state;
  char path[] = "/tmp/topo-cal-log-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *w = fdopen(fd, "w");
  topo_cal_nccl_log log;
  topo_cal_nccl_log_init(&log);
  assert_int_equal(topo_cal_nccl_log_open(&log, path), 0);
  assert_int_equal(topo_cal_nccl_log_poll(&log), 0);
  fputs(
      "h:1:1 [0] NCCL INFO AllReduce: 1024 Bytes -> Algo TREE proto LL "
      "channel{Lo..Hi}={0..3}\nh:1:1 [0] NCCL INFO 16 coll ch",
      w);
  fflush(w);
  assert_int_equal(topo_cal_nccl_log_poll(&log), 1);
  assert_int_equal(log.last[ncclFuncAllReduce].algo, NCCL_ALGO_TREE);
  assert_int_equal(log.last[ncclFuncAllReduce].nchannels, 4);
  assert_int_equal(log.coll_channels, 0);
  fputs("annels, 16 collnet channels, 0 nvls channels\nh:1:1 [0] NCCL WARN Error : no algorithm\n",
        w);
  fflush(w);
  assert_int_equal(topo_cal_nccl_log_poll(&log), 2);
  assert_int_equal(log.coll_channels, 16);
  assert_string_equal(log.last_warn, "Error : no algorithm");
  topo_cal_nccl_log_reset(&log);
  assert_int_equal(log.coll_channels, 0);
  assert_false(log.have_last[ncclFuncAllReduce]);
  fclose(w);
  topo_cal_nccl_log_close(&log);
  unlink(path);
  assert_int_equal(topo_cal_nccl_log_poll(&log), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_choice_lines_parse_with_and_without_prefix),
      cmocka_unit_test(test_recorded_log_gives_table_channels_tuner_and_choices),
      cmocka_unit_test(test_two_node_log_has_no_ll128),
      cmocka_unit_test(test_incremental_reads_wait_for_complete_lines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
