// SPDX-License-Identifier: Apache-2.0
// The exported ncclTunerPlugin_v2..v7: const structs of thin adapters over the core
// (tuner_core.h), initialised by field name.
// Each translates its version's arguments and answers ncclSuccess whatever happens inside
// (DESIGN.md: never hurt the job); a failed init leaves a NULL context, which every call
// tolerates by leaving NCCL's choice alone. This file is the only one with exported symbols.
#include <string.h>

#include "export.h"
#include "nccl/tuner.h"
#include "topo_version.h"
#include "tuner_core.h"

#define TOPO_TUNER_NAME "topo " TOPO_VERSION

static ncclResult_t init_common(void **context, int abi, uint64_t comm_id, size_t nranks,
                                size_t nnodes, ncclDebugLogger_t logger,
                                const ncclNvlDomainInfo_v5_t *nvl,
                                ncclTunerConstants_v5_t *constants) {
  if (!context) return ncclSuccess;
  *context = NULL;
  topo_tuner_args args = {.abi_version = abi,
                          .comm_id = comm_id,
                          .nranks = nranks,
                          .nnodes = nnodes,
                          .ranks_per_domain = nvl ? nvl->maxRanksPerNvlDomain : 0,
                          .logger = logger,
                          .constants = constants};
  topo_tuner_ctx *ctx = NULL;
  topo_tuner_init(&args, &ctx);
  *context = ctx;
  return ncclSuccess;
}

static ncclResult_t finalize(void *context) {
  topo_tuner_finalize(context);
  return ncclSuccess;
}

static ncclResult_t get_table(void *context, ncclFunc_t coll, size_t nbytes, int num_pipe_ops,
                              float **cost, int num_algo, int num_proto, int reg_buff,
                              int *nchannels) {
  topo_tuner_get(context, (int)coll, nbytes, num_pipe_ops, (float *)cost, num_algo, num_proto,
                 reg_buff, nchannels);
  return ncclSuccess;
}

/* v2 (NCCL 2.21) */
static ncclResult_t init_v2(size_t nranks, size_t nnodes, ncclDebugLogger_t logger, void **ctx) {
  return init_common(ctx, 2, 0, nranks, nnodes, logger, NULL, NULL);
}
static ncclResult_t get_v2(void *context, ncclFunc_t coll, size_t nbytes, int collnet, int nvls,
                           int num_pipe_ops, int *algo, int *proto, int *nchannels) {
  topo_tuner_get_pair(context, (int)coll, nbytes, collnet, nvls, num_pipe_ops, algo, proto,
                      nchannels);
  return ncclSuccess;
}

/* v3 (NCCL 2.22-2.23) */
static ncclResult_t init_v3(size_t nranks, size_t nnodes, ncclDebugLogger_t logger, void **ctx) {
  return init_common(ctx, 3, 0, nranks, nnodes, logger, NULL, NULL);
}
static ncclResult_t get_v3(void *context, ncclFunc_t coll, size_t nbytes, int num_pipe_ops,
                           float **cost, int num_algo, int num_proto, int *nchannels) {
  return get_table(context, coll, nbytes, num_pipe_ops, cost, num_algo, num_proto, 0, nchannels);
}

/* v4 (NCCL 2.24-2.27) */
static ncclResult_t init_v4(size_t nranks, size_t nnodes, ncclDebugLogger_t logger, void **ctx) {
  return init_common(ctx, 4, 0, nranks, nnodes, logger, NULL, NULL);
}

/* v5 (NCCL 2.28-2.29), v6 (NCCL 2.30-2.32.5) */
static ncclResult_t init_v5(void **ctx, uint64_t comm_id, size_t nranks, size_t nnodes,
                            ncclDebugLogger_t logger, ncclNvlDomainInfo_v5_t *nvl,
                            ncclTunerConstants_v5_t *constants) {
  return init_common(ctx, 5, comm_id, nranks, nnodes, logger, nvl, constants);
}
static ncclResult_t init_v6(void **ctx, uint64_t comm_id, size_t nranks, size_t nnodes,
                            ncclDebugLogger_t logger, ncclNvlDomainInfo_v6_t *nvl,
                            ncclTunerConstants_v6_t *constants) {
  return init_common(ctx, 6, comm_id, nranks, nnodes, logger, nvl, constants);
}
/* v7 (NCCL 2.32.6+): the constants have a fifth (Rubin) row per GPU-generation table. The core
 * calibrates the first four as it does for v5/v6 (it writes no Rubin row): they are copied out,
 * handed over as v5 constants and copied back; the Rubin row is never touched. Once per
 * communicator, at init. */
