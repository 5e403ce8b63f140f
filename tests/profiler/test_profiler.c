// SPDX-License-Identifier: Apache-2.0
// libtopo-profiler.so through the plugin host, at every ABI version v1..v7: record contents
// field by field, what v7 adds (symmetric collectives, user tags, kernel variants, kernel phases
// on request), sampling through the activation mask, the never-hurt-the-job cases (NULL
// context, unknown and unasked-for events at every version, state after stop, PXN proxy ops,
// unwritable directory, reload), and the file a killed process leaves.
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

static const int nccl_for_version[8] = {0,
                                        TOPO_NCCL_2_23,
                                        TOPO_NCCL_2_24,
                                        TOPO_NCCL_2_26,
                                        TOPO_NCCL_2_27,
                                        TOPO_NCCL_2_28,
                                        TOPO_NCCL_2_29,
                                        TOPO_NCCL_2_31};

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-prof-test-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  setenv("TOPO_PROFILER_DIR", dir, 1);
  unsetenv("TOPO_PROFILER_SAMPLE");
  unsetenv("TOPO_PROFILER_STARTUP_MS");
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
static void test_v7_records_stream_and_graph_capture(void **s) {
  (void)s;
  check_version(7);
}

static void test_exports_exactly_the_seven_profiler_symbols(void **s) {
  (void)s;
  char cmd[8192];
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
  assert_int_equal(profiler, 7);
  assert_int_equal(other, 0);
}

/* ---- v7 (NCCL 2.31+): symmetric collectives, user tags, kernel variants, kernel phases ---- */

/* A symmetric AllReduce (tag 0x42), a tagged and an untagged ring AllReduce, a tagged send. */
static void v7_ops(drv_op ops[4]) {
  ops[0] = allreduce(10, 4);
  ops[0].sym = 1;
  ops[0].variant = "AGxLL_R";
  ops[0].user_tag = 0x42;
  ops[1] = allreduce(11, 2);
  ops[1].user_tag = 7;
  ops[2] = allreduce(12, 2);
  memset(&ops[3], 0, sizeof ops[3]);
  ops[3].p2p = 1;
  ops[3].func = "Send";
  ops[3].dtype = "ncclFloat32";
  ops[3].count = 256;
  ops[3].peer = 1;
  ops[3].nch = 1;
  ops[3].user_tag = 9;
  drv_set_gpu(&ops[3], 1796061791700000000ull, 0, 3000);
}

/* The COLL_EXT record of (of, func, seq), which must come before its record; NULL if none. */
static const topo_rec_coll_ext *ext_of(const test_trace *t, int of, int func, uint64_t seq) {
  const topo_rec_coll_ext *found = NULL;
  for (size_t i = 0; i < t->count; i++) {
    const topo_trace_record *r = &t->records[i];
    if (r->type == TOPO_REC_COLL_EXT && r->ext.of == of && r->ext.func == func &&
        r->ext.seq == seq) {
      assert_null(found);
      found = &r->ext;
    }
    if (r->type == of && r->coll.func == func && r->coll.seq == seq) return found;
  }
  fail_msg("no record for type %d func %d seq %llu", of, func, (unsigned long long)seq);
  return NULL;
}

static void run_ops(int version, drv_op *ops, int n) {
  topo_host_profiler p;
  load(&p, version);
  assert_int_equal(topo_host_profiler_init(&p, 0x7777, "sym", 1, 2, 0, topo_host_log), ncclSuccess);
  for (int i = 0; i < n; i++) drv_run(&p, &ops[i]);
  assert_int_equal(topo_host_profiler_finalize(&p), ncclSuccess);
  topo_host_profiler_unload(&p);
}

