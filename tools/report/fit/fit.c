// SPDX-License-Identifier: Apache-2.0
// `topo-report fit`: from the observed GPU times of collectives, write a tuner profile
// (common/profile.h) that libtopo-tuner.so reads: the loop from production back to the tuner.
// One section per communicator size seen. Per (collective, algorithm, protocol), the traces give
// one point per message-size bucket (its mean size, the median of its GPU times, its spread and
// count); a GPU time is the time after the last rank's kernel start where every rank's start is
// known (waiting for a late rank is no cost of the setting), else the whole kernel:
//   - two sizes or more: a piecewise fit time = lat + size/bw (topo_profile_fit_piecewise, the
//     fewest size ranges each within TOPO_PROFILE_PIECE_ERR), terms over the measured range;
//   - one size alone (a DDP job's buckets): the measured point as a term through its median,
//     lat_us 0 and bw_gbs = mean size / median, valid only over the sizes of its calls
//     [min_bytes, max_bytes], rel_err = its spread (half the interquartile range / median),
//     npoints = its call count.
// Every point with a spread is also a `point` line (format version 2, what the tuner decides on):
// bytes = its mean size, median_us = the median of its calls' GPU times, noise_us = half their
// interquartile range (spread x median); a point with no spread (one call, or a quantile sketch
// that cannot tell its quartiles apart) is no `point` line, as a noise is never 0. channels=0
// (untuned traffic ran NCCL's own count); no default= (the traces do not say whether NCCL picked
// the setting by itself or a tuner did). The section stays nccl=* (the traces carry no NCCL
// version). Every point is also a `# measured ...` comment line (size, range, median, spread,
// count, the channel count its calls ran). Everything else comes from the
// base: --base PROFILE (its matching section; its terms are kept where no new term overlaps
// them), else the built-in defaults of --gpu (generic ones for none or an unknown model).
// The output appears whole or not at all: written to a temporary file in its directory, synced,
// then renamed over the target; on any failure the temporary file is removed.
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "log.h"
#include "profile.h"
#include "report.h"
#include "report_fit.h"

#define MAX_POINTS 64

static int nnodes_for(const rp_report *r, int nranks) {
  int nn = 0;
  for (int i = 0; i < r->nsrc; i++)
    if (r->src[i].kind == RP_SRC_TRACE && r->src[i].header_ok && r->src[i].nranks == nranks &&
        r->src[i].header.nnodes > nn)
      nn = r->src[i].header.nnodes;
  return nn;
}

static int known_gpu(const char *gpu) {
  topo_profile p;
  return gpu && *gpu && strcasecmp(gpu, "generic") != 0 && topo_profile_builtin(gpu, &p) == TOPO_OK;
}

/* Remove p's terms of t's key whose range overlaps t's: the traces' measurement replaces them.
 * Returns how many were removed. */
static int drop_overlapping(topo_profile *p, const topo_profile_term *t) {
  int k = 0, dropped = 0;
  for (int i = 0; i < p->nterms; i++) {
    const topo_profile_term *q = &p->terms[i];
    if (q->coll == t->coll && q->algo == t->algo && q->proto == t->proto &&
        q->nchannels == t->nchannels && q->min_bytes <= t->max_bytes &&
        t->min_bytes <= q->max_bytes) {
      dropped++;
      continue;
    }
    p->terms[k++] = *q;
  }
  p->nterms = k;
  return dropped;
}

/* One measured point of the traces. */
typedef struct point {
  const rp_fitpt *q;
  uint64_t bytes; /* mean size */
  double median_us, spread;
  uint64_t n;           /* samples behind the median */
  int after_last_start; /* 1: times after the last rank's start (else the whole kernel) */
} point;

/* The points of one setting. A point's time is what the setting costs: from the last rank's
 * kernel start to each rank's stop where the traces give every rank's GPU start (rp_fitpt.xfer:
 * waiting for a late rank is no property of the algorithm or protocol), else the whole kernel. */
