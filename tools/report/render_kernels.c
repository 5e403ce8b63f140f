// SPDX-License-Identifier: Apache-2.0
// Text, JSON, CSV and HTML sections of the kernel-level analyses (kernels.h): temporal breakdown per rank and
// step, kernel types across ranks, the top kernels, idle time, launch delay and queue length per
// stream, memcpy/memset bandwidth. Figures that are undefined (a ratio of nothing, the spread of
// one value) print "n/a" / null / an empty CSV field, never 0. Called by render_text.c,
// render_json.c (JSON and CSV) and render_html.c.
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "kernels.h"

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

/* ---- text */
/* The span of one rank split into idle, compute and non-compute. */
static void text_temporal_row(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char rk[16], a[40], b[40], c[40], d[40];
  rank_of(rank, rk, sizeof rk);
  if (!g->gpu_events) return;
  int64_t span = g->last - g->first;
  fprintf(f, "  %-6s %12s %22s %22s %22s\n", rk, ns_s(span, a, sizeof a),
          part(span - g->busy, span, b, sizeof b), part(g->compute, span, c, sizeof c),
          part(g->busy - g->compute, span, d, sizeof d));
}

/* The same split for each step of one rank. */
static void text_temporal_step_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char rk[16], a[40], b[40], c[40], d[40];
  rank_of(rank, rk, sizeof rk);
  for (size_t s = 0; s < g->nsteps; s++) {
    const rp_gstep *st = &g->steps[s];
    int64_t span = st->stop - st->start;
    fprintf(f, "  %-6s %6" PRIu64 " %12s %22s %22s %22s\n", rk, st->value, ns_s(span, a, sizeof a),
            part(span - st->busy, span, b, sizeof b), part(st->compute, span, c, sizeof c),
            part(st->busy - st->compute, span, d, sizeof d));
  }
}

static void text_temporal(const rp_report *r, FILE *f) {
  fprintf(f, "\nTemporal breakdown (GPU events; span = first GPU start to last GPU end)\n");
  fprintf(f, "  %-6s %12s %22s %22s %22s\n", "rank", "span", "idle", "compute", "non-compute");
  each_rank(r, f, text_temporal_row);
  int steps = 0;
  for (int i = 0; i < r->nranks; i++) steps += r->ranks[i].gpu && r->ranks[i].gpu->nsteps;
  if (!steps) {
    fprintf(f, "  per step: n/a (no ProfilerStep in the Kineto traces)\n");
    return;
  }
  fprintf(f, "  per step (each step's GPU window):\n");
  fprintf(f, "  %-6s %6s %12s %22s %22s %22s\n", "rank", "step", "span", "idle", "compute",
          "non-compute");
  each_rank(r, f, text_temporal_step_rows);
}

static void text_types(const rp_report *r, FILE *f) {
  rp_gpu_totals t;
  rp_gpu_totals_get(r, &t);
  int64_t all = 0;
  for (int m = 1; m < 8; m++) all += t.combo[m];
  fprintf(f, "\nKernel types, all %d rank%s (time while running; HTA's kernel-type table)\n",
          t.ranks, t.ranks == 1 ? "" : "s");
  static const int order[] = {1, 2, 4, 3, 5, 6, 7};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
    char a[40];
    int m = order[i];
    if (!t.combo[m] && m > 4) continue;
    fprintf(f, "  %-56s %22s\n", rp_combo_name(m), part(t.combo[m], all, a, sizeof a));
  }
}

