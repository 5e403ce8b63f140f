/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sweep planning for topo-calibrate: which sizes, which forced (algorithm, protocol, channels)
 * settings in which order, which collectives each setting applies to (NCCL 2.28's enable rules,
 * or NCCL's own table when its log was readable), how each point is timed (CUDA graph or eager,
 * calls per graph). Pure functions; called by the sweep (gpu_sweep.c).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calibrate.h"
#include "profile.h"

void topo_cal_rules_allowed(int nranks, int nnodes, topo_cal_allowed *out) {
  memset(out, 0, sizeof *out);
  if (nranks < 2) return;
  if (nnodes < 1) nnodes = 1;
  int ppn = nranks / nnodes;
  int ll128 = nnodes == 1; /* NVLink within a node; off over NCCL's socket/IB defaults we test */
  for (int c = 0; c < NCCL_NUM_FUNCTIONS; c++) {
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      if (p == NCCL_PROTO_LL128 && !ll128) continue;
      out->ok[c][NCCL_ALGO_RING][p] = 1;
      if (c == ncclFuncAllReduce) out->ok[c][NCCL_ALGO_TREE][p] = 1;
    }
    if ((c == ncclFuncAllGather || c == ncclFuncReduceScatter) && nnodes > 1 && ppn == 1)
      out->ok[c][NCCL_ALGO_PAT][NCCL_PROTO_SIMPLE] = 1;
  }
}

int topo_cal_plan_sizes(uint64_t min_bytes, uint64_t max_bytes, double step, uint64_t *out,
                        int cap) {
  if (!out || cap <= 0 || min_bytes > max_bytes || !(step > 1.0)) return 0;
  int n = 0;
  double s = (double)(min_bytes ? min_bytes : 1);
  while (n < cap) {
    uint64_t b = (uint64_t)s;
    if (b > max_bytes) break;
    b &= ~(uint64_t)3;
    if (b < 4) b = 4;
    if (n == 0 || out[n - 1] != b) out[n++] = b;
    s *= step;
  }
  /* The largest size is always measured (fits need the top of the range). */
  uint64_t top = max_bytes & ~(uint64_t)3;
  if (top >= 4 && n > 0 && out[n - 1] < top && n < cap && (double)top > (double)out[n - 1] * 1.01)
    out[n++] = top;
  return n;
}

uint64_t topo_cal_coll_bytes(int coll, uint64_t planned, int nranks, size_t *count) {
  if (nranks < 1) nranks = 1;
  uint64_t unit = TOPO_CAL_ELEM_BYTES;
  int gathered = coll == ncclFuncAllGather || coll == ncclFuncReduceScatter;
  if (gathered) unit *= (uint64_t)nranks;
  uint64_t b = planned / unit * unit;
  if (b < unit) b = unit;
  if (count) *count = (size_t)(b / TOPO_CAL_ELEM_BYTES / (gathered ? (uint64_t)nranks : 1));
  return b;
}

static int algo_selected(const topo_cal_options *o, int a) {
  return !o->algos || ((o->algos >> a) & 1u);
}
static int proto_selected(const topo_cal_options *o, int p) {
  return !o->protos || ((o->protos >> p) & 1u);
}

int topo_cal_setting_applies(const topo_cal_setting *s, int coll, const topo_cal_allowed *allowed) {
  if (coll < 0 || coll >= NCCL_NUM_FUNCTIONS) return 0;
  if (s->kind != TOPO_CAL_FORCED) return 1;
  if (s->algo < 0 || s->algo >= NCCL_NUM_ALGORITHMS || s->proto < 0 ||
      s->proto >= NCCL_NUM_PROTOCOLS)
    return 0;
  if (!allowed->ok[coll][s->algo][s->proto]) return 0;
  /* Channel counts are honoured for ring, tree and PAT only (NCCL clamps the others). */
  if (s->nchannels > 0 && s->algo != NCCL_ALGO_RING && s->algo != NCCL_ALGO_TREE &&
      s->algo != NCCL_ALGO_PAT)
    return 0;
  return 1;
}

