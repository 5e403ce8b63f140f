// SPDX-License-Identifier: Apache-2.0
// The cost model (see model.h and docs/tuner-model.md). Times in us, bandwidths in GB/s
// (1 GB/s = 1e3 bytes/us). "Wire" bytes are what one GPU sends per direction; link and channel
// bandwidths in the profile are per GPU, per direction, as collectives reach them.
#include "model.h"

#include <math.h>

#include "nccl_vocab.h"

/* Shape constants of the model: what the profile's link/protocol parameters cannot express.
 * Derived from the CUDA-graph sweep on 2 x H200 (tests/data/nccl-2.28.9-2xh200/graph-sweep.txt)
 * and documented in docs/tuner-model.md. */

/* Bandwidth each collective's kernels reach relative to AllReduce's, per protocol (the SM work
 * per wire byte differs: AllGather copies twice, ReduceScatter reduces once); the profile's
 * figures are AllReduce's. Indexed by ncclFunc_t; Broadcast is a copy chain like AllGather,
 * Reduce a reduction chain like ReduceScatter. */
static const double coll_eff[NCCL_NUM_FUNCTIONS][NCCL_NUM_PROTOCOLS] = {
    {0.78, 0.82, 0.81}, {0.81, 0.83, 0.82}, {0.78, 0.82, 0.81}, {0.81, 0.83, 0.82}, {1, 1, 1}};
/* Bytes one channel moves before its chunk pipeline runs at full rate (the gap between the
 * small-message floor and the large-message intercept), per collective and protocol. */
static const double fill_bytes[NCCL_NUM_FUNCTIONS][NCCL_NUM_PROTOCOLS] = {
    {0, 67e3, 135e3}, {0, 110e3, 91e3}, {0, 67e3, 135e3}, {0, 110e3, 91e3}, {0, 83e3, 54e3}};
/* The profile's per-step protocol latency is fitted on 2 ranks, where AllReduce has 2 steps.
 * Half of it is paid once (the chunk pipeline's start and drain), half per step:
 * protocol latency = lat_us x (steps + 2) / 2 - exact for 2 steps, and on 2 ranks it matches
 * AllGather's single step better than lat_us x steps (LL128 11.3 us measured). */
static double proto_steps_lat(double plat, double steps) { return plat * (steps + 2.0) / 2.0; }
/* Tree: extra fan-in synchronisation per call, and bandwidth relative to a ring per protocol. */
static const double tree_extra_lat_us = 1.5;
static const double tree_proto_eff[NCCL_NUM_PROTOCOLS] = {0.92, 0.85, 1.0};
/* NVLink SHARP: the switch reduces and multicasts, so channels are not the limit; the link
 * reaches this share of Simple's rate (8 x H100: ~480 GB/s AllReduce busbw, i.e. ~274 GB/s per
 * GPU of wire against ~330 for Simple over the same link). Channels NCCL runs on sm90. */
static const double nvls_eff = 0.83;
static const int nvls_channels = 16;
/* PAT: bandwidth relative to Simple. */
static const double pat_eff = 0.75;
/* Channels assumed when the profile does not say how many NCCL runs. */
static const int default_channels = 16;

/* Channel-bound and link-bound bandwidth combine as a smooth minimum (a^-4 + b^-4)^(-1/4) for
 * the chunk-pipelined protocols (LL128, Simple: their rate bends before the link); LL, which
 * writes flag-carrying lines without a chunk pipeline, takes the plain minimum. */
static double smooth_min(double a, double b) {
  if (a <= 0 || b <= 0) return 0;
  double a2 = a * a, b2 = b * b;
  return 1.0 / sqrt(sqrt(1.0 / (a2 * a2) + 1.0 / (b2 * b2)));
}

/* ceil(log2(n)) for any int n (31 for n above 2^30). */
static int ilog2_ceil(int n) {
  int l = 0;
  while (l < 31 && (1 << l) < n) l++;
  return l;
}

void topo_model_init(topo_model *m, const topo_profile *prof, int nranks, int nnodes,
                     int ranks_per_domain) {
  m->prof = prof;
  m->nranks = nranks > 0 ? nranks : 1;
  m->nnodes = nnodes > 0 ? nnodes : 1;
  if (m->nnodes > m->nranks) m->nnodes = m->nranks;
  if (ranks_per_domain <= 0 || ranks_per_domain > m->nranks)
    ranks_per_domain = m->nranks / m->nnodes;
  m->ranks_per_domain = ranks_per_domain > 0 ? ranks_per_domain : 1;
  m->channels = prof->max_channels > 0 ? prof->max_channels : 0;
  if (m->channels > 64) m->channels = 64; /* MAXCHANNELS */
  m->model_channels = m->channels ? m->channels : default_channels;
}

