// SPDX-License-Identifier: Apache-2.0
// Text (fitted to the report's width), JSON, CSV and HTML sections of the kernel-level analyses (kernels.h): temporal breakdown per rank and
// step, kernel types across ranks, the top kernels, idle time, launch delay and queue length per
// stream, memcpy/memset bandwidth. Figures that are undefined (a ratio of nothing, the spread of
// one value) print "n/a" / null / an empty CSV field, never 0. Called by render_text.c,
// render_json.c (JSON and CSV) and render_html.c.
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "kernel_stats.h"
#include "report_render.h"
#include "textout.h"

#define NAME_SHORT 512 /* a short kernel name (kernels.c copies at most NAME_MAX_LEN) */

static int any(const rp_report *r) {
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].gpu && r->ranks[i].gpu->gpu_events) return 1;
  return 0;
}

static const char *ns_s(int64_t ns, char *buf, size_t len) {
  rp_fmt_ns(ns, buf, len);
  return buf;
}

/* "1.23 ms (45.6%)", or "1.23 ms (n/a)" when the whole is 0. */
static const char *part(int64_t ns, int64_t whole, char *buf, size_t len) {
  char a[32];
  rp_fmt_ns(ns, a, sizeof a);
  if (whole > 0) snprintf(buf, len, "%s (%.1f%%)", a, 100.0 * (double)ns / (double)whole);
  else snprintf(buf, len, "%s (n/a)", a);
  return buf;
}

static double kstd(const rp_kstat *k) { return k->n > 1 ? sqrt(k->m2 / (double)(k->n - 1)) : NAN; }

static double q_std(const rp_gstream *s) {
  if (s->q_n < 2) return NAN;
  double m = s->q_sum / (double)s->q_n,
         v = (s->q_sumsq - (double)s->q_n * m * m) / (double)(s->q_n - 1);
  return v > 0 ? sqrt(v) : 0;
}

static void rank_of(const rp_rank *k, char *buf, size_t len) {
  if (k->world_rank >= 0) snprintf(buf, len, "%d", k->world_rank);
  else snprintf(buf, len, "?");
}

/* Calls rows(f, rank) for every rank with kernel analyses (a Kineto trace), in rank order. */
static void each_rank(const rp_report *r, FILE *f, void (*rows)(FILE *f, const rp_rank *rank)) {
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].gpu) rows(f, &r->ranks[i]);
}

/* ---- text: tables fitted to the report's width (textout.h) */
static rp_tab *table(const char *const *head, int n, int keys) {
  rp_tab *t = rp_tab_new(n);
  for (int c = 0; c < n; c++) rp_tab_col(t, c, head[c], c < keys ? RP_TAB_LEFT | RP_TAB_KEY : 0);
  return t;
}

/* The span of one rank split into idle, compute and non-compute. */
static void text_temporal_row(rp_tab *t, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char rk[16], a[40], b[40], c[40], d[40];
  rank_of(rank, rk, sizeof rk);
  if (!g->gpu_events) return;
  int64_t span = g->last - g->first;
  rp_tab_cell(t, "%s", rk);
  rp_tab_cell(t, "%s", ns_s(span, a, sizeof a));
  rp_tab_cell(t, "%s", part(span - g->busy, span, b, sizeof b));
  rp_tab_cell(t, "%s", part(g->compute, span, c, sizeof c));
  rp_tab_cell(t, "%s", part(g->busy - g->compute, span, d, sizeof d));
  rp_tab_end_row(t);
}

/* The same split for each step of one rank. */
static void text_temporal_step_rows(rp_tab *t, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char rk[16], a[40], b[40], c[40], d[40];
  rank_of(rank, rk, sizeof rk);
  for (size_t s = 0; s < g->nsteps; s++) {
    const rp_gstep *st = &g->steps[s];
    int64_t span = st->stop - st->start;
    rp_tab_cell(t, "%s", rk);
    rp_tab_cell(t, "%" PRIu64, st->value);
    rp_tab_cell(t, "%s", ns_s(span, a, sizeof a));
    rp_tab_cell(t, "%s", part(span - st->busy, span, b, sizeof b));
    rp_tab_cell(t, "%s", part(st->compute, span, c, sizeof c));
    rp_tab_cell(t, "%s", part(st->busy - st->compute, span, d, sizeof d));
    rp_tab_end_row(t);
  }
}

/* Calls rows(t, rank) for every rank with kernel analyses, in rank order. */
static void each_rank_tab(const rp_report *r, rp_tab *t, void (*rows)(rp_tab *t, const rp_rank *)) {
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].gpu) rows(t, &r->ranks[i]);
}

