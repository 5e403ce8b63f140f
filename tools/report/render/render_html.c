// SPDX-License-Identifier: Apache-2.0
// --html FILE: one self-contained page (inline CSS and SVG, no scripts, no network): summary
// cards, a timeline per rank with communication and compute lanes over one step (or a window),
// time breakdown per rank (compute only / overlapped / exposed communication / idle), the
// kernel-type chart and per-step table of the Kineto analyses (render_kernels.c), busbw against
// message size per collective with a reference line, the collective, straggler and step tables.
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

#define C_COMPUTE "#4e79a7"
#define C_COMM    "#f28e2b"
#define C_OVERLAP "#b07aa1"
#define C_IDLE    "#e3e3e3"
#define C_MEMORY  "#59a14f"

static const char *palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

static void esc(FILE *f, const char *s) { rp_html_esc(f, s); }

static void rank_name(const rp_rank *k, char *buf, size_t len) {
  if (k->world_rank >= 0) snprintf(buf, len, "rank %d", k->world_rank);
  else snprintf(buf, len, "rank ?");
}

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

static int cmp_iv(const void *a, const void *b) {
  const rp_interval *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* One drawn bar of a lane, with its hover text: what, when (from the run's first GPU activity
 * t0) and for how long. */
static void lane_rect(FILE *f, double a, double b, double y, double h, const char *color,
                      const char *what, int64_t s, int64_t e, int64_t t0) {
  char at[32], len[32];
  rp_fmt_ns(s - t0, at, sizeof at);
  rp_fmt_ns(e - s, len, sizeof len);
  fprintf(
      f,
      "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>%s at +%s: %s"
      "</title></rect>",
      a, y, b - a < 0.6 ? 0.6 : b - a, h, color, what, at, len);
}

/* Draw one lane: intervals of class `cls`, merged where they touch within half a pixel. */
static void lane(FILE *f, const rp_interval *iv, size_t n, int cls, int64_t from, int64_t to,
                 double x0, double w, double y, double h, const char *color, const char *what,
                 int64_t t0) {
  double scale = w / (double)(to - from);
  double cur_a = -1, cur_b = -1;
  int64_t cur_s = 0, cur_e = 0;
  for (size_t i = 0; i < n; i++) {
    if (iv[i].cls != cls) continue;
    int64_t s = iv[i].start < from ? from : iv[i].start, e = iv[i].stop > to ? to : iv[i].stop;
    if (e <= s) continue;
    double a = x0 + (double)(s - from) * scale, b = x0 + (double)(e - from) * scale;
    if (cur_a >= 0 && a <= cur_b + 0.5) {
      if (b > cur_b) cur_b = b, cur_e = e;
      continue;
    }
    if (cur_a >= 0) lane_rect(f, cur_a, cur_b, y, h, color, what, cur_s, cur_e, t0);
    cur_a = a, cur_b = b, cur_s = s, cur_e = e;
  }
  if (cur_a >= 0) lane_rect(f, cur_a, cur_b, y, h, color, what, cur_s, cur_e, t0);
  fputc('\n', f);
}

/* Most grid lines an axis draws, whatever its range. */
#define TIMELINE_TICKS 32
#define AXIS_TICKS     32

static double nice_step(double range, int ticks) {
  double raw = range / ticks, mag = pow(10, floor(log10(raw)));
  double n = raw / mag;
  return (n < 1.5 ? 1 : n < 3 ? 2 : n < 7 ? 5 : 10) * mag;
}

static void timeline(FILE *f, const rp_report *r) {
  int64_t from = r->window_from, to = r->window_to;
  if (to <= from || !r->nranks) return;
  const double W = 1100, L = 90, lane_h = 13, gap = 10;
  int nr = r->nranks < RP_TIMELINE_RANKS ? r->nranks : RP_TIMELINE_RANKS;
  double H = 30 + nr * (2 * lane_h + gap) + 10;
  char span[32], at[32];
  int64_t t0 = r->t0 < from ? r->t0 : from, span_ns, off;
  if (__builtin_sub_overflow(to, from, &span_ns)) span_ns = INT64_MAX;
  if (__builtin_sub_overflow(from, t0, &off)) off = INT64_MAX;
  rp_fmt_ns(span_ns, span, sizeof span);
  rp_fmt_ns(off, at, sizeof at);
  /* which step the window shows: one that lies inside it */
  const rp_rank *sk = NULL;
  const rp_step *st = NULL;
  for (int i = 0; i < r->nranks && !st; i++)
    for (size_t j = 0; j < r->ranks[i].nsteps && !st; j++)
      if (r->ranks[i].steps[j].start >= from && r->ranks[i].steps[j].stop <= to)
        st = &r->ranks[i].steps[j], sk = &r->ranks[i];
  fprintf(f, "<h2>Timeline</h2><p class=note>");
  if (st) {
    char rn[32];
    rank_name(sk, rn, sizeof rn);
    fprintf(f,
            "Step %" PRIu64
            " (as %s ran it, with 5%% margins): %s of GPU activity per rank, from +%s after "
            "the run's first GPU activity.",
            st->value, rn, span, at);
  } else {
    fprintf(f, "%s of GPU activity per rank, from +%s after the run's first GPU activity (%s).",
            span, at,
            span_ns < rp_add_sat(r->t_end, r->t0 == INT64_MIN ? INT64_MAX : -r->t0)
                ? "a window from the middle of the run"
                : "the whole run");
  }
  fprintf(
      f,
      " Upper lane: compute kernels (and memory copies); lower lane: communication. Where both are "
      "coloured at once, communication is overlapped. Hover a bar for its start and length.</p>\n");
  if (nr < r->nranks) fprintf(f, "<p class=note>The first %d of %d ranks.</p>\n", nr, r->nranks);
  /* 50 on the right: a tick label at the right edge is centred on it */
  fprintf(f, "<svg class=plot viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" role=img>\n", W + L + 50,
          H + 18);
  /* Ticks in integer ns (a double does not resolve a 100 ns step 1.8e18 ns from t0) at a nice
   * spacing of at least 1 ns: at most TIMELINE_TICKS of them, whatever the input's times. Where
   * the window lies too far from t0 for "+time since t0" labels to differ, they count from the
   * window's start instead. */
  double dstep = nice_step((double)span_ns, 8);
  int64_t step = dstep < 1 ? 1 : rp_dbl_ns(dstep);
  int from_window = off / step > 100000;
  int64_t base = from_window ? 0 : off, t;
  int64_t lead = base % step ? step - base % step : 0; /* first tick - base */
  for (int i = 0; i < TIMELINE_TICKS; i++) {
    int64_t d;
    if (__builtin_mul_overflow((int64_t)i, step, &d) || __builtin_add_overflow(d, lead, &d) ||
        d > span_ns || __builtin_add_overflow(base, d, &t))
      break;
    double x = L + (double)d / (double)span_ns * W;
    char lab[32];
    rp_fmt_ns(t, lab, sizeof lab);
    fprintf(f,
            "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"18\" y2=\"%.0f\" class=\"grid\"/><text x=\"%.1f\" "
            "y=\"12\" class=tick text-anchor=middle>+%s</text>\n",
            x, x, H - 6, x, lab);
  }
  fprintf(
      f, "<text x=\"%.0f\" y=\"%.0f\" class=tick text-anchor=middle>%s</text>\n", L + W / 2, H + 10,
      from_window ? "time since the window's start" : "time since the run's first GPU activity");
  for (int i = 0; i < nr; i++) {
    const rp_rank *k = &r->ranks[i];
    double y = 24 + i * (2 * lane_h + gap);
    char name[32];
    rank_name(k, name, sizeof name);
    fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=lab text-anchor=end>%s</text>\n", L - 8,
            y + lane_h + 4, name);
    fprintf(f, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" fill=\"#f6f6f6\"/>\n", L,
            y, W, 2 * lane_h);
    rp_interval *iv = topo_malloc((k->ntimeline ? k->ntimeline : 1) * sizeof *iv);
    if (!iv) continue;
    if (k->ntimeline) memcpy(iv, k->timeline, k->ntimeline * sizeof *iv);
    qsort(iv, k->ntimeline, sizeof *iv, cmp_iv);
    lane(f, iv, k->ntimeline, RP_COMPUTE, from, to, L, W, y, lane_h - 1, C_COMPUTE, "compute", t0);
    lane(f, iv, k->ntimeline, RP_MEMORY, from, to, L, W, y, lane_h - 1, C_MEMORY, "memory copy",
         t0);
    /* communication drawn only where the rank uses that origin for its unions */
    rp_interval *comm = iv;
    size_t nc = 0;
    for (size_t j = 0; j < k->ntimeline; j++)
      if (iv[j].cls == RP_COMM && (iv[j].origin == RP_FROM_KERNEL) == (k->comm_from_kernels != 0))
        comm[nc++] = iv[j];
    lane(f, comm, nc, RP_COMM, from, to, L, W, y + lane_h, lane_h - 1, C_COMM, "communication", t0);
    topo_free(iv);
  }
  fprintf(f,
          "</svg>\n<div class=legend><span style=\"background:%s\"></span>compute <span "
          "style=\"background:%s\"></span>communication <span "
          "style=\"background:%s\"></span>memory copies</div>\n",
          C_COMPUTE, C_COMM, C_MEMORY);
}

