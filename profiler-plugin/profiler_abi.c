// SPDX-License-Identifier: Apache-2.0
// The exported ncclProfiler_v7 .. ncclProfiler_v1 structs: thin adapters that turn each
// version's descriptor and state arguments into the core's version-free form (core.h), NCCL's
// name strings through names.h. NCCL takes the highest version it knows (2.23: v1 ... 2.29-2.30:
// v6, 2.31.2+: v7). Every entry answers ncclSuccess; an event type or state a version does not
// define is passed on as unknown.
#include <string.h>

#include "core.h"
#include "export.h"
#include "names.h"
#include "nccl/profiler.h"
#include "topo_version.h"
#include "trace_format.h"

#define PLUGIN_NAME "topo " TOPO_VERSION /* NCCL logs it when it loads the plugin */

static int kind_of(uint64_t type) {
  switch (type) {
  case ncclProfileGroup: return TOPO_EV_GROUP;
  case ncclProfileColl: return TOPO_EV_COLL;
  case ncclProfileP2p: return TOPO_EV_P2P;
  case ncclProfileProxyOp: return TOPO_EV_PROXYOP;
  case ncclProfileProxyStep: return TOPO_EV_PROXYSTEP;
  case ncclProfileProxyCtrl: return TOPO_EV_PROXYCTRL;
  case ncclProfileKernelCh: return TOPO_EV_KERNELCH;
  case ncclProfileNetPlugin: return TOPO_EV_NETPLUGIN;
  case ncclProfileGroupApi: return TOPO_EV_GROUPAPI;
  case ncclProfileCollApi: return TOPO_EV_COLLAPI;
  case ncclProfileP2pApi: return TOPO_EV_P2PAPI;
  case ncclProfileKernelLaunch: return TOPO_EV_KERNELLAUNCH;
  case ncclProfileCeColl:
  case ncclProfileCeSync:
  case ncclProfileCeBatch: return TOPO_EV_CE;
  case ncclProfileKernelPhase: return TOPO_EV_KERNELPHASE;
  default: return TOPO_EV_OTHER;
  }
}

static void head(topo_prof_descr *d, uint64_t type, void *parent, int rank) {
  memset(d, 0, sizeof *d);
  d->kind = kind_of(type);
  d->parent = parent;
  d->rank = rank;
  d->peer = -1;
  d->func = d->datatype = d->algo = d->proto = TOPO_UNKNOWN_U8;
  d->nchannels = TOPO_PROF_UNKNOWN_CHANNELS;
}

static void proxy_op(topo_prof_descr *d, const ncclProfilerProxyOpDescr_t *p) {
  d->pid = p->pid;
  d->channel = p->channelId;
  d->peer = p->peer;
  d->nsteps = p->nSteps;
  d->chunk_size = p->chunkSize;
  d->is_send = p->isSend;
}

static uint64_t bytes_of(size_t count, int datatype) {
  return (uint64_t)count * (uint64_t)topo_names_datatype_size(datatype);
}

/* Rooted collectives report their root; the others carry -1. */
static int root_or_none(int func, int root) {
  return func == ncclFuncBroadcast || func == ncclFuncReduce ? root : -1;
}

/* String-era Coll fields (v2..v6 share names and meaning). */
#define FILL_COLL_STRINGS(d, c)                           \
  do {                                                    \
    (d)->seq = (c).seqNumber;                             \
    (d)->func = topo_names_func_id((c).func);             \
    (d)->datatype = topo_names_datatype_id((c).datatype); \
    (d)->bytes = bytes_of((c).count, (d)->datatype);      \
    (d)->peer = root_or_none((d)->func, (c).root);        \
    (d)->algo = topo_names_algo_id((c).algo);             \
    (d)->proto = topo_names_proto_id((c).proto);          \
    (d)->nwarps = (c).nWarps;                             \
  } while (0)

#define FILL_P2P_STRINGS(d, p)                            \
  do {                                                    \
    (d)->func = topo_names_func_id((p).func);             \
    (d)->datatype = topo_names_datatype_id((p).datatype); \
    (d)->bytes = bytes_of((p).count, (d)->datatype);      \
    (d)->peer = (p).peer;                                 \
  } while (0)