static int collect(const rp_report *r, int nranks, int func, int algo, int proto, point *pts) {
  int n = 0;
  for (size_t i = 0; i < r->nfit && n < MAX_POINTS; i++) {
    const rp_fitpt *q = r->fit[i];
    if (q->func != func || q->algo != algo || q->proto != proto || q->nranks != nranks || !q->n)
      continue;
    int x = q->xfer.n >= 2;
    const rp_quant *t = x ? &q->xfer : &q->time;
    double mean = x ? q->xfer_size_sum / (double)q->xfer.n : q->size_sum / (double)q->n;
    double med = (double)rp_quant_get(t, 0.5) / 1e3;
    if (!(med > 0) || !(mean >= 1)) continue; /* a zero time is no measurement */
    double p25 = (double)rp_quant_get(t, 0.25) / 1e3;
    double p75 = (double)rp_quant_get(t, 0.75) / 1e3;
    pts[n].q = q;
    pts[n].bytes = mean < 1.8e19 ? (uint64_t)mean : UINT64_MAX;
    pts[n].median_us = med;
    pts[n].n = t->n;
    pts[n].after_last_start = x;
    pts[n].spread = t->n > 1 && p75 >= p25 ? (p75 - p25) / (2 * med) : 0;
    n++;
  }
  return n;
}

typedef struct fit_count {
  int fitted, measured, replaced, kept, points;
  int bad_terms, bad_points; /* outside what a profile holds (a damaged record): left out */
} fit_count;

/* The section for one communicator size, into p (base already there). */
static topo_status fit_section(const rp_report *r, int nranks, topo_profile *p, FILE *summary,
                               fit_count *c) {
  topo_status st = TOPO_OK;
  for (int func = 0; func < NCCL_NUM_FUNCTIONS; func++)
    for (int algo = 0; algo < NCCL_NUM_ALGORITHMS; algo++)
      for (int proto = 0; proto < NCCL_NUM_PROTOCOLS; proto++) {
        point pts[MAX_POINTS];
        int n = collect(r, nranks, func, algo, proto, pts);
        if (!n) continue;
        topo_profile_term pieces[MAX_POINTS / 2];
        memset(pieces, 0, sizeof pieces);
        int np = 0, single = 0;
        if (n >= 2) {
          uint64_t bytes[MAX_POINTS];
          double us[MAX_POINTS];
          for (int i = 0; i < n; i++) bytes[i] = pts[i].bytes, us[i] = pts[i].median_us;
          np = topo_profile_fit_piecewise(bytes, us, n, TOPO_PROFILE_PIECE_ERR, pieces,
                                          MAX_POINTS / 2);
          if (np < 0) return TOPO_ERR_NOMEM;
        }
        if (np == 0 && n == 1) {
          const rp_fitpt *q = pts[0].q;
          topo_profile_term *t = &pieces[0];
          t->lat_us = 0;
          t->bw_gbs = (double)pts[0].bytes / (pts[0].median_us * 1e3);
          t->min_bytes = q->size_min ? q->size_min : pts[0].bytes;
          t->max_bytes = q->size_max >= t->min_bytes ? q->size_max : t->min_bytes;
          t->rel_err = pts[0].spread;
          t->npoints = pts[0].n > (uint64_t)1000000000 ? 1000000000 : (int)pts[0].n;
          np = single = 1;
        }
        for (int k = 0; k < np; k++) {
          topo_profile_term t = pieces[k];
          t.coll = func;
          t.algo = algo;
          t.proto = proto;
          t.nchannels = 0;                    /* untuned traffic ran NCCL's own channel count */
          if (!topo_profile_term_valid(&t)) { /* checked first: it must replace nothing */
            c->bad_terms++;
            continue;
          }
          c->replaced += drop_overlapping(p, &t);
          topo_status s = topo_profile_set_term(p, &t);
          if (s != TOPO_OK) {
            TOPO_WARN("%s %s/%s on %d ranks: term not kept (%s)", rp_func_name(func),
                      rp_algo_name(algo), rp_proto_name(proto), nranks, topo_status_str(s));
            if (s == TOPO_ERR_NOMEM) st = s;
            continue;
          }
          if (single) c->measured++;
          else c->fitted++;
          if (summary) {
            char lo[32], hi[32];
            rp_fmt_bytes(t.min_bytes, lo, sizeof lo);
            rp_fmt_bytes(t.max_bytes, hi, sizeof hi);
            fprintf(summary, "%-14s %5d %-10s %-7s %-8s %7d %10.2f %10.2f %7.1f%%  %s - %s%s\n",
                    rp_func_name(func), nranks, rp_algo_name(algo), rp_proto_name(proto),
                    single ? "measured" : "fitted", t.npoints, t.lat_us, t.bw_gbs, t.rel_err * 100,
                    lo, hi, pts[0].after_last_start ? "" : " (whole kernel)");
          }
        }
        for (int i = 0; i < n; i++) {
          topo_profile_point pt = {.coll = func,
                                   .algo = algo,
                                   .proto = proto,
                                   .nchannels = 0,
                                   .bytes = pts[i].bytes,
                                   .median_us = pts[i].median_us,
                                   .noise_us = pts[i].spread * pts[i].median_us,
                                   .is_default = -1};
          if (!(pt.noise_us > 0)) continue;
          topo_status s = topo_profile_add_point(p, &pt);
          if (s == TOPO_OK) c->points++;
          else if (s == TOPO_ERR_NOMEM) st = s;
          else c->bad_points++;
        }
      }
  return st;
}

