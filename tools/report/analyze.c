// SPDX-License-Identifier: Apache-2.0
// The analysis: pass 1 streams every input once, merged by time, to build the collective table,
// the fit points, the steps and the cross-rank join by (comm hash, function, seq); pass 2 streams each
// rank's inputs again through the interval sweep (sweep.c). Pass 1 also learns the measured
// collective durations (estimate.c) and each rank's compute coverage (CUPTI span records, Kineto
// ranges); pass 2 places every untimed collective with its estimate on its stream and sweeps
// the coverage with the unions. At most a few hundred binary inputs hold a descriptor at a time
// (the others are suspended and reopened in turn), so any number of ranks reads under a small
// RLIMIT_NOFILE. Called by main.c; owns rp_report.
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "kernels.h"
#include "log.h"
#include "report.h"
#include "trace_reader.h"

/* ---- cross-rank join: NCCL's seqNumber counts per (communicator, function), so each
 * communicator holds one ring of open collectives per function. Its members are the ranks that
 * have a trace (slots, in rank order): memory follows the traces given, not the size a header
 * claims. */
typedef struct join_ring {
  uint64_t base;         /* open entries cover seqs [base, base + cap) */
  int have_base;
  size_t cap;
  uint64_t *seq;
  uint8_t *used;
  int *have;
  int64_t *gpu, *cpu;    /* cap x nslots */
  int64_t *stop;         /* cap x nslots: GPU stop (gpu-timed entries) */
  uint8_t *got;          /* cap x nslots: 1 cpu only, 2 gpu-timed */
  /* tournament tree over the slots (2 x width): leaf = the latest seq a live slot delivered
   * (-1 none yet), INT64_MAX once it delivers no more; low[1] = the least of them */
  int64_t *low;
} join_ring;

#define JOIN_MAX_CAP (1u << 16)

typedef struct join_comm {
  uint64_t hash;
  int nranks;            /* communicator size, as its headers say */
  int nslots;            /* its ranks that have a trace */
  size_t width;          /* leaves of the rings' trees: nslots rounded up to a power of two */
  int *slot_proc;        /* slot -> report rank index */
  int *live;             /* slot -> sources of it still delivering */
  int nlive;             /* slots with live > 0 */
  join_ring ring[RP_MAX_FUNC];
  rp_comm_summary *sum;
} join_comm;

typedef struct ctx {
  rp_report *r;
  const rp_options *opt;
  join_comm *jc;
  size_t njc;
  int *src_comm;         /* source -> join_comm index, -1 none */
  int *src_slot;         /* source -> its slot in that join_comm */
  int bin_colls;         /* binary collectives seen: Kineto kernels do not feed the table */
  rp_steps *steps;       /* pass 1: period detection (steps.c), NULL when off */
  rp_align *align;       /* pass 0: alignment evidence, until solved */
  rp_sweep *sweep;       /* pass 2: the rank being swept */
  int sweep_rank;
  rp_estimator *est;     /* measured durations (pass 1), asked in pass 2 */
  uint32_t *stream_id;   /* pass 2, the rank being swept: end of the last comm interval per stream */
  int64_t *stream_end;
  size_t nstreams, cap_streams;
  int64_t last_progress;
  uint64_t total_bytes;  /* input bytes x passes */
  uint64_t closed_bytes; /* bytes read by sources already closed */
  int progress;
  rp_map row_of, fit_of; /* row and fit point keys -> their index */
  uint8_t *held;         /* per source: 1 while it holds a descriptor */
  int nheld, budget;     /* sources holding one; the most that may */
  int hand;              /* clock hand: the next source considered for suspension */
  topo_status st;
} ctx;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void progress(ctx *c, const char *what, int force) {
  if (!c->progress) return;
  int64_t t = now_ns();
  if (!force && t - c->last_progress < 1000000000LL) return;
  c->last_progress = t;
  uint64_t done = c->closed_bytes;
  for (int i = 0; i < c->r->nsrc; i++) done += rp_source_offset(&c->r->src[i]);
  fprintf(stderr, "topo-report: %s: %" PRIu64 " MB of %" PRIu64 " MB read, %" PRIu64 " records\n",
          what, done >> 20, c->total_bytes >> 20, c->r->records);
}

/* ---- open descriptors */
/* Sources that may hold a descriptor at once: half of what RLIMIT_NOFILE leaves after 16 (the
 * outputs, a JSON input, the caller's own), at most 256 (each holds a 1 MiB window), at least 1. */
static int open_budget(void) {
  struct rlimit rl;
  rlim_t lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
  if (lim == RLIM_INFINITY || lim > 4096) lim = 4096;
  long b = ((long)lim - 16) / 2;
  return b < 1 ? 1 : b > 256 ? 256 : (int)b;
}

/* Source i is about to hold a descriptor (it opens, or resumes at its next step): at the budget,
 * the next holding source after the clock hand that can be suspended is, first (JSON cannot:
 * while only they hold, the budget is exceeded). */
static void hold(ctx *c, int i) {
  if (c->held[i]) return;
  int n = c->r->nsrc;
  for (int tried = 0; c->nheld >= c->budget && tried < n; tried++) {
    int k = c->hand;
    c->hand = (c->hand + 1) % n;
    if (k != i && c->held[k] && rp_source_suspend(&c->r->src[k])) {
      c->held[k] = 0;
      c->nheld--;
    }
  }
  c->held[i] = 1;
  c->nheld++;
}

static void unhold(ctx *c, int i) {
  if (!c->held[i]) return;
  c->held[i] = 0;
  c->nheld--;
}

static void close_src(ctx *c, rp_source *s) {
  c->closed_bytes += rp_source_offset(s);
  rp_source_close(s);
  unhold(c, s->index);
}

/* ---- the analysis window (rp_options.window): [from, to) on the aligned clock */
static int in_window(const rp_report *r, int64_t t) {
  return !r->window || (t >= r->win_from && t < r->win_to);
}

/* Clip [*a, *b) to the window; 0 when nothing is left. */
static int clip_window(const rp_report *r, int64_t *a, int64_t *b) {
  if (!r->window) return *b > *a;
  if (*a < r->win_from) *a = r->win_from;
  if (*b > r->win_to) *b = r->win_to;
  return *b > *a;
}

/* The same for report rank `proc` (-1: none), its complete-steps window included. */
static int in_rank_window(const rp_report *r, int proc, int64_t t) {
  if (!in_window(r, t)) return 0;
  if (proc < 0 || proc >= r->nranks || !r->ranks[proc].win) return 1;
  return t >= r->ranks[proc].win_from && t < r->ranks[proc].win_to;
}

static int clip_rank(const rp_report *r, int proc, int64_t *a, int64_t *b) {
  if (!clip_window(r, a, b)) return 0;
  if (proc < 0 || proc >= r->nranks || !r->ranks[proc].win) return 1;
  if (*a < r->ranks[proc].win_from) *a = r->ranks[proc].win_from;
  if (*b > r->ranks[proc].win_to) *b = r->ranks[proc].win_to;
  return *b > *a;
}

/* ---- rows and fit points */
static int bucket_of(uint64_t size) { return size ? 63 - __builtin_clzll(size) : -1; }

/* Rows and fit points are found through maps keyed by their fields packed into 64 bits (func
 * < RP_MAX_FUNC, -1 <= bucket < 64, algo < 7, proto < 3): one lookup per collective, however many
 * distinct communicator sizes the input names. */
static rp_row *row_get(ctx *c, int func, int nranks, int bucket) {
  rp_report *r = c->r;
  uint64_t key = (uint64_t)(uint32_t)nranks << 32 | (uint64_t)func << 8 | (uint64_t)(bucket + 1);
  uint32_t at;
  if (rp_map_find(&c->row_of, key, &at)) return r->rows[at];
  if (r->nrows == r->cap_rows) {
    size_t cap = r->cap_rows ? r->cap_rows * 2 : 32;
    rp_row **v = topo_realloc(r->rows, cap * sizeof *v);
    if (!v) return NULL;
    r->rows = v;
    r->cap_rows = cap;
  }
  rp_row *w = topo_calloc(1, sizeof *w);
  if (!w) return NULL;
  w->func = func;
  w->nranks = nranks;
  w->bucket = bucket;
  w->ch_min = 1 << 30;
  if (!rp_map_add(&c->row_of, key, (uint32_t)r->nrows)) {
    topo_free(w);
    return NULL;
  }
  r->rows[r->nrows++] = w;
  return w;
}

