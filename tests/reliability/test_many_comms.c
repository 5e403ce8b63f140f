// SPDX-License-Identifier: Apache-2.0
// Many communicators, each with a little traffic and then quiet: every one of them gets its
// partial block written within TOPO_PROFILER_FLUSH_MS, however many there are, so a process
// killed afterwards leaves every collective readable. (The writer once tracked at most 1024
// partial blocks: with 1500 communicators the rest held only their header.) And many created
// and destroyed one after another while one stays open: the profiler's memory follows the
// communicators open at once, not how many there were.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "host_profiler.h"
#include "rel_child.h"
#include "trace_read.h"

#define COMMS 1500

static int ready_pipe[2];

static void job(void *arg) {
  (void)arg;
  struct rlimit rl;
  REL_CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
  if (rl.rlim_cur < COMMS + 64) {
    rl.rlim_cur = rl.rlim_max < COMMS + 64 ? rl.rlim_max : COMMS + 64;
    REL_CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
  }
  REL_CHECK(rl.rlim_cur >= COMMS + 64);
  static topo_host_profiler p[COMMS];
  REL_CHECK(topo_host_profiler_load(&p[0], TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  for (int c = 0; c < COMMS; c++) {
    p[c] = p[0]; /* one loaded library, COMMS contexts */
    REL_CHECK(topo_host_profiler_init(&p[c], 0x10000 + (uint64_t)c, "many", 1, COMMS, c, NULL) ==
              ncclSuccess);
    REL_CHECK(p[c].ctx != NULL);
  }
  for (int c = 0; c < COMMS; c++) rel_allreduce(&p[c], c, 0); /* all within one flush period */
  char one = 1;
  REL_CHECK(write(ready_pipe[1], &one, 1) == 1);
  for (;;) pause(); /* quiet until killed */
}

/* Communicators of the directory whose trace does not hold its one collective (yet). */
static size_t traces_without_collective(const char *dir) {
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  size_t without = COMMS - (n < COMMS ? n : COMMS);
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    const topo_trace_record **colls = NULL;
    if (test_trace_read(paths[i], &t) != 0 || t.bad_block ||
        test_trace_select(&t, TOPO_REC_COLL, &colls) != 1)
      without++;
    free(colls);
    test_trace_free(&t);
  }
  test_trace_free_list(paths, n);
  return without;
}

static void test_every_communicator_is_flushed_when_idle(void **s) {
  (void)s;
  char dir[] = "/tmp/topo-many-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_CUPTI", "off", 1);
  setenv("TOPO_PROFILER_FLUSH_MS", "100", 1);
  assert_int_equal(pipe(ready_pipe), 0);
  fflush(NULL);
  int64_t started = topo_clock_monotonic_ns();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    job(NULL);
    _exit(0);
  }
  close(ready_pipe[1]);
  char one;
  assert_int_equal(read(ready_pipe[0], &one, 1), 1); /* every communicator has its collective */
  close(ready_pipe[0]);
  /* The files are created and written on the writer thread: give it time for all of them
   * (TOPO_PROFILER_FLUSH_MS is 100), then kill the process. */
  size_t without = COMMS;
  for (int64_t t0 = rel_now_ms(); without && rel_now_ms() - t0 < 30000; rel_sleep_ms(200))
    without = traces_without_collective(dir);
  kill(pid, SIGKILL);
  rel_result r = rel_wait(pid, started, 10000);
  assert_true(WIFSIGNALED(r.status));
  without = traces_without_collective(dir);
  test_trace_rmdir(dir);
  if (without) fail_msg("%zu of %d traces hold no collective", without, COMMS);
}

#define CHURN      1500
#define CHURN_WARM 300

static void churn_job(void *arg) {
  (void)arg;
  topo_host_profiler keep;
  REL_CHECK(topo_host_profiler_load(&keep, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  REL_CHECK(topo_host_profiler_init(&keep, 0x30000, "kept", 1, 2, 0, NULL) == ncclSuccess);
  REL_CHECK(keep.ctx != NULL);
  rel_allreduce(&keep, 0, 0);
  long warm = 0;
  int64_t t0 = rel_now_ms();
  for (int c = 0; c < CHURN; c++) {
    topo_host_profiler p = keep; /* one loaded library */
    REL_CHECK(topo_host_profiler_init(&p, 0x40000 + (uint64_t)c, "churn", 1, 2, 1, NULL) ==
              ncclSuccess);
    REL_CHECK(p.ctx != NULL);
    REL_CHECK(topo_host_profiler_finalize(&p) == ncclSuccess);
    if (c == CHURN_WARM - 1) warm = rel_rss_kb();
  }
  long grown = rel_rss_kb() - warm;
  fprintf(stderr, "%d communicators created and finalized in %lld ms; the last %d: %+ld kB\n",
          CHURN, (long long)(rel_now_ms() - t0), CHURN - CHURN_WARM, grown);
  REL_CHECK(grown < 512); /* ~1.3 kB each if a finalized communicator's context were kept */
  rel_allreduce(&keep, 0, 1);
  REL_CHECK(topo_host_profiler_finalize(&keep) == ncclSuccess);
}

static void test_memory_follows_the_communicators_open_at_once(void **s) {
  (void)s;
  char dir[] = "/tmp/topo-churn-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_CUPTI", "off", 1);
  rel_result r = rel_run_child(churn_job, NULL, 60000);
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  test_trace_free_list(paths, n);
  test_trace_rmdir(dir);
  rel_assert_exited_cleanly(&r);
  assert_int_equal(n, CHURN + 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_communicator_is_flushed_when_idle),
      cmocka_unit_test(test_memory_follows_the_communicators_open_at_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
