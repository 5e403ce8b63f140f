/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's GPU engine, its top: topo_cal_run() (calibrate.h; called by main.c and the
 * launchers) drives the ranks of this process (every local GPU in one process, as nccl-tests -g;
 * or one GPU per process under the fork launcher or MPI) through the rooms run_state.h lists, in
 * data-flow order, and writes the outputs:
 *   1. devices, the p2p matrix (copy engine, SM copies and ping-pong when gpu_kernels.cu is
 *      built) and the launch / completion floor;
 *   2. phase A, libtopo-tuner loaded (NCCL_TUNER_PLUGIN): a control communicator (NCCL's table,
 *      channel count, tuner load, and in several processes the exchange of ids and samples),
 *      then --rounds rounds of the forced settings in a rotated order, each a fresh communicator
 *      per round (TOPO_TUNER_FORCE set before its init; channel counts through its channel field
 *      in a communicator configured as the default's; only counts above NCCL's own - beyond a
 *      tuner's reach, advice - through ncclConfig_t minCTAs = maxCTAs, as NCCL_MIN/MAX_NCHANNELS
 *      are read once per process), then --bench's tuner rounds on the fitted profile;
 *   3. phase B, NCCL_TUNER_PLUGIN=none: rounds of forced settings through NCCL_ALGO/NCCL_PROTO
 *      when the tuner is not used, interleaved with NCCL's default twice per round (A/A pair).
 *      It comes last because NCCL 2.28 never retries a tuner load that failed (or was refused
 *      with "none") in a process, and keeps a loaded tuner for every new communicator while any
 *      communicator still holds it.
 * Each point: warm-up, then o->iters samples; sizes up to --graph-max are K calls captured in a
 * CUDA graph per sample (GPU time, not launch rate), larger ones eager calls between events. A
 * sample is the minimum over ranks (the last rank to start never waits for the others), reduced
 * across processes with an NCCL AllReduce(min) on the control communicator, so every process
 * holds identical results and takes identical decisions (pruning) - required, or ranks diverge.
 * Failure: CUDA errors and NCCL errors end the run with exit code 1, as does no usable GPU;
 * a collective NCCL refuses in one process marks that point failed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "calibrate.h"
#include "gpu_devices.h"
#include "gpu_p2p.h"
#include "gpu_setup.h"
#include "gpu_sweep.h"
#include "run_state.h"

static int write_outputs(run_ctx *c) {
  const topo_cal_options *o = c->o;
  int rc = 0;
  if (!c->leader) return 0;
  fflush(stderr);
  topo_cal_report_summary(stdout, c->r);
  if (o->bench) topo_cal_report_bench(stdout, c->r, NULL);
  topo_cal_report_advice(stdout, c->r);
  if (topo_cal_write_profile(c->r, o->output, stdout) < 0) rc = -1;
  else if (o->output) topo_cal_progress("profile written to %s", o->output);
  if (o->csv) {
    FILE *f = fopen(o->csv, "w");
    if (!f) {
      topo_cal_warn("cannot write %s: %s", o->csv, strerror(errno));
      rc = -1;
    } else {
      topo_cal_report_csv(f, c->r);
      if (fclose(f) != 0) rc = -1;
    }
  }
  fflush(stdout);
  return rc;
}

/* The line rate the plausibility check uses when neither --line-rate nor the GPU model gave one:
 * the fastest p2p copy, copies reaching ~80 % of the line. */
static void line_rate_from_p2p(topo_cal_results *r) {
  if (r->line_rate_gbs > 0 || !r->p2p_ce_bw) return;
  for (int i = 0; i < r->ndev * r->ndev; i++)
    if (r->p2p_ce_bw[i] > r->line_rate_gbs) r->line_rate_gbs = r->p2p_ce_bw[i];
  r->line_rate_gbs *= 1.25;
}

int topo_cal_run(const topo_cal_options *o, const topo_cal_proc *proc, topo_cal_results *r) {
  run_ctx *c = topo_calloc(1, sizeof *c);
  if (!c) return 1;
  c->o = o;
  c->pp = proc;
  c->r = r;
  c->leader = proc->proc == 0;
  c->t_start = topo_cal_now_us();
  topo_cal_check_user_env(c);
  topo_cal_setup_log(c); /* before the first NCCL call: NCCL reads NCCL_DEBUG* once */
  int rc = topo_cal_devices_init(c);
  if (rc == -2) { /* no usable GPU: nothing to measure, nothing written */
    topo_free(c);
    return 1;
  }
  if (!rc) rc = topo_cal_buffers_init(c);
  if (!rc) topo_cal_nccl_identity(c);
  if (!rc && c->leader) {
    char n[96];
    snprintf(n, sizeof n, "%s", r->dev[0].name);
    topo_cal_progress("%d rank%s on %s (%s), %d node%s%s, NCCL %d", r->nranks,
                      r->nranks == 1 ? "" : "s", r->gpu_model, n, r->nnodes,
                      r->nnodes == 1 ? "" : "s",
                      r->nnodes > 1 ? " (NCCL_HOSTID: socket transport)" : "", r->nccl_version);
  }
  if (!rc) rc = topo_cal_measure_floors(c);
  if (!rc && o->p2p && proc->nprocs == 1 && c->nlocal > 1) rc = topo_cal_measure_p2p(c);
  if (!rc) line_rate_from_p2p(r);
  if (!rc && r->nranks < 2 && c->leader)
    topo_cal_progress(
        "one GPU: measured device copy bandwidth and the launch floor; the p2p matrix and every "
        "collective sweep need at least 2 GPUs (-g 2 or more)");
  if (!rc && r->nranks >= 2 && o->sweep) rc = topo_cal_sweep(c);
  if (c->stop || topo_cal_stop_requested()) {
    r->partial = 1;
    if (c->leader) topo_cal_warn("stopped by a signal: writing what was measured (partial)");
  }
  int out_rc = write_outputs(c);
  int failed = c->failed;
  if (c->log_on) topo_cal_nccl_log_close(&c->log);
  topo_cal_buffers_free(c);
  topo_free(c);
  for (int i = 0; i < r->npoints; i++)
    if (r->points[i].status == TOPO_CAL_FAILED) rc = rc ? rc : -1;
  return rc || out_rc || failed ? 1 : 0;
}
