// SPDX-License-Identifier: Apache-2.0
// Fault injection through the plugin ABI: fault-injection builds of the plugins (the shipped
// sources plus tests/reliability/fault_hook.c, which exports the plugin's own allocation hook)
// are loaded through the plugin host, and every allocation reached from init is made to fail in
// turn. Each time init must still answer ncclSuccess, warn, and fall back: the tuner leaves
// NCCL's cost table, nChannels and constants exactly as NCCL filled them; the profiler asks for
// no events (mask 0), answers every event with a NULL handle and writes nothing, and the next
// init, with memory back, profiles normally.
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "host_tuner.h"
#ifdef TOPO_TEST_PROFILER_FAULTS_SO
#include "host_profiler.h"
#include "profiler_driver.h"
#include "trace_read.h"
#endif

typedef void (*fail_after_fn)(long);
typedef long (*count_fn)(void);

static char dir[] = "/tmp/topo-faults-XXXXXX";
static char rules[300], profile[300];

static int setup(void **state) {
  (void)state;
  if (!mkdtemp(dir)) return -1;
  snprintf(rules, sizeof rules, "%s/rules.conf", dir);
  snprintf(profile, sizeof profile, "%s/h200.prof", dir);
  FILE *f = fopen(rules, "w");
  if (!f) return -1;
  fputs("allreduce,0,65536,ring,ll,2,-1,-1\nallgather,0,-1,ring,simple,-1,-1,-1\n", f);
  fclose(f);
  FILE *in = fopen(TOPO_TEST_FITTED_PROFILE, "r");
  f = fopen(profile, "w");
  if (!in || !f) return -1;
  char line[4096];
  while (fgets(line, sizeof line, in))
    fputs(strncmp(line, "section ", 8) ? line : "section gpu=H200\n", f);
  fclose(in);
  fclose(f);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(rules);
  unlink(profile);
  rmdir(dir);
  return 0;
}

static void fill(float *table) {
  for (int i = 0; i < 21; i++) table[i] = (i % 3 == 2) ? -1.0f : 3.0f + (float)i;
}

static void test_tuner_answers_success_and_falls_back_at_each_init_allocation(void **state) {
  (void)state;
  setenv("TOPO_TUNER_RULES", rules, 1);
  setenv("TOPO_TUNER_PROFILE", profile, 1);
  setenv("TOPO_TUNER_GPU", "H200", 1);
  unsetenv("TOPO_TUNER_FORCE");
  topo_host_tuner t;
  assert_int_equal(topo_host_tuner_load(&t, TOPO_TEST_TUNER_FAULTS_SO, TOPO_NCCL_2_28), TOPO_OK);
  fail_after_fn fail_after =
      (fail_after_fn)(uintptr_t)dlsym(t.lib.handle, "topo_test_alloc_fail_after");
  count_fn count = (count_fn)(uintptr_t)dlsym(t.lib.handle, "topo_test_alloc_count");
  assert_non_null(fail_after);
  assert_non_null(count);

  int failed_inits = 0, degraded = 0;
  long sites = 0;
  for (long k = 0;; k++) {
    ncclTunerConstants_v5_t c, before;
    topo_host_default_constants(&c);
    before = c;
    topo_host_log_reset();
    topo_host_log_echo(getenv("ECHO_LOG") != NULL);
    long start = count();
    fail_after(k);
    assert_int_equal(topo_host_tuner_init(&t, 42, 8, 1, topo_host_log, NULL, &c), ncclSuccess);
    long used = count() - start;
    fail_after(-1);
    float table[21], nccl[21];
    fill(table);
    memcpy(nccl, table, sizeof table);
    int nch = 7;
    assert_int_equal(topo_host_tuner_get(&t, ncclFuncAllReduce, 4096, 1, table, 0, &nch),
                     ncclSuccess);
    if (used > k) { /* allocation number k was refused */
      assert_true(topo_host_log_count(NCCL_LOG_WARN) >= 1);
      if (!t.ctx) {
        failed_inits++;
        /* a clear warning (the profile loader may add its own first), NCCL's choices untouched */
        assert_true(topo_host_log_count(NCCL_LOG_WARN) <= 2);
        assert_true(topo_host_log_contains("NCCL's own choices stay in effect"));
        assert_memory_equal(table, nccl, sizeof table);
        assert_int_equal(nch, 7);
        assert_memory_equal(&c, &before, sizeof c);
      } else {
        degraded++; /* a part (rules, profile) was dropped with a warning; the rest tunes */
      }
    } else {
      sites = k;
      assert_non_null(t.ctx);
      assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
      assert_memory_not_equal(table, nccl, sizeof table); /* it tunes again */
    }
    assert_int_equal(topo_host_tuner_finalize(&t), ncclSuccess);
    if (used <= k) break;
  }
  topo_host_tuner_unload(&t);
  print_message(
      "tuner: %ld allocation sites in init; %d failed inits fell back to NCCL, %d "
      "degraded to a warning\n",
      sites, failed_inits, degraded);
  assert_true(sites >= 4);
  assert_int_equal(failed_inits + degraded, sites);
}

