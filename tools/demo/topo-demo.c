// SPDX-License-Identifier: Apache-2.0
// topo-demo: real trace files from a GPU-less machine. For each of N ranks (one process each,
// as in a real job) it loads libtopo-profiler.so - and libtopo-tuner.so when present - through
// the plugin host, and drives them with an NCCL 2.28-shaped event stream modelled on a
// data-parallel training step of a ~350M-parameter bf16 model: forward and backward compute
// kernels on a compute stream, gradients all-reduced in 25 MB buckets on the NCCL stream while
// the backward pass runs, an optimizer step, and a small AllGather of metrics; its first steps
// start late (warm-up: compilation, allocator growth). NCCL kernels run at ~350 GB/s bus bandwidth
// after ~10 us launch; a collective ends only when every rank has joined, so one rank 4 % slower
// (the straggler) shows up as waiting on the others. The fake CUPTI library takes each compute
// and NCCL kernel as it runs, so the profiler's CUPTI windows (its default: whole steps once the
// step is steady) record what a real job's would. Events are paced in real time (a step takes
// ~0.1 s) so that CPU and GPU clocks agree; the default 14 steps leave room for the warm-up, the
// learning of the step and one window of 4 whole steps. The plugins log through a logger of its
// own: their warnings (a misspelt TOPO_* variable, a bad value) reach stderr once each, however
// many ranks gave them. Exit codes (common/cli.h): 0 the traces written, 1 a library given cannot
// be loaded, DIR cannot be made or a rank failed, 2 misuse.
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include "cli.h"
#include "clock.h"
#include "env.h"
#include "host_profiler.h"
#include "host_tuner.h"
#include "log.h"
#include "nccl_vocab.h"
#include "profiler_driver.h"
#include "topo_version.h"

#define MAX_RANKS          64
#define LAYERS             24
#define PARAMS             350000000.0
#define BUCKET_BYTES       (25ull << 20)
#define BUSBW_GBS          350.0
#define LAUNCH_NS          10000
#define MAX_OPS            4096
#define MAX_KERNELS        65536
#define STRAGGLER_SLOWDOWN 1.04 /* the straggler computes 4 % slower */
#define DEFAULT_STEPS      14

/* Warm-up: the first steps start late on every rank alike (compilation, allocator growth, the
 * first launches on the host): steps 0, 1 and 2 take about 1.7, 2.3 and 1.7 times as long,
 * their collectives are the same. */
static int64_t warm_extra_ns(int step) {
  return step == 0 ? 60000000 : step == 1 ? 120000000 : step == 2 ? 60000000 : 0;
}

typedef struct options {
  const char *out, *profiler, *tuner, *cupti;
  int explicit_tuner, explicit_cupti; /* --tuner / --cupti PATH given: it must load */
  int ranks, steps, straggler;
  unsigned seed;
  unsigned starve; /* 0: off; else the seed of the late kernel-channel callbacks */
} options;

typedef struct sim_op {
  int allgather;
  uint64_t seq;
  uint64_t bytes;
  int64_t launch[MAX_RANKS]; /* CPU enqueue time (sim ns) */
  int64_t start[MAX_RANKS];  /* kernel start on each rank's NCCL stream */
  int64_t end;               /* every rank ends together: the last to join + transfer time */
} sim_op;

typedef struct sim_kernel {
  int64_t start, end;
  const char *name;
} sim_kernel;

static struct {
  sim_op ops[MAX_OPS];
  int nops;
  sim_kernel kernels[MAX_KERNELS]; /* compute kernels of the rank being emitted */
  int nkernels;
} sim;

static const struct {
  const char *name;
  int64_t fwd_ns;
} layer_kernels[] = {
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_qkv", 180000},
    {"flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, bf16>>", 260000},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_proj", 90000},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_fc1", 320000},
    {"vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>", 40000},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_fc2", 320000},
    {"cutlass::Kernel<LayerNormFwd>", 20000},
};
#define NLK ((int)(sizeof layer_kernels / sizeof layer_kernels[0]))

/* Deterministic jitter in [-pct, +pct] from (seed, rank, step, index). */
static double jitter(unsigned seed, int rank, int step, int idx, double pct) {
  uint64_t x = (uint64_t)seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)rank << 40 ^
               (uint64_t)step << 20 ^ (uint64_t)idx;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return ((double)(x % 20001) / 10000.0 - 1.0) * pct;
}

