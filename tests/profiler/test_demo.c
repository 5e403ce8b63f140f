// SPDX-License-Identifier: Apache-2.0
// topo-demo writes real traces in the profiler's default configuration: one per rank with the
// collectives (every large one GPU-timed), the gradient buckets adding up to the model's bf16
// gradients, the straggler waiting least in collectives, the step records of the steps the
// profiler learned, and a CUPTI trace per rank whose window of whole steps opened after the
// warm-up and holds the compute and NCCL kernels of at least 4 whole steps.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace_read.h"

static void test_demo_writes_a_trace_per_rank_with_a_compute_timeline(void **s) {
  (void)s;
  char dir[] = "/tmp/topo-demo-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char cmd[8192];
  /* 24 steps: the default 14 leave room for the warm-up, the learning and one window; on a
   * machine short of CPU the demo's real-time pacing jitters and the steady state comes later */
  snprintf(cmd, sizeof cmd, "%s --out %s --ranks 4 --steps 24 --seed 3 --straggler 2 >/dev/null",
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
      /* fwd+bwd layers + Adam per step: 4 whole steps at least, not the warm-up's */
      assert_true(compute >= 4 * (24 * 7 * 2 + 1));
      assert_true(compute <= 10 * (24 * 7 * 2 + 1));
      assert_true(nccl >= 4 * 28);
      free(k);
      const topo_rec_cupti *span = NULL;
      for (size_t j = 0; j < t.count; j++)
        if (t.records[j].type == TOPO_REC_CUPTI) {
          assert_null(span); /* one window in 24 steps: the next is 5 s later */
          span = &t.records[j].cupti;
        }
      assert_non_null(span);
      assert_int_equal(span->state, TOPO_CUPTI_RECORDED);
      assert_int_equal(span->window, TOPO_CUPTI_WINDOW_STEPS);
      assert_int_equal(span->period, 28);
      assert_int_equal(span->steps, 4);
    } else {
      comm_files++;
      assert_int_equal(t.header.nranks, 4);
      const topo_trace_record **c, **st;
      size_t nc = test_trace_select(&t, TOPO_REC_COLL, &c);
      assert_int_equal(nc, 24 * 28);
      /* the steps the profiler learned: the first after the 2 slower warm-up steps, each begun by
       * a step's first bucket, and the window's five boundaries among them */
      size_t ns = test_trace_select(&t, TOPO_REC_STEP, &st), in_window = 0;
      assert_true(ns >= 5);
      for (size_t j = 0; j < ns; j++) {
        assert_int_equal(st[j]->step.func, 4); /* AllReduce */
        assert_int_equal(st[j]->step.seq % 27, 0);
        assert_int_equal(st[j]->step.cut_func, 2); /* the metrics' AllGather */
        assert_true(st[j]->step.seq / 27 >= 3);
        in_window += (st[j]->step.flags & TOPO_STEP_F_WINDOW) != 0;
      }
      assert_int_equal(in_window, 5);
      free(st);
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
      assert_true(big >= 24 * 20);
      assert_true(big_timed + 4 >= big);
      assert_int_equal(grad, 24 * 24 * (uint64_t)(350e6 * 2 / 24)); /* 24 steps of gradients */
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

/* Runs `cmd` with stdout and stderr into one string; its exit status. */
static int run_capture(const char *cmd, char *out, size_t cap) {
  char full[8300];
  snprintf(full, sizeof full, "%s 2>&1", cmd);
  FILE *p = popen(full, "r");
  assert_non_null(p);
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A trace directory longer than the profiler takes (255 bytes): an error naming the limit, exit
 * 2, and never "traces in DIR" (the profiler refused it and DIR stayed empty: exit 0 before). */
static void test_out_longer_than_the_profiler_takes_is_refused(void **s) {
  (void)s;
  char base[] = "/tmp/topo-demo-long-XXXXXX", out[512], cmd[8192], text[8192];
  assert_non_null(mkdtemp(base));
  int n = snprintf(out, sizeof out, "%s/", base);
  memset(out + n, 'd', 280 - (size_t)n);
  out[280] = 0;
  snprintf(cmd, sizeof cmd, "%s --out %s --ranks 2 --steps 1", TOPO_TEST_DEMO, out);
  int rc = run_capture(cmd, text, sizeof text);
  if (rc != 2 || !strstr(text, "255") || strstr(text, "traces in"))
    fail_msg("exit %d: %s", rc, text);
  rmdir(out);
  rmdir(base);
}

/* A run whose profiler writes nothing (here: turned off) ends with exit 1 and says so; it said
 * "traces in DIR" and exited 0 before. */
static void test_run_that_wrote_no_trace_fails(void **s) {
  (void)s;
  char dir[] = "/tmp/topo-demo-none-XXXXXX", cmd[8192], text[8192];
  assert_non_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd, "TOPO_PROFILER_ENABLE=0 %s --out %s --ranks 2 --steps 1",
           TOPO_TEST_DEMO, dir);
  int rc = run_capture(cmd, text, sizeof text);
  if (rc != 1 || !strstr(text, "no trace was written") || strstr(text, "traces in"))
    fail_msg("exit %d: %s", rc, text);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_demo_writes_a_trace_per_rank_with_a_compute_timeline),
      cmocka_unit_test(test_out_longer_than_the_profiler_takes_is_refused),
      cmocka_unit_test(test_run_that_wrote_no_trace_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