static rp_fitpt *fit_get(ctx *c, int func, int algo, int proto, int nranks, int bucket) {
  rp_report *r = c->r;
  uint64_t key = (uint64_t)(uint32_t)nranks << 32 | (uint64_t)func << 16 | (uint64_t)algo << 12 |
                 (uint64_t)proto << 8 | (uint64_t)(bucket + 1);
  uint32_t at;
  if (rp_map_find(&c->fit_of, key, &at)) return r->fit[at];
  if (r->nfit == r->cap_fit) {
    size_t cap = r->cap_fit ? r->cap_fit * 2 : 32;
    rp_fitpt **v = topo_realloc(r->fit, cap * sizeof *v);
    if (!v) return NULL;
    r->fit = v;
    r->cap_fit = cap;
  }
  rp_fitpt *p = topo_calloc(1, sizeof *p);
  if (!p) return NULL;
  p->func = func;
  p->algo = algo;
  p->proto = proto;
  p->nranks = nranks;
  p->bucket = bucket;
  if (!rp_map_add(&c->fit_of, key, (uint32_t)r->nfit)) {
    topo_free(p);
    return NULL;
  }
  r->fit[r->nfit++] = p;
  return p;
}

static void table_add(ctx *c, const rp_coll *co) {
  int func = co->func < RP_MAX_FUNC ? co->func : RP_MAX_FUNC - 1;
  uint64_t size = rp_coll_size(func, co->bytes, co->nranks);
  int bucket = bucket_of(size);
  rp_row *w = row_get(c, func, co->nranks, bucket);
  if (!w) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  w->calls++;
  w->size_sum += size;
  int a = co->algo >= 0 && co->algo < 7 ? co->algo : 7, p = co->proto >= 0 && co->proto < 3 ? co->proto : 3;
  w->algo_proto[a][p]++;
  if (co->nchannels > 0) {
    if (co->nchannels < w->ch_min) w->ch_min = co->nchannels;
    if (co->nchannels > w->ch_max) w->ch_max = co->nchannels;
  }
  if (!co->timed) return;
  int64_t d = co->gpu_stop - co->gpu_start;
  w->timed++;
  w->timed_size_sum += size;
  rp_quant_add(&w->time, d);
  if (func <= 4 && a < 7 && p < 3) {
    rp_fitpt *fp = fit_get(c, func, a, p, co->nranks, bucket);
    if (fp) {
      if (!fp->n || size < fp->size_min) fp->size_min = size;
      if (size > fp->size_max) fp->size_max = size;
      if (!fp->n) fp->nchannels = co->nchannels > 0 ? co->nchannels : 0;
      else if (fp->nchannels != (co->nchannels > 0 ? co->nchannels : 0)) fp->nchannels = -1;
      fp->n++;
      fp->size_sum += (double)size;
      rp_quant_add(&fp->time, d);
    }
  }
}

/* ---- ranks (processes) */
static int rank_add(rp_report *r, const char *host, uint32_t pid, int world_rank) {
  if (r->nranks == r->cap_ranks) {
    int cap = r->cap_ranks ? 2 * r->cap_ranks : 16;
    rp_rank *v = topo_realloc(r->ranks, (size_t)cap * sizeof *v);
    if (!v) return -1;
    r->ranks = v;
    r->cap_ranks = cap;
  }
  rp_rank *k = &r->ranks[r->nranks];
  memset(k, 0, sizeof *k);
  snprintf(k->host, sizeof k->host, "%s", host);
  k->pid = pid;
  k->world_rank = world_rank;
  k->t.first = INT64_MAX;
  k->t.last = INT64_MIN;
  return r->nranks++;
}

static int kineto_rank(ctx *c, rp_source *s) {
  if (s->proc >= 0) return s->proc;
  rp_report *r = c->r;
  s->proc = -1;
  if (s->rank >= 0)
    for (int i = 0; i < r->nranks && s->proc < 0; i++)
      if (r->ranks[i].world_rank == s->rank) s->proc = i;
  if (s->proc < 0) s->proc = rank_add(r, "", 0, s->rank >= 0 ? s->rank : s->index);
  if (s->proc >= 0) r->ranks[s->proc].nsources++;
  return s->proc;
}

static void step_add(void *vc, int src, int64_t start, int64_t stop, uint64_t value) {
  ctx *c = vc;
  rp_source *s = &c->r->src[src];
  int p = s->kind == RP_SRC_KINETO ? kineto_rank(c, s) : s->proc;
  if (p < 0) return;
  rp_rank *k = &c->r->ranks[p];
  if (!clip_window(c->r, &start, &stop)) return; /* wholly outside the window */
  if (k->nsteps == k->cap_steps) {
    size_t cap = k->cap_steps ? k->cap_steps * 2 : 64;
    rp_step *v = topo_realloc(k->steps, cap * sizeof *v);
    if (!v) {
      c->st = TOPO_ERR_NOMEM;
      return;
    }
    k->steps = v;
    k->cap_steps = cap;
  }
  rp_step *st = &k->steps[k->nsteps++];
  memset(st, 0, sizeof *st);
  st->start = start;
  st->stop = stop;
  st->value = value;
  st->from_kineto = s->kind == RP_SRC_KINETO;
}

/* --steps complete (docs/metrics.md, Step windows): a rank with Kineto ProfilerSteps gets the
 * window from the start of its first to the end of the one before its last, and loses that last
 * step (the profiler stops inside it). A rank with one ProfilerStep has no complete one: all its
 * events count, said once. Ranks without ProfilerSteps keep all their events. */
static void complete_step_windows(rp_report *r, int quiet) {
  r->step_window = RP_WINDOW_COMPLETE_STEPS;
  for (int i = 0; i < r->nranks; i++) {
    rp_rank *k = &r->ranks[i];
    size_t n = 0, last = 0;
    for (size_t j = 0; j < k->nsteps; j++)
      if (k->steps[j].from_kineto) {
        if (!n || k->steps[j].start > k->steps[last].start) last = j;
        n++;
      }
    k->win_steps = n;
    if (n == 1 && !quiet)
      TOPO_WARN("rank %d: one ProfilerStep (#%" PRIu64 "), none complete: --steps complete keeps all its "
                "events", k->world_rank, k->steps[last].value);
    if (n < 2) continue;
    k->win = 1;
    k->win_from = INT64_MAX;
    k->win_to = INT64_MIN;
    int64_t first_start = INT64_MAX, last_start = INT64_MIN;
    for (size_t j = 0; j < k->nsteps; j++) {
      const rp_step *st = &k->steps[j];
      if (!st->from_kineto || j == last) continue;
      if (st->start < k->win_from) k->win_from = st->start;
      if (st->stop > k->win_to) k->win_to = st->stop;
      if (st->start < first_start) first_start = st->start, k->win_first = st->value;
      if (st->start > last_start) last_start = st->start, k->win_last = st->value;
    }
    k->win_dropped = k->steps[last].value;
    k->steps[last] = k->steps[--k->nsteps];
    r->ranks_cut++;
  }
}

/* A rank with both Kineto ProfilerSteps and topo step marks keeps the Kineto ones (they follow
 * the GPU work each step launched); the same step numbered twice would count twice. */
static void steps_one_source(rp_rank *k) {
  int kin = 0, mark = 0;
  for (size_t i = 0; i < k->nsteps; i++) k->steps[i].from_kineto ? kin++ : mark++;
  if (!kin || !mark) return;
  size_t n = 0;
  for (size_t i = 0; i < k->nsteps; i++)
    if (k->steps[i].from_kineto) k->steps[n++] = k->steps[i];
  k->nsteps = n;
}

/* ---- join */
/* A slot's leaf in every ring's tree, and the path above it. */
static void low_set(const join_comm *j, join_ring *g, int slot, int64_t v) {
  size_t k = j->width + (size_t)slot;
  g->low[k] = v;
  for (k /= 2; k >= 1; k /= 2) { /* up while the minimum below changes */
    int64_t m = g->low[2 * k] < g->low[2 * k + 1] ? g->low[2 * k] : g->low[2 * k + 1];
    if (g->low[k] == m) break;
    g->low[k] = m;
  }
}

static int join_grow(join_ring *g, const join_comm *j, size_t cap) {
  size_t n = (size_t)j->nslots;
  uint64_t *seq = topo_calloc(cap, sizeof *seq);
  uint8_t *used = topo_calloc(cap, 1), *got = topo_calloc(cap * n, 1);
  int *have = topo_calloc(cap, sizeof *have);
  int64_t *gpu = topo_calloc(cap * n, sizeof *gpu), *cpu = topo_calloc(cap * n, sizeof *cpu);
  int64_t *stop = topo_calloc(cap * n, sizeof *stop);
  if (!g->low && (g->low = topo_malloc(2 * j->width * sizeof *g->low))) {
    for (size_t k = 0; k < 2 * j->width; k++) g->low[k] = INT64_MAX;
    for (int k = 0; k < j->nslots; k++)
      if (j->live[k] > 0) low_set(j, g, k, -1);
  }
  if (!seq || !used || !got || !have || !gpu || !cpu || !stop || !g->low) {
    topo_free(seq), topo_free(used), topo_free(got), topo_free(have);
    topo_free(gpu), topo_free(cpu), topo_free(stop);
    return 0;
  }
  for (size_t i = 0; i < g->cap; i++) {
    if (!g->used[i]) continue;
    size_t k = g->seq[i] % cap;
    seq[k] = g->seq[i];
    used[k] = 1;
    have[k] = g->have[i];
    memcpy(got + k * n, g->got + i * n, n);
    memcpy(gpu + k * n, g->gpu + i * n, n * sizeof *gpu);
    memcpy(cpu + k * n, g->cpu + i * n, n * sizeof *cpu);
    memcpy(stop + k * n, g->stop + i * n, n * sizeof *stop);
  }
  topo_free(g->seq), topo_free(g->used), topo_free(g->got);
  topo_free(g->have), topo_free(g->gpu), topo_free(g->cpu), topo_free(g->stop);
  g->seq = seq, g->used = used, g->got = got, g->have = have, g->gpu = gpu, g->cpu = cpu;
  g->stop = stop;
  g->cap = cap;
  return 1;
}

