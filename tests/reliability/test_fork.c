// SPDX-License-Identifier: Apache-2.0
// fork() after the profiler started: the child stays silent. Whatever it does - exit() with the
// parent's communicators open, finalize an inherited communicator, init one of its own, send
// events on an inherited context - it returns at once, writes nothing (no footer through an
// inherited descriptor, no file of its own) and waits for no thread (it has no writer thread).
// The parent's trace reads back whole: every collective before and after the fork, one footer.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "host_profiler.h"
#include "rel_child.h"
#include "trace_read.h"

enum child_does { CHILD_EXITS, CHILD_FINALIZES, CHILD_PROFILES };

#define BEFORE 100
#define AFTER  100

static void job(void *arg) {
  enum child_does what = (enum child_does)(intptr_t)arg;
  topo_host_profiler p;
  REL_CHECK(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  REL_CHECK(topo_host_profiler_init(&p, 0xf0, "fork", 1, 2, 0, NULL) == ncclSuccess);
  REL_CHECK(p.ctx != NULL);
  for (uint64_t i = 0; i < BEFORE; i++) rel_allreduce(&p, 0, i);
  fflush(NULL);
  int64_t forked = topo_clock_monotonic_ns();
  pid_t child = fork();
  REL_CHECK(child >= 0);
  if (child == 0) {
    rel_forked_child();
    if (what == CHILD_FINALIZES) REL_CHECK(topo_host_profiler_finalize(&p) == ncclSuccess);
    if (what == CHILD_PROFILES) {
      topo_host_profiler q;
      REL_CHECK(topo_host_profiler_load(&q, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
      REL_CHECK(topo_host_profiler_init(&q, 0xf1, "child", 1, 1, 0, NULL) == ncclSuccess);
      REL_CHECK(q.ctx == NULL); /* the child does not profile */
      for (uint64_t i = 0; i < 50; i++) rel_allreduce(&p, 0, 1000 + i);
      REL_CHECK(topo_host_profiler_finalize(&p) == ncclSuccess);
    }
    exit(0); /* destructors and all */
  }
  rel_result r = rel_wait(child, forked, 10000);
  REL_CHECK(!r.timed_out);
  REL_CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
  for (uint64_t i = BEFORE; i < BEFORE + AFTER; i++) rel_allreduce(&p, 0, i);
  REL_CHECK(topo_host_profiler_finalize(&p) == ncclSuccess);
  topo_host_profiler_unload(&p);
}

static void run(enum child_does what) {
  char dir[] = "/tmp/topo-fork-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  setenv("TOPO_PROFILER_EVENTS", "coll,kernel", 1);
  setenv("TOPO_PROFILER_CUPTI", "off", 1);
  rel_result r = rel_run_child(job, (void *)(intptr_t)what, 20000);
  rel_assert_exited_cleanly(&r);
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, 1); /* the parent's; none of the child's */
  test_trace t;
  assert_int_equal(test_trace_read(paths[0], &t), 0);
  assert_false(t.bad_block);
  assert_true(t.has_footer);
  assert_int_equal(t.footer.records, t.count);
  assert_int_equal(t.footer.blocks, t.blocks);
  const topo_trace_record **colls;
  size_t nc = test_trace_select(&t, TOPO_REC_COLL, &colls);
  assert_int_equal(nc, BEFORE + AFTER);
  for (size_t i = 0; i < nc; i++) assert_int_equal(colls[i]->coll.seq, i);
  free(colls);
  test_trace_free(&t);
  test_trace_free_list(paths, n);
  test_trace_rmdir(dir);
}

static void test_child_exiting_leaves_the_parents_trace_whole(void **s) {
  (void)s;
  run(CHILD_EXITS);
}

static void test_child_finalizing_returns_and_writes_nothing(void **s) {
  (void)s;
  run(CHILD_FINALIZES);
}

static void test_child_profiles_nothing_of_its_own(void **s) {
  (void)s;
  run(CHILD_PROFILES);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_child_exiting_leaves_the_parents_trace_whole),
      cmocka_unit_test(test_child_finalizing_returns_and_writes_nothing),
      cmocka_unit_test(test_child_profiles_nothing_of_its_own),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
