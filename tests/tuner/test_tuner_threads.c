// SPDX-License-Identifier: Apache-2.0
// Same answer on every rank, and concurrent communicator init: two independently loaded copies
// of libtopo-tuner.so (two "ranks": separate process-wide state) answer >= 100,000 random
// queries identically; many communicators initialised, used and finalised on several threads at
// once give the answers a lone communicator gives.
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tuner_test_util.h"

#define QUERIES 120000
#define THREADS 8
#define CYCLES  60

static int setup(void **state) {
  (void)state;
  unsetenv("TOPO_TUNER_PROFILE");
  unsetenv("TOPO_TUNER_RULES");
  unsetenv("TOPO_TUNER_FORCE");
  setenv("TOPO_TUNER_GPU", "H200", 1);
  return 0;
}

/* A second file with the same bytes: dlopen gives it its own copy of every static. */
static void copy_plugin(char *path, size_t len) {
  snprintf(path, len, "/tmp/topo-tuner-rank1-%d.so", (int)getpid());
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", TOPO_TEST_TUNER_SO, path);
  assert_int_equal(system(cmd), 0);
}

/* A random table shaped like NCCL's: its times with a random subset ignored (NCCL_ALGO /
 * NCCL_PROTO, unsupported combinations) and sometimes the FP8 -1024. */
static void random_table(uint64_t *seed, int coll, size_t bytes, float *table) {
  nccl2_fill(coll, bytes, 7, table);
  for (int i = 0; i < 21; i++) {
    uint64_t r = test_rand(seed) % 16;
    if (r == 0) table[i] = -1.0f;
    else if (r == 1) table[i] = -1024.0f;
    else if (r == 2 && table[i] < 0) table[i] = (float)(test_rand(seed) % 5000) / 7.0f;
  }
}

static void test_two_ranks_answer_identically(void **state) {
  (void)state;
  char copy[256];
  copy_plugin(copy, sizeof copy);
  static const struct { size_t nranks, nnodes; } shapes[] = {{2, 1}, {8, 1}, {16, 2}, {64, 8}};
  long differing = 0, queries = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    topo_host_tuner r0, r1;
    assert_int_equal(topo_host_tuner_load(&r0, TOPO_TEST_TUNER_SO, TOPO_NCCL_2_28), TOPO_OK);
    assert_int_equal(topo_host_tuner_load(&r1, copy, TOPO_NCCL_2_28), TOPO_OK);
    assert_ptr_not_equal(r0.lib.sym, r1.lib.sym);
    assert_int_equal(
        topo_host_tuner_init(&r0, 7, shapes[s].nranks, shapes[s].nnodes, topo_host_log, NULL, NULL),
        ncclSuccess);
    assert_int_equal(
        topo_host_tuner_init(&r1, 7, shapes[s].nranks, shapes[s].nnodes, topo_host_log, NULL, NULL),
        ncclSuccess);
    uint64_t seed = 1000 + s;
    for (int q = 0; q < QUERIES / 4; q++) {
      int coll = (int)(test_rand(&seed) % 5);
      size_t bytes = test_rand_size(&seed, 34);
      int pipe = 1 + (int)(test_rand(&seed) % 16), reg = (int)(test_rand(&seed) % 2);
      float t0[21], t1[21];
      random_table(&seed, coll, bytes, t0);
      memcpy(t1, t0, sizeof t0);
      int c0 = 0, c1 = 0;
      assert_int_equal(topo_host_tuner_get(&r0, coll, bytes, pipe, t0, reg, &c0), ncclSuccess);
      assert_int_equal(topo_host_tuner_get(&r1, coll, bytes, pipe, t1, reg, &c1), ncclSuccess);
      if (memcmp(t0, t1, sizeof t0) != 0 || c0 != c1) differing++;
      queries++;
    }
    topo_host_tuner_finalize(&r0);
    topo_host_tuner_finalize(&r1);
    topo_host_tuner_unload(&r0);
    topo_host_tuner_unload(&r1);
  }
  unlink(copy);
  print_message("%ld queries, %ld differing answers\n", queries, differing);
  assert_true(queries >= 100000);
  assert_int_equal(differing, 0);
}

/* Fixed query grid -> answers (algo*3+proto)*100 + nChannels. */
#define GRID (5 * 11) /* sizes 2^3, 2^6, ... 2^33 */
static void answers(topo_host_tuner *t, int *out) {
  int k = 0;
  for (int coll = 0; coll < 5; coll++)
    for (int sz = 3; sz < 36; sz += 3) {
      float table[21];
      nccl2_fill(coll, (size_t)1 << sz, 7, table);
      int nch = 0, a = -1, p = -1;
      topo_host_tuner_get(t, coll, (size_t)1 << sz, 1, table, 0, &nch);
      topo_host_select(table, 7, 3, &a, &p);
      out[k++] = (a * 3 + p) * 100 + nch;
    }
}

static topo_host_tuner shared;
static int reference[4][GRID];
static int thread_failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static const size_t shape_ranks[4] = {2, 4, 8, 16};

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  for (int c = 0; c < CYCLES; c++) {
    int shape = (id + c) % 4;
    topo_host_tuner t = shared; /* same library, own context */
    if (topo_host_tuner_init(&t, (uint64_t)(id * 1000 + c), shape_ranks[shape], 1, topo_host_log,
                             NULL, NULL) != ncclSuccess ||
        !t.ctx) {
      pthread_mutex_lock(&fail_lock);
      thread_failures++;
      pthread_mutex_unlock(&fail_lock);
      continue;
    }
    int got[GRID];
    answers(&t, got);
    if (memcmp(got, reference[shape], sizeof got) != 0) {
      for (int i = 0; i < GRID; i++)
        if (got[i] != reference[shape][i])
          fprintf(stderr, "thread %d shape %d query %d: %d, alone %d\n", id, shape, i, got[i],
                  reference[shape][i]);
      pthread_mutex_lock(&fail_lock);
      thread_failures++;
      pthread_mutex_unlock(&fail_lock);
    }
    topo_host_tuner_finalize(&t);
  }
  return NULL;
}

static void test_concurrent_init_on_many_threads_is_safe(void **state) {
  (void)state;
  assert_int_equal(topo_host_tuner_load(&shared, TOPO_TEST_TUNER_SO, TOPO_NCCL_2_30), TOPO_OK);
  for (int s = 0; s < 4; s++) {
    topo_host_tuner t = shared;
    assert_int_equal(topo_host_tuner_init(&t, 1, shape_ranks[s], 1, topo_host_log, NULL, NULL),
                     ncclSuccess);
    answers(&t, reference[s]);
    topo_host_tuner_finalize(&t);
  }
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++)
    assert_int_equal(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  assert_int_equal(thread_failures, 0);
  topo_host_tuner_unload(&shared);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_two_ranks_answer_identically, setup),
      cmocka_unit_test_setup(test_concurrent_init_on_many_threads_is_safe, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
