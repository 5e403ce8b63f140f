/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU engine's communicators (gpu_comms.c): one per local rank for each setting, a control
 * communicator per phase and what NCCL's log says after its init, and the exchange between
 * processes over it. Called by the point timing (gpu_timing.c) and the sweep (gpu_sweep.c).
 */
#ifndef TOPO_CALIBRATE_GPU_COMMS_H
#define TOPO_CALIBRATE_GPU_COMMS_H

#include <stddef.h>

#include "run_state.h"

/* Facts process 0 learns from NCCL's log and shares with the others. */
typedef struct shared_facts {
  topo_cal_allowed allowed;
  int from_nccl;
  int channels;
  int tuner_loaded;
} shared_facts;

/* share_bytes / reduce_min are no-ops in one process. */
int topo_cal_share_bytes(run_ctx *c, void *buf, size_t len);
int topo_cal_reduce_min(run_ctx *c, double *v, int n);
int topo_cal_comm_create(run_ctx *c, ncclComm_t *out_per_rank, size_t stride, int nch,
                         const char *name, const ncclUniqueId *given_id);
void topo_cal_comm_destroy(run_ctx *c, ncclComm_t *first, size_t stride, int abort_it);
int topo_cal_learn_facts(run_ctx *c, shared_facts *facts);
int topo_cal_control_up(run_ctx *c, const ncclUniqueId *id, int first, int expect_tuner);
int topo_cal_pick_first_id(run_ctx *c, ncclUniqueId *id);

#endif
