/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiler ABI v4 (NCCL 2.27): commHash/commName move to init; nMaxChannels becomes nChannels;
 * kernel-channel events carry the GPU %globaltimer (pTimer) at start and at KernelChStop; new
 * state-args union (per-step transSize, netPlugin data, kernelCh pTimer).
 */
#ifndef TOPO_NCCL_PROFILER_V4_H
#define TOPO_NCCL_PROFILER_V4_H
#include "profiler_common.h"

typedef struct {
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char *algo;
  const char *proto;
} ncclProfilerCollDescr_v4_t;

typedef struct {
  const char *func;
  void *buff;
  const char *datatype;
  size_t count;
  int peer;
  uint8_t nChannels; /* undefined when NCCL 2.28+ drives a v4 plugin through its shim */
} ncclProfilerP2pDescr_v4_t;

typedef struct {
  uint8_t channelId;
  uint64_t pTimer; /* GPU globaltimer ns at the channel's start */
} ncclProfilerKernelChDescr_v4_t;

typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    ncclProfilerCollDescr_v4_t coll;
    ncclProfilerP2pDescr_v4_t p2p;
    ncclProfilerProxyOpDescr_t proxyOp;
    ncclProfilerProxyStepDescr_t proxyStep;
    ncclProfilerKernelChDescr_v4_t kernelCh;
    ncclProfilerNetPluginDescr_t netPlugin;
  };
} ncclProfilerEventDescr_v4_t;

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void *data;
  } netPlugin;
  struct {
    uint64_t pTimer; /* GPU globaltimer ns at the channel's stop (state KernelChStop) */
  } kernelCh;
} ncclProfilerEventStateArgs_v4_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, int *eActivationMask, const char *commName,
                       uint64_t commHash, int nNodes, int nranks, int rank,
                       ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v4_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v4_t eState,
                                   ncclProfilerEventStateArgs_v4_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v4_t;

_Static_assert(offsetof(ncclProfilerCollDescr_v4_t, count) == 32, "v4 coll count");
_Static_assert(offsetof(ncclProfilerCollDescr_v4_t, datatype) == 48, "v4 coll datatype");
_Static_assert(offsetof(ncclProfilerCollDescr_v4_t, nChannels) == 56, "v4 coll nChannels");
_Static_assert(offsetof(ncclProfilerCollDescr_v4_t, algo) == 64, "v4 coll algo");
_Static_assert(sizeof(ncclProfilerCollDescr_v4_t) == 80, "v4 coll size");
_Static_assert(offsetof(ncclProfilerP2pDescr_v4_t, peer) == 32, "v4 p2p peer");
_Static_assert(offsetof(ncclProfilerP2pDescr_v4_t, nChannels) == 36, "v4 p2p nChannels");
_Static_assert(offsetof(ncclProfilerKernelChDescr_v4_t, pTimer) == 8, "v4 kernelCh pTimer");
_Static_assert(sizeof(ncclProfilerEventStateArgs_v4_t) == 8, "v4 state args");
TOPO_PROFILER_DESCR_ASSERTS(ncclProfilerEventDescr_v4_t);
TOPO_PROFILER_STRUCT_ASSERTS(ncclProfiler_v4_t);
#endif
