// SPDX-License-Identifier: Apache-2.0
// Terminal tables: per-rank unions (span, communication, compute, overlap, exposed, idle), the
// collective table, cross-rank skew and stragglers, steps, and input problems. Reads rp_report.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "report.h"

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
static const char *dur_all(int known, int estimated, int64_t ns, int64_t err, char *buf,
                           size_t len) {
  char a[32], b[32];
  if (!known) return "n/a";
  if (!estimated) return dur(ns, buf, len);
  snprintf(buf, len, "~%s ±%s", dur(ns, a, sizeof a), dur(err, b, sizeof b));
  return buf;
}

/* The cross-rank alignment of GPU clocks: how each rank was aligned, the bound on the relative
 * error of two ranks' GPU times, and a warning when that bound is not below the skew shown. */
static void print_alignment(const rp_report *r, FILE *f) {
  int count[RP_ALIGN_ANCHORED + 1] = {0}, inconsistent = 0;
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    if (k->align_method >= 0 && k->align_method <= RP_ALIGN_ANCHORED) count[k->align_method]++;
    inconsistent += k->align_inconsistent && k->align_method != RP_ALIGN_NONE;
  }
  if (!(count[RP_ALIGN_ONE_BOUND] + count[RP_ALIGN_BOUNDS] + count[RP_ALIGN_ANCHORED])) return;
  char a[32], b[32];
  fprintf(f,
          "  GPU clocks aligned: %d rank%s anchored by simultaneous GPU stops, %d by two-sided "
          "bounds, %d by one bound only; cross-rank error <= %s\n",
          count[RP_ALIGN_ANCHORED], count[RP_ALIGN_ANCHORED] == 1 ? "" : "s",
          count[RP_ALIGN_BOUNDS], count[RP_ALIGN_ONE_BOUND],
          r->align_err < 0 ? "n/a (unbounded: no upper bound, no anchor)"
                           : dur(r->align_err, a, sizeof a));
  if (inconsistent)
    fprintf(f,
            "  bounds crossed on %d rank%s (an enqueue recorded after its kernel started); the "
            "lower bound was kept\n",
            inconsistent, inconsistent == 1 ? "" : "s");
  if (r->align_warn && r->skew_gpu_all.n) {
    if (r->align_err < 0)
      fprintf(f,
              "  warning: the alignment error is unbounded; GPU skew and stragglers may be "
              "alignment artefacts\n");
    else
      fprintf(f,
              "  warning: the alignment error bound (%s) exceeds the median GPU start skew (%s); "
              "skew and stragglers below it are not resolved\n",
              dur(r->align_err, a, sizeof a),
              dur(rp_quant_get(&r->skew_gpu_all, 0.5), b, sizeof b));
  }
  if (r->skew_clamped)
    fprintf(f,
            "  %" PRIu64
            " GPU skews exceeded the first starter's kernel span and were cut to it "
            "(alignment off)\n",
            r->skew_clamped);
}

static void print_times_row(FILE *f, const char *label, const rp_derived *d) {
  char a[32], b[80], c[32], e[32], g[32], x[80], h[32], i[32], j[32];
  int kn = d->known;
  fprintf(f, "  %-16s %12s %32s %12s %12s %12s %24s %7s %8s %12s\n", label,
          dur(d->span, a, sizeof a), dur_est(d->comm, d->comm_est, d->comm_error, b, sizeof b),
          dur_known(kn, d->compute, c, sizeof c), dur_known(kn, d->overlap, e, sizeof e),
          dur_known(kn, d->exposed, g, sizeof g),
          dur_all(d->exposed_all_known, d->exposed_all_estimated, d->exposed_all,
                  d->exposed_all_error, x, sizeof x),
          pct(d->comm_share, h, sizeof h),
          pct_known(kn && d->overlap_defined, d->overlap_ratio, i, sizeof i),
          dur_known(kn, d->idle, j, sizeof j));
}

/* Under the rank table: how "exposed (all)" was estimated, and where it is n/a though compute is
 * known somewhere (no model: the reason). */
