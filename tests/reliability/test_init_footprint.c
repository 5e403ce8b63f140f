// SPDX-License-Identifier: Apache-2.0
// The first communicator's init makes the process at most 1 MB bigger until the communicator has
// traffic (it used to add ~16 MB: event pools and the writer's ring written in full at init);
// with traffic the profiler grows with what is in flight, never beyond its configured sizes.
// Each measurement is a fresh process: only the first init of a process starts the profiler.
// (Init time is a speed target: bench/profiler_init_bench prints it against a baseline.)
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

static void job(void *arg) {
  (void)arg;
  topo_host_profiler p;
  REL_CHECK(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  long before = rel_rss_kb();
  REL_CHECK(topo_host_profiler_init(&p, 0xf007, "footprint", 1, 2, 0, NULL) == ncclSuccess);
  REL_CHECK(p.ctx != NULL);
  long grown = rel_rss_kb() - before;
  fprintf(stderr, "first init: +%ld kB resident\n", grown);
  REL_CHECK(grown <= 1024);
  for (uint64_t i = 0; i < 20000; i++) rel_allreduce(&p, 0, i);
  fprintf(stderr, "after 20000 collectives: +%ld kB resident\n", rel_rss_kb() - before);
  REL_CHECK(topo_host_profiler_finalize(&p) == ncclSuccess);
}

static void test_first_init_stays_under_a_megabyte_until_traffic(void **s) {
  (void)s;
  char dir[] = "/tmp/topo-footprint-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_CUPTI", "off", 1); /* CUPTI's own library is not the profiler's memory */
  rel_result r = rel_run_child(job, NULL, 30000);
  rel_assert_exited_cleanly(&r);
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, 1);
  test_trace t;
  assert_int_equal(test_trace_read(paths[0], &t), 0);
  const topo_trace_record **colls;
  assert_int_equal(test_trace_select(&t, TOPO_REC_COLL, &colls) + t.footer.dropped[TOPO_DROP_COLL] +
                       t.footer.dropped[TOPO_DROP_RECORD],
                   20000);
  free(colls);
  test_trace_free(&t);
  test_trace_free_list(paths, n);
  test_trace_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_init_stays_under_a_megabyte_until_traffic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
