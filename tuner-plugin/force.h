/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TOPO_TUNER_FORCE=algorithm,protocol[,channels]: every collective takes that choice where NCCL
 * allows it (its cost entry arrived >= 0), else NCCL's own choice stands (table untouched).
 * On ABI v2, which has no cost table, "allows" is topo_force_v2_allowed. For calibration runs and
 * experiments. Parsed once at init; applied per call in O(1).
 */
#ifndef TOPO_TUNER_FORCE_H
#define TOPO_TUNER_FORCE_H

#include <stdint.h>

#include "status.h"

typedef struct topo_force {
  int active;
  int algo, proto; /* NCCL_ALGO_* / NCCL_PROTO_* */
  int nchannels;   /* 0 = NCCL's own */
} topo_force;

/* Parse "ring,ll128" / "tree,simple,8" (names as in topo_nccl_algo_from_name). Empty or NULL text:
 * inactive, TOPO_OK. Malformed: inactive, TOPO_ERR_PARSE (caller warns once). */
topo_status topo_force_parse(const char *text, topo_force *out);

/* Apply to NCCL's cost table: 0.0 into the forced entry when it arrived >= 0 and return 1 with
 * *nchannels set (channels only for ring/tree/PAT, which NCCL clamps to its own count);
 * otherwise touch nothing and return 0. */
int topo_force_apply(const topo_force *f, float *cost, int num_algo, int num_proto, int *nchannels);

/* What NCCL 2.21 (tuner ABI v2, no cost table) can run, as a mask over
 * bit algo * NCCL_NUM_PROTOCOLS + proto, from what it passes (collNetSupport, nvlsSupport) and
 * its per-collective support: Broadcast / Reduce: Ring; AllGather / ReduceScatter: Ring, NVLS
 * (nvlsSupport; on several nodes also collNetSupport), CollNetDirect (collNetSupport);
 * AllReduce: Tree, Ring, CollNetDirect / CollNetChain (collNetSupport), NVLS (nvlsSupport),
 * NVLS_TREE (nvlsSupport, several nodes). CollNet and NVLS run Simple only; no PAT before 2.23. */
uint32_t topo_force_v2_allowed(int coll, int collnet_support, int nvls_support, int nnodes);

#endif
