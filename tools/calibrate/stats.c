/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Statistics and plausibility for topo-calibrate: median / quartiles of a point's samples,
 * nccl-tests bandwidth conventions, the physical-floor check that rejects timings faster than
 * the hardware allows, the prune test, and GPU model names and line rates. Pure functions.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "calibrate.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double quantile(const double *sorted, int n, double q) {
  double pos = q * (n - 1);
  int lo = (int)floor(pos);
  int hi = lo + 1 < n ? lo + 1 : lo;
  double f = pos - lo;
  return sorted[lo] * (1 - f) + sorted[hi] * f;
}

int topo_cal_stats_compute(const double *samples, int n, topo_cal_stats *out) {
  memset(out, 0, sizeof *out);
  if (!samples || n <= 0) return -1;
  double small[64];
  double *s = n <= 64 ? small : topo_malloc((size_t)n * sizeof *s);
  if (!s) return -1;
  for (int i = 0; i < n; i++) {
    if (!isfinite(samples[i])) {
      if (s != small) topo_free(s);
      return -1;
    }
    s[i] = samples[i];
  }
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  out->n = n;
  out->min = s[0];
  out->max = s[n - 1];
  out->median = quantile(s, n, 0.5);
  out->p25 = quantile(s, n, 0.25);
  out->p75 = quantile(s, n, 0.75);
  if (s != small) topo_free(s);
  return 0;
}

double topo_cal_stats_spread(const topo_cal_stats *s) {
  return s->median > 0 ? (s->p75 - s->p25) / s->median : 0;
}

double topo_cal_link_traffic_factor(int coll, int nranks) {
  double n = nranks > 0 ? nranks : 1;
  switch (coll) {
  case ncclFuncAllReduce:
  case ncclFuncAllGather:
  case ncclFuncReduceScatter: return (n - 1) / n;
  default: return 1;
  }
}

double topo_cal_algbw(uint64_t bytes, double time_us) {
  return time_us > 0 ? (double)bytes / (time_us * 1e3) : 0;
}

int topo_cal_check_floor(int coll, int nranks, uint64_t bytes, double time_us, double floor_us,
                         double line_rate_gbs, char *why, size_t whylen) {
  if (why && whylen) why[0] = '\0';
  if (!(time_us > 0) || !isfinite(time_us)) {
    if (why) snprintf(why, whylen, "time %.3g us is not a positive number", time_us);
    return 1;
  }
  if (time_us < floor_us) {
    if (why)
      snprintf(why, whylen, "%.2f us is below the %.2f us floor of any collective", time_us,
               floor_us);
    return 1;
  }
  if (line_rate_gbs > 0) {
    double through = topo_cal_algbw(bytes, time_us) * topo_cal_link_traffic_factor(coll, nranks);
    if (through > 1.2 * line_rate_gbs) {
      if (why)
        snprintf(why, whylen,
                 "%.2f us implies %.0f GB/s through one GPU's links, above 1.2 x the %.0f GB/s "
                 "line rate",
                 time_us, through, line_rate_gbs);
      return 1;
    }
  }
  return 0;
}

int topo_cal_slower_than(double time_us, double best_us, double factor) {
  if (!(factor > 0) || !(best_us > 0)) return 0;
  return time_us > factor * best_us;
}

double topo_cal_line_rate_for_model(const char *model) {
  static const struct {
    const char *model;
    double gbs;
  } rates[] = {
      /* NVLink per direction: 18 x NVLink4 (25 GB/s) on H100/H200; 8 on H800; 12 x NVLink3 A100;
       * 18 x NVLink5 (50 GB/s) on Blackwell. */
      {"H100", 450}, {"H200", 450},  {"GH200", 450}, {"H800", 200}, {"H20", 450},
      {"A100", 300}, {"A800", 200},  {"B100", 900},  {"B200", 900}, {"GB200", 900},
      {"B300", 900}, {"GB300", 900}, {"V100", 150},
  };
  if (!model) return 0;
  for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++)
    if (strcasecmp(model, rates[i].model) == 0) return rates[i].gbs;
  return 0;
}

void topo_cal_gpu_model(const char *device_name, char *out, size_t len) {
  if (!out || !len) return;
  out[0] = '\0';
  if (!device_name) return;
  const char *p = device_name;
  while (*p == ' ') p++;
  if (strncasecmp(p, "NVIDIA ", 7) == 0) p += 7;
  int geforce = 0;
  if (strncasecmp(p, "GeForce ", 8) == 0) p += 8, geforce = 1;
  else if (strncasecmp(p, "Tesla ", 6) == 0) p += 6;
  size_t n = 0;
  /* GeForce/RTX names keep two words ("RTX 4090" -> "RTX4090"); data-centre names one token
   * up to a space or dash ("A100-SXM4-80GB" -> "A100"). */
  int words = geforce || strncasecmp(p, "RTX ", 4) == 0 ? 2 : 1;
  for (; *p && n + 1 < len; p++) {
    if (*p == ' ' || *p == '-') {
      if (--words == 0) break;
      continue;
    }
    if (!isalnum((unsigned char)*p)) break;
    out[n++] = *p;
  }
  out[n] = '\0';
}
