// SPDX-License-Identifier: Apache-2.0
// The profiler's settings (settings.h): the TOPO_PROFILER_* variables of a generation, read at its
// first init by the core (topo_settings_read) into topo_cfg, which every room reads; the default
// of TOPO_PROFILER_MEASURE_BYTES per NCCL version; the check of TOPO_PROFILER_DIR's length.
#include "settings.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "log.h"
#include "nccl_vocab.h"
#include "timeline.h"
#include "trace_writer.h"

topo_settings topo_cfg;

/* TOPO_PROFILER_EVENTS: the classes asked for (coll and p2p always); an unknown one warns. */
static void parse_events(void) {
  const char *s = topo_env_str(TOPO_ENV_PROFILER_EVENTS);
  topo_cfg.base_mask = ncclProfileColl | ncclProfileP2p;
  topo_cfg.kernelch = topo_cfg.channel_records = topo_cfg.proxy = topo_cfg.phase = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *tok = strtok_r(buf, ", ", &save); tok;
       tok = strtok_r(NULL, ", ", &save)) {
    if (!strcmp(tok, "coll") || !strcmp(tok, "p2p")) continue; /* always on */
    if (!strcmp(tok, "kernel")) topo_cfg.kernelch = 1;
    else if (!strcmp(tok, "channel")) topo_cfg.kernelch = topo_cfg.channel_records = 1;
    else if (!strcmp(tok, "proxy")) topo_cfg.proxy = 1;
    else if (!strcmp(tok, "phase")) topo_cfg.kernelch = topo_cfg.phase = 1;
    else if (!strcmp(tok, "none")) topo_cfg.kernelch = topo_cfg.phase = 0;
    else
      TOPO_WARN(
          "TOPO/Profiler: TOPO_PROFILER_EVENTS: unknown event class '%s' ignored "
          "(known: coll,p2p,kernel,channel,proxy,phase,none)",
          tok);
  }
  if (topo_cfg.proxy) topo_cfg.base_mask |= ncclProfileProxyOp | ncclProfileProxyStep;
}

/* The default of TOPO_PROFILER_MEASURE_BYTES for the NCCL this process runs: the smallest size
 * from which NCCL's own cost of kernel-channel events stays near 1 % of an operation
 * (docs/profiler.md). NCCL 2.28 adds 4-6 us to every small operation (measured on 2 x H200):
 * 16 MiB. NCCL 2.29-2.30 cost 0.1-1.1 % from 128 KB to 4 MB (NVIDIA/nccl#2355): 1 MiB. From
 * NCCL 2.31.2 asking for KernelCh also turns on KernelPhase timestamps and a system fence in the
 * kernels: ~2.3 us more GPU time per operation timed (4.3-13.3 % from 128 KB to 4 MB, 10.5 % at
 * 1 MB, same issue), which is ~1 % of an operation only from about 4 x 16 MiB: 64 MiB, on every
 * 2.31+ release until one ships the fix (NVIDIA/nccl PR #2357, none known up to 2.32.7). An
 * unknown version gets the cautious 16 MiB. */
uint64_t topo_settings_default_measure_bytes(int nccl_version) {
  const uint64_t cautious = 16u << 20, cheap = 1u << 20, phased = 64u << 20;
  if (nccl_version >= 23100) return phased;
  return nccl_version >= 22900 ? cheap : cautious;
}

void topo_settings_read(int abi_version) {
  topo_cfg.nvtx = topo_env_bool(TOPO_ENV_PROFILER_NVTX);
  topo_cfg.cupti = topo_timeline_configure();
  topo_cfg.sample_every = (uint32_t)topo_env_int(TOPO_ENV_PROFILER_SAMPLE);
  /* The NCCL version decides the default; without one, ABI v7 (offered by 2.31.2+ only) says
   * at least 2.31. */
  topo_cfg.nccl_version = topo_nccl_runtime_version();
  topo_cfg.measure_min =
      topo_env_is_set(TOPO_ENV_PROFILER_MEASURE_BYTES)
          ? (uint64_t)topo_env_int(TOPO_ENV_PROFILER_MEASURE_BYTES)
          : topo_settings_default_measure_bytes(topo_cfg.nccl_version ? topo_cfg.nccl_version
                                                : abi_version >= 7    ? 23100
                                                                      : 0);
  topo_cfg.measure_all = topo_cfg.sample_every <= 1 || topo_cfg.measure_min == 0;
  topo_cfg.startup_ns = topo_env_int(TOPO_ENV_PROFILER_STARTUP_MS) * 1000000LL;
  topo_cfg.gpu_timeout_ns = topo_env_int(TOPO_ENV_PROFILER_GPU_TIMEOUT_MS) * 1000000LL;
  topo_cfg.wait_ns = topo_env_int(TOPO_ENV_PROFILER_WAIT_MS) * 1000000LL;
  parse_events();
  if (topo_cfg.measure_all || !topo_cfg.kernelch)
    topo_cfg.startup_ns = 0; /* everything or nothing timed anyway */
}

/* A directory path the writer cannot hold whole is refused, never shortened (settings.h). */
int topo_settings_dir_fits(void) {
  _Static_assert(TOPO_WRITER_DIR_MAX == 255, "TOPO_PROFILER_DIR's limit in env/profiler.def");
  if (!topo_env_too_long(TOPO_ENV_PROFILER_DIR)) return 1;
  static atomic_int dir_warned;
  if (!atomic_exchange(&dir_warned, 1))
    TOPO_WARN(
        "TOPO/Profiler: TOPO_PROFILER_DIR is longer than %d bytes (%s); profiling "
        "disabled, nothing written",
        TOPO_WRITER_DIR_MAX, getenv("TOPO_PROFILER_DIR"));
  return 0;
}
