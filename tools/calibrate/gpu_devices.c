/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's devices: which GPUs this process drives and what they are, their buffers,
 * streams and events, and what one GPU alone can do (device-local copy bandwidth; the GPU time
 * of a minimal operation in a graph, the host's eager launch rate and a launch + completion round
 * trip). Also the fork launcher's device probe, which must not initialise CUDA in the parent.
 * Called by topo_cal_run (runner.c), the probe by main.c; the run's state is run_state.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "calibrate.h"
#include "gpu_devices.h"
#include "gpu_kernels.h"
#include "run_state.h"

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

int topo_cal_devices_init(run_ctx *c) {
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev <= 0) {
    topo_cal_error("no usable CUDA device: %s",
                   e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
    return -2;
  }
  const topo_cal_proc *pp = c->pp;
  if (pp->nprocs > 1) {
    if (pp->device_base >= ndev) {
      topo_cal_error("rank %d wants GPU %d but only %d are visible", pp->local_first,
                     pp->device_base, ndev);
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
    if (want > TOPO_CAL_MAX_LOCAL) want = TOPO_CAL_MAX_LOCAL;
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
    topo_cal_copy_str(d->name, sizeof d->name, prop.name);
    d->sms = prop.multiProcessorCount;
    d->mem_gib = (double)prop.totalGlobalMem / (1024.0 * 1024 * 1024);
    d->multicast = multicast_supported(c->rk[i].dev);
  }
  topo_cal_gpu_model(c->r->dev[0].name, c->r->gpu_model, sizeof c->r->gpu_model);
  c->r->line_rate_gbs =
      c->o->line_rate_gbs > 0 ? c->o->line_rate_gbs : topo_cal_line_rate_for_model(c->r->gpu_model);
  return 0;
}

int topo_cal_buffers_init(run_ctx *c) {
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
    CUDA_TRY(cudaMalloc(&k->stage, TOPO_CAL_STAGE_BYTES));
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

void topo_cal_buffers_free(run_ctx *c) {
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

static int minimal_op(rank_ctx *k) {
  if (topo_cal_kernels_available()) {
    int e = topo_cal_kernel_empty(k->stream);
    if (e) return -1;
    return 0;
  }
  return cudaMemsetAsync(k->recv, 0, 4, k->stream) == cudaSuccess ? 0 : -1;
}

/* Device-local copy bandwidth on GPU 0: copy engine, and SM copies when the kernels are built. */
static int measure_local_copies(run_ctx *c) {
  rank_ctx *k = &c->rk[0];
  const int iters = c->o->iters;
  size_t bytes =
      (size_t)(c->o->p2p_bytes < c->buf_bytes ? c->o->p2p_bytes : c->buf_bytes) & ~(size_t)15;
  for (int w = 0; w < 2; w++)
    CUDA_TRY(cudaMemcpyAsync(k->recv, k->send, bytes, cudaMemcpyDeviceToDevice, k->stream));
  for (int i = 0; i < iters; i++) {
    CUDA_TRY(cudaEventRecord(k->ev0[i], k->stream));
    CUDA_TRY(cudaMemcpyAsync(k->recv, k->send, bytes, cudaMemcpyDeviceToDevice, k->stream));
    CUDA_TRY(cudaEventRecord(k->ev1[i], k->stream));
  }
  CUDA_TRY(cudaStreamSynchronize(k->stream));
  for (int i = 0; i < iters; i++)
    if (topo_cal_elapsed_us(k->ev0[i], k->ev1[i], &c->samples[i])) return -1;
  c->r->local_ce_bw = topo_cal_algbw(bytes, topo_cal_median(c->samples, iters));
  if (!topo_cal_kernels_available()) return 0;
  int blocks = 4 * c->r->dev[0].sms;
  for (int i = 0; i < iters + 2; i++) {
    int j = i - 2;
    if (j >= 0) CUDA_TRY(cudaEventRecord(k->ev0[j], k->stream));
    if (topo_cal_kernel_copy(k->recv, k->send, bytes, blocks, k->stream)) return -1;
    if (j >= 0) CUDA_TRY(cudaEventRecord(k->ev1[j], k->stream));
  }
  CUDA_TRY(cudaStreamSynchronize(k->stream));
  for (int i = 0; i < iters; i++)
    if (topo_cal_elapsed_us(k->ev0[i], k->ev1[i], &c->samples[i])) return -1;
  c->r->local_sm_bw = topo_cal_algbw(bytes, topo_cal_median(c->samples, iters));
  return 0;
}

/* GPU time per minimal op: K of them captured in one graph, per replay / K. */
static int measure_graph_floor(run_ctx *c, int K) {
  rank_ctx *k = &c->rk[0];
  const int iters = c->o->iters;
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
    if (topo_cal_elapsed_us(k->ev0[i], k->ev1[i], &c->samples[i])) return -1;
    c->samples[i] /= K;
  }
  c->r->floor_graph_us = topo_cal_median(c->samples, iters);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  return 0;
}

/* The same minimal op enqueued eagerly (the host's launch rate), and one launch + completion
 * round trip as the host sees it. */
static int measure_host_floors(run_ctx *c, int K) {
  rank_ctx *k = &c->rk[0];
  const int iters = c->o->iters;
  for (int i = 0; i < iters; i++) {
    CUDA_TRY(cudaEventRecord(k->ev0[i], k->stream));
    for (int j = 0; j < K; j++)
      if (minimal_op(k)) return -1;
    CUDA_TRY(cudaEventRecord(k->ev1[i], k->stream));
    CUDA_TRY(cudaStreamSynchronize(k->stream));
    if (topo_cal_elapsed_us(k->ev0[i], k->ev1[i], &c->samples[i])) return -1;
    c->samples[i] /= K;
  }
  c->r->floor_eager_us = topo_cal_median(c->samples, iters);
  for (int i = 0; i < iters; i++) {
    double t0 = topo_cal_now_us();
    if (minimal_op(k)) return -1;
    CUDA_TRY(cudaStreamSynchronize(k->stream));
    c->samples[i] = topo_cal_now_us() - t0;
  }
  c->r->floor_sync_us = topo_cal_median(c->samples, iters);
  return 0;
}

int topo_cal_measure_floors(run_ctx *c) {
  const int K = 100;
  CUDA_TRY(cudaSetDevice(c->rk[0].dev));
  if (measure_local_copies(c) || measure_graph_floor(c, K) || measure_host_floors(c, K)) return -1;
  topo_cal_progress(
      "GPU 0: copy %.0f GB/s (copy engine)%s, minimal op %.2f us in a graph, %.2f us eager, %.2f "
      "us launch+sync",
      c->r->local_ce_bw, topo_cal_kernels_available() ? "" : ", no SM kernels built",
      c->r->floor_graph_us, c->r->floor_eager_us, c->r->floor_sync_us);
  return 0;
}

/* Device probe for the fork launcher: CUDA must not be initialised in a process that forks
 * workers, so a child counts the devices. */
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
             got == (ssize_t)sizeof msg ? cudaGetErrorString((cudaError_t)msg[1])
                                        : "the probe process died");
    return -1;
  }
  if (msg[0] == 0) {
    snprintf(err, errlen, "no usable CUDA device: none visible");
    return -1;
  }
  return msg[0];
}
