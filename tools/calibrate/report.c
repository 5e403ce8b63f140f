/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's output: the summary tables (devices, p2p matrix, floors, one nccl-tests style
 * table per setting and collective, the best forced setting per size), the fitted profile in
 * short, a CSV of every point, and the --bench comparison (NCCL's default, libtopo-tuner and the
 * oracle side by side with per-size ratios, geometric means and worst sizes). Pure: writes to the
 * FILE it is given; called by runner.c in the process that owns rank 0.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "calibrate.h"
#include "profile.h"

void topo_cal_format_bytes(uint64_t bytes, char *buf, size_t len) {
  static const char *const unit[] = {"B", "KB", "MB", "GB", "TB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, u++;
  if (u == 0) snprintf(buf, len, "%llu B", (unsigned long long)bytes);
  else if (v == floor(v)) snprintf(buf, len, "%.0f %s", v, unit[u]);
  else snprintf(buf, len, "%.3g %s", v, unit[u]);
}

static const char *status_word(int st) {
  switch (st) {
  case TOPO_CAL_OK: return "";
  case TOPO_CAL_REJECTED: return "REJECTED";
  case TOPO_CAL_MISMATCH: return "NOT-FORCED";
  case TOPO_CAL_FAILED: return "FAILED";
  }
  return "?";
}

static void ran_text(const topo_cal_point *p, char *buf, size_t len) {
  if (p->ran_algo < 0 || p->ran_proto < 0) snprintf(buf, len, "-");
  else
    snprintf(buf, len, "%s/%s/%d", topo_nccl_algo_name(p->ran_algo, TOPO_NCCL_FILE),
             topo_nccl_proto_name(p->ran_proto, TOPO_NCCL_FILE), p->ran_channels);
}

static const char *transport(const topo_cal_results *r) {
  return r->nnodes > 1 ? "socket transport (NCCL_HOSTID split; network code paths at socket speed)"
                       : "one node";
}

static void report_machine(FILE *f, const topo_cal_results *r) {
  fprintf(f, "# topo-calibrate: %s, %d rank%s, %d node%s (%s), %d process%s\n",
          r->gpu_model[0] ? r->gpu_model : "unknown GPU", r->nranks, r->nranks == 1 ? "" : "s",
          r->nnodes, r->nnodes == 1 ? "" : "s", transport(r), r->nprocs,
          r->nprocs == 1 ? "" : "es");
  if (r->nccl_version)
    fprintf(f, "# NCCL %d.%d.%d (%s)\n", r->nccl_version / 10000, r->nccl_version / 100 % 100,
            r->nccl_version % 100, r->nccl_path[0] ? r->nccl_path : "path unknown");
  for (int d = 0; d < r->ndev && d < 64; d++)
    fprintf(f, "# GPU %d: %s, %d SMs, %.0f GiB, NVLS (multicast) %s\n", d, r->dev[d].name,
            r->dev[d].sms, r->dev[d].mem_gib,
            r->dev[d].multicast > 0    ? "available (left off)"
            : r->dev[d].multicast == 0 ? "not available"
                                       : "unknown");
  if (r->nsettings) {
    fprintf(f, "# forced through %s; NCCL's table %s; NCCL channels %d; tuner plugin %s%s%s\n",
            r->force_via == TOPO_CAL_VIA_TUNER ? "libtopo-tuner (TOPO_TUNER_FORCE)"
                                               : "NCCL_ALGO/NCCL_PROTO",
            r->allowed_from_nccl ? "read from its log" : "not read (built-in rules)",
            r->nccl_channels,
            r->tuner_loaded > 0    ? "loaded: "
            : r->tuner_loaded == 0 ? "not loaded"
                                   : "unknown",
            r->tuner_loaded > 0 ? r->tuner_name : "", "");
  }
  if (r->line_rate_gbs > 0)
    fprintf(f, "# plausibility: link line rate %.0f GB/s per direction\n", r->line_rate_gbs);
  if (r->partial)
    fprintf(f, "# PARTIAL: stopped early (signal or --time-budget)%s%d forced setting%s skipped\n",
            r->skipped_settings ? "; " : "", r->skipped_settings,
            r->skipped_settings == 1 ? "" : "s");
}

static void report_p2p(FILE *f, const topo_cal_results *r) {
  if (r->ndev < 2 || !r->p2p_ce_bw) return;
  const struct {
    const double *m;
    const char *title;
    int prec;
  } mats[] = {
      {r->p2p_ce_bw, "p2p copy-engine bandwidth, GB/s (row = source, column = destination)", 1},
      {r->p2p_sm_bw, "p2p SM-copy bandwidth, GB/s (kernel on the source writing to the peer)", 1},
      {r->p2p_ce_lat, "p2p copy-engine latency, us per 4-byte copy (graph-timed)", 2},
      {r->p2p_sm_lat, "p2p SM ping-pong round trip, us", 2},
  };
  for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
    int any = 0;
    for (int i = 0; i < r->ndev * r->ndev; i++) any |= mats[k].m[i] > 0;
    if (!any) continue;
    fprintf(f, "\n# %s\n#  src\\dst", mats[k].title);
    for (int j = 0; j < r->ndev; j++) fprintf(f, "%8d", j);
    fprintf(f, "\n");
    for (int i = 0; i < r->ndev; i++) {
      fprintf(f, "%9d", i);
      for (int j = 0; j < r->ndev; j++) {
        double v = mats[k].m[i * r->ndev + j];
        if (i == j || v <= 0) fprintf(f, "%8s", "-");
        else fprintf(f, "%8.*f", mats[k].prec, v);
      }
      fprintf(f, "\n");
    }
  }
}

