// SPDX-License-Identifier: Apache-2.0
// Unit tests of common/nccl_vocab.c: NCCL's names in every spelling and their lookup, datatype
// sizes, the nccl-tests factors, and the channel/thread count NCCL 2.28 runs after its choice.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "nccl_vocab.h"

static void test_every_spelling_reads_back_as_its_index(void **state) {
  (void)state;
  for (int s = 0; s < TOPO_NCCL_SPELLINGS; s++) {
    for (int f = 0; f < TOPO_NCCL_NUM_FUNCS; f++)
      assert_int_equal(topo_nccl_func_from_name(topo_nccl_func_name(f, (topo_nccl_spelling)s)), f);
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
      assert_int_equal(topo_nccl_algo_from_name(topo_nccl_algo_name(a, (topo_nccl_spelling)s)), a);
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
      assert_int_equal(topo_nccl_proto_from_name(topo_nccl_proto_name(p, (topo_nccl_spelling)s)),
                       p);
  }
  for (int d = 0; d < TOPO_NCCL_NUM_DATATYPES; d++)
    assert_int_equal(topo_nccl_datatype_from_name(topo_nccl_datatype_names[d]), d);
}

static void test_spellings_are_nccls(void **state) {
  (void)state;
  assert_string_equal(topo_nccl_func_name(ncclFuncReduceScatter, TOPO_NCCL_FILE), "reducescatter");
  assert_string_equal(topo_nccl_func_name(ncclFuncGather, TOPO_NCCL_EVENT), "Gather");
  assert_string_equal(topo_nccl_algo_name(NCCL_ALGO_NVLS_TREE, TOPO_NCCL_FILE), "nvls_tree");
  assert_string_equal(topo_nccl_algo_name(NCCL_ALGO_NVLS_TREE, TOPO_NCCL_EVENT), "NVLS_TREE");
  assert_string_equal(topo_nccl_algo_name(NCCL_ALGO_NVLS_TREE, TOPO_NCCL_TABLE), "NVLSTree");
  assert_string_equal(topo_nccl_algo_name(NCCL_ALGO_COLLNET_DIRECT, TOPO_NCCL_TABLE),
                      "CollNetDirect");
  assert_string_equal(topo_nccl_proto_name(NCCL_PROTO_SIMPLE, TOPO_NCCL_EVENT), "SIMPLE");
  assert_string_equal(topo_nccl_proto_name(NCCL_PROTO_SIMPLE, TOPO_NCCL_TABLE), "Simple");
  assert_string_equal(topo_nccl_datatype_names[9], "ncclBfloat16");
}

static void test_unknown_indices_and_names(void **state) {
  (void)state;
  assert_string_equal(topo_nccl_func_name(-1, TOPO_NCCL_FILE), "unknown");
  assert_string_equal(topo_nccl_func_name(TOPO_NCCL_NUM_FUNCS, TOPO_NCCL_EVENT), "unknown");
  assert_string_equal(topo_nccl_algo_name(NCCL_NUM_ALGORITHMS, TOPO_NCCL_TABLE), "unknown");
  assert_string_equal(topo_nccl_proto_name(0, TOPO_NCCL_SPELLINGS), "unknown");
  assert_int_equal(topo_nccl_algo_from_name(NULL), -1);
  assert_int_equal(topo_nccl_algo_from_name("rings"), -1);
  assert_int_equal(topo_nccl_proto_from_name("LL12"), -1);
  assert_int_equal(topo_nccl_datatype_from_name("float"), -1);
  /* Lookup ignores case, '_' and '-' only. */
  assert_int_equal(topo_nccl_algo_from_name("Collnet-Direct"), NCCL_ALGO_COLLNET_DIRECT);
  assert_int_equal(topo_nccl_proto_from_name("ll_128"), NCCL_PROTO_LL128);
}

/* Profiles, rules and CLIs name only what a tuner sees. */
static void test_coll_from_name_is_the_tuned_collectives(void **state) {
  (void)state;
  assert_int_equal(topo_nccl_coll_from_name("AllReduce"), ncclFuncAllReduce);
  assert_int_equal(topo_nccl_coll_from_name("broadcast"), ncclFuncBroadcast);
  assert_int_equal(topo_nccl_coll_from_name("sendrecv"), -1);
  assert_int_equal(topo_nccl_func_from_name("sendrecv"), ncclFuncSendRecv);
  assert_int_equal(topo_nccl_coll_from_name("alltoall"), -1);
}

static void test_datatype_sizes(void **state) {
  (void)state;
  static const int want[TOPO_NCCL_NUM_DATATYPES] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int d = 0; d < TOPO_NCCL_NUM_DATATYPES; d++)
    assert_int_equal(topo_nccl_datatype_size(d), want[d]);
  assert_int_equal(topo_nccl_datatype_size(-1), 0);
  assert_int_equal(topo_nccl_datatype_size(TOPO_NCCL_NUM_DATATYPES), 0);
}

