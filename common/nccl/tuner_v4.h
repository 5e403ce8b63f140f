/* SPDX-License-Identifier: Apache-2.0 */
/* Tuner ABI v4 (NCCL 2.24): v3 plus regBuff before nChannels. */
#ifndef TOPO_NCCL_TUNER_V4_H
#define TOPO_NCCL_TUNER_V4_H
#include "nccl_common.h"

typedef struct {
  const char *name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **context);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int regBuff,
                              int *nChannels);
  ncclResult_t (*destroy)(void *context);
} ncclTuner_v4_t;

_Static_assert(sizeof(ncclTuner_v4_t) == 4 * sizeof(void *), "tuner v4: name + 3 functions");
#endif