static int64_t nccl_duration(uint64_t bytes, int nranks, int allgather) {
  double factor = allgather ? (double)(nranks - 1) / nranks : 2.0 * (nranks - 1) / nranks;
  double total = allgather ? (double)bytes * nranks : (double)bytes;
  double ns = total * factor / (BUSBW_GBS * 1e9) * 1e9;
  return (int64_t)ns + 8000; /* + the latency floor of a small collective */
}

/* Simulate one rank's compute for `step`; records each rank's NCCL launch times into sim.ops.
 * If `emit` is set, keeps the rank's compute kernels in sim.kernels. Returns when the step's
 * compute ends (before the optimizer waits for the last bucket). */
static void simulate(const options *o, int64_t t0) {
  sim.nops = 0;
  uint64_t ar_seq = 0, ag_seq = 0;
  int64_t rank_time[MAX_RANKS];
  for (int r = 0; r < o->ranks; r++) rank_time[r] = t0;
  for (int step = 0; step < o->steps; step++) {
    int first_op = sim.nops;
    /* forward + backward on every rank; buckets launched as gradients fill */
    int64_t compute_end[MAX_RANKS];
    for (int r = 0; r < o->ranks; r++) {
      double speed = (r == o->straggler ? STRAGGLER_SLOWDOWN : 1.0) *
                     (1.0 + jitter(o->seed, r, step, 0, 0.02));
      int64_t t = rank_time[r] + warm_extra_ns(step);
      int op = first_op;
      uint64_t grad = 0;
      for (int pass = 0; pass < 2; pass++)
        for (int l = 0; l < LAYERS; l++) {
          for (int k = 0; k < NLK; k++) {
            int64_t d = (int64_t)(layer_kernels[k].fwd_ns * (pass ? 2.0 : 1.0) * speed *
                                  (1.0 + jitter(o->seed, r, step, l * 16 + k, 0.03)));
            t += d + 3000; /* kernels back to back with a small launch gap */
          }
          if (pass == 1) {
            grad += (uint64_t)(PARAMS * 2 / LAYERS);
            while (grad >= BUCKET_BYTES || (l == LAYERS - 1 && grad > 0)) {
              uint64_t b = grad >= BUCKET_BYTES ? BUCKET_BYTES : grad;
              grad -= b;
              if (op >= MAX_OPS - 1) break;
              sim.ops[op].allgather = 0;
              sim.ops[op].bytes = b;
              sim.ops[op].launch[r] = t;
              op++;
            }
          }
        }
      compute_end[r] = t;
      if (op > sim.nops) sim.nops = op;
    }
    /* NCCL stream per rank: each all-reduce starts when launched and the stream is free, ends
     * when the last rank has joined. */
    int64_t stream_free[MAX_RANKS];
    for (int r = 0; r < o->ranks; r++) stream_free[r] = 0;
    for (int i = first_op; i < sim.nops; i++) {
      sim_op *op = &sim.ops[i];
      op->seq = ar_seq++;
      int64_t last = 0;
      for (int r = 0; r < o->ranks; r++) {
        int64_t s = op->launch[r] + LAUNCH_NS;
        if (s < stream_free[r]) s = stream_free[r];
        op->start[r] = s;
        if (s > last) last = s;
      }
      /* the transfer varies by a few percent from call to call, as on real links */
      op->end = last + (int64_t)((double)nccl_duration(op->bytes, o->ranks, 0) *
                                 (1.0 + jitter(o->seed, MAX_RANKS, step, 100000 + i, 0.03)));
      for (int r = 0; r < o->ranks; r++) stream_free[r] = op->end;
    }
    /* optimizer after the last bucket; then an AllGather of 8 floats of metrics */
    int64_t last_ar = sim.nops > first_op ? sim.ops[sim.nops - 1].end : 0;
    sim_op *ag = &sim.ops[sim.nops++];
    ag->allgather = 1;
    ag->seq = ag_seq++;
    ag->bytes = 32;
    int64_t last = 0;
    for (int r = 0; r < o->ranks; r++) {
      int64_t t = compute_end[r] > last_ar ? compute_end[r] : last_ar;
      t += (int64_t)(3000000 * (r == o->straggler ? STRAGGLER_SLOWDOWN : 1.0)); /* Adam */
      ag->launch[r] = t;
      ag->start[r] = t + LAUNCH_NS;
      if (ag->start[r] > last) last = ag->start[r];
    }
    ag->end = last + nccl_duration(ag->bytes, o->ranks, 1);
    for (int r = 0; r < o->ranks; r++) rank_time[r] = ag->end + 200000; /* data loader etc. */
  }
}

