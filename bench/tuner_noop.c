// SPDX-License-Identifier: Apache-2.0
// The baseline for tuner_bench: a v5 tuner whose calls do nothing, loaded and called through the
// same plugin host, so the benchmark can subtract what the host and the call itself cost.
#include "export.h"
#include "nccl/tuner.h"

static ncclResult_t noop_init(void **ctx, uint64_t id, size_t nranks, size_t nnodes,
                              ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t *nvl,
                              ncclTunerConstants_v5_t *c) {
  *ctx = (void *)1;
  return ncclSuccess;
}
static ncclResult_t noop_get(void *ctx, ncclFunc_t coll, size_t nbytes, int pipe, float **table,
                             int num_algo, int num_proto, int reg, int *nch) {
  return ncclSuccess;
}
static ncclResult_t noop_fini(void *ctx) { return ncclSuccess; }

TOPO_EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {"noop", noop_init, noop_get, noop_fini};
