// SPDX-License-Identifier: Apache-2.0
// Pass 2 of the analysis (analyze.h): one rank at a time, its sources read again merged by time
// through the interval sweep (sweep.c). Every untimed collective is placed with its estimate
// (estimate.c) on its stream, NCCL kernel records replace collective records inside the coverage
// windows, Kineto events feed the kernel-level analyses (kernels.c), the rank's overlap model is
// learned from its chunks (the whole input: the sweep clips the figures to the window itself),
// and each rank's times add up to the overall ones. Called by analyze.c.
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analyze_ctx.h"
#include "kernel_stats.h"
#include "report_analysis.h"
#include "report_inputs.h"

static int stream_slot(ctx *c, uint32_t stream) {
  uint32_t at;
  if (rp_map_find(&c->stream_of, stream, &at)) return (int)at;
  if (c->nstreams == c->cap_streams) {
    size_t cap = c->cap_streams ? c->cap_streams * 2 : 16;
    uint32_t *id = topo_realloc(c->stream_id, cap * sizeof *id);
    if (id) c->stream_id = id;
    int64_t *end = id ? topo_realloc(c->stream_end, cap * sizeof *end) : NULL;
    if (!end) {
      c->st = TOPO_ERR_NOMEM;
      return -1;
    }
    c->stream_end = end;
    c->cap_streams = cap;
  }
  if (!rp_map_add(&c->stream_of, stream, (uint32_t)c->nstreams)) {
    c->st = TOPO_ERR_NOMEM;
    return -1;
  }
  c->stream_id[c->nstreams] = stream;
  c->stream_end[c->nstreams] = INT64_MIN;
  return (int)c->nstreams++;
}

static rp_step *step_at(rp_rank *k, int64_t t) {
  size_t lo = 0, hi = k->nsteps;
  while (lo < hi) { /* first step starting after t */
    size_t m = (lo + hi) / 2;
    if (k->steps[m].start <= t) lo = m + 1;
    else hi = m;
  }
  return lo && t < k->steps[lo - 1].stop ? &k->steps[lo - 1] : NULL;
}

/* The sweep clips to the rank's figure window (rp_sweep_window) and keeps what lies outside it
 * for the model's chunks only. */
static void sweep_add(ctx *c, const rp_interval *iv) {
  if (rp_sweep_add(c->sweep, iv) != TOPO_OK) c->st = TOPO_ERR_NOMEM;
}

/* An untimed collective that counts outside the window (its CPU start lies outside): its
 * estimated interval, moved out of the window, enters the sweep for the model's chunks only, so
 * that they see what they would see without a window. */
static void model_only(ctx *c, rp_interval iv) {
  if (iv.start >= c->sweep_from && iv.start < c->sweep_to) return; /* placed inside: not counted */
  if (iv.start < c->sweep_from && iv.stop > c->sweep_from) iv.stop = c->sweep_from;
  sweep_add(c, &iv);
}

/* Pass 2: a collective of the rank being swept. A timed one moves its stream's end; an untimed
 * one gets its estimate (counted per rank, row and level when it counts in the window) and, where
 * the rank's comm comes from collective records there, an interval at max(CPU enqueue, end of the
 * stream's previous comm). Outside the window it is placed too, so that the stream's end, and
 * with it every placement inside the window, is what it is without a window. */
static void p2_coll(void *vc, int src, const rp_coll *co) {
  ctx *c = vc;
  rp_report *r = c->r;
  rp_rank *k = &r->ranks[c->sweep_rank];
  if (r->src[src].kind !=
      RP_SRC_TRACE) { /* Kineto NCCL kernels: the table, when no topo trace has it */
    if (c->bin_colls || !in_rank_window(r, c->sweep_rank, co->gpu_start)) return;
    r->colls_from_kineto = 1;
    if (co->p2p) {
      r->p2p++;
    } else {
      r->colls++;
      r->timed_colls++;
      k->colls++;
      k->timed_colls++;
      r->src[src].colls++;
      r->src[src].timed_colls++;
    }
    an_table_add(c, co);
    return;
  }
  int slot = stream_slot(c, co->stream);
  if (slot < 0) return;
  if (co->timed) {
    if (co->gpu_stop > c->stream_end[slot]) c->stream_end[slot] = co->gpu_stop;
    return;
  }
  int inside = in_rank_window(r, c->sweep_rank, co->cpu_start);
  rp_est_key key = an_est_key(co);
  rp_estimate e;
  int level = rp_est_get(c->est, &key, rp_coll_size(key.func, co->bytes, co->nranks), &e);
  if (!inside) { /* placed (the stream's end moves as without a window), counted nowhere */
    if (level == RP_EST_UNKNOWN) return;
    rp_interval iv = {co->cpu_start,    0, co->stream, RP_COMM, (uint8_t)key.func,
                      RP_FROM_ESTIMATE, 0};
    if (c->stream_end[slot] > iv.start) iv.start = c->stream_end[slot];
    iv.stop = rp_add_sat(iv.start, e.dur);
    c->stream_end[slot] = iv.stop;
    if (c->sweep_model && !(k->comm_from_kernels && an_in_cover(k, iv.start))) model_only(c, iv);
    return;
  }
  k->est[level]++;
  r->est[level]++;
  k->lost += (uint64_t)co->asked;
  r->lost += (uint64_t)co->asked;
  rp_row *w = an_row_get(c, key.func, co->nranks, key.bucket, co->user_tag);
  if (!w) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  w->lost += (uint64_t)co->asked;
  if (level == RP_EST_UNKNOWN) {
    w->unknown++;
    return;
  }
  w->estimated++;
  w->est_fallback += level != RP_EST_KEY;
  w->est_scaled += level == RP_EST_SCALED;
  w->est_sum = rp_add_sat(w->est_sum, e.dur);
  rp_err_add(&w->est_err, &e);
  rp_interval iv = {co->cpu_start, 0, co->stream, RP_COMM, (uint8_t)key.func, RP_FROM_ESTIMATE, 0};
  if (c->stream_end[slot] > iv.start) iv.start = c->stream_end[slot];
  iv.stop = rp_add_sat(iv.start, e.dur);
  c->stream_end[slot] = iv.stop;
  if (k->comm_from_kernels && an_in_cover(k, iv.start)) return; /* kernel records hold it */
  rp_err_add(&k->comm_err, &e);
  rp_step *st = step_at(k, iv.start);
  if (st) {
    st->est_var += (double)e.err * (double)e.err;
    st->est_bias += (double)e.bias;
    st->est_sum += (double)e.dur;
  }
  sweep_add(c, &iv);
}