/* The compute kernels of rank `r` (same model as simulate, kept for CUPTI). */
static void rank_kernels(const options *o, int r, int64_t t0) {
  sim.nkernels = 0;
  int64_t t = t0;
  int ag = 0;
  for (int step = 0; step < o->steps; step++) {
    double speed =
        (r == o->straggler ? STRAGGLER_SLOWDOWN : 1.0) * (1.0 + jitter(o->seed, r, step, 0, 0.02));
    t += warm_extra_ns(step);
    for (int pass = 0; pass < 2; pass++)
      for (int l = 0; l < LAYERS; l++)
        for (int k = 0; k < NLK; k++) {
          int64_t d = (int64_t)(layer_kernels[k].fwd_ns * (pass ? 2.0 : 1.0) * speed *
                                (1.0 + jitter(o->seed, r, step, l * 16 + k, 0.03)));
          if (sim.nkernels < MAX_KERNELS)
            sim.kernels[sim.nkernels++] = (sim_kernel){t, t + d, layer_kernels[k].name};
          t += d + 3000;
        }
    while (ag < sim.nops && !sim.ops[ag].allgather) ag++;
    if (ag >= sim.nops) break;
    int64_t opt_start =
        sim.ops[ag].launch[r] - (int64_t)(3000000 * (r == o->straggler ? STRAGGLER_SLOWDOWN : 1.0));
    if (sim.nkernels < MAX_KERNELS)
      sim.kernels[sim.nkernels++] = (sim_kernel){opt_start, sim.ops[ag].launch[r] - 2000,
                                                 "multi_tensor_apply_kernel<AdamFunctor<bf16>>"};
    t = sim.ops[ag].end + 200000;
    ag++;
  }
}

/* Where op i ends on rank `rank`: every rank together, to within a microsecond (the last step of
 * a ring reaches the ranks a little apart). */
static int64_t rank_end(const options *o, const sim_op *s, int rank, int i) {
  return s->end + (int64_t)(1000.0 * jitter(o->seed, rank, 7, 200000 + i, 1.0));
}

/* How far behind the model's time any rank's events ran (ns): the pace a busy machine could not
 * keep. Shared by the forked ranks (one anonymous shared page), said at the end when it is over
 * PACE_SLIP_NS: figures that hang on real time (which operations the profiler GPU-timed, where
 * its windows fell, the estimates) then differ from an idle machine's. */
#define PACE_SLIP_NS 2000000LL
static _Atomic int64_t *pace_late, pace_late_local;

static void sleep_until(int64_t mono_target) {
  int64_t now = topo_clock_monotonic_ns();
  if (mono_target > now) {
    struct timespec ts = {(time_t)((mono_target - now) / 1000000000),
                          (long)((mono_target - now) % 1000000000)};
    nanosleep(&ts, NULL);
    now = topo_clock_monotonic_ns();
  }
  int64_t late = now - mono_target, seen = atomic_load(pace_late);
  while (late > seen && !atomic_compare_exchange_weak(pace_late, &seen, late)) {}
}

typedef struct rank_ctx {
  const options *o;
  int rank;
  topo_host_profiler prof;
  int64_t mono0; /* sim time 0 in CLOCK_MONOTONIC */
  int64_t gpu0;  /* sim time 0 in GPU globaltimer (~ realtime) */
  drv_op ops[MAX_OPS];
  drv_pending pending[MAX_OPS];
  atomic_int issued;
  /* the fake CUPTI: it records a kernel only while the profiler has a window open */
  int (*kernel)(const char *, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t);
  int64_t cupti0;  /* sim time 0 on the CUPTI clock */
  int next_kernel; /* sim.kernels: the first not yet run */
} rank_ctx;

/* The NCCL kernel of op i, on the NCCL stream, as it ends (proxy thread). */
static void nccl_kernel(rank_ctx *c, int i) {
  if (!c->kernel) return;
  const sim_op *s = &sim.ops[i];
  char name[96];
  snprintf(name, sizeof name, "ncclDevKernel_%s_%s_%s",
           s->allgather ? "AllGather" : "AllReduce_Sum_bf16", c->ops[i].algo, c->ops[i].proto);
  c->kernel(name, (uint64_t)(c->cupti0 + s->start[c->rank]),
            (uint64_t)(c->cupti0 + rank_end(c->o, s, c->rank, i)), 13, 0,
            (uint32_t)(MAX_KERNELS + i));
}

/* The compute kernels that began by sim time `until`, as CUPTI would see them run (issue
 * thread). */