/* ---- v5 / v6 / v7 (v6 adds CE events, v7 members after v5's: the v5 prefix holds) ---- */
static void fill_v5_members(topo_prof_descr *d, const ncclProfilerEventDescr_v5_t *e) {
  head(d, e->type, e->parentObj, e->rank);
  switch (d->kind) {
  case TOPO_EV_COLL:
    FILL_COLL_STRINGS(d, e->coll);
    d->nchannels = e->coll.nChannels;
    break;
  case TOPO_EV_P2P:
    FILL_P2P_STRINGS(d, e->p2p);
    d->nchannels = e->p2p.nChannels;
    break;
  case TOPO_EV_PROXYOP: proxy_op(d, &e->proxyOp); break;
  case TOPO_EV_KERNELCH:
    d->channel = e->kernelCh.channelId;
    d->ptimer = e->kernelCh.pTimer;
    break;
  case TOPO_EV_GROUPAPI: d->graph_captured = e->groupApi.graphCaptured; break;
  case TOPO_EV_COLLAPI: /* the user's count and datatype: count x size = the Coll's bytes */
    d->func = topo_names_func_id(e->collApi.func);
    d->datatype = topo_names_datatype_id(e->collApi.datatype);
    d->bytes = bytes_of(e->collApi.count, d->datatype);
    d->stream = e->collApi.stream;
    d->graph_captured = e->collApi.graphCaptured;
    break;
  case TOPO_EV_P2PAPI:
    d->func = topo_names_func_id(e->p2pApi.func);
    d->datatype = topo_names_datatype_id(e->p2pApi.datatype);
    d->bytes = bytes_of(e->p2pApi.count, d->datatype);
    d->stream = e->p2pApi.stream;
    d->graph_captured = e->p2pApi.graphCaptured;
    break;
  case TOPO_EV_KERNELLAUNCH: d->stream = e->kernelLaunch.stream; break;
  }
}

/* v5 and v6 define no KernelPhase: such a type is unknown to them. */
static void fill_v5(topo_prof_descr *d, const ncclProfilerEventDescr_v5_t *e) {
  fill_v5_members(d, e);
  if (d->kind == TOPO_EV_KERNELPHASE) d->kind = TOPO_EV_OTHER;
}

/* v7: the user tag of a Coll/P2p, a symmetric collective's variant (NCCL's algo / proto strings
 * for it name no algorithm or protocol: unknown, never read from the variant), KernelPhase. */
static void fill_v7(topo_prof_descr *d, const ncclProfilerEventDescr_v7_t *e) {
  fill_v5_members(d, (const ncclProfilerEventDescr_v5_t *)e);
  switch (d->kind) {
  case TOPO_EV_COLL:
    d->user_tag = e->coll.userTag;
    d->variant = e->coll.kernelVariant;
    if (e->coll.isSymColl) {
      d->sym = 1;
      d->algo = d->proto = TOPO_UNKNOWN_U8;
    }
    break;
  case TOPO_EV_P2P: d->user_tag = e->p2p.userTag; break;
  case TOPO_EV_KERNELPHASE:
    d->channel = e->kernelPhase.channelId;
    d->phase = e->kernelPhase.phaseId;
    d->ptimer = e->kernelPhase.pTimer;
    break;
  }
}

static void state_v4(void *h, ncclProfilerEventState_t s,
                     const ncclProfilerEventStateArgs_v4_t *a) {
  if (!a) return; /* GroupApi states come with NULL arguments */
  if (s == ncclProfilerKernelChStop) topo_prof_state(h, TOPO_ST_KERNELCH_STOP, a->kernelCh.pTimer);
  else if (s == ncclProfilerProxyStepSendWait || s == ncclProfilerProxyStepRecvGPUWait)
    topo_prof_state(h, TOPO_ST_PROXY_BYTES, a->proxyStep.transSize);
}

static ncclResult_t init_v7(void **ctx, uint64_t comm_id, int *mask, const char *name, int nnodes,
                            int nranks, int rank, ncclDebugLogger_t logfn) {
  return topo_prof_init(ctx, mask, 7, comm_id, name, nnodes, nranks, rank, logfn);
}
static ncclResult_t start_v7(void *ctx, void **h, ncclProfilerEventDescr_v7_t *e) {
  if (!e) return topo_prof_start(ctx, h, NULL);
  topo_prof_descr d;
  fill_v7(&d, e);
  return topo_prof_start(ctx, h, &d);
}
static ncclResult_t state_v7(void *h, ncclProfilerEventState_v7_t s,
                             ncclProfilerEventStateArgs_v7_t *a) {
  if (s == ncclProfilerKernelPhaseStop) {
    if (a) topo_prof_state(h, TOPO_ST_PHASE_STOP, a->kernelCh.pTimer);
    return ncclSuccess;
  }
  state_v4(h, s, (const ncclProfilerEventStateArgs_v4_t *)a);
  return ncclSuccess;
}

