/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's GPU engine, shared by its files (the only ones that include <cuda_runtime.h>
 * and <nccl.h>), in the order the data flows through a run (topo_cal_run, runner.c):
 *   setup.c    before the first NCCL call: the user's NCCL settings, NCCL's log, the tuner
 *              library, which NCCL answered;
 *   devices.c  devices, buffers and events, the one-GPU floors; the fork launcher's probe;
 *   p2p.c      the GPU-pair matrix (copy engine, SM copies, ping-pong);
 *   comms.c    communicators, the control communicator and what NCCL's log says after an init,
 *              the exchange between processes;
 *   timing.c   one point: CUDA-graph or eager timing of one collective at one size;
 *   sweep.c    settings x rounds x collectives x sizes, phase A (tuner loaded) then phase B.
 * Everything here runs on the thread that called topo_cal_run. Functions return 0 or -1 after a
 * warning, unless they say otherwise.
 */
#ifndef TOPO_CALIBRATE_RUNNER_H
#define TOPO_CALIBRATE_RUNNER_H

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
  char workdir[512];
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

/* Facts process 0 learns from NCCL's log and shares with the others. */
typedef struct shared_facts {
  topo_cal_allowed allowed;
  int from_nccl;
  int channels;
  int tuner_loaded;
} shared_facts;

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

/* runner.c: small plumbing. */
void topo_cal_copy_str(char *dst, size_t len, const char *src);    /* bounded, always terminated */
double topo_cal_now_us(void);                                      /* CLOCK_MONOTONIC */
int topo_cal_nccl_fail(const char *what, ncclResult_t res);        /* warns, returns -1 */
int topo_cal_sync_all(run_ctx *c);                                 /* every local stream */
int topo_cal_elapsed_us(cudaEvent_t a, cudaEvent_t b, double *us); /* between two events */
double topo_cal_median(double *v, int n);                          /* 0 when none */
void topo_cal_set_env(const char *name, const char *value);        /* NULL unsets */

/* setup.c */
void topo_cal_check_user_env(run_ctx *c);
void topo_cal_setup_log(run_ctx *c); /* before the first NCCL call: NCCL reads NCCL_DEBUG* once */
int topo_cal_open_log(run_ctx *c);
void topo_cal_find_tuner(run_ctx *c); /* c->tuner_path, "" when none */
void topo_cal_nccl_identity(run_ctx *c);

/* devices.c. topo_cal_devices_init: -2 when no GPU is usable (exit code 2). */
int topo_cal_devices_init(run_ctx *c);
int topo_cal_buffers_init(run_ctx *c);
void topo_cal_buffers_free(run_ctx *c);
int topo_cal_measure_floors(run_ctx *c);

/* p2p.c */
int topo_cal_measure_p2p(run_ctx *c);

/* comms.c. share_bytes / reduce_min are no-ops in one process. */
int topo_cal_share_bytes(run_ctx *c, void *buf, size_t len);
int topo_cal_reduce_min(run_ctx *c, double *v, int n);
int topo_cal_comm_create(run_ctx *c, ncclComm_t *out_per_rank, size_t stride, int nch,
                         const char *name, const ncclUniqueId *given_id);
void topo_cal_comm_destroy(run_ctx *c, ncclComm_t *first, size_t stride, int abort_it);
int topo_cal_learn_facts(run_ctx *c, shared_facts *facts);
int topo_cal_control_up(run_ctx *c, const ncclUniqueId *id, int first, int expect_tuner);
int topo_cal_pick_first_id(run_ctx *c, ncclUniqueId *id);

/* timing.c: see the contract above its definition. */
int topo_cal_measure_point(run_ctx *c, const topo_cal_setting *s, int coll, uint64_t planned,
                           topo_cal_point *p);

/* sweep.c */
int topo_cal_sweep(run_ctx *c);

#endif
