// SPDX-License-Identifier: Apache-2.0
// Terminal tables: per-rank unions (span, communication, compute, overlap, exposed, idle), the
// collective table, cross-rank skew and stragglers, steps, input problems and the next steps.
// Reads rp_report; fits r->text_width (textout.h): tables split into blocks, notes wrap and fold
// across ranks.
#include <math.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_stats.h"
#include "nccl_vocab.h"
#include "next.h"
#include "report.h"
#include "report_analysis.h"
#include "report_render.h"
#include "textout.h"

static const char *pct(double v, char *buf, size_t len) {
  snprintf(buf, len, "%.1f%%", v * 100.0);
  return buf;
}

static const char *dur(int64_t ns, char *buf, size_t len) {
  rp_fmt_ns(ns, buf, len);
  return buf;
}

/* GB/s with 3-4 significant digits: 0.0123, 1.23, 123.4. */
static const char *gbs(double v, char *buf, size_t len) {
  snprintf(buf, len, v >= 100 ? "%.1f" : v >= 1 ? "%.2f" : "%.4f", v);
  return buf;
}

static void rank_label(const rp_rank *k, char *buf, size_t len) {
  if (k->world_rank >= 0) snprintf(buf, len, "rank %d", k->world_rank);
  else snprintf(buf, len, "rank ?");
}

/* A total that may hold estimates: "17.31 ms +-0.92 ms (est. 94%)" (docs/metrics.md). */
static const char *dur_est(int64_t ns, int64_t est, int64_t err, char *buf, size_t len) {
  char a[32], b[32];
  rp_fmt_ns(ns, a, sizeof a);
  if (est <= 0 && err <= 0) { /* nothing of it estimated: no error bar */
    snprintf(buf, len, "%s", a);
    return buf;
  }
  double p = rp_ratio(est, ns) * 100;
  if (p < 0.95) snprintf(buf, len, "%s ±%s (est. %.1f%%)", a, dur(err, b, sizeof b), p);
  else snprintf(buf, len, "%s ±%s (est. %.0f%%)", a, dur(err, b, sizeof b), p);
  return buf;
}

/* A compute-side figure: "n/a" where the compute timeline is unknown. */
static const char *dur_known(int known, int64_t ns, char *buf, size_t len) {
  return known ? dur(ns, buf, len) : "n/a";
}

static const char *pct_known(int known, double v, char *buf, size_t len) {
  return known ? pct(v, buf, len) : "n/a";
}

/* Exposed communication over a whole range: "14.445 ms" measured, "~14.469 ms ±3.23 us" with an
 * estimated part, "n/a" unknown (docs/metrics.md, Coverage). */
/* Exposed (all): measured, or "~estimate ±error"; an error reaching below `floor` (what was
 * measured exposed: the estimate can be no lower) is given as the range it leaves,
 * "~estimate (floor to high)", never as a bar crossing what is known. */
static const char *dur_all(int known, int estimated, int64_t ns, int64_t err, int64_t floor,
                           char *buf, size_t len) {
  char a[24], b[24], c[24];
  if (!known) return "n/a";
  if (!estimated) return dur(ns, buf, len);
  if (floor < 0) floor = 0;
  if (ns - err < floor)
    snprintf(buf, len, "~%s (%s to %s)", dur(ns, a, sizeof a), dur(floor, b, sizeof b),
             dur(rp_add_sat(ns, err), c, sizeof c));
  else snprintf(buf, len, "~%s ±%s", dur(ns, a, sizeof a), dur(err, b, sizeof b));
  return buf;
}

/* The cross-rank alignment of GPU clocks: how each rank was aligned, the bound on the relative
 * error of two ranks' GPU times (never an error bar of 0: exact agreement is said in words),
 * crossed bounds as the invalid bound they are, and a warning when the bound is not below the skew
 * shown (docs/metrics.md, Alignment). */
