// SPDX-License-Identifier: Apache-2.0
// Replays what real NCCL 2.28.9 handed a profiler (tests/data/nccl-2.28.9-2xh200*/rank*-calls.txt)
// through libtopo-profiler.so, event by event in recorded order: each START's id is mapped to
// the handle our plugin returned, parents likewise, pTimers and sizes from the file. The records
// must say what the file says: seq, func, bytes, algo/proto/nChannels, GPU start/stop = min/max
// of the pTimers of that Coll's kernel channels, proxy bytes = the steps' sizes.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_profiler.h"
#include "recorded_calls.h"
#include "recorded_events.h"
#include "trace_read.h"

#define MAX_ID 8192

typedef struct expect_coll {
  int is_p2p;
  uint64_t seq;
  char func[24], dtype[24], algo[24], proto[16];
  size_t count;
  int nch, peer, root;
  uint64_t gpu_start, gpu_stop; /* 0 = none */
  int kch_started, kch_stopped;
  int matched;
} expect_coll;

typedef struct replay {
  void *handle[MAX_ID];
  int coll_of[MAX_ID];  /* START id -> index into colls, or -1 */
  int proxy_of[MAX_ID]; /* ProxyOp / ProxyStep id -> proxy index */
  expect_coll colls[1024];
  int ncolls;
  struct {
    int coll, is_send, ch;
    uint64_t bytes;
  } proxies[512];
  int nproxies;
  int step_send[MAX_ID]; /* ProxyStep id -> 1 send, 0 recv */
} replay;

static char dir[256];

static int dtype_size(const char *d) {
  if (strstr(d, "64")) return 8;
  if (strstr(d, "32")) return 4;
  if (strstr(d, "16")) return 2;
  return 1;
}
static int func_id(const char *f) {
  const char *t[] = {"Broadcast", "Reduce",   "AllGather", "ReduceScatter",
                     "AllReduce", "SendRecv", "Send",      "Recv"};
  for (int i = 0; i < 8; i++)
    if (!strcmp(f, t[i])) return i;
  return -1;
}

