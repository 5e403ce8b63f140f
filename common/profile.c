// SPDX-License-Identifier: Apache-2.0
// The tuner profile in memory (see profile.h, docs/profile-format.md): built-in defaults for
// H200/H100/A100 NVLink nodes and a generic set, the sorted store of fitted terms and measured
// points, and how well a section's key matches a communicator. Reading, writing and fitting live
// in profile_read.c, profile_write.c and profile_fit.c. Called at tuner init, by topo-tune,
// topo-calibrate and topo-report fit; never on a hot path.
#include "profile.h"

#include <math.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "profile_internal.h"

const char *const topo_profile_link_names[TOPO_LINK_COUNT] = {"nvlink", "pci", "net"};

/* ---------------------------------------------------------------------------------------------
 * Built-in defaults. Where every number comes from: docs/profile-format.md, "Built-in defaults".
 * H200 and H100: 18 NVLink 4 links to NVSwitch 3 (same fabric); link and protocol figures from the
 * CUDA-graph sweep on 2 x H200 (tests/data/nccl-2.28.9-2xh200/graph-sweep.txt) and the published
 * limits (shared/reference/tuner-anchors.md section 5). A100: 12 NVLink 3 links, NCCL's own
 * per-link figure and constants (not measured by us).
 */

typedef struct builtin_profile {
  const char *gpu;
  topo_profile_link link[TOPO_LINK_COUNT];
  topo_profile_proto proto[NCCL_NUM_PROTOCOLS];
  double launch_us;
  int max_channels;
  int nvls;
} builtin_profile;

/* H200 and H100 share the NVLink 4 / NVSwitch fabric (only their memory differs): one set of
 * numbers, measured on 2 x H200 (graph-sweep.txt; docs/profile-format.md). */
#define TOPO_HOPPER_NVLINK4(name)                                   \
  {                                                                 \
    .gpu = name,                                                    \
    .link = {{.bw_gbs = 370.0, .lat_us = 0.6},                      \
             {.bw_gbs = 50.0, .lat_us = 1.0},                       \
             {.bw_gbs = 45.0, .lat_us = 5.0}},                      \
    .proto = {{.bw_eff = 0.333, .lat_us = 0.0, .ch_bw_gbs = 5.2},   \
              {.bw_eff = 0.825, .lat_us = 4.0, .ch_bw_gbs = 16.0},  \
              {.bw_eff = 0.888, .lat_us = 5.7, .ch_bw_gbs = 20.9}}, \
    .launch_us = 5.7, .max_channels = 24, .nvls = -1                \
  }
static const builtin_profile builtins[] = {
    TOPO_HOPPER_NVLINK4("H200"),
    TOPO_HOPPER_NVLINK4("H100"),
    {.gpu = "A100",
     .link = {{.bw_gbs = 240.0, .lat_us = 0.6},
              {.bw_gbs = 24.0, .lat_us = 1.0},
              {.bw_gbs = 23.0, .lat_us = 5.0}},
     .proto = {{.bw_eff = 0.365, .lat_us = 0.0, .ch_bw_gbs = 5.0},
               {.bw_eff = 0.92, .lat_us = 4.0, .ch_bw_gbs = 20.0},
               {.bw_eff = 0.95, .lat_us = 5.7, .ch_bw_gbs = 20.0}},
     .launch_us = 6.5,
     .max_channels = 24,
     .nvls = 0},
};
#define NBUILTINS ((int)(sizeof builtins / sizeof builtins[0]))

/* "generic": for a GPU none of the above describes. Not a measurement of anything: NCCL's own
 * per-link figures and constants (the A100 set, the oldest fabric NCCL 2.28 tunes for), channel
 * count unknown, NVLS unknown. Not listed by topo_profile_builtin_name (it is no GPU model). */
static const builtin_profile generic_builtin = {
    .gpu = "generic",
    .link = {{.bw_gbs = 240.0, .lat_us = 0.6},
             {.bw_gbs = 24.0, .lat_us = 1.0},
             {.bw_gbs = 23.0, .lat_us = 5.0}},
    .proto = {{.bw_eff = 0.365, .lat_us = 0.0, .ch_bw_gbs = 5.0},
              {.bw_eff = 0.92, .lat_us = 4.0, .ch_bw_gbs = 20.0},
              {.bw_eff = 0.95, .lat_us = 5.7, .ch_bw_gbs = 20.0}},
    .launch_us = 6.5,
    .max_channels = 0,
    .nvls = -1};

