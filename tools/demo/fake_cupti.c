// SPDX-License-Identifier: Apache-2.0
// The fake libcupti (see fake_cupti.h). Records are laid out in the buffers of whichever client
// registered the buffer callbacks last, with the record structs of the CUDA 13 CUPTI headers, and
// iterated by kind.
#include "fake_cupti.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* busy: another client holds the subscription; subscribed: the client (the code under test)
 * does. The enabled kinds and the buffer callbacks are one process-wide state, as in CUPTI. */
static int busy, subscribed, enabled_kernel, enabled_memcpy, enabled_memset;
static CUpti_BuffersCallbackRequestFunc on_request;
static CUpti_BuffersCallbackCompleteFunc on_complete;
static int owner;              /* whose callbacks are registered: FAKE_CUPTI_OWNER_* */
static int other_activity;     /* the other client registered callbacks and enabled kinds */
static uint64_t other_records; /* activity records the other client received */
static fake_cupti_calls calls;
static uint64_t hold_start;
static CUptiResult fail_subscribe, fail_enable;
static uint8_t *buf;
static size_t buf_size, buf_used;
static int buf_owner; /* who gave the buffer in flight (FAKE_CUPTI_OWNER_*) */
static size_t buf_max, buf_records, buf_foreign; /* its record limit, records, records of a
                                                  * client other than its owner */
static uint8_t *stranded[64]; /* buffers handed to a client that did not know them */
static int nstranded;
static uint64_t dropped;
static char *names[1024];
static int nnames;

static size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
  case CUPTI_ACTIVITY_KIND_KERNEL: return sizeof(CUpti_ActivityKernel10);
  case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
  case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
  default: return 0;
  }
}

static size_t aligned(size_t n) { return (n + 7) & ~(size_t)7; }

/* Hand the current buffer to whoever's callbacks are registered now, as CUDA 13.0's CUPTI does
 * (measured on H200: it keeps filling a buffer after another client registers its callbacks,
 * then hands it to that client). The other client, like Kineto, drops a buffer it did not
 * allocate ("unknown buffer"): the records of its own in there are lost to it. Called with the
 * lock held; releases it around the callback, as CUPTI calls back without the client's locks. */
static void deliver_locked(void) {
  if (!buf) return;
  uint8_t *b = buf;
  size_t size = buf_size, used = buf_used;
  int stranger = buf_owner != owner;
  if (stranger && owner == FAKE_CUPTI_OWNER_OTHER) calls.other_lost += buf_foreign;
  buf = NULL;
  buf_size = buf_used = buf_max = buf_records = buf_foreign = 0;
  if (stranger && owner == FAKE_CUPTI_OWNER_OTHER) {
    if (nstranded < 64) stranded[nstranded++] = b;
    return;
  }
  CUpti_BuffersCallbackCompleteFunc cb = on_complete;
  pthread_mutex_unlock(&lock);
  if (cb) cb(NULL, 0, b, size, used);
  pthread_mutex_lock(&lock);
}

/* Room for one record; NULL when the client gives no buffer. A buffer goes back once it is
 * full or holds the number of records its client asked for. Lock held. */
static void *reserve_locked(size_t n) {
  if (buf && buf_used + aligned(n) > buf_size) deliver_locked();
  if (!buf) {
    size_t max_records = 0;
    if (!on_request) return NULL;
    on_request(&buf, &buf_size, &max_records);
    buf_used = buf_records = buf_foreign = 0;
    buf_max = max_records;
    buf_owner = owner;
    if (!buf || buf_size < aligned(n)) {
      buf = NULL;
      dropped++;
      return NULL;
    }
  }
  void *p = buf + buf_used;
  memset(p, 0, aligned(n));
  buf_used += aligned(n);
  buf_records++;
  if (buf_owner != owner) buf_foreign++;
  return p;
}

/* After a record is written: a buffer at its client's record limit is complete. Lock held. */
static void written_locked(void) {
  if (buf && buf_max && buf_records >= buf_max) deliver_locked();
}

static const char *intern(const char *name) {
  for (int i = 0; i < nnames; i++)
    if (!strcmp(names[i], name)) return names[i];
  if (nnames == 1024) return "overflow";
  return names[nnames++] = strdup(name);
}

static uint64_t realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A call of the client other than subscribe/unsubscribe: counts when it holds a subscription
 * (topo must hold one only for the instant of a probe). Lock held. */
static void note_call_locked(void) {
  if (subscribed) calls.held_outside_probe++;
}

/* Register callbacks. A buffer in flight stays in flight: CUPTI goes on filling it. Lock held. */
static void register_locked(CUpti_BuffersCallbackRequestFunc req,
                            CUpti_BuffersCallbackCompleteFunc done, int who) {
  on_request = req;
  on_complete = done;
  owner = who;
}

