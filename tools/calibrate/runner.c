/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's GPU engine: the only file that includes <cuda_runtime.h> and <nccl.h>.
 * topo_cal_run() drives the ranks of this process (every local GPU in one process, as
 * nccl-tests -g; or one GPU per process under the fork launcher or MPI) through:
 *   1. devices, the p2p matrix (copy engine, SM copies and ping-pong when kernels.cu is built)
 *      and the launch / completion floor;
 *   2. phase A, libtopo-tuner loaded (NCCL_TUNER_PLUGIN): a control communicator (NCCL's table,
 *      channel count, tuner load, and in several processes the exchange of ids and samples),
 *      then --rounds rounds of the forced settings in a rotated order, each a fresh communicator
 *      per round (TOPO_TUNER_FORCE set before its init; channel counts through its channel field
 *      in a communicator configured as the default's; only counts above NCCL's own - beyond a
 *      tuner's reach, advice - through ncclConfig_t minCTAs = maxCTAs, as NCCL_MIN/MAX_NCHANNELS
 *      are read once per process), then --bench's tuner rounds on the fitted profile;
 *   3. phase B, NCCL_TUNER_PLUGIN=none: rounds of forced settings through NCCL_ALGO/NCCL_PROTO
 *      when the tuner is not used, interleaved with NCCL's default twice per round (A/A pair). It comes last because NCCL 2.28 never retries a
 *      tuner load that failed (or was refused with "none") in a process, and keeps a loaded tuner
 *      for every new communicator while any communicator still holds it.
 * Each point: warm-up, then o->iters samples; sizes up to --graph-max are K calls captured in a
 * CUDA graph per sample (GPU time, not launch rate), larger ones eager calls between events. A
 * sample is the minimum over ranks (the last rank to start never waits for the others), reduced
 * across processes with an NCCL AllReduce(min) on the control communicator, so every process
 * holds identical results and takes identical decisions (pruning) - required, or ranks diverge.
 * Failure: CUDA errors and NCCL errors end the run with exit code 1 (2 when no GPU is usable);
 * a collective NCCL refuses in one process marks that point failed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "alloc.h"
#include "calibrate.h"
#include "kernels.h"

#define MAX_LOCAL 64
#define STAGE_BYTES 65536

typedef struct rank_ctx {
  int rank, dev;
  cudaStream_t stream;
  void *send, *recv;
  ncclComm_t comm;      /* the current setting's communicator */
  ncclComm_t control;   /* control communicator (NULL when none) */
  void *stage;          /* device staging for id broadcasts and sample reductions */
  int *flag;            /* ping-pong flag (device) */
  long long *pp_result; /* ping-pong result (device) */
  cudaEvent_t *ev0, *ev1;
} rank_ctx;

typedef struct run_ctx {
  const topo_cal_options *o;
  const topo_cal_proc *pp;
  topo_cal_results *r;
  int nlocal;
  rank_ctx rk[MAX_LOCAL];
  size_t buf_bytes;
  int nevents;
  double *samples;   /* nevents + 2 */
  topo_cal_nccl_log log;
  int log_on;        /* this process reads NCCL's log (process 0 with --verify) */
  char log_path[768];
  char workdir[512];
  char tuner_path[PATH_MAX]; /* realpath() writes up to PATH_MAX bytes */
  int use_tuner_force;
  int tuner_ok;      /* tuner library exists (and, when verifiable, loaded) */
  int leader;        /* this process prints */
  int failed;
  uint64_t sizes[TOPO_CAL_MAX_SIZES];
  int nsizes;
  int unit, nunits;  /* progress: (setting, collective) pairs */
  int stop;          /* every process agreed to stop (signal), set by measure_point */
  double t_start;    /* run start, us */
  double unit_us;    /* time spent on (setting, collective) pairs so far, for the budget */
  int units_done;
  int round, pair;   /* round of the current setting run; A/A communicator of the default */
} run_ctx;

/* Facts process 0 learns from NCCL's log and shares with the others. */
typedef struct shared_facts {
  topo_cal_allowed allowed;
  int from_nccl;
  int channels;
  int tuner_loaded;
} shared_facts;

/* Bounded copy that always terminates (no truncation warnings: truncation is intended). */
static void copy_str(char *dst, size_t len, const char *src) {
  size_t n = strnlen(src, len - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

#define CUDA_TRY(call)                                                                        \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      topo_cal_warn("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));     \
      return -1;                                                                              \
    }                                                                                         \
  } while (0)

static int nccl_fail(const char *what, ncclResult_t res) {
  const char *last = ncclGetLastError(NULL);
  topo_cal_warn("%s failed: %s%s%s", what, ncclGetErrorString(res), last && *last ? " - " : "",
                last ? last : "");
  return -1;
}

