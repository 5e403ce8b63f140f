// SPDX-License-Identifier: Apache-2.0
// libtopo-tuner.so through the plugin host, as NCCL 2.21-2.32 load it: the ABI versions, the
// "never hurt the job" rules on NCCL's cost table, force and rules, bad input, v5 constants.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "profile.h"
#include "topo_version.h"
#include "tuner_test_util.h"

/* An unknown TOPO_* name, spelt in two pieces so that no checker mistakes it for a real one. */
#define UNKNOWN_VAR \
  "TOPO_"           \
  "TUNER_NO_SUCH_KNOB"

static const char *so = TOPO_TEST_TUNER_SO;

static void clear_env(void) {
  unsetenv("TOPO_TUNER_PROFILE");
  unsetenv("TOPO_TUNER_RULES");
  unsetenv("TOPO_TUNER_FORCE");
  setenv("TOPO_TUNER_GPU", "H200", 1);
}

static int setup(void **state) {
  (void)state;
  clear_env();
  topo_host_log_reset();
  return 0;
}

/* Load as `nccl`, init a 2-rank one-node communicator. */
static void open_tuner(topo_host_tuner *t, int nccl, size_t nranks, size_t nnodes) {
  assert_int_equal(topo_host_tuner_load(t, so, nccl), TOPO_OK);
  assert_int_equal(topo_host_tuner_init(t, 0x1234, nranks, nnodes, topo_host_log, NULL, NULL),
                   ncclSuccess);
}

static void close_tuner(topo_host_tuner *t) {
  assert_int_equal(topo_host_tuner_finalize(t), ncclSuccess);
  topo_host_tuner_unload(t);
}

static void test_each_nccl_version_gets_its_highest_abi(void **state) {
  (void)state;
  static const struct {
    int nccl, abi;
  } cases[] = {{TOPO_NCCL_2_21, 2}, {TOPO_NCCL_2_22, 3}, {TOPO_NCCL_2_24, 4}, {TOPO_NCCL_2_28, 5},
               {TOPO_NCCL_2_30, 6}, {TOPO_NCCL_2_31, 6}, {TOPO_NCCL_2_32, 7}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    topo_host_tuner t;
    open_tuner(&t, cases[i].nccl, 2, 1);
    assert_int_equal(t.lib.version, cases[i].abi);
    const char *name = *(const char *const *)t.lib.sym;
    assert_non_null(strstr(name, "topo"));
    assert_non_null(strstr(name, TOPO_VERSION));
    assert_non_null(t.ctx);
    /* A small AllReduce: an LL protocol must win; a large one: Simple. */
    for (int big = 0; big <= 1; big++) {
      size_t bytes = big ? (256u << 20) : 1024;
      float table[21];
      nccl2_fill(ncclFuncAllReduce, bytes, t.num_algo, table);
      int nch = 0, a = -1, p = -1;
      assert_int_equal(topo_host_tuner_get(&t, ncclFuncAllReduce, bytes, 1, table, 0, &nch),
                       ncclSuccess);
      assert_true(topo_host_select(table, t.num_algo, 3, &a, &p));
      if (big) assert_int_equal(p, NCCL_PROTO_SIMPLE);
      else assert_int_equal(p, NCCL_PROTO_LL);
    }
    close_tuner(&t);
  }
}

static void test_ignored_entries_stay_ignored(void **state) {
  (void)state;
  static const float negatives[] = {-1.0f, -1024.0f, -0.5f, -3.0e9f};
  for (int nccl = 0; nccl < 2; nccl++) {
    topo_host_tuner t;
    open_tuner(&t, nccl ? TOPO_NCCL_2_30 : TOPO_NCCL_2_22, 8, 1);
    uint64_t seed = 42;
    for (int q = 0; q < 20000; q++) {
      float table[21], before[21];
      int coll = (int)(test_rand(&seed) % 5);
      size_t bytes = test_rand_size(&seed, 33);
      for (int i = 0; i < t.num_algo * 3; i++) {
        uint64_t r = test_rand(&seed) % 8;
        table[i] =
            r < 3 ? negatives[test_rand(&seed) % 4] : (float)(test_rand(&seed) % 100000) / 10.0f;
      }
      memcpy(before, table, sizeof table);
      int nch = 0;
      assert_int_equal(topo_host_tuner_get(&t, coll, bytes, 1 + (int)(test_rand(&seed) % 4), table,
                                           (int)(test_rand(&seed) % 2), &nch),
                       ncclSuccess);
      int usable_before = 0, usable_after = 0;
      for (int i = 0; i < t.num_algo * 3; i++) {
        if (before[i] < 0 && table[i] != before[i])
          fail_msg("entry %d arrived %g, left %g", i, before[i], table[i]);
        if (before[i] >= 0 && !(table[i] >= 0 && table[i] < 3.6e9f))
          fail_msg("entry %d became %g", i, table[i]);
      }
      /* Counted apart: the tuner neither adds nor removes a usable entry. */
      for (int i = 0; i < t.num_algo * 3; i++) usable_before += before[i] >= 0;
      for (int i = 0; i < t.num_algo * 3; i++) usable_after += table[i] >= 0;
      assert_int_equal(usable_before, usable_after);
      assert_true(nch >= 0 && nch <= 64);
    }
    close_tuner(&t);
  }
}

