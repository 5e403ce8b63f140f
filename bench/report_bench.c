// SPDX-License-Identifier: Apache-2.0
// topo-report benchmark. Usage: report_bench [collectives per rank (1000000)] [ranks (8)]
// [kernels per collective (0)]. Writes the traces into a temporary directory (removed at the
// end), then prints: reader throughput (records/s, one thread), full analysis time (both passes,
// all tables) and peak RSS before and after the analysis (getrusage). Then the report's memory
// against the number of steps, each in a child process of its own (its peak RSS, and the bytes
// --json writes): with step detection off (the baseline: no steps), by default (at most
// RP_STEPS_KEEP step rows a rank) and with --all-steps (one row per step). The traces cycle six
// sizes, so the default detection finds a step every six collectives.
#define _GNU_SOURCE /* fopencookie */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "report.h"
#include "report_analysis.h"
#include "report_render.h"
#include "trace_fixture.h"
#include "trace_reader.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long peak_rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static ssize_t count_write(void *cookie, const char *buf, size_t n) {
  (void)buf;
  *(uint64_t *)cookie += n;
  return (ssize_t)n;
}

/* One analysis in a child process, its report rendered as --json into a byte counter: the
 * child's peak RSS (KB), the JSON's bytes and the step rows of its first rank. */
static int child_run(const char *dir, int steps, int all_steps, long *rss_kb, uint64_t *json,
                     size_t *rows) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(fd[0]);
    rp_report rep;
    const char *paths[] = {dir};
    rp_options opt = {.reorder_window = 65536, .quiet = 1, .steps = steps, .all_steps = all_steps};
    if (rp_analyze(paths, 1, &opt, &rep) != TOPO_OK) _exit(1);
    uint64_t bytes = 0;
    FILE *f = fopencookie(&bytes, "w", (cookie_io_functions_t){.write = count_write});
    if (!f) _exit(1);
    rp_render_json(&rep, f);
    fclose(f);
    uint64_t out[2] = {bytes, rep.nranks ? rep.ranks[0].nsteps : 0};
    if (write(fd[1], out, sizeof out) != (ssize_t)sizeof out) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  uint64_t got[2] = {0, 0};
  ssize_t n = read(fd[0], got, sizeof got);
  close(fd[0]);
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      n != (ssize_t)sizeof got)
    return -1;
  *rss_kb = ru.ru_maxrss;
  *json = got[0];
  *rows = (size_t)got[1];
  return 0;
}