static void print_exposed_all_notes(const rp_report *r, FILE *f) {
  uint64_t lo = UINT64_MAX, hi = 0, out = 0;
  int est = 0;
  for (int i = 0; i < r->nranks; i++) {
    rp_derived d;
    rp_derive_rank(&r->ranks[i], &d);
    char label[64];
    rank_label(&r->ranks[i], label, sizeof label);
    if (d.known && !d.exposed_all_known)
      fprintf(f, "  %s: exposed (all) n/a: %s\n", label,
              d.model.reason ? d.model.reason : RP_OMODEL_NO_COVER);
    if (!d.exposed_all_estimated) continue;
    est = 1;
    if (d.model.chunks < lo) lo = d.model.chunks;
    if (d.model.chunks > hi) hi = d.model.chunks;
    out += d.model.outliers;
  }
  if (!est) return;
  char n[48];
  if (lo == hi) snprintf(n, sizeof n, "%" PRIu64, lo);
  else snprintf(n, sizeof n, "%" PRIu64 "-%" PRIu64, lo, hi);
  fprintf(f,
          "  ~: exposed (all) = exposed where compute was recorded + the rest of comm x (1 - r), "
          "± the rest x s; r = overlapped / comm over the rank's covered steps (or CUPTI windows) "
          "of the whole input, s = the comm-weighted spread of their ratios, from %s covered "
          "chunks per rank (--json overlap_model; docs/metrics.md, Coverage)\n",
          n);
  if (out)
    fprintf(f,
            "  ~: %" PRIu64
            " covered chunk(s) left out of the model: their overlap ratio lies "
            "more than max(5 points, 3 MADs) from the median of the others (warm-up steps, a "
            "phase of their own)\n",
            out);
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    if (!k->chunks_partial || !k->model.ok || !k->ncover || !k->nsteps) continue;
    int64_t win = 0, step = k->steps[k->nsteps / 2].stop - k->steps[k->nsteps / 2].start;
    for (size_t j = 0; j < k->ncover; j++)
      if (k->cover[2 * j + 1] - k->cover[2 * j] > win) win = k->cover[2 * j + 1] - k->cover[2 * j];
    char label[64], ws[32], ss[32], want[32];
    rank_label(k, label, sizeof label);
    rp_fmt_ns(win, ws, sizeof ws);
    rp_fmt_ns(step, ss, sizeof ss);
    rp_fmt_ns(3 * step, want, sizeof want);
    fprintf(f,
            "  ~: %s: no whole step (~%s) fits inside its CUPTI windows (at most %s): its model "
            "learns from parts of steps, which overlap differently; "
            "TOPO_PROFILER_CUPTI_WINDOW_MS of %s or more records whole ones\n",
            label, ss, ws, want);
  }
}

