/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Drives a profiler plugin as NCCL does, whatever ABI version it was loaded at: init with the
 * arguments that version takes, events built as that version's descriptor (enums for v1,
 * strings after; commHash in the descriptor before v4; Coll/P2p parent = the legacy Group
 * before v5, the CollApi/P2pApi handle from v5; v7 adds user tags, the symmetric-kernel fields and
 * KernelPhase events), and NCCL's shims: events and states a version does not know are not
 * delivered (answered with a NULL handle), GroupApi states carry NULL arguments. The activation
 * mask is one process-wide int, as in NCCL.
 */
#ifndef TOPO_HOST_PROFILER_H
#define TOPO_HOST_PROFILER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nccl/profiler.h"
#include "plugin_host.h"

extern int topo_host_profiler_mask; /* NCCL's ncclProfilerEventMask */

typedef struct topo_host_profiler {
  topo_host_lib lib;
  int nccl_version;
  uint64_t comm_hash; /* given at init; v1-v3 put it into each descriptor */
  void *ctx;
} topo_host_profiler;

/* Version-free description of one event; the host turns it into the loaded version's
 * descriptor. Unused members are ignored. */
typedef struct topo_host_event {
  uint64_t type;      /* ncclProfileColl, ... */
  void *parent;       /* parentObj from v5 (CollApi/P2pApi handle for Coll/P2p) */
  void *parent_group; /* the legacy Group handle: parent of Coll/P2p before v5 */
  int rank;
  /* Coll / P2p / CollApi / P2pApi */
  uint64_t seq;
  const char *func, *datatype, *algo, *proto;
  size_t count;
  int root, peer, nchannels, nwarps;
  /* ProxyOp / ProxyStep / KernelCh */
  pid_t pid;
  int channel, nsteps, chunk_size, is_send, step;
  uint64_t ptimer;
  /* API events */
  void *stream;
  int graph_captured, group_depth;
  /* v7: user tag (CollApi, P2pApi, Coll, P2p, CeColl); Coll of a symmetric kernel and its
   * variant; KernelPhase (its KernelCh is `parent`, channel and ptimer above) */
  uint64_t user_tag;
  int sym;
  const char *variant;
  int phase;
} topo_host_event;

topo_status topo_host_profiler_load(topo_host_profiler *p, const char *path, int nccl_version);
void topo_host_profiler_unload(topo_host_profiler *p);

ncclResult_t topo_host_profiler_init(topo_host_profiler *p, uint64_t comm_hash,
                                     const char *comm_name, int nnodes, int nranks, int rank,
                                     ncclDebugLogger_t logger);
ncclResult_t topo_host_profiler_finalize(topo_host_profiler *p);

/* *handle is NULL when the version does not know the event (NCCL's shim answers for it). */
ncclResult_t topo_host_profiler_start(topo_host_profiler *p, void **handle,
                                      const topo_host_event *e);
ncclResult_t topo_host_profiler_stop(topo_host_profiler *p, void *handle);
/* State update with the arguments NCCL attaches to `state`: transSize for proxy states,
 * pTimer for KernelChStop and KernelPhaseStop (v7; dropped before), NULL for the GroupApi
 * states. */
ncclResult_t topo_host_profiler_state(topo_host_profiler *p, void *handle, int state,
                                      size_t trans_size, uint64_t ptimer);

#endif
