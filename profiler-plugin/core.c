// SPDX-License-Identifier: Apache-2.0
// The profiler core (see core.h): configuration, event pools with generation-checked handles,
// communicator contexts as life-checked handles to slots that are never freed, per-collective
// records completed by reference counts, the choice of which operations get kernel channels
// (set in NCCL's activation mask ahead of each operation), and the reaper that completes
// collectives whose GPU timing never arrived.
#include "core.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "contexts.h"
#include "env.h"
#include "handles.h"
#include "log.h"
#include "names.h"
#include "nccl/profiler_common.h"
#include "nccl_vocab.h"
#include "nvtx.h"
#include "pool.h"
#include "sampling.h"
#include "settings.h"
#include "step_sched.h"
#include "timeline.h"
#include "topo_version.h"
#include "trace_writer.h"

static struct {
  pthread_mutex_t lock;
  int users;              /* live contexts (inits minus finalizes) */
  int generation_started; /* writer/pools exist */
  topo_writer *writer;
  atomic_int forked;  /* this is a child forked after the profiler started: silent */
  atomic_int exiting; /* the exit flush ran: init and finalize do nothing more */
  int held_seen;      /* writer thread: the last reap found collectives on hold */
  /* CUPTI starts on the writer thread (cupti_tick) and stops on the stopping one (cupti_stop).
   * cupti_state is generation << CUPTI_STATE_BITS | one of enum cupti_state; cupti_lock orders
   * the end of a start against a stop. */
  pthread_mutex_t cupti_lock;
  atomic_uint cupti_state;
  _Atomic(int64_t) cupti_start_at; /* monotonic: the start is due, traffic or not */
  int64_t last_reap;               /* writer thread only */
  pid_t pid;
  topo_comm *cupti_comm; /* the process-wide CUPTI stream; NULL when CUPTI is off */
  topo_sched *sched;     /* the step schedule (CUPTI windows, start-up's end), writer-owned */
} g = {.lock = PTHREAD_MUTEX_INITIALIZER, .cupti_lock = PTHREAD_MUTEX_INITIALIZER};

static void complete(topo_obj *o);

/* Drop one reference; the last one completes the object and returns it to its pool. */
static void obj_release(topo_obj *o) {
  uint64_t w = atomic_fetch_sub_explicit(&o->refgen, 1, memory_order_acq_rel);
  if ((uint32_t)w != 1) return;
  complete(o);
  int pool = o >= topo_pools[POOL_CHILDREN].objs &&
             o <= topo_pools[POOL_CHILDREN].objs + topo_pools[POOL_CHILDREN].n;
  topo_pool *p = &topo_pools[pool];
  uint32_t next_gen = (uint32_t)(w >> 32) + 1;
  atomic_store_explicit(&o->refgen, (uint64_t)next_gen << 32, memory_order_release);
  atomic_store_explicit(&o->hold, (uint64_t)next_gen << 1, memory_order_relaxed);
  topo_pool_push(p, (uint32_t)(o - p->objs));
}

/* Release the "waiting for kernel channels" reference exactly once. */
static void release_hold(topo_obj *o, uint64_t expect) {
  if (!(expect & 1)) return;
  if (atomic_compare_exchange_strong_explicit(&o->hold, &expect, expect & ~1ull,
                                              memory_order_acq_rel, memory_order_relaxed)) {
    obj_release(o);
  }
}

static void count_drop(topo_comm *c, int kind) {
  if (c) atomic_fetch_add_explicit(&c->dropped[kind], 1, memory_order_relaxed);
}

/* A collective's record lost to a full queue counts as RECORD; a channel or proxy record as
 * CHILD, so "records + COLL + RECORD + OTHER drops" accounts for every collective. The record
 * belongs to life `life` of `c`: the writer writes it into no other. */
static void emit(topo_comm *c, uint32_t life, const topo_trace_record *r) {
  if (!c || !topo_contexts_in_life(c, life)) return;
  if (!topo_writer_push_life(c, life, r))
    count_drop(c, r->type == TOPO_REC_COLL || r->type == TOPO_REC_P2P ? TOPO_DROP_RECORD
                                                                      : TOPO_DROP_CHILD);
}

/* What v7 adds to a collective (its user tag, its kernel variant): a COLL_EXT record just before
 * the collective's own, and TOPO_COLL_F_EXT on that one (trace_format.h). */
static void emit_ext(topo_comm *c, topo_obj *o) {
  topo_trace_record x;
  memset(&x, 0, sizeof x);
  x.ext.type = TOPO_REC_COLL_EXT;
  x.ext.of = o->rec.coll.type;
  x.ext.func = o->rec.coll.func;
  x.ext.seq = o->rec.coll.seq;
  x.ext.user_tag = o->user_tag;
  x.ext.variant_len = o->variant_len;
  memcpy(x.ext.variant, o->variant, o->variant_len);
  o->rec.coll.flags |= TOPO_COLL_F_EXT;
  emit(c, o->life, &x);
}

/* Called once per object by the thread that dropped its last reference. */
static void complete(topo_obj *o) {
  topo_comm *c = atomic_load_explicit(&o->comm, memory_order_relaxed);
  switch (o->kind) {
  case TOPO_EV_COLL:
  case TOPO_EV_P2P: {
    topo_rec_coll *r = &o->rec.coll;
    int64_t s = atomic_load_explicit(&o->gpu_start_min, memory_order_relaxed);
    int64_t e = atomic_load_explicit(&o->gpu_stop_max, memory_order_relaxed);
    int done = atomic_load_explicit(&o->ch_done, memory_order_relaxed);
    if (s != INT64_MAX && e != 0 && e >= s) {
      r->gpu_start_ns = s;
      r->gpu_stop_ns = e;
      r->flags |= TOPO_COLL_F_GPU_TIMED;
      if (o->ch_expected > 0 && done < o->ch_expected) r->flags |= TOPO_COLL_F_PARTIAL;
    }
    r->cpu_stop_ns = atomic_load_explicit(&o->stop_cpu, memory_order_relaxed);
    if (o->nvtx_range) topo_nvtx_coll_end(o->nvtx_range, r);
    if (o->user_tag || o->variant_len) emit_ext(c, o);
    emit(c, o->life, &o->rec);
    break;
  }
  case TOPO_EV_PROXYOP:
    o->rec.proxy.bytes = atomic_load_explicit(&o->bytes, memory_order_relaxed);
    if (!o->rec.proxy.cpu_stop_ns) o->rec.proxy.cpu_stop_ns = topo_clock_monotonic_ns();
    emit(c, o->life, &o->rec);
    if (o->parent) obj_release(o->parent);
    break;
  case TOPO_EV_KERNELCH:
  case TOPO_EV_KERNELPHASE:
    if (o->parent) obj_release(o->parent);
    break;
  }
  o->parent = NULL;
}

