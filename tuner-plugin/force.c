// SPDX-License-Identifier: Apache-2.0
// TOPO_TUNER_FORCE parsing and application (see force.h).
#include "force.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

topo_status topo_force_parse(const char *text, topo_force *out) {
  memset(out, 0, sizeof *out);
  if (!text || !*text) return TOPO_OK;
  char buf[128];
  if (strlen(text) >= sizeof buf) return TOPO_ERR_PARSE;
  snprintf(buf, sizeof buf, "%s", text);
  char *save = NULL;
  char *a = strtok_r(buf, ", \t", &save);
  char *p = a ? strtok_r(NULL, ", \t", &save) : NULL;
  char *c = p ? strtok_r(NULL, ", \t", &save) : NULL;
  if (!a || !p || (c && strtok_r(NULL, ", \t", &save))) return TOPO_ERR_PARSE;
  int algo = topo_nccl_algo_from_name(a), proto = topo_nccl_proto_from_name(p);
  if (algo < 0 || proto < 0) return TOPO_ERR_PARSE;
  long ch = 0;
  if (c) {
    char *end;
    ch = strtol(c, &end, 10);
    if (*end || ch < -1 || ch > 64) return TOPO_ERR_PARSE;
    if (ch < 0) ch = 0;
  }
  out->active = 1;
  out->algo = algo;
  out->proto = proto;
  out->nchannels = (int)ch;
  return TOPO_OK;
}

int topo_force_apply(const topo_force *f, float *cost, int num_algo, int num_proto,
                     int *nchannels) {
  if (!f || !f->active || f->algo >= num_algo || f->proto >= num_proto) return 0;
  float *v = &cost[f->algo * num_proto + f->proto];
  if (!(*v >= 0.0f)) return 0;
  *v = 0.0f;
  int clamped_by_nccl =
      f->algo == NCCL_ALGO_RING || f->algo == NCCL_ALGO_TREE || f->algo == NCCL_ALGO_PAT;
  *nchannels = clamped_by_nccl ? f->nchannels : 0;
  return 1;
}

uint32_t topo_force_v2_allowed(int coll, int collnet_support, int nvls_support, int nnodes) {
#define BIT(a, p) (1u << ((a)*NCCL_NUM_PROTOCOLS + (p)))
  const uint32_t ring = BIT(NCCL_ALGO_RING, NCCL_PROTO_LL) | BIT(NCCL_ALGO_RING, NCCL_PROTO_LL128) |
                        BIT(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE);
  const uint32_t tree = BIT(NCCL_ALGO_TREE, NCCL_PROTO_LL) | BIT(NCCL_ALGO_TREE, NCCL_PROTO_LL128) |
                        BIT(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE);
  uint32_t m = 0;
  switch (coll) {
  case ncclFuncBroadcast:
  case ncclFuncReduce: m = ring; break;
  case ncclFuncAllGather:
  case ncclFuncReduceScatter:
    m = ring;
    if (collnet_support) m |= BIT(NCCL_ALGO_COLLNET_DIRECT, NCCL_PROTO_SIMPLE);
    if (nvls_support && (nnodes <= 1 || collnet_support))
      m |= BIT(NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE);
    break;
  case ncclFuncAllReduce:
    m = ring | tree;
    if (collnet_support)
      m |= BIT(NCCL_ALGO_COLLNET_DIRECT, NCCL_PROTO_SIMPLE) |
           BIT(NCCL_ALGO_COLLNET_CHAIN, NCCL_PROTO_SIMPLE);
    if (nvls_support) m |= BIT(NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE);
    if (nvls_support && nnodes > 1) m |= BIT(NCCL_ALGO_NVLS_TREE, NCCL_PROTO_SIMPLE);
    break;
  default: break;
  }
  return m;
#undef BIT
}
