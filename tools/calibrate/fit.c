/* SPDX-License-Identifier: Apache-2.0 */
/*
 * From a run's measurements to a tuner profile (common/profile.h). Fitted terms: for every forced
 * (collective, algorithm, protocol, channels) with at least two accepted sizes, a piecewise
 * latency/bandwidth fit over its measured range (topo_profile_fit_piecewise: the fewest pieces
 * each within TOPO_PROFILE_PIECE_ERR, at most TOPO_CAL_MAX_PIECES). Parameters, where
 * measured (else the built-in values for the GPU model stay):
 *   link bw     one node: the highest of the large-message bus bandwidths of every forced
 *               setting and the median copy-engine p2p bandwidth -> NVLink; several nodes
 *               (NCCL_HOSTID runs): the highest ring bus bandwidth -> NET
 *   link lat    one node: half the SM ping-pong round trip (one NVLink hop); several nodes: the
 *               ring/LL AllReduce latency spread over its 2(n-1) steps
 *   proto       bw_eff: each protocol's best ring bus bandwidth / link bw; ch_bw_gbs: the best
 *               per-channel bus bandwidth of a channel-limited forced setting (< 85 % of what
 *               NCCL's own or a larger channel count reaches); lat_us: its ring
 *               AllReduce latency above LL's, per step
 *   launch_us   ring/LL AllReduce latency less its 2(n-1) link hops, at least the GPU floor
 *   max_channels NCCL's own channel count (its log); nvls: the GPUs' multicast support
 * Measured points (the tuner's decisions): every in-reach effective setting's median per size,
 * with its noise and whether NCCL's default ran it (add_points). The section is keyed by the
 * GPU model, nranks, nnodes and the NCCL version the run used.
 * Pure; called by runner.c and gpu_sweep.c (every process computes the same profile from the
 * same results).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "calibrate.h"
#include "profile.h"

/* Pieces of one sweep's fit: a 8 B..1 GB sweep has 28 sizes, pieces hold two at least. */
#define TOPO_CAL_MAX_PIECES 16

static double busbw_of(const topo_cal_results *r, const topo_cal_point *p) {
  return topo_cal_algbw(p->bytes, p->stats.median) * topo_nccl_busbw_factor(p->coll, r->nranks);
}

static uint64_t largest_ok(const topo_cal_results *r) {
  uint64_t top = 0;
  for (int i = 0; i < r->npoints; i++)
    if (r->points[i].status == TOPO_CAL_OK && r->points[i].bytes > top) top = r->points[i].bytes;
  return top;
}

/* Best bus bandwidth at "large" sizes (>= 1/16 of the largest measured) over forced points that
 * match algo/proto/channels (-1 = any). */
static double peak_busbw(const topo_cal_results *r, int algo, int proto, int nch) {
  uint64_t large = largest_ok(r) / 16;
  double best = 0;
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    const topo_cal_setting *s = &r->settings[p->setting];
    if (p->status != TOPO_CAL_OK || s->kind != TOPO_CAL_FORCED || s->beyond_reach ||
        p->bytes < large)
      continue;
    if ((algo >= 0 && s->algo != algo) || (proto >= 0 && s->proto != proto) ||
        (nch >= 0 && s->nchannels != nch))
      continue;
    double bw = busbw_of(r, p);
    if (bw > best) best = bw;
  }
  return best;
}

static double median_positive(const double *v, int n) {
  double tmp[4096];
  int k = 0;
  for (int i = 0; i < n && k < 4096; i++)
    if (v[i] > 0) tmp[k++] = v[i];
  if (!k) return 0;
  topo_cal_stats s;
  return topo_cal_stats_compute(tmp, k, &s) == 0 ? s.median : 0;
}

static const topo_profile_term *term_of(const topo_profile *p, int coll, int algo, int proto) {
  return topo_profile_find_term(p, coll, algo, proto, 0);
}

/* The channel count a measured result is keyed by in the profile: 0 (NCCL's own) where a
 * setting at NCCL's own count ran it or the count is unknown, else the count that ran. */
static int point_channels(const topo_cal_measured *m) {
  return m->own_channels || m->channels <= 0 ? 0 : m->channels;
}

