// SPDX-License-Identifier: Apache-2.0
// Security of the trace files libtopo-profiler.so creates, through the plugin host:
// - a link (or any file) already at a trace's path is never followed or truncated (O_EXCL |
//   O_NOFOLLOW): the victim outside the directory keeps its bytes, the trace goes to a fresh name;
// - trace files are created 0640 (umask 022: nothing is widened);
// - communicator names full of conversions and path syntax ("../../%s%n%x/..") never reach a
//   path or a format: every file written is TOPO_PROFILER_DIR/topo-<host>-<pid>-<hash>-r<rank>.trace,
//   nothing appears outside it, the name is stored verbatim in the header, and topo-report
//   reads the directory, whose own name holds conversions, and prints its path literally.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_profiler.h"
#include "profiler_driver.h"
#include "trace_read.h"

#define EVIL "../../%s%n%x%n/../.."

static void one_collective(topo_host_profiler *p, int rank) {
  drv_op op;
  memset(&op, 0, sizeof op);
  op.func = "AllReduce";
  op.dtype = "ncclFloat32";
  op.algo = "RING";
  op.proto = "LL";
  op.count = 64;
  op.nch = 1;
  op.peer = -1;
  op.rank = rank;
  drv_set_gpu(&op, 1000, 0, 10);
  drv_run(p, &op);
}

static void host_name(char *host, size_t len) {
  snprintf(host, len, "unknown");
  gethostname(host, len - 1);
  host[len - 1] = 0;
  for (char *q = host; *q; q++)
    if (*q == '/') *q = '_';
}

