/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tuner core behind every exported ncclTunerPlugin_vN (tuner_abi.c): one context per
 * communicator pointing at a shared, immutable "setup" (profile, model, decision table, rules,
 * force) that communicators of the same shape share. Setups are cached per process, keyed by
 * (profile path + mtime + size, rules path + mtime + size, force, GPU model, nRanks, nNodes,
 * ranks per NVLink domain), reference-counted and freed on the last finalize.
 *
 * Never hurts the job: init reports failure only through a NULL context (the adapters still
 * answer ncclSuccess); every other entry point tolerates a NULL context by leaving NCCL's
 * table alone. Thread-safety: init/finalize may run concurrently on any threads (one mutex
 * around the cache); get runs lock-free and allocation-free on any thread (a forced choice or a
 * rule that NCCL does not allow is warned about once, the first time).
 */
#ifndef TOPO_TUNER_CORE_H
#define TOPO_TUNER_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/tuner.h"
#include "status.h"

typedef struct topo_tuner_ctx topo_tuner_ctx;

typedef struct topo_tuner_args {
  int abi_version;  /* 2..7: which adapter called */
  uint64_t comm_id; /* v5+: commHash (logs only) */
  size_t nranks, nnodes;
  int ranks_per_domain;               /* v5+: max ranks per NVLink domain; 0 = nranks / nnodes */
  ncclDebugLogger_t logger;           /* may be NULL */
  ncclTunerConstants_v5_t *constants; /* v5+: NCCL's constants to calibrate; NULL otherwise */
} topo_tuner_args;

/* Create a context. TOPO_OK with *out set, or an error with *out = NULL after one warning
 * (the caller then reports success to NCCL and every later call leaves NCCL's choice alone). */
topo_status topo_tuner_init(const topo_tuner_args *args, topo_tuner_ctx **out);

/* v3+ getCollInfo: edit NCCL's cost table float[num_algo][num_proto] in place and set
 * *nchannels (0 = NCCL's). Order: force, then rules, then the model. NULL ctx: table untouched,
 * *nchannels left as NCCL passed it. */
void topo_tuner_get(const topo_tuner_ctx *ctx, int coll, size_t nbytes, int num_pipe_ops,
                    float *cost, int num_algo, int num_proto, int reg_buff, int *nchannels);

/* v2 getCollInfo: one (algorithm, protocol) pair, or leave them UNDEF (NCCL decides). NCCL 2.21
 * runs a returned pair unchecked, so force, rules and the model only return what
 * topo_force_v2_allowed says it supports for that collective and these collNet/NVLS flags. */
void topo_tuner_get_pair(const topo_tuner_ctx *ctx, int coll, size_t nbytes, int collnet_support,
                         int nvls_support, int num_pipe_ops, int *algo, int *proto, int *nchannels);

/* v6/v7 getChunkSize: keeps NCCL's chunk size (no measured reason to change it). */
void topo_tuner_chunk_size(const topo_tuner_ctx *ctx, int coll, size_t nbytes, int algo, int proto,
                           int nchannels, size_t *chunk_size);

void topo_tuner_finalize(topo_tuner_ctx *ctx); /* NULL-safe */

/* The GPU model the built-in defaults are chosen for: TOPO_TUNER_GPU, else detected from
 * /proc/driver/nvidia (H200, H100, A100), else "H200". */
const char *topo_tuner_gpu_model(char *buf, size_t len);

/* NCCL_VERSION_CODE of the NCCL this process runs, from ncclGetVersion found with
 * dlsym(RTLD_DEFAULT) (the tuner's init is handed no version); 0 when there is none. Profiles are
 * then matched on the tuner ABI version's range of NCCL versions. */
int topo_tuner_nccl_version(void);

#endif
