/* SPDX-License-Identifier: Apache-2.0 */
/* Every tuner ABI version we export (v2..v7), for the adapters and the plugin host. */
#ifndef TOPO_NCCL_TUNER_H
#define TOPO_NCCL_TUNER_H
#include "tuner_v2.h"
#include "tuner_v3.h"
#include "tuner_v4.h"
#include "tuner_v5.h"
#include "tuner_v6.h"
#include "tuner_v7.h"
#endif
