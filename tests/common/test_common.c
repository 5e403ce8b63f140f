// SPDX-License-Identifier: Apache-2.0
// Unit tests of common/: env table parsing and warnings, logger plumbing, CRC, allocation hook.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "alloc.h"
#include "crc32.h"
#include "env.h"
#include "log.h"
#include "plugin_host.h"
#include "status.h"

/* An unknown TOPO_* name, spelt in two pieces so that no checker mistakes it for a real one. */
#define MISSPELT_VAR \
  "TOPO_"            \
  "TUNER_PROFIEL"

static int setup(void **state) {
  (void)state;
  topo_log_set_logger(topo_host_log);
  topo_host_log_reset();
  topo_env_reset_warnings();
  return 0;
}

static void test_env_defaults_when_unset(void **state) {
  (void)state;
  unsetenv("TOPO_PROFILER_DIR");
  assert_string_equal(topo_env_str(TOPO_ENV_PROFILER_DIR), "./topo-traces");
  assert_int_equal(topo_env_is_set(TOPO_ENV_PROFILER_DIR), 0);
  setenv("TOPO_PROFILER_DIR", "", 1);
  assert_string_equal(topo_env_str(TOPO_ENV_PROFILER_DIR), "./topo-traces");
  unsetenv("TOPO_PROFILER_DIR");
}

static void test_env_bad_bool_warns_once_and_defaults(void **state) {
  (void)state;
  setenv("TOPO_LOG_ENV", "maybe", 1);
  assert_int_equal(topo_env_bool(TOPO_ENV_LOG_ENV), 0);
  assert_int_equal(topo_env_bool(TOPO_ENV_LOG_ENV), 0);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  assert_true(topo_host_log_contains("TOPO_LOG_ENV=\"maybe\""));
  setenv("TOPO_LOG_ENV", "ON", 1);
  assert_int_equal(topo_env_bool(TOPO_ENV_LOG_ENV), 1);
  unsetenv("TOPO_LOG_ENV");
}

/* A blank integer is no number: the default (16 MiB), not 0 (0 is in range here and would
 * change the sampling rule). */
static void test_env_blank_int_is_the_default(void **state) {
  (void)state;
  setenv("TOPO_PROFILER_MEASURE_BYTES", " ", 1);
  assert_int_equal(topo_env_int(TOPO_ENV_PROFILER_MEASURE_BYTES), 16777216);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  setenv("TOPO_PROFILER_MEASURE_BYTES", " 0 ", 1);
  assert_int_equal(topo_env_int(TOPO_ENV_PROFILER_MEASURE_BYTES), 0);
  unsetenv("TOPO_PROFILER_MEASURE_BYTES");
}

static void test_env_unknown_variable_warns(void **state) {
  (void)state;
  setenv(MISSPELT_VAR, "x", 1);
  assert_int_equal(topo_env_check_unknown(), 1);
  assert_true(topo_host_log_contains(MISSPELT_VAR));
  assert_int_equal(topo_env_check_unknown(), 0); /* once per process */
  unsetenv(MISSPELT_VAR);
}

static void test_env_table_names_are_unique_and_documented(void **state) {
  (void)state;
  const topo_env_info *t = topo_env_table();
  for (int i = 0; i < TOPO_ENV_COUNT; i++) {
    assert_true(strncmp(t[i].name, "TOPO_", 5) == 0);
    assert_true(strlen(t[i].doc) > 10);
    for (int j = i + 1; j < TOPO_ENV_COUNT; j++) assert_string_not_equal(t[i].name, t[j].name);
  }
}

/* Every string variable has a length limit (a component stores it whole, never cut: a cut path
 * names another file); a value of exactly that length is taken whole, one byte more warns once
 * (naming the variable and the limit) and yields the default. */
static void test_env_strings_longer_than_their_limit_warn_once_and_default(void **state) {
  (void)state;
  const topo_env_info *t = topo_env_table();
  for (int i = 0; i < TOPO_ENV_COUNT; i++) {
    if (t[i].type != TOPO_ENV_TYPE_STR) continue;
    if (t[i].max <= 0) fail_msg("%s has no length limit", t[i].name);
    size_t max = (size_t)t[i].max;
    char *v = malloc(max + 2);
    memset(v, 'a', max + 1);
    v[max] = 0;
    topo_host_log_reset();
    topo_env_reset_warnings();
    setenv(t[i].name, v, 1);
    assert_string_equal(topo_env_str((topo_env_id)i), v);
    assert_int_equal(topo_env_too_long((topo_env_id)i), 0);
    v[max] = 'a';
    v[max + 1] = 0;
    setenv(t[i].name, v, 1);
    assert_int_equal(topo_env_too_long((topo_env_id)i), 1);
    assert_string_equal(topo_env_str((topo_env_id)i), t[i].def);
    assert_string_equal(topo_env_str((topo_env_id)i), t[i].def);
    if (topo_host_log_count(NCCL_LOG_WARN) != 1 || !topo_host_log_contains(t[i].name) ||
        !topo_host_log_contains("longer than"))
      fail_msg("%s of %zu bytes: %d warnings", t[i].name, max + 1,
               topo_host_log_count(NCCL_LOG_WARN));
    unsetenv(t[i].name);
    free(v);
  }
}

