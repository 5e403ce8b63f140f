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
  else snprintf(buf, len, "%s/%s/%d", topo_algo_name(p->ran_algo), topo_proto_name(p->ran_proto), p->ran_channels);
}

static const char *transport(const topo_cal_results *r) {
  return r->nnodes > 1 ? "socket transport (NCCL_HOSTID split; network code paths at socket speed)" : "one node";
}

static void report_machine(FILE *f, const topo_cal_results *r) {
  fprintf(f, "# topo-calibrate: %s, %d rank%s, %d node%s (%s), %d process%s\n",
          r->gpu_model[0] ? r->gpu_model : "unknown GPU", r->nranks, r->nranks == 1 ? "" : "s",
          r->nnodes, r->nnodes == 1 ? "" : "s", transport(r), r->nprocs, r->nprocs == 1 ? "" : "es");
  if (r->nccl_version)
    fprintf(f, "# NCCL %d.%d.%d (%s)\n", r->nccl_version / 10000, r->nccl_version / 100 % 100,
            r->nccl_version % 100, r->nccl_path[0] ? r->nccl_path : "path unknown");
  for (int d = 0; d < r->ndev && d < 64; d++)
    fprintf(f, "# GPU %d: %s, %d SMs, %.0f GiB, NVLS (multicast) %s\n", d, r->dev[d].name, r->dev[d].sms,
            r->dev[d].mem_gib,
            r->dev[d].multicast > 0 ? "available (left off)" : r->dev[d].multicast == 0 ? "not available" : "unknown");
  if (r->nsettings) {
    fprintf(f, "# forced through %s; NCCL's table %s; NCCL channels %d; tuner plugin %s%s%s\n",
            r->force_via == TOPO_CAL_VIA_TUNER ? "libtopo-tuner (TOPO_TUNER_FORCE)" : "NCCL_ALGO/NCCL_PROTO",
            r->allowed_from_nccl ? "read from its log" : "not read (built-in rules)", r->nccl_channels,
            r->tuner_loaded > 0 ? "loaded: " : r->tuner_loaded == 0 ? "not loaded" : "unknown",
            r->tuner_loaded > 0 ? r->tuner_name : "", "");
  }
  if (r->line_rate_gbs > 0) fprintf(f, "# plausibility: link line rate %.0f GB/s per direction\n", r->line_rate_gbs);
  if (r->partial)
    fprintf(f, "# PARTIAL: stopped early (signal or --time-budget)%s%d forced setting%s skipped\n",
            r->skipped_settings ? "; " : "", r->skipped_settings, r->skipped_settings == 1 ? "" : "s");
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
  if (r->floor_graph_us <= 0 && r->floor_eager_us <= 0 && r->floor_sync_us <= 0 && r->local_ce_bw <= 0)
    return;
  fprintf(f, "\n# GPU 0 alone\n");
  if (r->local_ce_bw > 0) fprintf(f, "#   device copy, copy engine   %8.1f GB/s\n", r->local_ce_bw);
  if (r->local_sm_bw > 0) fprintf(f, "#   device copy, SM kernel     %8.1f GB/s\n", r->local_sm_bw);
  if (r->floor_graph_us > 0) fprintf(f, "#   minimal op in a CUDA graph %8.2f us (GPU time per op)\n", r->floor_graph_us);
  if (r->floor_eager_us > 0) fprintf(f, "#   minimal op, eager stream   %8.2f us (host launch rate)\n", r->floor_eager_us);
  if (r->floor_sync_us > 0) fprintf(f, "#   launch + completion        %8.2f us (host round trip)\n", r->floor_sync_us);
}

