/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Rule files compatible with NCCL's example tuner (`nccl_tuner.conf`): people pin a choice for a
 * (collective, size range, topology) and libtopo-tuner applies it ahead of its cost model
 * (TOPO_TUNER_RULES). One CSV line per rule:
 *
 *   collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]
 *
 * 8, 9 or 10 fields; `#` starts a comment line; blank lines are skipped; whitespace around fields
 * is trimmed; names are case-insensitive (collective: broadcast|reduce|allgather|reducescatter|
 * allreduce; algorithm: tree|ring|collnet_direct|collnet_chain|nvls|nvls_tree|pat; protocol:
 * ll|ll128|simple); -1 means "any" for nNodes, nRanks, numPipeOps and regBuff, "keep NCCL's" for
 * channels, 0 for min_bytes and "no limit" for max_bytes. Sizes are the bytes NCCL hands the tuner
 * (aggregated task; AllGather / ReduceScatter: the full gathered buffer), bounds inclusive.
 *
 * Matching is the example tuner's: the first rule in file order whose collective equals, whose
 * min_bytes <= nBytes <= max_bytes and whose nNodes / nRanks / numPipeOps / regBuff equal or are -1,
 * AND whose (algorithm, protocol) entry NCCL did not ignore (cost >= 0 and inside numAlgo x
 * numProto). A matching rule whose entry is ignored is passed over and the scan goes on.
 * Two bugs of the example are fixed, as RCCL did (ROCm/rccl#1985): no match and channels -1 give
 * nChannels 0 (keep NCCL's), never 1; an unknown name or a malformed number is an error for that
 * line (one warning naming file:line and the fault; the line is skipped, the rest is used), never
 * silently allreduce / ring / simple.
 *
 * Ownership: topo_rules_load/parse allocate one immutable set (the only allocation); the caller
 * frees it with topo_rules_free. Thread-safety: a loaded set is read-only; topo_rules_match may run
 * concurrently on any thread, is O(number of rules), allocation-free and never logs.
 */
#ifndef TOPO_TUNER_RULES_H
#define TOPO_TUNER_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/nccl_common.h"
#include "status.h"

#define TOPO_RULES_MAX_CHANNELS 64 /* NCCL's MAXCHANNELS: a larger channels field is an error */

typedef struct topo_rule {
  int coll;           /* ncclFunc_t 0..4 */
  int algo;           /* NCCL_ALGO_* 0..6 */
  int proto;          /* NCCL_PROTO_* 0..2 */
  int nchannels;      /* 1..64; 0 = keep NCCL's (file said -1 or 0) */
  uint64_t min_bytes; /* inclusive */
  uint64_t max_bytes; /* inclusive; UINT64_MAX when the file said -1 */
  int nnodes;         /* -1 = any */
  int nranks;         /* -1 = any */
  int num_pipe_ops;   /* -1 = any (also when the line has 8 fields) */
  int reg_buff;       /* -1 = any, 0 or 1 (also -1 when the line has < 10 fields) */
  int line;           /* 1-based line in the source, for logs */
} topo_rule;

typedef struct topo_rules topo_rules; /* opaque, immutable once loaded */

/* Read `path` and parse it (see topo_rules_parse). TOPO_ERR_IO with one warning when it cannot be
 * read (*out = NULL: no rules). Any thread; not for hot paths. */
topo_status topo_rules_load(const char *path, topo_rules **out);

/* Parse `len` bytes of `text` (need not be NUL-terminated; any byte sequence is safe). `name`
 * (may be NULL) names the source in warnings ("name:line: fault"). Malformed lines are skipped with
 * one warning each. Returns TOPO_OK with *out set (possibly an empty set: zero rules is valid),
 * TOPO_ERR_NOMEM with *out = NULL when allocation fails, TOPO_ERR_INVALID on NULL arguments.
 * *nbad (may be NULL) receives the number of lines rejected. */
topo_status topo_rules_parse(const char *text, size_t len, const char *name, topo_rules **out,
                             int *nbad);

/* Number of rules kept, and the i-th (0-based, file order; NULL when out of range). */
int topo_rules_count(const topo_rules *rules);
const topo_rule *topo_rules_at(const topo_rules *rules, int i);

/* The first rule matching the query (semantics above), or NULL. `table` is NCCL's cost table as
 * float[numAlgo][numProto] in row-major order (the tuner's collCostTable cast); NULL table = every
 * entry allowed. The caller applies the rule: writes 0.0 (or its own figure) into
 * table[algo][proto] and sets *nChannels = rule->nchannels (0 = keep NCCL's). NULL rules -> NULL.
 * Allocation-free, lock-free, never logs. */
const topo_rule *topo_rules_match(const topo_rules *rules, int coll, uint64_t nbytes,
                                  int num_pipe_ops, int reg_buff, int nnodes, int nranks,
                                  const float *table, int num_algo, int num_proto);

void topo_rules_free(topo_rules *rules); /* NULL-safe */

#endif
