// SPDX-License-Identifier: Apache-2.0
// Several communicators at once, each with an application thread issuing collectives and a
// proxy thread delivering their kernel channels, through a pool far too small for the load:
// every collective must end up either as a record or in a drop count, never silently lost; at
// ABI v7 too, with symmetric collectives and their kernel phases.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_profiler.h"
#include "profiler_driver.h"
#include "trace_read.h"

#define COMMS 4
#define OPS   3000
#define QUEUE 256

typedef struct comm_run {
  topo_host_profiler p;
  drv_op ops[OPS];
  drv_pending queue[QUEUE];
  atomic_int head, tail; /* single producer (app), single consumer (proxy) */
  atomic_int done;
} comm_run;

static void *app_thread(void *arg) {
  comm_run *c = arg;
  for (int i = 0; i < OPS; i++) {
    drv_pending pend;
    drv_issue(&c->p, &c->ops[i], &pend);
    while (atomic_load(&c->head) - atomic_load(&c->tail) >= QUEUE) sched_yield();
    c->queue[atomic_load(&c->head) % QUEUE] = pend;
    atomic_fetch_add(&c->head, 1);
  }
  atomic_store(&c->done, 1);
  return NULL;
}

static void *proxy_thread(void *arg) {
  comm_run *c = arg;
  for (;;) {
    int t = atomic_load(&c->tail);
    if (t == atomic_load(&c->head)) {
      if (atomic_load(&c->done) && t == atomic_load(&c->head)) break;
      sched_yield();
      continue;
    }
    drv_complete(&c->p, &c->queue[t % QUEUE]);
    atomic_fetch_add(&c->tail, 1);
  }
  return NULL;
}

/* The records of a run in all of `paths`: those written (the writer's own STATS aside) and those
 * counted as dropped. */
static uint64_t queued_records(char **paths, size_t n) {
  uint64_t queued = 0;
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    assert_int_equal(test_trace_read(paths[i], &t), 0);
    const topo_trace_record **stats;
    queued += t.count - test_trace_select(&t, TOPO_REC_STATS, &stats);
    for (int k = 0; k < TOPO_DROP_KINDS; k++) queued += t.footer.dropped[k];
    free(stats);
    test_trace_free(&t);
  }
  return queued;
}

/* `sym`: every other collective runs a symmetric kernel (NCCL 2.31+ events at ABI v7). */
static void run_at(int nccl, int sym, const char *events, const char *sample, const char *pool,
                   const char *ring, int expect_drops) {
  char dir[] = "/tmp/topo-stress-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_SAMPLE", sample, 1);
  setenv("TOPO_PROFILER_EVENTS", events, 1);
  setenv("TOPO_PROFILER_POOL", pool, 1);
  setenv("TOPO_PROFILER_RING", ring, 1);
  /* A proxy thread starved for long is late, never lost: no collective completes without its
   * kernel channels while the run lasts. */
  setenv("TOPO_PROFILER_GPU_TIMEOUT_MS", "3600000", 1);
  comm_run *runs = calloc(COMMS, sizeof *runs);
  for (int c = 0; c < COMMS; c++) {
    assert_int_equal(topo_host_profiler_load(&runs[c].p, TOPO_TEST_PROFILER_SO, nccl), TOPO_OK);
    topo_host_profiler_init(&runs[c].p, 0x5000 + (uint64_t)c, NULL, 1, COMMS, c, topo_host_log);
    assert_non_null(runs[c].p.ctx);
    for (int i = 0; i < OPS; i++) {
      drv_op *op = &runs[c].ops[i];
      op->func = "AllReduce";
      op->dtype = "ncclFloat32";
      op->algo = "RING";
      op->proto = "LL";
      op->seq = (uint64_t)i;
      op->count = 1024;
      op->nch = 4;
      op->peer = -1;
      op->stream = (void *)(uintptr_t)(0x1000 * (c + 1));
      op->sym = sym && i % 2 == 0;
      op->variant = "RSxLD_AGxST";
      op->user_tag = (uint64_t)i;
      drv_set_gpu(op, 1000000 + (uint64_t)i * 1000, 10, 500);
    }
  }
  pthread_t th[COMMS][2];
  for (int c = 0; c < COMMS; c++) {
    pthread_create(&th[c][0], NULL, app_thread, &runs[c]);
    pthread_create(&th[c][1], NULL, proxy_thread, &runs[c]);
  }
  for (int c = 0; c < COMMS; c++) {
    pthread_join(th[c][0], NULL);
    pthread_join(th[c][1], NULL);
  }
  for (int c = 0; c < COMMS; c++) {
    assert_int_equal(topo_host_profiler_finalize(&runs[c].p), ncclSuccess);
    topo_host_profiler_unload(&runs[c].p);
  }
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, COMMS);
  /* Room: the writer's ring, one for all communicators of the process, holds every record of the
   * run even had the writer thread never run during it, so that no drop can depend on how the
   * threads were scheduled. */
  if (!expect_drops) assert_true(queued_records(paths, n) <= (uint64_t)atol(ring));
  uint64_t all_drops = 0;
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    assert_int_equal(test_trace_read(paths[i], &t), 0);
    assert_true(t.has_footer);
    assert_false(t.bad_block);
    const topo_trace_record **colls, **chans, **phases;
    size_t nc = test_trace_select(&t, TOPO_REC_COLL, &colls);
    size_t nch = test_trace_select(&t, TOPO_REC_CHANNEL, &chans);
    size_t nph = test_trace_select(&t, TOPO_REC_PHASE, &phases);
    uint64_t lost = t.footer.dropped[TOPO_DROP_COLL] + t.footer.dropped[TOPO_DROP_RECORD] +
                    t.footer.dropped[TOPO_DROP_OTHER];
    /* every collective is a record or a drop */
    assert_int_equal(nc + lost, OPS);
    /* seqs are distinct */
    char *seen = calloc(OPS, 1);
    for (size_t j = 0; j < nc; j++) {
      assert_true(colls[j]->coll.seq < OPS);
      assert_false(seen[colls[j]->coll.seq]);
      seen[colls[j]->coll.seq] = 1;
      /* sampling is process-wide, so per comm any seq may be timed */
      if (colls[j]->coll.flags & TOPO_COLL_F_GPU_TIMED) {
        assert_int_equal(colls[j]->coll.gpu_start_ns, 1000000 + colls[j]->coll.seq * 1000);
      }
    }
    if (!expect_drops && strstr(events, "channel")) assert_true(nch > 0);
    size_t timed = 0;
    for (size_t j = 0; j < nc; j++) timed += (colls[j]->coll.flags & TOPO_COLL_F_GPU_TIMED) != 0;
    if (!expect_drops) assert_int_equal(timed, nc); /* every collective sampled */
    if (!expect_drops && strstr(events, "phase"))   /* 3 phases x 4 channels per symmetric one */
      assert_int_equal(nph, 3 * 4 * (OPS / 2));
    all_drops += lost + t.footer.dropped[TOPO_DROP_CHILD];
    free(seen);
    free(colls);
    free(chans);
    free(phases);
    test_trace_free(&t);
  }
  if (expect_drops) assert_true(all_drops > 0);
  else assert_int_equal(all_drops, 0);
  test_trace_free_list(paths, n);
  test_trace_rmdir(dir);
  free(runs);
}

