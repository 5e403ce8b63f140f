/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profiler's settings (settings.c): the TOPO_PROFILER_* variables a generation runs with, read
 * at its first init, and the event mask they ask NCCL for. The core reads them in and may turn
 * NVTX or CUPTI off when their start fails; every room reads them. Nothing here calls another
 * room but the CUPTI timeline's configuration (its mode is its own to parse).
 */
#ifndef TOPO_PROFILER_SETTINGS_H
#define TOPO_PROFILER_SETTINGS_H

#include <stdint.h>

#include "export.h"
#include "nccl/profiler_common.h"

typedef struct topo_settings {
  int64_t wait_ns; /* TOPO_PROFILER_WAIT_MS: the longest finalize or exit waits for the writer */
  /* TOPO_PROFILER_EVENTS */
  int base_mask;                               /* the event mask without KernelCh */
  int kernelch, channel_records, proxy, phase; /* the classes asked for */
  int nvtx;         /* TOPO_PROFILER_NVTX, and (after the core's start) a tool is attached */
  int cupti;        /* the CUPTI timeline's mode is not off (and its stream was had) */
  int nccl_version; /* NCCL_VERSION_CODE NCCL reported at the generation's first init; 0 unknown */
  uint32_t sample_every;  /* TOPO_PROFILER_SAMPLE */
  uint64_t measure_min;   /* TOPO_PROFILER_MEASURE_BYTES, or its default for the NCCL version */
  int measure_all;        /* every operation gets kernel channels: no prediction needed */
  int64_t startup_ns;     /* TOPO_PROFILER_STARTUP_MS; 0 when start-up is not measured whole */
  int64_t gpu_timeout_ns; /* TOPO_PROFILER_GPU_TIMEOUT_MS */
} topo_settings;

/* The generation's settings. Written by topo_settings_read (and the core's start) at the first
 * init of a generation, under the core's mutex, before any callback can reach the generation;
 * read-only from then on, on any thread. */
extern topo_settings topo_cfg TOPO_HIDDEN;

/* Read the settings for a generation whose first communicator speaks `abi_version` (a bad value
 * warns and keeps its default). The core's first init, under its mutex. */
void topo_settings_read(int abi_version);

/* TOPO_PROFILER_MEASURE_BYTES's default for the NCCL version code `nccl_version` (0: unknown):
 * operations of at least this many bytes all get kernel-channel events. Pure. */
uint64_t topo_settings_default_measure_bytes(int nccl_version);

/* Whether TOPO_PROFILER_DIR fits the writer whole; a longer one is refused, never shortened (a
 * shortened path names another directory): one warning per process, 0 answered. Any init. */
int topo_settings_dir_fits(void);

/* The event mask asked for at `abi_version` with every operation timed. Any thread, pure over
 * topo_cfg. */
static inline int topo_settings_mask_for(int abi_version) {
  int m = topo_cfg.base_mask ? topo_cfg.base_mask : (ncclProfileColl | ncclProfileP2p);
  /* Kernel-channel events give GPU timers from v4 (2.27); v3 has no pTimer: not worth NCCL's
   * cost. */
  if (abi_version >= 4 && topo_cfg.kernelch) m |= ncclProfileKernelCh;
  /* Kernel phases (v7, symmetric kernels only) only when the `phase` class asks: NCCL then has
   * every kernel it times write phase timestamps behind a system fence. */
  if (abi_version >= 7 && topo_cfg.phase && (m & ncclProfileKernelCh)) m |= ncclProfileKernelPhase;
  return m;
}
#endif