static void text_temporal(const rp_report *r, FILE *f, int width) {
  fprintf(f, "\n");
  rp_note(f, width, 0, "Temporal breakdown (GPU events; span = first GPU start to last GPU end)");
  static const char *const head[] = {"rank", "span", "idle", "compute", "non-compute"};
  rp_tab *t = table(head, 5, 1);
  each_rank_tab(r, t, text_temporal_row);
  rp_tab_print(t, f, width, 2);
  rp_tab_free(t);
  int steps = 0;
  for (int i = 0; i < r->nranks; i++) steps += r->ranks[i].gpu && r->ranks[i].gpu->nsteps;
  if (!steps) {
    rp_note(f, width, 2, "per step: n/a (no ProfilerStep in the Kineto traces)");
    return;
  }
  rp_note(f, width, 2, "per step (each step's GPU window):");
  static const char *const shead[] = {"rank", "step", "span", "idle", "compute", "non-compute"};
  t = table(shead, 6, 2);
  each_rank_tab(r, t, text_temporal_step_rows);
  rp_tab_print(t, f, width, 2);
  rp_tab_free(t);
}

static void text_types(const rp_report *r, FILE *f, int width) {
  rp_gpu_totals tot;
  rp_gpu_totals_get(r, &tot);
  int64_t all = 0;
  for (int m = 1; m < 8; m++) all += tot.combo[m];
  fprintf(f, "\n");
  rp_note(f, width, 0, "Kernel types, all %d rank%s (time while running; HTA's kernel-type table)",
          tot.ranks, tot.ranks == 1 ? "" : "s");
  static const char *const head[] = {"kernel types running", "time"};
  rp_tab *t = table(head, 2, 1);
  static const int order[] = {1, 2, 4, 3, 5, 6, 7};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
    char a[40];
    int m = order[i];
    if (!tot.combo[m] && m > 4) continue;
    rp_tab_cell(t, "%s", rp_combo_name(m));
    rp_tab_cell(t, "%s", part(tot.combo[m], all, a, sizeof a));
    rp_tab_end_row(t);
  }
  rp_tab_print(t, f, width, 2);
  rp_tab_free(t);
}

/* The first name inside a kernel's template arguments that is no namespace or class qualifier
 * ("GeluCUDAKernelImpl" in "void at::native::vectorized_elementwise_kernel<8,
 * at::native::GeluCUDAKernelImpl(...)...>"); "" when there is none. */
static void template_tag(const char *name, char *out, size_t len) {
  out[0] = 0;
  const char *p = strchr(name, '<');
  if (!p) return;
  for (p++; *p && *p != '>';) {
    if (!strncmp(p, "(anonymous namespace)::", 23)) {
      p += 23;
      continue;
    }
    if (*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')) {
      const char *s = p;
      while (*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
             (*p >= '0' && *p <= '9'))
        p++;
      if (p[0] == ':' && p[1] == ':') { /* a qualifier: the name comes after it */
        p += 2;
        continue;
      }
      snprintf(out, len, "%.*s", (int)(p - s), s);
      return;
    }
    p++;
  }
}

/* 1 when names[i] equals another of names[0..n). */
static int alike(char (*names)[512], size_t n, size_t i) {
  for (size_t k = 0; k < n; k++)
    if (k != i && !strcmp(names[k], names[i])) return 1;
  return 0;
}

void rp_kernel_display_names(const char *const *full, size_t n, char (*out)[512]) {
  for (size_t i = 0; i < n; i++) rp_kernel_short_name(full[i], out[i], sizeof out[i]);
  uint8_t *tag = topo_calloc(n ? n : 1, 1);
  if (!tag) return;
  for (size_t i = 0; i < n; i++) tag[i] = (uint8_t)alike(out, n, i);
  for (size_t i = 0; i < n; i++) {
    char t[128];
    if (!tag[i]) continue;
    template_tag(full[i], t, sizeof t);
    if (!t[0]) continue;
    size_t at = strlen(out[i]);
    snprintf(out[i] + at, sizeof out[i] - at, "<%s…>", t);
  }
  for (size_t i = 0; i < n; i++) tag[i] = (uint8_t)alike(out, n, i);
  for (size_t i = 0; i < n; i++)
    if (tag[i]) snprintf(out[i], sizeof out[i], "%s", full[i]);
  topo_free(tag);
}