static void test_never_leaves_all_entries_unusable(void **state) {
  (void)state;
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_28, 8, 1);
  for (int coll = 0; coll < 5; coll++)
    for (int only = 0; only < 21; only++)
      for (int sz = 3; sz < 34; sz += 5) {
        float table[21];
        for (int i = 0; i < 21; i++) table[i] = -1.0f;
        table[only] = 12.5f;
        int nch = 0, a = -1, p = -1;
        assert_int_equal(topo_host_tuner_get(&t, coll, (size_t)1 << sz, 1, table, 0, &nch),
                         ncclSuccess);
        assert_true(topo_host_select(table, 7, 3, &a, &p));
        assert_int_equal(a * 3 + p, only); /* the one NCCL allowed */
      }
  close_tuner(&t);
}

static void test_nchannels_within_limits(void **state) {
  (void)state;
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_28, 8, 1);
  uint64_t seed = 7;
  int reduced = 0;
  for (int q = 0; q < 50000; q++) {
    int coll = (int)(test_rand(&seed) % 5);
    size_t bytes = test_rand_size(&seed, 33);
    float table[21];
    nccl2_fill(coll, bytes, 7, table);
    int nch = 0, a = -1, p = -1;
    topo_host_tuner_get(&t, coll, bytes, 1, table, 0, &nch);
    assert_true(topo_host_select(table, 7, 3, &a, &p));
    /* Never above the profile's channel count; never on paths NCCL does not clamp. */
    assert_true(nch >= 0 && nch < 24);
    if (a != NCCL_ALGO_RING && a != NCCL_ALGO_TREE && a != NCCL_ALGO_PAT) assert_int_equal(nch, 0);
    reduced += nch > 0;
  }
  print_message("channel reductions: %d of 50000 queries\n", reduced);
  close_tuner(&t);
}

static void test_nccl_algo_proto_restrictions_respected(void **state) {
  (void)state;
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_28, 2, 1);
  for (int sz = 3; sz < 34; sz++) {
    size_t bytes = (size_t)1 << sz;
    /* NCCL_PROTO=Simple: LL and LL128 arrive ignored. */
    float table[21];
    nccl2_fill(ncclFuncAllReduce, bytes, 7, table);
    for (int a = 0; a < 7; a++) table[a * 3 + 0] = table[a * 3 + 1] = -1.0f;
    int nch = 0, a = -1, p = -1;
    topo_host_tuner_get(&t, ncclFuncAllReduce, bytes, 1, table, 0, &nch);
    assert_true(topo_host_select(table, 7, 3, &a, &p));
    assert_int_equal(p, NCCL_PROTO_SIMPLE);
    /* NCCL_ALGO=Tree. */
    nccl2_fill(ncclFuncAllReduce, bytes, 7, table);
    for (int q = 0; q < 3; q++) table[NCCL_ALGO_RING * 3 + q] = -1.0f;
    topo_host_tuner_get(&t, ncclFuncAllReduce, bytes, 1, table, 0, &nch);
    assert_true(topo_host_select(table, 7, 3, &a, &p));
    assert_int_equal(a, NCCL_ALGO_TREE);
  }
  close_tuner(&t);
}

static void test_null_context_leaves_table_alone(void **state) {
  (void)state;
  topo_host_tuner t;
  assert_int_equal(topo_host_tuner_load(&t, so, TOPO_NCCL_2_30), TOPO_OK);
  const ncclTuner_v6_t *v6 = t.lib.sym;
  float table[21], before[21];
  nccl2_fill(ncclFuncAllReduce, 4096, 7, table);
  memcpy(before, table, sizeof table);
  int nch = 3;
  assert_int_equal(
      v6->getCollInfo(NULL, ncclFuncAllReduce, 4096, 1, (float **)table, 7, 3, 0, &nch),
      ncclSuccess);
  assert_memory_equal(table, before, sizeof table);
  assert_int_equal(nch, 3);
  size_t chunk = 131072;
  assert_int_equal(v6->getChunkSize(NULL, ncclFuncAllReduce, 4096, 1, 2, 1, &chunk), ncclSuccess);
  assert_int_equal(chunk, 131072);
  assert_int_equal(v6->finalize(NULL), ncclSuccess);
  assert_int_equal(v6->init(NULL, 1, 2, 1, topo_host_log, NULL, NULL), ncclSuccess);
  /* Garbage arguments: unknown collective, zero-size table dims. */
  void *ctx = NULL;
  ncclTunerConstants_v5_t c;
  topo_host_default_constants(&c);
  ncclNvlDomainInfo_v5_t nvl = {1, 2, 2};
  assert_int_equal(v6->init(&ctx, 1, 2, 1, topo_host_log, &nvl, &c), ncclSuccess);
  assert_int_equal(v6->getCollInfo(ctx, (ncclFunc_t)9, 4096, 1, (float **)table, 7, 3, 0, &nch),
                   ncclSuccess);
  assert_int_equal(v6->getCollInfo(ctx, ncclFuncAllReduce, 4096, 0, (float **)table, 0, 3, 0, &nch),
                   ncclSuccess);
  assert_int_equal(v6->getCollInfo(ctx, ncclFuncAllReduce, 4096, 1, NULL, 7, 3, 0, &nch),
                   ncclSuccess);
  assert_int_equal(v6->finalize(ctx), ncclSuccess);
  topo_host_tuner_unload(&t);
}

static void test_load_finalize_dlclose_reload_cycles(void **state) {
  (void)state;
  for (int cycle = 0; cycle < 30; cycle++) {
    topo_host_tuner t;
    open_tuner(&t, cycle % 2 ? TOPO_NCCL_2_28 : TOPO_NCCL_2_30, 2 + cycle % 7, 1);
    float table[21];
    nccl2_fill(ncclFuncAllGather, 65536, 7, table);
    int nch = 0;
    assert_int_equal(topo_host_tuner_get(&t, ncclFuncAllGather, 65536, 1, table, 0, &nch),
                     ncclSuccess);
    close_tuner(&t);
  }
}

