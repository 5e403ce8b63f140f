/* SPDX-License-Identifier: Apache-2.0 */
/*
 * analysis/: from the inputs to a finished rp_report (rp_analyze). Imports inputs/, kernels/ and
 * model/; the renderers (render/, fit/) read what it leaves and call its derived figures.
 *   analyze.c, analyze_*.c  rp_analyze and its stages (analyze_ctx.h: their shared state)
 *   sweep.c          the per-rank interval sweep: comm / compute / overlap unions, per step
 *   align.c          GPU clocks aligned across ranks
 *   estimate.c       estimated durations of untimed collectives, with their errors
 *   steps.c          steps learned from topo traces (common/step_learn)
 *   omodel.c         the overlap model: exposed communication where compute was not recorded
 *   derive.c         the derived figures every renderer prints (shares, exposed, errors)
 */
#ifndef TOPO_REPORT_ANALYSIS_H
#define TOPO_REPORT_ANALYSIS_H

#include "report.h"

/* ---- the per-rank interval sweep (sweep.c) */
typedef struct rp_sweep rp_sweep;
/* steps (sorted by start, owned by the caller) receive their comm/compute/overlap/busy;
 * `keep` (may be NULL) receives the intervals that overlap [keep_from, keep_to). */
rp_sweep *rp_sweep_new(size_t reorder_window, rp_step *steps, size_t nsteps);
void rp_sweep_keep(rp_sweep *s, int64_t from, int64_t to, size_t cap);
/* The windows where compute is recorded: `n` sorted, disjoint [win[2i], win[2i+1]) pairs,
 * borrowed until free. Without a call nothing is covered. */
void rp_sweep_cover(rp_sweep *s, const int64_t *win, size_t n);
/* The figure window [from, to) (without a call: all time). Every figure (rp_times, the steps, the
 * kept timeline) holds the intervals clipped to it. */
void rp_sweep_window(rp_sweep *s, int64_t from, int64_t to);
/* The overlap model's chunks (docs/metrics.md, Coverage): `n` ranges inside the coverage,
 * borrowed until free; each receives in cov_comm and cov_overlap the covered communication and
 * overlap between its ends over the whole input, inside the figure window or not (and `covered`
 * its covered length). With chunks the intervals outside the window that meet the coverage are
 * swept too, for the chunks only. */
void rp_sweep_chunks(rp_sweep *s, rp_step *chunks, size_t n);
topo_status rp_sweep_add(rp_sweep *s, const rp_interval *iv);
void rp_sweep_finish(rp_sweep *s, rp_times *out);
/* Intervals kept for the timeline (valid until free). */
const rp_interval *rp_sweep_kept(const rp_sweep *s, size_t *n, uint64_t *dropped);
void rp_sweep_free(rp_sweep *s);

/* ---- grouping sources by process (analyze_sources.c) */
/* A source by its process (host, pid), for grouping sources by sorting (analyze_sources.c,
 * export_chrome.c): rp_cmp_proc_ref orders by host, pid, then index (qsort). */
typedef struct rp_proc_ref {
  const char *host;
  uint32_t pid;
  int index;
} rp_proc_ref;
int rp_cmp_proc_ref(const void *a, const void *b);

/* ---- estimated durations of untimed collectives (estimate.c; docs/metrics.md) */
/* The two-sided 95 % quantile of Student's t with `dof` degrees of freedom. */
double rp_t975(double dof);
typedef struct rp_estimator rp_estimator;
rp_estimator *rp_est_new(void);
/* One measured call of `size` (nccl-tests size) and GPU duration `dur`. */
void rp_est_measured(rp_estimator *x, const rp_est_key *k, uint64_t size, int64_t dur);
void rp_est_finish(rp_estimator *x); /* after the last rp_est_measured */
/* The estimate for an untimed call, after rp_est_finish; returns its level (RP_EST_UNKNOWN: dur
 * 0). O(log keys). */
int rp_est_get(const rp_estimator *x, const rp_est_key *k, uint64_t size, rp_estimate *out);
int rp_est_failed(const rp_estimator *x); /* an allocation failed */
void rp_est_free(rp_estimator *x);
void rp_err_add(rp_err *a, const rp_estimate *e);
void rp_err_sum(rp_err *a, const rp_err *b);
int64_t rp_err_ns(const rp_err *a);
/* The error of a comm figure (a union) of whose time `est` ns only estimated intervals cover: 0
 * when it counts no estimate; else the durations' error plus the estimated time the union hid
 * under other intervals (their placement is approximate: that time may as well lie outside). */