static void print_alignment(const rp_report *r, FILE *f, int width) {
  int count[RP_ALIGN_ANCHORED + 1] = {0}, crossed = 0;
  int64_t cross_max = 0;
  uint64_t amin = UINT64_MAX, amax = 0;
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    if (k->align_method >= 0 && k->align_method <= RP_ALIGN_ANCHORED) count[k->align_method]++;
    if (k->align_method == RP_ALIGN_ANCHORED) {
      if (k->anchors < amin) amin = k->anchors;
      if (k->anchors > amax) amax = k->anchors;
    }
    if (k->align_inconsistent && k->align_method != RP_ALIGN_NONE) {
      crossed++;
      if (k->off_lower != INT64_MIN && k->off_upper != INT64_MAX &&
          k->off_lower - k->off_upper > cross_max)
        cross_max = k->off_lower - k->off_upper;
    }
  }
  if (!(count[RP_ALIGN_ONE_BOUND] + count[RP_ALIGN_BOUNDS] + count[RP_ALIGN_ANCHORED])) return;
  char a[32], b[32], an[48] = "";
  if (amax)
    snprintf(
        an, sizeof an,
        amin == amax ? " (%" PRIu64 " collectives each)" : " (%" PRIu64 "-%" PRIu64 " collectives)",
        amin, amax);
  char err[200];
  if (r->align_err < 0)
    snprintf(err, sizeof err, "n/a (unbounded: a rank has no upper bound and no anchor)");
  else if (r->align_err == 0 && count[RP_ALIGN_ANCHORED])
    snprintf(err, sizeof err,
             "not measurable: the anchors' GPU stops agree to the ns on every rank (modelled or "
             "replayed clocks; real GPUs differ by microseconds)");
  else snprintf(err, sizeof err, "<= %s", dur(r->align_err, a, sizeof a));
  rp_note(f, width, 2,
          "GPU clocks aligned: %d rank%s anchored by simultaneous GPU stops%s, %d by two-sided "
          "bounds, %d by one bound only; cross-rank error %s",
          count[RP_ALIGN_ANCHORED], count[RP_ALIGN_ANCHORED] == 1 ? "" : "s", an,
          count[RP_ALIGN_BOUNDS], count[RP_ALIGN_ONE_BOUND], err);
  if (crossed)
    rp_note(f, width, 2,
            "enqueue bounds crossed on %d rank%s (an enqueue recorded up to %s after its kernel "
            "started): the upper bound is invalid there, so the offset to the host clock is known "
            "from below only (the stop callbacks); GPU against CPU times may be off by about "
            "that much%s",
            crossed, crossed == 1 ? "" : "s", dur(cross_max, b, sizeof b),
            count[RP_ALIGN_ANCHORED] ? "; across ranks the anchors hold" : "");
  if (r->align_warn && r->skew_gpu_all.n) {
    if (r->align_err < 0)
      rp_note(f, width, 2,
              "warning: the alignment error is unbounded; GPU skew and stragglers may be "
              "alignment artefacts");
    else
      rp_note(f, width, 2,
              "warning: the alignment error bound (%s) exceeds the median GPU start skew (%s); "
              "skew and stragglers below it are not resolved",
              dur(r->align_err, a, sizeof a),
              dur(rp_quant_get(&r->skew_gpu_all, 0.5), b, sizeof b));
  }
  if (r->skew_clamped)
    rp_note(f, width, 2,
            "%" PRIu64
            " GPU skews exceeded the first starter's kernel span and were cut to it "
            "(alignment off)",
            r->skew_clamped);
}

/* One row of the rank table (the columns of print_rank_table). */
static void times_row(rp_tab *t, const char *label, const rp_derived *d) {
  char a[32], b[80], c[32], e[32], g[32], x[80], h[32], i[32], j[32], cv[16];
  int kn = d->known;
  snprintf(cv, sizeof cv, "%.0f%%", d->covered_share * 100);
  rp_tab_cell(t, "%s", label);
  rp_tab_cell(t, "%s", dur(d->span, a, sizeof a));
  rp_tab_cell(t, "%s", dur_est(d->comm, d->comm_est, d->comm_error, b, sizeof b));
  rp_tab_cell(t, "%s", pct(d->comm_share, h, sizeof h));
  rp_tab_cell(t, "%s", dur_known(kn, d->compute, c, sizeof c));
  rp_tab_cell(t, "%s", dur_known(kn, d->overlap, e, sizeof e));
  rp_tab_cell(t, "%s", pct_known(kn && d->overlap_defined, d->overlap_ratio, i, sizeof i));
  rp_tab_cell(t, "%s", dur_known(kn, d->exposed, g, sizeof g));
  rp_tab_cell(t, "%s",
              dur_all(d->exposed_all_known, d->exposed_all_estimated, d->exposed_all,
                      d->exposed_all_error, kn ? d->exposed : 0, x, sizeof x));
  rp_tab_cell(t, "%s", dur_known(kn, d->idle, j, sizeof j));
  rp_tab_cell(t, "%s", kn ? cv : "n/a");
  rp_tab_end_row(t);
}

/* Under the rank table: how "exposed (all)" was estimated, and where it is n/a though compute is
 * known somewhere (no model: the reason); per-rank notes folded by kind. */
