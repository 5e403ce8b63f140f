// SPDX-License-Identifier: Apache-2.0
// Load: several communicators, each with an application thread issuing collectives and a proxy
// thread delivering their kernel channels, push 10^7 profiler events (every startEvent counts:
// GroupApi, CollApi, KernelLaunch, Group, Coll and four KernelCh per collective, every
// collective sampled, per-channel records on) through libtopo-profiler.so loaded by the plugin
// host, with an event pool and a writer queue small enough that both overflow. Exact accounting
// from the trace files alone: per communicator, collective records + COLL + RECORD + OTHER drops
// = collectives issued, channel records + CHILD drops = kernel-channel events delivered, the
// footer's record and block counts match what is read back, and the per-block STATS records
// never decrease and never exceed the footer. The TSan build runs a tenth of the load.
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
#include <time.h>
#include <unistd.h>

#include "host_profiler.h"
#include "profiler_driver.h"
#include "trace_read.h"

#if defined(__SANITIZE_THREAD__)
#define EVENTS 1000000L
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EVENTS 1000000L
#endif
#endif
#ifndef EVENTS
#define EVENTS 10000000L
#endif
#define COMMS         4
#define CHANNELS      4
#define EVENTS_PER_OP (5 + CHANNELS)
#define OPS_PER_COMM  ((EVENTS + COMMS * EVENTS_PER_OP - 1) / (COMMS * EVENTS_PER_OP))
/* Communicator 0's application thread hands its first BURST collectives to its proxy thread at
 * once: none of them completes before all were issued, so that burst alone overflows the event
 * pool (POOL < BURST) and drops are certain at any speed (TSan, a loaded machine), not only
 * likely. Every other collective is handed over as soon as it is issued. */
#define POOL  1024
#define BURST 1280
#define QUEUE 2048 /* slots; > BURST */
#define LAG   256  /* how far an application thread may run ahead of its proxy thread */

typedef struct slot {
  drv_op op;
  drv_pending pending;
} slot;

typedef struct comm_run {
  topo_host_profiler p;
  slot queue[QUEUE];
  atomic_long head, tail; /* single producer (app thread), single consumer (proxy thread) */
  atomic_int done;
  long kernelch_events; /* KernelCh events delivered (proxy thread) */
  int index;
} comm_run;

static void *app_thread(void *arg) {
  comm_run *c = arg;
  for (long i = 0; i < OPS_PER_COMM; i++) {
    long lag = c->index == 0 && i < BURST ? QUEUE : LAG;
    while (i - atomic_load(&c->tail) >= lag) sched_yield();
    slot *s = &c->queue[i % QUEUE];
    memset(&s->op, 0, sizeof s->op);
    s->op.func = (i % 3) ? "AllReduce" : "AllGather";
    s->op.dtype = "ncclFloat32";
    s->op.algo = "RING";
    s->op.proto = (i & 1) ? "LL" : "Simple";
    s->op.seq = (uint64_t)i;
    s->op.count = 1024 + (size_t)(i % 4096);
    s->op.nch = CHANNELS;
    s->op.peer = -1;
    s->op.rank = c->index;
    s->op.stream = (void *)(uintptr_t)(0x1000 * (c->index + 1));
    drv_set_gpu(&s->op, 1000000 + (uint64_t)i * 1000, 10, 500);
    drv_issue(&c->p, &s->op, &s->pending);
    long burst = c->index == 0 && i < BURST ? BURST : 1;
    if ((i + 1) % burst == 0 || i + 1 == OPS_PER_COMM) atomic_store(&c->head, i + 1);
  }
  atomic_store(&c->done, 1);
  return NULL;
}

static void *proxy_thread(void *arg) {
  comm_run *c = arg;
  for (;;) {
    long t = atomic_load(&c->tail);
    if (t == atomic_load(&c->head)) {
      if (atomic_load(&c->done) && t == atomic_load(&c->head)) break;
      sched_yield();
      continue;
    }
    slot *s = &c->queue[t % QUEUE];
    drv_complete(&c->p, &s->pending);
    if (s->pending.kernelch) c->kernelch_events += s->op.nch;
    atomic_fetch_add(&c->tail, 1);
  }
  return NULL;
}

