// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the streaming Kineto / Chrome trace JSON reader over arbitrary bytes, through
// the same sink callbacks topo-report uses: once from one buffer, once fed in small chunks as a
// file is read (every refill path), and the two must deliver the same things. Replays its seed
// corpus in the normal build (CTest).
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "report.h"
#include "report_inputs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct seen {
  uint64_t n, sum;
} seen;

static void add(seen *s, uint64_t v) {
  s->n++;
  s->sum = s->sum * 31 + v;
}

static void on_coll(void *ctx, int src, const rp_coll *c) {
  (void)src;
  add(ctx, c->bytes + (uint64_t)c->func + (uint64_t)c->gpu_start);
}
static void on_interval(void *ctx, int src, const rp_interval *iv) {
  (void)src;
  if (iv->stop < iv->start) __builtin_trap(); /* intervals are never reversed */
  add(ctx, (uint64_t)iv->start * 3 + (uint64_t)iv->stop + iv->cls);
}
static void on_step(void *ctx, int src, int64_t a, int64_t b, uint64_t v) {
  (void)src;
  add(ctx, (uint64_t)(a ^ b) + v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  seen whole = {0, 0}, chunked = {0, 0};
  rp_sink a = {&whole, on_coll, on_interval, on_step, NULL, NULL};
  rp_sink b = {&chunked, on_coll, on_interval, on_step, NULL, NULL};
  uint64_t n1 = rp_kineto_parse_memory((const char *)data, size, &a);
  size_t chunk = size ? 1 + data[0] % 61 : 1;
  uint64_t too_large = 0;
  uint64_t n2 = rp_kineto_parse_chunks((const char *)data, size, chunk, 4096, &b, &too_large);
  if (!too_large && (n1 != n2 || whole.n != chunked.n || whole.sum != chunked.sum))
    __builtin_trap();
  return 0;
}
