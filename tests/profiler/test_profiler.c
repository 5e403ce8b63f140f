// SPDX-License-Identifier: Apache-2.0
// libtopo-profiler.so through the plugin host, at every ABI version v1..v6: record contents
// field by field, sampling through the activation mask, the never-hurt-the-job cases (NULL
// context, unknown events, state after stop, PXN proxy ops, unwritable directory, reload), and
// the file a killed process leaves.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host_profiler.h"
#include "profiler_driver.h"
#include "trace_read.h"

static char dir[256];

static const int nccl_for_version[7] = {0,
                                        TOPO_NCCL_2_23,
                                        TOPO_NCCL_2_24,
                                        TOPO_NCCL_2_26,
                                        TOPO_NCCL_2_27,
                                        TOPO_NCCL_2_28,
                                        TOPO_NCCL_2_29};

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-prof-test-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  setenv("TOPO_PROFILER_DIR", dir, 1);
  unsetenv("TOPO_PROFILER_SAMPLE");
  unsetenv("TOPO_PROFILER_EVENTS");
  unsetenv("TOPO_PROFILER_POOL");
  unsetenv("TOPO_PROFILER_ENABLE");
  setenv("TOPO_PROFILER_NVTX", "1", 1);
  topo_host_log_reset();
  topo_host_profiler_mask = 0;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  test_trace_rmdir(dir);
  return 0;
}

static void load(topo_host_profiler *p, int version) {
  assert_int_equal(topo_host_profiler_load(p, TOPO_TEST_PROFILER_SO, nccl_for_version[version]),
                   TOPO_OK);
  assert_int_equal(p->lib.version, version);
}

/* The only trace file of the test directory. */
static void read_only_trace(test_trace *t) {
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, 1);
  assert_int_equal(test_trace_read(paths[0], t), 0);
  test_trace_free_list(paths, n);
}

static drv_op allreduce(uint64_t seq, int nch) {
  drv_op op;
  memset(&op, 0, sizeof op);
  op.func = "AllReduce";
  op.dtype = "ncclFloat32";
  op.algo = "RING";
  op.proto = "SIMPLE";
  op.seq = seq;
  op.count = 262144; /* 1 MB */
  op.root = 0;
  op.peer = -1;
  op.nch = nch;
  op.nwarps = 16;
  op.stream = (void *)0x7f0000001000;
  drv_set_gpu(&op, 1796061791515522368ull + seq * 100000, 150, 20000);
  return op;
}

/* ---- every version: one collective and one send, field by field ---- */

typedef struct proxy_arg {
  topo_host_profiler *p;
  drv_pending *pending;
  int n;
} proxy_arg;

static void *proxy_thread(void *arg) {
  proxy_arg *a = arg;
  for (int i = 0; i < a->n; i++) drv_complete(a->p, &a->pending[i]);
  return NULL;
}

