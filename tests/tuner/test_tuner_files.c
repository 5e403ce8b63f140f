// SPDX-License-Identifier: Apache-2.0
// The tuner's input files on a hostile host: a FIFO (or any non-regular file) as the profile or
// rule file returns at once with the built-in defaults, a file of garbage costs a few warnings and
// one summary line, and a profile's terms load in linear time whatever their order.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "alloc.h"
#include "profile.h"
#include "tuner_test_util.h"

static const char *so = TOPO_TEST_TUNER_SO;
static char dir[] = "/tmp/topo-tuner-files-XXXXXX";

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int setup(void **state) {
  (void)state;
  unsetenv("TOPO_TUNER_PROFILE");
  unsetenv("TOPO_TUNER_RULES");
  unsetenv("TOPO_TUNER_FORCE");
  setenv("TOPO_TUNER_GPU", "H200", 1);
  topo_host_log_reset();
  return 0;
}

/* Init and finalize one communicator through the host; 0 when init succeeded and warned once
 * about `needle`. */
static int init_once(const char *needle) {
  topo_host_tuner t;
  if (topo_host_tuner_load(&t, so, TOPO_NCCL_2_28) != TOPO_OK) return 1;
  if (topo_host_tuner_init(&t, 0x77, 2, 1, topo_host_log, NULL, NULL) != ncclSuccess) return 2;
  if (topo_host_tuner_finalize(&t) != ncclSuccess) return 3;
  topo_host_tuner_unload(&t);
  if (!topo_host_log_contains(needle)) return 4;
  return topo_host_log_count(NCCL_LOG_WARN) == 1 ? 0 : 5;
}

/* Init in a child with `var` naming a FIFO nobody writes: it must end, not wait for a writer.
 * Opening the FIFO would block forever; 20 s tells that from a loaded machine (init takes ms). */
static void fifo_returns_at_once(const char *var) {
  char fifo[128];
  snprintf(fifo, sizeof fifo, "%s/%s.fifo", dir, var);
  unlink(fifo);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  setenv(var, fifo, 1);
  double t0 = now_s();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(init_once("not a regular file"));
  int status = 0, done = 0;
  while (now_s() - t0 < 20.0)
    if (waitpid(pid, &status, WNOHANG) == pid) {
      done = 1;
      break;
    } else usleep(2000);
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  unlink(fifo);
  unsetenv(var);
  assert_true(done);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_fifo_profile_returns_at_once(void **state) {
  (void)state;
  fifo_returns_at_once("TOPO_TUNER_PROFILE");
}

static void test_fifo_rules_return_at_once(void **state) {
  (void)state;
  fifo_returns_at_once("TOPO_TUNER_RULES");
}

/* `lines` lines of garbage in a file under dir, after `head` (may be ""). */
static void write_garbage(const char *path, const char *head, int lines) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(head, f);
  for (int i = 0; i < lines; i++) fprintf(f, "garbage %d =,=, x\n", i);
  assert_int_equal(fclose(f), 0);
}

/* The plugin loaded and initialised with `var` set to `path`, the log captured. */
static void init_with(const char *var, const char *path) {
  setenv(var, path, 1);
  topo_host_tuner t;
  assert_int_equal(topo_host_tuner_load(&t, so, TOPO_NCCL_2_28), TOPO_OK);
  assert_int_equal(topo_host_tuner_init(&t, 0x78, 2, 1, topo_host_log, NULL, NULL), ncclSuccess);
  assert_int_equal(topo_host_tuner_finalize(&t), ncclSuccess);
  topo_host_tuner_unload(&t);
  unsetenv(var);
}

static void garbage_warns_a_few_times(const char *var, const char *head, int max_warnings) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s.garbage", dir, var);
  write_garbage(path, head, 200000);
  init_with(var, path);
  unlink(path);
  int warnings = topo_host_log_count(NCCL_LOG_WARN);
  assert_true(warnings >= 2);
  assert_true(warnings <= max_warnings);
  char msg[512];
  assert_true(topo_host_log_last("more bad lines in", msg, sizeof msg));
  char want[160];
  snprintf(want, sizeof want, "%d more bad lines in %s", 200000 - 32, path);
  assert_non_null(strstr(msg, want));
}

