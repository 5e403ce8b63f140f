// SPDX-License-Identifier: Apache-2.0
// Security properties that can be exercised (docs/reliability.md lists each with its proof):
// user strings never act as format strings. Paths, GPU names and force strings full of
// conversions ("%s%n%x%n") go through the tuner's whole init path and every warning it gives:
// any use as a format would read or write through garbage arguments (ASan, valgrind and
// FORTIFY abort on %n); the messages must carry the strings literally instead.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "host_tuner.h"

#define EVIL "%s%n%x%n%p%s"

static int setup(void **state) {
  (void)state;
  unsetenv("TOPO_TUNER_PROFILE");
  unsetenv("TOPO_TUNER_RULES");
  unsetenv("TOPO_TUNER_FORCE");
  unsetenv("TOPO_TUNER_GPU");
  topo_host_log_reset();
  return 0;
}

static void init_once(void) {
  topo_host_tuner t;
  assert_int_equal(topo_host_tuner_load(&t, TOPO_TEST_TUNER_SO, TOPO_NCCL_2_28), TOPO_OK);
  ncclTunerConstants_v5_t c;
  topo_host_default_constants(&c);
  assert_int_equal(topo_host_tuner_init(&t, 1, 8, 1, topo_host_log, NULL, &c), ncclSuccess);
  float table[21];
  for (int i = 0; i < 21; i++) table[i] = 5.0f + (float)i;
  int nch = 0;
  assert_int_equal(topo_host_tuner_get(&t, ncclFuncAllReduce, 4096, 1, table, 0, &nch),
                   ncclSuccess);
  assert_int_equal(topo_host_tuner_finalize(&t), ncclSuccess);
  topo_host_tuner_unload(&t);
}

static void test_tuner_missing_files_named_with_conversions_are_logged_literally(void **state) {
  (void)state;
  setenv("TOPO_TUNER_PROFILE", "/nonexistent/" EVIL ".prof", 1);
  setenv("TOPO_TUNER_RULES", "/nonexistent/" EVIL ".conf", 1);
  init_once();
  assert_true(topo_host_log_count(NCCL_LOG_WARN) >= 2);
  assert_true(topo_host_log_contains("/nonexistent/" EVIL ".prof"));
  assert_true(topo_host_log_contains("/nonexistent/" EVIL ".conf"));
}

static void test_tuner_malformed_files_named_with_conversions_are_logged_literally(void **state) {
  (void)state;
  char dir[] = "/tmp/topo-sec-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char prof[256], rules[256];
  snprintf(prof, sizeof prof, "%s/%s.prof", dir, EVIL);
  snprintf(rules, sizeof rules, "%s/%s.conf", dir, EVIL);
  FILE *f = fopen(prof, "w");
  assert_non_null(f);
  fputs("topo-profile 1\nsection gpu=H200\nlink " EVIL " bw_gbs=%n lat_us=%s\nlaunch_us %n\n", f);
  fclose(f);
  f = fopen(rules, "w");
  assert_non_null(f);
  fputs(EVIL ",0,100,ring,ll\nallreduce,%n,%s," EVIL ",simple\n", f);
  fclose(f);
  setenv("TOPO_TUNER_PROFILE", prof, 1);
  setenv("TOPO_TUNER_RULES", rules, 1);
  init_once();
  assert_true(topo_host_log_count(NCCL_LOG_WARN) >= 2);
  assert_true(topo_host_log_contains(EVIL ".prof"));
  assert_true(topo_host_log_contains(EVIL ".conf"));
  unlink(prof);
  unlink(rules);
  rmdir(dir);
}

static void test_tuner_force_and_gpu_with_conversions_are_logged_literally(void **state) {
  (void)state;
  setenv("TOPO_TUNER_FORCE", EVIL "," EVIL, 1);
  setenv("TOPO_TUNER_GPU", EVIL, 1);
  init_once();
  assert_true(topo_host_log_count(NCCL_LOG_WARN) >= 2);
  assert_true(topo_host_log_contains(EVIL "," EVIL));
  assert_true(topo_host_log_contains("'" EVIL "'"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_tuner_missing_files_named_with_conversions_are_logged_literally,
                             setup),
      cmocka_unit_test_setup(test_tuner_malformed_files_named_with_conversions_are_logged_literally,
                             setup),
      cmocka_unit_test_setup(test_tuner_force_and_gpu_with_conversions_are_logged_literally, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
