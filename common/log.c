// SPDX-License-Identifier: Apache-2.0
// Logger plumbing (see log.h): formats once into a stack buffer, escapes what a terminal would act
// on, hands NCCL a "%s". The component prefix is added here, once: a message that already starts
// with it is passed as it is.
#include "log.h"

#include <pthread.h>
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

/* Held stderr warnings (tools only). */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static char held[TOPO_LOG_HELD_MAX][512];
static int nheld, holding;

void topo_log_hold(void) {
  pthread_mutex_lock(&held_lock);
  holding = 1;
  nheld = 0;
  pthread_mutex_unlock(&held_lock);
}

int topo_log_held(int i, char *out, size_t len) {
  pthread_mutex_lock(&held_lock);
  int n = nheld;
  if (out && len) snprintf(out, len, "%s", i >= 0 && i < n && i < TOPO_LOG_HELD_MAX ? held[i] : "");
  pthread_mutex_unlock(&held_lock);
  return n;
}

void topo_log_release(int print) {
  pthread_mutex_lock(&held_lock);
  const char *program = atomic_load(&stderr_program);
  for (int i = 0; print && program && i < nheld && i < TOPO_LOG_HELD_MAX; i++)
    fprintf(stderr, "%s: warning: %s\n", program, held[i]);
  if (print && program && nheld > TOPO_LOG_HELD_MAX)
    fprintf(stderr, "%s: warning: %d more warnings\n", program, nheld - TOPO_LOG_HELD_MAX);
  holding = 0;
  nheld = 0;
  pthread_mutex_unlock(&held_lock);
}

/* Keeps a stderr warning while held; 0 when not holding (print it). */
static int hold_warning(const char *msg) {
  pthread_mutex_lock(&held_lock);
  int kept = holding;
  if (kept) {
    if (nheld < TOPO_LOG_HELD_MAX) {
      size_t n = strnlen(msg, sizeof held[nheld] - 1);
      memcpy(held[nheld], msg, n);
      held[nheld][n] = 0;
    }
    nheld++;
  }
  pthread_mutex_unlock(&held_lock);
  return kept;
}

/* 1 when msg already starts with the component's name ("TOPO/Profiler: ..."). */
static int names_component(const char *msg, const char *name) {
  size_t n = strlen(name);
  return strncmp(msg, name, n) == 0 && (msg[n] == ':' || msg[n] == ' ');
}

/* Length of the valid UTF-8 sequence at s (2..4), 0 when s does not start one. */
static size_t utf8_len(const unsigned char *s) {
  size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
  if (s[0] >= 0xf8) return 0;
  for (size_t i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (n == 3 && s[0] == 0xe0 && s[1] < 0xa0) return 0;  /* overlong */
  if (n == 3 && s[0] == 0xed && s[1] >= 0xa0) return 0; /* surrogate */
  if (n == 4 && s[0] == 0xf0 && s[1] < 0x90) return 0;  /* overlong */
  if (n == 4 && s[0] == 0xf4 && s[1] >= 0x90) return 0; /* above U+10FFFF */
  return n;
}

char *topo_log_escape(const char *in, char *out, size_t len) {
  static const char hex[] = "0123456789abcdef";
  if (!len) return out;
  const unsigned char *s = (const unsigned char *)(in ? in : "");
  size_t o = 0;
  while (*s) {
    size_t n = *s >= 0x80 ? utf8_len(s) : (*s >= 0x20 && *s != 0x7f);
    if (n) {
      if (o + n >= len) break;
      memcpy(out + o, s, n);
      o += n;
      s += n;
    } else {
      if (o + 4 >= len) break;
      out[o++] = '\\';
      out[o++] = 'x';
      out[o++] = hex[*s >> 4];
      out[o++] = hex[*s & 15];
      s++;
    }
  }
  out[o] = 0;
  return out;
}

void topo_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
              const char *fmt, ...) {
  ncclDebugLogger_t logger = atomic_load(&nccl_logger);
  const char *program = atomic_load(&stderr_program);
  if (!logger && !program) return;
  if (!logger && level > NCCL_LOG_WARN && !(level == NCCL_LOG_INFO && atomic_load(&stderr_verbose)))
    return;

  char raw[1024], msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  topo_log_escape(raw, msg, sizeof msg);

  if (logger) {
    const char *name = atomic_load(&component);
    if (names_component(msg, name)) logger(level, flags, file, line, "%s", msg);
    else logger(level, flags, file, line, "%s %s", name, msg);
  } else if (level != NCCL_LOG_WARN || !hold_warning(msg)) {
    fprintf(stderr, "%s: %s%s\n", program, level == NCCL_LOG_WARN ? "warning: " : "", msg);
  }
}
