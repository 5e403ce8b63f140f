/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reader for the call logs recorded from real NCCL (tests/data/nccl-2.28.9-2xh200 and its
 * as-2-nodes sibling: rankN-calls.txt, format in their README.md), one line per plugin call.
 * This part parses the tuner lines; the profiler's event lines have their own parser.
 */
#ifndef TOPO_RECORDED_CALLS_H
#define TOPO_RECORDED_CALLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct topo_rec_tuner_init {
  uint64_t comm;
  int nranks, nnodes;
  int nvl[3];
  double base_lat[21], hw_lat[63], ll_max[12], ring_ll128[12];
} topo_rec_tuner_init;

typedef struct topo_rec_tuner_get {
  uint64_t comm;
  int coll;
  size_t bytes;
  int pipe, algos, protos, reg, nch;
  float table[21];
} topo_rec_tuner_get;

/* Parse a TUNER_INIT / TUNER_GET line (the whole line, timestamp and tid included).
 * Return 1 on success, 0 when the line is of another kind or malformed. */
int topo_rec_parse_tuner_init(const char *line, topo_rec_tuner_init *out);
int topo_rec_parse_tuner_get(const char *line, topo_rec_tuner_get *out);

/* Directory holding the recorded data (TOPO_TEST_DATA_DIR compile definition). */
const char *topo_rec_data_dir(void);
#endif