static void test_v7_symmetric_collectives_tags_and_variants(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  drv_op ops[4];
  v7_ops(ops);
  run_ops(7, ops, 4);
  assert_false(topo_host_profiler_mask & ncclProfileKernelPhase); /* never asked by default */
  test_trace t;
  read_only_trace(&t);
  assert_int_equal(t.header.abi_version, 7);
  assert_int_equal(t.header.minor_version, TOPO_TRACE_MINOR_VERSION);
  assert_false(t.header.flags & TOPO_TRACE_F_PHASE);
  const topo_trace_record **colls, **p2ps, **phases;
  assert_int_equal(test_trace_select(&t, TOPO_REC_COLL, &colls), 3);
  assert_int_equal(test_trace_select(&t, TOPO_REC_P2P, &p2ps), 1);
  assert_int_equal(test_trace_select(&t, TOPO_REC_PHASE, &phases), 0);
  for (int i = 0; i < 3; i++) {
    const topo_rec_coll *r = &colls[i]->coll;
    const drv_op *op = &ops[r->seq - 10];
    const topo_rec_coll_ext *x = ext_of(&t, TOPO_REC_COLL, 4, r->seq);
    /* every collective GPU-timed from all its channels, the symmetric one included */
    assert_true(r->flags & TOPO_COLL_F_GPU_TIMED);
    assert_false(r->flags & TOPO_COLL_F_PARTIAL);
    assert_int_equal(r->nchannels, op->nch);
    assert_int_equal(r->gpu_stop_ns, op->gpu_stop[op->nch - 1]);
    if (op->sym) {
      /* NCCL's algo "R" and proto "" for it name nothing: unknown, never guessed */
      assert_true(r->flags & TOPO_COLL_F_SYM);
      assert_int_equal(r->algo, TOPO_UNKNOWN_U8);
      assert_int_equal(r->proto, TOPO_UNKNOWN_U8);
      assert_non_null(x);
      assert_int_equal(x->variant_len, 7);
      assert_memory_equal(x->variant, "AGxLL_R", 7);
    } else {
      assert_false(r->flags & TOPO_COLL_F_SYM);
      assert_int_equal(r->algo, 1);
      assert_int_equal(r->proto, 2);
    }
    assert_int_equal(!!(r->flags & TOPO_COLL_F_EXT), op->user_tag != 0 || op->sym);
    if (op->user_tag || op->sym) {
      assert_non_null(x);
      assert_int_equal(x->user_tag, op->user_tag);
      if (!op->sym) assert_int_equal(x->variant_len, 0);
    } else {
      assert_null(x);
    }
  }
  const topo_rec_coll_ext *x = ext_of(&t, TOPO_REC_P2P, 6, 0);
  assert_true(p2ps[0]->coll.flags & TOPO_COLL_F_EXT);
  assert_non_null(x);
  assert_int_equal(x->user_tag, 9);
  for (int k = 0; k < TOPO_DROP_KINDS; k++) assert_int_equal(t.footer.dropped[k], 0);
  free(colls);
  free(p2ps);
  free(phases);
  test_trace_free(&t);
}

/* NCCL 2.28-2.30 give a symmetric kernel's collective API events only, and no tags: the same
 * calls leave two ring collectives and the send, no extension records. */
static void test_before_v7_symmetric_collectives_are_api_only(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  for (int v = 5; v <= 6; v++) {
    drv_op ops[4];
    v7_ops(ops);
    run_ops(v, ops, 4);
    test_trace t;
    read_only_trace(&t);
    const topo_trace_record **colls, **exts;
    assert_int_equal(test_trace_select(&t, TOPO_REC_COLL, &colls), 2);
    assert_int_equal(test_trace_select(&t, TOPO_REC_COLL_EXT, &exts), 0);
    for (int i = 0; i < 2; i++)
      assert_false(colls[i]->coll.flags & (TOPO_COLL_F_SYM | TOPO_COLL_F_EXT));
    for (int k = 0; k < TOPO_DROP_KINDS; k++) assert_int_equal(t.footer.dropped[k], 0);
    free(colls);
    free(exts);
    test_trace_free(&t);
    test_trace_rmdir(dir);
    assert_int_equal(mkdir(dir, 0700), 0);
  }
}

/* Kernel phases: asked (KernelPhase in the mask, F_PHASE in the header) only with the `phase`
 * class and only at v7; then each channel of the symmetric collective leaves its three phases,
 * whether its KernelCh handle is object-free or an object (`channel` class). */
