// SPDX-License-Identifier: Apache-2.0
// The cross-rank join of the analysis (analyze.h): each communicator keeps one ring of open
// collectives per function, keyed by NCCL's seqNumber; an entry is counted when every rank has it
// or when no live rank can deliver it any more, and gives the skew, each rank's wait and the late
// rank. A rank writes its records out of seq order (a GPU-timed collective once its kernel ended,
// after the untimed ones enqueued behind it), so "can deliver no more" is judged by each rank's
// lowest seq not yet delivered (a tournament tree over the ranks), never by its latest. An entry
// closes early only when the ring is full (JOIN_MAX_CAP seqs per function); a record that comes
// after that is counted late, not joined. p2p operations are joined apart (analyze_p2p.c). Called
// by pass 1.
#include <stdint.h>
#include <string.h>

#include "analyze_ctx.h"
#include "report_analysis.h"

/* ---- join */
/* A slot's leaf in every ring's tree, and the path above it. */
static void low_set(const join_comm *j, join_ring *g, int slot, uint64_t v) {
  size_t k = j->width + (size_t)slot;
  g->low[k] = v;
  for (k /= 2; k >= 1; k /= 2) { /* up while the minimum below changes */
    uint64_t m = g->low[2 * k] < g->low[2 * k + 1] ? g->low[2 * k] : g->low[2 * k + 1];
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
  int64_t *dur = topo_calloc(cap * n, sizeof *dur);
  uint64_t *bytes = topo_calloc(cap, sizeof *bytes);
  int *nranks = topo_calloc(cap, sizeof *nranks);
  uint64_t *tag = topo_calloc(cap, sizeof *tag);
  int8_t *algo = topo_calloc(cap, 1), *proto = topo_calloc(cap, 1);
  if (!g->low && (g->low = topo_malloc(2 * j->width * sizeof *g->low))) {
    for (size_t k = 0; k < 2 * j->width; k++) g->low[k] = UINT64_MAX;
    for (int k = 0; k < j->nslots; k++)
      if (j->live[k] > 0) low_set(j, g, k, 0);
  }
  if (!g->next) g->next = topo_calloc(n ? n : 1, sizeof *g->next);
  if (!seq || !used || !got || !have || !gpu || !cpu || !dur || !bytes || !nranks || !tag ||
      !algo || !proto || !g->low || !g->next) {
    topo_free(seq), topo_free(used), topo_free(got), topo_free(have);
    topo_free(gpu), topo_free(cpu), topo_free(dur);
    topo_free(bytes), topo_free(nranks), topo_free(tag), topo_free(algo), topo_free(proto);
    return 0;
  }
  for (size_t i = 0; i < g->cap; i++) {
    if (!g->used[i]) continue;
    size_t k = g->seq[i] % cap;
    seq[k] = g->seq[i];
    used[k] = g->used[i];
    have[k] = g->have[i];
    bytes[k] = g->bytes[i];
    nranks[k] = g->nranks[i];
    tag[k] = g->tag[i];
    algo[k] = g->algo[i];
    proto[k] = g->proto[i];
    memcpy(got + k * n, g->got + i * n, n);
    memcpy(gpu + k * n, g->gpu + i * n, n * sizeof *gpu);
    memcpy(cpu + k * n, g->cpu + i * n, n * sizeof *cpu);
    memcpy(dur + k * n, g->dur + i * n, n * sizeof *dur);
  }
  topo_free(g->seq), topo_free(g->used), topo_free(g->got);
  topo_free(g->have), topo_free(g->gpu), topo_free(g->cpu), topo_free(g->dur);
  topo_free(g->bytes), topo_free(g->nranks), topo_free(g->tag), topo_free(g->algo);
  topo_free(g->proto);
  g->seq = seq, g->used = used, g->got = got, g->have = have, g->gpu = gpu, g->cpu = cpu;
  g->dur = dur, g->bytes = bytes, g->nranks = nranks, g->tag = tag, g->algo = algo;
  g->proto = proto;
  g->cap = cap;
  return 1;
}

/* Entry i's figures: its skew, each rank's wait, the late rank, the ranks it lacks. Counted once,
 * when it is complete or no live slot can add to it; a collective outside the window counts
 * nowhere. */
static void join_count(ctx *c, join_comm *j, int func, size_t i) {
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
    if (!in_rank_window(r, who, first)) return;
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
     * others' kernels wait inside), else CPU enqueue starts. A rank waits inside its own kernel:
     * a wait (or a delay caused) longer than that kernel lasted (measured, else estimated) is cut
     * to it and counted: with GPU starts it is alignment error; with enqueue starts, an enqueue
     * recorded later than its kernel could have started (a thread short of CPU). */
    const int64_t *t = (all_gpu ? g->gpu : g->cpu) + i * n, *dur = g->dur + i * n;
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
      if (skew > dur[first]) skew = dur[first], r->skew_clamped++;
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
      if (dur[k] >= 0 && wait > dur[k]) {
        wait = dur[k];
        if (all_gpu) rk->wait_clamped++;
        else rk->wait_clamped_enqueue++;
      }
      rk->joined++;
      rk->joined_gpu += (uint64_t)all_gpu;
      rk->wait_total = rp_add_sat(rk->wait_total, wait);
      /* the transfer after the last rank started (its own stop, measured): the busbw that
       * excludes waiting for it */
      int64_t stop = t[k] + dur[k];
      if (all_gpu && g->have[i] == j->nranks && got[k] == 2 && dur[k] >= 0 && stop > mx)
        an_table_xfer(c, func, g->algo[i], g->proto[i], g->bytes[i], g->nranks[i], g->tag[i],
                      stop - mx);
    }
    if (mx > second) {
      rp_rank *rk = &r->ranks[j->slot_proc[last]];
      int64_t late = mx - second;
      if (dur[second_k] >= 0 && late > dur[second_k]) late = dur[second_k];
      rk->last_count++;
      rk->late_total = rp_add_sat(rk->late_total, late);
    }
  }
}

