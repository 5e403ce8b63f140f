// SPDX-License-Identifier: Apache-2.0
// The tuner core linked directly, for what cannot be reached through the plugin: allocation
// failure at every allocation site of init (the plugin has its own copy of the allocation hook),
// the shared-setup cache, and the decision table against the model it was built from.
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "alloc.h"
#include "log.h"
#include "model.h"
#include "plugin_host.h"
#include "table.h"
#include "tuner_core.h"
#include "tuner_test_util.h"

static int setup(void **state) {
  (void)state;
  unsetenv("TOPO_TUNER_PROFILE");
  unsetenv("TOPO_TUNER_RULES");
  unsetenv("TOPO_TUNER_FORCE");
  setenv("TOPO_TUNER_GPU", "H200", 1);
  topo_host_log_reset();
  return 0;
}

static topo_tuner_args args_for(size_t nranks, size_t nnodes, ncclTunerConstants_v5_t *c) {
  topo_tuner_args a = {.abi_version = 5,
                       .comm_id = 1,
                       .nranks = nranks,
                       .nnodes = nnodes,
                       .logger = topo_host_log,
                       .constants = c};
  return a;
}

/* Every allocation of init fails in turn: init reports it (NULL context, NCCL's table untouched
 * by every later call), frees what it took, and NCCL's constants stay as they were. */
static void test_init_falls_back_on_allocation_failure_at_each_site(void **state) {
  (void)state;
  /* A rules file and a profile file, so that their loaders' allocations are exercised too. */
  char rules[] = "/tmp/topo-core-rules-XXXXXX";
  int fd = mkstemp(rules);
  assert_true(fd >= 0);
  assert_true(write(fd, "allreduce,0,100,ring,ll,-1,-1,-1\n", 33) == 33);
  close(fd);
  char prof[] = "/tmp/topo-core-prof-XXXXXX";
  fd = mkstemp(prof);
  topo_profile p;
  topo_profile_builtin("H200", &p);
  FILE *f = fdopen(fd, "w");
  topo_profile_write(f, &p);
  fclose(f);
  topo_profile_free(&p);
  setenv("TOPO_TUNER_RULES", rules, 1);
  setenv("TOPO_TUNER_PROFILE", prof, 1);

  int failures = 0;
  for (long k = 0;; k++) {
    ncclTunerConstants_v5_t c, before;
    topo_host_default_constants(&c);
    before = c;
    topo_tuner_args a = args_for(4, 1, &c);
    topo_tuner_ctx *ctx = (topo_tuner_ctx *)0x1;
    long start = topo_alloc_count();
    topo_alloc_fail_after(k);
    topo_status st = topo_tuner_init(&a, &ctx);
    long used = topo_alloc_count() - start;
    topo_alloc_fail_after(-1);
    if (st != TOPO_OK) {
      failures++;
      assert_null(ctx);
      assert_memory_equal(&c, &before, sizeof c);
      float table[21], copy[21];
      nccl2_fill(ncclFuncAllReduce, 4096, 7, table);
      memcpy(copy, table, sizeof table);
      int nch = 5;
      topo_tuner_get(ctx, ncclFuncAllReduce, 4096, 1, table, 7, 3, 0, &nch);
      assert_memory_equal(table, copy, sizeof table);
      assert_int_equal(nch, 5);
      topo_tuner_finalize(ctx);
      continue;
    }
    assert_non_null(ctx);
    topo_tuner_finalize(ctx);
    if (used <= k) break; /* no allocation was refused: every site has been tried */
  }
  print_message("init survived %d injected allocation failures\n", failures);
  assert_true(failures >= 4); /* context, setup, profile buffer, rules, table at least */
  unlink(rules);
  unlink(prof);
  unsetenv("TOPO_TUNER_RULES");
  unsetenv("TOPO_TUNER_PROFILE");
}

static void test_same_shape_communicators_share_one_setup(void **state) {
  (void)state;
  topo_tuner_args a = args_for(8, 1, NULL);
  topo_tuner_ctx *c1, *c2, *c3;
  assert_int_equal(topo_tuner_init(&a, &c1), TOPO_OK);
  long before = topo_alloc_count();
  assert_int_equal(topo_tuner_init(&a, &c2), TOPO_OK);
  assert_int_equal(topo_alloc_count() - before, 1); /* only the context */
  a.nranks = 16;
  a.nnodes = 2;
  before = topo_alloc_count();
  assert_int_equal(topo_tuner_init(&a, &c3), TOPO_OK);
  assert_true(topo_alloc_count() - before > 1); /* a new shape builds its own table */
  topo_tuner_finalize(c1);
  topo_tuner_finalize(c3);
  /* c2 still works after c1 is gone. */
  float table[21];
  nccl2_fill(ncclFuncAllReduce, 1 << 20, 7, table);
  int nch = 0;
  topo_tuner_get(c2, ncclFuncAllReduce, 1 << 20, 1, table, 7, 3, 0, &nch);
  int al, pr;
  assert_true(topo_table_select(table, 7, 3, &al, &pr));
  topo_tuner_finalize(c2);
}

/* The table answers what the model predicts: exactly at bucket edges (2^k and 1.5 x 2^k);
 * between them it interpolates linearly, which smooths the steps of NCCL's own channel count
 * inside a bucket (LL on 16 ranks: 1 channel up to 128 KB, then 2): within 15 % there. */