/* Under the rank table: over how much of the span compute is known, and why not elsewhere. */
static void print_coverage(const rp_report *r, FILE *f) {
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    rp_derived d;
    rp_derive_rank(k, &d);
    char label[64];
    rank_label(k, label, sizeof label);
    const char *why = rp_rank_unknown_reason(k);
    if (!d.known)
      fprintf(f, "  %s: compute, overlap, exposed and idle n/a: %s\n", label,
              *why ? why : "the compute windows do not overlap its GPU activity");
    else if (d.covered < d.span && d.overlap_defined) {
      char steps[192];
      rp_rank_cover_steps(k, steps, sizeof steps);
      fprintf(f, "  %s: overlap %.1f%% over %.0f%% of the span covered by %s%s%s%s%s%s\n", label,
              d.overlap_ratio * 100, d.covered_share * 100,
              k->kineto ? "the Kineto trace" : "CUPTI windows", *steps ? " (" : "", steps,
              *steps ? ")" : "", *why ? "; elsewhere: " : "", why);
    }
    if (d.known && !d.overlap_defined)
      fprintf(f, "  %s: overlap%% n/a: no communication in the time its compute is known\n", label);
  }
  if (r->nranks > 1) {
    rp_derived o;
    rp_derive_overall(r, &o);
    if (o.ranks_known && o.ranks_known < r->nranks)
      fprintf(f, "  all ranks: compute-side sums over the %d of %d ranks with a compute timeline\n",
              o.ranks_known, r->nranks);
  }
  uint64_t unknown = r->est[RP_EST_UNKNOWN], est = 0;
  for (int l = RP_EST_KEY; l < RP_EST_LEVELS; l++) est += r->est[l];
  int all_k = r->nranks > 0;
  for (int i = 0; i < r->nranks; i++)
    all_k &= r->ranks[i].comm_from_kernels && r->ranks[i].cover_whole;
  if ((est || unknown) && all_k)
    fprintf(f,
            "  comm: from NCCL kernel records; the %" PRIu64
            " untimed collective records are "
            "estimated for the collective table only\n",
            est + unknown);
  else if (est || unknown)
    fprintf(f,
            "  comm: %" PRIu64 " untimed calls estimated from measured ones (%" PRIu64
            " of them by "
            "a fallback), %" PRIu64 " unknown (nothing measured to estimate from%s)\n",
            est, est - r->est[RP_EST_KEY], unknown, unknown ? ": comm is a lower bound" : "");
  if (r->lost)
    fprintf(f, "  %" PRIu64 " calls had GPU timing requested but lost (no kernel-channel stop)\n",
            r->lost);
}

/* Which input each table comes from, and the time each kind of input covers when both are given
 * (a Kineto trace usually covers a few profiled steps; topo traces the whole job). */
