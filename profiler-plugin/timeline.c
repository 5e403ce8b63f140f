// SPDX-License-Identifier: Apache-2.0
// The CUPTI compute timeline (TOPO_PROFILER_CUPTI): CUPTI's activity records of kernels (the
// concurrent-kernel kind, which does not serialise kernels), memcpy and memset become
// topo_rec_kernel records of the process-wide trace (comm hash 0, names as topo_rec_string),
// recorded in spans - continuously (`on`), for a window every period (`window`, the default), or
// while a trigger file exists - each span described by a topo_rec_cupti record.
//
// CUPTI allows one subscriber per process and its activity state (enabled kinds, buffer
// callbacks) is process-wide, so the timeline must never stand in another client's way
// (torch.profiler/Kineto, Nsight Systems, ...). topo never holds a subscription: it probes
// (cuptiSubscribe, then cuptiUnsubscribe at once) at a window start and at each poll of an open
// span. A start that finds another client writes DECLINED and touches nothing; a span during which
// one arrives ends YIELDED, with no cuptiActivityDisable, no re-registration and no flush
// (the kinds and callbacks are the other client's from then on, and so is the work still queued);
// CUPTI gets one record per buffer from topo, so no buffer of topo's stays open to swallow that
// client's records. Later windows probe again. An injected tool
// (CUDA_INJECTION64_PATH, Nsight Systems' NSYS_* variables) counts as another client for the
// life of the process and CUPTI is then never loaded.
//
// Threads: topo_timeline_configure runs on the first init's thread; topo_timeline_load/begin on
// the writer thread once the start is due (the core decides: with the writer for `on` and a
// trigger file, else at the first large collective or one period after init),
// topo_timeline_poll on it from then on; topo_timeline_stop at the last finalize or exit; all of
// them under api_lock. CUPTI's threads (or the caller of a flush) run the buffer callbacks, under
// out_lock. libcupti is dlopen'ed (never linked) and never unloaded. Its records go to the trace
// writer (topo_writer_push); it calls nothing of the core's (timeline.h).
#define _GNU_SOURCE 1 /* dladdr, RTLD_NODELETE */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "timeline.h"

#include "alloc.h"
#include "clock.h"
#include "env.h"
#include "log.h"
#include "step_sched.h"
#include "trace_writer.h"

extern char **environ;

enum { MODE_OFF = 0, MODE_ON, MODE_WINDOW };

static int mode;          /* set by topo_timeline_configure (init thread, before any start) */
static topo_sched *sched; /* the step schedule (window mode), set before the writer starts */
static int64_t defer_ns;  /* likewise: how long the start may wait for traffic (0 = none) */
static char description[192];

static int parse_mode(void) {
  static const char *off[] = {"off", "0", "false", "no"};
  static const char *on[] = {"on", "1", "true", "yes"};
  static atomic_int warned;
  const char *s = topo_env_str(TOPO_ENV_PROFILER_CUPTI);
  for (size_t i = 0; i < 4; i++) {
    if (!strcasecmp(s, off[i])) return MODE_OFF;
    if (!strcasecmp(s, on[i])) return MODE_ON;
  }
  if (!strcasecmp(s, "window")) return MODE_WINDOW;
  if (!atomic_exchange(&warned, 1))
    TOPO_WARN(
        "TOPO_PROFILER_CUPTI=\"%.64s\" ignored (not off, on or window); using the default "
        "window",
        s);
  return MODE_WINDOW;
}

#ifdef TOPO_HAVE_CUPTI
#include <cupti.h>

/* One record per buffer. Once another client registers its buffer callbacks, CUPTI keeps
 * filling the buffers it got from us and hands them to that client, which does not know them and
 * drops them (Kineto: "bufferCompleted called with unknown buffer"): every record of the other
 * client's that lands in one is lost to it. With buffers of 4 KiB filled to the brim,
 * torch.profiler started beside TOPO_PROFILER_CUPTI=on kept 2901 of its 2912 GPU events; with
 * one record per buffer all 2912 on both ranks (tests/gpu/truth_one_gpu.sh, run B). Buffers are
 * recycled through a small free list, so a record costs no allocation. A buffer holds the
 * largest record of the kinds enabled (CUpti_ActivityKernel10: 216 bytes in CUDA 13). */