static CUptiResult set_enabled_locked(CUpti_ActivityKind kind, int on) {
  switch (kind) {
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: enabled_kernel = on; break;
  case CUPTI_ACTIVITY_KIND_MEMCPY: enabled_memcpy = on; break;
  case CUPTI_ACTIVITY_KIND_MEMSET: enabled_memset = on; break;
  default: return CUPTI_ERROR_NOT_COMPATIBLE;
  }
  return CUPTI_SUCCESS;
}

/* ---- CUPTI entry points ---- */
EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud) {
  (void)cb;
  (void)ud;
  pthread_mutex_lock(&lock);
  CUptiResult r = CUPTI_SUCCESS;
  calls.subscribe++;
  if (fail_subscribe) r = fail_subscribe;
  else if (busy || subscribed) r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  if (r == CUPTI_SUCCESS) {
    subscribed = 1;
    calls.subscribe_ok++;
    hold_start = realtime_ns();
  } else if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    calls.subscribe_refused++;
  }
  pthread_mutex_unlock(&lock);
  if (s) *s = (CUpti_SubscriberHandle)(uintptr_t)(r == CUPTI_SUCCESS ? 1 : 0);
  return r;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s) {
  (void)s;
  pthread_mutex_lock(&lock);
  calls.unsubscribe++;
  if (subscribed) {
    uint64_t held = realtime_ns() - hold_start;
    if (held > calls.max_hold_ns) calls.max_hold_ns = held;
  }
  subscribed = 0;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                  CUpti_BuffersCallbackCompleteFunc done) {
  pthread_mutex_lock(&lock);
  note_call_locked();
  calls.register_callbacks++;
  register_locked(req, done, FAKE_CUPTI_OWNER_CLIENT);
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

static CUptiResult set_enabled(CUpti_ActivityKind kind, int on) {
  pthread_mutex_lock(&lock);
  note_call_locked();
  if (on) calls.enable++;
  else calls.disable++;
  CUptiResult r = on && fail_enable ? fail_enable : set_enabled_locked(kind, on);
  pthread_mutex_unlock(&lock);
  return r;
}
EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) { return set_enabled(kind, 1); }
EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) { return set_enabled(kind, 0); }

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **rec) {
  uint8_t *p;
  if (!*rec) {
    p = buffer;
  } else {
    size_t n = record_size((*rec)->kind);
    if (!n) return CUPTI_ERROR_INVALID_KIND;
    p = (uint8_t *)*rec + aligned(n);
  }
  if (p >= buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = (CUpti_Activity *)p;
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *n) {
  (void)ctx;
  (void)stream;
  pthread_mutex_lock(&lock);
  *n = (size_t)dropped;
  dropped = 0;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  pthread_mutex_lock(&lock);
  note_call_locked();
  calls.flush++;
  if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && owner == FAKE_CUPTI_OWNER_OTHER)
    calls.forced_flush_other++;
  if (owner == FAKE_CUPTI_OWNER_OTHER) calls.flush_other++;
  deliver_locked();
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

/* CUPTI's worker flushes full buffers this often; the fake only remembers the value. */
EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t ms) {
  pthread_mutex_lock(&lock);
  calls.flush_period_ms = (int)ms;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetTimestamp(uint64_t *ts) {
  *ts = realtime_ns() + (uint64_t)FAKE_CUPTI_CLOCK_OFFSET_NS;
  return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s) {
  switch (r) {
  case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    *s = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    break;
  case CUPTI_ERROR_NOT_INITIALIZED: *s = "CUPTI_ERROR_NOT_INITIALIZED"; break;
  case CUPTI_ERROR_UNKNOWN: *s = "CUPTI_ERROR_UNKNOWN"; break;
  default: *s = "fake CUPTI error";
  }
  return CUPTI_SUCCESS;
}

/* ---- control API ---- */
EXPORT void fake_cupti_set_busy(int b) {
  pthread_mutex_lock(&lock);
  busy = b;
  pthread_mutex_unlock(&lock);
}

EXPORT int fake_cupti_kernel(const char *name, uint64_t start, uint64_t end, uint32_t stream,
                             uint32_t device, uint32_t correlation) {
  pthread_mutex_lock(&lock);
  int ok = 0;
  if (enabled_kernel) {
    CUpti_ActivityKernel10 *k = reserve_locked(sizeof *k);
    if (k) {
      k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k->name = intern(name);
      k->start = start;
      k->end = end;
      k->streamId = stream;
      k->deviceId = device;
      k->contextId = 1;
      k->correlationId = correlation;
      ok = 1;
      written_locked();
    }
  }
  pthread_mutex_unlock(&lock);
  return ok;
}

EXPORT int fake_cupti_copy(int is_memset, uint64_t bytes, uint64_t start, uint64_t end,
                           uint32_t stream, uint32_t device) {
  pthread_mutex_lock(&lock);
  int ok = 0;
  if (!is_memset && enabled_memcpy) {
    CUpti_ActivityMemcpy6 *m = reserve_locked(sizeof *m);
    if (m) {
      m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
      m->bytes = bytes;
      m->start = start;
      m->end = end;
      m->streamId = stream;
      m->deviceId = device;
      m->contextId = 1;
      ok = 1;
      written_locked();
    }
  } else if (is_memset && enabled_memset) {
    CUpti_ActivityMemset4 *m = reserve_locked(sizeof *m);
    if (m) {
      m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
      m->bytes = bytes;
      m->start = start;
      m->end = end;
      m->streamId = stream;
      m->deviceId = device;
      m->contextId = 1;
      ok = 1;
      written_locked();
    }
  }
  pthread_mutex_unlock(&lock);
  return ok;
}

EXPORT void fake_cupti_add_dropped(uint64_t n) {
  pthread_mutex_lock(&lock);
  dropped += n;
  pthread_mutex_unlock(&lock);
}

EXPORT uint64_t fake_cupti_now(void) {
  return realtime_ns() + (uint64_t)FAKE_CUPTI_CLOCK_OFFSET_NS;
}

/* The other client's buffers: its own allocation, its own count. */
static void CUPTIAPI other_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = malloc(1 << 16);
  *size = *buffer ? 1 << 16 : 0;
  *max_records = 0;
}