double topo_model_latency_count(int algo, int pipe_ops) {
  if (pipe_ops < 1) pipe_ops = 1;
  if (algo == NCCL_ALGO_RING) return pipe_ops;
  return (pipe_ops + 9) / 10;
}

int topo_model_nccl_channels(const topo_model *m, int algo, int proto, double bytes) {
  int nvls = algo == NCCL_ALGO_NVLS || algo == NCCL_ALGO_NVLS_TREE;
  if (!m->channels && !nvls) return 0;
  topo_nccl_channel_inputs in = {.nchannels = m->channels ? m->channels : nvls_channels,
                                 .nvls_channels = nvls_channels,
                                 .nnodes = m->nnodes,
                                 .max_threads = topo_nccl_max_threads(algo, proto, 0),
                                 .threshold = topo_nccl_thread_threshold(algo, proto, m->nranks)};
  int nc = 0, nt = 0;
  uint64_t b = !(bytes > 0) ? 0 : bytes >= 1.8e19 ? UINT64_MAX : (uint64_t)bytes; /* 2^64: no */
  topo_nccl_channels(algo, proto, b, &in, &nc, &nt);
  return nc;
}

/* The link GPUs of one NVLink domain talk over (NVLink, else PCI). */
static const topo_profile_link *intra_link(const topo_model *m) {
  const topo_profile_link *nvl = &m->prof->link[TOPO_LINK_NVLINK];
  return nvl->bw_gbs > 0 ? nvl : &m->prof->link[TOPO_LINK_PCI];
}

/* Bandwidth (GB/s, wire bytes) of `nch` channels of protocol `proto` over a link of `link_bw`. */
static double chan_bw(const topo_model *m, int coll, int proto, int nch, double link_bw) {
  const topo_profile_proto *pp = &m->prof->proto[proto];
  double ch = pp->ch_bw_gbs > 0 ? pp->ch_bw_gbs : 0;
  double link = link_bw * (pp->bw_eff > 0 ? pp->bw_eff : 1.0);
  double bw = ch <= 0                  ? link
              : proto == NCCL_PROTO_LL ? fmin(nch * ch, link)
                                       : smooth_min(nch * ch, link);
  return bw * coll_eff[coll][proto];
}

static double fill_us(const topo_model *m, int coll, int proto, int nch, double wire) {
  const topo_profile_proto *pp = &m->prof->proto[proto];
  if (pp->ch_bw_gbs <= 0 || nch <= 0) return 0;
  double per_channel = wire / nch;
  double f = per_channel < fill_bytes[coll][proto] ? per_channel : fill_bytes[coll][proto];
  return f / (pp->ch_bw_gbs * coll_eff[coll][proto] * 1e3);
}

/* One LL round: every thread of a channel (512) stores one 8-byte flagged line; a hop can never
 * be shorter than a round, whatever the link's latency. */
static double ll_round_us(const topo_model *m) {
  double ch = m->prof->proto[NCCL_PROTO_LL].ch_bw_gbs;
  return ch > 0 ? 512.0 * 8.0 / (ch * 1e3) : 0.0;
}

/* LL moves data in rounds of one flagged line per thread, each round one hop latency long: its
 * hops inside an NVLink domain and its transfer overlap (time = launch + max(hops, transfer));
 * network hops are a delay the stream pays on top. LL128 and
 * Simple pipeline chunks behind a handshake per step: latency and transfer add up. Returns the
 * transfer part that remains beside the `hops_us` already counted as latency. */
static double overlap(int proto, double hops_us, double xfer_us) {
  if (proto != NCCL_PROTO_LL) return xfer_us;
  return xfer_us > hops_us ? xfer_us - hops_us : 0.0;
}

