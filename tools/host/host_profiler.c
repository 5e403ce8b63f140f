// SPDX-License-Identifier: Apache-2.0
// NCCL-shaped calls into a loaded profiler (see host_profiler.h).
#include "host_profiler.h"

#include <string.h>

#include "nccl_vocab.h"

int topo_host_profiler_mask;

/* ncclFunc_t / ncclDataType_t / algorithm / protocol values of NCCL's names for the v1
 * descriptors, which carry ids where later versions carry names; 0 for a name NCCL lacks. */
static int id_or_zero(int id) { return id < 0 ? 0 : id; }

topo_status topo_host_profiler_load(topo_host_profiler *p, const char *path, int nccl_version) {
  memset(p, 0, sizeof *p);
  p->nccl_version = nccl_version;
  return topo_host_open(&p->lib, path, "ncclProfiler_v",
                        topo_host_profiler_max_version(nccl_version), 1);
}

void topo_host_profiler_unload(topo_host_profiler *p) { topo_host_close(&p->lib); }

#define SYM(v) ((const ncclProfiler_v##v##_t *)p->lib.sym)

ncclResult_t topo_host_profiler_init(topo_host_profiler *p, uint64_t comm_hash,
                                     const char *comm_name, int nnodes, int nranks, int rank,
                                     ncclDebugLogger_t logger) {
  p->ctx = NULL;
  p->comm_hash = comm_hash;
  int *m = &topo_host_profiler_mask;
  switch (p->lib.version) {
  case 1: return SYM(1)->init(&p->ctx, m);
  case 2: return SYM(2)->init(&p->ctx, m);
  case 3: return SYM(3)->init(&p->ctx, m);
  case 4: return SYM(4)->init(&p->ctx, m, comm_name, comm_hash, nnodes, nranks, rank, logger);
  case 5: return SYM(5)->init(&p->ctx, comm_hash, m, comm_name, nnodes, nranks, rank, logger);
  case 6: return SYM(6)->init(&p->ctx, comm_hash, m, comm_name, nnodes, nranks, rank, logger);
  case 7: return SYM(7)->init(&p->ctx, comm_hash, m, comm_name, nnodes, nranks, rank, logger);
  }
  return ncclInternalError;
}

ncclResult_t topo_host_profiler_finalize(topo_host_profiler *p) {
  ncclResult_t r = ncclInternalError;
  switch (p->lib.version) {
  case 1: r = SYM(1)->finalize(p->ctx); break;
  case 2: r = SYM(2)->finalize(p->ctx); break;
  case 3: r = SYM(3)->finalize(p->ctx); break;
  case 4: r = SYM(4)->finalize(p->ctx); break;
  case 5: r = SYM(5)->finalize(p->ctx); break;
  case 6: r = SYM(6)->finalize(p->ctx); break;
  case 7: r = SYM(7)->finalize(p->ctx); break;
  }
  p->ctx = NULL;
  return r;
}

/* Which event types each version receives through NCCL's shims (4.10). */
static int delivered(int version, uint64_t type) {
  uint64_t known = 0x3f; /* Group..ProxyCtrl */
  if (version >= 3) known |= ncclProfileKernelCh | ncclProfileNetPlugin;
  if (version >= 5) known |= 0xf00;
  if (version >= 6) known |= 0x7000;
  if (version >= 7) known |= ncclProfileKernelPhase;
  return (type & known) != 0;
}

static void fill_proxy(ncclProfilerProxyOpDescr_t *d, const topo_host_event *e) {
  d->pid = e->pid;
  d->channelId = (uint8_t)e->channel;
  d->peer = e->peer;
  d->nSteps = e->nsteps;
  d->chunkSize = e->chunk_size;
  d->isSend = e->is_send;
}

