// SPDX-License-Identifier: Apache-2.0
// The kernel-level analyses of one rank (kernels.h): classifies each Kineto event by HTA's name
// patterns, keeps the kernel table (one row per distinct name), feeds the temporal breakdown
// through a sweep of its own (ktime.c, HTA's classes, not topo's), hands GPU events to the
// per-stream analyses (idle.c, launch.c) and memcpy/memset to memcpy.c, and joins GPU events to
// their CPU calls by correlation id. Called by analyze.c in pass 2; results read by the renderers.
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "kernel_stats.h"

/* ---- HTA's name patterns (hta/common/types.py), written out */
static int starts(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

int rp_kernel_type(const char *n) {
  if (starts(n, "nccl") || starts(n, "hip") || starts(n, "hccl") || strstr(n, "ncclKernel"))
    return RP_K_COMM;
  if (starts(n, "Memcpy") || starts(n, "Memset") || starts(n, "hipMemcpy") ||
      starts(n, "hipMemset") || starts(n, "dma"))
    return RP_K_MEMORY;
  /* not computation: any of these (re.match, so each is anchored at the start of the name) */
  if (starts(n, "nccl") || strstr(n, "Memcpy") || strstr(n, "Memset") || strstr(n, "dma") ||
      strstr(n, "Sync") || starts(n, "Stream Wait Event") ||
      (starts(n, "cuda") && strstr(n + 4, "LaunchKernel")) || starts(n, "runFunction") ||
      starts(n, "hip") || starts(n, "job_exe") || starts(n, "packet") || starts(n, "pe_exe") ||
      starts(n, "cpum_exe_subgraph") || starts(n, "hccl") ||
      starts(n, "collective_subgraph_execution"))
    return RP_K_OTHER;
  return RP_K_COMPUTE;
}

const char *rp_ktype_name(int type) {
  static const char *names[] = {"communication", "memory", "computation", "other"};
  return type >= 0 && type < RP_K_TYPES ? names[type] : "?";
}

void rp_kernel_short_name(const char *name, char *out, size_t len) {
  /* drop "<...>" and "(...)" groups, keep the last space-separated word (HTA's shorten_name) */
  size_t n = 0;
  int angle = 0, paren = 0;
  if (!len) return;
  if (rp_kernel_type(name) == RP_K_MEMORY || (!strchr(name, '<') && !strchr(name, '('))) {
    snprintf(out, len, "%s", name);
    return;
  }
  for (const char *p = name; *p; p++) {
    if (p[0] == '-' && p[1] == '>') {
      p++;
      continue;
    }
    if (*p == '<') angle++;
    else if (*p == '>') angle -= angle > 0;
    else if (*p == '(') paren++;
    else if (*p == ')') paren -= paren > 0;
    else if (!angle && !paren) {
      if (*p == ' ') n = 0;
      else if (n + 1 < len) out[n++] = *p;
    }
  }
  out[n] = 0;
  if (!n) snprintf(out, len, "%s", name);
}

/* ---- the rank's streaming state */
typedef struct corr_slot {
  int64_t corr; /* -1: empty */
  rp_launch l;
} corr_slot;

struct rp_gpu_state {
  size_t window;
  /* kernel names -> index into g->kern (open addressing, power-of-two capacity) */
  uint32_t *name_slot; /* index + 1; 0 empty */
  size_t name_cap, kern_cap;
  /* CPU calls by correlation id, recent ones only */
  corr_slot *corr;
  size_t corr_cap, corr_n;
  int64_t gpu_corr_max; /* newest correlation id of a GPU event (-1: none yet) */
  /* per stream */
  rp_gstream_state **sstate;
  size_t streams_cap;
  rp_map stream_of; /* stream id -> index into g->streams */
  rp_mem_state *mem;
  rp_ktime *time;
};

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static uint64_t hash_i64(int64_t v) {
  uint64_t x = (uint64_t)v * 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}

rp_gpu *rp_gpu_new(const rp_step *steps, size_t nsteps, size_t reorder_window) {
  rp_gpu *g = topo_calloc(1, sizeof *g);
  struct rp_gpu_state *st = topo_calloc(1, sizeof *st);
  if (!g || !st) {
    topo_free(g);
    topo_free(st);
    return NULL;
  }
  g->st = st;
  g->first = INT64_MAX;
  g->last = INT64_MIN;
  st->window = reorder_window ? reorder_window : RP_GPU_REORDER;
  st->gpu_corr_max = -1;
  if (nsteps) {
    if (!(g->steps = topo_calloc(nsteps, sizeof *g->steps))) goto fail;
    for (size_t i = 0; i < nsteps; i++) {
      g->steps[i].start = steps[i].start;
      g->steps[i].stop = steps[i].stop;
      g->steps[i].value = steps[i].value;
    }
    g->nsteps = nsteps;
  }
  st->time = rp_ktime_new(2 * st->window, g->steps, g->nsteps);
  st->mem = rp_mem_state_new(st->window);
  if (!st->time || !st->mem) goto fail;
  return g;
fail:
  rp_gpu_free(g);
  return NULL;
}

static rp_kstat *kern_get(rp_gpu *g, const char *name) {
  struct rp_gpu_state *st = g->st;
  if (2 * (g->nkern + 1) > st->name_cap) {
    size_t cap = st->name_cap ? st->name_cap * 2 : 256;
    uint32_t *slot = topo_calloc(cap, sizeof *slot);
    if (!slot) return NULL;
    for (size_t i = 0; i < g->nkern; i++) {
      size_t j = hash_str(g->kern[i].name) & (cap - 1);
      while (slot[j]) j = (j + 1) & (cap - 1);
      slot[j] = (uint32_t)i + 1;
    }
    topo_free(st->name_slot);
    st->name_slot = slot;
    st->name_cap = cap;
  }
  size_t j = hash_str(name) & (st->name_cap - 1);
  while (st->name_slot[j]) {
    rp_kstat *k = &g->kern[st->name_slot[j] - 1];
    if (!strcmp(k->name, name)) return k;
    j = (j + 1) & (st->name_cap - 1);
  }
  if (g->nkern == st->kern_cap) {
    size_t cap = st->kern_cap ? st->kern_cap * 2 : 64;
    rp_kstat *v = topo_realloc(g->kern, cap * sizeof *v);
    if (!v) return NULL;
    g->kern = v;
    st->kern_cap = cap;
  }
  rp_kstat *k = &g->kern[g->nkern];
  memset(k, 0, sizeof *k);
  if (!(k->name = topo_strdup(name))) return NULL;
  k->type = rp_kernel_type(name);
  st->name_slot[j] = (uint32_t)++g->nkern;
  return k;
}

/* Count the event in its name's row; returns its type (-1: out of memory). */
static int kern_add(rp_gpu *g, const rp_kevent *e) {
  rp_kstat *k = kern_get(g, e->name);
  if (!k) {
    g->failed = 1;
    return -1;
  }
  if (!k->n || e->dur < k->min) k->min = e->dur;
  if (!k->n || e->dur > k->max) k->max = e->dur;
  k->n++;
  k->sum = rp_add_sat(k->sum, e->dur);
  double d = (double)e->dur - k->mean;
  k->mean += d / (double)k->n;
  k->m2 += d * ((double)e->dur - k->mean);
  g->type_time[k->type] = rp_add_sat(g->type_time[k->type], e->dur);
  g->type_n[k->type]++;
  return k->type;
}

/* ---- CPU calls by correlation id: entries more than RP_GPU_CORR_AGE ids behind the newest GPU
 * event are dropped when the table is rebuilt, so it holds the calls whose GPU work may still
 * come (all of them while no GPU event has come: a file that writes every call first). */
static int stale(const struct rp_gpu_state *st, int64_t corr) {
  return st->gpu_corr_max >= 0 && corr < st->gpu_corr_max - RP_GPU_CORR_AGE;
}

static int corr_rebuild(struct rp_gpu_state *st, size_t need) {
  size_t live = 0;
  for (size_t i = 0; i < st->corr_cap; i++)
    live += st->corr[i].corr >= 0 && !stale(st, st->corr[i].corr);
  size_t cap = 1024;
  while (cap < 4 * (live + need)) cap *= 2;
  corr_slot *v = topo_malloc(cap * sizeof *v);
  if (!v) return 0;
  for (size_t i = 0; i < cap; i++) v[i].corr = -1;
  for (size_t i = 0; i < st->corr_cap; i++) {
    const corr_slot *s = &st->corr[i];
    if (s->corr < 0 || stale(st, s->corr)) continue;
    size_t j = hash_i64(s->corr) & (cap - 1);
    while (v[j].corr >= 0) j = (j + 1) & (cap - 1);
    v[j] = *s;
  }
  topo_free(st->corr);
  st->corr = v;
  st->corr_cap = cap;
  st->corr_n = live;
  return 1;
}

static int is_launch_call(const char *n) {
  if (n[0] != 'c' && n[0] != 'h' && n[0] != 'r') return 0;
  static const char *names[] = {
      "cudaLaunchKernel",    "cudaLaunchKernelExC",
      "cuLaunchKernel",      "cuLaunchKernelEx",
      "cudaMemcpyAsync",     "cudaMemsetAsync",
      "hipLaunchKernel",     "hipExtModuleLaunchKernel",
      "hipMemsetAsync",      "hipMemcpyAsync",
      "hipMemcpyWithStream", "runFunction - job_prep_and_submit_for_execution"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(n, names[i])) return 1;
  return 0;
}

static void corr_put(rp_gpu *g, const rp_kevent *e) {
  struct rp_gpu_state *st = g->st;
  if (2 * (st->corr_n + 1) > st->corr_cap && !corr_rebuild(st, 1)) {
    g->failed = 1;
    return;
  }
  size_t j = hash_i64(e->corr) & (st->corr_cap - 1);
  while (st->corr[j].corr >= 0 && st->corr[j].corr != e->corr) j = (j + 1) & (st->corr_cap - 1);
  if (st->corr[j].corr < 0) st->corr_n++;
  st->corr[j].corr = e->corr;
  st->corr[j].l.start = e->start;
  st->corr[j].l.dur = e->dur;
  st->corr[j].l.is_launch = is_launch_call(e->name);
}

static const rp_launch *corr_find(void *ctx, int64_t corr) {
  struct rp_gpu_state *st = ctx;
  if (corr < 0 || !st->corr_cap) return NULL;
  size_t j = hash_i64(corr) & (st->corr_cap - 1);
  while (st->corr[j].corr >= 0) {
    if (st->corr[j].corr == corr) return &st->corr[j].l;
    j = (j + 1) & (st->corr_cap - 1);
  }
  return NULL;
}

/* ---- streams */
static size_t stream_index(rp_gpu *g, int64_t id) {
  struct rp_gpu_state *st = g->st;
  uint32_t at;
  if (rp_map_find(&st->stream_of, (uint64_t)id, &at)) return at;
  if (g->nstreams == st->streams_cap) {
    size_t cap = st->streams_cap ? st->streams_cap * 2 : 8;
    rp_gstream *v = topo_realloc(g->streams, cap * sizeof *v);
    if (v) g->streams = v;
    rp_gstream_state **s = v ? topo_realloc(st->sstate, cap * sizeof *s) : NULL;
    if (!s) return (size_t)-1;
    st->sstate = s;
    st->streams_cap = cap;
  }
  size_t i = g->nstreams;
  memset(&g->streams[i], 0, sizeof g->streams[i]);
  g->streams[i].stream = id;
  if (!(st->sstate[i] = rp_gstream_state_new(st->window))) return (size_t)-1;
  if (!rp_map_add(&st->stream_of, (uint64_t)id, (uint32_t)i)) {
    rp_gstream_state_free(st->sstate[i]);
    return (size_t)-1;
  }
  g->nstreams++;
  return i;
}

static int idle_category(const char *cat) {
  static const char *cats[] = {"kernel",     "Kernel", "gpu_memset",     "Memset",
                               "gpu_memcpy", "Memcpy", "mtia_ccp_events"};
  for (size_t i = 0; i < sizeof cats / sizeof *cats; i++)
    if (!strcmp(cat, cats[i])) return 1;
  return 0;
}

void rp_gpu_event(rp_gpu *g, const rp_kevent *e) {
  if (!g || !g->st) return;
  struct rp_gpu_state *st = g->st;
  if (e->stream < 0) { /* a CPU event: remember the calls that GPU work refers to */
    g->cpu_events++;
    if (e->corr >= 0 && strcmp(e->name, "Event Sync") && strcmp(e->name, "Context Sync"))
      corr_put(g, e);
    return;
  }
  g->gpu_events++;
  if (e->start < g->first) g->first = e->start;
  if (e->start + e->dur > g->last) g->last = e->start + e->dur;
  int type = kern_add(g, e);
  if (type < 0) type = rp_kernel_type(e->name);
  if (!rp_ktime_add(st->time, e->start, e->start + e->dur, type)) g->failed = 1;
  if (type == RP_K_MEMORY && !rp_mem_add(st->mem, &g->mem, &g->nmem, e)) g->failed = 1;
  size_t si = stream_index(g, e->stream);
  if (si == (size_t)-1) {
    g->failed = 1;
    return;
  }
  g->launches += e->corr >= 0;
  if (e->corr > st->gpu_corr_max) st->gpu_corr_max = e->corr;
  rp_gevent ge = {e->start, e->start + e->dur, e->corr, idle_category(e->cat), 0, {0, 0, 0}};
  const rp_launch *call =
      corr_find(st, e->corr); /* a call written after its GPU event: at the pop */
  if (call) ge.has_call = 1, ge.call = *call;
  rp_gstream_push(st->sstate[si], &g->streams[si], &ge, corr_find, st);
}

/* ---- finishing: the top kernels by HTA's rule */
static int cmp_kstat(const void *a, const void *b) {
  const rp_kstat *x = a, *y = b;
  if (x->type != y->type) return x->type - y->type;
  if (x->sum != y->sum) return x->sum > y->sum ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int cmp_stream(const void *a, const void *b) {
  const rp_gstream *x = a, *y = b;
  return (x->stream > y->stream) - (x->stream < y->stream);
}

/* Within one type, sorted by total time: all are top when there are at most `top`; else the
 * first `top` whose running total is at most the `ratio` quantile (linear interpolation, as
 * pandas computes it) of the running totals. */
static void mark_top(rp_kstat *k, size_t n, int top, double ratio) {
  if (n <= (size_t)top) {
    for (size_t i = 0; i < n; i++) k[i].top = 1;
    return;
  }
  double pos = ratio * (double)(n - 1), cum_lo = 0, cum_hi = 0, run = 0;
  size_t lo = (size_t)pos;
  for (size_t i = 0; i < n && i <= lo + 1; i++) {
    run += (double)k[i].sum;
    if (i == lo) cum_lo = run;
    if (i == lo + 1) cum_hi = run;
  }
  double q = lo + 1 < n ? cum_lo + (cum_hi - cum_lo) * (pos - (double)lo) : cum_lo;
  run = 0;
  for (size_t i = 0; i < n; i++) {
    run += (double)k[i].sum;
    k[i].top = i < (size_t)top && run <= q;
  }
}

static void free_state(rp_gpu *g) {
  struct rp_gpu_state *st = g->st;
  if (!st) return;
  for (size_t i = 0; i < g->nstreams; i++) rp_gstream_state_free(st->sstate[i]);
  topo_free(st->sstate);
  rp_map_free(&st->stream_of);
  rp_mem_state_free(st->mem);
  rp_ktime_free(st->time);
  topo_free(st->name_slot);
  topo_free(st->corr);
  topo_free(st);
  g->st = NULL;
}

static void mark_types(rp_gpu *g, int top, double ratio) {
  for (size_t i = 0; i < g->nkern;) {
    size_t j = i;
    while (j < g->nkern && g->kern[j].type == g->kern[i].type) j++;
    mark_top(g->kern + i, j - i, top, ratio);
    i = j;
  }
}

void rp_gpu_mark_top(rp_report *r, int top, double ratio) {
  if (top < 1) top = RP_GPU_TOP;
  if (!(ratio > 0 && ratio <= 1)) ratio = RP_GPU_DURATION_RATIO;
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].gpu && !r->ranks[i].gpu->st) mark_types(r->ranks[i].gpu, top, ratio);
}