int64_t rp_comm_error_ns(int64_t est, const rp_err *a);

/* ---- the overlap model (omodel.c; docs/metrics.md, Coverage) */
/* One chunk's covered communication and overlap, in coverage stretch `stretch` (chunks in
 * order: a new stretch closes the previous one). */
void rp_omodel_add(rp_omodel *m, int64_t comm, int64_t overlap, int64_t stretch);
/* A rank's chunks (their cov_comm, cov_overlap and stretch) into `m`, those whose ratio lies more
 * than max(RP_OMODEL_OUTLIER_MIN, 3 scaled MADs) from the comm-weighted median left out (at least
 * 3 chunks to judge, at least 2 kept; out of memory, every chunk counts). */
#define RP_OMODEL_OUTLIER_MIN 0.05
void rp_omodel_add_robust(rp_omodel *m, const rp_step *chunks, size_t n);
/* Sums of another model's chunks (the overall model). */
void rp_omodel_merge(rp_omodel *m, const rp_omodel *o);
/* The line, spread and drift from the chunks added; `reason` when fewer than 2 carry
 * communication. m->steps (set before) allows the affine form. */
void rp_omodel_finish(rp_omodel *m, const char *reason);
/* A prediction of the overlapped part of uncovered communication: `units` steps' worth (the
 * intercept's count) holding `comm` ns, their predicted overlap (each piece clamped to [0, its
 * comm]). */
typedef struct rp_opred {
  double units, comm, overlap;
} rp_opred;
/* Adds to p one uncovered piece: `comm` ns of communication in `units` steps (a step's uncovered
 * share of its unclipped length); units < 0: not in a step, priced at the covered chunks' mean
 * comm (the ratio). */
void rp_omodel_predict(const rp_omodel *m, double units, double comm, rp_opred *p);
/* The error, at ~95 %, of p's overlap (docs/metrics.md, Coverage): the line's parameters (wide
 * where p lies far from the covered chunks' comm), drift between stretches (shared by all of p)
 * and the chunks' scatter (adding in quadrature over chunk-sized parts), at most the farthest
 * value the overlap of p can take. */
double rp_omodel_error(const rp_omodel *m, const rp_opred *p);
#define RP_OMODEL_ONE_STRETCH                                                     \
  "compute recorded in one stretch only (one covered step or window): no spread " \
  "to bound an estimate"
#define RP_OMODEL_FEW_COMM                                                        \
  "fewer than 2 covered steps or windows hold communication: no spread to bound " \
  "an estimate"
#define RP_OMODEL_NO_COVER "no compute recorded: nothing to learn an overlap ratio from"
#define RP_OMODEL_NO_RANK  "no rank has an overlap model (see each rank's reason)"
/* Exposed communication over a whole range (figure window or step) from its communication, the
 * part of it inside the coverage and the exposed part measured there (`covered`: the covered
 * length): measured + uncovered - its predicted overlap, error rp_omodel_error. `pred`: the
 * prediction of the uncovered communication (its pieces); NULL: one piece of `units` steps (< 0:
 * not known). Returns 0 (unknown) where some communication is uncovered and there is no model, or
 * nothing is covered and there is none; 2 where part of it is estimated; 1 where all of it is
 * measured. */
int rp_exposed_all(const rp_omodel *m, int64_t comm, int64_t cov_comm, int64_t cov_exposed,
                   int64_t covered, double units, const rp_opred *pred, int64_t *all, int64_t *est,
                   int64_t *err);
/* A step's uncovered share in steps: (its length - covered) / its unclipped length. */
double rp_step_uncovered_units(const rp_step *st);

/* ---- a rank's step rows (analyze_summary.c; RP_STEPS_KEEP in report.h) */
/* Append a step (its start, stop, value, from_kineto and period; last filled here) to rank k,
 * grouped as above when `keep` (> 0) rows are reached; count 0 or 1: one step, more: a row already
 * grouped (its value a group's first at k's shift or a smaller one). TOPO_ERR_NOMEM. Pass 1
 * only. */
topo_status rp_rank_add_step(rp_rank *k, const rp_step *st, size_t keep);
/* Group rank k's steps by 2^shift step numbers (shift only grows). */
void rp_rank_group_steps(rp_rank *k, int shift);