static ncclResult_t init_v6(void **ctx, uint64_t comm_id, int *mask, const char *name, int nnodes,
                            int nranks, int rank, ncclDebugLogger_t logfn) {
  return topo_prof_init(ctx, mask, 6, comm_id, name, nnodes, nranks, rank, logfn);
}
static ncclResult_t init_v5(void **ctx, uint64_t comm_id, int *mask, const char *name, int nnodes,
                            int nranks, int rank, ncclDebugLogger_t logfn) {
  return topo_prof_init(ctx, mask, 5, comm_id, name, nnodes, nranks, rank, logfn);
}
static ncclResult_t start_v6(void *ctx, void **h, ncclProfilerEventDescr_v6_t *e) {
  if (!e) return topo_prof_start(ctx, h, NULL);
  topo_prof_descr d;
  fill_v5(&d, (const ncclProfilerEventDescr_v5_t *)e); /* identical prefix and members */
  return topo_prof_start(ctx, h, &d);
}
static ncclResult_t start_v5(void *ctx, void **h, ncclProfilerEventDescr_v5_t *e) {
  if (!e) return topo_prof_start(ctx, h, NULL);
  topo_prof_descr d;
  fill_v5(&d, e);
  return topo_prof_start(ctx, h, &d);
}
static ncclResult_t state_v5(void *h, ncclProfilerEventState_v5_t s,
                             ncclProfilerEventStateArgs_v5_t *a) {
  state_v4(h, s, (const ncclProfilerEventStateArgs_v4_t *)a);
  return ncclSuccess;
}

/* ---- v4 ---- */
static ncclResult_t init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
                            int nranks, int rank, ncclDebugLogger_t logfn) {
  return topo_prof_init(ctx, mask, 4, hash, name, nnodes, nranks, rank, logfn);
}
static ncclResult_t start_v4(void *ctx, void **h, ncclProfilerEventDescr_v4_t *e) {
  if (!e) return topo_prof_start(ctx, h, NULL);
  topo_prof_descr d;
  head(&d, e->type, e->parentObj, e->rank);
  switch (d.kind) {
  case TOPO_EV_COLL:
    FILL_COLL_STRINGS(&d, e->coll);
    d.nchannels = e->coll.nChannels;
    break;
  case TOPO_EV_P2P:
    FILL_P2P_STRINGS(&d, e->p2p); /* nChannels: undefined through NCCL 2.28+'s v4 shim */
    break;
  case TOPO_EV_PROXYOP: proxy_op(&d, &e->proxyOp); break;
  case TOPO_EV_KERNELCH:
    d.channel = e->kernelCh.channelId;
    d.ptimer = e->kernelCh.pTimer;
    break;
  }
  return topo_prof_start(ctx, h, &d);
}
static ncclResult_t state_v4_entry(void *h, ncclProfilerEventState_v4_t s,
                                   ncclProfilerEventStateArgs_v4_t *a) {
  state_v4(h, s, a);
  return ncclSuccess;
}

/* ---- v1..v3 (commHash in the descriptor; proxy sizes on ProxyOp states) ---- */
static ncclResult_t init_v3(void **ctx, int *mask) {
  return topo_prof_init(ctx, mask, 3, 0, NULL, 0, 0, -1, NULL);
}
static ncclResult_t init_v2(void **ctx, int *mask) {
  return topo_prof_init(ctx, mask, 2, 0, NULL, 0, 0, -1, NULL);
}
static ncclResult_t init_v1(void **ctx, int *mask) {
  return topo_prof_init(ctx, mask, 1, 0, NULL, 0, 0, -1, NULL);
}

static ncclResult_t state_v1(void *h, ncclProfilerEventState_v1_t s,
                             ncclProfilerEventStateArgs_v1_t *a) {
  if (a && (s == ncclProfilerProxyOpSendDone || s == ncclProfilerProxyOpRecvDone))
    topo_prof_state(h, TOPO_ST_PROXY_BYTES, a->proxyOp.transSize);
  return ncclSuccess;
}

