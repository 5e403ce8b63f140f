// SPDX-License-Identifier: Apache-2.0
// The trace directory fails the profiler: missing (and not creatable), unwritable (the run drops
// to an unprivileged user when it is root, for whom mode bits do not bind), or out of space
// (RLIMIT_FSIZE with SIGXFSZ ignored, so writes fail with EFBIG as on a full disk). Each case runs
// a job of several communicators in a forked child through the plugin host: every call answers
// ncclSuccess, exactly one warning names the problem and says the records are counted as
// dropped, the child exits normally. Out of space: the file reads back up to its last complete
// block, and its last STATS record accounts for every record before it. (A directory path that
// is a file: tests/profiler test_unwritable_directory_warns_once_and_counts.)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_profiler.h"
#include "profiler_driver.h"
#include "trace_read.h"

#define COMMS 3
#define OPS   5000 /* about five blocks of collective records per communicator */

#define CHILD_CHECK(cond)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "child: %s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
      _exit(1);                                                                \
    }                                                                          \
  } while (0)

/* The job: COMMS communicators, OPS collectives each, finalize, unload. Returns nothing; exits
 * the child with 1 on any failed check. `warning` must appear in the single warning.
 * `after_load` (may be NULL) runs once the plugins are loaded, before the first init. */
static void job(const char *warning, void (*after_load)(void)) {
  topo_host_profiler p[COMMS];
  topo_host_log_reset();
  for (int c = 0; c < COMMS; c++)
    CHILD_CHECK(topo_host_profiler_load(&p[c], TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  if (after_load) after_load();
  for (int c = 0; c < COMMS; c++) {
    CHILD_CHECK(topo_host_profiler_init(&p[c], 0xd1e0 + (uint64_t)c, "faults", 1, COMMS, c,
                                        topo_host_log) == ncclSuccess);
    CHILD_CHECK(p[c].ctx != NULL); /* profiling stays on: records are counted as dropped */
  }
  for (int i = 0; i < OPS; i++)
    for (int c = 0; c < COMMS; c++) {
      drv_op op = drv_allreduce(c, (uint64_t)i, 4096, 2);
      drv_run(&p[c], &op);
    }
  for (int c = 0; c < COMMS; c++) {
    CHILD_CHECK(topo_host_profiler_finalize(&p[c]) == ncclSuccess);
    topo_host_profiler_unload(&p[c]);
  }
  if (topo_host_log_count(NCCL_LOG_WARN) != 1 || !topo_host_log_contains(warning) ||
      !topo_host_log_contains("counted as dropped")) {
    fprintf(stderr, "child: %d warnings, expected one about '%s'\n",
            topo_host_log_count(NCCL_LOG_WARN), warning);
    _exit(1);
  }
}

static void run_child(void (*body)(const char *), const char *arg) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    topo_host_log_echo(1);
    body(arg);
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status)); /* not killed (SIGXFSZ, SIGSEGV ...) */
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void env_for(const char *dir) {
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  setenv("TOPO_PROFILER_EVENTS", "coll,kernel", 1);
  setenv("TOPO_PROFILER_RING", "65536", 1);
}

static void missing_body(const char *dir) {
  env_for(dir);
  job(dir, NULL);
}

static void test_missing_directory_warns_once_and_the_job_runs(void **state) {
  (void)state;
  char base[] = "/tmp/topo-missing-XXXXXX";
  assert_non_null(mkdtemp(base));
  char dir[256];
  snprintf(dir, sizeof dir, "%s/no/such/parent", base);
  run_child(missing_body, dir);
  struct stat st;
  char parent[256];
  snprintf(parent, sizeof parent, "%s/no", base);
  assert_int_equal(stat(parent, &st), -1); /* nothing created on the way */
  assert_int_equal(rmdir(base), 0);        /* and nothing else in the base either */
}

static const char *unwritable_dir;

/* Root ignores mode bits: become `nobody` (after the plugins are loaded, so the build tree's
 * permissions do not matter), then the directory must really be unwritable. */
static void drop_privileges(void) {
  if (geteuid() == 0) {
    struct passwd *nobody = getpwnam("nobody");
    uid_t uid = nobody ? nobody->pw_uid : 65534;
    gid_t gid = nobody ? nobody->pw_gid : 65534;
    CHILD_CHECK(setgid(gid) == 0);
    CHILD_CHECK(setuid(uid) == 0);
  }
  CHILD_CHECK(access(unwritable_dir, W_OK) != 0 && errno == EACCES);
}

static void unwritable_body(const char *dir) {
  unwritable_dir = dir;
  env_for(dir);
  job(dir, drop_privileges);
}

static void test_unwritable_directory_warns_once_and_the_job_runs(void **state) {
  (void)state;
  char dir[] = "/tmp/topo-readonly-XXXXXX";
  assert_non_null(mkdtemp(dir));
  assert_int_equal(chmod(dir, 0555), 0);
  run_child(unwritable_body, dir);
  assert_int_equal(rmdir(dir), 0); /* still empty */
}

/* Header + two whole blocks + half of the third. */
#define FSIZE_LIMIT (512 + 2 * (16 + 1024 * 64) + 32768)

