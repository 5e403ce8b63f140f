// SPDX-License-Identifier: Apache-2.0
// topo-report's scaling on inputs built to find superlinear paths: each case is analysed at n and
// 32 n (rp_analyze in a forked child: its CPU time around the call, the least of 3 runs, and its
// peak RSS), and the ratio printed beside the 32 x linear ideal (a quadratic path gives 1024).
// Usage: report_scaling [--check] [case...]; --check exits 1 when a case's ratio exceeds 128
// (4 x above linear, 8 x below quadratic), which CTest runs. report_scaling --build DIR CASE N
// writes a case's input at N into DIR (to time topo-report on it by hand). Cases (what is timed:
// the analysis, unless the case names a renderer; the analysis of its input is then untimed):
//   kineto-steps   Kineto ProfilerSteps that match no launch, each with a too-short GPU twin
//   kineto-groups  NCCL kernels each naming a different "Group size" (a row per event)
//   nested-marks   step marks nested inside each other, with a collective beside each
//   resync         a damaged region of block headers that each claim 4096 records
//   many-ranks     one small trace per rank of one communicator
//   model-window   steps with a CUPTI window every 4th, analysed with --window over the last one:
//                  the overlap model sweeps the whole input, the figures one step
//   estimate-keys  GPU-timed collectives each of its own (algorithm, protocol), and as many untimed
//                  ones of another size that each need the size-scaled estimate
//   trace-streams  collectives each on a stream of its own (binary trace)
//   kineto-streams GPU kernels each on a stream of its own (Kineto)
//   outer-step     one ProfilerStep around all the others, a kernel in each (Kineto)
//   memcpy-kinds   memcpys each of a kind of its own ("Memcpy" and 5 more characters)
//   export-streams export --chrome of trace-streams' input (a track per stream)
//   diff-rows      diff of kineto-groups' report with itself (rows matched across the runs)
//   html-rows      the HTML report (its busbw plot) of NCCL kernels of 5 functions x communicator
//                  sizes x message sizes: a row each, as many plotted series as sizes
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"
#include "report_analysis.h"
#include "report_render.h"
#include "trace_fixture.h"

#define SCALE       32
#define CHECK_RATIO 128.0
#define RUNS        3

/* What a case times. */
enum stage { ANALYSIS, RENDER_HTML, RENDER_DIFF, EXPORT_CHROME };

typedef struct scase {
  const char *name;
  size_t base;                              /* n at 1 x */
  const char *unit;                         /* what n counts */
  void (*build)(const char *dir, size_t n); /* writes the input into dir */
  enum stage stage;
  /* the --window it is analysed with (NULL: none) */
  void (*window)(size_t n, int64_t *from, int64_t *to);
} scase;

static FILE *open_in(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(2);
  }
  return f;
}

static void build_kineto_steps(const char *dir, size_t n) {
  FILE *f = open_in(dir, "steps.json");
  fputs("{\"traceEvents\":[\n", f);
  for (size_t i = 0; i < n; i++)
    fprintf(f,
            "%s{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%zu\",\"pid\":1,"
            "\"tid\":1,"
            "\"ts\":%zu,\"dur\":900},\n"
            "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":\"ProfilerStep#%zu\",\"pid\":0,"
            "\"tid\":7,\"ts\":%zu,\"dur\":5},\n"
            "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":%zu,"
            "\"dur\":100,"
            "\"args\":{\"stream\":7}}",
            i ? ",\n" : "", i, i * 1000, i, i * 1000 + 10, i * 1000 + 20);
  fputs("\n]}\n", f);
  fclose(f);
}

static void build_kineto_groups(const char *dir, size_t n) {
  FILE *f = open_in(dir, "groups.json");
  fputs("{\"traceEvents\":[\n", f);
  for (size_t i = 0; i < n; i++)
    fprintf(
        f,
        "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\","
        "\"pid\":0,\"tid\":7,\"ts\":%zu,\"dur\":50,\"args\":{\"stream\":7,\"Group size\":%zu,"
        "\"In msg nelems\":1024,\"Out msg nelems\":1024,\"dtype\":\"Float\"}}",
        i ? ",\n" : "", i * 100, i + 2);
  fputs("\n]}\n", f);
  fclose(f);
}

