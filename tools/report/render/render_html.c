// SPDX-License-Identifier: Apache-2.0
// --html FILE: one self-contained page (inline CSS and SVG, no scripts, no network): summary
// cards, a timeline per rank with communication and compute lanes over one step (or a window),
// time breakdown per rank (compute only / overlapped / exposed communication / idle), the
// kernel-type chart and per-step table of the Kineto analyses (render_kernels.c), busbw against
// message size per collective with a reference line (the plots: html_plots.c), the collective,
// straggler and step tables.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "kernel_stats.h"
#include "log.h"
#include "next.h"
#include "report.h"
#include "report_analysis.h"
#include "report_render.h"
#include "textout.h"
#include "topo_version.h"

static void esc(FILE *f, const char *s) { rp_html_esc(f, s); }

static void card(FILE *f, const char *label, const char *value, const char *sub) {
  fprintf(f,
          "<div class=card><div class=lab>%s</div><div class=val>%s</div><div "
          "class=sub>%s</div></div>\n",
          label, value, sub);
}

/* A total that may hold estimates: "17.31 ms ±0.92 ms (est. 94%)". */
static void fmt_est(int64_t ns, int64_t est, int64_t err, char *buf, size_t len) {
  char a[32], b[32];
  rp_fmt_ns(ns, a, sizeof a);
  rp_fmt_ns(err, b, sizeof b);
  double p = rp_ratio(est, ns) * 100;
  if (est <= 0 && err <= 0) snprintf(buf, len, "%s", a); /* nothing estimated: no error bar */
  else if (p < 0.95) snprintf(buf, len, "%s ±%s (est. %.1f%%)", a, b, p);
  else snprintf(buf, len, "%s ±%s (est. %.0f%%)", a, b, p);
}

/* A compute-side figure: "n/a" where the compute timeline is unknown. */
static void fmt_known(int known, int64_t ns, char *buf, size_t len) {
  if (known) rp_fmt_ns(ns, buf, len);
  else snprintf(buf, len, "n/a");
}

static void pct_known(int known, double v, char *buf, size_t len) {
  if (known) snprintf(buf, len, "%.1f%%", v * 100);
  else snprintf(buf, len, "n/a");
}

/* Exposed communication over a whole range: measured, "est. 14.469 ms ±3.23 us" with an
 * estimated part, "n/a" unknown (docs/metrics.md, Coverage). */
static void fmt_all(int known, int estimated, int64_t ns, int64_t err, char *buf, size_t len) {
  char a[32], b[32];
  if (!known) {
    snprintf(buf, len, "n/a");
    return;
  }
  rp_fmt_ns(ns, a, sizeof a);
  rp_fmt_ns(err, b, sizeof b);
  if (estimated) snprintf(buf, len, "est. %s ±%s", a, b);
  else snprintf(buf, len, "%s", a);
}

static int cmp_row(const void *a, const void *b) {
  const rp_row *x = *(rp_row *const *)a, *y = *(rp_row *const *)b;
  if (x->func != y->func) return x->func - y->func;
  if (x->nranks != y->nranks) return x->nranks - y->nranks;
  if (x->bucket != y->bucket) return x->bucket - y->bucket;
  return (x->tag > y->tag) - (x->tag < y->tag);
}

/* A table cell holding a figure and its error: the figure, then "±..." on a second line of its
 * own (never wrapped inside a number). */
static void cell_split(FILE *f, const char *text) {
  const char *pm = strstr(text, " ±");
  fprintf(f, "<td>");
  if (!pm) {
    esc(f, text);
  } else {
    fprintf(f, "%.*s<span class=sub>", (int)(pm - text), text);
    esc(f, pm + 1);
    fprintf(f, "</span>");
  }
  fprintf(f, "</td>");
}

