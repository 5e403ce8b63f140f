/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Communicator contexts (contexts.c): the table of topo_comm slots (comm.h) and the context
 * handles NCCL holds for them. The context NCCL holds is a handle, never a pointer:
 * life << 32 | slot << 1 | 1. A slot is never returned to the allocator: slots come in chunks
 * (chunk k holds TOPO_CTX_FIRST << k of them), made as the number of communicators open at once
 * grows and kept for the life of the process. A slot's life is odd while its communicator is open
 * and turns even at its finalize; a finalized slot serves a later init (life + 1) once the writer
 * has closed its file. So a context already finalized, one of an earlier plugin generation, or
 * one whose slot now serves another communicator names a life its slot no longer has, and is
 * refused by one comparison; a word that is none of ours fails the tag, range or life check.
 * Memory follows the most communicators open at once, not how many there were.
 *
 * The core takes, opens, ends and retires slots under its mutex; callbacks only read
 * (topo_contexts_live, inline here: the hot path's first step); the writer finds a record's comm
 * with topo_contexts_at (passed to it as its comm_at).
 */
#ifndef TOPO_PROFILER_CONTEXTS_H
#define TOPO_PROFILER_CONTEXTS_H

#include <stdatomic.h>
#include <stdint.h>

#include "comm.h"
#include "export.h"

#define TOPO_CTX_FIRST     16u
#define TOPO_CTX_CHUNKS    16
#define TOPO_CTX_SLOTS_MAX (TOPO_CTX_FIRST * ((1u << TOPO_CTX_CHUNKS) - 1)) /* ~1M open at once */
_Static_assert(sizeof(void *) == 8, "a context handle is a 64-bit word");
_Static_assert(TOPO_CTX_SLOTS_MAX < (1u << 31), "a slot fits a context handle's bits 1-31");

/* The chunks made so far (NULL after the last): written once each under the core's mutex
 * (release), read by anyone (acquire). */
extern _Atomic(topo_comm *) topo_contexts_chunks[TOPO_CTX_CHUNKS] TOPO_HIDDEN;

/* Slot `slot` (< TOPO_CTX_SLOTS_MAX), NULL when its chunk was never made. Any thread. */
static inline topo_comm *topo_contexts_slot(uint32_t slot) {
  uint32_t k = 31u - (uint32_t)__builtin_clz(slot / TOPO_CTX_FIRST + 1);
  topo_comm *chunk = atomic_load_explicit(&topo_contexts_chunks[k], memory_order_acquire);
  return chunk ? &chunk[slot - TOPO_CTX_FIRST * ((1u << k) - 1)] : NULL;
}

/* The open communicator `ctx` names, or NULL. Hot path: a few loads, nothing written. */
static inline topo_comm *topo_contexts_live(void *ctx) {
  uint64_t v = (uint64_t)(uintptr_t)ctx;
  uint32_t life = (uint32_t)(v >> 32), slot = (uint32_t)v >> 1;
  if (!(v & 1) || !(life & 1) || slot >= TOPO_CTX_SLOTS_MAX) return NULL;
  topo_comm *c = topo_contexts_slot(slot);
  if (!c || atomic_load_explicit(&c->life, memory_order_acquire) != life) return NULL;
  return c;
}

/* The life a context handle names. Pure. */
static inline uint32_t topo_contexts_life(void *ctx) {
  return (uint32_t)((uint64_t)(uintptr_t)ctx >> 32);
}

/* The handle NCCL holds for life `life` of `c`. Pure. */
static inline void *topo_contexts_handle(const topo_comm *c, uint32_t life) {
  return (void *)(uintptr_t)((uint64_t)life << 32 | (uint64_t)c->slot << 1 | 1u);
}

/* Whether `c` is still in life `life` or just past its finalize (not yet reused). Any thread. */
static inline int topo_contexts_in_life(const topo_comm *c, uint32_t life) {
  return (uint32_t)(atomic_load_explicit(&c->life, memory_order_relaxed) - life) <= 1u;
}

/* The comm in slot `slot`, NULL when there is none (any slot number). The writer's comm_at. */
topo_comm *topo_contexts_at(uint32_t slot);
/* A slot for a new communicator: a finalized one the writer has closed, else a new one. NULL
 * when out of memory or slots. The core's mutex held. */
topo_comm *topo_contexts_take(void);
/* Clear what init sets up in slot `c` (not what the writer owns, see comm.h). */
void topo_contexts_clear(topo_comm *c);
/* Open a new life of slot `c` (even to odd); returns it. The core's mutex held. */
uint32_t topo_contexts_open(topo_comm *c);
/* End the life of `c` (odd to even: no event is accepted on it any more). The core's mutex. */
void topo_contexts_end(topo_comm *c);
/* A slot whose life ended goes back for reuse; it is reused once its writer closed it. The
 * core's mutex held. */
void topo_contexts_retire(topo_comm *c);
#endif
