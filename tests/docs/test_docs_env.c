// SPDX-License-Identifier: Apache-2.0
// docs/environment.md against the env table (common/env/*.def): a row `| \`TOPO_X\` | default |`
// for every variable, with the table's default (`value`, or "(empty)" for an empty default), and
// no row naming a TOPO_* variable the table does not have.
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

static void test_every_variable_has_a_row_with_its_default(void **state) {
  (void)state;
  char *doc = topo_host_read_text(TOPO_DOCS_ENV);
  assert_non_null(doc);
  const topo_env_info *t = topo_env_table();
  for (int i = 0; i < TOPO_ENV_COUNT; i++) {
    char row[256], def[160];
    if (t[i].def[0]) snprintf(def, sizeof def, "`%s`", t[i].def);
    else snprintf(def, sizeof def, "(empty)");
    snprintf(row, sizeof row, "| `%s` | %s |", t[i].name, def);
    if (!strstr(doc, row)) fail_msg("docs/environment.md has no row '%s'", row);
  }
  free(doc);
}

static void test_no_row_names_an_unknown_variable(void **state) {
  (void)state;
  char *doc = topo_host_read_text(TOPO_DOCS_ENV);
  assert_non_null(doc);
  const topo_env_info *t = topo_env_table();
  int rows = 0;
  for (const char *p = doc; (p = strstr(p, "\n| `TOPO_")); p++) {
    const char *name = p + 4, *end = strchr(name, '`');
    assert_non_null(end);
    int known = 0;
    for (int i = 0; i < TOPO_ENV_COUNT; i++)
      known |= strlen(t[i].name) == (size_t)(end - name) &&
               !strncmp(t[i].name, name, (size_t)(end - name));
    if (!known)
      fail_msg("docs/environment.md documents %.*s, which the env table lacks", (int)(end - name),
               name);
    rows++;
  }
  assert_int_equal(rows, TOPO_ENV_COUNT);
  free(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_variable_has_a_row_with_its_default),
      cmocka_unit_test(test_no_row_names_an_unknown_variable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
