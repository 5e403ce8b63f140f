/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One table for every TOPO_* environment variable. The entries live in common/env/ (one .def file per component), one
 * line each:  TOPO_ENV(ID, TYPE, "default", min, max, "doc")  where the variable's name is
 * "TOPO_" #ID, TYPE is STR (max: the longest value taken, in bytes, as the component stores it
 * whole; a longer one warns once and yields the default), INT (bounded by min..max) or BOOL
 * (0/1/true/false/yes/no/on/off).
 * The list generates the ids, the parser, the unknown-variable warning, and the README test.
 * Thread-safe. Values are read from the environment at each call (callers cache them at init).
 */
#ifndef TOPO_ENV_H
#define TOPO_ENV_H

typedef enum topo_env_type {
  TOPO_ENV_TYPE_STR,
  TOPO_ENV_TYPE_INT,
  TOPO_ENV_TYPE_BOOL
} topo_env_type;

typedef enum topo_env_id {
#define TOPO_ENV(id, type, def, min, max, doc) TOPO_ENV_##id,
#include "env/common.def"
#include "env/tuner.def"
#include "env/profiler.def"
#include "env/report.def"
#undef TOPO_ENV
  TOPO_ENV_COUNT
} topo_env_id;

typedef struct topo_env_info {
  const char *name; /* "TOPO_TUNER_PROFILE" */
  topo_env_type type;
  const char *def; /* default, as text */
  long min, max;   /* INT bounds; STR: max = the longest value, in bytes */
  const char *doc;
} topo_env_info;

const topo_env_info *topo_env_table(void); /* TOPO_ENV_COUNT entries */

/* The value if set, non-empty and no longer than the variable's limit, else the default (a
 * longer value warns once). Never NULL. */
const char *topo_env_str(topo_env_id id);
/* 1 when a STR variable is set to a value longer than its limit (no warning): for a component
 * that refuses such a value instead of taking the default. */
int topo_env_too_long(topo_env_id id);
/* Parsed value; an unparsable or out-of-range value warns once (naming the variable, the value
 * and the default) and yields the default. */
long topo_env_int(topo_env_id id);
int topo_env_bool(topo_env_id id);
/* 1 when the variable is set to a non-empty value. */
int topo_env_is_set(topo_env_id id);

/* Warn once per process about every TOPO_* variable that is not in the table. Returns how many. */
int topo_env_check_unknown(void);
/* Log every variable's effective value at INFO (when TOPO_LOG_ENV=1). */
void topo_env_log_effective(void);
/* Tests: forget which warnings were given. */
void topo_env_reset_warnings(void);

#endif
