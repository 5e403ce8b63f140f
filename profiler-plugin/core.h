/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one core behind every ncclProfiler_vN adapter (profiler_abi.c). The adapters translate
 * each version's descriptor into a topo_prof_descr and call these functions; the core owns the
 * event pools, the per-communicator contexts, the sampling of kernel-channel events through the
 * activation mask, NVTX ranges and the hand-off of finished records to the trace writer.
 *
 * Threads: init/finalize on communicator init/destroy threads (serialised by a mutex inside,
 * which finalize does not hold while it waits for the trace writer, at most
 * TOPO_PROFILER_WAIT_MS);
 * start/stop/state on any thread, concurrently, lock-free, no allocation, no I/O.
 * Failure: nothing here ever fails NCCL; a full pool returns a NULL handle and counts a drop.
 */
#ifndef TOPO_PROFILER_CORE_H
#define TOPO_PROFILER_CORE_H

#include <stdint.h>

#include "event.h"
#include "nccl/nccl_common.h"

/* init for every version. Always returns ncclSuccess; *ctx is NULL when profiling is off for
 * this communicator (disabled, or an init error, which warns once). Writes *mask only on
 * success, always the same value for the same configuration. The context is a handle, not a
 * pointer: start and finalize ignore one that is finalized, of an earlier generation (before
 * the last finalize) or not ours, and nothing it names is ever freed (contexts.h). */
ncclResult_t topo_prof_init(void **ctx, int *mask, int abi_version, uint64_t comm_hash,
                            const char *comm_name, int nnodes, int nranks, int rank,
                            ncclDebugLogger_t logger);
ncclResult_t topo_prof_start(void *ctx, void **handle, const topo_prof_descr *d);
ncclResult_t topo_prof_stop(void *handle);
ncclResult_t topo_prof_state(void *handle, int state_kind, uint64_t value);
ncclResult_t topo_prof_finalize(void *ctx);
#endif