/* One rank's top kernels per type, the rest summed as 'others'. */
static void text_kernel_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char rk[16];
  rank_of(rank, rk, sizeof rk);
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
      char nm[41], tot[24], mean[24], mn[24], mx[24], sd[24];
      rp_kernel_short_name(k->name, nm, sizeof nm);
      double s = kstd(k);
      if (s == s) rp_fmt_ns((int64_t)llround(s), sd, sizeof sd);
      else snprintf(sd, sizeof sd, "n/a");
      fprintf(f, "  %-5s %-13s %-40s %8" PRIu64 " %11s %10s %10s %10s %10s\n", rk,
              rp_ktype_name(type), nm, k->n, ns_s(k->sum, tot, sizeof tot),
              ns_s((int64_t)llround(k->mean), mean, sizeof mean), ns_s(k->min, mn, sizeof mn),
              ns_s(k->max, mx, sizeof mx), sd);
    }
    if (on) {
      char nm[48], tot[24];
      snprintf(nm, sizeof nm, "others (%" PRIu64 " kernel%s)", on, on == 1 ? "" : "s");
      fprintf(f, "  %-5s %-13s %-40s %8" PRIu64 " %11s\n", rk, rp_ktype_name(type), nm, oc,
              ns_s(osum, tot, sizeof tot));
    }
  }
}

static void text_kernels(const rp_report *r, FILE *f) {
  fprintf(f, "\nTop kernels per rank and type (by total time; the rest summed as 'others')\n");
  fprintf(f, "  %-5s %-13s %-40s %8s %11s %10s %10s %10s %10s\n", "rank", "type", "kernel", "count",
          "total", "mean", "min", "max", "std");
  each_rank(r, f, text_kernel_rows);
}

/* Launch delay and queue length of one rank's streams. */
static void text_launch_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char rk[16];
  rank_of(rank, rk, sizeof rk);
  for (size_t j = 0; j < g->nstreams; j++) {
    const rp_gstream *s = &g->streams[j];
    if (!s->delay.n) {
      fprintf(f, "  %-5s %7" PRId64 " %8d %10s (no launch call found for its events)\n", rk,
              s->stream, 0, "n/a");
      continue;
    }
    char a[24], b[24], c[24], q[24];
    snprintf(q, sizeof q, "%.2f", s->q_sum / (double)s->q_n);
    fprintf(f,
            "  %-5s %7" PRId64 " %8" PRIu64 " %10s %10s %10s %7" PRIu64 " %9" PRIu64 " %6" PRIu64
            " %9s %6" PRId64 "\n",
            rk, s->stream, s->delay.n, ns_s(rp_quant_get(&s->delay, 0.5), a, sizeof a),
            ns_s(rp_quant_get(&s->delay, 0.95), b, sizeof b), ns_s(s->delay.max, c, sizeof c),
            s->delay_outliers, s->runtime_outliers, s->short_kernels, q, s->q_max);
  }
}

/* Idle time of one rank's streams. */
static void text_idle_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char rk[16];
  rank_of(rank, rk, sizeof rk);
  for (size_t j = 0; j < g->nstreams; j++) {
    const rp_gstream *s = &g->streams[j];
    int64_t idle = s->idle[0] + s->idle[1] + s->idle[2];
    char a[24], b[40], c[40], d[40];
    fprintf(f, "  %-5s %7" PRId64 " %8" PRIu64 " %11s %20s %20s %20s\n", rk, s->stream, s->events,
            ns_s(idle, a, sizeof a), part(s->idle[RP_IDLE_HOST], idle, b, sizeof b),
            part(s->idle[RP_IDLE_KERNEL], idle, c, sizeof c),
            part(s->idle[RP_IDLE_OTHER], idle, d, sizeof d));
  }
}

static void text_streams(const rp_report *r, FILE *f) {
  fprintf(f,
          "\nIdle time per stream (gap before each kernel/memcpy/memset; host wait: launched after "
          "the previous one ended; kernel wait: gap < 30 us)\n");
  fprintf(f, "  %-5s %7s %8s %11s %20s %20s %20s\n", "rank", "stream", "events", "idle",
          "host wait", "kernel wait", "other");
  each_rank(r, f, text_idle_rows);
  fprintf(f, "\nLaunch delay (GPU start - end of its launch call) and queue length per stream\n");
  fprintf(f, "  %-5s %7s %8s %10s %10s %10s %7s %8s %6s %9s %6s\n", "rank", "stream", "launched",
          "delay p50", "p95", "max", ">100us", "call>50us", "short", "queue avg", "max");
  each_rank(r, f, text_launch_rows);
}

