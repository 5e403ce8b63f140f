/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tuner ABI v6 (NCCL 2.30): v5's init / getCollInfo / finalize unchanged (same constants and
 * NVLink-domain structs), plus an optional getChunkSize at the end (NULL: NCCL keeps its own).
 * NCCL calls getChunkSize from calcCollChunking after its own chunk heuristics, with chunkSize
 * in/out holding NCCL's value; nBytes is the collective's global bytes for the whole call, or
 * for one channel's share (nChannels = 1) when NCCL splits the work per channel. NCCL clamps a
 * larger answer to its buffer ceiling and then rounds down to the protocol grain, so an answer
 * below one grain would become 0: never return less than NCCL's value without a measurement.
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
  ncclResult_t (*getChunkSize)(void *context, ncclFunc_t collType, size_t nBytes, int algo,
                               int proto, int nChannels, size_t *chunkSize);
} ncclTuner_v6_t;

/* Layout checked against NCCL 2.30.7's src/include/plugin/tuner/tuner_v6.h. */
_Static_assert(sizeof(ncclTuner_v6_t) == 5 * sizeof(void *), "tuner v6: name + 4 functions");
_Static_assert(offsetof(ncclTuner_v6_t, name) == 0, "tuner v6: name first");
_Static_assert(offsetof(ncclTuner_v6_t, init) == 1 * sizeof(void *), "tuner v6: init");
_Static_assert(offsetof(ncclTuner_v6_t, getCollInfo) == 2 * sizeof(void *),
               "tuner v6: getCollInfo");
_Static_assert(offsetof(ncclTuner_v6_t, finalize) == 3 * sizeof(void *), "tuner v6: finalize");
_Static_assert(offsetof(ncclTuner_v6_t, getChunkSize) == 4 * sizeof(void *), "getChunkSize last");
_Static_assert(sizeof(ncclTunerConstants_v6_t) == 144 * sizeof(double), "v6 constants = v5's");
_Static_assert(sizeof(ncclNvlDomainInfo_v6_t) == 12, "v6 nvl domain info = v5's");
#endif