static void replay_file(const char *path, replay *r, const char *events) {
  char d[] = "/tmp/topo-replay-XXXXXX";
  assert_non_null(mkdtemp(d));
  snprintf(dir, sizeof dir, "%s", d);
  setenv("TOPO_PROFILER_DIR", dir, 1);
  setenv("TOPO_PROFILER_SAMPLE", "1", 1);
  setenv("TOPO_PROFILER_EVENTS", events, 1);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  topo_host_profiler p;
  assert_int_equal(topo_host_profiler_load(&p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28), TOPO_OK);
  memset(r, 0, sizeof *r);
  for (int i = 0; i < MAX_ID; i++) r->coll_of[i] = r->proxy_of[i] = -1;
  char line[4096];
  int inited = 0, finalized = 0, lines = 0;
  while (fgets(line, sizeof line, f)) {
    topo_rec_event ev;
    if (!topo_rec_parse_event(line, &ev)) continue;
    lines++;
    if (ev.kind == TOPO_REV_INIT) {
      assert_int_equal(
          topo_host_profiler_init(&p, ev.comm, NULL, ev.nnodes, ev.nranks, ev.rank, topo_host_log),
          ncclSuccess);
      assert_non_null(p.ctx);
      inited = 1;
      continue;
    }
    if (ev.kind == TOPO_REV_FIN) {
      topo_host_profiler_finalize(&p);
      finalized = 1;
      continue;
    }
    assert_true(ev.id < MAX_ID && ev.parent < MAX_ID);
    if (ev.kind == TOPO_REV_STOP) {
      topo_host_profiler_stop(&p, r->handle[ev.id]);
      continue;
    }
    if (ev.kind == TOPO_REV_STATE) {
      topo_host_profiler_state(&p, r->handle[ev.id], ev.state, ev.trans_size, ev.ptimer);
      int ci = r->coll_of[ev.id];
      if (ev.state == ncclProfilerKernelChStop && ci >= 0) {
        expect_coll *c = &r->colls[ci];
        if (ev.ptimer > c->gpu_stop) c->gpu_stop = ev.ptimer;
        c->kch_stopped++;
      }
      int pi = r->proxy_of[ev.id];
      if (pi >= 0 && ev.has_trans_size &&
          ((ev.state == ncclProfilerProxyStepSendWait && r->step_send[ev.id] == 1) ||
           (ev.state == ncclProfilerProxyStepRecvGPUWait && r->step_send[ev.id] == 0)))
        r->proxies[pi].bytes += ev.trans_size;
      continue;
    }
    /* START */
    topo_host_event e;
    memset(&e, 0, sizeof e);
    e.type = ev.type;
    e.parent = r->handle[ev.parent];
    e.rank = ev.rank;
    e.seq = ev.seq;
    e.func = ev.func;
    e.datatype = ev.dtype;
    e.algo = ev.algo;
    e.proto = ev.proto;
    e.count = ev.count;
    e.root = ev.root;
    e.peer = ev.peer;
    e.nchannels = ev.nch;
    e.nwarps = ev.nwarps;
    e.pid = getpid(); /* the recording process's pid: every proxy op there was local */
    e.channel = ev.ch;
    e.nsteps = ev.nsteps;
    e.chunk_size = ev.chunk;
    e.is_send = ev.is_send;
    e.step = ev.step;
    e.ptimer = ev.ptimer;
    e.graph_captured = ev.graph;
    e.group_depth = ev.depth;
    e.stream =
        strcmp(ev.stream, "(nil)") && ev.stream[0] ? (void *)strtoull(ev.stream, NULL, 16) : NULL;
    topo_host_profiler_start(&p, &r->handle[ev.id], &e);
    if (ev.type == ncclProfileColl || ev.type == ncclProfileP2p) {
      assert_non_null(r->handle[ev.id]);
      expect_coll *c = &r->colls[r->ncolls];
      memset(c, 0, sizeof *c);
      c->is_p2p = ev.type == ncclProfileP2p;
      c->seq = ev.seq;
      snprintf(c->func, sizeof c->func, "%s", ev.func);
      snprintf(c->dtype, sizeof c->dtype, "%s", ev.dtype);
      snprintf(c->algo, sizeof c->algo, "%s", ev.algo);
      snprintf(c->proto, sizeof c->proto, "%s", ev.proto);
      c->count = ev.count;
      c->nch = ev.nch;
      c->peer = ev.peer;
      c->root = ev.root;
      r->coll_of[ev.id] = r->ncolls++;
    } else if (ev.type == ncclProfileKernelCh && r->coll_of[ev.parent] >= 0) {
      expect_coll *c = &r->colls[r->coll_of[ev.parent]];
      r->coll_of[ev.id] = r->coll_of[ev.parent];
      if (!c->gpu_start || ev.ptimer < c->gpu_start) c->gpu_start = ev.ptimer;
      c->kch_started++;
    } else if (ev.type == ncclProfileProxyOp && r->coll_of[ev.parent] >= 0) {
      int pi = r->nproxies++;
      r->proxies[pi].coll = r->coll_of[ev.parent];
      r->proxies[pi].is_send = ev.is_send;
      r->proxies[pi].ch = ev.ch;
      r->proxy_of[ev.id] = pi;
    } else if (ev.type == ncclProfileProxyStep && r->proxy_of[ev.parent] >= 0) {
      r->proxy_of[ev.id] = r->proxy_of[ev.parent];
      r->step_send[ev.id] = r->proxies[r->proxy_of[ev.parent]].is_send;
    }
  }
  fclose(f);
  assert_true(inited && finalized);
  assert_true(lines > 1000);
  topo_host_profiler_unload(&p);
}

