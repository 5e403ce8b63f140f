// SPDX-License-Identifier: Apache-2.0
// Logger plumbing (see log.h): formats once into a stack buffer, hands NCCL a "%s". The component
// prefix is added here, once: a message that already starts with it is passed as it is.
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Atomic(ncclDebugLogger_t) nccl_logger;
static const char *_Atomic component = "TOPO";
static const char *_Atomic stderr_program;
static atomic_int stderr_verbose;

void topo_log_set_logger(ncclDebugLogger_t logger) {
  if (logger) atomic_store(&nccl_logger, logger);
}

void topo_log_to_stderr(const char *program, int verbose) {
  atomic_store(&stderr_verbose, verbose);
  atomic_store(&stderr_program, program);
}

void topo_log_set_component(const char *name) { atomic_store(&component, name); }

/* 1 when msg already starts with the component's name ("TOPO/Profiler: ..."). */
static int names_component(const char *msg, const char *name) {
  size_t n = strlen(name);
  return strncmp(msg, name, n) == 0 && (msg[n] == ':' || msg[n] == ' ');
}

void topo_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
              const char *fmt, ...) {
  ncclDebugLogger_t logger = atomic_load(&nccl_logger);
  const char *program = atomic_load(&stderr_program);
  if (!logger && !program) return;
  if (!logger && level > NCCL_LOG_WARN && !(level == NCCL_LOG_INFO && atomic_load(&stderr_verbose)))
    return;

  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);

  if (logger) {
    const char *name = atomic_load(&component);
    if (names_component(msg, name)) logger(level, flags, file, line, "%s", msg);
    else logger(level, flags, file, line, "%s %s", name, msg);
  } else {
    fprintf(stderr, "%s: %s%s\n", program, level == NCCL_LOG_WARN ? "warning: " : "", msg);
  }
}