/* Per-rank notes, one paragraph per kind with the ranks it holds for ("ranks 0-7: ..."). */
static void notes_print(FILE *f, rp_fold *fo) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) return;
  rp_fold_print(fo, m, 0, 0);
  fclose(m);
  for (char *line = buf; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = 0;
    fprintf(f, "<p class=note>");
    esc(f, line);
    fprintf(f, "</p>\n");
    line = nl ? nl + 1 : NULL;
  }
  free(buf);
}

/* Under the rank table: how "exposed (all)" was estimated, and why it is n/a where compute is
 * known somewhere; folded across ranks. */
static void exposed_all_notes_html(FILE *f, const rp_report *r, rp_fold *fo) {
  int est = 0;
  for (int i = 0; i < r->nranks; i++) {
    rp_derived dv;
    rp_derive_rank(&r->ranks[i], &dv);
    est |= dv.exposed_all_estimated;
    if (dv.known && !dv.exposed_all_known) {
      char note[320];
      snprintf(note, sizeof note, "exposed (all) n/a: %s",
               dv.model.reason ? dv.model.reason : RP_OMODEL_NO_COVER);
      rp_fold_add(fo, r->ranks[i].world_rank, note);
    }
  }
  notes_print(f, fo);
  if (est)
    fprintf(f,
            "<p class=note>exposed (all): over the whole span; est.: where compute was not "
            "recorded, each step's communication minus its predicted overlap a + b × its "
            "communication, the line learned from the rank's covered steps (the ratio r, a = 0, "
            "unless their intercept is told apart from 0; CUPTI windows: the ratio); ± at ~95 %%: "
            "the line's uncertainty (wide far from the covered steps' communication), the drift "
            "between windows and the steps' scatter (JSON overlap_model; docs/metrics.md, "
            "Coverage)</p>\n");
}

/* The per-rank table (the rank's host:pid under its name) and, under it, why a rank's compute
 * figures are n/a or partial, folded across ranks. */
static void rank_table_html(FILE *f, const rp_report *r) {
  char a[32], b[80], c[32], d[32], e[32], x[80], g[32], h[32], o[32];
  fprintf(f,
          "<h2>Per rank</h2><div class=tw><table><tr><th>rank (host:pid)</th><th>span</th>"
          "<th>communication</th><th>compute</th><th>overlapped</th><th>exposed</th>"
          "<th>exposed (all)</th><th>idle</th><th>comm share</th><th>overlap ratio</th>"
          "<th>collectives</th></tr>\n");
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    rp_derived dv;
    rp_derive_rank(k, &dv);
    char name[32];
    rp_html_rank_name(k, name, sizeof name);
    rp_fmt_ns(dv.span, a, sizeof a), fmt_est(dv.comm, dv.comm_est, dv.comm_error, b, sizeof b);
    fmt_known(dv.known, dv.compute, c, sizeof c), fmt_known(dv.known, dv.overlap, d, sizeof d);
    fmt_known(dv.known, dv.exposed, e, sizeof e), fmt_known(dv.known, dv.idle, g, sizeof g);
    fmt_all(dv.exposed_all_known, dv.exposed_all_estimated, dv.exposed_all, dv.exposed_all_error, x,
            sizeof x);
    snprintf(h, sizeof h, "%.1f%%", dv.comm_share * 100);
    pct_known(dv.known && dv.overlap_defined, dv.overlap_ratio, o, sizeof o);
    fprintf(f, "<tr><td>%s<span class=sub%s>", name,
            k->host[0] && k->pid ? "" : " title=\"?: not in the trace\"");
    esc(f, k->host[0] ? k->host : "?"); /* unknown (a Kineto trace names no host): ? */
    if (k->pid) fprintf(f, ":%u", k->pid);
    else fprintf(f, ":?");
    fprintf(f, "</span></td><td>%s</td>", a);
    cell_split(f, b);
    fprintf(f, "<td>%s</td><td>%s</td><td>%s</td>", c, d, e);
    cell_split(f, x);
    fprintf(f, "<td>%s</td><td>%s</td><td>%s</td><td>%" PRIu64 "</td></tr>\n", g, h, o, k->colls);
  }
  fprintf(f, "</table></div>\n");
  rp_fold *fo = rp_fold_new();
  exposed_all_notes_html(f, r, fo);
  for (int i = 0; i < r->nranks; i++) {
    rp_derived dv;
    rp_derive_rank(&r->ranks[i], &dv);
    const char *why = rp_rank_unknown_reason(&r->ranks[i]);
    char note[640], steps[192];
    rp_rank_cover_steps(&r->ranks[i], steps, sizeof steps);
    if (!dv.known || (dv.covered < dv.span && *why)) {
      if (dv.known)
        snprintf(note, sizeof note,
                 "compute recorded over part of the span only%s%s%s (where the bar's \"not "
                 "recorded\" part is not); elsewhere %s",
                 *steps ? " (" : "", steps, *steps ? ")" : "",
                 *why ? why : "the compute windows do not overlap its GPU activity");
      else
        snprintf(note, sizeof note, "compute, overlap, exposed and idle n/a: %s",
                 *why ? why : "the compute windows do not overlap its GPU activity");
      rp_fold_add(fo, r->ranks[i].world_rank, note);
    }
  }
  notes_print(f, fo);
  rp_fold_free(fo);
}

