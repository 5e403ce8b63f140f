// SPDX-License-Identifier: Apache-2.0
// Step learner benchmark (common/step_learn.h; see step_learn.cmake): ns per operation the
// profiler's writer thread (and topo-report) spends learning the step, on a DDP-shaped stream
// once its step is known, on irregular traffic (no step: the learner keeps searching), and on a
// TP-shaped stream of one operation kind, each beside a baseline measured in the same run: a
// 64-byte record copied into a ring (what the writer does with every record anyway).
// Usage: step_learn_bench [operations]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "step_learn.h"

enum { DDP, IRREGULAR, TP, SHAPES };
static const char *names[SHAPES] = {"DDP, step known", "irregular, no step", "TP, one kind"};

static topo_step_op *stream(int shape, size_t n) {
  topo_step_op *v = calloc(n, sizeof *v);
  if (!v) return NULL;
  uint64_t x = 88172645463325252ull;
  int64_t t = 0;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    topo_step_op *o = &v[i];
    o->comm = 0x5eed;
    o->func = 4;
    o->peer = -1;
    switch (shape) {
    case DDP: /* 14 operations a step, 40 ms gap before the first */
      o->bytes = i % 14 == 13 ? 32 : 25u << 20;
      t += i % 14 ? 2000000 + (int64_t)(x % 200000) : 40000000;
      break;
    case IRREGULAR:
      o->bytes = 1ull << (10 + x % 14);
      t += 1000000 + (int64_t)(x % 2000000);
      break;
    default: /* 4 x 20 layers of one AllReduce a step */
      o->bytes = 4u << 20;
      t += i % 80 ? 500000 + (int64_t)(x % 50000) : 25000000;
      break;
    }
    o->t_ns = t;
  }
  return v;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
  if (n < 1000) n = 1000;
  /* baseline: a record into a ring of 4096 */
  static unsigned char ring[4096][64], rec[64];
  int64_t a = topo_clock_monotonic_ns();
  for (size_t i = 0; i < n; i++) {
    rec[i & 63] = (unsigned char)i;
    memcpy(ring[i & 4095], rec, 64);
  }
  double base = (double)(topo_clock_monotonic_ns() - a) / (double)n;
  printf("baseline (a 64-byte record into a ring): %.1f ns per operation\n", base);
  topo_step_learner *l = topo_step_learn_new(NULL);
  if (!l) return 1;
  for (int s = 0; s < SHAPES; s++) {
    topo_step_op *v = stream(s, n);
    if (!v) return 1;
    topo_step_learn_reset(l);
    uint64_t found = 0;
    a = topo_clock_monotonic_ns();
    for (size_t i = 0; i < n; i++) {
      topo_step_event ev;
      topo_step_learn_add(l, &v[i], &ev);
      found += ev.boundary;
    }
    double ns = (double)(topo_clock_monotonic_ns() - a) / (double)n;
    printf("%-20s %8.1f ns per operation (%6.1f x baseline), %llu step boundaries\n", names[s], ns,
           ns / (base > 0 ? base : 1), (unsigned long long)found);
    free(v);
  }
  topo_step_learn_free(l);
  return 0;
}