/* Memcpy/memset bandwidth of one rank per kind. */
static void text_memcpy_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  char rk[16];
  rank_of(rank, rk, sizeof rk);
  for (size_t j = 0; j < g->nmem; j++) {
    const rp_memkind *m = &g->mem[j];
    char by[24] = "n/a", t[24], bw[24] = "n/a", p50[24] = "n/a", ca[24] = "n/a", cm[24] = "n/a";
    if (m->with_bytes) rp_fmt_bytes(m->bytes, by, sizeof by);
    if (m->dur_with_bytes > 0)
      snprintf(bw, sizeof bw, "%.3f", (double)m->bytes / (double)m->dur_with_bytes);
    if (m->op_bw.n) snprintf(p50, sizeof p50, "%.3f", (double)rp_quant_get(&m->op_bw, 0.5) / 1e3);
    if (m->s_n) {
      snprintf(ca, sizeof ca, "%.3f", m->s_sum / (double)m->s_n);
      snprintf(cm, sizeof cm, "%.3f", m->s_max);
    }
    fprintf(f, "  %-5s %-15s %7" PRIu64 " %12s %11s %10s %12s %14s %14s\n", rk, m->kind, m->n, by,
            ns_s(m->dur, t, sizeof t), bw, p50, ca, cm);
  }
}

static void text_memcpy(const rp_report *r, FILE *f) {
  int have = 0;
  for (int i = 0; i < r->nranks; i++) have |= r->ranks[i].gpu && r->ranks[i].gpu->nmem;
  if (!have) {
    fprintf(f, "\nMemcpy/memset bandwidth: n/a (no memcpy or memset on the GPU)\n");
    return;
  }
  fprintf(f,
          "\nMemcpy/memset bandwidth per kind (bytes / time; concurrent: summed GB/s of the "
          "operations running, HTA's series)\n");
  fprintf(f, "  %-5s %-15s %7s %12s %11s %10s %12s %14s %14s\n", "rank", "kind", "ops", "bytes",
          "time", "GB/s", "op GB/s p50", "concurrent avg", "concurrent max");
  each_rank(r, f, text_memcpy_rows);
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
  fprintf(f,
          "\nKernel-level analyses of the Kineto traces (Holistic Trace Analysis' definitions; "
          "docs/metrics.md)\n");
  text_temporal(r, f);
  text_types(r, f);
  text_kernels(r, f);
  text_streams(r, f);
  text_memcpy(r, f);
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
static void json_kernel(FILE *f, const rp_kstat *kk, int first) {
  fprintf(f, "%s\n  {\"name\":", first ? "" : ",");
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
  for (size_t j = 0; j < g->nkern; j++) json_kernel(f, &g->kern[j], j == 0);
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
    fprintf(f, "memcpy,%d,%s,%" PRIu64 ",", rank->world_rank, m->kind, m->n);
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
    fprintf(f, "stream,%d,%" PRId64 ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRIu64,
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

/* One rank's kernel table. */
static void csv_kernel_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  for (size_t j = 0; j < g->nkern; j++) {
    const rp_kstat *k = &g->kern[j];
    fprintf(f, "kernel,%d,%s,", rank->world_rank, rp_ktype_name(k->type));
    csv_name(f, k->name);
    fprintf(f, ",%d,%" PRIu64 ",%" PRId64 ",%.1f,%" PRId64 ",%" PRId64 ",", k->top, k->n, k->sum,
            k->mean, k->min, k->max);
    double s = kstd(k);
    if (s == s) fprintf(f, "%.1f", s);
    fputc('\n', f);
  }
}

/* One rank's temporal breakdown, whole span and per step. */
static void csv_temporal_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  if (!g->gpu_events) return;
  int64_t span = g->last - g->first;
  fprintf(f, "temporal,%d,,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64, rank->world_rank, span,
          span - g->busy, g->compute, g->busy - g->compute);
  csv_ratio(f, span - g->busy, span);
  csv_ratio(f, g->compute, span);
  csv_ratio(f, g->busy - g->compute, span);
  fputc('\n', f);
  for (size_t s = 0; s < g->nsteps; s++) {
    const rp_gstep *st = &g->steps[s];
    int64_t sp = st->stop - st->start;
    fprintf(f, "temporal_step,%d,%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64,
            rank->world_rank, st->value, sp, sp - st->busy, st->compute, st->busy - st->compute);
    csv_ratio(f, sp - st->busy, sp);
    csv_ratio(f, st->compute, sp);
    csv_ratio(f, st->busy - st->compute, sp);
    fputc('\n', f);
  }
}

void rp_render_kernels_csv(const rp_report *r, FILE *f) {
  if (!any(r)) return;
  fprintf(f,
          "\ntable,rank,step,span_ns,idle_ns,compute_ns,non_compute_ns,idle_share,compute_share,"
          "non_compute_share\n");
  each_rank(r, f, csv_temporal_rows);
  fprintf(f, "\ntable,rank,type,kernel,top,count,total_ns,mean_ns,min_ns,max_ns,std_ns\n");
  each_rank(r, f, csv_kernel_rows);
  fprintf(f,
          "\ntable,rank,stream,events,host_wait_ns,kernel_wait_ns,other_idle_ns,launched,"
          "launch_delay_mean_ns,launch_delay_p50_ns,launch_delay_max_ns,delay_outliers,runtime_"
          "outliers,"
          "short_kernels,queue_mean,queue_max\n");
  each_rank(r, f, csv_stream_rows);
  fprintf(f, "\ntable,rank,kind,ops,bytes,time_ns,gbps,concurrent_gbps_mean,concurrent_gbps_max\n");
  each_rank(r, f, csv_memcpy_rows);
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
      "temporal breakdown, per step.</p>\n<table><tr><th>rank</th><th>step</th><th>span</th>"
      "<th>idle</th><th>compute</th><th>non-compute</th><th>communication overlapped</th></tr>\n");
  each_rank(r, f, html_step_rows);
  fprintf(f, "</table>\n");
}