/* One row of the collective table; "-" for every figure a row has no measurement of; its tag
 * cell only when `tags`. The calls cell says under it how many were GPU-timed and estimated. */
static void coll_row_html(FILE *f, const rp_row *w, int tags) {
  char a[32], b[32], c[32], d[32], e[32], x[32] = "-";
  char size[32];
  rp_bucket_label(w->bucket, size, sizeof size);
  int al, pr;
  double share;
  rp_row_top_choice(w, &al, &pr, &share);
  /* no measured call: "-" for every figure of measured calls (never 0) */
  fmt_known(w->timed > 0, rp_dbl_ns(w->time.sum), a, sizeof a);
  fmt_known(w->timed > 0, rp_quant_get(&w->time, 0.5), b, sizeof b);
  fmt_known(w->timed > 0, rp_quant_get(&w->time, 0.99), c, sizeof c);
  /* bandwidth needs the bytes (busbw the communicator size too): a Kineto kernel without its
   * collective's operator has neither, "?" */
  snprintf(d, sizeof d, "%s", w->timed ? "?" : "-"), snprintf(e, sizeof e, "%s", d);
  if (rp_row_algbw_known(w)) snprintf(d, sizeof d, "%.2f", rp_row_algbw(w));
  if (rp_row_busbw_known(w)) snprintf(e, sizeof e, "%.2f", rp_row_busbw(w));
  if (w->xfer.n && rp_row_busbw_known(w)) snprintf(x, sizeof x, "%.2f", rp_row_busbw_xfer(w));
  char tb[32] = "?", nr[16] = "?";
  if (rp_row_size_known(w)) rp_fmt_bytes(w->size_sum, tb, sizeof tb);
  if (rp_row_ranks_known(w)) snprintf(nr, sizeof nr, "%d", w->nranks);
  char label[64];
  rp_row_choice_label(w, label, sizeof label);
  fprintf(f, "<tr>");
  if (tags && w->tag) fprintf(f, "<td>%" PRIu64 "</td>", w->tag);
  else if (tags) fprintf(f, "<td>-</td>");
  fprintf(f,
          "<td>%s</td><td>%s</td><td>%s</td><td>%" PRIu64 "<span class=sub>%" PRIu64
          " timed, %" PRIu64
          " est.</span></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
          "<td>%s</td><td>%s</td><td>%s</td><td>",
          rp_func_name(w->func), nr, size, w->calls, w->timed, w->estimated, tb, a, b, c, d, e, x);
  esc(f, label);
  fprintf(f, "<span class=sub>%.0f%% of calls</span></td><td>", share * 100);
  if (w->ch_max) fprintf(f, w->ch_min == w->ch_max ? "%d" : "%d–%d", w->ch_min, w->ch_max);
  else fputs("?", f);
  fprintf(f, "</td></tr>\n");
}

