// SPDX-License-Identifier: Apache-2.0
// The first communicator's init makes the process at most 1 MB bigger until the communicator has
// traffic (it used to add ~16 MB: event pools and the writer's ring written in full at init);
// with traffic the profiler grows with what is in flight, never beyond its configured sizes.
// In the default CUPTI mode CUPTI's library (2.4 MB resident on a GPU host) is not loaded before
// the first collective of >= 1 MiB, or one TOPO_PROFILER_CUPTI_PERIOD_S after init in a job of
// small collectives only (here the fake CUPTI of tools/demo stands in for it).
// Each measurement is a fresh process: only the first init of a process starts the profiler.
// (Init time is a speed target: bench/profiler_init_bench prints it against a baseline.)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
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

#ifdef TOPO_TEST_FAKE_CUPTI
/* Whether the fake CUPTI library is mapped into this process. */
static int cupti_mapped(void) {
  char want[PATH_MAX], line[PATH_MAX + 256];
  if (!realpath(TOPO_TEST_FAKE_CUPTI, want)) return -1;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    const char *path = strchr(line, '/');
    found = path && strcmp(path, want) == 0;
  }
  fclose(f);
  return found;
}

/* Polls for the library for at most `ms`: the start is the writer thread's. */
static int cupti_mapped_within(int ms) {
  for (int waited = 0; waited <= ms; waited += 5) {
    if (cupti_mapped() == 1) return 1;
    rel_sleep_ms(5);
  }
  return 0;
}

static void cupti_job(void *arg) {
  (void)arg;
  topo_host_profiler p;
  REL_CHECK(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  REL_CHECK(cupti_mapped() == 0);
  long before = rel_rss_kb();
  REL_CHECK(topo_host_profiler_init(&p, 0xf008, "footprint", 1, 2, 0, NULL) == ncclSuccess);
  REL_CHECK(p.ctx != NULL);
  rel_sleep_ms(100); /* time enough for a writer that would load CUPTI at once */
  long grown = rel_rss_kb() - before;
  fprintf(stderr, "first init, default CUPTI mode: +%ld kB resident\n", grown);
  REL_CHECK(grown <= 1024);
  REL_CHECK(cupti_mapped() == 0);
  for (uint64_t i = 0; i < 100; i++) rel_allreduce(&p, 0, i); /* 16 KiB each */
  rel_sleep_ms(50);
  REL_CHECK(cupti_mapped() == 0);
  rel_allreduce_of(&p, 0, 100, 1u << 20); /* 4 MiB */
  REL_CHECK(cupti_mapped_within(2000));
  REL_CHECK(topo_host_profiler_finalize(&p) == ncclSuccess);
}

/* The -cupti trace of `dir` (read into *cupti) and the other one (into *comm); the number of
 * span records of the former (its first in *first), -1 when there is no -cupti trace. */
static int read_dir(const char *dir, test_trace *cupti, test_trace *comm,
                    const topo_rec_cupti **first) {
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, 2);
  int spans = -1;
  for (size_t i = 0; i < n; i++) {
    int is_cupti = strstr(strrchr(paths[i], '/'), "-cupti") != NULL;
    assert_int_equal(test_trace_read(paths[i], is_cupti ? cupti : comm), 0);
    if (!is_cupti) continue;
    const topo_trace_record **r;
    spans = (int)test_trace_select(cupti, TOPO_REC_CUPTI, &r);
    *first = spans ? &r[0]->cupti : NULL;
    free(r);
  }
  test_trace_free_list(paths, n);
  return spans;
}

