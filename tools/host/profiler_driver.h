/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL 2.28-shaped event streams for the profiler tests and benchmarks: one collective or p2p
 * as NCCL emits it (GroupApi, CollApi/P2pApi, KernelLaunch, Group, Coll/P2p on the application
 * thread; KernelCh start/stop-state/stop on the proxy thread), delivered through the plugin host
 * at whatever ABI version the plugin was loaded. Kernel-channel events are emitted only when the
 * activation mask asked for them when the operation was issued, as NCCL does.
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
} drv_op;

/* What the application-thread half produced, for the proxy-thread half. */
typedef struct drv_pending {
  void *handle; /* Coll/P2p handle (may be NULL: dropped) */
  int kernelch; /* the mask asked for kernel channels */
  const drv_op *op;
} drv_pending;

/* Application-thread half: API events, launch, Coll/P2p start and stop. */
void drv_issue(topo_host_profiler *p, const drv_op *op, drv_pending *out);
/* Proxy-thread half: the op's kernel channels (start with pTimer, KernelChStop, stop). */
void drv_complete(topo_host_profiler *p, const drv_pending *pending);
/* Both halves on the calling thread. */
void drv_run(topo_host_profiler *p, const drv_op *op);
/* Fill per-channel GPU times: channel c runs [base + c*skew, base + c*skew + dur]. */
void drv_set_gpu(drv_op *op, uint64_t base, uint64_t skew, uint64_t dur);
/* A float32 RING/Simple AllReduce of `count` elements on `nch` channels by `rank`, number `seq`,
 * channel c on the GPU at [1000 + 100 seq + 5 c, + 50]: the reliability tests' collective. */
drv_op drv_allreduce(int rank, uint64_t seq, size_t count, int nch);
#endif