static void print_exposed_all_notes(const rp_report *r, FILE *f, int width, rp_fold *fo) {
  uint64_t lo = UINT64_MAX, hi = 0, out = 0;
  int est = 0;
  for (int i = 0; i < r->nranks; i++) {
    rp_derived d;
    rp_derive_rank(&r->ranks[i], &d);
    char note[320];
    if (d.known && !d.exposed_all_known) {
      snprintf(note, sizeof note, "exposed (all) n/a: %s",
               d.model.reason ? d.model.reason : RP_OMODEL_NO_COVER);
      rp_fold_add(fo, r->ranks[i].world_rank, note);
    }
    if (!d.exposed_all_estimated) continue;
    est = 1;
    if (d.model.windows == 1)
      rp_fold_add(fo, r->ranks[i].world_rank,
                  "exposed (all): its overlap model comes from one window, so nothing shows "
                  "whether the ratio holds over the run: the error is widened for it");
    if (d.model.form == RP_OMODEL_AFFINE) {
      char a[32];
      rp_fmt_ns(llround(d.model.a), a, sizeof a);
      snprintf(note, sizeof note,
               "exposed (all): a step's overlapped time follows %s + %.3f x its comm (the "
               "covered steps' intercept is not 0; ratio %.1f %% over them)",
               a, d.model.b, 100 * d.model.ratio);
      rp_fold_add(fo, r->ranks[i].world_rank, note);
    }
    if (d.model.chunks < lo) lo = d.model.chunks;
    if (d.model.chunks > hi) hi = d.model.chunks;
    out += d.model.outliers;
  }
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    if (!k->chunks_partial || !k->model.ok || !k->ncover || !k->nsteps) continue;
    int64_t win = 0, step = k->steps[k->nsteps / 2].stop - k->steps[k->nsteps / 2].start;
    for (size_t j = 0; j < k->ncover; j++)
      if (k->cover[2 * j + 1] - k->cover[2 * j] > win) win = k->cover[2 * j + 1] - k->cover[2 * j];
    char ws[32], ss[32], want[32], note[320];
    rp_fmt_ns(win, ws, sizeof ws);
    rp_fmt_ns(step, ss, sizeof ss);
    rp_fmt_ns(3 * step, want, sizeof want);
    snprintf(note, sizeof note,
             "no whole step (~%s) fits inside its CUPTI windows (at most %s): its model learns "
             "from parts of steps, which overlap differently; TOPO_PROFILER_CUPTI_WINDOW_MS of %s "
             "or more records whole ones",
             ss, ws, want);
    rp_fold_add(fo, k->world_rank, note);
  }
  rp_fold_print(fo, f, width, 2);
  if (!est) return;
  char n[48];
  if (lo == hi) snprintf(n, sizeof n, "%" PRIu64, lo);
  else snprintf(n, sizeof n, "%" PRIu64 "-%" PRIu64, lo, hi);
  rp_note(f, width, 2,
          "~: exposed (all) = exposed where compute was recorded + each step's uncovered comm "
          "less its predicted overlap a + b x comm, a line learned from the rank's covered steps "
          "(or CUPTI windows) of the whole input, %s covered chunks per rank: the ratio r "
          "(a = 0) unless their intercept is told apart from 0; ± at ~95 %%: the line's "
          "uncertainty (wide far from the covered steps' comm), its drift between the windows "
          "they lie in and their scatter (--json overlap_model; docs/metrics.md, Coverage)",
          n);
  if (out)
    rp_note(f, width, 2,
            "~: %" PRIu64
            " covered chunk(s) left out of the model: their overlap ratio lies "
            "more than max(5 points, 3 MADs) from the median of the others (warm-up steps, a "
            "phase of their own)",
            out);
}

/* Under the rank table: where compute is known (the covered column), and why not elsewhere;
 * folded by kind across ranks. */
static void print_coverage(const rp_report *r, FILE *f, int width, rp_fold *fo) {
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    rp_derived d;
    rp_derive_rank(k, &d);
    const char *why = rp_rank_unknown_reason(k);
    char note[640], steps[192];
    rp_rank_cover_steps(k, steps, sizeof steps);
    if (!d.known) {
      snprintf(note, sizeof note, "compute, overlap, exposed and idle n/a: %s",
               *why ? why : "the compute windows do not overlap its GPU activity");
      rp_fold_add(fo, k->world_rank, note);
    } else if (d.covered < d.span && d.overlap_defined) {
      snprintf(note, sizeof note,
               "compute, overlapped, overlap%%, exposed and idle count over the covered part of "
               "the span only (%s%s%s)%s%s",
               k->kineto ? "the Kineto trace" : "CUPTI windows", *steps ? ": " : "", steps,
               *why ? "; elsewhere: " : "", why);
      rp_fold_add(fo, k->world_rank, note);
    }
    if (d.known && !d.overlap_defined)
      rp_fold_add(fo, k->world_rank,
                  "overlap% n/a: no communication in the time its compute is known");
  }
  rp_fold_print(fo, f, width, 2);
  if (r->nranks > 1) {
    rp_derived o;
    rp_derive_overall(r, &o);
    if (o.ranks_known && o.ranks_known < r->nranks)
      rp_note(f, width, 2,
              "all ranks: compute-side sums over the %d of %d ranks with a compute timeline",
              o.ranks_known, r->nranks);
  }
  uint64_t unknown = r->est[RP_EST_UNKNOWN], est = 0;
  for (int l = RP_EST_KEY; l < RP_EST_LEVELS; l++) est += r->est[l];
  int all_k = r->nranks > 0;
  for (int i = 0; i < r->nranks; i++)
    all_k &= r->ranks[i].comm_from_kernels && r->ranks[i].cover_whole;
  if ((est || unknown) && all_k)
    rp_note(f, width, 2,
            "comm: from NCCL kernel records; the %" PRIu64
            " untimed collective records are estimated for the collective table only",
            est + unknown);
  else if (est || unknown)
    rp_note(f, width, 2,
            "comm: %" PRIu64 " untimed calls estimated from measured ones (%" PRIu64
            " of them by a fallback), %" PRIu64 " unknown (nothing measured to estimate from%s)",
            est, est - r->est[RP_EST_KEY], unknown, unknown ? ": comm is a lower bound" : "");
  if (r->lost)
    rp_note(f, width, 2,
            "%" PRIu64 " calls had GPU timing requested but lost (no kernel-channel stop)",
            r->lost);
}

/* Which input each table comes from, and the time each kind of input covers when both are given
 * (a Kineto trace usually covers a few profiled steps; topo traces the whole job). */