static void report_floors(FILE *f, const topo_cal_results *r) {
  if (r->floor_graph_us <= 0 && r->floor_eager_us <= 0 && r->floor_sync_us <= 0 &&
      r->local_ce_bw <= 0)
    return;
  fprintf(f, "\n# GPU 0 alone\n");
  if (r->local_ce_bw > 0) fprintf(f, "#   device copy, copy engine   %8.1f GB/s\n", r->local_ce_bw);
  if (r->local_sm_bw > 0) fprintf(f, "#   device copy, SM kernel     %8.1f GB/s\n", r->local_sm_bw);
  if (r->floor_graph_us > 0)
    fprintf(f, "#   minimal op in a CUDA graph %8.2f us (GPU time per op)\n", r->floor_graph_us);
  if (r->floor_eager_us > 0)
    fprintf(f, "#   minimal op, eager stream   %8.2f us (host launch rate)\n", r->floor_eager_us);
  if (r->floor_sync_us > 0)
    fprintf(f, "#   launch + completion        %8.2f us (host round trip)\n", r->floor_sync_us);
}

static void report_setting(FILE *f, const topo_cal_results *r, int s, int coll) {
  int any = 0;
  for (int i = 0; i < r->npoints; i++)
    any |= r->points[i].setting == s && r->points[i].coll == coll;
  if (!any) return;
  char label[64];
  topo_cal_setting_label(&r->settings[s], label, sizeof label);
  fprintf(f, "\n# %s  %s  (%d ranks, %s)\n", topo_nccl_func_name(coll, TOPO_NCCL_FILE), label,
          r->nranks, r->nnodes > 1 ? "socket transport" : "one node");
  fprintf(f, "#%13s %12s %6s %11s %11s %11s %7s %6s  %-22s %s\n", "size(B)", "count", "type",
          "time(us)", "algbw(GB/s)", "busbw(GB/s)", "iqr%", "timing", "ran", "");
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    if (p->setting != s || p->coll != coll) continue;
    char ran[48];
    ran_text(p, ran, sizeof ran);
    double alg = topo_cal_algbw(p->bytes, p->stats.median);
    if (p->status == TOPO_CAL_FAILED) {
      fprintf(f, " %13llu %12zu %6s %11s %11s %11s %7s %6s  %-22s %s\n",
              (unsigned long long)p->bytes, p->count, "float", "-", "-", "-", "-", "-", ran,
              status_word(p->status));
      continue;
    }
    fprintf(f, " %13llu %12zu %6s %11.2f %11.2f %11.2f %7.1f %6s  %-22s %s\n",
            (unsigned long long)p->bytes, p->count, "float", p->stats.median, alg,
            alg * topo_nccl_busbw_factor(coll, r->nranks), 100 * topo_cal_stats_spread(&p->stats),
            p->graph ? "graph" : "eager", ran, status_word(p->status));
  }
}