static void breakdown(FILE *f, const rp_report *r) {
  if (!r->nranks) return;
  const double W = 900, L = 90, bar = 18, gap = 8;
  double H = 10 + r->nranks * (bar + gap) + 20;
  fprintf(
      f,
      "<h2>Where each rank's GPU time goes</h2><p class=note>Share of the rank's span (first to "
      "last GPU activity), over the time where compute was recorded (a rank without any shows its "
      "communication only). Overlap ratio = overlapped / communication, as Holistic Trace Analysis "
      "defines it.</p>\n");
  fprintf(f,
          "<svg class=plot viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" role=img><defs><pattern "
          "id=unrec width=6 height=6 patternUnits=userSpaceOnUse patternTransform=\"rotate(45)\">"
          "<rect width=6 height=6 fill=\"#fff\"/><line x1=0 y1=0 x2=0 y2=6 stroke=\"#c8c8c8\" "
          "stroke-width=\"2\"/></pattern></defs>\n",
          W + L + 240, H);
  int partial = 0;
  for (int i = 0; i < r->nranks; i++) {
    rp_derived d;
    rp_derive_rank(&r->ranks[i], &d);
    double y = 10 + i * (bar + gap), x = L;
    char name[32];
    rank_name(&r->ranks[i], name, sizeof name);
    fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=lab text-anchor=end>%s</text>\n", L - 8,
            y + bar - 5, name);
    if (!d.known) { /* no compute timeline: communication share only */
      double w = d.span > 0 ? W * (double)d.comm / (double)d.span : 0;
      fprintf(f,
              "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" "
              "fill=\"%s\"><title>communication "
              "(overlap unknown)</title></rect>",
              x, y, w, bar, C_COMM);
      fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=lab>comm %.1f%% · overlap n/a</text>\n",
              L + W + 8, y + bar - 5, d.comm_share * 100);
      continue;
    }
    struct {
      int64_t v;
      const char *c, *what;
    } parts[] = {{d.compute - d.overlap, C_COMPUTE, "compute only"},
                 {d.overlap, C_OVERLAP, "overlapped communication"},
                 {d.exposed, C_COMM, "exposed communication"},
                 {d.busy - d.compute - d.exposed, C_MEMORY, "memory copies only"},
                 {d.idle, C_IDLE, "idle"},
                 {d.span - d.covered, "url(#unrec)", "compute not recorded (figures n/a there)"}};
    partial |= d.covered < d.span;
    for (size_t p = 0; p < sizeof parts / sizeof *parts; p++) {
      double w = d.span > 0 ? W * (double)parts[p].v / (double)d.span : 0;
      if (w <= 0) continue;
      char t[32];
      rp_fmt_ns(parts[p].v, t, sizeof t);
      fprintf(f,
              "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\"><title>%s: "
              "%s (%.1f%%)</title></rect>",
              x, y, w, bar, parts[p].c, parts[p].what, t,
              100.0 * (double)parts[p].v / (double)d.span);
      x += w;
    }
    char ov[24] = "n/a";
    if (d.overlap_defined) snprintf(ov, sizeof ov, "%.1f%%", d.overlap_ratio * 100);
    fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=lab>comm %.1f%% · overlap %s</text>\n", L + W + 8,
            y + bar - 5, d.comm_share * 100, ov);
  }
  fprintf(f,
          "</svg>\n<div class=legend><span style=\"background:%s\"></span>compute only "
          "<span style=\"background:%s\"></span>overlapped communication <span "
          "style=\"background:%s\"></span>exposed communication "
          "<span style=\"background:%s\"></span>memory only <span style=\"background:%s;border:1px "
          "solid #ccc\"></span>idle%s</div>\n",
          C_COMPUTE, C_OVERLAP, C_COMM, C_MEMORY, C_IDLE,
          partial ? " <span style=\"background:repeating-linear-gradient(45deg,#fff 0 3px,#c8c8c8 "
                    "3px 5px);border:1px solid #ccc\"></span>compute not recorded (overlap "
                    "over the rest)"
                  : "");
}

