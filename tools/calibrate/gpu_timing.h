/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU engine's timing of one point (gpu_timing.c): one collective at one size under one
 * setting, timed in CUDA graphs or eagerly, its samples reduced across ranks and processes.
 * Called by the sweep (gpu_sweep.c).
 */
#ifndef TOPO_CALIBRATE_GPU_TIMING_H
#define TOPO_CALIBRATE_GPU_TIMING_H

#include <stdint.h>

#include "calibrate.h"
#include "run_state.h"

/* See the contract above its definition. */
int topo_cal_measure_point(run_ctx *c, const topo_cal_setting *s, int coll, uint64_t planned,
                           topo_cal_point *p);

#endif
