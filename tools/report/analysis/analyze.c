// SPDX-License-Identifier: Apache-2.0
// The analysis (rp_analyze), its passes in order: the inputs become sources (analyze_sources.c);
// pass 0 reads each binary trace's alignment evidence (align.c) and its measured durations (the
// estimator) and groups ranks and communicators; pass 1 (analyze_pass1.c) streams every input
// once, merged by time, into the collective table, the fit points, the steps and the cross-rank
// join; the
// coverage (analyze_cover.c) and the plotted window (analyze_summary.c) follow; pass 2
// (analyze_pass2.c) streams each rank's inputs again through the interval sweep; the step table
// closes. Called by main.c, the benchmark and the tests; owns rp_report (rp_report_free).
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze_ctx.h"
#include "kernel_stats.h"
#include "report_analysis.h"
#include "report_inputs.h"

/* The report before any input: empty spans, the window asked for. */
static void report_init(rp_report *r, const rp_options *opt) {
  memset(r, 0, sizeof *r);
  r->t0 = r->trace_first = r->kineto_first = INT64_MAX;
  r->t_end = r->trace_last = r->kineto_last = INT64_MIN;
  if (opt->window && opt->to > opt->from) {
    r->window = 1;
    r->win_from = opt->from;
    r->win_to = opt->to;
  }
  r->steps_keep = opt->all_steps ? 0 : RP_STEPS_KEEP;
}

/* The input files of `paths` as sources, the bytes both passes read (for progress), and
 * progress turned on where it is "auto": on a terminal, or for inputs that take a while
 * (> 256 MB). */
static topo_status collect_sources(ctx *c, const char *const *paths, int npaths) {
  rp_report *r = c->r;
  char **files = NULL;
  int nfiles = 0;
  topo_status st = rp_inputs_collect(paths, npaths, c->opt, r, &files, &nfiles);
  if (st != TOPO_OK) return st;
  st = an_add_sources(r, files, nfiles, c->opt);
  uint64_t bytes = 0;
  for (int i = 0; i < nfiles; i++) {
    struct stat sb;
    if (stat(files[i], &sb) == 0) bytes += (uint64_t)sb.st_size;
  }
  if (c->progress < 0) c->progress = isatty(2) || bytes > (256u << 20);
  c->total_bytes = 2 * bytes;
  rp_paths_free(files, nfiles);
  if (st != TOPO_OK) return st;
  if (!r->nsrc) {
    TOPO_WARN("no input files (give trace files, or directories holding *.trace / *.json)");
    return TOPO_ERR_INVALID;
  }
  c->src_comm = topo_malloc((size_t)r->nsrc * sizeof(int));
  c->src_slot = topo_calloc((size_t)r->nsrc, sizeof(int));
  c->held = topo_calloc((size_t)r->nsrc, 1);
  c->budget = an_open_budget();
  return c->src_comm && c->src_slot && c->held ? TOPO_OK : TOPO_ERR_NOMEM;
}

static void p0_coll(void *vc, int src, const rp_coll *co) {
  (void)src;
  an_est_learn(vc, co);
}

/* Pass 0, one binary trace at a time (it opens and closes each): alignment evidence, and every
 * measured duration into the estimator, complete before pass 1 asks it (the join bounds waits by
 * the kernels' durations, measured or estimated). Then the binary traces are opened; those with a
 * usable header are listed in bin (*nbin of them). */
