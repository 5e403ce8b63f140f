// SPDX-License-Identifier: Apache-2.0
// The --html page's sections of the kernel-level analyses (kernel_stats.h): the kernel-type chart,
// the per-step temporal table, the top kernels and the streams. Called by render_html.c.
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "kernel_stats.h"
#include "report.h"
#include "report_render.h"

/* ---- HTML: the kernel-type chart, the per-step temporal table, top kernels, streams */
static void html_pct(FILE *f, int64_t ns, int64_t whole) {
  char t[32];
  rp_fmt_ns(ns, t, sizeof t);
  if (whole > 0) fprintf(f, "<td>%s (%.1f%%)</td>", t, 100.0 * (double)ns / (double)whole);
  else fprintf(f, "<td>%s (n/a)</td>", t);
}

static void html_chart(const rp_report *r, FILE *f) {
  int n = 0;
  for (int i = 0; i < r->nranks; i++) n += r->ranks[i].gpu && r->ranks[i].gpu->gpu_events;
  const double W = 900, L = 90, bar = 18, gap = 8;
  double H = 10 + n * (bar + gap) + 10;
  struct {
    const char *what, *color;
  } seg[] = {{"computation only", "#4e79a7"},
             {"communication only", "#f28e2b"},
             {"computation overlapping communication", "#b07aa1"},
             {"memory only", "#59a14f"},
             {"memory overlapping computation or communication", "#8cd17d"},
             {"other GPU events only", "#9c755f"},
             {"idle", "#e3e3e3"}};
  fprintf(f,
          "<h2>Kernel types</h2><p class=note>Each rank's GPU span (first to last GPU event of its "
          "Kineto trace) split by the kernel types running, as Holistic Trace Analysis classifies "
          "kernels by name. Hover a bar for its time.</p>\n");
  fprintf(f, "<svg class=plot viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" role=img>\n", W + L + 240,
          H);
  int row = 0;
  for (int i = 0; i < r->nranks; i++) {
    const rp_gpu *g = r->ranks[i].gpu;
    if (!g || !g->gpu_events) continue;
    int64_t span = g->last - g->first, c = g->combo[1], m = g->combo[2], b = g->combo[3],
            mem = g->combo[4];
    int64_t memo = g->combo[5] + g->combo[6] + g->combo[7], typed = c + m + b + mem + memo;
    int64_t v[] = {c, m, b, mem, memo, g->busy - typed, span - g->busy};
    double y = 10 + row++ * (bar + gap), x = L;
    fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=lab text-anchor=end>rank %d</text>\n", L - 8,
            y + bar - 5, r->ranks[i].world_rank);
    for (size_t p = 0; p < sizeof v / sizeof *v; p++) {
      double w = span > 0 ? W * (double)v[p] / (double)span : 0;
      if (w <= 0) continue;
      char t[32];
      rp_fmt_ns(v[p], t, sizeof t);
      fprintf(f,
              "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\"><title>rank "
              "%d, %s: %s "
              "(%.1f%% of %s)</title></rect>",
              x, y, w, bar, seg[p].color, r->ranks[i].world_rank, seg[p].what, t,
              100.0 * (double)v[p] / (double)span, "its span");
      x += w;
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" class=lab>idle %.1f%% · compute %.1f%%</text>\n",
            L + W + 8, y + bar - 5, span > 0 ? 100.0 * (double)(span - g->busy) / (double)span : 0,
            span > 0 ? 100.0 * (double)g->compute / (double)span : 0);
  }
  fprintf(f, "</svg>\n<div class=legend>");
  for (size_t p = 0; p < sizeof seg / sizeof *seg; p++)
    fprintf(f, "<span style=\"background:%s\"></span>%s ", seg[p].color, seg[p].what);
  fprintf(f, "</div>\n");
}

/* One rank's temporal breakdown per step. */
static void html_step_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  for (size_t s = 0; g && s < g->nsteps; s++) {
    const rp_gstep *st = &g->steps[s];
    int64_t sp = st->stop - st->start;
    char t[32];
    rp_fmt_ns(sp, t, sizeof t);
    fprintf(f, "<tr><td>rank %d</td><td>%" PRIu64 "</td><td>%s</td>", rank->world_rank, st->value,
            t);
    html_pct(f, sp - st->busy, sp);
    html_pct(f, st->compute, sp);
    html_pct(f, st->busy - st->compute, sp);
    if (st->comm > 0)
      fprintf(f, "<td>%.1f%%</td></tr>\n", 100.0 * (double)st->overlap / (double)st->comm);
    else fprintf(f, "<td>n/a</td></tr>\n");
  }
}