/* The collective table, rows sorted by function, communicator size and size. */
static void collectives_html(FILE *f, const rp_report *r) {
  if (!r->nrows) return;
  rp_row **rows = topo_malloc(r->nrows * sizeof *rows);
  if (!rows) return;
  memcpy(rows, r->rows, r->nrows * sizeof *rows);
  qsort(rows, r->nrows, sizeof *rows, cmp_row);
  fprintf(
      f,
      "<h2>Collectives</h2><p class=note>GPU time per rank and call, of the GPU-timed calls: "
      "the whole kernel, which includes waiting for the last rank to start; busbw after last "
      "start: from the last rank's kernel start to each rank's stop (the transfer alone), where "
      "every rank's GPU start is known.</p><div class=tw><table><tr>%s",
      r->have_tags ? "<th>tag</th>" : "");
  fprintf(f,
          "<th>collective</th><th>ranks</th><th>size</th><th>calls</th><th>bytes</th>"
          "<th>timed total</th><th>median</th><th>p99</th><th>algbw GB/s</th><th>busbw GB/s</th>"
          "<th>busbw after last start</th><th>algorithm / protocol</th><th>channels</th></tr>\n");
  for (size_t i = 0; i < r->nrows; i++) coll_row_html(f, rows[i], r->have_tags);
  fprintf(f, "</table></div>\n");
  topo_free(rows);
}

/* How the GPU clocks were aligned across ranks, as the text report says it (an error of 0 from
 * anchors in words; crossed bounds as invalid). */
static void alignment_html(FILE *f, const rp_report *r) {
  char a[32];
  int anchored = 0, crossed = 0;
  for (int i = 0; i < r->nranks; i++) {
    anchored += r->ranks[i].align_method == RP_ALIGN_ANCHORED;
    crossed += r->ranks[i].align_inconsistent && r->ranks[i].align_method != RP_ALIGN_NONE;
  }
  fprintf(f, "<p class=note>GPU clocks aligned across ranks: ");
  if (r->align_err < 0) fprintf(f, "error n/a (unbounded: a rank has no upper bound, no anchor)");
  else if (r->align_err == 0 && anchored)
    fprintf(f,
            "error not measurable: the anchors' GPU stops agree to the ns on every rank (modelled "
            "or replayed clocks; real GPUs differ by microseconds)");
  else rp_fmt_ns(r->align_err, a, sizeof a), fprintf(f, "to within %s", a);
  if (crossed)
    fprintf(f,
            ". Enqueue bounds crossed on %d rank%s: the upper bound is invalid there, so GPU "
            "against CPU times are placed from below only",
            crossed, crossed == 1 ? "" : "s");
  if (r->align_warn && r->skew_gpu_all.n)
    fprintf(f,
            ". <b>Warning:</b> the alignment error is not below the median GPU start skew; "
            "skew and stragglers below it are not resolved");
  fprintf(f, ".</p>\n");
}

/* Stragglers per rank, the clock alignment behind them, and the start skew per function; or why
 * they cannot be computed (and, Kineto only, the time inside NCCL kernels per step). */