/* ---- derived figures (derive.c; analyze_cover.c for the coverage words) */
void rp_derive(const rp_times *t, rp_derived *d);
/* rp_derive plus the rank's estimate error. */
void rp_derive_rank(const rp_rank *k, rp_derived *d);
/* Why compute is unknown for a rank (never NULL; "" when known everywhere). */
const char *rp_rank_unknown_reason(const rp_rank *k);
/* Which steps the rank's compute coverage holds and what start-up was left out of it, in words
 * ("steady steps 8-11; start-up left out: 2 warm-up steps"); "" when it has no steps there. */
const char *rp_rank_cover_steps(const rp_rank *k, char *buf, size_t len);
/* Overall: sums over ranks (rank-time), ratios of the sums. */
void rp_derive_overall(const rp_report_fwd *r, rp_derived *d);

/* ---- steps from topo traces (steps.c): the step learner (common/step_learn.h) over all of each
 * rank's operations. Ranks without Kineto steps or step marks get one step per repetition,
 * numbered alike on every rank of the job. */
typedef struct rp_steps rp_steps;
/* mode: 0 auto, > 0 force this period (at most TOPO_STEP_MAX_PERIOD_LIMIT), < 0 off (returns
 * NULL; every call accepts NULL). ntrackers: (communicator, rank) pairs expected; sizes the
 * learners and the operations held for order. */
rp_steps *rp_steps_new(int mode, size_t ntrackers);
/* Test hook only: operations held for order per rank (>= 16), to reach a full heap with few. */
void rp_steps_set_cap(rp_steps *d, size_t cap);
/* Step rows a rank keeps (report.h, RP_STEPS_KEEP; 0: all); RP_STEPS_KEEP unless set. Before the
 * first operation. */
void rp_steps_set_keep(rp_steps *d, size_t keep);
/* Bytes the detection holds for the steps it found so far (boundaries, steps awaiting their
 * warm-up judgement, step rows), over all ranks; the learners, their histories and the
 * operations held for order are fixed per rank and not counted. */
size_t rp_steps_bytes(const rp_steps *d);
/* Pass 1: a collective or p2p operation of rank `rank` (of nranks) of communicator `comm` (a
 * dense index), from report rank `proc`. Amortised O(log held) once a step is known. */
void rp_steps_coll(rp_steps *d, size_t comm, int nranks, int rank, int proc, const rp_coll *co);
/* After pass 1: ranks with no steps get the detected ones; sets step_period / steps_detect. */
topo_status rp_steps_finish(rp_steps *d, rp_report *r);
void rp_steps_free(rp_steps *d);
/* Where the steps come from, for a table heading: "from topo traces (period P operations, ...)",
 * "from Kineto ProfilerSteps (n ranks)", ... */
const char *rp_steps_origin(const rp_report *r, char *buf, size_t len);
#define RP_STEPS_NONE_TEXT                                                               \
  "no repeating step pattern found in the collectives and p2p operations (steps need a " \
  "Kineto trace, step marks or a job that repeats its operations; --steps P forces a period)"
/* ---- GPU-clock alignment (align.c): bounds per trace, anchors across ranks, one offset per rank */
const char *rp_align_method_name(int method);
typedef struct rp_align rp_align;
/* Pass 0 over one binary source (opened and closed here): its bounds and anchor samples; each
 * collective also goes to also->coll when given (GPU times not yet aligned: durations only). */
topo_status rp_align_scan(rp_align **a, int nsrc, rp_source *s, const rp_sink *also);
/* After every source is scanned and has its rank (s->proc): one offset per rank, written into
 * r->ranks[] (align_*, gpu_offset) and every binary source's gpu_to_real. Frees `a`. */
topo_status rp_align_solve(rp_align *a, rp_report *r);
void rp_align_free(rp_align *a);
/* The estimate from [lower, upper] (either may be INT64_MIN / INT64_MAX = none). Returns the
 * method; *err = |upper - lower|, -1 when unbounded; *inconsistent = 1 when lower > upper. */
int rp_align_estimate(int64_t lower, int64_t upper, int64_t *off, int64_t *err, int *inconsistent);

/* ---- the analysis (analyze.c and its stages) */
/* Analyse `paths` (files and directories: every *.trace / *.topo / *.json inside, sorted). */
topo_status rp_analyze(const char *const *paths, int npaths, const rp_options *opt, rp_report *out);
void rp_report_free(rp_report *r);

#endif