static void full_body(const char *dir) {
  CHILD_CHECK(signal(SIGXFSZ, SIG_IGN) != SIG_ERR);
  struct rlimit rl = {FSIZE_LIMIT, FSIZE_LIMIT};
  CHILD_CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
  env_for(dir);
  /* blocks written only when full: a partial block written on time (a loaded machine makes the
   * job outlast the default 100 ms) would change how many whole blocks fit below the limit */
  setenv("TOPO_PROFILER_FLUSH_MS", "60000", 1);
  job("File too large", NULL);
}

static void test_full_disk_warns_once_and_keeps_the_complete_blocks(void **state) {
  (void)state;
  char dir[] = "/tmp/topo-full-XXXXXX";
  assert_non_null(mkdtemp(dir));
  run_child(full_body, dir);
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, COMMS);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    assert_int_equal(stat(paths[i], &st), 0);
    assert_true(st.st_size <= FSIZE_LIMIT);
    test_trace t;
    assert_int_equal(test_trace_read(paths[i], &t), 0);
    assert_false(t.has_footer);    /* no room left for it */
    assert_int_equal(t.blocks, 2); /* the two complete blocks, the torn third ignored */
    const topo_trace_record **stats;
    size_t ns = test_trace_select(&t, TOPO_REC_STATS, &stats);
    assert_int_equal(ns, 2);
    /* the last STATS record counts every record written before it */
    assert_int_equal(stats[1]->stats.records, t.count - 1);
    free(stats);
    const topo_trace_record **colls;
    size_t nc = test_trace_select(&t, TOPO_REC_COLL, &colls);
    for (size_t j = 0; j < nc; j++) assert_int_equal(colls[j]->coll.seq, j); /* a clean prefix */
    free(colls);
    test_trace_free(&t);
  }
  test_trace_free_list(paths, n);
  test_trace_rmdir(dir);
}

/* A directory path longer than the writer can hold, or a trace directory that is a symbolic
 * link: one warning naming it, no trace anywhere (not in a truncated path, not through the link),
 * every call answers ncclSuccess. */
static void no_trace_job(const char *warning) {
  topo_host_profiler p[COMMS];
  topo_host_log_reset();
  for (int c = 0; c < COMMS; c++) {
    CHILD_CHECK(topo_host_profiler_load(&p[c], TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
    CHILD_CHECK(topo_host_profiler_init(&p[c], 0xd1e0 + (uint64_t)c, "faults", 1, COMMS, c,
                                        topo_host_log) == ncclSuccess);
  }
  for (int c = 0; c < COMMS; c++) {
    drv_op op = drv_allreduce(c, 0, 4096, 2);
    drv_run(&p[c], &op);
  }
  for (int c = 0; c < COMMS; c++) {
    CHILD_CHECK(topo_host_profiler_finalize(&p[c]) == ncclSuccess);
    topo_host_profiler_unload(&p[c]);
  }
  if (topo_host_log_count(NCCL_LOG_WARN) != 1 || !topo_host_log_contains(warning)) {
    fprintf(stderr, "child: %d warnings, expected one naming '%s'\n",
            topo_host_log_count(NCCL_LOG_WARN), warning);
    _exit(1);
  }
}

static void no_trace_body(const char *dir) {
  env_for(dir);
  no_trace_job(dir);
}

static void test_too_long_directory_is_rejected_not_truncated(void **state) {
  (void)state;
  char base[] = "/tmp/topo-long-XXXXXX";
  assert_non_null(mkdtemp(base));
  /* base/aaaa.../trace-dir whose first 255 bytes name base/aaaa..., an existing directory, so
   * a truncating writer would put its traces there. */
  char mid[512], dir[600];
  int n = snprintf(mid, sizeof mid, "%s/", base);
  memset(mid + n, 'a', (size_t)(255 - n));
  mid[255] = 0;
  assert_int_equal(mkdir(mid, 0750), 0);
  snprintf(dir, sizeof dir, "%s/trace-dir", mid);
  assert_true(strlen(dir) > 255);
  run_child(no_trace_body, dir);
  char **paths;
  assert_int_equal(test_trace_list(mid, &paths), 0);
  test_trace_free_list(paths, 0);
  struct stat st;
  assert_int_equal(stat(dir, &st), -1);
  assert_int_equal(rmdir(mid), 0); /* empty: nothing written under a truncated name */
  assert_int_equal(rmdir(base), 0);
}

static void test_symlinked_directory_is_not_followed(void **state) {
  (void)state;
  char base[] = "/tmp/topo-dirlink-XXXXXX";
  assert_non_null(mkdtemp(base));
  char target[300], link_path[300];
  snprintf(target, sizeof target, "%s/elsewhere", base);
  snprintf(link_path, sizeof link_path, "%s/traces", base);
  assert_int_equal(mkdir(target, 0750), 0);
  assert_int_equal(symlink(target, link_path), 0);
  run_child(no_trace_body, link_path);
  assert_int_equal(rmdir(target), 0); /* still empty */
  assert_int_equal(unlink(link_path), 0);
  assert_int_equal(rmdir(base), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_missing_directory_warns_once_and_the_job_runs),
      cmocka_unit_test(test_unwritable_directory_warns_once_and_the_job_runs),
      cmocka_unit_test(test_full_disk_warns_once_and_keeps_the_complete_blocks),
      cmocka_unit_test(test_too_long_directory_is_rejected_not_truncated),
      cmocka_unit_test(test_symlinked_directory_is_not_followed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
