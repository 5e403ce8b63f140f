// SPDX-License-Identifier: Apache-2.0
// Many communicators, each with a little traffic and then quiet: every one of them gets its
// partial block written within TOPO_PROFILER_FLUSH_MS, however many there are, so a process
// killed afterwards leaves every collective readable. (The writer once tracked at most 1024
// partial blocks: with 1500 communicators the rest held only their header.)
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_communicator_is_flushed_when_idle),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
