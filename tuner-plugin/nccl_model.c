// SPDX-License-Identifier: Apache-2.0
// NCCL 2.28.9's cost model (see nccl_model.h), written from shared/reference/nccl-plugin-abi.md
// section 3 and checked against the tables real NCCL filled on 2 x H200 (tests/data). Arithmetic is
// done in float where NCCL's is, so the cost table matches NCCL's to the printed digit.
// Called by topo-tune, the GPU comparison and the tests; pure functions, no allocation.
#include "nccl_model.h"

#include <math.h>
#include <string.h>
#include <strings.h>

#include "nccl_vocab.h"

#define MODEL_PCI_BW           12.0 /* GB/s, PCIe Gen3 x16 as NCCL's topology assumes */
#define MODEL_WORK_BATCH_COLLS 10   /* collectives per device work batch: 1024 B / 96 B */
#define MODEL_MAX_NVLS_ARITY   32
#define MODEL_MAX_DIRECT_ARITY 7
#define MODEL_MAX_CHANNELS     64

/* Reference 3.4: NCCL 2.28.9's defaults (LL, LL128, Simple per algorithm; rows by compute
 * capability Volta, Ampere, Hopper, Blackwell; columns 1 node, 2 nodes, 4+ nodes). */
void topo_nccl_constants_default(ncclTunerConstants_v5_t *c) {
  memset(c, 0, sizeof *c);
  static const double base[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS] = {
      {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0},      {0, 0, 0},
      {0, 0, 0},        {0, 0, 0},        {8.0, 8.0, 8.0}};
  static const double hw[NCCL_NUM_HW_LINKS][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS] = {
      /* NVLink */ {{0.6, 1.25, 4.0},
                    {0.6, 1.9, 3.4},
                    {0, 0, 3.7},
                    {0, 0, 2.8},
                    {0, 0, 25},
                    {0, 0, 25},
                    {0, 0, 4.0}},
      /* PCI */
      {{1.0, 1.9, 4.0},
       {1.0, 2.5, 5.7},
       {0, 0, 3.7},
       {0, 0, 2.8},
       {0, 0, 0},
       {0, 0, 0},
       {0, 0, 4.0}},
      /* NET */
      {{5.0, 8.5, 14},
       {2.7, 4.0, 14.0},
       {0, 0, 31},
       {0, 0, 30},
       {0, 0, 18},
       {0, 0, 20.9},
       {0, 0, 14}}};
  static const double ll_max[4][3] = {
      {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
  static const double ring_ll128[4][3] = {
      {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {73.4, 34.6, 73.4}};
  static const double tree_ll128[4][3] = {
      {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
  static const double tree[4][3] = {
      {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
  static const double nvls_tree[4][3] = {
      {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.8}};
  memcpy(c->baseLatencies, base, sizeof base);
  memcpy(c->hwLatencies, hw, sizeof hw);
  memcpy(c->llMaxBws, ll_max, sizeof ll_max);
  memcpy(c->perChMaxRingLL128Bws, ring_ll128, sizeof ring_ll128);
  memcpy(c->perChMaxTreeLL128Bws, tree_ll128, sizeof tree_ll128);
  memcpy(c->perChMaxTreeBws, tree, sizeof tree);
  memcpy(c->perChMaxNVLSTreeBws, nvls_tree, sizeof nvls_tree);
}

/* ---------------------------------------------------------------------------------------------
 * What NCCL's topology search finds on standard nodes (reference 3.4 "Topology side"; the 2-GPU
 * single-node figures are the ones the recorded 2 x H200 tables imply, see docs/profile-format.md).
 */

topo_status topo_nccl_system_default(const char *gpu, int nranks, int nnodes, int nvls,
                                     topo_nccl_system *out) {
  topo_status st = TOPO_OK;
  int hopper = 1;
  if (gpu && strcasecmp(gpu, "A100") == 0) hopper = 0;
  else if (gpu && strcasecmp(gpu, "H100") != 0 && strcasecmp(gpu, "H200") != 0)
    st = TOPO_ERR_INVALID;
  if (nranks < 1 || nnodes < 1 || nnodes > nranks || nranks % nnodes != 0) {
    st = TOPO_ERR_INVALID;
    if (nranks < 1) nranks = 1;
    if (nnodes < 1 || nnodes > nranks || nranks % nnodes != 0) nnodes = 1;
  }
  int ppn = nranks / nnodes;
  memset(out, 0, sizeof *out);
  out->compcap_min = out->compcap_max = hopper ? 90 : 80;
  out->nranks = nranks;
  out->nnodes = nnodes;
  out->ll128 = -1;

  topo_nccl_graph ring = {.type_intra = TOPO_NCCL_PATH_NVL,
                          .type_inter = TOPO_NCCL_PATH_PIX,
                          .pattern = TOPO_NCCL_PATTERN_RING};
  if (ppn == 1) ring.type_intra = TOPO_NCCL_PATH_LOC;
  if (nnodes == 1) {
    /* Per-GPU NVLink: 18 x 20.6 GB/s (Hopper), 12 x 20 (Ampere). The ring search lands on 6
     * channels at 60 (40) GB/s, duplicated into 12 channels at 30 (20) GB/s. */
    ring.nchannels = 12;
    ring.bw_intra = ring.bw_inter = hopper ? 30.0 : 20.0;
  } else {
    /* One 400 Gb/s (Hopper) or 200 Gb/s (Ampere) NIC per GPU under the GPU's PCIe switch. */
    ring.nchannels = 8;
    ring.bw_intra = ring.bw_inter = hopper ? 48.0 : 24.0;
  }
  topo_nccl_graph tree = ring;
  tree.pattern = TOPO_NCCL_PATTERN_BALANCED_TREE;
  /* Two GPUs: the balanced tree alternates the root per channel, so each NVLink direction carries
   * half the channels and the search reaches twice the ring's per-channel speed. */
  if (nnodes == 1 && ppn == 2) tree.bw_intra = tree.bw_inter = hopper ? 60.0 : 40.0;
  out->graph[NCCL_ALGO_RING] = ring;
  out->graph[NCCL_ALGO_TREE] = tree;
  out->graph[NCCL_ALGO_PAT] = tree;
  if (nvls && hopper && ppn >= 2) {
    /* NVLS: one channel per local GPU up to 16, each at the NVLink capacity shared by them. */
    topo_nccl_graph g = ring;
    g.pattern = TOPO_NCCL_PATTERN_NVLS;
    g.nchannels = ppn < 16 ? ppn : 16;
    g.bw_intra = g.bw_inter = 370.8 / g.nchannels >= 60 ? 60 : 370.8 / g.nchannels >= 50 ? 50 : 40;
    out->graph[NCCL_ALGO_NVLS] = g;
    out->graph[NCCL_ALGO_NVLS_TREE] = g;
    out->nvls_support = 1;
    out->nvls_channels = 16;
  }
  int nch = 2 * ring.nchannels; /* NCCL duplicates the search's channels once more at connect */
  out->nchannels = nch > MODEL_MAX_CHANNELS ? MODEL_MAX_CHANNELS : nch;
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Per-communicator tables (reference 3.2, 3.3)
 */

static int log2_floor(uint64_t n) {
  int r = -1;
  while (n) {
    n >>= 1;
    r++;
  }
  return r;
}

static float minf(float a, float b) { return a < b ? a : b; }

static int compcap_row(int cc) { return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }

static int pat_enabled(const topo_nccl_system *s) {
  return s->compcap_min >= 60 && s->nnodes == s->nranks;
}

static int ll128_enabled(const topo_nccl_system *s, const topo_nccl_graph *g) {
  if (s->ll128 >= 0) return s->ll128;
  int on = s->compcap_min >= 90 ? g->type_inter <= TOPO_NCCL_PATH_PXN
                                : g->type_inter <= TOPO_NCCL_PATH_PXB;
  on &= g->type_intra <= TOPO_NCCL_PATH_NVB;
  on &= s->compcap_min == s->compcap_max;
  on &= s->compcap_min >= 70;
  return on;
}

/* Whether (coll, algo, proto) gets a bandwidth at all (the loop skips in ncclTopoTuneModel). */
static int modelled(const topo_nccl_system *s, int coll, int a, int p) {
  if ((coll == ncclFuncBroadcast || coll == ncclFuncReduce) && a != NCCL_ALGO_RING) return 0;
  if ((coll == ncclFuncAllGather || coll == ncclFuncReduceScatter) && a != NCCL_ALGO_PAT &&
      a != NCCL_ALGO_RING && a != NCCL_ALGO_NVLS && a != NCCL_ALGO_COLLNET_DIRECT)
    return 0;
  if (coll == ncclFuncAllReduce && a == NCCL_ALGO_PAT) return 0;
  if ((a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE) && p != NCCL_PROTO_SIMPLE) return 0;
  if (a == NCCL_ALGO_PAT && (p != NCCL_PROTO_SIMPLE || !pat_enabled(s))) return 0;
  if ((a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE) && s->graph[a].nchannels < 2) return 0;
  return 1;
}

topo_status topo_nccl_model_build(const topo_nccl_system *sys,
                                  const ncclTunerConstants_v5_t *constants, topo_nccl_model *out) {
  if (!sys || !out || sys->nranks < 1 || sys->nnodes < 1 || sys->nnodes > sys->nranks)
    return TOPO_ERR_INVALID;
  ncclTunerConstants_v5_t defaults;
  if (!constants) {
    topo_nccl_constants_default(&defaults);
    constants = &defaults;
  }
  memset(out, 0, sizeof *out);
  out->sys = *sys;
  const topo_nccl_system *s = &out->sys;
  const topo_nccl_graph *g = s->graph;
  int nranks = s->nranks, nnodes = s->nnodes;

  /* Threads (reference 3.5). */
  int ring_pci_limited = g[NCCL_ALGO_RING].bw_intra * g[NCCL_ALGO_RING].nchannels <= MODEL_PCI_BW;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      out->max_threads[a][p] = topo_nccl_max_threads(a, p, ring_pci_limited);
      out->thread_threshold[a][p] = topo_nccl_thread_threshold(a, p, nranks);
    }
  if (nranks <= 1) return TOPO_OK;

  int cc = compcap_row(s->compcap_min);
  int scale = nnodes <= 2 ? nnodes - 1 : 2;
  int ll_row = nnodes == 1 ? cc : s->cpu_amd ? 1 : 0; /* multi-node: the CPU vendor row */
  double ll_max = constants->llMaxBws[ll_row][scale];
  double tree_max = constants->perChMaxTreeBws[cc][scale];
  double ring_ll128_max = constants->perChMaxRingLL128Bws[cc][scale];
  double tree_ll128_max = constants->perChMaxTreeLL128Bws[cc][scale];
  double nvls_tree_max = constants->perChMaxNVLSTreeBws[cc][scale];
  static const float nvls_eff[4] = {0.0f, 0.0f, 0.85f, 0.74f};
  float ppn = (float)nranks / nnodes;
  int ippn = nranks / nnodes;
  int intra_hw[NCCL_NUM_ALGORITHMS], hw[NCCL_NUM_ALGORITHMS];
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
    intra_hw[a] = g[a].type_intra == TOPO_NCCL_PATH_NVL ? NCCL_HW_NVLINK : NCCL_HW_PCI;
    hw[a] = nnodes == 1 ? intra_hw[a] : NCCL_HW_NET;
  }
  float net_overhead = nnodes > 1 ? (s->cpu_amd ? 2.0f : 1.0f) : 0.0f;

  for (int coll = 0; coll < NCCL_NUM_FUNCTIONS; coll++) {
    int nsteps = coll == ncclFuncAllReduce                                    ? 2 * (nranks - 1)
                 : coll == ncclFuncAllGather || coll == ncclFuncReduceScatter ? nranks - 1
                                                                              : nranks;
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
        if (!modelled(s, coll, a, p)) continue;
        int collnet = a == NCCL_ALGO_COLLNET_DIRECT || a == NCCL_ALGO_COLLNET_CHAIN;
        float bw = (float)(nnodes <= 2 || collnet ? g[a].bw_intra : g[a].bw_inter);
        if (a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE) {
          float intra = (float)g[a].bw_intra * nvls_eff[cc] * (g[a].nchannels - 1) / g[a].nchannels;
          intra *= coll == ncclFuncAllReduce ? 2.0f : (ppn - 1) / ppn;
          float inter = (float)g[a].bw_inter * ((nnodes <= 2 && a == NCCL_ALGO_NVLS_TREE) ? 2 : 1);
          bw = minf(intra, inter);
          if (a == NCCL_ALGO_NVLS_TREE) bw = minf(bw, (float)nvls_tree_max);
        }
        float bus = g[a].nchannels * bw;
        if (a == NCCL_ALGO_RING && p == NCCL_PROTO_LL) bus = (float)fmin(ll_max, bus * 0.5);
        if (a == NCCL_ALGO_RING && p == NCCL_PROTO_LL128)
          bus = (float)fmin(bus * 0.92, g[a].nchannels * ring_ll128_max);
        if (a == NCCL_ALGO_TREE && coll == ncclFuncAllReduce)
          bus = (float)fmin(bus * 0.92, g[a].nchannels * tree_max);
        if (a == NCCL_ALGO_TREE && p == NCCL_PROTO_LL) bus = (float)fmin(bus * 1.0 / 3.8, ll_max);
        if (a == NCCL_ALGO_TREE && p == NCCL_PROTO_LL128)
          bus = (float)fmin(bus * (nnodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                            g[a].nchannels * tree_ll128_max);
        if (a == NCCL_ALGO_TREE && g[NCCL_ALGO_TREE].pattern == TOPO_NCCL_PATTERN_TREE)
          bus *= 0.85f;
        if (a == NCCL_ALGO_PAT) bus *= 0.75f;
        if (collnet && p != NCCL_PROTO_SIMPLE) bus = 0;
        if (a == NCCL_ALGO_COLLNET_DIRECT && p == NCCL_PROTO_SIMPLE) {
          if (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter) {
            bus = ppn * minf((float)g[a].bw_intra, (float)g[a].bw_inter * 0.9f);
          } else {
            float factor = ppn / (1.0f * (g[a].nchannels > 0 ? g[a].nchannels : 1));
            factor -= (factor - 1) / 2;
            bus /= factor;
            if (s->compcap_min >= 90) bus *= 0.85f;
          }
        }
        if ((a == NCCL_ALGO_NVLS || a == NCCL_ALGO_COLLNET_DIRECT) && p == NCCL_PROTO_SIMPLE &&
            (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter) && nnodes > 1)
          bus = 0; /* needs collnet with one head per local rank: not modelled, as collnet is off */
        if (!(a != NCCL_ALGO_RING &&
              (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter))) {
          float ratio = (a == NCCL_ALGO_RING || a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE)
                            ? (float)(1.0 * nranks / nsteps)
                            : 0.5f;
          bus *= ratio;
        }
        out->bw_gbs[coll][a][p] = bus;

        float lat = (float)constants->baseLatencies[a][p];
        float intra_lat = (float)constants->hwLatencies[intra_hw[a]][a][p];
        float inter_lat =
            (float)constants->hwLatencies[NCCL_HW_NET][ippn == 1 ? NCCL_ALGO_TREE : a][p];
        inter_lat += (float)g[a].latency_inter;
        if (p == NCCL_PROTO_SIMPLE) inter_lat += (float)g[a].latency_inter;
        if (a == NCCL_ALGO_RING) {
          float hop = (float)constants->hwLatencies[hw[a]][a][p];
          if (coll == ncclFuncReduce || coll == ncclFuncBroadcast) {
            /* NCCL's search keeps the same channels for both directions on these nodes. */
            lat += hop;
          } else {
            float over = p == NCCL_PROTO_SIMPLE ? 3 * net_overhead : net_overhead;
            if (over > intra_lat) intra_lat = over;
            int ninter = nnodes == 1                 ? 0
                         : coll == ncclFuncAllReduce ? 2 * (nnodes - 1)
                                                     : nnodes - 1;
            lat += (nsteps - ninter) * intra_lat + ninter * inter_lat;
          }
        } else if (a == NCCL_ALGO_TREE) {
          if (coll == ncclFuncAllReduce)
            lat += 2 * ((ippn - 1) * intra_lat + log2_floor((uint64_t)nnodes) * inter_lat);
        } else if (a == NCCL_ALGO_COLLNET_DIRECT) {
          lat += 2 * ((ippn - 1 < 1 ? ippn - 1 : 1) * intra_lat + (ippn - 1) * 0.4f) + inter_lat;
        } else if (a == NCCL_ALGO_COLLNET_CHAIN) {
          lat += 2 * (ippn - 1) * intra_lat + inter_lat;
        } else if (a == NCCL_ALGO_NVLS) {
          lat = intra_lat + (nnodes > 1 ? inter_lat : 0);
        } else if (a == NCCL_ALGO_NVLS_TREE) {
          lat += intra_lat + 2 * log2_floor((uint64_t)nnodes) * inter_lat;
        } else if (a == NCCL_ALGO_PAT) {
          if (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter)
            lat += log2_floor((uint64_t)nnodes) * (inter_lat / 3.5f) + nranks * 2.8f;
        }
        out->lat_us[coll][a][p] = lat;
      }
    }
  }

  /* Enable rules (reference 3.2 item 5). */
  for (int c = 0; c < NCCL_NUM_FUNCTIONS; c++) {
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
      int off = 0;
      if (nnodes == 1 && a == NCCL_ALGO_NVLS_TREE) off = 1;
      if (!s->collnet_support && (a == NCCL_ALGO_COLLNET_DIRECT || a == NCCL_ALGO_COLLNET_CHAIN ||
                                  (a == NCCL_ALGO_NVLS && nnodes > 1)))
        off = 1;
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
        if (off || (p == NCCL_PROTO_LL128 && !ll128_enabled(s, &g[a]))) out->bw_gbs[c][a][p] = 0;
      }
    }
  }
  return TOPO_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Per call (reference 3.1) and NCCL's choice (2.4, 3.5)
 */

/* NCCL 2.28.9's tree correction factors, powers of two from 64 B to 256 MiB (LL, LL128, Simple). */
static const float tree_correction[NCCL_NUM_PROTOCOLS][23] = {
    {1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .7f, .7f,  .7f,  .7f,  .6f, .5f,
     .4f,  .4f,  .5f,  .6f,  .7f, .8f, .9f, 1.0f, 1.0f, 1.0f, 1.0f},
    {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .8f, .8f, .7f,  .6f, .6f,
     .6f,  .6f,  .6f,  .6f,  .8f,  .9f, .9f, .9f, .9f, 1.0f, 1.0f},
    {.9f, .9f, .9f, .9f, .9f, .9f, .9f, .8f, .7f, .6f, .6f, .5f,
     .5f, .5f, .5f, .6f, .7f, .8f, .7f, .7f, .8f, .9f, .9f}};

/* Entries NCCL never computes for this communicator (updateCollCostTable's skips). */
static int offered(const topo_nccl_model *m, int coll, int a) {
  const topo_nccl_system *s = &m->sys;
  if ((a == NCCL_ALGO_COLLNET_DIRECT || a == NCCL_ALGO_COLLNET_CHAIN) && !s->collnet_support)
    return 0;
  int local = s->nranks / s->nnodes;
  if ((a == NCCL_ALGO_COLLNET_DIRECT || a == NCCL_ALGO_COLLNET_CHAIN) &&
      local > MODEL_MAX_DIRECT_ARITY + 1)
    return 0;
  if ((a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE) &&
      (!s->nvls_support || (coll != ncclFuncAllReduce && local > MODEL_MAX_NVLS_ARITY)))
    return 0;
  if (a == NCCL_ALGO_NVLS && !s->collnet_support && s->nnodes > 1) return 0;
  return 1;
}

float topo_nccl_model_time(const topo_nccl_model *m, int coll, uint64_t nbytes, int num_pipe_ops,
                           int algo, int proto) {
  if (!m || coll < 0 || coll >= NCCL_NUM_FUNCTIONS || algo < 0 || algo >= NCCL_NUM_ALGORITHMS ||
      proto < 0 || proto >= NCCL_NUM_PROTOCOLS)
    return -1.0f;
  if (m->sys.nranks <= 1)
    return algo == NCCL_ALGO_RING && proto == NCCL_PROTO_SIMPLE ? 0.0f : -1.0f;
  if (!offered(m, coll, algo)) return -1.0f;
  float bw = m->bw_gbs[coll][algo][proto];
  float lat = m->lat_us[coll][algo][proto];
  if (bw == 0) return -1.0f;
  int log_size = log2_floor(nbytes >> 6);
  if (algo == NCCL_ALGO_TREE && coll == ncclFuncAllReduce && log_size >= 0 && log_size < 23)
    bw *= tree_correction[proto][log_size];
  if (algo == NCCL_ALGO_RING && proto == NCCL_PROTO_SIMPLE && m->sys.nnodes > 1 &&
      coll == ncclFuncAllReduce && m->sys.nchannels > 0 &&
      nbytes / ((uint64_t)m->sys.nchannels * (uint64_t)m->sys.nranks) >= 64)
    lat *= m->sys.compcap_min < 80 ? 1.9f : 1.4f; /* ring plateau */
  if (num_pipe_ops < 1) num_pipe_ops = 1;
  int lat_count = algo == NCCL_ALGO_RING
                      ? num_pipe_ops
                      : (num_pipe_ops + MODEL_WORK_BATCH_COLLS - 1) / MODEL_WORK_BATCH_COLLS;
  return lat * (float)lat_count + (float)nbytes / (1000.0f * bw);
}

int topo_nccl_model_fill(const topo_nccl_model *m, int coll, uint64_t nbytes, int num_pipe_ops,
                         float *table) {
  int usable = 0;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      float t = topo_nccl_model_time(m, coll, nbytes, num_pipe_ops, a, p);
      table[a * NCCL_NUM_PROTOCOLS + p] = t;
      if (t >= 0) usable++;
    }
  }
  return usable;
}

void topo_nccl_model_channels(const topo_nccl_model *m, int coll, uint64_t nbytes, int algo,
                              int proto, int *nchannels, int *nthreads) {
  (void)coll;
  topo_nccl_channel_inputs in = {.nchannels = m->sys.nchannels,
                                 .nvls_channels = m->sys.nvls_channels,
                                 .nnodes = m->sys.nnodes,
                                 .max_threads = m->max_threads[algo][proto],
                                 .threshold = m->thread_threshold[algo][proto]};
  topo_nccl_channels(algo, proto, nbytes, &in, nchannels, nthreads);
}

void topo_nccl_model_pick(const topo_nccl_model *m, int coll, uint64_t nbytes, int num_pipe_ops,
                          topo_nccl_choice *choice) {
  float table[NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS];
  choice->algo = choice->proto = -1;
  choice->nchannels = choice->nthreads = 0;
  choice->time_us = -1.0f;
  if (!m) return;
  topo_nccl_model_fill(m, coll, nbytes, num_pipe_ops, table);
  float best = 3600000000.0f;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      float t = table[a * NCCL_NUM_PROTOCOLS + p];
      if (t >= 0.0f && t < best) {
        best = t;
        choice->algo = a;
        choice->proto = p;
      }
    }
  }
  if (choice->algo < 0) return;
  choice->time_us = best;
  topo_nccl_model_channels(m, coll, nbytes, choice->algo, choice->proto, &choice->nchannels,
                           &choice->nthreads);
}