/* The busbw plot's frame: plot area W x H at (L, T), B below for the x labels; x spans the size
 * buckets lo..hi, y 0..ymax GB/s. */
static const double BW_W = 820, BW_H = 340, BW_L = 70, BW_T = 20, BW_B = 50;
typedef struct bw_plot {
  int lo, hi;
  double ymax;
} bw_plot;

static double bw_x(const bw_plot *g, double bucket) {
  return BW_L + (bucket - g->lo) / (g->hi - g->lo) * BW_W;
}
static double bw_y(const bw_plot *g, double gbs) { return BW_T + BW_H - gbs / g->ymax * BW_H; }

/* Grid lines and tick labels of both axes, and the axis titles. */
static void bw_axes(FILE *f, const bw_plot *g, double ystep) {
  for (int i = 0; i < AXIS_TICKS && (double)i * ystep <= g->ymax + 1e-9; i++) {
    double v = (double)i * ystep, y = bw_y(g, v);
    fprintf(f,
            "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/><text "
            "x=\"%.0f\" y=\"%.1f\" class=tick text-anchor=end>%g</text>\n",
            BW_L, BW_L + BW_W, y, y, BW_L - 6, y + 4, v);
  }
  for (int b = g->lo; b <= g->hi; b++) {
    double x = bw_x(g, b);
    if ((g->hi - g->lo) > 16 && (b - g->lo) % 2) continue;
    char lab[32];
    rp_fmt_bytes((uint64_t)1 << b, lab, sizeof lab);
    fprintf(f,
            "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" class=\"grid\"/><text "
            "x=\"%.1f\" y=\"%.0f\" class=tick text-anchor=middle>%s</text>\n",
            x, x, BW_T, BW_T + BW_H, x, BW_T + BW_H + 16, lab);
  }
  fprintf(f,
          "<text x=\"%.0f\" y=\"%.0f\" class=lab text-anchor=middle>message size (nccl-tests size; "
          "a point at its calls' mean size)</text>\n",
          BW_L + BW_W / 2, BW_T + BW_H + 38);
  fprintf(f,
          "<text transform=\"translate(16 %.0f) rotate(-90)\" class=lab text-anchor=middle>busbw "
          "(GB/s)</text>\n",
          BW_T + BW_H / 2);
}