static void print_sources(const rp_report *r, FILE *f, int width) {
  int kin = 0, cupti = 0, coll = 0;
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    if (k->kineto) kin++;
    else if (k->trace_kernels) cupti++;
    else coll++;
  }
  if (!(r->have_kineto && r->have_trace)) return;
  char line[512];
  size_t at = (size_t)snprintf(line, sizeof line, "sources: GPU time per rank and steps from ");
  const char *sep = "";
  if (kin && at < sizeof line)
    at += (size_t)snprintf(line + at, sizeof line - at, "%sKineto GPU events (%d rank%s)", sep, kin,
                           kin == 1 ? "" : "s"),
        sep = ", ";
  if (cupti && at < sizeof line)
    at += (size_t)snprintf(line + at, sizeof line - at, "%stopo CUPTI kernel records (%d rank%s)",
                           sep, cupti, cupti == 1 ? "" : "s"),
        sep = ", ";
  if (coll && at < sizeof line)
    at += (size_t)snprintf(line + at, sizeof line - at, "%stopo collective records (%d rank%s)",
                           sep, coll, coll == 1 ? "" : "s");
  rp_note(f, width, 0, "%s; collectives, skew and stragglers from %s", line,
          r->colls_from_kineto ? "Kineto NCCL kernels (algorithm/protocol unknown)"
                               : "topo traces (NCCL profiler records)");
  if (r->trace_last > r->trace_first && r->kineto_last > r->kineto_first &&
      (r->trace_first < r->kineto_first || r->trace_last > r->kineto_last)) {
    char a[32], b[32], c[32], d[32];
    int64_t t0 = r->trace_first < r->kineto_first ? r->trace_first : r->kineto_first;
    rp_note(f, width, 2,
            "they cover different times: topo traces +%s .. +%s, Kineto +%s .. +%s (from the "
            "earliest, %" PRId64 " ns); give --window %" PRId64 ",%" PRId64
            " to restrict every figure to the Kineto time",
            dur(r->trace_first - t0, a, sizeof a), dur(r->trace_last - t0, b, sizeof b),
            dur(r->kineto_first - t0, c, sizeof c), dur(r->kineto_last - t0, d, sizeof d), t0,
            r->kineto_first, r->kineto_last + 1);
  }
}

static int cmp_row(const void *a, const void *b) {
  const rp_row *x = *(rp_row *const *)a, *y = *(rp_row *const *)b;
  if (x->func != y->func) return x->func - y->func;
  if (x->nranks != y->nranks) return x->nranks - y->nranks;
  if (x->bucket != y->bucket) return x->bucket - y->bucket;
  return (x->tag > y->tag) - (x->tag < y->tag);
}

/* The opening lines: what was read, which run, the events counted, the window, the span. */
static void print_header(const rp_report *r, FILE *f, int width) {
  char a[48], in[96] = "";
  int traces = 0, jsons = 0;
  for (int i = 0; i < r->nsrc; i++) r->src[i].kind == RP_SRC_TRACE ? traces++ : jsons++;
  if (traces && jsons)
    snprintf(in, sizeof in, " %d trace file%s and %d JSON file%s", traces, traces == 1 ? "" : "s",
             jsons, jsons == 1 ? "" : "s");
  else if (traces) snprintf(in, sizeof in, " %d trace file%s", traces, traces == 1 ? "" : "s");
  else if (jsons) snprintf(in, sizeof in, " %d JSON file%s", jsons, jsons == 1 ? "" : "s");
  rp_note(f, width, 0,
          "topo-report: %d rank%s from%s; %" PRIu64 " collectives (%" PRIu64 " GPU-timed), %" PRIu64
          " p2p",
          r->nranks, r->nranks == 1 ? "" : "s", in, r->colls, r->timed_colls, r->p2p);
  for (size_t i = 0; i < r->nruns; i++) {
    const rp_run_note *n = &r->runs[i];
    char when[48];
    rp_fmt_utc(n->first_ns, when, sizeof when);
    if (n->nruns > 1 && n->used)
      rp_note(f, width, 0,
              "run: %s holds %d runs of PyTorch traces; this is run %d (%s, %d file%s)", n->dir,
              n->nruns, n->used, when, n->files, n->files == 1 ? "" : "s");
    else if (n->nruns > 1)
      rp_note(f, width, 0,
              "runs: %s holds %d runs of PyTorch traces, all %d files read as one (--all-runs)",
              n->dir, n->nruns, n->files);
  }
  char sw[320];
  rp_note(f, width, 0, "events: %s", rp_step_window_text(r, sw, sizeof sw));
  if (r->window)
    rp_note(f, width, 0,
            "window: [%" PRId64 ", %" PRId64
            ") ns since the Unix epoch (%s); every figure below is clipped to it",
            r->win_from, r->win_to,
            r->win_to - r->win_from > 0 && r->win_from != INT64_MIN && r->win_to != INT64_MAX
                ? dur(r->win_to - r->win_from, a, sizeof a)
                : "open-ended");
  if (r->overall.last > r->overall.first)
    rp_note(f, width, 0, "wall span of GPU activity: %s",
            dur(rp_sub_sat(r->overall.last, r->overall.first), a, sizeof a));
  print_sources(r, f, width);
}

