/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Event objects and their pools (pool.c): the two process-wide pools (parents: Coll/P2p;
 * children: KernelCh, ProxyOp, KernelPhase) of generation-checked, reference-counted objects
 * that event handles (handles.h) name. Each pool is a Treiber stack with a tag against ABA, over
 * objects handed out fresh first. The core creates the pools at a generation's first init and
 * destroys them at its last finalize, under its mutex; callbacks take, resolve and reference
 * objects with the inline functions here (lock-free, no allocation); the records room
 * (records.c) releases them; the writer's tick faults pages in ahead of use.
 */
#ifndef TOPO_PROFILER_POOL_H
#define TOPO_PROFILER_POOL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "export.h"
#include "handles.h"
#include "trace_format.h"
#include "trace_writer.h"

typedef struct topo_obj {
  _Atomic(uint64_t) refgen; /* gen << 32 | references */
  _Atomic(uint64_t) hold;   /* gen << 1 | 1 while waiting for kernel channels */
  atomic_uint next_free;
  _Atomic(int64_t) stop_cpu; /* Coll/P2p stop time, for the reaper; 0 before stop */
  _Atomic(topo_comm *) comm;
  uint8_t kind;
  uint8_t variant_len;     /* Coll (v7): bytes of variant, 0 = none */
  uint32_t life;           /* the life of comm the object was started in */
  struct topo_obj *parent; /* children: the parent they hold a reference on */
  topo_trace_record rec;   /* parents: topo_rec_coll; ProxyOp: topo_rec_proxy; KernelPhase:
                              topo_rec_phase */
  _Atomic(int64_t) gpu_start_min, gpu_stop_max;
  atomic_int ch_done;
  _Atomic(uint64_t) ch_stopped; /* channels whose KernelCh stopped (object-free handles) */
  int ch_expected;              /* 0 none, > 0 count, TOPO_PROF_UNKNOWN_CHANNELS */
  uint64_t nvtx_range;
  int channel; /* KernelCh */
  int64_t gpu_start, cpu_start;
  _Atomic(int64_t) gpu_stop;
  _Atomic(uint64_t) bytes; /* ProxyOp */
  /* Coll/P2p (v7): the call's user tag and the symmetric kernel's variant, for the COLL_EXT
   * record written before the collective's own (both fit the 256 bytes objects take anyway) */
  uint64_t user_tag;
  char variant[TOPO_EXT_VARIANT_MAX];
} __attribute__((aligned(64))) topo_obj;

/* A pool's objects are mapped zero-filled (topo_map) and handed out in index order the first
 * time, so only the pages of objects ever in flight at once become resident. */
typedef struct topo_pool {
  topo_obj *objs; /* n + 1 entries, 0 unused */
  size_t bytes;
  uint32_t n;
  atomic_uint fresh; /* the lowest index never handed out (n + 1 once all were) */
  uint32_t resident; /* writer thread: objects up to this index have their pages faulted in */
  atomic_uint resident_pub; /* the same, for callbacks: past it a fresh object wakes the writer */
  _Atomic(uint64_t) head;   /* tag << 32 | index of the first returned object (0 = none) */
} topo_pool;

/* The pools (POOL_PARENTS, POOL_CHILDREN): set up and torn down under the core's mutex while no
 * callback can reach them; between, only their objects change. */
extern topo_pool topo_pools[2] TOPO_HIDDEN;
/* The generation of objects handed out fresh (see topo_obj_alloc); the core's mutex. */
extern uint32_t topo_pools_gen_base TOPO_HIDDEN;

/* Create both pools, `parents` objects and CHILDREN_PER_PARENT times as many children (address
 * space only). -1 when they cannot be had. A generation's first init, the core's mutex held. */
int topo_pools_create(uint32_t parents);
/* Unmap both pools; objects handed out later start past every generation these gave out. The
 * last finalize (or a failed first init), the core's mutex held, no callback inside. */
void topo_pools_destroy(void);
/* Writer thread: fault in the pages of the objects each pool will hand out next (as many again
 * as are in use, 64 to 1024 of them), so that a growing number of operations in flight takes no
 * page fault inside a callback. */
void topo_pools_fault_ahead(void);

/* Objects 1..topo_pool_used(p) have been handed out at least once; the rest were never touched. */
static inline uint32_t topo_pool_used(topo_pool *p) {
  uint32_t f = atomic_load_explicit(&p->fresh, memory_order_acquire);
  return f - 1 < p->n ? f - 1 : p->n;
}