static size_t count_entries(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void test_existing_link_or_file_at_the_trace_path_is_never_followed(void **state) {
  (void)state;
  char base[] = "/tmp/topo-link-XXXXXX";
  assert_non_null(mkdtemp(base));
  char dir[300], victim[300], link_path[600], file_path[600], host[64];
  snprintf(dir, sizeof dir, "%s/traces", base);
  snprintf(victim, sizeof victim, "%s/victim", base);
  assert_int_equal(mkdir(dir, 0750), 0);
  FILE *f = fopen(victim, "w");
  assert_non_null(f);
  fputs("precious\n", f);
  fclose(f);
  host_name(host, sizeof host);
  /* The exact paths ranks 0 and 1 will choose: a link to the victim, and a plain file. */
  snprintf(link_path, sizeof link_path, "%s/topo-%s-%u-%016llx-r0.trace", dir, host,
           (unsigned)getpid(), 0xabcull);
  snprintf(file_path, sizeof file_path, "%s/topo-%s-%u-%016llx-r1.trace", dir, host,
           (unsigned)getpid(), 0xabcull);
  assert_int_equal(symlink(victim, link_path), 0);
  f = fopen(file_path, "w");
  assert_non_null(f);
  fputs("someone else's\n", f);
  fclose(f);

  setenv("TOPO_PROFILER_DIR", dir, 1);
  mode_t old = umask(022);
  topo_host_profiler p[2];
  for (int r = 0; r < 2; r++) {
    assert_int_equal(topo_host_profiler_load(&p[r], TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28),
                     TOPO_OK);
    assert_int_equal(topo_host_profiler_init(&p[r], 0xabc, "links", 1, 2, r, topo_host_log),
                     ncclSuccess);
    one_collective(&p[r], r);
  }
  for (int r = 0; r < 2; r++) {
    assert_int_equal(topo_host_profiler_finalize(&p[r]), ncclSuccess);
    topo_host_profiler_unload(&p[r]);
  }
  umask(old);

  /* The victim and the foreign file are untouched; the link is still a link. */
  char buf[64] = {0};
  f = fopen(victim, "r");
  assert_non_null(fgets(buf, sizeof buf, f));
  fclose(f);
  assert_string_equal(buf, "precious\n");
  f = fopen(file_path, "r");
  assert_non_null(fgets(buf, sizeof buf, f));
  fclose(f);
  assert_string_equal(buf, "someone else's\n");
  struct stat st;
  assert_int_equal(lstat(link_path, &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  /* Each rank's trace went to a fresh regular file, mode 0640, readable. */
  for (int r = 0; r < 2; r++) {
    char fresh[600];
    snprintf(fresh, sizeof fresh, "%s/topo-%s-%u-%016llx-r%d.1.trace", dir, host,
             (unsigned)getpid(), 0xabcull, r);
    assert_int_equal(lstat(fresh, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0640);
    test_trace t;
    assert_int_equal(test_trace_read(fresh, &t), 0);
    assert_true(t.has_footer);
    assert_int_equal(t.header.rank, r);
    test_trace_free(&t);
  }
  assert_int_equal(count_entries(dir), 4);
  assert_int_equal(count_entries(base), 2);
  test_trace_rmdir(dir);
  unlink(victim);
  rmdir(base);
}

static void test_names_with_conversions_and_paths_stay_out_of_paths_and_formats(void **state) {
  (void)state;
  char base[] = "/tmp/topo-names-XXXXXX";
  assert_non_null(mkdtemp(base));
  char dir[300], host[64];
  snprintf(dir, sizeof dir, "%s/%%s%%n%%x-traces", base); /* the directory's own name too */
  assert_int_equal(mkdir(dir, 0750), 0);
  setenv("TOPO_PROFILER_DIR", dir, 1);
  host_name(host, sizeof host);
  topo_host_log_reset();
  /* Every ABI that takes a name (v4 .. v6), ranks 0..2. */
  static const int nccl[] = {TOPO_NCCL_2_27, TOPO_NCCL_2_28, TOPO_NCCL_2_30}; /* v4, v5, v6 */
  topo_host_profiler p[3];
  for (int r = 0; r < 3; r++) {
    assert_int_equal(topo_host_profiler_load(&p[r], TOPO_TEST_PROFILER_SO, nccl[r]), TOPO_OK);
    assert_int_equal(topo_host_profiler_init(&p[r], 0xe1, EVIL, 1, 3, r, topo_host_log),
                     ncclSuccess);
    assert_non_null(p[r].ctx);
    one_collective(&p[r], r);
  }
  for (int r = 0; r < 3; r++) {
    assert_int_equal(topo_host_profiler_finalize(&p[r]), ncclSuccess);
    topo_host_profiler_unload(&p[r]);
  }
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
  /* Exactly the three names built from host, pid, hash and rank; nothing beside the dir. */
  assert_int_equal(count_entries(dir), 3);
  assert_int_equal(count_entries(base), 1);
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, 3);
  for (size_t i = 0; i < n; i++) {
    char want[600];
    snprintf(want, sizeof want, "%s/topo-%s-%u-%016llx-r%zu.trace", dir, host, (unsigned)getpid(),
             0xe1ull, i);
    assert_string_equal(paths[i], want);
    test_trace t;
    assert_int_equal(test_trace_read(paths[i], &t), 0);
    assert_string_equal(t.header.comm_name, EVIL); /* stored verbatim, as data */
    test_trace_free(&t);
  }
  test_trace_free_list(paths, n);

  /* topo-report reads that directory and prints the name literally. */
  char cmd[8192], out[300];
  snprintf(out, sizeof out, "%s/report.json", base);
  snprintf(cmd, sizeof cmd, "'%s' --json -o '%s' '%s'", TOPO_TEST_REPORT, out, dir);
  int rc = system(cmd);
  assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
  FILE *f = fopen(out, "r");
  assert_non_null(f);
  static char json[1 << 20];
  size_t len = fread(json, 1, sizeof json - 1, f);
  fclose(f);
  json[len] = 0;
  assert_non_null(strstr(json, "/%s%n%x-traces/topo-")); /* the path, literally */
  assert_non_null(strstr(json, "\"collectives\":3"));
  unlink(out);
  test_trace_rmdir(dir);
  assert_int_equal(rmdir(base), 0);
}

/* A host passing no rank (v1-v3 pass -1; a v4+ host could too) gets a name-derived file name:
 * only [A-Za-z0-9_-] of the communicator's name may reach it. */
static void test_rankless_communicator_names_are_reduced_to_safe_characters(void **state) {
  (void)state;
  char base[] = "/tmp/topo-rankless-XXXXXX";
  assert_non_null(mkdtemp(base));
  char dir[300], host[64], want[600];
  snprintf(dir, sizeof dir, "%s/traces", base);
  setenv("TOPO_PROFILER_DIR", dir, 1);
  host_name(host, sizeof host);
  topo_host_profiler p;
  assert_int_equal(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28), TOPO_OK);
  assert_int_equal(topo_host_profiler_init(&p, 0x5afe, "../x/%s%n", 1, 1, -1, topo_host_log),
                   ncclSuccess);
  one_collective(&p, 0);
  assert_int_equal(topo_host_profiler_finalize(&p), ncclSuccess);
  topo_host_profiler_unload(&p);
  assert_int_equal(count_entries(base), 1);
  assert_int_equal(count_entries(dir), 1);
  snprintf(want, sizeof want, "%s/topo-%s-%u-___x__s_n.trace", dir, host, (unsigned)getpid());
  struct stat st;
  assert_int_equal(lstat(want, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  test_trace_rmdir(dir);
  assert_int_equal(rmdir(base), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_existing_link_or_file_at_the_trace_path_is_never_followed),
      cmocka_unit_test(test_names_with_conversions_and_paths_stay_out_of_paths_and_formats),
      cmocka_unit_test(test_rankless_communicator_names_are_reduced_to_safe_characters),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
