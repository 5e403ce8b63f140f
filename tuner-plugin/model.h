/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cost model: predicted time (us) of one collective for a given (algorithm, protocol,
 * channel count) from a tuner profile's link and protocol parameters, nRanks, nNodes and the
 * ranks per NVLink domain. Fitted per-(collective, algorithm, protocol[, channels]) terms of the
 * profile take precedence inside their measured byte range. The formulas are documented in
 * docs/tuner-model.md. Called at init by table.c and by topo-tune, never on the hot path.
 * Thread-safety: pure functions of their arguments; a topo_model is read-only after init.
 */
#ifndef TOPO_TUNER_MODEL_H
#define TOPO_TUNER_MODEL_H

#include "profile.h"

typedef struct topo_model {
  const topo_profile *prof; /* borrowed; must outlive the model */
  int nranks, nnodes;
  int ranks_per_domain; /* ranks sharing one NVLink domain (v5+ nvlDomainInfo, else nranks/nnodes) */
  int channels;         /* channels NCCL runs for ring/tree (profile max_channels, else 0) */
  int model_channels;   /* channels assumed when `channels` is unknown */
} topo_model;

/* Fill `m` for a communicator. ranks_per_domain <= 0 means nranks / nnodes. */
void topo_model_init(topo_model *m, const topo_profile *prof, int nranks, int nnodes,
                     int ranks_per_domain);

/* Predicted time split into its latency part (multiplied by the pipelined-op count at call time)
 * and its transfer part, for `bytes` as NCCL passes them (AllGather/ReduceScatter: the gathered
 * buffer). nch = 0 means the channel count NCCL itself would use at that size. Returns 0 with
 * both parts >= 0, or -1 when the model has no prediction for this combination. */
int topo_model_parts(const topo_model *m, int coll, int algo, int proto, int nch, double bytes,
                     int reg_buff, double *lat_us, double *xfer_us);

/* Full prediction: lat x latency count(numPipeOps) + transfer; -1 when none. */
double topo_model_time(const topo_model *m, int coll, int algo, int proto, int nch, double bytes,
                       int pipe_ops, int reg_buff);

/* How NCCL 2.28 scales latency with numPipeOps for this algorithm (ring: every op; others: one
 * latency per batch of ~10 ops). */
double topo_model_latency_count(int algo, int pipe_ops);

/* The channel count NCCL itself would run for (algo, proto) at `bytes` (topo_nccl_channels on
 * the profile's channel count; NVLS: its 16 channels); 0 when the channel count is unknown. */
int topo_model_nccl_channels(const topo_model *m, int algo, int proto, double bytes);

#endif
