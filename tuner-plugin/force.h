/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TOPO_TUNER_FORCE=algorithm,protocol[,channels]: every collective takes that choice where NCCL
 * allows it (its cost entry arrived >= 0), else NCCL's own choice stands (table untouched).
 * For calibration runs and experiments. Parsed once at init; applied per call in O(1).
 */
#ifndef TOPO_TUNER_FORCE_H
#define TOPO_TUNER_FORCE_H

#include "status.h"

typedef struct topo_force {
  int active;
  int algo, proto; /* NCCL_ALGO_* / NCCL_PROTO_* */
  int nchannels;   /* 0 = NCCL's own */
} topo_force;

/* Parse "ring,ll128" / "tree,simple,8" (names as in topo_algo_from_name). Empty or NULL text:
 * inactive, TOPO_OK. Malformed: inactive, TOPO_ERR_PARSE (caller warns once). */
topo_status topo_force_parse(const char *text, topo_force *out);

/* Apply to NCCL's cost table: 0.0 into the forced entry when it arrived >= 0 and return 1 with
 * *nchannels set (channels only for ring/tree/PAT, which NCCL clamps to its own count);
 * otherwise touch nothing and return 0. */
int topo_force_apply(const topo_force *f, float *cost, int num_algo, int num_proto, int *nchannels);

#endif