#ifndef TOPO_CUPTI_MAX_RECORDS
#define TOPO_CUPTI_MAX_RECORDS 1
#endif
#ifndef TOPO_CUPTI_BUFFER_BYTES
#define TOPO_CUPTI_BUFFER_BYTES (TOPO_CUPTI_MAX_RECORDS ? 1024u : 4096u)
#endif
/* 1: a FORCED flush when stepping aside, as topo did before measuring it: CUPTI then ends the
 * other client's records of work still queued with zero timestamps and that client drops them
 * (torch.profiler kept 31-47 % of its GPU events). Only to rerun that measurement. */
/* 1: an unforced flush when stepping aside (the code before 2026-12-02; by default only a build
 * with buffers of several records does it). Only to rerun that measurement. */
#ifndef TOPO_CUPTI_YIELD_FLUSH
#define TOPO_CUPTI_YIELD_FLUSH (TOPO_CUPTI_MAX_RECORDS != 1)
#endif
#ifndef TOPO_CUPTI_YIELD_FORCED
#define TOPO_CUPTI_YIELD_FORCED 0
#endif
/* While a span is open CUPTI's own worker hands back finished buffers this often (ms; 0: only
 * at topo's polls). A buffer of ours that is still queued when another client registers its
 * callbacks goes to that client, which logs one error line per buffer (Kineto: "bufferCompleted
 * called with unknown buffer"): with a poll every 0.5 s that was 352-553 lines when
 * torch.profiler started inside a window on the H200 DDP job, with this flush 151-154 (torch's
 * trace complete either way: tests/gpu/cupti_flush_period.sh). A periodic flush returns only
 * full buffers whose records are complete, so it never ends another client's records early. */
#ifndef TOPO_CUPTI_FLUSH_PERIOD_MS
#define TOPO_CUPTI_FLUSH_PERIOD_MS 10
#endif
#define SPARE_BUFFERS 64 /* recycled buffers kept; more in flight are allocated and freed */
#define BUFFER_SIZE   TOPO_CUPTI_BUFFER_BYTES
#define NAME_SLOTS    4096
/* An open span: probe for another client, then (alone) hand back finished buffers, this often.
 * Not faster: a flush while another client runs can land its buffers in its queue just before
 * it clears that queue (torch.profiler between warm-up and recording): with a flush every 20 ms
 * torch kept 1552-1553 of its 1556 GPU events, with 500 ms all (tests/gpu/cupti_coexist.sh). */
#define POLL_NS        500000000LL
#define TRIGGER_NS     500000000LL  /* the trigger file: checked this often */
#define TIME_WINDOW_NS 2000000000LL /* a window of fixed length lasts min(this, the cap) */

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
  CUptiResult (*flush_period)(uint32_t); /* optional */
} api;

static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                           CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;  /* cu, st, CUPTI calls */
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;  /* out, for the buffer callbacks */
static pthread_mutex_t name_lock = PTHREAD_MUTEX_INITIALIZER; /* name table */
static api cu;
static topo_comm *out;
static atomic_int armed;          /* between begin and stop: the poll has work */
static _Atomic(int64_t) next_due; /* the poll takes the lock from this monotonic time on */
static _Atomic(int64_t)
    first_traffic; /* CLOCK_MONOTONIC of the first large collective, 0 = none yet */
static _Atomic(uint64_t) delivered; /* activity records pushed since the span opened */