/* Writer-thread tick: complete collectives whose kernel channels are overdue. Returns when it
 * wants to look again: while collectives are on hold, every REAP_NS; else never (the writer still
 * wakes at least once a second, which catches holds that appear meanwhile). */
#define REAP_NS 100000000LL /* plenty for a timeout of seconds; a scan of 8192 objects is ~10 us */
static int64_t reap(int64_t now) {
  if (now - g.last_reap < REAP_NS) return g.held_seen ? g.last_reap + REAP_NS : INT64_MAX;
  g.last_reap = now;
  g.held_seen = 0;
  topo_pool *p = &topo_pools[POOL_PARENTS];
  for (uint32_t i = 1, n = topo_pool_used(p); i <= n; i++) {
    topo_obj *o = &p->objs[i];
    uint64_t h = atomic_load_explicit(&o->hold, memory_order_acquire);
    if (!(h & 1)) continue;
    int64_t st = atomic_load_explicit(&o->stop_cpu, memory_order_relaxed);
    if (st && now - st > topo_cfg.gpu_timeout_ns) release_hold(o, h);
    else g.held_seen = 1;
  }
  return g.held_seen ? now + REAP_NS : INT64_MAX;
}

/* Complete every collective of `c` (NULL: of any comm) still waiting for kernel channels: they
 * are written without GPU timing. */
static void release_holds(const topo_comm *c) {
  topo_pool *p = &topo_pools[POOL_PARENTS];
  for (uint32_t i = 1, n = topo_pool_used(p); i <= n; i++) {
    topo_obj *o = &p->objs[i];
    uint64_t h = atomic_load_explicit(&o->hold, memory_order_acquire);
    /* comm is read after the hold (acquire), so it belongs to the life the hold names */
    if ((h & 1) && (!c || atomic_load_explicit(&o->comm, memory_order_relaxed) == c))
      release_hold(o, h);
  }
}

/* ---- init / finalize ---- */

/* The CUPTI start of a generation: IDLE -> STARTING (the writer loads CUPTI) -> STARTED (its
 * stream is open and its schedule runs) or OVER (the load declined); IDLE -> OVER when the last
 * finalize or exit comes first; STARTED -> OVER at the stop. A start begins only from IDLE and
 * finishes only from STARTING, so no start begins or finishes after a stop. The generation in the
 * high bits keeps a writer left behind by an earlier generation from finishing into this one. */
enum cupti_state { CUPTI_IDLE = 0, CUPTI_STARTING, CUPTI_STARTED, CUPTI_OVER };
#define CUPTI_STATE_BITS 2u
#define CUPTI_STATE_MASK ((1u << CUPTI_STATE_BITS) - 1)

/* Writer thread: load CUPTI and open the process-wide stream. `seen` is the IDLE state word. */
static void cupti_start(topo_writer *w, unsigned seen) {
  unsigned starting = (seen & ~CUPTI_STATE_MASK) | CUPTI_STARTING;
  if (!atomic_compare_exchange_strong(&g.cupti_state, &seen, starting)) return;
  /* dlopen of CUPTI takes milliseconds: outside the lock, which a stop takes. */
  int loaded = topo_timeline_load(g.cupti_comm);
  pthread_mutex_lock(&g.cupti_lock);
  if (atomic_load(&g.cupti_state) == starting) {
    if (loaded) {
      topo_writer_open(w, g.cupti_comm);
      topo_timeline_begin();
    }
    atomic_store(&g.cupti_state,
                 (starting & ~CUPTI_STATE_MASK) | (loaded ? CUPTI_STARTED : CUPTI_OVER));
  }
  pthread_mutex_unlock(&g.cupti_lock);
}

/* Writer tick: start CUPTI once it is due. In `window` mode without a trigger file that is the
 * first operation of >= TOPO_CUPTI_TRAFFIC_BYTES (next_op wakes the writer) or
 * TOPO_PROFILER_CUPTI_PERIOD_S after the first init, whichever comes first: until then the
 * process carries none of libcupti (2.4 MB resident) and no -cupti trace. Returns when it is due
 * (INT64_MAX once started or over). */
static int64_t cupti_tick(topo_writer *w, int64_t now) {
  unsigned s = atomic_load(&g.cupti_state);
  if ((s & CUPTI_STATE_MASK) != CUPTI_IDLE || !g.cupti_comm) return INT64_MAX;
  int64_t at = atomic_load_explicit(&g.cupti_start_at, memory_order_relaxed);
  if (now < at && !topo_sampling_traffic_seen()) return at;
  cupti_start(w, s);
  return INT64_MAX;
}

/* ---- the step schedule (step_sched.h): fed on the writer thread from the records it drains,
 * its step records written by it into the boundary operation's trace ---- */
static void sched_observe(void *sched, topo_comm *c, uint32_t life, const topo_trace_record *r,
                          int64_t now) {
  const topo_rec_coll *co = &r->coll;
  topo_sched_op op = {.comm_hash = c->hash,
                      .seq = co->seq,
                      .bytes = co->bytes,
                      .cpu_start_ns = co->cpu_start_ns,
                      .peer = co->peer,
                      .func = co->func,
                      .p2p = r->type == TOPO_REC_P2P,
                      .gpu_timed = (co->flags & TOPO_COLL_F_GPU_TIMED) != 0,
                      .slot = c->slot,
                      .life = life};
  topo_sched_add(sched, &op, now);
}

static void sched_emit(void *arg, uint32_t slot, uint32_t life, const topo_trace_record *r) {
  topo_writer_append_local(arg, slot, life, r, topo_clock_monotonic_ns());
}

