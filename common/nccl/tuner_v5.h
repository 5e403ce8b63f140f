/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tuner ABI v5 (NCCL 2.28): context first in init, NVLink-domain info and NCCL's writable tuning
 * constants (read by ncclTopoTuneModel right after init returns), destroy renamed finalize.
 */
#ifndef TOPO_NCCL_TUNER_V5_H
#define TOPO_NCCL_TUNER_V5_H
#include "nccl_common.h"

typedef struct {
  int nNvlDomains; /* NCCL's topology nodes (NVLink domains) */
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ncclNvlDomainInfo_v5_t;

typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double hwLatencies[NCCL_NUM_HW_LINKS][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double llMaxBws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];
} ncclTunerConstants_v5_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t *nvlDomainInfo,
                       ncclTunerConstants_v5_t *constants);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int regBuff,
                              int *nChannels);
  ncclResult_t (*finalize)(void *context);
} ncclTuner_v5_t;

_Static_assert(sizeof(ncclNvlDomainInfo_v5_t) == 12, "nvl domain info: 3 ints");
_Static_assert(sizeof(ncclTunerConstants_v5_t) == 144 * sizeof(double), "constants: 144 doubles");
_Static_assert(offsetof(ncclTunerConstants_v5_t, hwLatencies) == 21 * sizeof(double),
               "hwLatencies");
_Static_assert(offsetof(ncclTunerConstants_v5_t, llMaxBws) == 84 * sizeof(double), "llMaxBws");
_Static_assert(offsetof(ncclTunerConstants_v5_t, perChMaxNVLSTreeBws) == 132 * sizeof(double),
               "perChMaxNVLSTreeBws");
_Static_assert(sizeof(ncclTuner_v5_t) == 4 * sizeof(void *), "tuner v5: name + 3 functions");
#endif