static void report_setting(FILE *f, const topo_cal_results *r, int s, int coll) {
  int any = 0;
  for (int i = 0; i < r->npoints; i++)
    any |= r->points[i].setting == s && r->points[i].coll == coll;
  if (!any) return;
  char label[64];
  topo_cal_setting_label(&r->settings[s], label, sizeof label);
  fprintf(f, "\n# %s  %s  (%d ranks, %s)\n", topo_coll_name(coll), label, r->nranks,
          r->nnodes > 1 ? "socket transport" : "one node");
  fprintf(f, "#%13s %12s %6s %11s %11s %11s %7s %6s  %-22s %s\n", "size(B)", "count", "type", "time(us)",
          "algbw(GB/s)", "busbw(GB/s)", "iqr%", "timing", "ran", "");
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    if (p->setting != s || p->coll != coll) continue;
    char ran[48];
    ran_text(p, ran, sizeof ran);
    double alg = topo_cal_algbw(p->bytes, p->stats.median);
    if (p->status == TOPO_CAL_FAILED) {
      fprintf(f, " %13llu %12zu %6s %11s %11s %11s %7s %6s  %-22s %s\n", (unsigned long long)p->bytes, p->count,
              "float", "-", "-", "-", "-", "-", ran, status_word(p->status));
      continue;
    }
    fprintf(f, " %13llu %12zu %6s %11.2f %11.2f %11.2f %7.1f %6s  %-22s %s\n", (unsigned long long)p->bytes,
            p->count, "float", p->stats.median, alg, alg * topo_cal_busbw_factor(coll, r->nranks),
            100 * topo_cal_stats_spread(&p->stats), p->graph ? "graph" : "eager", ran, status_word(p->status));
  }
}

static void report_best(FILE *f, const topo_cal_results *r, int coll) {
  uint64_t seen[TOPO_CAL_MAX_SIZES * 2];
  int nseen = 0;
  int any = 0;
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    if (p->coll != coll || r->settings[p->setting].kind != TOPO_CAL_FORCED) continue;
    int dup = 0;
    for (int k = 0; k < nseen; k++) dup |= seen[k] == p->bytes;
    if (dup || nseen == (int)(sizeof seen / sizeof seen[0])) continue;
    seen[nseen++] = p->bytes;
    int b = topo_cal_results_best_forced(r, coll, p->bytes);
    if (b < 0) continue;
    if (!any) {
      fprintf(f, "\n# %s: best forced setting per size\n#%13s %11s %11s  %s\n", topo_coll_name(coll), "size(B)",
              "time(us)", "busbw(GB/s)", "setting");
      any = 1;
    }
    char label[64];
    topo_cal_setting_label(&r->settings[r->points[b].setting], label, sizeof label);
    double alg = topo_cal_algbw(p->bytes, r->points[b].stats.median);
    fprintf(f, " %13llu %11.2f %11.2f  %s\n", (unsigned long long)p->bytes, r->points[b].stats.median,
            alg * topo_cal_busbw_factor(coll, r->nranks), label);
  }
}

void topo_cal_report_summary(FILE *f, const topo_cal_results *r) {
  report_machine(f, r);
  report_p2p(f, r);
  report_floors(f, r);
  if (r->nranks < 2) {
    fprintf(f, "\n# One GPU: measured device copy bandwidth and the launch floor. The p2p matrix, link\n"
               "# parameters and every collective sweep need at least 2 GPUs.\n");
    return;
  }
  for (int s = 0; s < r->nsettings; s++)
    for (int c = TOPO_CAL_NCOLLS - 1; c >= 0; c--) report_setting(f, r, s, c);
  for (int c = TOPO_CAL_NCOLLS - 1; c >= 0; c--) report_best(f, r, c);
  int bad[4] = {0, 0, 0, 0};
  for (int i = 0; i < r->npoints; i++)
    if (r->points[i].status >= 0 && r->points[i].status < 4) bad[r->points[i].status]++;
  fprintf(f, "\n# %d points: %d accepted, %d rejected as faster than the hardware allows, %d not run as forced, %d failed\n",
          r->npoints, bad[0], bad[1], bad[2], bad[3]);
}

