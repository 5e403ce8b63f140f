// SPDX-License-Identifier: Apache-2.0
// Every TUNER_INIT / TUNER_GET real NCCL 2.28.9 made on 2 x H200 (one node, and one host seen as
// two nodes) replayed through the plugin host with its exact cost table: the answer is one NCCL
// allowed, ignored entries stay ignored, both ranks answer identically, and on one node small
// messages take an LL protocol and large ones Simple.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "recorded_calls.h"
#include "tuner_test_util.h"

#define MAX_GETS 256

typedef struct answer {
  int coll;
  size_t bytes;
  int algo, proto, nch;
} answer;

/* Replay one rank's file; returns the number of getCollInfo calls replayed. */
static int replay(const char *dir, int rank, answer *out) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/rank%d-calls.txt", topo_rec_data_dir(), dir, rank);
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s", path);
  topo_host_tuner t;
  assert_int_equal(topo_host_tuner_load(&t, TOPO_TEST_TUNER_SO, TOPO_NCCL_2_28), TOPO_OK);
  static char line[1 << 16];
  int n = 0, inited = 0;
  topo_rec_tuner_init ini;
  while (fgets(line, sizeof line, f)) {
    topo_rec_tuner_get g;
    if (topo_rec_parse_tuner_init(line, &ini)) {
      if (inited) assert_int_equal(topo_host_tuner_finalize(&t), ncclSuccess);
      ncclTunerConstants_v5_t c;
      topo_host_default_constants(&c);
      memcpy(c.baseLatencies, ini.base_lat, sizeof c.baseLatencies);
      memcpy(c.hwLatencies, ini.hw_lat, sizeof c.hwLatencies);
      memcpy(c.llMaxBws, ini.ll_max, sizeof c.llMaxBws);
      memcpy(c.perChMaxRingLL128Bws, ini.ring_ll128, sizeof c.perChMaxRingLL128Bws);
      ncclNvlDomainInfo_v5_t nvl = {ini.nvl[0], ini.nvl[1], ini.nvl[2]};
      assert_int_equal(topo_host_tuner_init(&t, ini.comm, (size_t)ini.nranks, (size_t)ini.nnodes,
                                            topo_host_log, &nvl, &c),
                       ncclSuccess);
      assert_non_null(t.ctx);
      inited = 1;
    } else if (topo_rec_parse_tuner_get(line, &g)) {
      assert_true(inited);
      assert_true(n < MAX_GETS);
      float table[21], before[21];
      memcpy(table, g.table, sizeof table);
      memcpy(before, g.table, sizeof table);
      int nch = g.nch, a = -1, p = -1;
      assert_int_equal(topo_host_tuner_get(&t, g.coll, g.bytes, g.pipe, table, g.reg, &nch),
                       ncclSuccess);
      for (int i = 0; i < g.algos * g.protos; i++)
        if (before[i] < 0) assert_true(table[i] == before[i]);
        else assert_true(table[i] >= 0 && table[i] < 3.6e9f);
      assert_true(topo_host_select(table, g.algos, g.protos, &a, &p));
      assert_true(before[a * 3 + p] >= 0); /* a choice NCCL allowed */
      assert_true(nch >= 0 && nch <= 24);  /* 24 coll channels on that machine */
      if (ini.nnodes == 1) {
        if (g.bytes <= 65536) assert_int_equal(p, NCCL_PROTO_LL);
        if (g.bytes >= (64u << 20)) assert_int_equal(p, NCCL_PROTO_SIMPLE);
        if (g.bytes >= (16u << 20)) assert_int_not_equal(p, NCCL_PROTO_LL);
      }
      out[n++] = (answer){g.coll, g.bytes, a, p, nch};
    }
  }
  fclose(f);
  if (inited) assert_int_equal(topo_host_tuner_finalize(&t), ncclSuccess);
  topo_host_tuner_unload(&t);
  return n;
}

static void check_dir(const char *dir, int min_calls) {
  static answer r0[MAX_GETS], r1[MAX_GETS];
  int n0 = replay(dir, 0, r0), n1 = replay(dir, 1, r1);
  assert_int_equal(n0, n1);
  assert_true(n0 >= min_calls);
  for (int i = 0; i < n0; i++) {
    assert_int_equal(r0[i].coll, r1[i].coll);
    assert_int_equal(r0[i].bytes, r1[i].bytes);
    if (r0[i].algo != r1[i].algo || r0[i].proto != r1[i].proto || r0[i].nch != r1[i].nch)
      fail_msg("call %d: rank 0 %d/%d/%d, rank 1 %d/%d/%d", i, r0[i].algo, r0[i].proto, r0[i].nch,
               r1[i].algo, r1[i].proto, r1[i].nch);
    if (i < 64 || r0[i].bytes != r0[i - 1].bytes)
      print_message("%s coll %d %10zu B -> algo %d proto %d nch %d\n", dir, r0[i].coll, r0[i].bytes,
                    r0[i].algo, r0[i].proto, r0[i].nch);
  }
}

static int setup(void **state) {
  (void)state;
  unsetenv("TOPO_TUNER_PROFILE");
  unsetenv("TOPO_TUNER_RULES");
  unsetenv("TOPO_TUNER_FORCE");
  setenv("TOPO_TUNER_GPU", "H200", 1);
  return 0;
}

static void test_recorded_one_node_calls_get_sensible_identical_answers(void **state) {
  (void)state;
  check_dir("nccl-2.28.9-2xh200", 60);
}

static void test_recorded_two_node_calls_get_sensible_identical_answers(void **state) {
  (void)state;
  check_dir("nccl-2.28.9-2xh200-as-2-nodes", 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_recorded_one_node_calls_get_sensible_identical_answers, setup),
      cmocka_unit_test_setup(test_recorded_two_node_calls_get_sensible_identical_answers, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
