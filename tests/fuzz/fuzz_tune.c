// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the tuner's decision path from a profile (what libtopo-tuner.so and
// topo-tune do with TOPO_TUNER_PROFILE): any bytes parsed as a profile, the model and the decision
// table built on it (topo_model_init, topo_table_build: the switches decided on its points), then
// queried as getCollInfo queries them, over every collective, sizes from 0 to 2^64 - 1 and cost
// tables with ignored entries. Contract checked beyond "no crash, leak or UB": an entry NCCL
// ignored (< 0) is never written, the entry chosen is one NCCL allows, nothing but the chosen
// entry moves and only downwards, the channel count lies in 0..64, and the model's times are
// finite or "no prediction". The first input byte picks the communicator shape. Built with clang
// when TOPO_BUILD_FUZZERS=ON; every build replays the seed corpus (CTest replay_fuzz_tune).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "profile.h"
#include "table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what) {
  if (ok) return;
  fprintf(stderr, "fuzz_tune: %s\n", what);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int ranks[] = {2, 8, 16, 1 << 20};
  int shape = size ? data[0] : 0;
  topo_profile_key want = {"H200", ranks[shape & 3], (shape >> 2) & 1 ? 2 : 1, 0};
  topo_profile p;
  if (topo_profile_parse((const char *)data + (size ? 1 : 0), size ? size - 1 : 0, "fuzz", &want,
                         &p, NULL) == TOPO_ERR_NOMEM) {
    topo_profile_free(&p);
    return 0;
  }
  topo_model m;
  topo_model_init(&m, &p, want.nranks, want.nnodes, 0);
  topo_table *t = NULL;
  if (topo_table_build(&m, &t) != TOPO_OK) {
    topo_profile_free(&p);
    return 0;
  }
  static const uint64_t sizes[] = {0,        1,          8,          4096,       1 << 20,
                                   3u << 20, 1ull << 30, 1ull << 41, 1ull << 50, UINT64_MAX};
  uint32_t mask = shape * 0x9e3779b9u;
  for (int coll = 0; coll < NCCL_NUM_FUNCTIONS; coll++)
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
      float cost[NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS],
          before[NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS];
      for (int i = 0; i < NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS; i++)
        cost[i] = (mask >> (i % 32)) & 1 ? -1.0f : (float)(10 + (i * 7 + (int)s) % 23);
      memcpy(before, cost, sizeof cost);
      int algo = -1, proto = -1;
      int nch = topo_table_apply(t, coll, (size_t)sizes[s], 1, 0, cost, NCCL_NUM_ALGORITHMS,
                                 NCCL_NUM_PROTOCOLS, &algo, &proto);
      check(nch >= -1 && nch <= 64, "channel count outside -1..64");
      for (int i = 0; i < NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS; i++) {
        if (before[i] < 0) check(cost[i] == before[i], "an ignored entry was written");
        else if (cost[i] != before[i])
          check(nch >= 0 && i == algo * NCCL_NUM_PROTOCOLS + proto && cost[i] <= before[i],
                "an entry other than the chosen one moved, or moved up");
      }
      if (nch >= 0) {
        check(algo >= 0 && algo < NCCL_NUM_ALGORITHMS && proto >= 0 && proto < NCCL_NUM_PROTOCOLS,
              "chosen entry out of range");
        check(before[algo * NCCL_NUM_PROTOCOLS + proto] >= 0, "chose an entry NCCL ignored");
        check(topo_table_keeps_nccl(t, coll, (size_t)sizes[s], 0) == 0 || nch == 0,
              "a bucket without switch changed the channel count");
      }
      for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
        for (int pr = 0; pr < NCCL_NUM_PROTOCOLS; pr++) {
          double us = topo_model_time(&m, coll, a, pr, 0, (double)sizes[s], 1, 0);
          check(us < 0 || (us > 0 && isfinite(us)), "a model time that is neither finite nor none");
          float tt = topo_table_time(t, coll, (size_t)sizes[s], 1, 0, a, pr);
          check(tt < 0 || isfinite(tt), "a table time that is not finite");
        }
    }
  topo_table_free(t);
  topo_profile_free(&p);
  return 0;
}