static void report_best(FILE *f, const topo_cal_results *r, int coll) {
  int cap = r->npoints > 0 ? r->npoints : 1;
  topo_cal_measured *m = topo_malloc((size_t)cap * sizeof *m);
  if (!m) return;
  int nm = topo_cal_results_measured(r, m, cap);
  uint64_t seen[TOPO_CAL_MAX_SIZES * 2];
  int nseen = 0;
  int any = 0;
  for (int i = 0; i < nm; i++) {
    if (m[i].coll != coll) continue;
    int dup = 0;
    for (int k = 0; k < nseen; k++) dup |= seen[k] == m[i].bytes;
    if (dup || nseen == (int)(sizeof seen / sizeof seen[0])) continue;
    seen[nseen++] = m[i].bytes;
    int b = topo_cal_measured_best(m, nm, coll, m[i].bytes, 1);
    if (b < 0) continue;
    if (!any) {
      fprintf(f,
              "\n# %s: fastest effective setting per size (median of its repeats)\n#%13s %11s %11s "
              "%4s  %s\n",
              topo_nccl_func_name(coll, TOPO_NCCL_FILE), "size(B)", "time(us)", "busbw(GB/s)", "n",
              "ran");
      any = 1;
    }
    double alg = topo_cal_algbw(m[b].bytes, m[b].median_us);
    fprintf(f, " %13llu %11.2f %11.2f %4d  %s/%s/%d\n", (unsigned long long)m[b].bytes,
            m[b].median_us, alg * topo_nccl_busbw_factor(coll, r->nranks), m[b].n,
            topo_nccl_algo_name(m[b].algo, TOPO_NCCL_FILE),
            topo_nccl_proto_name(m[b].proto, TOPO_NCCL_FILE), m[b].channels);
  }
  topo_free(m);
}

void topo_cal_report_summary(FILE *f, const topo_cal_results *r) {
  report_machine(f, r);
  report_p2p(f, r);
  report_floors(f, r);
  if (r->nranks < 2) {
    fprintf(
        f,
        "\n# One GPU: measured device copy bandwidth and the launch floor. The p2p matrix, link\n"
        "# parameters and every collective sweep need at least 2 GPUs.\n");
    return;
  }
  for (int s = 0; s < r->nsettings; s++)
    for (int c = NCCL_NUM_FUNCTIONS - 1; c >= 0; c--) report_setting(f, r, s, c);
  for (int c = NCCL_NUM_FUNCTIONS - 1; c >= 0; c--) report_best(f, r, c);
  int bad[4] = {0, 0, 0, 0};
  for (int i = 0; i < r->npoints; i++)
    if (r->points[i].status >= 0 && r->points[i].status < 4) bad[r->points[i].status]++;
  fprintf(f,
          "\n# %d points: %d accepted, %d rejected as faster than the hardware allows, %d not run "
          "as forced, %d failed\n",
          r->npoints, bad[0], bad[1], bad[2], bad[3]);
}

void topo_cal_report_profile(FILE *f, const topo_profile *p) {
  static const char *const link_name[TOPO_LINK_COUNT] = {"nvlink", "pci", "net"};
  fprintf(
      f, "\n# profile: gpu=%s nranks=%d nnodes=%d nccl=%d launch_us=%.2f max_channels=%d nvls=%s\n",
      p->key.gpu, p->key.nranks, p->key.nnodes, p->key.nccl_version, p->launch_us, p->max_channels,
      p->nvls > 0    ? "yes"
      : p->nvls == 0 ? "no"
                     : "unknown");
  for (int i = 0; i < TOPO_LINK_COUNT; i++)
    fprintf(f, "#   link %-6s bw %8.1f GB/s  lat %6.2f us\n", link_name[i], p->link[i].bw_gbs,
            p->link[i].lat_us);
  for (int i = 0; i < NCCL_NUM_PROTOCOLS; i++)
    fprintf(f, "#   proto %-6s bw_eff %5.3f  lat %6.2f us  per-channel %6.1f GB/s\n",
            topo_nccl_proto_name(i, TOPO_NCCL_FILE), p->proto[i].bw_eff, p->proto[i].lat_us,
            p->proto[i].ch_bw_gbs);
  if (p->nterms)
    fprintf(f, "#   %-14s %-10s %-7s %4s %9s %10s %10s %10s %7s\n", "collective", "algorithm",
            "proto", "ch", "lat(us)", "bw(GB/s)", "from(B)", "to(B)", "rms%");
  for (int i = 0; i < p->nterms; i++) {
    const topo_profile_term *t = &p->terms[i];
    fprintf(f, "#   %-14s %-10s %-7s %4d %9.2f %10.1f %10llu %10llu %7.1f\n",
            topo_nccl_func_name(t->coll, TOPO_NCCL_FILE),
            topo_nccl_algo_name(t->algo, TOPO_NCCL_FILE),
            topo_nccl_proto_name(t->proto, TOPO_NCCL_FILE), t->nchannels, t->lat_us, t->bw_gbs,
            (unsigned long long)t->min_bytes, (unsigned long long)t->max_bytes, 100 * t->rel_err);
  }
}

