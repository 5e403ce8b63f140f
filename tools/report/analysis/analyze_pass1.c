// SPDX-License-Identifier: Apache-2.0
// Pass 1 of the analysis (analyze.h): every input read once. Kineto / Chrome JSON first, one file
// at a time (their ProfilerSteps give the ranks' step windows; a file without GPU events makes no
// rank), then the binary traces merged by time into the collective table, the fit points, the
// cross-rank joins (collectives and p2p pairs), the step detection and the CUPTI coverage spans. Called by
// analyze.c.
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analyze_ctx.h"
#include "report_analysis.h"
#include "report_inputs.h"

/* The first rank (process) of world rank `world`, or -1: through c->rank_of_world, whose entry
 * may name a rank since undone (pass1_json), and is then no answer. */
static int rank_of_world(const ctx *c, int world) {
  uint32_t at;
  if (!rp_map_find(&c->rank_of_world, (uint32_t)world, &at)) return -1;
  return (int)at < c->r->nranks && c->r->ranks[at].world_rank == world ? (int)at : -1;
}

/* The rank of a Kineto source: the first rank of its distributedInfo rank, else a new one. */
static int kineto_rank(ctx *c, rp_source *s) {
  if (s->proc >= 0) return s->proc;
  rp_report *r = c->r;
  s->proc = s->rank >= 0 ? rank_of_world(c, s->rank) : -1;
  if (s->proc < 0) {
    int world = s->rank >= 0 ? s->rank : s->index;
    s->proc = an_rank_add(r, "", 0, world);
    if (s->proc >= 0 && rank_of_world(c, world) < 0 &&
        !rp_map_put(&c->rank_of_world, (uint32_t)world, (uint32_t)s->proc))
      c->st = TOPO_ERR_NOMEM;
  }
  if (s->proc >= 0) r->ranks[s->proc].nsources++;
  return s->proc;
}

static void step_add(void *vc, int src, int64_t start, int64_t stop, uint64_t value) {
  ctx *c = vc;
  rp_source *s = &c->r->src[src];
  int p = s->kind == RP_SRC_KINETO ? kineto_rank(c, s) : s->proc;
  if (p < 0) return;
  rp_rank *k = &c->r->ranks[p];
  if (stop <= start) return;
  /* every step is kept until the coverage is built (an_steps_clip clips them to the window) */
  rp_step st = {
      .start = start, .stop = stop, .value = value, .from_kineto = s->kind == RP_SRC_KINETO};
  if (rp_rank_add_step(k, &st, c->r->steps_keep) != TOPO_OK) c->st = TOPO_ERR_NOMEM;
}

/* --steps complete (docs/metrics.md, Step windows): a rank with Kineto ProfilerSteps gets the
 * window from the start of its first to the end of the one before its last, and loses that last
 * step (the profiler stops inside it); with --window, of the steps inside it. A rank with one ProfilerStep has no complete one: all its
 * events count, said once. Ranks without ProfilerSteps keep all their events. */
static void complete_step_windows(rp_report *r, int quiet) {
  r->step_window = RP_WINDOW_COMPLETE_STEPS;
  for (int i = 0; i < r->nranks; i++) {
    rp_rank *k = &r->ranks[i];
    size_t n = 0, last = 0;
    for (size_t j = 0; j < k->nsteps; j++) {
      int64_t a = k->steps[j].start, b = k->steps[j].stop;
      if (k->steps[j].from_kineto && clip_window(r, &a, &b)) {
        if (!n || k->steps[j].start > k->steps[last].start) last = j;
        n++;
      }
    }
    k->win_steps = n;
    if (n == 1 && !quiet)
      TOPO_WARN("rank %d: one ProfilerStep (#%" PRIu64
                "), none complete: --steps complete keeps all its "
                "events",
                k->world_rank, k->steps[last].value);
    if (n < 2) continue;
    k->win = 1;
    k->win_from = INT64_MAX;
    k->win_to = INT64_MIN;
    int64_t first_start = INT64_MAX, last_start = INT64_MIN;
    for (size_t j = 0; j < k->nsteps; j++) {
      const rp_step *st = &k->steps[j];
      int64_t a = st->start, b = st->stop; /* the step inside the window */
      if (!st->from_kineto || j == last || !clip_window(r, &a, &b)) continue;
      if (a < k->win_from) k->win_from = a;
      if (b > k->win_to) k->win_to = b;
      if (a < first_start) first_start = a, k->win_first = st->value;
      if (a > last_start) last_start = a, k->win_last = st->value;
    }
    k->win_dropped = k->steps[last].value;
    k->steps[last] = k->steps[--k->nsteps];
    r->ranks_cut++;
  }
}