static void compute_kernels(rank_ctx *c, int64_t until) {
  for (; c->next_kernel < sim.nkernels && sim.kernels[c->next_kernel].start <= until;
       c->next_kernel++) {
    const sim_kernel *k = &sim.kernels[c->next_kernel];
    if (c->kernel)
      c->kernel(k->name, (uint64_t)(c->cupti0 + k->start), (uint64_t)(c->cupti0 + k->end), 7, 0,
                (uint32_t)c->next_kernel + 1);
  }
}

/* --starve: how late rank `rank` reports op `i`'s kernel channels, ns. Half the ranks (by the
 * seed) are short of CPU: every op of theirs is reported 1-100 ms late; the others on time. */
static int64_t starve_delay(const options *o, int rank, int i) {
  if (!o->starve || (unsigned)(rank + (int)o->starve) % 2 == 0) return 0;
  double x = jitter(o->starve, rank, 7, i, 1.0); /* [-1, 1] */
  return (int64_t)(1.0 + (x + 1.0) * 49.5) * 1000000;
}

/* --starve: when a starved rank's enqueueing thread first gets the CPU, sim ns: 50-150 ms after
 * the job's start; the ops due before then are enqueued at once, in order (their kernels, modelled,
 * ran on time: the trace records enqueues after the kernels they launched, as a loaded machine
 * makes the demo do). 0 for the other ranks. */
static int64_t starve_start(const options *o, int rank) {
  if (!starve_delay(o, rank, 0)) return 0;
  double x = jitter(o->starve, rank, 11, 0, 1.0); /* [-1, 1] */
  return (int64_t)(100.0 + x * 50.0) * 1000000;
}

/* Proxy thread: report each op's kernel channels once its GPU work is over. */
static void *proxy_main(void *arg) {
  rank_ctx *c = arg;
  for (int i = 0; i < sim.nops; i++) {
    while (atomic_load(&c->issued) <= i) {
      struct timespec ts = {0, 200000};
      nanosleep(&ts, NULL);
    }
    /* polled a little after the end (or starved: late) */
    sleep_until(c->mono0 + sim.ops[i].end + 20000 + starve_delay(c->o, c->rank, i));
    drv_complete(&c->prof, &c->pending[i]);
    nccl_kernel(c, i);
  }
  return NULL;
}

static void choose(topo_host_tuner *tuner, int have_tuner, int allgather, uint64_t bytes,
                   int nranks, drv_op *op) {
  op->algo = "RING";
  op->proto = bytes >= (1 << 20) ? "SIMPLE" : "LL";
  op->nch = bytes >= (1 << 20) ? 16 : 2;
  if (!have_tuner) return;
  float table[7 * 3];
  for (int a = 0; a < 7; a++)
    for (int p = 0; p < 3; p++) {
      /* NCCL's own estimate, roughly: latency + bytes / bandwidth per protocol (Tree, Ring) */
      double lat[3] = {6.8, 14, 8.4}, bw[3] = {0.3, 0.6, 1.0};
      /* Tree runs AllReduce only, at a little less bandwidth than Ring on one node */
      double tree = a == 0 ? 0.9 : 1.0;
      table[a * 3 + p] = a == 1 || (a == 0 && !allgather)
                             ? (float)(lat[p] + (double)bytes / (bw[p] * tree * 200e3))
                             : -1.0f;
    }
  int nch = 0;
  if (topo_host_tuner_get(tuner, allgather ? ncclFuncAllGather : ncclFuncAllReduce, bytes, 1, table,
                          0, &nch) != ncclSuccess)
    return;
  int a, p;
  if (topo_host_select(table, 7, 3, &a, &p) && a <= NCCL_ALGO_RING) {
    op->algo = topo_nccl_algo_name(a, TOPO_NCCL_EVENT);
    op->proto = topo_nccl_proto_name(p, TOPO_NCCL_EVENT);
  }
  if (nch > 0 && nch <= 32) op->nch = nch;
  (void)nranks;
}

/* The plugins' WARN lines of this rank process, kept for the parent (demo_warnings). */
static FILE *rank_warnings;

static void demo_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void demo_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                     const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level != NCCL_LOG_WARN || !rank_warnings) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char *c = msg; *c; c++)
    if (*c == '\n') *c = ' '; /* one line each */
  fprintf(rank_warnings, "%s\n", msg);
  fflush(rank_warnings);
}