/* Measured points: one per in-reach effective setting and size (topo_cal_results_measured; a
 * beyond-reach result is advice, report.c). noise_us = the A/A noise there x the median; where
 * that is unknown or 0, half the range of the result's repeats; where that is too, no point (an
 * unknown noise is never 0). Of two results with one key (NCCL's own count ran different counts
 * in different rounds) the one with more repeats is kept. default=1 where NCCL's default ran
 * this algorithm and protocol at this size (and this channel count, where both are known).
 * Returns the number of points, -1 on allocation failure. */
static int add_points(const topo_cal_results *r, topo_profile *out) {
  int cap = r->npoints > 0 ? r->npoints : 1;
  topo_cal_measured *m = topo_malloc((size_t)cap * sizeof *m);
  if (!m) return -1;
  int nm = topo_cal_results_measured(r, m, cap), added = 0;
  int sdef = topo_cal_results_find_kind(r, TOPO_CAL_DEFAULT);
  for (int i = 0; i < nm; i++) {
    const topo_cal_measured *mi = &m[i];
    if (mi->beyond_reach || !(mi->median_us > 0)) continue;
    int ch = point_channels(mi), better = 0;
    for (int j = 0; j < nm && !better; j++) {
      const topo_cal_measured *mj = &m[j];
      better = j != i && !mj->beyond_reach && mj->coll == mi->coll && mj->bytes == mi->bytes &&
               mj->algo == mi->algo && mj->proto == mi->proto && point_channels(mj) == ch &&
               (mj->n > mi->n || (mj->n == mi->n && j < i));
    }
    if (better) continue;
    int npairs = 0;
    double noise = topo_cal_results_noise(r, mi->coll, mi->bytes, &npairs);
    double noise_us = noise > 0 ? noise * mi->median_us : mi->spread_us > 0 ? mi->spread_us : -1.0;
    if (!(noise_us > 0) || !isfinite(noise_us)) continue;
    topo_profile_point pt = {.coll = mi->coll,
                             .algo = mi->algo,
                             .proto = mi->proto,
                             .nchannels = ch,
                             .bytes = mi->bytes,
                             .median_us = mi->median_us,
                             .noise_us = noise_us};
    if (sdef >= 0 && ch == 0) {
      double dmed = 0;
      int nd = 0, di = topo_cal_results_setting_median(r, sdef, mi->coll, mi->bytes, &dmed, &nd);
      const topo_cal_point *dp = di >= 0 ? &r->points[di] : NULL;
      pt.is_default =
          dp && dp->ran_algo == mi->algo && dp->ran_proto == mi->proto &&
          (dp->ran_channels <= 0 || mi->channels <= 0 || dp->ran_channels == mi->channels);
    }
    topo_status st = topo_profile_add_point(out, &pt);
    if (st == TOPO_ERR_NOMEM) {
      topo_free(m);
      return -1;
    }
    added += st == TOPO_OK;
  }
  topo_free(m);
  return added;
}

/* The section: built-in defaults for the GPU model, keyed by (model, nranks, nnodes, NCCL
 * version); NCCL's channel count; NVLS as the GPUs' multicast support says. */
static void start_section(const topo_cal_results *r, topo_profile *out) {
  topo_profile_builtin(r->gpu_model[0] ? r->gpu_model : NULL, out);
  snprintf(out->key.gpu, sizeof out->key.gpu, "%s", r->gpu_model[0] ? r->gpu_model : "*");
  out->key.nranks = r->nranks;
  out->key.nnodes = r->nnodes;
  out->key.nccl_version = r->nccl_version;
  snprintf(out->source, sizeof out->source, "topo-calibrate:%s", out->key.gpu);
  if (r->nccl_channels > 0) out->max_channels = r->nccl_channels;
  int mc = -1;
  for (int d = 0; d < r->ndev && d < 64; d++) {
    if (r->dev[d].multicast == 0) mc = 0;
    else if (r->dev[d].multicast == 1 && mc != 0) mc = 1;
  }
  if (mc >= 0) out->nvls = mc;
}

/* One value per size of setting s, collective c: the median of the setting's rounds there.
 * Returns the number of sizes in bytes[] / times[] (room for r->npoints). */
static int setting_sweep(const topo_cal_results *r, int s, int c, uint64_t *bytes, double *times) {
  int n = 0;
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    if (p->setting != s || p->coll != c || p->status != TOPO_CAL_OK) continue;
    int dup = 0;
    for (int k = 0; k < n && !dup; k++) dup = bytes[k] == p->bytes;
    if (dup) continue;
    int reps = 0;
    bytes[n] = p->bytes;
    topo_cal_results_setting_median(r, s, c, p->bytes, &times[n], &reps);
    n++;
  }
  return n;
}