/* The dashed reference line (a calibrated profile's or the built-in link peak), when there is one. */
static void bw_reference(FILE *f, const rp_report *r, const bw_plot *g) {
  if (r->ref_busbw <= 0) return;
  double y = bw_y(g, r->ref_busbw);
  fprintf(f,
          "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c00\" stroke-width=1.5 "
          "stroke-dasharray=\"6 4\"><title>",
          BW_L, BW_L + BW_W, y, y);
  esc(f, r->ref_label);
  fprintf(f,
          ": %.1f GB/s</title></line><text x=\"%.0f\" y=\"%.1f\" class=lab text-anchor=end "
          "fill=\"#c00\" "
          "style=\"fill:#c00\">",
          r->ref_busbw, BW_L + BW_W - 4, y - 5);
  esc(f, r->ref_label);
  fprintf(f, ": %.1f GB/s</text>\n", r->ref_busbw);
}

/* A GPU-timed row of the plot and its place in r->rows. */
typedef struct bw_row {
  const rp_row *w;
  size_t at;
} bw_row;

/* Rows by (function, communicator size), then in the report's order: each series contiguous. */
static int cmp_bw_series(const void *a, const void *b) {
  const bw_row *x = a, *y = b;
  if (x->w->func != y->w->func) return x->w->func < y->w->func ? -1 : 1;
  if (x->w->nranks != y->w->nranks) return x->w->nranks < y->w->nranks ? -1 : 1;
  return (x->at > y->at) - (x->at < y->at);
}