/* Runs first, before any test installs a logger (cmocka runs tests in order): a message logged
 * with neither NCCL's logger nor a tool's stderr set goes nowhere - not to stderr, and not to a
 * logger installed afterwards. */
static void test_log_is_silent_without_logger(void **state) {
  (void)state;
  char path[] = "/tmp/topo-test-log-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  assert_true(saved >= 0);
  assert_int_equal(dup2(fd, 2), 2);
  TOPO_WARN("dropped %d", 7);
  TOPO_INFO(NCCL_INIT, "dropped too");
  fflush(stderr);
  assert_int_equal(dup2(saved, 2), 2);
  close(saved);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  close(fd);
  unlink(path);
  assert_int_equal(st.st_size, 0);
  topo_log_set_logger(topo_host_log);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
  assert_false(topo_host_log_contains("dropped"));
}

static void test_log_is_prefixed_with_the_component_once(void **state) {
  (void)state;
  topo_log_set_component("TOPO/Test");
  TOPO_WARN("value %d", 42);
  assert_true(topo_host_log_contains("TOPO/Test value 42"));
  /* A message that already names the component is not prefixed again. */
  TOPO_WARN("TOPO/Test: value %d", 43);
  assert_true(topo_host_log_contains("TOPO/Test: value 43"));
  assert_false(topo_host_log_contains("TOPO/Test TOPO/Test"));
}

static void test_crc32c_known_vector(void **state) {
  (void)state;
  /* RFC 3720 B.4: CRC-32C of "123456789" is 0xE3069283. */
  assert_int_equal(topo_crc32c(0, "123456789", 9), 0xE3069283u);
  /* incremental == one shot */
  uint32_t c = topo_crc32c(0, "12345", 5);
  assert_int_equal(topo_crc32c(c, "6789", 4), 0xE3069283u);
}

/* combine(crc(A), crc(B), |B|) == crc(A || B) for every split of a buffer, and the checksum of
 * any range follows from two prefix checksums. */
static void test_crc32c_combine_matches_one_pass(void **state) {
  (void)state;
  static unsigned char buf[3000];
  uint32_t seed = 7;
  for (size_t i = 0; i < sizeof buf; i++) {
    seed = seed * 1103515245u + 12345u;
    buf[i] = (unsigned char)(seed >> 16);
  }
  uint32_t whole = topo_crc32c(0, buf, sizeof buf);
  for (size_t cut = 0; cut <= sizeof buf; cut += 37) {
    uint32_t a = topo_crc32c(0, buf, cut), b = topo_crc32c(0, buf + cut, sizeof buf - cut);
    assert_int_equal(topo_crc32c_combine(a, b, sizeof buf - cut), whole);
  }
  for (size_t lo = 0; lo < sizeof buf; lo += 101)
    for (size_t hi = lo; hi <= sizeof buf; hi += 263) {
      uint32_t range =
          topo_crc32c_combine(topo_crc32c(0, buf, lo), 0, hi - lo) ^ topo_crc32c(0, buf, hi);
      assert_int_equal(range, topo_crc32c(0, buf + lo, hi - lo));
    }
  assert_int_equal(topo_crc32c_combine(0x12345678u, 0x9abcdef0u, 0), 0x12345678u ^ 0x9abcdef0u);
  /* lengths beyond any buffer: appending 2n zero bytes is appending n twice */
  for (int k = 0; k < 63; k++) {
    uint64_t n = (uint64_t)1 << k;
    uint32_t twice = topo_crc32c_combine(topo_crc32c_combine(whole, 0, n), 0, n);
    assert_int_equal(topo_crc32c_combine(whole, 0, 2 * n), twice);
    assert_int_equal(topo_crc32c_combine(whole, 0, n + 3),
                     topo_crc32c_combine(topo_crc32c_combine(whole, 0, n), 0, 3));
  }
}

static void test_alloc_failure_injection(void **state) {
  (void)state;
  topo_alloc_fail_after(1);
  void *a = topo_malloc(8);
  void *b = topo_malloc(8);
  assert_non_null(a);
  assert_null(b);
  topo_alloc_fail_after(-1);
  b = topo_calloc(2, 8);
  assert_non_null(b);
  topo_free(a);
  topo_free(b);
  topo_free(NULL);
}

static void test_status_names(void **state) {
  (void)state;
  assert_string_equal(topo_status_str(TOPO_OK), "ok");
  assert_string_equal(topo_status_str((topo_status)999), "unknown status");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_log_is_silent_without_logger), /* first: no logger installed yet */
      cmocka_unit_test_setup(test_env_defaults_when_unset, setup),
      cmocka_unit_test_setup(test_env_bad_bool_warns_once_and_defaults, setup),
      cmocka_unit_test_setup(test_env_blank_int_is_the_default, setup),
      cmocka_unit_test_setup(test_env_unknown_variable_warns, setup),
      cmocka_unit_test_setup(test_env_table_names_are_unique_and_documented, setup),
      cmocka_unit_test_setup(test_env_strings_longer_than_their_limit_warn_once_and_default, setup),
      cmocka_unit_test_setup(test_log_is_prefixed_with_the_component_once, setup),
      cmocka_unit_test_setup(test_crc32c_known_vector, setup),
      cmocka_unit_test_setup(test_crc32c_combine_matches_one_pass, setup),
      cmocka_unit_test_setup(test_alloc_failure_injection, setup),
      cmocka_unit_test_setup(test_status_names, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