/* Pass 2: a Kineto event of the rank being swept, for the kernel-level analyses; events that
 * start outside the window are left out. */
static void p2_kevent(void *vc, int src, const rp_kevent *e) {
  ctx *c = vc;
  (void)src;
  if (!in_window(c->r, e->start)) return;
  /* GPU work outside the rank's step window is not counted; the calls stay, for the look-ups */
  if (e->stream >= 0 && !in_rank_window(c->r, c->sweep_rank, e->start)) return;
  rp_gpu_event(c->r->ranks[c->sweep_rank].gpu, e);
}

/* ---- pass 2 sink */
static void p2_interval(void *vc, int src, const rp_interval *iv) {
  ctx *c = vc;
  const rp_rank *k = &c->r->ranks[c->sweep_rank];
  (void)src;
  /* A rank with NCCL kernel records takes its comm from them inside its coverage windows and
   * from collective records outside them. */
  if (iv->cls == RP_COMM && iv->origin == RP_FROM_COLL && k->comm_from_kernels &&
      an_in_cover(k, iv->start))
    return;
  if (iv->cls == RP_COMM && iv->origin == RP_FROM_KERNEL && !k->comm_from_kernels) return;
  sweep_add(c, iv);
}

/* The sources of each rank (a counting sort): rank p's are by_proc[first[p] .. first[p + 1]).
 * first has nranks + 2 entries. */
static void sources_by_rank(const rp_report *r, int *by_proc, int *first) {
  for (int i = 0; i < r->nsrc; i++)
    if (r->src[i].proc >= 0) first[r->src[i].proc + 2]++;
  for (int p = 0; p < r->nranks; p++) first[p + 2] += first[p + 1];
  for (int i = 0; i < r->nsrc; i++)
    if (r->src[i].proc >= 0) by_proc[first[r->src[i].proc + 1]++] = i;
}

/* Rank k's times into the overall ones. */
static void add_overall(rp_times *o, const rp_rank *k) {
  if (k->t.first < o->first) o->first = k->t.first;
  if (k->t.last > o->last) o->last = k->t.last;
  o->comm = rp_add_sat(o->comm, k->t.comm);
  o->compute = rp_add_sat(o->compute, k->t.compute);
  o->overlap = rp_add_sat(o->overlap, k->t.overlap);
  o->busy = rp_add_sat(o->busy, k->t.busy);
  o->memory = rp_add_sat(o->memory, k->t.memory);
  o->comm_est = rp_add_sat(o->comm_est, k->t.comm_est);
  o->late += k->t.late;
  for (int cl = 0; cl < RP_CLASSES; cl++) o->intervals[cl] += k->t.intervals[cl];
}

/* A sweep for rank p: its steps, its figure window and model chunks (c->sweep_*), the timeline
 * kept for the plot (the first RP_TIMELINE_RANKS ranks), its coverage. NULL out of memory. */
static rp_sweep *rank_sweep(const ctx *c, int p) {
  const rp_report *r = c->r;
  const rp_rank *k = &r->ranks[p];
  rp_sweep *sw = rp_sweep_new(c->opt->reorder_window, k->steps, k->nsteps);
  if (!sw) return NULL;
  rp_sweep_window(sw, c->sweep_from, c->sweep_to);
  if (c->sweep_model) rp_sweep_chunks(sw, k->chunks, k->nchunks);
  size_t keep =
      r->nranks <= 16 ? RP_TIMELINE_CAP : (size_t)RP_TIMELINE_CAP * 16 / (size_t)r->nranks;
  rp_sweep_keep(sw, r->window_from, r->window_to,
                p < RP_TIMELINE_RANKS ? (keep < 256 ? 256 : keep) : 0);
  rp_sweep_cover(sw, k->cover, k->ncover);
  return sw;
}

