/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's timing of one point (one collective, one size, one setting): warm-up, then
 * o->iters samples; sizes up to --graph-max are K calls captured in a CUDA graph per sample (GPU
 * time, not launch rate), larger ones eager calls between events. A sample is the minimum over
 * ranks (the last rank to start never waits for the others), reduced across processes, with what
 * NCCL's log says ran and the physical-floor check. Called by the sweep (gpu_sweep.c); the
 * run's state is run_state.h.
 */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "calibrate.h"
#include "gpu_comms.h"
#include "gpu_timing.h"
#include "run_state.h"

static int issue(run_ctx *c, int coll, size_t count) {
  if (c->nlocal > 1) NCCL_TRY(ncclGroupStart());
  for (int i = 0; i < c->nlocal; i++) {
    rank_ctx *k = &c->rk[i];
    ncclResult_t res = ncclSuccess;
    switch (coll) {
    case ncclFuncAllReduce:
      res = ncclAllReduce(k->send, k->recv, count, ncclFloat, ncclSum, k->comm, k->stream);
      break;
    case ncclFuncAllGather:
      res = ncclAllGather(k->send, k->recv, count, ncclFloat, k->comm, k->stream);
      break;
    case ncclFuncReduceScatter:
      res = ncclReduceScatter(k->send, k->recv, count, ncclFloat, ncclSum, k->comm, k->stream);
      break;
    case ncclFuncBroadcast:
      res = ncclBroadcast(k->send, k->recv, count, ncclFloat, 0, k->comm, k->stream);
      break;
    case ncclFuncReduce:
      res = ncclReduce(k->send, k->recv, count, ncclFloat, ncclSum, 0, k->comm, k->stream);
      break;
    default: res = ncclInvalidArgument; break;
    }
    if (res != ncclSuccess) {
      if (c->nlocal > 1) ncclGroupEnd();
      return topo_cal_nccl_fail("collective enqueue", res);
    }
  }
  if (c->nlocal > 1) NCCL_TRY(ncclGroupEnd());
  return 0;
}

/* Samples (us per call, min over this process's ranks) into c->samples[0..iters). */
static int time_graph(run_ctx *c, int coll, size_t count, int K) {
  int n = c->nlocal, iters = c->o->iters;
  cudaGraph_t g[TOPO_CAL_MAX_LOCAL] = {0};
  cudaGraphExec_t ge[TOPO_CAL_MAX_LOCAL] = {0};
  int rc = 0, captured = 0;
  for (int i = 0; i < n && !rc; i++) {
    cudaError_t e = cudaSetDevice(c->rk[i].dev);
    if (e == cudaSuccess)
      e = cudaStreamBeginCapture(c->rk[i].stream, cudaStreamCaptureModeThreadLocal);
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
      if (cudaEventRecord(k->ev0[it], k->stream) != cudaSuccess ||
          cudaGraphLaunch(ge[i], k->stream) != cudaSuccess ||
          cudaEventRecord(k->ev1[it], k->stream) != cudaSuccess)
        rc = -1;
    }
  if (!rc) rc = topo_cal_sync_all(c);
  for (int it = 0; it < iters && !rc; it++) {
    double best = 0;
    for (int i = 0; i < n && !rc; i++) {
      double us;
      if (topo_cal_elapsed_us(c->rk[i].ev0[it], c->rk[i].ev1[it], &us)) rc = -1;
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
  if (topo_cal_sync_all(c)) return -1;
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
  if (topo_cal_sync_all(c)) return -1;
  for (int it = 0; it < iters; it++) {
    double best = 0;
    for (int i = 0; i < n; i++) {
      double us;
      if (topo_cal_elapsed_us(c->rk[i].ev0[it], c->rk[i].ev1[it], &us)) return -1;
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
int topo_cal_measure_point(run_ctx *c, const topo_cal_setting *s, int coll, uint64_t planned,
                           topo_cal_point *p) {
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
      if (ch->algo != s->algo || ch->proto != s->proto ||
          (s->nchannels > 0 && ch->nchannels > s->nchannels))
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
    if (topo_cal_reduce_min(c, c->samples, iters + 2)) return -1;
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
  if (topo_cal_check_floor(coll, c->r->nranks, p->bytes, p->stats.median, c->o->floor_us,
                           c->r->line_rate_gbs, why, sizeof why)) {
    p->status = TOPO_CAL_REJECTED;
    char label[64];
    topo_cal_setting_label(s, label, sizeof label);
    if (c->leader)
      topo_cal_warn("rejected %s %s %llu B: %s", topo_nccl_func_name(coll, TOPO_NCCL_FILE), label,
                    (unsigned long long)p->bytes, why);
  }
  return 0;
}