static void join_finalize(ctx *c, join_comm *j, int func, size_t i) {
  rp_report *r = c->r;
  join_ring *g = &j->ring[func];
  size_t n = (size_t)j->nslots;
  uint8_t *got = g->got + i * n;
  if (r->window || r->ranks_cut) { /* counts when its earliest start (GPU, else CPU) lies in the
                                     * window (of the rank that has it) */
    int64_t first = INT64_MAX;
    int who = -1;
    for (size_t k = 0; k < n; k++)
      if (got[k]) {
        int64_t t = got[k] == 2 ? g->gpu[i * n + k] : g->cpu[i * n + k];
        if (t < first) first = t, who = j->slot_proc[k];
      }
    if (!in_rank_window(r, who, first)) {
      g->used[i] = 0;
      g->have[i] = 0;
      memset(got, 0, n);
      return;
    }
  }
  j->sum->joined++;
  if (g->have[i] < j->nranks) {
    j->sum->incomplete++;
    for (size_t k = 0; k < n; k++)
      if (!got[k]) r->ranks[j->slot_proc[k]].missed++;
  }
  if (g->have[i] >= 2) {
    int all_gpu = 1;
    for (size_t k = 0; k < n; k++)
      if (got[k] == 1) all_gpu = 0;
    /* GPU starts when every joined rank has them (the late rank's kernel starts last; the
     * others' kernels wait inside), else CPU enqueue starts. A GPU wait ends by the rank's own
     * kernel stop: more than that is alignment error, cut and counted. */
    const int64_t *t = (all_gpu ? g->gpu : g->cpu) + i * n, *stop = g->stop + i * n;
    int64_t mx = INT64_MIN, second = INT64_MIN, mn = INT64_MAX;
    size_t last = 0, first = 0, second_k = 0;
    for (size_t k = 0; k < n; k++) {
      if (!got[k]) continue;
      if (t[k] > mx) second = mx, second_k = last, mx = t[k], last = k;
      else if (t[k] > second) second = t[k], second_k = k;
      if (t[k] < mn) mn = t[k], first = k;
    }
    int64_t skew = mx - mn;
    if (all_gpu) {
      if (skew > stop[first] - mn) skew = stop[first] - mn, r->skew_clamped++;
      rp_quant_add(&r->skew_gpu_all, skew);
      j->sum->skew_gpu++;
      r->skew_gpu[func]++;
    }
    rp_quant_add(&j->sum->skew, skew);
    rp_quant_add(&r->skew[func], skew);
    for (size_t k = 0; k < n; k++) {
      if (!got[k]) continue;
      rp_rank *rk = &r->ranks[j->slot_proc[k]];
      int64_t wait = mx - t[k];
      if (all_gpu && wait > stop[k] - t[k]) wait = stop[k] - t[k], rk->wait_clamped++;
      rk->joined++;
      rk->joined_gpu += (uint64_t)all_gpu;
      rk->wait_total = rp_add_sat(rk->wait_total, wait);
    }
    if (mx > second) {
      rp_rank *rk = &r->ranks[j->slot_proc[last]];
      int64_t late = mx - second;
      if (all_gpu && late > stop[second_k] - second) late = stop[second_k] - second;
      rk->last_count++;
      rk->late_total = rp_add_sat(rk->late_total, late);
    }
  }
  g->used[i] = 0;
  g->have[i] = 0;
  memset(got, 0, n);
}

/* Finalize every open entry of ring `func` with seq < upto, advancing its base. */
static void join_evict(ctx *c, join_comm *j, int func, uint64_t upto) {
  join_ring *g = &j->ring[func];
  if (!g->have_base || upto <= g->base) return;
  if (upto - g->base > g->cap) { /* a jump: finalize everything open below it */
    for (size_t i = 0; i < g->cap; i++)
      if (g->used[i] && g->seq[i] < upto) join_finalize(c, j, func, i);
    g->base = upto;
    return;
  }
  while (g->base < upto) {
    size_t i = g->base % g->cap;
    if (g->used[i] && g->seq[i] == g->base) join_finalize(c, j, func, i);
    g->base++;
  }
}

/* Finalize every open entry; the base moves past them (saturating at the top of the seq range). */
static void join_evict_all(ctx *c, join_comm *j) {
  for (int f = 0; f < RP_MAX_FUNC; f++) {
    join_ring *g = &j->ring[f];
    if (!g->have_base) continue;
    for (size_t i = 0; i < g->cap; i++)
      if (g->used[i]) join_finalize(c, j, f, i);
    g->base = g->base > UINT64_MAX - g->cap ? UINT64_MAX : g->base + g->cap;
  }
}

static void join_add(ctx *c, join_comm *j, int slot, const rp_coll *co) {
  int func = co->func < RP_MAX_FUNC ? co->func : RP_MAX_FUNC - 1;
  join_ring *g = &j->ring[func];
  size_t limit = JOIN_MAX_CAP;
  while (limit > 16 && limit * (size_t)j->nslots > (1u << 24)) limit /= 2;
  if (!g->cap && !join_grow(g, j, limit < 1024 ? limit : 1024)) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  if (!g->have_base) {
    g->base = co->seq;
    g->have_base = 1;
  }
  size_t leaf = j->width + (size_t)slot;
  if ((int64_t)co->seq > g->low[leaf] && g->low[leaf] != INT64_MAX) low_set(j, g, slot, (int64_t)co->seq);
  if (co->seq < g->base) {
    j->sum->incomplete++; /* arrived after its entry was closed */
    return;
  }
  while (co->seq - g->base >= g->cap) { /* seq >= base here: the difference cannot wrap */
    if (g->cap < limit) {
      if (!join_grow(g, j, g->cap * 2)) {
        c->st = TOPO_ERR_NOMEM;
        return;
      }
    } else {
      join_evict(c, j, func, co->seq - g->cap + 1);
    }
  }
  size_t i = co->seq % g->cap, n = (size_t)j->nslots;
  if (!g->used[i]) {
    g->used[i] = 1;
    g->seq[i] = co->seq;
    g->have[i] = 0;
  }
  uint8_t *got = g->got + i * n;
  if (got[slot]) return; /* duplicate */
  got[slot] = co->timed ? 2 : 1;
  g->gpu[i * n + (size_t)slot] = co->gpu_start;
  g->stop[i * n + (size_t)slot] = co->gpu_stop;
  g->cpu[i * n + (size_t)slot] = co->cpu_start;
  if (++g->have[i] == j->nranks) join_finalize(c, j, func, i);
}

/* One source of `slot` has delivered everything. */
static void join_source_done(join_comm *j, int slot) {
  if (--j->live[slot] > 0) return;
  j->nlive--;
  for (int f = 0; f < RP_MAX_FUNC; f++)
    if (j->ring[f].low) low_set(j, &j->ring[f], slot, INT64_MAX);
}

/* After a chunk: entries below every live slot's latest seq can get no more records. */
static void join_progress(ctx *c, join_comm *j) {
  if (!j->nlive) {
    join_evict_all(c, j);
    return;
  }
  for (int f = 0; f < RP_MAX_FUNC; f++) {
    join_ring *g = &j->ring[f];
    if (!g->have_base) continue;
    int64_t mn = g->low[1];
    if (mn > 0 && mn != INT64_MAX) join_evict(c, j, f, (uint64_t)mn);
  }
}

/* ---- estimates of untimed collectives (estimate.c) */
static rp_est_key est_key(const rp_coll *co) {
  int func = co->func < RP_MAX_FUNC ? co->func : RP_MAX_FUNC - 1;
  rp_est_key k = {co->nranks, func, bucket_of(rp_coll_size(func, co->bytes, co->nranks)), co->algo,
                  co->proto, co->nchannels};
  return k;
}

