// SPDX-License-Identifier: Apache-2.0
// Shared command-line pieces (see cli.h): getopt_long's restart and the wording of its errors.
#include "cli.h"

#include <stdio.h>
#include <string.h>

void topo_cli_reset(void) {
  optind = 0; /* glibc: 0 re-initialises the whole scan, permutation state included */
  opterr = 0;
}

static const struct option *by_val(const struct option *opts, int val) {
  for (; opts && opts->name; opts++)
    if (!opts->flag && opts->val == val) return opts;
  return NULL;
}

void topo_cli_misuse(int c, char **argv, const struct option *opts, char *buf, size_t len) {
  const char *arg = optind > 0 ? argv[optind - 1] : "";
  const struct option *o = optopt ? by_val(opts, optopt) : NULL;
  int is_long = arg && arg[0] == '-' && arg[1] == '-';
  if (c == ':') {
    if (o && is_long) snprintf(buf, len, "option --%s needs a value", o->name);
    else snprintf(buf, len, "option -%c needs a value", optopt);
  } else if (optopt && o && is_long) {
    snprintf(buf, len, "option --%s takes no value", o->name);
  } else if (optopt && !is_long) {
    snprintf(buf, len, "unknown option '-%c'", optopt);
  } else {
    snprintf(buf, len, "unknown option '%s'", arg);
  }
}
