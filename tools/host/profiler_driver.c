// SPDX-License-Identifier: Apache-2.0
// NCCL-shaped event streams, 2.28 to 2.32 (see profiler_driver.h).
#include "profiler_driver.h"

#include <string.h>

void drv_set_gpu(drv_op *op, uint64_t base, uint64_t skew, uint64_t dur) {
  for (int c = 0; c < op->nch && c < DRV_MAX_CH; c++) {
    op->gpu_start[c] = base + (uint64_t)c * skew;
    op->gpu_stop[c] = base + (uint64_t)c * skew + dur;
  }
}

drv_op drv_allreduce(int rank, uint64_t seq, size_t count, int nch) {
  drv_op op;
  memset(&op, 0, sizeof op);
  op.func = "AllReduce";
  op.dtype = "ncclFloat32";
  op.algo = "RING";
  op.proto = "Simple";
  op.seq = seq;
  op.count = count;
  op.nch = nch;
  op.peer = -1;
  op.rank = rank;
  drv_set_gpu(&op, 1000 + seq * 100, 5, 50);
  return op;
}

void drv_phase_times(const drv_op *op, int c, int phase, uint64_t *start, uint64_t *stop) {
  uint64_t a = op->gpu_start[c], b = op->gpu_stop[c], fifth = (b - a) / 5;
  uint64_t at[4] = {a, a + fifth, b - fifth, b};
  *start = at[phase];
  *stop = at[phase + 1];
}

/* NCCL 2.31's algo string for a symmetric collective: the variant after its first '_'. */
static const char *sym_algo(const char *variant) {
  const char *u = variant ? strchr(variant, '_') : NULL;
  return u ? u + 1 : variant;
}

void drv_issue(topo_host_profiler *p, const drv_op *op, drv_pending *out) {
  topo_host_event e;
  void *group_api = NULL, *api = NULL, *launch = NULL, *group = NULL, *h = NULL;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileGroupApi;
  e.graph_captured = op->graph;
  e.group_depth = 1;
  topo_host_profiler_start(p, &group_api, &e);
  topo_host_profiler_state(p, group_api, ncclProfilerGroupStartApiStop, 0, 0);

  /* NCCL reads the mask at the API call; it decides this op's kernel channels. */
  int mask = __atomic_load_n(&topo_host_profiler_mask, __ATOMIC_RELAXED);
  memset(&e, 0, sizeof e);
  e.type = op->p2p ? ncclProfileP2pApi : ncclProfileCollApi;
  e.parent = group_api;
  e.func = op->func;
  e.count = op->count;
  e.datatype = op->dtype;
  e.root = op->root;
  e.stream = op->stream;
  e.graph_captured = op->graph;
  e.user_tag = op->user_tag;
  topo_host_profiler_start(p, &api, &e);
  topo_host_profiler_stop(p, api);
  topo_host_profiler_state(p, group_api, ncclProfilerGroupEndApiStart, 0, 0);
  out->handle = NULL;
  out->kernelch = out->phases = 0;
  out->op = op;
  if (op->sym && p->lib.version < 7) { /* 2.28-2.30: a symmetric kernel's plan emits no more */
    topo_host_profiler_stop(p, group_api);
    return;
  }

  memset(&e, 0, sizeof e);
  e.type = ncclProfileKernelLaunch;
  e.parent = group_api;
  e.stream = op->stream;
  topo_host_profiler_start(p, &launch, &e);
  topo_host_profiler_stop(p, launch);

  memset(&e, 0, sizeof e);
  e.type = ncclProfileGroup;
  topo_host_profiler_start(p, &group, &e);
  if (p->lib.version < 5) mask = __atomic_load_n(&topo_host_profiler_mask, __ATOMIC_RELAXED);

  memset(&e, 0, sizeof e);
  e.type = op->p2p ? ncclProfileP2p : ncclProfileColl;
  e.parent = api;
  e.parent_group = group;
  e.rank = op->rank;
  e.seq = op->seq;
  e.func = op->func;
  e.count = op->count;
  e.datatype = op->dtype;
  e.root = op->root;
  e.peer = op->peer;
  e.nchannels = op->nch;
  e.nwarps = op->nwarps;
  e.algo = op->sym ? sym_algo(op->variant) : op->algo;
  e.proto = op->sym ? "" : op->proto;
  e.user_tag = op->user_tag;
  e.sym = op->sym;
  e.variant = op->sym ? op->variant : NULL;
  topo_host_profiler_start(p, &h, &e);
  topo_host_profiler_stop(p, h);
  topo_host_profiler_stop(p, group);
  topo_host_profiler_stop(p, group_api);
  out->handle = h;
  out->kernelch = (mask & ncclProfileKernelCh) != 0 && p->lib.version >= 3;
  out->phases =
      out->kernelch && op->sym && (mask & ncclProfileKernelPhase) != 0 && p->lib.version >= 7;
}

void drv_complete(topo_host_profiler *p, const drv_pending *pending) {
  if (!pending->kernelch) return;
  const drv_op *op = pending->op;
  for (int c = 0; c < op->nch && c < DRV_MAX_CH; c++) {
    topo_host_event e;
    void *ch = NULL;
    memset(&e, 0, sizeof e);
    e.type = ncclProfileKernelCh;
    e.parent = pending->handle;
    e.channel = c;
    e.ptimer = p->lib.version >= 4 ? op->gpu_start[c] : 0;
    topo_host_profiler_start(p, &ch, &e);
    for (int ph = 0; pending->phases && ph < 3; ph++) { /* also under a NULL KernelCh */
      topo_host_event k;
      void *phase = NULL;
      uint64_t start, stop;
      drv_phase_times(op, c, ph, &start, &stop);
      memset(&k, 0, sizeof k);
      k.type = ncclProfileKernelPhase;
      k.parent = ch;
      k.channel = c;
      k.phase = ph;
      k.ptimer = start;
      topo_host_profiler_start(p, &phase, &k);
      topo_host_profiler_state(p, phase, ncclProfilerKernelPhaseStop, 0, stop);
      topo_host_profiler_stop(p, phase);
    }
    topo_host_profiler_state(p, ch, ncclProfilerKernelChStop, 0, op->gpu_stop[c]);
    topo_host_profiler_stop(p, ch);
  }
}

void drv_run(topo_host_profiler *p, const drv_op *op) {
  drv_pending pending;
  drv_issue(p, op, &pending);
  drv_complete(p, &pending);
}