void topo_cal_report_csv(FILE *f, const topo_cal_results *r) {
  fprintf(
      f,
      "gpu,nranks,nnodes,nccl,setting,kind,algo,proto,channels,coll,bytes,count,median_us,p25_us,"
      "p75_us,min_us,max_us,samples,calls,timing,algbw_gbs,busbw_gbs,status,ran_algo,ran_proto,ran_"
      "channels,round,pair,"
      "beyond_reach\n");
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    const topo_cal_setting *s = &r->settings[p->setting];
    char label[64];
    topo_cal_setting_label(s, label, sizeof label);
    double alg = p->status == TOPO_CAL_FAILED ? 0 : topo_cal_algbw(p->bytes, p->stats.median);
    fprintf(f,
            "%s,%d,%d,%d,%s,%s,%s,%s,%d,%s,%llu,%zu,%.4f,%.4f,%.4f,%.4f,%.4f,%d,%d,%s,%.3f,%.3f,%s,"
            "%s,%s,%d,%d,%d,%d\n",
            r->gpu_model, r->nranks, r->nnodes, r->nccl_version, label,
            s->kind == TOPO_CAL_FORCED    ? "forced"
            : s->kind == TOPO_CAL_DEFAULT ? "default"
                                          : "tuner",
            s->kind == TOPO_CAL_FORCED ? topo_nccl_algo_name(s->algo, TOPO_NCCL_FILE) : "",
            s->kind == TOPO_CAL_FORCED ? topo_nccl_proto_name(s->proto, TOPO_NCCL_FILE) : "",
            s->nchannels, topo_nccl_func_name(p->coll, TOPO_NCCL_FILE),
            (unsigned long long)p->bytes, p->count, p->stats.median, p->stats.p25, p->stats.p75,
            p->stats.min, p->stats.max, p->stats.n, p->calls, p->graph ? "graph" : "eager", alg,
            alg * topo_nccl_busbw_factor(p->coll, r->nranks),
            p->status == TOPO_CAL_OK ? "ok" : status_word(p->status),
            p->ran_algo >= 0 ? topo_nccl_algo_name(p->ran_algo, TOPO_NCCL_FILE) : "",
            p->ran_proto >= 0 ? topo_nccl_proto_name(p->ran_proto, TOPO_NCCL_FILE) : "",
            p->ran_channels, p->round, s->kind == TOPO_CAL_DEFAULT ? p->pair : 0, s->beyond_reach);
  }
  /* Measured points: one per effective setting and size (the fit's and the tuner's evidence),
   * with the A/A noise at that size and what NCCL's default ran there. Unknown = empty field. */
  int cap = r->npoints > 0 ? r->npoints : 1;
  topo_cal_measured *m = topo_malloc((size_t)cap * sizeof *m);
  if (!m) return;
  int nm = topo_cal_results_measured(r, m, cap);
  int sdef = topo_cal_results_find_kind(r, TOPO_CAL_DEFAULT);
  fprintf(f,
          "\nmeasured,gpu,nranks,nnodes,nccl,coll,algo,proto,channels,bytes,median_us,n,noise,"
          "noise_pairs,"
          "beyond_reach,default_algo,default_proto,default_channels,default_median_us\n");
  for (int i = 0; i < nm; i++) {
    int np = 0, nd = 0;
    double noise = topo_cal_results_noise(r, m[i].coll, m[i].bytes, &np), dmed = 0;
    int di = sdef >= 0 ? topo_cal_results_setting_median(r, sdef, m[i].coll, m[i].bytes, &dmed, &nd)
                       : -1;
    const topo_cal_point *dp = di >= 0 ? &r->points[di] : NULL;
    char nz[24] = "", ch[16] = "", dch[16] = "", dm[24] = "";
    if (noise >= 0) snprintf(nz, sizeof nz, "%.5f", noise);
    if (m[i].channels > 0) snprintf(ch, sizeof ch, "%d", m[i].channels);
    if (dp && dp->ran_channels > 0) snprintf(dch, sizeof dch, "%d", dp->ran_channels);
    if (dp) snprintf(dm, sizeof dm, "%.4f", dmed);
    fprintf(f, "measured,%s,%d,%d,%d,%s,%s,%s,%s,%llu,%.4f,%d,%s,%d,%d,%s,%s,%s,%s\n", r->gpu_model,
            r->nranks, r->nnodes, r->nccl_version, topo_nccl_func_name(m[i].coll, TOPO_NCCL_FILE),
            topo_nccl_algo_name(m[i].algo, TOPO_NCCL_FILE),
            topo_nccl_proto_name(m[i].proto, TOPO_NCCL_FILE), ch, (unsigned long long)m[i].bytes,
            m[i].median_us, m[i].n, nz, np, m[i].beyond_reach,
            dp && dp->ran_algo >= 0 ? topo_nccl_algo_name(dp->ran_algo, TOPO_NCCL_FILE) : "",
            dp && dp->ran_proto >= 0 ? topo_nccl_proto_name(dp->ran_proto, TOPO_NCCL_FILE) : "",
            dch, dm);
  }
  topo_free(m);
}