/* Rows of one series by bucket, then in the report's order. */
static int cmp_bw_bucket(const void *a, const void *b) {
  const bw_row *x = a, *y = b;
  if (x->w->bucket != y->w->bucket) return x->w->bucket < y->w->bucket ? -1 : 1;
  return (x->at > y->at) - (x->at < y->at);
}

/* A series: its rows [start, end) of the sorted list; `first` is the place of its first row in
 * r->rows (series of a function are drawn in that order). */
typedef struct bw_series_span {
  int func;
  size_t start, end, first;
} bw_series_span;

static int cmp_bw_span(const void *a, const void *b) {
  const bw_series_span *x = a, *y = b;
  if (x->func != y->func) return x->func < y->func ? -1 : 1;
  return (x->first > y->first) - (x->first < y->first);
}

/* log2 of a row's mean size: where its point sits on the x axis (its calls' sizes, not its
 * bucket's lower bound). */
static double row_x(const rp_row *w) {
  double mean = w->timed ? (double)w->timed_size_sum / (double)w->timed : 0;
  return mean > 0 ? log2(mean) : (double)w->bucket;
}

/* One line of a series through its rows (sorted by size): whole-kernel busbw (xfer 0) or busbw
 * after the last rank's start (xfer 1, rows that have it). */
static void bw_line(FILE *f, const bw_plot *g, const bw_row *rows, size_t n, const char *color,
                    int xfer) {
  fprintf(f, "<polyline fill=none stroke=\"%s\" stroke-width=%s points=\"", color,
          xfer ? "2" : "1.2 stroke-dasharray=\"4 3\"");
  for (size_t i = 0; i < n; i++) {
    const rp_row *w = rows[i].w;
    if (w->bucket < 0 || (xfer && !w->xfer.n)) continue;
    fprintf(f, "%.1f,%.1f ", bw_x(g, row_x(w)),
            bw_y(g, xfer ? rp_row_busbw_xfer(w) : rp_row_busbw(w)));
  }
  fprintf(f, "\"/>\n");
}

/* One series (rows[0, n), in the report's order): its lines, its points (hollow: the whole kernel
 * time, which includes waiting for the last rank; filled: after the last rank's start) and its
 * legend entry (the series-th); `scratch` holds n rows. */
