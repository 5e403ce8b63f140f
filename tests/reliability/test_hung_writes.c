// SPDX-License-Identifier: Apache-2.0
// A trace file system that stops answering (a hung NFS server): the plugin's file creation and
// writes block. This executable exports its own mkdir/open/openat/writev/pwrite, which the
// dlopen'ed plugin binds to (the executable comes first in the symbol search order, as with
// LD_PRELOAD); they block while `hang` is set and otherwise go straight to the kernel.
// Then: init, finalize and exit each return within a bounded time (TOPO_PROFILER_WAIT_MS plus
// scheduling slack), the job's calls all answer ncclSuccess, records that cannot be queued are
// counted, and once the file system answers again every trace is completed - footers included,
// every collective either in the file or counted as dropped - and a new profiler generation
// starts cleanly beside the late one.
#undef _FORTIFY_SOURCE /* the interposers below redefine functions it wraps */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_profiler.h"
#include "rel_child.h"
#include "trace_read.h"

/* Default visibility: the build hides symbols unless told. */
#define INTERPOSE __attribute__((visibility("default")))

static atomic_int hang;    /* 1: the file system does not answer */
static atomic_int blocked; /* calls blocked right now */

static void wait_for_file_system(void) {
  if (!atomic_load(&hang)) return;
  atomic_fetch_add(&blocked, 1);
  while (atomic_load(&hang)) rel_sleep_ms(1);
  atomic_fetch_sub(&blocked, 1);
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
}

INTERPOSE ssize_t writev(int fd, const struct iovec *iov, int n) {
  wait_for_file_system();
  return syscall(SYS_writev, fd, iov, n);
}

INTERPOSE ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  wait_for_file_system();
  return syscall(SYS_pwrite64, fd, buf, n, off);
}

INTERPOSE int mkdir(const char *path, mode_t mode) {
  wait_for_file_system();
  return (int)syscall(SYS_mkdir, path, mode);
}

INTERPOSE int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  wait_for_file_system();
  return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

INTERPOSE int openat(int dfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  wait_for_file_system();
  return (int)syscall(SYS_openat, dfd, path, flags, mode);
}

#define WAIT_MS  200
#define SLACK_MS 1500 /* a loaded 2-core machine, sanitizers */
#define A_OPS    300  /* more than the ring holds */

static const char *trace_dir;
static int64_t longest_init_ms, longest_finalize_ms;

static void load_init(topo_host_profiler *p, uint64_t hash, int rank) {
  REL_CHECK(topo_host_profiler_load(p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) == TOPO_OK);
  int64_t t = rel_now_ms();
  REL_CHECK(topo_host_profiler_init(p, hash, "hung", 1, 4, rank, NULL) == ncclSuccess);
  if (rel_now_ms() - t > longest_init_ms) longest_init_ms = rel_now_ms() - t;
  if (rel_now_ms() - t > SLACK_MS) {
    fprintf(stderr, "child: init took %lld ms\n", (long long)(rel_now_ms() - t));
    _exit(1);
  }
  REL_CHECK(p->ctx != NULL);
}

static void finalize_in_time(topo_host_profiler *p) {
  int64_t t = rel_now_ms();
  REL_CHECK(topo_host_profiler_finalize(p) == ncclSuccess);
  if (rel_now_ms() - t > longest_finalize_ms) longest_finalize_ms = rel_now_ms() - t;
  if (rel_now_ms() - t > WAIT_MS + SLACK_MS) {
    fprintf(stderr, "child: finalize took %lld ms\n", (long long)(rel_now_ms() - t));
    _exit(1);
  }
}

static int footers_written(int want) {
  char **paths;
  size_t n = test_trace_list(trace_dir, &paths);
  int with = 0;
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    if (test_trace_read(paths[i], &t) == 0 && t.has_footer) with++;
    test_trace_free(&t);
  }
  test_trace_free_list(paths, n);
  return with >= want;
}

/* Collective records of communicator `hash` in its trace file so far (blocks written). */
static size_t colls_written(uint64_t hash) {
  char **paths;
  size_t n = test_trace_list(trace_dir, &paths), colls = 0;
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    if (test_trace_read(paths[i], &t) == 0 && t.header.comm_hash == hash) {
      const topo_trace_record **c;
      colls += test_trace_select(&t, TOPO_REC_COLL, &c);
      free(c);
    }
    test_trace_free(&t);
  }
  test_trace_free_list(paths, n);
  return colls;
}

