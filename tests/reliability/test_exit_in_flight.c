// SPDX-License-Identifier: Apache-2.0
// A host that calls exit() while other threads are still inside profiler callbacks (NCCL's proxy
// thread can be, and so can any application thread): the process exits normally, without a
// crash or a hang, and every communicator's trace reads back whole - header, CRC-valid blocks
// with collectives in issue order, and a footer that counts exactly what was written. Each run
// is a forked child with a time limit; several runs, since the race lands differently each time.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "host_profiler.h"
#include "profiler_driver.h"
#include "rel_child.h"
#include "trace_read.h"

#define RUNS  30
#define COMMS 3

static topo_host_profiler comms[COMMS];
static atomic_int running;

/* Collectives with 32 kernel channels each, every channel recorded: the thread spends most of
 * its time inside the profiler's callbacks, as NCCL's proxy thread does. */
static void *issue_forever(void *arg) {
  int rank = (int)(intptr_t)arg;
  atomic_fetch_add(&running, 1);
  for (uint64_t seq = 0;; seq++) {
    drv_op op = drv_allreduce(rank, seq, 4096, DRV_MAX_CH);
    drv_run(&comms[rank], &op);
  }
  return NULL;
}

/* The job: COMMS communicators, one thread each issuing collectives without pause; the main
 * thread exits the process while they are at it. */
static void job(void *arg) {
  int run = (int)(intptr_t)arg;
  for (int c = 0; c < COMMS; c++) {
    REL_CHECK(topo_host_profiler_load(&comms[c], TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
    REL_CHECK(topo_host_profiler_init(&comms[c], 0xe0 + (uint64_t)c, "exit", 1, COMMS, c, NULL) ==
              ncclSuccess);
    REL_CHECK(comms[c].ctx != NULL);
  }
  pthread_t t[COMMS];
  for (int c = 0; c < COMMS; c++)
    REL_CHECK(pthread_create(&t[c], NULL, issue_forever, (void *)(intptr_t)c) == 0);
  while (atomic_load(&running) < COMMS) rel_sleep_ms(1);
  rel_sleep_ms(5 + 2 * run); /* a different point of the stream each run */
  exit(0);
}

static void check_trace(const char *path) {
  test_trace t;
  assert_int_equal(test_trace_read(path, &t), 0);
  assert_false(t.bad_block);
  assert_true(t.has_footer);
  assert_int_equal(t.footer.blocks, t.blocks);
  assert_int_equal(t.footer.records, t.count);
  const topo_trace_record **colls;
  size_t n = test_trace_select(&t, TOPO_REC_COLL, &colls);
  /* In issue order; a collective lost to a full queue leaves a gap that is counted. */
  uint64_t gaps = 0;
  for (size_t i = 1; i < n; i++) {
    assert_true(colls[i]->coll.seq > colls[i - 1]->coll.seq);
    gaps += colls[i]->coll.seq - colls[i - 1]->coll.seq - 1;
  }
  if (n) gaps += colls[0]->coll.seq;
  uint64_t counted = t.footer.dropped[TOPO_DROP_COLL] + t.footer.dropped[TOPO_DROP_RECORD] +
                     t.footer.dropped[TOPO_DROP_OTHER];
  assert_true(gaps <= counted);
  free(colls);
  test_trace_free(&t);
}

static void test_exit_with_callbacks_in_flight_keeps_every_trace_readable(void **state) {
  (void)state;
  char dir[] = "/tmp/topo-exit-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  setenv("TOPO_PROFILER_EVENTS", "coll,channel", 1);
  setenv("TOPO_PROFILER_FLUSH_MS", "5", 1);
  setenv("TOPO_PROFILER_CUPTI", "off", 1);
  setenv("TOPO_PROFILER_RING", "4096", 1); /* what the exit flush drains stays small */
  int bad = 0;
  for (int run = 0; run < RUNS; run++) {
    rel_result r = rel_run_child(job, (void *)(intptr_t)run, 20000);
    char what[64];
    if (r.timed_out || !WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
      print_message("run %d: %s\n", run, rel_describe(&r, what, sizeof what));
      bad++;
    } else {
      char **paths;
      size_t n = test_trace_list(dir, &paths);
      assert_int_equal(n, COMMS);
      for (size_t i = 0; i < n; i++) check_trace(paths[i]);
      test_trace_free_list(paths, n);
    }
    test_trace_rmdir(dir);
    assert_int_equal(mkdir(dir, 0700), 0);
  }
  test_trace_rmdir(dir);
  assert_int_equal(bad, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exit_with_callbacks_in_flight_keeps_every_trace_readable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
