/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake libcupti for GPU-less machines: exactly the CUPTI entry points libtopo-profiler.so
 * dlopens (subscribe, activity callbacks/enable/next-record/dropped/flush, timestamp), plus a
 * control API through which tests and tools/demo inject synthetic activity - kernels, copies,
 * sets - that the fake hands back through the registered buffer callbacks, as CUPTI does
 * (when a buffer fills, on cuptiActivityFlushAll). Thread-safe. Load it by path
 * (TOPO_PROFILER_CUPTI_LIB) and reach the control API with dlopen of the same path + dlsym.
 */
#ifndef TOPO_FAKE_CUPTI_H
#define TOPO_FAKE_CUPTI_H
#include <stdint.h>

/* CUPTI clock = CLOCK_REALTIME + this offset (ns), so tests can check the calibration. */
#define FAKE_CUPTI_CLOCK_OFFSET_NS 1234567ll

typedef void (*fake_cupti_set_busy_fn)(int busy);        /* another subscriber holds CUPTI */
typedef int (*fake_cupti_kernel_fn)(const char *name, uint64_t start, uint64_t end,
                                    uint32_t stream, uint32_t device, uint32_t correlation);
typedef int (*fake_cupti_copy_fn)(int is_memset, uint64_t bytes, uint64_t start, uint64_t end,
                                  uint32_t stream, uint32_t device);
typedef void (*fake_cupti_add_dropped_fn)(uint64_t n);
typedef uint64_t (*fake_cupti_now_fn)(void);              /* current fake CUPTI clock */
typedef void (*fake_cupti_reset_fn)(void);

void fake_cupti_set_busy(int busy);
int fake_cupti_kernel(const char *name, uint64_t start, uint64_t end, uint32_t stream,
                      uint32_t device, uint32_t correlation);
int fake_cupti_copy(int is_memset, uint64_t bytes, uint64_t start, uint64_t end, uint32_t stream,
                    uint32_t device);
void fake_cupti_add_dropped(uint64_t n);
uint64_t fake_cupti_now(void);
void fake_cupti_reset(void);
#endif
