// SPDX-License-Identifier: Apache-2.0
// A profiler that does nothing but hand back a handle: the baseline of profiler_bench (the cost
// of the call through the plugin host and the clock reads around it).
#include <stddef.h>

#include "nccl/profiler_v5.h"

static int token;

static ncclResult_t init(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                         int nranks, int rank, ncclDebugLogger_t log) {
  *ctx = &token;
  *mask = ncclProfileColl | ncclProfileKernelCh;
  return ncclSuccess;
}
static ncclResult_t start(void *ctx, void **h, ncclProfilerEventDescr_v5_t *d) {
  *h = &token;
  return ncclSuccess;
}
static ncclResult_t stop(void *h) { return ncclSuccess; }
static ncclResult_t state(void *h, ncclProfilerEventState_v5_t s,
                          ncclProfilerEventStateArgs_v5_t *a) {
  return ncclSuccess;
}
static ncclResult_t fin(void *ctx) { return ncclSuccess; }

__attribute__((visibility("default")))
const ncclProfiler_v5_t ncclProfiler_v5 = {"null", init, start, stop, state, fin};