static void test_garbage_profile_warns_a_few_times(void **state) {
  (void)state;
  /* 32 lines, the summary, no matching section. */
  garbage_warns_a_few_times("TOPO_TUNER_PROFILE", "topo-profile 1\n", 34);
}

/* Another program's file (binary bytes included) is no profile: one warning, which quotes none of
 * its bytes raw, and the built-in defaults. */
static void test_file_that_is_no_profile_is_one_warning(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/passwd", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("root:x:0:0:root:/root:/bin/bash\n\x1b[31mdaemon\x9b:x:1:1\n", f);
  assert_int_equal(fclose(f), 0);
  topo_host_log_reset();
  init_with("TOPO_TUNER_PROFILE", path);
  unlink(path);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  char msg[512];
  assert_true(topo_host_log_last("not a topo profile", msg, sizeof msg));
  assert_non_null(strstr(msg, path));
  for (const char *c = msg; *c; c++) assert_true((unsigned char)*c >= 0x20 && *c != 0x7f);
}

static void test_garbage_rules_warn_a_few_times(void **state) {
  (void)state;
  garbage_warns_a_few_times("TOPO_TUNER_RULES", "", 34);
}

/* CPU seconds this process has used (user + system): what a loaded machine does not inflate. */
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* n terms of one key in descending byte ranges, parsed (best CPU time of 3): sorted on read. */
static double parse_descending(int n) {
  size_t cap = (size_t)n * 120 + 4096, len = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  len += (size_t)snprintf(text + len, cap - len,
                          "topo-profile 1\nsection gpu=H200 nranks=* nnodes=* nccl=*\n");
  for (int i = n - 1; i >= 0; i--)
    len += (size_t)snprintf(text + len, cap - len,
                            "term allreduce ring simple channels=4 lat_us=5 bw_gbs=100 "
                            "min_bytes=%d max_bytes=%d\n",
                            i * 16, i * 16 + 15);
  topo_profile_key want = {.gpu = "H200", .nranks = 2, .nnodes = 1};
  double best = 1e9;
  for (int run = 0; run < 3; run++) {
    topo_profile p;
    int nbad = -1;
    double t0 = cpu_s();
    assert_int_equal(topo_profile_parse(text, len, "descending", &want, &p, &nbad), TOPO_OK);
    double dt = cpu_s() - t0;
    if (dt < best) best = dt;
    assert_int_equal(nbad, 0);
    assert_int_equal(p.nterms, n);
    for (int i = 0; i < n; i++) assert_int_equal(p.terms[i].min_bytes, (uint64_t)i * 16);
    assert_non_null(topo_profile_find_term_at(&p, ncclFuncAllReduce, NCCL_ALGO_RING,
                                              NCCL_PROTO_SIMPLE, 4, 16 * (n / 2) + 7));
    topo_profile_free(&p);
  }
  free(text);
  return best;
}

/* 65,536 terms of one key in descending byte ranges cost about 16 times 4,096 of them (an
 * insertion per term made it 256 times: 3.7 s), in CPU time, which busy neighbours do not
 * inflate: at most 64 times, with the clock's granularity allowed for. */
static void test_descending_terms_load_linearly(void **state) {
  (void)state;
  double small = parse_descending(4096), large = parse_descending(65536);
  print_message("descending terms: 4096 in %.4f s, 65536 in %.4f s of CPU\n", small, large);
  assert_true(large <= 64 * small + 0.05);
}

int main(void) {
  if (!mkdtemp(dir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_fifo_profile_returns_at_once, setup),
      cmocka_unit_test_setup(test_fifo_rules_return_at_once, setup),
      cmocka_unit_test_setup(test_garbage_profile_warns_a_few_times, setup),
      cmocka_unit_test_setup(test_file_that_is_no_profile_is_one_warning, setup),
      cmocka_unit_test_setup(test_garbage_rules_warn_a_few_times, setup),
      cmocka_unit_test_setup(test_descending_terms_load_linearly, setup),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rmdir(dir);
  return rc;
}
