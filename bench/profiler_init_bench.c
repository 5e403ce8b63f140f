// SPDX-License-Identifier: Apache-2.0
// Profiler init cost (see profiler.cmake): what the first communicator's init costs in time and
// resident memory, against the same plugin with TOPO_PROFILER_ENABLE=0 measured in the same run,
// what it holds 200 ms later, before any traffic (the writer thread's start included: in the
// default CUPTI mode that used to map libcupti), then what memory the profiler holds once the
// communicator has traffic (small collectives: no CUPTI window yet). Every sample is a fresh
// process (a forked child that loads the plugin), since only the first init of a process starts
// the profiler. Usage: profiler_init_bench [samples [plugin.so]]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "host_profiler.h"
#include "profiler_driver.h"

typedef struct sample {
  double init_us, second_init_us, finalize_us;
  double rss_init_kb, rss_settled_kb, rss_traffic_kb; /* resident growth from just before the
                                                       * first init */
} sample;

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, resident = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
    fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* One sample, in the calling (fresh) process. */
static sample measure(const char *so, int traffic) {
  sample s;
  memset(&s, 0, sizeof s);
  topo_host_profiler a, b;
  if (topo_host_profiler_load(&a, so, TOPO_NCCL_2_28) != TOPO_OK ||
      topo_host_profiler_load(&b, so, TOPO_NCCL_2_28) != TOPO_OK)
    exit(2);
  long rss0 = rss_kb();
  int64_t t0 = topo_clock_monotonic_ns();
  topo_host_profiler_init(&a, 0x1417, "bench", 1, 8, 0, NULL);
  int64_t t1 = topo_clock_monotonic_ns();
  s.rss_init_kb = (double)(rss_kb() - rss0);
  topo_host_profiler_init(&b, 0x1418, "bench", 1, 8, 1, NULL);
  int64_t t2 = topo_clock_monotonic_ns();
  s.init_us = (double)(t1 - t0) / 1e3;
  s.second_init_us = (double)(t2 - t1) / 1e3;
  struct timespec settle = {0, 200000000L};
  nanosleep(&settle, NULL);
  s.rss_settled_kb = (double)(rss_kb() - rss0);
  for (int i = 0; i < traffic; i++) {
    drv_op op;
    memset(&op, 0, sizeof op);
    op.func = "AllReduce";
    op.dtype = "ncclBfloat16";
    op.algo = "RING";
    op.proto = "LL";
    op.seq = (uint64_t)i;
    op.count = 1024;
    op.nch = 8;
    op.peer = -1;
    drv_set_gpu(&op, 1000000 + (uint64_t)i * 1000, 5, 200);
    drv_run(i & 1 ? &b : &a, &op);
  }
  s.rss_traffic_kb = (double)(rss_kb() - rss0);
  int64_t t3 = topo_clock_monotonic_ns();
  topo_host_profiler_finalize(&a);
  topo_host_profiler_finalize(&b);
  s.finalize_us = (double)(topo_clock_monotonic_ns() - t3) / 1e3;
  return s;
}

static int cmpd(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmpd);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of `n` fresh processes with the environment `env` (NAME=VALUE pairs, NULL-ended). */
static sample run(const char *so, const char *const *env, int n, int traffic) {
  double f[6][256];
  if (n > 256) n = 256;
  for (int i = 0; i < n; i++) {
    int fd[2];
    if (pipe(fd) != 0) exit(2);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      close(fd[0]);
      for (const char *const *e = env; *e; e += 2) setenv(e[0], e[1], 1);
      sample s = measure(so, traffic);
      if (write(fd[1], &s, sizeof s) != (ssize_t)sizeof s) _exit(3);
      _exit(0);
    }
    close(fd[1]);
    sample s;
    if (read(fd[0], &s, sizeof s) != (ssize_t)sizeof s) exit(3);
    close(fd[0]);
    waitpid(pid, NULL, 0);
    f[0][i] = s.init_us;
    f[1][i] = s.second_init_us;
    f[2][i] = s.finalize_us;
    f[3][i] = s.rss_init_kb;
    f[4][i] = s.rss_settled_kb;
    f[5][i] = s.rss_traffic_kb;
  }
  sample m = {median(f[0], n), median(f[1], n), median(f[2], n),
              median(f[3], n), median(f[4], n), median(f[5], n)};
  return m;
}

static void row(const char *label, sample s, sample base) {
  printf("| %-34s | %8.0f | %+8.0f | %8.0f | %8.0f | %+7.0f | %+10.0f | %+9.0f |\n", label,
         s.init_us, s.init_us - base.init_us, s.second_init_us, s.finalize_us,
         s.rss_init_kb - base.rss_init_kb, s.rss_settled_kb - base.rss_settled_kb,
         s.rss_traffic_kb - base.rss_traffic_kb);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20;
  const char *so = argc > 2 ? argv[2] : TOPO_BENCH_PROFILER_SO;
  if (n < 1) n = 1;
  char dir[] = "/tmp/topo-init-bench-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  const int traffic = 10000;
  const char *const off[] = {"TOPO_PROFILER_DIR", dir, "TOPO_PROFILER_ENABLE", "0", NULL};
  const char *const no_cupti[] = {"TOPO_PROFILER_DIR", dir, "TOPO_PROFILER_CUPTI", "off", NULL};
  const char *const dflt[] = {"TOPO_PROFILER_DIR", dir, NULL};
  sample base = run(so, off, n, traffic);
  sample topo = run(so, no_cupti, n, traffic);
  sample with_cupti = run(so, dflt, n, traffic);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);

  printf("profiler init, median of %d fresh processes each (%s)\n", n, so);
  printf(
      "first init and its resident growth; then %d collectives (8 channels, every one "
      "sampled by the default rule or not) on two communicators\n\n",
      traffic);
  printf("| %-34s | %8s | %8s | %8s | %8s | %7s | %10s | %9s |\n", "configuration", "init us",
         "vs base", "2nd us", "final us", "RSS kB", "settled kB", "traffic kB");
  printf("|%s|%s|%s|%s|%s|%s|%s|%s|\n", "------------------------------------", "----------",
         "----------", "----------", "----------", "---------", "------------", "-----------");
  row("TOPO_PROFILER_ENABLE=0 (baseline)", base, base);
  row("topo, TOPO_PROFILER_CUPTI=off", topo, base);
  row("topo, default (CUPTI window)", with_cupti, base);
  printf(
      "\nRSS kB, settled kB and traffic kB: resident growth over the baseline's (after the "
      "first init; 200 ms later, before traffic; after the traffic). Target: first init <= "
      "1000 us and <= 1024 kB over the baseline until traffic.\n");
  printf(
      "first init over baseline: %.0f us (CUPTI off), %.0f us (default); resident %.0f kB, "
      "%.0f kB; 200 ms later %.0f kB, %.0f kB\n",
      topo.init_us - base.init_us, with_cupti.init_us - base.init_us,
      topo.rss_init_kb - base.rss_init_kb, with_cupti.rss_init_kb - base.rss_init_kb,
      topo.rss_settled_kb - base.rss_settled_kb, with_cupti.rss_settled_kb - base.rss_settled_kb);
  return 0;
}