static void build_nested_marks(const char *dir, size_t n) {
  topo_trace_header h;
  tf_header_init(&h, 0xabc, 0, 1);
  FILE *f = open_in(dir, "nested.trace");
  tf_trace t;
  tf_begin(&t, &h, f);
  int64_t end = 1000000 + 20 * (int64_t)n + 10000;
  for (size_t i = 0; i < n; i++) {
    topo_trace_record m = tf_mark(0, 1000000 + 10 * (int64_t)i, end - 10 * (int64_t)i, i);
    tf_add(&t, &m);
  }
  for (size_t i = 0; i < n; i++) {
    int64_t at = 1000000 + 20 * (int64_t)i;
    topo_trace_record c = tf_coll(4, i, 1 << 20, at, at + 5, at + 6, at + 15, 1, 2, 4, 1);
    tf_add(&t, &c);
  }
  tf_footer(&t, NULL);
  fclose(f);
}

static void build_resync(const char *dir, size_t n) {
  topo_trace_header h;
  tf_header_init(&h, 0xabc, 0, 1);
  FILE *f = open_in(dir, "damaged.trace");
  fwrite(&h, sizeof h, 1, f);
  fputs("damage!damage!..", f); /* 16 bytes that are no block */
  topo_trace_block b = {TOPO_TRACE_BLOCK_MAGIC, TOPO_TRACE_MAX_BLOCK_RECORDS, 0, 0};
  for (size_t i = 0; i < n; i++) fwrite(&b, sizeof b, 1, f);
  fclose(f);
}

static void build_many_ranks(const char *dir, size_t n) {
  for (size_t r = 0; r < n; r++) {
    topo_trace_header h;
    tf_header_init(&h, 0x77, (int)r, (int)n);
    char name[64];
    snprintf(name, sizeof name, "r%06zu.trace", r);
    FILE *f = open_in(dir, name);
    tf_trace t;
    tf_begin(&t, &h, f);
    for (int i = 0; i < 4; i++) {
      int64_t at = 1000000 + 100000 * i;
      topo_trace_record c =
          tf_coll(4, (uint64_t)i, 1 << 20, at, at + 50, at + 100, at + 5000, 1, 2, 4, 1);
      tf_add(&t, &c);
    }
    tf_footer(&t, NULL);
    fclose(f);
  }
}

static void build_estimate_keys(const char *dir, size_t n) {
  topo_trace_header h;
  tf_header_init(&h, 0xe57, 0, 1);
  FILE *f = open_in(dir, "keys.trace");
  tf_trace t;
  tf_begin(&t, &h, f);
  for (size_t i = 0; i < 2 * n; i++) {
    int64_t at = 1000000 + 1000 * (int64_t)i;
    int algo = (int)(i % n % 250), proto = (int)(i % n / 250 % 250), timed = i < n;
    topo_trace_record c = tf_coll(4, i, timed ? 1 << 20 : 1 << 10, at, at + 5, timed ? at + 10 : 0,
                                  timed ? at + 500 : 0, algo, proto, 4, 1);
    tf_add(&t, &c);
  }
  tf_footer(&t, NULL);
  fclose(f);
}

static void build_trace_streams(const char *dir, size_t n) {
  topo_trace_header h;
  tf_header_init(&h, 0x57e, 0, 1);
  FILE *f = open_in(dir, "streams.trace");
  tf_trace t;
  tf_begin(&t, &h, f);
  for (size_t i = 0; i < n; i++) {
    int64_t at = 1000000 + 1000 * (int64_t)i;
    topo_trace_record c =
        tf_coll(4, i, 1 << 20, at, at + 5, at + 10, at + 500, 1, 2, 4, (uint32_t)i + 1);
    tf_add(&t, &c);
  }
  tf_footer(&t, NULL);
  fclose(f);
}

static void build_kineto_streams(const char *dir, size_t n) {
  FILE *f = open_in(dir, "streams.json");
  fputs("{\"traceEvents\":[\n", f);
  for (size_t i = 0; i < n; i++)
    fprintf(f,
            "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":%zu,"
            "\"ts\":%zu,\"dur\":50,\"args\":{\"stream\":%zu,\"correlation\":%zu}}",
            i ? ",\n" : "", i + 1, i * 100, i + 1, i + 1);
  fputs("\n]}\n", f);
  fclose(f);
}

static void build_outer_step(const char *dir, size_t n) {
  FILE *f = open_in(dir, "long-step.json");
  fprintf(f,
          "{\"traceEvents\":[\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":"
          "\"ProfilerStep#0\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":%zu}",
          1000 * n + 1000);
  for (size_t i = 1; i <= n; i++)
    fprintf(f,
            ",\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%zu\","
            "\"pid\":1,\"tid\":1,\"ts\":%zu,\"dur\":900},\n{\"ph\":\"X\",\"cat\":\"kernel\","
            "\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":%zu,\"dur\":100,\"args\":{\"stream\":7}}",
            i, i * 1000, i * 1000 + 20);
  fputs("\n]}\n", f);
  fclose(f);
}