static void test_v6_chunk_size_is_left_to_nccl(void **state) {
  (void)state;
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_30, 2, 1);
  const ncclTuner_v6_t *v6 = t.lib.sym;
  for (int p = 0; p < 3; p++) {
    size_t chunk = 524288;
    assert_int_equal(
        v6->getChunkSize(t.ctx, ncclFuncAllReduce, 1 << 20, NCCL_ALGO_RING, p, 1, &chunk),
        ncclSuccess);
    assert_int_equal(chunk, 524288);
  }
  close_tuner(&t);
}

/* A calibrated profile (and a forced choice) carry no chunk-size measurement: NCCL 2.30's
 * getChunkSize answer stays NCCL's for every collective, algorithm, protocol, size, channels. */
static void test_v6_chunk_size_stays_nccl_with_a_calibrated_profile(void **state) {
  (void)state;
  static const char *const force[2] = {NULL, "ring,ll128,8"};
  for (int f = 0; f < 2; f++) {
    setenv("TOPO_TUNER_PROFILE", TOPO_TUNER_TEST_DATA "/h200x2-nccl2.28.3-single-line.profile", 1);
    if (force[f]) setenv("TOPO_TUNER_FORCE", force[f], 1);
    topo_host_tuner t;
    open_tuner(&t, TOPO_NCCL_2_30, 2, 1);
    assert_non_null(t.ctx);
    const ncclTuner_v6_t *v6 = t.lib.sym;
    assert_non_null(v6->getChunkSize);
    for (int coll = 0; coll < 5; coll++)
      for (int a = 0; a < 7; a++)
        for (int p = 0; p < 3; p++)
          for (size_t bytes = 8; bytes <= ((size_t)1 << 30); bytes *= 32) {
            size_t nccl = (size_t)(p == NCCL_PROTO_SIMPLE ? 524288
                                   : p == NCCL_PROTO_LL   ? 32768
                                                          : 120 * 1024);
            size_t chunk = nccl;
            int nch = 1 + (int)(bytes % 31);
            assert_int_equal(v6->getChunkSize(t.ctx, (ncclFunc_t)coll, bytes, a, p, nch, &chunk),
                             ncclSuccess);
            assert_int_equal(chunk, nccl);
          }
    assert_int_equal(v6->getChunkSize(t.ctx, ncclFuncAllReduce, 4096, NCCL_ALGO_RING,
                                      NCCL_PROTO_SIMPLE, 1, NULL),
                     ncclSuccess);
    close_tuner(&t);
    unsetenv("TOPO_TUNER_FORCE");
    unsetenv("TOPO_TUNER_PROFILE");
  }
}

static void test_v2_returns_a_pair_nccl_can_use(void **state) {
  (void)state;
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_21, 2, 1);
  for (int coll = 0; coll < 5; coll++)
    for (int sz = 3; sz < 34; sz += 3) {
      float table[18];
      nccl2_fill(coll, (size_t)1 << sz, 6, table);
      int nch = 0, a = -1, p = -1;
      assert_int_equal(topo_host_tuner_get(&t, coll, (size_t)1 << sz, 1, table, 0, &nch),
                       ncclSuccess);
      assert_true(topo_host_select(table, 6, 3, &a, &p));
      assert_float_equal(table[a * 3 + p], 0.0f, 0.0f); /* the shim turned our pair into 0.0 */
      assert_int_equal(nch, 0);
    }
  close_tuner(&t);
}

static void test_force_takes_the_choice_where_allowed(void **state) {
  (void)state;
  setenv("TOPO_TUNER_FORCE", "ring,ll128,4", 1);
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_28, 2, 1);
  float table[21], before[21];
  nccl2_fill(ncclFuncAllReduce, 8, 7, table);
  int nch = 0, a, p;
  topo_host_tuner_get(&t, ncclFuncAllReduce, 8, 1, table, 0, &nch);
  assert_true(topo_host_select(table, 7, 3, &a, &p));
  assert_int_equal(a, NCCL_ALGO_RING);
  assert_int_equal(p, NCCL_PROTO_LL128);
  assert_int_equal(nch, 4);
  /* LL128 disabled by NCCL: NCCL's own table and channels stand. */
  nccl2_fill(ncclFuncAllReduce, 8, 7, table);
  table[NCCL_ALGO_RING * 3 + NCCL_PROTO_LL128] = -1.0f;
  memcpy(before, table, sizeof table);
  nch = 0;
  topo_host_tuner_get(&t, ncclFuncAllReduce, 8, 1, table, 0, &nch);
  assert_memory_equal(table, before, sizeof table);
  assert_int_equal(nch, 0);
  close_tuner(&t);
  /* A malformed value: one warning, the model decides. */
  setenv("TOPO_TUNER_FORCE", "ring", 1);
  topo_host_log_reset();
  open_tuner(&t, TOPO_NCCL_2_28, 2, 1);
  assert_true(topo_host_log_contains("TOPO_TUNER_FORCE"));
  close_tuner(&t);
  unsetenv("TOPO_TUNER_FORCE");
}

static char *write_temp(const char *text) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/topo-tuner-test-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs(text, f);
  fclose(f);
  return path;
}

