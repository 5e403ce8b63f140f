// SPDX-License-Identifier: Apache-2.0
// Records and their completion (records.h): what each event does from its start to the record it
// leaves. A Coll/P2p's object gathers its kernel channels' GPU times and completes, by reference
// counts, when NCCL has stopped it and every channel asked for is in (or the reaper gives up on
// them); the thread that drops the last reference writes its record to the trace writer and ends
// its NVTX range. KernelCh, ProxyOp and KernelPhase children hold their parent until they end;
// a KernelCh without channel records has no object at all (handles.h). The core calls the start,
// stop and state entries on any thread, concurrently, lock-free, with no allocation and no I/O;
// the reaper releases holds through topo_records_release_hold.
#include "records.h"

#include <stdatomic.h>
#include <string.h>

#include "clock.h"
#include "contexts.h"
#include "handles.h"
#include "nccl/profiler_common.h"
#include "nvtx.h"
#include "sampling.h"
#include "settings.h"
#include "trace_writer.h"

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

void topo_records_release_hold(topo_obj *o, uint64_t expect) {
  if (!(expect & 1)) return;
  if (atomic_compare_exchange_strong_explicit(&o->hold, &expect, expect & ~1ull,
                                              memory_order_acq_rel, memory_order_relaxed)) {
    obj_release(o);
  }
}

/* A collective's record lost to a full queue counts as RECORD; a channel or proxy record as
 * CHILD, so "records + COLL + RECORD + OTHER drops" accounts for every collective. The record
 * belongs to life `life` of `c`: the writer writes it into no other. */
static void emit(topo_comm *c, uint32_t life, const topo_trace_record *r) {
  if (!c || !topo_contexts_in_life(c, life)) return;
  if (!topo_writer_push_life(c, life, r))
    topo_comm_count_drop(c, r->type == TOPO_REC_COLL || r->type == TOPO_REC_P2P ? TOPO_DROP_RECORD
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
    topo_comm_count_drop(c, TOPO_DROP_COLL);
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
    topo_comm_count_drop(c, TOPO_DROP_CHILD);
    return NULL;
  }
  if (d->kind == TOPO_EV_KERNELCH && !topo_cfg.channel_records) {
    /* No object: the handle names the parent (which this child keeps alive) and the channel. */
    if (d->channel < 0 || d->channel >= KCH_CHANNELS) {
      obj_release(parent);
      topo_comm_count_drop(c, TOPO_DROP_CHILD);
      return NULL;
    }
    if (d->ptimer) fold_min(&parent->gpu_start_min, (int64_t)d->ptimer);
    uint32_t pidx = (uint32_t)(parent - topo_pools[POOL_PARENTS].objs);
    return h_ptr(h_channel(d->channel, pidx, pgen));
  }
  uint32_t idx = topo_obj_alloc(POOL_CHILDREN, c, &gen);
  if (!idx) {
    obj_release(parent);
    topo_comm_count_drop(c, TOPO_DROP_CHILD);
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
    topo_comm_count_drop(c, TOPO_DROP_CHILD);
    return NULL;
  }
  uint32_t gen;
  uint32_t idx = topo_obj_alloc(POOL_CHILDREN, c, &gen);
  if (!idx) {
    obj_release(coll);
    topo_comm_count_drop(c, TOPO_DROP_CHILD);
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

void *topo_records_start(const topo_prof_descr *d, topo_comm *c, uint32_t life) {
  switch (d->kind) {
  case TOPO_EV_GROUPAPI:
  case TOPO_EV_COLLAPI:
  case TOPO_EV_P2PAPI:
  case TOPO_EV_KERNELLAUNCH:
  case TOPO_EV_GROUP: return start_api(d, c);
  case TOPO_EV_COLL:
  case TOPO_EV_P2P: return start_parent(d, c, life);
  case TOPO_EV_KERNELCH: return start_child(d, c, life);
  case TOPO_EV_KERNELPHASE: return start_phase(d, c, life);
  case TOPO_EV_PROXYOP: return topo_cfg.proxy ? start_child(d, c, life) : NULL;
  case TOPO_EV_PROXYSTEP: {
    /* No object: the step's handle names its ProxyOp, so per-step sizes add up there. */
    uint64_t v = h_word(d->parent);
    return v && !h_tagged(v) && h_object_pool(v) == POOL_CHILDREN ? h_ptr(h_step(v)) : NULL;
  }
  default: return NULL; /* ProxyCtrl, NetPlugin, CE and unknown types: not recorded */
  }
}

/* A kernel channel of `parent` stopped: count it, and when all are in, drop the hold. */
static void channel_done(topo_obj *parent) {
  int done = atomic_fetch_add_explicit(&parent->ch_done, 1, memory_order_acq_rel) + 1;
  if (parent->ch_expected > 0 && done == parent->ch_expected)
    topo_records_release_hold(parent, atomic_load_explicit(&parent->hold, memory_order_acquire));
}

/* Clock calibration: a stop is reported after it happened, so pTimer - realtime(seen) is at
 * most the true offset; keep the largest. Sampled on channel 0 only (one clock read per op). */
static void calibrate(topo_comm *c, uint32_t life, uint64_t ptimer) {
  if (!c || !topo_contexts_in_life(c, life)) return;
  int64_t off = (int64_t)ptimer - topo_clock_realtime_ns();
  fold_max(&c->gpu_offset_best, off);
}

void topo_records_stop(void *handle) {
  uint64_t v = h_word(handle);
  if (h_is_channel(v)) {
    topo_obj *parent = topo_obj_channel_parent(v);
    if (!parent) return;
    uint64_t bit = 1ull << h_channel_ch(v);
    if (atomic_fetch_or_explicit(&parent->ch_stopped, bit, memory_order_acq_rel) & bit)
      return; /* a repeated stop */
    channel_done(parent);
    obj_release(parent);
    return;
  }
  uint32_t gen;
  topo_obj *o = topo_obj_resolve(handle, &gen);
  if (!o) return;
  /* NCCL's own reference: a stale stop (the slot now holds another generation) or one after the
   * last reference went does nothing; a repeated stop while references remain releases one more
   * (NCCL stops each event once). */
  uint64_t w = atomic_load_explicit(&o->refgen, memory_order_acquire);
  if ((uint32_t)(w >> 32) != gen || (uint32_t)w == 0) return;
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
}

void topo_records_state(void *handle, int state_kind, uint64_t value) {
  uint64_t v = h_word(handle);
  if (!v || state_kind == TOPO_ST_OTHER) return;
  if (h_is_channel(v)) {
    /* NCCL holds this channel's reference on the parent until its stop; after the stop the
     * channel's bit is set and the update is ignored. */
    if (state_kind != TOPO_ST_KERNELCH_STOP || !value) return;
    topo_obj *parent = topo_obj_channel_parent(v);
    if (!parent || (atomic_load_explicit(&parent->ch_stopped, memory_order_acquire) &
                    (1ull << h_channel_ch(v))))
      return;
    fold_max(&parent->gpu_stop_max, (int64_t)value);
    if (h_channel_ch(v) == 0)
      calibrate(atomic_load_explicit(&parent->comm, memory_order_relaxed), parent->life, value);
    return;
  }
  uint32_t gen;
  topo_obj *o;
  if (h_tagged(v)) { /* a ProxyStep names its ProxyOp */
    if (h_kind(v) != TOPO_EV_PROXYSTEP) return;
    o = topo_obj_resolve(h_ptr(h_step_op(v)), &gen);
  } else {
    o = topo_obj_resolve(handle, &gen);
  }
  if (!o || !topo_obj_acquire(o, gen)) return; /* after stop: ignored */
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
}