/* Entry i counted (when still open) and its place freed. */
static void join_close(ctx *c, join_comm *j, int func, size_t i) {
  join_ring *g = &j->ring[func];
  if (g->used[i] == JOIN_OPEN) join_count(c, j, func, i);
  g->used[i] = JOIN_FREE;
  g->have[i] = 0;
  memset(g->got + i * (size_t)j->nslots, 0, (size_t)j->nslots);
}

/* Close every entry of ring `func` with seq < upto, advancing its base. */
static void join_evict(ctx *c, join_comm *j, int func, uint64_t upto) {
  join_ring *g = &j->ring[func];
  if (!g->have_base || upto <= g->base) return;
  g->evicted = 1;
  if (upto - g->base > g->cap) { /* a jump: close everything held below it */
    for (size_t i = 0; i < g->cap; i++)
      if (g->used[i] && g->seq[i] < upto) join_close(c, j, func, i);
    g->base = upto;
    return;
  }
  while (g->base < upto) {
    size_t i = g->base % g->cap;
    if (g->used[i] && g->seq[i] == g->base) join_close(c, j, func, i);
    g->base++;
  }
}

/* Close every entry; the base moves past them (saturating at the top of the seq range). */
void an_join_evict_all(ctx *c, join_comm *j) {
  for (int f = 0; f < RP_MAX_FUNC; f++) {
    join_ring *g = &j->ring[f];
    if (!g->have_base) continue;
    for (size_t i = 0; i < g->cap; i++)
      if (g->used[i]) join_close(c, j, f, i);
    g->base = g->base > UINT64_MAX - g->cap ? UINT64_MAX : g->base + g->cap;
    g->evicted = 1;
  }
}

/* Slot `slot`'s next undelivered seq, moved past everything it has delivered (entries still
 * held); seqs the base has passed count as delivered. Amortized O(1) per record. */
static void join_advance(const join_comm *j, join_ring *g, int slot) {
  size_t n = (size_t)j->nslots;
  uint64_t x = g->next[slot] > g->base ? g->next[slot] : g->base;
  while (x != UINT64_MAX && x - g->base < g->cap) {
    size_t i = x % g->cap;
    if (!g->used[i] || g->seq[i] != x || !g->got[i * n + (size_t)slot]) break;
    x++;
  }
  g->next[slot] = x;
  if (g->low[j->width + (size_t)slot] != UINT64_MAX) low_set(j, g, slot, x);
}