static void test_rules_pin_choices_ahead_of_the_model(void **state) {
  (void)state;
  char *path = write_temp(
      "# pin Tree/Simple for mid AllReduce, 2 channels\n"
      "allreduce,1024,65536,tree,simple,2,-1,-1\n"
      "allreduce,0,-1,ring,bogus,-1,-1,-1\n"
      "allgather,0,100,ring,ll128,-1,1,2,-1,-1\n");
  setenv("TOPO_TUNER_RULES", path, 1);
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_28, 2, 1);
  char where[96];
  snprintf(where, sizeof where, "%s:3", path);
  assert_true(topo_host_log_contains(where)); /* the malformed line, named */
  float table[21];
  int nch = 0, a, p;
  nccl2_fill(ncclFuncAllReduce, 4096, 7, table);
  topo_host_tuner_get(&t, ncclFuncAllReduce, 4096, 1, table, 0, &nch);
  assert_true(topo_host_select(table, 7, 3, &a, &p));
  assert_int_equal(a, NCCL_ALGO_TREE);
  assert_int_equal(p, NCCL_PROTO_SIMPLE);
  assert_int_equal(nch, 2);
  nccl2_fill(ncclFuncAllGather, 64, 7, table);
  nch = 0;
  topo_host_tuner_get(&t, ncclFuncAllGather, 64, 1, table, 0, &nch);
  assert_true(topo_host_select(table, 7, 3, &a, &p));
  assert_int_equal(p, NCCL_PROTO_LL128);
  assert_int_equal(nch, 0);
  /* Outside every rule: the model (LL for a small AllReduce). */
  nccl2_fill(ncclFuncAllReduce, 128, 7, table);
  topo_host_tuner_get(&t, ncclFuncAllReduce, 128, 1, table, 0, &nch);
  assert_true(topo_host_select(table, 7, 3, &a, &p));
  assert_int_equal(p, NCCL_PROTO_LL);
  close_tuner(&t);
  unlink(path);
  unsetenv("TOPO_TUNER_RULES");
}

/* NCCL 2.21 calls v2 directly and runs the pair unchecked. */
static void v2_pick(topo_host_tuner *t, int coll, size_t nbytes, int collnet, int nvls, int *a,
                    int *p) {
  *a = NCCL_ALGO_UNDEF;
  *p = NCCL_PROTO_UNDEF;
  int nch = 0;
  assert_int_equal(
      ((const ncclTuner_v2_t *)t->lib.sym)
          ->getCollInfo(t->ctx, (ncclFunc_t)coll, nbytes, collnet, nvls, 1, a, p, &nch),
      ncclSuccess);
}

static void test_v2_force_only_where_supported(void **state) {
  (void)state;
  setenv("TOPO_TUNER_FORCE", "nvls,simple", 1);
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_21, 2, 1);
  int a, p;
  for (int coll = 0; coll < 5; coll++) { /* nvlsSupport = 0: NCCL's own everywhere */
    v2_pick(&t, coll, 1 << 20, 0, 0, &a, &p);
    assert_int_equal(a, NCCL_ALGO_UNDEF);
    assert_int_equal(p, NCCL_PROTO_UNDEF);
  }
  v2_pick(&t, ncclFuncAllReduce, 1 << 20, 0, 1, &a, &p); /* supported: forced */
  assert_int_equal(a, NCCL_ALGO_NVLS);
  assert_int_equal(p, NCCL_PROTO_SIMPLE);
  v2_pick(&t, ncclFuncBroadcast, 1 << 20, 0, 1, &a, &p); /* no NVLS Broadcast */
  assert_int_equal(a, NCCL_ALGO_UNDEF);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1); /* once, not per call */
  assert_true(topo_host_log_contains("TOPO_TUNER_FORCE=nvls,simple"));
  close_tuner(&t);
  setenv("TOPO_TUNER_FORCE", "tree,ll", 1);
  open_tuner(&t, TOPO_NCCL_2_21, 2, 1);
  v2_pick(&t, ncclFuncAllGather, 4096, 1, 1, &a, &p); /* Tree is AllReduce only */
  assert_int_equal(a, NCCL_ALGO_UNDEF);
  v2_pick(&t, ncclFuncAllReduce, 4096, 0, 0, &a, &p);
  assert_int_equal(a, NCCL_ALGO_TREE);
  assert_int_equal(p, NCCL_PROTO_LL);
  close_tuner(&t);
  unsetenv("TOPO_TUNER_FORCE");
}

static void test_v2_rules_only_where_supported(void **state) {
  (void)state;
  char *path = write_temp(
      "allreduce,0,-1,collnet_direct,simple,-1,-1,-1\n"
      "broadcast,0,-1,tree,ll,-1,-1,-1\n"
      "allgather,0,-1,nvls,simple,-1,-1,-1\n"
      "allgather,0,-1,ring,ll128,-1,-1,-1\n"
      "allreduce,0,-1,nvls_tree,simple,-1,-1,-1\n"
      "allreduce,0,-1,ring,ll,-1,-1,-1\n");
  setenv("TOPO_TUNER_RULES", path, 1);
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_21, 2, 1);
  int a, p;
  for (int i = 0; i < 10; i++) {
    v2_pick(&t, ncclFuncAllReduce, 8u << i, 0, 0, &a, &p); /* no CollNet, one node: ring/ll */
    assert_int_equal(a, NCCL_ALGO_RING);
    assert_int_equal(p, NCCL_PROTO_LL);
  }
  v2_pick(&t, ncclFuncAllReduce, 64, 1, 0, &a, &p); /* collNetSupport: the first rule */
  assert_int_equal(a, NCCL_ALGO_COLLNET_DIRECT);
  v2_pick(&t, ncclFuncAllGather, 64, 0, 0, &a, &p);
  assert_int_equal(a, NCCL_ALGO_RING);
  assert_int_equal(p, NCCL_PROTO_LL128);
  v2_pick(&t, ncclFuncAllGather, 64, 0, 1, &a, &p);
  assert_int_equal(a, NCCL_ALGO_NVLS);
  /* Tree Broadcast does not exist: the model (Ring) decides, never Tree. */
  v2_pick(&t, ncclFuncBroadcast, 64, 1, 1, &a, &p);
  assert_true(a == NCCL_ALGO_RING || a == NCCL_ALGO_UNDEF);
  /* One warning per refused rule (CollNet, Tree-Broadcast, NVLS AllGather, NVLS_TREE on one node). */
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 4);
  char where[96];
  snprintf(where, sizeof where, "%s:2: rule broadcast tree/ll", path);
  assert_true(topo_host_log_contains(where));
  close_tuner(&t);
  unlink(path);
  unsetenv("TOPO_TUNER_RULES");
}