/* Piecewise terms of one setting's sweep of collective c. Returns the terms added, -1 when out
 * of memory. */
static int fit_sweep(const topo_cal_setting *st, int c, const uint64_t *bytes, const double *times,
                     int n, topo_profile *out) {
  topo_profile_term pieces[TOPO_CAL_MAX_PIECES];
  memset(pieces, 0, sizeof pieces);
  int np = topo_profile_fit_piecewise(bytes, times, n, TOPO_PROFILE_PIECE_ERR, pieces,
                                      TOPO_CAL_MAX_PIECES);
  if (np < 0) return -1;
  int added = 0;
  for (int k = 0; k < np; k++) {
    topo_profile_term *t = &pieces[k];
    t->coll = c;
    t->algo = st->algo;
    t->proto = st->proto;
    t->nchannels = st->nchannels;
    topo_status sst = topo_profile_set_term(out, t);
    if (sst == TOPO_ERR_NOMEM) return -1;
    if (sst == TOPO_OK) added++;
  }
  return added;
}

/* Fitted terms for every in-reach forced setting and collective with two sizes at least.
 * Returns the number of terms, -1 when out of memory. */
static int fit_terms(const topo_cal_results *r, topo_profile *out) {
  if (r->npoints <= 0) return 0;
  uint64_t *bytes = topo_malloc((size_t)r->npoints * sizeof *bytes);
  double *times = topo_malloc((size_t)r->npoints * sizeof *times);
  int nterms = bytes && times ? 0 : -1;
  for (int s = 0; s < r->nsettings && nterms >= 0; s++) {
    const topo_cal_setting *st = &r->settings[s];
    /* A beyond-reach channel count is advice (report.c), not a choice the tuner can make. */
    if (st->kind != TOPO_CAL_FORCED || st->beyond_reach) continue;
    for (int c = 0; c < NCCL_NUM_FUNCTIONS && nterms >= 0; c++) {
      int n = setting_sweep(r, s, c, bytes, times);
      if (n < 2) continue;
      int added = fit_sweep(st, c, bytes, times, n, out);
      nterms = added < 0 ? -1 : nterms + added;
    }
  }
  topo_free(bytes);
  topo_free(times);
  return nterms;
}

/* Link bandwidth and latency of the class the run crossed (NVLink on one node, NET on several).
 * ll: the ring/LL AllReduce term; steps: its 2(n-1) link hops. */
static void fit_link(const topo_cal_results *r, const topo_profile_term *ll, double steps,
                     topo_profile *out) {
  int multi = r->nnodes > 1;
  int cls = multi ? TOPO_LINK_NET : TOPO_LINK_NVLINK;
  double link_bw = peak_busbw(r, -1, -1, -1);
  if (!multi && r->p2p_ce_bw && r->ndev > 1) {
    double ce = median_positive(r->p2p_ce_bw, r->ndev * r->ndev);
    if (ce > link_bw) link_bw = ce;
  }
  if (link_bw > 0) out->link[cls].bw_gbs = link_bw;
  if (!multi && r->p2p_sm_lat && r->ndev > 1) {
    double rt = median_positive(r->p2p_sm_lat, r->ndev * r->ndev);
    if (rt > 0) out->link[TOPO_LINK_NVLINK].lat_us = rt / 2;
  } else if (multi && ll && steps > 0) {
    double per = (ll->lat_us - out->launch_us) / steps;
    if (per > 0.5) out->link[TOPO_LINK_NET].lat_us = per;
  }
}

/* Launch: what ring/LL AllReduce costs beyond its link hops, at least the GPU floor. */
static void fit_launch(const topo_cal_results *r, const topo_profile_term *ll, double steps,
                       double hop, topo_profile *out) {
  if (ll) {
    double launch = ll->lat_us - steps * (hop + out->proto[NCCL_PROTO_LL].lat_us);
    if (launch < r->floor_graph_us) launch = r->floor_graph_us;
    if (launch > 0) out->launch_us = launch;
  } else if (r->floor_graph_us > 0 && out->launch_us < r->floor_graph_us) {
    out->launch_us = r->floor_graph_us;
  }
}

/* The best per-channel bus bandwidth of a channel-limited ring setting of protocol p (well below
 * what NCCL's own count or more channels reach); 0 when none is. */
