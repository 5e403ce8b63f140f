/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging. Inside a plugin every message goes through the ncclDebugLogger_t NCCL handed to init
 * (so NCCL_DEBUG / NCCL_DEBUG_SUBSYS filter it); before any init, messages are dropped. Tools
 * call topo_log_to_stderr() instead. Messages carry a prefix naming the component ("TOPO/Tuner"),
 * once: a message that already starts with that name is not prefixed again.
 * Thread-safe; never allocates. TRACE is compiled out unless TOPO_ENABLE_TRACE is defined.
 */
#ifndef TOPO_LOG_H
#define TOPO_LOG_H

#include <stdatomic.h>
#include <stddef.h>
#include "nccl/nccl_common.h"

/* Install NCCL's logger (any init may call this; the latest non-NULL one wins). */
void topo_log_set_logger(ncclDebugLogger_t logger);
/* Tools: print WARN (and INFO when verbose) to stderr, prefixed by the program name. */
void topo_log_to_stderr(const char *program, int verbose);
/* The component name used as prefix by this binary ("TOPO/Tuner", "TOPO/Profiler", ...). */
void topo_log_set_component(const char *component);

/* Tools: while held, stderr WARN lines are kept (the first TOPO_LOG_HELD_MAX of them; the rest
 * counted) instead of printed, so that a tool that finds nothing usable can say so in one line
 * (common/cli.h). topo_log_held copies the i-th kept line (without the program name) into out and
 * returns how many were held in all; topo_log_release prints the kept lines (when print) and
 * stops holding. No effect inside a plugin (NCCL's logger is never held). */
#define TOPO_LOG_HELD_MAX 64
void topo_log_hold(void);
int topo_log_held(int i, char *out, size_t len);
void topo_log_release(int print);

/* `in` with every byte a terminal could act on written as \xNN: control bytes (C0, DEL) and
 * bytes that are no part of valid UTF-8 (so no C1 control or stray escape reaches a terminal or
 * a log); a backslash stays as it is. Cut to fit `len` (never mid-escape), always terminated.
 * Every message topo_log prints goes through it, so a message that quotes input (a file's line,
 * a path, an argument) never echoes raw bytes. Returns out. */
char *topo_log_escape(const char *in, char *out, size_t len);

void topo_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define TOPO_WARN(...)        topo_log(NCCL_LOG_WARN, NCCL_ALL, __FILE__, __LINE__, __VA_ARGS__)
#define TOPO_INFO(flags, ...) topo_log(NCCL_LOG_INFO, (flags), __FILE__, __LINE__, __VA_ARGS__)
#ifdef TOPO_ENABLE_TRACE
#define TOPO_TRACE(flags, ...) topo_log(NCCL_LOG_TRACE, (flags), __FILE__, __LINE__, __VA_ARGS__)
#else
#define TOPO_TRACE(flags, ...) ((void)0)
#endif

/* Warn once per call site for the life of the process (or until the library is reloaded). */
#define TOPO_WARN_ONCE(...)                                         \
  do {                                                              \
    static atomic_int topo_warned_;                                 \
    if (!atomic_exchange(&topo_warned_, 1)) TOPO_WARN(__VA_ARGS__); \
  } while (0)

#endif
