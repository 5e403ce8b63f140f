// SPDX-License-Identifier: Apache-2.0
// The figures every renderer prints, derived from a rank's (or all ranks') unions: shares, the
// overlap ratio, exposed communication measured where compute is covered and estimated by the
// overlap model elsewhere, with their errors (docs/metrics.md). Pure functions of rp_report.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "report.h"
#include "report_analysis.h"

/* Compute-side figures hold over the covered time only (docs/metrics.md, Coverage). */
void rp_derive(const rp_times *t, rp_derived *d) {
  memset(d, 0, sizeof *d);
  if (t->last > t->first) d->span = t->last - t->first;
  d->comm = t->comm;
  d->comm_est = t->comm_est;
  d->comm_share = rp_ratio(d->comm, d->span);
  d->covered = t->covered < d->span ? t->covered : d->span;
  d->covered_share = rp_ratio(d->covered, d->span);
  d->known = d->covered > 0;
  if (!d->known) return;
  d->compute = t->cov_compute;
  d->overlap = t->cov_overlap;
  d->exposed = t->cov_comm - t->cov_overlap;
  d->memory = t->cov_memory;
  d->busy = t->cov_busy;
  d->idle = d->covered - t->cov_busy;
  d->overlap_ratio = rp_ratio(d->overlap, t->cov_comm);
  d->overlap_defined = t->cov_comm > 0;
  d->exposed_share = rp_ratio(d->exposed, d->covered);
  d->compute_share = rp_ratio(d->compute, d->covered);
  d->idle_share = rp_ratio(d->idle, d->covered);
  d->ranks_known = 1;
}

/* The whole-span exposed figures of rank k into d (after rp_derive). */
static void derive_exposed_all(const rp_rank *k, rp_derived *d) {
  d->model = k->model;
  /* the uncovered comm step by step (each step's own comm and share), the rest outside steps */
  rp_opred p = {0, 0, 0};
  double u = (double)(d->comm > k->t.cov_comm ? d->comm - k->t.cov_comm : 0), in_steps = 0;
  for (size_t i = 0; i < k->nsteps && k->model.ok; i++) {
    const rp_step *st = &k->steps[i];
    double su = (double)(st->comm > st->cov_comm ? st->comm - st->cov_comm : 0);
    if (in_steps + su > u) su = u - in_steps;
    if (!(su > 0)) continue;
    rp_omodel_predict(&k->model, rp_step_uncovered_units(st), su, &p);
    in_steps += su;
  }
  rp_omodel_predict(&k->model, -1, u - in_steps, &p);
  int how =
      rp_exposed_all(&k->model, d->comm, k->t.cov_comm, k->t.cov_comm - k->t.cov_overlap,
                     d->covered, -1, &p, &d->exposed_all, &d->exposed_est, &d->exposed_all_error);
  d->exposed_all_known = how > 0;
  d->exposed_all_estimated = how == 2;
  if (!d->exposed_all_known) return;
  d->ranks_exposed_all = 1;
  d->exposed_all_share = rp_ratio(d->exposed_all, d->span);
  d->overlap_all_ratio = 1 - rp_ratio(d->exposed_all, d->comm);
  d->overlap_all_defined = d->comm > 0;
}

void rp_derive_rank(const rp_rank *k, rp_derived *d) {
  rp_derive(&k->t, d);
  d->comm_error = rp_comm_error_ns(d->comm_est, &k->comm_err);
  derive_exposed_all(k, d);
}

/* Sums over ranks; the compute-side sums only over the ranks where it is known. */
void rp_derive_overall(const rp_report *r, rp_derived *d) {
  memset(d, 0, sizeof *d);
  rp_err err = {0, 0, 0}, ea_err = {0, 0, 0};
  int64_t cov_comm = 0, ea_span = 0, ea_comm = 0;
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    rp_derived x;
    rp_derive(&k->t, &x);
    derive_exposed_all(k, &x);
    d->span = rp_add_sat(d->span, x.span);
    d->comm = rp_add_sat(d->comm, x.comm);
    d->comm_est = rp_add_sat(d->comm_est, x.comm_est);
    rp_err_sum(&err, &k->comm_err);
    if (k->model.ok) rp_omodel_merge(&d->model, &k->model);
    if (x.exposed_all_known) { /* the model's error is shared by the ranks: adds linearly */
      d->ranks_exposed_all++;
      d->exposed_all_estimated |= x.exposed_all_estimated;
      d->exposed_all = rp_add_sat(d->exposed_all, x.exposed_all);
      d->exposed_est = rp_add_sat(d->exposed_est, x.exposed_est);
      ea_err.bias += (double)x.exposed_all_error;
      ea_span = rp_add_sat(ea_span, x.span);
      ea_comm = rp_add_sat(ea_comm, x.comm);
    }
    if (!x.known) continue;
    d->ranks_known++;
    d->covered = rp_add_sat(d->covered, x.covered);
    cov_comm = rp_add_sat(cov_comm, k->t.cov_comm);
    d->compute = rp_add_sat(d->compute, x.compute);
    d->overlap = rp_add_sat(d->overlap, x.overlap);
    d->exposed = rp_add_sat(d->exposed, x.exposed);
    d->idle = rp_add_sat(d->idle, x.idle);
    d->memory = rp_add_sat(d->memory, x.memory);
    d->busy = rp_add_sat(d->busy, x.busy);
  }
  d->comm_error = rp_comm_error_ns(d->comm_est, &err);
  rp_omodel_finish(&d->model, RP_OMODEL_NO_RANK);
  d->exposed_all_known = d->ranks_exposed_all > 0;
  d->overlap_all_defined = d->exposed_all_known && ea_comm > 0;
  d->exposed_all_error = rp_err_ns(&ea_err);
  d->exposed_all_share = rp_ratio(d->exposed_all, ea_span);
  d->overlap_all_ratio = 1 - rp_ratio(d->exposed_all, ea_comm);
  d->comm_share = rp_ratio(d->comm, d->span);
  d->covered_share = rp_ratio(d->covered, d->span);
  d->known = d->ranks_known > 0;
  d->overlap_ratio = rp_ratio(d->overlap, cov_comm);
  d->overlap_defined = d->known && cov_comm > 0;
  d->exposed_share = rp_ratio(d->exposed, d->covered);
  d->compute_share = rp_ratio(d->compute, d->covered);
  d->idle_share = rp_ratio(d->idle, d->covered);
}