static void stragglers_html(FILE *f, const rp_report *r) {
  char a[32], b[32], c[32];
  int any = 0;
  for (int i = 0; i < RP_MAX_FUNC; i++) any |= r->skew[i].n > 0;
  if (!any) {
    const char *why = rp_skew_unknown_reason(r);
    if (!*why) return;
    fprintf(f, "<h2>Stragglers</h2><p class=note>Start skew and stragglers: n/a: ");
    esc(f, why);
    fprintf(f, ".</p>\n");
    rp_comm_hint h;
    rp_comm_hint_get(r, &h);
    if (h.ok) {
      fprintf(f,
              "<p class=note>Time inside NCCL kernels per step (mean over the %zu steps every "
              "rank has). The kernels of the ranks that start first wait inside for the last one: "
              "the rank with the least time is the likely straggler. An inference from Kineto "
              "alone, not a measured skew.</p><div class=tw><table><tr><th>rank</th><th>in NCCL "
              "kernels per step</th></tr>\n",
              h.steps);
      for (int i = 0; i < r->nranks; i++) {
        if (h.per_rank[i] < 0) continue;
        rp_fmt_ns(h.per_rank[i], a, sizeof a);
        fprintf(f, "<tr><td>rank %d%s</td><td>%s</td></tr>\n", r->ranks[i].world_rank,
                i == h.likely ? " (likely straggler)" : "", a);
      }
      fprintf(f, "</table></div>\n");
    }
    rp_comm_hint_free(&h);
    return;
  }
  fprintf(
      f,
      "<h2>Stragglers</h2><p class=note>Each collective is joined across ranks by (communicator, "
      "function, sequence number); a Send with the Recv of the same order between the same two "
      "ranks. The rank that starts last makes the others wait; “delay caused” sums, over the "
      "collectives and pairs it started last, the time the others waited for it alone.</p>"
      "<div class=tw><table><tr><th>rank</th><th>started last</th><th>of joined</th><th>judged by "
      "GPU starts</th><th>delay caused</th><th>time waiting for others</th><th>missing "
      "records</th></tr>\n");
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    char name[32];
    rp_html_rank_name(k, name, sizeof name);
    rp_fmt_ns(k->late_total, a, sizeof a);
    rp_fmt_ns(k->wait_total, b, sizeof b);
    fprintf(f,
            "<tr><td>%s</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64
            "</td><td>%s</td><td>%s</td><td>%" PRIu64 "</td></tr>\n",
            name, k->last_count, k->joined, k->joined_gpu, a, b, k->missed);
  }
  fprintf(f, "</table></div>\n");
  alignment_html(f, r);
  fprintf(f,
          "<div class=tw><table><tr><th>collective</th><th>by GPU starts</th><th>by CPU "
          "enqueue</th><th>start skew median</th><th>p99</th><th>max</th></tr>\n");
  for (int i = 0; i < RP_MAX_FUNC; i++) {
    const rp_quant *q = &r->skew[i];
    if (!q->n) continue;
    rp_fmt_ns(rp_quant_get(q, 0.5), a, sizeof a);
    rp_fmt_ns(rp_quant_get(q, 0.99), b, sizeof b);
    rp_fmt_ns(q->max, c, sizeof c);
    fprintf(f,
            "<tr><td>%s</td><td>%" PRIu64 "</td><td>%" PRIu64
            "</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
            rp_skew_name(i), r->skew_gpu[i], q->n - r->skew_gpu[i], a, b, c);
  }
  fprintf(f, "</table></div>\n");
}

/* One row of the step table. */
static void step_row_html(FILE *f, const rp_stepsum *s) {
  char a[32], b[80], c[32], d[32], x[80], o[32], v[48];
  rp_fmt_ns(s->span / (s->ranks ? s->ranks : 1), a, sizeof a);
  if (s->last > s->value) snprintf(v, sizeof v, "%" PRIu64 "&ndash;%" PRIu64, s->value, s->last);
  else snprintf(v, sizeof v, "%" PRIu64, s->value);
  int kn = s->cov_ranks > 0;
  fmt_est(s->comm, s->comm_est, rp_comm_error_ns(s->comm_est, &s->comm_err), b, sizeof b);
  fmt_known(kn, s->cov_compute, c, sizeof c);
  fmt_known(kn, s->cov_comm - s->cov_overlap, d, sizeof d);
  fmt_all(s->ea_ranks > 0, s->ea_estimated, s->exposed_all, rp_err_ns(&s->exposed_err), x,
          sizeof x);
  pct_known(kn && s->cov_comm > 0, rp_ratio(s->cov_overlap, s->cov_comm), o, sizeof o);
  fprintf(f, "<tr><td>%s%s</td><td>%d</td><td>%s</td>", v, s->warmup ? " (warm-up)" : "", s->ranks,
          a);
  cell_split(f, b);
  fprintf(f, "<td>%s</td><td>%s</td>", c, d);
  cell_split(f, x);
  fprintf(f, "<td>%.1f%%</td><td>%s</td></tr>\n", rp_ratio(s->comm, s->span) * 100, o);
}

