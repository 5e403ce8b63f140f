/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-profiler-cost: what an NCCL profiler plugin costs an eager AllReduce, measured the way
 * tests/data/nccl-2.28.9-2xh200/profiler-cost-*.txt were. One process drives every local GPU
 * (ncclCommInitAll) and enqueues AllReduce (float, sum, out of place) back to back, eagerly, no
 * CUDA graphs. A figure is a batch of N calls timed by CUDA events on GPU 0's stream, divided by
 * N, repeated R times: one line `config eager_all_reduce bytes median_us min_us max_us` per size
 * on stdout (N = 2000 below 1 MB, 200 from 1 MB on). Which profiler runs is the caller's business
 * (NCCL_PROFILER_PLUGIN and friends in the environment, one configuration per process since NCCL
 * loads its profiler once per process); --config only labels the lines.
 * `--summarize FILE...` reads such lines (several rounds of several configurations) and prints,
 * per size, the median of the per-round medians of each configuration, its overhead against the
 * baseline configuration, and the verdict on the targets of docs/profiler.md for one checked
 * configuration (<= 3 % from 128 KB, <= 10 % below). No GPU is needed for that mode.
 * Exit (common/cli.h): 0 success (summary: targets met), 1 a CUDA/NCCL failure, no usable GPU,
 * fewer GPUs than --ngpus, a wrong AllReduce result, a missed target or no data for the check,
 * 2 misuse.
 * Single-threaded; every allocation through common/alloc.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "alloc.h"
#include "calibrate.h"
#include "cli.h"
#include "topo_version.h"

#define MAX_GPUS    64
#define MAX_SIZES   32
#define MAX_REPS    1000
#define MAX_CALLS   1000000
#define MAX_CONFIGS 16
#define OP_NAME     "eager_all_reduce"

static const char *prog = "topo-profiler-cost";

typedef struct options {
  const char *config;
  int ngpus; /* 0 = every visible GPU */
  uint64_t sizes[MAX_SIZES];
  int nsizes;
  int calls_small, calls_large;
  uint64_t large_from; /* sizes >= this get calls_large */
  int reps;
  int warmup; /* calls before each size; 0 = max(20, calls / 10) */
  int summarize;
  const char *baseline, *check;
  double target_small_pct, target_large_pct;
  uint64_t target_from; /* sizes >= this are held to target_large_pct */
} options;

/* ---------------------------------------------------------------------------------------------
 * Options
 */

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s [options]                 time eager AllReduce on every local GPU\n"
          "       %s --summarize [options] FILE...   table and targets from such output\n"
          "Measurement:\n"
          "  --config NAME        label of the output lines (default: run)\n"
          "  -g, --ngpus N        GPUs 0..N-1 (default: every visible GPU)\n"
          "  -s, --sizes LIST     comma-separated sizes in bytes, K/M/G suffixes (default "
          "8,128K,1M,16M,128M)\n"
          "  --calls-small N      calls per batch below --large-from (default 2000)\n"
          "  --calls-large N      calls per batch from --large-from on (default 200)\n"
          "  --large-from BYTES   (default 1M)\n"
          "  -r, --reps R         batches per size: median/min/max over them (default 10)\n"
          "  -w, --warmup N       calls before each size (default max(20, calls/10))\n"
          "  --quick              sizes 8,1M, 20 calls per batch, 3 batches (a load check)\n"
          "Summary:\n"
          "  --baseline NAME      configuration overheads are measured against (default off)\n"
          "  --check NAME         configuration held to the targets (default topo-default)\n"
          "  --target-small PCT   limit below --target-from (default 10)\n"
          "  --target-large PCT   limit from --target-from on (default 3)\n"
          "  --target-from BYTES  (default 128K)\n"
          "  -h, --help, --version\n"
          "Exit status: 0 done (summary: targets met), 1 a failure or a missed target, 2 misuse.\n"
          "\n"
          "Examples:\n"
          "  %s --config off > cost.txt\n"
          "  NCCL_PROFILER_PLUGIN=topo %s --config topo-default >> cost.txt\n"
          "  %s --summarize --check topo-default cost.txt\n",
          prog, prog, prog, prog, prog);
}