/* Every distinct line of the ranks' warning files, once each, in the order first seen. */
static void demo_warnings(FILE **files, int n) {
  enum { KEEP = 256 };
  static char seen[KEEP][1024];
  int nseen = 0, dropped = 0;
  char line[1024];
  for (int r = 0; r < n; r++) {
    if (!files[r]) continue;
    rewind(files[r]);
    while (fgets(line, sizeof line, files[r])) {
      line[strcspn(line, "\n")] = 0;
      int dup = 0;
      for (int i = 0; i < nseen && !dup; i++) dup = !strcmp(seen[i], line);
      if (dup) continue;
      if (nseen == KEEP) {
        dropped++;
        continue;
      }
      snprintf(seen[nseen++], sizeof seen[0], "%s", line);
      TOPO_WARN("%s", line);
    }
    fclose(files[r]);
  }
  if (dropped) TOPO_WARN("%d more distinct plugin warnings", dropped);
}

static int run_rank(const options *o, int rank, int64_t mono0, int64_t real0) {
  static rank_ctx c;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.rank = rank;
  c.mono0 = mono0;
  c.gpu0 = real0;
  if (topo_host_profiler_load(&c.prof, o->profiler, TOPO_NCCL_2_28) != TOPO_OK) return 1;
  topo_host_tuner tuner;
  int have_tuner = o->tuner && topo_host_tuner_load(&tuner, o->tuner, TOPO_NCCL_2_28) == TOPO_OK;
  uint64_t comm = 0x70d0000000000000ull ^ ((uint64_t)o->seed * 0x9e3779b97f4a7c15ull >> 8);
  if (have_tuner &&
      topo_host_tuner_init(&tuner, comm, (size_t)o->ranks, 1, demo_log, NULL, NULL) != ncclSuccess)
    have_tuner = 0;
  topo_host_profiler_init(&c.prof, comm, "dp", 1, o->ranks, rank, demo_log);

  void *fake = o->cupti ? dlopen(o->cupti, RTLD_NOW | RTLD_LOCAL) : NULL;
  c.kernel = fake ? (int (*)(const char *, uint64_t, uint64_t, uint32_t, uint32_t, uint32_t))dlsym(
                        fake, "fake_cupti_kernel")
                  : NULL;
  uint64_t (*cupti_now)(void) = fake ? (uint64_t(*)(void))dlsym(fake, "fake_cupti_now") : NULL;
  c.cupti0 = cupti_now ? (int64_t)cupti_now() - (topo_clock_realtime_ns() - real0) : real0;
  rank_kernels(o, rank, 0);

  for (int i = 0; i < sim.nops; i++) {
    const sim_op *s = &sim.ops[i];
    drv_op *op = &c.ops[i];
    op->func = s->allgather ? "AllGather" : "AllReduce";
    op->dtype = s->allgather ? "ncclInt8" : "ncclBfloat16";
    op->count = s->allgather ? s->bytes : s->bytes / 2;
    op->seq = s->seq;
    op->peer = -1;
    op->nwarps = 16;
    op->rank = rank;
    op->stream = (void *)0x7f00000a0000;
    choose(&tuner, have_tuner, s->allgather, s->bytes, o->ranks, op);
    uint64_t start = (uint64_t)(c.gpu0 + s->start[rank]);
    drv_set_gpu(op, start, 40,
                (uint64_t)(rank_end(o, s, rank, i) - s->start[rank]) - 40 * (uint64_t)op->nch);
  }
  pthread_t proxy;
  pthread_create(&proxy, NULL, proxy_main, &c);
  int64_t late = starve_start(o, rank);
  for (int i = 0; i < sim.nops; i++) {
    int64_t due = sim.ops[i].launch[rank];
    sleep_until(mono0 + (due > late ? due : late));
    compute_kernels(&c, due);
    drv_issue(&c.prof, &c.ops[i], &c.pending[i]);
    atomic_store(&c.issued, i + 1);
  }
  pthread_join(proxy, NULL);
  while (c.next_kernel < sim.nkernels) { /* the last optimizer step */
    sleep_until(mono0 + sim.kernels[c.next_kernel].start);
    compute_kernels(&c, sim.kernels[c.next_kernel].start);
  }
  topo_host_profiler_finalize(&c.prof);
  topo_host_profiler_unload(&c.prof);
  if (have_tuner) {
    topo_host_tuner_finalize(&tuner);
    topo_host_tuner_unload(&tuner);
  }
  if (fake) dlclose(fake);
  return 0;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: topo-demo [--out DIR] [--ranks N] [--steps N] [--seed S] [--straggler R]\n"
          "                 [--profiler PATH] [--tuner PATH|''] [--cupti PATH|''] [--starve S]\n"
          "Runs a modelled data-parallel training job (one process per rank, no GPU) through\n"
          "libtopo-profiler.so and writes one trace per rank (and one CUPTI trace per rank\n"
          "process) into DIR, ready for topo-report.\n"
          "\n"
          "  -o, --out DIR        trace directory (default topo-demo-traces)\n"
          "  -r, --ranks N        ranks, 2..%d (default 8)\n"
          "  -s, --steps N        training steps, 1..50 (default %d; the first window of whole\n"
          "                       steps comes after about 6)\n"
          "  -S, --seed S         seed; also picks the straggler (default 1)\n"
          "  -g, --straggler R    the rank that computes 4%% slower (default seed %% ranks)\n"
          "  -p, --profiler PATH  libtopo-profiler.so (default: the installed or built one)\n"
          "  -t, --tuner PATH     libtopo-tuner.so; '' for none (default: installed or built)\n"
          "  -c, --cupti PATH     fake CUPTI library for the compute timeline; '' for none\n"
          "  -x, --starve S       half the ranks (picked by S) are short of CPU: they report\n"
          "                       every kernel-channel stop 1-100 ms late and enqueue their\n"
          "                       first collectives 50-150 ms late (default 0: off)\n"
          "  -h, --help; -V, --version\n"
          "\n"
          "Examples:\n"
          "  topo-demo                                  8 ranks x %d steps into topo-demo-traces/\n"
          "  topo-demo --ranks 4 --steps 2 --out demo && topo-report demo\n"
          "  topo-demo --tuner '' --straggler 3         profiler only, rank 3 the straggler\n",
          MAX_RANKS, DEFAULT_STEPS, DEFAULT_STEPS);
}