/* The step table, or why there is none. */
static void steps_html(FILE *f, const rp_report *r) {
  if (r->nstepsum) {
    char origin[256];
    int known = 0;
    for (size_t i = 0; i < r->nstepsum; i++) known |= r->stepsum[i].cov_ranks > 0;
    fprintf(f, "<h2>Steps</h2><div class=note>");
    esc(f, rp_steps_origin(r, origin, sizeof origin));
    if (!known)
      fprintf(f,
              "; n/a: no compute was recorded (give the Kineto traces of these steps, or widen the "
              "profiler's CUPTI windows: TOPO_PROFILER_CUPTI=on)");
    fprintf(f,
            "</div><div class=tw><table><tr><th>step</th><th>ranks</th><th>mean "
            "span</th><th>communication</th><th>compute</th><th>exposed</th><th>exposed "
            "(all)</th><th>comm share</th><th>overlap ratio</th></tr>\n");
    for (size_t i = 0; i < r->nstepsum; i++) step_row_html(f, &r->stepsum[i]);
    fprintf(f, "</table></div>\n");
  } else if (r->steps_detect == RP_STEPS_NONE) {
    fprintf(f, "<h2>Steps</h2><div class=note>");
    esc(f, RP_STEPS_NONE_TEXT);
    fprintf(f, "</div>\n");
  }
}

static void tables(FILE *f, const rp_report *r) {
  rank_table_html(f, r);
  collectives_html(f, r);
  stragglers_html(f, r);
  steps_html(f, r);
}

/* The page's head and its style sheet. */
static void page_head(FILE *f) {
  fprintf(
      f,
      "<!doctype html>\n<html lang=en><head><meta "
      "charset=utf-8><title>topo-report</title>\n<style>\n"
      "body{font:14px/1.45 system-ui,-apple-system,'Segoe "
      "UI',Roboto,sans-serif;margin:0;background:#fafafa;color:#222}\n"
      "main{max-width:1280px;margin:0 auto;padding:20px clamp(10px,2.5vw,32px) 64px}\n"
      "h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:36px 0 6px;border-bottom:1px "
      "solid #e5e5e5;padding-bottom:4px}\n"
      ".meta{color:#666;font-size:13px}.note{color:#555;font-size:13px;margin:2px 0 10px}\n"
      ".cards{display:flex;flex-wrap:wrap;gap:12px;margin-top:18px}\n"
      ".card{background:#fff;border:1px solid #e5e5e5;border-radius:8px;padding:12px "
      "16px;min-width:150px;max-width:300px}\n"
      ".card .lab{font-size:12px;color:#666;text-transform:uppercase;letter-spacing:.04em}.card "
      ".val{font-size:24px;font-weight:600}.card .sub{font-size:12px;color:#888}\n"
      "svg.plot{background:#fff;border:1px solid #e5e5e5;border-radius:8px}\n"
      "svg text{font:12px system-ui,sans-serif;fill:#333}svg .tick{fill:#777;font-size:11px}svg "
      ".grid{stroke:#eee;stroke-width:1}\n"
      ".legend{font-size:13px;color:#444;margin:6px 0}.legend "
      "span{display:inline-block;width:12px;height:12px;margin:0 5px 0 "
      "14px;vertical-align:-1px;border-radius:2px}\n"
      ".tw{overflow-x:auto;max-width:100%%}\n" /* a table wider than a phone scrolls in its box */
      "table{border-collapse:collapse;background:#fff;margin:8px "
      "0;font-size:12.5px;font-variant-numeric:tabular-nums}\n"
      "th,td{border:1px solid #e5e5e5;padding:3px 5px;text-align:right}"
      "td{white-space:nowrap}td.name{white-space:normal;overflow-wrap:anywhere;text-align:left}"
      "th{background:#f3f3f3;font-weight:600}td:first-child,th:first-child{text-align:left}\n"
      ".sub{display:block;font-size:11px;color:#777}\n" /* a cell's second line: error, host */
      "ol.next li{margin:0 0 10px}ol.next code{font-size:12px;background:#f3f3f3;padding:1px 4px;"
      "white-space:normal;overflow-wrap:anywhere}\n"
      "</style></head><body><main>\n");
}

