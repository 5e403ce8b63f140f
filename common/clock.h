/* SPDX-License-Identifier: Apache-2.0 */
/* Host clocks used by every module: monotonic for durations and records, realtime for alignment. */
#ifndef TOPO_CLOCK_H
#define TOPO_CLOCK_H
#include <stdint.h>
#include <time.h>

static inline int64_t topo_clock_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int64_t topo_clock_realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
#endif