static void build_memcpy_kinds(const char *dir, size_t n) {
  FILE *f = open_in(dir, "memcpy.json");
  fputs("{\"traceEvents\":[\n", f);
  for (size_t i = 0; i < n; i++)
    fprintf(f,
            "%s{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy%05zx\",\"pid\":0,"
            "\"tid\":7,\"ts\":%zu,\"dur\":50,\"args\":{\"stream\":7,\"bytes\":4096}}",
            i ? ",\n" : "", i, i * 100);
  fputs("\n]}\n", f);
  fclose(f);
}

/* Rows of 5 functions x communicator sizes x 26 message sizes 4 x apart: as many communicator
 * sizes as n / 130 (a plotted series each, up to 64 per function). */
static void build_html_rows(const char *dir, size_t n) {
  static const char *func[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
  FILE *f = open_in(dir, "rows.json");
  fputs("{\"traceEvents\":[\n", f);
  for (size_t i = 0; i < n; i++) {
    size_t j = i / 5, bucket = j % 26, size = j / 26;
    fprintf(f,
            "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_%s_Sum_f32_RING_LL\","
            "\"pid\":0,\"tid\":7,\"ts\":%zu,\"dur\":%zu,\"args\":{\"stream\":7,\"Group "
            "size\":%zu,\"In msg nelems\":%zu,\"Out msg nelems\":%zu,\"dtype\":\"Float\"}}",
            i ? ",\n" : "", func[i % 5], i * 100, 20 + i % 50, size + 2,
            (size_t)1 << (2 * bucket + 1), (size_t)1 << (2 * bucket + 1));
  }
  fputs("\n]}\n", f);
  fclose(f);
}

/* n steps of 1000 ns (marks), a GPU-timed AllReduce in each; CUPTI recorded every 4th step (a
 * compute kernel in each of those). */
static void build_model_window(const char *dir, size_t n) {
  topo_trace_header h;
  tf_header_init(&h, 0xabd, 0, 1);
  FILE *f = open_in(dir, "model.trace");
  tf_trace t;
  tf_begin(&t, &h, f);
  for (size_t i = 0; i < n; i++) {
    int64_t b = 1000000 + 1000 * (int64_t)i;
    if (i % 4 == 0) {
      topo_trace_record u;
      memset(&u, 0, sizeof u);
      u.cupti.type = TOPO_REC_CUPTI;
      u.cupti.state = TOPO_CUPTI_RECORDED;
      u.cupti.cpu_start_ns = b;
      u.cupti.cpu_stop_ns = b + 1000;
      tf_add(&t, &u);
      topo_trace_record k = tf_kernel(TOPO_KERNEL_COMPUTE, 0, b + 100, b + 600, 7);
      tf_add(&t, &k);
    }
    topo_trace_record c = tf_coll(4, i, 1 << 20, b + 350, b + 360, b + 400,
                                  b + 400 + 100 + (int64_t)(i % 7) * 50, 1, 2, 4, 1);
    tf_add(&t, &c);
    topo_trace_record m = tf_mark(0, b, b + 1000, i);
    tf_add(&t, &m);
  }
  tf_footer(&t, NULL);
  fclose(f);
}

static void window_last_step(size_t n, int64_t *from, int64_t *to) {
  *from = 1000000 + 1000 * (int64_t)(n - 1);
  *to = *from + 1000;
}

static const scase cases[] = {
    {"kineto-steps", 1000, "steps", build_kineto_steps, ANALYSIS, NULL},
    {"kineto-groups", 1000, "kernels", build_kineto_groups, ANALYSIS, NULL},
    {"nested-marks", 1000, "marks", build_nested_marks, ANALYSIS, NULL},
    {"resync", 32768, "headers", build_resync, ANALYSIS, NULL},
    {"many-ranks", 32, "traces", build_many_ranks, ANALYSIS, NULL},
    {"model-window", 4000, "steps", build_model_window, ANALYSIS, window_last_step},
    {"estimate-keys", 1000, "keys", build_estimate_keys, ANALYSIS, NULL},
    {"trace-streams", 2000, "streams", build_trace_streams, ANALYSIS, NULL},
    {"kineto-streams", 2000, "streams", build_kineto_streams, ANALYSIS, NULL},
    {"outer-step", 1000, "steps", build_outer_step, ANALYSIS, NULL},
    {"memcpy-kinds", 1000, "kinds", build_memcpy_kinds, ANALYSIS, NULL},
    {"export-streams", 4000, "streams", build_trace_streams, EXPORT_CHROME, NULL},
    {"diff-rows", 1000, "rows", build_kineto_groups, RENDER_DIFF, NULL},
    {"html-rows", 520, "rows", build_html_rows, RENDER_HTML, NULL},
};

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What the case times, on the input in dir: CPU seconds. -1 when it fails. */
static double run_stage(const scase *c, size_t n, const char *dir) {
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  if (c->window) {
    opt.window = 1;
    c->window(n, &opt.from, &opt.to);
  }
  rp_report r;
  double t = cpu_now();
  if (c->stage == EXPORT_CHROME)
    return rp_export_chrome(paths, 1, &opt, "/dev/null") == TOPO_OK ? cpu_now() - t : -1;
  topo_status st = rp_analyze(paths, 1, &opt, &r);
  if (st != TOPO_OK && st != TOPO_ERR_INVALID) return -1;
  if (c->stage == ANALYSIS) return cpu_now() - t;
  t = cpu_now();
  if (c->stage == RENDER_HTML) {
    if (rp_render_html(&r, "/dev/null") != TOPO_OK) return -1;
  } else {
    FILE *f = fopen("/dev/null", "w");
    if (!f) return -1;
    rp_render_diff(&r, &r, "a", "b", f);
    fclose(f);
  }
  return cpu_now() - t;
}

/* The case on dir in a child: the CPU seconds of what it times (sent back through a pipe) and the
 * child's peak RSS (KB). 0 on success. */
static int analyse(const scase *c, size_t n, const char *dir, double *cpu, long *rss_kb) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(fd[0]);
    double t = run_stage(c, n, dir);
    _exit(write(fd[1], &t, sizeof t) == sizeof t && t >= 0 ? 0 : 1);
  }
  close(fd[1]);
  ssize_t got = read(fd[0], cpu, sizeof *cpu);
  close(fd[0]);
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) ||
      got != sizeof *cpu)
    return -1;
  *rss_kb = ru.ru_maxrss;
  return 0;
}