void rp_gpu_finish(rp_gpu *g) {
  if (!g || !g->st) return;
  struct rp_gpu_state *st = g->st;
  for (size_t i = 0; i < g->nstreams; i++) {
    rp_gstream_finish(st->sstate[i], &g->streams[i], corr_find, st);
    g->matched += g->streams[i].matched;
  }
  rp_mem_finish(st->mem, g->mem, g->nmem);
  if (!rp_ktime_finish(st->time, &g->busy, g->combo, &g->late)) g->failed = 1;
  for (int m = 0; m < 8; m++) {
    if (m & RP_KT_COMPUTE) g->compute += g->combo[m];
    if (m & RP_KT_COMM) g->comm += g->combo[m];
    if ((m & (RP_KT_COMPUTE | RP_KT_COMM)) == (RP_KT_COMPUTE | RP_KT_COMM))
      g->overlap += g->combo[m];
  }
  if (g->nkern) qsort(g->kern, g->nkern, sizeof *g->kern, cmp_kstat);
  mark_types(g, RP_GPU_TOP, RP_GPU_DURATION_RATIO);
  if (g->nstreams) qsort(g->streams, g->nstreams, sizeof *g->streams, cmp_stream);
  free_state(g);
}

void rp_gpu_free(rp_gpu *g) {
  if (!g) return;
  free_state(g);
  for (size_t i = 0; i < g->nkern; i++) topo_free(g->kern[i].name);
  topo_free(g->kern);
  for (size_t i = 0; i < g->nstreams; i++) {
    rp_quant_free(&g->streams[i].delay);
    rp_quant_free(&g->streams[i].cpu_dur);
    rp_quant_free(&g->streams[i].gpu_dur);
    rp_quant_free(&g->streams[i].queue);
  }
  topo_free(g->streams);
  for (size_t i = 0; i < g->nmem; i++) rp_quant_free(&g->mem[i].op_bw);
  topo_free(g->mem);
  topo_free(g->steps);
  topo_free(g);
}

void rp_gpu_totals_get(const rp_report *r, rp_gpu_totals *t) {
  memset(t, 0, sizeof *t);
  for (int i = 0; i < r->nranks; i++) {
    const rp_gpu *g = r->ranks[i].gpu;
    if (!g || !g->gpu_events) continue;
    t->ranks++;
    for (int m = 0; m < 8; m++) t->combo[m] = rp_add_sat(t->combo[m], g->combo[m]);
    t->busy = rp_add_sat(t->busy, g->busy);
    t->span = rp_add_sat(t->span, g->last - g->first);
  }
}

const char *rp_combo_name(int mask) {
  static const char *names[8] = {"",
                                 "COMPUTATION",
                                 "COMMUNICATION",
                                 "COMPUTATION overlapping COMMUNICATION",
                                 "MEMORY",
                                 "COMPUTATION overlapping MEMORY",
                                 "COMMUNICATION overlapping MEMORY",
                                 "COMPUTATION overlapping COMMUNICATION overlapping MEMORY"};
  return mask > 0 && mask < 8 ? names[mask] : "";
}