static void run(const char *events, const char *sample, const char *pool, const char *ring,
                int expect_drops) {
  run_at(TOPO_NCCL_2_28, 0, events, sample, pool, ring, expect_drops);
}

static void test_many_comms_and_threads_lose_nothing_with_room(void **s) {
  (void)s;
  /* Every collective sampled: with 1 in N, threads of different communicators race on NCCL's
   * one mask (an op may see the bit flipped by another thread), which costs counted drops. */
  run("coll,p2p,channel", "1", "8192", "65536", 0);
}

static void test_object_free_kernel_channels_under_threads_lose_nothing(void **s) {
  (void)s;
  run("coll,p2p,kernel", "1", "8192", "65536", 0);
}

static void test_pool_exhaustion_is_counted_never_silent(void **s) {
  (void)s;
  run("coll,p2p,channel", "2", "16", "64", 1);
}

static void test_pool_exhaustion_without_channel_records_is_counted(void **s) {
  (void)s;
  run("coll,p2p,kernel", "2", "16", "64", 1);
}

static void test_v7_symmetric_collectives_and_phases_under_threads_lose_nothing(void **s) {
  (void)s;
  /* Per communicator 3000 COLL, 1500 COLL_EXT, 18000 PHASE (and 12000 CHANNEL): 4 x 34500 */
  run_at(TOPO_NCCL_2_31, 1, "coll,p2p,kernel,phase", "1", "8192", "262144", 0);
  run_at(TOPO_NCCL_2_31, 1, "coll,p2p,channel,phase", "1", "8192", "262144", 0);
}

static void test_v7_pool_exhaustion_with_phases_is_counted(void **s) {
  (void)s;
  run_at(TOPO_NCCL_2_31, 1, "coll,p2p,kernel,phase", "2", "16", "64", 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_v7_symmetric_collectives_and_phases_under_threads_lose_nothing),
      cmocka_unit_test(test_v7_pool_exhaustion_with_phases_is_counted),
      cmocka_unit_test(test_many_comms_and_threads_lose_nothing_with_room),
      cmocka_unit_test(test_object_free_kernel_channels_under_threads_lose_nothing),
      cmocka_unit_test(test_pool_exhaustion_is_counted_never_silent),
      cmocka_unit_test(test_pool_exhaustion_without_channel_records_is_counted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