static void bw_series(FILE *f, const bw_plot *g, const bw_row *rows, size_t n, bw_row *scratch,
                      int series) {
  const char *color = palette[series % 10];
  const rp_row *first = rows[0].w;
  memcpy(scratch, rows, n * sizeof *rows);
  qsort(scratch, n, sizeof *scratch, cmp_bw_bucket);
  bw_line(f, g, scratch, n, color, 0);
  bw_line(f, g, scratch, n, color, 1);
  for (size_t i = 0; i < n; i++) {
    const rp_row *w = rows[i].w;
    if (w->bucket < 0) continue;
    char size[32];
    rp_fmt_bytes((uint64_t)(w->timed_size_sum / w->timed), size, sizeof size);
    fprintf(f,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=3.5 fill=\"#fff\" stroke=\"%s\" stroke-width=1.5>"
            "<title>%s, %d ranks, mean size %s: busbw %.2f GB/s from the whole kernel time "
            "(waiting for the last rank included), %" PRIu64 " GPU-timed calls</title></circle>",
            bw_x(g, row_x(w)), bw_y(g, rp_row_busbw(w)), color, rp_func_name(w->func), w->nranks,
            size, rp_row_busbw(w), w->timed);
    if (w->xfer.n)
      fprintf(f,
              "<circle cx=\"%.1f\" cy=\"%.1f\" r=4 fill=\"%s\"><title>%s, %d ranks, mean size %s: "
              "busbw %.2f GB/s after the last rank's start (%" PRIu64
              " rank-calls)</title></circle>",
              bw_x(g, row_x(w)), bw_y(g, rp_row_busbw_xfer(w)), color, rp_func_name(w->func),
              w->nranks, size, rp_row_busbw_xfer(w), w->xfer.n);
  }
  fprintf(f,
          "<rect x=\"%.0f\" y=\"%.0f\" width=12 height=12 fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\" "
          "class=lab>%s (%d ranks)</text>\n",
          BW_L + BW_W + 20, BW_T + 10 + series * 20, color, BW_L + BW_W + 38,
          BW_T + 21 + series * 20, rp_func_name(first->func), first->nranks);
}

/* Every series: one per (function, communicator size) with a GPU-timed row, functions in order,
 * the sizes of a function in the order of their first row, at most 64 per function. Sorted, not
 * searched: O(rows log rows). 0 out of memory. */
static int bw_all_series(FILE *f, const rp_report *r, const bw_plot *g) {
  size_t n = 0, nspan = 0;
  bw_row *rows = topo_malloc((r->nrows ? r->nrows : 1) * sizeof *rows);
  bw_row *scratch = topo_malloc((r->nrows ? r->nrows : 1) * sizeof *scratch);
  bw_series_span *span = topo_malloc((r->nrows ? r->nrows : 1) * sizeof *span);
  if (!rows || !scratch || !span) {
    topo_free(rows), topo_free(scratch), topo_free(span);
    return 0;
  }
  for (size_t i = 0; i < r->nrows; i++)
    if (rp_row_busbw_known(r->rows[i]) && r->rows[i]->func >= 0 && r->rows[i]->func < RP_MAX_FUNC)
      rows[n++] = (bw_row){r->rows[i], i};
  qsort(rows, n, sizeof *rows, cmp_bw_series);
  for (size_t i = 0; i < n; i++) {
    if (!i || rows[i].w->func != rows[i - 1].w->func || rows[i].w->nranks != rows[i - 1].w->nranks)
      span[nspan++] = (bw_series_span){rows[i].w->func, i, i, rows[i].at};
    span[nspan - 1].end = i + 1;
  }
  qsort(span, nspan, sizeof *span, cmp_bw_span);
  int series = 0;
  for (size_t k = 0, in_func = 0; k < nspan; k++) {
    in_func = k && span[k].func == span[k - 1].func ? in_func + 1 : 0;
    if (in_func < 64)
      bw_series(f, g, rows + span[k].start, span[k].end - span[k].start, scratch, series++);
  }
  /* what the two markers mean, under the series */
  double y = BW_T + 21 + series * 20 + 10;
  fprintf(
      f,
      "<circle cx=\"%.0f\" cy=\"%.0f\" r=3.5 fill=\"#fff\" stroke=\"#555\" stroke-width=\"1.5\"/>"
      "<text x=\"%.0f\" y=\"%.0f\" class=tick>whole kernel</text>"
      "<circle cx=\"%.0f\" cy=\"%.0f\" r=4 fill=\"#555\"/>"
      "<text x=\"%.0f\" y=\"%.0f\" class=tick>after last start</text>\n",
      BW_L + BW_W + 26, y - 4, BW_L + BW_W + 38, y, BW_L + BW_W + 26, y + 16, BW_L + BW_W + 38,
      y + 20);
  topo_free(rows), topo_free(scratch), topo_free(span);
  return 1;
}

