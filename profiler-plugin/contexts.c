// SPDX-License-Identifier: Apache-2.0
// Communicator contexts (contexts.h): the slot table behind the context handles NCCL holds. The
// core takes, opens, ends and retires slots at init and finalize under its mutex; callbacks read
// slots through the inline lookups of contexts.h; the writer through topo_contexts_at.
#include "contexts.h"

#include <stddef.h>
#include <string.h>

#include "alloc.h"

_Atomic(topo_comm *) topo_contexts_chunks[TOPO_CTX_CHUNKS];
static uint32_t made;      /* slots handed out at least once */
static topo_comm *retired; /* finalized slots (->next), closed or still being closed */

topo_comm *topo_contexts_at(uint32_t slot) {
  return slot < TOPO_CTX_SLOTS_MAX ? topo_contexts_slot(slot) : NULL;
}

topo_comm *topo_contexts_take(void) {
  for (topo_comm **p = &retired; *p; p = &(*p)->next)
    if (atomic_load(&(*p)->closed)) {
      topo_comm *c = *p;
      *p = c->next;
      return c;
    }
  if (made >= TOPO_CTX_SLOTS_MAX) return NULL;
  uint32_t k = 31u - (uint32_t)__builtin_clz(made / TOPO_CTX_FIRST + 1);
  if (!atomic_load(&topo_contexts_chunks[k])) {
    topo_comm *chunk = topo_calloc((size_t)TOPO_CTX_FIRST << k, sizeof *chunk);
    if (!chunk) return NULL;
    atomic_store_explicit(&topo_contexts_chunks[k], chunk, memory_order_release);
  }
  topo_comm *c = topo_contexts_slot(made);
  c->slot = made++;
  return c;
}

void topo_contexts_clear(topo_comm *c) {
  memset(&c->hash, 0, offsetof(topo_comm, wlife) - offsetof(topo_comm, hash));
}

uint32_t topo_contexts_open(topo_comm *c) {
  uint32_t life = atomic_load(&c->life) + 1;
  atomic_store_explicit(&c->life, life, memory_order_release);
  return life;
}

void topo_contexts_end(topo_comm *c) {
  atomic_store_explicit(&c->life, atomic_load(&c->life) + 1, memory_order_release);
}

void topo_contexts_retire(topo_comm *c) {
  c->next = retired;
  retired = c;
}
