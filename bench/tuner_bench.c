// SPDX-License-Identifier: Apache-2.0
// tuner_bench: what libtopo-tuner.so costs NCCL. getCollInfo through the plugin host (as NCCL
// 2.28 calls it) on a realistic mix: all five collectives, sizes log-uniform 8 B..1 GB, cost
// tables as NCCL fills them on 2 x H200; each call timed alone (CLOCK_MONOTONIC), median and p99,
// beside an empty tuner called the same way in the same run. Init: a new communicator shape
// (table built) and a repeated shape (shared table), median and p99 per init. The call figures are
// repeated with rule files (TOPO_TUNER_RULES) of 0, 10 and 100 lines that leave every call to the
// model (the worst case for a scan: every rule looked at and passed over).
// Usage: tuner_bench [calls (default 1000000)] [profile for the init figures (default: built-in)]
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host_tuner.h"

static const float lat2[5][2][3] = {{{0, 0, 0}, {7.2f, 15.9f, 11.8f}},
                                    {{0, 0, 0}, {7.2f, 15.9f, 11.8f}},
                                    {{0, 0, 0}, {7.2f, 15.9f, 11.8f}},
                                    {{0, 0, 0}, {7.2f, 15.9f, 11.8f}},
                                    {{8.0f, 16.5f, 16.4f}, {7.8f, 17.8f, 15.2f}}};
static const float bw2[5][2][3] = {{{0, 0, 0}, {141, 331.2f, 360}},
                                   {{0, 0, 0}, {141, 331.2f, 360}},
                                   {{0, 0, 0}, {282, 662.4f, 720}},
                                   {{0, 0, 0}, {282, 662.4f, 720}},
                                   {{61.1f, 180.6f, 232.2f}, {141, 331.2f, 360}}};

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct query {
  int coll;
  size_t bytes;
  float table[21];
} query;

static double pct(double *v, int n, double p) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[(int)(p * (n - 1))];
}

/* Median and p99 of calls timed one by one (batch_median: the median per call in batches of 32). */
static double batch_median;
static void bench_calls(const char *label, const char *path, const query *q, int n, double *out_med,
                        double *out_p99) {
  topo_host_tuner t;
  if (topo_host_tuner_load(&t, path, TOPO_NCCL_2_28) != TOPO_OK) {
    fprintf(stderr, "tuner_bench: cannot load %s\n", path);
    exit(1);
  }
  topo_host_tuner_init(&t, 1, 2, 1, NULL, NULL, NULL);
  double *ns = malloc((size_t)n * sizeof *ns);
  float table[21];
  for (int i = 0; i < n; i++) {
    memcpy(table, q[i].table, sizeof table);
    int nch = 0;
    double t0 = now_ns();
    topo_host_tuner_get(&t, q[i].coll, q[i].bytes, 1, table, 0, &nch);
    ns[i] = now_ns() - t0;
  }
  *out_med = pct(ns, n, 0.5);
  *out_p99 = pct(ns, n, 0.99);
  printf("%-28s median %6.1f ns  p99 %7.1f ns  max %9.1f ns  (%d calls, each timed)\n", label,
         *out_med, *out_p99, ns[n - 1], n);
  /* Batches of 32 calls timed together: the timer's own cost amortised (table restores included,
   * as in the baseline). */
  int nb = n / 32;
  for (int b = 0; b < nb; b++) {
    double t0 = now_ns();
    for (int i = b * 32; i < b * 32 + 32; i++) {
      memcpy(table, q[i].table, sizeof table);
      int nch = 0;
      topo_host_tuner_get(&t, q[i].coll, q[i].bytes, 1, table, 0, &nch);
    }
    ns[b] = (now_ns() - t0) / 32;
  }
  batch_median = pct(ns, nb, 0.5);
  printf("%-28s median %6.1f ns  p99 %7.1f ns per call in batches of 32\n", "", batch_median,
         pct(ns, nb, 0.99));
  free(ns);
  topo_host_tuner_finalize(&t);
  topo_host_tuner_unload(&t);
}

