// SPDX-License-Identifier: Apache-2.0
// JSON and CSV of the kernel-level analyses (kernel_stats.h): per rank the temporal breakdown
// overall and per step, the kernels, streams (idle time, launch delay, queue length) and
// memcpy/memset kinds; undefined figures are null / an empty CSV field, never 0. Called by
// render_json.c (--json, --csv).
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "kernel_stats.h"
#include "report.h"
#include "report_render.h"

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
  jnum(f, "std_ns", rp_kern_std(kk));
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
    jnum(f, "queue_std", rp_kern_queue_std(s));
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
  if (!rp_render_kernels_any(r)) {
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
    double s = rp_kern_std(k);
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
  if (rp_render_kernels_any(r)) rp_kern_each_rank(r, f, rows[which]);
}
