// SPDX-License-Identifier: Apache-2.0
// After the passes of the analysis (analyze.h): each rank's steps settled on one source and sorted,
// then clipped to the analysis window, the window the timeline plot shows, and the step table
// (steps grouped by number across ranks). Called by analyze.c between pass 1 and pass 2 (steps,
// window) and after pass 2 (step table).
#include <stdint.h>
#include <stdlib.h>

#include "analyze_ctx.h"
#include "report_analysis.h"

/* ---- the steps a rank keeps (report.h, RP_STEPS_KEEP) */

/* By source, group, warm-up before steady, then start: steps come in order, warm-up first, so the
 * next step joins the last row or begins a new group (never repeats a row further back). */
static int cmp_group(const void *a, const void *b) {
  const rp_step *x = a, *y = b;
  if (x->from_kineto != y->from_kineto) return x->from_kineto - y->from_kineto;
  if (x->value != y->value) return x->value < y->value ? -1 : 1;
  if (x->warmup != y->warmup) return y->warmup - x->warmup;
  return (x->start > y->start) - (x->start < y->start);
}

void rp_rank_group_steps(rp_rank *k, int shift) {
  if (shift <= k->step_shift || shift > 63) return;
  k->step_shift = shift;
  for (size_t i = 0; i < k->nsteps; i++) {
    rp_step *st = &k->steps[i];
    st->value = st->value >> shift << shift;
    st->last = st->value + ((1ull << shift) - 1);
  }
  if (k->nsteps) qsort(k->steps, k->nsteps, sizeof *k->steps, cmp_group);
  size_t n = 0;
  for (size_t i = 0; i < k->nsteps; i++) {
    const rp_step *st = &k->steps[i];
    rp_step *g = n ? &k->steps[n - 1] : NULL;
    if (g && g->value == st->value && g->from_kineto == st->from_kineto &&
        g->warmup == st->warmup) {
      if (st->start < g->start) g->start = st->start;
      if (st->stop > g->stop) g->stop = st->stop;
      g->count += st->count;
      continue;
    }
    k->steps[n++] = *st;
  }
  k->nsteps = n;
}

