// SPDX-License-Identifier: Apache-2.0
// The cross-rank join of the analysis (analyze.h): each communicator keeps one ring of open
// collectives per function, keyed by NCCL's seqNumber; an entry is finalized when every rank has
// it or when no live rank can deliver it any more (a tournament tree of each slot's latest seq),
// and gives the skew, each rank's wait and the late rank. Called by pass 1.
#include <stdint.h>
#include <string.h>

#include "analyze.h"

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
void an_join_evict_all(ctx *c, join_comm *j) {
  for (int f = 0; f < RP_MAX_FUNC; f++) {
    join_ring *g = &j->ring[f];
    if (!g->have_base) continue;
    for (size_t i = 0; i < g->cap; i++)
      if (g->used[i]) join_finalize(c, j, f, i);
    g->base = g->base > UINT64_MAX - g->cap ? UINT64_MAX : g->base + g->cap;
  }
}

void an_join_add(ctx *c, join_comm *j, int slot, const rp_coll *co) {
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
  if ((int64_t)co->seq > g->low[leaf] && g->low[leaf] != INT64_MAX)
    low_set(j, g, slot, (int64_t)co->seq);
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
void an_join_source_done(join_comm *j, int slot) {
  if (--j->live[slot] > 0) return;
  j->nlive--;
  for (int f = 0; f < RP_MAX_FUNC; f++)
    if (j->ring[f].low) low_set(j, &j->ring[f], slot, INT64_MAX);
}

/* After a chunk: entries below every live slot's latest seq can get no more records. */
void an_join_progress(ctx *c, join_comm *j) {
  if (!j->nlive) {
    an_join_evict_all(c, j);
    return;
  }
  for (int f = 0; f < RP_MAX_FUNC; f++) {
    join_ring *g = &j->ring[f];
    if (!g->have_base) continue;
    int64_t mn = g->low[1];
    if (mn > 0 && mn != INT64_MAX) join_evict(c, j, f, (uint64_t)mn);
  }
}

void an_join_free(join_comm *j) {
  topo_free(j->slot_proc), topo_free(j->live);
  for (int f = 0; f < RP_MAX_FUNC; f++) {
    join_ring *g = &j->ring[f];
    topo_free(g->seq), topo_free(g->used), topo_free(g->have), topo_free(g->gpu);
    topo_free(g->cpu), topo_free(g->got), topo_free(g->low), topo_free(g->stop);
  }
}