void topo_cal_report_profile(FILE *f, const topo_profile *p) {
  static const char *const link_name[TOPO_LINK_COUNT] = {"nvlink", "pci", "net"};
  fprintf(f, "\n# profile: gpu=%s nranks=%d nnodes=%d nccl=%d launch_us=%.2f max_channels=%d nvls=%s\n",
          p->key.gpu, p->key.nranks, p->key.nnodes, p->key.nccl_version, p->launch_us, p->max_channels,
          p->nvls > 0 ? "yes" : p->nvls == 0 ? "no" : "unknown");
  for (int i = 0; i < TOPO_LINK_COUNT; i++)
    fprintf(f, "#   link %-6s bw %8.1f GB/s  lat %6.2f us\n", link_name[i], p->link[i].bw_gbs, p->link[i].lat_us);
  for (int i = 0; i < NCCL_NUM_PROTOCOLS; i++)
    fprintf(f, "#   proto %-6s bw_eff %5.3f  lat %6.2f us  per-channel %6.1f GB/s\n", topo_proto_name(i),
            p->proto[i].bw_eff, p->proto[i].lat_us, p->proto[i].ch_bw_gbs);
  if (p->nterms)
    fprintf(f, "#   %-14s %-10s %-7s %4s %9s %10s %10s %10s %7s\n", "collective", "algorithm", "proto", "ch",
            "lat(us)", "bw(GB/s)", "from(B)", "to(B)", "rms%");
  for (int i = 0; i < p->nterms; i++) {
    const topo_profile_term *t = &p->terms[i];
    fprintf(f, "#   %-14s %-10s %-7s %4d %9.2f %10.1f %10llu %10llu %7.1f\n", topo_coll_name(t->coll),
            topo_algo_name(t->algo), topo_proto_name(t->proto), t->nchannels, t->lat_us, t->bw_gbs,
            (unsigned long long)t->min_bytes, (unsigned long long)t->max_bytes, 100 * t->rel_err);
  }
}

void topo_cal_report_csv(FILE *f, const topo_cal_results *r) {
  fprintf(f, "gpu,nranks,nnodes,nccl,setting,kind,algo,proto,channels,coll,bytes,count,median_us,p25_us,"
             "p75_us,min_us,max_us,samples,calls,timing,algbw_gbs,busbw_gbs,status,ran_algo,ran_proto,ran_channels\n");
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    const topo_cal_setting *s = &r->settings[p->setting];
    char label[64];
    topo_cal_setting_label(s, label, sizeof label);
    double alg = p->status == TOPO_CAL_FAILED ? 0 : topo_cal_algbw(p->bytes, p->stats.median);
    fprintf(f, "%s,%d,%d,%d,%s,%s,%s,%s,%d,%s,%llu,%zu,%.4f,%.4f,%.4f,%.4f,%.4f,%d,%d,%s,%.3f,%.3f,%s,%s,%s,%d\n",
            r->gpu_model, r->nranks, r->nnodes, r->nccl_version, label,
            s->kind == TOPO_CAL_FORCED ? "forced" : s->kind == TOPO_CAL_DEFAULT ? "default" : "tuner",
            s->kind == TOPO_CAL_FORCED ? topo_algo_name(s->algo) : "", s->kind == TOPO_CAL_FORCED ? topo_proto_name(s->proto) : "",
            s->nchannels, topo_coll_name(p->coll), (unsigned long long)p->bytes, p->count, p->stats.median,
            p->stats.p25, p->stats.p75, p->stats.min, p->stats.max, p->stats.n, p->calls, p->graph ? "graph" : "eager",
            alg, alg * topo_cal_busbw_factor(p->coll, r->nranks), p->status == TOPO_CAL_OK ? "ok" : status_word(p->status),
            p->ran_algo >= 0 ? topo_algo_name(p->ran_algo) : "", p->ran_proto >= 0 ? topo_proto_name(p->ran_proto) : "",
            p->ran_channels);
  }
}

static int find_point(const topo_cal_results *r, int setting, int coll, uint64_t bytes) {
  for (int i = 0; i < r->npoints; i++)
    if (r->points[i].setting == setting && r->points[i].coll == coll && r->points[i].bytes == bytes &&
        r->points[i].status == TOPO_CAL_OK)
      return i;
  return -1;
}