/* One rank's top kernels. */
static void html_kernel_rows(FILE *f, const rp_rank *rank) {
  const rp_gpu *g = rank->gpu;
  for (size_t j = 0; g && j < g->nkern; j++) {
    const rp_kstat *k = &g->kern[j];
    if (!k->top) continue;
    char nm[96], a[32], b[32], c[32], d[32];
    rp_kernel_short_name(k->name, nm, sizeof nm);
    rp_fmt_ns(k->sum, a, sizeof a);
    rp_fmt_ns((int64_t)llround(k->mean), b, sizeof b);
    rp_fmt_ns(k->min, c, sizeof c);
    rp_fmt_ns(k->max, d, sizeof d);
    fprintf(f, "<tr><td>rank %d</td><td>%s</td><td style=\"text-align:left\" title=\"",
            rank->world_rank, rp_ktype_name(k->type));
    rp_html_esc(f, k->name);
    fprintf(f, "\">");
    rp_html_esc(f, nm);
    fprintf(f, "</td><td>%" PRIu64 "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", k->n,
            a, b, c, d);
  }
}

static void html_kernels(const rp_report *r, FILE *f) {
  fprintf(
      f,
      "<h2>Top kernels</h2><p class=note>Per rank and type, by total time (HTA's rule: at most 10, "
      "within 80%% of the type's time; --top N); hover a name for the full one.</p>\n"
      "<table><tr><th>rank</th><th>type</th><th>kernel</th><th>count</th><th>total</th><th>mean</"
      "th>"
      "<th>min</th><th>max</th></tr>\n");
  each_rank(r, f, html_kernel_rows);
  fprintf(f, "</table>\n");
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
      "and start.</p>\n<table><tr><th>rank</th><th>stream</th><th>events</th><th>host wait</th>"
      "<th>kernel wait</th><th>other idle</th><th>launch delay median</th><th>max</th>"
      "<th>&gt; 100 us</th><th>queue mean</th><th>queue max</th></tr>\n");
  each_rank(r, f, html_stream_rows);
  fprintf(f, "</table>\n");
}

void rp_render_kernels_html(const rp_report *r, FILE *f) {
  if (!any(r)) return;
  html_chart(r, f);
  html_steps(r, f);
  html_kernels(r, f);
  html_streams(r, f);
}