static int parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

static int parse_pct(const char *s, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (!*s || *end || !isfinite(v) || v < 0 || v > 1000) return -1;
  *out = v;
  return 0;
}

/* "8,128K,1M" -> sizes rounded down to a multiple of 4 bytes (one float at least). */
static int parse_sizes(const char *list, options *o) {
  char buf[512];
  if (strlen(list) >= sizeof buf) return -1;
  strcpy(buf, list);
  o->nsizes = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    uint64_t b;
    if (o->nsizes >= MAX_SIZES || topo_cal_parse_size(tok, &b) || b == 0 || b > (1ull << 40))
      return -1;
    b &= ~(uint64_t)3;
    o->sizes[o->nsizes++] = b < 4 ? 4 : b;
  }
  return o->nsizes > 0 ? 0 : -1;
}

enum {
  O_CONFIG = 256,
  O_CALLS_SMALL,
  O_CALLS_LARGE,
  O_LARGE_FROM,
  O_QUICK,
  O_SUMMARIZE,
  O_BASELINE,
  O_CHECK,
  O_TSMALL,
  O_TLARGE,
  O_TFROM,
  O_VERSION
};

/* Returns 0, 1 (help/version printed: exit 0), or 2 after a one-line error. *first_file is the
 * index of the first non-option argument. */
static const struct option long_opts[] = {{"config", required_argument, 0, O_CONFIG},
                                          {"ngpus", required_argument, 0, 'g'},
                                          {"sizes", required_argument, 0, 's'},
                                          {"calls-small", required_argument, 0, O_CALLS_SMALL},
                                          {"calls-large", required_argument, 0, O_CALLS_LARGE},
                                          {"large-from", required_argument, 0, O_LARGE_FROM},
                                          {"reps", required_argument, 0, 'r'},
                                          {"warmup", required_argument, 0, 'w'},
                                          {"quick", no_argument, 0, O_QUICK},
                                          {"summarize", no_argument, 0, O_SUMMARIZE},
                                          {"baseline", required_argument, 0, O_BASELINE},
                                          {"check", required_argument, 0, O_CHECK},
                                          {"target-small", required_argument, 0, O_TSMALL},
                                          {"target-large", required_argument, 0, O_TLARGE},
                                          {"target-from", required_argument, 0, O_TFROM},
                                          {"help", no_argument, 0, 'h'},
                                          {"version", no_argument, 0, O_VERSION},
                                          {0, 0, 0, 0}};

static void options_default(options *o) {
  memset(o, 0, sizeof *o);
  o->config = "run";
  parse_sizes("8,128K,1M,16M,128M", o);
  o->calls_small = 2000;
  o->calls_large = 200;
  o->large_from = 1 << 20;
  o->reps = 10;
  o->baseline = "off";
  o->check = "topo-default";
  o->target_small_pct = 10;
  o->target_large_pct = 3;
  o->target_from = 128 << 10;
}

/* One option with its value `a`. Returns 0, 1 when the value is bad. */
static int apply_option(options *o, int c, const char *a, int *quick) {
  switch (c) {
  case O_CONFIG: o->config = a; return !*a || strchr(a, ' ') != NULL;
  case 'g': return parse_int(a, 1, MAX_GPUS, &o->ngpus) != 0;
  case 's': return parse_sizes(a, o) != 0;
  case O_CALLS_SMALL: return parse_int(a, 1, MAX_CALLS, &o->calls_small) != 0;
  case O_CALLS_LARGE: return parse_int(a, 1, MAX_CALLS, &o->calls_large) != 0;
  case O_LARGE_FROM: return topo_cal_parse_size(a, &o->large_from) != 0;
  case 'r': return parse_int(a, 1, MAX_REPS, &o->reps) != 0;
  case 'w': return parse_int(a, 0, MAX_CALLS, &o->warmup) != 0;
  case O_QUICK: *quick = 1; return 0;
  case O_SUMMARIZE: o->summarize = 1; return 0;
  case O_BASELINE: o->baseline = a; return 0;
  case O_CHECK: o->check = a; return 0;
  case O_TSMALL: return parse_pct(a, &o->target_small_pct) != 0;
  case O_TLARGE: return parse_pct(a, &o->target_large_pct) != 0;
  case O_TFROM: return topo_cal_parse_size(a, &o->target_from) != 0;
  default: return 1;
  }
}