/* The writer's tick: the reaper, CUPTI's start when due, the step schedule and start-up's end,
 * then the CUPTI timeline's own schedule. Returns when it next has something to do. */
static int64_t writer_tick(topo_writer *w, int64_t now) {
  topo_pools_fault_ahead();
  int64_t due = reap(now), cupti = cupti_tick(w, now);
  topo_sched *sched = g.sched;
  if (sched) {
    int64_t held = topo_sched_poll(sched, now, sched_emit, w);
    if (held < due) due = held;
    if (topo_cfg.startup_ns) {
      int64_t until = topo_sampling_startup_tick(sched, now);
      if (until < due) due = until;
    }
  }
  if (cupti < due) due = cupti;
  topo_timeline_poll(now);
  int64_t timeline = topo_timeline_next_due();
  return timeline < due ? timeline : due;
}

/* Last finalize or exit: a start that was not due never happens (no wait); one in progress gets
 * at most wait_ns to finish; what it began is stopped. g.lock held. */
static void cupti_stop(int64_t wait_ns) {
  if (!g.cupti_comm) return;
  unsigned s = atomic_load(&g.cupti_state);
  unsigned gen = s & ~CUPTI_STATE_MASK;
  if ((s & CUPTI_STATE_MASK) == CUPTI_IDLE &&
      atomic_compare_exchange_strong(&g.cupti_state, &s, gen | CUPTI_OVER))
    return;
  struct timespec ms = {0, 1000000};
  for (int64_t t0 = topo_clock_monotonic_ns();
       atomic_load(&g.cupti_state) == (gen | CUPTI_STARTING) &&
       topo_clock_monotonic_ns() - t0 < wait_ns;)
    nanosleep(&ms, NULL);
  pthread_mutex_lock(&g.cupti_lock);
  if (atomic_load(&g.cupti_state) == (gen | CUPTI_STARTED)) topo_timeline_stop();
  atomic_store(&g.cupti_state, gen | CUPTI_OVER);
  pthread_mutex_unlock(&g.cupti_lock);
}

static int global_start(int abi_version) {
  g.pid = getpid();
  topo_names_reset();
  topo_settings_read(abi_version);
  topo_sampling_reset();
  long pool = topo_env_int(TOPO_ENV_PROFILER_POOL);
  if (topo_pools_create((uint32_t)pool)) return -1;
  g.last_reap = 0;
  g.held_seen = 0;
  /* The process-wide CUPTI stream: listed now, loaded and opened by the writer when due. */
  g.cupti_comm = NULL;
  atomic_store(
      &g.cupti_state,
      ((atomic_load(&g.cupti_state) >> CUPTI_STATE_BITS) + 1) << CUPTI_STATE_BITS | CUPTI_IDLE);
  atomic_store(&g.cupti_start_at, topo_clock_monotonic_ns() + topo_timeline_defer_ns());
  if (topo_cfg.cupti) {
    topo_comm *c = topo_contexts_take();
    if (c) {
      topo_contexts_clear(c);
      topo_contexts_open(c);
      c->rank = -1;
      snprintf(c->name, sizeof c->name, "cupti");
      atomic_store(&c->gpu_offset_best, INT64_MIN);
      c->header.flags = TOPO_TRACE_F_CUPTI;
      g.cupti_comm = c;
    } else {
      topo_cfg.cupti = 0;
    }
  }
  /* The job's steps, learned on the writer thread: `window` mode's windows follow them, and
   * start-up ends when they are steady. Without memory for the learner (~200 KB) windows keep a
   * fixed length and start-up ends at once. */
  g.sched = NULL;
  int windowed = topo_cfg.cupti && topo_timeline_windowed();
  if (windowed || topo_cfg.startup_ns) {
    topo_sched_config sc;
    topo_sched_config_default(&sc, topo_env_int(TOPO_ENV_PROFILER_CUPTI_WINDOW_MS) * 1000000LL,
                              topo_env_int(TOPO_ENV_PROFILER_CUPTI_PERIOD_S) * 1000000000LL,
                              topo_cfg.gpu_timeout_ns);
    sc.steps = (uint32_t)topo_env_int(TOPO_ENV_PROFILER_CUPTI_STEPS);
    sc.startup_ns = topo_cfg.startup_ns;
    g.sched = topo_sched_new(&sc);
  }
  if (!g.sched) topo_sampling_set_startup(0);
  topo_timeline_set_sched(windowed ? g.sched : NULL);
  uint32_t ring = 1;
  while (ring < (uint32_t)topo_env_int(TOPO_ENV_PROFILER_RING)) ring <<= 1;
  topo_writer_config wc = {.dir = topo_env_str(TOPO_ENV_PROFILER_DIR),
                           .ring_size = ring,
                           .idle_flush_ns = topo_env_int(TOPO_ENV_PROFILER_FLUSH_MS) * 1000000LL,
                           .comm_at = topo_contexts_at,
                           .tick = writer_tick,
                           .observe = g.sched ? sched_observe : NULL,
                           .observer = g.sched};
  g.writer = topo_writer_start(&wc);
  if (!g.writer) {
    topo_timeline_set_sched(NULL);
    topo_sched_free(g.sched);
    g.sched = NULL;
    if (g.cupti_comm) { /* never handed to a writer */
      topo_contexts_end(g.cupti_comm);
      atomic_store(&g.cupti_comm->closed, 1);
      topo_contexts_retire(g.cupti_comm);
    }
    g.cupti_comm = NULL;
    topo_pools_destroy();
    return -1;
  }
  if (topo_cfg.nvtx) topo_cfg.nvtx = topo_nvtx_init();
  g.generation_started = 1;
  return 0;
}

/* The last finalize. When the writer does not finish in time (a file system that stopped
 * answering) it is left to finish the files on its own: its communicators' slots (the CUPTI
 * stream's included) are reused only once it closed them. */
