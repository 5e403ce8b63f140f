/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The state of one topo-calibrate run on the GPU, the lowest room of its GPU engine: the ranks
 * this process drives (rank_ctx), the run (run_ctx), the CUDA and NCCL error macros and the small
 * plumbing (run_state.c) every room above uses. The rooms, in the order the data flows through a
 * run (topo_cal_run, runner.c, calls them; none calls back into runner.c):
 *   gpu_setup    before the first NCCL call: the user's NCCL settings, NCCL's log, the tuner
 *                library, which NCCL answered;
 *   gpu_devices  devices, buffers and events, the one-GPU floors; the fork launcher's probe;
 *   gpu_p2p      the GPU-pair matrix (copy engine, SM copies, ping-pong);
 *   gpu_comms    communicators, the control communicator and what NCCL's log says after an
 *                init, the exchange between processes;
 *   gpu_timing   one point: CUDA-graph or eager timing of one collective at one size;
 *   gpu_sweep    settings x rounds x collectives x sizes, phase A (tuner loaded) then phase B.
 * Each includes this header and the headers of the rooms before it that it calls; these are the
 * only files that include <cuda_runtime.h> and <nccl.h>. Everything runs on the thread that
 * called topo_cal_run. Functions return 0 or -1 after a warning, unless they say otherwise.
 */
#ifndef TOPO_CALIBRATE_RUN_STATE_H
#define TOPO_CALIBRATE_RUN_STATE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "calibrate.h"

#define TOPO_CAL_MAX_LOCAL   64
#define TOPO_CAL_STAGE_BYTES 65536

typedef struct rank_ctx {
  int rank, dev;
  cudaStream_t stream;
  void *send, *recv;
  ncclComm_t comm;      /* the current setting's communicator */
  ncclComm_t control;   /* control communicator (NULL when none) */
  void *stage;          /* device staging for id broadcasts and sample reductions */
  int *flag;            /* ping-pong flag (device) */
  long long *pp_result; /* ping-pong result (device) */
  cudaEvent_t *ev0, *ev1;
} rank_ctx;

typedef struct run_ctx {
  const topo_cal_options *o;
  const topo_cal_proc *pp;
  topo_cal_results *r;
  int nlocal;
  rank_ctx rk[TOPO_CAL_MAX_LOCAL];
  size_t buf_bytes;
  int nevents;
  double *samples; /* nevents + 2 */
  topo_cal_nccl_log log;
  int log_on; /* this process reads NCCL's log (process 0 with --verify) */
  char log_path[768];
  char workdir[TOPO_CAL_WORKDIR_MAX + 1];
  char tuner_path[PATH_MAX]; /* realpath() writes up to PATH_MAX bytes */
  int use_tuner_force;
  int tuner_ok; /* tuner library exists (and, when verifiable, loaded) */
  int leader;   /* this process prints */
  int failed;
  uint64_t sizes[TOPO_CAL_MAX_SIZES];
  int nsizes;
  int unit, nunits; /* progress: (setting, collective) pairs */
  int stop;         /* every process agreed to stop (signal), set by topo_cal_measure_point */
  double t_start;   /* run start, us */
  double unit_us;   /* time spent on (setting, collective) pairs so far, for the budget */
  int units_done;
  int round, pair; /* round of the current setting run; A/A communicator of the default */
} run_ctx;

#define CUDA_TRY(call)                                                                   \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      topo_cal_warn("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return -1;                                                                         \
    }                                                                                    \
  } while (0)

#define NCCL_TRY(call)                                           \
  do {                                                           \
    ncclResult_t n_ = (call);                                    \
    if (n_ != ncclSuccess) return topo_cal_nccl_fail(#call, n_); \
  } while (0)

/* The per-rank communicator slots: the current setting's, the control one. */
#define COMMS(c)    (&(c)->rk[0].comm), sizeof(rank_ctx)
#define CONTROLS(c) (&(c)->rk[0].control), sizeof(rank_ctx)

/* run_state.c: small plumbing. */
void topo_cal_copy_str(char *dst, size_t len, const char *src);    /* bounded, always terminated */
double topo_cal_now_us(void);                                      /* CLOCK_MONOTONIC */
int topo_cal_nccl_fail(const char *what, ncclResult_t res);        /* warns, returns -1 */
int topo_cal_sync_all(run_ctx *c);                                 /* every local stream */
int topo_cal_elapsed_us(cudaEvent_t a, cudaEvent_t b, double *us); /* between two events */
double topo_cal_median(double *v, int n);                          /* 0 when none */
void topo_cal_set_env(const char *name, const char *value);        /* NULL unsets */

#endif
