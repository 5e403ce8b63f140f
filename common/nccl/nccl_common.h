/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by every NCCL plugin ABI version: result codes, the logger NCCL hands to init,
 * and (nccl_indices.h) collective and algorithm/protocol indices. Our own declarations, written
 * from the documented layout in shared/reference/nccl-plugin-abi.md (section 1.1); never include
 * NCCL's headers here.
 * The plugins must not see <nccl.h>: NCCL's public header redefines ncclResult_t.
 */
#ifndef TOPO_NCCL_COMMON_H
#define TOPO_NCCL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_indices.h"

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;

typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5,
} ncclDebugLogLevel;

typedef enum {
  NCCL_INIT = 0x1,
  NCCL_COLL = 0x2,
  NCCL_P2P = 0x4,
  NCCL_SHM = 0x8,
  NCCL_NET = 0x10,
  NCCL_GRAPH = 0x20,
  NCCL_TUNING = 0x40,
  NCCL_ENV = 0x80,
  NCCL_ALLOC = 0x100,
  NCCL_CALL = 0x200,
  NCCL_PROXY = 0x400,
  NCCL_NVLS = 0x800,
  NCCL_BOOTSTRAP = 0x1000,
  NCCL_REG = 0x2000,
  NCCL_PROFILE = 0x4000,
  NCCL_RAS = 0x8000,
  NCCL_ALL = ~0,
} ncclDebugLogSubSys;

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file,
                                  int line, const char *fmt, ...);

/* A cost-table entry NCCL will never pick. NCCL 2.31+ names it NCCL_TUNING_IGNORE and keeps the
 * older name as an alias; same value. */
#define NCCL_TUNING_IGNORE     -1.0f
#define NCCL_ALGO_PROTO_IGNORE NCCL_TUNING_IGNORE

#define NCCL_HW_NVLINK    0
#define NCCL_HW_PCI       1
#define NCCL_HW_NET       2
#define NCCL_NUM_HW_LINKS 3

#define NCCL_VOLTA_COMPCAP_IDX     0
#define NCCL_AMPERE_COMPCAP_IDX    1
#define NCCL_HOPPER_COMPCAP_IDX    2
#define NCCL_BLACKWELL_COMPCAP_IDX 3
#define NCCL_NUM_COMPCAPS          4 /* rows of the v5/v6 constants tables */
#define NCCL_RUBIN_COMPCAP_IDX     4 /* tuner v7 (NCCL 2.32.6+) adds this fifth row */
#define NCCL_NUM_COMPCAPS_V7       5

#define NCCL_TUNING_SCALE_1NODE  0
#define NCCL_TUNING_SCALE_2NODES 1
#define NCCL_TUNING_SCALE_4NODES 2
#define NCCL_NUM_TUNING_SCALES   3

#endif