static void global_stop(void) {
  cupti_stop(topo_cfg.wait_ns);
  topo_sampling_detach();
  int finished = topo_writer_stop(g.writer, topo_cfg.wait_ns, 1);
  if (g.cupti_comm) {
    /* A finished writer closed it if CUPTI ever handed it over; if not, nobody holds it. */
    topo_contexts_end(g.cupti_comm);
    if (finished) atomic_store(&g.cupti_comm->closed, 1);
    topo_contexts_retire(g.cupti_comm);
  }
  if (!finished) {
    TOPO_WARN(
        "TOPO/Profiler: the trace writer did not finish within TOPO_PROFILER_WAIT_MS=%lld "
        "(the file system is not answering); it completes the traces on its own, the job "
        "goes on",
        (long long)(topo_cfg.wait_ns / 1000000));
  }
  g.writer = NULL;
  g.cupti_comm = NULL;
  /* A writer that did not finish may still be inside the schedule's calls: then it is kept. */
  topo_timeline_set_sched(NULL);
  if (finished) topo_sched_free(g.sched);
  g.sched = NULL;
  topo_pools_destroy();
  g.generation_started = 0;
}

/* The first init of a generation: the env read afresh, pools and writer started, one line saying
 * what is recorded. g.lock held. -1 (warned) when the pools could not be allocated. */
static int generation_begin(int abi_version) {
  topo_env_reset_warnings(); /* once per generation, as when NCCL loaded the plugin afresh */
  topo_env_check_unknown();
  if (topo_env_bool(TOPO_ENV_LOG_ENV)) topo_env_log_effective();
  if (global_start(abi_version)) {
    TOPO_WARN(
        "TOPO/Profiler: could not allocate its event pools; profiling disabled for this "
        "communicator");
    return -1;
  }
  if (topo_cfg.measure_all)
    TOPO_INFO(NCCL_INIT,
              "TOPO/Profiler: topo %s loaded as profiler v%d; events 0x%x, kernel "
              "channels for every operation, NVTX %s, CUPTI %s, traces in %s",
              TOPO_VERSION, abi_version, topo_settings_mask_for(abi_version),
              topo_cfg.nvtx ? "on" : "off", topo_cfg.cupti ? topo_timeline_describe() : "off",
              topo_env_str(TOPO_ENV_PROFILER_DIR));
  else
    TOPO_INFO(NCCL_INIT,
              "TOPO/Profiler: topo %s loaded as profiler v%d; events 0x%x, kernel "
              "channels for every operation %s, then for every one of >= %llu bytes (NCCL %d) and "
              "below that the first %d of each kind then 1 in %u, NVTX %s, CUPTI %s, traces in %s",
              TOPO_VERSION, abi_version, topo_settings_mask_for(abi_version),
              topo_cfg.startup_ns ? "until the step is steady (start-up)" : "of none at start-up",
              (unsigned long long)topo_cfg.measure_min, topo_cfg.nccl_version, TOPO_SAMPLING_FIRST,
              topo_cfg.sample_every, topo_cfg.nvtx ? "on" : "off",
              topo_cfg.cupti ? topo_timeline_describe() : "off",
              topo_env_str(TOPO_ENV_PROFILER_DIR));
  topo_sampling_first_mask(abi_version);
  return 0;
}

/* Set slot `c` up as a new communicator with its trace header filled in (not yet open). */
static void comm_setup(topo_comm *c, int abi_version, uint64_t comm_hash, const char *comm_name,
                       int nnodes, int nranks, int rank) {
  topo_contexts_clear(c);
  c->hash = comm_hash;
  c->rank = rank;
  c->nranks = nranks;
  c->nnodes = nnodes;
  c->abi_version = abi_version;
  atomic_store(&c->gpu_offset_best, INT64_MIN);
  snprintf(c->name, sizeof c->name, "%s", comm_name ? comm_name : "");
  int m = topo_settings_mask_for(abi_version);
  c->header.abi_version = (uint32_t)abi_version;
  c->header.event_mask = (uint32_t)m;
  if (m & ncclProfileKernelCh) {
    c->header.flags |= TOPO_TRACE_F_KERNELCH;
    c->header.sample_every = topo_cfg.measure_all ? 1 : topo_cfg.sample_every;
    c->header.measure_min_bytes = topo_cfg.measure_all ? 0 : topo_cfg.measure_min;
    if (!topo_cfg.measure_all) c->header.flags |= TOPO_TRACE_F_SAMPLED;
    if (topo_cfg.startup_ns && abi_version >= 4) c->header.flags |= TOPO_TRACE_F_STARTUP;
  }
  if (m & ncclProfileKernelPhase) c->header.flags |= TOPO_TRACE_F_PHASE;
  c->header.nccl_version = (uint32_t)topo_cfg.nccl_version;
  if (topo_cfg.cupti) c->header.flags |= TOPO_TRACE_F_CUPTI;
  if (topo_cfg.proxy) c->header.flags |= TOPO_TRACE_F_PROXY;
}

ncclResult_t topo_prof_init(void **ctx, int *mask, int abi_version, uint64_t comm_hash,
                            const char *comm_name, int nnodes, int nranks, int rank,
                            ncclDebugLogger_t logger) {
  if (ctx) *ctx = NULL;
  /* A child forked while a communicator was open stays silent (docs/profiler.md). */
  if (atomic_load(&g.forked)) return ncclSuccess;
  topo_log_set_component("TOPO/Profiler");
  if (logger) topo_log_set_logger(logger);
  if (!ctx || !mask) return ncclSuccess;
  if (!topo_env_bool(TOPO_ENV_PROFILER_ENABLE)) return ncclSuccess;
  if (!topo_settings_dir_fits()) return ncclSuccess;
  pthread_mutex_lock(&g.lock);
  topo_comm *c = NULL;
  if (atomic_load(&g.exiting)) goto fail; /* the exit flush ran: nothing more is written */
  if (g.users == 0 && generation_begin(abi_version)) goto fail;
  c = topo_contexts_take();
  if (!c) {
    TOPO_WARN("TOPO/Profiler: out of memory at init; profiling disabled for this communicator");
    if (g.users == 0) global_stop();
    goto fail;
  }
  comm_setup(c, abi_version, comm_hash, comm_name, nnodes, nranks, rank);
  uint32_t life = topo_contexts_open(c);
  topo_writer_open(g.writer, c); /* the file is created on the writer thread */
  g.users++;
  /* Same value in every init: the mask already chosen for the next operation (the first
   * operation of the process gets kernel channels). */
  topo_sampling_attach(mask);
  *ctx = topo_contexts_handle(c, life);
  pthread_mutex_unlock(&g.lock);
  return ncclSuccess;
fail:
  pthread_mutex_unlock(&g.lock);
  return ncclSuccess;
}

