// SPDX-License-Identifier: Apache-2.0
// Small shared pieces of topo-report: quantile estimator, NCCL names and nccl-tests factors, the
// NCCL kernel-name parser, the key map, number formatting. Pure functions; no global state.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "nccl_vocab.h"
#include "report.h"

#define HIST_BUCKETS (256 + 56 * 128)

static int hist_index(int64_t v) {
  if (v < 256) return v < 0 ? 0 : (int)v;
  int e = 63 - __builtin_clzll((unsigned long long)v);
  int sub = (int)((v >> (e - 7)) & 127);
  return 256 + (e - 8) * 128 + sub;
}

/* Midpoint of a histogram bucket. */
static int64_t hist_value(int i) {
  if (i < 256) return i;
  int e = (i - 256) / 128 + 8, sub = (i - 256) % 128;
  int64_t lo = (int64_t)(128 + sub) << (e - 7);
  return lo + ((int64_t)1 << (e - 7)) / 2;
}

void rp_quant_add(rp_quant *q, int64_t v) {
  if (q->n == 0 || v < q->min) q->min = v;
  if (q->n == 0 || v > q->max) q->max = v;
  q->sum += (double)v;
  if (q->n < RP_EXACT_SAMPLES) {
    uint64_t n = q->n; /* the buffer holds 16, then the next power of two: full when n is one */
    if (n == 0 || (q->exact && n >= 16 && !(n & (n - 1)))) {
      int64_t *grown = topo_realloc(q->exact, (n ? 2 * n : 16) * sizeof *grown);
      if (!grown) topo_free(q->exact); /* exact quantiles lost, as when nothing was allocated */
      q->exact = grown;
    }
    if (q->exact) q->exact[q->n] = v;
  } else if (!q->hist) {
    q->hist = topo_calloc(HIST_BUCKETS, sizeof *q->hist);
    if (q->hist && q->exact)
      for (uint64_t i = 0; i < q->n; i++) q->hist[hist_index(q->exact[i])]++;
  }
  if (q->hist) q->hist[hist_index(v)]++;
  q->n++;
}

int rp_quant_is_exact(const rp_quant *q) { return q->n <= RP_EXACT_SAMPLES; }

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Nearest rank: the ceil(p*n)-th smallest sample (at least the first). */
int64_t rp_quant_get(const rp_quant *q, double p) {
  if (q->n == 0) return 0;
  uint64_t k = (uint64_t)ceil(p * (double)q->n);
  if (k < 1) k = 1;
  if (k > q->n) k = q->n;
  if (k == q->n) return q->max;
  if (k == 1 && p <= 0) return q->min;
  if (q->n <= RP_EXACT_SAMPLES && q->exact) {
    int64_t *copy = topo_malloc(q->n * sizeof *copy);
    if (!copy) return q->min;
    memcpy(copy, q->exact, q->n * sizeof *copy);
    qsort(copy, q->n, sizeof *copy, cmp_i64);
    int64_t v = copy[k - 1];
    topo_free(copy);
    return v;
  }
  if (!q->hist) return q->min;
  uint64_t seen = 0;
  for (int i = 0; i < HIST_BUCKETS; i++) {
    seen += q->hist[i];
    if (seen >= k) {
      int64_t v = hist_value(i);
      return v < q->min ? q->min : v > q->max ? q->max : v;
    }
  }
  return q->max;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int rp_map_find(const rp_map *m, uint64_t key, uint32_t *val) {
  if (!m->cap) return 0;
  for (size_t i = mix64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->val[i]) return 0;
    if (m->key[i] == key) {
      *val = m->val[i] - 1;
      return 1;
    }
  }
}

static void map_put(rp_map *m, uint64_t key, uint32_t stored) {
  size_t i = mix64(key) & (m->cap - 1);
  while (m->val[i]) i = (i + 1) & (m->cap - 1);
  m->key[i] = key;
  m->val[i] = stored;
}

int rp_map_add(rp_map *m, uint64_t key, uint32_t val) {
  if (2 * (m->n + 1) > m->cap) { /* at most half full */
    size_t cap = m->cap ? 2 * m->cap : 64;
    rp_map old = *m;
    m->key = topo_malloc(cap * sizeof *m->key);
    m->val = topo_calloc(cap, sizeof *m->val);
    if (!m->key || !m->val) {
      topo_free(m->key), topo_free(m->val);
      *m = old;
      return 0;
    }
    m->cap = cap;
    for (size_t i = 0; i < old.cap; i++)
      if (old.val[i]) map_put(m, old.key[i], old.val[i]);
    topo_free(old.key), topo_free(old.val);
  }
  map_put(m, key, val + 1);
  m->n++;
  return 1;
}

