/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tuner ABI v7 (NCCL 2.32.6): v6's four callbacks with the same signatures, but init's constants
 * struct has a fifth row (Rubin, NCCL_RUBIN_COMPCAP_IDX) in each per-GPU-generation table; the
 * NVLink-domain info is v5's. A v5/v6 plugin still loads on 2.32 through NCCL's shim, which hands
 * it the first four rows only. Written from the documented layout
 * (shared/reference/nccl-2.31-2.32.md, 1.1), never from NCCL's headers.
 */
#ifndef TOPO_NCCL_TUNER_V7_H
#define TOPO_NCCL_TUNER_V7_H
#include "tuner_v6.h"

typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v7_t;

typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double hwLatencies[NCCL_NUM_HW_LINKS][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double llMaxBws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES];
} ncclTunerConstants_v7_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v7_t *nvlDomainInfo,
                       ncclTunerConstants_v7_t *constants);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int regBuff,
                              int *nChannels);
  ncclResult_t (*finalize)(void *context);
  ncclResult_t (*getChunkSize)(void *context, ncclFunc_t collType, size_t nBytes, int algo,
                               int proto, int nChannels, size_t *chunkSize);
} ncclTuner_v7_t;

/* 21 + 63 + 5 tables x 5 rows x 3 scales = 159 doubles, no padding. */
_Static_assert(sizeof(ncclTunerConstants_v7_t) == 159 * sizeof(double), "v7 constants: 159");
_Static_assert(offsetof(ncclTunerConstants_v7_t, hwLatencies) == 21 * sizeof(double),
               "v7 hwLatencies");
_Static_assert(offsetof(ncclTunerConstants_v7_t, llMaxBws) == 84 * sizeof(double), "v7 llMaxBws");
_Static_assert(offsetof(ncclTunerConstants_v7_t, perChMaxRingLL128Bws) == 99 * sizeof(double),
               "v7 perChMaxRingLL128Bws");
_Static_assert(offsetof(ncclTunerConstants_v7_t, perChMaxTreeLL128Bws) == 114 * sizeof(double),
               "v7 perChMaxTreeLL128Bws");
_Static_assert(offsetof(ncclTunerConstants_v7_t, perChMaxTreeBws) == 129 * sizeof(double),
               "v7 perChMaxTreeBws");
_Static_assert(offsetof(ncclTunerConstants_v7_t, perChMaxNVLSTreeBws) == 144 * sizeof(double),
               "v7 perChMaxNVLSTreeBws");
_Static_assert(sizeof(ncclNvlDomainInfo_v7_t) == 12, "v7 nvl domain info = v5's");
_Static_assert(sizeof(ncclTuner_v7_t) == 5 * sizeof(void *), "tuner v7: name + 4 functions");
_Static_assert(offsetof(ncclTuner_v7_t, name) == 0, "tuner v7: name first");
_Static_assert(offsetof(ncclTuner_v7_t, init) == 1 * sizeof(void *), "tuner v7: init");
_Static_assert(offsetof(ncclTuner_v7_t, getCollInfo) == 2 * sizeof(void *),
               "tuner v7: getCollInfo");
_Static_assert(offsetof(ncclTuner_v7_t, finalize) == 3 * sizeof(void *), "tuner v7: finalize");
_Static_assert(offsetof(ncclTuner_v7_t, getChunkSize) == 4 * sizeof(void *),
               "tuner v7: getChunkSize last");
#endif
