// SPDX-License-Identifier: Apache-2.0
// Every TOPO_* variable of the env table is documented in README.md, with its default.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "env.h"

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  size_t got = fread(buf, 1, (size_t)n, f);
  buf[got] = 0;
  fclose(f);
  return buf;
}

static void test_every_variable_is_in_the_readme_table(void **state) {
  (void)state;
  char *readme = slurp(TOPO_README);
  assert_non_null(readme);
  const topo_env_info *t = topo_env_table();
  for (int i = 0; i < TOPO_ENV_COUNT; i++) {
    char row[128];
    snprintf(row, sizeof row, "| `%s` |", t[i].name);
    if (!strstr(readme, row)) fail_msg("README.md has no table row for %s", t[i].name);
  }
  free(readme);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_variable_is_in_the_readme_table)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