/* Parse argv into *o; *first_file: the first file operand (--summarize). Returns 0 to go on,
 * 1 after --help or --version (exit 0), 2 on misuse (one line on stderr). */
static int parse_options(options *o, int argc, char **argv, int *first_file) {
  options_default(o);
  int quick = 0, c, li = -1;
  topo_cli_reset();
  while ((c = getopt_long(argc, argv, ":g:s:r:w:h", long_opts, &li)) != -1) {
    char name[40];
    if (li >= 0) snprintf(name, sizeof name, "--%s", long_opts[li].name);
    else snprintf(name, sizeof name, "-%c", c);
    li = -1;
    if (c == 'h') {
      usage(stdout);
      return 1;
    }
    if (c == O_VERSION) {
      printf("%s %s (built against NCCL %d.%d.%d headers)\n", prog, TOPO_VERSION, NCCL_MAJOR,
             NCCL_MINOR, NCCL_PATCH);
      return 1;
    }
    if (c == ':' || c == '?') return topo_cli_getopt_error(c, argv, long_opts);
    if (apply_option(o, c, optarg, &quick))
      return topo_cli_usage("bad value '%s' for %s", optarg, name);
  }
  if (quick) {
    parse_sizes("8,1M", o);
    o->calls_small = o->calls_large = 20;
    o->reps = 3;
    o->warmup = 5;
  }
  *first_file = optind;
  if (o->summarize && optind >= argc) return topo_cli_usage("--summarize needs at least one file");
  if (!o->summarize && optind < argc)
    return topo_cli_usage("unexpected argument '%s'", argv[optind]);
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Measurement
 */

typedef struct gpu {
  int dev;
  cudaStream_t stream;
  void *send, *recv;
  ncclComm_t comm;
} gpu;

typedef struct bench {
  const options *o;
  int n;
  gpu g[MAX_GPUS];
  cudaEvent_t ev0, ev1; /* on GPU 0 */
} bench;

#define CUDA_TRY(call)                                                             \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s: error: %s: %s\n", prog, #call, cudaGetErrorString(e_)); \
      return -1;                                                                   \
    }                                                                              \
  } while (0)

#define NCCL_TRY(call)                                                                \
  do {                                                                                \
    ncclResult_t n_ = (call);                                                         \
    if (n_ != ncclSuccess) {                                                          \
      const char *l_ = ncclGetLastError(NULL);                                        \
      fprintf(stderr, "%s: error: %s: %s%s%s\n", prog, #call, ncclGetErrorString(n_), \
              l_ &&*l_ ? " - " : "", l_ ? l_ : "");                                   \
      return -1;                                                                      \
    }                                                                                 \
  } while (0)

/* One AllReduce of `count` floats on every GPU, as one NCCL group when there are several. */
static int issue(bench *b, size_t count) {
  if (b->n > 1) NCCL_TRY(ncclGroupStart());
  for (int i = 0; i < b->n; i++) {
    gpu *g = &b->g[i];
    ncclResult_t r = ncclAllReduce(g->send, g->recv, count, ncclFloat, ncclSum, g->comm, g->stream);
    if (r != ncclSuccess) {
      const char *l = ncclGetLastError(NULL);
      if (b->n > 1) (void)ncclGroupEnd();
      fprintf(stderr, "%s: error: ncclAllReduce of %zu floats on GPU %d: %s%s%s\n", prog, count,
              g->dev, ncclGetErrorString(r), l && *l ? " - " : "", l ? l : "");
      return -1;
    }
  }
  if (b->n > 1) NCCL_TRY(ncclGroupEnd());
  return 0;
}

static int sync_all(bench *b) {
  for (int i = 0; i < b->n; i++) {
    CUDA_TRY(cudaSetDevice(b->g[i].dev));
    CUDA_TRY(cudaStreamSynchronize(b->g[i].stream));
  }
  return 0;
}