static void CUPTIAPI other_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                     size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  uint64_t n = 0;
  CUpti_Activity *rec = NULL;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) n++;
  pthread_mutex_lock(&lock);
  other_records += n;
  pthread_mutex_unlock(&lock);
  free(buffer);
}

EXPORT int fake_cupti_other_attach(int activity) {
  pthread_mutex_lock(&lock);
  int ok = !subscribed && !busy;
  if (ok) {
    busy = 1;
    other_activity = activity;
    if (activity) {
      register_locked(other_requested, other_completed, FAKE_CUPTI_OWNER_OTHER);
      enabled_kernel = enabled_memcpy = enabled_memset = 1;
    }
  }
  pthread_mutex_unlock(&lock);
  return ok;
}

EXPORT void fake_cupti_other_detach(void) {
  pthread_mutex_lock(&lock);
  if (busy && other_activity) {
    enabled_kernel = enabled_memcpy = enabled_memset = 0;
    deliver_locked();
  }
  busy = other_activity = 0;
  pthread_mutex_unlock(&lock);
}

EXPORT uint64_t fake_cupti_other_records(void) {
  pthread_mutex_lock(&lock);
  uint64_t n = other_records;
  pthread_mutex_unlock(&lock);
  return n;
}

EXPORT void fake_cupti_get_calls(fake_cupti_calls *out) {
  pthread_mutex_lock(&lock);
  *out = calls;
  out->subscribed = subscribed;
  out->owner = owner;
  out->kernel_enabled = enabled_kernel;
  out->memcpy_enabled = enabled_memcpy;
  out->memset_enabled = enabled_memset;
  pthread_mutex_unlock(&lock);
}

EXPORT void fake_cupti_fail(int subscribe, int enable) {
  pthread_mutex_lock(&lock);
  fail_subscribe = (CUptiResult)subscribe;
  fail_enable = (CUptiResult)enable;
  pthread_mutex_unlock(&lock);
}

EXPORT void fake_cupti_reset(void) {
  pthread_mutex_lock(&lock);
  busy = subscribed = enabled_kernel = enabled_memcpy = enabled_memset = 0;
  owner = other_activity = 0;
  other_records = 0;
  memset(&calls, 0, sizeof calls);
  fail_subscribe = fail_enable = CUPTI_SUCCESS;
  on_request = NULL;
  on_complete = NULL;
  free(buf);
  buf = NULL;
  buf_size = buf_used = buf_max = buf_records = buf_foreign = 0;
  buf_owner = 0;
  for (int i = 0; i < nstranded; i++) free(stranded[i]);
  nstranded = 0;
  dropped = 0;
  for (int i = 0; i < nnames; i++) free(names[i]);
  nnames = 0;
  pthread_mutex_unlock(&lock);
}

__attribute__((destructor)) static void unload(void) {
  for (int i = 0; i < nnames; i++) free(names[i]);
  nnames = 0;
}
