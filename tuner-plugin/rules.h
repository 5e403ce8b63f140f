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
 * Lookup: topo_rules_index_build compiles a set, for one communicator's (nNodes, nRanks), into an
 * index answering exactly as that first-match scan would, without scanning. Rules are grouped by
 * (collective, numPipeOps constraint, regBuff constraint); each group's byte axis is cut at its
 * rules' boundaries into segments, and a segment keeps, per (algorithm, protocol), the first rule
 * of the group covering it (a later one of the same entry and constraints can never win there):
 * at most 21 candidates, in file order. A query meets at most four groups (numPipeOps any or its
 * own, regBuff any or its own, the own ones found by hashing): in each, its segment by an octave
 * table (O(1)) and a binary search over the boundaries inside that octave, then the candidates up
 * to the first allowed one; the answer is the earliest of the groups'. Build: O(n log n) for n
 * rules however they nest (sorting, and per group and entry a union-find over the segments);
 * memory: at most 21 candidates per segment, segments whose candidates repeat merged.
 *
 * Ownership: topo_rules_load/parse allocate one immutable set; the caller frees it with
 * topo_rules_free. An index is one more allocation, refers to its set (which must outlive it) and
 * is freed with topo_rules_index_free. Thread-safety: a loaded set and a built index are read-only
 * (except the once-per-rule report flags, atomics); topo_rules_index_find may run concurrently on
 * any thread, is allocation-free, lock-free and never logs.
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

typedef struct topo_rules_index topo_rules_index; /* opaque, read-only once built */

/* Compile `rules` for a communicator of `nnodes` nodes and `nranks` ranks (rules naming other
 * values are dropped here). NULL or empty rules: TOPO_OK with *out = NULL (no index: no rules).
 * TOPO_ERR_NOMEM with *out = NULL on allocation failure. Init time only. */
topo_status topo_rules_index_build(const topo_rules *rules, int nnodes, int nranks,
                                   topo_rules_index **out);

/* Work done by one topo_rules_index_find, for tests (pass NULL otherwise). */
typedef struct topo_rules_probe {
  int search_steps; /* binary-search steps over segment boundaries */
  int candidates;   /* candidates looked at */
} topo_rules_probe;

/* Bit algo * NCCL_NUM_PROTOCOLS + proto: every (algorithm, protocol) pair. */
#define TOPO_RULES_ALLOW_ALL ((uint32_t)((1u << (NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS)) - 1))

/* The first rule of the file matching the query (semantics above), or NULL. An entry counts as
 * allowed when its bit is set in `allow` AND, if `table` is not NULL (NCCL's cost table as
 * float[num_algo][num_proto], row-major), it lies inside num_algo x num_proto and arrived >= 0.
 * `ignored` (may be NULL) receives the first rule that matched the query but was passed over
 * because its entry is not allowed and that topo_rules_index_report_once has not reported yet
 * (NULL if none): reporting it each time reports every such rule once. NULL index -> NULL. Hot path: allocation-free,
 * lock-free, never logs, no scan over the rules. */
const topo_rule *topo_rules_index_find(const topo_rules_index *ix, int coll, uint64_t nbytes,
                                       int num_pipe_ops, int reg_buff, const float *table,
                                       int num_algo, int num_proto, uint32_t allow,
                                       const topo_rule **ignored, topo_rules_probe *probe);

/* 1 the first time it is called for `rule` (a rule of the index's set) on this index, 0 after:
 * for one warning per distinct rule. Lock-free, any thread. */
int topo_rules_index_report_once(const topo_rules_index *ix, const topo_rule *rule);

/* What an index holds, for tests and benchmarks: candidate entries and segments over all
 * collectives and constraint classes. */
typedef struct topo_rules_index_stats {
  size_t candidates, segments;
} topo_rules_index_stats;
void topo_rules_index_stats_get(const topo_rules_index *ix, topo_rules_index_stats *out);

void topo_rules_index_free(topo_rules_index *ix); /* NULL-safe */

void topo_rules_free(topo_rules *rules); /* NULL-safe */

#endif