/* The names shown for one rank's top kernels (indexed like g->kern; NULL out of memory). */
static char (*top_names(const rp_gpu *g))[512] {
  char(*names)[512] = topo_calloc(g->nkern ? g->nkern : 1, sizeof *names);
  const char **full = topo_calloc(g->nkern ? g->nkern : 1, sizeof *full);
  size_t *at = topo_calloc(g->nkern ? g->nkern : 1, sizeof *at);
  char(*shown)[512] = topo_calloc(g->nkern ? g->nkern : 1, sizeof *shown);
  if (!names || !full || !at || !shown) {
    topo_free(names), topo_free(full), topo_free(at), topo_free(shown);
    return NULL;
  }
  size_t n = 0;
  for (size_t j = 0; j < g->nkern; j++)
    if (g->kern[j].top) full[n] = g->kern[j].name, at[n++] = j;
  rp_kernel_display_names(full, n, shown);
  for (size_t k = 0; k < n; k++) memcpy(names[at[k]], shown[k], sizeof shown[k]);
  topo_free(full), topo_free(at), topo_free(shown);
  return names;
}

/* One rank's top kernels per type, the rest summed as 'others'. The name is the short one
 * (without template and call arguments) unless another top kernel shares it: then the full one,
 * wrapped; id is the kernel's index in --json's and the kernels CSV table's list. */
static void text_kernel_rows(rp_tab *t, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char rk[16];
  rank_of(rank, rk, sizeof rk);
  char(*names)[512] = top_names(g);
  for (size_t j = 0; j < g->nkern;) {
    int type = g->kern[j].type;
    uint64_t on = 0, oc = 0;
    int64_t osum = 0;
    for (; j < g->nkern && g->kern[j].type == type; j++) {
      const rp_kstat *k = &g->kern[j];
      if (!k->top) {
        on++, oc += k->n, osum += k->sum;
        continue;
      }
      char nm[NAME_SHORT], tot[24], mean[24], mn[24], mx[24], sd[24];
      if (names) snprintf(nm, sizeof nm, "%s", names[j]);
      else rp_kernel_short_name(k->name, nm, sizeof nm);
      double s = kstd(k);
      if (s == s) rp_fmt_ns((int64_t)llround(s), sd, sizeof sd);
      else snprintf(sd, sizeof sd, "n/a");
      rp_tab_cell(t, "%s", rk);
      rp_tab_cell(t, "%s", rp_ktype_name(type));
      rp_tab_cell(t, "%zu", j);
      rp_tab_cell(t, "%s", nm);
      rp_tab_cell(t, "%" PRIu64, k->n);
      rp_tab_cell(t, "%s", ns_s(k->sum, tot, sizeof tot));
      rp_tab_cell(t, "%s", ns_s((int64_t)llround(k->mean), mean, sizeof mean));
      rp_tab_cell(t, "%s", ns_s(k->min, mn, sizeof mn));
      rp_tab_cell(t, "%s", ns_s(k->max, mx, sizeof mx));
      rp_tab_cell(t, "%s", sd);
      rp_tab_end_row(t);
    }
    if (on) {
      char tot[24];
      rp_tab_cell(t, "%s", rk);
      rp_tab_cell(t, "%s", rp_ktype_name(type));
      rp_tab_cell(t, "%s", "");
      rp_tab_cell(t, "others (%" PRIu64 " kernel%s)", on, on == 1 ? "" : "s");
      rp_tab_cell(t, "%" PRIu64, oc);
      rp_tab_cell(t, "%s", ns_s(osum, tot, sizeof tot));
      rp_tab_end_row(t);
    }
  }
  topo_free(names);
}

static void text_kernels(const rp_report *r, FILE *f, int width) {
  fprintf(f, "\n");
  rp_note(f, width, 0,
          "Top kernels per rank and type (by total time; the rest summed as 'others')");
  static const char *const head[] = {"rank",  "type", "id",  "kernel", "count",
                                     "total", "mean", "min", "max",    "std"};
  rp_tab *t = rp_tab_new(10);
  for (int c = 0; c < 10; c++)
    rp_tab_col(t, c, head[c],
               c < 2    ? RP_TAB_LEFT | RP_TAB_KEY
               : c == 2 ? RP_TAB_KEY
               : c == 3 ? RP_TAB_LEFT | RP_TAB_WRAP
                        : 0);
  each_rank_tab(r, t, text_kernel_rows);
  rp_tab_print(t, f, width, 2);
  rp_tab_free(t);
  rp_note(f, width, 2,
          "kernel: the name without template and call arguments; where two would read alike, with "
          "the first name of its template arguments (<...…>), and whole where that still reads "
          "alike; id: its index in --json kernel_analyses.ranks[].kernels and in the kernels CSV "
          "table (kernel_id), which hold every kernel's full name");
}

