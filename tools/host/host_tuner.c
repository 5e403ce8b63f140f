// SPDX-License-Identifier: Apache-2.0
// NCCL-shaped calls into a loaded tuner (see host_tuner.h).
#include "host_tuner.h"

#include <string.h>

topo_status topo_host_tuner_load(topo_host_tuner *t, const char *path, int nccl_version) {
  memset(t, 0, sizeof *t);
  t->nccl_version = nccl_version;
  t->num_algo = nccl_version >= 22300 ? 7 : 6;
  return topo_host_open(&t->lib, path, "ncclTunerPlugin_v",
                        topo_host_tuner_max_version(nccl_version), 2);
}

void topo_host_tuner_unload(topo_host_tuner *t) { topo_host_close(&t->lib); }

/* NCCL 2.32's five-row constants from four rows and the host's Rubin stand-in (and back). */
#define ROWS(member, rows) memcpy(dst->member, src->member, rows * sizeof dst->member[0])
static void to_v7(ncclTunerConstants_v7_t *dst, const ncclTunerConstants_v5_t *src) {
  memcpy(dst->baseLatencies, src->baseLatencies, sizeof dst->baseLatencies);
  memcpy(dst->hwLatencies, src->hwLatencies, sizeof dst->hwLatencies);
  ROWS(llMaxBws, 4);
  ROWS(perChMaxRingLL128Bws, 4);
  ROWS(perChMaxTreeLL128Bws, 4);
  ROWS(perChMaxTreeBws, 4);
  ROWS(perChMaxNVLSTreeBws, 4);
  for (int s = 0; s < NCCL_NUM_TUNING_SCALES; s++) {
    const int b = NCCL_BLACKWELL_COMPCAP_IDX, r = NCCL_RUBIN_COMPCAP_IDX;
    dst->llMaxBws[r][s] = 2 * src->llMaxBws[b][s];
    dst->perChMaxRingLL128Bws[r][s] = 2 * src->perChMaxRingLL128Bws[b][s];
    dst->perChMaxTreeLL128Bws[r][s] = 2 * src->perChMaxTreeLL128Bws[b][s];
    dst->perChMaxTreeBws[r][s] = 2 * src->perChMaxTreeBws[b][s];
    dst->perChMaxNVLSTreeBws[r][s] = 2 * src->perChMaxNVLSTreeBws[b][s];
  }
}
static void from_v7(ncclTunerConstants_v5_t *dst, const ncclTunerConstants_v7_t *src) {
  memcpy(dst->baseLatencies, src->baseLatencies, sizeof dst->baseLatencies);
  memcpy(dst->hwLatencies, src->hwLatencies, sizeof dst->hwLatencies);
  ROWS(llMaxBws, 4);
  ROWS(perChMaxRingLL128Bws, 4);
  ROWS(perChMaxTreeLL128Bws, 4);
  ROWS(perChMaxTreeBws, 4);
  ROWS(perChMaxNVLSTreeBws, 4);
}
#undef ROWS

ncclResult_t topo_host_tuner_init(topo_host_tuner *t, uint64_t comm_id, size_t nranks,
                                  size_t nnodes, ncclDebugLogger_t logger,
                                  const ncclNvlDomainInfo_v5_t *nvl,
                                  ncclTunerConstants_v5_t *constants) {
  t->ctx = NULL;
  switch (t->lib.version) {
  case 2: return ((const ncclTuner_v2_t *)t->lib.sym)->init(nranks, nnodes, logger, &t->ctx);
  case 3: return ((const ncclTuner_v3_t *)t->lib.sym)->init(nranks, nnodes, logger, &t->ctx);
  case 4: return ((const ncclTuner_v4_t *)t->lib.sym)->init(nranks, nnodes, logger, &t->ctx);
  case 5:
  case 6: {
    ncclNvlDomainInfo_v5_t info = {(int)nnodes, (int)(nranks / (nnodes ? nnodes : 1)),
                                   (int)(nranks / (nnodes ? nnodes : 1))};
    if (nvl) info = *nvl;
    ncclTunerConstants_v5_t defaults;
    if (!constants) {
      topo_host_default_constants(&defaults);
      constants = &defaults;
    }
    if (t->lib.version == 5)
      return ((const ncclTuner_v5_t *)t->lib.sym)
          ->init(&t->ctx, comm_id, nranks, nnodes, logger, &info, constants);
    return ((const ncclTuner_v6_t *)t->lib.sym)
        ->init(&t->ctx, comm_id, nranks, nnodes, logger, &info, constants);
  }
  case 7: {
    ncclNvlDomainInfo_v7_t info = {(int)nnodes, (int)(nranks / (nnodes ? nnodes : 1)),
                                   (int)(nranks / (nnodes ? nnodes : 1))};
    if (nvl) info = *nvl;
    ncclTunerConstants_v5_t defaults;
    if (!constants) {
      topo_host_default_constants(&defaults);
      constants = &defaults;
    }
    to_v7(&t->constants_v7, constants);
    ncclResult_t r = ((const ncclTuner_v7_t *)t->lib.sym)
                         ->init(&t->ctx, comm_id, nranks, nnodes, logger, &info, &t->constants_v7);
    from_v7(constants, &t->constants_v7);
    return r;
  }
  }
  return ncclInternalError;
}