/* The default path of an installed library: <exe dir>/TOPO_DEMO_LIBDIR_REL/name when that file
 * exists (an installed topo-demo), else `built` (the build tree's, compiled in). The returned
 * string is static storage, one per `slot`. */
static const char *default_lib(int slot, const char *name, const char *built) {
  static char paths[3][4096];
  char exe[2048];
  if (!built || !*built) return built;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return built;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash) return built;
  *slash = '\0';
  const char *rel = TOPO_DEMO_LIBDIR_REL;
  if (rel[0] == '/') snprintf(paths[slot], sizeof paths[slot], "%s/%s", rel, name);
  else snprintf(paths[slot], sizeof paths[slot], "%s/%s/%s", exe, rel, name);
  return access(paths[slot], R_OK) == 0 ? paths[slot] : built;
}

/* A decimal integer in [lo, hi] into *out; 1 when valid. */
static int parse_int(const char *t, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(t, &end, 0);
  if (end == t || *end || errno || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

/* One option of argv into *o. 0, or the exit code of its misuse. */
static int apply_option(options *o, int ch, const char *v) {
  long n;
  switch (ch) {
  case 'o': o->out = v; return 0;
  case 'p': o->profiler = v; return 0;
  case 't':
    o->tuner = v;
    o->explicit_tuner = 1;
    return 0;
  case 'c':
    o->cupti = v;
    o->explicit_cupti = 1;
    return 0;
  case 'r':
    if (!parse_int(v, 2, MAX_RANKS, &n))
      return topo_cli_usage("--ranks wants 2..%d, not '%s'", MAX_RANKS, v);
    o->ranks = (int)n;
    return 0;
  case 's':
    if (!parse_int(v, 1, 50, &n)) return topo_cli_usage("--steps wants 1..50, not '%s'", v);
    o->steps = (int)n;
    return 0;
  case 'S':
    if (!parse_int(v, 0, 4294967295L, &n))
      return topo_cli_usage("--seed wants a number, not '%s'", v);
    o->seed = (unsigned)n;
    return 0;
  case 'g':
    if (!parse_int(v, 0, MAX_RANKS - 1, &n))
      return topo_cli_usage("--straggler wants a rank, not '%s'", v);
    o->straggler = (int)n;
    return 0;
  case 'x':
    if (!parse_int(v, 0, 4294967295L, &n))
      return topo_cli_usage("--starve wants a seed, not '%s'", v);
    o->starve = (unsigned)n;
    return 0;
  default: return TOPO_CLI_MISUSE;
  }
}

/* Each library the ranks will load, tried once here: a path given that does not load is one
 * error line naming it with dlerror (not one per rank). A default tuner or CUPTI stand-in that is
 * not there is none; '' is none. 0 or TOPO_CLI_FAILED. */
static int check_libraries(options *o) {
  topo_host_profiler prof;
  void *h = dlopen(o->profiler, RTLD_NOW | RTLD_LOCAL);
  if (!h) return topo_cli_error("cannot load --profiler %s: %s", o->profiler, dlerror());
  dlclose(h);
  if (topo_host_profiler_load(&prof, o->profiler, TOPO_NCCL_2_28) != TOPO_OK)
    return topo_cli_error("--profiler %s: no NCCL profiler interface in it (ncclProfiler_vN)",
                          o->profiler);
  topo_host_profiler_unload(&prof);
  if (o->tuner && !*o->tuner) o->tuner = NULL;
  if (o->tuner && !o->explicit_tuner && access(o->tuner, R_OK) != 0) o->tuner = NULL;
  if (o->tuner) {
    topo_host_tuner t;
    if (!(h = dlopen(o->tuner, RTLD_NOW | RTLD_LOCAL)))
      return topo_cli_error("cannot load --tuner %s: %s", o->tuner, dlerror());
    dlclose(h);
    if (topo_host_tuner_load(&t, o->tuner, TOPO_NCCL_2_28) != TOPO_OK)
      return topo_cli_error("--tuner %s: no NCCL tuner interface in it (ncclTunerPlugin_vN)",
                            o->tuner);
    topo_host_tuner_unload(&t);
  }
  if (o->cupti && !*o->cupti) o->cupti = NULL;
  if (o->cupti && !o->explicit_cupti && access(o->cupti, R_OK) != 0) o->cupti = NULL;
  if (o->cupti) {
    if (!(h = dlopen(o->cupti, RTLD_NOW | RTLD_LOCAL)))
      return topo_cli_error("cannot load --cupti %s: %s", o->cupti, dlerror());
    dlclose(h);
  }
  return 0;
}

/* The environment the plugins run with: the trace directory, and the CUPTI library (the
 * stand-in, or none: the system's libcupti is never loaded by the demo). Printed, so that what
 * the demo sets is what it says (docs/man/topo-demo.md, ENVIRONMENT). */
static void set_environment(const options *o) {
  setenv("TOPO_PROFILER_DIR", o->out, 1);
  printf("topo-demo: sets TOPO_PROFILER_DIR=%s", o->out);
  if (o->cupti) {
    setenv("TOPO_PROFILER_CUPTI_LIB", o->cupti, 1); /* the mode stays the default */
    printf(" TOPO_PROFILER_CUPTI_LIB=%s", o->cupti);
  } else {
    setenv("TOPO_PROFILER_CUPTI", "off", 1);
    printf(" TOPO_PROFILER_CUPTI=off");
  }
  printf("\n");
}

/* Trace files (*.trace) in dir. */
static int count_traces(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    n += len > 6 && !strcmp(e->d_name + len - 6, ".trace");
  }
  closedir(d);
  return n;
}

int main(int argc, char **argv) {
  options o = {.out = "topo-demo-traces",
               .profiler = default_lib(0, "libtopo-profiler.so", TOPO_DEMO_PROFILER_SO),
               .tuner = default_lib(1, "libtopo-tuner.so", TOPO_DEMO_TUNER_SO),
               .cupti = default_lib(2, "topo/libtopo-fake-cupti.so", TOPO_DEMO_FAKE_CUPTI),
               .ranks = 8,
               .steps = DEFAULT_STEPS,
               .straggler = -1,
               .seed = 1};
  static const struct option longopts[] = {
      {"out", required_argument, 0, 'o'},       {"ranks", required_argument, 0, 'r'},
      {"steps", required_argument, 0, 's'},     {"seed", required_argument, 0, 'S'},
      {"straggler", required_argument, 0, 'g'}, {"profiler", required_argument, 0, 'p'},
      {"tuner", required_argument, 0, 't'},     {"cupti", required_argument, 0, 'c'},
      {"starve", required_argument, 0, 'x'},    {"help", no_argument, 0, 'h'},
      {"version", no_argument, 0, 'V'},         {0, 0, 0, 0}};
  topo_cli_init("topo-demo", 0);
  topo_cli_reset();
  int ch;
  while ((ch = getopt_long(argc, argv, ":o:r:s:S:g:p:t:c:x:hV", longopts, NULL)) != -1) {
    if (ch == 'h') {
      usage(stdout);
      return TOPO_CLI_DONE;
    }
    if (ch == 'V') {
      printf("topo-demo %s\n", TOPO_VERSION);
      return TOPO_CLI_DONE;
    }
    if (ch == '?' || ch == ':') return topo_cli_getopt_error(ch, argv, longopts);
    int rc = apply_option(&o, ch, optarg);
    if (rc) return rc;
  }
  if (optind < argc) return topo_cli_usage("unexpected argument '%s'", argv[optind]);
  if (o.straggler >= o.ranks)
    return topo_cli_usage("--straggler wants a rank below --ranks %d, not %d", o.ranks,
                          o.straggler);
  if (o.straggler < 0) o.straggler = (int)(o.seed % (unsigned)o.ranks);
  /* Paths go into TOPO_* variables whose limits the plugins enforce (they refuse a longer one,
   * never cut it): refused here, before anything runs, instead of a run that writes nothing. */
  const struct {
    const char *opt, *path;
    topo_env_id var;
  } paths[] = {{"--out", o.out, TOPO_ENV_PROFILER_DIR},
               {"--cupti", o.cupti, TOPO_ENV_PROFILER_CUPTI_LIB}};
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
    long max = topo_env_table()[paths[i].var].max;
    if (paths[i].path && strlen(paths[i].path) > (size_t)max)
      return topo_cli_usage("%s is %zu bytes, longer than the %ld bytes %s takes", paths[i].opt,
                            strlen(paths[i].path), max, topo_env_table()[paths[i].var].name);
  }
  if (check_libraries(&o)) return TOPO_CLI_FAILED;
  if (mkdir(o.out, 0750) != 0 && errno != EEXIST)
    return topo_cli_error("cannot create %s: %s", o.out, strerror(errno));
  printf(
      "topo-demo: %d ranks x %d steps, seed %u, straggler rank %d, profiler %s, tuner %s, "
      "CUPTI %s\n",
      o.ranks, o.steps, o.seed, o.straggler, o.profiler, o.tuner ? o.tuner : "(none)",
      o.cupti ? o.cupti : "(none)");
  set_environment(&o);
  if (o.starve) {
    printf("topo-demo: starving (seed %u): ranks", o.starve);
    for (int r = 0; r < o.ranks; r++)
      if (starve_delay(&o, r, 0)) printf(" %d", r);
    printf(" report kernel-channel stops 1-100 ms late and enqueue 50-150 ms late\n");
  }
  pace_late =
      mmap(NULL, sizeof *pace_late, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (pace_late == MAP_FAILED) pace_late = &pace_late_local; /* this process's ranks unseen */
  atomic_store(pace_late, 0);
  simulate(&o, 1000000); /* 1 ms of slack before the first kernel */
  /* Model time 0 lies 150 ms ahead: every rank has forked, loaded the plugins and opened its
   * CUPTI window by then, as a real job's first kernels come after communicator init. */
  int64_t lead = 150000000;
  int64_t mono0 = topo_clock_monotonic_ns() + lead, real0 = topo_clock_realtime_ns() + lead;
  pid_t pids[MAX_RANKS];
  FILE *warnings[MAX_RANKS] = {0};
  fflush(stdout);
  int failed = 0, started = 0;
  for (int r = 0; r < o.ranks; r++, started++) {
    warnings[r] = tmpfile(); /* NULL: that rank's warnings are not shown */
    pids[r] = fork();
    if (pids[r] < 0) {
      failed = o.ranks - r;
      topo_cli_error("fork: %s", strerror(errno));
      break;
    }
    if (pids[r] == 0) {
      rank_warnings = warnings[r];
      _exit(run_rank(&o, r, mono0, real0));
    }
  }
  for (int r = 0; r < started; r++) {
    int status;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
  }
  demo_warnings(warnings, started);
  int traces = count_traces(o.out);
  if (!traces) /* the profiler refused or failed its directory: say so, never "traces in" */
    return topo_cli_error("no trace was written in %s (the profiler's warnings above say why)",
                          o.out);
  printf(
      "topo-demo: %d collectives per rank (%d all-reduce buckets of <= 25 MB + %d metric "
      "all-gathers), %d traces in %s\n",
      sim.nops, sim.nops - o.steps, o.steps, traces, o.out);
  if (atomic_load(pace_late) > PACE_SLIP_NS)
    printf(
        "topo-demo: a busy machine: events ran up to %.1f ms behind the model's time, so "
        "figures that hang on real time (GPU-timed counts, windows, estimates) differ from an "
        "idle machine's\n",
        (double)atomic_load(pace_late) / 1e6);
  fflush(stdout);
  if (failed)
    return topo_cli_error("%d of %d ranks failed; the traces in %s are incomplete", failed, o.ranks,
                          o.out);
  return TOPO_CLI_DONE;
}