static void test_v7_kernel_phases_recorded_only_when_asked(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  static const char *const events[] = {"coll,p2p,kernel,phase", "coll,p2p,channel,phase"};
  for (int e = 0; e < 2; e++) {
    setenv("TOPO_PROFILER_EVENTS", events[e], 1);
    drv_op ops[4];
    v7_ops(ops);
    run_ops(7, ops, 4);
    assert_true(topo_host_profiler_mask & ncclProfileKernelPhase);
    assert_true(topo_host_profiler_mask & ncclProfileKernelCh);
    test_trace t;
    read_only_trace(&t);
    assert_true(t.header.flags & TOPO_TRACE_F_PHASE);
    assert_true(t.header.event_mask & ncclProfileKernelPhase);
    const topo_trace_record **phases;
    size_t n = test_trace_select(&t, TOPO_REC_PHASE, &phases);
    assert_int_equal(n, 4 * 3); /* 4 channels x 3 phases of the symmetric one */
    int seen[4][3] = {{0}};
    for (size_t i = 0; i < n; i++) {
      const topo_rec_phase *ph = &phases[i]->phase;
      assert_int_equal(ph->func, 4);
      assert_int_equal(ph->seq, 10);
      assert_true(ph->channel < 4 && ph->phase < 3);
      uint64_t a, b;
      drv_phase_times(&ops[0], ph->channel, ph->phase, &a, &b);
      assert_int_equal(ph->gpu_start_ns, a);
      assert_int_equal(ph->gpu_stop_ns, b);
      seen[ph->channel][ph->phase]++;
    }
    for (int c = 0; c < 4; c++)
      for (int k = 0; k < 3; k++) assert_int_equal(seen[c][k], 1);
    for (int k = 0; k < TOPO_DROP_KINDS; k++) assert_int_equal(t.footer.dropped[k], 0);
    free(phases);
    test_trace_free(&t);
    test_trace_rmdir(dir);
    assert_int_equal(mkdir(dir, 0700), 0);
  }
  /* The same setting at v6: no KernelPhase bit (v6 has none), no flag. */
  setenv("TOPO_PROFILER_EVENTS", "coll,p2p,kernel,phase", 1);
  topo_host_profiler p;
  load(&p, 6);
  assert_int_equal(topo_host_profiler_init(&p, 0x6, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  assert_false(topo_host_profiler_mask & ncclProfileKernelPhase);
  assert_true(topo_host_profiler_mask & ncclProfileKernelCh);
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
}

/* ---- events the plugin did not ask for (a mask another party set, e.g. NCCL's RAS) and event
 * types or states a newer NCCL may add: delivered raw, past NCCL's shims, at every version ---- */

/* A zeroed descriptor of version v with type, parent and rank set; the union's bytes zero except
 * what the caller puts at `body` (up to 112 bytes). */
typedef union raw_descr {
  ncclProfilerEventDescr_v1_t v1;
  ncclProfilerEventDescr_v2_t v2;
  ncclProfilerEventDescr_v3_t v3;
  ncclProfilerEventDescr_v4_t v4;
  ncclProfilerEventDescr_v5_t v5;
  ncclProfilerEventDescr_v6_t v6;
  ncclProfilerEventDescr_v7_t v7;
  uint8_t bytes[256];
} raw_descr;

static void *raw_start(topo_host_profiler *p, uint64_t type, void *parent, const raw_descr *body) {
  raw_descr d = *body;
  int v = p->lib.version;
  if (v <= 4) {
    d.bytes[0] = (uint8_t)type;
  } else {
    d.v5.type = type;
  }
  memcpy(d.bytes + 8, &parent, sizeof parent);
  void *h = (void *)0x1;
  ncclResult_t r = ncclInternalError;
  switch (v) {
  case 1: r = ((const ncclProfiler_v1_t *)p->lib.sym)->startEvent(p->ctx, &h, &d.v1); break;
  case 2: r = ((const ncclProfiler_v2_t *)p->lib.sym)->startEvent(p->ctx, &h, &d.v2); break;
  case 3: r = ((const ncclProfiler_v3_t *)p->lib.sym)->startEvent(p->ctx, &h, &d.v3); break;
  case 4: r = ((const ncclProfiler_v4_t *)p->lib.sym)->startEvent(p->ctx, &h, &d.v4); break;
  case 5: r = ((const ncclProfiler_v5_t *)p->lib.sym)->startEvent(p->ctx, &h, &d.v5); break;
  case 6: r = ((const ncclProfiler_v6_t *)p->lib.sym)->startEvent(p->ctx, &h, &d.v6); break;
  case 7: r = ((const ncclProfiler_v7_t *)p->lib.sym)->startEvent(p->ctx, &h, &d.v7); break;
  }
  assert_int_equal(r, ncclSuccess);
  return h;
}

/* recordEventState with any state number and an 8-byte argument holding `value`. */
static void raw_state(topo_host_profiler *p, void *h, int state, uint64_t value) {
  union {
    ncclProfilerEventStateArgs_v1_t v1;
    ncclProfilerEventStateArgs_v4_t v4;
    ncclProfilerEventStateArgs_v5_t v5;
    uint64_t word[2];
  } a;
  memset(&a, 0, sizeof a);
  a.word[0] = value;
  ncclProfilerEventState_t st = (ncclProfilerEventState_t)state;
  ncclResult_t r = ncclInternalError;
  switch (p->lib.version) {
  case 1: r = ((const ncclProfiler_v1_t *)p->lib.sym)->recordEventState(h, st, &a.v1); break;
  case 2: r = ((const ncclProfiler_v2_t *)p->lib.sym)->recordEventState(h, st, &a.v1); break;
  case 3: r = ((const ncclProfiler_v3_t *)p->lib.sym)->recordEventState(h, st, &a.v1); break;
  case 4: r = ((const ncclProfiler_v4_t *)p->lib.sym)->recordEventState(h, st, &a.v4); break;
  case 5: r = ((const ncclProfiler_v5_t *)p->lib.sym)->recordEventState(h, st, &a.v5); break;
  case 6: r = ((const ncclProfiler_v6_t *)p->lib.sym)->recordEventState(h, st, &a.v5); break;
  case 7: r = ((const ncclProfiler_v7_t *)p->lib.sym)->recordEventState(h, st, &a.v5); break;
  }
  assert_int_equal(r, ncclSuccess);
}

static void test_unasked_and_unknown_events_ignored_at_every_version(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_EVENTS", "coll,p2p", 1); /* no kernel channels, phases or proxy ops */
  for (int v = 1; v <= 7; v++) {
    topo_host_profiler p;
    load(&p, v);
    assert_int_equal(topo_host_profiler_init(&p, 0x5a5a, "rx", 1, 2, 0, topo_host_log),
                     ncclSuccess);
    assert_false(topo_host_profiler_mask & ~(ncclProfileColl | ncclProfileP2p));
    drv_op op = allreduce(20, 2);
    op.user_tag = 3;
    drv_pending pend;
    drv_issue(&p, &op, &pend);
    assert_non_null(pend.handle);
    assert_false(pend.kernelch);
    raw_descr zero;
    memset(&zero, 0, sizeof zero);
    /* As if the mask had been changed to ask for everything: the events NCCL would then send
     * under this collective, each answered with no handle and no count. */
    for (int c = 0; c < 2; c++) {
      raw_descr kch = zero;
      kch.v5.kernelCh.channelId = (uint8_t)c; /* same offset in every version */
      kch.v5.kernelCh.pTimer = v >= 4 ? op.gpu_start[c] : 0;
      void *ch = raw_start(&p, ncclProfileKernelCh, pend.handle, &kch);
      assert_null(ch);
      if (v >= 7) {
        raw_descr ph = zero;
        ph.v7.kernelPhase.channelId = (uint8_t)c;
        ph.v7.kernelPhase.pTimer = op.gpu_start[c];
        assert_null(raw_start(&p, ncclProfileKernelPhase, ch, &ph));
        assert_null(raw_start(&p, ncclProfileKernelPhase, pend.handle, &ph));
      }
      raw_state(&p, ch, ncclProfilerKernelChStop, op.gpu_stop[c]);
    }
    raw_descr pop = zero;
    pop.v5.proxyOp.pid = getpid();
    void *proxy = raw_start(&p, ncclProfileProxyOp, pend.handle, &pop);
    assert_null(proxy);
    assert_null(raw_start(&p, ncclProfileProxyStep, proxy, &zero));
    assert_null(raw_start(&p, ncclProfileProxyCtrl, NULL, &zero));
    if (v >= 3) assert_null(raw_start(&p, ncclProfileNetPlugin, NULL, &zero));
    if (v >= 6) {
      raw_descr ce = zero;
      ce.v7.ceColl.func = "AllGather";
      ce.v7.ceColl.datatype = "ncclInt8";
      ce.v7.ceColl.count = 4096;
      ce.v7.ceColl.userTag = 5; /* read by v7 only */
      void *cc = raw_start(&p, ncclProfileCeColl, NULL, &ce);
      assert_null(cc);
      assert_null(raw_start(&p, ncclProfileCeSync, cc, &zero));
      assert_null(raw_start(&p, ncclProfileCeBatch, cc, &zero));
    }
    /* Types a newer NCCL may add, and two bits at once. */
    static const uint64_t unknown_wide[] = {1ull << 15, 1ull << 16, 1ull << 31, 1ull << 40,
                                            ncclProfileColl | ncclProfileKernelCh};
    static const uint64_t unknown_narrow[] = {0, 1u << 6, 1u << 7, 0x3, 0xff};
    for (int k = 0; k < 5; k++) {
      uint64_t type = v >= 5 ? unknown_wide[k] : unknown_narrow[k];
      if (v >= 7 && type == ncclProfileKernelPhase) continue; /* known at v7: above */
      if (v >= 3 && (type == ncclProfileKernelCh || type == ncclProfileNetPlugin)) continue;
      raw_descr junk;
      memset(&junk, 0x5c, sizeof junk); /* whatever the members hold, they are never read */
      void *h = raw_start(&p, type, pend.handle, &junk);
      assert_null(h);
      raw_state(&p, h, ncclProfilerKernelChStop, 1);
    }
    /* States a newer NCCL may add, on the live collective. */
    raw_state(&p, pend.handle, ncclProfilerKernelPhaseStop, op.gpu_stop[0] + 5);
    raw_state(&p, pend.handle, 40, 1);
    raw_state(&p, pend.handle, 1000, 2);
    drv_complete(&p, &pend); /* nothing: the mask NCCL read asked for nothing */
    assert_int_equal(topo_host_profiler_finalize(&p), ncclSuccess);
    topo_host_profiler_unload(&p);

    test_trace t;
    read_only_trace(&t);
    const topo_trace_record **colls;
    assert_int_equal(test_trace_select(&t, TOPO_REC_COLL, &colls), 1);
    const topo_rec_coll *r = &colls[0]->coll;
    assert_int_equal(r->seq, 20);
    assert_false(r->flags & (TOPO_COLL_F_GPU_ASKED | TOPO_COLL_F_GPU_TIMED));
    assert_int_equal(r->gpu_start_ns, 0);
    assert_int_equal(!!(r->flags & TOPO_COLL_F_EXT), v >= 7); /* its own tag, from v7 */
    /* one collective, its extension record from v7, the STATS records; nothing else */
    for (size_t i = 0; i < t.count; i++)
      assert_true(t.records[i].type == TOPO_REC_COLL || t.records[i].type == TOPO_REC_STATS ||
                  (v >= 7 && t.records[i].type == TOPO_REC_COLL_EXT));
    for (int k = 0; k < TOPO_DROP_KINDS; k++) {
      if (t.footer.dropped[k])
        fail_msg("v%d: %llu dropped of kind %d", v, (unsigned long long)t.footer.dropped[k], k);
    }
    free(colls);
    test_trace_free(&t);
    test_trace_rmdir(dir);
    assert_int_equal(mkdir(dir, 0700), 0);
  }
}

/* ---- sampling: below TOPO_PROFILER_MEASURE_BYTES, the first two of a kind, then 1 in N,
 * flipped in the mask ahead of the operation it is meant for ---- */
static void test_sampling_asks_kernel_channels_for_one_in_n(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_SAMPLE", "4", 1);
  setenv("TOPO_PROFILER_STARTUP_MS", "0", 1); /* the rule from the first operation */
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
   * 1 MB AllReduce is known), then 1 in 4 on average (37 ops: 9.25 expected, sd 2.6), never in
   * step with the sequence: a job repeating 4 operations of this kind would otherwise have the
   * same one of them timed every time. */
  assert_true(asked[0]);
  assert_false(asked[1]);
  assert_true(asked[2]);
  int nasked = 0, phase[4] = {0};
  for (int i = 3; i < N; i++)
    if (asked[i]) nasked++, phase[i % 4]++;
  assert_true(nasked >= 3 && nasked <= 17);
  for (int k = 0; k < 4; k++) assert_true(phase[k] > 0);
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
      cmocka_unit_test_setup_teardown(test_exports_exactly_the_seven_profiler_symbols, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_v1_records_collectives_and_p2p, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v2_records_collectives_and_p2p, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v3_records_collectives_and_p2p, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v4_records_gpu_timing_from_kernel_channels, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_v5_records_stream_and_graph_capture, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v6_records_stream_and_graph_capture, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v7_records_stream_and_graph_capture, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v7_symmetric_collectives_tags_and_variants, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_before_v7_symmetric_collectives_are_api_only, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_v7_kernel_phases_recorded_only_when_asked, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_unasked_and_unknown_events_ignored_at_every_version,
                                      setup, teardown),
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
