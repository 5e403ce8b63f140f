// SPDX-License-Identifier: Apache-2.0
// A host that loads the profiler, profiles a few communicators and dlcloses it without
// finalizing them, again and again: memory does not grow with each load (it once kept ~10 MB
// per load; what may grow is what the open communicators use), and at exit every
// communicator's trace is written whole, footer included.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_profiler.h"
#include "rel_child.h"
#include "trace_read.h"

#define CYCLES 20
#define COMMS  2
#define OPS    500

static void job(void *arg) {
  (void)arg;
  long after_two = 0;
  for (int cycle = 0; cycle < CYCLES; cycle++) {
    topo_host_profiler p[COMMS];
    for (int c = 0; c < COMMS; c++) {
      REL_CHECK(topo_host_profiler_load(&p[c], TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
      REL_CHECK(topo_host_profiler_init(&p[c], 0x700 + (uint64_t)(cycle * COMMS + c), "reload", 1,
                                        COMMS, c, NULL) == ncclSuccess);
      REL_CHECK(p[c].ctx != NULL);
    }
    for (uint64_t i = 0; i < OPS; i++)
      for (int c = 0; c < COMMS; c++) rel_allreduce(&p[c], c, i);
    for (int c = 0; c < COMMS; c++) topo_host_profiler_unload(&p[c]); /* no finalize */
    rel_sleep_ms(20); /* written: the quiet communicators give their block buffers back */
    if (cycle == 1) after_two = rel_rss_kb();
  }
  long growth = rel_rss_kb() - after_two;
  fprintf(stderr, "RSS grew by %ld kB over %d loads without finalize\n", growth, CYCLES - 2);
  REL_CHECK(growth < 2048);
  exit(0);
}

static void test_reload_without_finalize_keeps_memory_flat_and_traces_whole(void **s) {
  (void)s;
  char dir[] = "/tmp/topo-reload-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_CUPTI", "off", 1);
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  setenv("TOPO_PROFILER_FLUSH_MS", "5", 1);
  setenv("TOPO_PROFILER_RING", "4096", 1); /* its pages all resident after the first cycles */
  rel_result r = rel_run_child(job, NULL, 60000);
  rel_assert_exited_cleanly(&r);
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, CYCLES * COMMS);
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    assert_int_equal(test_trace_read(paths[i], &t), 0);
    assert_false(t.bad_block);
    assert_true(t.has_footer);
    const topo_trace_record **colls;
    assert_int_equal(test_trace_select(&t, TOPO_REC_COLL, &colls), OPS);
    free(colls);
    test_trace_free(&t);
  }
  test_trace_free_list(paths, n);
  test_trace_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reload_without_finalize_keeps_memory_flat_and_traces_whole),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
