/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin host: loads a plugin .so exactly as NCCL 2.21-2.32 does and drives it with
 * NCCL-shaped arguments. Every plugin test goes through it, never through the plugin's sources.
 *
 * Loading (shared/reference/nccl-plugin-abi.md 1.5, 2.1, 2.2): dlopen(path, RTLD_NOW|RTLD_LOCAL),
 * then dlsym of the highest symbol version the imitated NCCL knows, going down; the first found
 * wins. NCCL dlcloses the library when its last communicator is destroyed and loads it afresh
 * for the next one, so tests do the same.
 */
#ifndef TOPO_PLUGIN_HOST_H
#define TOPO_PLUGIN_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/nccl_common.h"
#include "status.h"

/* NCCL versions as NCCL_VERSION_CODE (major*10000 + minor*100 + patch). */
#define TOPO_NCCL_2_21 22105
#define TOPO_NCCL_2_22 22203
#define TOPO_NCCL_2_23 22304
#define TOPO_NCCL_2_24 22403
#define TOPO_NCCL_2_26 22602
#define TOPO_NCCL_2_27 22707
#define TOPO_NCCL_2_28 22809
#define TOPO_NCCL_2_29 22907
#define TOPO_NCCL_2_30 23007
#define TOPO_NCCL_2_31 23102 /* profiler v7 */
#define TOPO_NCCL_2_32 23207 /* tuner v7 (2.32.6 is the first 2.32 release) */

typedef struct topo_host_lib {
  void *handle;
  int version;     /* ABI version found (N of the _vN symbol), 0 when none */
  const void *sym; /* the exported struct */
  char symbol[40]; /* its name */
} topo_host_lib;

/* Highest tuner / profiler ABI version the given NCCL looks up (0 = none). */
int topo_host_tuner_max_version(int nccl_version);
int topo_host_profiler_max_version(int nccl_version);

/* dlopen `path` and look up `<prefix><N>` for N = max_version down to min_version.
 * TOPO_ERR_IO when dlopen fails, TOPO_ERR_UNSUPPORTED when no symbol is found (the library is
 * then closed again, as NCCL does). */
topo_status topo_host_open(topo_host_lib *lib, const char *path, const char *prefix,
                           int max_version, int min_version);
void topo_host_close(topo_host_lib *lib);

/* A thread-safe capturing logger with NCCL's signature, for init calls. */
void topo_host_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int topo_host_log_count(ncclDebugLogLevel level); /* messages at that level since reset */
int topo_host_log_contains(const char *needle);   /* 1 if any captured message contains it */
/* Copy the latest captured message containing `needle` into out[n]; 1 if there is one. */
int topo_host_log_last(const char *needle, char *out, size_t n);
void topo_host_log_reset(void);
void topo_host_log_echo(int on); /* also print to stderr */

/* A whole text file as a NUL-terminated string (free with topo_free), NULL when unreadable. */
char *topo_host_read_text(const char *path);

#endif