ncclResult_t topo_host_profiler_start(topo_host_profiler *p, void **handle,
                                      const topo_host_event *e) {
  *handle = NULL;
  int v = p->lib.version;
  if (!delivered(v, e->type)) return ncclSuccess;
  void *parent =
      v >= 5 || !(e->type & (ncclProfileColl | ncclProfileP2p)) ? e->parent : e->parent_group;
  if (v >= 5) {
    /* v7's descriptor: v5's and v6's members at the same offsets, v7's after them (a v5/v6
     * plugin reads only its prefix, as from NCCL's shims) */
    ncclProfilerEventDescr_v7_t d;
    memset(&d, 0, sizeof d);
    d.type = e->type;
    d.parentObj = parent;
    d.rank = e->rank;
    switch (e->type) {
    case ncclProfileGroupApi:
      d.groupApi.graphCaptured = e->graph_captured;
      d.groupApi.groupDepth = e->group_depth;
      break;
    case ncclProfileCollApi:
      d.collApi.func = e->func;
      d.collApi.count = e->count;
      d.collApi.datatype = e->datatype;
      d.collApi.root = e->root;
      d.collApi.stream = e->stream;
      d.collApi.graphCaptured = e->graph_captured;
      if (v >= 7) d.collApi.userTag = e->user_tag;
      break;
    case ncclProfileP2pApi:
      d.p2pApi.func = e->func;
      d.p2pApi.count = e->count;
      d.p2pApi.datatype = e->datatype;
      d.p2pApi.stream = e->stream;
      d.p2pApi.graphCaptured = e->graph_captured;
      if (v >= 7) d.p2pApi.userTag = e->user_tag;
      break;
    case ncclProfileKernelLaunch: d.kernelLaunch.stream = e->stream; break;
    case ncclProfileColl:
      d.coll.seqNumber = e->seq;
      d.coll.func = e->func;
      d.coll.count = e->count;
      d.coll.root = e->root;
      d.coll.datatype = e->datatype;
      d.coll.nChannels = (uint8_t)e->nchannels;
      d.coll.nWarps = (uint8_t)e->nwarps;
      d.coll.algo = e->algo;
      d.coll.proto = e->proto;
      d.coll.parentGroup = e->parent_group;
      if (v >= 7) {
        d.coll.userTag = e->user_tag;
        d.coll.isSymColl = e->sym != 0;
        d.coll.kernelVariant = e->variant;
      }
      break;
    case ncclProfileP2p:
      d.p2p.func = e->func;
      d.p2p.count = e->count;
      d.p2p.datatype = e->datatype;
      d.p2p.peer = e->peer;
      d.p2p.nChannels = (uint8_t)e->nchannels;
      d.p2p.parentGroup = e->parent_group;
      if (v >= 7) d.p2p.userTag = e->user_tag;
      break;
    case ncclProfileProxyOp: fill_proxy(&d.proxyOp, e); break;
    case ncclProfileProxyStep: d.proxyStep.step = e->step; break;
    case ncclProfileKernelCh:
      d.kernelCh.channelId = (uint8_t)e->channel;
      d.kernelCh.pTimer = e->ptimer;
      break;
    case ncclProfileCeColl:
      d.ceColl.seqNumber = e->seq;
      d.ceColl.func = e->func;
      d.ceColl.count = e->count;
      d.ceColl.root = e->root;
      d.ceColl.datatype = e->datatype;
      d.ceColl.syncStrategy = "UC";
      d.ceColl.stream = e->stream;
      if (v >= 7) d.ceColl.userTag = e->user_tag;
      break;
    case ncclProfileKernelPhase:
      d.kernelPhase.channelId = (uint8_t)e->channel;
      d.kernelPhase.phaseId = (uint8_t)e->phase;
      d.kernelPhase.phaseName = e->phase == 0   ? "initial_sync"
                                : e->phase == 1 ? "compute"
                                                : "final_sync";
      d.kernelPhase.pTimer = e->ptimer;
      break;
    }
    if (v == 7) return SYM(7)->startEvent(p->ctx, handle, &d);
    if (v == 6) return SYM(6)->startEvent(p->ctx, handle, (ncclProfilerEventDescr_v6_t *)&d);
    return SYM(5)->startEvent(p->ctx, handle, (ncclProfilerEventDescr_v5_t *)&d);
  }
  if (v == 4) {
    ncclProfilerEventDescr_v4_t d;
    memset(&d, 0, sizeof d);
    d.type = (uint8_t)e->type;
    d.parentObj = parent;
    d.rank = e->rank;
    switch (e->type) {
    case ncclProfileColl:
      d.coll.seqNumber = e->seq;
      d.coll.func = e->func;
      d.coll.count = e->count;
      d.coll.root = e->root;
      d.coll.datatype = e->datatype;
      d.coll.nChannels = (uint8_t)e->nchannels;
      d.coll.nWarps = (uint8_t)e->nwarps;
      d.coll.algo = e->algo;
      d.coll.proto = e->proto;
      break;
    case ncclProfileP2p:
      d.p2p.func = e->func;
      d.p2p.count = e->count;
      d.p2p.datatype = e->datatype;
      d.p2p.peer = e->peer;
      d.p2p.nChannels = 0xa5; /* NCCL 2.28's v4 shim leaves it undefined */
      break;
    case ncclProfileProxyOp: fill_proxy(&d.proxyOp, e); break;
    case ncclProfileProxyStep: d.proxyStep.step = e->step; break;
    case ncclProfileKernelCh:
      d.kernelCh.channelId = (uint8_t)e->channel;
      d.kernelCh.pTimer = e->ptimer;
      break;
    }
    return SYM(4)->startEvent(p->ctx, handle, &d);
  }
  if (v == 3 || v == 2) {
    ncclProfilerEventDescr_v3_t d3;
    ncclProfilerEventDescr_v2_t d2;
    memset(&d3, 0, sizeof d3);
    memset(&d2, 0, sizeof d2);
    d3.type = d2.type = (uint8_t)e->type;
    d3.parentObj = d2.parentObj = parent;
    d3.rank = d2.rank = e->rank;
    switch (e->type) {
    case ncclProfileColl:
#define COLL23(d)                                \
  (d).coll.name = "topo-host";                   \
  (d).coll.commHash = p->comm_hash;              \
  (d).coll.seqNumber = e->seq;                   \
  (d).coll.func = e->func;                       \
  (d).coll.count = e->count;                     \
  (d).coll.root = e->root;                       \
  (d).coll.datatype = e->datatype;               \
  (d).coll.nMaxChannels = (uint8_t)e->nchannels; \
  (d).coll.nWarps = (uint8_t)e->nwarps;          \
  (d).coll.algo = e->algo;                       \
  (d).coll.proto = e->proto
      COLL23(d3);
      COLL23(d2);
      d2.coll.trafficBytes = e->count;
      break;
    case ncclProfileP2p:
#define P2P23(d)                   \
  (d).p2p.name = "topo-host";      \
  (d).p2p.commHash = p->comm_hash; \
  (d).p2p.func = e->func;          \
  (d).p2p.count = e->count;        \
  (d).p2p.datatype = e->datatype;  \
  (d).p2p.peer = e->peer
      P2P23(d3);
      P2P23(d2);
      break;
    case ncclProfileProxyOp:
      fill_proxy(&d3.proxyOp, e);
      fill_proxy(&d2.proxyOp, e);
      break;
    case ncclProfileProxyStep: d3.proxyStep.step = d2.proxyStep.step = e->step; break;
    case ncclProfileKernelCh: d3.kernelCh.channelId = (uint8_t)e->channel; break;
    }
    if (v == 3) return SYM(3)->startEvent(p->ctx, handle, &d3);
    return SYM(2)->startEvent(p->ctx, handle, &d2);
  }
  if (v == 1) {
    ncclProfilerEventDescr_v1_t d;
    memset(&d, 0, sizeof d);
    d.type = (uint8_t)e->type;
    d.parentObj = parent;
    d.rank = e->rank;
    switch (e->type) {
    case ncclProfileColl:
      d.coll.name = "topo-host";
      d.coll.commHash = p->comm_hash;
      d.coll.seqNumber = e->seq;
      d.coll.func = (uint8_t)id_or_zero(topo_nccl_func_from_name(e->func));
      d.coll.count = e->count;
      d.coll.root = e->root;
      d.coll.datatype = (uint8_t)id_or_zero(topo_nccl_datatype_from_name(e->datatype));
      d.coll.nMaxChannels = (uint8_t)e->nchannels;
      d.coll.nWarps = (uint8_t)e->nwarps;
      d.coll.algo = (uint8_t)id_or_zero(topo_nccl_algo_from_name(e->algo));
      d.coll.proto = (uint8_t)id_or_zero(topo_nccl_proto_from_name(e->proto));
      break;
    case ncclProfileP2p:
      d.p2p.name = "topo-host";
      d.p2p.commHash = p->comm_hash;
      d.p2p.func = (uint8_t)id_or_zero(topo_nccl_func_from_name(e->func));
      d.p2p.count = e->count;
      d.p2p.datatype = (uint8_t)id_or_zero(topo_nccl_datatype_from_name(e->datatype));
      d.p2p.peer = e->peer;
      break;
    case ncclProfileProxyOp: fill_proxy(&d.proxyOp, e); break;
    case ncclProfileProxyStep: d.proxyStep.step = e->step; break;
    }
    return SYM(1)->startEvent(p->ctx, handle, &d);
  }
  return ncclInternalError;
}