/* Bus bandwidth against message size: one series per (function, communicator size) with a
 * GPU-timed call, each point at its calls' mean size; the whole-kernel busbw (which includes
 * waiting for the last rank) and, where every rank's GPU start is known, the busbw after the last
 * rank's start; and the reference line. */
static void busbw_plot(FILE *f, const rp_report *r) {
  bw_plot g = {64, -1, 0};
  double maxbw = 0;
  int xfer = 0;
  for (size_t i = 0; i < r->nrows; i++) {
    const rp_row *w = r->rows[i];
    if (!rp_row_busbw_known(w) || w->bucket < 0 || w->func > 10) continue;
    double x = row_x(w);
    if ((int)floor(x) < g.lo) g.lo = (int)floor(x);
    if ((int)ceil(x) > g.hi) g.hi = (int)ceil(x);
    if (rp_row_busbw(w) > maxbw) maxbw = rp_row_busbw(w);
    if (w->xfer.n && rp_row_busbw_xfer(w) > maxbw) maxbw = rp_row_busbw_xfer(w);
    xfer |= w->xfer.n > 0;
  }
  if (g.hi < 0 || maxbw <= 0) return;
  if (g.hi == g.lo) g.hi = g.lo + 1;
  double top = r->ref_busbw > maxbw ? r->ref_busbw : maxbw;
  double ystep = nice_step(top, 6);
  g.ymax = ceil(top / ystep) * ystep;
  fprintf(
      f,
      "<h2>Bus bandwidth against message size</h2><p class=note>busbw = algbw × the nccl-tests "
      "factor (AllReduce 2(n−1)/n; AllGather, ReduceScatter (n−1)/n; others 1), one point per "
      "size bucket at its calls' mean size. Hollow, dashed: from the mean GPU time of the whole "
      "kernel, which includes waiting for the last rank to start (a straggler lowers it).%s "
      "Sizes without a GPU-timed call are not drawn (their rows below show "
      "&ldquo;-&rdquo;).%s</p>\n",
      xfer ? " Filled, solid: from the last rank's kernel start to each rank's stop, the transfer "
             "alone (where every rank's GPU start is known)."
           : " No point without the wait: the GPU starts of every rank are not known.",
      r->ref_busbw > 0 ? " Dashed red: the reference bandwidth."
                       : " No reference line: give --profile (a calibrated profile) or --gpu (the "
                         "built-in link peak).");
  fprintf(f,
          "<svg class=plot viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" style=\"max-width:1000px\" "
          "role=img>\n",
          BW_W + BW_L + 200, BW_H + BW_T + BW_B);
  bw_axes(f, &g, ystep);
  bw_reference(f, r, &g);
  if (!bw_all_series(f, r, &g)) TOPO_WARN("--html: out of memory; the busbw plot has no series");
  fprintf(f, "</svg>\n");
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
    rank_name(k, name, sizeof name);
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
    rank_name(k, name, sizeof name);
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
    rp_fmt_ns(r->overall.last - r->overall.first, v, sizeof v);
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
  timeline(f, r);
  breakdown(f, r);
  rp_render_kernels_html(r, f);
  busbw_plot(f, r);
  tables(f, r);
  rp_render_next_html(r, f);
  fprintf(f,
          "<p class=meta style=\"margin-top:40px\">Definitions: docs/metrics.md. Generated by "
          "topo-report %s.</p></main></body></html>\n",
          TOPO_VERSION);
  return fclose(f) == 0 ? TOPO_OK : TOPO_ERR_IO;
}