static void test_ten_million_events_are_recorded_or_counted_as_dropped(void **state) {
  (void)state;
  char dir[] = "/tmp/topo-load-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  setenv("TOPO_PROFILER_EVENTS", "coll,kernel,channel", 1);
  char pool[16];
  snprintf(pool, sizeof pool, "%d", POOL);
  setenv("TOPO_PROFILER_POOL", pool, 1);
  setenv("TOPO_PROFILER_RING", "4096", 1);
  setenv("TOPO_PROFILER_NVTX", "0", 1);
  comm_run *runs = calloc(COMMS, sizeof *runs);
  assert_non_null(runs);
  for (int c = 0; c < COMMS; c++) {
    runs[c].index = c;
    assert_int_equal(topo_host_profiler_load(&runs[c].p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28),
                     TOPO_OK);
    assert_int_equal(topo_host_profiler_init(&runs[c].p, 0x10ad0000 + (uint64_t)c, "load", 1, COMMS,
                                             c, topo_host_log),
                     ncclSuccess);
    assert_non_null(runs[c].p.ctx);
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pthread_t th[COMMS][2];
  for (int c = 0; c < COMMS; c++) {
    assert_int_equal(pthread_create(&th[c][0], NULL, app_thread, &runs[c]), 0);
    assert_int_equal(pthread_create(&th[c][1], NULL, proxy_thread, &runs[c]), 0);
  }
  for (int c = 0; c < COMMS; c++) {
    pthread_join(th[c][0], NULL);
    pthread_join(th[c][1], NULL);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  for (int c = 0; c < COMMS; c++) {
    assert_int_equal(topo_host_profiler_finalize(&runs[c].p), ncclSuccess);
    topo_host_profiler_unload(&runs[c].p);
  }

  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, COMMS);
  long events = 0;
  uint64_t colls = 0, chans = 0, drops = 0;
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    assert_int_equal(test_trace_read(paths[i], &t), 0);
    assert_true(t.has_footer);
    assert_false(t.bad_block);
    comm_run *r = NULL;
    for (int c = 0; c < COMMS; c++)
      if (t.header.rank == c) r = &runs[c];
    assert_non_null(r);
    const topo_trace_record **sel;
    size_t nc = test_trace_select(&t, TOPO_REC_COLL, &sel);
    free(sel);
    size_t nch = test_trace_select(&t, TOPO_REC_CHANNEL, &sel);
    free(sel);
    const topo_trace_record **stats;
    size_t ns = test_trace_select(&t, TOPO_REC_STATS, &stats);
    const uint64_t *d = t.footer.dropped;
    /* every collective and every kernel-channel event: a record or a counted drop */
    assert_int_equal(nc + d[TOPO_DROP_COLL] + d[TOPO_DROP_RECORD] + d[TOPO_DROP_OTHER],
                     OPS_PER_COMM);
    assert_int_equal(nch + d[TOPO_DROP_CHILD], r->kernelch_events);
    assert_int_equal(d[TOPO_DROP_IO], 0);
    /* the footer describes the file read back; STATS are cumulative and bounded by it */
    assert_int_equal(t.footer.records, t.count);
    assert_int_equal(t.footer.blocks, t.blocks);
    assert_int_equal(ns, t.blocks);
    for (size_t s = 0; s < ns; s++)
      for (int k = 0; k < TOPO_DROP_KINDS; k++) {
        assert_true(stats[s]->stats.dropped[k] <= d[k]);
        if (s) assert_true(stats[s]->stats.dropped[k] >= stats[s - 1]->stats.dropped[k]);
      }
    free(stats);
    events += OPS_PER_COMM * 5 + r->kernelch_events;
    colls += nc;
    chans += nch;
    for (int k = 0; k < TOPO_DROP_KINDS; k++) drops += d[k];
    test_trace_free(&t);
  }
  test_trace_free_list(paths, n);
  test_trace_rmdir(dir);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  print_message(
      "%ld events (%d comms x %ld collectives) in %.2f s (%.1f M events/s): %llu "
      "collective and %llu channel records, %llu counted drops\n",
      events, COMMS, (long)OPS_PER_COMM, s, (double)events / s / 1e6, (unsigned long long)colls,
      (unsigned long long)chans, (unsigned long long)drops);
  assert_true(events >= EVENTS);
  assert_true(colls > 0 && chans > 0); /* both paths exercised: records ... */
  assert_true(drops > 0);              /* ... and counted drops */
  free(runs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ten_million_events_are_recorded_or_counted_as_dropped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