static void test_nccl_tests_conventions(void **state) {
  (void)state;
  assert_true(fabs(topo_nccl_busbw_factor(ncclFuncAllReduce, 8) - 1.75) < 1e-12);
  assert_true(fabs(topo_nccl_busbw_factor(ncclFuncAllGather, 8) - 0.875) < 1e-12);
  assert_true(fabs(topo_nccl_busbw_factor(ncclFuncReduceScatter, 2) - 0.5) < 1e-12);
  assert_true(topo_nccl_busbw_factor(ncclFuncBroadcast, 8) == 1.0);
  assert_true(topo_nccl_busbw_factor(ncclFuncSendRecv, 8) == 1.0);
  assert_true(topo_nccl_busbw_factor(ncclFuncAllReduce, 0) == 0.0); /* one rank moves nothing */
  assert_int_equal(topo_nccl_tests_bytes(ncclFuncAllGather, 1024, 8), 8192);
  assert_int_equal(topo_nccl_tests_bytes(ncclFuncReduceScatter, 1024, 0), 1024);
  assert_int_equal(topo_nccl_tests_bytes(ncclFuncAllReduce, 1024, 8), 1024);
}

static void run(int algo, int proto, uint64_t bytes, int nchannels, int nvls, int nnodes,
                int nranks, int *nc, int *nt) {
  topo_nccl_channel_inputs in = {.nchannels = nchannels,
                                 .nvls_channels = nvls,
                                 .nnodes = nnodes,
                                 .max_threads = topo_nccl_max_threads(algo, proto, 0),
                                 .threshold = topo_nccl_thread_threshold(algo, proto, nranks)};
  topo_nccl_channels(algo, proto, bytes, &in, nc, nt);
}

/* Hand-computed from NCCL 2.28's loop: 24 channels, 2 ranks on one node. */
static void test_channel_and_thread_count(void **state) {
  (void)state;
  int nc, nt;
  /* Ring/LL: threshold 8 x 2 ranks; 8 B sheds to one channel, threads halve to 64, then rise
   * to the 3-warp floor. */
  run(NCCL_ALGO_RING, NCCL_PROTO_LL, 8, 24, 0, 1, 2, &nc, &nt);
  assert_int_equal(nc, 1);
  assert_int_equal(nt, 96);
  /* Ring/Simple at 1 MB: 24 x 512 x 64 = 786432 <= 1 MB keeps 24 channels; one warp added. */
  run(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 1 << 20, 24, 0, 1, 2, &nc, &nt);
  assert_int_equal(nc, 24);
  assert_int_equal(nt, 544);
  /* Ring/Simple at 64 KB: 65536 / (512 x 64) = 2 channels. */
  run(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 65536, 24, 0, 1, 2, &nc, &nt);
  assert_int_equal(nc, 2);
  /* Tree always runs NCCL_MAX_NTHREADS. */
  run(NCCL_ALGO_TREE, NCCL_PROTO_LL128, 4096, 24, 0, 1, 2, &nc, &nt);
  assert_int_equal(nt, 640);
  /* NVLS: its own channels; on several nodes no more than the collective channels. */
  run(NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE, 8, 24, 16, 1, 8, &nc, &nt);
  assert_int_equal(nc, 16);
  run(NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE, 8, 8, 16, 2, 16, &nc, &nt);
  assert_int_equal(nc, 8);
  run(NCCL_ALGO_NVLS_TREE, NCCL_PROTO_SIMPLE, 8, 8, 16, 2, 16, &nc, &nt);
  assert_int_equal(nc, 16);
  /* Unknown channel count counts as one. */
  run(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 1ull << 30, 0, 0, 1, 2, &nc, &nt);
  assert_int_equal(nc, 1);
}

static void test_thread_tables(void **state) {
  (void)state;
  assert_int_equal(topo_nccl_max_threads(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 1), 256);
  assert_int_equal(topo_nccl_max_threads(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 0), 512);
  assert_int_equal(topo_nccl_max_threads(NCCL_ALGO_RING, NCCL_PROTO_LL128, 0), 640);
  assert_int_equal(topo_nccl_max_threads(NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE, 0), 640);
  assert_int_equal(topo_nccl_max_threads(NCCL_ALGO_PAT, NCCL_PROTO_SIMPLE, 0), 0);
  assert_int_equal(topo_nccl_thread_threshold(NCCL_ALGO_RING, NCCL_PROTO_LL, 8), 64);
  assert_int_equal(topo_nccl_thread_threshold(NCCL_ALGO_TREE, NCCL_PROTO_LL, 8), 8);
  assert_int_equal(topo_nccl_thread_threshold(NCCL_ALGO_COLLNET_CHAIN, NCCL_PROTO_SIMPLE, 8), 512);
  assert_int_equal(topo_nccl_thread_threshold(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 8), 64);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_spelling_reads_back_as_its_index),
      cmocka_unit_test(test_spellings_are_nccls),
      cmocka_unit_test(test_unknown_indices_and_names),
      cmocka_unit_test(test_coll_from_name_is_the_tuned_collectives),
      cmocka_unit_test(test_datatype_sizes),
      cmocka_unit_test(test_nccl_tests_conventions),
      cmocka_unit_test(test_channel_and_thread_count),
      cmocka_unit_test(test_thread_tables),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