int topo_cal_report_bench(FILE *f, const topo_cal_results *r, topo_cal_bench_summary *sum) {
  int sdef = topo_cal_results_find_kind(r, TOPO_CAL_DEFAULT);
  int stun = topo_cal_results_find_kind(r, TOPO_CAL_TUNER);
  int rows = 0;
  fprintf(f, "\n# --bench: NCCL's default, libtopo-tuner and the oracle (best forced setting), %d ranks, %s\n",
          r->nranks, transport(r));
  for (int c = TOPO_CAL_NCOLLS - 1; c >= 0; c--) {
    topo_cal_bench_summary s;
    memset(&s, 0, sizeof s);
    double log_t = 0, log_d = 0;
    int nt = 0, nd = 0;
    int header = 0;
    /* One row per size with an oracle, in size order. */
    uint64_t sizes[TOPO_CAL_MAX_SIZES * 2];
    int nsz = 0;
    for (int i = 0; i < r->npoints && nsz < (int)(sizeof sizes / sizeof sizes[0]); i++) {
      const topo_cal_point *q = &r->points[i];
      if (q->coll != c || r->settings[q->setting].kind != TOPO_CAL_FORCED) continue;
      int k = 0;
      while (k < nsz && sizes[k] < q->bytes) k++;
      if (k < nsz && sizes[k] == q->bytes) continue;
      memmove(&sizes[k + 1], &sizes[k], (size_t)(nsz - k) * sizeof sizes[0]);
      sizes[k] = q->bytes;
      nsz++;
    }
    for (int z = 0; z < nsz; z++) {
      int b = topo_cal_results_best_forced(r, c, sizes[z]);
      if (b < 0) continue;
      const topo_cal_point *p = &r->points[b];
      int di = sdef >= 0 ? find_point(r, sdef, c, p->bytes) : -1;
      int ti = stun >= 0 ? find_point(r, stun, c, p->bytes) : -1;
      if (di < 0 && ti < 0) continue;
      if (!header) {
        fprintf(f, "\n# %s\n#%13s %10s %-20s %10s %-20s %10s %-16s %8s %8s\n", topo_coll_name(c), "size(B)",
                "default", "(ran)", "tuner", "(ran)", "oracle", "(setting)", "tun/orc", "def/orc");
        header = 1;
      }
      double to = p->stats.median;
      char dr[32] = "-", tr[32] = "-", ol[48];
      topo_cal_setting_label(&r->settings[p->setting], ol, sizeof ol);
      double td = di >= 0 ? r->points[di].stats.median : 0, tt = ti >= 0 ? r->points[ti].stats.median : 0;
      if (di >= 0) ran_text(&r->points[di], dr, sizeof dr);
      if (ti >= 0) ran_text(&r->points[ti], tr, sizeof tr);
      char tdv[16] = "-", ttv[16] = "-", rt[16] = "-", rd[16] = "-";
      if (di >= 0) snprintf(tdv, sizeof tdv, "%.2f", td), snprintf(rd, sizeof rd, "%.3f", td / to);
      if (ti >= 0) snprintf(ttv, sizeof ttv, "%.2f", tt), snprintf(rt, sizeof rt, "%.3f", tt / to);
      fprintf(f, " %13llu %10s %-20s %10s %-20s %10.2f %-16s %8s %8s\n", (unsigned long long)p->bytes, tdv, dr, ttv,
              tr, to, ol, rt, rd);
      rows++;
      if (ti >= 0) {
        double q = tt / to;
        log_t += log(q), nt++;
        if (q > s.worst_tuner) s.worst_tuner = q, s.worst_tuner_bytes = p->bytes;
        if (di >= 0 && tt / td > s.worst_tuner_vs_default) s.worst_tuner_vs_default = tt / td;
      }
      if (di >= 0) {
        double q = td / to;
        log_d += log(q), nd++;
        if (q > s.worst_default) s.worst_default = q, s.worst_default_bytes = p->bytes;
      }
    }
    s.n = nt > nd ? nt : nd;
    s.geo_tuner = nt ? exp(log_t / nt) : 0;
    s.geo_default = nd ? exp(log_d / nd) : 0;
    if (sum) sum[c] = s;
    if (!header) continue;
    char wt[24], wd[24];
    topo_cal_format_bytes(s.worst_tuner_bytes, wt, sizeof wt);
    topo_cal_format_bytes(s.worst_default_bytes, wd, sizeof wd);
    if (nt) fprintf(f, "# %s tuner/oracle: geometric mean %.3f, worst %.3f at %s; worst tuner/default %.3f\n",
                    topo_coll_name(c), s.geo_tuner, s.worst_tuner, wt, s.worst_tuner_vs_default);
    if (nd) fprintf(f, "# %s default/oracle: geometric mean %.3f, worst %.3f at %s\n", topo_coll_name(c),
                    s.geo_default, s.worst_default, wd);
  }
  if (!rows) fprintf(f, "# (no size had both an oracle and a default or tuner measurement)\n");
  return rows;
}