ncclResult_t topo_host_profiler_stop(topo_host_profiler *p, void *handle) {
  if (!handle) return ncclSuccess; /* NCCL never stops what it did not start */
  switch (p->lib.version) {
  case 1: return SYM(1)->stopEvent(handle);
  case 2: return SYM(2)->stopEvent(handle);
  case 3: return SYM(3)->stopEvent(handle);
  case 4: return SYM(4)->stopEvent(handle);
  case 5: return SYM(5)->stopEvent(handle);
  case 6: return SYM(6)->stopEvent(handle);
  case 7: return SYM(7)->stopEvent(handle);
  }
  return ncclInternalError;
}

ncclResult_t topo_host_profiler_state(topo_host_profiler *p, void *handle, int state,
                                      size_t trans_size, uint64_t ptimer) {
  int v = p->lib.version;
  if (!handle) return ncclSuccess;
  if (v >= 4) {
    if (v == 4 && state > ncclProfilerKernelChStop) return ncclSuccess; /* shim drops it */
    ncclProfilerEventStateArgs_v5_t a;
    memset(&a, 0, sizeof a);
    ncclProfilerEventStateArgs_v5_t *args = &a;
    if (state == ncclProfilerKernelPhaseStop && v < 7) return ncclSuccess; /* shim drops it */
    if (state == ncclProfilerKernelChStop || state == ncclProfilerKernelPhaseStop)
      a.kernelCh.pTimer = ptimer;
    else if (state == ncclProfilerGroupStartApiStop || state == ncclProfilerGroupEndApiStart)
      args = NULL;
    else a.proxyStep.transSize = trans_size;
    if (v == 4)
      return SYM(4)->recordEventState(handle, (ncclProfilerEventState_t)state,
                                      (ncclProfilerEventStateArgs_v4_t *)args);
    if (v == 5) return SYM(5)->recordEventState(handle, (ncclProfilerEventState_t)state, args);
    if (v == 6) return SYM(6)->recordEventState(handle, (ncclProfilerEventState_t)state, args);
    return SYM(7)->recordEventState(handle, (ncclProfilerEventState_t)state, args);
  }
  if (state > ncclProfilerProxyCtrlAppendEnd) return ncclSuccess; /* v1-v3 shims drop 19+ */
  ncclProfilerEventStateArgs_v1_t a;
  memset(&a, 0, sizeof a);
  a.proxyOp.transSize = trans_size;
  switch (v) {
  case 1: return SYM(1)->recordEventState(handle, (ncclProfilerEventState_t)state, &a);
  case 2: return SYM(2)->recordEventState(handle, (ncclProfilerEventState_t)state, &a);
  case 3: return SYM(3)->recordEventState(handle, (ncclProfilerEventState_t)state, &a);
  }
  return ncclInternalError;
}