/* The title line and the notes on what was read: runs, events counted, window, sources. */
static void page_meta(FILE *f, const rp_report *r) {
  fprintf(f,
          "<h1>topo-report</h1><div class=meta>%d rank%s · %" PRIu64 " collectives (%" PRIu64
          " GPU-timed) · %d input file%s · topo %s</div>\n",
          r->nranks, r->nranks == 1 ? "" : "s", r->colls, r->timed_colls, r->nsrc,
          r->nsrc == 1 ? "" : "s", TOPO_VERSION);
  for (size_t i = 0; i < r->nruns; i++) {
    const rp_run_note *n = &r->runs[i];
    if (n->nruns < 2) continue;
    char when[48];
    rp_fmt_utc(n->first_ns, when, sizeof when);
    fprintf(f, "<div class=meta>");
    esc(f, n->dir);
    if (n->used)
      fprintf(f, " holds %d runs of PyTorch traces; this is run %d (%s, %d file%s)</div>\n",
              n->nruns, n->used, when, n->files, n->files == 1 ? "" : "s");
    else
      fprintf(f, " holds %d runs of PyTorch traces, all %d files read as one</div>\n", n->nruns,
              n->files);
  }
  char sw[320];
  fprintf(f, "<div class=meta>events: ");
  esc(f, rp_step_window_text(r, sw, sizeof sw));
  fprintf(f, "</div>\n");
  if (r->window)
    fprintf(f,
            "<div class=meta>window [%" PRId64 ", %" PRId64
            ") ns since the Unix epoch: every "
            "figure is clipped to it</div>\n",
            r->win_from, r->win_to);
  if (r->have_kineto && r->have_trace)
    fprintf(f,
            "<div class=meta>per-rank times and steps from the Kineto GPU events; collectives, "
            "skew and stragglers from %s</div>\n",
            r->colls_from_kineto ? "Kineto NCCL kernels" : "the topo traces");
}

/* The exposed card: over the whole span where that is known (measured, or with an estimated part:
 * "est." and its error), else over the covered time, else n/a and why. */