int rp_map_put(rp_map *m, uint64_t key, uint32_t val) {
  if (m->cap)
    for (size_t i = mix64(key) & (m->cap - 1); m->val[i]; i = (i + 1) & (m->cap - 1))
      if (m->key[i] == key) {
        m->val[i] = val + 1;
        return 1;
      }
  return rp_map_add(m, key, val);
}

void rp_map_free(rp_map *m) {
  topo_free(m->key);
  topo_free(m->val);
  memset(m, 0, sizeof *m);
}

void rp_quant_free(rp_quant *q) {
  topo_free(q->exact);
  topo_free(q->hist);
  q->exact = NULL;
  q->hist = NULL;
}

uint64_t rp_coll_size(int func, uint64_t bytes, int nranks) {
  return topo_nccl_tests_bytes(func, bytes, nranks);
}

double rp_busbw_factor(int func, int nranks) { return topo_nccl_busbw_factor(func, nranks); }

const char *rp_func_name(int func) {
  return func >= 0 && func < TOPO_NCCL_NUM_FUNCS ? topo_nccl_func_name(func, TOPO_NCCL_EVENT)
                                                 : "Other";
}

const char *rp_skew_name(int func) {
  return func == ncclFuncSend ? "Send/Recv" : rp_func_name(func);
}

const char *rp_algo_name(int algo) {
  return algo >= 0 && algo < NCCL_NUM_ALGORITHMS ? topo_nccl_algo_name(algo, TOPO_NCCL_TABLE) : "?";
}

const char *rp_proto_name(int proto) {
  return proto >= 0 && proto < NCCL_NUM_PROTOCOLS ? topo_nccl_proto_name(proto, TOPO_NCCL_TABLE)
                                                  : "?";
}

/* Names NCCL gives its kernels: ncclDevKernel_AllReduce_Sum_f32_RING_LL(...) (2.19-2.30),
 * ncclDevKernel_AllReduce_Sum_f32(...) (2.31's compact names), ncclKernel_AllReduce_RING_LL_Sum_
 * float(...) (older), ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32 (symmetric kernels),
 * ncclDevKernel_SendRecv, nccl*. The name up to its parameter list is read as '_'-separated
 * words; the first that NCCL's vocabulary (common/nccl_vocab.h) knows as a collective is its
 * function. Algorithm and protocol words are not read: a suffix names the kernel's entry point,
 * which dispatches at run time and was wrong for some kernels (NVIDIA/nccl#2196), and a
 * symmetric kernel's variant ("LL", "LD") names no NCCL protocol. */
int rp_nccl_kernel_parse(const char *name, int *func) {
  *func = -1;
  if (strncmp(name, "nccl", 4) != 0 && !strstr(name, "ncclKernel") &&
      !strstr(name, "ncclDevKernel"))
    return 0;
  char base[256];
  size_t len = strcspn(name, "(");
  if (len >= sizeof base) len = sizeof base - 1;
  memcpy(base, name, len);
  base[len] = 0;
  char *word[32];
  int n = 0;
  for (char *save = NULL, *w = strtok_r(base, "_", &save); w && n < 32;
       w = strtok_r(NULL, "_", &save))
    word[n++] = w;
  for (int i = 0; i < n && *func < 0; i++) *func = topo_nccl_func_from_name(word[i]);
  return 1;
}

void rp_row_choice_label(const rp_row *w, char *buf, size_t len) {
  int al, pr;
  double share;
  rp_row_top_choice(w, &al, &pr, &share);
  if (al < 0 && pr < 0 && w->sym * 2 > w->calls) /* mostly symmetric kernels */
    snprintf(buf, len, "sym%s%s", w->variants == 1 ? " " : "", w->variants == 1 ? w->variant : "");
  else if (al < 0 && pr < 0) snprintf(buf, len, "?");
  else snprintf(buf, len, "%s/%s", rp_algo_name(al), rp_proto_name(pr));
}

double rp_ratio(int64_t num, int64_t den) { return den > 0 ? (double)num / (double)den : 0.0; }

double rp_row_mean_ns(const rp_row *row) {
  return row->time.n ? row->time.sum / (double)row->time.n : 0.0;
}

double rp_row_algbw(const rp_row *row) {
  double t = rp_row_mean_ns(row);
  if (t <= 0 || !row->timed) return 0.0;
  return ((double)row->timed_size_sum / (double)row->timed) / t; /* bytes/ns = GB/s */
}

double rp_row_busbw(const rp_row *row) {
  return rp_row_algbw(row) * rp_busbw_factor(row->func, row->nranks);
}

