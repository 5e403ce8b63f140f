/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's communicators: one per local rank for each setting, a control communicator
 * per phase (NCCL's algorithm/protocol table, its channel count and whether it loaded the tuner,
 * read from NCCL's log after its init), and the exchange between processes over the control
 * communicator (an NCCL broadcast from process 0, an AllReduce(min) of samples), so every
 * process holds identical results and takes identical decisions. Called by the point timing
 * (gpu_timing.c) and the sweep (gpu_sweep.c); the run's state is run_state.h.
 */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "calibrate.h"
#include "gpu_comms.h"
#include "gpu_setup.h"
#include "run_state.h"

int topo_cal_share_bytes(run_ctx *c, void *buf, size_t len) {
  if (c->pp->nprocs <= 1) return 0;
  rank_ctx *k = &c->rk[0];
  if (!k->control || len > TOPO_CAL_STAGE_BYTES) return -1;
  CUDA_TRY(cudaSetDevice(k->dev));
  CUDA_TRY(cudaMemcpy(k->stage, buf, len, cudaMemcpyHostToDevice));
  NCCL_TRY(ncclBroadcast(k->stage, k->stage, len, ncclUint8, 0, k->control, k->stream));
  CUDA_TRY(cudaStreamSynchronize(k->stream));
  CUDA_TRY(cudaMemcpy(buf, k->stage, len, cudaMemcpyDeviceToHost));
  return 0;
}

int topo_cal_reduce_min(run_ctx *c, double *v, int n) {
  if (c->pp->nprocs <= 1) return 0;
  rank_ctx *k = &c->rk[0];
  size_t len = (size_t)n * sizeof(double);
  if (!k->control || len > TOPO_CAL_STAGE_BYTES) return -1;
  CUDA_TRY(cudaSetDevice(k->dev));
  CUDA_TRY(cudaMemcpy(k->stage, v, len, cudaMemcpyHostToDevice));
  NCCL_TRY(
      ncclAllReduce(k->stage, k->stage, (size_t)n, ncclDouble, ncclMin, k->control, k->stream));
  CUDA_TRY(cudaStreamSynchronize(k->stream));
  CUDA_TRY(cudaMemcpy(v, k->stage, len, cudaMemcpyDeviceToHost));
  return 0;
}

/* Create one communicator per local rank; nch > 0 pins NCCL's channel count to nch. */
int topo_cal_comm_create(run_ctx *c, ncclComm_t *out_per_rank, size_t stride, int nch,
                         const char *name, const ncclUniqueId *given_id) {
  ncclUniqueId id;
  if (given_id) {
    id = *given_id;
  } else {
    if (c->pp->proc == 0) NCCL_TRY(ncclGetUniqueId(&id));
    if (topo_cal_share_bytes(c, &id, sizeof id)) return -1;
  }
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  if (nch > 0) cfg.minCTAs = cfg.maxCTAs = nch;
  cfg.commName = name;
  if (c->nlocal > 1) NCCL_TRY(ncclGroupStart());
  for (int i = 0; i < c->nlocal; i++) {
    ncclComm_t *slot = (ncclComm_t *)((char *)out_per_rank + i * stride);
    CUDA_TRY(cudaSetDevice(c->rk[i].dev));
    ncclResult_t res = ncclCommInitRankConfig(slot, c->r->nranks, id, c->rk[i].rank, &cfg);
    if (res != ncclSuccess) {
      if (c->nlocal > 1) ncclGroupEnd();
      return topo_cal_nccl_fail("ncclCommInitRankConfig", res);
    }
  }
  if (c->nlocal > 1) NCCL_TRY(ncclGroupEnd());
  return 0;
}

void topo_cal_comm_destroy(run_ctx *c, ncclComm_t *first, size_t stride, int abort_it) {
  for (int i = 0; i < c->nlocal; i++) {
    ncclComm_t *slot = (ncclComm_t *)((char *)first + i * stride);
    if (!*slot) continue;
    cudaSetDevice(c->rk[i].dev);
    ncclResult_t res = abort_it ? ncclCommAbort(*slot) : ncclCommDestroy(*slot);
    if (res != ncclSuccess) topo_cal_nccl_fail(abort_it ? "ncclCommAbort" : "ncclCommDestroy", res);
    *slot = NULL;
  }
}

/* After a communicator's init: what NCCL's log says (process 0), shared with every process. */
int topo_cal_learn_facts(run_ctx *c, shared_facts *facts) {
  memset(facts, 0, sizeof *facts);
  facts->tuner_loaded = -1;
  if (c->log_on) {
    topo_cal_nccl_log_poll(&c->log);
    if (c->log.table_seen >= NCCL_NUM_FUNCTIONS) {
      facts->allowed = c->log.allowed;
      facts->from_nccl = 1;
    }
    facts->channels = c->log.coll_channels;
    facts->tuner_loaded = c->log.tuner_loaded;
    if (c->log.tuner_loaded > 0) {
      char t[128];
      snprintf(t, sizeof t, "%s (v%d)", c->log.tuner_name, c->log.tuner_version);
      topo_cal_copy_str(c->r->tuner_name, sizeof c->r->tuner_name, t);
    }
  }
  return topo_cal_share_bytes(c, facts, sizeof *facts);
}

/* What process 0 measured alone that every process must agree on (the profile the tuner reads in
 * --bench is fitted in every process and must come out byte-identical). */
typedef struct shared_machine {
  double floor_graph, floor_eager, floor_sync, local_ce, local_sm, line_rate;
  int multicast;
  char model[32];
} shared_machine;

static int share_machine(run_ctx *c) {
  if (c->pp->nprocs <= 1) return 0;
  topo_cal_results *r = c->r;
  shared_machine m;
  memset(&m, 0, sizeof m);
  m.floor_graph = r->floor_graph_us, m.floor_eager = r->floor_eager_us,
  m.floor_sync = r->floor_sync_us;
  m.local_ce = r->local_ce_bw, m.local_sm = r->local_sm_bw, m.line_rate = r->line_rate_gbs;
  m.multicast = r->dev[0].multicast;
  snprintf(m.model, sizeof m.model, "%s", r->gpu_model);
  if (topo_cal_share_bytes(c, &m, sizeof m)) return -1;
  r->floor_graph_us = m.floor_graph, r->floor_eager_us = m.floor_eager,
  r->floor_sync_us = m.floor_sync;
  r->local_ce_bw = m.local_ce, r->local_sm_bw = m.local_sm, r->line_rate_gbs = m.line_rate;
  r->dev[0].multicast = m.multicast;
  snprintf(r->gpu_model, sizeof r->gpu_model, "%s", m.model);
  return 0;
}

/* Control communicator + facts; picks up the allowed table, the channel count, the tuner state.
 * expect_tuner: NCCL_TUNER_PLUGIN names our tuner and this is the first communicator to load it
 * (NCCL logs "TUNER/Plugin: Using" only then), so its absence from the log means not loaded. */
int topo_cal_control_up(run_ctx *c, const ncclUniqueId *id, int first, int expect_tuner) {
  if (c->log_on) {
    topo_cal_nccl_log_poll(&c->log);
    topo_cal_nccl_log_reset(&c->log);
  }
  if (topo_cal_comm_create(c, CONTROLS(c), 0, "topo-calibrate control", id)) return -1;
  topo_cal_open_log(c);
  shared_facts f;
  if (c->log_on && expect_tuner) {
    topo_cal_nccl_log_poll(&c->log);
    if (c->log.tuner_loaded != 1) c->log.tuner_loaded = 0;
  }
  if (topo_cal_learn_facts(c, &f)) return -1;
  if (first) {
    if (share_machine(c)) return -1;
    if (f.from_nccl) {
      c->r->allowed = f.allowed;
      c->r->allowed_from_nccl = 1;
    } else {
      topo_cal_rules_allowed(c->r->nranks, c->r->nnodes, &c->r->allowed);
    }
    if (f.channels > 0) c->r->nccl_channels = f.channels;
    c->r->tuner_loaded = f.tuner_loaded;
  }
  return 0;
}

int topo_cal_pick_first_id(run_ctx *c, ncclUniqueId *id) {
  if (c->pp->nprocs <= 1) return ncclGetUniqueId(id) == ncclSuccess ? 0 : -1;
  if (c->pp->proc == 0 && ncclGetUniqueId(id) != ncclSuccess) return -1;
  return c->pp->share_id && c->pp->share_id(c->pp->share_ctx, id, sizeof *id) == 0 ? 0 : -1;
}