static void test_default_cupti_mode_loads_nothing_until_the_first_large_collective(void **s) {
  (void)s;
  char dir[] = "/tmp/topo-footprint-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  unsetenv("TOPO_PROFILER_CUPTI"); /* the default: window */
  unsetenv("TOPO_PROFILER_CUPTI_PERIOD_S");
  setenv("TOPO_PROFILER_CUPTI_LIB", TOPO_TEST_FAKE_CUPTI, 1);
  rel_result r = rel_run_child(cupti_job, NULL, 30000);
  rel_assert_exited_cleanly(&r);
  /* CUPTI loaded at the large collective, its -cupti trace written; no window yet: it waits
   * for the job's step (or 10 s without one) */
  test_trace c, comm;
  const topo_rec_cupti *first;
  assert_int_equal(read_dir(dir, &c, &comm, &first), 0);
  test_trace_free(&c);
  test_trace_free(&comm);
  test_trace_rmdir(dir);
}

static void small_job(void *arg) {
  (void)arg;
  topo_host_profiler p;
  REL_CHECK(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  int64_t t0 = rel_now_ms();
  REL_CHECK(topo_host_profiler_init(&p, 0xf009, "footprint", 1, 2, 0, NULL) == ncclSuccess);
  uint64_t seq = 0;
  while (rel_now_ms() - t0 < 700) rel_allreduce(&p, 0, seq++), rel_sleep_ms(5);
  int mapped = cupti_mapped();
  /* The period is 1 s. A look that a stalled machine pushed past it proves nothing here; the
   * parent's check of the window's start still holds. */
  if (rel_now_ms() - t0 < 950) REL_CHECK(mapped == 0);
  REL_CHECK(cupti_mapped_within(2000));
  /* no step in an even stream of one operation: the window opens a period after the load */
  while (rel_now_ms() - t0 < 3600) rel_allreduce(&p, 0, seq++), rel_sleep_ms(5);
  REL_CHECK(topo_host_profiler_finalize(&p) == ncclSuccess);
}

static void test_small_collectives_only_get_a_window_one_period_after_init(void **s) {
  (void)s;
  char dir[] = "/tmp/topo-footprint-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  unsetenv("TOPO_PROFILER_CUPTI");
  setenv("TOPO_PROFILER_CUPTI_PERIOD_S", "1", 1);
  setenv("TOPO_PROFILER_CUPTI_WINDOW_MS", "200", 1);
  setenv("TOPO_PROFILER_CUPTI_LIB", TOPO_TEST_FAKE_CUPTI, 1);
  int64_t forked_ms = rel_now_ms(); /* before the child's init */
  rel_result r = rel_run_child(small_job, NULL, 30000);
  unsetenv("TOPO_PROFILER_CUPTI_PERIOD_S");
  unsetenv("TOPO_PROFILER_CUPTI_WINDOW_MS");
  rel_assert_exited_cleanly(&r);
  test_trace c, comm;
  const topo_rec_cupti *first;
  assert_true(read_dir(dir, &c, &comm, &first) >= 1); /* the next one a period later */
  assert_int_equal(first->state, TOPO_CUPTI_RECORDED);
  /* CUPTI loaded one period after init, never before; the window (no step) one period after
   * that, within a second and a half (a loaded machine's writer may wake late). A loaded
   * machine also makes the even stream uneven (5 ms sleeps that last 50): the step learner may
   * then find a step in it and open the window at its first boundary after CUPTI loaded, so the
   * window's start is held to one period after init, not two. */
  int64_t after_ms = first->cpu_start_ns / 1000000 - forked_ms;
  if (after_ms < 1000 || after_ms > 3500)
    fail_msg("the window opened %lld ms after the fork that preceded init", (long long)after_ms);
  int64_t len = first->cpu_stop_ns - first->cpu_start_ns;
  if (len < 200000000LL || len > 1200000000LL)
    fail_msg("the window lasted %lld ns", (long long)len);
  test_trace_free(&c);
  test_trace_free(&comm);
  test_trace_rmdir(dir);
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_init_stays_under_a_megabyte_until_traffic),
#ifdef TOPO_TEST_FAKE_CUPTI
      cmocka_unit_test(test_default_cupti_mode_loads_nothing_until_the_first_large_collective),
      cmocka_unit_test(test_small_collectives_only_get_a_window_one_period_after_init),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