static void check_version(int v) {
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  topo_host_profiler p;
  load(&p, v);
  assert_int_equal(
      topo_host_profiler_init(&p, 0x897231067d798d47ull, "train", 1, 2, 1, topo_host_log),
      ncclSuccess);
  assert_non_null(p.ctx);
  int want = ncclProfileColl | ncclProfileP2p | (v >= 4 ? ncclProfileKernelCh : 0);
  assert_int_equal(topo_host_profiler_mask, want);

  drv_op ops[3];
  ops[0] = allreduce(5, 2);
  ops[1] = allreduce(6, 4);
  ops[1].graph = 1;
  ops[1].func = "Broadcast";
  ops[1].dtype = "ncclInt8";
  ops[1].count = 4096;
  ops[1].root = 1;
  ops[1].algo = "TREE";
  ops[1].proto = "LL";
  memset(&ops[2], 0, sizeof ops[2]);
  ops[2].p2p = 1;
  ops[2].func = "Send";
  ops[2].dtype = "ncclBfloat16";
  ops[2].count = 1000;
  ops[2].peer = 0;
  ops[2].nch = 2;
  ops[2].stream = (void *)0x7f0000002000;
  drv_set_gpu(&ops[2], 1796061791600000000ull, 10, 5000);
  drv_pending pending[3];
  for (int i = 0; i < 3; i++) {
    ops[i].rank = 1; /* NCCL fills rank in Coll/P2p descriptors: v1-v3 learn it there */
    drv_issue(&p, &ops[i], &pending[i]);
  }
  pthread_t proxy;
  proxy_arg arg = {&p, pending, 3};
  pthread_create(&proxy, NULL, proxy_thread, &arg);
  pthread_join(proxy, NULL);
  assert_int_equal(topo_host_profiler_finalize(&p), ncclSuccess);
  topo_host_profiler_unload(&p);

  test_trace t;
  read_only_trace(&t);
  assert_false(t.bad_block);
  assert_true(t.has_footer);
  assert_memory_equal(t.header.magic, TOPO_TRACE_MAGIC, 8);
  assert_int_equal(t.header.comm_hash, 0x897231067d798d47ull);
  assert_int_equal(t.header.rank, 1);
  assert_int_equal(t.header.abi_version, v);
  assert_int_equal(t.header.pid, getpid());
  assert_int_equal(t.header.event_mask, want);
  if (v >= 4) {
    assert_int_equal(t.header.nranks, 2);
    assert_string_equal(t.header.comm_name, "train");
    assert_true(t.header.flags & TOPO_TRACE_F_KERNELCH);
    /* pTimer - realtime seen: the test's pTimers are ~2026 epoch ns, so some offset exists. */
    assert_true(t.header.gpu_minus_realtime_ns != TOPO_TRACE_OFFSET_UNKNOWN);
  }
  const topo_trace_record **colls, **p2ps, **stats;
  size_t nc = test_trace_select(&t, TOPO_REC_COLL, &colls);
  size_t np = test_trace_select(&t, TOPO_REC_P2P, &p2ps);
  size_t ns = test_trace_select(&t, TOPO_REC_STATS, &stats);
  assert_int_equal(nc, 2);
  assert_int_equal(np, 1);
  assert_true(ns >= 1);
  for (size_t i = 0; i < nc; i++) {
    const topo_rec_coll *r = &colls[i]->coll;
    const drv_op *op = r->seq == 5 ? &ops[0] : &ops[1];
    assert_true(r->seq == 5 || r->seq == 6);
    assert_int_equal(r->func, r->seq == 5 ? 4 : 0);
    assert_int_equal(r->datatype, r->seq == 5 ? 7 : 0);
    assert_int_equal(r->bytes, r->seq == 5 ? 1048576 : 4096);
    assert_int_equal(r->algo, r->seq == 5 ? 1 : 0);
    assert_int_equal(r->proto, r->seq == 5 ? 2 : 0);
    assert_int_equal(r->nchannels, op->nch);
    assert_int_equal(r->nwarps, 16);
    assert_int_equal(r->peer, r->seq == 5 ? -1 : 1);
    assert_true(r->cpu_start_ns > 0 && r->cpu_stop_ns >= r->cpu_start_ns);
    /* TOPO_PROFILER_SAMPLE=1: kernel channels asked for every collective where they exist */
    assert_int_equal(!!(r->flags & TOPO_COLL_F_GPU_ASKED), v >= 4);
    if (v >= 4) {
      assert_true(r->flags & TOPO_COLL_F_GPU_TIMED);
      assert_false(r->flags & TOPO_COLL_F_PARTIAL);
      assert_int_equal(r->gpu_start_ns, op->gpu_start[0]);
      assert_int_equal(r->gpu_stop_ns, op->gpu_stop[op->nch - 1]);
    } else {
      assert_false(r->flags & TOPO_COLL_F_GPU_TIMED);
      assert_int_equal(r->gpu_start_ns, 0);
    }
    if (v >= 5) {
      assert_int_not_equal(r->stream_id, 0);
      assert_int_equal(!!(r->flags & TOPO_COLL_F_GRAPH), r->seq == 6);
    } else {
      assert_int_equal(r->stream_id, 0);
      assert_false(r->flags & TOPO_COLL_F_GRAPH);
    }
  }
  const topo_rec_coll *s = &p2ps[0]->coll;
  assert_int_equal(s->func, 6);
  assert_int_equal(s->datatype, 9);
  assert_int_equal(s->bytes, 2000);
  assert_int_equal(s->peer, 0);
  assert_int_equal(s->seq, 0);
  if (v >= 5) {
    assert_int_equal(s->nchannels, 2);
    assert_true(s->flags & TOPO_COLL_F_GPU_TIMED);
    assert_int_equal(s->gpu_start_ns, ops[2].gpu_start[0]);
    assert_int_equal(s->gpu_stop_ns, ops[2].gpu_stop[1]);
    assert_int_not_equal(s->stream_id, colls[0]->coll.stream_id);
  }
  /* Nothing dropped, and the footer agrees with the last STATS record. */
  for (int k = 0; k < TOPO_DROP_KINDS; k++) {
    assert_int_equal(t.footer.dropped[k], 0);
    assert_int_equal(stats[ns - 1]->stats.dropped[k], 0);
  }
  assert_int_equal(t.footer.records, t.count);
  assert_int_equal(t.footer.blocks, t.blocks);
  free(colls);
  free(p2ps);
  free(stats);
  test_trace_free(&t);
}

