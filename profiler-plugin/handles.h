/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The event handles NCCL holds (the words topo_prof_start returns): how they are built and read.
 * Pure encoding, inline: the pools (pool.h) resolve object handles, the records room (records.c)
 * builds and reads every form on the hot path. Nothing here touches memory.
 */
#ifndef TOPO_PROFILER_HANDLES_H
#define TOPO_PROFILER_HANDLES_H

#include <stdint.h>

#include "env.h"
#include "event.h"

/* A handle NCCL holds is one 64-bit word in one of four forms. Bit 0 tells an object from a
 * tagged word; a tagged word's kind (bits 1-4) says what its other bits mean:
 *   object    bit 0 clear: gen << 32 | index << 2 | pool << 1 (index >= 1, so never NULL); a
 *             collective's also has bit 31 set when its kernel channels were asked for
 *   API       Group, GroupApi, CollApi, P2pApi, KernelLaunch: bit 5 graph-captured, bit 6 kernel
 *             channels requested, bits 8-31 the stream id
 *   step      ProxyStep, no object: bits 8-31 the index of its ProxyOp in the children's pool,
 *             bits 32-63 that object's generation
 *   channel   KernelCh without an object (no channel records asked): channel in bits 5-10, the
 *             parent's index in bits 11-34, the low 29 bits of its generation in bits 35-63
 * Only the h_* functions below build or read them. */
enum { POOL_PARENTS = 0, POOL_CHILDREN = 1 };
#define CHILDREN_PER_PARENT 4  /* the children's pool (KernelCh, ProxyOp) is 4x the parents' */
#define KCH_CHANNELS        64 /* channels a channel handle can name: one bit each in ch_stopped */
#define H_INDEX24           0xffffffu
#define H_CHANNEL_GEN       0x1fffffffu /* the generation bits a channel handle keeps */

/* TOPO_PROFILER_POOL's upper bound in the env table, as a constant. */
enum {
  POOL_MAX = 0
#define TOPO_ENV(id, type, def, min, max, doc) \
  +(TOPO_ENV_##id == TOPO_ENV_PROFILER_POOL ? (max) : 0)
#include "env/profiler.def"
#undef TOPO_ENV
};
_Static_assert(TOPO_EV_KERNELPHASE < 16, "an event kind fits a handle's bits 1-4");
_Static_assert(POOL_MAX > 0 && POOL_MAX <= H_INDEX24,
               "a parent's index fits a channel handle's 24 bits");
_Static_assert((uint64_t)POOL_MAX *CHILDREN_PER_PARENT <= H_INDEX24,
               "a child's index fits a step handle's 24 bits (and an object handle's bits 2-25)");
_Static_assert(KCH_CHANNELS <= 64 && KCH_CHANNELS <= 1 << 6,
               "a channel fits a channel handle's 6 bits and the 64-bit ch_stopped mask");

static inline void *h_ptr(uint64_t h) { return (void *)(uintptr_t)h; }
static inline uint64_t h_word(const void *h) { return (uint64_t)(uintptr_t)h; }
static inline int h_tagged(uint64_t h) { return (int)(h & 1); }
static inline int h_kind(uint64_t h) { return (int)((h >> 1) & 0xf); } /* tagged words only */

static inline uint64_t h_object(int pool, uint32_t idx, uint32_t gen) {
  return (uint64_t)gen << 32 | (uint64_t)idx << 2 | (uint64_t)pool << 1;
}
static inline int h_object_pool(uint64_t h) { return (int)((h >> 1) & 1); }
static inline uint32_t h_object_index(uint64_t h) { return (uint32_t)(h >> 2) & H_INDEX24; }
/* A collective's handle says whether its kernel channels were asked for, so that a KernelCh NCCL
 * sends for one that was not (a mask another party set) is ignored even after it completed. */
#define H_OBJ_ASKED (1ull << 31)
static inline uint32_t h_object_gen(uint64_t h) { return (uint32_t)(h >> 32); }

static inline uint64_t h_api(int kind, int graph, int sampled, uint32_t stream) {
  return 1ull | (uint64_t)kind << 1 | (uint64_t)(graph != 0) << 5 | (uint64_t)(sampled != 0) << 6 |
         (uint64_t)(stream & H_INDEX24) << 8;
}
static inline int h_is_api(uint64_t h, int kind) { return h_tagged(h) && h_kind(h) == kind; }
static inline int h_api_graph(uint64_t h) { return (int)((h >> 5) & 1); }
static inline int h_api_sampled(uint64_t h) { return (int)((h >> 6) & 1); }
static inline uint32_t h_api_stream(uint64_t h) { return (uint32_t)(h >> 8) & H_INDEX24; }

/* A ProxyStep's handle names its ProxyOp (`op`: an object handle of the children's pool). */
static inline uint64_t h_step(uint64_t op) {
  return 1ull | (uint64_t)TOPO_EV_PROXYSTEP << 1 | (uint64_t)(h_object_index(op) & H_INDEX24) << 8 |
         (uint64_t)h_object_gen(op) << 32;
}
static inline uint64_t h_step_op(uint64_t h) {
  return h_object(POOL_CHILDREN, (uint32_t)(h >> 8) & H_INDEX24, (uint32_t)(h >> 32));
}

static inline uint64_t h_channel(int ch, uint32_t parent_idx, uint32_t parent_gen) {
  return 1ull | (uint64_t)TOPO_EV_KERNELCH << 1 | (uint64_t)ch << 5 | (uint64_t)parent_idx << 11 |
         (uint64_t)(parent_gen & H_CHANNEL_GEN) << 35;
}
static inline int h_is_channel(uint64_t h) { return h_tagged(h) && h_kind(h) == TOPO_EV_KERNELCH; }
static inline int h_channel_ch(uint64_t h) { return (int)((h >> 5) & 0x3f); }
static inline uint32_t h_channel_parent(uint64_t h) { return (uint32_t)(h >> 11) & H_INDEX24; }
static inline uint32_t h_channel_gen(uint64_t h) { return (uint32_t)(h >> 35); }
#endif
