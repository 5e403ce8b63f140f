// SPDX-License-Identifier: Apache-2.0
// Optional CUPTI timeline (TOPO_PROFILER_CUPTI=1): dlopen'ed at run time (never linked), it
// subscribes once (so a profiler that already holds CUPTI - Nsight Systems, PyTorch's profiler -
// is detected and left alone), enables the concurrent-kernel activity kind (which does not
// serialise kernels) plus memcpy/memset, and turns the records CUPTI hands back in its buffer
// callbacks into topo_rec_kernel records (names as topo_rec_string) of the process-wide trace.
// CUPTI's threads call the buffer callbacks; the writer thread polls a flush now and then.
#define _GNU_SOURCE 1 /* dladdr, RTLD_NODELETE */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"
#include "env.h"
#include "internal.h"
#include "log.h"

#ifdef TOPO_HAVE_CUPTI
#include <cupti.h>

#define BUFFER_SIZE (4u << 20)
#define NAME_SLOTS 4096
#define POLL_NS 500000000LL

typedef struct api {
  void *lib;
  CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                    CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*enable)(CUpti_ActivityKind);
  CUptiResult (*disable)(CUpti_ActivityKind);
  CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
  CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
  CUptiResult (*flush_all)(uint32_t);
  CUptiResult (*timestamp)(uint64_t *);
  CUptiResult (*result_string)(CUptiResult, const char **);
} api;

static api cu;
static topo_comm *out;
static CUpti_SubscriberHandle subscriber;
static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;   /* start/stop/poll */
static pthread_mutex_t name_lock = PTHREAD_MUTEX_INITIALIZER;  /* name table */
static atomic_int active;
static int64_t last_poll;
static struct {
  char *name;
  uint32_t id;
} names[NAME_SLOTS];
static uint32_t next_name_id;

static const char *errstr(CUptiResult r) {
  const char *s = NULL;
  if (cu.result_string && cu.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "unknown CUPTI error";
}

static void push(const topo_trace_record *r) {
  if (!topo_writer_push(out, r)) atomic_fetch_add(&out->dropped[TOPO_DROP_CUPTI], 1);
}

/* The string id of a kernel name, emitting its STRING records the first time. */
static uint32_t name_id(const char *name) {
  if (!name || !*name) return 0;
  uint32_t h = 2166136261u;
  for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
  uint32_t id = 0;
  pthread_mutex_lock(&name_lock);
  for (uint32_t probe = 0; probe < NAME_SLOTS; probe++) {
    uint32_t i = (h + probe) & (NAME_SLOTS - 1);
    if (!names[i].name) {
      char *copy = topo_strdup(name);
      if (!copy) break;
      names[i].name = copy;
      names[i].id = id = ++next_name_id;
      size_t len = strlen(name);
      for (size_t off = 0; off < len || off == 0; off += 48) {
        topo_trace_record r;
        memset(&r, 0, sizeof r);
        r.string.type = TOPO_REC_STRING;
        r.string.id = id;
        r.string.len = (uint8_t)(len - off < 48 ? len - off : 48);
        memcpy(r.string.text, name + off, r.string.len);
        if (off + 48 >= len) r.string.flags = TOPO_STRING_F_LAST;
        push(&r);
        if (len == 0) break;
      }
      break;
    }
    if (strcmp(names[i].name, name) == 0) {
      id = names[i].id;
      break;
    }
  }
  pthread_mutex_unlock(&name_lock);
  return id;
}

static int is_nccl_kernel(const char *name) {
  return name && (!strncmp(name, "ncclDevKernel", 13) || !strncmp(name, "ncclKernel", 10));
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = topo_malloc(BUFFER_SIZE);
  *size = *buffer ? BUFFER_SIZE : 0;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
  CUpti_Activity *rec = NULL;
  while (out && cu.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    topo_trace_record r;
    memset(&r, 0, sizeof r);
    r.kernel.type = TOPO_REC_KERNEL;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
      r.kernel.kind = is_nccl_kernel(k->name) ? TOPO_KERNEL_NCCL : TOPO_KERNEL_COMPUTE;
      r.kernel.device = (uint16_t)k->deviceId;
      r.kernel.name_id = name_id(k->name);
      r.kernel.gpu_start_ns = (int64_t)k->start;
      r.kernel.gpu_stop_ns = (int64_t)k->end;
      r.kernel.correlation = k->correlationId;
      r.kernel.stream_id = k->streamId;
      r.kernel.context_id = k->contextId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
      r.kernel.kind = TOPO_KERNEL_MEMCPY;
      r.kernel.device = (uint16_t)m->deviceId;
      r.kernel.gpu_start_ns = (int64_t)m->start;
      r.kernel.gpu_stop_ns = (int64_t)m->end;
      r.kernel.correlation = m->correlationId;
      r.kernel.stream_id = m->streamId;
      r.kernel.context_id = m->contextId;
      r.kernel.bytes = m->bytes;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
      r.kernel.kind = TOPO_KERNEL_MEMSET;
      r.kernel.device = (uint16_t)m->deviceId;
      r.kernel.gpu_start_ns = (int64_t)m->start;
      r.kernel.gpu_stop_ns = (int64_t)m->end;
      r.kernel.correlation = m->correlationId;
      r.kernel.stream_id = m->streamId;
      r.kernel.context_id = m->contextId;
      r.kernel.bytes = m->bytes;
      break;
    }
    default:
      continue;
    }
    push(&r);
  }
  size_t dropped = 0;
  if (out && cu.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
    atomic_fetch_add(&out->dropped[TOPO_DROP_CUPTI], dropped);
  topo_free(buffer);
  (void)size;
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void *data) {
  (void)userdata;
  (void)domain;
  (void)cbid;
  (void)data;
}