static void test_v1_records_collectives_and_p2p(void **s) {
  (void)s;
  check_version(1);
}
static void test_v2_records_collectives_and_p2p(void **s) {
  (void)s;
  check_version(2);
}
static void test_v3_records_collectives_and_p2p(void **s) {
  (void)s;
  check_version(3);
}
static void test_v4_records_gpu_timing_from_kernel_channels(void **s) {
  (void)s;
  check_version(4);
}
static void test_v5_records_stream_and_graph_capture(void **s) {
  (void)s;
  check_version(5);
}
static void test_v6_records_stream_and_graph_capture(void **s) {
  (void)s;
  check_version(6);
}

static void test_exports_exactly_the_six_profiler_symbols(void **s) {
  (void)s;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "nm -D --defined-only %s", TOPO_TEST_PROFILER_SO);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  char line[256];
  int profiler = 0, other = 0;
  while (fgets(line, sizeof line, f)) {
    char addr[64], type[8], name[160];
    if (sscanf(line, "%63s %7s %159s", addr, type, name) != 3) continue;
    if (!strncmp(name, "ncclProfiler_v", 14)) profiler++;
    else if (name[0] != '_' && strcmp(type, "A") != 0) {
      fprintf(stderr, "unexpected export: %s", line);
      other++;
    }
  }
  assert_int_equal(pclose(f), 0);
  assert_int_equal(profiler, 6);
  assert_int_equal(other, 0);
}

/* ---- sampling: below TOPO_PROFILER_MEASURE_BYTES, the first two of a kind, then 1 in N,
 * flipped in the mask ahead of the operation it is meant for ---- */
static void test_sampling_asks_kernel_channels_for_one_in_n(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_SAMPLE", "4", 1);
  topo_host_profiler p;
  load(&p, 5);
  assert_int_equal(topo_host_profiler_init(&p, 0x1234, NULL, 1, 8, 0, topo_host_log), ncclSuccess);
  assert_true(topo_host_profiler_mask & ncclProfileKernelCh); /* op 0 is measured */
  enum { N = 40 };
  int asked[N];
  for (uint64_t i = 0; i < N; i++) {
    drv_op op = allreduce(i, 2); /* 1 MB: below the 16 MiB threshold */
    drv_pending pend;
    drv_issue(&p, &op, &pend);
    drv_complete(&p, &pend);
    asked[i] = pend.kernelch;
  }
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  /* op 0 by the initial mask, op 2 as the second of its kind (after op 1 the successor of a
   * 1 MB AllReduce is known), then every 4th */
  assert_true(asked[0]);
  assert_false(asked[1]);
  assert_true(asked[2]);
  int last = -1, gaps = 0;
  for (int i = 3; i < N; i++) {
    if (!asked[i]) continue;
    if (last >= 0) {
      assert_int_equal(i - last, 4);
      gaps++;
    }
    last = i;
  }
  assert_true(gaps >= 7);
  test_trace t;
  read_only_trace(&t);
  assert_true(t.header.flags & TOPO_TRACE_F_SAMPLED);
  assert_int_equal(t.header.sample_every, 4);
  assert_int_equal(t.header.measure_min_bytes, 16777216);
  const topo_trace_record **colls;
  size_t n = test_trace_select(&t, TOPO_REC_COLL, &colls);
  assert_int_equal(n, N);
  for (size_t i = 0; i < n; i++) {
    uint64_t seq = colls[i]->coll.seq;
    assert_true(seq < N);
    assert_int_equal(!!(colls[i]->coll.flags & TOPO_COLL_F_GPU_TIMED), asked[seq]);
    assert_int_equal(!!(colls[i]->coll.flags & TOPO_COLL_F_GPU_ASKED), asked[seq]);
  }
  free(colls);
  test_trace_free(&t);
}