static void est_learn(ctx *c, const rp_coll *co) {
  if (!co->timed) return;
  rp_est_key k = est_key(co);
  rp_est_measured(c->est, &k, rp_coll_size(k.func, co->bytes, co->nranks), co->gpu_stop - co->gpu_start);
  if (rp_est_failed(c->est)) c->st = TOPO_ERR_NOMEM;
}

/* ---- compute coverage: where a rank's compute timeline is known */
static void cover_add(ctx *c, rp_rank *k, int64_t a, int64_t b) {
  if (b <= a) return;
  if (k->ncover == k->cap_cover) {
    size_t cap = k->cap_cover ? k->cap_cover * 2 : 16;
    int64_t *v = topo_realloc(k->cover, cap * 2 * sizeof *v);
    if (!v) {
      c->st = TOPO_ERR_NOMEM;
      return;
    }
    k->cover = v;
    k->cap_cover = cap;
  }
  k->cover[2 * k->ncover] = a;
  k->cover[2 * k->ncover + 1] = b;
  k->ncover++;
}

static int cmp_pair(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Sort the windows and merge overlapping ones. */
static void cover_normalize(rp_rank *k) {
  if (!k->ncover) return;
  qsort(k->cover, k->ncover, 2 * sizeof *k->cover, cmp_pair);
  size_t n = 0;
  for (size_t i = 0; i < k->ncover; i++) {
    int64_t a = k->cover[2 * i], b = k->cover[2 * i + 1];
    if (n && a <= k->cover[2 * n - 1]) {
      if (b > k->cover[2 * n - 1]) k->cover[2 * n - 1] = b;
      continue;
    }
    k->cover[2 * n] = a;
    k->cover[2 * n + 1] = b;
    n++;
  }
  k->ncover = n;
}

static int in_cover(const rp_rank *k, int64_t t) {
  size_t lo = 0, hi = k->ncover;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (k->cover[2 * m + 1] <= t) lo = m + 1;
    else hi = m;
  }
  return lo < k->ncover && k->cover[2 * lo] <= t;
}

/* A TOPO_REC_CUPTI record of a binary source (pass 1). */
static void cupti_span(ctx *c, rp_source *s, const topo_rec_cupti *u) {
  if (s->proc < 0) return;
  rp_rank *k = &c->r->ranks[s->proc];
  const char *name = u->name_id && s->impl ? topo_trace_reader_string(s->impl, u->name_id) : NULL;
  if (!name || !*name) name = NULL;
  int64_t a, b;
  switch (u->state) {
  case TOPO_CUPTI_RECORDED:
  case TOPO_CUPTI_YIELDED:
    k->cupti_spans++;
    if (__builtin_add_overflow(u->cpu_start_ns, s->mono_to_real, &a) ||
        __builtin_add_overflow(u->cpu_stop_ns, s->mono_to_real, &b))
      return;
    cover_add(c, k, a, b);
    if (u->state == TOPO_CUPTI_YIELDED && !k->cover_note[0])
      snprintf(k->cover_note, sizeof k->cover_note, "topo stepped aside for another CUPTI client (%s)",
               name ? name : "unnamed");
    break;
  case TOPO_CUPTI_DECLINED:
    k->cupti_declined++;
    snprintf(k->cover_note, sizeof k->cover_note, "another CUPTI client (%s) held CUPTI",
             name ? name : "unnamed");
    break;
  case TOPO_CUPTI_FAILED:
    k->cupti_failed++;
    if (!k->cupti_declined)
      snprintf(k->cover_note, sizeof k->cover_note, "CUPTI failed: %s", name ? name : "no reason given");
    break;
  default:
    break;
  }
}

/* A window that ends inside a step measures part of a step, and the parts of a step differ (the
 * backward pass overlaps, the optimizer does not): on the 2-rank DDP job a CUPTI window ending
 * mid-step moved one rank's overlap by 2.3 points. Where the rank has steps, its coverage is the
 * union of the steps that lie wholly inside it (whole periods are representative at any phase),
 * unless no step fits (windows shorter than a step stay as they are). */
static void cover_whole_steps(rp_rank *k) {
  if (!k->nsteps || !k->ncover) return;
  size_t kept = 0, j = 0;
  for (size_t i = 0; i < k->nsteps; i++) {
    const rp_step *st = &k->steps[i];
    while (j < k->ncover && k->cover[2 * j + 1] < st->stop) j++;
    if (j < k->ncover && k->cover[2 * j] <= st->start) kept++;
  }
  if (!kept) return;
  int64_t *v = topo_malloc(kept * 2 * sizeof *v);
  if (!v) return; /* keep the raw windows */
  size_t n = 0;
  j = 0;
  for (size_t i = 0; i < k->nsteps; i++) {
    const rp_step *st = &k->steps[i];
    while (j < k->ncover && k->cover[2 * j + 1] < st->stop) j++;
    if (j < k->ncover && k->cover[2 * j] <= st->start) {
      v[2 * n] = st->start;
      v[2 * n + 1] = st->stop;
      n++;
    }
  }
  topo_free(k->cover);
  k->cover = v;
  k->ncover = k->cap_cover = n;
  cover_normalize(k);
}

/* After pass 1: every rank's windows. Kineto covers its GPU range; a topo CUPTI trace without
 * span records (older writers) covers everything. */
static void cover_build(ctx *c) {
  rp_report *r = c->r;
  for (int i = 0; i < r->nsrc; i++) {
    const rp_source *s = &r->src[i];
    if (s->proc < 0 || s->kind != RP_SRC_KINETO || !(s->gpu_last > s->gpu_first)) continue;
    cover_add(c, &r->ranks[s->proc], s->gpu_first, s->gpu_last);
  }
  for (int i = 0; i < r->nranks; i++) {
    rp_rank *k = &r->ranks[i];
    int spans = k->cupti_spans || k->cupti_declined || k->cupti_failed;
    if (k->trace_kernels && !spans) {
      k->cover_whole = 1;
      k->ncover = 0;
      cover_add(c, k, INT64_MIN / 4, INT64_MAX / 4);
    }
    cover_normalize(k);
    if (!k->cover_whole && !k->kineto) cover_whole_steps(k); /* Kineto: the range the user profiled */
  }
}

const char *rp_rank_unknown_reason(const rp_rank *k) {
  static const char none[] =
      "no compute timeline: no CUPTI window of the profiler covers this rank (TOPO_PROFILER_CUPTI=on "
      "records continuously, TOPO_PROFILER_CUPTI_TRIGGER on demand), and no Kineto trace of it was given";
  if (k->cover_note[0]) return k->cover_note;
  if (k->t.covered < (k->t.last > k->t.first ? k->t.last - k->t.first : 0)) {
    if (!k->ncover) return none;
    return k->nsteps && !k->kineto
               ? "compute counts only over the whole steps inside the CUPTI windows (outside them it "
                 "was not recorded; TOPO_PROFILER_CUPTI=on or TOPO_PROFILER_CUPTI_TRIGGER record more)"
               : "outside the CUPTI windows compute was not recorded (TOPO_PROFILER_CUPTI=on or "
                 "TOPO_PROFILER_CUPTI_TRIGGER record more)";
  }
  return "";
}

/* One line on a JSON input that gives no GPU time, saying what it holds instead. */
static void kineto_unusable(const rp_source *s, const rp_kineto_info *in, int rank_kept) {
  if (s->quiet) return;
  const char *tail = rank_kept ? "; its rank keeps its other inputs" : "; skipped";
  if (!in->has_events_key) {
    fprintf(stderr, "topo-report: warning: %s: JSON without traceEvents: not a trace%s\n", s->path, tail);
    return;
  }
  if (!in->x_events) {
    fprintf(stderr, "topo-report: warning: %s: no complete events in traceEvents%s\n", s->path, tail);
    return;
  }
  char cats[160] = "";
  size_t o = 0;
  for (int i = 0; i < 4 && in->cat_n[i] && o < sizeof cats; i++) {
    int w = snprintf(cats + o, sizeof cats - o, "%s%s (%" PRIu64 ")", i ? ", " : "; other categories: ",
                     in->cat[i], in->cat_n[i]);
    o += w > 0 ? (size_t)w : 0;
  }
  fprintf(stderr, "topo-report: warning: %s: no CUDA GPU events (kernel, gpu_memcpy, gpu_memset) among its "
          "%" PRIu64 " complete events (%" PRIu64 " CPU-side%s): a trace of another device (MTIA, XPU) or of the "
          "CPU only%s\n", s->path, in->x_events, in->cpu_events, cats, tail);
}

static int stream_slot(ctx *c, uint32_t stream) {
  for (size_t i = 0; i < c->nstreams; i++)
    if (c->stream_id[i] == stream) return (int)i;
  if (c->nstreams == c->cap_streams) {
    size_t cap = c->cap_streams ? c->cap_streams * 2 : 16;
    uint32_t *id = topo_realloc(c->stream_id, cap * sizeof *id);
    if (id) c->stream_id = id;
    int64_t *end = id ? topo_realloc(c->stream_end, cap * sizeof *end) : NULL;
    if (!end) {
      c->st = TOPO_ERR_NOMEM;
      return -1;
    }
    c->stream_end = end;
    c->cap_streams = cap;
  }
  c->stream_id[c->nstreams] = stream;
  c->stream_end[c->nstreams] = INT64_MIN;
  return (int)c->nstreams++;
}

