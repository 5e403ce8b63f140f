// SPDX-License-Identifier: Apache-2.0
// Child-process helpers of the reliability tests (see rel_child.h).
#include "rel_child.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "clock.h"
#include "profiler_driver.h"

static volatile int forked_from_threads;

void rel_forked_child(void) { forked_from_threads = 1; }

#ifdef __SANITIZE_ADDRESS__
/* LeakSanitizer's hook (sanitizer/lsan_interface.h): non-zero skips the leak check at exit. */
__attribute__((visibility("default"))) int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return forked_from_threads; }
#endif

int64_t rel_now_ms(void) { return topo_clock_monotonic_ns() / 1000000; }

void rel_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {}
}

rel_result rel_wait(pid_t pid, int64_t started_ns, int timeout_ms) {
  rel_result r = {0, 0, 0};
  for (;;) {
    pid_t got = waitpid(pid, &r.status, WNOHANG);
    int64_t ms = (topo_clock_monotonic_ns() - started_ns) / 1000000;
    if (got == pid) {
      r.elapsed_ms = ms;
      return r;
    }
    if (ms >= timeout_ms) {
      kill(pid, SIGKILL);
      waitpid(pid, &r.status, 0);
      r.timed_out = 1;
      r.elapsed_ms = ms;
      return r;
    }
    rel_sleep_ms(2);
  }
}

rel_result rel_run_child(void (*body)(void *), void *arg, int timeout_ms) {
  fflush(NULL);
  int64_t start = topo_clock_monotonic_ns();
  pid_t pid = fork();
  if (pid == 0) {
    body(arg);
    _exit(0);
  }
  if (pid < 0) {
    rel_result r = {0, 1, 0};
    return r;
  }
  return rel_wait(pid, start, timeout_ms);
}

const char *rel_describe(const rel_result *r, char *buf, size_t n) {
  if (r->timed_out) snprintf(buf, n, "killed after %lld ms", (long long)r->elapsed_ms);
  else if (WIFSIGNALED(r->status)) snprintf(buf, n, "signal %d", WTERMSIG(r->status));
  else snprintf(buf, n, "exit %d", WEXITSTATUS(r->status));
  return buf;
}

void rel_assert_exited_cleanly(const rel_result *r) {
  char how[64];
  if (r->timed_out || !WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
    fail_msg("the job ended with %s", rel_describe(r, how, sizeof how));
}

long rel_rss_kb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, resident = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
    fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

void rel_allreduce(topo_host_profiler *p, int rank, uint64_t seq) {
  rel_allreduce_of(p, rank, seq, 4096);
}

void rel_allreduce_of(topo_host_profiler *p, int rank, uint64_t seq, size_t count) {
  drv_op op = drv_allreduce(rank, seq, count, 2);
  drv_run(p, &op);
}