/* `# measured` comment lines: every point of this communicator size, as the traces gave it. */
static void write_points(FILE *f, const rp_report *r, int nranks) {
  for (int func = 0; func < NCCL_NUM_FUNCTIONS; func++)
    for (int algo = 0; algo < NCCL_NUM_ALGORITHMS; algo++)
      for (int proto = 0; proto < NCCL_NUM_PROTOCOLS; proto++) {
        point pts[MAX_POINTS];
        int n = collect(r, nranks, func, algo, proto, pts);
        for (int i = 0; i < n; i++) {
          char ch[16];
          if (pts[i].q->nchannels > 0) snprintf(ch, sizeof ch, "%d", pts[i].q->nchannels);
          else snprintf(ch, sizeof ch, "%s", pts[i].q->nchannels < 0 ? "mixed" : "unknown");
          fprintf(f,
                  "# measured %s %s %s channels=%s bytes=%" PRIu64 " min_bytes=%" PRIu64
                  " max_bytes=%" PRIu64 " median_us=%.3f spread=%.4f n=%" PRIu64 " time=%s\n",
                  topo_nccl_func_name(func, TOPO_NCCL_FILE),
                  topo_nccl_algo_name(algo, TOPO_NCCL_FILE),
                  topo_nccl_proto_name(proto, TOPO_NCCL_FILE), ch, pts[i].bytes, pts[i].q->size_min,
                  pts[i].q->size_max, pts[i].median_us, pts[i].spread, pts[i].n,
                  pts[i].after_last_start ? "after_last_start" : "whole_kernel");
        }
      }
}

/* A temporary file beside `path` ("<path>.tmp.XXXXXX"), mode 0666 less the umask. */
static FILE *open_temp(const char *path, char *tmp, size_t len) {
  if ((size_t)snprintf(tmp, len, "%s.tmp.XXXXXX", path) >= len) return NULL;
  int fd = mkstemp(tmp);
  if (fd < 0) return NULL;
  mode_t um = umask(0);
  umask(um);
  if (fchmod(fd, 0666 & ~um) != 0) { /* best effort: a 0600 profile still works */
  }
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    unlink(tmp);
  }
  return f;
}

/* The profile a section starts from: base_path's section for `want` when it has one (the loader
 * warns when none matches), else the built-in defaults of gpu (generic when unknown). Returns
 * TOPO_ERR_IO / TOPO_ERR_NOMEM when the base cannot be read at all; *p is then freed. */
static topo_status base_profile(const char *base_path, const topo_profile_key *want,
                                const char *gpu, topo_profile *p) {
  memset(p, 0, sizeof *p);
  const char *base_name = NULL;
  if (base_path) {
    topo_status b = topo_profile_load(base_path, want, p);
    if (b == TOPO_ERR_IO || b == TOPO_ERR_NOMEM) {
      topo_profile_free(p);
      return b;
    }
    if (b == TOPO_OK) base_name = p->source; /* PARSE: no section matched; the loader warned */
  }
  if (!base_name) {
    topo_profile_free(p);
    topo_profile_builtin(known_gpu(gpu) ? gpu : "generic", p);
  }
  return TOPO_OK;
}

/* The section of communicator size `size`: fitted over its base and written to out, with its
 * summary lines; counts added to *total. A size with nothing measured writes nothing. */
