/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Drives a tuner plugin as NCCL does, whatever ABI version it was loaded at: init with the
 * arguments that version passes (the v2-v4 shims drop commId, NVLink info and constants),
 * getCollInfo with NCCL's contiguous cost table cast to float** (v2: NCCL's shim derives the
 * support flags and turns the returned pair into a 0.0 entry), finalize, then dlclose. v7 (NCCL
 * 2.32.6+) gets NCCL's five-row constants: the caller's four rows plus a Rubin row.
 */
#ifndef TOPO_HOST_TUNER_H
#define TOPO_HOST_TUNER_H

#include "nccl/tuner.h"
#include "plugin_host.h"

typedef struct topo_host_tuner {
  topo_host_lib lib;
  int nccl_version;
  int num_algo; /* 6 before NCCL 2.23 (no PAT), 7 after */
  void *ctx;
  /* v7: the constants init was handed and left (rows 0-3 are also copied back to the caller's
   * v5 struct); before init the Rubin row holds the host's stand-in values (NCCL's own Rubin
   * numbers are not known here: Blackwell's, doubled), which tests can check stay untouched. */
  ncclTunerConstants_v7_t constants_v7;
} topo_host_tuner;

/* Load `path` as `nccl_version` would. */
topo_status topo_host_tuner_load(topo_host_tuner *t, const char *path, int nccl_version);
void topo_host_tuner_unload(topo_host_tuner *t);

/* `constants` may be NULL for v2-v4 (they never see it); for v5+ NULL means NCCL's defaults. */
ncclResult_t topo_host_tuner_init(topo_host_tuner *t, uint64_t comm_id, size_t nranks,
                                  size_t nnodes, ncclDebugLogger_t logger,
                                  const ncclNvlDomainInfo_v5_t *nvl,
                                  ncclTunerConstants_v5_t *constants);
/* `table` is float[t->num_algo][3], filled by the caller as NCCL fills it. */
ncclResult_t topo_host_tuner_get(topo_host_tuner *t, ncclFunc_t coll, size_t nbytes,
                                 int num_pipe_ops, float *table, int reg_buff, int *nchannels);
ncclResult_t topo_host_tuner_finalize(topo_host_tuner *t);

/* NCCL's selection over a table (topoGetAlgoInfo): the minimum over entries >= 0 and < 3.6e9,
 * ties to the lowest algorithm, then protocol. Returns 0 when nothing is selectable. */
int topo_host_select(const float *table, int num_algo, int num_proto, int *algo, int *proto);

/* NCCL 2.28.9's default tuning constants (as recorded on H200 in shared/data). */
void topo_host_default_constants(ncclTunerConstants_v5_t *c);

#endif