/* A record of seq below the base, before anything was closed: the base moves down to it (the
 * first records of a rank may come out of order too). 0 when it cannot (an entry was closed, or
 * the ring cannot hold both ends): the record is late. */
static int join_lower_base(ctx *c, join_comm *j, join_ring *g, uint64_t seq, size_t limit) {
  if (g->evicted || g->top - seq >= limit) return 0;
  while (g->top - seq >= g->cap)
    if (!join_grow(g, j, g->cap * 2)) {
      c->st = TOPO_ERR_NOMEM;
      return 0;
    }
  g->base = seq;
  for (int k = 0; k < j->nslots; k++) /* every slot lacks it: nobody delivered it yet */
    if (g->next[k] > seq) {
      g->next[k] = seq;
      if (g->low[j->width + (size_t)k] != UINT64_MAX) low_set(j, g, k, seq);
    }
  return 1;
}

void an_join_add(ctx *c, join_comm *j, int slot, const rp_coll *co) {
  int func = co->func < RP_MAX_FUNC ? co->func : RP_MAX_FUNC - 1;
  join_ring *g = &j->ring[func];
  size_t limit = an_join_limit(j);
  if (!g->cap && !join_grow(g, j, limit < 1024 ? limit : 1024)) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  if (!g->have_base) {
    g->base = g->top = co->seq;
    g->have_base = 1;
  }
  if (co->seq < g->base && !join_lower_base(c, j, g, co->seq, limit)) {
    j->sum->late++; /* its collective was closed without it */
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
  if (co->seq > g->top) g->top = co->seq;
  size_t i = co->seq % g->cap, n = (size_t)j->nslots;
  if (!g->used[i]) {
    g->used[i] = JOIN_OPEN;
    g->seq[i] = co->seq;
    g->have[i] = 0;
    g->bytes[i] = co->bytes;
    g->nranks[i] = co->nranks;
    g->tag[i] = co->user_tag;
    g->algo[i] = (int8_t)(co->algo >= 0 && co->algo < 7 ? co->algo : -1);
    g->proto[i] = (int8_t)(co->proto >= 0 && co->proto < 3 ? co->proto : -1);
  }
  uint8_t *got = g->got + i * n;
  if (got[slot]) return; /* duplicate */
  got[slot] = co->timed ? 2 : 1;
  g->gpu[i * n + (size_t)slot] = co->gpu_start;
  g->dur[i * n + (size_t)slot] = an_kernel_ns(c, co);
  g->cpu[i * n + (size_t)slot] = co->cpu_start;
  if (++g->have[i] == j->nranks && g->used[i] == JOIN_OPEN) {
    join_count(c, j, func, i); /* complete: counted now, held until the base passes it */
    g->used[i] = JOIN_DONE;
  }
  join_advance(j, g, slot);
}

/* One source of `slot` has delivered everything. */
void an_join_source_done(ctx *c, join_comm *j, int slot) {
  if (--j->live[slot] > 0) return;
  j->nlive--;
  an_p2p_slot_done(c, j, slot);
  for (int f = 0; f < RP_MAX_FUNC; f++)
    if (j->ring[f].low) low_set(j, &j->ring[f], slot, UINT64_MAX);
}

/* After a chunk: entries below every live slot's next undelivered seq can get no more records. */
void an_join_progress(ctx *c, join_comm *j) {
  if (!j->nlive) {
    an_join_evict_all(c, j);
    return;
  }
  for (int f = 0; f < RP_MAX_FUNC; f++) {
    join_ring *g = &j->ring[f];
    if (g->have_base) join_evict(c, j, f, g->low[1]);
  }
}

void an_join_free(join_comm *j) {
  an_p2p_free(j);
  topo_free(j->slot_proc), topo_free(j->live), topo_free(j->slot_rank);
  for (int f = 0; f < RP_MAX_FUNC; f++) {
    join_ring *g = &j->ring[f];
    topo_free(g->seq), topo_free(g->used), topo_free(g->have), topo_free(g->gpu);
    topo_free(g->cpu), topo_free(g->got), topo_free(g->low), topo_free(g->dur);
    topo_free(g->next), topo_free(g->bytes), topo_free(g->nranks), topo_free(g->tag);
    topo_free(g->algo), topo_free(g->proto);
  }
}
