/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiler ABI v7 (NCCL 2.31.2): v6's callbacks, init and state arguments, and
 *  - a per-call user tag (uint64, 0 = untagged, most significant bit reserved by NCCL) appended to
 *    the CollApi, P2pApi, Coll, P2p and CeColl descriptors: the value the application passed in
 *    ncclCollConfig_t.userProfilerTag, copied into every event of that call;
 *  - on Coll, the kernel variant (the symmetric kernel's name, e.g. "AGxLL_R"; NULL otherwise) and
 *    isSymColl; for a symmetric collective NCCL passes the variant's tail as `algo` and "" as
 *    `proto`, which name no algorithm or protocol;
 *  - KernelPhase events (ncclProfileKernelPhase, 1 << 15): children of a KernelCh, one per phase
 *    of a symmetric kernel (0 initial sync, 1 compute, 2 final sync) with its GPU start in pTimer,
 *    then ncclProfilerKernelPhaseStop carrying its GPU end in the KernelCh state arguments.
 * Written from the documented layout (shared/reference/nccl-2.31-2.32.md, 1.3), never from NCCL's
 * headers; every new member sits after the v5/v6 ones, so the v5/v6 prefixes are unchanged.
 */
#ifndef TOPO_NCCL_PROFILER_V7_H
#define TOPO_NCCL_PROFILER_V7_H
#include "profiler_v6.h"

typedef struct {
  const char *func;
  size_t count;
  const char *datatype;
  int root;
  void *stream;
  bool graphCaptured;
  uint64_t userTag;
} ncclProfilerCollApiDescr_v7_t;

typedef struct {
  const char *func;
  size_t count;
  const char *datatype;
  void *stream;
  bool graphCaptured;
  uint64_t userTag;
} ncclProfilerP2pApiDescr_v7_t;

typedef struct {
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  uint8_t nChannels; /* symmetric: the channels that report KernelCh (on the plan's first task) */
  uint8_t nWarps;
  const char *algo;
  const char *proto;
  void *parentGroup;
  const char *kernelVariant; /* symmetric kernel id, NULL otherwise */
  bool isSymColl;
  uint64_t userTag;
} ncclProfilerCollDescr_v7_t;

typedef struct {
  const char *func;
  void *buff;
  const char *datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void *parentGroup;
  uint64_t userTag;
} ncclProfilerP2pDescr_v7_t;

typedef struct {
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  const char *syncStrategy;
  bool intraBatchSync;
  uint32_t batchSize;
  uint32_t numBatches;
  uint32_t ceSeqNum;
  void *stream;
  uint64_t userTag;
} ncclProfilerCeCollDescr_v7_t;

enum {
  ncclProfilerPhaseInitialSync = 0,
  ncclProfilerPhaseCompute = 1,
  ncclProfilerPhaseFinalSync = 2
};

typedef struct {
  uint8_t channelId;
  uint8_t phaseId;       /* ncclProfilerPhase* */
  const char *phaseName; /* "initial_sync", "compute", "final_sync" */
  uint64_t pTimer;       /* GPU globaltimer ns at the phase's start */
} ncclProfilerKernelPhaseDescr_v7_t;

typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    ncclProfilerGroupApiDescr_v5_t groupApi;
    ncclProfilerCollApiDescr_v7_t collApi;
    ncclProfilerP2pApiDescr_v7_t p2pApi;
    ncclProfilerKernelLaunchDescr_v5_t kernelLaunch;
    ncclProfilerCollDescr_v7_t coll;
    ncclProfilerP2pDescr_v7_t p2p;
    ncclProfilerProxyOpDescr_t proxyOp;
    ncclProfilerProxyStepDescr_t proxyStep;
    ncclProfilerKernelChDescr_v5_t kernelCh;
    ncclProfilerNetPluginDescr_t netPlugin;
    ncclProfilerCeCollDescr_v7_t ceColl;
    ncclProfilerCeSyncDescr_v6_t ceSync;
    ncclProfilerCeBatchDescr_v6_t ceBatch;
    ncclProfilerKernelPhaseDescr_v7_t kernelPhase;
  };
} ncclProfilerEventDescr_v7_t;