ncclResult_t topo_prof_finalize(void *ctx) {
  if (!ctx || atomic_load(&g.forked)) return ncclSuccess;
  pthread_mutex_lock(&g.lock);
  /* Only an open context counts: a repeated finalize, one of an earlier generation or one whose
   * slot now serves another communicator is ignored without touching anything. */
  topo_comm *c = topo_contexts_live(ctx);
  if (!c || atomic_load(&g.exiting)) {
    pthread_mutex_unlock(&g.lock);
    return ncclSuccess;
  }
  topo_contexts_end(c); /* from here on no event is accepted on it */
  topo_sampling_report(c);
  /* Complete this communicator's collectives still waiting for kernel channels, then count
   * whatever NCCL never stopped (a late stop of one writes nothing: its life is over). */
  release_holds(c);
  topo_pool *p = &topo_pools[POOL_PARENTS];
  for (uint32_t i = 1, n = topo_pool_used(p); i <= n; i++) {
    topo_obj *o = &p->objs[i];
    if (atomic_load_explicit(&o->comm, memory_order_relaxed) == c &&
        (uint32_t)atomic_load_explicit(&o->refgen, memory_order_acquire) != 0)
      count_drop(c, TOPO_DROP_OTHER);
  }
  pthread_mutex_unlock(&g.lock);
  /* Outside the mutex: other communicators' init and finalize do not wait behind this one. The
   * slot is not reused before the writer has closed it (topo_contexts_take). */
  topo_writer_close(c, topo_cfg.wait_ns);
  pthread_mutex_lock(&g.lock);
  topo_contexts_retire(c);
  if (--g.users == 0 && !atomic_load(&g.exiting)) global_stop();
  pthread_mutex_unlock(&g.lock);
  return ncclSuccess;
}

/* A child forked while a communicator is open has no writer thread and shares the parent's
 * descriptors: it never writes, never waits, and asks NCCL for nothing, for its whole life. One
 * forked while none is open starts afresh, like any process (docs/profiler.md). The mutex may
 * have been held by a thread the child does not have. */
static void in_forked_child(void) {
  if (g.users > 0 || g.generation_started) {
    atomic_store(&g.forked, 1);
    topo_sampling_detach();
  }
  pthread_mutex_init(&g.lock, NULL);
}

__attribute__((constructor)) static void at_load(void) {
  pthread_atfork(NULL, NULL, in_forked_child);
}

/* At exit, with communicators still open and possibly other threads still inside callbacks
 * (NCCL's proxy thread): write what was recorded, within TOPO_PROFILER_WAIT_MS, and free
 * nothing. The library is linked -z nodelete, so this runs at exit only, never at dlclose. */
__attribute__((destructor)) static void at_exit_flush(void) {
  if (atomic_load(&g.forked)) return;
  int64_t wait_ns = topo_env_int(TOPO_ENV_PROFILER_WAIT_MS) * 1000000LL;
  int64_t by = topo_clock_realtime_ns() + wait_ns;
  struct timespec deadline = {(time_t)(by / 1000000000LL), (long)(by % 1000000000LL)};
  if (pthread_mutex_timedlock(&g.lock, &deadline) != 0) return;
  atomic_store(&g.exiting, 1);
  if (g.generation_started) {
    cupti_stop(wait_ns);
    topo_sampling_detach();
    release_holds(NULL);
    topo_writer_stop(g.writer, wait_ns, 0);
  }
  pthread_mutex_unlock(&g.lock);
}

/* ---- hot path ---- */
#define STREAM_SLOTS 1024
_Static_assert(STREAM_SLOTS <= H_INDEX24, "a stream id fits an API handle's 24 bits");
static _Atomic(uintptr_t) stream_keys[STREAM_SLOTS];

/* Small process-wide id for a CUDA stream pointer (insert-only open addressing). */
static uint32_t stream_id(void *stream) {
  uintptr_t key = (uintptr_t)stream;
  if (!key) return 0;
  uint32_t h = (uint32_t)((key >> 4) * 2654435761u) & (STREAM_SLOTS - 1);
  for (uint32_t probe = 0; probe < STREAM_SLOTS; probe++) {
    uint32_t i = (h + probe) & (STREAM_SLOTS - 1);
    uintptr_t cur = atomic_load_explicit(&stream_keys[i], memory_order_acquire);
    if (cur == key) return i + 1;
    if (cur == 0) {
      uintptr_t expect = 0;
      if (atomic_compare_exchange_strong_explicit(&stream_keys[i], &expect, key,
                                                  memory_order_acq_rel, memory_order_acquire) ||
          expect == key)
        return i + 1;
    }
  }
  return 0;
}

static void *start_api(const topo_prof_descr *d, topo_comm *c) {
  int sampled = 0;
  uint32_t stream = 0;
  if (d->kind == TOPO_EV_COLLAPI || d->kind == TOPO_EV_P2PAPI) {
    /* NCCL read the mask for this operation just before this call: that tells whether its
     * Coll/P2p gets kernel-channel events. Then set the mask for the next operation. */
    sampled = (topo_sampling_read_mask() & ncclProfileKernelCh) != 0;
    topo_sampling_next_op(c, d->func, d->bytes, sampled);
    stream = (uint32_t)stream_id(d->stream);
  } else if (d->kind == TOPO_EV_GROUP && c->abi_version < 5) {
    /* v1-v4: the operations of this plan read the mask before its Group started, and the
     * plugin changes it only at Coll/P2p starts, which come after this. */
    sampled = (topo_sampling_read_mask() & ncclProfileKernelCh) != 0;
  }
  return h_ptr(h_api(d->kind, d->graph_captured, sampled, stream));
}