/* NCCL's v2 shim: flags from the table, the returned pair becomes a 0.0 entry if allowed. */
static ncclResult_t get_v2(topo_host_tuner *t, ncclFunc_t coll, size_t nbytes, int pipe,
                           float *table, int *nchannels) {
  float(*cost)[NCCL_NUM_PROTOCOLS] = (float(*)[NCCL_NUM_PROTOCOLS])table;
  int nvls = t->num_algo > NCCL_ALGO_NVLS_TREE &&
             (cost[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] != NCCL_ALGO_PROTO_IGNORE ||
              cost[NCCL_ALGO_NVLS_TREE][NCCL_PROTO_SIMPLE] != NCCL_ALGO_PROTO_IGNORE);
  int collnet = cost[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE] != NCCL_ALGO_PROTO_IGNORE;
  int algo = NCCL_ALGO_UNDEF, proto = NCCL_PROTO_UNDEF;
  ncclResult_t r =
      ((const ncclTuner_v2_t *)t->lib.sym)
          ->getCollInfo(t->ctx, coll, nbytes, collnet, nvls, pipe, &algo, &proto, nchannels);
  if (r != ncclSuccess) return r;
  if (algo >= 0 && algo < t->num_algo && proto >= 0 && proto < NCCL_NUM_PROTOCOLS &&
      cost[algo][proto] != NCCL_ALGO_PROTO_IGNORE)
    cost[algo][proto] = 0.0f;
  return ncclSuccess;
}

ncclResult_t topo_host_tuner_get(topo_host_tuner *t, ncclFunc_t coll, size_t nbytes,
                                 int num_pipe_ops, float *table, int reg_buff, int *nchannels) {
  float **as_nccl_passes_it = (float **)table; /* contiguous float[numAlgo][numProto] */
  switch (t->lib.version) {
  case 2: return get_v2(t, coll, nbytes, num_pipe_ops, table, nchannels);
  case 3:
    return ((const ncclTuner_v3_t *)t->lib.sym)
        ->getCollInfo(t->ctx, coll, nbytes, num_pipe_ops, as_nccl_passes_it, t->num_algo,
                      NCCL_NUM_PROTOCOLS, nchannels);
  case 4:
    return ((const ncclTuner_v4_t *)t->lib.sym)
        ->getCollInfo(t->ctx, coll, nbytes, num_pipe_ops, as_nccl_passes_it, t->num_algo,
                      NCCL_NUM_PROTOCOLS, reg_buff, nchannels);
  case 5:
    return ((const ncclTuner_v5_t *)t->lib.sym)
        ->getCollInfo(t->ctx, coll, nbytes, num_pipe_ops, as_nccl_passes_it, t->num_algo,
                      NCCL_NUM_PROTOCOLS, reg_buff, nchannels);
  case 6:
    return ((const ncclTuner_v6_t *)t->lib.sym)
        ->getCollInfo(t->ctx, coll, nbytes, num_pipe_ops, as_nccl_passes_it, t->num_algo,
                      NCCL_NUM_PROTOCOLS, reg_buff, nchannels);
  case 7:
    return ((const ncclTuner_v7_t *)t->lib.sym)
        ->getCollInfo(t->ctx, coll, nbytes, num_pipe_ops, as_nccl_passes_it, t->num_algo,
                      NCCL_NUM_PROTOCOLS, reg_buff, nchannels);
  }
  return ncclInternalError;
}

ncclResult_t topo_host_tuner_finalize(topo_host_tuner *t) {
  ncclResult_t r = ncclInternalError;
  switch (t->lib.version) {
  case 2: r = ((const ncclTuner_v2_t *)t->lib.sym)->destroy(t->ctx); break;
  case 3: r = ((const ncclTuner_v3_t *)t->lib.sym)->destroy(t->ctx); break;
  case 4: r = ((const ncclTuner_v4_t *)t->lib.sym)->destroy(t->ctx); break;
  case 5: r = ((const ncclTuner_v5_t *)t->lib.sym)->finalize(t->ctx); break;
  case 6: r = ((const ncclTuner_v6_t *)t->lib.sym)->finalize(t->ctx); break;
  case 7: r = ((const ncclTuner_v7_t *)t->lib.sym)->finalize(t->ctx); break;
  }
  t->ctx = NULL;
  return r;
}

int topo_host_select(const float *table, int num_algo, int num_proto, int *algo, int *proto) {
  float best = 3.6e9f;
  int found = 0;
  for (int a = 0; a < num_algo; a++)
    for (int p = 0; p < num_proto; p++) {
      float v = table[a * num_proto + p];
      if (v >= 0.0f && v < best) {
        best = v;
        *algo = a;
        *proto = p;
        found = 1;
      }
    }
  return found;
}

void topo_host_default_constants(ncclTunerConstants_v5_t *c) {
  /* From the TUNER_INIT line NCCL 2.28.9 produced on H200 (shared/data/nccl-2.28.9-2xh200). */
  static const ncclTunerConstants_v5_t defaults = {
      .baseLatencies =
          {{6.8, 14, 8.4}, {6.6, 14, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8, 8, 8}},
      .hwLatencies =
          {{{0.6, 1.25, 4},
            {0.6, 1.9, 3.4},
            {0, 0, 3.7},
            {0, 0, 2.8},
            {0, 0, 25},
            {0, 0, 25},
            {0, 0, 4}},
           {{1, 1.9, 4}, {1, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4}},
           {{5, 8.5, 14},
            {2.7, 4, 14},
            {0, 0, 31},
            {0, 0, 30},
            {0, 0, 18},
            {0, 0, 20.9},
            {0, 0, 14}}},
      .llMaxBws = {{39, 39, 20.4}, {87.7, 22.5, 19}, {141, 45, 35}, {282, 90, 70}},
      .perChMaxRingLL128Bws = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {73.4, 34.6, 73.4}},
      .perChMaxTreeLL128Bws = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}},
      .perChMaxTreeBws = {{26.5, 18.5, 10}, {24, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70, 42.8, 24}},
      .perChMaxNVLSTreeBws = {{0, 0, 0}, {0, 0, 0}, {0, 57.7, 45.5}, {0, 96, 43.8}},
  };
  memcpy(c, &defaults, sizeof defaults);
}