/* Launch delay and queue length of one rank's streams. */
static void text_launch_rows(rp_tab *t, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char rk[16];
  rank_of(rank, rk, sizeof rk);
  for (size_t j = 0; j < g->nstreams; j++) {
    const rp_gstream *s = &g->streams[j];
    rp_tab_cell(t, "%s", rk);
    rp_tab_cell(t, "%" PRId64, s->stream);
    if (!s->delay.n) {
      rp_tab_cell(t, "0");
      rp_tab_cell(t, "n/a (no launch call found for its events)");
      rp_tab_end_row(t);
      continue;
    }
    char a[24], b[24], c[24];
    rp_tab_cell(t, "%" PRIu64, s->delay.n);
    rp_tab_cell(t, "%s", ns_s(rp_quant_get(&s->delay, 0.5), a, sizeof a));
    rp_tab_cell(t, "%s", ns_s(rp_quant_get(&s->delay, 0.95), b, sizeof b));
    rp_tab_cell(t, "%s", ns_s(s->delay.max, c, sizeof c));
    rp_tab_cell(t, "%" PRIu64, s->delay_outliers);
    rp_tab_cell(t, "%" PRIu64, s->runtime_outliers);
    rp_tab_cell(t, "%" PRIu64, s->short_kernels);
    rp_tab_cell(t, "%.2f", s->q_sum / (double)s->q_n);
    rp_tab_cell(t, "%" PRId64, s->q_max);
    rp_tab_end_row(t);
  }
}

/* Idle time of one rank's streams. */
static void text_idle_rows(rp_tab *t, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char rk[16];
  rank_of(rank, rk, sizeof rk);
  for (size_t j = 0; j < g->nstreams; j++) {
    const rp_gstream *s = &g->streams[j];
    int64_t idle = s->idle[0] + s->idle[1] + s->idle[2];
    char a[24], b[40], c[40], d[40];
    rp_tab_cell(t, "%s", rk);
    rp_tab_cell(t, "%" PRId64, s->stream);
    rp_tab_cell(t, "%" PRIu64, s->events);
    rp_tab_cell(t, "%s", ns_s(idle, a, sizeof a));
    rp_tab_cell(t, "%s", part(s->idle[RP_IDLE_HOST], idle, b, sizeof b));
    rp_tab_cell(t, "%s", part(s->idle[RP_IDLE_KERNEL], idle, c, sizeof c));
    rp_tab_cell(t, "%s", part(s->idle[RP_IDLE_OTHER], idle, d, sizeof d));
    rp_tab_end_row(t);
  }
}

static void text_streams(const rp_report *r, FILE *f, int width) {
  fprintf(f, "\n");
  rp_note(f, width, 0,
          "Idle time per stream (gap before each kernel/memcpy/memset; host wait: launched after "
          "the previous one ended; kernel wait: gap < 30 us)");
  static const char *const ihead[] = {"rank",      "stream",      "events", "idle",
                                      "host wait", "kernel wait", "other"};
  rp_tab *t = table(ihead, 7, 2);
  each_rank_tab(r, t, text_idle_rows);
  rp_tab_print(t, f, width, 2);
  rp_tab_free(t);
  fprintf(f, "\n");
  rp_note(f, width, 0,
          "Launch delay (GPU start - end of its launch call) and queue length per stream");
  static const char *const lhead[] = {"rank",  "stream",    "launched", "delay p50",
                                      "p95",   "max",       ">100us",   "call>50us",
                                      "short", "queue avg", "queue max"};
  t = table(lhead, 11, 2);
  each_rank_tab(r, t, text_launch_rows);
  rp_tab_print(t, f, width, 2);
  rp_tab_free(t);
}

/* Memcpy/memset bandwidth of one rank per kind. */
static void text_memcpy_rows(rp_tab *t, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char rk[16];
  rank_of(rank, rk, sizeof rk);
  for (size_t j = 0; j < g->nmem; j++) {
    const rp_memkind *m = &g->mem[j];
    char by[24] = "n/a", tm[24], bw[24] = "n/a", p50[24] = "n/a", ca[24] = "n/a", cm[24] = "n/a";
    if (m->with_bytes) rp_fmt_bytes(m->bytes, by, sizeof by);
    if (m->dur_with_bytes > 0)
      snprintf(bw, sizeof bw, "%.3f", (double)m->bytes / (double)m->dur_with_bytes);
    if (m->op_bw.n) snprintf(p50, sizeof p50, "%.3f", (double)rp_quant_get(&m->op_bw, 0.5) / 1e3);
    if (m->s_n) {
      snprintf(ca, sizeof ca, "%.3f", m->s_sum / (double)m->s_n);
      snprintf(cm, sizeof cm, "%.3f", m->s_max);
    }
    rp_tab_cell(t, "%s", rk);
    rp_tab_cell(t, "%s", m->kind);
    rp_tab_cell(t, "%" PRIu64, m->n);
    rp_tab_cell(t, "%s", by);
    rp_tab_cell(t, "%s", ns_s(m->dur, tm, sizeof tm));
    rp_tab_cell(t, "%s", bw);
    rp_tab_cell(t, "%s", p50);
    rp_tab_cell(t, "%s", ca);
    rp_tab_cell(t, "%s", cm);
    rp_tab_end_row(t);
  }
}

