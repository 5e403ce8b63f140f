// SPDX-License-Identifier: Apache-2.0
// The TOPO_* variable table and its parser (see env.h). Called from init paths, never hot paths.
#include "env.h"

#include <errno.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"

extern char **environ;

static const topo_env_info table[TOPO_ENV_COUNT] = {
#define TOPO_ENV(id, type, def, min, max, doc) \
  {"TOPO_" #id, TOPO_ENV_TYPE_##type, def, min, max, doc},
#include "env/common.def"
#include "env/tuner.def"
#include "env/profiler.def"
#include "env/report.def"
#undef TOPO_ENV
};

static atomic_int warned[TOPO_ENV_COUNT];
static atomic_int unknown_checked;

const topo_env_info *topo_env_table(void) { return table; }

static const char *raw(topo_env_id id) {
  if ((unsigned)id >= TOPO_ENV_COUNT) return NULL;
  const char *v = getenv(table[id].name);
  return (v && *v) ? v : NULL;
}

int topo_env_is_set(topo_env_id id) { return raw(id) != NULL; }

static void warn_bad(topo_env_id id, const char *value, const char *why) {
  if (atomic_exchange(&warned[id], 1)) return;
  TOPO_WARN("%s=\"%.64s\" ignored (%s); using the default %s", table[id].name, value, why,
            table[id].def[0] ? table[id].def : "(none)");
}

int topo_env_too_long(topo_env_id id) {
  if ((unsigned)id >= TOPO_ENV_COUNT || table[id].type != TOPO_ENV_TYPE_STR) return 0;
  const char *v = raw(id);
  return v && table[id].max > 0 && strlen(v) > (size_t)table[id].max;
}

const char *topo_env_str(topo_env_id id) {
  if ((unsigned)id >= TOPO_ENV_COUNT) return "";
  const char *v = raw(id);
  if (v && topo_env_too_long(id)) {
    char why[64];
    snprintf(why, sizeof why, "longer than %ld bytes", table[id].max);
    warn_bad(id, v, why);
    v = NULL;
  }
  return v ? v : table[id].def;
}

static int parse_long(const char *s, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 0);
  if (errno || end == s) return 0; /* no digits (blank values too) */
  while (*end == ' ' || *end == '\t') end++;
  if (*end) return 0;
  *out = v;
  return 1;
}

long topo_env_int(topo_env_id id) {
  if ((unsigned)id >= TOPO_ENV_COUNT) return 0;
  long def = strtol(table[id].def, NULL, 0);
  const char *v = raw(id);
  if (!v) return def;
  long parsed;
  if (!parse_long(v, &parsed)) {
    warn_bad(id, v, "not an integer");
    return def;
  }
  if (parsed < table[id].min || parsed > table[id].max) {
    warn_bad(id, v, "out of range");
    return def;
  }
  return parsed;
}

int topo_env_bool(topo_env_id id) {
  if ((unsigned)id >= TOPO_ENV_COUNT) return 0;
  static const char *yes[] = {"1", "true", "yes", "on"};
  static const char *no[] = {"0", "false", "no", "off"};
  const char *v = raw(id);
  const char *s = v ? v : table[id].def;
  for (size_t i = 0; i < 4; i++) {
    if (!strcasecmp(s, yes[i])) return 1;
    if (!strcasecmp(s, no[i])) return 0;
  }
  warn_bad(id, s, "not a boolean: use 0/1");
  return table[id].def[0] == '1';
}

int topo_env_check_unknown(void) {
  if (atomic_exchange(&unknown_checked, 1)) return 0;
  int unknown = 0;
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "TOPO_", 5)) continue;
    size_t len = strcspn(*e, "=");
    int known = 0;
    for (int i = 0; i < TOPO_ENV_COUNT && !known; i++)
      known = strlen(table[i].name) == len && !strncmp(table[i].name, *e, len);
    if (!known) {
      TOPO_WARN("unknown variable %.*s ignored (see README.md for the TOPO_* variables)", (int)len,
                *e);
      unknown++;
    }
  }
  return unknown;
}

void topo_env_log_effective(void) {
  for (int i = 0; i < TOPO_ENV_COUNT; i++)
    TOPO_INFO(NCCL_ENV, "%s=%s%s", table[i].name,
              topo_env_too_long((topo_env_id)i) ? table[i].def : topo_env_str((topo_env_id)i),
              topo_env_too_long((topo_env_id)i) ? " (default: the value is too long)"
              : topo_env_is_set((topo_env_id)i) ? ""
                                                : " (default)");
}

void topo_env_reset_warnings(void) {
  for (int i = 0; i < TOPO_ENV_COUNT; i++) atomic_store(&warned[i], 0);
  atomic_store(&unknown_checked, 0);
}
