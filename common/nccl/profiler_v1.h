/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiler ABI v1 (NCCL 2.23): enum-valued func/datatype/algo/proto, commHash in each descriptor,
 * no kernel-channel events. init(void** ctx, int* eActivationMask).
 */
#ifndef TOPO_NCCL_PROFILER_V1_H
#define TOPO_NCCL_PROFILER_V1_H
#include "profiler_common.h"

typedef struct {
  const char *name;
  uint64_t commHash;
  uint64_t seqNumber;
  uint8_t func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  uint8_t datatype;
  uint32_t op;
  size_t trafficBytes;
  uint8_t nMaxChannels;
  uint8_t nWarps;
  uint8_t algo;
  uint8_t proto;
  int isCollnet;
  int isNvls;
} ncclProfilerCollDescr_v1_t;

typedef struct {
  const char *name;
  uint64_t commHash;
  uint8_t func;
  void *buff;
  uint8_t datatype;
  size_t count;
  int peer;
} ncclProfilerP2pDescr_v1_t;

typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    ncclProfilerCollDescr_v1_t coll;
    ncclProfilerP2pDescr_v1_t p2p;
    ncclProfilerProxyOpDescr_t proxyOp;
    ncclProfilerProxyStepDescr_t proxyStep;
  };
} ncclProfilerEventDescr_v1_t;

typedef union {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
} ncclProfilerEventStateArgs_v1_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, int *eActivationMask);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v1_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v1_t eState,
                                   ncclProfilerEventStateArgs_v1_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v1_t;

_Static_assert(offsetof(ncclProfilerCollDescr_v1_t, func) == 24, "v1 coll func");
_Static_assert(offsetof(ncclProfilerCollDescr_v1_t, count) == 48, "v1 coll count");
_Static_assert(offsetof(ncclProfilerCollDescr_v1_t, datatype) == 60, "v1 coll datatype");
_Static_assert(offsetof(ncclProfilerCollDescr_v1_t, trafficBytes) == 72, "v1 coll trafficBytes");
_Static_assert(offsetof(ncclProfilerCollDescr_v1_t, nMaxChannels) == 80, "v1 coll nMaxChannels");
_Static_assert(offsetof(ncclProfilerCollDescr_v1_t, proto) == 83, "v1 coll proto");
_Static_assert(sizeof(ncclProfilerCollDescr_v1_t) == 96, "v1 coll size");
_Static_assert(offsetof(ncclProfilerP2pDescr_v1_t, count) == 40, "v1 p2p count");
_Static_assert(offsetof(ncclProfilerP2pDescr_v1_t, peer) == 48, "v1 p2p peer");
_Static_assert(sizeof(ncclProfilerEventStateArgs_v1_t) == 16, "v1 state args");
TOPO_PROFILER_DESCR_ASSERTS(ncclProfilerEventDescr_v1_t);
TOPO_PROFILER_STRUCT_ASSERTS(ncclProfiler_v1_t);
#endif