static rp_step *step_at(rp_rank *k, int64_t t) {
  size_t lo = 0, hi = k->nsteps;
  while (lo < hi) { /* first step starting after t */
    size_t m = (lo + hi) / 2;
    if (k->steps[m].start <= t) lo = m + 1;
    else hi = m;
  }
  return lo && t < k->steps[lo - 1].stop ? &k->steps[lo - 1] : NULL;
}

static void sweep_add(ctx *c, const rp_interval *iv) {
  rp_interval w = *iv;
  if (!clip_rank(c->r, c->sweep_rank, &w.start, &w.stop)) return;
  if (rp_sweep_add(c->sweep, &w) != TOPO_OK) c->st = TOPO_ERR_NOMEM;
}

/* Pass 2: a collective of the rank being swept. A timed one moves its stream's end; an untimed
 * one gets its estimate (counted per rank, row and level) and, where the rank's comm comes from
 * collective records there, an interval at max(CPU enqueue, end of the stream's previous comm). */
static void p2_coll(void *vc, int src, const rp_coll *co) {
  ctx *c = vc;
  rp_report *r = c->r;
  rp_rank *k = &r->ranks[c->sweep_rank];
  if (r->src[src].kind != RP_SRC_TRACE) { /* Kineto NCCL kernels: the table, when no topo trace has it */
    if (c->bin_colls || !in_rank_window(r, c->sweep_rank, co->gpu_start)) return;
    r->colls_from_kineto = 1;
    if (co->p2p) {
      r->p2p++;
    } else {
      r->colls++;
      r->timed_colls++;
      k->colls++;
      k->timed_colls++;
      r->src[src].colls++;
      r->src[src].timed_colls++;
    }
    table_add(c, co);
    return;
  }
  int slot = stream_slot(c, co->stream);
  if (slot < 0) return;
  if (co->timed) {
    if (co->gpu_stop > c->stream_end[slot]) c->stream_end[slot] = co->gpu_stop;
    return;
  }
  if (!in_rank_window(r, c->sweep_rank, co->cpu_start)) return;
  rp_est_key key = est_key(co);
  rp_estimate e;
  int level = rp_est_get(c->est, &key, rp_coll_size(key.func, co->bytes, co->nranks), &e);
  k->est[level]++;
  r->est[level]++;
  k->lost += (uint64_t)co->asked;
  r->lost += (uint64_t)co->asked;
  rp_row *w = row_get(c, key.func, co->nranks, key.bucket);
  if (!w) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  w->lost += (uint64_t)co->asked;
  if (level == RP_EST_UNKNOWN) {
    w->unknown++;
    return;
  }
  w->estimated++;
  w->est_fallback += level != RP_EST_KEY;
  w->est_sum = rp_add_sat(w->est_sum, e.dur);
  rp_err_add(&w->est_err, &e);
  rp_interval iv = {co->cpu_start, 0, co->stream, RP_COMM, (uint8_t)key.func, RP_FROM_ESTIMATE, 0};
  if (c->stream_end[slot] > iv.start) iv.start = c->stream_end[slot];
  iv.stop = rp_add_sat(iv.start, e.dur);
  c->stream_end[slot] = iv.stop;
  if (k->comm_from_kernels && in_cover(k, iv.start)) return; /* kernel records hold it */
  rp_err_add(&k->comm_err, &e);
  rp_step *st = step_at(k, iv.start);
  if (st) st->est_var += (double)e.err * (double)e.err, st->est_bias += (double)e.bias;
  sweep_add(c, &iv);
}

/* ---- pass 1 sinks */
static void p1_coll(void *vc, int src, const rp_coll *co) {
  ctx *c = vc;
  rp_report *r = c->r;
  rp_source *s = &r->src[src];
  /* Kineto NCCL kernels make the table in pass 2, once the rank's window is known */
  if (s->kind != RP_SRC_TRACE) return;
  est_learn(c, co);
  c->bin_colls = 1;
  int jc = c->src_comm[src];
  if (jc >= 0 && !co->p2p) join_add(c, &c->jc[jc], c->src_slot[src], co); /* the window applies at the join */
  if (jc >= 0) rp_steps_coll(c->steps, (size_t)jc, c->jc[jc].nranks, s->rank, s->proc, co);
  if (!in_rank_window(r, s->proc, co->timed ? co->gpu_start : co->cpu_start)) return;
  r->colls += !co->p2p;
  r->p2p += (uint64_t)co->p2p;
  r->timed_colls += (uint64_t)co->timed;
  if (s->proc >= 0) {
    r->ranks[s->proc].colls++;
    r->ranks[s->proc].timed_colls += (uint64_t)co->timed;
  }
  table_add(c, co);
  int64_t lo = co->timed ? co->gpu_start : co->cpu_start, hi = co->timed ? co->gpu_stop : co->cpu_stop;
  (void)clip_rank(r, s->proc, &lo, &hi); /* its start is inside: only the end can be cut */
  if (lo < r->t0) r->t0 = lo;
  if (hi > r->t_end) r->t_end = hi;
  if (lo < r->trace_first) r->trace_first = lo;
  if (hi > r->trace_last) r->trace_last = hi;
}

static void p1_interval(void *vc, int src, const rp_interval *iv) {
  ctx *c = vc;
  rp_report *r = c->r;
  if (r->src[src].kind == RP_SRC_KINETO) return; /* its range is known at its end */
  int64_t a = iv->start, b = iv->stop;
  if (!clip_rank(r, r->src[src].proc, &a, &b)) return;
  if (a < r->t0) r->t0 = a;
  if (b > r->t_end) r->t_end = b;
  if (a < r->trace_first) r->trace_first = a;
  if (b > r->trace_last) r->trace_last = b;
}

static void p1_record(void *vc, int src, const topo_trace_record *rec) {
  ctx *c = vc;
  c->r->records++;
  if (rec->type == TOPO_REC_CUPTI) cupti_span(c, &c->r->src[src], &rec->cupti);
}

/* Pass 2: a Kineto event of the rank being swept, for the kernel-level analyses; events that
 * start outside the window are left out. */
static void p2_kevent(void *vc, int src, const rp_kevent *e) {
  ctx *c = vc;
  (void)src;
  if (!in_window(c->r, e->start)) return;
  /* GPU work outside the rank's step window is not counted; the calls stay, for the look-ups */
  if (e->stream >= 0 && !in_rank_window(c->r, c->sweep_rank, e->start)) return;
  rp_gpu_event(c->r->ranks[c->sweep_rank].gpu, e);
}