/* KernelChStop and KernelPhaseStop both carry kernelCh.pTimer. */
typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v7_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v7_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_v7_t eState,
                                   ncclProfilerEventStateArgs_v7_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v7_t;

/* The v5/v6 members keep their offsets; the new ones follow them. */
_Static_assert(offsetof(ncclProfilerCollApiDescr_v7_t, graphCaptured) == 40, "v7 collApi graph");
_Static_assert(offsetof(ncclProfilerCollApiDescr_v7_t, userTag) == 48, "v7 collApi userTag");
_Static_assert(sizeof(ncclProfilerCollApiDescr_v7_t) == 56, "v7 collApi size");
_Static_assert(offsetof(ncclProfilerP2pApiDescr_v7_t, graphCaptured) == 32, "v7 p2pApi graph");
_Static_assert(offsetof(ncclProfilerP2pApiDescr_v7_t, userTag) == 40, "v7 p2pApi userTag");
_Static_assert(sizeof(ncclProfilerP2pApiDescr_v7_t) == 48, "v7 p2pApi size");
_Static_assert(offsetof(ncclProfilerCollDescr_v7_t, nChannels) == 56, "v7 coll nChannels");
_Static_assert(offsetof(ncclProfilerCollDescr_v7_t, algo) == 64, "v7 coll algo");
_Static_assert(offsetof(ncclProfilerCollDescr_v7_t, parentGroup) == 80, "v7 coll parentGroup");
_Static_assert(offsetof(ncclProfilerCollDescr_v7_t, kernelVariant) == 88, "v7 coll variant");
_Static_assert(offsetof(ncclProfilerCollDescr_v7_t, isSymColl) == 96, "v7 coll isSymColl");
_Static_assert(offsetof(ncclProfilerCollDescr_v7_t, userTag) == 104, "v7 coll userTag");
_Static_assert(sizeof(ncclProfilerCollDescr_v7_t) == 112, "v7 coll size");
_Static_assert(offsetof(ncclProfilerP2pDescr_v7_t, nChannels) == 36, "v7 p2p nChannels");
_Static_assert(offsetof(ncclProfilerP2pDescr_v7_t, parentGroup) == 40, "v7 p2p parentGroup");
_Static_assert(offsetof(ncclProfilerP2pDescr_v7_t, userTag) == 48, "v7 p2p userTag");
_Static_assert(sizeof(ncclProfilerP2pDescr_v7_t) == 56, "v7 p2p size");
_Static_assert(offsetof(ncclProfilerCeCollDescr_v7_t, stream) == 80, "v7 ceColl stream");
_Static_assert(offsetof(ncclProfilerCeCollDescr_v7_t, userTag) == 88, "v7 ceColl userTag");
_Static_assert(sizeof(ncclProfilerCeCollDescr_v7_t) == 96, "v7 ceColl size");
_Static_assert(offsetof(ncclProfilerKernelPhaseDescr_v7_t, phaseId) == 1, "v7 phase id");
_Static_assert(offsetof(ncclProfilerKernelPhaseDescr_v7_t, phaseName) == 8, "v7 phase name");
_Static_assert(offsetof(ncclProfilerKernelPhaseDescr_v7_t, pTimer) == 16, "v7 phase pTimer");
_Static_assert(sizeof(ncclProfilerKernelPhaseDescr_v7_t) == 24, "v7 phase size");
_Static_assert(offsetof(ncclProfilerEventDescr_v7_t, kernelPhase) == 24, "v7 union at 24");
_Static_assert(sizeof(ncclProfilerEventDescr_v7_t) == 24 + 112, "v7 descr size");
_Static_assert(sizeof(ncclProfilerEventStateArgs_v7_t) == 8, "v7 state args");
TOPO_PROFILER_DESCR_ASSERTS(ncclProfilerEventDescr_v7_t);
TOPO_PROFILER_STRUCT_ASSERTS(ncclProfiler_v7_t);
#endif