int main(int argc, char **argv) {
  long ncoll = argc > 1 ? atol(argv[1]) : 1000000;
  int nranks = argc > 2 ? atoi(argv[2]) : 8;
  int kernels = argc > 3 ? atoi(argv[3]) : 0;
  if (ncoll < 1 || nranks < 1 || nranks > 1024 || kernels < 0 || kernels > 16) {
    fprintf(stderr, "usage: report_bench [collectives>=1] [ranks 1..1024] [kernels 0..16]\n");
    return 2;
  }
  char dir[] = "/tmp/topo-report-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  double t = now_s();
  uint64_t total = 0;
  static const uint64_t sizes[] = {8192, 65536, 1 << 20, 1 << 22, 1 << 24, 1 << 26};
  for (int r = 0; r < nranks; r++) {
    topo_trace_header h;
    tf_header_init(&h, 0xbe7c4, r, nranks);
    h.realtime_ns = 1700000000000000000LL;
    h.mono_ns = 1000000000LL;
    char path[256];
    snprintf(path, sizeof path, "%s/rank%d.trace", dir, r);
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof buf);
    tf_trace tr;
    tf_begin(&tr, &h, f);
    int64_t gpu = h.realtime_ns + 1000000;
    for (long i = 0; i < ncoll; i++) {
      uint64_t bytes = sizes[i % 6];
      int64_t dur = 8000 + (int64_t)(bytes / 150);
      int64_t skew = (int64_t)((i * 7919 + r * 104729) % 3000);
      for (int k = 0; k < kernels; k++) {
        topo_trace_record kr =
            tf_kernel(TOPO_KERNEL_COMPUTE, 0, gpu - dur / 2 + k * 10, gpu + dur / 3, 7 + k);
        tf_add(&tr, &kr);
      }
      topo_trace_record c = tf_coll(4, (uint64_t)i, bytes, gpu - 20000 - h.realtime_ns + h.mono_ns,
                                    gpu - 19000 - h.realtime_ns + h.mono_ns, gpu + skew, gpu + dur,
                                    1, bytes < 65536 ? 0 : 2, 16, 1);
      tf_add(&tr, &c);
      gpu += dur + 2000;
    }
    tf_footer(&tr, NULL);
    fclose(f);
    total += tr.nrecords;
  }
  double gen = now_s() - t;
  printf("generated %d ranks x %ld collectives (+%d kernels each) = %" PRIu64
         " records, %.1f MB, in %.2f s\n",
         nranks, ncoll, kernels, total, (double)total * 64 / 1e6, gen);

  /* 1. The reader alone: every record of every file, one thread. */
  t = now_s();
  uint64_t seen = 0, sum = 0;
  for (int r = 0; r < nranks; r++) {
    char path[256];
    snprintf(path, sizeof path, "%s/rank%d.trace", dir, r);
    topo_trace_reader *rd;
    if (topo_trace_reader_open(path, 0, &rd) != TOPO_OK) return 1;
    const topo_trace_record *recs;
    size_t n;
    while ((n = topo_trace_reader_next_block(rd, &recs)) > 0) {
      for (size_t i = 0; i < n; i++) sum += recs[i].type;
      seen += n;
    }
    topo_trace_reader_close(rd);
  }
  double rd_s = now_s() - t;
  printf("read:     %" PRIu64 " records in %.3f s = %.2f M records/s (one core, CRC checked)%s\n",
         seen, rd_s, (double)seen / rd_s / 1e6, sum ? "" : " ");

  long rss0 = peak_rss_kb();
  t = now_s();
  rp_report rep;
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536};
  topo_status st = rp_analyze(paths, 1, &opt, &rep);
  double an_s = now_s() - t;
  long rss1 = peak_rss_kb();
  if (st != TOPO_OK) {
    fprintf(stderr, "analysis failed: %s\n", topo_status_str(st));
    return 1;
  }
  rp_derived d;
  rp_derive_overall(&rep, &d);
  printf("analyse:  %d ranks, %" PRIu64
         " collectives in %.3f s (both passes) = %.2f M records/s; "
         "comm share %.1f%%, AllReduce rows %zu, joined %" PRIu64 "\n",
         rep.nranks, rep.colls, an_s, (double)total / an_s / 1e6, d.comm_share * 100, rep.nrows,
         rep.ncomms ? rep.comms[0].joined : 0);
  printf("peak RSS: %.1f MB before the analysis, %.1f MB after (input %.1f MB)\n", rss0 / 1024.0,
         rss1 / 1024.0, (double)total * 64 / 1e6);
  rp_report_free(&rep);

  /* 2. Memory against the steps, each analysis in a child of its own. */
  static const struct {
    const char *what;
    int steps, all_steps;
  } runs[] = {{"steps off (baseline)", -1, 0}, {"default", 0, 0}, {"--all-steps", 0, 1}};
  long base_kb = 0;
  for (int i = 0; i < 3; i++) {
    long kb;
    uint64_t json;
    size_t rows;
    if (child_run(dir, runs[i].steps, runs[i].all_steps, &kb, &json, &rows) != 0) {
      fprintf(stderr, "analysis (%s) failed\n", runs[i].what);
      return 1;
    }
    if (!i) base_kb = kb;
    printf(
        "memory:   %-22s peak RSS %7.1f MB (%5.2f x the baseline), --json %8.1f MB, %zu step "
        "rows on rank 0\n",
        runs[i].what, kb / 1024.0, (double)kb / (double)base_kb, (double)json / 1e6, rows);
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return 0;
}
