/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU engine's GPU-pair matrix (gpu_p2p.c): copy-engine and SM-copy bandwidth and latency per
 * ordered pair, a ping-pong per unordered pair, into the run's results. Called by topo_cal_run
 * (runner.c) when one process drives two GPUs or more.
 */
#ifndef TOPO_CALIBRATE_GPU_P2P_H
#define TOPO_CALIBRATE_GPU_P2P_H

#include "run_state.h"

int topo_cal_measure_p2p(run_ctx *c);

#endif