static void text_memcpy(const rp_report *r, FILE *f, int width) {
  int have = 0;
  for (int i = 0; i < r->nranks; i++) have |= r->ranks[i].gpu && r->ranks[i].gpu->nmem;
  fprintf(f, "\n");
  if (!have) {
    rp_note(f, width, 0, "Memcpy/memset bandwidth: n/a (no memcpy or memset on the GPU)");
    return;
  }
  rp_note(f, width, 0,
          "Memcpy/memset bandwidth per kind (bytes / time; concurrent: summed GB/s of the "
          "operations running, HTA's series)");
  static const char *const head[] = {"rank",        "kind",           "ops",
                                     "bytes",       "time",           "GB/s",
                                     "op GB/s p50", "concurrent avg", "concurrent max"};
  rp_tab *t = table(head, 9, 2);
  each_rank_tab(r, t, text_memcpy_rows);
  rp_tab_print(t, f, width, 2);
  rp_tab_free(t);
}

/* Why one rank's figures may be incomplete. */
static void text_warning_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  if (g && g->failed)
    fprintf(f, "  warning: rank %d: out of memory; these figures are incomplete\n",
            rank->world_rank);
  if (g && g->late)
    fprintf(f,
            "  warning: rank %d: %" PRIu64
            " GPU events arrived too far out of order and were clipped\n",
            rank->world_rank, g->late);
}

void rp_render_kernels_text(const rp_report *r, FILE *f) {
  if (!any(r)) return;
  int width = rp_text_width(r);
  fprintf(f, "\n");
  rp_note(f, width, 0,
          "Kernel-level analyses of the Kineto traces (Holistic Trace Analysis' definitions; "
          "docs/metrics.md)");
  text_temporal(r, f, width);
  text_types(r, f, width);
  text_kernels(r, f, width);
  text_streams(r, f, width);
  text_memcpy(r, f, width);
  each_rank(r, f, text_warning_rows);
}

/* ---- JSON */
static void jnum(FILE *f, const char *key, double v) {
  if (v == v && !isinf(v)) fprintf(f, ",\"%s\":%.6g", key, v);
  else fprintf(f, ",\"%s\":null", key);
}

static void jratio(FILE *f, const char *key, int64_t num, int64_t den) {
  if (den > 0) fprintf(f, ",\"%s\":%.6f", key, (double)num / (double)den);
  else fprintf(f, ",\"%s\":null", key);
}

/* One step of a rank's temporal breakdown. */
static void json_step(FILE *f, const rp_gstep *st, int first) {
  int64_t sp = st->stop - st->start;
  fprintf(f,
          "%s{\"step\":%" PRIu64 ",\"start_ns\":%" PRId64 ",\"span_ns\":%" PRId64
          ",\"idle_ns\":%" PRId64 ",\"compute_ns\":%" PRId64 ",\"non_compute_ns\":%" PRId64,
          first ? "" : ",", st->value, st->start, sp, sp - st->busy, st->compute,
          st->busy - st->compute);
  jratio(f, "idle_share", sp - st->busy, sp);
  jratio(f, "compute_share", st->compute, sp);
  jratio(f, "non_compute_share", st->busy - st->compute, sp);
  fprintf(f, "}");
}

/* One row of a rank's kernel table. */
static void json_kernel(FILE *f, const rp_kstat *kk, size_t id) {
  fprintf(f, "%s\n  {\"id\":%zu,\"name\":", id ? "," : "", id);
  rp_json_string(f, kk->name);
  fprintf(f,
          ",\"type\":\"%s\",\"top\":%s,\"count\":%" PRIu64 ",\"total_ns\":%" PRId64
          ",\"min_ns\":%" PRId64 ",\"max_ns\":%" PRId64,
          rp_ktype_name(kk->type), kk->top ? "true" : "false", kk->n, kk->sum, kk->min, kk->max);
  jnum(f, "mean_ns", kk->mean);
  jnum(f, "std_ns", kstd(kk));
  fprintf(f, "}");
}

