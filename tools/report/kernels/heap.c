// SPDX-License-Identifier: Apache-2.0
// The bounded reorder heap the per-stream kernel analyses (idle.c, launch.c, ktime.c, memcpy.c)
// sort their events with: a binary heap ordered by the caller's `less`, which the caller pops
// from once it holds `window` items (rp_heap_full).
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "kernel_stats.h"

void rp_heap_init(rp_heap *h, size_t size, size_t window, int (*less)(const void *, const void *)) {
  memset(h, 0, sizeof *h);
  h->size = size;
  h->window = window ? window : 1;
  h->less = less;
}

int rp_heap_push(rp_heap *h, const void *item) {
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 64;
    char *v = topo_realloc(h->v, cap * h->size);
    if (!v) return 0;
    h->v = v;
    h->cap = cap;
  }
  size_t i = h->n++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!h->less(item, h->v + p * h->size)) break;
    memcpy(h->v + i * h->size, h->v + p * h->size, h->size);
    i = p;
  }
  memcpy(h->v + i * h->size, item, h->size);
  return 1;
}

int rp_heap_full(const rp_heap *h) { return h->n >= h->window; }

int rp_heap_pop(rp_heap *h, void *out) {
  if (!h->n) return 0;
  memcpy(out, h->v, h->size);
  const char *last = h->v + --h->n * h->size;
  size_t i = 0, n = h->n;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && h->less(h->v + (c + 1) * h->size, h->v + c * h->size)) c++;
    if (!h->less(h->v + c * h->size, last)) break;
    memcpy(h->v + i * h->size, h->v + c * h->size, h->size);
    i = c;
  }
  if (n) memmove(h->v + i * h->size, last, h->size);
  return 1;
}

void rp_heap_free(rp_heap *h) {
  topo_free(h->v);
  memset(h, 0, sizeof *h);
}
