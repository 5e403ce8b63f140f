// SPDX-License-Identifier: Apache-2.0
// Library loading and the capturing logger of the plugin host (see plugin_host.h).
#include "plugin_host.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "file.h"

int topo_host_tuner_max_version(int v) {
  if (v >= 23200) return 7;
  if (v >= 23000) return 6;
  if (v >= 22800) return 5;
  if (v >= 22400) return 4;
  if (v >= 22200) return 3;
  if (v >= 22100) return 2;
  return 0;
}

int topo_host_profiler_max_version(int v) {
  if (v >= 23100) return 7;
  if (v >= 22900) return 6;
  if (v >= 22800) return 5;
  if (v >= 22700) return 4;
  if (v >= 22600) return 3;
  if (v >= 22400) return 2;
  if (v >= 22300) return 1;
  return 0;
}

topo_status topo_host_open(topo_host_lib *lib, const char *path, const char *prefix,
                           int max_version, int min_version) {
  memset(lib, 0, sizeof *lib);
  lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    fprintf(stderr, "plugin host: dlopen(%s): %s\n", path, dlerror());
    return TOPO_ERR_IO;
  }
  for (int v = max_version; v >= min_version; v--) {
    char name[sizeof lib->symbol];
    snprintf(name, sizeof name, "%s%d", prefix, v);
    const void *sym = dlsym(lib->handle, name);
    if (sym) {
      lib->version = v;
      lib->sym = sym;
      memcpy(lib->symbol, name, sizeof name);
      return TOPO_OK;
    }
  }
  dlclose(lib->handle);
  lib->handle = NULL;
  return TOPO_ERR_UNSUPPORTED;
}

void topo_host_close(topo_host_lib *lib) {
  if (lib->handle) dlclose(lib->handle);
  memset(lib, 0, sizeof *lib);
}

/* ---- capturing logger ---- */

#define LOG_KEEP 256
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_lines[LOG_KEEP][512];
static int log_next, log_total;
static int log_levels[NCCL_LOG_TRACE + 1];
static int log_echo;

void topo_host_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                   const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&log_lock);
  memcpy(log_lines[log_next], msg, sizeof msg);
  log_next = (log_next + 1) % LOG_KEEP;
  log_total++;
  if ((unsigned)level <= NCCL_LOG_TRACE) log_levels[level]++;
  if (log_echo) fprintf(stderr, "[host log %d %s:%d] %s\n", (int)level, file, line, msg);
  pthread_mutex_unlock(&log_lock);
  (void)flags;
}

int topo_host_log_count(ncclDebugLogLevel level) {
  pthread_mutex_lock(&log_lock);
  int n = (unsigned)level <= NCCL_LOG_TRACE ? log_levels[level] : 0;
  pthread_mutex_unlock(&log_lock);
  return n;
}

int topo_host_log_contains(const char *needle) {
  int found = 0;
  pthread_mutex_lock(&log_lock);
  int kept = log_total < LOG_KEEP ? log_total : LOG_KEEP;
  for (int i = 0; i < kept && !found; i++) found = strstr(log_lines[i], needle) != NULL;
  pthread_mutex_unlock(&log_lock);
  return found;
}

int topo_host_log_last(const char *needle, char *out, size_t n) {
  int found = 0;
  pthread_mutex_lock(&log_lock);
  int kept = log_total < LOG_KEEP ? log_total : LOG_KEEP;
  for (int k = 1; k <= kept && !found; k++) {
    const char *line = log_lines[(log_next - k + LOG_KEEP) % LOG_KEEP];
    if (strstr(line, needle)) {
      snprintf(out, n, "%s", line);
      found = 1;
    }
  }
  pthread_mutex_unlock(&log_lock);
  return found;
}

void topo_host_log_reset(void) {
  pthread_mutex_lock(&log_lock);
  log_next = log_total = 0;
  memset(log_levels, 0, sizeof log_levels);
  memset(log_lines, 0, sizeof log_lines);
  pthread_mutex_unlock(&log_lock);
}

void topo_host_log_echo(int on) { log_echo = on; }

char *topo_host_read_text(const char *path) {
  char *buf;
  size_t len;
  if (topo_file_read(path, (size_t)1 << 30, &buf, &len, NULL, 0) != TOPO_OK) return NULL;
  char *text = topo_realloc(buf, len + 1);
  if (!text) {
    topo_free(buf);
    return NULL;
  }
  text[len] = 0;
  return text;
}