topo_status rp_rank_add_step(rp_rank *k, const rp_step *in, size_t keep) {
  rp_step st = *in;
  st.count = in->count ? in->count : 1;
  st.value = st.value >> k->step_shift << k->step_shift;
  st.last = st.value + ((1ull << k->step_shift) - 1);
  if (k->step_shift && k->nsteps) { /* steps come in order: most join the last group */
    rp_step *g = &k->steps[k->nsteps - 1];
    if (g->value == st.value && g->from_kineto == st.from_kineto && g->warmup == st.warmup) {
      if (st.start < g->start) g->start = st.start;
      if (st.stop > g->stop) g->stop = st.stop;
      g->count += st.count;
      return TOPO_OK;
    }
  }
  if (keep && k->nsteps >= keep) { /* full: groups twice as large, until there is room */
    int shift = k->step_shift + 1;
    do rp_rank_group_steps(k, shift++);
    while (k->nsteps >= keep && k->step_shift < 63);
    return rp_rank_add_step(k, in, keep);
  }
  if (k->nsteps == k->cap_steps) {
    size_t cap = k->cap_steps ? k->cap_steps * 2 : 64;
    if (keep && cap > keep) cap = keep;
    rp_step *v = topo_realloc(k->steps, cap * sizeof *v);
    if (!v) return TOPO_ERR_NOMEM;
    k->steps = v;
    k->cap_steps = cap;
  }
  k->steps[k->nsteps++] = st;
  return TOPO_OK;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

topo_status an_step_summary(rp_report *r) {
  size_t total = 0;
  for (int i = 0; i < r->nranks; i++) total += r->ranks[i].nsteps;
  if (!total) return TOPO_OK;
  uint64_t *vals = topo_malloc(total * sizeof *vals);
  if (!vals) return TOPO_ERR_NOMEM;
  size_t n = 0;
  for (int i = 0; i < r->nranks; i++)
    for (size_t k = 0; k < r->ranks[i].nsteps; k++) vals[n++] = r->ranks[i].steps[k].value;
  qsort(vals, n, sizeof *vals, cmp_u64);
  size_t u = 0;
  for (size_t k = 0; k < n; k++)
    if (!u || vals[u - 1] != vals[k]) vals[u++] = vals[k];
  r->stepsum = topo_calloc(u, sizeof *r->stepsum);
  if (!r->stepsum) {
    topo_free(vals);
    return TOPO_ERR_NOMEM;
  }
  r->nstepsum = u;
  for (size_t k = 0; k < u; k++) r->stepsum[k].value = vals[k];
  for (int i = 0; i < r->nranks; i++)
    for (size_t k = 0; k < r->ranks[i].nsteps; k++) {
      const rp_step *st = &r->ranks[i].steps[k];
      int64_t all, est, err;
      uint64_t *hit = bsearch(&st->value, vals, u, sizeof *vals, cmp_u64);
      rp_stepsum *sum = &r->stepsum[hit - vals];
      sum->ranks++;
      sum->warmup |= st->warmup;
      sum->last = st->last;
      sum->count += st->count;
      sum->span = rp_add_sat(sum->span, st->stop - st->start);
      sum->comm = rp_add_sat(sum->comm, st->comm);
      sum->compute = rp_add_sat(sum->compute, st->compute);
      sum->overlap = rp_add_sat(sum->overlap, st->overlap);
      sum->busy = rp_add_sat(sum->busy, st->busy);
      sum->comm_est = rp_add_sat(sum->comm_est, st->comm_est);
      sum->comm_err.var += st->est_var;
      sum->comm_err.bias += st->est_bias;
      sum->comm_err.sum += st->est_sum;
      if (st->covered > 0) {
        sum->cov_ranks++;
        sum->covered = rp_add_sat(sum->covered, st->covered);
        sum->cov_comm = rp_add_sat(sum->cov_comm, st->cov_comm);
        sum->cov_compute = rp_add_sat(sum->cov_compute, st->cov_compute);
        sum->cov_overlap = rp_add_sat(sum->cov_overlap, st->cov_overlap);
        sum->cov_busy = rp_add_sat(sum->cov_busy, st->cov_busy);
      }
      int how =
          rp_exposed_all(&r->ranks[i].model, st->comm, st->cov_comm, st->cov_comm - st->cov_overlap,
                         st->covered, rp_step_uncovered_units(st), NULL, &all, &est, &err);
      if (how) {
        sum->ea_ranks++;
        sum->ea_estimated |= how == 2;
        sum->exposed_all = rp_add_sat(sum->exposed_all, all);
        sum->exposed_est = rp_add_sat(sum->exposed_est, est);
        sum->exposed_err.bias += (double)err; /* the model's error is shared: adds linearly */
      }
    }
  topo_free(vals);
  return TOPO_OK;
}

/* A rank with both Kineto ProfilerSteps and topo step marks keeps the Kineto ones (they follow
 * the GPU work each step launched); the same step numbered twice would count twice. */
static void steps_one_source(rp_rank *k) {
  int kin = 0, mark = 0;
  for (size_t i = 0; i < k->nsteps; i++) k->steps[i].from_kineto ? kin++ : mark++;
  if (!kin || !mark) return;
  size_t n = 0;
  for (size_t i = 0; i < k->nsteps; i++)
    if (k->steps[i].from_kineto) k->steps[n++] = k->steps[i];
  k->nsteps = n;
}

static int cmp_step(const void *a, const void *b) {
  const rp_step *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

void an_choose_window(rp_report *r) {
  int best = -1;
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].nsteps >= 1 && (best < 0 || r->ranks[i].nsteps > r->ranks[best].nsteps))
      best = i;
  if (best >= 0) {
    const rp_rank *k = &r->ranks[best];
    const rp_step *st = &k->steps[k->nsteps / 2];
    int64_t pad = (st->stop - st->start) / 20;
    r->window_from = st->start - pad;
    r->window_to = st->stop + pad;
    return;
  }
  r->window_from = r->t0;
  r->window_to = r->t_end;
  uint64_t most = 0;
  for (int i = 0; i < r->nsrc; i++) {
    const rp_source *s = &r->src[i];
    uint64_t n = s->timed_colls + s->nccl_kernels + s->compute_kernels + s->memory_kernels;
    if (n > most) most = n;
  }
  if (most > RP_TIMELINE_CAP && r->t_end > r->t0) {
    double frac = (double)RP_TIMELINE_CAP / (double)most * 0.9;
    int64_t w = (int64_t)((double)(r->t_end - r->t0) * frac);
    int64_t mid = r->t0 + (r->t_end - r->t0) / 2;
    r->window_from = mid - w / 2;
    r->window_to = mid + w / 2;
  }
}

void an_steps_clip(rp_report *r) {
  if (!r->window) return;
  for (int i = 0; i < r->nranks; i++) {
    rp_rank *k = &r->ranks[i];
    size_t n = 0;
    for (size_t j = 0; j < k->nsteps; j++) {
      rp_step st = k->steps[j];
      int64_t len = st.stop - st.start;
      if (!clip_window(r, &st.start, &st.stop)) continue;
      if (st.stop - st.start < len && !st.len0) st.len0 = len;
      k->steps[n++] = st;
    }
    k->nsteps = n;
  }
}

void an_steps_settle(rp_report *r) {
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].step_shift > r->step_shift) r->step_shift = r->ranks[i].step_shift;
  for (int i = 0; i < r->nranks; i++) {
    rp_rank *k = &r->ranks[i];
    rp_rank_group_steps(k, r->step_shift); /* the same groups on every rank */
    steps_one_source(k);
    if (k->nsteps) qsort(k->steps, k->nsteps, sizeof *k->steps, cmp_step);
  }
}
