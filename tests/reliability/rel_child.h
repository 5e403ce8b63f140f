/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the reliability tests that run a profiler job in a forked child: run it with a time
 * limit (a hang is a failed test, not a stuck CI), check inside the child (a failed check exits
 * it with 1) and its end in the test, measure its memory, and issue NCCL-shaped collectives
 * through the plugin host.
 */
#ifndef TOPO_TEST_REL_CHILD_H
#define TOPO_TEST_REL_CHILD_H
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "host_profiler.h"

#define REL_CHECK(cond)                                                        \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "child: %s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
      _exit(1);                                                                \
    }                                                                          \
  } while (0)

typedef struct rel_result {
  int status;         /* waitpid status (meaningless when timed_out) */
  int timed_out;      /* the child ran past its limit and was killed */
  int64_t elapsed_ms; /* fork to exit (or to the kill) */
} rel_result;

/* Run body(arg) in a forked child (which _exit(0)s when body returns); SIGKILL it after
 * timeout_ms. */
rel_result rel_run_child(void (*body)(void *), void *arg, int timeout_ms);
/* Wait for `pid` at most timeout_ms, then SIGKILL it; same result as rel_run_child. */
rel_result rel_wait(pid_t pid, int64_t started_ns, int timeout_ms);
/* "exited with 0" in words for a failure message: "exit 0", "signal 11", "killed after 10000 ms". */
const char *rel_describe(const rel_result *r, char *buf, size_t n);
/* Fail the current cmocka test unless the child exited with status 0 in time. */
void rel_assert_exited_cleanly(const rel_result *r);
/* Resident memory of the calling process, kB (/proc/self/statm). */
long rel_rss_kb(void);

/* Call first thing in a child forked from a process with threads: under LeakSanitizer, its exit
 * skips the leak check, which can deadlock on an allocator lock another thread held at the fork
 * (an LSan limitation; the plugin's silent child allocates nothing). */
void rel_forked_child(void);

/* One AllReduce of 4096 floats (16 KiB; 2 kernel channels, GPU times derived from seq) on `p`
 * as rank `rank`; rel_allreduce_of: of `count` floats. */
void rel_allreduce(topo_host_profiler *p, int rank, uint64_t seq);
void rel_allreduce_of(topo_host_profiler *p, int rank, uint64_t seq, size_t count);
void rel_sleep_ms(int ms);
int64_t rel_now_ms(void);
#endif
