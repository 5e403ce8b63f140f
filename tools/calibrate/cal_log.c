/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging for topo-calibrate. Warnings and -v detail go through common/log.h (stderr, prefixed
 * with the program name); progress lines are the tool's own stderr output. A process that does
 * not own rank 0 is quiet except for warnings. The GPU engine (runner.c, run_state.h) calls these
 * instead of TOPO_WARN because common/log.h cannot be included next to <nccl.h>.
 */
#include <stdarg.h>
#include <stdio.h>

#include "calibrate.h"
#include "log.h"

static const char *prog = "topo-calibrate";
static int verbosity;
static int quiet_process;

void topo_cal_log_setup(const char *program, int verbose, int quiet) {
  if (program) prog = program;
  verbosity = verbose;
  quiet_process = quiet;
  topo_log_to_stderr(prog, verbose > 0 && !quiet);
}

void topo_cal_warn(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  TOPO_WARN("%s", msg);
}

void topo_cal_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: error: ", prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void topo_cal_info(const char *fmt, ...) {
  if (quiet_process) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: %s\n", prog, msg);
}

void topo_cal_progress(const char *fmt, ...) {
  if (quiet_process) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void topo_cal_debug(const char *fmt, ...) {
  if (quiet_process || verbosity <= 0) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  TOPO_INFO(NCCL_ALL, "%s", msg);
}
