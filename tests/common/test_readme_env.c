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
#include "plugin_host.h"

static void test_every_variable_is_in_the_readme_table(void **state) {
  (void)state;
  char *readme = topo_host_read_text(TOPO_README);
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