static void *start_parent(const topo_prof_descr *d, topo_comm *c, uint32_t life) {
  uint32_t gen;
  int expected = 0;
  uint64_t ph = h_word(d->parent);
  int from_api = h_is_api(ph, TOPO_EV_COLLAPI) || h_is_api(ph, TOPO_EV_P2PAPI);
  int sampled;
  if (from_api) {
    sampled = h_api_sampled(ph);
  } else if (c->abi_version < 5) {
    /* v1-v4: no API events; the mask seen at the plan's Group start, else the mask now. Then
     * choose the mask for the next operation here. */
    int from_group = h_is_api(ph, TOPO_EV_GROUP);
    sampled =
        from_group ? h_api_sampled(ph) : (topo_sampling_read_mask() & ncclProfileKernelCh) != 0;
    topo_sampling_next_op(c, d->func, d->bytes, sampled);
  } else {
    sampled = (topo_sampling_read_mask() & ncclProfileKernelCh) != 0;
  }
  int asked = sampled && c->abi_version >= 4;
  if (asked) expected = d->nchannels;
  if (c->abi_version < 4 && d->comm_hash &&
      atomic_load_explicit(&c->learned_hash, memory_order_relaxed) == 0) {
    atomic_store_explicit(&c->learned_rank, d->rank, memory_order_relaxed);
    atomic_store_explicit(&c->learned_hash, d->comm_hash, memory_order_relaxed);
  }
  uint32_t idx = topo_obj_alloc(POOL_PARENTS, c, &gen);
  if (!idx) {
    count_drop(c, TOPO_DROP_COLL);
    return NULL;
  }
  topo_obj *o = &topo_pools[POOL_PARENTS].objs[idx];
  o->kind = (uint8_t)d->kind;
  atomic_store_explicit(&o->comm, c, memory_order_relaxed);
  o->life = life;
  o->parent = NULL;
  memset(&o->rec, 0, sizeof o->rec);
  topo_rec_coll *r = &o->rec.coll;
  r->type = d->kind == TOPO_EV_P2P ? TOPO_REC_P2P : TOPO_REC_COLL;
  r->func = (uint8_t)d->func;
  r->algo = (uint8_t)d->algo;
  r->proto = (uint8_t)d->proto;
  r->nchannels = d->nchannels > 0 ? (uint8_t)d->nchannels : 0;
  r->datatype = (uint8_t)d->datatype;
  r->nwarps = (uint8_t)d->nwarps;
  r->seq = d->kind == TOPO_EV_P2P ? atomic_fetch_add_explicit(&c->p2p_seq, 1, memory_order_relaxed)
                                  : d->seq;
  r->bytes = d->bytes;
  r->peer = d->peer;
  if (asked) r->flags |= TOPO_COLL_F_GPU_ASKED;
  if (asked && topo_sampling_in_startup()) r->flags |= TOPO_COLL_F_STARTUP;
  if (d->sym) r->flags |= TOPO_COLL_F_SYM;
  o->user_tag = d->user_tag;
  o->variant_len = 0;
  for (const char *v = d->variant; v && v[o->variant_len] && o->variant_len < TOPO_EXT_VARIANT_MAX;
       o->variant_len++)
    o->variant[o->variant_len] = v[o->variant_len];
  if (from_api) {
    r->stream_id = h_api_stream(ph);
    if (h_api_graph(ph)) r->flags |= TOPO_COLL_F_GRAPH;
  }
  r->cpu_start_ns = topo_clock_monotonic_ns();
  atomic_store_explicit(&o->gpu_start_min, INT64_MAX, memory_order_relaxed);
  atomic_store_explicit(&o->gpu_stop_max, 0, memory_order_relaxed);
  atomic_store_explicit(&o->ch_done, 0, memory_order_relaxed);
  atomic_store_explicit(&o->ch_stopped, 0, memory_order_relaxed);
  atomic_store_explicit(&o->stop_cpu, 0, memory_order_relaxed);
  o->ch_expected = expected;
  o->nvtx_range = topo_cfg.nvtx ? topo_nvtx_coll_start(r) : 0;
  /* References first, then the hold bit (release): the reaper and finalize act on the hold bit
   * and must find the references and a zero stop time of this life. */
  topo_obj_publish(o, gen, 1u + (expected != 0));
  atomic_store_explicit(&o->hold, (uint64_t)gen << 1 | (expected != 0), memory_order_release);
  return h_ptr(h_object(POOL_PARENTS, idx, gen) | (asked ? H_OBJ_ASKED : 0));
}

static void fold_min(_Atomic(int64_t) *v, int64_t x) {
  int64_t cur = atomic_load_explicit(v, memory_order_relaxed);
  while (x < cur && !atomic_compare_exchange_weak_explicit(v, &cur, x, memory_order_relaxed,
                                                           memory_order_relaxed)) {}
}

static void fold_max(_Atomic(int64_t) *v, int64_t x) {
  int64_t cur = atomic_load_explicit(v, memory_order_relaxed);
  while (x > cur && !atomic_compare_exchange_weak_explicit(v, &cur, x, memory_order_relaxed,
                                                           memory_order_relaxed)) {}
}