/* The model on v2 never returns what NCCL 2.21 does not support either. */
static void test_v2_model_only_where_supported(void **state) {
  (void)state;
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_21, 8, 1);
  for (int coll = 0; coll < 5; coll++)
    for (int sz = 3; sz < 34; sz += 2)
      for (int nvls = 0; nvls < 2; nvls++) {
        int a, p;
        v2_pick(&t, coll, (size_t)1 << sz, 0, nvls, &a, &p);
        if (a == NCCL_ALGO_UNDEF) continue;
        if (coll != ncclFuncAllReduce) assert_int_not_equal(a, NCCL_ALGO_TREE);
        if (!nvls || coll < ncclFuncAllGather) assert_int_not_equal(a, NCCL_ALGO_NVLS);
        if (a == NCCL_ALGO_NVLS) assert_int_equal(p, NCCL_PROTO_SIMPLE);
        assert_true(a == NCCL_ALGO_TREE || a == NCCL_ALGO_RING || a == NCCL_ALGO_NVLS);
      }
  close_tuner(&t);
}

/* v3+: rules and force never take an entry NCCL ignored (-1, -1024, or beyond numAlgo), and say
 * so once per rule / force. */
static void test_v3_ignored_entries_with_rules_and_force(void **state) {
  (void)state;
  char *path = write_temp(
      "allreduce,0,-1,pat,simple,-1,-1,-1\n"
      "allreduce,0,-1,tree,ll128,3,-1,-1\n"
      "allreduce,0,-1,ring,ll,-1,-1,-1\n");
  setenv("TOPO_TUNER_RULES", path, 1);
  static const int versions[] = {TOPO_NCCL_2_22, TOPO_NCCL_2_24, TOPO_NCCL_2_28, TOPO_NCCL_2_30};
  for (int v = 0; v < 4; v++) {
    topo_host_log_reset();
    topo_host_tuner t;
    open_tuner(&t, versions[v], 2, 1);
    int na = versions[v] == TOPO_NCCL_2_22 ? 6 : 7;
    for (int i = 0; i < 20; i++) {
      float table[21];
      nccl2_fill(ncclFuncAllReduce, 4096, na, table);
      if (na == 7) table[NCCL_ALGO_PAT * 3 + NCCL_PROTO_SIMPLE] = -1.0f;
      table[NCCL_ALGO_TREE * 3 + NCCL_PROTO_LL128] = -1024.0f;
      int nch = 0, a, p;
      topo_host_tuner_get(&t, ncclFuncAllReduce, 4096, 1, table, 0, &nch);
      assert_true(topo_host_select(table, na, 3, &a, &p));
      assert_int_equal(a, NCCL_ALGO_RING);
      assert_int_equal(p, NCCL_PROTO_LL);
      assert_true(table[NCCL_ALGO_TREE * 3 + NCCL_PROTO_LL128] < 0);
      if (na == 7) assert_true(table[NCCL_ALGO_PAT * 3 + NCCL_PROTO_SIMPLE] < 0);
    }
    assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 2); /* PAT and Tree/LL128, once each */
    close_tuner(&t);
  }
  unlink(path);
  unsetenv("TOPO_TUNER_RULES");
  /* Force on an ignored entry: the table untouched, one warning for many calls. */
  setenv("TOPO_TUNER_FORCE", "nvls,simple", 1);
  topo_host_log_reset();
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_28, 2, 1);
  for (int i = 0; i < 20; i++) {
    float table[21], before[21];
    nccl2_fill(i % 5, 1024u << i, 7, table);
    memcpy(before, table, sizeof table);
    int nch = 0;
    topo_host_tuner_get(&t, i % 5, 1024u << i, 1, table, 0, &nch);
    assert_memory_equal(table, before, sizeof table);
    assert_int_equal(nch, 0);
  }
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  close_tuner(&t);
  unsetenv("TOPO_TUNER_FORCE");
}

/* Decisions of a communicator for a fixed grid, as (algo*3+proto, nChannels) pairs. */
static void decisions(topo_host_tuner *t, int *out) {
  int k = 0;
  for (int coll = 0; coll < 5; coll++)
    for (int sz = 3; sz < 34; sz++) {
      float table[21];
      nccl2_fill(coll, (size_t)1 << sz, 7, table);
      int nch = 0, a = -1, p = -1;
      topo_host_tuner_get(t, coll, (size_t)1 << sz, 1, table, 0, &nch);
      topo_host_select(table, 7, 3, &a, &p);
      out[k++] = a * 3 + p;
      out[k++] = nch;
    }
}