/* Under api_lock. */
static struct {
  topo_comm *c;
  int64_t window_ns, period_ns;
  char trigger[4096];   /* TOPO_PROFILER_CUPTI_TRIGGER: at most 4095 bytes (env.def) */
  char other[160];      /* an injected tool: another client for the life of the process */
  char load_error[256]; /* why CUPTI could not be loaded ("" = loaded, or not tried) */
  int failed;           /* FAILED written: CUPTI is not touched again */
  int recording;        /* our kinds are enabled and a span is open */
  int declined;         /* the last start attempt found another client (logs once per run) */
  int trigger_on;
  int64_t t0;         /* windows open at t0 + k * period: init, then the first large collective */
  int anchored;       /* t0 has seen the first large collective */
  int64_t next_start; /* next scheduled start attempt */
  int64_t span_start, window_end, last_alone, next_poll, next_trigger_check, retry_after;
  uint64_t dropped_at_start;
  topo_sched_window win; /* what the open span (or the last start) was for */
  int64_t sched_next;    /* when the step schedule wants to be asked again */
} st;

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

/* Caller holds out_lock, or api_lock while out is being set up or torn down by that thread. */
static void push(const topo_trace_record *r) {
  if (out && !topo_writer_push(out, r)) atomic_fetch_add(&out->dropped[TOPO_DROP_CUPTI], 1);
}

/* The string id of `name`, emitting its STRING records the first time. */
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
      for (size_t off = 0; off < len; off += 48) {
        topo_trace_record r;
        memset(&r, 0, sizeof r);
        r.string.type = TOPO_REC_STRING;
        r.string.id = id;
        r.string.len = (uint8_t)(len - off < 48 ? len - off : 48);
        memcpy(r.string.text, name + off, r.string.len);
        if (off + 48 >= len) r.string.flags = TOPO_STRING_F_LAST;
        push(&r);
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

/* NCCL's kernels: ncclDevKernel_* (2.19+), ncclKernel_* (older), ncclSymkDevKernel_* (symmetric
 * kernels, 2.27+). */
static int is_nccl_kernel(const char *name) {
  return name && (!strncmp(name, "ncclDevKernel", 13) || !strncmp(name, "ncclKernel", 10) ||
                  !strncmp(name, "ncclSymkDevKernel", 17));
}

/* Recycled buffers (CUPTI's threads, any number at once). */
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *spare[SPARE_BUFFERS];
static int spares;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  uint8_t *b = NULL;
  pthread_mutex_lock(&spare_lock);
  if (spares) b = spare[--spares];
  pthread_mutex_unlock(&spare_lock);
  if (!b) b = topo_malloc(BUFFER_SIZE);
  *buffer = b;
  *size = b ? BUFFER_SIZE : 0;
  *max_records = TOPO_CUPTI_MAX_RECORDS;
}

static void buffer_release(uint8_t *b) {
  pthread_mutex_lock(&spare_lock);
  if (spares < SPARE_BUFFERS) {
    spare[spares++] = b;
    b = NULL;
  }
  pthread_mutex_unlock(&spare_lock);
  topo_free(b);
}

/* Work unfinished at a flush comes back with 0 (or all-ones) timestamps: nothing was measured.
 * Counted as a CUPTI drop. Caller holds out_lock. */
static int unfinished(uint64_t start, uint64_t end) {
  if (start && start < (uint64_t)INT64_MAX && end > start) return 0;
  if (out) atomic_fetch_add(&out->dropped[TOPO_DROP_CUPTI], 1);
  return 1;
}

/* CUPTI hands back a buffer (ours: CUPTI may call this until the process exits, also after the
 * last finalize, when the records are dropped). */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
  pthread_mutex_lock(&out_lock);
  CUpti_Activity *rec = NULL;
  while (out && cu.next_record && cu.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    topo_trace_record r;
    memset(&r, 0, sizeof r);
    r.kernel.type = TOPO_REC_KERNEL;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
      if (unfinished(k->start, k->end)) continue;
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
      if (unfinished(m->start, m->end)) continue;
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
      if (unfinished(m->start, m->end)) continue;
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
    default: continue;
    }
    push(&r);
    atomic_fetch_add(&delivered, 1);
  }
  size_t dropped = 0;
  if (out && cu.dropped && cu.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
    atomic_fetch_add(&out->dropped[TOPO_DROP_CUPTI], dropped);
  pthread_mutex_unlock(&out_lock);
  buffer_release(buffer);
  (void)size;
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data) {
  (void)userdata;
  (void)domain;
  (void)cbid;
  (void)data;
}

