// SPDX-License-Identifier: Apache-2.0
// Kineto steps: ProfilerStep ranges, and each GPU event attributed to the step whose CPU range
// holds the call that launched it (HTA's rule, by correlation id; kineto_ctx.h, kstep), then
// the steps handed to the sink at the end of the file (kn_emit_steps). Called by kineto_event.c
// (calls and GPU events as they come) and kineto.c (the end of the file).
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "jscan.h"
#include "kineto_ctx.h"
#include "log.h"
#include "report.h"
#include "report_inputs.h"

/* Room for one more of n elements in *v (capacity *cap): the block, or NULL (out of memory). */
void *kn_grow(void *v, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return v;
  size_t c = *cap ? *cap * 2 : 1024;
  void *p = topo_realloc(v, c * elem);
  if (p) *cap = c;
  return p;
}

/* An unlinked temporary file under $TMPDIR (else /tmp): its descriptor, or -1. */
int kn_temp_fd(void) {
  const char *dir = getenv("TMPDIR");
  char path[4096];
  if (snprintf(path, sizeof path, "%s/topo-report-XXXXXX", dir && *dir ? dir : "/tmp") >=
      (int)sizeof path) /* a TMPDIR too long to hold whole: /tmp, never a cut path */
    snprintf(path, sizeof path, "/tmp/topo-report-XXXXXX");
  int fd = mkstemp(path);
  if (fd >= 0) unlink(path); /* nothing is left behind, whatever happens to the process */
  return fd;
}

/* All of `len` bytes to fd; 0 on a failure. */
static int write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return 0;
    p += w, len -= (size_t)w;
  }
  return 1;
}

static int step_before(const kstep *steps, const size_t *order, size_t n, int64_t ts, size_t *at);

/* A call at `ts` launched GPU work over [start, stop): into the CPU step read so far that holds
 * ts, else to wait for the end of the file. */
static void pair_add(rp_kineto *k, int64_t ts, int64_t start, int64_t stop) {
  size_t at;
  if (!k->cpu_unordered && step_before(k->steps, k->cpu_order, k->ncpu_order, ts, &at)) {
    kstep *st = &k->steps[k->cpu_order[at]];
    if (ts <= st->stop) {
      if (start < st->lo) st->lo = start;
      if (stop > st->hi) st->hi = stop;
      return;
    }
  }
  if (k->pairs_fd < 0 && !k->pairs_written && !k->npairs) k->pairs_fd = kn_temp_fd();
  size_t cap = k->pairs_fd >= 0 ? PAIRS_BUF : PAIRS_MAX;
  if (k->npairs == cap && k->pairs_fd >= 0) {
    if (write_all(k->pairs_fd, k->pairs, k->npairs * sizeof *k->pairs)) {
      k->pairs_written += k->npairs;
      k->npairs = 0;
    } else { /* the file failed: what it holds is lost, the rest stays in memory */
      close(k->pairs_fd);
      k->pairs_fd = -1;
      k->pairs_written = 0;
      k->pairs_full = 1;
      cap = PAIRS_MAX;
    }
  }
  if (k->npairs >= cap) {
    k->pairs_full = 1;
    return;
  }
  kpair *v = kn_grow(k->pairs, &k->cap_pairs, k->npairs, sizeof *v);
  if (!v) {
    k->pairs_full = 1;
    return;
  }
  k->pairs = v;
  v[k->npairs++] = (kpair){ts, start, stop};
}

static int corr_tables(rp_kineto *k) {
  if (k->ltab) return 1;
  k->ltab = topo_calloc(CORR_SLOTS, sizeof *k->ltab); /* zero pages: untouched until used */
  k->gtab = topo_calloc(CORR_SLOTS, sizeof *k->gtab);
  if (!k->ltab || !k->gtab) {
    topo_free(k->ltab), topo_free(k->gtab);
    k->ltab = NULL, k->gtab = NULL;
    return 0;
  }
  return 1;
}