static void test_bad_profile_line_warns_and_the_rest_is_used(void **state) {
  (void)state;
  /* A profile equal to the built-in H200 one but with lower NVLink latency... and one bad line. */
  topo_profile prof;
  topo_profile_builtin("H200", &prof);
  char path[] = "/tmp/topo-tuner-prof-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  assert_int_equal(topo_profile_write(f, &prof), TOPO_OK);
  fclose(f);
  /* Insert a malformed line after the first line. */
  f = fopen(path, "r");
  char buf[16384];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  char *nl = strchr(buf, '\n');
  assert_non_null(nl);
  f = fopen(path, "w");
  fwrite(buf, 1, (size_t)(nl - buf + 1), f);
  fputs("this line is not a profile line at all\n", f);
  fputs(nl + 1, f);
  fclose(f);

  int ref[2 * 5 * 31], got[2 * 5 * 31];
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_28, 2, 1);
  decisions(&t, ref);
  close_tuner(&t);

  setenv("TOPO_TUNER_PROFILE", path, 1);
  topo_host_log_reset();
  open_tuner(&t, TOPO_NCCL_2_28, 2, 1);
  char where[96];
  snprintf(where, sizeof where, "%s:2", path);
  if (!topo_host_log_contains(where)) fail_msg("no warning naming %s", where);
  decisions(&t, got);
  close_tuner(&t);
  assert_memory_equal(ref, got, sizeof ref); /* the rest of the file was used: same parameters */

  /* Unreadable: a warning and the built-in defaults. */
  setenv("TOPO_TUNER_PROFILE", "/nonexistent/topo.profile", 1);
  topo_host_log_reset();
  open_tuner(&t, TOPO_NCCL_2_28, 2, 1);
  assert_true(topo_host_log_contains("/nonexistent/topo.profile"));
  assert_true(topo_host_log_count(NCCL_LOG_WARN) >= 1);
  decisions(&t, got);
  close_tuner(&t);
  assert_memory_equal(ref, got, sizeof ref);
  unsetenv("TOPO_TUNER_PROFILE");
  unlink(path);
  topo_profile_free(&prof);
}

/* A profile's fitted term changes the model's predictions (topo-tune), never the decisions:
 * with no measured points behind it, NCCL's own pick stays at every size and its table is left
 * as it came. */
static void test_fitted_terms_take_precedence_in_their_range(void **state) {
  (void)state;
  topo_profile prof;
  topo_profile_builtin("H200", &prof);
  topo_profile_term term = {.coll = ncclFuncAllReduce,
                            .algo = NCCL_ALGO_TREE,
                            .proto = NCCL_PROTO_LL128,
                            .nchannels = 0,
                            .lat_us = 1.0,
                            .bw_gbs = 2000.0,
                            .min_bytes = 1 << 20,
                            .max_bytes = 1 << 24,
                            .rel_err = 0.01,
                            .npoints = 5};
  assert_int_equal(topo_profile_set_term(&prof, &term), TOPO_OK);
  char path[] = "/tmp/topo-tuner-terms-XXXXXX";
  FILE *f = fdopen(mkstemp(path), "w");
  assert_int_equal(topo_profile_write(f, &prof), TOPO_OK);
  fclose(f);
  setenv("TOPO_TUNER_PROFILE", path, 1);
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_28, 2, 1);
  static const size_t sizes[] = {256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    float table[21], nccl[21];
    nccl2_fill(ncclFuncAllReduce, sizes[i], 7, table);
    memcpy(nccl, table, sizeof nccl);
    int nch = 0;
    topo_host_tuner_get(&t, ncclFuncAllReduce, sizes[i], 1, table, 0, &nch);
    assert_memory_equal(table, nccl, sizeof nccl);
    assert_int_equal(nch, 0);
  }
  close_tuner(&t);
  unsetenv("TOPO_TUNER_PROFILE");
  unlink(path);
  topo_profile_free(&prof);
}

static void test_unknown_topo_variable_warns(void **state) {
  (void)state;
  setenv(UNKNOWN_VAR, "1", 1);
  topo_host_log_reset();
  topo_host_tuner t;
  open_tuner(&t, TOPO_NCCL_2_28, 2, 1);
  assert_true(topo_host_log_contains(UNKNOWN_VAR));
  assert_non_null(t.ctx); /* and the tuner still works */
  close_tuner(&t);
  unsetenv(UNKNOWN_VAR);
}

static void test_v5_constants_untouched_by_default(void **state) {
  (void)state;
  unsetenv("TOPO_TUNER_CONSTANTS");
  topo_host_tuner t;
  assert_int_equal(topo_host_tuner_load(&t, so, TOPO_NCCL_2_28), TOPO_OK);
  ncclTunerConstants_v5_t c, d;
  topo_host_default_constants(&c);
  d = c;
  assert_int_equal(topo_host_tuner_init(&t, 1, 8, 1, topo_host_log, NULL, &c), ncclSuccess);
  assert_memory_equal(&c, &d, sizeof c);
  close_tuner(&t);
}