/* ---- pass 2 sink */
static void p2_interval(void *vc, int src, const rp_interval *iv) {
  ctx *c = vc;
  const rp_rank *k = &c->r->ranks[c->sweep_rank];
  (void)src;
  /* A rank with NCCL kernel records takes its comm from them inside its coverage windows and
   * from collective records outside them. */
  if (iv->cls == RP_COMM && iv->origin == RP_FROM_COLL && k->comm_from_kernels && in_cover(k, iv->start))
    return;
  if (iv->cls == RP_COMM && iv->origin == RP_FROM_KERNEL && !k->comm_from_kernels) return;
  sweep_add(c, iv);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Steps grouped by number across ranks. */
static topo_status step_summary(rp_report *r) {
  size_t total = 0;
  for (int i = 0; i < r->nranks; i++) total += r->ranks[i].nsteps;
  if (!total) return TOPO_OK;
  uint64_t *vals = topo_malloc(total * sizeof *vals);
  if (!vals) return TOPO_ERR_NOMEM;
  size_t n = 0;
  for (int i = 0; i < r->nranks; i++)
    for (size_t k = 0; k < r->ranks[i].nsteps; k++) vals[n++] = r->ranks[i].steps[k].value;
  qsort(vals, n, sizeof *vals, cmp_u64);
  size_t u = 0;
  for (size_t k = 0; k < n; k++)
    if (!u || vals[u - 1] != vals[k]) vals[u++] = vals[k];
  r->stepsum = topo_calloc(u, sizeof *r->stepsum);
  if (!r->stepsum) {
    topo_free(vals);
    return TOPO_ERR_NOMEM;
  }
  r->nstepsum = u;
  for (size_t k = 0; k < u; k++) r->stepsum[k].value = vals[k];
  for (int i = 0; i < r->nranks; i++)
    for (size_t k = 0; k < r->ranks[i].nsteps; k++) {
      const rp_step *st = &r->ranks[i].steps[k];
      uint64_t *hit = bsearch(&st->value, vals, u, sizeof *vals, cmp_u64);
      rp_stepsum *sum = &r->stepsum[hit - vals];
      sum->ranks++;
      sum->span = rp_add_sat(sum->span, st->stop - st->start);
      sum->comm = rp_add_sat(sum->comm, st->comm);
      sum->compute = rp_add_sat(sum->compute, st->compute);
      sum->overlap = rp_add_sat(sum->overlap, st->overlap);
      sum->busy = rp_add_sat(sum->busy, st->busy);
      sum->comm_est = rp_add_sat(sum->comm_est, st->comm_est);
      sum->comm_err.var += st->est_var;
      sum->comm_err.bias += st->est_bias;
      if (st->covered > 0) {
        sum->cov_ranks++;
        sum->covered = rp_add_sat(sum->covered, st->covered);
        sum->cov_comm = rp_add_sat(sum->cov_comm, st->cov_comm);
        sum->cov_compute = rp_add_sat(sum->cov_compute, st->cov_compute);
        sum->cov_overlap = rp_add_sat(sum->cov_overlap, st->cov_overlap);
        sum->cov_busy = rp_add_sat(sum->cov_busy, st->cov_busy);
      }
    }
  topo_free(vals);
  return TOPO_OK;
}

static int cmp_step(const void *a, const void *b) {
  const rp_step *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* Of two positions of the list (-1: none), the one whose source is further behind; the first
 * listed on ties. */
static int behind(const ctx *c, const int *idx, int a, int b) {
  if (a < 0 || b < 0) return a < 0 ? b : a;
  return c->r->src[idx[b]].frontier < c->r->src[idx[a]].frontier ? b : a;
}

/* Read sources (the listed ones) merged by time: always step the one furthest behind, found in
 * a tournament tree (O(log n) a step). A finished source gives its descriptor back at once. */
static void merged(ctx *c, int *idx, int n, const rp_sink *sink, int pass, const char *what) {
  size_t w = 1;
  while (w < (size_t)n) w *= 2;
  int *tree = topo_malloc(2 * w * sizeof *tree); /* node: the list position that wins below it */
  if (!tree) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  for (size_t i = 0; i < w; i++) tree[w + i] = i < (size_t)n && !c->r->src[idx[i]].done ? (int)i : -1;
  for (size_t k = w - 1; k >= 1; k--) tree[k] = behind(c, idx, tree[2 * k], tree[2 * k + 1]);
  for (;;) {
    int best = tree[1];
    if (best < 0 || c->st != TOPO_OK) break;
    rp_source *s = &c->r->src[idx[best]];
    hold(c, idx[best]);
    int more = rp_source_step(s, sink, pass);
    if (!more && rp_source_suspend(s)) unhold(c, idx[best]);
    if (pass == 1 && c->src_comm[idx[best]] >= 0) {
      join_comm *j = &c->jc[c->src_comm[idx[best]]];
      if (!more) join_source_done(j, c->src_slot[idx[best]]);
      join_progress(c, j);
    }
    size_t k = w + (size_t)best;
    tree[k] = s->done ? -1 : best;
    for (k /= 2; k >= 1; k /= 2) tree[k] = behind(c, idx, tree[2 * k], tree[2 * k + 1]);
    progress(c, what, 0);
  }
  topo_free(tree);
}

static void choose_window(rp_report *r) {
  int best = -1;
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].nsteps >= 1 && (best < 0 || r->ranks[i].nsteps > r->ranks[best].nsteps)) best = i;
  if (best >= 0) {
    const rp_rank *k = &r->ranks[best];
    const rp_step *st = &k->steps[k->nsteps / 2];
    int64_t pad = (st->stop - st->start) / 20;
    r->window_from = st->start - pad;
    r->window_to = st->stop + pad;
    return;
  }
  r->window_from = r->t0;
  r->window_to = r->t_end;
  uint64_t most = 0;
  for (int i = 0; i < r->nsrc; i++) {
    const rp_source *s = &r->src[i];
    uint64_t n = s->timed_colls + s->nccl_kernels + s->compute_kernels + s->memory_kernels;
    if (n > most) most = n;
  }
  if (most > RP_TIMELINE_CAP && r->t_end > r->t0) {
    double frac = (double)RP_TIMELINE_CAP / (double)most * 0.9;
    int64_t w = (int64_t)((double)(r->t_end - r->t0) * frac);
    int64_t mid = r->t0 + (r->t_end - r->t0) / 2;
    r->window_from = mid - w / 2;
    r->window_to = mid + w / 2;
  }
}

/* ---- grouping the binary sources by sorting (no scan of the ranks or communicators per source) */
typedef struct proc_key {
  const char *host;
  uint32_t pid;
  int index;
} proc_key;