static topo_status open_traces(ctx *c, int *bin, int *nbin) {
  rp_report *r = c->r;
  if (!(c->est = rp_est_new())) return TOPO_ERR_NOMEM;
  rp_sink learn = {c, p0_coll, NULL, NULL, NULL, NULL};
  for (int i = 0; i < r->nsrc; i++)
    if (r->src[i].kind == RP_SRC_TRACE &&
        (rp_align_scan(&c->align, r->nsrc, &r->src[i], &learn) != TOPO_OK || c->st != TOPO_OK))
      return TOPO_ERR_NOMEM;
  rp_est_finish(c->est);
  if (rp_est_failed(c->est)) return TOPO_ERR_NOMEM;
  *nbin = 0;
  for (int i = 0; i < r->nsrc; i++) {
    rp_source *s = &r->src[i];
    c->src_comm[i] = -1;
    if (s->kind != RP_SRC_TRACE) continue;
    r->have_trace = 1;
    an_hold(c, i);
    if (rp_source_open(s, 1) != TOPO_OK || !s->header_ok) {
      an_close_src(c, s);
      continue;
    }
    bin[(*nbin)++] = i;
    const topo_trace_header *h = &s->header;
    if (h->nranks < 1 || h->nranks > (1 << 20) || h->rank < 0 || h->rank >= h->nranks) {
      if (h->comm_hash)
        TOPO_WARN("%s: rank %d of %d is not a valid rank; its collectives are not joined", s->path,
                  h->rank, h->nranks);
      s->rank = -1;
    }
  }
  return TOPO_OK;
}

/* Ranks are processes (host, pid); a process is named by its rank in the largest communicator
 * it belongs to. Every communicator gets its summary (stable pointers now that the list is
 * complete). */
static topo_status name_ranks_and_comms(ctx *c, const int *bin, int nbin) {
  rp_report *r = c->r;
  topo_status st;
  if ((st = an_group_processes(r, bin, nbin)) != TOPO_OK) return st;
  if ((st = an_group_comms(c, bin, nbin)) != TOPO_OK) return st;
  for (int b = 0; b < nbin; b++) {
    const rp_source *s = &r->src[bin[b]];
    rp_rank *k = &r->ranks[s->proc];
    k->nsources++;
    if (s->rank >= 0 && (k->world_rank < 0 || s->header.nranks > k->world_size)) {
      k->world_rank = s->rank;
      k->world_size = s->header.nranks;
    }
  }
  r->comms = topo_calloc(c->njc ? c->njc : 1, sizeof *r->comms);
  if (!r->comms) return TOPO_ERR_NOMEM;
  r->ncomms = c->njc;
  for (size_t i = 0; i < c->njc; i++) {
    c->jc[i].sum = &r->comms[i];
    r->comms[i].hash = c->jc[i].hash;
    r->comms[i].nranks = c->jc[i].nranks;
    r->comms[i].ranks_seen = c->jc[i].nslots;
  }
  return TOPO_OK;
}

/* The step detection pass 1 feeds. */
static topo_status pass1_state(ctx *c) {
  rp_report *r = c->r;
  size_t ntrackers = 0;
  for (int i = 0; i < r->nsrc; i++) ntrackers += c->src_comm[i] >= 0;
  c->steps = rp_steps_new(c->opt->steps, ntrackers);
  if (c->opt->steps >= 0 && !c->steps) return TOPO_ERR_NOMEM;
  rp_steps_set_keep(c->steps, r->steps_keep);
  return TOPO_OK;
}

/* Between the passes: what each source counted goes to its rank; the steps settle; the plotted
 * window and the coverage are fixed before pass 2 uses them. */
static void after_pass1(ctx *c) {
  rp_report *r = c->r;
  for (int i = 0; i < r->nsrc; i++) {
    rp_source *s = &r->src[i];
    if (s->proc < 0) continue;
    rp_rank *k = &r->ranks[s->proc];
    if (s->nccl_kernels) k->comm_from_kernels = 1;
    if (s->kind == RP_SRC_TRACE) {
      k->trace_kernels += s->nccl_kernels + s->compute_kernels + s->memory_kernels;
      if (s->header_ok && (s->header.flags & TOPO_TRACE_F_CUPTI)) {
        if (s->header.comm_hash) k->cupti_asked = 1;
        else k->cupti_trace = 1;
      }
    }
    for (int d = 0; d < TOPO_DROP_KINDS; d++) k->dropped[d] += s->dropped[d];
    k->problems += s->problems;
  }
  an_steps_settle(r);
  an_cover_build(c); /* from every step, inside the window or not */
  an_steps_clip(r);
  an_choose_window(r);
}

