/* SPDX-License-Identifier: Apache-2.0 */
/* Every profiler ABI version we export (v1..v7), for the adapters and the plugin host. */
#ifndef TOPO_NCCL_PROFILER_H
#define TOPO_NCCL_PROFILER_H
#include "profiler_v1.h"
#include "profiler_v2.h"
#include "profiler_v3.h"
#include "profiler_v4.h"
#include "profiler_v5.h"
#include "profiler_v6.h"
#include "profiler_v7.h"
#endif
