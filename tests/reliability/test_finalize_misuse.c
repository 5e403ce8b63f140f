// SPDX-License-Identifier: Apache-2.0
// A host that finalizes one communicator twice, or sends it events after its finalize, harms
// nothing else: the repeated finalize and the late events are ignored, every other live
// communicator keeps recording, and its trace reads back whole (every collective, a footer).
// The same holds across plugin generations: a context and an event handle kept from before the
// last finalize, used again while a later communicator records, change nothing of it.
// Runs in a forked child through the plugin host, so a crash is a failed test, not a lost run.
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

#include "host_profiler.h"
#include "profiler_driver.h"
#include "trace_read.h"

#define OPS     3000
#define OPS_GEN 200

#define CHILD_CHECK(cond)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "child: %s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
      _exit(1);                                                                \
    }                                                                          \
  } while (0)

static drv_op allreduce(int rank, int seq) { return drv_allreduce(rank, (uint64_t)seq, 4096, 2); }

static void ops(topo_host_profiler *p, int rank, int first, int n) {
  for (int i = first; i < first + n; i++) {
    drv_op op = allreduce(rank, i);
    drv_run(p, &op);
  }
}

static void body(void) {
  topo_host_profiler a, b;
  CHILD_CHECK(topo_host_profiler_load(&a, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  CHILD_CHECK(topo_host_profiler_load(&b, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  CHILD_CHECK(topo_host_profiler_init(&a, 0xa11, "misuse-a", 1, 2, 0, topo_host_log) ==
              ncclSuccess);
  CHILD_CHECK(topo_host_profiler_init(&b, 0xb22, "misuse-b", 1, 2, 1, topo_host_log) ==
              ncclSuccess);
  CHILD_CHECK(a.ctx && b.ctx);
  ops(&a, 0, 0, 100);
  ops(&b, 1, 0, OPS / 2);
  /* The host forgets a context at finalize; this host keeps using it, as a buggy one would. */
  void *stale = a.ctx;
  CHILD_CHECK(topo_host_profiler_finalize(&a) == ncclSuccess);
  a.ctx = stale;
  CHILD_CHECK(topo_host_profiler_finalize(&a) == ncclSuccess); /* repeated: ignored */
  a.ctx = stale;
  ops(&a, 0, 100, 100); /* after finalize: dropped */
  CHILD_CHECK(topo_host_profiler_finalize(&a) == ncclSuccess);
  ops(&b, 1, OPS / 2, OPS - OPS / 2);
  stale = b.ctx;
  CHILD_CHECK(topo_host_profiler_finalize(&b) == ncclSuccess);
  b.ctx = stale;
  CHILD_CHECK(topo_host_profiler_finalize(&b) == ncclSuccess); /* after the last: ignored */
  topo_host_profiler_unload(&a);
  topo_host_profiler_unload(&b);
}

/* Every entry point on a context and an event handle that are no longer live: a whole
 * collective started on the context (seq `seq`), a stop and a GPU-time state on the handle. */
static void stale_events(topo_host_profiler *host, void *ctx, void *handle, int seq) {
  void *live = host->ctx;
  host->ctx = ctx;
  drv_op op = allreduce(0, seq);
  drv_run(host, &op);
  host->ctx = live;
  CHILD_CHECK(topo_host_profiler_stop(host, handle) == ncclSuccess);
  CHILD_CHECK(topo_host_profiler_state(host, handle, ncclProfilerKernelChStop, 0, 7) ==
              ncclSuccess);
}

static void finalize_ctx(topo_host_profiler *host, void *ctx) {
  void *live = host->ctx;
  host->ctx = ctx;
  CHILD_CHECK(topo_host_profiler_finalize(host) == ncclSuccess);
  host->ctx = live;
}

static void body_generations(void) {
  topo_host_profiler a, b;
  CHILD_CHECK(topo_host_profiler_load(&a, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  CHILD_CHECK(topo_host_profiler_load(&b, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  CHILD_CHECK(topo_host_profiler_init(&a, 0xa11, "gen-a", 1, 2, 0, topo_host_log) == ncclSuccess);
  CHILD_CHECK(a.ctx != NULL);
  /* A's first collective's handle, kept past its stop as a buggy host would. */
  drv_op first = allreduce(0, 0);
  drv_pending pending;
  drv_issue(&a, &first, &pending);
  drv_complete(&a, &pending);
  void *stale_handle = pending.handle;
  ops(&a, 0, 1, 99);
  void *stale = a.ctx;
  CHILD_CHECK(topo_host_profiler_finalize(&a) == ncclSuccess); /* the last: the generation ends */
  stale_events(&a, stale, stale_handle, 5000);
  finalize_ctx(&a, stale);
  /* A new generation: B's objects and context may sit where A's were. Between the two halves of
   * each of B's collectives (its stop and its kernel channels), the old context and handle are
   * used again, and finalized again halfway. */
  CHILD_CHECK(topo_host_profiler_init(&b, 0xb22, "gen-b", 1, 2, 1, topo_host_log) == ncclSuccess);
  CHILD_CHECK(b.ctx != NULL);
  for (int i = 0; i < OPS_GEN; i++) {
    drv_op op = allreduce(1, i);
    drv_issue(&b, &op, &pending);
    stale_events(&b, stale, stale_handle, 10000 + i);
    if (i == OPS_GEN / 2) finalize_ctx(&b, stale);
    drv_complete(&b, &pending);
  }
  CHILD_CHECK(topo_host_profiler_finalize(&b) == ncclSuccess);
  topo_host_profiler_unload(&a);
  topo_host_profiler_unload(&b);
}

/* Run body in a forked child of a profiler configured for every collective's kernel channels;
 * returns the trace directory's name in dir. */
static void run_child(void (*fn)(void), char *dir) {
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  setenv("TOPO_PROFILER_EVENTS", "coll,kernel", 1);
  setenv("TOPO_PROFILER_RING", "65536", 1);
  setenv("TOPO_PROFILER_CUPTI", "off", 1);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    fn();
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* The directory holds A's trace with its first 100 collectives and B's with `want_b`, each
 * whole: a footer, no bad block, every collective once, in order, with its GPU time, nothing
 * counted as dropped. */
static void check_traces(char *dir, size_t want_b) {
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, 2);
  int seen_a = 0, seen_b = 0;
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    assert_int_equal(test_trace_read(paths[i], &t), 0);
    assert_true(t.has_footer);
    assert_false(t.bad_block);
    for (int k = 0; k < TOPO_DROP_KINDS; k++) assert_int_equal(t.footer.dropped[k], 0);
    const topo_trace_record **colls;
    size_t nc = test_trace_select(&t, TOPO_REC_COLL, &colls);
    if (t.header.comm_hash == 0xa11) seen_a++;
    if (t.header.comm_hash == 0xb22) seen_b++;
    assert_int_equal(nc, t.header.comm_hash == 0xa11 ? 100 : want_b);
    for (size_t j = 0; j < nc; j++) {
      assert_int_equal(colls[j]->coll.seq, j);
      assert_true(colls[j]->coll.flags & TOPO_COLL_F_GPU_TIMED);
    }
    free(colls);
    test_trace_free(&t);
  }
  assert_int_equal(seen_a, 1);
  assert_int_equal(seen_b, 1);
  test_trace_free_list(paths, n);
  test_trace_rmdir(dir);
}

/* A holds only what came before its finalize; B every collective. */
static void test_finalize_twice_leaves_other_communicators_whole(void **state) {
  (void)state;
  char dir[] = "/tmp/topo-misuse-XXXXXX";
  run_child(body, dir);
  check_traces(dir, OPS);
}

/* No event of the earlier generation reached the later one. */
static void test_events_of_an_earlier_generation_touch_nothing_later(void **state) {
  (void)state;
  char dir[] = "/tmp/topo-stalegen-XXXXXX";
  run_child(body_generations, dir);
  check_traces(dir, OPS_GEN);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_finalize_twice_leaves_other_communicators_whole),
      cmocka_unit_test(test_events_of_an_earlier_generation_touch_nothing_later),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
