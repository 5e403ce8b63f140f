/* SPDX-License-Identifier: Apache-2.0 */
/* Tuner ABI v2 (NCCL 2.21; still accepted by 2.30): the plugin returns one (algo, proto) pair. */
#ifndef TOPO_NCCL_TUNER_V2_H
#define TOPO_NCCL_TUNER_V2_H
#include "nccl_common.h"

typedef struct {
  const char *name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **context);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                              int nvlsSupport, int numPipeOps, int *algorithm, int *protocol,
                              int *nChannels);
  ncclResult_t (*destroy)(void *context);
} ncclTuner_v2_t;

_Static_assert(sizeof(ncclTuner_v2_t) == 4 * sizeof(void *), "tuner v2: name + 3 functions");
_Static_assert(offsetof(ncclTuner_v2_t, destroy) == 3 * sizeof(void *), "tuner v2: destroy last");
#endif
