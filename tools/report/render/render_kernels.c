// SPDX-License-Identifier: Apache-2.0
// Text (fitted to the report's width) of the kernel-level analyses (kernel_stats.h): temporal
// breakdown per rank and step, kernel types across ranks, the top kernels, idle time, launch
// delay and queue length per stream, memcpy/memset bandwidth; and the pieces its JSON, CSV
// (kernels_json.c) and HTML (kernels_html.c) share. Figures that are undefined (a ratio of
// nothing, the spread of one value) print "n/a", never 0. Called by render_text.c.
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "kernel_stats.h"
#include "report_render.h"
#include "textout.h"

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

double rp_kern_std(const rp_kstat *k) { return k->n > 1 ? sqrt(k->m2 / (double)(k->n - 1)) : NAN; }

double rp_kern_queue_std(const rp_gstream *s) {
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
void rp_kern_each_rank(const rp_report *r, FILE *f, void (*rows)(FILE *f, const rp_rank *rank)) {
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].gpu) rows(f, &r->ranks[i]);
}

int rp_render_kernels_any(const rp_report *r) { return any(r); }

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
char (*rp_kern_top_names(const rp_gpu *g))[512] {
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
  char(*names)[512] = rp_kern_top_names(g);
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
      char nm[RP_NAME_SHORT], tot[24], mean[24], mn[24], mx[24], sd[24];
      if (names) snprintf(nm, sizeof nm, "%s", names[j]);
      else rp_kernel_short_name(k->name, nm, sizeof nm);
      double s = rp_kern_std(k);
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
  rp_kern_each_rank(r, f, text_warning_rows);
}
