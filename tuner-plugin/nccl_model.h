/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL 2.28.9's own cost model, re-implemented from shared/reference/nccl-plugin-abi.md section 3:
 * per-communicator bandwidth and latency tables (ncclTopoTuneModel), the per-call time with the tree
 * correction factors and the ring plateau (the cost table NCCL fills before it calls a tuner), the
 * enable rules, the default tuning constants, and the channel count NCCL runs after its choice.
 * What NCCL derives from its topology search (per-algorithm graphs: channels, per-channel bandwidth,
 * link types) is an input here; topo_nccl_system_default fills the graph search's results for
 * H100/H200 (NVLink 4, NVSwitch) and A100 (NVLink 3) nodes.
 *
 * Used by topo-tune ("what NCCL would pick" beside topo's choice), by the GPU comparison, and by
 * tests that replay the cost tables real NCCL filled (tests/data/nccl-2.28.9-*).
 * Thread-safety: every function touches only its arguments; no allocation, no logging.
 */
#ifndef TOPO_TUNER_NCCL_MODEL_H
#define TOPO_TUNER_NCCL_MODEL_H

#include <stdint.h>

#include "nccl/nccl_common.h"
#include "nccl/tuner_v5.h"
#include "status.h"

/* NCCL's path types (src/graph/topo.h): what a graph's typeIntra / typeInter say. */
enum topo_nccl_path {
  TOPO_NCCL_PATH_LOC = 0,
  TOPO_NCCL_PATH_NVL = 1,
  TOPO_NCCL_PATH_NVB = 2,
  TOPO_NCCL_PATH_C2C = 3,
  TOPO_NCCL_PATH_PIX = 4,
  TOPO_NCCL_PATH_PXB = 5,
  TOPO_NCCL_PATH_PXN = 6,
  TOPO_NCCL_PATH_PHB = 7,
  TOPO_NCCL_PATH_SYS = 8,
  TOPO_NCCL_PATH_NET = 9,
};

/* NCCL's tree graph patterns (NCCL_TOPO_PATTERN_*). */
enum topo_nccl_pattern {
  TOPO_NCCL_PATTERN_BALANCED_TREE = 1,
  TOPO_NCCL_PATTERN_SPLIT_TREE = 2,
  TOPO_NCCL_PATTERN_TREE = 3,
  TOPO_NCCL_PATTERN_RING = 4,
  TOPO_NCCL_PATTERN_NVLS = 5,
  TOPO_NCCL_PATTERN_COLLNET_DIRECT = 6,
};

/* One topology graph as NCCL's search leaves it (printed with NCCL_DEBUG_SUBSYS=GRAPH). */
typedef struct topo_nccl_graph {
  int nchannels;        /* graph channels (0 = this algorithm has no graph) */
  double bw_intra;      /* GB/s per channel inside a node */
  double bw_inter;      /* GB/s per channel between nodes */
  int type_intra;       /* topo_nccl_path */
  int type_inter;       /* topo_nccl_path */
  double latency_inter; /* us, extra network latency of this graph (0 normally) */
  int pattern;          /* topo_nccl_pattern */
} topo_nccl_graph;

/* What NCCL knows about the communicator when it builds its model. */
typedef struct topo_nccl_system {
  int compcap_min,
      compcap_max;     /* compute capability x10 (90 = Hopper) of the slowest/fastest GPU */
  int nranks, nnodes;  /* nranks / nnodes = ranks per node (NCCL's ppn) */
  int nchannels;       /* comm->nChannels: collective channels ("N coll channels") */
  int nvls_channels;   /* comm->nvlsChannels (0 when NVLS is unavailable) */
  int nvls_support;    /* NVLS usable (NVSwitch with multicast, NCCL_NVLS_ENABLE) */
  int collnet_support; /* CollNet usable (network plugin with collectives); 0 normally */
  int cpu_amd;         /* CPU vendor: 1 AMD/other (multi-node llMax row 1, 2 us net
                                   overhead), 0 Intel */
  int ll128;           /* -1 NCCL's default rule, 0 off, 1 on (NCCL_PROTO) */
  topo_nccl_graph graph[NCCL_NUM_ALGORITHMS]; /* by algorithm: NVLS_TREE shares NVLS's graph,
                                                 PAT shares TREE's */
} topo_nccl_system;

/* The tables ncclTopoTuneModel builds (comm->latencies / comm->bandwidths), plus thread counts. */
typedef struct topo_nccl_model {
  topo_nccl_system sys;
  float lat_us[NCCL_NUM_FUNCTIONS][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  float bw_gbs[NCCL_NUM_FUNCTIONS][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS]; /* 0 = disabled */
  int max_threads[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  long thread_threshold[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS]; /* bytes per thread */
} topo_nccl_model;

/* What NCCL would run for one call. */
typedef struct topo_nccl_choice {
  int algo, proto; /* NCCL_ALGO_* / NCCL_PROTO_*; -1 when nothing is usable */
  int nchannels;   /* channels NCCL runs (section 3.5) */
  int nthreads;    /* threads per channel */
  float time_us;   /* its model's predicted time */
} topo_nccl_choice;

/* NCCL 2.28.9's default tuning constants (ncclTopoInitTunerConstants, reference 3.4). */
void topo_nccl_constants_default(ncclTunerConstants_v5_t *constants);

/* The system NCCL's topology search finds on a standard node of `gpu` ("H200", "H100": 18 NVLink 4
 * links to NVSwitches; "A100": 12 NVLink 3 links) for nranks over nnodes nodes (ranks_per_node =
 * nranks / nnodes; multi-node over a network of 4 x 400 Gb/s NICs per 8 GPUs), with NVLS available
 * or not. TOPO_ERR_INVALID for an unknown model or inconsistent counts (then H200 with nranks >= 1,
 * nnodes >= 1 is filled). */
topo_status topo_nccl_system_default(const char *gpu, int nranks, int nnodes, int nvls,
                                     topo_nccl_system *out);

/* Build the per-communicator tables from `sys` and `constants` (NULL = NCCL's defaults), as
 * ncclTopoTuneModel does right after the tuner's init. TOPO_ERR_INVALID on bad counts. */
topo_status topo_nccl_model_build(const topo_nccl_system *sys,
                                  const ncclTunerConstants_v5_t *constants, topo_nccl_model *out);

/* Fill `table` (float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], row-major) with the times NCCL puts
 * in the cost table before it calls the tuner for (coll 0..4, nbytes, num_pipe_ops): -1 where NCCL
 * ignores the entry. Returns the number of usable (>= 0) entries. */
int topo_nccl_model_fill(const topo_nccl_model *model, int coll, uint64_t nbytes, int num_pipe_ops,
                         float *table);

/* Predicted time of one (algo, proto) for a call; -1 when NCCL ignores it. */
float topo_nccl_model_time(const topo_nccl_model *model, int coll, uint64_t nbytes,
                           int num_pipe_ops, int algo, int proto);

/* What NCCL picks with no tuner: argmin of the table (ties: lowest algorithm, then protocol), then
 * its channel / thread count. choice->algo = -1 when nothing is usable. */
void topo_nccl_model_pick(const topo_nccl_model *model, int coll, uint64_t nbytes, int num_pipe_ops,
                          topo_nccl_choice *choice);

/* NCCL's channel / thread count for an already chosen (algo, proto) (reference 3.5). */
void topo_nccl_model_channels(const topo_nccl_model *model, int coll, uint64_t nbytes, int algo,
                              int proto, int *nchannels, int *nthreads);

#endif
