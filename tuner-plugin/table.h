/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The decision table: the cost model evaluated once at init for every collective, size bucket
 * (two per octave) and regBuff value (its predictions, for topo-tune), and the decisions made on
 * the profile's measured points (sw: per bucket and NCCL pick), so that getCollInfo is a lookup. Per bucket and
 * (algorithm, protocol) it holds the latency part (scaled by numPipeOps at call time), the
 * transfer time at the lower bucket edge with its slope up to the next edge (linear
 * interpolation, exact at the edges), and the channel count the model prefers (0 = NCCL's own).
 * Rules (TOPO_TUNER_RULES) are folded in at init by topo_table_set_rules: their index is part of
 * the table, so a rule lookup is a bucket and a few candidates, never a scan (rules.h).
 * Ownership: built by topo_table_build (allocates), released by topo_table_free. Read-only and
 * shareable between threads and communicators once built.
 */
#ifndef TOPO_TUNER_TABLE_H
#define TOPO_TUNER_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "rules.h"

/* Two buckets per octave: [2^k, 1.5 x 2^k), [1.5 x 2^k, 2^(k+1)), for k < 41; beyond 2^41 the
 * last bucket extrapolates. */
#define TOPO_TABLE_BUCKETS 82
/* The model's preferred channel count per cell (nch below; topo_table_apply returns the measured
 * switch's count instead): a count below NCCL's only on terms measured at that count (and at
 * NCCL's own) that cover the bucket, each fitted within TOPO_TABLE_CHANNEL_MAX_FIT_ERR (rms),
 * predicting no more than this factor above NCCL's own count. */
#define TOPO_TABLE_CHANNEL_TOLERANCE   1.0
#define TOPO_TABLE_CHANNEL_MAX_FIT_ERR 0.03
/* NCCL's own pick stays unless the profile's measured medians (topo_profile_point, interpolated
 * linearly in bytes between the measured sizes bracketing nBytes) show another setting faster
 * by more than this many times the measured noise there (the larger of the two settings'). */
#define TOPO_TABLE_SWITCH_NOISE 2.0
/* Sizes sampled per bucket when its switch ranges are computed (plus every measured size in it). */
#define TOPO_TABLE_SWITCH_SAMPLES 33
/* Value written into entries NCCL allows but the model cannot predict: usable, never preferred. */
#define TOPO_TABLE_UNPREDICTED_US 3.0e9f

typedef struct topo_table_entry {
  float lat;   /* latency part, us (< 0: no prediction) */
  float xfer;  /* transfer us at the lower edge */
  float slope; /* us per byte up to the next edge */
  float err;   /* rms relative error of the fitted terms behind it (0: link model) */
} topo_table_entry;

typedef struct topo_table_cell {
  topo_table_entry e[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  uint8_t nch[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS]; /* preferred channels, 0 = NCCL's */
} topo_table_cell;

/* A switch away from one NCCL pick, valid for lo <= nBytes <= hi (inside its bucket): to the
 * setting (algo * NCCL_NUM_PROTOCOLS + proto + 1, 0 = keep NCCL's) at nch channels (0 = NCCL's). */
typedef struct topo_table_switch {
  uint64_t lo, hi;
  uint8_t to, nch;
} topo_table_switch;

typedef struct topo_table {
  int nranks;
  int nswitch; /* switch ranges in the table (0: NCCL's picks everywhere) */
  /* 1 where bucket b of coll holds a switch for some NCCL pick: elsewhere NCCL's pick stands
   * whatever its costs (topo_table_keeps_nccl), with no look at them */
  uint8_t any_switch[NCCL_NUM_FUNCTIONS][TOPO_TABLE_BUCKETS];
  topo_table_switch sw[NCCL_NUM_FUNCTIONS][TOPO_TABLE_BUCKETS]
                      [NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS];
  float edge[TOPO_TABLE_BUCKETS]; /* lower edge of each bucket, bytes */
  topo_table_cell cells[NCCL_NUM_FUNCTIONS][TOPO_TABLE_BUCKETS][2]; /* [coll][bucket][regBuff] */
  topo_rules_index *rules;                                          /* NULL: no rules; owned */
} topo_table;

/* Size bucket of nBytes. */
int topo_table_bucket(size_t nbytes);

/* Evaluate the model into a new table. TOPO_ERR_NOMEM on allocation failure (*out untouched). */
topo_status topo_table_build(const topo_model *m, topo_table **out);
void topo_table_free(topo_table *t);

/* Fold `rules` (which must outlive the table) into it for a communicator of nnodes x nranks.
 * NULL or empty rules: none. TOPO_ERR_NOMEM (one warning, the table keeps no rules). Init only. */
topo_status topo_table_set_rules(topo_table *t, const topo_rules *rules, int nnodes, int nranks);

/* The rule pinning this call (rules.h: first match in file order among entries allowed by
 * `allow` and, when `cost` is not NULL, by NCCL's cost table), or NULL. *ignored (may be NULL):
 * a rule that matched but was passed over as not allowed. Hot path: O(1) in the rule count. */
const topo_rule *topo_table_rule(const topo_table *t, int coll, size_t nbytes, int pipe_ops,
                                 int reg_buff, const float *cost, int num_algo, int num_proto,
                                 uint32_t allow, const topo_rule **ignored);

/* Predicted us for one entry (-1 when none). Hot path: O(1), no allocation. */
float topo_table_time(const topo_table *t, int coll, size_t nbytes, int pipe_ops, int reg_buff,
                      int algo, int proto);

/* Decide on NCCL's cost table (float[num_algo][num_proto]) from measurements only: NCCL's own
 * pick (topo_table_select over the values it passed) stays, and the table is left as it came,
 * unless the table holds a switch for that pick covering nBytes (regBuff 0 only: the profile's
 * points are measured without registered buffers) to an entry NCCL allows; that entry is then
 * written just below NCCL's minimum. Entries NCCL ignores (< 0) are never touched. Returns -1
 * when nothing is selectable (nothing written), else the channel count for the entry NCCL will
 * select (0 = NCCL's own), that entry in *algo / *proto.
 * Rank-invariant: a pure function of its arguments and the table. Hot path: O(1). */
int topo_table_apply(const topo_table *t, int coll, size_t nbytes, int pipe_ops, int reg_buff,
                     float *cost, int num_algo, int num_proto, int *algo, int *proto);

/* 1 when nothing topo_table_apply could do at (coll, nBytes, regBuff) changes NCCL's pick: no
 * switch in that bucket (or regBuff set). Hot path: one load. */
static inline int topo_table_keeps_nccl(const topo_table *t, int coll, size_t nbytes,
                                        int reg_buff) {
  return reg_buff || !t->any_switch[coll][topo_table_bucket(nbytes)];
}

/* 1 when NCCL's selection finds an entry in the table (topo_table_select's test), stopping at
 * the first: what topo_table_apply's answer "-1, nothing selectable" hinges on. */
int topo_table_selectable(const float *cost, int num_algo, int num_proto);

/* NCCL's selection over a cost table: minimum over entries >= 0 and < 3.6e9, ties to the lowest
 * algorithm then protocol. Returns 0 when nothing is selectable. */
int topo_table_select(const float *cost, int num_algo, int num_proto, int *algo, int *proto);

#endif