/* The link model alone (no fitted terms). */
static int link_model(const topo_model *m, int coll, int algo, int proto, int nch, double S,
                      int reg_buff, double *lat_us, double *xfer_us) {
  const topo_profile *p = m->prof;
  const topo_profile_link *in = intra_link(m), *net = &p->link[TOPO_LINK_NET];
  const topo_profile_proto *pp = &p->proto[proto];
  double n = m->nranks, N = m->nnodes, r = m->ranks_per_domain;
  int multi = m->nnodes > 1;
  if (multi && net->bw_gbs <= 0) return -1;
  if (!multi && in->bw_gbs <= 0) return -1;
  double launch = p->launch_us;
  double plat = pp->lat_us;
  /* Per-hop latency inside a domain (LL: at least one round). */
  double hop_in = in->lat_us;
  if (proto == NCCL_PROTO_LL && ll_round_us(m) > hop_in) hop_in = ll_round_us(m);

  switch (algo) {
  case NCCL_ALGO_RING: {
    double steps = coll == ncclFuncAllReduce ? 2 * (n - 1) : n - 1;
    double inter = !multi ? 0 : coll == ncclFuncAllReduce ? 2 * (N - 1) : N - 1;
    double wire = coll == ncclFuncAllReduce                                    ? 2 * (n - 1) / n * S
                  : coll == ncclFuncAllGather || coll == ncclFuncReduceScatter ? (n - 1) / n * S
                                                                               : S;
    /* Rings leave a node through every GPU's NIC (one ring per NIC): the network side carries
     * a GPU's wire over r NICs' worth of bandwidth. */
    double link = multi ? (r > 1 ? fmin(in->bw_gbs, net->bw_gbs * r) : net->bw_gbs) : in->bw_gbs;
    *lat_us =
        launch + (steps - inter) * hop_in + inter * net->lat_us + proto_steps_lat(plat, steps);
    *xfer_us = overlap(proto, (steps - inter) * hop_in,
                       wire / (chan_bw(m, coll, proto, nch, link) * 1e3)) +
               fill_us(m, coll, proto, nch, wire);
    return 0;
  }
  case NCCL_ALGO_TREE: {
    if (coll != ncclFuncAllReduce) return -1;
    double hops_in = 2 * (r - 1), hops_net = multi ? 2 * ilog2_ceil(m->nnodes) : 0;
    double wire_in = r <= 1 ? 0 : r == 2 ? S : 2 * S, wire_net = multi ? S : 0;
    double t_in = wire_in > 0 ? wire_in / (chan_bw(m, coll, proto, nch, in->bw_gbs) * 1e3) : 0;
    double t_net =
        wire_net > 0 ? wire_net / (chan_bw(m, coll, proto, nch, net->bw_gbs * r) * 1e3) : 0;
    *lat_us = launch + tree_extra_lat_us + hops_in * hop_in + hops_net * net->lat_us +
              proto_steps_lat(plat, hops_in + hops_net);
    *xfer_us = overlap(proto, hops_in * hop_in, fmax(t_in, t_net) / tree_proto_eff[proto]) +
               fill_us(m, coll, proto, nch, fmax(wire_in, wire_net));
    return 0;
  }
  case NCCL_ALGO_NVLS:
  case NCCL_ALGO_NVLS_TREE: {
    if (proto != NCCL_PROTO_SIMPLE || r < 2) return -1;
    if (coll != ncclFuncAllReduce && (algo == NCCL_ALGO_NVLS_TREE ||
                                      (coll != ncclFuncAllGather && coll != ncclFuncReduceScatter)))
      return -1;
    if (algo == NCCL_ALGO_NVLS_TREE && !multi) return -1;
    double phases = coll == ncclFuncAllReduce ? 2 : 1;
    double wire_in = coll == ncclFuncAllReduce ? S : (n - 1) / n * S;
    double nvls_bw =
        in->bw_gbs * (pp->bw_eff > 0 ? pp->bw_eff : 1.0) * nvls_eff * coll_eff[coll][proto];
    double t_in = wire_in / (nvls_bw * 1e3);
    double lat = launch + phases * r * in->lat_us / 2 + proto_steps_lat(plat, phases);
    double t_net = 0;
    if (multi) {
      double hops = algo == NCCL_ALGO_NVLS_TREE ? 2 * ilog2_ceil(m->nnodes)
                    : coll == ncclFuncAllReduce ? 2 * (N - 1)
                                                : N - 1;
      double wire_net = algo == NCCL_ALGO_NVLS_TREE ? S
                        : coll == ncclFuncAllReduce ? 2 * (N - 1) / N * S
                                                    : (N - 1) / N * S;
      lat += hops * (net->lat_us + plat);
      t_net = wire_net / (chan_bw(m, coll, proto, nvls_channels, net->bw_gbs * r) * 1e3);
    }
    double t = fmax(t_in, t_net);
    if (reg_buff) t *= 0.9; /* zero-copy user buffers: no staging copy */
    *lat_us = lat;
    *xfer_us = t;
    return 0;
  }
  case NCCL_ALGO_PAT: {
    if (proto != NCCL_PROTO_SIMPLE) return -1;
    if (coll != ncclFuncAllGather && coll != ncclFuncReduceScatter) return -1;
    const topo_profile_link *l = multi ? net : in;
    double hops = ilog2_ceil(m->nranks);
    double wire = (n - 1) / n * S;
    *lat_us = launch + hops * l->lat_us + proto_steps_lat(plat, hops);
    *xfer_us = wire / (chan_bw(m, coll, proto, nch, l->bw_gbs) * pat_eff * 1e3) +
               fill_us(m, coll, proto, nch, wire);
    return 0;
  }
  case NCCL_ALGO_COLLNET_DIRECT:
  case NCCL_ALGO_COLLNET_CHAIN: {
    if (proto != NCCL_PROTO_SIMPLE || !multi) return -1;
    if (coll != ncclFuncAllReduce &&
        !(algo == NCCL_ALGO_COLLNET_DIRECT &&
          (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter)))
      return -1;
    double hops_in = algo == NCCL_ALGO_COLLNET_CHAIN ? 2 * (r - 1) : (r > 1 ? 2 : 0);
    double wire = coll == ncclFuncAllReduce ? S : (n - 1) / n * S;
    double link = r > 1 ? fmin(in->bw_gbs, net->bw_gbs * r) : net->bw_gbs;
    *lat_us = launch + hops_in * in->lat_us + 2 * net->lat_us + proto_steps_lat(plat, hops_in + 2);
    double t = wire / (chan_bw(m, coll, proto, nch, link) * 1e3);
    if (reg_buff) t *= 0.9;
    *xfer_us = t;
    return 0;
  }
  }
  return -1;
}