/* A rank active across a window spans it there, also where nothing it recorded runs at the
 * window's ends: a topo trace outside its CUPTI windows shows only collectives, so its first and
 * last events inside a window are collectives and its span there would be shorter than that of
 * the same rank seen through Kineto (comm share 0.3-0.6 points higher on a DDP job). */
static void window_span(rp_report *r, int p) {
  rp_rank *k = &r->ranks[p];
  if (!(r->window || k->win) || !(k->t.last > k->t.first) || !(k->ext_last > k->ext_first)) return;
  int64_t a = k->ext_first, b = k->ext_last;
  if (!clip_rank(r, p, &a, &b)) return;
  if (a < k->t.first) k->t.first = a;
  if (b > k->t.last) k->t.last = b;
}

/* Rank p through the sweep: its sources (src[by_proc[first[p] ..]]) opened and merged by time,
 * its times, kept timeline and kernel analyses filled; the sources closed. `mine`: scratch of
 * nsrc entries. */
static void sweep_rank(ctx *c, int p, const int *list, int nlist, int *mine) {
  rp_report *r = c->r;
  rp_rank *k = &r->ranks[p];
  int n = 0;
  for (int q = 0; q < nlist; q++) {
    int i = list[q];
    an_hold(c, i);
    if (rp_source_open(&r->src[i], 2) != TOPO_OK) {
      an_unhold(c, i);
      continue;
    }
    mine[n++] = i;
  }
  /* the figure window: the analysis window and the rank's own (--steps complete) */
  c->sweep_from = r->window ? r->win_from : INT64_MIN;
  c->sweep_to = r->window ? r->win_to : INT64_MAX;
  if (k->win && k->win_from > c->sweep_from) c->sweep_from = k->win_from;
  if (k->win && k->win_to < c->sweep_to) c->sweep_to = k->win_to;
  c->sweep_model = k->nchunks >= 2; /* fewer: no model, nothing outside the window to learn */
  if (!(c->sweep = rank_sweep(c, p))) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  if (k->kineto && !(k->gpu = rp_gpu_new(k->steps, k->nsteps, RP_GPU_REORDER)))
    c->st = TOPO_ERR_NOMEM;
  c->sweep_rank = p;
  c->nstreams = 0;
  rp_map_free(&c->stream_of);
  char what[64];
  snprintf(what, sizeof what, "pass 2, rank %d of %d", p + 1, r->nranks);
  rp_sink s2 = {c, p2_coll, p2_interval, NULL, NULL, p2_kevent};
  an_merged(c, mine, n, &s2, 2, what);
  rp_sweep_finish(c->sweep, &k->t);
  window_span(r, p);
  an_model_finish(k);
  rp_gpu_finish(k->gpu);
  size_t nk;
  const rp_interval *kept = rp_sweep_kept(c->sweep, &nk, &k->timeline_dropped);
  if (nk && (k->timeline = topo_malloc(nk * sizeof *kept))) {
    memcpy(k->timeline, kept, nk * sizeof *kept);
    k->ntimeline = nk;
  }
  rp_sweep_free(c->sweep);
  c->sweep = NULL;
  for (int i = 0; i < n; i++) {
    an_close_src(c, &r->src[mine[i]]);
    rp_kspill_free(r->src[mine[i]].spill); /* replayed: done with */
    r->src[mine[i]].spill = NULL;
  }
}

void an_pass2(ctx *c) {
  rp_report *r = c->r;
  int *mine = topo_malloc((size_t)r->nsrc * sizeof(int));
  int *by_proc = topo_malloc((size_t)r->nsrc * sizeof(int));
  int *first = topo_calloc((size_t)r->nranks + 2, sizeof(int));
  if (!mine || !by_proc || !first) {
    topo_free(mine), topo_free(by_proc), topo_free(first);
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  sources_by_rank(r, by_proc, first);
  r->overall.first = INT64_MAX;
  r->overall.last = INT64_MIN;
  for (int p = 0; p < r->nranks && c->st == TOPO_OK; p++) {
    sweep_rank(c, p, by_proc + first[p], first[p + 1] - first[p], mine);
    if (c->st != TOPO_OK) break;
    const rp_rank *k = &r->ranks[p];
    add_overall(&r->overall, k);
    if (k->t.late && !c->opt->quiet)
      TOPO_WARN("rank %d: %" PRIu64
                " intervals arrived more than %zu intervals out of order "
                "and were clipped; raise --reorder-window",
                k->world_rank, k->t.late, c->opt->reorder_window);
  }
  topo_free(mine), topo_free(by_proc), topo_free(first);
}