static void exposed_card(FILE *f, const rp_report *r, const rp_derived *o, const char *cov,
                         const char *why) {
  char v[48], t[96], sub[320];
  if (o->exposed_all_known) {
    fmt_all(1, o->exposed_all_estimated, o->exposed_all, o->exposed_all_error, t, sizeof t);
    snprintf(v, sizeof v, "%s%.1f%%", o->exposed_all_estimated ? "est. " : "",
             o->exposed_all_share * 100);
    if (o->exposed_all_estimated)
      snprintf(sub, sizeof sub,
               "exposed communication over the whole span: %s; where compute was not recorded, "
               "from the overlap of %" PRIu64 " covered steps or windows (%d rank%s)",
               t, o->model.chunks, o->ranks_exposed_all, o->ranks_exposed_all == 1 ? "" : "s");
    else
      snprintf(sub, sizeof sub, "exposed communication over the whole span: %s (%d rank%s)", t,
               o->ranks_exposed_all, o->ranks_exposed_all == 1 ? "" : "s");
    card(f, "exposed", v, sub);
    return;
  }
  if (o->known) snprintf(v, sizeof v, "%.1f%%", o->exposed_share * 100);
  rp_fmt_ns(o->exposed, t, sizeof t);
  const char *no_model = RP_OMODEL_NO_RANK; /* one rank: its own reason */
  if (r->nranks == 1 && r->ranks[0].model.reason) no_model = r->ranks[0].model.reason;
  snprintf(sub, sizeof sub, "exposed communication: %s, %s; elsewhere n/a: %s", t, cov, no_model);
  card(f, "exposed", o->known ? v : "n/a", o->known ? sub : why);
}

/* The summary cards: communication share, overlap ratio, exposed, idle, wall span. */
static void summary_cards(FILE *f, const rp_report *r) {
  rp_derived o;
  rp_derive_overall(r, &o);
  char v[48];
  fprintf(f, "<div class=cards>\n");
  snprintf(v, sizeof v, "%.1f%%", o.comm_share * 100);
  char sub[320], t[96];
  fmt_est(o.comm, o.comm_est, o.comm_error, t, sizeof t);
  snprintf(sub, sizeof sub, "of the GPU span, all ranks: %s", t);
  card(f, "communication share", v, sub);
  /* the compute side: over the covered time of the ranks that have one, else n/a and why */
  char why[200] = "";
  for (int i = 0; i < r->nranks && !o.known; i++) {
    const char *w = rp_rank_unknown_reason(&r->ranks[i]);
    if (*w && !why[0]) {
      snprintf(why, sizeof why, "%s", w);
      for (char *p = why; *p; p++) /* the card is not escaped: keep the reason plain */
        if (*p == '<' || *p == '>' || *p == '&' || *p == '"') *p = ' ';
    }
  }
  char cov[80];
  snprintf(cov, sizeof cov, "over %.0f%% of the span (%d of %d ranks)", o.covered_share * 100,
           o.ranks_known, r->nranks);
  if (o.overlap_defined) snprintf(v, sizeof v, "%.1f%%", o.overlap_ratio * 100);
  snprintf(sub, sizeof sub, "overlapped / communication %s", cov);
  card(f, "overlap ratio", o.overlap_defined ? v : "n/a",
       o.overlap_defined ? sub
       : o.known         ? "no communication where compute is known: undefined"
                         : why);
  exposed_card(f, r, &o, cov, why);
  if (o.known) snprintf(v, sizeof v, "%.1f%%", o.idle_share * 100);
  snprintf(sub, sizeof sub, "no kernel running, %s", cov);
  card(f, "idle", o.known ? v : "n/a", o.known ? sub : why);
  if (r->overall.last > r->overall.first) {
    rp_fmt_ns(rp_sub_sat(r->overall.last, r->overall.first), v, sizeof v);
    card(f, "wall span", v, "first to last GPU activity");
  }
  fprintf(f, "</div>\n");
}

topo_status rp_render_html(const rp_report *r, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    TOPO_WARN("cannot write %s", path);
    return TOPO_ERR_IO;
  }
  page_head(f);
  page_meta(f, r);
  summary_cards(f, r);
  rp_html_timeline(f, r);
  rp_html_breakdown(f, r);
  rp_render_kernels_html(r, f);
  rp_html_busbw_plot(f, r);
  tables(f, r);
  rp_render_next_html(r, f);
  fprintf(f,
          "<p class=meta style=\"margin-top:40px\">Definitions: docs/metrics.md. Generated by "
          "topo-report %s.</p></main></body></html>\n",
          TOPO_VERSION);
  return fclose(f) == 0 ? TOPO_OK : TOPO_ERR_IO;
}