/* An error NCCL reports asynchronously (a peer failed, a proxy thread gave up). */
static int async_errors(bench *b) {
  for (int i = 0; i < b->n; i++) {
    ncclResult_t st = ncclSuccess;
    NCCL_TRY(ncclCommGetAsyncError(b->g[i].comm, &st));
    if (st != ncclSuccess && st != ncclInProgress) {
      fprintf(stderr, "%s: error: NCCL reports an asynchronous error on GPU %d: %s\n", prog,
              b->g[i].dev, ncclGetErrorString(st));
      return -1;
    }
  }
  return 0;
}

/* One figure: us per call over each of o->reps batches into samples. */
static int time_size(bench *b, uint64_t bytes, double *samples) {
  const options *o = b->o;
  size_t count = (size_t)(bytes / sizeof(float));
  int calls = bytes >= o->large_from ? o->calls_large : o->calls_small;
  int warm = o->warmup ? o->warmup : (calls / 10 > 20 ? calls / 10 : 20);
  for (int w = 0; w < warm; w++)
    if (issue(b, count)) return -1;
  if (sync_all(b)) return -1;
  for (int r = 0; r < o->reps; r++) {
    CUDA_TRY(cudaSetDevice(b->g[0].dev));
    CUDA_TRY(cudaEventRecord(b->ev0, b->g[0].stream));
    for (int k = 0; k < calls; k++)
      if (issue(b, count)) return -1;
    CUDA_TRY(cudaSetDevice(b->g[0].dev));
    CUDA_TRY(cudaEventRecord(b->ev1, b->g[0].stream));
    CUDA_TRY(cudaEventSynchronize(b->ev1));
    if (sync_all(b)) return -1; /* every batch starts with idle GPUs */
    float ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, b->ev0, b->ev1));
    samples[r] = (double)ms * 1000.0 / calls;
  }
  return async_errors(b);
}

/* After the timing: rank i sends {i+1, 2(i+1)}; every rank must receive the sums. */
static int check_result(bench *b) {
  float want0 = 0, want1 = 0;
  for (int i = 0; i < b->n; i++) {
    float v[2] = {(float)(i + 1), (float)(2 * (i + 1))};
    want0 += v[0];
    want1 += v[1];
    /* On the collective's own stream: a non-blocking stream does not wait for the legacy default
     * stream, and a pageable cudaMemcpy may return before its DMA lands. */
    CUDA_TRY(cudaSetDevice(b->g[i].dev));
    CUDA_TRY(cudaMemcpyAsync(b->g[i].send, v, sizeof v, cudaMemcpyHostToDevice, b->g[i].stream));
    CUDA_TRY(cudaMemsetAsync(b->g[i].recv, 0, sizeof v, b->g[i].stream));
    CUDA_TRY(cudaStreamSynchronize(b->g[i].stream)); /* v lives on this stack frame */
  }
  if (issue(b, 2) || sync_all(b)) return -1;
  for (int i = 0; i < b->n; i++) {
    float got[2];
    CUDA_TRY(cudaSetDevice(b->g[i].dev));
    CUDA_TRY(cudaMemcpy(got, b->g[i].recv, sizeof got, cudaMemcpyDeviceToHost));
    if (got[0] != want0 || got[1] != want1) {
      fprintf(stderr, "%s: error: AllReduce result wrong on GPU %d: %g %g, expected %g %g\n", prog,
              b->g[i].dev, got[0], got[1], want0, want1);
      return -1;
    }
  }
  return 0;
}

static void describe_nccl(void) {
  int v = 0;
  const char *path = "?";
  Dl_info info;
  if (ncclGetVersion(&v) != ncclSuccess) v = 0;
  /* The definition the dynamic linker binds (a preloaded libnccl wins); taking the function's
   * address could name the executable's PLT slot in a non-PIE build. */
  void *fn = dlsym(RTLD_DEFAULT, "ncclGetVersion");
  if (!fn) fn = (void *)ncclGetVersion;
  if (dladdr(fn, &info) && info.dli_fname) path = info.dli_fname;
  int major = v >= 10000 ? v / 10000 : v / 1000, minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10;
  const char *plugin = getenv("NCCL_PROFILER_PLUGIN");
  fprintf(stderr, "%s: NCCL version %d.%d.%d (code %d) from %s; NCCL_PROFILER_PLUGIN=%s\n", prog,
          major, minor, v % 100, v, path, plugin && *plugin ? plugin : "(unset)");
}