const char *topo_profile_builtin_name(int i) {
  return i >= 0 && i < NBUILTINS ? builtins[i].gpu : NULL;
}

topo_status topo_profile_builtin(const char *gpu, topo_profile *out) {
  if (!out) return TOPO_ERR_INVALID;
  int idx = 0;
  topo_status st = TOPO_OK;
  if (gpu && *gpu && strcmp(gpu, "*") != 0) {
    idx = -1;
    for (int i = 0; i < NBUILTINS; i++)
      if (strcasecmp(gpu, builtins[i].gpu) == 0) idx = i;
    if (idx < 0) {
      idx = 0;
      st = TOPO_ERR_INVALID;
    }
  }
  const builtin_profile *b = &builtins[idx];
  if (gpu && strcasecmp(gpu, generic_builtin.gpu) == 0) {
    b = &generic_builtin;
    st = TOPO_OK;
  }
  memset(out, 0, sizeof *out);
  snprintf(out->key.gpu, sizeof out->key.gpu, "%s", b->gpu);
  memcpy(out->link, b->link, sizeof out->link);
  memcpy(out->proto, b->proto, sizeof out->proto);
  out->launch_us = b->launch_us;
  out->max_channels = b->max_channels;
  out->nvls = b->nvls;
  snprintf(out->source, sizeof out->source, "builtin:%s", b->gpu);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Terms and points
 */

int topo_profile_term_valid(const topo_profile_term *t) {
  return t->coll >= 0 && t->coll < NCCL_NUM_FUNCTIONS && t->algo >= 0 &&
         t->algo < NCCL_NUM_ALGORITHMS && t->proto >= 0 && t->proto < NCCL_NUM_PROTOCOLS &&
         t->nchannels >= 0 && t->nchannels <= 64 && t->lat_us >= 0 &&
         t->lat_us <= TOPO_PROFILE_MAX_US && t->bw_gbs >= TOPO_PROFILE_MIN_BW &&
         t->bw_gbs <= TOPO_PROFILE_MAX_BW && t->min_bytes <= t->max_bytes && t->rel_err >= 0 &&
         t->rel_err <= TOPO_PROFILE_MAX_US && t->npoints >= 0 && t->npoints <= 1000000000;
}

/* The order of terms and points alike: (coll, algo, proto, nchannels, bytes), <0 / 0 / >0 as a
 * sorts before / with / after the key. Terms sort by min_bytes; the ranges of one key are
 * disjoint, so the first term of a key whose min_bytes exceeds `bytes` follows the one covering
 * it. */
static int key_cmp(int a_coll, int a_algo, int a_proto, int a_nch, uint64_t a_bytes, int coll,
                   int algo, int proto, int nch, uint64_t bytes) {
  int d[4] = {a_coll - coll, a_algo - algo, a_proto - proto, a_nch - nch};
  for (int i = 0; i < 4; i++)
    if (d[i]) return d[i] < 0 ? -1 : 1;
  return a_bytes < bytes ? -1 : a_bytes > bytes ? 1 : 0;
}

static int term_cmp(const topo_profile_term *a, int coll, int algo, int proto, int nch,
                    uint64_t bytes) {
  return key_cmp(a->coll, a->algo, a->proto, a->nchannels, a->min_bytes, coll, algo, proto, nch,
                 bytes);
}

/* Insert `elem` at index i of a sorted array of n elements of `size` bytes, growing it (doubling,
 * from `first`) when full. */
static topo_status insert_at(void **arr, int *n, int *cap, size_t size, int first, int i,
                             const void *elem) {
  if (*n >= *cap) {
    int grown_cap = *cap ? 2 * *cap : first;
    void *grown = topo_realloc(*arr, (size_t)grown_cap * size);
    if (!grown) return TOPO_ERR_NOMEM;
    *arr = grown;
    *cap = grown_cap;
  }
  char *base = *arr;
  memmove(base + (size_t)(i + 1) * size, base + (size_t)i * size, (size_t)(*n - i) * size);
  memcpy(base + (size_t)i * size, elem, size);
  (*n)++;
  return TOPO_OK;
}

/* The search key of term_lower_bound / point_lower_bound. */
typedef struct sort_key {
  int coll, algo, proto, nch;
  uint64_t bytes;
} sort_key;

/* Index of the first of n sorted elements (terms or points) not sorting before `k`. */
static int lower_bound(const void *base, size_t size, int n, const sort_key *k,
                       int (*cmp)(const void *, const sort_key *)) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (cmp((const char *)base + (size_t)mid * size, k) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int topo_profile_term_cmp(const topo_profile_term *a, const topo_profile_term *b) {
  return term_cmp(a, b->coll, b->algo, b->proto, b->nchannels, b->min_bytes);
}

static int term_cmp_key(const void *a, const sort_key *k) {
  return term_cmp(a, k->coll, k->algo, k->proto, k->nch, k->bytes);
}

static int term_lower_bound(const topo_profile *p, int coll, int algo, int proto, int nch,
                            uint64_t bytes) {
  sort_key k = {coll, algo, proto, nch, bytes};
  return lower_bound(p->terms, sizeof *p->terms, p->nterms, &k, term_cmp_key);
}

int topo_profile_term_of_key(const topo_profile_term *t, int coll, int algo, int proto, int nch) {
  return t->coll == coll && t->algo == algo && t->proto == proto && t->nchannels == nch;
}

const topo_profile_term *topo_profile_find_term(const topo_profile *p, int coll, int algo,
                                                int proto, int nchannels) {
  if (!p || !p->terms || p->nterms <= 0) return NULL;
  int i = term_lower_bound(p, coll, algo, proto, nchannels, 0);
  return i < p->nterms && topo_profile_term_of_key(&p->terms[i], coll, algo, proto, nchannels)
             ? &p->terms[i]
             : NULL;
}

const topo_profile_term *topo_profile_find_term_at(const topo_profile *p, int coll, int algo,
                                                   int proto, int nchannels, uint64_t bytes) {
  if (!p || !p->terms || p->nterms <= 0) return NULL;
  /* The last term of the key starting at or below `bytes`. */
  int i = term_lower_bound(p, coll, algo, proto, nchannels, bytes);
  if (i < p->nterms && topo_profile_term_of_key(&p->terms[i], coll, algo, proto, nchannels) &&
      p->terms[i].min_bytes == bytes)
    return &p->terms[i];
  if (i == 0) return NULL;
  const topo_profile_term *t = &p->terms[i - 1];
  return topo_profile_term_of_key(t, coll, algo, proto, nchannels) && t->min_bytes <= bytes &&
                 bytes <= t->max_bytes
             ? t
             : NULL;
}

topo_status topo_profile_set_term(topo_profile *p, const topo_profile_term *t) {
  if (!p || !t || !topo_profile_term_valid(t)) return TOPO_ERR_INVALID;
  int i = term_lower_bound(p, t->coll, t->algo, t->proto, t->nchannels, t->min_bytes);
  if (i < p->nterms &&
      topo_profile_term_of_key(&p->terms[i], t->coll, t->algo, t->proto, t->nchannels) &&
      p->terms[i].min_bytes == t->min_bytes && p->terms[i].max_bytes == t->max_bytes) {
    p->terms[i] = *t;
    return TOPO_OK;
  }
  /* Disjoint ranges per key: the neighbours on either side must not reach into [min, max]. */
  if (i < p->nterms &&
      topo_profile_term_of_key(&p->terms[i], t->coll, t->algo, t->proto, t->nchannels) &&
      p->terms[i].min_bytes <= t->max_bytes)
    return TOPO_ERR_INVALID;
  if (i > 0 &&
      topo_profile_term_of_key(&p->terms[i - 1], t->coll, t->algo, t->proto, t->nchannels) &&
      p->terms[i - 1].max_bytes >= t->min_bytes)
    return TOPO_ERR_INVALID;
  if (p->nterms >= TOPO_PROFILE_MAX_TERMS) return TOPO_ERR_INVALID;
  return insert_at((void **)&p->terms, &p->nterms, &p->cap_terms, sizeof *p->terms, 16, i, t);
}

static int point_cmp(const topo_profile_point *a, int coll, int algo, int proto, int nch,
                     uint64_t bytes) {
  return key_cmp(a->coll, a->algo, a->proto, a->nchannels, a->bytes, coll, algo, proto, nch, bytes);
}

static int point_cmp_key(const void *a, const sort_key *k) {
  return point_cmp(a, k->coll, k->algo, k->proto, k->nch, k->bytes);
}

static int point_lower_bound(const topo_profile *p, int coll, int algo, int proto, int nch,
                             uint64_t bytes) {
  sort_key k = {coll, algo, proto, nch, bytes};
  return lower_bound(p->points, sizeof *p->points, p->npoints, &k, point_cmp_key);
}

topo_status topo_profile_add_point(topo_profile *p, const topo_profile_point *pt) {
  if (!p || !pt || pt->coll < 0 || pt->coll >= NCCL_NUM_FUNCTIONS || pt->algo < 0 ||
      pt->algo >= NCCL_NUM_ALGORITHMS || pt->proto < 0 || pt->proto >= NCCL_NUM_PROTOCOLS ||
      pt->nchannels < 0 || pt->nchannels > 64 || !(pt->median_us >= TOPO_PROFILE_MIN_US) ||
      !(pt->median_us <= TOPO_PROFILE_MAX_US) || !(pt->noise_us >= 0) ||
      !(pt->noise_us <= TOPO_PROFILE_MAX_US))
    return TOPO_ERR_INVALID;
  int i = point_lower_bound(p, pt->coll, pt->algo, pt->proto, pt->nchannels, pt->bytes);
  if (i < p->npoints &&
      point_cmp(&p->points[i], pt->coll, pt->algo, pt->proto, pt->nchannels, pt->bytes) == 0) {
    p->points[i] = *pt;
    return TOPO_OK;
  }
  if (p->npoints >= TOPO_PROFILE_MAX_TERMS) return TOPO_ERR_INVALID;
  topo_profile_point q = *pt;
  q.is_default = pt->is_default < 0 ? -1 : pt->is_default ? 1 : 0;
  return insert_at((void **)&p->points, &p->npoints, &p->cap_points, sizeof *p->points, 64, i, &q);
}

const topo_profile_point *topo_profile_find_points(const topo_profile *p, int coll, int algo,
                                                   int proto, int nchannels, int *n) {
  *n = 0;
  if (!p || !p->points || p->npoints <= 0) return NULL;
  int i = point_lower_bound(p, coll, algo, proto, nchannels, 0);
  int j = i;
  while (j < p->npoints && point_cmp(&p->points[j], coll, algo, proto, nchannels, 0) >= 0 &&
         p->points[j].coll == coll && p->points[j].algo == algo && p->points[j].proto == proto &&
         p->points[j].nchannels == nchannels)
    j++;
  *n = j - i;
  return j > i ? &p->points[i] : NULL;
}

int topo_profile_points_at(const topo_profile_point *pt, int n, double bytes, double *median,
                           double *noise) {
  if (n <= 0 || bytes < (double)pt[0].bytes || bytes > (double)pt[n - 1].bytes) return 0;
  int i = 0;
  while (i + 1 < n && (double)pt[i + 1].bytes < bytes) i++;
  if ((double)pt[i].bytes == bytes || i + 1 >= n) {
    *median = pt[i].median_us;
    *noise = pt[i].noise_us;
    return 1;
  }
  double x0 = (double)pt[i].bytes, x1 = (double)pt[i + 1].bytes, f = (bytes - x0) / (x1 - x0);
  *median = pt[i].median_us + f * (pt[i + 1].median_us - pt[i].median_us);
  *noise = pt[i].noise_us + f * (pt[i + 1].noise_us - pt[i].noise_us);
  return 1;
}

void topo_profile_free(topo_profile *p) {
  if (!p) return;
  topo_free(p->terms);
  p->terms = NULL;
  p->nterms = p->cap_terms = 0;
  topo_free(p->points);
  p->points = NULL;
  p->npoints = p->cap_points = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Section keys
 */

int topo_profile_gpu_is_any(const char *g) { return !g[0] || strcmp(g, "*") == 0; }

int topo_profile_key_score(const topo_profile_key *have, const topo_profile_key *want) {
  static const topo_profile_key any;
  if (!have) return -1;
  if (!want) want = &any;
  int score = 0;
  if (!topo_profile_gpu_is_any(have->gpu) && !topo_profile_gpu_is_any(want->gpu)) {
    if (strcasecmp(have->gpu, want->gpu) != 0) return -1;
    score += 8;
  }
  if (have->nnodes > 0 && want->nnodes > 0) {
    if (have->nnodes != want->nnodes) return -1;
    score += 4;
  }
  if (have->nranks > 0 && want->nranks > 0) {
    if (have->nranks != want->nranks) return -1;
    score += 2;
  }
  if (have->nccl_version > 0 && want->nccl_version > 0) {
    if (have->nccl_version != want->nccl_version) return -1;
    score += 1;
  }
  return score;
}
