/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiler ABI v3 (NCCL 2.26): v2 without trafficBytes; kernel-channel events (no GPU timer
 * yet) and net-plugin events.
 */
#ifndef TOPO_NCCL_PROFILER_V3_H
#define TOPO_NCCL_PROFILER_V3_H
#include "profiler_common.h"

typedef struct {
  const char *name;
  uint64_t commHash;
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  uint8_t nMaxChannels;
  uint8_t nWarps;
  const char *algo;
  const char *proto;
} ncclProfilerCollDescr_v3_t;

typedef struct {
  const char *name;
  uint64_t commHash;
  const char *func;
  void *buff;
  const char *datatype;
  size_t count;
  int peer;
} ncclProfilerP2pDescr_v3_t;

typedef struct {
  uint8_t channelId;
} ncclProfilerKernelChDescr_v3_t;

typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    ncclProfilerCollDescr_v3_t coll;
    ncclProfilerP2pDescr_v3_t p2p;
    ncclProfilerProxyOpDescr_t proxyOp;
    ncclProfilerProxyStepDescr_t proxyStep;
    ncclProfilerKernelChDescr_v3_t kernelCh;
    ncclProfilerNetPluginDescr_t netPlugin;
  };
} ncclProfilerEventDescr_v3_t;

typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v3_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, int *eActivationMask);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v3_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v3_t eState,
                                   ncclProfilerEventStateArgs_v3_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v3_t;

_Static_assert(offsetof(ncclProfilerCollDescr_v3_t, datatype) == 64, "v3 coll datatype");
_Static_assert(offsetof(ncclProfilerCollDescr_v3_t, nMaxChannels) == 72, "v3 coll nMaxChannels");
_Static_assert(offsetof(ncclProfilerCollDescr_v3_t, algo) == 80, "v3 coll algo");
_Static_assert(sizeof(ncclProfilerCollDescr_v3_t) == 96, "v3 coll size");
_Static_assert(sizeof(ncclProfilerP2pDescr_v3_t) == 56, "v3 p2p size");
TOPO_PROFILER_DESCR_ASSERTS(ncclProfilerEventDescr_v3_t);
TOPO_PROFILER_STRUCT_ASSERTS(ncclProfiler_v3_t);
#endif