/* One stream: idle time by cause, launch delay, queue length. */
static void json_stream(FILE *f, const rp_gstream *s, int first) {
  int64_t idle = s->idle[0] + s->idle[1] + s->idle[2];
  fprintf(f, "%s\n  {\"stream\":%" PRId64 ",\"events\":%" PRIu64 ",\"idle_ns\":%" PRId64,
          first ? "" : ",", s->stream, s->events, idle);
  for (int c = 0; c < RP_IDLE_CATS; c++) {
    static const char *key[] = {"host_wait", "kernel_wait", "other"};
    fprintf(f, ",\"%s_ns\":%" PRId64 ",\"%s_gaps\":%" PRIu64, key[c], s->idle[c], key[c],
            s->gaps[c]);
    char k2[32];
    snprintf(k2, sizeof k2, "%s_share", key[c]);
    jratio(f, k2, s->idle[c], idle);
  }
  fprintf(f, ",\"overlapped\":%" PRIu64 ",\"launched\":%" PRIu64, s->overlapped, s->delay.n);
  if (s->delay.n)
    fprintf(f,
            ",\"launch_delay_mean_ns\":%.1f,\"launch_delay_p50_ns\":%" PRId64
            ",\"launch_delay_p95_ns\":%" PRId64 ",\"launch_delay_max_ns\":%" PRId64
            ",\"cpu_call_mean_ns\":%.1f,\"gpu_mean_ns\":%.1f"
            ",\"delay_outliers\":%" PRIu64 ",\"runtime_outliers\":%" PRIu64
            ",\"short_kernels\":%" PRIu64,
            s->delay.sum / (double)s->delay.n, rp_quant_get(&s->delay, 0.5),
            rp_quant_get(&s->delay, 0.95), s->delay.max, s->cpu_dur.sum / (double)s->cpu_dur.n,
            s->gpu_dur.sum / (double)s->gpu_dur.n, s->delay_outliers, s->runtime_outliers,
            s->short_kernels);
  else
    fprintf(
        f,
        ",\"launch_delay_mean_ns\":null,\"launch_delay_p50_ns\":null,\"launch_delay_p95_ns\":null"
        ",\"launch_delay_max_ns\":null");
  fprintf(f, ",\"queue_points\":%" PRIu64, s->q_n);
  if (s->q_n) {
    fprintf(f,
            ",\"queue_mean\":%.6g,\"queue_min\":%" PRId64 ",\"queue_max\":%" PRId64
            ",\"queue_p50\":%" PRId64,
            s->q_sum / (double)s->q_n, s->q_min, s->q_max, rp_quant_get(&s->queue, 0.5));
    jnum(f, "queue_std", q_std(s));
  } else {
    fprintf(f,
            ",\"queue_mean\":null,\"queue_min\":null,\"queue_max\":null,\"queue_p50\":null,\"queue_"
            "std\":null");
  }
  fprintf(f, ",\"out_of_order\":%" PRIu64 "}", s->late);
}

/* One memcpy/memset kind. */
static void json_memcpy(FILE *f, const rp_memkind *m, int first) {
  fprintf(f,
          "%s\n  {\"kind\":\"%s\",\"ops\":%" PRIu64 ",\"ops_with_bytes\":%" PRIu64
          ",\"time_ns\":%" PRId64,
          first ? "" : ",", m->kind, m->n, m->with_bytes, m->dur);
  if (m->with_bytes) fprintf(f, ",\"bytes\":%" PRIu64, m->bytes);
  else fprintf(f, ",\"bytes\":null");
  jnum(f, "gbps", m->dur_with_bytes > 0 ? (double)m->bytes / (double)m->dur_with_bytes : NAN);
  jnum(f, "op_gbps_p50", m->op_bw.n ? (double)rp_quant_get(&m->op_bw, 0.5) / 1e3 : NAN);
  fprintf(f, ",\"concurrent_points\":%" PRIu64, m->s_n);
  jnum(f, "concurrent_gbps_mean", m->s_n ? m->s_sum / (double)m->s_n : NAN);
  jnum(f, "concurrent_gbps_min", m->s_n ? m->s_min : NAN);
  jnum(f, "concurrent_gbps_max", m->s_n ? m->s_max : NAN);
  fprintf(f, ",\"out_of_order\":%" PRIu64 "}", m->late);
}

/* One rank's kernel-level analyses: temporal breakdown (whole span and per step), time per
 * kernel-type combination and per type, kernels, streams, memcpy/memset kinds. */