static void test_v5_constants_calibrated_within_bounds(void **state) {
  (void)state;
  setenv("TOPO_TUNER_CONSTANTS", "1", 1);
  topo_host_tuner t;
  assert_int_equal(topo_host_tuner_load(&t, so, TOPO_NCCL_2_28), TOPO_OK);
  ncclTunerConstants_v5_t c, d;
  topo_host_default_constants(&c);
  d = c;
  assert_int_equal(topo_host_tuner_init(&t, 1, 8, 1, topo_host_log, NULL, &c), ncclSuccess);
  unsetenv("TOPO_TUNER_CONSTANTS");
  topo_profile prof;
  topo_profile_builtin("H200", &prof);
  /* NVLink ring LL latency per hop: the profile's link latency + LL's. */
  assert_float_equal(c.hwLatencies[NCCL_HW_NVLINK][NCCL_ALGO_RING][NCCL_PROTO_LL],
                     prof.link[TOPO_LINK_NVLINK].lat_us + prof.proto[NCCL_PROTO_LL].lat_us, 1e-9);
  assert_float_equal(c.perChMaxRingLL128Bws[NCCL_HOPPER_COMPCAP_IDX][0],
                     prof.proto[NCCL_PROTO_LL128].ch_bw_gbs, 1e-9);
  const double *cv = (const double *)&c, *dv = (const double *)&d;
  int changed = 0;
  for (size_t i = 0; i < sizeof c / sizeof(double); i++) {
    if (cv[i] == dv[i]) continue;
    changed++;
    assert_true(cv[i] > 0 && cv[i] >= dv[i] / 4 - 1e-12 &&
                (dv[i] == 0 || cv[i] <= dv[i] * 4 + 1e-12));
  }
  assert_true(changed > 0);
  /* Other rows (Volta, Ampere, Blackwell) are never touched. */
  for (int row = 0; row < 4; row++) {
    if (row == NCCL_HOPPER_COMPCAP_IDX) continue;
    assert_memory_equal(c.llMaxBws[row], d.llMaxBws[row], sizeof c.llMaxBws[row]);
    assert_memory_equal(c.perChMaxTreeBws[row], d.perChMaxTreeBws[row],
                        sizeof c.perChMaxTreeBws[row]);
  }
  close_tuner(&t);
  topo_profile_free(&prof);
}

/* NCCL 2.32's v7 constants: the first four rows calibrated exactly as v5's, the Rubin row (which
 * the profile says nothing about) left as NCCL passed it. */
static void test_v7_constants_first_rows_as_v5_rubin_row_untouched(void **state) {
  (void)state;
  setenv("TOPO_TUNER_CONSTANTS", "1", 1);
  ncclTunerConstants_v5_t as_v5, as_v7;
  topo_host_default_constants(&as_v5);
  as_v7 = as_v5;
  topo_host_tuner t5, t7;
  assert_int_equal(topo_host_tuner_load(&t5, so, TOPO_NCCL_2_28), TOPO_OK);
  assert_int_equal(topo_host_tuner_init(&t5, 1, 8, 1, topo_host_log, NULL, &as_v5), ncclSuccess);
  assert_int_equal(topo_host_tuner_load(&t7, so, TOPO_NCCL_2_32), TOPO_OK);
  assert_int_equal(t7.lib.version, 7);
  assert_int_equal(topo_host_tuner_init(&t7, 1, 8, 1, topo_host_log, NULL, &as_v7), ncclSuccess);
  unsetenv("TOPO_TUNER_CONSTANTS");
  assert_non_null(t7.ctx);
  ncclTunerConstants_v5_t nccl;
  topo_host_default_constants(&nccl);
  assert_memory_not_equal(&as_v5, &nccl, sizeof nccl); /* something was calibrated */
  assert_memory_equal(&as_v7, &as_v5, sizeof as_v5);   /* the same, row for row */
  const ncclTunerConstants_v7_t *c = &t7.constants_v7;
  const int r = NCCL_RUBIN_COMPCAP_IDX, b = NCCL_BLACKWELL_COMPCAP_IDX;
  for (int s = 0; s < NCCL_NUM_TUNING_SCALES; s++) {
    assert_float_equal(c->llMaxBws[r][s], 2 * nccl.llMaxBws[b][s], 0);
    assert_float_equal(c->perChMaxRingLL128Bws[r][s], 2 * nccl.perChMaxRingLL128Bws[b][s], 0);
    assert_float_equal(c->perChMaxTreeLL128Bws[r][s], 2 * nccl.perChMaxTreeLL128Bws[b][s], 0);
    assert_float_equal(c->perChMaxTreeBws[r][s], 2 * nccl.perChMaxTreeBws[b][s], 0);
    assert_float_equal(c->perChMaxNVLSTreeBws[r][s], 2 * nccl.perChMaxNVLSTreeBws[b][s], 0);
  }
  close_tuner(&t5);
  close_tuner(&t7);
}

/* Same inputs, same decision, whichever ABI version NCCL loaded: v3 (2.23) to v7 (2.32) get the
 * same cost table (7 algorithms) and must leave bit-identical tables and channel counts, with a
 * measured profile that switches choices and channels, and a rule that pins one. (v2 is not
 * compared: it is handed two support flags, not the table.) */