/* Least CPU time of RUNS analyses of the case at n, and the peak RSS of the last one. */
static int measure(const scase *c, size_t n, double *cpu, long *rss_kb) {
  char dir[] = "/tmp/topo-scaling-XXXXXX";
  if (!mkdtemp(dir)) return -1;
  c->build(dir, n);
  *cpu = 1e30;
  int rc = 0;
  for (int i = 0; i < RUNS && !rc; i++) {
    double t;
    rc = analyse(c, n, dir, &t, rss_kb);
    if (t < *cpu) *cpu = t;
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) rc = -1;
  return rc;
}

static const scase *case_named(const char *name) {
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
    if (!strcmp(cases[k].name, name)) return &cases[k];
  return NULL;
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--build")) { /* --build DIR CASE N */
    const scase *c = case_named(argv[3]);
    char *end;
    unsigned long long n = strtoull(argv[4], &end, 10);
    if (!c || *end || !n) {
      fprintf(stderr, "usage: report_scaling --build DIR CASE N\n");
      return 2;
    }
    c->build(argv[2], (size_t)n);
    return 0;
  }
  int check = 0, failed = 0, ran = 0;
  for (int i = 1; i < argc; i++) check |= !strcmp(argv[i], "--check");
  printf("%-14s %8s %8s %9s %9s %7s %11s\n", "case", "n", "32 n", "cpu 1x", "cpu 32x", "ratio",
         "RSS 32x");
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    const scase *c = &cases[k];
    int wanted = 1;
    for (int i = 1; i < argc; i++)
      if (argv[i][0] != '-') wanted = 0;
    for (int i = 1; i < argc; i++)
      if (!strcmp(argv[i], c->name)) wanted = 1;
    if (!wanted) continue;
    double t1, tn;
    long rss1, rssn;
    if (measure(c, c->base, &t1, &rss1) || measure(c, c->base * SCALE, &tn, &rssn)) {
      printf("%-14s analysis failed\n", c->name);
      failed = 1;
      continue;
    }
    double ratio = tn / (t1 > 1e-6 ? t1 : 1e-6);
    int bad = ratio > CHECK_RATIO;
    printf("%-14s %8zu %8zu %8.4fs %8.4fs %6.1fx %8.1f MB %s%s\n", c->name, c->base,
           c->base * SCALE, t1, tn, ratio, rssn / 1024.0, c->unit, bad ? "  SUPERLINEAR" : "");
    failed |= bad;
    ran++;
  }
  if (!ran) {
    fprintf(stderr, "usage: report_scaling [--check] [case...] | --build DIR CASE N\n");
    return 2;
  }
  return check && failed ? 1 : 0;
}
