// SPDX-License-Identifier: Apache-2.0
// rules_bench: what a TOPO_TUNER_RULES file costs, by its size and shape. For 10, 1,000 and
// 100,000 rules of three shapes, libtopo-tuner.so is loaded through the plugin host as NCCL 2.28
// loads it and timed at init (a new communicator: the file read, parsed and indexed) and per
// getCollInfo call (batches of 32, median), beside an empty tuner called the same way in the same
// run. Two query mixes: "job", 64 distinct (size, numPipeOps) pairs over and over, as a training
// job calls the same collectives every step; "cold", a new random size over the rules' whole
// range each call (numPipeOps random among the file's values), so that at 100,000 rules most
// calls miss the caches (the index is megabytes). Shapes:
//   nest-pipe   rules that nest ([i, 2n - i] x scale) and differ only in numPipeOps (i + 1): the
//               worst case for a segment-per-rule-pair index (each size lies in every rule);
//   nest-entry  the same nesting, every rule numPipeOps -1, the (algorithm, protocol) cycling;
//   disjoint    one rule per range, side by side (a scan would look at half of them).
// Usage: rules_bench [calls per row (default 200000)] [largest rule count (default 100000)]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host_tuner.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

static unsigned long long rnd(unsigned long long *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

enum { NEST_PIPE, NEST_ENTRY, DISJOINT, SHAPES };
static const char *const shape_name[SHAPES] = {"nest-pipe", "nest-entry", "disjoint"};
#define SCALE 1024ull /* bytes per rule step: 100,000 rules span ~200 MB */

static void write_rules(const char *path, int shape, int n) {
  static const char *const algo[] = {"tree", "ring"};
  static const char *const proto[] = {"ll", "ll128", "simple"};
  FILE *f = fopen(path, "w");
  if (!f) exit(1);
  for (int i = 0; i < n; i++) {
    unsigned long long lo = (unsigned long long)i * SCALE, hi = (2ull * n - i) * SCALE;
    if (shape == DISJOINT) hi = lo + SCALE - 1;
    if (shape == NEST_PIPE)
      fprintf(f, "allreduce,%llu,%llu,ring,simple,-1,-1,-1,%d\n", lo, hi, i + 1);
    else fprintf(f, "allreduce,%llu,%llu,%s,%s,-1,-1,-1\n", lo, hi, algo[i % 2], proto[i / 2 % 3]);
  }
  fclose(f);
}

typedef struct query {
  size_t bytes;
  int pipe;
} query;

/* Median ns per getCollInfo over the queries, in batches of 32 (the clock's cost amortised). */
static double per_call(topo_host_tuner *t, const query *q, int nq) {
  float table[21], base[21];
  for (int i = 0; i < 21; i++) base[i] = i < 6 ? 10.0f + (float)i : -1.0f; /* Tree, Ring */
  int nb = nq / 32;
  double *ns = malloc((size_t)nb * sizeof *ns);
  for (int b = 0; b < nb; b++) {
    double t0 = now_ns();
    for (int i = b * 32; i < b * 32 + 32; i++) {
      memcpy(table, base, sizeof table);
      int nch = 0;
      topo_host_tuner_get(t, ncclFuncAllReduce, q[i].bytes, q[i].pipe, table, 0, &nch);
    }
    ns[b] = (now_ns() - t0) / 32;
  }
  double m = median(ns, nb);
  free(ns);
  return m;
}

/* One row: init (ms, a new communicator) and per-call ns of `so` with the rules at `path`, for
 * the job mix (q[0..nq) with q[i] = q[i % 64]) and the cold one (cold[0..nq)). */
static void row(const char *so, int nranks, const query *q, const query *cold, int nq,
                double *init_ms, double *job_ns, double *cold_ns) {
  topo_host_tuner t;
  if (topo_host_tuner_load(&t, so, TOPO_NCCL_2_28) != TOPO_OK) {
    fprintf(stderr, "rules_bench: cannot load %s\n", so);
    exit(1);
  }
  double t0 = now_ns();
  topo_host_tuner_init(&t, (uint64_t)nranks, (size_t)nranks, 1, NULL, NULL, NULL);
  *init_ms = (now_ns() - t0) / 1e6;
  *job_ns = per_call(&t, q, nq);
  *cold_ns = per_call(&t, cold, nq);
  topo_host_tuner_finalize(&t);
  topo_host_tuner_unload(&t);
}

int main(int argc, char **argv) {
  int nq = argc > 1 ? atoi(argv[1]) : 200000;
  int most = argc > 2 ? atoi(argv[2]) : 100000;
  if (nq < 3200) nq = 3200;
  unsetenv("TOPO_TUNER_PROFILE");
  unsetenv("TOPO_TUNER_FORCE");
  setenv("TOPO_TUNER_GPU", "H200", 1);
  char path[] = "/tmp/rules-bench-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 1;
  close(fd);
  query *q = malloc((size_t)nq * sizeof *q), *cold = malloc((size_t)nq * sizeof *cold);
  static const int counts[] = {10, 1000, 100000};
  printf("%-10s %7s | %8s | %24s | %24s\n", "", "", "", "job mix: ns per call",
         "cold: ns per call");
  printf("%-10s %7s | %8s | %7s %7s %8s | %7s %7s %8s\n", "shape", "rules", "init ms", "topo",
         "empty", "over", "topo", "empty", "over");
  int nranks = 2; /* a new shape per row: nothing is shared with an earlier row's index */
  for (int s = 0; s < SHAPES; s++)
    for (int c = 0; c < 3; c++) {
      int n = counts[c];
      if (n > most) continue;
      write_rules(path, s, n);
      setenv("TOPO_TUNER_RULES", path, 1);
      unsigned long long seed = 88172645463325252ull + (unsigned long long)n;
      for (int i = 0; i < nq; i++) {
        unsigned long long x = rnd(&seed);
        cold[i].bytes = (size_t)(x % (2ull * (unsigned long long)n * SCALE + 1));
        cold[i].pipe = s == NEST_PIPE ? 1 + (int)((x >> 40) % (unsigned long long)n) : 1;
        q[i] = i < 64 ? cold[i] : q[i % 64];
      }
      double init_ms, job, cold_ns, init0, job0, cold0;
      row(TOPO_BENCH_TUNER_SO, nranks++, q, cold, nq, &init_ms, &job, &cold_ns);
      row(TOPO_BENCH_NOOP_SO, nranks++, q, cold, nq, &init0, &job0, &cold0);
      printf("%-10s %7d | %8.2f | %7.1f %7.1f %+8.1f | %7.1f %7.1f %+8.1f\n", shape_name[s], n,
             init_ms, job, job0, job - job0, cold_ns, cold0, cold_ns - cold0);
      fflush(stdout);
    }
  unsetenv("TOPO_TUNER_RULES");
  unlink(path);
  free(q), free(cold);
  return 0;
}