/* GPU time per rank: the unions of every rank and their sum, then the coverage notes. */
static void print_rank_table(const rp_report *r, FILE *f, int width) {
  fprintf(f, "\n");
  rp_note(f, width, 0, "GPU time per rank (unions over all streams; docs/metrics.md%s)",
          r->have_kineto && !r->have_trace ? "; from Kineto GPU events" : "");
  static const char *const head[] = {
      "",         "span",    "comm",          "comm%", "compute", "overlapped",
      "overlap%", "exposed", "exposed (all)", "idle",  "covered"};
  rp_tab *t = rp_tab_new(11);
  /* each figure's widest form, so that the table keeps its shape: durations "999.999 ms",
   * an estimated total "999.999 ms ±999.99 us (est. 99%)", "~999.999 ms ±999.99 us", "99.9%" */
  static const int min[] = {15, 10, 31, 6, 10, 10, 8, 10, 22, 10, 7};
  for (int c = 0; c < 11; c++) {
    rp_tab_col(t, c, head[c], c ? 0 : RP_TAB_LEFT | RP_TAB_KEY);
    rp_tab_min(t, c, min[c]);
  }
  for (int i = 0; i < r->nranks; i++) {
    rp_derived dv;
    rp_derive_rank(&r->ranks[i], &dv);
    char label[64];
    rank_label(&r->ranks[i], label, sizeof label);
    if (r->ranks[i].comm_from_kernels) strncat(label, " (k)", sizeof label - strlen(label) - 1);
    times_row(t, label, &dv);
  }
  if (r->nranks > 1) {
    rp_derived dv;
    rp_derive_overall(r, &dv);
    times_row(t, "all ranks (sum)", &dv);
  }
  rp_tab_print(t, f, width, 2);
  rp_tab_free(t);
  int any_k = 0;
  for (int i = 0; i < r->nranks; i++) any_k |= r->ranks[i].comm_from_kernels;
  if (any_k)
    rp_note(f, width, 2, "(k): communication from NCCL kernel records, not collective records");
  rp_note(f, width, 2, "covered: share of the span where the compute timeline is known");
  rp_fold *fo = rp_fold_new();
  print_coverage(r, f, width, fo);
  print_exposed_all_notes(r, f, width, fo);
  rp_fold_free(fo);
}

/* One row of the collective table; its tag column first when `tags`. */
static void coll_row(rp_tab *t, const rp_row *w, int tags) {
  char a[48], b[48], c[48], size[32], choice[80], label[64], ch[32], total_bytes[32];
  rp_bucket_label(w->bucket, size, sizeof size);
  int al, pr;
  double share;
  rp_row_top_choice(w, &al, &pr, &share);
  /* "?": Kineto kernel names only, the algorithm/protocol is unknown; "sym ...": a symmetric
   * kernel's variant */
  rp_row_choice_label(w, label, sizeof label);
  snprintf(choice, sizeof choice, "%s %.0f%%", label, share * 100);
  if (tags) {
    if (w->tag) rp_tab_cell(t, "%" PRIu64, w->tag);
    else rp_tab_cell(t, "-");
  }
  if (w->ch_max)
    snprintf(ch, sizeof ch, w->ch_min == w->ch_max ? "%d" : "%d-%d", w->ch_min, w->ch_max);
  else snprintf(ch, sizeof ch, "?");
  char nranks[16] = "?"; /* unknown sizes and ranks: "?" */
  if (rp_row_size_known(w)) rp_fmt_bytes(w->size_sum, total_bytes, sizeof total_bytes);
  else snprintf(total_bytes, sizeof total_bytes, "?");
  if (rp_row_ranks_known(w)) snprintf(nranks, sizeof nranks, "%d", w->nranks);
  rp_tab_cell(t, "%s", rp_func_name(w->func));
  rp_tab_cell(t, "%s", nranks);
  rp_tab_cell(t, "%s", size);
  rp_tab_cell(t, "%" PRIu64, w->calls);
  rp_tab_cell(t, "%" PRIu64, w->timed);
  rp_tab_cell(t, "%" PRIu64, w->estimated);
  rp_tab_cell(t, "%s", total_bytes);
  rp_tab_cell(t, "%s", w->timed ? dur(rp_dbl_ns(w->time.sum), a, sizeof a) : "-");
  rp_tab_cell(t, "%s", w->timed ? dur(rp_quant_get(&w->time, 0.5), b, sizeof b) : "-");
  rp_tab_cell(t, "%s", w->timed ? dur(rp_quant_get(&w->time, 0.99), c, sizeof c) : "-");
  rp_tab_cell(t, "%s",
              !w->timed               ? "-"
              : rp_row_algbw_known(w) ? gbs(rp_row_algbw(w), a, sizeof a)
                                      : "?");
  rp_tab_cell(t, "%s",
              !w->timed               ? "-"
              : rp_row_busbw_known(w) ? gbs(rp_row_busbw(w), b, sizeof b)
                                      : "?");
  rp_tab_cell(t, "%s",
              w->xfer.n && rp_row_busbw_known(w) ? gbs(rp_row_busbw_xfer(w), c, sizeof c) : "-");
  rp_tab_cell(t, "%s", choice);
  rp_tab_cell(t, "%s", ch);
  rp_tab_end_row(t);
}

