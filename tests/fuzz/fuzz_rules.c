// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for rule files in nccl_tuner.conf format (tuner-plugin/rules.c): any byte
// sequence parses without a crash, a leak or undefined behaviour; every rule kept is in range; and a
// match on any query returns a kept rule whose fields agree with the query. Built with clang when
// TOPO_BUILD_FUZZERS=ON; the normal build replays the seed corpus (CTest test_fuzz_rules_corpus).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_rules: %s\n", what);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  topo_rules *r = NULL;
  if (topo_rules_parse((const char *)data, size, "fuzz", &r, NULL) != TOPO_OK) return 0;
  for (int i = 0; i < topo_rules_count(r); i++) {
    const topo_rule *x = topo_rules_at(r, i);
    check(x->coll >= 0 && x->coll < NCCL_NUM_FUNCTIONS && x->algo >= 0 &&
              x->algo < NCCL_NUM_ALGORITHMS && x->proto >= 0 && x->proto < NCCL_NUM_PROTOCOLS,
          "rule with an out-of-range name");
    check(x->nchannels >= 0 && x->nchannels <= TOPO_RULES_MAX_CHANNELS, "channels out of range");
    check(x->min_bytes <= x->max_bytes, "empty size range kept");
  }
  float table[NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS];
  for (int i = 0; i < NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS; i++)
    table[i] = (size > 0 && (data[i % size] & 1)) ? -1.0f : 1.0f;
  static const uint64_t sizes[] = {0, 1, 1024, 65536, 1ull << 30, UINT64_MAX};
  topo_rules_index *ix = NULL;
  if (topo_rules_index_build(r, 1, 8, &ix) != TOPO_OK) {
    topo_rules_free(r);
    return 0;
  }
  for (int c = 0; c < NCCL_NUM_FUNCTIONS; c++) {
    for (int s = 0; s < 6; s++) {
      const topo_rule *m = topo_rules_index_find(ix, c, sizes[s], 1, 0, table, 7, 3,
                                                 TOPO_RULES_ALLOW_ALL, NULL, NULL);
      if (!m) continue;
      check(m->coll == c && sizes[s] >= m->min_bytes && sizes[s] <= m->max_bytes,
            "match disagrees with the query");
      check(table[m->algo * 3 + m->proto] >= 0, "match on an ignored entry");
    }
  }
  topo_rules_index_free(ix);
  topo_rules_free(r);
  return 0;
}
