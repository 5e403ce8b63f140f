/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU engine's sweep (gpu_sweep.c): settings x rounds x collectives x sizes, phase A with
 * libtopo-tuner loaded, then phase B without it. Called by topo_cal_run (runner.c) when two
 * ranks or more take part.
 */
#ifndef TOPO_CALIBRATE_GPU_SWEEP_H
#define TOPO_CALIBRATE_GPU_SWEEP_H

#include "run_state.h"

int topo_cal_sweep(run_ctx *c);

#endif
