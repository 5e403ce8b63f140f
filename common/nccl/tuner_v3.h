/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tuner ABI v3 (NCCL 2.22): the plugin edits NCCL's cost table in place. collCostTable is really a
 * contiguous float[numAlgo][numProto] cast to float** (6x3 on 2.22, 7x3 later): never index it as
 * an array of row pointers.
 */
#ifndef TOPO_NCCL_TUNER_V3_H
#define TOPO_NCCL_TUNER_V3_H
#include "nccl_common.h"

typedef struct {
  const char *name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **context);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int *nChannels);
  ncclResult_t (*destroy)(void *context);
} ncclTuner_v3_t;

_Static_assert(sizeof(ncclTuner_v3_t) == 4 * sizeof(void *), "tuner v3: name + 3 functions");
#endif
