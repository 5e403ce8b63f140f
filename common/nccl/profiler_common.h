/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Profiler ABI pieces shared by every version (v1..v7): event type bits and the state enum,
 * whose numeric values are stable across versions. Our own declarations, written from
 * shared/reference/nccl-plugin-abi.md sections 4.2-4.3; never include NCCL's headers.
 */
#ifndef TOPO_NCCL_PROFILER_COMMON_H
#define TOPO_NCCL_PROFILER_COMMON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nccl_common.h"

enum {
  ncclProfileGroup = (1 << 0),
  ncclProfileColl = (1 << 1),
  ncclProfileP2p = (1 << 2),
  ncclProfileProxyOp = (1 << 3),
  ncclProfileProxyStep = (1 << 4),
  ncclProfileProxyCtrl = (1 << 5),
  ncclProfileKernelCh = (1 << 6),      /* v3+ */
  ncclProfileNetPlugin = (1 << 7),     /* v3+ */
  ncclProfileGroupApi = (1 << 8),      /* v5+ */
  ncclProfileCollApi = (1 << 9),       /* v5+ */
  ncclProfileP2pApi = (1 << 10),       /* v5+ */
  ncclProfileKernelLaunch = (1 << 11), /* v5+ */
  ncclProfileCeColl = (1 << 12),       /* v6 */
  ncclProfileCeSync = (1 << 13),       /* v6 */
  ncclProfileCeBatch = (1 << 14),      /* v6 */
  ncclProfileKernelPhase = (1 << 15),  /* v7: child of KernelCh; NCCL then also sets KernelCh */
};

typedef enum {
  ncclProfilerProxyOpSendPosted = 0, /* deprecated since v4 */
  ncclProfilerProxyOpSendRemFifoWait = 1,
  ncclProfilerProxyOpSendTransmitted = 2,
  ncclProfilerProxyOpSendDone = 3,
  ncclProfilerProxyOpRecvPosted = 4,
  ncclProfilerProxyOpRecvReceived = 5,
  ncclProfilerProxyOpRecvTransmitted = 6,
  ncclProfilerProxyOpRecvDone = 7,
  ncclProfilerProxyStepSendGPUWait = 8,
  ncclProfilerProxyStepSendWait = 9,
  ncclProfilerProxyStepRecvWait = 10,
  ncclProfilerProxyStepRecvFlushWait = 11,
  ncclProfilerProxyStepRecvGPUWait = 12,
  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyCtrlActive = 14,
  ncclProfilerProxyCtrlSleep = 15,
  ncclProfilerProxyCtrlWakeup = 16,
  ncclProfilerProxyCtrlAppend = 17,
  ncclProfilerProxyCtrlAppendEnd = 18,
  ncclProfilerProxyOpInProgress_v4 = 19, /* v4+ */
  ncclProfilerProxyStepSendPeerWait_v4 = 20,
  ncclProfilerNetPluginUpdate = 21,
  ncclProfilerKernelChStop = 22,
  ncclProfilerGroupStartApiStop = 23, /* v5+; state args are NULL */
  ncclProfilerGroupEndApiStart = 24,
  ncclProfilerCeCollStart = 25, /* v6; never recorded by NCCL 2.29-2.30 */
  ncclProfilerCeCollComplete = 26,
  ncclProfilerCeSyncStart = 27,
  ncclProfilerCeSyncComplete = 28,
  ncclProfilerCeBatchStart = 29,
  ncclProfilerCeBatchComplete = 30,
  ncclProfilerKernelPhaseStop = 31, /* v7; state args: kernelCh.pTimer = the phase's end */
} ncclProfilerEventState_t;

typedef ncclProfilerEventState_t ncclProfilerEventState_v1_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v2_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v3_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v6_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v7_t;

/* Members of the descriptor unions that did not change across versions. */
typedef struct {
  pid_t pid; /* process that started the op (PXN: may be another process) */
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
} ncclProfilerProxyOpDescr_t;

typedef struct {
  int step;
} ncclProfilerProxyStepDescr_t;

typedef struct {
  int64_t id; /* bits 0-15 event struct version, 16-31 type (IB 1<<16, socket 2<<16) */
  void *data;
} ncclProfilerNetPluginDescr_t;

_Static_assert(sizeof(ncclProfilerProxyOpDescr_t) == 24, "proxyOp descr");
_Static_assert(offsetof(ncclProfilerProxyOpDescr_t, channelId) == 4, "proxyOp channelId");
_Static_assert(offsetof(ncclProfilerProxyOpDescr_t, peer) == 8, "proxyOp peer");
_Static_assert(offsetof(ncclProfilerProxyOpDescr_t, isSend) == 20, "proxyOp isSend");
_Static_assert(sizeof(ncclProfilerNetPluginDescr_t) == 16, "netPlugin descr");

/* The head of every descriptor on LP64: type (1 or 8 bytes), parentObj at 8, rank at 16, the
 * union at 24. */
#define TOPO_PROFILER_DESCR_ASSERTS(T)                                           \
  _Static_assert(offsetof(T, parentObj) == 8, #T ": parentObj at 8");            \
  _Static_assert(offsetof(T, rank) == 16, #T ": rank at 16");                    \
  _Static_assert(offsetof(T, coll) == 24 && offsetof(T, p2p) == 24 &&            \
                     offsetof(T, proxyOp) == 24 && offsetof(T, proxyStep) == 24, \
                 #T ": union at 24")

/* The plugin struct has the same six members in every version. */
#define TOPO_PROFILER_STRUCT_ASSERTS(T)                                       \
  _Static_assert(sizeof(T) == 6 * sizeof(void *), #T ": name + 5 functions"); \
  _Static_assert(offsetof(T, finalize) == 5 * sizeof(void *), #T ": finalize last")
#endif