int topo_model_parts(const topo_model *m, int coll, int algo, int proto, int nch, double bytes,
                     int reg_buff, double *lat_us, double *xfer_us) {
  if (coll < 0 || coll >= NCCL_NUM_FUNCTIONS || algo < 0 || algo >= NCCL_NUM_ALGORITHMS ||
      proto < 0 || proto >= NCCL_NUM_PROTOCOLS || bytes < 0)
    return -1;
  if (m->nranks <= 1) {
    if (algo != NCCL_ALGO_RING || proto != NCCL_PROTO_SIMPLE) return -1;
    *lat_us = m->prof->launch_us;
    *xfer_us = 0;
    return 0;
  }
  int own = topo_model_nccl_channels(m, algo, proto, bytes);
  if (own <= 0) own = m->model_channels;
  int used = nch > 0 ? nch : own;
  if (link_model(m, coll, algo, proto, used, bytes, reg_buff, lat_us, xfer_us)) return -1;

  /* Fitted terms take precedence inside their measured range (the piece covering `bytes`). A
   * term for NCCL's own channel count (nchannels 0) also serves other counts, scaled by the link
   * model's ratio (topo-tune's what-if; the decision table reduces channels only on terms
   * measured at that count). */
  uint64_t at = bytes < 1.8e19 ? (uint64_t)bytes : UINT64_MAX;
  const topo_profile_term *t =
      topo_profile_find_term_at(m->prof, coll, algo, proto, nch > 0 ? nch : 0, at);
  int scaled = 0;
  if (!t && nch > 0 && nch != own) {
    t = topo_profile_find_term_at(m->prof, coll, algo, proto, 0, at);
    scaled = 1;
  }
  if (t && t->bw_gbs > 0 && t->lat_us >= 0) {
    double xfer = bytes / (t->bw_gbs * 1e3);
    if (scaled) {
      double l0, x0;
      if (link_model(m, coll, algo, proto, own, bytes, reg_buff, &l0, &x0) == 0 && x0 > 0)
        xfer *= *xfer_us / x0;
    }
    *lat_us = t->lat_us;
    *xfer_us = xfer;
  }
  return 0;
}

double topo_model_time(const topo_model *m, int coll, int algo, int proto, int nch, double bytes,
                       int pipe_ops, int reg_buff) {
  double lat, xfer;
  if (topo_model_parts(m, coll, algo, proto, nch, bytes, reg_buff, &lat, &xfer)) return -1;
  return lat * topo_model_latency_count(algo, pipe_ops) + xfer;
}
