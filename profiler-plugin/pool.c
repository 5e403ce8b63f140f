// SPDX-License-Identifier: Apache-2.0
// Event objects and their pools (pool.h): creation and teardown for the core, the pages faulted
// in ahead of use for the writer's tick. What callbacks do with objects is inline in pool.h.
#include "pool.h"

#include <string.h>

#include "alloc.h"

topo_pool topo_pools[2];
uint32_t topo_pools_gen_base;

static int pool_create(topo_pool *p, uint32_t n) {
  p->bytes = ((size_t)n + 1) * sizeof(topo_obj);
  p->objs = topo_map(p->bytes);
  if (!p->objs) return -1;
  p->n = n;
  p->resident = 0;
  atomic_init(&p->resident_pub, 0);
  atomic_init(&p->fresh, 1);
  atomic_init(&p->head, 0);
  return 0;
}

static void pool_destroy(topo_pool *p) {
  topo_unmap(p->objs, p->bytes);
  memset(p, 0, sizeof *p);
}

int topo_pools_create(uint32_t parents) {
  if (pool_create(&topo_pools[POOL_PARENTS], parents) ||
      pool_create(&topo_pools[POOL_CHILDREN], parents * CHILDREN_PER_PARENT)) {
    pool_destroy(&topo_pools[POOL_PARENTS]);
    return -1;
  }
  return 0;
}

/* The generation the next pools start at: past every object generation handed out by these. */
static uint32_t next_gen_base(void) {
  uint32_t next = topo_pools_gen_base;
  for (int k = 0; k < 2; k++) {
    topo_pool *p = &topo_pools[k];
    for (uint32_t i = 1, n = topo_pool_used(p); i <= n; i++) {
      uint32_t gen =
          (uint32_t)(atomic_load_explicit(&p->objs[i].refgen, memory_order_acquire) >> 32);
      if (gen + 1 > next) next = gen + 1;
    }
  }
  return next;
}

void topo_pools_destroy(void) {
  topo_pools_gen_base = next_gen_base();
  pool_destroy(&topo_pools[POOL_PARENTS]);
  pool_destroy(&topo_pools[POOL_CHILDREN]);
}

/* An atomic add of 0 does not change what a callback may be storing to the same word at the same
 * moment. */
static void fault_pool_ahead(topo_pool *p) {
  uint32_t used = topo_pool_used(p);
  uint32_t ahead = used < 64 ? 64 : used > 1024 ? 1024 : used;
  uint32_t want = used + ahead > p->n ? p->n : used + ahead;
  for (; p->resident < want; p->resident++)
    atomic_fetch_add_explicit(&p->objs[p->resident + 1].refgen, 0, memory_order_relaxed);
  atomic_store_explicit(&p->resident_pub, p->resident, memory_order_relaxed);
}

void topo_pools_fault_ahead(void) {
  fault_pool_ahead(&topo_pools[POOL_PARENTS]);
  fault_pool_ahead(&topo_pools[POOL_CHILDREN]);
}
