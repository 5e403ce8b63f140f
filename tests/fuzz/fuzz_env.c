// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the TOPO_* variable table's parser (common/env.c). The first input byte
// picks a table entry, the rest (NULs dropped, as an environment cannot hold them) becomes the
// variable's value; the value is put into the environment and read back through common/env.h
// exactly as a plugin reads it. Contract checked: an INT reads as the default or as the value
// itself inside [min, max]; a BOOL reads 0 or 1; a STR reads the value, or the default when it is
// longer than its limit (or empty); a rejected value warns exactly once (a second read stays
// silent) and an accepted one never warns. Built with clang when TOPO_BUILD_FUZZERS=ON; every
// build replays the seed corpus (CTest test_fuzz_env_corpus).
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "env.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int warnings;

static void count_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                         const char *fmt, ...) {
  (void)flags, (void)file, (void)line, (void)fmt;
  if (level == NCCL_LOG_WARN) warnings++;
}

static void check(int ok, const char *what, const char *name, const char *value) {
  if (ok) return;
  fprintf(stderr, "fuzz_env: %s (%s=\"%s\")\n", what, name, value);
  abort();
}

/* The reference meaning of an INT value, written independently of env.c: C integer syntax
 * (strtol base 0) with optional trailing blanks, no overflow. */
static int reference_long(const char *s, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 0);
  if (errno || end == s) return 0;
  end += strspn(end, " \t");
  if (*end) return 0;
  *out = v;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int init;
  if (!init) {
    topo_log_set_logger(count_logger);
    init = 1;
  }
  if (size == 0) return 0;
  const topo_env_info *table = topo_env_table();
  topo_env_id id = (topo_env_id)(data[0] % TOPO_ENV_COUNT);
  const topo_env_info *e = &table[id];

  /* putenv of one static buffer per entry, rewritten in place: glibc's setenv would keep every
   * replaced value alive (by design), growing the process by each input. */
  static char assignment[TOPO_ENV_COUNT][600];
  char *slot = assignment[id];
  size_t prefix = (size_t)snprintf(slot, sizeof assignment[id], "%s=", e->name);
  char *value = slot + prefix;
  size_t n = 0;
  for (size_t i = 1; i < size && prefix + n + 1 < sizeof assignment[id] && n < 511; i++)
    if (data[i]) value[n++] = (char)data[i];
  value[n] = '\0';
  if (putenv(slot) != 0) return 0;
  topo_env_reset_warnings();
  warnings = 0;

  check(topo_env_is_set(id) == (n > 0), "is_set disagrees with the value", e->name, value);
  /* a string longer than its limit is the default (and warns, below) */
  int too_long = e->type == TOPO_ENV_TYPE_STR && n > (size_t)e->max;
  check(topo_env_too_long(id) == too_long, "too_long disagrees with the limit", e->name, value);
  const char *s = topo_env_str(id);
  check(s != NULL && !strcmp(s, n && !too_long ? value : e->def),
        "str is neither the value nor the default", e->name, value);

  int accepted = !too_long;
  if (e->type == TOPO_ENV_TYPE_INT) {
    long def = strtol(e->def, NULL, 0), want;
    accepted = !n || (reference_long(value, &want) && want >= e->min && want <= e->max);
    long got = topo_env_int(id);
    check(got == (n && accepted ? want : def), "int is neither the value nor the default", e->name,
          value);
    check(got >= e->min && got <= e->max, "int outside its bounds", e->name, value);
  } else if (e->type == TOPO_ENV_TYPE_BOOL) {
    static const char *words[] = {"1", "true", "yes", "on", "0", "false", "no", "off"};
    const char *v = n ? value : e->def;
    int want = -1;
    for (int i = 0; i < 8 && want < 0; i++)
      if (!strcasecmp(v, words[i])) want = i < 4;
    accepted = want >= 0;
    int got = topo_env_bool(id);
    check(got == 0 || got == 1, "bool is not 0 or 1", e->name, value);
    check(got == (accepted ? want : e->def[0] == '1'), "bool is neither the value nor the default",
          e->name, value);
  }
  check(warnings == !accepted,
        accepted ? "an accepted value warned" : "a rejected value did not warn", e->name, value);
  /* Read again: the warning is given once per process, never twice. */
  if (e->type == TOPO_ENV_TYPE_INT) (void)topo_env_int(id);
  if (e->type == TOPO_ENV_TYPE_BOOL) (void)topo_env_bool(id);
  if (e->type == TOPO_ENV_TYPE_STR) (void)topo_env_str(id);
  check(warnings == !accepted, "a rejected value warned twice", e->name, value);
  unsetenv(e->name);
  return 0;
}
