/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the tuner tests: NCCL-shaped cost tables for a 2 x H200 node (the values
 * NCCL 2.28.9 put in its table there, tests/data/nccl-2.28.9-2xh200) and a loader shortcut.
 * Header-only so every test executable stays one source file.
 */
#ifndef TOPO_TUNER_TEST_UTIL_H
#define TOPO_TUNER_TEST_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host_tuner.h"

/* NCCL 2.28.9's latency (us) / bandwidth (GB/s) on 2 x H200, one node, NVLS off (nccl-debug-log):
 * [coll][algo][proto], 0 bandwidth = disabled. */
static const float nccl2_lat[5][7][3] = {{{0, 0, 0}, {7.2f, 15.9f, 11.8f}},
                                         {{0, 0, 0}, {7.2f, 15.9f, 11.8f}},
                                         {{0, 0, 0}, {7.2f, 15.9f, 11.8f}},
                                         {{0, 0, 0}, {7.2f, 15.9f, 11.8f}},
                                         {{8.0f, 16.5f, 16.4f}, {7.8f, 17.8f, 15.2f}}};
static const float nccl2_bw[5][7][3] = {{{0, 0, 0}, {141.0f, 331.2f, 360.0f}},
                                        {{0, 0, 0}, {141.0f, 331.2f, 360.0f}},
                                        {{0, 0, 0}, {282.0f, 662.4f, 720.0f}},
                                        {{0, 0, 0}, {282.0f, 662.4f, 720.0f}},
                                        {{61.1f, 180.6f, 232.2f}, {141.0f, 331.2f, 360.0f}}};

/* Fill float[num_algo][3] as NCCL does on that machine: time where enabled, -1 elsewhere. */
static inline void nccl2_fill(int coll, size_t nbytes, int num_algo, float *table) {
  for (int a = 0; a < num_algo; a++)
    for (int p = 0; p < 3; p++) {
      float bw = a < 7 ? nccl2_bw[coll][a][p] : 0;
      table[a * 3 + p] = bw > 0 ? nccl2_lat[coll][a][p] + (float)nbytes / (1000.0f * bw) : -1.0f;
    }
}

/* xorshift64*: deterministic random numbers for property tests. */
static inline uint64_t test_rand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

/* Log-uniform size in [8 B, 2^hi_log2 B]. */
static inline size_t test_rand_size(uint64_t *s, int hi_log2) {
  double l = 3.0 + (double)(test_rand(s) % 1000000) / 1e6 * (hi_log2 - 3);
  return (size_t)pow(2.0, l);
}

#endif