static void *start_child(const topo_prof_descr *d, topo_comm *c, uint32_t life) {
  uint32_t pgen, gen;
  uint64_t ph = h_word(d->parent);
  /* A KernelCh of a collective that did not ask for them (the mask NCCL read was set by someone
   * else, e.g. RAS): ignored, not counted, and the collective waits for none of them. */
  if (d->kind == TOPO_EV_KERNELCH && ph && !h_tagged(ph) && !(ph & H_OBJ_ASKED)) return NULL;
  topo_obj *parent = topo_obj_resolve(d->parent, &pgen);
  if (!parent || !topo_obj_acquire(parent, pgen)) {
    count_drop(c, TOPO_DROP_CHILD);
    return NULL;
  }
  if (d->kind == TOPO_EV_KERNELCH && !topo_cfg.channel_records) {
    /* No object: the handle names the parent (which this child keeps alive) and the channel. */
    if (d->channel < 0 || d->channel >= KCH_CHANNELS) {
      obj_release(parent);
      count_drop(c, TOPO_DROP_CHILD);
      return NULL;
    }
    if (d->ptimer) fold_min(&parent->gpu_start_min, (int64_t)d->ptimer);
    uint32_t pidx = (uint32_t)(parent - topo_pools[POOL_PARENTS].objs);
    return h_ptr(h_channel(d->channel, pidx, pgen));
  }
  uint32_t idx = topo_obj_alloc(POOL_CHILDREN, c, &gen);
  if (!idx) {
    obj_release(parent);
    count_drop(c, TOPO_DROP_CHILD);
    return NULL;
  }
  topo_obj *o = &topo_pools[POOL_CHILDREN].objs[idx];
  o->kind = (uint8_t)d->kind;
  atomic_store_explicit(&o->comm, c, memory_order_relaxed);
  o->life = life;
  o->parent = parent;
  o->cpu_start = topo_clock_monotonic_ns();
  if (d->kind == TOPO_EV_KERNELCH) {
    o->channel = d->channel;
    o->gpu_start = (int64_t)d->ptimer;
    atomic_store_explicit(&o->gpu_stop, 0, memory_order_relaxed);
    if (d->ptimer) fold_min(&parent->gpu_start_min, (int64_t)d->ptimer);
  } else { /* ProxyOp */
    memset(&o->rec, 0, sizeof o->rec);
    topo_rec_proxy *r = &o->rec.proxy;
    r->type = TOPO_REC_PROXY;
    r->channel = (uint8_t)d->channel;
    r->is_send = (uint8_t)(d->is_send != 0);
    r->func = parent->rec.coll.func;
    r->peer = d->peer;
    r->seq = parent->rec.coll.seq;
    r->nsteps = d->nsteps;
    r->chunk_size = d->chunk_size;
    r->cpu_start_ns = o->cpu_start;
    atomic_store_explicit(&o->bytes, 0, memory_order_relaxed);
  }
  topo_obj_publish(o, gen, 1);
  return h_ptr(h_object(POOL_CHILDREN, idx, gen));
}

/* The collective a KernelPhase's parent (a KernelCh handle: an object-free channel handle, or a
 * KernelCh object) belongs to, with a reference taken on it; NULL when that channel or its
 * collective is gone. */
static topo_obj *phase_collective(void *kch) {
  uint64_t v = h_word(kch);
  if (h_is_channel(v)) {
    topo_obj *coll = topo_obj_channel_parent(v);
    if (!coll) return NULL;
    uint32_t gen = (uint32_t)(atomic_load_explicit(&coll->refgen, memory_order_acquire) >> 32);
    return (gen & H_CHANNEL_GEN) == h_channel_gen(v) && topo_obj_acquire(coll, gen) ? coll : NULL;
  }
  uint32_t gen;
  topo_obj *ch = topo_obj_resolve(kch, &gen);
  if (!ch || !topo_obj_acquire(ch, gen)) return NULL;
  topo_obj *coll = ch->kind == TOPO_EV_KERNELCH ? ch->parent : NULL; /* alive: ch holds it */
  if (coll &&
      !topo_obj_acquire(
          coll, (uint32_t)(atomic_load_explicit(&coll->refgen, memory_order_acquire) >> 32)))
    coll = NULL;
  obj_release(ch);
  return coll;
}

/* A KernelPhase (v7): a child object that holds its collective until its stop writes the PHASE
 * record. Only when the `phase` class asked for them; otherwise ignored, not counted. NCCL
 * documents phases for symmetric kernels; any it sends is recorded. */
static void *start_phase(const topo_prof_descr *d, topo_comm *c, uint32_t life) {
  /* NCCL sends phases also under a KernelCh it got no handle for: that loss, if one, is counted */
  if (!topo_cfg.phase || !d->parent) return NULL;
  topo_obj *coll = phase_collective(d->parent);
  if (!coll) {
    count_drop(c, TOPO_DROP_CHILD);
    return NULL;
  }
  uint32_t gen;
  uint32_t idx = topo_obj_alloc(POOL_CHILDREN, c, &gen);
  if (!idx) {
    obj_release(coll);
    count_drop(c, TOPO_DROP_CHILD);
    return NULL;
  }
  topo_obj *o = &topo_pools[POOL_CHILDREN].objs[idx];
  o->kind = TOPO_EV_KERNELPHASE;
  atomic_store_explicit(&o->comm, c, memory_order_relaxed);
  o->life = life;
  o->parent = coll;
  memset(&o->rec, 0, sizeof o->rec);
  topo_rec_phase *r = &o->rec.phase;
  r->type = TOPO_REC_PHASE;
  r->channel = (uint8_t)d->channel;
  r->func = coll->rec.coll.func;
  r->phase = (uint8_t)d->phase;
  r->seq = coll->rec.coll.seq;
  r->gpu_start_ns = (int64_t)d->ptimer;
  atomic_store_explicit(&o->gpu_stop, 0, memory_order_relaxed);
  topo_obj_publish(o, gen, 1);
  return h_ptr(h_object(POOL_CHILDREN, idx, gen));
}

ncclResult_t topo_prof_start(void *ctx, void **handle, const topo_prof_descr *d) {
  if (!handle) return ncclSuccess;
  *handle = NULL;
  if (!d) return ncclSuccess;
  /* PXN: a proxy op of another process carries foreign context and parent pointers. */
  if (d->kind == TOPO_EV_PROXYOP && d->pid != g.pid) return ncclSuccess;
  /* Events on a context that is not open (finalized, of an earlier generation, not ours) are
   * dropped without a count: there is no communicator to count them for. */
  topo_comm *c = topo_contexts_live(ctx);
  if (!c || !topo_sampling_attached()) return ncclSuccess;
  uint32_t life = topo_contexts_life(ctx);
  switch (d->kind) {
  case TOPO_EV_GROUPAPI:
  case TOPO_EV_COLLAPI:
  case TOPO_EV_P2PAPI:
  case TOPO_EV_KERNELLAUNCH:
  case TOPO_EV_GROUP: *handle = start_api(d, c); break;
  case TOPO_EV_COLL:
  case TOPO_EV_P2P: *handle = start_parent(d, c, life); break;
  case TOPO_EV_KERNELCH: *handle = start_child(d, c, life); break;
  case TOPO_EV_KERNELPHASE: *handle = start_phase(d, c, life); break;
  case TOPO_EV_PROXYOP:
    if (topo_cfg.proxy) *handle = start_child(d, c, life);
    break;
  case TOPO_EV_PROXYSTEP: {
    /* No object: the step's handle names its ProxyOp, so per-step sizes add up there. */
    uint64_t v = h_word(d->parent);
    if (v && !h_tagged(v) && h_object_pool(v) == POOL_CHILDREN) *handle = h_ptr(h_step(v));
    break;
  }
  default: break; /* ProxyCtrl, NetPlugin, CE and unknown types: not recorded */
  }
  return ncclSuccess;
}

