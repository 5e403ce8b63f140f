// SPDX-License-Identifier: Apache-2.0
// The reaper (reaper.h): completes collectives whose kernel channels never all reported (their
// records are written without GPU timing, or marked partial), so that nothing recorded waits
// forever. The writer's tick runs its pass; the core releases a communicator's holds at its
// finalize and every hold at exit, and counts what NCCL never stopped.
#include "reaper.h"

#include <stdatomic.h>

#include "pool.h"
#include "records.h"
#include "settings.h"

static int64_t last_reap; /* writer thread only */
static int held_seen;     /* writer thread: the last pass found collectives on hold */

void topo_reaper_reset(void) {
  last_reap = 0;
  held_seen = 0;
}

#define REAP_NS 100000000LL /* plenty for a timeout of seconds; a scan of 8192 objects is ~10 us */
int64_t topo_reaper_pass(int64_t now) {
  if (now - last_reap < REAP_NS) return held_seen ? last_reap + REAP_NS : INT64_MAX;
  last_reap = now;
  held_seen = 0;
  topo_pool *p = &topo_pools[POOL_PARENTS];
  for (uint32_t i = 1, n = topo_pool_used(p); i <= n; i++) {
    topo_obj *o = &p->objs[i];
    uint64_t h = atomic_load_explicit(&o->hold, memory_order_acquire);
    if (!(h & 1)) continue;
    int64_t st = atomic_load_explicit(&o->stop_cpu, memory_order_relaxed);
    if (st && now - st > topo_cfg.gpu_timeout_ns) topo_records_release_hold(o, h);
    else held_seen = 1;
  }
  return held_seen ? now + REAP_NS : INT64_MAX;
}

void topo_reaper_release(const topo_comm *c) {
  topo_pool *p = &topo_pools[POOL_PARENTS];
  for (uint32_t i = 1, n = topo_pool_used(p); i <= n; i++) {
    topo_obj *o = &p->objs[i];
    uint64_t h = atomic_load_explicit(&o->hold, memory_order_acquire);
    /* comm is read after the hold (acquire), so it belongs to the life the hold names */
    if ((h & 1) && (!c || atomic_load_explicit(&o->comm, memory_order_relaxed) == c))
      topo_records_release_hold(o, h);
  }
}

void topo_reaper_count_open(topo_comm *c) {
  topo_pool *p = &topo_pools[POOL_PARENTS];
  for (uint32_t i = 1, n = topo_pool_used(p); i <= n; i++) {
    topo_obj *o = &p->objs[i];
    if (atomic_load_explicit(&o->comm, memory_order_relaxed) == c &&
        (uint32_t)atomic_load_explicit(&o->refgen, memory_order_acquire) != 0)
      topo_comm_count_drop(c, TOPO_DROP_OTHER);
  }
}
