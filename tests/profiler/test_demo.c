// SPDX-License-Identifier: Apache-2.0
// topo-demo writes real traces: one per rank with every collective GPU-timed, the gradient
// buckets adding up to the model's bf16 gradients, the straggler waiting least in collectives,
// and a CUPTI trace per rank with the compute kernels.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_read.h"

static void test_demo_writes_a_trace_per_rank_with_a_compute_timeline(void **s) {
  (void)s;
  char dir[] = "/tmp/topo-demo-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s --out %s --ranks 4 --steps 2 --seed 3 --straggler 2 >/dev/null",
           TOPO_TEST_DEMO, dir);
  assert_int_equal(system(cmd), 0);
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, 8); /* 4 ranks + 4 CUPTI traces (one per rank process) */
  double wait_us[4] = {0};
  int comm_files = 0, cupti_files = 0;
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    assert_int_equal(test_trace_read(paths[i], &t), 0);
    assert_true(t.has_footer);
    if (t.header.comm_hash == 0) {
      cupti_files++;
      const topo_trace_record **k;
      size_t nk = test_trace_select(&t, TOPO_REC_KERNEL, &k);
      size_t compute = 0, nccl = 0;
      for (size_t j = 0; j < nk; j++) {
        compute += k[j]->kernel.kind == TOPO_KERNEL_COMPUTE;
        nccl += k[j]->kernel.kind == TOPO_KERNEL_NCCL;
      }
      assert_int_equal(compute, 2 * (24 * 7 * 2 + 1)); /* fwd+bwd layers + Adam, 2 steps */
      assert_int_equal(nccl, 2 * 28);
      free(k);
    } else {
      comm_files++;
      assert_int_equal(t.header.nranks, 4);
      const topo_trace_record **c;
      size_t nc = test_trace_select(&t, TOPO_REC_COLL, &c);
      assert_int_equal(nc, 2 * 28);
      uint64_t grad = 0;
      size_t big = 0, big_timed = 0;
      /* The default rule: every operation of >= measure_min_bytes is GPU-timed once the
       * next-operation prediction has seen the step's sequence; what was asked for is timed. */
      assert_true(t.header.measure_min_bytes > 0);
      for (size_t j = 0; j < nc; j++) {
        int timed = (c[j]->coll.flags & TOPO_COLL_F_GPU_TIMED) != 0;
        assert_int_equal(timed, (c[j]->coll.flags & TOPO_COLL_F_GPU_ASKED) != 0);
        if (c[j]->coll.bytes >= t.header.measure_min_bytes) big++, big_timed += timed;
        if (c[j]->coll.func == 4) grad += c[j]->coll.bytes;
        if (timed)
          wait_us[t.header.rank] +=
              (double)(c[j]->coll.gpu_stop_ns - c[j]->coll.gpu_start_ns) / 1e3;
      }
      assert_true(big >= 2 * 20);
      assert_true(big_timed + 4 >= big);
      assert_int_equal(grad, 2 * 24 * (uint64_t)(350e6 * 2 / 24)); /* 2 steps of bf16 gradients */
      free(c);
    }
    test_trace_free(&t);
  }
  assert_int_equal(comm_files, 4);
  assert_int_equal(cupti_files, 4);
  for (int r = 0; r < 4; r++)
    if (r != 2) assert_true(wait_us[2] < wait_us[r]); /* the straggler waits least */
  test_trace_free_list(paths, n);
  test_trace_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_demo_writes_a_trace_per_rank_with_a_compute_timeline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