int topo_cal_plan_settings(const topo_cal_options *o, const topo_cal_allowed *allowed,
                           topo_cal_setting *out, int cap) {
  /* Order: good large-message settings first so that pruning has a reference early. */
  static const int order[][2] = {
      {NCCL_ALGO_RING, NCCL_PROTO_SIMPLE},
      {NCCL_ALGO_RING, NCCL_PROTO_LL128},
      {NCCL_ALGO_RING, NCCL_PROTO_LL},
      {NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE},
      {NCCL_ALGO_TREE, NCCL_PROTO_LL128},
      {NCCL_ALGO_TREE, NCCL_PROTO_LL},
      {NCCL_ALGO_PAT, NCCL_PROTO_SIMPLE},
      {NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE},
      {NCCL_ALGO_NVLS_TREE, NCCL_PROTO_SIMPLE},
      {NCCL_ALGO_COLLNET_DIRECT, NCCL_PROTO_SIMPLE},
      {NCCL_ALGO_COLLNET_CHAIN, NCCL_PROTO_SIMPLE},
  };
  int n = 0;
  for (int ci = 0; ci < o->nchannels; ci++) {
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
      topo_cal_setting s = {TOPO_CAL_FORCED, order[k][0], order[k][1], o->channels[ci], 0};
      if (!algo_selected(o, s.algo) || !proto_selected(o, s.proto)) continue;
      int any = 0;
      for (int c = 0; c < NCCL_NUM_FUNCTIONS; c++)
        if (((o->colls >> c) & 1u) && topo_cal_setting_applies(&s, c, allowed)) any = 1;
      if (!any) continue;
      if (n == cap) return n;
      out[n++] = s;
    }
  }
  return n;
}

void topo_cal_setting_label(const topo_cal_setting *s, char *buf, size_t len) {
  if (s->kind == TOPO_CAL_DEFAULT) snprintf(buf, len, "default");
  else if (s->kind == TOPO_CAL_TUNER) snprintf(buf, len, "tuner");
  else if (s->nchannels > 0)
    snprintf(buf, len, "%s/%s/ch%d", topo_nccl_algo_name(s->algo, TOPO_NCCL_FILE),
             topo_nccl_proto_name(s->proto, TOPO_NCCL_FILE), s->nchannels);
  else
    snprintf(buf, len, "%s/%s", topo_nccl_algo_name(s->algo, TOPO_NCCL_FILE),
             topo_nccl_proto_name(s->proto, TOPO_NCCL_FILE));
}

void topo_cal_setting_force_value(const topo_cal_setting *s, char *buf, size_t len) {
  if (s->nchannels > 0)
    snprintf(buf, len, "%s,%s,%d", topo_nccl_algo_name(s->algo, TOPO_NCCL_FILE),
             topo_nccl_proto_name(s->proto, TOPO_NCCL_FILE), s->nchannels);
  else
    snprintf(buf, len, "%s,%s", topo_nccl_algo_name(s->algo, TOPO_NCCL_FILE),
             topo_nccl_proto_name(s->proto, TOPO_NCCL_FILE));
}

int topo_cal_use_graph(int timing, uint64_t graph_max_bytes, uint64_t bytes) {
  if (timing == TOPO_CAL_TIMING_GRAPH) return 1;
  if (timing == TOPO_CAL_TIMING_EAGER) return 0;
  return bytes <= graph_max_bytes;
}

int topo_cal_graph_calls(uint64_t bytes) {
  /* A deliberately pessimistic estimate (6 us + 40 GB/s) so a replay is >= ~200 us. */
  double est_us = 6.0 + (double)bytes / 40e3;
  int k = (int)ceil(200.0 / est_us);
  if (k < 2) k = 2;
  if (k > 100) k = 100;
  return k;
}

void topo_cal_round_order(int n, int round, int *order) {
  if (n <= 0) return;
  int r = round % n;
  if (r < 0) r += n;
  for (int i = 0; i < n; i++) order[i] = (i + r) % n;
}