/* One line on a JSON input that gives no GPU time, saying what it holds instead. */
static void kineto_unusable(const rp_source *s, const rp_kineto_info *in, int rank_kept) {
  if (s->quiet) return;
  const char *tail = rank_kept ? "; its rank keeps its other inputs" : "; skipped";
  if (!in->has_events_key) {
    fprintf(stderr, "topo-report: warning: %s: JSON without traceEvents: not a trace%s\n", s->path,
            tail);
    return;
  }
  if (!in->x_events) {
    fprintf(stderr, "topo-report: warning: %s: no complete events in traceEvents%s\n", s->path,
            tail);
    return;
  }
  char cats[160] = "";
  size_t o = 0;
  for (int i = 0; i < 4 && in->cat_n[i] && o < sizeof cats; i++) {
    int w = snprintf(cats + o, sizeof cats - o, "%s%s (%" PRIu64 ")",
                     i ? ", " : "; other categories: ", in->cat[i], in->cat_n[i]);
    o += w > 0 ? (size_t)w : 0;
  }
  fprintf(stderr,
          "topo-report: warning: %s: no CUDA GPU events (kernel, gpu_memcpy, gpu_memset) among its "
          "%" PRIu64 " complete events (%" PRIu64
          " CPU-side%s): a trace of another device (MTIA, XPU) or of the "
          "CPU only%s\n",
          s->path, in->x_events, in->cpu_events, cats, tail);
}

/* ---- pass 1 sinks */
/* Widen rank `proc`'s extent in the whole input by [a, b). */
static void extend(rp_report *r, int proc, int64_t a, int64_t b) {
  if (proc < 0 || proc >= r->nranks || !(b > a)) return;
  rp_rank *k = &r->ranks[proc];
  if (a < k->ext_first) k->ext_first = a;
  if (b > k->ext_last) k->ext_last = b;
}

static void p1_coll(void *vc, int src, const rp_coll *co) {
  ctx *c = vc;
  rp_report *r = c->r;
  rp_source *s = &r->src[src];
  /* Kineto NCCL kernels make the table in pass 2, once the rank's window is known */
  if (s->kind != RP_SRC_TRACE) return;
  c->bin_colls = 1;
  int jc = c->src_comm[src];
  if (jc >= 0 && !co->p2p)
    an_join_add(c, &c->jc[jc], c->src_slot[src], co); /* the window applies at the join */
  else if (jc >= 0) an_p2p_add(c, &c->jc[jc], c->src_slot[src], co);
  if (jc >= 0) rp_steps_coll(c->steps, (size_t)jc, c->jc[jc].nranks, s->rank, s->proc, co);
  extend(r, s->proc, co->timed ? co->gpu_start : co->cpu_start,
         co->timed ? co->gpu_stop : co->cpu_stop);
  if (s->proc >= 0 && co->bytes > r->ranks[s->proc].largest_coll)
    r->ranks[s->proc].largest_coll = co->bytes; /* the whole trace: what the profiler saw */
  if (!in_rank_window(r, s->proc, co->timed ? co->gpu_start : co->cpu_start)) return;
  r->colls += !co->p2p;
  r->p2p += (uint64_t)co->p2p;
  r->timed_colls += (uint64_t)co->timed;
  if (s->proc >= 0) {
    r->ranks[s->proc].colls++;
    r->ranks[s->proc].timed_colls += (uint64_t)co->timed;
  }
  an_table_add(c, co);
  int64_t lo = co->timed ? co->gpu_start : co->cpu_start,
          hi = co->timed ? co->gpu_stop : co->cpu_stop;
  (void)clip_rank(r, s->proc, &lo, &hi); /* its start is inside: only the end can be cut */
  if (lo < r->t0) r->t0 = lo;
  if (hi > r->t_end) r->t_end = hi;
  if (lo < r->trace_first) r->trace_first = lo;
  if (hi > r->trace_last) r->trace_last = hi;
}

static void p1_interval(void *vc, int src, const rp_interval *iv) {
  ctx *c = vc;
  rp_report *r = c->r;
  if (r->src[src].kind == RP_SRC_KINETO) return; /* its range is known at its end */
  int64_t a = iv->start, b = iv->stop;
  extend(r, r->src[src].proc, a, b);
  if (!clip_rank(r, r->src[src].proc, &a, &b)) return;
  if (a < r->t0) r->t0 = a;
  if (b > r->t_end) r->t_end = b;
  if (a < r->trace_first) r->trace_first = a;
  if (b > r->trace_last) r->trace_last = b;
}

