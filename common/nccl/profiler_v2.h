/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiler ABI v2 (NCCL 2.24-2.25): func, datatype, algo and proto become NCCL's names
 * ("AllReduce", "ncclFloat32", "RING", "SIMPLE"); op, isCollnet and isNvls are gone.
 */
#ifndef TOPO_NCCL_PROFILER_V2_H
#define TOPO_NCCL_PROFILER_V2_H
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
  size_t trafficBytes;
  uint8_t nMaxChannels;
  uint8_t nWarps;
  const char *algo;
  const char *proto;
} ncclProfilerCollDescr_v2_t;

typedef struct {
  const char *name;
  uint64_t commHash;
  const char *func;
  void *buff;
  const char *datatype;
  size_t count;
  int peer;
} ncclProfilerP2pDescr_v2_t;

typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    ncclProfilerCollDescr_v2_t coll;
    ncclProfilerP2pDescr_v2_t p2p;
    ncclProfilerProxyOpDescr_t proxyOp;
    ncclProfilerProxyStepDescr_t proxyStep;
  };
} ncclProfilerEventDescr_v2_t;

typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v2_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, int *eActivationMask);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v2_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v2_t eState,
                                   ncclProfilerEventStateArgs_v2_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v2_t;

_Static_assert(offsetof(ncclProfilerCollDescr_v2_t, func) == 24, "v2 coll func");
_Static_assert(offsetof(ncclProfilerCollDescr_v2_t, datatype) == 64, "v2 coll datatype");
_Static_assert(offsetof(ncclProfilerCollDescr_v2_t, trafficBytes) == 72, "v2 coll trafficBytes");
_Static_assert(offsetof(ncclProfilerCollDescr_v2_t, nMaxChannels) == 80, "v2 coll nMaxChannels");
_Static_assert(offsetof(ncclProfilerCollDescr_v2_t, algo) == 88, "v2 coll algo");
_Static_assert(sizeof(ncclProfilerCollDescr_v2_t) == 104, "v2 coll size");
_Static_assert(offsetof(ncclProfilerP2pDescr_v2_t, peer) == 48, "v2 p2p peer");
TOPO_PROFILER_DESCR_ASSERTS(ncclProfilerEventDescr_v2_t);
TOPO_PROFILER_STRUCT_ASSERTS(ncclProfiler_v2_t);
#endif