int topo_cal_report_advice(FILE *f, const topo_cal_results *r) {
  int cap = r->npoints > 0 ? r->npoints : 1;
  topo_cal_measured *m = topo_malloc((size_t)cap * sizeof *m);
  if (!m) return 0;
  int nm = topo_cal_results_measured(r, m, cap);
  int sdef = topo_cal_results_find_kind(r, TOPO_CAL_DEFAULT);
  int lines = 0;
  for (int c = NCCL_NUM_FUNCTIONS - 1; c >= 0; c--) {
    for (int s = 0; s < r->nsettings; s++) {
      const topo_cal_setting *st = &r->settings[s];
      if (st->kind != TOPO_CAL_FORCED || !st->beyond_reach) continue;
      /* One line per channel count: the first setting with it names the line. */
      int first = 1;
      for (int s2 = 0; s2 < s && first; s2++)
        first = !(r->settings[s2].kind == TOPO_CAL_FORCED && r->settings[s2].beyond_reach &&
                  r->settings[s2].nchannels == st->nchannels);
      if (!first) continue;
      double gmin = 0, gmax = 0;
      uint64_t lo = 0, hi = 0;
      int hits = 0;
      for (int i = 0; i < nm; i++) {
        if (m[i].coll != c || !m[i].beyond_reach || m[i].channels != st->nchannels) continue;
        /* Only the fastest beyond-reach result at this size and channel count. */
        int better = 0;
        for (int k = 0; k < nm && !better; k++)
          better = k != i && m[k].coll == c && m[k].bytes == m[i].bytes && m[k].beyond_reach &&
                   m[k].channels == st->nchannels && m[k].median_us < m[i].median_us;
        if (better) continue;
        int b = topo_cal_measured_best(m, nm, c, m[i].bytes, 1);
        double ref = b >= 0 ? m[b].median_us : 0;
        int nd = 0;
        double dmed = 0;
        if (sdef >= 0 && topo_cal_results_setting_median(r, sdef, c, m[i].bytes, &dmed, &nd) >= 0 &&
            (ref <= 0 || dmed < ref))
          ref = dmed;
        if (ref <= 0) continue;
        int np = 0;
        double noise = topo_cal_results_noise(r, c, m[i].bytes, &np);
        double margin = 2 * (noise >= 0 ? noise : 0.01);
        double gain = ref / m[i].median_us - 1.0;
        if (gain <= margin) continue;
        if (!hits || gain < gmin) gmin = gain;
        if (!hits || gain > gmax) gmax = gain;
        if (!hits || m[i].bytes < lo) lo = m[i].bytes;
        if (!hits || m[i].bytes > hi) hi = m[i].bytes;
        hits++;
      }
      if (!hits) continue;
      char lb[24], hb[24], cost[64];
      topo_cal_format_bytes(lo, lb, sizeof lb);
      topo_cal_format_bytes(hi, hb, sizeof hb);
      if (r->nccl_channels > 0)
        snprintf(cost, sizeof cost, "%d more SMs per GPU", st->nchannels - r->nccl_channels);
      else snprintf(cost, sizeof cost, "SMs: n/a (NCCL's channel count not seen)");
      if (!lines)
        fprintf(f,
                "\n# advice beyond a tuner's reach (measured; gain over the best a tuner can "
                "choose)\n");
      fprintf(f,
              "# %s: %d channels via NCCL_MIN_NCHANNELS=%d (or ncclConfig_t minCTAs=%d): %.0f-%.0f "
              "%% at %s-%s"
              " (%d sizes), %s\n",
              topo_nccl_func_name(c, TOPO_NCCL_FILE), st->nchannels, st->nchannels, st->nchannels,
              100 * gmin, 100 * gmax, lb, hb, hits, cost);
      lines++;
    }
  }
  topo_free(m);
  return lines;
}