static topo_status fit_size(const rp_report *r, int size, const char *gpu, const char *base_path,
                            FILE *out, FILE *summary, fit_count *total) {
  topo_profile p;
  topo_profile_key want = {.nranks = size, .nnodes = nnodes_for(r, size)};
  if (gpu) snprintf(want.gpu, sizeof want.gpu, "%s", gpu);
  topo_status st = base_profile(base_path, &want, gpu, &p);
  if (st != TOPO_OK) return st;
  char base_src[256];
  snprintf(base_src, sizeof base_src, "%s", p.source);
  int base_terms = p.nterms;
  p.key = want;
  fit_count c = {0};
  st = fit_section(r, size, &p, summary, &c);
  c.kept = base_terms - c.replaced;
  if (c.bad_terms || c.bad_points)
    TOPO_WARN(
        "%d ranks: %d term%s and %d point%s from the traces left out: their times or "
        "bandwidths lie outside what a profile holds (times up to %g us, %g..%g GB/s): damaged "
        "records?",
        size, c.bad_terms, c.bad_terms == 1 ? "" : "s", c.bad_points, c.bad_points == 1 ? "" : "s",
        TOPO_PROFILE_MAX_US, TOPO_PROFILE_MIN_BW, TOPO_PROFILE_MAX_BW);
  if (st == TOPO_OK && c.fitted + c.measured + c.points > 0) {
    snprintf(p.source, sizeof p.source, "topo-report fit");
    if (topo_profile_write(out, &p) != TOPO_OK) st = TOPO_ERR_IO;
    fprintf(out, "# base: %s; %d terms kept from it, %d replaced by the traces\n", base_src, c.kept,
            c.replaced);
    write_points(out, r, size);
    if (summary)
      fprintf(summary,
              "%d ranks: %d fitted and %d measured-point terms and %d points from the "
              "traces; kept from %s: %d terms (%d replaced), links, protocols and launch cost\n",
              size, c.fitted, c.measured, c.points, base_src, c.kept, c.replaced);
    total->fitted += c.fitted;
    total->measured += c.measured;
    total->points += c.points;
  }
  topo_profile_free(&p);
  return st;
}

topo_status rp_fit(const rp_report *r, const char *gpu, const char *base_path, const char *out_path,
                   FILE *summary) {
  int sizes[64], nsizes = 0;
  for (size_t i = 0; i < r->nfit; i++) {
    int n = r->fit[i]->nranks, seen = 0;
    for (int k = 0; k < nsizes; k++) seen |= sizes[k] == n;
    if (!seen && nsizes < 64) sizes[nsizes++] = n;
  }
  if (gpu && !known_gpu(gpu))
    TOPO_WARN(
        "unknown GPU model '%s' (H200, H100, A100): the generic built-in defaults fill what "
        "the traces and the base do not give",
        gpu);
  char tmp[4096];
  FILE *out = open_temp(out_path, tmp, sizeof tmp);
  if (!out) {
    TOPO_WARN("cannot write %s: %s", out_path, strerror(errno));
    return TOPO_ERR_IO;
  }
  topo_status st = TOPO_OK;
  fit_count total = {0};
  if (summary)
    fprintf(summary,
            "times: after the last rank's kernel start where every rank's GPU start is known\n"
            "(waiting for a late rank is no cost of the setting), else the whole kernel (said)\n"
            "%-14s %5s %-10s %-7s %-8s %7s %10s %10s %8s  %s\n",
            "collective", "ranks", "algorithm", "proto", "from", "points", "lat (us)", "bw (GB/s)",
            "rms err", "size range");
  for (int si = 0; si < nsizes && st == TOPO_OK; si++)
    st = fit_size(r, sizes[si], gpu, base_path, out, summary, &total);
  if (fflush(out) != 0 || ferror(out) || fsync(fileno(out)) != 0)
    st = st == TOPO_OK ? TOPO_ERR_IO : st;
  if (fclose(out) != 0 && st == TOPO_OK) st = TOPO_ERR_IO;
  if (st == TOPO_OK && total.fitted + total.measured + total.points == 0) {
    TOPO_WARN(
        "nothing to fit: no GPU-timed collective in the traces (TOPO_PROFILER_SAMPLE and "
        "TOPO_PROFILER_MEASURE_BYTES say which calls the profiler times); %s not written",
        out_path);
    unlink(tmp);
    return TOPO_ERR_INVALID;
  }
  if (st == TOPO_OK && rename(tmp, out_path) != 0) {
    TOPO_WARN("cannot write %s: %s", out_path, strerror(errno));
    st = TOPO_ERR_IO;
  }
  if (st != TOPO_OK) {
    unlink(tmp);
    if (st != TOPO_ERR_INVALID) TOPO_WARN("%s not written (%s)", out_path, topo_status_str(st));
    return st;
  }
  if (summary)
    fprintf(summary, "wrote %d fitted and %d measured-point terms and %d points to %s\n",
            total.fitted, total.measured, total.points, out_path);
  return TOPO_OK;
}