#define LOAD(field, sym)                                      \
  do {                                                        \
    *(void **)(&cu.field) = dlsym(cu.lib, sym);               \
    if (!cu.field) {                                          \
      missing = sym;                                          \
      goto fail;                                              \
    }                                                         \
  } while (0)

/* Once CUPTI has our buffer callbacks, nothing can take them back (activity callbacks cannot be
 * unregistered), and CUPTI may call them until the process exits, after NCCL dlcloses this
 * plugin at its last communicator's destruction. So the plugin pins itself in memory
 * (RTLD_NODELETE) the first time CUPTI starts; its state is still reset by the last finalize. */
static void pin_self(void) {
  static int pinned;
  Dl_info info;
  if (pinned || !dladdr((void *)&pin_self, &info) || !info.dli_fname) return;
  if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) pinned = 1;
}

int topo_cupti_start(topo_comm *c) {
  const char *missing = NULL;
  const char *lib = topo_env_str(TOPO_ENV_PROFILER_CUPTI_LIB);
  memset(&cu, 0, sizeof cu);
  if (*lib) {
    cu.lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  } else {
    lib = "libcupti.so.13";
    cu.lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) cu.lib = dlopen(lib = "libcupti.so", RTLD_NOW | RTLD_LOCAL);
  }
  if (!cu.lib) {
    TOPO_WARN("TOPO/Profiler: TOPO_PROFILER_CUPTI=1 but CUPTI could not be loaded (%s); "
              "carrying on without the kernel timeline", dlerror());
    return 0;
  }
  LOAD(subscribe, "cuptiSubscribe");
  LOAD(unsubscribe, "cuptiUnsubscribe");
  LOAD(register_callbacks, "cuptiActivityRegisterCallbacks");
  LOAD(enable, "cuptiActivityEnable");
  LOAD(disable, "cuptiActivityDisable");
  LOAD(next_record, "cuptiActivityGetNextRecord");
  LOAD(dropped, "cuptiActivityGetNumDroppedRecords");
  LOAD(flush_all, "cuptiActivityFlushAll");
  LOAD(timestamp, "cuptiGetTimestamp");
  *(void **)(&cu.result_string) = dlsym(cu.lib, "cuptiGetResultString");

  CUptiResult r = cu.subscribe(&subscriber, on_callback, NULL);
  if (r != CUPTI_SUCCESS) {
    TOPO_WARN("TOPO/Profiler: CUPTI is already in use (%s: another profiler such as Nsight Systems "
              "or the PyTorch profiler holds it); carrying on without the kernel timeline",
              errstr(r));
    goto fail_quiet;
  }
  out = c;
  if ((r = cu.register_callbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS ||
      (r = cu.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS) {
    TOPO_WARN("TOPO/Profiler: CUPTI activity setup failed (%s); carrying on without the kernel "
              "timeline", errstr(r));
    cu.unsubscribe(subscriber);
    out = NULL;
    goto fail_quiet;
  }
  cu.enable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cu.enable(CUPTI_ACTIVITY_KIND_MEMSET);
  uint64_t ts = 0;
  if (cu.timestamp(&ts) == CUPTI_SUCCESS && ts)
    c->header.cupti_minus_realtime_ns = (int64_t)ts - topo_clock_realtime_ns();
  last_poll = topo_clock_monotonic_ns();
  atomic_store(&active, 1);
  pin_self();
  TOPO_INFO(NCCL_INIT, "TOPO/Profiler: CUPTI kernel timeline on (%s)", lib);
  return 1;
fail:
  TOPO_WARN("TOPO/Profiler: %s lacks %s; carrying on without the kernel timeline", lib, missing);
fail_quiet:
  dlclose(cu.lib);
  memset(&cu, 0, sizeof cu);
  return 0;
}

void topo_cupti_poll(int64_t now) {
  if (!atomic_load(&active) || now - last_poll < POLL_NS) return;
  pthread_mutex_lock(&api_lock);
  if (atomic_load(&active)) {
    last_poll = now;
    cu.flush_all(0);
  }
  pthread_mutex_unlock(&api_lock);
}

void topo_cupti_stop(void) {
  pthread_mutex_lock(&api_lock);
  if (atomic_exchange(&active, 0)) {
    cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cu.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cu.disable(CUPTI_ACTIVITY_KIND_MEMCPY);
    cu.disable(CUPTI_ACTIVITY_KIND_MEMSET);
    cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cu.unsubscribe(subscriber);
    out = NULL;
    /* libcupti stays loaded: the CUDA driver keeps hooks into it for the life of the process,
     * and unloading it made processes crash at exit on real GPUs (SIGSEGV after the last
     * ncclCommDestroy). A later start dlopens it again and gets the same handle. */
    memset(&cu, 0, sizeof cu);
    pthread_mutex_lock(&name_lock);
    for (int i = 0; i < NAME_SLOTS; i++) {
      topo_free(names[i].name);
      names[i].name = NULL;
    }
    next_name_id = 0;
    pthread_mutex_unlock(&name_lock);
  }
  pthread_mutex_unlock(&api_lock);
}
#else
int topo_cupti_start(topo_comm *c) {
  (void)c;
  TOPO_WARN("TOPO/Profiler: built without CUPTI headers; TOPO_PROFILER_CUPTI ignored");
  return 0;
}
void topo_cupti_poll(int64_t now) { (void)now; }
void topo_cupti_stop(void) {}
#endif