static void bench_init(const char *path) {
  enum { N = 200 };
  double fresh[N], cached[N];
  topo_host_tuner t;
  topo_host_tuner_load(&t, path, TOPO_NCCL_2_28);
  void *keep[N];
  for (int i = 0; i < N; i++) { /* a new shape each time: profile + table built */
    double t0 = now_ns();
    topo_host_tuner_init(&t, (uint64_t)i, (size_t)(2 + i), 1, NULL, NULL, NULL);
    fresh[i] = now_ns() - t0;
    keep[i] = t.ctx;
  }
  for (int i = 0; i < N; i++) { /* a shape seen before: the table is shared */
    double t0 = now_ns();
    topo_host_tuner_init(&t, (uint64_t)i, 8, 1, NULL, NULL, NULL);
    cached[i] = now_ns() - t0;
    topo_host_tuner_finalize(&t);
  }
  for (int i = 0; i < N; i++) {
    t.ctx = keep[i];
    topo_host_tuner_finalize(&t);
  }
  topo_host_tuner_unload(&t);
  printf("init, new shape (table built)  median %7.1f us  p99 %7.1f us\n", pct(fresh, N, 0.5) / 1e3,
         pct(fresh, N, 0.99) / 1e3);
  printf("init, shape seen before        median %7.1f us  p99 %7.1f us\n",
         pct(cached, N, 0.5) / 1e3, pct(cached, N, 0.99) / 1e3);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000000;
  const char *profile = argc > 2 ? argv[2] : NULL;
  if (n < 1000) n = 1000;
  unsetenv("TOPO_TUNER_PROFILE");
  unsetenv("TOPO_TUNER_RULES");
  unsetenv("TOPO_TUNER_FORCE");
  setenv("TOPO_TUNER_GPU", "H200", 1);
  query *q = malloc((size_t)n * sizeof *q);
  unsigned long long s = 88172645463325252ULL;
  for (int i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    q[i].coll = (int)(s % 5);
    q[i].bytes = (size_t)pow(2.0, 3.0 + (double)((s >> 8) % 1000000) / 1e6 * 27.0);
    for (int a = 0; a < 7; a++)
      for (int p = 0; p < 3; p++) {
        float bw = a < 2 ? bw2[q[i].coll][a][p] : 0;
        q[i].table[a * 3 + p] =
            bw > 0 ? lat2[q[i].coll][a][p] + (float)q[i].bytes / (1000 * bw) : -1;
      }
  }
  double m0, p0, m1, p1, b0, b1;
  bench_calls("empty tuner (baseline)", TOPO_BENCH_NOOP_SO, q, n, &m0, &p0);
  bench_calls("libtopo-tuner.so", TOPO_BENCH_TUNER_SO, q, n, &m1, &p1);
  b1 = batch_median;
  bench_calls("empty tuner (again)", TOPO_BENCH_NOOP_SO, q, n, &m0, &p0);
  b0 = batch_median;
  printf("topo over the empty call: median %+.1f ns, p99 %+.1f ns; in batches of 32 %+.1f ns\n",
         m1 - m0, p1 - p0, b1 - b0);
  /* Rule files of 0, 10, 100 lines that apply to this communicator: Ring/Simple pinned on
   * [2^k, 1.25 x 2^k], k and the collective spread over the mix (a scan would look at them all). */
  static const int nrules[] = {0, 10, 100};
  char rpath[] = "/tmp/tuner-bench-rules-XXXXXX";
  int fd = mkstemp(rpath);
  if (fd < 0) return 1;
  close(fd);
  for (int k = 0; k < 3; k++) {
    FILE *f = fopen(rpath, "w");
    if (!f) return 1;
    for (int i = 0; i < nrules[k]; i++)
      fprintf(
          f, "%s,%llu,%llu,ring,simple,-1,-1,-1\n",
          (const char *[]){"broadcast", "reduce", "allgather", "reducescatter", "allreduce"}[i % 5],
          8ull << (i * 7 % 27), (8ull << (i * 7 % 27)) + (2ull << (i * 7 % 27)));
    fclose(f);
    setenv("TOPO_TUNER_RULES", rpath, 1);
    char label[64];
    snprintf(label, sizeof label, "libtopo-tuner.so, %d rules", nrules[k]);
    double mr, pr;
    bench_calls(label, TOPO_BENCH_TUNER_SO, q, n, &mr, &pr);
    bench_calls("empty tuner (same minute)", TOPO_BENCH_NOOP_SO, q, n, &m0, &p0);
    printf("%d rules: topo over the empty call: median %+.1f ns, p99 %+.1f ns\n", nrules[k],
           mr - m0, pr - p0);
  }
  unsetenv("TOPO_TUNER_RULES");
  unlink(rpath);
  if (profile) {
    setenv("TOPO_TUNER_PROFILE", profile, 1);
    printf("init with profile %s:\n", profile);
  }
  bench_init(TOPO_BENCH_TUNER_SO);
  free(q);
  return 0;
}