static void json_rank(const rp_rank *k, FILE *f) {
  const rp_gpu *g = k->gpu;
  int64_t span = g->last - g->first;
  fprintf(f,
          "{\"rank\":%d,\"cpu_events\":%" PRIu64 ",\"gpu_events\":%" PRIu64
          ",\"gpu_events_with_correlation\":%" PRIu64 ",\"cpu_call_found\":%" PRIu64
          ",\"complete\":%s",
          k->world_rank, g->cpu_events, g->gpu_events, g->launches, g->matched,
          g->failed ? "false" : "true");
  fprintf(f,
          ",\n \"temporal\":{\"span_ns\":%" PRId64 ",\"idle_ns\":%" PRId64
          ",\"compute_ns\":%" PRId64 ",\"non_compute_ns\":%" PRId64,
          span, span - g->busy, g->compute, g->busy - g->compute);
  jratio(f, "idle_share", span - g->busy, span);
  jratio(f, "compute_share", g->compute, span);
  jratio(f, "non_compute_share", g->busy - g->compute, span);
  fprintf(f,
          ",\"comm_ns\":%" PRId64 ",\"comm_compute_overlap_ns\":%" PRId64
          ",\"out_of_order_clipped\":%" PRIu64,
          g->comm, g->overlap, g->late);
  jratio(f, "comm_compute_overlap_share", g->overlap, g->comm);
  fprintf(f, "}");
  fprintf(f, ",\n \"steps\":[");
  for (size_t s = 0; s < g->nsteps; s++) json_step(f, &g->steps[s], s == 0);
  fprintf(f, "],\n \"kernel_type_time\":{");
  for (int m = 1; m < 8; m++)
    fprintf(f, "%s\"%s\":%" PRId64, m > 1 ? "," : "", rp_combo_name(m), g->combo[m]);
  fprintf(f, "},\n \"kernel_types\":{");
  for (int t = 0; t < RP_K_TYPES; t++)
    fprintf(f, "%s\"%s\":{\"count\":%" PRIu64 ",\"total_ns\":%" PRId64 "}", t ? "," : "",
            rp_ktype_name(t), g->type_n[t], g->type_time[t]);
  fprintf(f, "},\n \"kernels\":[");
  for (size_t j = 0; j < g->nkern; j++) json_kernel(f, &g->kern[j], j);
  fprintf(f, "],\n \"streams\":[");
  for (size_t j = 0; j < g->nstreams; j++) json_stream(f, &g->streams[j], j == 0);
  fprintf(f, "],\n \"memcpy\":[");
  for (size_t j = 0; j < g->nmem; j++) json_memcpy(f, &g->mem[j], j == 0);
  fprintf(f, "]}");
}

void rp_render_kernels_json(const rp_report *r, FILE *f) {
  if (!any(r)) {
    fprintf(f, ",\n\"kernel_analyses\":null");
    return;
  }
  rp_gpu_totals t;
  rp_gpu_totals_get(r, &t);
  int64_t all = 0;
  for (int m = 1; m < 8; m++) all += t.combo[m];
  fprintf(
      f,
      ",\n\"kernel_analyses\":{\"definitions\":\"Holistic Trace Analysis 0.6.1 (docs/metrics.md)\","
      "\"kernel_wait_below_ns\":%d,\"runtime_outlier_above_ns\":%d,\"delay_outlier_above_ns\":%d,\n"
      "\"kernel_types_all_ranks\":{\"ranks\":%d,\"types\":[",
      RP_GPU_KERNEL_DELAY_NS, RP_GPU_RUNTIME_CUTOFF_NS, RP_GPU_DELAY_CUTOFF_NS, t.ranks);
  for (int m = 1; m < 8; m++) {
    fprintf(f, "%s{\"kernel_type\":\"%s\",\"ns\":%" PRId64, m > 1 ? "," : "", rp_combo_name(m),
            t.combo[m]);
    jratio(f, "share", t.combo[m], all);
    fputc('}', f);
  }
  fprintf(f, "]},\n\"ranks\":[");
  int first = 1;
  for (int i = 0; i < r->nranks; i++) {
    if (!r->ranks[i].gpu || !r->ranks[i].gpu->gpu_events) continue;
    fprintf(f, "%s\n", first ? "" : ",");
    first = 0;
    json_rank(&r->ranks[i], f);
  }
  fprintf(f, "]}");
}

/* ---- CSV: one table per analysis, each with its own header line */
static void csv_name(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static void csv_ratio(FILE *f, int64_t num, int64_t den) {
  if (den > 0) fprintf(f, ",%.6f", (double)num / (double)den);
  else fprintf(f, ",");
}

/* One rank's memcpy/memset kinds. */
static void csv_memcpy_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  for (size_t j = 0; j < g->nmem; j++) {
    const rp_memkind *m = &g->mem[j];
    fprintf(f, "%d,%s,%" PRIu64 ",", rank->world_rank, m->kind, m->n);
    if (m->with_bytes) fprintf(f, "%" PRIu64, m->bytes);
    fprintf(f, ",%" PRId64 ",", m->dur);
    if (m->dur_with_bytes > 0) fprintf(f, "%.6g", (double)m->bytes / (double)m->dur_with_bytes);
    fputc(',', f);
    if (m->s_n) fprintf(f, "%.6g,%.6g", m->s_sum / (double)m->s_n, m->s_max);
    else fputc(',', f);
    fputc('\n', f);
  }
}

