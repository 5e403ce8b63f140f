/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiler ABI v6 (NCCL 2.29): v5 plus copy-engine collective events (CeColl, CeSync, CeBatch);
 * state args are v5's. Same init signature as v5.
 */
#ifndef TOPO_NCCL_PROFILER_V6_H
#define TOPO_NCCL_PROFILER_V6_H
#include "profiler_v5.h"

typedef struct {
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  const char *syncStrategy; /* "MC" multicast or "UC" */
  bool intraBatchSync;
  uint32_t batchSize;
  uint32_t numBatches;
  uint32_t ceSeqNum;
  void *stream;
} ncclProfilerCeCollDescr_v6_t;

typedef struct {
  bool isComplete;
  int nRanks;
} ncclProfilerCeSyncDescr_v6_t;

typedef struct {
  int numOps;
  size_t totalBytes;
  bool useIntraSync;
} ncclProfilerCeBatchDescr_v6_t;

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
    ncclProfilerCeCollDescr_v6_t ceColl;
    ncclProfilerCeSyncDescr_v6_t ceSync;
    ncclProfilerCeBatchDescr_v6_t ceBatch;
  };
} ncclProfilerEventDescr_v6_t;

typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v6_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v6_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v6_t eState,
                                   ncclProfilerEventStateArgs_v6_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v6_t;

_Static_assert(offsetof(ncclProfilerCeCollDescr_v6_t, syncStrategy) == 56, "v6 ceColl sync");
_Static_assert(offsetof(ncclProfilerCeCollDescr_v6_t, stream) == 80, "v6 ceColl stream");
_Static_assert(sizeof(ncclProfilerCeCollDescr_v6_t) == 88, "v6 ceColl size");
_Static_assert(sizeof(ncclProfilerCeBatchDescr_v6_t) == 24, "v6 ceBatch size");
_Static_assert(sizeof(ncclProfilerEventDescr_v6_t) == 24 + 88, "v6 descr size");
TOPO_PROFILER_DESCR_ASSERTS(ncclProfilerEventDescr_v6_t);
TOPO_PROFILER_STRUCT_ASSERTS(ncclProfiler_v6_t);
#endif
