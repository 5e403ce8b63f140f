// SPDX-License-Identifier: Apache-2.0
// Same decision on every rank (DESIGN.md invariant), proved on eight truly independent tuners:
// libtopo-tuner.so is copied to eight paths, each copy dlopen'ed through the plugin host (so each
// has its own statics: setup cache, rules, profile, log state), initialised as one rank of an
// 8-rank communicator with a fitted profile and a rule file loaded, in a different order each
// round, and fed the same 10^6 random NCCL-shaped queries. Every cost-table entry, nChannels and
// the calibrated NCCL constants must be bit-identical on all eight, every time.
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "../tuner/tuner_test_util.h"

#define RANKS   8
#define QUERIES 1000000
#define ROUNDS  4

static char dir[] = "/tmp/topo-ranks-XXXXXX";
static char so[RANKS][340];
static char rules[300], profile[300];

static void copy_file(const char *from, const char *to) {
  int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
  assert_true(in >= 0 && out >= 0);
  char buf[65536];
  for (ssize_t n; (n = read(in, buf, sizeof buf)) > 0;)
    assert_int_equal(write(out, buf, (size_t)n), n);
  close(in);
  close(out);
}

static int setup(void **state) {
  (void)state;
  if (!mkdtemp(dir)) return -1;
  for (int r = 0; r < RANKS; r++) {
    char sub[300];
    snprintf(sub, sizeof sub, "%s/rank%d", dir, r);
    if (mkdir(sub, 0700)) return -1;
    snprintf(so[r], sizeof so[r], "%s/libtopo-tuner.so", sub);
    copy_file(TOPO_TEST_TUNER_SO, so[r]);
  }
  /* Rules that fire on part of the space only, so rule, model and profile answers all occur. */
  snprintf(rules, sizeof rules, "%s/rules.conf", dir);
  FILE *f = fopen(rules, "w");
  if (!f) return -1;
  fputs(
      "allreduce,0,65536,tree,ll,2,-1,8\n"
      "allreduce,1048577,16777216,ring,ll128,-1,2,-1\n"
      "allgather,4096,1048576,ring,simple,4,-1,-1,-1,1\n"
      "reducescatter,0,-1,ring,ll128,8,8,-1\n",
      f);
  fclose(f);
  /* The fitted 2 x H200 profile, its section opened to every 8-rank communicator. */
  snprintf(profile, sizeof profile, "%s/fitted.prof", dir);
  FILE *in = fopen(TOPO_TEST_FITTED_PROFILE, "r");
  f = fopen(profile, "w");
  if (!in || !f) return -1;
  char line[4096];
  int sections = 0;
  while (fgets(line, sizeof line, in)) {
    if (!strncmp(line, "section ", 8)) {
      strcpy(line, "section gpu=H200 nranks=8\n");
      sections++;
    }
    fputs(line, f);
  }
  /* Measured points that make Ring/LL128 the measured winner everywhere, so decisions switch. */
  static const char *algos[] = {"ring", "tree"}, *protos[] = {"ll", "ll128", "simple"};
  for (int c = 0; c < 5; c++)
    for (int a = 0; a < 2; a++)
      for (int p = 0; p < 3; p++)
        for (unsigned long long b = 8; b <= (1ull << 34); b *= 4)
          fprintf(
              f, "point %s %s %s bytes=%llu median_us=%d noise_us=0.1\n",
              (const char *[]){"broadcast", "reduce", "allgather", "reducescatter", "allreduce"}[c],
              algos[a], protos[p], b, a == 0 && p == 1 ? 1 : 100);
  fclose(in);
  fclose(f);
  if (sections != 1) return -1;
  setenv("TOPO_TUNER_PROFILE", profile, 1);
  setenv("TOPO_TUNER_RULES", rules, 1);
  setenv("TOPO_TUNER_GPU", "H200", 1);
  unsetenv("TOPO_TUNER_FORCE");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (int r = 0; r < RANKS; r++) {
    unlink(so[r]);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/rank%d", dir, r);
    rmdir(sub);
  }
  unlink(rules);
  unlink(profile);
  rmdir(dir);
  return 0;
}