/* The sizes collective c was measured at under forced settings, ascending. Returns the count. */
static int forced_sizes(const topo_cal_results *r, int c, uint64_t *sizes, int cap) {
  int nsz = 0;
  for (int i = 0; i < r->npoints && nsz < cap; i++) {
    const topo_cal_point *q = &r->points[i];
    if (q->coll != c || r->settings[q->setting].kind != TOPO_CAL_FORCED) continue;
    int k = 0;
    while (k < nsz && sizes[k] < q->bytes) k++;
    if (k < nsz && sizes[k] == q->bytes) continue;
    memmove(&sizes[k + 1], &sizes[k], (size_t)(nsz - k) * sizeof sizes[0]);
    sizes[k] = q->bytes;
    nsz++;
  }
  return nsz;
}

/* Running sums of one collective's bench table. */
typedef struct bench_acc {
  topo_cal_bench_summary s;
  double log_t, log_d;
  int nt, nd;
} bench_acc;

/* One bench row at the oracle m: default (point di, td us) and tuner (ti, tt) beside it. */
static void bench_row(FILE *f, const topo_cal_results *r, int c, const topo_cal_measured *m, int di,
                      double td, int ti, double tt, bench_acc *acc) {
  double to = m->median_us;
  char dr[32] = "-", tr[32] = "-", ol[48];
  snprintf(ol, sizeof ol, "%s/%s/%d", topo_nccl_algo_name(m->algo, TOPO_NCCL_FILE),
           topo_nccl_proto_name(m->proto, TOPO_NCCL_FILE), m->channels);
  if (di >= 0) ran_text(&r->points[di], dr, sizeof dr);
  if (ti >= 0) ran_text(&r->points[ti], tr, sizeof tr);
  char tdv[16] = "-", ttv[16] = "-", rt[16] = "-", rd[16] = "-", nz[16] = "n/a";
  int npairs = 0;
  double noise = topo_cal_results_noise(r, c, m->bytes, &npairs);
  if (noise >= 0) snprintf(nz, sizeof nz, "%.1f%%", 100 * noise);
  if (di >= 0) snprintf(tdv, sizeof tdv, "%.2f", td), snprintf(rd, sizeof rd, "%.3f", td / to);
  if (ti >= 0) snprintf(ttv, sizeof ttv, "%.2f", tt), snprintf(rt, sizeof rt, "%.3f", tt / to);
  fprintf(f, " %13llu %10s %-20s %10s %-20s %10.2f %-16s %8s %8s %7s\n",
          (unsigned long long)m->bytes, tdv, dr, ttv, tr, to, ol, rt, rd, nz);
  topo_cal_bench_summary *s = &acc->s;
  if (ti >= 0) {
    double q = tt / to;
    acc->log_t += log(q), acc->nt++;
    if (q > s->worst_tuner) s->worst_tuner = q, s->worst_tuner_bytes = m->bytes;
    if (di >= 0 && tt / td > s->worst_tuner_vs_default) s->worst_tuner_vs_default = tt / td;
  }
  if (di >= 0) {
    double q = td / to;
    acc->log_d += log(q), acc->nd++;
    if (q > s->worst_default) s->worst_default = q, s->worst_default_bytes = m->bytes;
  }
}