#ifdef TOPO_TEST_PROFILER_FAULTS_SO
static void one_collective(topo_host_profiler *p, uint64_t seq) {
  drv_op op;
  memset(&op, 0, sizeof op);
  op.func = "AllReduce";
  op.dtype = "ncclFloat32";
  op.algo = "RING";
  op.proto = "LL";
  op.seq = seq;
  op.count = 256;
  op.nch = 2;
  op.peer = -1;
  drv_set_gpu(&op, 5000, 10, 100);
  drv_run(p, &op);
}

static void test_profiler_answers_success_and_disables_itself_at_each_init_allocation(
    void **state) {
  (void)state;
  char tdir[] = "/tmp/topo-faults-traces-XXXXXX";
  assert_non_null(mkdtemp(tdir));
  setenv("TOPO_PROFILER_DIR", tdir, 1);
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  setenv("TOPO_PROFILER_POOL", "64", 1);
  setenv("TOPO_PROFILER_RING", "256", 1);
  setenv("TOPO_PROFILER_CUPTI", "0", 1);
  topo_host_profiler p;
  assert_int_equal(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_FAULTS_SO, TOPO_NCCL_2_28),
                   TOPO_OK);
  fail_after_fn fail_after =
      (fail_after_fn)(uintptr_t)dlsym(p.lib.handle, "topo_test_alloc_fail_after");
  count_fn count = (count_fn)(uintptr_t)dlsym(p.lib.handle, "topo_test_alloc_count");
  assert_non_null(fail_after);
  assert_non_null(count);
  long sites = 0;
  int failed = 0;
  for (long k = 0;; k++) {
    topo_host_log_reset();
    topo_host_profiler_mask = 0;
    long start = count();
    fail_after(k);
    assert_int_equal(
        topo_host_profiler_init(&p, 0xfa000 + (uint64_t)k, "faults", 1, 1, 0, topo_host_log),
        ncclSuccess);
    long used = count() - start;
    fail_after(-1);
    one_collective(&p, (uint64_t)k);
    if (used > k) {
      failed++;
      assert_null(p.ctx);
      assert_int_equal(topo_host_profiler_mask, 0); /* NCCL asks for no event */
      assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
      assert_true(topo_host_log_contains("profiling disabled"));
    } else {
      sites = k;
      assert_non_null(p.ctx);
      assert_int_not_equal(topo_host_profiler_mask, 0);
      assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
    }
    assert_int_equal(topo_host_profiler_finalize(&p), ncclSuccess);
    if (used <= k) break;
  }
  topo_host_profiler_unload(&p);
  /* Only the last, unhindered init left a trace, and it holds its collective. */
  char **paths;
  size_t n = test_trace_list(tdir, &paths);
  assert_int_equal(n, 1);
  test_trace t;
  assert_int_equal(test_trace_read(paths[0], &t), 0);
  assert_true(t.has_footer);
  assert_int_equal(t.header.comm_hash, 0xfa000 + (uint64_t)sites);
  const topo_trace_record **colls;
  assert_int_equal(test_trace_select(&t, TOPO_REC_COLL, &colls), 1);
  assert_int_equal(colls[0]->coll.seq, (uint64_t)sites);
  free(colls);
  test_trace_free(&t);
  test_trace_free_list(paths, n);
  test_trace_rmdir(tdir);
  print_message(
      "profiler: %ld allocation sites in init; %d failed inits answered success with "
      "profiling off\n",
      sites, failed);
  assert_true(sites >= 4); /* two pools, the writer's ring, the context and its block */
  assert_int_equal(failed, sites);
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tuner_answers_success_and_falls_back_at_each_init_allocation),
#ifdef TOPO_TEST_PROFILER_FAULTS_SO
      cmocka_unit_test(test_profiler_answers_success_and_disables_itself_at_each_init_allocation),
#endif
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
