// SPDX-License-Identifier: Apache-2.0
// Profiler benchmark (see profiler.cmake). Usage: profiler_bench [iterations]
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "clock.h"
#include "host_profiler.h"

enum { CB_COLL_START, CB_COLL_STOP, CB_KCH_START, CB_KCH_STATE, CB_KCH_STOP, CB_N };
static const char *cb_names[CB_N] = {"Coll start", "Coll stop", "KernelCh start", "KernelCh state",
                                     "KernelCh stop"};

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int64_t clock_overhead(void) {
  int64_t best[1001];
  for (int i = 0; i < 1001; i++) {
    int64_t a = topo_clock_monotonic_ns();
    int64_t b = topo_clock_monotonic_ns();
    best[i] = b - a;
  }
  qsort(best, 1001, sizeof best[0], cmp64);
  return best[500];
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (e->d_name[0] != '.') {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
      }
    closedir(d);
  }
  rmdir(dir);
}

static uint64_t dir_bytes(const char *dir) {
  uint64_t total = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') {
      char p[1024];
      struct stat st;
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      if (stat(p, &st) == 0) total += (uint64_t)st.st_size;
    }
  closedir(d);
  return total;
}

/* Per-callback times for `iters` collectives of `nch` channels each. */
static void per_callback(const char *so, const char *label, int iters, int nch, int64_t overhead) {
  topo_host_profiler p;
  if (topo_host_profiler_load(&p, so, TOPO_NCCL_2_28) != TOPO_OK) exit(1);
  topo_host_profiler_init(&p, 0xbe0c, NULL, 1, 8, 0, NULL);
  int64_t *t[CB_N];
  size_t n[CB_N] = {0};
  for (int c = 0; c < CB_N; c++) t[c] = malloc(sizeof(int64_t) * (size_t)iters * (size_t)nch);
  topo_host_event coll, kch;
  memset(&coll, 0, sizeof coll);
  coll.type = ncclProfileColl;
  coll.func = "AllReduce";
  coll.datatype = "ncclFloat32";
  coll.algo = "RING";
  coll.proto = "LL";
  coll.count = 2;
  coll.nchannels = nch;
  memset(&kch, 0, sizeof kch);
  kch.type = ncclProfileKernelCh;
  for (int i = 0; i < iters; i++) {
    void *h, *ch[64];
    coll.seq = (uint64_t)i;
    int64_t a = topo_clock_monotonic_ns();
    topo_host_profiler_start(&p, &h, &coll);
    int64_t b = topo_clock_monotonic_ns();
    topo_host_profiler_stop(&p, h);
    int64_t c = topo_clock_monotonic_ns();
    t[CB_COLL_START][n[CB_COLL_START]++] = b - a - overhead;
    t[CB_COLL_STOP][n[CB_COLL_STOP]++] = c - b - overhead;
    kch.parent = h;
    for (int k = 0; k < nch; k++) {
      kch.channel = k;
      kch.ptimer = 1000000 + (uint64_t)i * 1000;
      a = topo_clock_monotonic_ns();
      topo_host_profiler_start(&p, &ch[k], &kch);
      b = topo_clock_monotonic_ns();
      topo_host_profiler_state(&p, ch[k], ncclProfilerKernelChStop, 0, kch.ptimer + 500);
      c = topo_clock_monotonic_ns();
      topo_host_profiler_stop(&p, ch[k]);
      int64_t d = topo_clock_monotonic_ns();
      t[CB_KCH_START][n[CB_KCH_START]++] = b - a - overhead;
      t[CB_KCH_STATE][n[CB_KCH_STATE]++] = c - b - overhead;
      t[CB_KCH_STOP][n[CB_KCH_STOP]++] = d - c - overhead;
    }
  }
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  for (int c = 0; c < CB_N; c++) {
    qsort(t[c], n[c], sizeof(int64_t), cmp64);
    printf("  %-18s %-16s median %5lld ns   p99 %6lld ns   (n=%zu)\n", label, cb_names[c],
           (long long)t[c][n[c] / 2], (long long)t[c][n[c] * 99 / 100], n[c]);
    free(t[c]);
  }
}