static void test_same_inputs_same_decision_at_every_abi_version(void **state) {
  (void)state;
  char prof[64] = "/tmp/topo-abi-profile-XXXXXX", rules[64] = "/tmp/topo-abi-rules-XXXXXX";
  int fd = mkstemp(prof);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "topo-profile 2\nsection gpu=H200 nranks=8 nnodes=1\nmax_channels 24\n");
  for (unsigned long long b = 4096; b <= (64ull << 20); b *= 2) {
    /* Ring/LL measured far faster than Ring/Simple up to 1 MiB, and faster on 4 channels */
    double ll = b <= (1u << 20) ? 8 + (double)b / 20000 : 1 + (double)b / 1000;
    fprintf(f, "point allreduce ring ll channels=0 bytes=%llu median_us=%g noise_us=0.1\n", b, ll);
    fprintf(f, "point allreduce ring ll channels=4 bytes=%llu median_us=%g noise_us=0.1\n", b,
            ll * 0.7);
    fprintf(f, "point allreduce ring simple bytes=%llu median_us=%g noise_us=0.1\n", b,
            20 + (double)b / 300000);
  }
  fclose(f);
  fd = mkstemp(rules);
  assert_true(fd >= 0);
  f = fdopen(fd, "w");
  fprintf(f, "allgather,65536,1048576,ring,ll128,6,-1,-1,-1,-1\n");
  fclose(f);
  setenv("TOPO_TUNER_PROFILE", prof, 1);
  setenv("TOPO_TUNER_RULES", rules, 1);
  static const int nccl[] = {TOPO_NCCL_2_23, TOPO_NCCL_2_24, TOPO_NCCL_2_28, TOPO_NCCL_2_30,
                             TOPO_NCCL_2_32};
  enum { V = sizeof nccl / sizeof nccl[0] };
  topo_host_tuner t[V];
  for (int v = 0; v < V; v++) {
    assert_int_equal(topo_host_tuner_load(&t[v], so, nccl[v]), TOPO_OK);
    assert_int_equal(t[v].lib.version, v + 3);
    assert_int_equal(t[v].num_algo, 7);
    assert_int_equal(topo_host_tuner_init(&t[v], 0x5eed, 8, 1, topo_host_log, NULL, NULL),
                     ncclSuccess);
    assert_non_null(t[v].ctx);
  }
  int switched = 0, pinned = 0, fewer_channels = 0;
  for (int coll = 0; coll < 5; coll++)
    for (size_t bytes = 8; bytes <= (1ull << 31); bytes = bytes * 3 / 2 + 8)
      for (int pipe = 1; pipe <= 2; pipe++) {
        float want[21], nccl_own[21];
        int want_nch = -1;
        nccl2_fill(coll, bytes, 7, nccl_own);
        for (int v = 0; v < V; v++) {
          float table[21];
          memcpy(table, nccl_own, sizeof table);
          int nch = 0;
          assert_int_equal(topo_host_tuner_get(&t[v], coll, bytes, pipe, table, 0, &nch),
                           ncclSuccess);
          if (v == 0) {
            memcpy(want, table, sizeof want);
            want_nch = nch;
            continue;
          }
          if (memcmp(table, want, sizeof want) != 0 || nch != want_nch)
            fail_msg("coll %d, %zu B, %d ops: ABI v%d differs from v3 (channels %d vs %d)", coll,
                     bytes, pipe, v + 3, nch, want_nch);
        }
        int a0, p0, a1, p1;
        topo_host_select(nccl_own, 7, 3, &a0, &p0);
        topo_host_select(want, 7, 3, &a1, &p1);
        switched += a0 != a1 || p0 != p1;
        pinned += coll == ncclFuncAllGather && a1 == NCCL_ALGO_RING && p1 == NCCL_PROTO_LL128 &&
                  want_nch == 6;
        fewer_channels += want_nch == 4;
      }
  /* The comparison means something only if the tuner did decide something. */
  assert_true(switched > 0);
  assert_true(pinned > 0);
  assert_true(fewer_channels > 0);
  for (int v = 0; v < V; v++) close_tuner(&t[v]);
  unsetenv("TOPO_TUNER_PROFILE");
  unsetenv("TOPO_TUNER_RULES");
  unlink(prof);
  unlink(rules);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_each_nccl_version_gets_its_highest_abi, setup),
      cmocka_unit_test_setup(test_v7_constants_first_rows_as_v5_rubin_row_untouched, setup),
      cmocka_unit_test_setup(test_same_inputs_same_decision_at_every_abi_version, setup),
      cmocka_unit_test_setup(test_ignored_entries_stay_ignored, setup),
      cmocka_unit_test_setup(test_never_leaves_all_entries_unusable, setup),
      cmocka_unit_test_setup(test_nchannels_within_limits, setup),
      cmocka_unit_test_setup(test_nccl_algo_proto_restrictions_respected, setup),
      cmocka_unit_test_setup(test_null_context_leaves_table_alone, setup),
      cmocka_unit_test_setup(test_load_finalize_dlclose_reload_cycles, setup),
      cmocka_unit_test_setup(test_v6_chunk_size_is_left_to_nccl, setup),
      cmocka_unit_test_setup(test_v6_chunk_size_stays_nccl_with_a_calibrated_profile, setup),
      cmocka_unit_test_setup(test_v2_returns_a_pair_nccl_can_use, setup),
      cmocka_unit_test_setup(test_v2_force_only_where_supported, setup),
      cmocka_unit_test_setup(test_v2_rules_only_where_supported, setup),
      cmocka_unit_test_setup(test_v2_model_only_where_supported, setup),
      cmocka_unit_test_setup(test_v3_ignored_entries_with_rules_and_force, setup),
      cmocka_unit_test_setup(test_force_takes_the_choice_where_allowed, setup),
      cmocka_unit_test_setup(test_rules_pin_choices_ahead_of_the_model, setup),
      cmocka_unit_test_setup(test_bad_profile_line_warns_and_the_rest_is_used, setup),
      cmocka_unit_test_setup(test_fitted_terms_take_precedence_in_their_range, setup),
      cmocka_unit_test_setup(test_unknown_topo_variable_warns, setup),
      cmocka_unit_test_setup(test_v5_constants_untouched_by_default, setup),
      cmocka_unit_test_setup(test_v5_constants_calibrated_within_bounds, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
