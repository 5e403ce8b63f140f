// SPDX-License-Identifier: Apache-2.0
// A CPU stand-in for the CUDA runtime and NCCL calls of tools/calibrate/profiler_cost.c, so that
// topo-profiler-cost's measuring path (communicators, batches timed by events, the AllReduce
// result check, teardown) runs in CI. Device memory is host memory; each stream has a virtual
// clock that an AllReduce of B bytes advances by 10 + B / 1000 us (+ FAKE_PC_EXTRA_US), all
// ranks of a group ending at the same time, so every figure is exact. The AllReduce really sums
// the ranks' float buffers at ncclGroupEnd. Knobs: FAKE_PC_NDEV (GPUs, default 2, 0 = none),
// FAKE_PC_FAIL_INIT=1 (ncclCommInitAll fails), FAKE_PC_WRONG_SUM=1 (results off by one),
// FAKE_PC_EXTRA_US (added to every call). Single-threaded, like the tool.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define FAKE_MAX_DEV     8
#define FAKE_MAX_PENDING 64

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

/* ---- CUDA -------------------------------------------------------------------------------- */

typedef struct fake_stream {
  int dev;
  double clock_us;
} fake_stream;

typedef struct fake_event {
  double t_us;
  int recorded;
} fake_event;

static int cur_dev;

cudaError_t cudaGetDeviceCount(int *count) {
  *count = env_int("FAKE_PC_NDEV", 2);
  return *count > 0 ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  (void)device;
  memset(prop, 0, sizeof *prop);
  strcpy(prop->name, "Fake H200");
  return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error" : "fake CUDA error";
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= env_int("FAKE_PC_NDEV", 2)) return cudaErrorInvalidDevice;
  cur_dev = device;
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
  (void)flags;
  fake_stream *fs = calloc(1, sizeof *fs);
  if (!fs) return cudaErrorMemoryAllocation;
  fs->dev = cur_dev;
  *s = (cudaStream_t)fs;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  return s ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  free(s);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t size) {
  *p = malloc(size ? size : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *p) {
  free(p);
  return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int v, size_t n) {
  memset(p, v, n);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
  (void)kind;
  memcpy(dst, src, n);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s) {
  if (!s) return cudaErrorInvalidResourceHandle;
  return cudaMemcpy(dst, src, n, kind);
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
  if (!s) return cudaErrorInvalidResourceHandle;
  return cudaMemset(p, v, n);
}

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t *e) {
  *e = (cudaEvent_t)calloc(1, sizeof(fake_event));
  return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  free(e);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  fake_event *fe = (fake_event *)e;
  fake_stream *fs = (fake_stream *)s;
  if (!fe || !fs || fs->dev != cur_dev)
    return cudaErrorInvalidResourceHandle; /* as CUDA: same device */
  fe->t_us = fs->clock_us;
  fe->recorded = 1;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return e ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  fake_event *x = (fake_event *)a, *y = (fake_event *)b;
  if (!x->recorded || !y->recorded) return cudaErrorInvalidResourceHandle;
  *ms = (float)((y->t_us - x->t_us) / 1000.0);
  return cudaSuccess;
}

/* ---- NCCL -------------------------------------------------------------------------------- */

struct ncclComm {
  int rank, nranks, dev;
};

typedef struct pending {
  const float *send;
  float *recv;
  size_t count;
  ncclComm_t comm;
  fake_stream *stream;
} pending;

static int group_depth;
static pending ops[FAKE_MAX_PENDING];
static int nops;

ncclResult_t ncclGetVersion(int *version) {
  *version = 22809;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
  return r == ncclSuccess ? "no error" : "fake NCCL error";
}
const char *ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return "fake last error";
}

ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist) {
  if (env_int("FAKE_PC_FAIL_INIT", 0)) return ncclSystemError;
  if (ndev < 1 || ndev > FAKE_MAX_DEV) return ncclInvalidArgument;
  for (int i = 0; i < ndev; i++) {
    comm[i] = calloc(1, sizeof(struct ncclComm));
    if (!comm[i]) return ncclSystemError;
    comm[i]->rank = i;
    comm[i]->nranks = ndev;
    comm[i]->dev = devlist ? devlist[i] : i;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) {
  free(c);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t c) {
  if (c) fprintf(stderr, "fake: ncclCommAbort rank %d\n", c->rank);
  free(c);
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *err) {
  *err = c ? ncclSuccess : ncclInvalidArgument;
  return ncclSuccess;
}

/* Run the queued AllReduces: one collective needs one call per rank of the communicator. */
static ncclResult_t flush(void) {
  if (nops == 0) return ncclSuccess;
  int n = ops[0].comm->nranks;
  if (nops != n) {
    nops = 0;
    return ncclInvalidUsage; /* real NCCL would hang: the test must see it */
  }
  size_t count = ops[0].count;
  double start = 0;
  for (int i = 0; i < n; i++) {
    if (ops[i].count != count || ops[i].stream->dev != ops[i].comm->dev) {
      nops = 0;
      return ncclInvalidArgument;
    }
    if (ops[i].stream->clock_us > start) start = ops[i].stream->clock_us;
  }
  float bias = env_int("FAKE_PC_WRONG_SUM", 0) ? 1.0f : 0.0f;
  for (size_t k = 0; k < count; k++) {
    float sum = bias;
    for (int i = 0; i < n; i++) sum += ops[i].send[k];
    for (int i = 0; i < n; i++) ops[i].recv[k] = sum;
  }
  double t = 10.0 + (double)count * sizeof(float) / 1000.0 + env_int("FAKE_PC_EXTRA_US", 0);
  for (int i = 0; i < n; i++) ops[i].stream->clock_us = start + t;
  nops = 0;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
  group_depth++;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  if (group_depth <= 0) return ncclInvalidUsage;
  return --group_depth == 0 ? flush() : ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t c, cudaStream_t st) {
  if (t != ncclFloat || op != ncclSum || !c || !st || nops >= FAKE_MAX_PENDING)
    return ncclInvalidArgument;
  ops[nops++] = (pending){s, r, count, c, (fake_stream *)st};
  return group_depth == 0 ? flush() : ncclSuccess;
}