/* A runtime or driver call with a correlation id: its GPU event may be waiting already. */
void kn_corr_call(rp_kineto *k, int64_t corr, int64_t ts) {
  if (!corr_tables(k)) return;
  size_t slot = (size_t)corr & (CORR_SLOTS - 1);
  corr_gpu *g = &k->gtab[slot];
  if (g->corr == corr + 1) {
    pair_add(k, ts, g->start, g->stop);
    g->corr = 0;
  }
  k->ltab[slot].corr = corr + 1;
  k->ltab[slot].ts = ts;
}

/* A GPU event with a correlation id: its call, or it waits for it. */
void kn_corr_gpu_event(rp_kineto *k, int64_t corr, int64_t start, int64_t stop) {
  if (!corr_tables(k)) return;
  size_t slot = (size_t)corr & (CORR_SLOTS - 1);
  if (k->ltab[slot].corr == corr + 1) {
    pair_add(k, k->ltab[slot].ts, start, stop); /* one call, possibly several GPU events (graphs) */
    return;
  }
  k->gtab[slot].corr = corr + 1;
  k->gtab[slot].start = start;
  k->gtab[slot].stop = stop;
}

/* The last of the n steps (indices in `order`, by start) with start <= ts: 1 and *at, or 0. */
static int step_before(const kstep *steps, const size_t *order, size_t n, int64_t ts, size_t *at) {
  size_t l = 0, r = n;
  while (l < r) {
    size_t m = l + (r - l) / 2;
    if (steps[order[m]].start <= ts) l = m + 1;
    else r = m;
  }
  if (!l) return 0;
  *at = l - 1;
  return 1;
}

/* Widen the GPU windows [lo, hi) of the n CPU steps by the pairs whose call lies in them. */
static void pairs_into_steps(const kpair *p, size_t np, const kstep *cpu, const size_t *order,
                             size_t n, int64_t *lo, int64_t *hi) {
  for (size_t i = 0; i < np; i++) {
    size_t at;
    if (step_before(cpu, order, n, p[i].ts, &at) && p[i].ts <= cpu[at].stop) {
      if (p[i].start < lo[at]) lo[at] = p[i].start;
      if (p[i].stop > hi[at]) hi[at] = p[i].stop;
    }
  }
}

