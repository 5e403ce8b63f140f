/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake libcupti for GPU-less machines: exactly the CUPTI entry points libtopo-profiler.so
 * dlopens (subscribe, activity callbacks/enable/next-record/dropped/flush, timestamp), plus a
 * control API through which topo-demo and the tests inject synthetic activity - kernels, copies,
 * sets - that the fake hands back through the registered buffer callbacks, as CUPTI does
 * (when a buffer fills, on cuptiActivityFlushAll). As in CUPTI, one subscriber at a time, and
 * the enabled kinds and buffer callbacks are process-wide: activity reaches whoever registered
 * callbacks last, whether or not it subscribed. The control API also plays "another client"
 * (a profiler such as Kineto: subscribes, registers its own callbacks, enables the kinds) and
 * counts every call of the code under test. Thread-safe. Load it by path
 * (TOPO_PROFILER_CUPTI_LIB) and reach the control API with dlopen of the same path + dlsym.
 */
#ifndef TOPO_FAKE_CUPTI_H
#define TOPO_FAKE_CUPTI_H
#include <stdint.h>

/* CUPTI clock = CLOCK_REALTIME + this offset (ns), so tests can check the calibration. */
#define FAKE_CUPTI_CLOCK_OFFSET_NS 1234567ll

/* Whose buffer callbacks are registered. */
enum { FAKE_CUPTI_OWNER_NONE = 0, FAKE_CUPTI_OWNER_CLIENT = 1, FAKE_CUPTI_OWNER_OTHER = 2 };

/* What the client (the code under test, through the CUPTI entry points) did, and the state now. */
typedef struct fake_cupti_calls {
  int subscribe, subscribe_ok, subscribe_refused, unsubscribe;
  int register_callbacks, enable, disable, flush;
  int other_lost;         /* the other client's records that went into a buffer of the
                            * client's, which the other client then dropped */
  int forced_flush_other; /* FORCED flushes while another client's callbacks are registered:
                            * each ends that client's records of queued work with 0 timestamps */
  int flush_other;        /* flushes of any kind while another client's callbacks are registered:
                            * each hands that client its buffers when it did not ask */
  int flush_period_ms;    /* cuptiActivityFlushPeriod's last value (0: CUPTI's worker off) */
  int held_outside_probe; /* activity calls made while the client held a subscription */
  uint64_t max_hold_ns;   /* longest subscribe-to-unsubscribe of the client */
  int subscribed;         /* the client holds a subscription now */
  int owner;              /* FAKE_CUPTI_OWNER_* */
  int kernel_enabled, memcpy_enabled, memset_enabled;
} fake_cupti_calls;

typedef void (*fake_cupti_set_busy_fn)(int busy); /* another subscriber holds CUPTI */
/* Another client arrives: subscribes (0 when the client holds the subscription just then) and,
 * with `activity`, registers its own buffer callbacks and enables kernels, memcpy, memset. */
typedef int (*fake_cupti_other_attach_fn)(int activity);
/* It leaves, as Kineto at the end of a trace: disables its kinds, flushes, unsubscribes; its
 * callbacks stay registered (CUPTI cannot unregister them). */
typedef void (*fake_cupti_other_detach_fn)(void);
typedef uint64_t (*fake_cupti_other_records_fn)(void); /* records the other client received */
typedef void (*fake_cupti_get_calls_fn)(fake_cupti_calls *out);
/* Make cuptiSubscribe / cuptiActivityEnable return these (CUPTI_SUCCESS = behave). */
typedef void (*fake_cupti_fail_fn)(int subscribe_result, int enable_result);
typedef int (*fake_cupti_kernel_fn)(const char *name, uint64_t start, uint64_t end, uint32_t stream,
                                    uint32_t device, uint32_t correlation);
typedef int (*fake_cupti_copy_fn)(int is_memset, uint64_t bytes, uint64_t start, uint64_t end,
                                  uint32_t stream, uint32_t device);
typedef void (*fake_cupti_add_dropped_fn)(uint64_t n);
typedef uint64_t (*fake_cupti_now_fn)(void); /* current fake CUPTI clock */
typedef void (*fake_cupti_reset_fn)(void);

void fake_cupti_set_busy(int busy);
int fake_cupti_other_attach(int activity);
void fake_cupti_other_detach(void);
uint64_t fake_cupti_other_records(void);
void fake_cupti_get_calls(fake_cupti_calls *out);
void fake_cupti_fail(int subscribe_result, int enable_result);
int fake_cupti_kernel(const char *name, uint64_t start, uint64_t end, uint32_t stream,
                      uint32_t device, uint32_t correlation);
int fake_cupti_copy(int is_memset, uint64_t bytes, uint64_t start, uint64_t end, uint32_t stream,
                    uint32_t device);
void fake_cupti_add_dropped(uint64_t n);
uint64_t fake_cupti_now(void);
void fake_cupti_reset(void);
#endif