static void hung_job(void *arg) {
  (void)arg;
  topo_host_profiler a, b, c, d;
  load_init(&a, 0xa1, 0);
  load_init(&b, 0xb2, 1);
  for (uint64_t i = 0; i < 20; i++) {
    rel_allreduce(&a, 0, i);
    rel_allreduce(&b, 1, i);
  }
  /* written (TOPO_PROFILER_FLUSH_MS=5): waited for on the file, not for a time a loaded machine
   * may not keep */
  for (int ms = 0; colls_written(0xb2) < 20 && ms < 10000; ms += 5) rel_sleep_ms(5);
  REL_CHECK(colls_written(0xb2) == 20);
  atomic_store(&hang, 1);
  for (uint64_t i = 20; i < A_OPS + 20; i++) rel_allreduce(&a, 0, i);
  for (int ms = 0; !atomic_load(&blocked) && ms < 5000; ms++) rel_sleep_ms(1);
  REL_CHECK(atomic_load(&blocked) > 0); /* the writer is stuck in the file system */
  finalize_in_time(&a);
  load_init(&c, 0xc3, 2); /* a new communicator while the file system hangs */
  for (uint64_t i = 0; i < 5; i++) rel_allreduce(&c, 2, i);
  finalize_in_time(&b);
  finalize_in_time(&c); /* the last one: the writer is left to finish on its own */
  fprintf(stderr,
          "while the file system hung: longest init %lld ms, longest finalize %lld ms "
          "(TOPO_PROFILER_WAIT_MS=%d)\n",
          (long long)longest_init_ms, (long long)longest_finalize_ms, WAIT_MS);
  atomic_store(&hang, 0);
  for (int ms = 0; !footers_written(3) && ms < 10000; ms += 5) rel_sleep_ms(5);
  REL_CHECK(footers_written(3));
  /* A new generation beside the late one. */
  load_init(&d, 0xd4, 3);
  for (uint64_t i = 0; i < 10; i++) rel_allreduce(&d, 3, i);
  finalize_in_time(&d);
  topo_host_profiler_unload(&a);
  topo_host_profiler_unload(&b);
  topo_host_profiler_unload(&c);
  topo_host_profiler_unload(&d);
}

static void set_env(char *dir) {
  assert_non_null(mkdtemp(dir));
  trace_dir = dir;
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  setenv("TOPO_PROFILER_EVENTS", "coll,kernel", 1);
  setenv("TOPO_PROFILER_CUPTI", "off", 1);
  setenv("TOPO_PROFILER_FLUSH_MS", "5", 1);
  setenv("TOPO_PROFILER_RING", "256", 1);
  setenv("TOPO_PROFILER_WAIT_MS", "200", 1);
}

static void test_init_and_finalize_return_while_the_file_system_hangs(void **s) {
  (void)s;
  char dir[] = "/tmp/topo-hung-XXXXXX";
  set_env(dir);
  rel_result r = rel_run_child(hung_job, NULL, 30000);
  rel_assert_exited_cleanly(&r);
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, 4);
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    assert_int_equal(test_trace_read(paths[i], &t), 0);
    assert_false(t.bad_block);
    assert_true(t.has_footer);
    assert_int_equal(t.footer.records, t.count);
    const topo_trace_record **colls;
    size_t nc = test_trace_select(&t, TOPO_REC_COLL, &colls);
    for (size_t j = 1; j < nc; j++) assert_true(colls[j]->coll.seq > colls[j - 1]->coll.seq);
    uint64_t issued = t.header.comm_hash == 0xa1   ? A_OPS + 20
                      : t.header.comm_hash == 0xb2 ? 20
                      : t.header.comm_hash == 0xc3 ? 5
                                                   : 10;
    uint64_t lost = t.footer.dropped[TOPO_DROP_COLL] + t.footer.dropped[TOPO_DROP_RECORD] +
                    t.footer.dropped[TOPO_DROP_OTHER];
    if (nc + lost != issued)
      fail_msg("comm %llx: %zu collectives + %llu counted drops, %llu issued",
               (unsigned long long)t.header.comm_hash, nc, (unsigned long long)lost,
               (unsigned long long)issued);
    /* B wrote before the hang, D after it; A and C met a full ring while it lasted. */
    if (t.header.comm_hash == 0xb2 || t.header.comm_hash == 0xd4) assert_int_equal(lost, 0);
    free(colls);
    test_trace_free(&t);
  }
  test_trace_free_list(paths, n);
  test_trace_rmdir(dir);
}

static void exit_job(void *arg) {
  (void)arg;
  topo_host_profiler a;
  load_init(&a, 0xe1, 0);
  for (uint64_t i = 0; i < 50; i++) rel_allreduce(&a, 0, i);
  rel_sleep_ms(50);
  atomic_store(&hang, 1);
  for (uint64_t i = 50; i < 100; i++) rel_allreduce(&a, 0, i);
  for (int ms = 0; !atomic_load(&blocked) && ms < 5000; ms++) rel_sleep_ms(1);
  REL_CHECK(atomic_load(&blocked) > 0);
  exit(0); /* no finalize: the exit flush must not wait for the hung writer */
}

static void test_exit_returns_while_the_file_system_hangs(void **s) {
  (void)s;
  char dir[] = "/tmp/topo-hung-exit-XXXXXX";
  set_env(dir);
  rel_result r = rel_run_child(exit_job, NULL, 15000);
  rel_assert_exited_cleanly(&r);
  print_message("exit with the file system hung: the process ended %lld ms after it started\n",
                (long long)r.elapsed_ms);
  assert_true(r.elapsed_ms < 100 + 50 + WAIT_MS + 2 * SLACK_MS);
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, 1);
  test_trace t;
  assert_int_equal(test_trace_read(paths[0], &t), 0);
  assert_false(t.bad_block);
  const topo_trace_record **colls;
  size_t nc = test_trace_select(&t, TOPO_REC_COLL, &colls);
  assert_true(nc >= 50); /* what was written before the file system hung */
  for (size_t j = 0; j < nc; j++) assert_int_equal(colls[j]->coll.seq, j);
  free(colls);
  test_trace_free(&t);
  test_trace_free_list(paths, n);
  test_trace_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_and_finalize_return_while_the_file_system_hangs),
      cmocka_unit_test(test_exit_returns_while_the_file_system_hangs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