static ncclResult_t start_v3(void *ctx, void **h, ncclProfilerEventDescr_v3_t *e) {
  if (!e) return topo_prof_start(ctx, h, NULL);
  topo_prof_descr d;
  head(&d, e->type, e->parentObj, e->rank);
  switch (d.kind) {
  case TOPO_EV_COLL:
    FILL_COLL_STRINGS(&d, e->coll);
    d.nchannels = e->coll.nMaxChannels;
    d.comm_hash = e->coll.commHash;
    break;
  case TOPO_EV_P2P:
    FILL_P2P_STRINGS(&d, e->p2p);
    d.comm_hash = e->p2p.commHash;
    break;
  case TOPO_EV_PROXYOP: proxy_op(&d, &e->proxyOp); break;
  case TOPO_EV_KERNELCH: d.channel = e->kernelCh.channelId; break;
  }
  return topo_prof_start(ctx, h, &d);
}

static ncclResult_t start_v2(void *ctx, void **h, ncclProfilerEventDescr_v2_t *e) {
  if (!e) return topo_prof_start(ctx, h, NULL);
  topo_prof_descr d;
  head(&d, e->type, e->parentObj, e->rank);
  switch (d.kind) {
  case TOPO_EV_COLL:
    FILL_COLL_STRINGS(&d, e->coll);
    d.nchannels = e->coll.nMaxChannels;
    d.comm_hash = e->coll.commHash;
    break;
  case TOPO_EV_P2P:
    FILL_P2P_STRINGS(&d, e->p2p);
    d.comm_hash = e->p2p.commHash;
    break;
  case TOPO_EV_PROXYOP: proxy_op(&d, &e->proxyOp); break;
  }
  return topo_prof_start(ctx, h, &d);
}

static ncclResult_t start_v1(void *ctx, void **h, ncclProfilerEventDescr_v1_t *e) {
  if (!e) return topo_prof_start(ctx, h, NULL);
  topo_prof_descr d;
  head(&d, e->type, e->parentObj, e->rank);
  switch (d.kind) {
  case TOPO_EV_COLL:
    d.seq = e->coll.seqNumber;
    d.func = e->coll.func;
    d.datatype = e->coll.datatype;
    d.bytes = bytes_of(e->coll.count, d.datatype);
    d.peer = root_or_none(d.func, e->coll.root);
    d.algo = e->coll.algo;
    d.proto = e->coll.proto;
    d.nwarps = e->coll.nWarps;
    d.nchannels = e->coll.nMaxChannels;
    d.comm_hash = e->coll.commHash;
    break;
  case TOPO_EV_P2P:
    d.comm_hash = e->p2p.commHash;
    d.func = e->p2p.func;
    d.datatype = e->p2p.datatype;
    d.bytes = bytes_of(e->p2p.count, d.datatype);
    d.peer = e->p2p.peer;
    break;
  case TOPO_EV_PROXYOP: proxy_op(&d, &e->proxyOp); break;
  }
  return topo_prof_start(ctx, h, &d);
}

TOPO_EXPORT const ncclProfiler_v7_t ncclProfiler_v7 = {
    PLUGIN_NAME, init_v7, start_v7, topo_prof_stop, state_v7, topo_prof_finalize};
TOPO_EXPORT const ncclProfiler_v6_t ncclProfiler_v6 = {
    PLUGIN_NAME, init_v6, start_v6, topo_prof_stop, state_v5, topo_prof_finalize};
TOPO_EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {
    PLUGIN_NAME, init_v5, start_v5, topo_prof_stop, state_v5, topo_prof_finalize};
TOPO_EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {
    PLUGIN_NAME, init_v4, start_v4, topo_prof_stop, state_v4_entry, topo_prof_finalize};
TOPO_EXPORT const ncclProfiler_v3_t ncclProfiler_v3 = {
    PLUGIN_NAME, init_v3, start_v3, topo_prof_stop, state_v1, topo_prof_finalize};
TOPO_EXPORT const ncclProfiler_v2_t ncclProfiler_v2 = {
    PLUGIN_NAME, init_v2, start_v2, topo_prof_stop, state_v1, topo_prof_finalize};
TOPO_EXPORT const ncclProfiler_v1_t ncclProfiler_v1 = {
    PLUGIN_NAME, init_v1, start_v1, topo_prof_stop, state_v1, topo_prof_finalize};