/* The collective table, rows sorted by function, communicator size and size. */
static void print_collectives(const rp_report *r, FILE *f, int width) {
  if (!r->nrows) return;
  rp_row **rows = malloc(r->nrows * sizeof *rows);
  if (!rows) return;
  memcpy(rows, r->rows, r->nrows * sizeof *rows);
  qsort(rows, r->nrows, sizeof *rows, cmp_row);
  fprintf(f, "\n");
  rp_note(f, width, 0,
          "Collectives (GPU time per rank and call; size as nccl-tests counts it; from %s)",
          r->colls_from_kineto ? "Kineto NCCL kernels" : "topo traces");
  static const char *const head[] = {"tag",
                                     "collective",
                                     "ranks",
                                     "size",
                                     "calls",
                                     "timed",
                                     "est.",
                                     "bytes",
                                     "timed total",
                                     "median",
                                     "p99",
                                     "algbw",
                                     "busbw",
                                     "busbw after last start",
                                     "algorithm/protocol",
                                     "channels"};
  int tags = r->have_tags != 0, skip = !tags; /* the tag column only when a row has a tag */
  rp_tab *t = rp_tab_new(16 - skip);
  static const int min[] = {0, 10, 5, 8, 6, 6, 5, 9, 10, 10, 10, 7, 7, 7, 18, 5};
  for (int c = skip; c < 16; c++) {
    rp_tab_col(t, c - skip, head[c], c <= 1 ? RP_TAB_LEFT | RP_TAB_KEY : c == 14 ? RP_TAB_LEFT : 0);
    rp_tab_min(t, c - skip, min[c]);
  }
  for (size_t i = 0; i < r->nrows; i++) coll_row(t, rows[i], tags);
  rp_tab_print(t, f, width, 2);
  rp_tab_free(t);
  rp_note(f, width, 2,
          "timed total, median, p99, algbw, busbw (GB/s, nccl-tests factors): GPU-timed calls "
          "only, whole kernel time (it includes waiting for the last rank to start); busbw after "
          "last start: from the last rank's kernel start to each rank's stop, where every rank's "
          "GPU start is known (the transfer without that wait); est.: untimed calls given an "
          "estimate");
  free(rows);
}

typedef struct straggler {
  int64_t late; /* delay caused */
  int rank;     /* index in r->ranks */
} straggler;

