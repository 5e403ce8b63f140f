// SPDX-License-Identifier: Apache-2.0
// The plots of the --html page (render_html.c calls them in page order), inline SVG: the timeline
// per rank (communication, compute and memory lanes over one step or a window), the time
// breakdown per rank, and busbw against message size per collective with its reference line.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "log.h"
#include "report.h"
#include "report_analysis.h"
#include "report_render.h"

#define C_COMPUTE "#4e79a7"
#define C_COMM    "#f28e2b"
#define C_OVERLAP "#b07aa1"
#define C_IDLE    "#e3e3e3"
#define C_MEMORY  "#59a14f"

static const char *palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

static void esc(FILE *f, const char *s) { rp_html_esc(f, s); }

void rp_html_rank_name(const rp_rank *k, char *buf, size_t len) {
  if (k->world_rank >= 0) snprintf(buf, len, "rank %d", k->world_rank);
  else snprintf(buf, len, "rank ?");
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

void rp_html_timeline(FILE *f, const rp_report *r) {
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
    rp_html_rank_name(sk, rn, sizeof rn);
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
    rp_html_rank_name(k, name, sizeof name);
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

void rp_html_breakdown(FILE *f, const rp_report *r) {
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
    rp_html_rank_name(&r->ranks[i], name, sizeof name);
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
void rp_html_busbw_plot(FILE *f, const rp_report *r) {
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