static void check(const char *sub, const char *rank_file, const char *events, int want_proxy) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/%s", topo_rec_data_dir(), sub, rank_file);
  replay *r = calloc(1, sizeof *r);
  replay_file(path, r, events);
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, 1);
  test_trace t;
  assert_int_equal(test_trace_read(paths[0], &t), 0);
  assert_true(t.has_footer);
  for (int k = 0; k < TOPO_DROP_KINDS; k++) assert_int_equal(t.footer.dropped[k], 0);
  const topo_trace_record **recs;
  size_t nc = test_trace_select(&t, TOPO_REC_COLL, &recs);
  const topo_trace_record **p2ps;
  size_t np = test_trace_select(&t, TOPO_REC_P2P, &p2ps);
  int want_colls = 0, want_p2p = 0, timed = 0;
  for (int i = 0; i < r->ncolls; i++) r->colls[i].is_p2p ? want_p2p++ : want_colls++;
  assert_int_equal(nc, want_colls);
  assert_int_equal(np, want_p2p);
  for (int i = 0; i < r->ncolls; i++) {
    expect_coll *c = &r->colls[i];
    const topo_rec_coll *got = NULL;
    if (c->is_p2p) {
      for (size_t j = 0; j < np && !got; j++)
        if (p2ps[j]->coll.func == func_id(c->func) && p2ps[j]->coll.peer == c->peer &&
            p2ps[j]->coll.bytes == c->count * (size_t)dtype_size(c->dtype))
          got = &p2ps[j]->coll;
    } else {
      for (size_t j = 0; j < nc && !got; j++)
        if (recs[j]->coll.func == func_id(c->func) && recs[j]->coll.seq == c->seq)
          got = &recs[j]->coll;
    }
    if (!got) fail_msg("no record for %s seq %llu", c->func, (unsigned long long)c->seq);
    assert_int_equal(got->bytes, c->count * (size_t)dtype_size(c->dtype));
    assert_int_equal(got->nchannels, c->nch);
    if (!c->is_p2p) {
      const char *algos[] = {"TREE",      "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS",
                             "NVLS_TREE", "PAT"};
      const char *protos[] = {"LL", "LL128", "SIMPLE"};
      assert_string_equal(algos[got->algo % 7], c->algo);
      assert_string_equal(protos[got->proto % 3], c->proto);
    }
    if (c->kch_started) {
      assert_true(got->flags & TOPO_COLL_F_GPU_TIMED);
      assert_int_equal(got->gpu_start_ns, c->gpu_start);
      assert_int_equal(got->gpu_stop_ns, c->gpu_stop);
      assert_int_equal(!!(got->flags & TOPO_COLL_F_PARTIAL), c->kch_stopped < c->nch);
      timed++;
    }
  }
  assert_true(timed > 0);
  if (want_proxy) {
    const topo_trace_record **px;
    size_t npx = test_trace_select(&t, TOPO_REC_PROXY, &px);
    assert_int_equal(npx, r->nproxies);
    uint64_t want_bytes = 0, got_bytes = 0;
    for (int i = 0; i < r->nproxies; i++) want_bytes += r->proxies[i].bytes;
    for (size_t i = 0; i < npx; i++) got_bytes += px[i]->proxy.bytes;
    assert_true(want_bytes > 0);
    assert_int_equal(got_bytes, want_bytes);
    free(px);
  }
  free(recs);
  free(p2ps);
  test_trace_free(&t);
  test_trace_free_list(paths, n);
  test_trace_rmdir(dir);
  free(r);
}

static void test_replays_single_node_rank0(void **s) {
  (void)s;
  check("nccl-2.28.9-2xh200", "rank0-calls.txt", "coll,p2p,kernel", 0);
}
static void test_replays_single_node_rank1(void **s) {
  (void)s;
  check("nccl-2.28.9-2xh200", "rank1-calls.txt", "coll,p2p,kernel", 0);
}
static void test_replays_two_nodes_with_proxy_ops_rank0(void **s) {
  (void)s;
  check("nccl-2.28.9-2xh200-as-2-nodes", "rank0-calls.txt", "coll,p2p,kernel,proxy", 1);
}
static void test_replays_two_nodes_with_proxy_ops_rank1(void **s) {
  (void)s;
  check("nccl-2.28.9-2xh200-as-2-nodes", "rank1-calls.txt", "coll,p2p,kernel,proxy", 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_replays_single_node_rank0),
      cmocka_unit_test(test_replays_single_node_rank1),
      cmocka_unit_test(test_replays_two_nodes_with_proxy_ops_rank0),
      cmocka_unit_test(test_replays_two_nodes_with_proxy_ops_rank1),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