static void html_steps(const rp_report *r, FILE *f) {
  int steps = 0;
  for (int i = 0; i < r->nranks; i++) steps += r->ranks[i].gpu && r->ranks[i].gpu->nsteps;
  fprintf(f, "<h2>Temporal breakdown per step</h2>");
  if (!steps) {
    fprintf(f, "<p class=note>n/a: the Kineto traces hold no ProfilerStep.</p>\n");
    return;
  }
  fprintf(
      f,
      "<p class=note>Each step's GPU window (first to last GPU event it launched): idle = no GPU "
      "event running; compute = a computation kernel running; non-compute = the rest "
      "(communication, memory, other not overlapped by computation). Holistic Trace Analysis' "
      "temporal breakdown, per step.</p>\n<div "
      "class=tw><table><tr><th>rank</th><th>step</th><th>span</th>"
      "<th>idle</th><th>compute</th><th>non-compute</th><th>communication overlapped</th></tr>\n");
  rp_kern_each_rank(r, f, html_step_rows);
  fprintf(f, "</table></div>\n");
}

/* One rank's top kernels. */
static void html_kernel_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char(*names)[512] = g ? rp_kern_top_names(g) : NULL;
  for (size_t j = 0; g && j < g->nkern; j++) {
    const rp_kstat *k = &g->kern[j];
    if (!k->top) continue;
    char nm[RP_NAME_SHORT], shortname[RP_NAME_SHORT], a[32], b[32], c[32], d[32];
    rp_kernel_short_name(k->name, shortname, sizeof shortname);
    snprintf(nm, sizeof nm, "%s", names ? names[j] : shortname);
    rp_fmt_ns(k->sum, a, sizeof a);
    rp_fmt_ns((int64_t)llround(k->mean), b, sizeof b);
    rp_fmt_ns(k->min, c, sizeof c);
    rp_fmt_ns(k->max, d, sizeof d);
    fprintf(f, "<tr><td>rank %d</td><td>%s</td><td>%zu</td><td class=name title=\"",
            rank->world_rank, rp_ktype_name(k->type), j);
    rp_html_esc(f, k->name);
    fprintf(f, "\">");
    if (strcmp(nm, shortname)) { /* it read like another: its full name one click away */
      fprintf(f, "<details><summary>");
      rp_html_esc(f, nm);
      fprintf(f, " …</summary>");
      rp_html_esc(f, k->name);
      fprintf(f, "</details>");
    } else {
      rp_html_esc(f, nm);
    }
    fprintf(f, "</td><td>%" PRIu64 "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", k->n,
            a, b, c, d);
  }
  topo_free(names);
}

static void html_kernels(const rp_report *r, FILE *f) {
  fprintf(
      f,
      "<h2>Top kernels</h2><p class=note>Per rank and type, by total time (HTA's rule: at most 10, "
      "within 80%% of the type's time; --top N). Names without template and call arguments; where "
      "two read alike, open one for its full name (hover any for it). id: the kernel's index in "
      "--json kernel_analyses.ranks[].kernels and in the kernels CSV table.</p>\n"
      "<div class=tw><table><tr><th>rank</th><th>type</th><th>id</th><th>kernel</th><th>count</th>"
      "<th>total</th><th>mean</th><th>min</th><th>max</th></tr>\n");
  rp_kern_each_rank(r, f, html_kernel_rows);
  fprintf(f, "</table></div>\n");
}

/* One rank's streams. */
static void html_stream_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  for (size_t j = 0; g && j < g->nstreams; j++) {
    const rp_gstream *s = &g->streams[j];
    int64_t idle = s->idle[0] + s->idle[1] + s->idle[2];
    fprintf(f, "<tr><td>rank %d</td><td>%" PRId64 "</td><td>%" PRIu64 "</td>", rank->world_rank,
            s->stream, s->events);
    for (int c = 0; c < RP_IDLE_CATS; c++) html_pct(f, s->idle[c], idle);
    if (s->delay.n) {
      char a[32], b[32];
      rp_fmt_ns(rp_quant_get(&s->delay, 0.5), a, sizeof a);
      rp_fmt_ns(s->delay.max, b, sizeof b);
      fprintf(f,
              "<td>%s</td><td>%s</td><td>%" PRIu64 "</td><td>%.2f</td><td>%" PRId64 "</td></tr>\n",
              a, b, s->delay_outliers, s->q_sum / (double)s->q_n, s->q_max);
    } else {
      fprintf(f, "<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td></tr>\n");
    }
  }
}

static void html_streams(const rp_report *r, FILE *f) {
  fprintf(
      f,
      "<h2>Streams: idle time, launch delay, queue length</h2><p class=note>Idle: the gap before "
      "each kernel, memcpy or memset on its stream; host wait when its launch call began after the "
      "previous one ended, kernel wait when the gap is under 30 us, else other. Launch delay: GPU "
      "start minus the end of the launch call. Queue: launched but not started, after each launch "
      "and start.</p>\n<div "
      "class=tw><table><tr><th>rank</th><th>stream</th><th>events</th><th>host wait</th>"
      "<th>kernel wait</th><th>other idle</th><th>launch delay median</th><th>max</th>"
      "<th>&gt; 100 us</th><th>queue mean</th><th>queue max</th></tr>\n");
  rp_kern_each_rank(r, f, html_stream_rows);
  fprintf(f, "</table></div>\n");
}

void rp_render_kernels_html(const rp_report *r, FILE *f) {
  if (!rp_render_kernels_any(r)) return;
  html_chart(r, f);
  html_steps(r, f);
  html_kernels(r, f);
  html_streams(r, f);
}