static inline uint32_t topo_pool_pop(topo_pool *p, topo_writer *writer) {
  uint64_t head = atomic_load_explicit(&p->head, memory_order_acquire);
  for (;;) {
    uint32_t idx = (uint32_t)head;
    if (idx == 0) break;
    uint32_t next = atomic_load_explicit(&p->objs[idx].next_free, memory_order_relaxed);
    uint64_t want = ((head >> 32) + 1) << 32 | next;
    if (atomic_compare_exchange_weak_explicit(&p->head, &head, want, memory_order_acq_rel,
                                              memory_order_acquire))
      return idx;
  }
  uint32_t fresh = atomic_load_explicit(&p->fresh, memory_order_relaxed);
  while (fresh <= p->n)
    if (atomic_compare_exchange_weak_explicit(&p->fresh, &fresh, fresh + 1, memory_order_acq_rel,
                                              memory_order_relaxed)) {
      /* Growing towards pages not yet faulted in: the writer should fault them in now. */
      if (fresh + 32 > atomic_load_explicit(&p->resident_pub, memory_order_relaxed))
        topo_writer_wake(writer);
      return fresh;
    }
  return 0;
}

static inline void topo_pool_push(topo_pool *p, uint32_t idx) {
  uint64_t head = atomic_load_explicit(&p->head, memory_order_relaxed);
  for (;;) {
    atomic_store_explicit(&p->objs[idx].next_free, (uint32_t)head, memory_order_relaxed);
    uint64_t want = ((head >> 32) + 1) << 32 | idx;
    if (atomic_compare_exchange_weak_explicit(&p->head, &head, want, memory_order_release,
                                              memory_order_relaxed))
      return;
  }
}

/* Take a free object for `c`; returns its index (0: pool empty) and its current generation. The
 * caller initialises it and then publishes it with obj_publish. */
static inline uint32_t topo_obj_alloc(int pool, const topo_comm *c, uint32_t *gen) {
  topo_pool *p = &topo_pools[pool];
  uint32_t idx = topo_pool_pop(p, c->writer);
  if (!idx) return 0;
  topo_obj *o = &p->objs[idx];
  /* An object never handed out in this generation's pools (all zero) starts at gen_base, past
   * every generation the previous pools gave out: a handle kept from them names no object. */
  uint64_t w = atomic_load_explicit(&o->refgen, memory_order_relaxed);
  *gen = w ? (uint32_t)(w >> 32) : topo_pools_gen_base;
  return idx;
}

static inline void topo_obj_publish(topo_obj *o, uint32_t gen, uint32_t refs) {
  atomic_store_explicit(&o->refgen, (uint64_t)gen << 32 | refs, memory_order_release);
}

/* Resolve a handle to its object if it is one of ours and still the same generation. */
static inline topo_obj *topo_obj_resolve(void *h, uint32_t *gen) {
  uint64_t v = h_word(h);
  if (!v || h_tagged(v)) return NULL;
  uint32_t idx = h_object_index(v);
  topo_pool *p = &topo_pools[h_object_pool(v)];
  if (!p->objs || idx == 0 || idx > p->n) return NULL;
  *gen = h_object_gen(v);
  return &p->objs[idx];
}

/* The parent of an object-free KernelCh handle if it is still alive in that generation. */
static inline topo_obj *topo_obj_channel_parent(uint64_t h) {
  topo_pool *p = &topo_pools[POOL_PARENTS];
  uint32_t idx = h_channel_parent(h);
  if (!p->objs || idx == 0 || idx > p->n) return NULL;
  topo_obj *o = &p->objs[idx];
  uint64_t w = atomic_load_explicit(&o->refgen, memory_order_acquire);
  if (((uint32_t)(w >> 32) & H_CHANNEL_GEN) != h_channel_gen(h) || (uint32_t)w == 0) return NULL;
  return o;
}

/* Take a reference if `o` is still generation `gen` and alive. */
static inline int topo_obj_acquire(topo_obj *o, uint32_t gen) {
  uint64_t w = atomic_load_explicit(&o->refgen, memory_order_acquire);
  for (;;) {
    if ((uint32_t)(w >> 32) != gen || (uint32_t)w == 0) return 0;
    if (atomic_compare_exchange_weak_explicit(&o->refgen, &w, w + 1, memory_order_acq_rel,
                                              memory_order_acquire))
      return 1;
  }
}
#endif