static void constants_v7_to_v5(ncclTunerConstants_v5_t *dst, const ncclTunerConstants_v7_t *src) {
  memcpy(dst->baseLatencies, src->baseLatencies, sizeof dst->baseLatencies);
  memcpy(dst->hwLatencies, src->hwLatencies, sizeof dst->hwLatencies);
  memcpy(dst->llMaxBws, src->llMaxBws, sizeof dst->llMaxBws);
  memcpy(dst->perChMaxRingLL128Bws, src->perChMaxRingLL128Bws, sizeof dst->perChMaxRingLL128Bws);
  memcpy(dst->perChMaxTreeLL128Bws, src->perChMaxTreeLL128Bws, sizeof dst->perChMaxTreeLL128Bws);
  memcpy(dst->perChMaxTreeBws, src->perChMaxTreeBws, sizeof dst->perChMaxTreeBws);
  memcpy(dst->perChMaxNVLSTreeBws, src->perChMaxNVLSTreeBws, sizeof dst->perChMaxNVLSTreeBws);
}
static void constants_v5_to_v7(ncclTunerConstants_v7_t *dst, const ncclTunerConstants_v5_t *src) {
  memcpy(dst->baseLatencies, src->baseLatencies, sizeof src->baseLatencies);
  memcpy(dst->hwLatencies, src->hwLatencies, sizeof src->hwLatencies);
  memcpy(dst->llMaxBws, src->llMaxBws, sizeof src->llMaxBws);
  memcpy(dst->perChMaxRingLL128Bws, src->perChMaxRingLL128Bws, sizeof src->perChMaxRingLL128Bws);
  memcpy(dst->perChMaxTreeLL128Bws, src->perChMaxTreeLL128Bws, sizeof src->perChMaxTreeLL128Bws);
  memcpy(dst->perChMaxTreeBws, src->perChMaxTreeBws, sizeof src->perChMaxTreeBws);
  memcpy(dst->perChMaxNVLSTreeBws, src->perChMaxNVLSTreeBws, sizeof src->perChMaxNVLSTreeBws);
}
static ncclResult_t init_v7(void **ctx, uint64_t comm_id, size_t nranks, size_t nnodes,
                            ncclDebugLogger_t logger, ncclNvlDomainInfo_v7_t *nvl,
                            ncclTunerConstants_v7_t *constants) {
  if (!constants) return init_common(ctx, 7, comm_id, nranks, nnodes, logger, nvl, NULL);
  ncclTunerConstants_v5_t first_rows;
  constants_v7_to_v5(&first_rows, constants);
  ncclResult_t r = init_common(ctx, 7, comm_id, nranks, nnodes, logger, nvl, &first_rows);
  constants_v5_to_v7(constants, &first_rows);
  return r;
}

/* getChunkSize: *chunk_size arrives holding NCCL's value and leaves unchanged unless the core
 * has a measured reason (the profile carries no chunk-size measurement, so today: never). */
static ncclResult_t chunk_v6(void *context, ncclFunc_t coll, size_t nbytes, int algo, int proto,
                             int nchannels, size_t *chunk_size) {
  if (!chunk_size) return ncclSuccess;
  topo_tuner_chunk_size(context, (int)coll, nbytes, algo, proto, nchannels, chunk_size);
  return ncclSuccess;
}

TOPO_EXPORT const ncclTuner_v2_t ncclTunerPlugin_v2 = {
    .name = TOPO_TUNER_NAME, .init = init_v2, .getCollInfo = get_v2, .destroy = finalize};
TOPO_EXPORT const ncclTuner_v3_t ncclTunerPlugin_v3 = {
    .name = TOPO_TUNER_NAME, .init = init_v3, .getCollInfo = get_v3, .destroy = finalize};
TOPO_EXPORT const ncclTuner_v4_t ncclTunerPlugin_v4 = {
    .name = TOPO_TUNER_NAME, .init = init_v4, .getCollInfo = get_table, .destroy = finalize};
TOPO_EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {
    .name = TOPO_TUNER_NAME, .init = init_v5, .getCollInfo = get_table, .finalize = finalize};
TOPO_EXPORT const ncclTuner_v6_t ncclTunerPlugin_v6 = {.name = TOPO_TUNER_NAME,
                                                       .init = init_v6,
                                                       .getCollInfo = get_table,
                                                       .finalize = finalize,
                                                       .getChunkSize = chunk_v6};
TOPO_EXPORT const ncclTuner_v7_t ncclTunerPlugin_v7 = {.name = TOPO_TUNER_NAME,
                                                       .init = init_v7,
                                                       .getCollInfo = get_table,
                                                       .finalize = finalize,
                                                       .getChunkSize = chunk_v6};