static void ctx_free(ctx *c) {
  rp_steps_free(c->steps);
  rp_align_free(c->align);
  for (size_t i = 0; i < c->njc; i++) an_join_free(&c->jc[i]);
  topo_free(c->jc);
  topo_free(c->src_comm);
  topo_free(c->src_slot);
  rp_map_free(&c->row_of);
  rp_map_free(&c->tag_of);
  rp_map_free(&c->fit_of);
  topo_free(c->held);
  topo_free(c->stream_id);
  topo_free(c->stream_end);
  rp_map_free(&c->stream_of);
  rp_map_free(&c->rank_of_world);
  rp_est_free(c->est);
}

/* The passes after the sources are collected; the first failure stops them. */
static topo_status run_passes(ctx *c, int *bin) {
  rp_report *r = c->r;
  int nbin = 0;
  topo_status st;
  if ((st = open_traces(c, bin, &nbin)) != TOPO_OK) return st;
  if ((st = name_ranks_and_comms(c, bin, nbin)) != TOPO_OK) return st;
  if ((st = pass1_state(c)) != TOPO_OK) return st;
  /* One GPU-clock offset per rank before any GPU time is used (align.c). */
  if ((st = rp_align_solve(c->align, r)) != TOPO_OK) return st;
  an_pass1(c, bin, nbin);
  if (c->st != TOPO_OK) return c->st;
  after_pass1(c);
  if (c->st != TOPO_OK) return c->st;
  an_pass2(c);
  if (c->st == TOPO_OK) c->st = an_step_summary(r);
  if (r->skew_gpu_all.n && (r->align_err < 0 || r->align_err > rp_quant_get(&r->skew_gpu_all, 0.5)))
    r->align_warn = 1;
  an_progress(c, "done", 1);
  return c->st;
}

topo_status rp_analyze(const char *const *paths, int npaths, const rp_options *opt_in,
                       rp_report *r) {
  rp_options opt = {.reorder_window = 65536, .progress = -1};
  if (opt_in) opt = *opt_in;
  if (!opt.reorder_window) opt.reorder_window = 65536;
  report_init(r, &opt);
  ctx c;
  memset(&c, 0, sizeof c);
  c.r = r;
  c.opt = &opt;
  c.progress = opt.progress;
  topo_status st = collect_sources(&c, paths, npaths);
  int *bin = st == TOPO_OK ? topo_malloc((size_t)(r->nsrc ? r->nsrc : 1) * sizeof(int)) : NULL;
  if (st == TOPO_OK && !bin) st = TOPO_ERR_NOMEM;
  if (st == TOPO_OK) st = run_passes(&c, bin);
  topo_free(bin);
  ctx_free(&c);
  return c.st != TOPO_OK ? c.st : st;
}

void rp_report_free(rp_report *r) {
  for (int i = 0; i < r->nsrc; i++) {
    rp_source_close(&r->src[i]);
    rp_kspill_free(r->src[i].spill);
    topo_free(r->src[i].path);
  }
  topo_free(r->src);
  for (int i = 0; i < r->nranks; i++) {
    topo_free(r->ranks[i].steps);
    topo_free(r->ranks[i].timeline);
    topo_free(r->ranks[i].cover);
    topo_free(r->ranks[i].chunks);
    rp_gpu_free(r->ranks[i].gpu);
  }
  topo_free(r->ranks);
  for (size_t i = 0; i < r->nruns; i++) topo_free(r->runs[i].dir);
  topo_free(r->runs);
  for (size_t i = 0; i < r->nrows; i++) {
    rp_quant_free(&r->rows[i]->time);
    rp_quant_free(&r->rows[i]->xfer);
    topo_free(r->rows[i]);
  }
  topo_free(r->rows);
  for (size_t i = 0; i < r->nfit; i++) {
    rp_quant_free(&r->fit[i]->time);
    rp_quant_free(&r->fit[i]->xfer);
    topo_free(r->fit[i]);
  }
  topo_free(r->fit);
  for (size_t i = 0; i < r->ncomms; i++) rp_quant_free(&r->comms[i].skew);
  topo_free(r->comms);
  for (int i = 0; i < RP_MAX_FUNC; i++) rp_quant_free(&r->skew[i]);
  rp_quant_free(&r->skew_gpu_all);
  topo_free(r->stepsum);
  memset(r, 0, sizeof *r);
}
