/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL's vocabulary, spelt once: the names of its collectives, algorithms, protocols and datatypes
 * in each spelling topo meets them, datatype sizes, the nccl-tests conventions (bus-bandwidth
 * factor, the size of a collective) and the channel and thread count NCCL 2.28 runs for one call
 * after choosing its algorithm and protocol. Indices are NCCL's own (common/nccl/nccl_indices.h).
 *
 * Callers: the profile reader and writer, the tuner (rules, force, model, NCCL's model), the
 * profiler (event names to ids, NVTX labels), topo-report, topo-calibrate (which is built against
 * real <nccl.h>: nothing here clashes with it), topo-tune and the plugin host.
 * Thread-safety: constant tables and pure functions; no allocation, no logging.
 */
#ifndef TOPO_NCCL_VOCAB_H
#define TOPO_NCCL_VOCAB_H

#include <stdint.h>

#include "nccl/nccl_indices.h"

/* How a name is spelt. Names of one index compare equal across spellings when case, '_' and '-'
 * are ignored, which is how every *_from_name below reads them. */
typedef enum topo_nccl_spelling {
  TOPO_NCCL_FILE = 0,  /* topo's files and command lines: "allreduce", "collnet_direct", "simple" */
  TOPO_NCCL_EVENT = 1, /* NCCL's profiler events, kernel names, INFO log: "AllReduce",
                          "COLLNET_DIRECT", "SIMPLE" */
  TOPO_NCCL_TABLE = 2, /* NCCL_ALGO / NCCL_PROTO values, NCCL's tuning table: "AllReduce",
                          "CollNetDirect", "Simple" */
  TOPO_NCCL_SPELLINGS
} topo_nccl_spelling;

#define TOPO_NCCL_NUM_FUNCS     11 /* ncclFunc_t values named here: Broadcast .. Gather (2.28) */
#define TOPO_NCCL_NUM_DATATYPES 12 /* ncclDataType_t: ncclInt8 0 .. ncclFloat8e5m2 11 */

/* The tables, indexed [spelling][index] (datatypes: NCCL's one spelling, "ncclFloat32"). For
 * loops and lookups that need the array itself; everyone else calls the functions below. */
extern const char *const topo_nccl_func_names[TOPO_NCCL_SPELLINGS][TOPO_NCCL_NUM_FUNCS];
extern const char *const topo_nccl_algo_names[TOPO_NCCL_SPELLINGS][NCCL_NUM_ALGORITHMS];
extern const char *const topo_nccl_proto_names[TOPO_NCCL_SPELLINGS][NCCL_NUM_PROTOCOLS];
extern const char *const topo_nccl_datatype_names[TOPO_NCCL_NUM_DATATYPES];

/* The name of an index in one spelling; "unknown" when NCCL has no such index (or the spelling is
 * out of range). Callers that show unknown indices differently check the range first. */
const char *topo_nccl_func_name(int func, topo_nccl_spelling spelling);
const char *topo_nccl_algo_name(int algo, topo_nccl_spelling spelling);
const char *topo_nccl_proto_name(int proto, topo_nccl_spelling spelling);

/* The index of a name in any spelling (case, '_' and '-' ignored: "NVLS_TREE" == "NVLSTree" ==
 * "nvls-tree"); -1 when unknown or NULL. topo_nccl_coll_from_name accepts only the collectives a
 * tuner sees (ncclFunc_t 0..4: what profiles, rules and CLIs name). */
int topo_nccl_func_from_name(const char *name);
int topo_nccl_coll_from_name(const char *name);
int topo_nccl_algo_from_name(const char *name);
int topo_nccl_proto_from_name(const char *name);
int topo_nccl_datatype_from_name(const char *name);
/* The same reading for any table of n names (topo's link classes, ...): the index or -1. */
int topo_nccl_name_index(const char *name, const char *const *table, int n);

/* Bytes per element of an ncclDataType_t; 0 when unknown. */
int topo_nccl_datatype_size(int datatype);

/* nccl-tests conventions. Bus-bandwidth factor: AllReduce 2(n-1)/n, AllGather and ReduceScatter
 * (n-1)/n, every other function 1 (nranks <= 0 counts as 1). Size of a collective: AllGather and
 * ReduceScatter count the whole gathered buffer (per-rank bytes x nranks), others their bytes. */
double topo_nccl_busbw_factor(int func, int nranks);
uint64_t topo_nccl_tests_bytes(int func, uint64_t bytes, int nranks);

/* NCCL 2.28's per-communicator thread tables (ncclTopoTuneModel, reference section 3.5):
 * threads per channel NCCL starts from for (algo, proto), 0 for a pair it has no kernel for;
 * ring_pci_limited = 1 when the ring graph's bandwidth x channels is at or below PCI's (12 GB/s),
 * where Ring/Simple runs 256 threads. topo_nccl_thread_threshold: bytes per thread below which
 * NCCL sheds channels and threads. */
int topo_nccl_max_threads(int algo, int proto, int ring_pci_limited);
long topo_nccl_thread_threshold(int algo, int proto, int nranks);

/* What NCCL's channel choice for one call depends on. */
typedef struct topo_nccl_channel_inputs {
  int nchannels;     /* comm->nChannels, collective channels (<= 0 taken as 1) */
  int nvls_channels; /* comm->nvlsChannels */
  int nnodes;
  int max_threads; /* topo_nccl_max_threads (or the table NCCL logged) for the chosen pair */
  long threshold;  /* topo_nccl_thread_threshold for the chosen pair */
} topo_nccl_channel_inputs;

/* The channels and threads per channel NCCL 2.28 runs one call of `nbytes` on after choosing
 * (algo, proto) (enqueue.cc, reference section 3.5): CollNet Direct sheds channels in steps of
 * its own; NVLS runs the NVLS channels (multi-node NVLS no more than the collective channels);
 * Ring, Tree and the others shed one channel at a time while nbytes < channels x threads x
 * threshold, then halve threads (multiples of 128) while still below. Simple adds warps for Ring
 * and Tree; at least 3 warps; Tree and PAT always run NCCL_MAX_NTHREADS. */
void topo_nccl_channels(int algo, int proto, uint64_t nbytes, const topo_nccl_channel_inputs *in,
                        int *nchannels, int *nthreads);

/* NCCL_VERSION_CODE (major * 10000 + minor * 100 + patch) of the NCCL this process runs, from
 * ncclGetVersion found with dlsym(RTLD_DEFAULT); 0 when the process has none to ask (a plugin
 * host, a tool) or it fails. Any thread; no allocation. */
int topo_nccl_runtime_version(void);

#endif