static int cmp_proc_key(const void *a, const void *b) {
  const proc_key *x = a, *y = b;
  int h = strcmp(x->host, y->host);
  if (h) return h;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* Ranks are processes (host, pid; pid 0: each source its own), numbered in order of their first
 * source: sets every listed source's proc. */
static topo_status group_processes(rp_report *r, const int *bin, int nbin) {
  proc_key *key = topo_malloc((size_t)(nbin ? nbin : 1) * sizeof *key);
  int *first = topo_malloc((size_t)r->nsrc * sizeof *first);
  if (!key || !first) {
    topo_free(key), topo_free(first);
    return TOPO_ERR_NOMEM;
  }
  for (int b = 0; b < nbin; b++) {
    const topo_trace_header *h = &r->src[bin[b]].header;
    key[b] = (proc_key){h->host, h->pid, bin[b]};
  }
  qsort(key, (size_t)nbin, sizeof *key, cmp_proc_key);
  for (int b = 0, g = 0; b < nbin; b++) { /* g: the first of b's group (the lowest index) */
    if (b && (!key[b].pid || key[b].pid != key[g].pid || strcmp(key[b].host, key[g].host))) g = b;
    first[key[b].index] = key[g].index;
  }
  topo_status st = TOPO_OK;
  for (int b = 0; b < nbin && st == TOPO_OK; b++) {
    rp_source *s = &r->src[bin[b]];
    if (first[bin[b]] != bin[b]) s->proc = r->src[first[bin[b]]].proc;
    else if ((s->proc = rank_add(r, s->header.host, s->header.pid, s->rank)) < 0) st = TOPO_ERR_NOMEM;
  }
  topo_free(key), topo_free(first);
  return st;
}

typedef struct comm_key {
  uint64_t hash;
  int nranks, rank, index;
} comm_key;

static int cmp_comm_key(const void *a, const void *b) {
  const comm_key *x = a, *y = b;
  if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
  if (x->nranks != y->nranks) return x->nranks < y->nranks ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

typedef struct comm_group {
  int first_index;   /* its lowest source index: communicators are numbered in that order */
  int start, end;    /* its keys */
  int nslots;
} comm_group;

static int cmp_comm_group(const void *a, const void *b) {
  const comm_group *x = a, *y = b;
  return (x->first_index > y->first_index) - (x->first_index < y->first_index);
}

/* Communicators (comm hash, size) of the listed sources that have a valid rank, numbered in order
 * of their first source; each rank with a trace is a slot (in rank order). Sets src_comm,
 * src_slot and the join_comm table, sized by the slots. */
static topo_status group_comms(ctx *c, const int *bin, int nbin) {
  rp_report *r = c->r;
  comm_key *key = topo_malloc((size_t)(nbin ? nbin : 1) * sizeof *key);
  comm_group *grp = topo_malloc((size_t)(nbin ? nbin : 1) * sizeof *grp);
  int n = 0, ng = 0;
  topo_status st = TOPO_ERR_NOMEM;
  if (!key || !grp) goto out;
  for (int b = 0; b < nbin; b++) {
    const rp_source *s = &r->src[bin[b]];
    if (s->header.comm_hash && s->rank >= 0)
      key[n++] = (comm_key){s->header.comm_hash, s->header.nranks, s->rank, bin[b]};
  }
  qsort(key, (size_t)n, sizeof *key, cmp_comm_key);
  for (int k = 0; k < n; k++) {
    if (!k || key[k].hash != key[k - 1].hash || key[k].nranks != key[k - 1].nranks)
      grp[ng++] = (comm_group){key[k].index, k, k, 0};
    comm_group *g = &grp[ng - 1];
    if (key[k].index < g->first_index) g->first_index = key[k].index;
    g->nslots += k == g->start || key[k].rank != key[k - 1].rank;
    g->end = k + 1;
  }
  qsort(grp, (size_t)ng, sizeof *grp, cmp_comm_group);
  if (!(c->jc = topo_calloc((size_t)(ng ? ng : 1), sizeof *c->jc))) goto out;
  c->njc = (size_t)ng;
  for (int gi = 0; gi < ng; gi++) {
    const comm_group *g = &grp[gi];
    join_comm *j = &c->jc[gi];
    j->hash = key[g->start].hash;
    j->nranks = key[g->start].nranks;
    j->nslots = j->nlive = g->nslots;
    for (j->width = 1; j->width < (size_t)j->nslots;) j->width *= 2;
    j->slot_proc = topo_malloc((size_t)g->nslots * sizeof *j->slot_proc);
    j->live = topo_calloc((size_t)g->nslots, sizeof *j->live);
    if (!j->slot_proc || !j->live) goto out;
    for (int k = g->start, slot = -1; k < g->end; k++) {
      slot += k == g->start || key[k].rank != key[k - 1].rank;
      c->src_comm[key[k].index] = gi;
      c->src_slot[key[k].index] = slot;
      j->slot_proc[slot] = r->src[key[k].index].proc;
      j->live[slot]++;
    }
  }
  st = TOPO_OK;
out:
  topo_free(key), topo_free(grp);
  return st;
}

static topo_status add_sources(rp_report *r, char **files, int nfiles, const rp_options *opt) {
  r->src = topo_calloc((size_t)(nfiles ? nfiles : 1), sizeof *r->src);
  if (!r->src) return TOPO_ERR_NOMEM;
  for (int i = 0; i < nfiles; i++) {
    rp_source *s = &r->src[r->nsrc];
    memset(s, 0, sizeof *s);
    s->index = r->nsrc;
    s->proc = -1;
    s->rank = -1;
    s->quiet = opt->quiet;
    s->kind = rp_path_is_json(files[i]) ? RP_SRC_KINETO : RP_SRC_TRACE;
    s->want_spill = s->kind == RP_SRC_KINETO && !opt->reread_json;
    s->path = topo_strdup(files[i]);
    if (!s->path) return TOPO_ERR_NOMEM;
    r->nsrc++;
  }
  return TOPO_OK;
}

topo_status rp_analyze(const char *const *paths, int npaths, const rp_options *opt_in,
                       rp_report *r) {
  rp_options opt = {.reorder_window = 65536, .progress = -1};
  if (opt_in) opt = *opt_in;
  if (!opt.reorder_window) opt.reorder_window = 65536;
  memset(r, 0, sizeof *r);
  r->t0 = r->trace_first = r->kineto_first = INT64_MAX;
  r->t_end = r->trace_last = r->kineto_last = INT64_MIN;
  if (opt.window && opt.to > opt.from) {
    r->window = 1;
    r->win_from = opt.from;
    r->win_to = opt.to;
  }
  ctx c;
  memset(&c, 0, sizeof c);
  c.r = r;
  c.opt = &opt;
  c.progress = opt.progress;
  char **files = NULL;
  int nfiles = 0;
  topo_status st = rp_inputs_collect(paths, npaths, &opt, r, &files, &nfiles);
  if (st != TOPO_OK) return st;
  st = add_sources(r, files, nfiles, &opt);
  if (c.progress < 0) { /* auto: on a terminal, or for inputs that take a while (> 256 MB) */
    uint64_t bytes = 0;
    for (int i = 0; i < nfiles; i++) {
      struct stat sb;
      if (stat(files[i], &sb) == 0) bytes += (uint64_t)sb.st_size;
    }
    c.progress = isatty(2) || bytes > (256u << 20);
  }
  for (int i = 0; i < nfiles; i++) {
    struct stat sb;
    if (stat(files[i], &sb) == 0) c.total_bytes += 2 * (uint64_t)sb.st_size;
  }
  rp_paths_free(files, nfiles);
  if (st != TOPO_OK) return st;
  if (!r->nsrc) {
    TOPO_WARN("no input files (give trace files, or directories holding *.trace / *.json)");
    return TOPO_ERR_INVALID;
  }
  c.src_comm = topo_malloc((size_t)r->nsrc * sizeof(int));
  c.src_slot = topo_calloc((size_t)r->nsrc, sizeof(int));
  c.held = topo_calloc((size_t)r->nsrc, 1);
  c.budget = open_budget();
  if (!c.src_comm || !c.src_slot || !c.held) return TOPO_ERR_NOMEM;
  int *bin = topo_malloc((size_t)r->nsrc * sizeof(int)), nbin = 0;
  if (!bin) return TOPO_ERR_NOMEM;

  /* Pass 0, one binary trace at a time (it opens and closes each): alignment evidence. */
  for (int i = 0; i < r->nsrc; i++)
    if (r->src[i].kind == RP_SRC_TRACE && rp_align_scan(&c.align, r->nsrc, &r->src[i]) != TOPO_OK)
      return TOPO_ERR_NOMEM;
  /* Open binary traces; ranks are processes (host, pid); world rank = rank in the largest comm. */
  for (int i = 0; i < r->nsrc; i++) {
    rp_source *s = &r->src[i];
    c.src_comm[i] = -1;
    if (s->kind != RP_SRC_TRACE) continue;
    r->have_trace = 1;
    hold(&c, i);
    if (rp_source_open(s, 1) != TOPO_OK || !s->header_ok) {
      close_src(&c, s);
      continue;
    }
    bin[nbin++] = i;
    const topo_trace_header *h = &s->header;
    if (h->nranks < 1 || h->nranks > (1 << 20) || h->rank < 0 || h->rank >= h->nranks) {
      if (h->comm_hash)
        TOPO_WARN("%s: rank %d of %d is not a valid rank; its collectives are not joined",
                  s->path, h->rank, h->nranks);
      s->rank = -1;
    }
  }
  if ((st = group_processes(r, bin, nbin)) != TOPO_OK || (st = group_comms(&c, bin, nbin)) != TOPO_OK)
    return st;
  for (int b = 0; b < nbin; b++) {
    const rp_source *s = &r->src[bin[b]];
    rp_rank *k = &r->ranks[s->proc];
    k->nsources++;
    if (s->rank >= 0 && (k->world_rank < 0 || s->header.nranks > k->world_size)) {
      k->world_rank = s->rank; /* its rank in the largest communicator names the process */
      k->world_size = s->header.nranks;
    }
  }
  /* comm summaries (stable pointers now that the comm list is complete) */
  r->comms = topo_calloc(c.njc ? c.njc : 1, sizeof *r->comms);
  if (!r->comms) return TOPO_ERR_NOMEM;
  r->ncomms = c.njc;
  for (size_t i = 0; i < c.njc; i++) {
    c.jc[i].sum = &r->comms[i];
    r->comms[i].hash = c.jc[i].hash;
    r->comms[i].nranks = c.jc[i].nranks;
    r->comms[i].ranks_seen = c.jc[i].nslots;
  }

  c.est = rp_est_new();
  if (!c.est) return TOPO_ERR_NOMEM;
  size_t ntrackers = 0;
  for (int i = 0; i < r->nsrc; i++) ntrackers += c.src_comm[i] >= 0;
  c.steps = rp_steps_new(opt.steps, ntrackers);
  if (opt.steps >= 0 && !c.steps) return TOPO_ERR_NOMEM;
  /* One GPU-clock offset per rank before any GPU time is used (align.c). */
  if ((st = rp_align_solve(c.align, r)) != TOPO_OK) goto out;
  rp_sink s1 = {&c, p1_coll, p1_interval, step_add, p1_record, NULL};
  /* Kineto / Chrome JSON first, one file at a time: their steps give the ranks' windows */
  for (int i = 0; i < r->nsrc && c.st == TOPO_OK; i++) {
    rp_source *s = &r->src[i];
    if (s->kind != RP_SRC_KINETO) continue;
    r->have_kineto = 1;
    hold(&c, i);
    if (rp_source_open(s, 1) != TOPO_OK) {
      unhold(&c, i);
      continue;
    }
    int one[1] = {i}, nranks_before = r->nranks;
    merged(&c, one, 1, &s1, 1, "pass 1 (JSON)");
    rp_kineto_info info;
    rp_kineto_stats(s->impl, &info);
    /* A JSON file without GPU activity (another device's trace, a CPU-only one, not a trace at
     * all) makes no rank of its own: its steps alone would show as zeros. A rank already seen
     * through other sources keeps what they give. */
    int empty = !info.gpu_events;
    if (empty) {
      kineto_unusable(s, &info, s->proc >= 0 && s->proc < nranks_before);
      if (s->proc >= nranks_before && s->proc == r->nranks - 1) { /* the rank it made: undone */
        topo_free(r->ranks[s->proc].steps);
        r->nranks--;
      }
      if (s->proc >= nranks_before) s->proc = -1;
    }
    int p = empty ? s->proc : kineto_rank(&c, s);
    if (p >= 0) r->ranks[p].kineto = 1;
    close_src(&c, s);
  }
  if (opt.step_window == RP_WINDOW_COMPLETE_STEPS) complete_step_windows(r, opt.quiet);
  for (int i = 0; i < r->nsrc; i++) {
    const rp_source *s = &r->src[i];
    int64_t a = s->gpu_first, b = s->gpu_last;
    if (s->kind != RP_SRC_KINETO || s->proc < 0 || !(b > a) || !clip_rank(r, s->proc, &a, &b)) continue;
    if (a < r->t0) r->t0 = a;
    if (b > r->t_end) r->t_end = b;
    if (a < r->kineto_first) r->kineto_first = a;
    if (b > r->kineto_last) r->kineto_last = b;
  }
  /* topo traces, merged by time */
  merged(&c, bin, nbin, &s1, 1, "pass 1");
  for (size_t i = 0; i < c.njc; i++) join_evict_all(&c, &c.jc[i]);
  for (int i = 0; i < nbin; i++) close_src(&c, &r->src[bin[i]]);
  if (c.st == TOPO_OK) c.st = rp_steps_finish(c.steps, r);
  if (c.st != TOPO_OK) goto out;
  for (int i = 0; i < r->nsrc; i++) {
    rp_source *s = &r->src[i];
    if (s->proc < 0) continue;
    rp_rank *k = &r->ranks[s->proc];
    if (s->nccl_kernels) k->comm_from_kernels = 1;
    if (s->kind == RP_SRC_TRACE) k->trace_kernels += s->nccl_kernels + s->compute_kernels + s->memory_kernels;
    for (int d = 0; d < TOPO_DROP_KINDS; d++) k->dropped[d] += s->dropped[d];
    k->problems += s->problems;
  }
  for (int i = 0; i < r->nranks; i++) {
    rp_rank *k = &r->ranks[i];
    steps_one_source(k);
    if (k->nsteps) qsort(k->steps, k->nsteps, sizeof *k->steps, cmp_step);
  }
  choose_window(r);
  rp_est_finish(c.est);
  cover_build(&c);
  if (c.st != TOPO_OK) goto out;

  /* Pass 2: one rank at a time, its sources merged by time through the sweep. by_proc lists the
   * sources rank by rank (a counting sort): rank p's are by_proc[first[p] .. first[p + 1]). */
  rp_sink s2 = {&c, p2_coll, p2_interval, NULL, NULL, p2_kevent};
  int *mine = topo_malloc((size_t)r->nsrc * sizeof(int));
  int *by_proc = topo_malloc((size_t)r->nsrc * sizeof(int));
  int *first = topo_calloc((size_t)r->nranks + 2, sizeof(int));
  if (!mine || !by_proc || !first) {
    topo_free(mine), topo_free(by_proc), topo_free(first);
    st = TOPO_ERR_NOMEM;
    goto out;
  }
  for (int i = 0; i < r->nsrc; i++)
    if (r->src[i].proc >= 0) first[r->src[i].proc + 2]++;
  for (int p = 0; p < r->nranks; p++) first[p + 2] += first[p + 1];
  for (int i = 0; i < r->nsrc; i++)
    if (r->src[i].proc >= 0) by_proc[first[r->src[i].proc + 1]++] = i;
  r->overall.first = INT64_MAX;
  r->overall.last = INT64_MIN;
  for (int p = 0; p < r->nranks && c.st == TOPO_OK; p++) {
    rp_rank *k = &r->ranks[p];
    int n = 0;
    for (int q = first[p]; q < first[p + 1]; q++) {
      int i = by_proc[q];
      hold(&c, i);
      if (rp_source_open(&r->src[i], 2) != TOPO_OK) {
        unhold(&c, i);
        continue;
      }
      mine[n++] = i;
    }
    c.sweep = rp_sweep_new(opt.reorder_window, k->steps, k->nsteps);
    if (!c.sweep) {
      c.st = TOPO_ERR_NOMEM;
      break;
    }
    size_t keep = r->nranks <= 16 ? RP_TIMELINE_CAP : (size_t)RP_TIMELINE_CAP * 16 / (size_t)r->nranks;
    rp_sweep_keep(c.sweep, r->window_from, r->window_to, p < RP_TIMELINE_RANKS ? (keep < 256 ? 256 : keep) : 0);
    rp_sweep_cover(c.sweep, k->cover, k->ncover);
    if (k->kineto) {
      if (!(k->gpu = rp_gpu_new(k->steps, k->nsteps, RP_GPU_REORDER))) c.st = TOPO_ERR_NOMEM;
    }
    c.sweep_rank = p;
    c.nstreams = 0;
    char what[64];
    snprintf(what, sizeof what, "pass 2, rank %d of %d", p + 1, r->nranks);
    merged(&c, mine, n, &s2, 2, what);
    rp_sweep_finish(c.sweep, &k->t);
    rp_gpu_finish(k->gpu);
    size_t nk;
    const rp_interval *kept = rp_sweep_kept(c.sweep, &nk, &k->timeline_dropped);
    if (nk && (k->timeline = topo_malloc(nk * sizeof *kept))) {
      memcpy(k->timeline, kept, nk * sizeof *kept);
      k->ntimeline = nk;
    }
    rp_sweep_free(c.sweep);
    c.sweep = NULL;
    for (int i = 0; i < n; i++) {
      close_src(&c, &r->src[mine[i]]);
      rp_kspill_free(r->src[mine[i]].spill); /* replayed: done with */
      r->src[mine[i]].spill = NULL;
    }
    rp_times *o = &r->overall;
    if (k->t.first < o->first) o->first = k->t.first;
    if (k->t.last > o->last) o->last = k->t.last;
    o->comm = rp_add_sat(o->comm, k->t.comm);
    o->compute = rp_add_sat(o->compute, k->t.compute);
    o->overlap = rp_add_sat(o->overlap, k->t.overlap);
    o->busy = rp_add_sat(o->busy, k->t.busy);
    o->memory = rp_add_sat(o->memory, k->t.memory);
    o->comm_est = rp_add_sat(o->comm_est, k->t.comm_est);
    o->late += k->t.late;
    for (int cl = 0; cl < RP_CLASSES; cl++) o->intervals[cl] += k->t.intervals[cl];
    if (k->t.late && !opt.quiet)
      TOPO_WARN("rank %d: %" PRIu64 " intervals arrived more than %zu intervals out of order "
                "and were clipped; raise --reorder-window",
                k->world_rank, k->t.late, opt.reorder_window);
  }
  topo_free(mine), topo_free(by_proc), topo_free(first);
  if (c.st == TOPO_OK) c.st = step_summary(r);
  if (r->skew_gpu_all.n && (r->align_err < 0 || r->align_err > rp_quant_get(&r->skew_gpu_all, 0.5)))
    r->align_warn = 1;
  progress(&c, "done", 1);
out:
  rp_steps_free(c.steps);
  topo_free(bin);
  rp_align_free(c.align);
  for (size_t i = 0; i < c.njc; i++) {
    join_comm *j = &c.jc[i];
    topo_free(j->slot_proc), topo_free(j->live);
    for (int f = 0; f < RP_MAX_FUNC; f++) {
      join_ring *g = &j->ring[f];
      topo_free(g->seq), topo_free(g->used), topo_free(g->have), topo_free(g->gpu);
      topo_free(g->cpu), topo_free(g->got), topo_free(g->low), topo_free(g->stop);
    }
  }
  topo_free(c.jc);
  topo_free(c.src_comm);
  topo_free(c.src_slot);
  rp_map_free(&c.row_of);
  rp_map_free(&c.fit_of);
  topo_free(c.held);
  topo_free(c.stream_id);
  topo_free(c.stream_end);
  rp_est_free(c.est);
  return c.st != TOPO_OK ? c.st : st;
}

void rp_report_free(rp_report *r) {
  for (int i = 0; i < r->nsrc; i++) {
    rp_source_close(&r->src[i]);
    rp_kspill_free(r->src[i].spill);
    topo_free(r->src[i].path);
  }
  topo_free(r->src);
  for (int i = 0; i < r->nranks; i++) {
    topo_free(r->ranks[i].steps);
    topo_free(r->ranks[i].timeline);
    topo_free(r->ranks[i].cover);
    rp_gpu_free(r->ranks[i].gpu);
  }
  topo_free(r->ranks);
  for (size_t i = 0; i < r->nruns; i++) topo_free(r->runs[i].dir);
  topo_free(r->runs);
  for (size_t i = 0; i < r->nrows; i++) {
    rp_quant_free(&r->rows[i]->time);
    topo_free(r->rows[i]);
  }
  topo_free(r->rows);
  for (size_t i = 0; i < r->nfit; i++) {
    rp_quant_free(&r->fit[i]->time);
    topo_free(r->fit[i]);
  }
  topo_free(r->fit);
  for (size_t i = 0; i < r->ncomms; i++) rp_quant_free(&r->comms[i].skew);
  topo_free(r->comms);
  for (int i = 0; i < RP_MAX_FUNC; i++) rp_quant_free(&r->skew[i]);
  rp_quant_free(&r->skew_gpu_all);
  topo_free(r->stepsum);
  memset(r, 0, sizeof *r);
}
