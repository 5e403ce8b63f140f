// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the tuner-profile reader (common/profile_read.c). Any byte sequence must parse
// without a crash, a leak or undefined behaviour; and whatever section it selects must survive the
// writer and the reader again unchanged (the round-trip contract). Built with clang when
// TOPO_BUILD_FUZZERS=ON; tests/fuzz/replay_main.c replays the seed corpus through this same entry
// point in every normal build (CTest test_fuzz_profile_corpus).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_or_abort(const topo_profile *a, const topo_profile *b) {
  int same = !memcmp(&a->key, &b->key, sizeof a->key) &&
             !memcmp(a->link, b->link, sizeof a->link) &&
             !memcmp(a->proto, b->proto, sizeof a->proto) &&
             !memcmp(&a->launch_us, &b->launch_us, sizeof a->launch_us) &&
             a->max_channels == b->max_channels && a->nvls == b->nvls && a->nterms == b->nterms;
  for (int i = 0; same && i < a->nterms; i++) {
    const topo_profile_term *x = &a->terms[i], *y = &b->terms[i];
    same = x->coll == y->coll && x->algo == y->algo && x->proto == y->proto &&
           x->nchannels == y->nchannels && !memcmp(&x->lat_us, &y->lat_us, sizeof x->lat_us) &&
           !memcmp(&x->bw_gbs, &y->bw_gbs, sizeof x->bw_gbs) && x->min_bytes == y->min_bytes &&
           x->max_bytes == y->max_bytes && !memcmp(&x->rel_err, &y->rel_err, sizeof x->rel_err) &&
           x->npoints == y->npoints;
  }
  if (!same) {
    fprintf(stderr, "fuzz_profile: the written profile does not read back the same\n");
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The first byte picks the wish, so sections with every kind of key get selected. */
  static const char *const gpus[] = {"", "H200", "H100", "A100"};
  topo_profile_key want;
  memset(&want, 0, sizeof want);
  if (size > 0) {
    snprintf(want.gpu, sizeof want.gpu, "%s", gpus[data[0] & 3]);
    want.nranks = (data[0] >> 2) & 1 ? 8 : 0;
    want.nnodes = (data[0] >> 3) & 1 ? 1 : 0;
    want.nccl_version = (data[0] >> 4) & 1 ? 22809 : 0;
  }
  topo_profile p;
  topo_status st = topo_profile_parse((const char *)data, size, "fuzz", &want, &p, NULL);
  if (st == TOPO_OK) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f) {
      topo_profile_write(f, &p);
      fclose(f);
      topo_profile q;
      if (topo_profile_parse(text, len, "fuzz-rewritten", &want, &q, NULL) != TOPO_OK) {
        fprintf(stderr, "fuzz_profile: the written profile does not parse\n");
        abort();
      }
      same_or_abort(&p, &q);
      topo_profile_free(&q);
    }
    free(text);
  }
  topo_profile_free(&p);
  return 0;
}
