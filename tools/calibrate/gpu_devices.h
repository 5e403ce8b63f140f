/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU engine's devices (gpu_devices.c): which GPUs this process drives, their buffers,
 * streams and events, and the one-GPU floors. Called by topo_cal_run (runner.c); the fork
 * launcher's device probe is declared in calibrate.h.
 */
#ifndef TOPO_CALIBRATE_GPU_DEVICES_H
#define TOPO_CALIBRATE_GPU_DEVICES_H

#include "run_state.h"

/* -2 when no GPU is usable (the run ends at once: exit code 1, no outputs). */
int topo_cal_devices_init(run_ctx *c);
int topo_cal_buffers_init(run_ctx *c);
void topo_cal_buffers_free(run_ctx *c);
int topo_cal_measure_floors(run_ctx *c);

#endif