static void test_every_init_writes_the_same_mask(void **s) {
  (void)s;
  topo_host_profiler a, b;
  load(&a, 5);
  load(&b, 5);
  topo_host_profiler_init(&a, 1, NULL, 1, 2, 0, topo_host_log);
  int first = topo_host_profiler_mask;
  topo_host_profiler_mask = 0;
  topo_host_profiler_init(&b, 2, NULL, 1, 2, 1, topo_host_log);
  assert_int_equal(topo_host_profiler_mask, first);
  assert_int_equal(first & (ncclProfileColl | ncclProfileP2p), ncclProfileColl | ncclProfileP2p);
  assert_false(first & (ncclProfileProxyOp | ncclProfileProxyCtrl | ncclProfileKernelLaunch));
  topo_host_profiler_finalize(&a);
  topo_host_profiler_finalize(&b);
  topo_host_profiler_unload(&a);
  topo_host_profiler_unload(&b);
}

/* ---- never hurt the job ---- */
static void test_null_context_unknown_events_and_late_states_are_harmless(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  setenv("TOPO_PROFILER_EVENTS", "coll,p2p,kernel,proxy", 1);
  topo_host_profiler p;
  load(&p, 5);
  const ncclProfiler_v5_t *api = p.lib.sym;
  /* init with a NULL mask pointer: success, no context */
  void *ctx = (void *)1;
  assert_int_equal(api->init(&ctx, 1, NULL, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  assert_null(ctx);
  assert_int_equal(topo_host_profiler_init(&p, 0xabc, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof d);
  void *h = (void *)1;
  /* NULL context */
  d.type = ncclProfileColl;
  assert_int_equal(api->startEvent(NULL, &h, &d), ncclSuccess);
  assert_null(h);
  /* unknown event type */
  h = (void *)1;
  d.type = 1ull << 40;
  assert_int_equal(api->startEvent(p.ctx, &h, &d), ncclSuccess);
  assert_null(h);
  /* NULL descriptor, NULL handles */
  assert_int_equal(api->startEvent(p.ctx, &h, NULL), ncclSuccess);
  assert_int_equal(api->stopEvent(NULL), ncclSuccess);
  assert_int_equal(api->recordEventState(NULL, ncclProfilerKernelChStop, NULL), ncclSuccess);
  /* GroupApi states with NULL arguments */
  d.type = ncclProfileGroupApi;
  api->startEvent(p.ctx, &h, &d);
  assert_int_equal(api->recordEventState(h, ncclProfilerGroupStartApiStop, NULL), ncclSuccess);
  api->stopEvent(h);
  /* PXN: a proxy op of another process with a foreign parent pointer */
  memset(&d, 0, sizeof d);
  d.type = ncclProfileProxyOp;
  d.parentObj = (void *)0xdead0000beefull;
  d.proxyOp.pid = getpid() + 1;
  h = (void *)1;
  assert_int_equal(api->startEvent((void *)0xbad0bad0, &h, &d), ncclSuccess);
  assert_null(h);
  /* a collective, a kernel channel, then states and stops after the stop */
  drv_op op = allreduce(3, 1);
  drv_pending pend;
  drv_issue(&p, &op, &pend);
  assert_non_null(pend.handle);
  void *ch;
  topo_host_event e;
  memset(&e, 0, sizeof e);
  e.type = ncclProfileKernelCh;
  e.parent = pend.handle;
  e.ptimer = op.gpu_start[0];
  topo_host_profiler_start(&p, &ch, &e);
  assert_non_null(ch);
  topo_host_profiler_state(&p, ch, ncclProfilerKernelChStop, 0, op.gpu_stop[0]);
  topo_host_profiler_stop(&p, ch);
  topo_host_profiler_state(&p, ch, ncclProfilerKernelChStop, 0, op.gpu_stop[0] + 999999);
  topo_host_profiler_stop(&p, ch);
  topo_host_profiler_stop(&p, pend.handle); /* a second stop of the Coll */
  /* a kernel channel whose parent is gone */
  e.parent = pend.handle;
  topo_host_profiler_start(&p, &ch, &e);
  assert_null(ch);
  /* a proxy op of this process with its steps */
  drv_op op2 = allreduce(4, 1);
  drv_issue(&p, &op2, &pend);
  memset(&e, 0, sizeof e);
  e.type = ncclProfileProxyOp;
  e.parent = pend.handle;
  e.pid = getpid();
  e.peer = 1;
  e.nsteps = 2;
  e.chunk_size = 524288;
  e.is_send = 1;
  void *pop, *step;
  topo_host_profiler_start(&p, &pop, &e);
  assert_non_null(pop);
  for (int i = 0; i < 2; i++) {
    memset(&e, 0, sizeof e);
    e.type = ncclProfileProxyStep;
    e.parent = pop;
    e.step = i;
    topo_host_profiler_start(&p, &step, &e);
    topo_host_profiler_state(&p, step, ncclProfilerProxyStepSendGPUWait, 0, 0);
    topo_host_profiler_state(&p, step, ncclProfilerProxyStepSendWait, 524288, 0);
    topo_host_profiler_stop(&p, step);
  }
  topo_host_profiler_stop(&p, pop);
  drv_complete(&p, &pend);
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);

  test_trace t;
  read_only_trace(&t);
  const topo_trace_record **colls, **proxies;
  size_t n = test_trace_select(&t, TOPO_REC_COLL, &colls);
  assert_int_equal(n, 2);
  assert_int_equal(colls[0]->coll.gpu_stop_ns, op.gpu_stop[0]); /* the late state was ignored */
  assert_int_equal(test_trace_select(&t, TOPO_REC_PROXY, &proxies), 1);
  assert_int_equal(proxies[0]->proxy.bytes, 2 * 524288);
  assert_int_equal(proxies[0]->proxy.seq, 4);
  assert_int_equal(proxies[0]->proxy.nsteps, 2);
  assert_int_equal(proxies[0]->proxy.is_send, 1);
  assert_int_equal(proxies[0]->proxy.peer, 1);
  assert_int_equal(t.footer.dropped[TOPO_DROP_CHILD], 1); /* the orphaned kernel channel */
  free(colls);
  free(proxies);
  test_trace_free(&t);
}

static void test_disabled_profiler_asks_for_nothing(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_ENABLE", "0", 1);
  topo_host_profiler p;
  load(&p, 5);
  topo_host_profiler_mask = 12345;
  assert_int_equal(topo_host_profiler_init(&p, 1, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  assert_null(p.ctx);
  assert_int_equal(topo_host_profiler_mask, 12345);
  drv_op op = allreduce(1, 1);
  drv_run(&p, &op);
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  char **paths;
  assert_int_equal(test_trace_list(dir, &paths), 0);
  test_trace_free_list(paths, 0);
}

static void test_unwritable_directory_warns_once_and_counts(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_DIR", "/dev/null/topo-traces", 1);
  topo_host_profiler a, b;
  load(&a, 5);
  load(&b, 5);
  assert_int_equal(topo_host_profiler_init(&a, 1, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  assert_int_equal(topo_host_profiler_init(&b, 2, NULL, 1, 2, 1, topo_host_log), ncclSuccess);
  assert_non_null(a.ctx);
  for (int i = 0; i < 10; i++) {
    drv_op op = allreduce((uint64_t)i, 1);
    drv_run(&a, &op);
    drv_run(&b, &op);
  }
  assert_int_equal(topo_host_profiler_finalize(&a), ncclSuccess);
  assert_int_equal(topo_host_profiler_finalize(&b), ncclSuccess);
  topo_host_profiler_unload(&a);
  topo_host_profiler_unload(&b);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  assert_true(topo_host_log_contains("/dev/null/topo-traces"));
}

static void test_reload_after_last_finalize_starts_afresh(void **s) {
  (void)s;
  for (int round = 0; round < 3; round++) {
    topo_host_profiler p;
    load(&p, 5);
    topo_host_profiler_init(&p, 0x100 + (uint64_t)round, NULL, 1, 2, 0, topo_host_log);
    assert_non_null(p.ctx);
    drv_op op = allreduce(0, 2);
    drv_run(&p, &op);
    topo_host_profiler_finalize(&p);
    topo_host_profiler_unload(&p);
  }
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, 3);
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    assert_int_equal(test_trace_read(paths[i], &t), 0);
    assert_true(t.has_footer);
    const topo_trace_record **c;
    assert_int_equal(test_trace_select(&t, TOPO_REC_COLL, &c), 1);
    free(c);
    test_trace_free(&t);
  }
  test_trace_free_list(paths, n);
}

/* ---- a killed process leaves a file readable up to its last block ---- */
static void test_killed_process_leaves_readable_blocks(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_FLUSH_MS", "20", 1);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    topo_host_profiler p;
    if (topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) != TOPO_OK) _exit(2);
    topo_host_profiler_init(&p, 0x4b1, NULL, 1, 2, 0, NULL);
    for (uint64_t i = 0;; i++) {
      drv_op op = allreduce(i, 1);
      drv_run(&p, &op);
      if (i % 64 == 0) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
      }
    }
  }
  struct timespec ts = {0, 400000000};
  nanosleep(&ts, NULL);
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  unsetenv("TOPO_PROFILER_FLUSH_MS");
  assert_true(WIFSIGNALED(status));
  test_trace t;
  read_only_trace(&t);
  assert_false(t.has_footer);
  assert_true(t.blocks >= 1);
  const topo_trace_record **colls;
  size_t n = test_trace_select(&t, TOPO_REC_COLL, &colls);
  assert_true(n > 0);
  for (size_t i = 0; i < n; i++) assert_int_equal(colls[i]->coll.seq, i); /* no gap, no tear */
  /* every block ends with its STATS record */
  assert_int_equal(t.records[t.count - 1].type, TOPO_REC_STATS);
  free(colls);
  test_trace_free(&t);
}

/* ---- a process that exits without destroying its communicators still gets its footer ---- */
static void test_exit_without_finalize_flushes_and_writes_the_footer(void **s) {
  (void)s;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    topo_host_profiler p;
    if (topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28) != TOPO_OK) _exit(2);
    topo_host_profiler_init(&p, 0xe1, NULL, 1, 2, 0, NULL);
    for (uint64_t i = 0; i < 100; i++) {
      drv_op op = allreduce(i, 1);
      drv_run(&p, &op);
    }
    exit(0); /* no finalize, no dlclose: the destructor must write it all */
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  test_trace t;
  read_only_trace(&t);
  assert_true(t.has_footer);
  const topo_trace_record **colls;
  assert_int_equal(test_trace_select(&t, TOPO_REC_COLL, &colls), 100);
  free(colls);
  test_trace_free(&t);
}