static double channel_bw(const topo_cal_results *r, int p) {
  double best_ch = 0;
  for (int s = 0; s < r->nsettings; s++) {
    const topo_cal_setting *st = &r->settings[s];
    if (st->kind != TOPO_CAL_FORCED || st->algo != NCCL_ALGO_RING || st->proto != p ||
        st->nchannels <= 0)
      continue;
    double ref = peak_busbw(r, NCCL_ALGO_RING, p, 0);
    for (int s2 = 0; s2 < r->nsettings; s2++) {
      const topo_cal_setting *o2 = &r->settings[s2];
      if (o2->kind == TOPO_CAL_FORCED && o2->algo == NCCL_ALGO_RING && o2->proto == p &&
          o2->nchannels > st->nchannels) {
        double b2 = peak_busbw(r, NCCL_ALGO_RING, p, o2->nchannels);
        if (b2 > ref) ref = b2;
      }
    }
    double bw = peak_busbw(r, NCCL_ALGO_RING, p, st->nchannels);
    if (bw > 0 && bw < 0.85 * ref && bw / st->nchannels > best_ch) best_ch = bw / st->nchannels;
  }
  return best_ch;
}

/* Per protocol: bandwidth efficiency against the link, per-channel bandwidth, latency above LL's
 * per step. */
static void fit_protocols(const topo_cal_results *r, const topo_profile_term *ll, double steps,
                          double link_bw, topo_profile *out) {
  for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
    double pk = peak_busbw(r, NCCL_ALGO_RING, p, -1);
    if (pk > 0 && link_bw > 0) {
      double eff = pk / link_bw;
      out->proto[p].bw_eff = eff > 1.0 ? 1.0 : eff;
    }
    double best_ch = channel_bw(r, p);
    if (best_ch > 0) out->proto[p].ch_bw_gbs = best_ch;
    const topo_profile_term *t = term_of(out, ncclFuncAllReduce, NCCL_ALGO_RING, p);
    if (p != NCCL_PROTO_LL && t && ll && steps > 0) {
      double extra = (t->lat_us - ll->lat_us) / steps + out->proto[NCCL_PROTO_LL].lat_us;
      out->proto[p].lat_us = extra > 0 ? extra : 0;
    }
  }
}

int topo_cal_fit_profile(const topo_cal_results *r, topo_profile *out) {
  start_section(r, out);
  int nterms = fit_terms(r, out);
  if (nterms < 0) return -1;
  if (add_points(r, out) < 0) {
    topo_profile_free(out);
    return -1;
  }
  if (r->nranks < 2) {
    if (r->floor_graph_us > 0) out->launch_us = r->floor_graph_us;
    return nterms;
  }
  int cls = r->nnodes > 1 ? TOPO_LINK_NET : TOPO_LINK_NVLINK;
  const topo_profile_term *ll = term_of(out, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL);
  double steps = 2 * ((double)r->nranks - 1);
  fit_link(r, ll, steps, out);
  fit_launch(r, ll, steps, out->link[cls].lat_us, out);
  fit_protocols(r, ll, steps, out->link[cls].bw_gbs, out);
  return nterms;
}

int topo_cal_write_profile(const topo_cal_results *r, const char *path, FILE *report) {
  topo_profile p;
  int n = topo_cal_fit_profile(r, &p);
  if (n < 0) {
    topo_cal_warn("cannot fit the profile: out of memory");
    return -1;
  }
  int rc = n;
  if (path) {
    FILE *f = fopen(path, "w");
    if (!f) {
      topo_cal_warn("cannot write the profile to %s: %s", path, strerror(errno));
      rc = -1;
    } else {
      fprintf(f, "# written by topo-calibrate: %s, %d ranks, %d nodes%s\n", p.key.gpu, p.key.nranks,
              p.key.nnodes, r->nnodes > 1 ? " (socket transport via NCCL_HOSTID)" : "");
      topo_status st = topo_profile_write(f, &p);
      if (fclose(f) != 0 || st != TOPO_OK) {
        topo_cal_warn("cannot write the profile to %s: %s", path,
                      topo_status_str(st != TOPO_OK ? st : TOPO_ERR_IO));
        rc = -1;
      }
    }
  }
  if (report) topo_cal_report_profile(report, &p);
  topo_profile_free(&p);
  return rc;
}
