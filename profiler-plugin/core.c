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
#include "reaper.h"
#include "records.h"
#include "sampling.h"
#include "schedule.h"
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
  pid_t pid;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The writer's tick: pages faulted in ahead of the pools' use, the reaper's pass, the generation's
 * schedule (schedule.h). Returns when it next has something to do. Writer thread. */
static int64_t writer_tick(topo_writer *w, int64_t now) {
  topo_pools_fault_ahead();
  int64_t due = topo_reaper_pass(now), scheduled = topo_schedule_tick(w, now);
  return scheduled < due ? scheduled : due;
}

static int global_start(int abi_version) {
  g.pid = getpid();
  topo_names_reset();
  topo_settings_read(abi_version);
  topo_sampling_reset();
  long pool = topo_env_int(TOPO_ENV_PROFILER_POOL);
  if (topo_pools_create((uint32_t)pool)) return -1;
  topo_reaper_reset();
  topo_schedule_begin();
  uint32_t ring = 1;
  while (ring < (uint32_t)topo_env_int(TOPO_ENV_PROFILER_RING)) ring <<= 1;
  topo_writer_config wc = {.dir = topo_env_str(TOPO_ENV_PROFILER_DIR),
                           .ring_size = ring,
                           .idle_flush_ns = topo_env_int(TOPO_ENV_PROFILER_FLUSH_MS) * 1000000LL,
                           .comm_at = topo_contexts_at,
                           .tick = writer_tick,
                           .observe = topo_schedule_steps() ? topo_schedule_observe : NULL,
                           .observer = topo_schedule_steps()};
  g.writer = topo_writer_start(&wc);
  if (!g.writer) {
    topo_schedule_end(1); /* nothing was handed to a writer */
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
  topo_schedule_stop(topo_cfg.wait_ns);
  topo_sampling_detach();
  int finished = topo_writer_stop(g.writer, topo_cfg.wait_ns, 1);
  topo_schedule_end(finished);
  if (!finished) {
    TOPO_WARN(
        "TOPO/Profiler: the trace writer did not finish within TOPO_PROFILER_WAIT_MS=%lld "
        "(the file system is not answering); it completes the traces on its own, the job "
        "goes on",
        (long long)(topo_cfg.wait_ns / 1000000));
  }
  g.writer = NULL;
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
  topo_reaper_release(c);
  topo_reaper_count_open(c);
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
    topo_schedule_stop(wait_ns);
    topo_sampling_detach();
    topo_reaper_release(NULL);
    topo_writer_stop(g.writer, wait_ns, 0);
  }
  pthread_mutex_unlock(&g.lock);
}

/* ---- the hot path: the records room does the work (records.h) ---- */
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
  *handle = topo_records_start(d, c, topo_contexts_life(ctx));
  return ncclSuccess;
}

ncclResult_t topo_prof_stop(void *handle) {
  topo_records_stop(handle);
  return ncclSuccess;
}

ncclResult_t topo_prof_state(void *handle, int state_kind, uint64_t value) {
  topo_records_state(handle, state_kind, value);
  return ncclSuccess;
}