/* A kernel channel of `parent` stopped: count it, and when all are in, drop the hold. */
static void channel_done(topo_obj *parent) {
  int done = atomic_fetch_add_explicit(&parent->ch_done, 1, memory_order_acq_rel) + 1;
  if (parent->ch_expected > 0 && done == parent->ch_expected)
    release_hold(parent, atomic_load_explicit(&parent->hold, memory_order_acquire));
}

/* Clock calibration: a stop is reported after it happened, so pTimer - realtime(seen) is at
 * most the true offset; keep the largest. Sampled on channel 0 only (one clock read per op). */
static void calibrate(topo_comm *c, uint32_t life, uint64_t ptimer) {
  if (!c || !topo_contexts_in_life(c, life)) return;
  int64_t off = (int64_t)ptimer - topo_clock_realtime_ns();
  fold_max(&c->gpu_offset_best, off);
}

ncclResult_t topo_prof_stop(void *handle) {
  uint64_t v = h_word(handle);
  if (h_is_channel(v)) {
    topo_obj *parent = topo_obj_channel_parent(v);
    if (!parent) return ncclSuccess;
    uint64_t bit = 1ull << h_channel_ch(v);
    if (atomic_fetch_or_explicit(&parent->ch_stopped, bit, memory_order_acq_rel) & bit)
      return ncclSuccess; /* a repeated stop */
    channel_done(parent);
    obj_release(parent);
    return ncclSuccess;
  }
  uint32_t gen;
  topo_obj *o = topo_obj_resolve(handle, &gen);
  if (!o) return ncclSuccess;
  /* NCCL's own reference: a stale stop (the slot now holds another generation) or one after the
   * last reference went does nothing; a repeated stop while references remain releases one more
   * (NCCL stops each event once). */
  uint64_t w = atomic_load_explicit(&o->refgen, memory_order_acquire);
  if ((uint32_t)(w >> 32) != gen || (uint32_t)w == 0) return ncclSuccess;
  int64_t now = topo_clock_monotonic_ns();
  switch (o->kind) {
  case TOPO_EV_COLL:
  case TOPO_EV_P2P: atomic_store_explicit(&o->stop_cpu, now, memory_order_relaxed); break;
  case TOPO_EV_KERNELCH: {
    topo_obj *parent = o->parent;
    topo_comm *c = atomic_load_explicit(&o->comm, memory_order_relaxed);
    if (topo_cfg.channel_records && parent) {
      topo_trace_record rec;
      memset(&rec, 0, sizeof rec);
      rec.channel.type = TOPO_REC_CHANNEL;
      rec.channel.channel = (uint8_t)o->channel;
      rec.channel.func = parent->rec.coll.func;
      rec.channel.seq = parent->rec.coll.seq;
      rec.channel.gpu_start_ns = o->gpu_start;
      rec.channel.gpu_stop_ns = atomic_load_explicit(&o->gpu_stop, memory_order_relaxed);
      rec.channel.cpu_start_ns = o->cpu_start;
      rec.channel.cpu_stop_ns = now;
      emit(c, o->life, &rec);
    }
    if (parent) channel_done(parent);
    break;
  }
  case TOPO_EV_PROXYOP: o->rec.proxy.cpu_stop_ns = now; break;
  case TOPO_EV_KERNELPHASE: {
    topo_trace_record rec = o->rec;
    rec.phase.gpu_stop_ns = atomic_load_explicit(&o->gpu_stop, memory_order_relaxed);
    emit(atomic_load_explicit(&o->comm, memory_order_relaxed), o->life, &rec);
    break;
  }
  }
  obj_release(o);
  return ncclSuccess;
}

ncclResult_t topo_prof_state(void *handle, int state_kind, uint64_t value) {
  uint64_t v = h_word(handle);
  if (!v || state_kind == TOPO_ST_OTHER) return ncclSuccess;
  if (h_is_channel(v)) {
    /* NCCL holds this channel's reference on the parent until its stop; after the stop the
     * channel's bit is set and the update is ignored. */
    if (state_kind != TOPO_ST_KERNELCH_STOP || !value) return ncclSuccess;
    topo_obj *parent = topo_obj_channel_parent(v);
    if (!parent || (atomic_load_explicit(&parent->ch_stopped, memory_order_acquire) &
                    (1ull << h_channel_ch(v))))
      return ncclSuccess;
    fold_max(&parent->gpu_stop_max, (int64_t)value);
    if (h_channel_ch(v) == 0)
      calibrate(atomic_load_explicit(&parent->comm, memory_order_relaxed), parent->life, value);
    return ncclSuccess;
  }
  uint32_t gen;
  topo_obj *o;
  if (h_tagged(v)) { /* a ProxyStep names its ProxyOp */
    if (h_kind(v) != TOPO_EV_PROXYSTEP) return ncclSuccess;
    o = topo_obj_resolve(h_ptr(h_step_op(v)), &gen);
  } else {
    o = topo_obj_resolve(handle, &gen);
  }
  if (!o || !topo_obj_acquire(o, gen)) return ncclSuccess; /* after stop: ignored */
  if (state_kind == TOPO_ST_KERNELCH_STOP && o->kind == TOPO_EV_KERNELCH && value) {
    atomic_store_explicit(&o->gpu_stop, (int64_t)value, memory_order_relaxed);
    if (o->parent) fold_max(&o->parent->gpu_stop_max, (int64_t)value);
    if (o->channel == 0)
      calibrate(atomic_load_explicit(&o->comm, memory_order_relaxed), o->life, value);
  } else if (state_kind == TOPO_ST_PROXY_BYTES && o->kind == TOPO_EV_PROXYOP) {
    atomic_fetch_add_explicit(&o->bytes, value, memory_order_relaxed);
  } else if (state_kind == TOPO_ST_PHASE_STOP && o->kind == TOPO_EV_KERNELPHASE && value) {
    atomic_store_explicit(&o->gpu_stop, (int64_t)value, memory_order_relaxed);
  }
  obj_release(o);
  return ncclSuccess;
}