/* Once CUPTI has our buffer callbacks, nothing can take them back (activity callbacks cannot be
 * unregistered), and CUPTI may call them until the process exits, after NCCL dlcloses this
 * plugin at its last communicator's destruction. So the plugin pins itself in memory
 * (RTLD_NODELETE) the first time it registers them; its state is still reset by the last
 * finalize. */
static void pin_self(void) {
  static int pinned;
  Dl_info info;
  if (pinned || !dladdr((void *)&pin_self, &info) || !info.dli_fname) return;
  if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) pinned = 1;
}

/* ---- span records ---- */
static void span_record(int state, int64_t start, int64_t stop, const char *name) {
  topo_trace_record r;
  memset(&r, 0, sizeof r);
  r.cupti.type = TOPO_REC_CUPTI;
  r.cupti.state = (uint8_t)state;
  r.cupti.name_id = name_id(name);
  r.cupti.cpu_start_ns = start;
  r.cupti.cpu_stop_ns = stop;
  r.cupti.window = st.win.kind;
  if (st.win.kind == TOPO_CUPTI_WINDOW_STEPS) {
    r.cupti.period = st.win.period;
    r.cupti.steps = st.win.steps;
    r.cupti.step_ns = st.win.step_ns;
  }
  if (state == TOPO_CUPTI_RECORDED || state == TOPO_CUPTI_YIELDED) {
    r.cupti.records = atomic_load(&delivered);
    r.cupti.dropped = atomic_load(&st.c->dropped[TOPO_DROP_CUPTI]) - st.dropped_at_start;
  }
  pthread_mutex_lock(&out_lock);
  push(&r);
  pthread_mutex_unlock(&out_lock);
}

/* A span's records and drops count from here. */
static void span_open(int64_t now) {
  st.span_start = st.last_alone = now;
  st.next_poll = now + POLL_NS;
  atomic_store(&delivered, 0);
  st.dropped_at_start = atomic_load(&st.c->dropped[TOPO_DROP_CUPTI]);
}

/* Warnings for what the user asked for explicitly; INFO for the default. */
#define NOTE(...)                                                         \
  do {                                                                    \
    if (topo_env_is_set(TOPO_ENV_PROFILER_CUPTI)) TOPO_WARN(__VA_ARGS__); \
    else TOPO_INFO(NCCL_INIT, __VA_ARGS__);                               \
  } while (0)

static void fail(int64_t now, const char *why) {
  NOTE(
      "TOPO/Profiler: CUPTI unavailable (%s); carrying on without the compute timeline "
      "(TOPO_PROFILER_CUPTI=off skips it)",
      why);
  span_record(TOPO_CUPTI_FAILED, now, now, why);
  st.failed = 1;
  st.recording = 0;
}

enum { PROBE_ALONE, PROBE_OTHER, PROBE_ERROR };

/* Is another client subscribed? Holds the subscriber slot for the duration of two calls. */
static int probe(CUptiResult *err) {
  CUpti_SubscriberHandle h = NULL;
  CUptiResult r = cu.subscribe(&h, on_callback, NULL);
  if (r == CUPTI_SUCCESS) {
    cu.unsubscribe(h);
    return PROBE_ALONE;
  }
  if (err) *err = r;
  return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? PROBE_OTHER : PROBE_ERROR;
}

static void decline(int64_t now, const char *who) {
  if (!st.declined)
    TOPO_INFO(NCCL_INIT,
              "TOPO/Profiler: another CUPTI client is there (%s); the compute timeline "
              "steps aside and tries again every %lld s",
              who ? who : "a subscriber", (long long)(st.period_ns / 1000000000LL));
  st.declined = 1;
  span_record(TOPO_CUPTI_DECLINED, now, now, who);
  st.retry_after = now + st.period_ns;
}