static int cmp_kstep(const void *a, const void *b) {
  const kstep *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* GPU-projected steps sorted by (value, file order); reach = the longest 2 x length so far in
 * the run of its value, so the first sane twin of a CPU step is found by two binary searches. */
typedef struct gpu_twin {
  uint64_t value;
  size_t order;
  int64_t start, stop, reach;
} gpu_twin;

static int cmp_twin(const void *a, const void *b) {
  const gpu_twin *x = a, *y = b;
  if (x->value != y->value) return x->value < y->value ? -1 : 1;
  return (x->order > y->order) - (x->order < y->order);
}

/* The first GPU-projected step numbered `value`, in file order, with 2 x its length >= len;
 * NULL when none. */
static const gpu_twin *twin_of(const gpu_twin *t, size_t n, uint64_t value, int64_t len) {
  size_t lo = 0, hi = n;
  while (lo < hi) { /* the value's run starts at lo */
    size_t m = lo + (hi - lo) / 2;
    if (t[m].value < value) lo = m + 1;
    else hi = m;
  }
  hi = n;
  while (lo < hi) { /* ... and its first entry reaching len (reach grows along the run) */
    size_t m = lo + (hi - lo) / 2;
    if (t[m].value == value && t[m].reach < len) lo = m + 1;
    else hi = m;
  }
  return lo < n && t[lo].value == value ? &t[lo] : NULL;
}

/* The steps' GPU windows (docs/metrics.md, Steps): for each CPU ProfilerStep range, the first
 * start to the last stop of the GPU events whose launch lies inside it (correlation ids); when
 * none matched, the GPU-projected range of the same step if it is sane (at least half the CPU
 * range long: Kineto projects only the kernels launched directly under the step, ~60 us of a
 * 20 ms step in PyTorch 2.11), else the CPU range. Files with only GPU-projected ranges use them. */
void kn_emit_steps(rp_kineto *k, rp_source *s, const rp_sink *sink) {
  size_t ncpu = 0;
  for (size_t i = 0; i < k->nsteps; i++) ncpu += !k->steps[i].gpu;
  if (!ncpu) {
    for (size_t i = 0; i < k->nsteps; i++)
      sink->step(sink->ctx, s->index, k->steps[i].start + k->base_ns, k->steps[i].stop + k->base_ns,
                 k->steps[i].value);
    return;
  }
  size_t ngpu = k->nsteps - ncpu;
  kstep *cpu = topo_malloc(ncpu * sizeof *cpu);
  size_t *order = topo_malloc(ncpu * sizeof *order);
  int64_t *lo = topo_malloc(ncpu * sizeof *lo), *hi = topo_malloc(ncpu * sizeof *hi);
  gpu_twin *twin = topo_malloc((ngpu ? ngpu : 1) * sizeof *twin);
  if (!cpu || !order || !lo || !hi || !twin) {
    topo_free(cpu), topo_free(order), topo_free(lo), topo_free(hi), topo_free(twin);
    return;
  }
  for (size_t i = 0, g = 0; i < k->nsteps; i++)
    if (k->steps[i].gpu)
      twin[g] = (gpu_twin){k->steps[i].value, g, k->steps[i].start, k->steps[i].stop, 0}, g++;
  qsort(twin, ngpu, sizeof *twin, cmp_twin);
  for (size_t g = 0; g < ngpu; g++) {
    twin[g].reach = 2 * (twin[g].stop - twin[g].start);
    if (g && twin[g - 1].value == twin[g].value && twin[g - 1].reach > twin[g].reach)
      twin[g].reach = twin[g - 1].reach;
  }
  size_t n = 0;
  for (size_t i = 0; i < k->nsteps; i++)
    if (!k->steps[i].gpu) cpu[n++] = k->steps[i];
  qsort(cpu, n, sizeof *cpu, cmp_kstep);
  for (size_t i = 0; i < n; i++) lo[i] = cpu[i].lo, hi[i] = cpu[i].hi, order[i] = i;
  /* the pairs that waited, from the file and then from memory: each into the step whose CPU range
   * holds its call */
  if (k->pairs_fd >= 0 && k->pairs_written && lseek(k->pairs_fd, 0, SEEK_SET) == 0) {
    kpair *chunk = topo_malloc(PAIRS_BUF * sizeof *chunk);
    uint64_t left = chunk ? k->pairs_written : 0;
    while (left) {
      size_t want = left < PAIRS_BUF ? (size_t)left : PAIRS_BUF;
      ssize_t r = read(k->pairs_fd, chunk, want * sizeof *chunk);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0 || (size_t)r % sizeof *chunk) break;
      pairs_into_steps(chunk, (size_t)r / sizeof *chunk, cpu, order, n, lo, hi);
      left -= (size_t)r / sizeof *chunk;
    }
    if (left) k->pairs_full = 1;
    topo_free(chunk);
  }
  pairs_into_steps(k->pairs, k->npairs, cpu, order, n, lo, hi);
  if (k->pairs_full && !k->quiet)
    TOPO_WARN(
        "%s: not every launch could be matched with its GPU events (no room for them); steps "
        "without a match use their GPU-projected or CPU ranges",
        k->path);
  for (size_t i = 0; i < n; i++) {
    int64_t a = cpu[i].start, b = cpu[i].stop;
    const gpu_twin *gs;
    if (hi[i] > lo[i]) a = lo[i], b = hi[i];
    else if ((gs = twin_of(twin, ngpu, cpu[i].value, b - a))) a = gs->start, b = gs->stop;
    sink->step(sink->ctx, s->index, a + k->base_ns, b + k->base_ns, cpu[i].value);
  }
  topo_free(cpu), topo_free(order), topo_free(lo), topo_free(hi), topo_free(twin);
}

/* The step attribution's tables and waiting pairs. */
void kn_corr_free(rp_kineto *k) {
  topo_free(k->ltab), topo_free(k->gtab), topo_free(k->pairs), topo_free(k->cpu_order);
  k->ltab = NULL, k->gtab = NULL, k->pairs = NULL, k->cpu_order = NULL;
  k->npairs = k->cap_pairs = k->ncpu_order = k->cap_cpu_order = 0;
  if (k->pairs_fd >= 0) close(k->pairs_fd);
  k->pairs_fd = -1;
  k->pairs_written = 0;
}