/* After a failure the communicators are aborted (a destroy could wait for a peer that failed). */
static void teardown(bench *b, int abort_comms) {
  for (int i = 0; i < b->n && !abort_comms; i++) { /* after a failure a stream may never drain */
    gpu *g = &b->g[i];
    cudaSetDevice(g->dev);
    if (g->stream) cudaStreamSynchronize(g->stream);
  }
  for (int i = 0; i < b->n; i++)
    if (b->g[i].comm) {
      ncclResult_t r = abort_comms ? ncclCommAbort(b->g[i].comm) : ncclCommDestroy(b->g[i].comm);
      if (r != ncclSuccess)
        fprintf(stderr, "%s: warning: %s: %s\n", prog,
                abort_comms ? "ncclCommAbort" : "ncclCommDestroy", ncclGetErrorString(r));
      b->g[i].comm = NULL;
    }
  if (b->n > 0) {
    cudaSetDevice(b->g[0].dev);
    if (b->ev0) cudaEventDestroy(b->ev0);
    if (b->ev1) cudaEventDestroy(b->ev1);
  }
  for (int i = 0; i < b->n; i++) {
    gpu *g = &b->g[i];
    cudaSetDevice(g->dev);
    if (g->send) cudaFree(g->send);
    if (g->recv) cudaFree(g->recv);
    if (g->stream) cudaStreamDestroy(g->stream);
  }
}