/* Most delay first; ranks in their order on ties. */
static int cmp_straggler(const void *a, const void *b) {
  const straggler *x = a, *y = b;
  if (x->late != y->late) return x->late > y->late ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Stragglers: ranks by the delay they caused as the last to start (the first 8). */
static void print_stragglers(const rp_report *r, FILE *f, int width) {
  int pairs = r->skew[ncclFuncSend].n > 0;
  char a[48], b[48];
  straggler *order = malloc((size_t)(r->nranks ? r->nranks : 1) * sizeof *order);
  if (!order) return;
  for (int i = 0; i < r->nranks; i++) order[i] = (straggler){r->ranks[i].late_total, i};
  qsort(order, (size_t)r->nranks, sizeof *order, cmp_straggler);
  fprintf(f, "\n");
  rp_note(f, width, 0,
          "Stragglers (the rank that starts a collective%s last makes the others wait%s)",
          pairs ? " or a Send/Recv pair" : "",
          r->nranks > 8 ? "; the 8 that caused the most delay" : "");
  static const char *const head[] = {
      "", "last", "of joined", "by gpu", "delay caused", "time waiting", "missed"};
  rp_tab *t = rp_tab_new(7);
  for (int c = 0; c < 7; c++) rp_tab_col(t, c, head[c], c ? 0 : RP_TAB_LEFT | RP_TAB_KEY);
  for (int i = 0; i < r->nranks && i < 8; i++) {
    const rp_rank *k = &r->ranks[order[i].rank];
    char label[64];
    rank_label(k, label, sizeof label);
    rp_tab_cell(t, "%s", label);
    rp_tab_cell(t, "%" PRIu64, k->last_count);
    rp_tab_cell(t, "%" PRIu64, k->joined);
    rp_tab_cell(t, "%" PRIu64, k->joined_gpu);
    rp_tab_cell(t, "%s", dur(k->late_total, a, sizeof a));
    rp_tab_cell(t, "%s", dur(k->wait_total, b, sizeof b));
    rp_tab_cell(t, "%" PRIu64, k->missed);
    rp_tab_end_row(t);
  }
  rp_tab_print(t, f, width, 2);
  rp_tab_free(t);
  free(order);
  uint64_t cut = 0;
  for (int i = 0; i < r->nranks; i++) cut += r->ranks[i].wait_clamped_enqueue;
  if (cut)
    rp_note(f, width, 2,
            "%" PRIu64
            " waits judged by CPU enqueue were cut to the rank's own kernel (measured or "
            "estimated): their enqueues were recorded later than the kernels could wait",
            cut);
}

/* Start skew across ranks per function, the clock alignment behind it, and the stragglers; or why
 * there is none. */
static void print_skew(const rp_report *r, FILE *f, int width) {
  char a[48], b[48], c[48];
  int any_skew = 0;
  for (int i = 0; i < RP_MAX_FUNC; i++) any_skew |= r->skew[i].n > 0;
  if (!any_skew) {
    const char *why = rp_skew_unknown_reason(r);
    if (*why) {
      fprintf(f, "\n");
      rp_note(f, width, 0, "Start skew and stragglers: n/a: %s", why);
      rp_kineto_straggler_hint(r, f, width);
    }
    return;
  }
  fprintf(f, "\n");
  rp_note(f, width, 0,
          "Start skew across ranks (same collective joined by comm hash, function and seq%s; from "
          "GPU kernel starts where every joined rank has them, else from CPU enqueue)",
          r->skew[ncclFuncSend].n
              ? "; Send/Recv: the k-th Send from a rank to a peer with the k-th "
                "Recv there from it"
              : "");
  static const char *const head[] = {"collective", "by gpu", "by cpu enq.", "median", "p99", "max"};
  rp_tab *t = rp_tab_new(6);
  for (int i = 0; i < 6; i++) rp_tab_col(t, i, head[i], i ? 0 : RP_TAB_LEFT | RP_TAB_KEY);
  for (int i = 0; i < RP_MAX_FUNC; i++) {
    const rp_quant *q = &r->skew[i];
    if (!q->n) continue;
    rp_tab_cell(t, "%s", rp_skew_name(i));
    rp_tab_cell(t, "%" PRIu64, r->skew_gpu[i]);
    rp_tab_cell(t, "%" PRIu64, q->n - r->skew_gpu[i]);
    rp_tab_cell(t, "%s", dur(rp_quant_get(q, 0.5), a, sizeof a));
    rp_tab_cell(t, "%s", dur(rp_quant_get(q, 0.99), b, sizeof b));
    rp_tab_cell(t, "%s", dur(q->max, c, sizeof c));
    rp_tab_end_row(t);
  }
  rp_tab_print(t, f, width, 2);
  rp_tab_free(t);
  print_alignment(r, f, width);
  print_stragglers(r, f, width);
}

/* Communicators with ranks missing or collectives some rank lacks; ranks that missed some. */
static void print_join_gaps(const rp_report *r, FILE *f, int width) {
  for (size_t i = 0; i < r->ncomms; i++) {
    const rp_comm_summary *cs = &r->comms[i];
    if (cs->ranks_seen < cs->nranks)
      rp_note(f, width, 2, "comm %016" PRIx64 ": traces of %d of its %d ranks were given", cs->hash,
              cs->ranks_seen, cs->nranks);
    if (cs->incomplete)
      rp_note(f, width, 2,
              "comm %016" PRIx64 ": %" PRIu64 " of %" PRIu64
              " collectives lack some rank's record (a rank died, dropped records or its trace "
              "was cut)",
              cs->hash, cs->incomplete, cs->joined);
    if (cs->p2p_unmatched)
      rp_note(f, width, 2,
              "comm %016" PRIx64 ": %" PRIu64 " of %" PRIu64
              " p2p operations found no partner (the peer's record never came: its trace not "
              "given or cut, a record lost): not joined, no rank counted missing",
              cs->hash, cs->p2p_unmatched, 2 * cs->p2p_pairs + cs->p2p_unmatched);
    if (cs->late)
      rp_note(f, width, 2,
              "comm %016" PRIx64 ": %" PRIu64
              " records came after their collective was closed (written more seqs out of order "
              "than the join holds): not joined",
              cs->hash, cs->late);
  }
  rp_fold *fo = rp_fold_new();
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].missed) {
      char note[128];
      snprintf(note, sizeof note, "no record of %" PRIu64 " collectives the other ranks ran",
               r->ranks[i].missed);
      rp_fold_add(fo, r->ranks[i].world_rank, note);
    }
  rp_fold_print(fo, f, width, 2);
  rp_fold_free(fo);
}

/* One row of the step table. */
static void step_row(rp_tab *t, const rp_stepsum *s) {
  char a[48], c[48], d[48], x[80], e[32], g[32], cm[80], cv[48];
  int kn = s->cov_ranks > 0;
  if (kn) snprintf(cv, sizeof cv, "%.0f%%", rp_ratio(s->covered, s->span) * 100);
  if (s->last > s->value)
    rp_tab_cell(t, "%" PRIu64 "-%" PRIu64 "%s", s->value, s->last, s->warmup ? " w" : "");
  else rp_tab_cell(t, "%" PRIu64 "%s", s->value, s->warmup ? " w" : "");
  rp_tab_cell(t, "%d", s->ranks);
  rp_tab_cell(t, "%s", dur(s->span / (s->ranks ? s->ranks : 1), a, sizeof a));
  rp_tab_cell(
      t, "%s",
      dur_est(s->comm, s->comm_est, rp_comm_error_ns(s->comm_est, &s->comm_err), cm, sizeof cm));
  rp_tab_cell(t, "%s", pct(rp_ratio(s->comm, s->span), e, sizeof e));
  rp_tab_cell(t, "%s", dur_known(kn, s->cov_compute, c, sizeof c));
  rp_tab_cell(t, "%s", dur_known(kn, s->cov_comm - s->cov_overlap, d, sizeof d));
  rp_tab_cell(t, "%s",
              dur_all(s->ea_ranks > 0, s->ea_estimated, s->exposed_all, rp_err_ns(&s->exposed_err),
                      kn ? s->cov_comm - s->cov_overlap : 0, x, sizeof x));
  rp_tab_cell(t, "%s",
              pct_known(kn && s->cov_comm > 0, rp_ratio(s->cov_overlap, s->cov_comm), g, sizeof g));
  rp_tab_cell(t, "%s", kn ? cv : "n/a");
  rp_tab_end_row(t);
}

