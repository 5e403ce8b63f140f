// SPDX-License-Identifier: Apache-2.0
// topo-report benchmark. Usage: report_bench [collectives per rank (1000000)] [ranks (8)]
// [kernels per collective (0)]. Writes the traces into a temporary directory (removed at the
// end), then prints: reader throughput (records/s, one thread), full analysis time (both passes,
// all tables) and peak RSS before and after the analysis (getrusage).
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "report.h"
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
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return 0;
}