static int setup(bench *b) {
  uint64_t max_bytes = 0;
  for (int s = 0; s < b->o->nsizes; s++)
    if (b->o->sizes[s] > max_bytes) max_bytes = b->o->sizes[s];
  int devs[MAX_GPUS];
  for (int i = 0; i < b->n; i++) {
    gpu *g = &b->g[i];
    g->dev = devs[i] = i;
    CUDA_TRY(cudaSetDevice(g->dev));
    CUDA_TRY(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    CUDA_TRY(cudaMalloc(&g->send, (size_t)max_bytes));
    CUDA_TRY(cudaMalloc(&g->recv, (size_t)max_bytes));
    CUDA_TRY(cudaMemset(g->send, 0, (size_t)max_bytes));
    CUDA_TRY(cudaMemset(g->recv, 0, (size_t)max_bytes));
    CUDA_TRY(
        cudaDeviceSynchronize()); /* the memsets ran on the legacy stream, NCCL uses g->stream */
  }
  CUDA_TRY(cudaSetDevice(b->g[0].dev));
  CUDA_TRY(cudaEventCreate(&b->ev0));
  CUDA_TRY(cudaEventCreate(&b->ev1));
  ncclComm_t comms[MAX_GPUS];
  NCCL_TRY(ncclCommInitAll(comms, b->n, devs));
  for (int i = 0; i < b->n; i++) b->g[i].comm = comms[i];
  return 0;
}

static int measure(const options *o) {
  describe_nccl();
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev < 1) {
    fprintf(stderr, "%s: error: no usable GPU (%s)\n", prog,
            e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return TOPO_CLI_FAILED;
  }
  if (o->ngpus > ndev) {
    fprintf(stderr, "%s: error: --ngpus %d but %d GPU(s) visible\n", prog, o->ngpus, ndev);
    return TOPO_CLI_FAILED;
  }
  int n = o->ngpus ? o->ngpus : (ndev < MAX_GPUS ? ndev : MAX_GPUS);
  struct cudaDeviceProp prop;
  memset(&prop, 0, sizeof prop);
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) strcpy(prop.name, "?");
  fprintf(stderr, "%s: config %s: %d x %s, %d size(s), %d batch(es) each\n", prog, o->config, n,
          prop.name, o->nsizes, o->reps);
  if (n == 1) fprintf(stderr, "%s: warning: one GPU: the AllReduce is a local copy\n", prog);

  bench *b = topo_calloc(1, sizeof *b);
  double *samples = topo_calloc((size_t)o->reps, sizeof *samples);
  if (!b || !samples) {
    fprintf(stderr, "%s: error: out of memory\n", prog);
    topo_free(b);
    topo_free(samples);
    return 1;
  }
  b->o = o;
  b->n = n;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = setup(b) ? 1 : 0;
  for (int s = 0; s < o->nsizes && !rc; s++) {
    topo_cal_stats st;
    if (time_size(b, o->sizes[s], samples) || topo_cal_stats_compute(samples, o->reps, &st)) {
      rc = 1;
      break;
    }
    printf("%s %s %" PRIu64 " %.2f %.2f %.2f\n", o->config, OP_NAME, o->sizes[s], st.median, st.min,
           st.max);
    fflush(stdout);
  }
  if (!rc && check_result(b)) rc = 1;
  teardown(b, rc != 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "%s: config %s: %s in %.1f s\n", prog, o->config, rc ? "FAILED" : "done",
          (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
  topo_free(samples);
  topo_free(b);
  return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Summary
 */

typedef struct row {
  char config[64];
  char op[64];
  uint64_t bytes;
  double median;
} row;

typedef struct table {
  row *rows;
  int n, cap;
  char configs[MAX_CONFIGS][64];
  int nconfigs;
  int skipped; /* malformed lines */
} table;

static int add_row(table *t, const row *r) {
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 64;
    row *p = topo_realloc(t->rows, (size_t)cap * sizeof *p);
    if (!p) return -1;
    t->rows = p;
    t->cap = cap;
  }
  t->rows[t->n++] = *r;
  int known = 0;
  for (int c = 0; c < t->nconfigs; c++) known |= !strcmp(t->configs[c], r->config);
  if (!known && t->nconfigs < MAX_CONFIGS) snprintf(t->configs[t->nconfigs++], 64, "%s", r->config);
  return 0;
}

static int read_file(table *t, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "%s: error: cannot read %s\n", prog, path);
    return -1;
  }
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char *p = line + strspn(line, " \t");
    if (*p == '#' || *p == '\n' || !*p) continue;
    row r;
    double mn, mx;
    memset(&r, 0, sizeof r);
    if (sscanf(p, "%63s %63s %" SCNu64 " %lf %lf %lf", r.config, r.op, &r.bytes, &r.median, &mn,
               &mx) != 6 ||
        !isfinite(r.median) || r.median <= 0) {
      t->skipped++;
      continue;
    }
    if (add_row(t, &r)) {
      fclose(f);
      fprintf(stderr, "%s: error: out of memory\n", prog);
      return -1;
    }
  }
  fclose(f);
  return 0;
}

