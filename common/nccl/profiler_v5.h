/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiler ABI v5 (NCCL 2.28): 64-bit type field; API-level events (GroupApi, CollApi, P2pApi,
 * KernelLaunch); Coll/P2p gain parentGroup (parentObj is now the CollApi/P2pApi handle);
 * init(void** ctx, uint64_t commId, int* mask, commName, nNodes, nranks, rank, logfn).
 */
#ifndef TOPO_NCCL_PROFILER_V5_H
#define TOPO_NCCL_PROFILER_V5_H
#include "profiler_common.h"

typedef struct {
  bool graphCaptured;
  int groupDepth; /* 1 = NCCL's implicit group, > 1 inside the user's ncclGroupStart */
} ncclProfilerGroupApiDescr_v5_t;

typedef struct {
  const char *func;
  size_t count; /* the user's count and datatype */
  const char *datatype;
  int root;
  void *stream;
  bool graphCaptured;
} ncclProfilerCollApiDescr_v5_t;

typedef struct {
  const char *func;
  size_t count;
  const char *datatype;
  void *stream;
  bool graphCaptured;
} ncclProfilerP2pApiDescr_v5_t;

typedef struct {
  void *stream;
} ncclProfilerKernelLaunchDescr_v5_t;

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
  void *parentGroup; /* the legacy Group handle */
} ncclProfilerCollDescr_v5_t;

typedef struct {
  const char *func;
  void *buff;
  const char *datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void *parentGroup;
} ncclProfilerP2pDescr_v5_t;

typedef struct {
  uint8_t channelId;
  uint64_t pTimer; /* GPU globaltimer ns at the channel's start */
} ncclProfilerKernelChDescr_v5_t;

typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    ncclProfilerGroupApiDescr_v5_t groupApi;
    ncclProfilerCollApiDescr_v5_t collApi;
    ncclProfilerP2pApiDescr_v5_t p2pApi;
    ncclProfilerKernelLaunchDescr_v5_t kernelLaunch;
    ncclProfilerCollDescr_v5_t coll;
    ncclProfilerP2pDescr_v5_t p2p;
    ncclProfilerProxyOpDescr_t proxyOp;
    ncclProfilerProxyStepDescr_t proxyStep;
    ncclProfilerKernelChDescr_v5_t kernelCh;
    ncclProfilerNetPluginDescr_t netPlugin;
  };
} ncclProfilerEventDescr_v5_t;

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
} ncclProfilerEventStateArgs_v5_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v5_t eState,
                                   ncclProfilerEventStateArgs_v5_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v5_t;

_Static_assert(offsetof(ncclProfilerCollApiDescr_v5_t, stream) == 32, "v5 collApi stream");
_Static_assert(offsetof(ncclProfilerCollApiDescr_v5_t, graphCaptured) == 40, "v5 collApi graph");
_Static_assert(offsetof(ncclProfilerP2pApiDescr_v5_t, graphCaptured) == 32, "v5 p2pApi graph");
_Static_assert(offsetof(ncclProfilerCollDescr_v5_t, nChannels) == 56, "v5 coll nChannels");
_Static_assert(offsetof(ncclProfilerCollDescr_v5_t, parentGroup) == 80, "v5 coll parentGroup");
_Static_assert(sizeof(ncclProfilerCollDescr_v5_t) == 88, "v5 coll size");
_Static_assert(offsetof(ncclProfilerP2pDescr_v5_t, parentGroup) == 40, "v5 p2p parentGroup");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, groupApi) == 24, "v5 union at 24");
_Static_assert(sizeof(ncclProfilerEventDescr_v5_t) == 24 + 88, "v5 descr size");
_Static_assert(sizeof(ncclProfilerEventStateArgs_v5_t) == 8, "v5 state args");
TOPO_PROFILER_DESCR_ASSERTS(ncclProfilerEventDescr_v5_t);
TOPO_PROFILER_STRUCT_ASSERTS(ncclProfiler_v5_t);
#endif