int rp_row_size_known(const rp_row *row) { return row->bucket != RP_BUCKET_UNKNOWN; }
int rp_row_ranks_known(const rp_row *row) { return row->nranks > 0; }
int rp_row_algbw_known(const rp_row *row) {
  return row->timed > 0 && rp_row_size_known(row) && row->time.sum > 0;
}
int rp_row_busbw_known(const rp_row *row) {
  return rp_row_algbw_known(row) && rp_row_ranks_known(row);
}

double rp_row_busbw_xfer(const rp_row *row) {
  if (!row->xfer.n || row->xfer.sum <= 0) return 0.0;
  double size = (double)row->xfer_size_sum / (double)row->xfer.n,
         t = row->xfer.sum / (double)row->xfer.n;
  return size / t * rp_busbw_factor(row->func, row->nranks);
}

void rp_row_top_choice(const rp_row *row, int *algo, int *proto, double *share) {
  uint64_t best = 0, total = 0;
  *algo = *proto = -1;
  for (int a = 0; a < 8; a++)
    for (int p = 0; p < 4; p++) {
      total += row->algo_proto[a][p];
      if (row->algo_proto[a][p] > best) {
        best = row->algo_proto[a][p];
        *algo = a == 7 ? -1 : a;
        *proto = p == 3 ? -1 : p;
      }
    }
  *share = total ? (double)best / (double)total : 0.0;
}

void rp_fmt_bytes(uint64_t v, char *buf, size_t len) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double d = (double)v;
  while (d >= 1024 && u < 4) {
    d /= 1024;
    u++;
  }
  if (u == 0) snprintf(buf, len, "%" PRIu64 " B", v);
  else snprintf(buf, len, d == floor(d) ? "%.0f %s" : "%.1f %s", d, unit[u]);
}

void rp_bucket_label(int bucket, char *buf, size_t len) {
  if (bucket == RP_BUCKET_UNKNOWN) {
    snprintf(buf, len, "?");
    return;
  }
  if (bucket < 0) {
    snprintf(buf, len, "0 B");
    return;
  }
  char lo[32];
  rp_fmt_bytes((uint64_t)1 << bucket, lo, sizeof lo);
  snprintf(buf, len, "%s+", lo);
}

void rp_fmt_ns(int64_t ns, char *buf, size_t len) {
  double a = fabs((double)ns);
  if (a < 1e3) snprintf(buf, len, "%" PRId64 " ns", ns);
  else if (a < 1e6) snprintf(buf, len, "%.2f us", (double)ns / 1e3);
  else if (a < 1e9) snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
  else snprintf(buf, len, "%.3f s", (double)ns / 1e9);
}

void rp_fmt_utc(int64_t ns, char *buf, size_t len) {
  time_t s = (time_t)(ns / 1000000000LL);
  struct tm tm;
  if (gmtime_r(&s, &tm)) strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
  else snprintf(buf, len, "?");
}

const char *rp_step_window_text(const rp_report *r, char *buf, size_t len) {
  if (r->step_window != RP_WINDOW_COMPLETE_STEPS) {
    snprintf(buf, len,
             "all (the default; --steps complete keeps the complete profiler steps only)");
    return buf;
  }
  int cut = 0, same = 1, rest = 0;
  const rp_rank *ref = NULL;
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    if (!k->win) {
      rest++;
      continue;
    }
    if (ref && (k->win_first != ref->win_first || k->win_last != ref->win_last ||
                k->win_dropped != ref->win_dropped))
      same = 0;
    if (!ref) ref = k;
    cut++;
  }
  size_t o = (size_t)snprintf(buf, len, "the complete profiler steps only (--steps complete): ");
  if (o >= len) return buf;
  if (!cut)
    o += (size_t)snprintf(buf + o, len - o, "no rank has two ProfilerSteps, so all events count");
  else if (same)
    o +=
        (size_t)snprintf(buf + o, len - o,
                         "%d rank%s from ProfilerStep#%" PRIu64 " to the end of #%" PRIu64
                         " (#%" PRIu64 ", the last, left out)",
                         cut, cut == 1 ? "" : "s", ref->win_first, ref->win_last, ref->win_dropped);
  else
    o += (size_t)snprintf(buf + o, len - o,
                          "%d ranks from their first ProfilerStep to the end of the one "
                          "before their last (steps per rank in --json)",
                          cut);
  if (cut && rest && o < len)
    snprintf(buf + o, len - o, "; %d rank%s without two ProfilerSteps: all events", rest,
             rest == 1 ? "" : "s");
  return buf;
}