/* A table shaped like NCCL's: its times, a random subset ignored (-1, or FP8's -1024) and some
 * entries NCCL left disabled given a time. */
static void random_table(uint64_t *seed, int coll, size_t bytes, float *table) {
  nccl2_fill(coll, bytes, 7, table);
  for (int i = 0; i < 21; i++) {
    uint64_t r = test_rand(seed) % 16;
    if (r == 0) table[i] = -1.0f;
    else if (r == 1) table[i] = -1024.0f;
    else if (r == 2 && table[i] < 0) table[i] = (float)(test_rand(seed) % 5000) / 7.0f;
  }
}

static void test_eight_independent_ranks_answer_identically(void **state) {
  (void)state;
  static const size_t nnodes[ROUNDS] = {1, 2, 4, 8};
  long queries = 0, differing = 0, changed = 0, channels_set = 0;
  for (int round = 0; round < ROUNDS; round++) {
    topo_host_tuner t[RANKS];
    ncclTunerConstants_v5_t c[RANKS];
    for (int r = 0; r < RANKS; r++) {
      assert_int_equal(topo_host_tuner_load(&t[r], so[r], TOPO_NCCL_2_28), TOPO_OK);
      for (int q = 0; q < r; q++) assert_ptr_not_equal(t[r].lib.sym, t[q].lib.sym);
    }
    /* Initialise in a different order each round: rank (k * 3 + round) % 8 for k = 0..7. */
    topo_host_log_reset();
    for (int k = 0; k < RANKS; k++) {
      int r = (k * 3 + round) % RANKS;
      topo_host_default_constants(&c[r]);
      assert_int_equal(
          topo_host_tuner_init(&t[r], 0xc0ffee, RANKS, nnodes[round], topo_host_log, NULL, &c[r]),
          ncclSuccess);
      assert_non_null(t[r].ctx);
    }
    assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
    assert_true(topo_host_log_contains("profile /tmp/topo-ranks-")); /* the profile is in use */
    assert_true(topo_host_log_contains("; 4 rules;"));               /* and all four rules */
    for (int r = 1; r < RANKS; r++) assert_memory_equal(&c[r], &c[0], sizeof c[0]);

    uint64_t seed = 0x5eed0000u + (uint64_t)round;
    for (int q = 0; q < QUERIES / ROUNDS; q++) {
      int coll = (int)(test_rand(&seed) % 5);
      size_t bytes = test_rand_size(&seed, 34);
      int pipe = 1 + (int)(test_rand(&seed) % 4), reg = (int)(test_rand(&seed) % 2);
      float nccl[21], table[RANKS][21];
      int nch[RANKS];
      random_table(&seed, coll, bytes, nccl);
      for (int r = 0; r < RANKS; r++) {
        memcpy(table[r], nccl, sizeof nccl);
        nch[r] = 0;
        assert_int_equal(topo_host_tuner_get(&t[r], coll, bytes, pipe, table[r], reg, &nch[r]),
                         ncclSuccess);
      }
      for (int r = 1; r < RANKS; r++)
        if (memcmp(table[r], table[0], sizeof nccl) || nch[r] != nch[0]) differing++;
      changed += memcmp(table[0], nccl, sizeof nccl) != 0;
      channels_set += nch[0] != 0;
      queries++;
    }
    for (int r = 0; r < RANKS; r++) {
      assert_int_equal(topo_host_tuner_finalize(&t[r]), ncclSuccess);
      topo_host_tuner_unload(&t[r]);
    }
  }
  print_message(
      "%ld queries x %d ranks: %ld differing answers; %ld tables changed, %ld with "
      "nChannels set\n",
      queries, RANKS, differing, changed, channels_set);
  assert_int_equal(queries, QUERIES);
  assert_int_equal(differing, 0);
  /* The comparison means something: the tuner changed a large share of the tables (measured
   * switches and rules) and rules set channels. */
  assert_true(changed > QUERIES / 3);
  assert_true(channels_set > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_eight_independent_ranks_answer_identically),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