/* Open a span if topo is alone: register our callbacks, enable our kinds. */
static void start_span(int64_t now) {
  if (st.failed) return;
  if (st.other[0]) {
    decline(now, st.other);
    return;
  }
  CUptiResult r = CUPTI_SUCCESS;
  char why[160];
  switch (probe(&r)) {
  case PROBE_OTHER: decline(now, NULL); return;
  case PROBE_ERROR:
    snprintf(why, sizeof why, "cuptiSubscribe: %s", errstr(r));
    fail(now, why);
    return;
  }
  if ((r = cu.register_callbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS) {
    snprintf(why, sizeof why, "cuptiActivityRegisterCallbacks: %s", errstr(r));
    fail(now, why);
    return;
  }
  pin_self();
  if ((r = cu.enable(kinds[0])) != CUPTI_SUCCESS) {
    snprintf(why, sizeof why, "cuptiActivityEnable(CONCURRENT_KERNEL): %s", errstr(r));
    fail(now, why);
    return;
  }
  cu.enable(kinds[1]);
  cu.enable(kinds[2]);
  if (cu.flush_period && TOPO_CUPTI_FLUSH_PERIOD_MS) cu.flush_period(TOPO_CUPTI_FLUSH_PERIOD_MS);
  if (st.declined)
    TOPO_INFO(NCCL_INIT, "TOPO/Profiler: CUPTI is free again; the compute timeline is back");
  st.declined = 0;
  st.recording = 1;
  span_open(now);
}

/* Close the open span: disable and flush when topo is alone, else (`other`) step aside. */
static void end_span(int64_t now, int other) {
  /* CUPTI's worker back to its default (off): no periodic wake-up outside topo's spans */
  if (cu.flush_period && TOPO_CUPTI_FLUSH_PERIOD_MS) cu.flush_period(0);
  if (other) {
    /* The kinds and the buffer callbacks now serve the other client: leave them be. The span
     * is known complete up to the last probe that found topo alone. */
    TOPO_INFO(NCCL_INIT,
              "TOPO/Profiler: another CUPTI client arrived; the compute timeline "
              "steps aside and tries again every %lld s",
              (long long)(st.period_ns / 1000000000LL));
    /* No flush: the buffer callbacks are the other client's now, so a flush would hand its
     * buffers (and what is left of ours) to it at a moment of topo's choosing, not its own.
     * With one record per buffer no buffer of ours is left half full to take the other
     * client's records. FORCED
     * (TOPO_CUPTI_YIELD_FORCED) would also end its records of work still running with zero
     * timestamps, and it would lose them; a build with buffers of several records flushes
     * unforced, so that CUPTI starts the other client's buffers. */
    if (TOPO_CUPTI_YIELD_FORCED || TOPO_CUPTI_YIELD_FLUSH)
      cu.flush_all(TOPO_CUPTI_YIELD_FORCED ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    span_record(TOPO_CUPTI_YIELDED, st.span_start, st.last_alone, NULL);
    st.declined = 1;
    st.retry_after = now + st.period_ns;
  } else {
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) cu.disable(kinds[i]);
    cu.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    /* Drops CUPTI counted after the last buffer came back are read here, not at a completion. */
    size_t dropped = 0;
    if (cu.dropped(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped)
      atomic_fetch_add(&st.c->dropped[TOPO_DROP_CUPTI], dropped);
    span_record(TOPO_CUPTI_RECORDED, st.span_start, now, NULL);
  }
  st.recording = 0;
}

/* Nsight Systems and other tools inject themselves through CUDA_INJECTION64_PATH; nsys also
 * exports NSYS_* variables. Either means a CUPTI client topo cannot probe for reliably. */
static void find_injection(void) {
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  if (inj && *inj) {
    snprintf(st.other, sizeof st.other, "CUDA_INJECTION64_PATH=%s", inj);
    return;
  }
  for (char **e = environ; e && *e; e++)
    if (!strncmp(*e, "NSYS_", 5)) {
      snprintf(st.other, sizeof st.other, "Nsight Systems (%.*s)", (int)strcspn(*e, "="), *e);
      return;
    }
}

#define LOAD(field, sym)                                                      \
  do {                                                                        \
    *(void **)(&cu.field) = dlsym(cu.lib, sym);                               \
    if (!cu.field) {                                                          \
      snprintf(st.load_error, sizeof st.load_error, "%s lacks %s", lib, sym); \
      memset(&cu, 0, sizeof cu);                                              \
      return;                                                                 \
    }                                                                         \
  } while (0)

static void load(void) {
  const char *lib = topo_env_str(TOPO_ENV_PROFILER_CUPTI_LIB);
  if (*lib) {
    cu.lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  } else {
    lib = "libcupti.so.13";
    cu.lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) cu.lib = dlopen(lib = "libcupti.so", RTLD_NOW | RTLD_LOCAL);
  }
  if (!cu.lib) {
    const char *e = dlerror();
    snprintf(st.load_error, sizeof st.load_error, "%s", e ? e : "dlopen failed");
    return;
  }
  /* libcupti stays loaded: the CUDA driver keeps hooks into it for the life of the process,
   * and unloading it made processes crash at exit on real GPUs. */
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
  *(void **)(&cu.flush_period) = dlsym(cu.lib, "cuptiActivityFlushPeriod");
  TOPO_INFO(NCCL_INIT, "TOPO/Profiler: CUPTI loaded (%s) for the compute timeline, %s", lib,
            description);
}

int topo_timeline_load(topo_comm *c) {
  if (mode == MODE_OFF) return 0;
  pthread_mutex_lock(&api_lock);
  memset(&st, 0, sizeof st);
  st.c = c;
  st.window_ns = topo_env_int(TOPO_ENV_PROFILER_CUPTI_WINDOW_MS) * 1000000LL;
  if (st.window_ns > TIME_WINDOW_NS) st.window_ns = TIME_WINDOW_NS; /* without the schedule */
  st.period_ns = topo_env_int(TOPO_ENV_PROFILER_CUPTI_PERIOD_S) * 1000000000LL;
  snprintf(st.trigger, sizeof st.trigger, "%s", topo_env_str(TOPO_ENV_PROFILER_CUPTI_TRIGGER));
  find_injection();
  if (!st.other[0]) load();
  if (st.period_ns <= 0) st.period_ns = 60000000000LL;
  uint64_t ts = 0;
  if (!st.other[0] && cu.lib && cu.timestamp(&ts) == CUPTI_SUCCESS && ts)
    c->header.cupti_minus_realtime_ns = (int64_t)ts - topo_clock_realtime_ns();
  pthread_mutex_unlock(&api_lock);
  return 1;
}

/* Windows that follow the step schedule: `window` mode with the schedule, outside a trigger. */
static int scheduled(void) {
  return mode == MODE_WINDOW && sched && st.win.kind != TOPO_CUPTI_WINDOW_TRIGGER;
}

/* When the poll next has something to do. */
static void schedule(int64_t now) {
  int64_t due = INT64_MAX;
  if (st.failed) {
    atomic_store(&next_due, due);
    return;
  }
  if (st.recording) {
    due = st.next_poll;
    if (st.window_end > now && st.window_end < due) due = st.window_end;
    if (scheduled() && st.sched_next < due) due = st.sched_next;
  } else if (scheduled()) {
    due = st.sched_next > st.retry_after ? st.sched_next : st.retry_after;
  } else {
    while (st.next_start <= now) st.next_start += st.period_ns;
    due = st.next_start;
  }
  if (st.trigger[0] && st.next_trigger_check < due) due = st.next_trigger_check;
  atomic_store(&next_due, due);
  /* A first large collective noted while we computed `due` must not wait for it. */
  if (mode == MODE_WINDOW && !st.anchored && atomic_load(&first_traffic))
    atomic_store(&next_due, 0);
}

static int trigger_present(int64_t now) {
  if (!st.trigger[0]) return 0;
  if (now >= st.next_trigger_check) {
    st.trigger_on = access(st.trigger, F_OK) == 0;
    st.next_trigger_check = now + TRIGGER_NS;
  }
  return st.trigger_on;
}

/* A new generation starts without the traffic of the last one (whose start may never have
 * happened, so its stop did not clear it). */
static void reset_traffic(void) { atomic_store(&first_traffic, 0); }

void topo_timeline_note_traffic(void) {
  if (atomic_load_explicit(&first_traffic, memory_order_relaxed)) return;
  int64_t none = 0;
  if (atomic_compare_exchange_strong(&first_traffic, &none, topo_clock_monotonic_ns()))
    atomic_store_explicit(&next_due, 0, memory_order_relaxed); /* the next writer tick acts */
}

/* A span the step schedule asked for (w) starts; when it cannot (another client, a failure), the
 * schedule tries again a period later. */
static void start_scheduled(int64_t now, const topo_sched_window *w) {
  st.win = *w;
  st.window_end = 0;
  start_span(now);
  if (st.recording) topo_sched_opened(sched, now, w);
  else topo_sched_closed(sched, now, 1);
}

/* The open span ends at now (another client there: `other`); the step schedule hears of it. */
static void end_scheduled(int64_t now, int other) {
  int was = scheduled();
  end_span(now, other);
  if (was) topo_sched_closed(sched, now, other);
  st.win.kind = 0;
}

/* One step of the span schedule at `now`. api_lock held. */
static void step(int64_t now) {
  /* `window`: the schedule starts over at the first large collective (topo_timeline_note_traffic)
   * when that comes after the window opened at init: the job's steady state, not its setup. */
  if (mode == MODE_WINDOW && !st.anchored && !st.recording && atomic_load(&first_traffic)) {
    st.anchored = 1;
    if (sched && atomic_load(&first_traffic) > st.t0) topo_sched_restart(sched, now);
    else if (atomic_load(&first_traffic) >= st.t0 + st.window_ns) st.t0 = st.next_start = now;
  }
  int trigger = trigger_present(now);
  if (st.recording) {
    topo_sched_window w = {0};
    if (scheduled()) {
      topo_sched_decide(sched, now, &w);
      st.sched_next = w.next;
    }
    int wanted =
        mode == MODE_ON || trigger ||
        (scheduled() ? w.open : st.win.kind != TOPO_CUPTI_WINDOW_TRIGGER && now < st.window_end);
    if (!wanted) {
      end_scheduled(now, probe(NULL) == PROBE_OTHER);
    } else if (now >= st.next_poll) {
      if (probe(NULL) == PROBE_OTHER) {
        end_scheduled(now, 1);
      } else {
        cu.flush_all(0);
        st.last_alone = now;
        st.next_poll = now + POLL_NS;
        /* `on`: a RECORDED record every period, so a killed process keeps its spans. */
        if (mode == MODE_ON && now - st.span_start >= st.period_ns) {
          span_record(TOPO_CUPTI_RECORDED, st.span_start, now, NULL);
          span_open(now);
        }
      }
    }
  } else if (trigger && now >= st.retry_after) {
    st.win = (topo_sched_window){.kind = TOPO_CUPTI_WINDOW_TRIGGER};
    st.window_end = 0;
    start_span(now);
  } else if (mode == MODE_WINDOW && sched) {
    if (now >= st.retry_after) {
      topo_sched_window w;
      topo_sched_decide(sched, now, &w);
      st.sched_next = w.next;
      if (w.open) start_scheduled(now, &w);
    }
  } else if (now >= st.next_start) {
    st.win = (topo_sched_window){.kind = mode == MODE_ON ? TOPO_CUPTI_WINDOW_CONTINUOUS
                                                         : TOPO_CUPTI_WINDOW_TIME};
    st.window_end = mode == MODE_WINDOW ? now + st.window_ns : 0;
    start_span(now);
  }
  schedule(now);
}

void topo_timeline_begin(void) {
  if (mode == MODE_OFF) return;
  pthread_mutex_lock(&api_lock);
  pthread_mutex_lock(&out_lock);
  out = st.c;
  pthread_mutex_unlock(&out_lock);
  int64_t now = topo_clock_monotonic_ns();
  if (!st.other[0] && !cu.lib) {
    fail(now, st.load_error);
  } else {
    st.t0 = st.next_start = now;
    st.next_trigger_check = now;
    if (mode == MODE_WINDOW && sched) topo_sched_begin(sched, now);
    step(now);
  }
  schedule(now);
  atomic_store(&armed, 1);
  pthread_mutex_unlock(&api_lock);
}

int64_t topo_timeline_next_due(void) {
  return atomic_load(&armed) ? atomic_load(&next_due) : INT64_MAX;
}

void topo_timeline_poll(int64_t now) {
  if (!atomic_load(&armed) || now < atomic_load(&next_due)) return;
  pthread_mutex_lock(&api_lock);
  if (atomic_load(&armed)) step(now);
  pthread_mutex_unlock(&api_lock);
}

void topo_timeline_stop(void) {
  pthread_mutex_lock(&api_lock);
  if (atomic_exchange(&armed, 0)) {
    if (st.recording) end_span(topo_clock_monotonic_ns(), probe(NULL) == PROBE_OTHER);
    pthread_mutex_lock(&out_lock);
    out = NULL;
    pthread_mutex_unlock(&out_lock);
    pthread_mutex_lock(&name_lock);
    for (int i = 0; i < NAME_SLOTS; i++) {
      topo_free(names[i].name);
      names[i].name = NULL;
    }
    next_name_id = 0;
    pthread_mutex_unlock(&name_lock);
  }
  atomic_store(&first_traffic, 0);
  /* cu keeps its pointers: CUPTI may still hand buffers to buffer_completed, which reads them
   * only while `out` is set. A later load dlopens the same library again. */
  memset(&st, 0, sizeof st);
  pthread_mutex_unlock(&api_lock);
}
#else
static void reset_traffic(void) {}
void topo_timeline_note_traffic(void) {}
int topo_timeline_load(topo_comm *c) {
  (void)c;
  if (mode == MODE_OFF) return 0;
  TOPO_INFO(NCCL_INIT, "TOPO/Profiler: built without CUPTI headers; no compute timeline");
  return 0;
}
void topo_timeline_begin(void) {}
void topo_timeline_poll(int64_t now) { (void)now; }
int64_t topo_timeline_next_due(void) { return INT64_MAX; }
void topo_timeline_stop(void) {}
#endif

int topo_timeline_configure(void) {
  mode = parse_mode();
  long window = topo_env_int(TOPO_ENV_PROFILER_CUPTI_WINDOW_MS);
  long period = topo_env_int(TOPO_ENV_PROFILER_CUPTI_PERIOD_S);
  const char *trigger = topo_env_str(TOPO_ENV_PROFILER_CUPTI_TRIGGER);
  /* `on` asks for the timeline from the start, a trigger file for an answer as soon as it
   * appears: both load CUPTI when the writer starts. `window` alone needs CUPTI only for its
   * windows, the first of which opens at the first large collective (or one period after init,
   * so that a job of small collectives still gets its windows): until then the process carries
   * none of libcupti. */
  defer_ns = mode == MODE_WINDOW && !*trigger ? (period > 0 ? period : 60) * 1000000000LL : 0;
  reset_traffic();
  if (mode == MODE_OFF) snprintf(description, sizeof description, "off");
  else if (mode == MODE_ON) snprintf(description, sizeof description, "on");
  else
    snprintf(description, sizeof description,
             "windows of %ld whole steps (at most %ld ms), gaps growing to %ld s%s",
             topo_env_int(TOPO_ENV_PROFILER_CUPTI_STEPS), window, period,
             *trigger ? ", and on trigger" : ", from the first collective of >= 1 MiB");
  return mode != MODE_OFF;
}

const char *topo_timeline_describe(void) { return description[0] ? description : "off"; }

int topo_timeline_windowed(void) { return mode == MODE_WINDOW; }

void topo_timeline_set_sched(topo_sched *s) { sched = s; }

int64_t topo_timeline_defer_ns(void) { return defer_ns; }