static void print_sources(const rp_report *r, FILE *f) {
  int kin = 0, cupti = 0, coll = 0;
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    if (k->kineto) kin++;
    else if (k->trace_kernels) cupti++;
    else coll++;
  }
  if (!(r->have_kineto && r->have_trace)) return;
  fprintf(f, "sources: GPU time per rank and steps from ");
  const char *sep = "";
  if (kin) fprintf(f, "%sKineto GPU events (%d rank%s)", sep, kin, kin == 1 ? "" : "s"), sep = ", ";
  if (cupti)
    fprintf(f, "%stopo CUPTI kernel records (%d rank%s)", sep, cupti, cupti == 1 ? "" : "s"),
        sep = ", ";
  if (coll) fprintf(f, "%stopo collective records (%d rank%s)", sep, coll, coll == 1 ? "" : "s");
  fprintf(f, "; collectives, skew and stragglers from %s\n",
          r->colls_from_kineto ? "Kineto NCCL kernels (algorithm/protocol unknown)"
                               : "topo traces (NCCL profiler records)");
  if (r->trace_last > r->trace_first && r->kineto_last > r->kineto_first &&
      (r->trace_first < r->kineto_first || r->trace_last > r->kineto_last)) {
    char a[32], b[32], c[32], d[32];
    int64_t t0 = r->trace_first < r->kineto_first ? r->trace_first : r->kineto_first;
    fprintf(f,
            "  they cover different times: topo traces +%s .. +%s, Kineto +%s .. +%s (from the "
            "earliest, %" PRId64 " ns);\n  give --window %" PRId64 ",%" PRId64
            " to restrict every figure to the Kineto time\n",
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
static void print_header(const rp_report *r, FILE *f) {
  char a[48];
  int traces = 0, jsons = 0;
  for (int i = 0; i < r->nsrc; i++) r->src[i].kind == RP_SRC_TRACE ? traces++ : jsons++;
  fprintf(f, "topo-report: %d rank%s from", r->nranks, r->nranks == 1 ? "" : "s");
  if (traces) fprintf(f, " %d trace file%s", traces, traces == 1 ? "" : "s");
  if (traces && jsons) fprintf(f, " and");
  if (jsons) fprintf(f, " %d JSON file%s", jsons, jsons == 1 ? "" : "s");
  fprintf(f, "; %" PRIu64 " collectives (%" PRIu64 " GPU-timed), %" PRIu64 " p2p\n", r->colls,
          r->timed_colls, r->p2p);
  for (size_t i = 0; i < r->nruns; i++) {
    const rp_run_note *n = &r->runs[i];
    char when[48];
    rp_fmt_utc(n->first_ns, when, sizeof when);
    if (n->nruns > 1 && n->used)
      fprintf(f, "run: %s holds %d runs of PyTorch traces; this is run %d (%s, %d file%s)\n",
              n->dir, n->nruns, n->used, when, n->files, n->files == 1 ? "" : "s");
    else if (n->nruns > 1)
      fprintf(f,
              "runs: %s holds %d runs of PyTorch traces, all %d files read as one (--all-runs)\n",
              n->dir, n->nruns, n->files);
  }
  char sw[320];
  fprintf(f, "events: %s\n", rp_step_window_text(r, sw, sizeof sw));
  if (r->window)
    fprintf(f,
            "window: [%" PRId64 ", %" PRId64
            ") ns since the Unix epoch (%s); every figure below "
            "is clipped to it\n",
            r->win_from, r->win_to,
            r->win_to - r->win_from > 0 && r->win_from != INT64_MIN && r->win_to != INT64_MAX
                ? dur(r->win_to - r->win_from, a, sizeof a)
                : "open-ended");
  if (r->overall.last > r->overall.first)
    fprintf(f, "wall span of GPU activity: %s\n",
            dur(r->overall.last - r->overall.first, a, sizeof a));
  print_sources(r, f);
}

/* GPU time per rank: the unions of every rank and their sum, then the coverage notes. */
static void print_rank_table(const rp_report *r, FILE *f) {
  fprintf(f, "\nGPU time per rank (unions over all streams; docs/metrics.md%s)\n",
          r->have_kineto && !r->have_trace ? "; from Kineto GPU events" : "");
  fprintf(f, "  %-16s %12s %32s %12s %12s %12s %24s %7s %8s %12s\n", "", "span", "comm", "compute",
          "overlapped", "exposed", "exposed (all)", "comm%", "overlap%", "idle");
  for (int i = 0; i < r->nranks; i++) {
    rp_derived dv;
    rp_derive_rank(&r->ranks[i], &dv);
    char label[64];
    rank_label(&r->ranks[i], label, sizeof label);
    if (r->ranks[i].comm_from_kernels) strncat(label, " (k)", sizeof label - strlen(label) - 1);
    print_times_row(f, label, &dv);
  }
  if (r->nranks > 1) {
    rp_derived dv;
    rp_derive_overall(r, &dv);
    print_times_row(f, "all ranks (sum)", &dv);
  }
  int any_k = 0;
  for (int i = 0; i < r->nranks; i++) any_k |= r->ranks[i].comm_from_kernels;
  if (any_k) fprintf(f, "  (k): communication from NCCL kernel records, not collective records\n");
  print_coverage(r, f);
  print_exposed_all_notes(r, f);
}

/* One row of the collective table; its tag column only when `tags`. */
static void print_coll_row(FILE *f, const rp_row *w, int tags) {
  char a[48], b[48], c[48], size[32], choice[80], label[64], ch[32];
  rp_bucket_label(w->bucket, size, sizeof size);
  int al, pr;
  double share;
  rp_row_top_choice(w, &al, &pr, &share);
  /* "?": Kineto kernel names only, the algorithm/protocol is unknown; "sym ...": a symmetric
   * kernel's variant */
  rp_row_choice_label(w, label, sizeof label);
  snprintf(choice, sizeof choice, "%s %.0f%%", label, share * 100);
  if (tags) {
    char tag[24] = "-";
    if (w->tag) snprintf(tag, sizeof tag, "%" PRIu64, w->tag);
    fprintf(f, "  %-12s", tag);
  }
  if (w->ch_max)
    snprintf(ch, sizeof ch, w->ch_min == w->ch_max ? "%d" : "%d-%d", w->ch_min, w->ch_max);
  else snprintf(ch, sizeof ch, "?");
  char total_bytes[32], nranks[16] = "?"; /* unknown sizes and ranks: "?" */
  if (rp_row_size_known(w)) rp_fmt_bytes(w->size_sum, total_bytes, sizeof total_bytes);
  else snprintf(total_bytes, sizeof total_bytes, "?");
  if (rp_row_ranks_known(w)) snprintf(nranks, sizeof nranks, "%d", w->nranks);
  if (w->timed)
    fprintf(f, "  %-14s %5s %10s %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %10s %12s %11s %11s",
            rp_func_name(w->func), nranks, size, w->calls, w->timed, w->estimated, total_bytes,
            dur(rp_dbl_ns(w->time.sum), a, sizeof a), dur(rp_quant_get(&w->time, 0.5), b, sizeof b),
            dur(rp_quant_get(&w->time, 0.99), c, sizeof c));
  else
    fprintf(f, "  %-14s %5s %10s %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %10s %12s %11s %11s",
            rp_func_name(w->func), nranks, size, w->calls, w->timed, w->estimated, total_bytes, "-",
            "-", "-");
  fprintf(f, " %9s",
          !w->timed               ? "-"
          : rp_row_algbw_known(w) ? gbs(rp_row_algbw(w), a, sizeof a)
                                  : "?");
  fprintf(f, " %9s",
          !w->timed               ? "-"
          : rp_row_busbw_known(w) ? gbs(rp_row_busbw(w), b, sizeof b)
                                  : "?");
  fprintf(f, "  %-22s %s\n", choice, ch);
}

/* The collective table, rows sorted by function, communicator size and size. */
static void print_collectives(const rp_report *r, FILE *f) {
  if (!r->nrows) return;
  rp_row **rows = malloc(r->nrows * sizeof *rows);
  if (!rows) return;
  memcpy(rows, r->rows, r->nrows * sizeof *rows);
  qsort(rows, r->nrows, sizeof *rows, cmp_row);
  fprintf(f, "\nCollectives (GPU time per rank and call; size as nccl-tests counts it; from %s)\n",
          r->colls_from_kineto ? "Kineto NCCL kernels" : "topo traces");
  if (r->have_tags) fprintf(f, "  %-12s", "tag");
  fprintf(f, "  %-14s %5s %10s %9s %9s %9s %10s %12s %11s %11s %9s %9s  %-22s %s\n", "collective",
          "ranks", "size", "calls", "timed", "est.", "bytes", "timed total", "median", "p99",
          "algbw", "busbw", "algorithm/protocol", "channels");
  for (size_t i = 0; i < r->nrows; i++) print_coll_row(f, rows[i], r->have_tags);
  fprintf(
      f,
      "  timed total, median, p99, algbw, busbw (GB/s, nccl-tests factors): GPU-timed calls only; "
      "est.: untimed calls given an estimate\n");
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
static void print_stragglers(const rp_report *r, FILE *f) {
  char a[48], b[48];
  straggler *order = malloc((size_t)(r->nranks ? r->nranks : 1) * sizeof *order);
  if (!order) return;
  for (int i = 0; i < r->nranks; i++) order[i] = (straggler){r->ranks[i].late_total, i};
  qsort(order, (size_t)r->nranks, sizeof *order, cmp_straggler);
  fprintf(f, "\nStragglers (the rank that starts a collective last makes the others wait)\n");
  fprintf(f, "  %-16s %10s %12s %10s %14s %14s %8s\n", "", "last", "of joined", "by gpu",
          "delay caused", "time waiting", "missed");
  int shown = 0;
  for (int i = 0; i < r->nranks && shown < 8; i++, shown++) {
    const rp_rank *k = &r->ranks[order[i].rank];
    char label[64];
    rank_label(k, label, sizeof label);
    fprintf(f, "  %-16s %10" PRIu64 " %12" PRIu64 " %10" PRIu64 " %14s %14s %8" PRIu64 "\n", label,
            k->last_count, k->joined, k->joined_gpu, dur(k->late_total, a, sizeof a),
            dur(k->wait_total, b, sizeof b), k->missed);
  }
  free(order);
  uint64_t cut = 0;
  for (int i = 0; i < r->nranks; i++) cut += r->ranks[i].wait_clamped_enqueue;
  if (cut)
    fprintf(f,
            "  %" PRIu64
            " waits judged by CPU enqueue were cut to the rank's own kernel (measured or "
            "estimated): their enqueues were recorded later than the kernels could wait\n",
            cut);
}

/* Start skew across ranks per function, the clock alignment behind it, and the stragglers. */
static void print_skew(const rp_report *r, FILE *f) {
  char a[48], b[48], c[48];
  int any_skew = 0;
  for (int i = 0; i < RP_MAX_FUNC; i++) any_skew |= r->skew[i].n > 0;
  if (!any_skew) return;
  fprintf(f,
          "\nStart skew across ranks (same collective joined by comm hash, function and seq;\n"
          "from GPU kernel starts where every joined rank has them, else from CPU enqueue)\n");
  fprintf(f, "  %-14s %10s %12s %12s %12s %12s\n", "collective", "by gpu", "by cpu enq.", "median",
          "p99", "max");
  for (int i = 0; i < RP_MAX_FUNC; i++) {
    const rp_quant *q = &r->skew[i];
    if (!q->n) continue;
    fprintf(f, "  %-14s %10" PRIu64 " %12" PRIu64 " %12s %12s %12s\n", rp_func_name(i),
            r->skew_gpu[i], q->n - r->skew_gpu[i], dur(rp_quant_get(q, 0.5), a, sizeof a),
            dur(rp_quant_get(q, 0.99), b, sizeof b), dur(q->max, c, sizeof c));
  }
  print_alignment(r, f);
  print_stragglers(r, f);
}

/* Communicators with ranks missing or collectives some rank lacks; ranks that missed some. */
static void print_join_gaps(const rp_report *r, FILE *f) {
  for (size_t i = 0; i < r->ncomms; i++) {
    const rp_comm_summary *cs = &r->comms[i];
    if (cs->ranks_seen < cs->nranks)
      fprintf(f, "  comm %016" PRIx64 ": traces of %d of its %d ranks were given\n", cs->hash,
              cs->ranks_seen, cs->nranks);
    if (cs->incomplete)
      fprintf(f,
              "  comm %016" PRIx64 ": %" PRIu64 " of %" PRIu64
              " collectives lack some rank's record (a rank died, dropped records or its trace was "
              "cut)\n",
              cs->hash, cs->incomplete, cs->joined);
    if (cs->late)
      fprintf(f,
              "  comm %016" PRIx64 ": %" PRIu64
              " records came after their collective was closed (written more seqs out of order "
              "than the join holds): not joined\n",
              cs->hash, cs->late);
  }
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].missed) {
      char label[64];
      rank_label(&r->ranks[i], label, sizeof label);
      fprintf(f, "  %s has no record of %" PRIu64 " collectives the other ranks ran\n", label,
              r->ranks[i].missed);
    }
}

/* One row of the step table. */
static void print_step_row(FILE *f, const rp_stepsum *s) {
  char a[48], c[48], d[48], x[80], e[32], g[32], cm[80], cv[48];
  int kn = s->cov_ranks > 0;
  if (kn) snprintf(cv, sizeof cv, "%.0f%%", rp_ratio(s->covered, s->span) * 100);
  char num[32];
  snprintf(num, sizeof num, "%" PRIu64 "%s", s->value, s->warmup ? " w" : "");
  fprintf(f, "  %-8s %5d %12s %32s %12s %12s %24s %7s %8s %8s\n", num, s->ranks,
          dur(s->span / (s->ranks ? s->ranks : 1), a, sizeof a),
          dur_est(s->comm, s->comm_est, rp_comm_error_ns(s->comm_est, &s->comm_err), cm, sizeof cm),
          dur_known(kn, s->cov_compute, c, sizeof c),
          dur_known(kn, s->cov_comm - s->cov_overlap, d, sizeof d),
          dur_all(s->ea_ranks > 0, s->ea_estimated, s->exposed_all, rp_err_ns(&s->exposed_err), x,
                  sizeof x),
          pct(rp_ratio(s->comm, s->span), e, sizeof e),
          pct_known(kn && s->cov_comm > 0, rp_ratio(s->cov_overlap, s->cov_comm), g, sizeof g),
          kn ? cv : "n/a");
}

/* The step table (the last 20 steps), or why there is none. */
static void print_steps(const rp_report *r, FILE *f) {
  if (r->nstepsum) {
    char origin[256];
    fprintf(
        f,
        "\nSteps %s\n  (sums over ranks; comm%% and overlap%% of those sums; compute, exposed and "
        "overlap%% over the covered time of the ranks with a compute timeline; exposed (all) over "
        "the whole step, ~ estimated where compute was not recorded)\n",
        rp_steps_origin(r, origin, sizeof origin));
    fprintf(f, "  %-8s %5s %12s %32s %12s %12s %24s %7s %8s %8s\n", "step", "ranks", "mean span",
            "comm", "compute", "exposed", "exposed (all)", "comm%", "overlap%", "covered");
    int known = 0;
    for (size_t i = 0; i < r->nstepsum; i++) known |= r->stepsum[i].cov_ranks > 0;
    size_t from = r->nstepsum > 20 ? r->nstepsum - 20 : 0;
    if (from) fprintf(f, "  (last 20 of %zu steps; --json has all)\n", r->nstepsum);
    int warm = 0;
    for (size_t i = from; i < r->nstepsum; i++) {
      print_step_row(f, &r->stepsum[i]);
      warm |= r->stepsum[i].warmup;
    }
    if (warm)
      fprintf(f,
              "  w: before the steady state on some rank (warm-up: the step's duration had not "
              "settled yet); start-up is left out of the rank table's compute, overlap and "
              "exposed figures\n");
    if (!known)
      fprintf(f,
              "  n/a: no compute was recorded (give the Kineto traces of these steps, or widen the "
              "profiler's CUPTI windows: TOPO_PROFILER_CUPTI=on)\n");
  } else if (r->steps_detect == RP_STEPS_NONE) {
    fprintf(f, "\nSteps: %s\n", RP_STEPS_NONE_TEXT);
  }
}

/* Events the profiler dropped, damaged trace files, and collectives without GPU timing. */
static void print_data_quality(const rp_report *r, FILE *f) {
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
      fprintf(f,
              "  the profiler dropped %" PRIu64 " events (collectives %" PRIu64
              ", kernel/proxy %" PRIu64 ", records %" PRIu64 ", I/O %" PRIu64 ", CUPTI %" PRIu64
              ")\n",
              dsum, dropped[TOPO_DROP_COLL], dropped[TOPO_DROP_CHILD], dropped[TOPO_DROP_RECORD],
              dropped[TOPO_DROP_IO], dropped[TOPO_DROP_CUPTI]);
    if (problems) fprintf(f, "  %u problems in trace files (see the warnings above)\n", problems);
  }
  if (r->timed_colls < r->colls && !r->colls_from_kineto) {
    int all_k = r->nranks > 0;
    for (int i = 0; i < r->nranks; i++) all_k &= r->ranks[i].comm_from_kernels;
    if (!all_k)
      fprintf(
          f,
          "\nnote: %" PRIu64 " of %" PRIu64
          " collectives have no GPU timing; their durations "
          "are estimated from the timed ones (placement on the stream approximate; "
          "docs/metrics.md)%s\n",
          r->colls - r->timed_colls, r->colls,
          r->est[RP_EST_UNKNOWN] ? ", and those with nothing to estimate from add nothing" : "");
  }
}

void rp_render_text(const rp_report *r, FILE *f) {
  print_header(r, f);
  print_rank_table(r, f);
  print_collectives(r, f);
  print_skew(r, f);
  print_join_gaps(r, f);
  print_steps(r, f);
  rp_render_kernels_text(r, f);
  print_data_quality(r, f);
}
