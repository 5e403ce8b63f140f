// SPDX-License-Identifier: Apache-2.0
// v5+ init: the profile's measured latencies and per-channel bandwidth caps written into NCCL's
// tuning constants so that NCCL's own model (ncclTopoTuneModel, run right after init) is
// calibrated too. Every entry written is listed in docs/tuner-model.md ("NCCL's constants").
#include "constants.h"

#include <math.h>
#include <strings.h>

#include "model.h"

/* Write `v` into *dst when it is finite, positive and within [1/4, 4] x NCCL's value (or NCCL's
 * value is 0 and v is below `cap`). Returns 1 when written. */
static int put(double *dst, double v, double cap) {
  if (!isfinite(v) || v <= 0) return 0;
  double old = *dst;
  if (old > 0 ? (v < old / 4 || v > old * 4) : v > cap) return 0;
  *dst = v;
  return 1;
}

int topo_tuner_write_constants(const struct topo_model *m, const char *gpu,
                               ncclTunerConstants_v5_t *c) {
  if (!m || !c) return 0;
  const topo_profile *p = m->prof;
  int n = 0;
  static const int hw_link[NCCL_NUM_HW_LINKS] = {TOPO_LINK_NVLINK, TOPO_LINK_PCI, TOPO_LINK_NET};
  for (int pr = 0; pr < NCCL_NUM_PROTOCOLS; pr++) {
    double plat = p->proto[pr].lat_us;
    if (!(plat >= 0)) continue;
    /* Base latency: one launch; per step: the link's hop latency plus the protocol's. */
    n += put(&c->baseLatencies[NCCL_ALGO_RING][pr], p->launch_us, 50);
    n += put(&c->baseLatencies[NCCL_ALGO_TREE][pr], p->launch_us, 50);
    for (int hw = 0; hw < NCCL_NUM_HW_LINKS; hw++) {
      const topo_profile_link *l = &p->link[hw_link[hw]];
      if (!(l->lat_us > 0) || !(l->bw_gbs > 0)) continue;
      n += put(&c->hwLatencies[hw][NCCL_ALGO_RING][pr], l->lat_us + plat, 50);
      n += put(&c->hwLatencies[hw][NCCL_ALGO_TREE][pr], l->lat_us + plat, 50);
    }
  }
  int row = -1;
  if (gpu && (!strcasecmp(gpu, "H100") || !strcasecmp(gpu, "H200"))) row = NCCL_HOPPER_COMPCAP_IDX;
  if (gpu && !strcasecmp(gpu, "A100")) row = NCCL_AMPERE_COMPCAP_IDX;
  if (row < 0) return n;
  int scale = m->nnodes <= 1   ? NCCL_TUNING_SCALE_1NODE
              : m->nnodes == 2 ? NCCL_TUNING_SCALE_2NODES
                               : NCCL_TUNING_SCALE_4NODES;
  double ll = p->proto[NCCL_PROTO_LL].ch_bw_gbs, ll128 = p->proto[NCCL_PROTO_LL128].ch_bw_gbs;
  double simple = p->proto[NCCL_PROTO_SIMPLE].ch_bw_gbs;
  if (m->channels > 0) n += put(&c->llMaxBws[row][scale], ll * m->channels, 1000);
  n += put(&c->perChMaxRingLL128Bws[row][scale], ll128, 200);
  n += put(&c->perChMaxTreeLL128Bws[row][scale], ll128, 200);
  n += put(&c->perChMaxTreeBws[row][scale], simple, 200);
  return n;
}
