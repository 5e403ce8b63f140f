/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU engine's setup (gpu_setup.c), before the first NCCL call and around it: the user's NCCL
 * settings that would distort a calibration, NCCL's INFO log (NCCL_DEBUG_FILE, read back to
 * verify what ran), the libtopo-tuner.so that forces each setting, and which NCCL answered.
 * Called by topo_cal_run (runner.c), the communicators (gpu_comms.c) and the sweep (gpu_sweep.c).
 */
#ifndef TOPO_CALIBRATE_GPU_SETUP_H
#define TOPO_CALIBRATE_GPU_SETUP_H

#include "run_state.h"

void topo_cal_check_user_env(run_ctx *c);
void topo_cal_setup_log(run_ctx *c); /* before the first NCCL call: NCCL reads NCCL_DEBUG* once */
int topo_cal_open_log(run_ctx *c);
void topo_cal_find_tuner(run_ctx *c); /* c->tuner_path, "" when none */
void topo_cal_nccl_identity(run_ctx *c);

#endif