/* Per-round medians of (config, op, bytes) -> their median (stats of the rounds in *st). */
static int rounds_of(const table *t, const char *config, const char *op, uint64_t bytes,
                     topo_cal_stats *st) {
  double v[256];
  int n = 0;
  for (int i = 0; i < t->n && n < 256; i++)
    if (t->rows[i].bytes == bytes && !strcmp(t->rows[i].config, config) &&
        !strcmp(t->rows[i].op, op))
      v[n++] = t->rows[i].median;
  if (n == 0 || topo_cal_stats_compute(v, n, st)) return 0;
  return n;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Prints the table of one op; returns 0 (targets met), 1 (missed), 2 (no data for the check). */
static int summarize_op(const table *t, const char *op, const options *o) {
  uint64_t sizes[256];
  int ns = 0;
  for (int i = 0; i < t->n; i++) {
    if (strcmp(t->rows[i].op, op)) continue;
    int seen = 0;
    for (int s = 0; s < ns; s++) seen |= sizes[s] == t->rows[i].bytes;
    if (!seen && ns < 256) sizes[ns++] = t->rows[i].bytes;
  }
  qsort(sizes, (size_t)ns, sizeof sizes[0], cmp_u64);

  printf(
      "# %s: us per call, median of the per-round medians (rounds in brackets); overhead vs %s\n",
      op, o->baseline);
  printf("%-9s", "size");
  for (int c = 0; c < t->nconfigs; c++) printf(" %22s", t->configs[c]);
  printf("   %s rounds min..max\n", o->baseline);
  for (int s = 0; s < ns; s++) {
    char sz[32];
    topo_cal_format_bytes(sizes[s], sz, sizeof sz);
    printf("%-9s", sz);
    topo_cal_stats base;
    int nb = rounds_of(t, o->baseline, op, sizes[s], &base);
    for (int c = 0; c < t->nconfigs; c++) {
      topo_cal_stats st;
      int n = rounds_of(t, t->configs[c], op, sizes[s], &st);
      char cell[64];
      if (!n) snprintf(cell, sizeof cell, "-");
      else if (!nb || !strcmp(t->configs[c], o->baseline))
        snprintf(cell, sizeof cell, "%.2f [%d]", st.median, n);
      else
        snprintf(cell, sizeof cell, "%.2f %+.1f%% [%d]", st.median,
                 100.0 * (st.median / base.median - 1.0), n);
      printf(" %22s", cell);
    }
    if (nb) printf("   %.2f..%.2f", base.min, base.max);
    printf("\n");
  }

  int checked = 0, missed = 0;
  printf("# targets for %s vs %s: <= %.0f%% from ", o->check, o->baseline, o->target_large_pct);
  char from[32];
  topo_cal_format_bytes(o->target_from, from, sizeof from);
  printf("%s, <= %.0f%% below\n", from, o->target_small_pct);
  for (int s = 0; s < ns; s++) {
    topo_cal_stats base, st;
    char sz[32];
    topo_cal_format_bytes(sizes[s], sz, sizeof sz);
    if (!rounds_of(t, o->baseline, op, sizes[s], &base) ||
        !rounds_of(t, o->check, op, sizes[s], &st)) {
      printf("target %s %s: no data\n", o->check, sz);
      continue;
    }
    double pct = 100.0 * (st.median / base.median - 1.0);
    double limit = sizes[s] >= o->target_from ? o->target_large_pct : o->target_small_pct;
    int ok = pct <= limit;
    checked++;
    missed += !ok;
    printf("target %s %s: %+.1f%% (limit %.0f%%) %s   [%s rounds spread %.1f%%]\n", o->check, sz,
           pct, limit, ok ? "PASS" : "FAIL", o->baseline, 100.0 * (base.max / base.min - 1.0));
  }
  if (!checked) {
    printf("verdict %s: NO DATA (needs lines of both %s and %s)\n", o->check, o->check,
           o->baseline);
    return TOPO_CLI_FAILED;
  }
  printf("verdict %s: %s (%d of %d sizes within target)\n", o->check, missed ? "FAIL" : "PASS",
         checked - missed, checked);
  return missed ? 1 : 0;
}

static int summarize(const options *o, int nfiles, char **files) {
  table t;
  memset(&t, 0, sizeof t);
  int rc = 0;
  for (int i = 0; i < nfiles && !rc; i++)
    if (read_file(&t, files[i])) rc = 2;
  if (!rc && t.n == 0) {
    fprintf(stderr, "%s: error: no result lines in the input\n", prog);
    rc = 2;
  }
  if (!rc && t.skipped)
    fprintf(stderr, "%s: warning: %d malformed line(s) skipped\n", prog, t.skipped);
  /* One table per op, in order of first appearance. */
  for (int i = 0; i < t.n && rc != 2; i++) {
    int first = 1;
    for (int j = 0; j < i && first; j++) first = strcmp(t.rows[j].op, t.rows[i].op) != 0;
    if (!first) continue;
    int r = summarize_op(&t, t.rows[i].op, o);
    if (r > rc) rc = r;
  }
  topo_free(t.rows);
  return rc;
}

int main(int argc, char **argv) {
  options o;
  int first = 1;
  topo_cli_init(prog, 0);
  int r = parse_options(&o, argc, argv, &first);
  if (r == 1) return 0;
  if (r) return TOPO_CLI_MISUSE;
  if (o.summarize) return summarize(&o, argc - first, argv + first);
  return measure(&o);
}