static void test_trace_file_is_created_private_to_the_group(void **s) {
  (void)s;
  topo_host_profiler p;
  load(&p, 5);
  topo_host_profiler_init(&p, 0x640, NULL, 1, 2, 0, topo_host_log);
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  char **paths;
  assert_int_equal(test_trace_list(dir, &paths), 1);
  struct stat st;
  assert_int_equal(stat(paths[0], &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640 & ~(unsigned)umask(022));
  umask(022);
  char host[64];
  gethostname(host, sizeof host);
  char want[128];
  snprintf(want, sizeof want, "topo-%.40s-%d-0000000000000640-r0.trace", host, (int)getpid());
  assert_non_null(strstr(paths[0], want));
  test_trace_free_list(paths, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_exports_exactly_the_six_profiler_symbols, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_v1_records_collectives_and_p2p, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v2_records_collectives_and_p2p, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v3_records_collectives_and_p2p, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v4_records_gpu_timing_from_kernel_channels, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_v5_records_stream_and_graph_capture, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v6_records_stream_and_graph_capture, setup, teardown),
      cmocka_unit_test_setup_teardown(test_sampling_asks_kernel_channels_for_one_in_n, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_every_init_writes_the_same_mask, setup, teardown),
      cmocka_unit_test_setup_teardown(test_null_context_unknown_events_and_late_states_are_harmless,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_disabled_profiler_asks_for_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unwritable_directory_warns_once_and_counts, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_reload_after_last_finalize_starts_afresh, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_killed_process_leaves_readable_blocks, setup, teardown),
      cmocka_unit_test_setup_teardown(test_exit_without_finalize_flushes_and_writes_the_footer,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_trace_file_is_created_private_to_the_group, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
