/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL-shaped event streams for the profiler tests and benchmarks: one collective or p2p as NCCL
 * emits it (GroupApi, CollApi/P2pApi, KernelLaunch, Group, Coll/P2p on the application thread;
 * KernelCh start/stop-state/stop on the proxy thread, from NCCL 2.31 on the communicator's
 * profiler thread), delivered through the plugin host at whatever ABI version the plugin was
 * loaded. Kernel-channel events are emitted only when the activation mask asked for them when the
 * operation was issued, as NCCL does.
 *
 * What NCCL 2.31+ (ABI v7, src/plugin/profiler.cc) adds, as its sources show it:
 *  - the call's user tag on CollApi/P2pApi and on its Coll/P2p;
 *  - a symmetric-kernel collective (`sym`) gets Group, Coll (isSymColl, kernelVariant, algo = the
 *    variant's tail after '_', proto = "", nChannels = the channels that report) and KernelCh
 *    events; before v7 (2.28-2.30) it gets its API events only;
 *  - with KernelPhase in the mask, at a symmetric kernel's channel completion and before its
 *    KernelChStop: per phase (initial sync, compute, final sync) a KernelPhase start (parent = the
 *    KernelCh handle, pTimer = its start), KernelPhaseStop (pTimer = its end) and stop.
 */
#ifndef TOPO_TEST_PROFILER_DRIVER_H
#define TOPO_TEST_PROFILER_DRIVER_H
#include <stdint.h>

#include "host_profiler.h"

#define DRV_MAX_CH 32

typedef struct drv_op {
  int p2p; /* 0 collective, 1 send/recv */
  const char *func, *dtype, *algo, *proto;
  uint64_t seq;
  size_t count;
  int root, peer, nch, nwarps;
  int graph;
  void *stream;
  int rank;
  uint64_t gpu_start[DRV_MAX_CH], gpu_stop[DRV_MAX_CH]; /* per channel */
  uint64_t user_tag;   /* v7: ncclCollConfig_t.userProfilerTag, 0 none */
  int sym;             /* a symmetric kernel runs it */
  const char *variant; /* its variant, e.g. "AGxLL_R" */
} drv_op;

/* What the application-thread half produced, for the proxy-thread half. */
typedef struct drv_pending {
  void *handle; /* Coll/P2p handle (may be NULL: dropped) */
  int kernelch; /* the mask asked for kernel channels (and NCCL emits them for this op) */
  int phases;   /* ... and for kernel phases (v7, symmetric kernels) */
  const drv_op *op;
} drv_pending;

/* Application-thread half: API events, launch, Coll/P2p start and stop. */
void drv_issue(topo_host_profiler *p, const drv_op *op, drv_pending *out);
/* Proxy-thread half: the op's kernel channels (start with pTimer, KernelChStop, stop). */
void drv_complete(topo_host_profiler *p, const drv_pending *pending);
/* Both halves on the calling thread. */
void drv_run(topo_host_profiler *p, const drv_op *op);
/* The GPU time a symmetric kernel's channel `c` spends in `phase` (0 initial sync, 1 compute,
 * 2 final sync): the first fifth of its run, the middle three fifths, the last fifth. */
void drv_phase_times(const drv_op *op, int c, int phase, uint64_t *start, uint64_t *stop);
/* Fill per-channel GPU times: channel c runs [base + c*skew, base + c*skew + dur]. */
void drv_set_gpu(drv_op *op, uint64_t base, uint64_t skew, uint64_t dur);
/* A float32 RING/Simple AllReduce of `count` elements on `nch` channels by `rank`, number `seq`,
 * channel c on the GPU at [1000 + 100 seq + 5 c, + 50]: the reliability tests' collective. */
drv_op drv_allreduce(int rank, uint64_t seq, size_t count, int nch);
#endif
