// SPDX-License-Identifier: Apache-2.0
// libtopo-tuner.so exports exactly the ncclTunerPlugin_vN structs v2..v7 (nm -D --defined-only).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static void test_exports_exactly_the_tuner_abi_structs(void **state) {
  (void)state;
  static const char *const expected[] = {"ncclTunerPlugin_v2", "ncclTunerPlugin_v3",
                                         "ncclTunerPlugin_v4", "ncclTunerPlugin_v5",
                                         "ncclTunerPlugin_v6", "ncclTunerPlugin_v7"};
  enum { N = sizeof expected / sizeof expected[0] };
  int seen[N] = {0};
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s'", TOPO_TEST_TUNER_SO);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, p)) {
    char addr[64], type[8], name[256];
    if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3) continue;
    if (strncmp(name, "__odr_asan", 10) == 0) continue; /* AddressSanitizer's ODR markers */
    n++;
    int known = 0;
    for (int i = 0; i < N; i++)
      if (strcmp(name, expected[i]) == 0) {
        seen[i]++;
        known = 1;
        /* Read-only data: the structs are const. */
        assert_true(strcmp(type, "R") == 0 || strcmp(type, "D") == 0);
      }
    if (!known) fail_msg("unexpected exported symbol: %s", name);
  }
  assert_int_equal(pclose(p), 0);
  assert_int_equal(n, N);
  for (int i = 0; i < N; i++) assert_int_equal(seen[i], 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_exports_exactly_the_tuner_abi_structs)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
