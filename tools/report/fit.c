// SPDX-License-Identifier: Apache-2.0
// `topo-report fit`: from the observed GPU times of collectives, fit time = lat + size/bw per
// (collective, algorithm, protocol) and communicator size, piecewise (topo_profile_fit_piecewise:
// the fewest size ranges each within TOPO_PROFILE_PIECE_ERR), and write a tuner profile
// (common/profile.h) that libtopo-tuner.so reads: the loop from production back to the tuner.
// Points: one per message-size bucket, at its mean size and median time (robust to outliers).
#include <inttypes.h>
#include <string.h>

#include "alloc.h"
#include "log.h"
#include "profile.h"
#include "report.h"

#define MAX_POINTS 64

static int nnodes_for(const rp_report *r, int nranks) {
  int nn = 0;
  for (int i = 0; i < r->nsrc; i++)
    if (r->src[i].kind == RP_SRC_TRACE && r->src[i].header_ok && r->src[i].nranks == nranks &&
        r->src[i].header.nnodes > nn)
      nn = r->src[i].header.nnodes;
  return nn;
}

topo_status rp_fit(const rp_report *r, const char *gpu, const char *out_path, FILE *summary) {
  int sizes[64], nsizes = 0;
  for (size_t i = 0; i < r->nfit; i++) {
    int n = r->fit[i]->nranks, seen = 0;
    for (int k = 0; k < nsizes; k++) seen |= sizes[k] == n;
    if (!seen && nsizes < 64) sizes[nsizes++] = n;
  }
  FILE *out = fopen(out_path, "w");
  if (!out) {
    TOPO_WARN("cannot write %s", out_path);
    return TOPO_ERR_IO;
  }
  int terms = 0;
  topo_status st = TOPO_OK;
  if (summary)
    fprintf(summary, "%-14s %5s %-10s %-7s %7s %10s %10s %8s  %s\n", "collective", "ranks",
            "algorithm", "proto", "points", "lat (us)", "bw (GB/s)", "rms err", "size range");
  for (int si = 0; si < nsizes; si++) {
    topo_profile p;
    memset(&p, 0, sizeof p);
    topo_profile_builtin(gpu ? gpu : "H200", &p);
    memset(&p.key, 0, sizeof p.key);
    if (gpu) snprintf(p.key.gpu, sizeof p.key.gpu, "%s", gpu);
    p.key.nranks = sizes[si];
    p.key.nnodes = nnodes_for(r, sizes[si]);
    snprintf(p.source, sizeof p.source, "topo-report fit");
    for (int func = 0; func <= 4; func++)
      for (int algo = 0; algo < 7; algo++)
        for (int proto = 0; proto < 3; proto++) {
          uint64_t bytes[MAX_POINTS];
          double us[MAX_POINTS];
          int n = 0;
          for (size_t i = 0; i < r->nfit && n < MAX_POINTS; i++) {
            const rp_fitpt *q = r->fit[i];
            if (q->func != func || q->algo != algo || q->proto != proto || q->nranks != sizes[si] ||
                !q->n)
              continue;
            double mean = q->size_sum / (double)q->n;
            bytes[n] = mean < 1.8e19 ? (uint64_t)mean : UINT64_MAX;
            us[n] = (double)rp_quant_get(&q->time, 0.5) / 1e3;
            n++;
          }
          if (n < 2) continue;
          topo_profile_term pieces[MAX_POINTS / 2];
          memset(pieces, 0, sizeof pieces);
          int np = topo_profile_fit_piecewise(bytes, us, n, TOPO_PROFILE_PIECE_ERR, pieces,
                                              MAX_POINTS / 2);
          if (np < 0) st = TOPO_ERR_NOMEM;
          for (int k = 0; k < np; k++) {
            topo_profile_term t = pieces[k];
            t.coll = func;
            t.algo = algo;
            t.proto = proto;
            t.nchannels = 0;
            if (topo_profile_set_term(&p, &t) != TOPO_OK) {
              st = TOPO_ERR_NOMEM;
              continue;
            }
            terms++;
            if (summary) {
              char lo[32], hi[32];
              rp_fmt_bytes(t.min_bytes, lo, sizeof lo);
              rp_fmt_bytes(t.max_bytes, hi, sizeof hi);
              fprintf(summary, "%-14s %5d %-10s %-7s %7d %10.2f %10.2f %7.1f%%  %s - %s\n",
                      rp_func_name(func), sizes[si], rp_algo_name(algo), rp_proto_name(proto),
                      t.npoints, t.lat_us, t.bw_gbs, t.rel_err * 100, lo, hi);
            }
          }
        }
    if (p.nterms && topo_profile_write(out, &p) != TOPO_OK) st = TOPO_ERR_IO;
    topo_profile_free(&p);
  }
  if (fclose(out) != 0) st = TOPO_ERR_IO;
  if (!terms) {
    TOPO_WARN("nothing to fit: need GPU-timed collectives of at least two message sizes per "
              "(collective, algorithm, protocol)");
    return TOPO_ERR_INVALID;
  }
  if (summary) fprintf(summary, "wrote %d fitted terms to %s\n", terms, out_path);
  return st;
}
