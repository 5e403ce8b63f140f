/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's GPU-pair matrix (one process driving every local GPU): per ordered pair the
 * copy-engine bandwidth and latency, SM-copy bandwidth where peer access works and the kernels
 * are built, and a ping-pong round trip per unordered pair. Called by topo_cal_run (runner.c);
 * the run's state is run_state.h.
 */
#include <stdio.h>

#include "alloc.h"
#include "calibrate.h"
#include "gpu_p2p.h"
#include "gpu_kernels.h"
#include "run_state.h"

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
  size_t bytes =
      (size_t)(c->o->p2p_bytes < c->buf_bytes ? c->o->p2p_bytes : c->buf_bytes) & ~(size_t)15;
  CUDA_TRY(cudaSetDevice(a->dev));
  /* Copy engine bandwidth, source's stream. */
  for (int w = 0; w < 2; w++)
    CUDA_TRY(cudaMemcpyPeerAsync(b->recv, b->dev, a->send, a->dev, bytes, a->stream));
  for (int it = 0; it < iters; it++) {
    CUDA_TRY(cudaEventRecord(a->ev0[it], a->stream));
    CUDA_TRY(cudaMemcpyPeerAsync(b->recv, b->dev, a->send, a->dev, bytes, a->stream));
    CUDA_TRY(cudaEventRecord(a->ev1[it], a->stream));
  }
  CUDA_TRY(cudaStreamSynchronize(a->stream));
  for (int it = 0; it < iters; it++)
    if (topo_cal_elapsed_us(a->ev0[it], a->ev1[it], &c->samples[it])) return -1;
  c->r->p2p_ce_bw[i * n + j] = topo_cal_algbw(bytes, topo_cal_median(c->samples, iters));
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
      if (topo_cal_elapsed_us(a->ev0[it], a->ev1[it], &c->samples[it])) return -1;
      c->samples[it] /= K;
    }
    c->r->p2p_ce_lat[i * n + j] = topo_cal_median(c->samples, iters);
  } else {
    (void)cudaGetLastError();
    topo_cal_debug("p2p %d->%d: copy latency not measured (graph capture of peer copies failed)", i,
                   j);
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
      if (topo_cal_elapsed_us(a->ev0[it], a->ev1[it], &c->samples[it])) return -1;
    c->r->p2p_sm_bw[i * n + j] = topo_cal_algbw(bytes, topo_cal_median(c->samples, iters));
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
  if (topo_cal_kernel_pingpong(b->flag, a->flag, trips, 0, 2000000000ull, b->pp_result, b->stream))
    return -1;
  CUDA_TRY(cudaSetDevice(a->dev));
  if (topo_cal_kernel_pingpong(a->flag, b->flag, trips, 1, 2000000000ull, a->pp_result, a->stream))
    return -1;
  CUDA_TRY(cudaStreamSynchronize(a->stream));
  CUDA_TRY(cudaSetDevice(b->dev));
  CUDA_TRY(cudaStreamSynchronize(b->stream));
  long long ns = 0;
  CUDA_TRY(cudaSetDevice(a->dev));
  CUDA_TRY(cudaMemcpy(&ns, a->pp_result, sizeof ns, cudaMemcpyDeviceToHost));
  if (ns <= 0) {
    topo_cal_warn("p2p ping-pong %d<->%d timed out (no answer from the peer); latency not measured",
                  i, j);
    return 0;
  }
  double rt = (double)ns / 1e3 / trips;
  c->r->p2p_sm_lat[i * c->nlocal + j] = rt;
  c->r->p2p_sm_lat[j * c->nlocal + i] = rt;
  return 0;
}

int topo_cal_measure_p2p(run_ctx *c) {
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
      topo_cal_warn(
          "p2p: the slowest pair reaches %.0f%% of the fastest - a degraded or asymmetric link?",
          100 * lo / hi);
  }
  return rc;
}
