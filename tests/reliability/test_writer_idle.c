// SPDX-License-Identifier: Apache-2.0
// The trace writer sleeps when there is nothing to do: over a second with no traffic its thread
// wakes only a few times (it used to poll every millisecond for the life of the job), and a
// collective that comes after such a quiet spell still reaches the file within
// TOPO_PROFILER_FLUSH_MS (plus scheduling slack).
#define _GNU_SOURCE 1 /* gettid */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_profiler.h"
#include "rel_child.h"
#include "trace_read.h"

/* Voluntary context switches of every thread of this process but the calling one (the test runs
 * alone: the others are the plugin's). */
static long other_threads_wakeups(void) {
  DIR *d = opendir("/proc/self/task");
  assert_non_null(d);
  long total = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == (int)gettid()) continue;
    char path[300], line[128];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    while (fgets(line, sizeof line, f))
      if (!strncmp(line, "voluntary_ctxt_switches:", 24)) total += atol(line + 24);
    fclose(f);
  }
  closedir(d);
  return total;
}

static size_t collectives_on_disk(const char *dir) {
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  size_t colls = 0;
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    if (test_trace_read(paths[i], &t) == 0) {
      const topo_trace_record **c;
      colls += test_trace_select(&t, TOPO_REC_COLL, &c);
      free(c);
    }
    test_trace_free(&t);
  }
  test_trace_free_list(paths, n);
  return colls;
}

static void test_idle_writer_sleeps_and_still_flushes_in_time(void **s) {
  (void)s;
  char dir[] = "/tmp/topo-idle-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_CUPTI", "off", 1);
  setenv("TOPO_PROFILER_FLUSH_MS", "100", 1);
  topo_host_profiler p;
  assert_int_equal(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28), TOPO_OK);
  assert_int_equal(topo_host_profiler_init(&p, 0x1d1e, "idle", 1, 2, 0, NULL), ncclSuccess);
  for (uint64_t i = 0; i < 10; i++) rel_allreduce(&p, 0, i);
  rel_sleep_ms(300); /* written, then nothing to do */
  long before = other_threads_wakeups();
  rel_sleep_ms(1000);
  long wakeups = other_threads_wakeups() - before;
  print_message("writer wake-ups in 1 s without traffic: %ld\n", wakeups);
  assert_true(wakeups <= 5);

  assert_int_equal(collectives_on_disk(dir), 10);
  int64_t issued = rel_now_ms();
  rel_allreduce(&p, 0, 10);
  while (collectives_on_disk(dir) < 11 && rel_now_ms() - issued < 5000) rel_sleep_ms(2);
  int64_t took = rel_now_ms() - issued;
  print_message("a collective after the quiet second reached the file in %lld ms\n",
                (long long)took);
  assert_int_equal(collectives_on_disk(dir), 11);
  assert_true(took <= 100 + 400);
  assert_int_equal(topo_host_profiler_finalize(&p), ncclSuccess);
  topo_host_profiler_unload(&p);
  test_trace_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idle_writer_sleeps_and_still_flushes_in_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
