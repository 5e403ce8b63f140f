/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tuner ABI v6 (NCCL 2.30): v5 plus an optional getChunkSize at the end. Its nBytes/nChannels are
 * per channel range, not what getCollInfo saw; never return less than one protocol grain.
 */
#ifndef TOPO_NCCL_TUNER_V6_H
#define TOPO_NCCL_TUNER_V6_H
#include "tuner_v5.h"

typedef ncclTunerConstants_v5_t ncclTunerConstants_v6_t;
typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v6_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v6_t *nvlDomainInfo,
                       ncclTunerConstants_v6_t *constants);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int regBuff,
                              int *nChannels);
  ncclResult_t (*finalize)(void *context);
  ncclResult_t (*getChunkSize)(void *context, ncclFunc_t collType, size_t nBytes, int algorithm,
                               int protocol, int nChannels, size_t *chunkSize);
} ncclTuner_v6_t;

_Static_assert(sizeof(ncclTuner_v6_t) == 5 * sizeof(void *), "tuner v6: name + 4 functions");
_Static_assert(offsetof(ncclTuner_v6_t, getChunkSize) == 4 * sizeof(void *), "getChunkSize last");
#endif