/* One rank's streams. */
static void csv_stream_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  for (size_t j = 0; j < g->nstreams; j++) {
    const rp_gstream *s = &g->streams[j];
    fprintf(f, "%d,%" PRId64 ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRIu64,
            rank->world_rank, s->stream, s->events, s->idle[0], s->idle[1], s->idle[2], s->delay.n);
    if (s->delay.n)
      fprintf(f, ",%.1f,%" PRId64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
              s->delay.sum / (double)s->delay.n, rp_quant_get(&s->delay, 0.5), s->delay.max,
              s->delay_outliers, s->runtime_outliers, s->short_kernels);
    else fprintf(f, ",,,,,,");
    if (s->q_n) fprintf(f, ",%.6g,%" PRId64 "\n", s->q_sum / (double)s->q_n, s->q_max);
    else fprintf(f, ",,\n");
  }
}

/* One rank's kernel table; kernel_id is the kernel's index in the rank's JSON "kernels". */
static void csv_kernel_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  for (size_t j = 0; j < g->nkern; j++) {
    const rp_kstat *k = &g->kern[j];
    fprintf(f, "%d,%zu,%s,", rank->world_rank, j, rp_ktype_name(k->type));
    csv_name(f, k->name);
    fprintf(f, ",%d,%" PRIu64 ",%" PRId64 ",%.1f,%" PRId64 ",%" PRId64 ",", k->top, k->n, k->sum,
            k->mean, k->min, k->max);
    double s = kstd(k);
    if (s == s) fprintf(f, "%.1f", s);
    fputc('\n', f);
  }
}

/* One rank's temporal breakdown, whole span (step empty) and per step. */
static void csv_temporal_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  if (!g->gpu_events) return;
  int64_t span = g->last - g->first;
  fprintf(f, "%d,,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64, rank->world_rank, span,
          span - g->busy, g->compute, g->busy - g->compute);
  csv_ratio(f, span - g->busy, span);
  csv_ratio(f, g->compute, span);
  csv_ratio(f, g->busy - g->compute, span);
  fputc('\n', f);
  for (size_t s = 0; s < g->nsteps; s++) {
    const rp_gstep *st = &g->steps[s];
    int64_t sp = st->stop - st->start;
    fprintf(f, "%d,%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64, rank->world_rank,
            st->value, sp, sp - st->busy, st->compute, st->busy - st->compute);
    csv_ratio(f, sp - st->busy, sp);
    csv_ratio(f, st->compute, sp);
    csv_ratio(f, st->busy - st->compute, sp);
    fputc('\n', f);
  }
}

int rp_render_kernels_any(const rp_report *r) { return any(r); }

void rp_render_kernels_csv(const rp_report *r, int which, FILE *f) {
  static const char *const head[] = {
      "rank,step,span_ns,idle_ns,compute_ns,non_compute_ns,idle_share,compute_share,"
      "non_compute_share",
      "rank,kernel_id,type,kernel,top,count,total_ns,mean_ns,min_ns,max_ns,std_ns",
      "rank,stream,events,host_wait_ns,kernel_wait_ns,other_idle_ns,launched,"
      "launch_delay_mean_ns,launch_delay_p50_ns,launch_delay_max_ns,delay_outliers,"
      "runtime_outliers,short_kernels,queue_mean,queue_max",
      "rank,kind,ops,bytes,time_ns,gbps,concurrent_gbps_mean,concurrent_gbps_max"};
  static void (*const rows[])(FILE *, const rp_rank *) = {csv_temporal_rows, csv_kernel_rows,
                                                          csv_stream_rows, csv_memcpy_rows};
  if (which < 0 || which > 3) return;
  fprintf(f, "%s\n", head[which]);
  if (any(r)) each_rank(r, f, rows[which]);
}

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
  each_rank(r, f, html_step_rows);
  fprintf(f, "</table></div>\n");
}

/* One rank's top kernels. */
static void html_kernel_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char(*names)[512] = g ? top_names(g) : NULL;
  for (size_t j = 0; g && j < g->nkern; j++) {
    const rp_kstat *k = &g->kern[j];
    if (!k->top) continue;
    char nm[NAME_SHORT], shortname[NAME_SHORT], a[32], b[32], c[32], d[32];
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
  each_rank(r, f, html_kernel_rows);
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
  each_rank(r, f, html_stream_rows);
  fprintf(f, "</table></div>\n");
}

void rp_render_kernels_html(const rp_report *r, FILE *f) {
  if (!any(r)) return;
  html_chart(r, f);
  html_steps(r, f);
  html_kernels(r, f);
  html_streams(r, f);
}