#define NCCL_TRY(call)                                                   \
  do {                                                                   \
    ncclResult_t n_ = (call);                                            \
    if (n_ != ncclSuccess) return nccl_fail(#call, n_);                  \
  } while (0)

static int sync_all(run_ctx *c) {
  for (int i = 0; i < c->nlocal; i++) {
    CUDA_TRY(cudaSetDevice(c->rk[i].dev));
    CUDA_TRY(cudaStreamSynchronize(c->rk[i].stream));
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Cross-process exchange over the control communicator (no-ops in one process)
 */

static int share_bytes(run_ctx *c, void *buf, size_t len) {
  if (c->pp->nprocs <= 1) return 0;
  rank_ctx *k = &c->rk[0];
  if (!k->control || len > STAGE_BYTES) return -1;
  CUDA_TRY(cudaSetDevice(k->dev));
  CUDA_TRY(cudaMemcpy(k->stage, buf, len, cudaMemcpyHostToDevice));
  NCCL_TRY(ncclBroadcast(k->stage, k->stage, len, ncclUint8, 0, k->control, k->stream));
  CUDA_TRY(cudaStreamSynchronize(k->stream));
  CUDA_TRY(cudaMemcpy(buf, k->stage, len, cudaMemcpyDeviceToHost));
  return 0;
}

static int reduce_min(run_ctx *c, double *v, int n) {
  if (c->pp->nprocs <= 1) return 0;
  rank_ctx *k = &c->rk[0];
  size_t len = (size_t)n * sizeof(double);
  if (!k->control || len > STAGE_BYTES) return -1;
  CUDA_TRY(cudaSetDevice(k->dev));
  CUDA_TRY(cudaMemcpy(k->stage, v, len, cudaMemcpyHostToDevice));
  NCCL_TRY(ncclAllReduce(k->stage, k->stage, (size_t)n, ncclDouble, ncclMin, k->control, k->stream));
  CUDA_TRY(cudaStreamSynchronize(k->stream));
  CUDA_TRY(cudaMemcpy(v, k->stage, len, cudaMemcpyDeviceToHost));
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Devices, buffers
 */

static int multicast_supported(int dev) {
  /* CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 132 (cuda.h); the runtime enum hides it. */
  typedef int (*get_attr_fn)(int *, int, int);
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) return -1;
  get_attr_fn get = (get_attr_fn)dlsym(h, "cuDeviceGetAttribute");
  int v = -1;
  if (!get || get(&v, 132, dev) != 0) v = -1;
  dlclose(h);
  return v < 0 ? -1 : v != 0;
}

static int devices_init(run_ctx *c) {
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev <= 0) {
    topo_cal_error("no usable CUDA device: %s", e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
    return -2;
  }
  const topo_cal_proc *pp = c->pp;
  if (pp->nprocs > 1) {
    if (pp->device_base >= ndev) {
      topo_cal_error("rank %d wants GPU %d but only %d are visible", pp->local_first, pp->device_base, ndev);
      return -2;
    }
    c->nlocal = 1;
    c->rk[0].rank = pp->local_first;
    c->rk[0].dev = pp->device_base;
    c->r->nranks = pp->nranks;
  } else {
    int want = pp->nlocal > 0 ? pp->nlocal : ndev;
    if (want > ndev) {
      topo_cal_error("--gpus %d asked for, but only %d CUDA devices are visible", want, ndev);
      return -2;
    }
    if (want > MAX_LOCAL) want = MAX_LOCAL;
    c->nlocal = want;
    for (int i = 0; i < want; i++) c->rk[i].rank = i, c->rk[i].dev = i;
    c->r->nranks = want;
  }
  c->r->nnodes = pp->nodes > 0 ? pp->nodes : 1;
  c->r->nprocs = pp->nprocs;
  c->r->ndev = c->nlocal;
  for (int i = 0; i < c->nlocal; i++) {
    struct cudaDeviceProp prop;
    CUDA_TRY(cudaGetDeviceProperties(&prop, c->rk[i].dev));
    topo_cal_device *d = &c->r->dev[i];
    copy_str(d->name, sizeof d->name, prop.name);
    d->sms = prop.multiProcessorCount;
    d->mem_gib = (double)prop.totalGlobalMem / (1024.0 * 1024 * 1024);
    d->multicast = multicast_supported(c->rk[i].dev);
  }
  topo_cal_gpu_model(c->r->dev[0].name, c->r->gpu_model, sizeof c->r->gpu_model);
  c->r->line_rate_gbs = c->o->line_rate_gbs > 0 ? c->o->line_rate_gbs : topo_cal_line_rate_for_model(c->r->gpu_model);
  return 0;
}

static int buffers_init(run_ctx *c) {
  uint64_t need = c->o->sweep ? c->o->max_bytes : 0;
  if (c->o->p2p && c->o->p2p_bytes > need) need = c->o->p2p_bytes;
  if (need < (1u << 20)) need = 1u << 20;
  need = (need + 4095) & ~(uint64_t)4095;
  c->buf_bytes = need;
  c->nevents = c->o->iters > 100 ? c->o->iters : 100;
  c->samples = topo_calloc((size_t)c->nevents + 4, sizeof(double));
  if (!c->samples) return -1;
  for (int i = 0; i < c->nlocal; i++) {
    rank_ctx *k = &c->rk[i];
    CUDA_TRY(cudaSetDevice(k->dev));
    CUDA_TRY(cudaStreamCreateWithFlags(&k->stream, cudaStreamNonBlocking));
    CUDA_TRY(cudaMalloc(&k->send, need));
    CUDA_TRY(cudaMalloc(&k->recv, need));
    CUDA_TRY(cudaMemset(k->send, 0, need));
    CUDA_TRY(cudaMemset(k->recv, 0, need));
    CUDA_TRY(cudaMalloc(&k->stage, STAGE_BYTES));
    CUDA_TRY(cudaMalloc((void **)&k->flag, 256));
    CUDA_TRY(cudaMalloc((void **)&k->pp_result, 256));
    k->ev0 = topo_calloc((size_t)c->nevents, sizeof(cudaEvent_t));
    k->ev1 = topo_calloc((size_t)c->nevents, sizeof(cudaEvent_t));
    if (!k->ev0 || !k->ev1) return -1;
    for (int e = 0; e < c->nevents; e++) {
      CUDA_TRY(cudaEventCreate(&k->ev0[e]));
      CUDA_TRY(cudaEventCreate(&k->ev1[e]));
    }
  }
  return 0;
}

static void buffers_free(run_ctx *c) {
  for (int i = 0; i < c->nlocal; i++) {
    rank_ctx *k = &c->rk[i];
    cudaSetDevice(k->dev);
    for (int e = 0; k->ev0 && e < c->nevents; e++) {
      if (k->ev0[e]) cudaEventDestroy(k->ev0[e]);
      if (k->ev1 && k->ev1[e]) cudaEventDestroy(k->ev1[e]);
    }
    topo_free(k->ev0);
    topo_free(k->ev1);
    cudaFree(k->send);
    cudaFree(k->recv);
    cudaFree(k->stage);
    cudaFree(k->flag);
    cudaFree(k->pp_result);
    if (k->stream) cudaStreamDestroy(k->stream);
    memset(k, 0, sizeof *k);
  }
  topo_free(c->samples);
  c->samples = NULL;
}

/* Elapsed ms between two recorded events, as us. */
static int elapsed_us(cudaEvent_t a, cudaEvent_t b, double *us) {
  float ms = 0;
  CUDA_TRY(cudaEventElapsedTime(&ms, a, b));
  *us = ms * 1e3;
  return 0;
}

static double median_of(double *v, int n) {
  topo_cal_stats s;
  return topo_cal_stats_compute(v, n, &s) == 0 ? s.median : 0;
}

/* ---------------------------------------------------------------------------------------------
 * One GPU: floors, device copy bandwidth
 */

static int minimal_op(rank_ctx *k) {
  if (topo_cal_kernels_available()) {
    int e = topo_cal_kernel_empty(k->stream);
    if (e) return -1;
    return 0;
  }
  return cudaMemsetAsync(k->recv, 0, 4, k->stream) == cudaSuccess ? 0 : -1;
}

static int measure_floors(run_ctx *c) {
  rank_ctx *k = &c->rk[0];
  const int K = 100, iters = c->o->iters;
  CUDA_TRY(cudaSetDevice(k->dev));
  /* Device-local copies. */
  size_t bytes = (size_t)(c->o->p2p_bytes < c->buf_bytes ? c->o->p2p_bytes : c->buf_bytes) & ~(size_t)15;
  for (int w = 0; w < 2; w++) CUDA_TRY(cudaMemcpyAsync(k->recv, k->send, bytes, cudaMemcpyDeviceToDevice, k->stream));
  for (int i = 0; i < iters; i++) {
    CUDA_TRY(cudaEventRecord(k->ev0[i], k->stream));
    CUDA_TRY(cudaMemcpyAsync(k->recv, k->send, bytes, cudaMemcpyDeviceToDevice, k->stream));
    CUDA_TRY(cudaEventRecord(k->ev1[i], k->stream));
  }
  CUDA_TRY(cudaStreamSynchronize(k->stream));
  for (int i = 0; i < iters; i++)
    if (elapsed_us(k->ev0[i], k->ev1[i], &c->samples[i])) return -1;
  c->r->local_ce_bw = topo_cal_algbw(bytes, median_of(c->samples, iters));
  if (topo_cal_kernels_available()) {
    int blocks = 4 * c->r->dev[0].sms;
    for (int i = 0; i < iters + 2; i++) {
      int j = i - 2;
      if (j >= 0) CUDA_TRY(cudaEventRecord(k->ev0[j], k->stream));
      if (topo_cal_kernel_copy(k->recv, k->send, bytes, blocks, k->stream)) return -1;
      if (j >= 0) CUDA_TRY(cudaEventRecord(k->ev1[j], k->stream));
    }
    CUDA_TRY(cudaStreamSynchronize(k->stream));
    for (int i = 0; i < iters; i++)
      if (elapsed_us(k->ev0[i], k->ev1[i], &c->samples[i])) return -1;
    c->r->local_sm_bw = topo_cal_algbw(bytes, median_of(c->samples, iters));
  }
  /* Minimal op in a graph: GPU time per op. */
  cudaGraph_t g = NULL;
  cudaGraphExec_t ge = NULL;
  CUDA_TRY(cudaStreamBeginCapture(k->stream, cudaStreamCaptureModeThreadLocal));
  int bad = 0;
  for (int i = 0; i < K; i++) bad |= minimal_op(k);
  CUDA_TRY(cudaStreamEndCapture(k->stream, &g));
  if (bad) {
    cudaGraphDestroy(g);
    topo_cal_warn("cannot capture the minimal op in a graph");
    return -1;
  }
  CUDA_TRY(cudaGraphInstantiate(&ge, g, 0));
  CUDA_TRY(cudaGraphLaunch(ge, k->stream));
  for (int i = 0; i < iters; i++) {
    CUDA_TRY(cudaEventRecord(k->ev0[i], k->stream));
    CUDA_TRY(cudaGraphLaunch(ge, k->stream));
    CUDA_TRY(cudaEventRecord(k->ev1[i], k->stream));
  }
  CUDA_TRY(cudaStreamSynchronize(k->stream));
  for (int i = 0; i < iters; i++) {
    if (elapsed_us(k->ev0[i], k->ev1[i], &c->samples[i])) return -1;
    c->samples[i] /= K;
  }
  c->r->floor_graph_us = median_of(c->samples, iters);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  /* The same eagerly: the host's launch rate. */
  for (int i = 0; i < iters; i++) {
    CUDA_TRY(cudaEventRecord(k->ev0[i], k->stream));
    for (int j = 0; j < K; j++)
      if (minimal_op(k)) return -1;
    CUDA_TRY(cudaEventRecord(k->ev1[i], k->stream));
    CUDA_TRY(cudaStreamSynchronize(k->stream));
    if (elapsed_us(k->ev0[i], k->ev1[i], &c->samples[i])) return -1;
    c->samples[i] /= K;
  }
  c->r->floor_eager_us = median_of(c->samples, iters);
  /* Launch + completion round trip as the host sees it. */
  for (int i = 0; i < iters; i++) {
    double t0 = now_us();
    if (minimal_op(k)) return -1;
    CUDA_TRY(cudaStreamSynchronize(k->stream));
    c->samples[i] = now_us() - t0;
  }
  c->r->floor_sync_us = median_of(c->samples, iters);
  topo_cal_progress("GPU 0: copy %.0f GB/s (copy engine)%s, minimal op %.2f us in a graph, %.2f us eager, %.2f us launch+sync",
                    c->r->local_ce_bw, topo_cal_kernels_available() ? "" : ", no SM kernels built",
                    c->r->floor_graph_us, c->r->floor_eager_us, c->r->floor_sync_us);
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The p2p matrix (one process, every local GPU)
 */

static int enable_peer(int i, int j) {
  int can = 0;
  CUDA_TRY(cudaDeviceCanAccessPeer(&can, i, j));
  if (!can) return 0;
  CUDA_TRY(cudaSetDevice(i));
  cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
  else if (e != cudaSuccess) {
    topo_cal_warn("cudaDeviceEnablePeerAccess(%d -> %d): %s", i, j, cudaGetErrorString(e));
    return 0;
  }
  return 1;
}

static int p2p_pair(run_ctx *c, int i, int j, int peer) {
  rank_ctx *a = &c->rk[i], *b = &c->rk[j];
  int n = c->nlocal, iters = c->o->iters;
  size_t bytes = (size_t)(c->o->p2p_bytes < c->buf_bytes ? c->o->p2p_bytes : c->buf_bytes) & ~(size_t)15;
  CUDA_TRY(cudaSetDevice(a->dev));
  /* Copy engine bandwidth, source's stream. */
  for (int w = 0; w < 2; w++) CUDA_TRY(cudaMemcpyPeerAsync(b->recv, b->dev, a->send, a->dev, bytes, a->stream));
  for (int it = 0; it < iters; it++) {
    CUDA_TRY(cudaEventRecord(a->ev0[it], a->stream));
    CUDA_TRY(cudaMemcpyPeerAsync(b->recv, b->dev, a->send, a->dev, bytes, a->stream));
    CUDA_TRY(cudaEventRecord(a->ev1[it], a->stream));
  }
  CUDA_TRY(cudaStreamSynchronize(a->stream));
  for (int it = 0; it < iters; it++)
    if (elapsed_us(a->ev0[it], a->ev1[it], &c->samples[it])) return -1;
  c->r->p2p_ce_bw[i * n + j] = topo_cal_algbw(bytes, median_of(c->samples, iters));
  /* Copy engine latency: 4-byte copies back to back in a graph. */
  const int K = 50;
  cudaGraph_t g = NULL;
  cudaGraphExec_t ge = NULL;
  CUDA_TRY(cudaStreamBeginCapture(a->stream, cudaStreamCaptureModeThreadLocal));
  int bad = 0;
  for (int k = 0; k < K; k++)
    bad |= cudaMemcpyPeerAsync(b->recv, b->dev, a->send, a->dev, 4, a->stream) != cudaSuccess;
  cudaError_t ce = cudaStreamEndCapture(a->stream, &g);
  if (!bad && ce == cudaSuccess && cudaGraphInstantiate(&ge, g, 0) == cudaSuccess) {
    CUDA_TRY(cudaGraphLaunch(ge, a->stream));
    for (int it = 0; it < iters; it++) {
      CUDA_TRY(cudaEventRecord(a->ev0[it], a->stream));
      CUDA_TRY(cudaGraphLaunch(ge, a->stream));
      CUDA_TRY(cudaEventRecord(a->ev1[it], a->stream));
    }
    CUDA_TRY(cudaStreamSynchronize(a->stream));
    for (int it = 0; it < iters; it++) {
      if (elapsed_us(a->ev0[it], a->ev1[it], &c->samples[it])) return -1;
      c->samples[it] /= K;
    }
    c->r->p2p_ce_lat[i * n + j] = median_of(c->samples, iters);
  } else {
    (void)cudaGetLastError();
    topo_cal_debug("p2p %d->%d: copy latency not measured (graph capture of peer copies failed)", i, j);
  }
  if (ge) cudaGraphExecDestroy(ge);
  if (g) cudaGraphDestroy(g);
  /* SM copy: a kernel on the source writing into the peer's memory. */
  if (peer && topo_cal_kernels_available()) {
    int blocks = 4 * c->r->dev[i].sms;
    for (int it = 0; it < iters + 2; it++) {
      int s = it - 2;
      if (s >= 0) CUDA_TRY(cudaEventRecord(a->ev0[s], a->stream));
      if (topo_cal_kernel_copy(b->recv, a->send, bytes, blocks, a->stream)) return -1;
      if (s >= 0) CUDA_TRY(cudaEventRecord(a->ev1[s], a->stream));
    }
    CUDA_TRY(cudaStreamSynchronize(a->stream));
    for (int it = 0; it < iters; it++)
      if (elapsed_us(a->ev0[it], a->ev1[it], &c->samples[it])) return -1;
    c->r->p2p_sm_bw[i * n + j] = topo_cal_algbw(bytes, median_of(c->samples, iters));
  }
  return 0;
}

static int p2p_pingpong(run_ctx *c, int i, int j) {
  rank_ctx *a = &c->rk[i], *b = &c->rk[j];
  const int trips = 1000;
  CUDA_TRY(cudaSetDevice(a->dev));
  CUDA_TRY(cudaMemset(a->flag, 0, 256));
  CUDA_TRY(cudaMemset(a->pp_result, 0, 256));
  CUDA_TRY(cudaDeviceSynchronize());
  CUDA_TRY(cudaSetDevice(b->dev));
  CUDA_TRY(cudaMemset(b->flag, 0, 256));
  CUDA_TRY(cudaDeviceSynchronize());
  /* Echo first, then the initiator; each polls its own memory and writes the peer's. */
  if (topo_cal_kernel_pingpong(b->flag, a->flag, trips, 0, 2000000000ull, b->pp_result, b->stream)) return -1;
  CUDA_TRY(cudaSetDevice(a->dev));
  if (topo_cal_kernel_pingpong(a->flag, b->flag, trips, 1, 2000000000ull, a->pp_result, a->stream)) return -1;
  CUDA_TRY(cudaStreamSynchronize(a->stream));
  CUDA_TRY(cudaSetDevice(b->dev));
  CUDA_TRY(cudaStreamSynchronize(b->stream));
  long long ns = 0;
  CUDA_TRY(cudaSetDevice(a->dev));
  CUDA_TRY(cudaMemcpy(&ns, a->pp_result, sizeof ns, cudaMemcpyDeviceToHost));
  if (ns <= 0) {
    topo_cal_warn("p2p ping-pong %d<->%d timed out (no answer from the peer); latency not measured", i, j);
    return 0;
  }
  double rt = (double)ns / 1e3 / trips;
  c->r->p2p_sm_lat[i * c->nlocal + j] = rt;
  c->r->p2p_sm_lat[j * c->nlocal + i] = rt;
  return 0;
}

static int measure_p2p(run_ctx *c) {
  int n = c->nlocal;
  if (topo_cal_results_alloc_p2p(c->r, n)) return -1;
  int *peer = topo_calloc((size_t)n * n, sizeof(int));
  if (!peer) return -1;
  int rc = 0;
  for (int i = 0; i < n && !rc; i++)
    for (int j = 0; j < n && !rc; j++)
      if (i != j) {
        int e = enable_peer(c->rk[i].dev, c->rk[j].dev);
        if (e < 0) rc = -1;
        peer[i * n + j] = e > 0;
      }
  for (int i = 0; i < n && !rc; i++)
    for (int j = 0; j < n && !rc; j++)
      if (i != j) rc = p2p_pair(c, i, j, peer[i * n + j]);
  if (!rc && topo_cal_kernels_available())
    for (int i = 0; i < n && !rc; i++)
      for (int j = i + 1; j < n && !rc; j++)
        if (peer[i * n + j] && peer[j * n + i]) rc = p2p_pingpong(c, i, j);
  topo_free(peer);
  if (!rc) {
    double lo = 0, hi = 0;
    for (int i = 0; i < n * n; i++) {
      double v = c->r->p2p_ce_bw[i];
      if (v <= 0) continue;
      if (lo == 0 || v < lo) lo = v;
      if (v > hi) hi = v;
    }
    topo_cal_progress("p2p: %d GPUs, copy-engine bandwidth %.0f..%.0f GB/s%s", n, lo, hi,
                      topo_cal_kernels_available() ? ", SM copies and ping-pong measured" : "");
    if (lo > 0 && lo < 0.8 * hi)
      topo_cal_warn("p2p: the slowest pair reaches %.0f%% of the fastest - a degraded or asymmetric link?", 100 * lo / hi);
  }
  return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Communicators
 */

static void set_env(const char *name, const char *value) {
  if (value) setenv(name, value, 1);
  else unsetenv(name);
}

/* Create one communicator per local rank; nch > 0 pins NCCL's channel count to nch. */
static int comm_create(run_ctx *c, ncclComm_t *out_per_rank, size_t stride, int nch, const char *name,
                       const ncclUniqueId *given_id) {
  ncclUniqueId id;
  if (given_id) {
    id = *given_id;
  } else {
    if (c->pp->proc == 0) NCCL_TRY(ncclGetUniqueId(&id));
    if (share_bytes(c, &id, sizeof id)) return -1;
  }
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  if (nch > 0) cfg.minCTAs = cfg.maxCTAs = nch;
  cfg.commName = name;
  if (c->nlocal > 1) NCCL_TRY(ncclGroupStart());
  for (int i = 0; i < c->nlocal; i++) {
    ncclComm_t *slot = (ncclComm_t *)((char *)out_per_rank + i * stride);
    CUDA_TRY(cudaSetDevice(c->rk[i].dev));
    ncclResult_t res = ncclCommInitRankConfig(slot, c->r->nranks, id, c->rk[i].rank, &cfg);
    if (res != ncclSuccess) {
      if (c->nlocal > 1) ncclGroupEnd();
      return nccl_fail("ncclCommInitRankConfig", res);
    }
  }
  if (c->nlocal > 1) NCCL_TRY(ncclGroupEnd());
  return 0;
}

static void comm_destroy(run_ctx *c, ncclComm_t *first, size_t stride, int abort_it) {
  for (int i = 0; i < c->nlocal; i++) {
    ncclComm_t *slot = (ncclComm_t *)((char *)first + i * stride);
    if (!*slot) continue;
    cudaSetDevice(c->rk[i].dev);
    ncclResult_t res = abort_it ? ncclCommAbort(*slot) : ncclCommDestroy(*slot);
    if (res != ncclSuccess) nccl_fail(abort_it ? "ncclCommAbort" : "ncclCommDestroy", res);
    *slot = NULL;
  }
}

#define COMMS(c) (&(c)->rk[0].comm), sizeof(rank_ctx)
#define CONTROLS(c) (&(c)->rk[0].control), sizeof(rank_ctx)

/* After a communicator's init: what NCCL's log says (process 0), shared with every process. */
static int learn_facts(run_ctx *c, shared_facts *facts) {
  memset(facts, 0, sizeof *facts);
  facts->tuner_loaded = -1;
  if (c->log_on) {
    topo_cal_nccl_log_poll(&c->log);
    if (c->log.table_seen >= NCCL_NUM_FUNCTIONS) {
      facts->allowed = c->log.allowed;
      facts->from_nccl = 1;
    }
    facts->channels = c->log.coll_channels;
    facts->tuner_loaded = c->log.tuner_loaded;
    if (c->log.tuner_loaded > 0) {
      char t[128];
      snprintf(t, sizeof t, "%s (v%d)", c->log.tuner_name, c->log.tuner_version);
      copy_str(c->r->tuner_name, sizeof c->r->tuner_name, t);
    }
  }
  return share_bytes(c, facts, sizeof *facts);
}

/* ---------------------------------------------------------------------------------------------
 * One point
 */

static const char *coll_word(int coll) {
  static const char *const w[NCCL_NUM_FUNCTIONS] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
  return coll >= 0 && coll < NCCL_NUM_FUNCTIONS ? w[coll] : "?";
}

static int issue(run_ctx *c, int coll, size_t count) {
  if (c->nlocal > 1) NCCL_TRY(ncclGroupStart());
  for (int i = 0; i < c->nlocal; i++) {
    rank_ctx *k = &c->rk[i];
    ncclResult_t res = ncclSuccess;
    switch (coll) {
    case ncclFuncAllReduce: res = ncclAllReduce(k->send, k->recv, count, ncclFloat, ncclSum, k->comm, k->stream); break;
    case ncclFuncAllGather: res = ncclAllGather(k->send, k->recv, count, ncclFloat, k->comm, k->stream); break;
    case ncclFuncReduceScatter: res = ncclReduceScatter(k->send, k->recv, count, ncclFloat, ncclSum, k->comm, k->stream); break;
    case ncclFuncBroadcast: res = ncclBroadcast(k->send, k->recv, count, ncclFloat, 0, k->comm, k->stream); break;
    case ncclFuncReduce: res = ncclReduce(k->send, k->recv, count, ncclFloat, ncclSum, 0, k->comm, k->stream); break;
    default: res = ncclInvalidArgument; break;
    }
    if (res != ncclSuccess) {
      if (c->nlocal > 1) ncclGroupEnd();
      return nccl_fail("collective enqueue", res);
    }
  }
  if (c->nlocal > 1) NCCL_TRY(ncclGroupEnd());
  return 0;
}

/* Samples (us per call, min over this process's ranks) into c->samples[0..iters). */
static int time_graph(run_ctx *c, int coll, size_t count, int K) {
  int n = c->nlocal, iters = c->o->iters;
  cudaGraph_t g[MAX_LOCAL] = {0};
  cudaGraphExec_t ge[MAX_LOCAL] = {0};
  int rc = 0, captured = 0;
  for (int i = 0; i < n && !rc; i++) {
    cudaError_t e = cudaSetDevice(c->rk[i].dev);
    if (e == cudaSuccess) e = cudaStreamBeginCapture(c->rk[i].stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
      topo_cal_warn("cudaStreamBeginCapture: %s", cudaGetErrorString(e));
      rc = -1;
    } else {
      captured = i + 1;
    }
  }
  for (int k = 0; k < K && !rc; k++) rc = issue(c, coll, count);
  for (int i = 0; i < captured; i++) {
    cudaSetDevice(c->rk[i].dev);
    cudaError_t e = cudaStreamEndCapture(c->rk[i].stream, &g[i]);
    if (e != cudaSuccess && !rc) {
      topo_cal_warn("cudaStreamEndCapture: %s", cudaGetErrorString(e));
      rc = -1;
    }
  }
  for (int i = 0; i < n && !rc; i++) {
    cudaSetDevice(c->rk[i].dev);
    cudaError_t e = cudaGraphInstantiate(&ge[i], g[i], 0);
    if (e != cudaSuccess) {
      topo_cal_warn("cudaGraphInstantiate: %s", cudaGetErrorString(e));
      rc = -1;
    }
  }
  for (int w = 0; w < (c->o->warmup > 0 ? c->o->warmup : 1) && !rc; w++)
    for (int i = 0; i < n && !rc; i++) {
      cudaSetDevice(c->rk[i].dev);
      if (cudaGraphLaunch(ge[i], c->rk[i].stream) != cudaSuccess) rc = -1;
    }
  for (int it = 0; it < iters && !rc; it++)
    for (int i = 0; i < n && !rc; i++) {
      rank_ctx *k = &c->rk[i];
      cudaSetDevice(k->dev);
      if (cudaEventRecord(k->ev0[it], k->stream) != cudaSuccess || cudaGraphLaunch(ge[i], k->stream) != cudaSuccess ||
          cudaEventRecord(k->ev1[it], k->stream) != cudaSuccess)
        rc = -1;
    }
  if (!rc) rc = sync_all(c);
  for (int it = 0; it < iters && !rc; it++) {
    double best = 0;
    for (int i = 0; i < n && !rc; i++) {
      double us;
      if (elapsed_us(c->rk[i].ev0[it], c->rk[i].ev1[it], &us)) rc = -1;
      else if (i == 0 || us < best) best = us;
    }
    c->samples[it] = best / K;
  }
  for (int i = 0; i < n; i++) {
    cudaSetDevice(c->rk[i].dev);
    if (ge[i]) cudaGraphExecDestroy(ge[i]);
    if (g[i]) cudaGraphDestroy(g[i]);
  }
  if (rc) (void)cudaGetLastError();
  return rc;
}

static int time_eager(run_ctx *c, int coll, size_t count) {
  int n = c->nlocal, iters = c->o->iters;
  for (int w = 0; w < c->o->warmup; w++)
    if (issue(c, coll, count)) return -1;
  if (sync_all(c)) return -1;
  for (int it = 0; it < iters; it++) {
    for (int i = 0; i < n; i++) {
      CUDA_TRY(cudaSetDevice(c->rk[i].dev));
      CUDA_TRY(cudaEventRecord(c->rk[i].ev0[it], c->rk[i].stream));
    }
    if (issue(c, coll, count)) return -1;
    for (int i = 0; i < n; i++) {
      CUDA_TRY(cudaSetDevice(c->rk[i].dev));
      CUDA_TRY(cudaEventRecord(c->rk[i].ev1[it], c->rk[i].stream));
    }
  }
  if (sync_all(c)) return -1;
  for (int it = 0; it < iters; it++) {
    double best = 0;
    for (int i = 0; i < n; i++) {
      double us;
      if (elapsed_us(c->rk[i].ev0[it], c->rk[i].ev1[it], &us)) return -1;
      if (i == 0 || us < best) best = us;
    }
    c->samples[it] = best;
  }
  return 0;
}

/* Measure one point into *p (stats, status, what ran). Returns 0 (p->status says how it went),
 * 1 when this setting cannot go on (NCCL refused a call in a one-process run: p is FAILED), or
 * -1 on a failure that ends the run (with several processes every failure does: the peers of a
 * failed rank wait in the collective, and the launcher stops them). */
static int measure_point(run_ctx *c, const topo_cal_setting *s, int coll, uint64_t planned, topo_cal_point *p) {
  memset(p, 0, sizeof *p);
  p->coll = coll;
  p->bytes = topo_cal_coll_bytes(coll, planned, c->r->nranks, &p->count);
  p->ran_algo = p->ran_proto = p->ran_channels = -1;
  p->graph = topo_cal_use_graph(c->o->timing, c->o->graph_max_bytes, p->bytes);
  p->calls = p->graph ? topo_cal_graph_calls(p->bytes) : 1;
  if (c->log_on) {
    topo_cal_nccl_log_poll(&c->log);
    c->log.have_last[coll] = 0;
  }
  int rc = p->graph ? time_graph(c, coll, p->count, p->calls) : time_eager(c, coll, p->count);
  int iters = c->o->iters;
  double flag = 0; /* 2 = not run as forced; reduced across processes as -flag with the samples */
  if (!rc && c->log_on && s->kind == TOPO_CAL_FORCED) {
    topo_cal_nccl_log_poll(&c->log);
    if (c->log.have_last[coll]) {
      const topo_cal_choice *ch = &c->log.last[coll];
      p->ran_algo = ch->algo;
      p->ran_proto = ch->proto;
      p->ran_channels = ch->nchannels;
      /* Channels: a forced count is a ceiling (small messages use fewer channels). */
      if (ch->algo != s->algo || ch->proto != s->proto || (s->nchannels > 0 && ch->nchannels > s->nchannels))
        flag = 2;
    }
  } else if (!rc && c->log_on) {
    topo_cal_nccl_log_poll(&c->log);
    if (c->log.have_last[coll]) {
      p->ran_algo = c->log.last[coll].algo;
      p->ran_proto = c->log.last[coll].proto;
      p->ran_channels = c->log.last[coll].nchannels;
    }
  }
  if (rc) {
    p->status = TOPO_CAL_FAILED;
    return c->pp->nprocs > 1 ? -1 : 1;
  }
  if (c->pp->nprocs > 1) {
    /* Samples (min over ranks), then -flag and -stop (max over ranks) in one reduction. */
    c->samples[iters] = -flag;
    c->samples[iters + 1] = -(double)topo_cal_stop_requested();
    if (reduce_min(c, c->samples, iters + 2)) return -1;
    flag = -c->samples[iters];
    c->stop = -c->samples[iters + 1] > 0;
  } else {
    c->stop = topo_cal_stop_requested();
  }
  if (topo_cal_stats_compute(c->samples, iters, &p->stats)) {
    p->status = TOPO_CAL_FAILED;
    return -1;
  }
  if (flag == 2) {
    p->status = TOPO_CAL_MISMATCH;
    return 0;
  }
  char why[256];
  if (topo_cal_check_floor(coll, c->r->nranks, p->bytes, p->stats.median, c->o->floor_us, c->r->line_rate_gbs, why, sizeof why)) {
    p->status = TOPO_CAL_REJECTED;
    char label[64];
    topo_cal_setting_label(s, label, sizeof label);
    if (c->leader) topo_cal_warn("rejected %s %s %llu B: %s", coll_word(coll), label, (unsigned long long)p->bytes, why);
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * One setting: a fresh communicator, every collective it applies to, every size
 */

static int run_setting(run_ctx *c, const topo_cal_setting *s, int via_env) {
  char label[64], force[64], name[96];
  topo_cal_setting_label(s, label, sizeof label);
  snprintf(name, sizeof name, "topo-calibrate %s", label);
  if (s->kind == TOPO_CAL_FORCED) {
    topo_cal_setting_force_value(s, force, sizeof force);
    if (via_env) {
      set_env("NCCL_ALGO", topo_nccl_algo_name(s->algo, TOPO_NCCL_TABLE));
      set_env("NCCL_PROTO", topo_nccl_proto_name(s->proto, TOPO_NCCL_TABLE));
    } else {
      set_env("TOPO_TUNER_FORCE", force);
    }
  }
  if (c->log_on) {
    topo_cal_nccl_log_poll(&c->log);
    topo_cal_nccl_log_reset(&c->log);
  }
  double t0 = now_us();
  /* Channel counts: through TOPO_TUNER_FORCE's channel field in a communicator configured as the
   * default's (the shape the tuner runs in); minCTAs = maxCTAs only where forcing through
   * NCCL_ALGO/NCCL_PROTO (no other way) or for a beyond-reach count (more than NCCL's own). */
  int shape_ch = s->kind == TOPO_CAL_FORCED && (via_env || s->beyond_reach) ? s->nchannels : 0;
  int rc = comm_create(c, COMMS(c), shape_ch, name, NULL);
  if (rc) {
    set_env("TOPO_TUNER_FORCE", NULL);
    set_env("NCCL_ALGO", NULL);
    set_env("NCCL_PROTO", NULL);
    comm_destroy(c, COMMS(c), 1);
    if (c->pp->nprocs > 1) return -1;
    /* One process: this setting is lost, the sweep goes on. */
    topo_cal_warn("setting %s: no communicator; skipped", label);
    c->failed = 1;
    return 0;
  }
  shared_facts facts;
  if (learn_facts(c, &facts)) rc = -1;
  if (!rc && s->kind == TOPO_CAL_TUNER && facts.tuner_loaded == 0) {
    if (c->leader) topo_cal_warn("tuner run: NCCL did not log loading the tuner plugin; the 'tuner' column may be NCCL's own choice");
  }
  int si = topo_cal_results_add_setting(c->r, s);
  if (si < 0) rc = -1;
  static const int order[NCCL_NUM_FUNCTIONS] = {ncclFuncAllReduce, ncclFuncAllGather,
                                             ncclFuncReduceScatter, ncclFuncBroadcast,
                                             ncclFuncReduce};
  int broken = 0;
  for (int oi = 0; oi < NCCL_NUM_FUNCTIONS && !rc && !broken && !c->stop; oi++) {
    int coll = order[oi];
    if (!((c->o->colls >> coll) & 1u) || !topo_cal_setting_applies(s, coll, &c->r->allowed)) continue;
    c->unit++;
    double tc = now_us();
    int slow = 0, npts = 0, pruned_at = -1;
    uint64_t last_bytes = 0;
    topo_cal_point first = {0}, last = {0};
    for (int z = 0; z < c->nsizes && !rc; z++) {
      size_t count;
      uint64_t b = topo_cal_coll_bytes(coll, c->sizes[z], c->r->nranks, &count);
      if (b == last_bytes) continue;
      last_bytes = b;
      topo_cal_point p;
      int mp = measure_point(c, s, coll, c->sizes[z], &p);
      if (mp < 0) {
        rc = -1;
        break;
      }
      p.setting = si;
      p.round = c->round;
      p.pair = c->pair;
      if (mp > 0) {
        if (c->leader)
          topo_cal_warn("%s %s %llu B failed: this setting stops here, the sweep goes on", coll_word(coll), label,
                        (unsigned long long)p.bytes);
        topo_cal_results_add_point(c->r, &p);
        c->failed = 1;
        broken = 1;
        break;
      }
      int best = s->kind == TOPO_CAL_FORCED ? topo_cal_results_best_forced(c->r, coll, p.bytes) : -1;
      if (topo_cal_results_add_point(c->r, &p) < 0) {
        rc = -1;
        break;
      }
      if (!npts) first = p;
      last = p;
      npts++;
      if (c->o->verbose && c->leader)
        topo_cal_progress("  %s %s %llu B: %.2f us (iqr %.1f%%)%s", coll_word(coll), label, (unsigned long long)p.bytes,
                          p.stats.median, 100 * topo_cal_stats_spread(&p.stats),
                          p.status == TOPO_CAL_MISMATCH ? " not run as forced" : p.status == TOPO_CAL_REJECTED ? " rejected" : "");
      if (s->kind == TOPO_CAL_FORCED && best >= 0 && p.status == TOPO_CAL_OK &&
          topo_cal_slower_than(p.stats.median, c->r->points[best].stats.median, c->o->prune))
        slow++;
      else
        slow = 0;
      if (slow >= 2 && z + 1 < c->nsizes) {
        pruned_at = z + 1;
        break;
      }
      if (c->stop) break;
    }
    c->unit_us += now_us() - tc;
    c->units_done++;
    if (!c->leader || !npts) continue;
    double busbw = topo_cal_algbw(last.bytes, last.stats.median) * topo_nccl_busbw_factor(coll, c->r->nranks);
    char fb[24], lb[24], pr[96] = "";
    topo_cal_format_bytes(first.bytes, fb, sizeof fb);
    topo_cal_format_bytes(last.bytes, lb, sizeof lb);
    if (pruned_at >= 0) snprintf(pr, sizeof pr, "; larger sizes skipped (> %.0fx the best so far)", c->o->prune);
    topo_cal_progress("[%d/%d] %-13s %-18s %2d sizes: %s %.2f us .. %s %.1f us (busbw %.1f GB/s), %.1f s%s", c->unit,
                      c->nunits, coll_word(coll), label, npts, fb, first.stats.median, lb, last.stats.median, busbw,
                      (now_us() - tc) / 1e6, pr);
  }
  comm_destroy(c, COMMS(c), rc != 0 || broken);
  set_env("TOPO_TUNER_FORCE", NULL);
  set_env("NCCL_ALGO", NULL);
  set_env("NCCL_PROTO", NULL);
  topo_cal_debug("setting %s done in %.1f s", label, (now_us() - t0) / 1e6);
  return rc;
}

/* ---------------------------------------------------------------------------------------------
 * The run
 */

static int file_exists(const char *p) {
  struct stat st;
  return p && *p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The installed libdir relative to the installed bindir (tools/calibrate/CMakeLists.txt). */
#ifndef TOPO_CALIBRATE_LIBDIR_REL
#define TOPO_CALIBRATE_LIBDIR_REL "../lib"
#endif

static void find_tuner(run_ctx *c) {
  c->tuner_path[0] = '\0';
  if (c->o->tuner) {
    if (file_exists(c->o->tuner) && !realpath(c->o->tuner, c->tuner_path))
      snprintf(c->tuner_path, sizeof c->tuner_path, "%s", c->o->tuner);
    return;
  }
  char exe[768];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  const char *cand[4];
  int nc = 0;
  char a[1024], b[1024], d[1024];
  if (n > 0) { /* an installed topo-calibrate takes the installed tuner before the build tree's */
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    const char *rel = TOPO_CALIBRATE_LIBDIR_REL;
    if (rel[0] == '/') snprintf(b, sizeof b, "%s/libtopo-tuner.so", rel);
    else snprintf(b, sizeof b, "%s/%s/libtopo-tuner.so", exe, rel);
    cand[nc++] = b;
  }
#ifdef TOPO_CALIBRATE_TUNER_PATH
  cand[nc++] = TOPO_CALIBRATE_TUNER_PATH;
#endif
  if (n > 0) {
    snprintf(a, sizeof a, "%s/../../tuner-plugin/libtopo-tuner.so", exe);
    snprintf(d, sizeof d, "%s/libtopo-tuner.so", exe);
    cand[nc++] = a;
    cand[nc++] = d;
  }
  for (int i = 0; i < nc; i++)
    if (file_exists(cand[i])) {
      if (!realpath(cand[i], c->tuner_path)) snprintf(c->tuner_path, sizeof c->tuner_path, "%s", cand[i]);
      return;
    }
}

static void nccl_identity(run_ctx *c) {
  int v = 0;
  if (ncclGetVersion(&v) == ncclSuccess) c->r->nccl_version = v;
  Dl_info info;
  if (dladdr((void *)ncclGetVersion, &info) && info.dli_fname)
    snprintf(c->r->nccl_path, sizeof c->r->nccl_path, "%s", info.dli_fname);
}

/* The user's NCCL settings that would distort a calibration: NCCL_ALGO / NCCL_PROTO restrict
 * what NCCL allows (unset, with a warning: every forced setting sets its own); channel limits
 * that NCCL reads once per process or that override ncclConfig_t (warned: forced channel counts
 * may not apply - the log verification still marks what ran). */
static void check_user_env(run_ctx *c) {
  static const char *const restrict_vars[] = {"NCCL_ALGO", "NCCL_PROTO"};
  for (size_t i = 0; i < sizeof restrict_vars / sizeof restrict_vars[0]; i++) {
    const char *v = getenv(restrict_vars[i]);
    if (v) {
      if (c->leader) topo_cal_warn("%s=%s in the environment: unset for the calibration (each setting forces its own)", restrict_vars[i], v);
      unsetenv(restrict_vars[i]);
    }
  }
  static const char *const channel_vars[] = {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NRINGS",
                                             "NCCL_MAX_NRINGS", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS"};
  for (size_t i = 0; i < sizeof channel_vars / sizeof channel_vars[0]; i++) {
    const char *v = getenv(channel_vars[i]);
    if (v && c->leader)
      topo_cal_warn("%s=%s is set: NCCL applies it to every communicator, so forced channel counts may not hold", channel_vars[i], v);
  }
}

static void setup_log(run_ctx *c) {
  const char *dir = c->o->workdir ? c->o->workdir : getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  snprintf(c->workdir, sizeof c->workdir, "%s", dir);
  c->log_on = 0;
  topo_cal_nccl_log_init(&c->log);
  if (!c->o->verify || c->pp->proc != 0) return;
  if (getenv("NCCL_DEBUG_FILE")) {
    topo_cal_warn("NCCL_DEBUG_FILE is set: not reading NCCL's log, so what NCCL ran is not verified");
    return;
  }
  snprintf(c->log_path, sizeof c->log_path, "%s/topo-calibrate-nccl.%d.log", c->workdir, (int)getpid());
  setenv("NCCL_DEBUG_FILE", c->log_path, 1);
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,TUNING,ENV", 1);
  c->log_on = 1;
}

static int open_log(run_ctx *c) {
  if (!c->log_on || c->log.f) return 0;
  if (topo_cal_nccl_log_open(&c->log, c->log_path)) {
    topo_cal_warn("cannot read NCCL's log %s: what NCCL ran is not verified", c->log_path);
    c->log_on = 0;
  }
  return 0;
}

/* What process 0 measured alone that every process must agree on (the profile the tuner reads in
 * --bench is fitted in every process and must come out byte-identical). */
typedef struct shared_machine {
  double floor_graph, floor_eager, floor_sync, local_ce, local_sm, line_rate;
  int multicast;
  char model[32];
} shared_machine;

static int share_machine(run_ctx *c) {
  if (c->pp->nprocs <= 1) return 0;
  topo_cal_results *r = c->r;
  shared_machine m;
  memset(&m, 0, sizeof m);
  m.floor_graph = r->floor_graph_us, m.floor_eager = r->floor_eager_us, m.floor_sync = r->floor_sync_us;
  m.local_ce = r->local_ce_bw, m.local_sm = r->local_sm_bw, m.line_rate = r->line_rate_gbs;
  m.multicast = r->dev[0].multicast;
  snprintf(m.model, sizeof m.model, "%s", r->gpu_model);
  if (share_bytes(c, &m, sizeof m)) return -1;
  r->floor_graph_us = m.floor_graph, r->floor_eager_us = m.floor_eager, r->floor_sync_us = m.floor_sync;
  r->local_ce_bw = m.local_ce, r->local_sm_bw = m.local_sm, r->line_rate_gbs = m.line_rate;
  r->dev[0].multicast = m.multicast;
  snprintf(r->gpu_model, sizeof r->gpu_model, "%s", m.model);
  return 0;
}

/* Control communicator + facts; picks up the allowed table, the channel count, the tuner state.
 * expect_tuner: NCCL_TUNER_PLUGIN names our tuner and this is the first communicator to load it
 * (NCCL logs "TUNER/Plugin: Using" only then), so its absence from the log means not loaded. */
static int control_up(run_ctx *c, const ncclUniqueId *id, int first, int expect_tuner) {
  if (c->log_on) {
    topo_cal_nccl_log_poll(&c->log);
    topo_cal_nccl_log_reset(&c->log);
  }
  if (comm_create(c, CONTROLS(c), 0, "topo-calibrate control", id)) return -1;
  open_log(c);
  shared_facts f;
  if (c->log_on && expect_tuner) {
    topo_cal_nccl_log_poll(&c->log);
    if (c->log.tuner_loaded != 1) c->log.tuner_loaded = 0;
  }
  if (learn_facts(c, &f)) return -1;
  if (first) {
    if (share_machine(c)) return -1;
    if (f.from_nccl) {
      c->r->allowed = f.allowed;
      c->r->allowed_from_nccl = 1;
    } else {
      topo_cal_rules_allowed(c->r->nranks, c->r->nnodes, &c->r->allowed);
    }
    if (f.channels > 0) c->r->nccl_channels = f.channels;
    c->r->tuner_loaded = f.tuner_loaded;
  }
  return 0;
}

static int pick_first_id(run_ctx *c, ncclUniqueId *id) {
  if (c->pp->nprocs <= 1) return ncclGetUniqueId(id) == ncclSuccess ? 0 : -1;
  if (c->pp->proc == 0 && ncclGetUniqueId(id) != ncclSuccess) return -1;
  return c->pp->share_id && c->pp->share_id(c->pp->share_ctx, id, sizeof *id) == 0 ? 0 : -1;
}

/* --time-budget: skip a forced setting when it and the default / tuner runs still to come would
 * not fit. Process 0 decides from its clock and every process follows (identical plans). */
static int over_budget(run_ctx *c, const topo_cal_setting *s) {
  const topo_cal_options *o = c->o;
  if (!(o->time_budget_s > 0)) return 0;
  int units = 0;
  for (int k = 0; k < NCCL_NUM_FUNCTIONS; k++) units += ((o->colls >> k) & 1u) && topo_cal_setting_applies(s, k, &c->r->allowed);
  int later = __builtin_popcount(o->colls) * ((o->bench ? 1 : 0) + (o->run_default || o->bench ? 1 : 0));
  double per = c->units_done ? c->unit_us / c->units_done : 2e6; /* us per (setting, collective) */
  double init = 3e6;                                             /* a communicator's init, us */
  int skip = now_us() - c->t_start + (units + later) * per + 3 * init > o->time_budget_s * 1e6;
  if (share_bytes(c, &skip, sizeof skip)) return 1;
  if (skip) {
    c->r->skipped_settings++;
    c->r->partial = 1;
    if (c->r->skipped_settings == 1 && c->leader)
      topo_cal_warn("--time-budget %.0f s: skipping the remaining forced settings", o->time_budget_s);
  }
  return skip;
}

/* Rounds: round k runs every setting once, in topo_cal_round_order's rotation. A setting runs
 * on a fresh communicator of its own each round (TOPO_TUNER_FORCE and NCCL_ALGO are read at a
 * communicator's init), and its results are added once per round (point.round). Two default
 * entries are the A/A pair (point.pair 0 and 1). The result list holds one setting record per
 * (setting, round). */
static int run_rounds(run_ctx *c, const topo_cal_setting *set, int n, int via_env) {
  int rounds = c->o->rounds > 0 ? c->o->rounds : 1;
  int order[258];
  if (n > 258) n = 258;
  int rc = 0;
  for (int k = 0; k < rounds && !rc && !c->stop; k++) {
    topo_cal_round_order(n, k, order);
    for (int i = 0; i < n && !rc && !c->stop; i++) {
      const topo_cal_setting *s = &set[order[i]];
      if (s->kind == TOPO_CAL_FORCED && over_budget(c, s)) continue;
      c->round = k;
      c->pair = s->kind == TOPO_CAL_DEFAULT ? (order[i] == n - 1) : 0;
      rc = run_setting(c, s, via_env && s->kind == TOPO_CAL_FORCED);
    }
  }
  c->round = c->pair = 0;
  return rc;
}

static int sweep(run_ctx *c) {
  const topo_cal_options *o = c->o;
  topo_cal_results *r = c->r;
  c->nsizes = topo_cal_plan_sizes(o->min_bytes, o->max_bytes, o->step, c->sizes, TOPO_CAL_MAX_SIZES);
  find_tuner(c);
  int tuner_file = c->tuner_path[0] != '\0';
  if (o->force_via == TOPO_CAL_VIA_TUNER && !tuner_file) {
    topo_cal_warn("--force-via tuner: libtopo-tuner.so not found%s%s (build it, or pass --tuner PATH)",
                  o->tuner ? " at " : "", o->tuner ? o->tuner : "");
    return -1;
  }
  c->use_tuner_force = tuner_file && o->force_via != TOPO_CAL_VIA_ENV;
  int phase_a = tuner_file && (c->use_tuner_force || o->bench);
  if (o->bench && !tuner_file && c->leader)
    topo_cal_warn("--bench: libtopo-tuner.so not found (pass --tuner PATH): comparing NCCL's default with the oracle only");
  if (c->leader) {
    if (tuner_file) topo_cal_progress("tuner plugin: %s", c->tuner_path);
    topo_cal_progress("forcing choices through %s", c->use_tuner_force ? "TOPO_TUNER_FORCE (libtopo-tuner)" : "NCCL_ALGO / NCCL_PROTO");
  }
  const char *nvls = getenv("NCCL_NVLS_ENABLE");
  if (c->leader && (!nvls || strcmp(nvls, "0") != 0))
    topo_cal_info("note: NCCL_NVLS_ENABLE is %s%s; NVLS is measured only where NCCL enables it", nvls ? "set to " : "not set",
                  nvls ? nvls : "");

  ncclUniqueId id;
  if (pick_first_id(c, &id)) {
    topo_cal_warn("cannot create or share the first NCCL unique id");
    return -1;
  }
  topo_cal_setting plan[256];
  int nplan = 0;
  int rc = 0;
  set_env("TOPO_TUNER_FORCE", NULL);
  if (phase_a) {
    set_env("NCCL_TUNER_PLUGIN", c->tuner_path);
    if (control_up(c, &id, 1, 1)) return -1;
    if (r->tuner_loaded == 0) {
      if (o->force_via == TOPO_CAL_VIA_TUNER) {
        topo_cal_warn("NCCL did not load %s (NCCL_TUNER_PLUGIN); see %s", c->tuner_path, c->log_path);
        comm_destroy(c, CONTROLS(c), 0);
        return -1;
      }
      if (c->leader) topo_cal_warn("NCCL did not load the tuner plugin: forcing through NCCL_ALGO/NCCL_PROTO instead");
      c->use_tuner_force = 0;
    }
    r->force_via = c->use_tuner_force ? TOPO_CAL_VIA_TUNER : TOPO_CAL_VIA_ENV;
    nplan = topo_cal_plan_settings(o, &r->allowed, plan, 256);
    c->nunits = 0;
    for (int i = 0; i < nplan; i++)
      for (int k = 0; k < NCCL_NUM_FUNCTIONS; k++)
        c->nunits += ((o->colls >> k) & 1u) && topo_cal_setting_applies(&plan[i], k, &r->allowed);
    c->nunits += (o->run_default || o->bench ? 2 : 0) * __builtin_popcount(o->colls) +
                 (o->bench ? __builtin_popcount(o->colls) : 0);
    c->nunits *= o->rounds > 0 ? o->rounds : 1;
    if (c->leader)
      topo_cal_progress("%d forced settings x %d sizes (%s what NCCL allows)", nplan, c->nsizes,
                        r->allowed_from_nccl ? "NCCL's table says" : "built-in rules for");
    for (int i = 0; i < nplan; i++)
      plan[i].beyond_reach = r->nccl_channels > 0 && plan[i].nchannels > r->nccl_channels;
    if (c->use_tuner_force) rc = run_rounds(c, plan, nplan, 0);
    if (!rc && !c->stop && o->bench && tuner_file && r->tuner_loaded != 0) {
      char tmp[1024];
      const char *prof = o->profile;
      if (!prof && c->use_tuner_force) {
        snprintf(tmp, sizeof tmp, "%s/topo-calibrate.%d.profile", c->workdir, (int)getpid());
        if (topo_cal_write_profile(r, tmp, NULL) < 0) rc = -1;
        prof = tmp;
        if (c->leader) topo_cal_progress("tuner run on the profile fitted above (%s)", tmp);
      }
      if (!rc && prof) {
        set_env("TOPO_TUNER_PROFILE", prof);
        topo_cal_setting t = {TOPO_CAL_TUNER, -1, -1, 0, 0};
        rc = run_rounds(c, &t, 1, 0);
        set_env("TOPO_TUNER_PROFILE", NULL);
      } else if (!rc && c->leader) {
        topo_cal_warn("--bench with forcing through NCCL_ALGO needs --profile for the tuner run: tuner column skipped");
      }
    }
    /* The next control communicator's id travels over this one before it goes. */
    if (!rc && c->pp->nprocs > 1) {
      if (c->pp->proc == 0 && ncclGetUniqueId(&id) != ncclSuccess) rc = -1;
      if (!rc && share_bytes(c, &id, sizeof id)) rc = -1;
    } else if (!rc) {
      if (ncclGetUniqueId(&id) != ncclSuccess) rc = -1;
    }
    comm_destroy(c, CONTROLS(c), rc != 0);
    if (rc) return -1;
    if (c->stop) return 0;
  }
  /* Phase B: no tuner. */
  int need_b = !c->use_tuner_force || o->run_default || o->bench;
  if (!need_b) return 0;
  set_env("NCCL_TUNER_PLUGIN", "none");
  if (control_up(c, &id, !phase_a, 0)) return -1;
  if (!phase_a) {
    r->force_via = TOPO_CAL_VIA_ENV;
    nplan = topo_cal_plan_settings(o, &r->allowed, plan, 256);
    c->nunits = 0;
    for (int i = 0; i < nplan; i++)
      for (int k = 0; k < NCCL_NUM_FUNCTIONS; k++)
        c->nunits += ((o->colls >> k) & 1u) && topo_cal_setting_applies(&plan[i], k, &r->allowed);
    c->nunits += (o->run_default || o->bench ? 2 : 0) * __builtin_popcount(o->colls);
    c->nunits *= o->rounds > 0 ? o->rounds : 1;
    if (c->leader)
      topo_cal_progress("%d forced settings x %d sizes (%s what NCCL allows)", nplan, c->nsizes,
                        r->allowed_from_nccl ? "NCCL's table says" : "built-in rules for");
  }
  for (int i = 0; i < nplan && !phase_a; i++)
    plan[i].beyond_reach = r->nccl_channels > 0 && plan[i].nchannels > r->nccl_channels;
  /* The default twice per round (A/A: two communicators of the same config), interleaved with
   * the forced settings when they are forced through NCCL_ALGO/NCCL_PROTO. */
  topo_cal_setting both[258];
  int nboth = 0;
  if (!c->use_tuner_force)
    for (int i = 0; i < nplan && nboth < 256; i++) both[nboth++] = plan[i];
  if (o->run_default || o->bench) {
    topo_cal_setting d = {TOPO_CAL_DEFAULT, -1, -1, 0, 0};
    both[nboth++] = d;
    both[nboth++] = d;
  }
  if (!rc && !c->stop && nboth) rc = run_rounds(c, both, nboth, !c->use_tuner_force);
  comm_destroy(c, CONTROLS(c), rc != 0);
  return rc;
}

static int write_outputs(run_ctx *c) {
  const topo_cal_options *o = c->o;
  int rc = 0;
  if (!c->leader) return 0;
  fflush(stderr);
  topo_cal_report_summary(stdout, c->r);
  if (o->bench) topo_cal_report_bench(stdout, c->r, NULL);
  topo_cal_report_advice(stdout, c->r);
  if (topo_cal_write_profile(c->r, o->output, stdout) < 0) rc = -1;
  else if (o->output) topo_cal_progress("profile written to %s", o->output);
  if (o->csv) {
    FILE *f = fopen(o->csv, "w");
    if (!f) {
      topo_cal_warn("cannot write %s: %s", o->csv, strerror(errno));
      rc = -1;
    } else {
      topo_cal_report_csv(f, c->r);
      if (fclose(f) != 0) rc = -1;
    }
  }
  fflush(stdout);
  return rc;
}

int topo_cal_run(const topo_cal_options *o, const topo_cal_proc *proc, topo_cal_results *r) {
  run_ctx *c = topo_calloc(1, sizeof *c);
  if (!c) return 1;
  c->o = o;
  c->pp = proc;
  c->r = r;
  c->leader = proc->proc == 0;
  c->t_start = now_us();
  check_user_env(c);
  setup_log(c); /* before the first NCCL call: NCCL reads NCCL_DEBUG* once */
  int rc = devices_init(c);
  if (rc == -2) {
    topo_free(c);
    return 2;
  }
  if (!rc) rc = buffers_init(c);
  if (!rc) nccl_identity(c);
  if (!rc && c->leader) {
    char n[96];
    snprintf(n, sizeof n, "%s", r->dev[0].name);
    topo_cal_progress("%d rank%s on %s (%s), %d node%s%s, NCCL %d", r->nranks, r->nranks == 1 ? "" : "s", r->gpu_model, n,
                      r->nnodes, r->nnodes == 1 ? "" : "s", r->nnodes > 1 ? " (NCCL_HOSTID: socket transport)" : "",
                      r->nccl_version);
  }
  if (!rc) rc = measure_floors(c);
  if (!rc && o->p2p && proc->nprocs == 1 && c->nlocal > 1) rc = measure_p2p(c);
  if (!rc && r->line_rate_gbs <= 0 && r->p2p_ce_bw) {
    for (int i = 0; i < r->ndev * r->ndev; i++)
      if (r->p2p_ce_bw[i] > r->line_rate_gbs) r->line_rate_gbs = r->p2p_ce_bw[i];
    r->line_rate_gbs *= 1.25; /* copies reach ~80 % of the line */
  }
  if (!rc && r->nranks < 2 && c->leader)
    topo_cal_progress("one GPU: measured device copy bandwidth and the launch floor; the p2p matrix and every "
                      "collective sweep need at least 2 GPUs (-g 2 or more)");
  if (!rc && r->nranks >= 2 && o->sweep) rc = sweep(c);
  if (c->stop || topo_cal_stop_requested()) {
    r->partial = 1;
    if (c->leader) topo_cal_warn("stopped by a signal: writing what was measured (partial)");
  }
  int out_rc = write_outputs(c);
  int failed = c->failed;
  if (c->log_on) topo_cal_nccl_log_close(&c->log);
  buffers_free(c);
  topo_free(c);
  for (int i = 0; i < r->npoints; i++)
    if (r->points[i].status == TOPO_CAL_FAILED) rc = rc ? rc : -1;
  return rc || out_rc || failed ? 1 : 0;
}

/* ---------------------------------------------------------------------------------------------
 * Device probe for the fork launcher: CUDA must not be initialised in a process that forks
 * workers, so a child counts the devices.
 */
int topo_cal_probe_devices(char *err, size_t errlen) {
  int fds[2];
  if (pipe(fds)) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    return -1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, errlen, "fork: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    int msg[2] = {e == cudaSuccess ? n : -1, (int)e};
    ssize_t w = write(fds[1], msg, sizeof msg);
    _exit(w == (ssize_t)sizeof msg ? 0 : 1);
  }
  close(fds[1]);
  int msg[2] = {-1, 0};
  ssize_t got = read(fds[0], msg, sizeof msg);
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  if (got != (ssize_t)sizeof msg || msg[0] < 0) {
    snprintf(err, errlen, "no usable CUDA device: %s",
             got == (ssize_t)sizeof msg ? cudaGetErrorString((cudaError_t)msg[1]) : "the probe process died");
    return -1;
  }
  if (msg[0] == 0) {
    snprintf(err, errlen, "no usable CUDA device: none visible");
    return -1;
  }
  return msg[0];
}