/* Geometric means and worst sizes of one collective's table. */
static void bench_totals(FILE *f, int c, bench_acc *acc) {
  topo_cal_bench_summary *s = &acc->s;
  s->n = acc->nt > acc->nd ? acc->nt : acc->nd;
  s->geo_tuner = acc->nt ? exp(acc->log_t / acc->nt) : 0;
  s->geo_default = acc->nd ? exp(acc->log_d / acc->nd) : 0;
  if (!f) return;
  char wt[24], wd[24];
  topo_cal_format_bytes(s->worst_tuner_bytes, wt, sizeof wt);
  topo_cal_format_bytes(s->worst_default_bytes, wd, sizeof wd);
  if (acc->nt)
    fprintf(f,
            "# %s tuner/oracle: geometric mean %.3f, worst %.3f at %s; worst tuner/default %.3f\n",
            topo_nccl_func_name(c, TOPO_NCCL_FILE), s->geo_tuner, s->worst_tuner, wt,
            s->worst_tuner_vs_default);
  if (acc->nd)
    fprintf(f, "# %s default/oracle: geometric mean %.3f, worst %.3f at %s\n",
            topo_nccl_func_name(c, TOPO_NCCL_FILE), s->geo_default, s->worst_default, wd);
}

int topo_cal_report_bench(FILE *f, const topo_cal_results *r, topo_cal_bench_summary *sum) {
  int sdef = topo_cal_results_find_kind(r, TOPO_CAL_DEFAULT);
  int stun = topo_cal_results_find_kind(r, TOPO_CAL_TUNER);
  int rows = 0;
  fprintf(
      f,
      "\n# --bench: NCCL's default, libtopo-tuner and the oracle (fastest effective setting a "
      "tuner can\n"
      "# choose), each the median of its rounds; noise = A/A (median |a/b-1| of the default's two\n"
      "# communicators over the rounds), %d ranks, %s\n",
      r->nranks, transport(r));
  int cap = r->npoints > 0 ? r->npoints : 1;
  topo_cal_measured *meas = topo_malloc((size_t)cap * sizeof *meas);
  int nmeas = meas ? topo_cal_results_measured(r, meas, cap) : 0;
  for (int c = NCCL_NUM_FUNCTIONS - 1; c >= 0; c--) {
    bench_acc acc;
    memset(&acc, 0, sizeof acc);
    int header = 0;
    uint64_t sizes[TOPO_CAL_MAX_SIZES * 2];
    int nsz = forced_sizes(r, c, sizes, (int)(sizeof sizes / sizeof sizes[0]));
    for (int z = 0; z < nsz; z++) {
      /* The oracle: the fastest effective setting within the tuner's reach, by its median. */
      int b = topo_cal_measured_best(meas, nmeas, c, sizes[z], 1);
      if (b < 0) continue;
      const topo_cal_measured *m = &meas[b];
      int nd_rep = 0, nt_rep = 0;
      double td = 0, tt = 0;
      int di = sdef >= 0 ? topo_cal_results_setting_median(r, sdef, c, m->bytes, &td, &nd_rep) : -1;
      int ti = stun >= 0 ? topo_cal_results_setting_median(r, stun, c, m->bytes, &tt, &nt_rep) : -1;
      if (di < 0 && ti < 0) continue;
      if (!header) {
        fprintf(f, "\n# %s\n#%13s %10s %-20s %10s %-20s %10s %-16s %8s %8s %7s\n",
                topo_nccl_func_name(c, TOPO_NCCL_FILE), "size(B)", "default", "(ran)", "tuner",
                "(ran)", "oracle", "(ran)", "tun/orc", "def/orc", "noise");
        header = 1;
      }
      bench_row(f, r, c, m, di, td, ti, tt, &acc);
      rows++;
    }
    bench_totals(header ? f : NULL, c, &acc);
    if (sum) sum[c] = acc.s;
  }
  if (!rows) fprintf(f, "# (no size had both an oracle and a default or tuner measurement)\n");
  topo_free(meas);
  return rows;
}
