// SPDX-License-Identifier: Apache-2.0
// Shared command-line pieces (see cli.h): the program's name, its error and misuse lines (escaped
// through log.c), getopt_long's restart and the wording of its errors.
#include "cli.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

static const char *_Atomic program = "topo";

void topo_cli_init(const char *name, int verbose) {
  if (name) atomic_store(&program, name);
  topo_log_to_stderr(atomic_load(&program), verbose);
}

/* One line on stderr: "PROG: " label, the formatted text escaped, tail. */
__attribute__((format(printf, 3, 0))) static void line(const char *label, const char *tail,
                                                       const char *fmt, va_list ap) {
  char raw[1024], msg[1024];
  vsnprintf(raw, sizeof raw, fmt, ap);
  topo_log_escape(raw, msg, sizeof msg);
  fprintf(stderr, "%s: %s%s%s\n", atomic_load(&program), label, msg, tail);
}

int topo_cli_usage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  line("", " (try --help)", fmt, ap);
  va_end(ap);
  return TOPO_CLI_MISUSE;
}

int topo_cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  line("error: ", "", fmt, ap);
  va_end(ap);
  return TOPO_CLI_FAILED;
}

void topo_cli_hold(void) { topo_log_hold(); }

void topo_cli_release(int max) {
  int n = topo_log_held(0, NULL, 0);
  if (max < 0 || n <= max) {
    topo_log_release(1);
    return;
  }
  char msg[512];
  for (int i = 0; i < max; i++) {
    topo_log_held(i, msg, sizeof msg);
    fprintf(stderr, "%s: warning: %s\n", atomic_load(&program), msg);
  }
  topo_log_release(0);
  fprintf(stderr, "%s: warning: %d more warnings (--verbose prints them)\n", atomic_load(&program),
          n - max);
}

int topo_cli_error_held(const char *fmt, ...) {
  char what[512], first[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  int n = topo_log_held(0, first, sizeof first);
  topo_log_release(0);
  if (n == 0) return topo_cli_error("%s", what);
  if (n == 1) return topo_cli_error("%s: %s", what, first);
  return topo_cli_error("%s: %s (and %d more warnings)", what, first, n - 1);
}

void topo_cli_reset(void) {
  optind = 0; /* glibc: 0 re-initialises the whole scan, permutation state included */
  opterr = 0;
}

static const struct option *by_val(const struct option *opts, int val) {
  for (; opts && opts->name; opts++)
    if (!opts->flag && opts->val == val) return opts;
  return NULL;
}

const char *topo_cli_option_name(const struct option *opts, int val) {
  const struct option *o = by_val(opts, val);
  return o ? o->name : "?";
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

int topo_cli_getopt_error(int c, char **argv, const struct option *opts) {
  char what[256];
  topo_cli_misuse(c, argv, opts, what, sizeof what);
  return topo_cli_usage("%s", what);
}