static void test_table_matches_the_model(void **state) {
  (void)state;
  topo_profile p;
  topo_profile_builtin("H200", &p);
  for (int n = 2; n <= 16; n *= 2) {
    topo_model m;
    topo_model_init(&m, &p, n, n > 8 ? 2 : 1, 0);
    topo_table *t;
    assert_int_equal(topo_table_build(&m, &t), TOPO_OK);
    for (int coll = 0; coll < 5; coll++)
      for (int a = 0; a < 7; a++)
        for (int pr = 0; pr < 3; pr++)
          for (int sz = 3; sz < 36; sz++)
            for (int mid = 0; mid <= 3; mid++) { /* 2^k, 1.25, 1.5 (edges) and 1.75 x 2^k */
              size_t bytes = ((size_t)1 << sz) + (((size_t)1 << sz) / 4) * (size_t)mid;
              double want = topo_model_time(&m, coll, a, pr, 0, (double)bytes, 1, 0);
              float got = topo_table_time(t, coll, bytes, 1, 0, a, pr);
              if (want < 0) {
                assert_true(got < 0);
                continue;
              }
              double tol = mid % 2 ? 0.15 : 1e-5;
              if (fabs(got - want) > tol * want)
                fail_msg("n=%d coll %d algo %d proto %d %zu B: table %g, model %g", n, coll, a, pr,
                         bytes, got, want);
            }
    topo_table_free(t);
  }
  topo_profile_free(&p);
}

/* Physical sanity of the model on one 8-GPU NVLink node. */
static void test_model_is_physically_sensible(void **state) {
  (void)state;
  topo_profile p;
  topo_profile_builtin("H200", &p);
  p.nvls = 1;
  p.proto[NCCL_PROTO_LL].lat_us = 0; /* LL's latency is the hops' alone */
  topo_model m;
  topo_model_init(&m, &p, 8, 1, 8);
  for (int coll = 0; coll < 5; coll++)
    for (int a = 0; a < 7; a++)
      for (int pr = 0; pr < 3; pr++) {
        double prev = -1, prev8 = -1;
        for (int sz = 0; sz < 34; sz++) {
          double bytes = (double)((size_t)1 << sz);
          double t = topo_model_time(&m, coll, a, pr, 0, bytes, 1, 0);
          double t8 = topo_model_time(&m, coll, a, pr, 8, bytes, 1, 0);
          if (t < 0) continue;
          assert_true(t >= p.launch_us); /* never below one launch */
          /* More bytes never take less time on a fixed channel count; with NCCL's own count,
           * which grows with the size, at most 2 % less at the step. */
          assert_true(t8 >= prev8);
          assert_true(t >= 0.98 * prev);
          prev = t;
          prev8 = t8;
        }
      }
  /* Ring AllReduce takes 2(n-1) steps, AllGather n-1: twice the latency part. */
  double lar, xar, lag, xag;
  topo_model_parts(&m, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL, 0, 8, 0, &lar, &xar);
  topo_model_parts(&m, ncclFuncAllGather, NCCL_ALGO_RING, NCCL_PROTO_LL, 0, 8, 0, &lag, &xag);
  assert_float_equal(lar - p.launch_us, 2 * (lag - p.launch_us), 1e-9);
  /* LL runs at about half the bandwidth of Simple or less; LL128 in between. */
  double big = 1 << 30;
  double tll = topo_model_time(&m, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL, 0, big, 1, 0);
  double t128 =
      topo_model_time(&m, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL128, 0, big, 1, 0);
  double tsim =
      topo_model_time(&m, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 0, big, 1, 0);
  assert_true(tll > 1.8 * tsim);
  assert_true(t128 > tsim && t128 < tll);
  /* More channels: bandwidth grows up to the link, latency does not change. */
  double prev = 1e30;
  for (int ch = 1; ch <= 24; ch++) {
    double l, x;
    topo_model_parts(&m, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, ch, big, 0, &l, &x);
    /* Launch, 14 NVLink hops, Simple's protocol latency lat_us x (14 steps + 2) / 2. */
    assert_float_equal(
        l,
        p.launch_us + 14 * p.link[TOPO_LINK_NVLINK].lat_us + p.proto[NCCL_PROTO_SIMPLE].lat_us * 8,
        1e-9);
    assert_true(x < prev);
    prev = x;
  }
  double busbw = big / tsim / 1e3 * topo_nccl_busbw_factor(ncclFuncAllReduce, 8);
  assert_true(busbw < p.link[TOPO_LINK_NVLINK].bw_gbs); /* never above the link */
  /* numPipeOps multiplies the ring latency. */
  double t1 = topo_model_time(&m, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL, 0, 8, 1, 0);
  double t4 = topo_model_time(&m, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL, 0, 8, 4, 0);
  assert_float_equal(t4, 4 * t1 - 3 * xar, 1e-6);
  topo_profile_free(&p);
}

/* Communicator sizes up to INT_MAX (what an ABI's int can carry): the model's tree and network
 * hop counts stay finite and every time is positive or "no prediction", in bounded time. */
static void test_model_takes_any_communicator_size(void **state) {
  (void)state;
  topo_profile p;
  topo_profile_builtin("H200", &p);
  static const int sizes[] = {1 << 30, (1 << 30) + 1, INT_MAX};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    topo_model m;
    topo_model_init(&m, &p, sizes[i], sizes[i], 0);
    for (int a = 0; a < 7; a++)
      for (int pr = 0; pr < 3; pr++) {
        double t = topo_model_time(&m, ncclFuncAllReduce, a, pr, 0, 1 << 20, 1, 0);
        assert_true(t < 0 || (t > 0 && t < 1e300));
      }
  }
}

int main(void) {
  topo_log_set_logger(topo_host_log);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_init_falls_back_on_allocation_failure_at_each_site, setup),
      cmocka_unit_test_setup(test_same_shape_communicators_share_one_setup, setup),
      cmocka_unit_test_setup(test_table_matches_the_model, setup),
      cmocka_unit_test_setup(test_model_is_physically_sensible, setup),
      cmocka_unit_test_setup(test_model_takes_any_communicator_size, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