/* Coll start/stop amortized over batches of 32 collectives in flight (no per-call clock reads). */
static void amortized(const char *so, const char *label, int iters) {
  topo_host_profiler p;
  if (topo_host_profiler_load(&p, so, TOPO_NCCL_2_28) != TOPO_OK) exit(1);
  topo_host_profiler_init(&p, 0xbe0e, NULL, 1, 8, 0, NULL);
  topo_host_event e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileColl;
  e.func = "AllReduce";
  e.datatype = "ncclFloat32";
  e.algo = "RING";
  e.proto = "LL";
  e.count = 2;
  e.nchannels = 8;
  void *h[32];
  int64_t *ts = malloc(sizeof(int64_t) * (size_t)(iters / 32 + 1));
  int64_t *tp = malloc(sizeof(int64_t) * (size_t)(iters / 32 + 1));
  int n = 0;
  for (int r = 0; r + 32 <= iters; r += 32, n++) {
    int64_t t0 = topo_clock_monotonic_ns();
    for (int i = 0; i < 32; i++) {
      e.seq = (uint64_t)(r + i);
      topo_host_profiler_start(&p, &h[i], &e);
    }
    int64_t t1 = topo_clock_monotonic_ns();
    for (int i = 0; i < 32; i++) topo_host_profiler_stop(&p, h[i]);
    int64_t t2 = topo_clock_monotonic_ns();
    ts[n] = t1 - t0;
    tp[n] = t2 - t1;
  }
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  qsort(ts, (size_t)n, sizeof(int64_t), cmp64);
  qsort(tp, (size_t)n, sizeof(int64_t), cmp64);
  printf(
      "  %-18s Coll start %5.1f ns, Coll stop %5.1f ns (median of batches of 32 in flight, "
      "kernel channels expected)\n",
      label, ts[n / 2] / 32.0, tp[n / 2] / 32.0);
  free(ts);
  free(tp);
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 100000;
  char dir[] = "/tmp/topo-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  setenv("TOPO_PROFILER_POOL", "65536", 1);
  unsetenv("NVTX_INJECTION64_PATH");
  int64_t overhead = clock_overhead();
  printf(
      "profiler_bench: %d collectives x 8 kernel channels, clock read overhead %lld ns "
      "(subtracted), NVTX compiled in, no tool attached\n",
      iters, (long long)overhead);
  per_callback(TOPO_BENCH_NULL_SO, "null plugin", iters, 8, overhead);
  per_callback(TOPO_BENCH_PROFILER_SO, "libtopo-profiler", iters, 8, overhead);
  uint64_t bytes = dir_bytes(dir);
  amortized(TOPO_BENCH_NULL_SO, "null plugin", iters);
  amortized(TOPO_BENCH_PROFILER_SO, "libtopo-profiler", iters);
  remove_dir(dir);
  if (!mkdtemp(strcpy(dir, "/tmp/topo-bench-XXXXXX"))) return 1;
  setenv("TOPO_PROFILER_DIR", dir, 1);
  printf("  trace bytes per collective (header, blocks, STATS, footer included): %.1f\n",
         (double)bytes / iters);

  /* Writer throughput: collectives only (no kernel channels), one thread, until the footer. */
  setenv("TOPO_PROFILER_EVENTS", "coll", 1);
  setenv("TOPO_PROFILER_RING", "1048576", 1);
  int n = iters * 10;
  topo_host_profiler p;
  if (topo_host_profiler_load(&p, TOPO_BENCH_PROFILER_SO, TOPO_NCCL_2_28) != TOPO_OK) return 1;
  topo_host_profiler_init(&p, 0xbe0d, NULL, 1, 8, 0, NULL);
  topo_host_event coll;
  memset(&coll, 0, sizeof coll);
  coll.type = ncclProfileColl;
  coll.func = "AllReduce";
  coll.datatype = "ncclBfloat16";
  coll.algo = "RING";
  coll.proto = "SIMPLE";
  coll.count = 1 << 20;
  coll.nchannels = 16;
  int64_t t0 = topo_clock_monotonic_ns();
  for (int i = 0; i < n; i++) {
    void *h;
    coll.seq = (uint64_t)i;
    topo_host_profiler_start(&p, &h, &coll);
    topo_host_profiler_stop(&p, h);
  }
  int64_t t1 = topo_clock_monotonic_ns();
  topo_host_profiler_finalize(&p);
  int64_t t2 = topo_clock_monotonic_ns();
  topo_host_profiler_unload(&p);
  uint64_t written = dir_bytes(dir);
  remove_dir(dir);
  printf(
      "  writer: %d collective records in %.1f ms (%.2f M records/s end to end, producer "
      "alone %.2f M/s), %.1f bytes per collective on disk\n",
      n, (double)(t2 - t0) / 1e6, n / ((double)(t2 - t0) / 1e9) / 1e6,
      n / ((double)(t1 - t0) / 1e9) / 1e6, (double)written / n);
  return 0;
}
