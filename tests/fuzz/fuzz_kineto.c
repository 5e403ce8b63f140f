// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the streaming Kineto / Chrome trace JSON reader over arbitrary bytes, through
// the same sink callbacks topo-report uses. Replays its seed corpus in the normal build (CTest).
#include <stddef.h>
#include <stdint.h>

#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t seen;

static void on_coll(void *ctx, int src, const rp_coll *c) {
  (void)ctx, (void)src;
  seen += c->bytes + (uint64_t)c->func;
}
static void on_interval(void *ctx, int src, const rp_interval *iv) {
  (void)ctx, (void)src;
  if (iv->stop < iv->start) __builtin_trap(); /* intervals are never reversed */
  seen += iv->cls;
}
static void on_step(void *ctx, int src, int64_t a, int64_t b, uint64_t v) {
  (void)ctx, (void)src;
  seen += (uint64_t)(a ^ b) + v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rp_sink sink = {NULL, on_coll, on_interval, on_step, NULL, NULL};
  rp_kineto_parse_memory((const char *)data, size, &sink);
  return 0;
}