/* The step table (the last 20 steps), or why there is none. */
static void print_steps(const rp_report *r, FILE *f, int width) {
  if (r->nstepsum) {
    char origin[256];
    fprintf(f, "\n");
    rp_note(f, width, 0, "Steps %s", rp_steps_origin(r, origin, sizeof origin));
    rp_note(f, width, 2,
            "(sums over ranks; comm%% and overlap%% of those sums; compute, exposed and overlap%% "
            "over the covered time of the ranks with a compute timeline; exposed (all) over the "
            "whole step, ~ estimated where compute was not recorded)");
    if (r->step_shift)
      rp_note(f, width, 2,
              "(each row: %llu consecutive step numbers, over their time: more than %d steps a "
              "rank; --all-steps gives one row per step)",
              1ull << r->step_shift, RP_STEPS_KEEP);
    static const char *const head[] = {"step",     "ranks",   "mean span", "comm",
                                       "comm%",    "compute", "exposed",   "exposed (all)",
                                       "overlap%", "covered"};
    rp_tab *t = rp_tab_new(10);
    static const int min[] = {4, 5, 10, 31, 6, 10, 10, 22, 8, 7};
    for (int c = 0; c < 10; c++) {
      rp_tab_col(t, c, head[c], c ? 0 : RP_TAB_LEFT | RP_TAB_KEY);
      rp_tab_min(t, c, min[c]);
    }
    int known = 0;
    for (size_t i = 0; i < r->nstepsum; i++) known |= r->stepsum[i].cov_ranks > 0;
    size_t from = r->nstepsum > 20 ? r->nstepsum - 20 : 0;
    if (from) rp_note(f, width, 2, "(the last 20 of %zu steps; --json has all)", r->nstepsum);
    int warm = 0;
    for (size_t i = from; i < r->nstepsum; i++) {
      step_row(t, &r->stepsum[i]);
      warm |= r->stepsum[i].warmup;
    }
    rp_tab_print(t, f, width, 2);
    rp_tab_free(t);
    if (warm)
      rp_note(f, width, 2,
              "w: before the steady state on some rank (warm-up: the step's duration had not "
              "settled yet); start-up is left out of the rank table's compute, overlap and "
              "exposed figures");
    if (!known)
      rp_note(f, width, 2,
              "n/a: no compute was recorded (give the Kineto traces of these steps, or widen the "
              "profiler's CUPTI windows: TOPO_PROFILER_CUPTI=on)");
  } else if (r->steps_detect == RP_STEPS_NONE) {
    fprintf(f, "\n");
    rp_note(f, width, 0, "Steps: %s", RP_STEPS_NONE_TEXT);
  }
}

/* Events the profiler dropped, damaged trace files, and collectives without GPU timing. */
static void print_data_quality(const rp_report *r, FILE *f, int width) {
  uint64_t dropped[TOPO_DROP_KINDS] = {0};
  uint32_t problems = 0;
  for (int i = 0; i < r->nranks; i++) {
    for (int k = 0; k < TOPO_DROP_KINDS; k++) dropped[k] += r->ranks[i].dropped[k];
    problems += r->ranks[i].problems;
  }
  uint64_t dsum = 0;
  for (int k = 0; k < TOPO_DROP_KINDS; k++) dsum += dropped[k];
  if (dsum || problems) {
    fprintf(f, "\nData quality\n");
    if (dsum)
      rp_note(f, width, 2,
              "the profiler dropped %" PRIu64 " events (collectives %" PRIu64
              ", kernel/proxy %" PRIu64 ", records %" PRIu64 ", I/O %" PRIu64 ", CUPTI %" PRIu64
              ", never stopped before finalize %" PRIu64 ")",
              dsum, dropped[TOPO_DROP_COLL], dropped[TOPO_DROP_CHILD], dropped[TOPO_DROP_RECORD],
              dropped[TOPO_DROP_IO], dropped[TOPO_DROP_CUPTI], dropped[TOPO_DROP_OTHER]);
    if (problems)
      rp_note(f, width, 2, "%u problems in trace files (see the warnings above)", problems);
  }
  if (r->timed_colls < r->colls && !r->colls_from_kineto) {
    int all_k = r->nranks > 0;
    for (int i = 0; i < r->nranks; i++) all_k &= r->ranks[i].comm_from_kernels;
    if (!all_k) {
      fprintf(f, "\n");
      rp_note(
          f, width, 0,
          "note: %" PRIu64 " of %" PRIu64
          " collectives have no GPU timing; their durations are estimated from the timed ones "
          "(placement on the stream approximate; docs/metrics.md)%s",
          r->colls - r->timed_colls, r->colls,
          r->est[RP_EST_UNKNOWN] ? ", and those with nothing to estimate from add nothing" : "");
    }
  }
}

void rp_render_text(const rp_report *r, FILE *f) {
  int width = rp_text_width(r);
  print_header(r, f, width);
  print_rank_table(r, f, width);
  print_collectives(r, f, width);
  print_skew(r, f, width);
  print_join_gaps(r, f, width);
  print_steps(r, f, width);
  rp_render_kernels_text(r, f);
  print_data_quality(r, f, width);
  rp_render_next_text(r, f, width);
}