static void p1_record(void *vc, int src, const topo_trace_record *rec) {
  ctx *c = vc;
  c->r->records++;
  if (rec->type == TOPO_REC_CUPTI) an_cupti_span(c, &c->r->src[src], &rec->cupti);
}

/* One Kineto / Chrome JSON input through pass 1. A file without GPU activity (another device's
 * trace, a CPU-only one, not a trace at all) makes no rank of its own: its steps alone would show
 * as zeros. A rank already seen through other sources keeps what they give. */
static void pass1_json(ctx *c, int i, const rp_sink *s1) {
  rp_report *r = c->r;
  rp_source *s = &r->src[i];
  r->have_kineto = 1;
  an_hold(c, i);
  if (rp_source_open(s, 1) != TOPO_OK) {
    an_unhold(c, i);
    return;
  }
  int one[1] = {i}, nranks_before = r->nranks;
  an_merged(c, one, 1, s1, 1, "pass 1 (JSON)");
  rp_kineto_info info;
  rp_kineto_stats(s->impl, &info);
  int empty = !info.gpu_events;
  if (empty) {
    kineto_unusable(s, &info, s->proc >= 0 && s->proc < nranks_before);
    if (s->proc >= nranks_before && s->proc == r->nranks - 1) { /* the rank it made: undone */
      topo_free(r->ranks[s->proc].steps);
      r->nranks--;
    }
    if (s->proc >= nranks_before) s->proc = -1;
  }
  int p = empty ? s->proc : kineto_rank(c, s);
  if (p >= 0) {
    rp_rank *k = &r->ranks[p];
    k->kineto = 1;
    /* its process, where the trace says: the pid of its runtime calls, the host from a
     * tensorboard_trace_handler file name; a rank with topo traces keeps their header's */
    uint32_t pid = info.pid;
    if (!k->host[0] && rp_kineto_host_from_name(s->path, pid, k->host, sizeof k->host, &pid) &&
        !k->pid)
      k->pid = pid;
    if (!k->pid) k->pid = info.pid;
  }
  an_close_src(c, s);
}

/* The GPU range of the Kineto inputs (inside their ranks' windows) widens the report's span. */
static void kineto_span(rp_report *r) {
  for (int i = 0; i < r->nsrc; i++) {
    const rp_source *s = &r->src[i];
    int64_t a = s->gpu_first, b = s->gpu_last;
    if (s->kind == RP_SRC_KINETO) extend(r, s->proc, a, b);
    if (s->kind != RP_SRC_KINETO || s->proc < 0 || !(b > a) || !clip_rank(r, s->proc, &a, &b))
      continue;
    if (a < r->t0) r->t0 = a;
    if (b > r->t_end) r->t_end = b;
    if (a < r->kineto_first) r->kineto_first = a;
    if (b > r->kineto_last) r->kineto_last = b;
  }
}

void an_pass1(ctx *c, int *bin, int nbin) {
  rp_report *r = c->r;
  rp_sink s1 = {c, p1_coll, p1_interval, step_add, p1_record, NULL};
  for (int i = 0; i < r->nranks && c->st == TOPO_OK; i++) /* the binary traces' ranks */
    if (r->ranks[i].world_rank >= 0 && rank_of_world(c, r->ranks[i].world_rank) < 0 &&
        !rp_map_put(&c->rank_of_world, (uint32_t)r->ranks[i].world_rank, (uint32_t)i))
      c->st = TOPO_ERR_NOMEM;
  for (int i = 0; i < r->nsrc && c->st == TOPO_OK; i++)
    if (r->src[i].kind == RP_SRC_KINETO) pass1_json(c, i, &s1);
  if (c->opt->step_window == RP_WINDOW_COMPLETE_STEPS) complete_step_windows(r, c->opt->quiet);
  kineto_span(r);
  an_merged(c, bin, nbin, &s1, 1, "pass 1");
  for (size_t i = 0; i < c->njc; i++) {
    an_join_evict_all(c, &c->jc[i]);
    an_p2p_finish(c, &c->jc[i]);
  }
  for (int i = 0; i < nbin; i++) an_close_src(c, &r->src[bin[i]]);
  if (c->st == TOPO_OK) c->st = rp_steps_finish(c->steps, r);
}
