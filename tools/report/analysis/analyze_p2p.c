// SPDX-License-Identifier: Apache-2.0
// The p2p join of the analysis (analyze.h): on a communicator the k-th Send from rank s to rank d
// pairs with the k-th Recv on d from s (NCCL delivers one pair's operations in order), the
// ordinals counted per (sender, receiver) on each side from the records themselves. A rank's
// records come out of its own enqueue order (a GPU-timed one once its kernel ended), so each
// slot's are first put back into that order by the profiler's per-communicator p2p counter (one
// ring per slot); released in order, each either pairs with the other side's op of its ordinal,
// held in a queue per (sender, receiver), or waits there for it. A joined pair counts as a
// collective of two does (skew in Send's row, the earlier side's wait, the later side's delay
// caused), but for a Send that may end before its Recv starts (pair()); an op whose
// partner never came is counted apart (rp_comm_summary.p2p_unmatched), never as a rank missing
// from a collective. A seq that never came leaves the ordinals after it unknown (which of the
// slot's streams lost it is not said): that slot's later p2p are unmatched, never paired wrongly.
// Called by pass 1 (analyze_pass1.c) and the join (analyze_join.c).
#include <stdint.h>
#include <string.h>

#include "analyze_ctx.h"
#include "nccl_vocab.h"

/* The slot of communicator rank `rank`, -1 when it has no trace. */
static int slot_of_rank(const join_comm *j, int rank) {
  int lo = 0, hi = j->nslots - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (j->slot_rank[mid] == rank) return mid;
    if (j->slot_rank[mid] < rank) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* An op that pairs with nothing: counted when its start lies in its rank's window. */
static void unmatched(ctx *c, join_comm *j, int slot, const p2p_op *op) {
  if (in_rank_window(c->r, j->slot_proc[slot], op->got == 2 ? op->gpu : op->cpu))
    j->sum->p2p_unmatched++;
}

/* A Send (of slot ss) and its Recv (of slot rs), counted when the earlier start lies in the
 * window of the rank that has it: by GPU starts when both have them, else by CPU enqueue. The
 * earlier starter waits for the later one, inside its own kernel. A Recv that starts first waits
 * for the data: a wait longer than its kernel is cut and counted, as a collective's is (GPU:
 * alignment error, skew cut too; enqueue: an enqueue recorded late). A Send that starts first may
 * end before its Recv starts (NCCL buffers a message that fits the connection's buffer): its wait
 * is cut to its kernel, no error, and the skew is the start times'. */
static void pair(ctx *c, join_comm *j, const p2p_op *send, int ss, const p2p_op *recv, int rs) {
  rp_report *r = c->r;
  int all_gpu = send->got == 2 && recv->got == 2;
  int64_t ts = all_gpu ? send->gpu : send->cpu, tr = all_gpu ? recv->gpu : recv->cpu;
  int recv_first = tr < ts;
  const p2p_op *first = recv_first ? recv : send;
  int fp = j->slot_proc[recv_first ? rs : ss], lp = j->slot_proc[recv_first ? ss : rs];
  if (!in_rank_window(r, fp, recv_first ? tr : ts)) return;
  j->sum->p2p_pairs++;
  rp_rank *fk = &r->ranks[fp], *lk = &r->ranks[lp];
  int64_t skew = recv_first ? ts - tr : tr - ts, wait = skew;
  if (first->dur >= 0 && wait > first->dur) {
    wait = first->dur;
    if (recv_first && all_gpu) fk->wait_clamped++, skew = wait, r->skew_clamped++;
    else if (recv_first) fk->wait_clamped_enqueue++;
  }
  if (all_gpu) {
    rp_quant_add(&r->skew_gpu_all, skew);
    j->sum->skew_gpu++;
    r->skew_gpu[ncclFuncSend]++;
  }
  rp_quant_add(&j->sum->skew, skew);
  rp_quant_add(&r->skew[ncclFuncSend], skew);
  fk->joined++, lk->joined++;
  fk->joined_gpu += (uint64_t)all_gpu, lk->joined_gpu += (uint64_t)all_gpu;
  fk->wait_total = rp_add_sat(fk->wait_total, wait);
  if (skew > 0) {
    lk->last_count++;
    lk->late_total = rp_add_sat(lk->late_total, wait);
  }
}

/* The queue of (sender slot, receiver slot), made at its first op; NULL out of memory. */
static p2p_queue *queue_of(ctx *c, join_comm *j, int ss, int rs) {
  uint64_t key = (uint64_t)(uint32_t)ss << 32 | (uint32_t)rs;
  uint32_t at;
  if (rp_map_find(&j->queue_of, key, &at)) return &j->queue[at];
  if (j->nqueue == j->cap_queue) {
    size_t cap = j->cap_queue ? 2 * j->cap_queue : 4;
    p2p_queue *v = topo_realloc(j->queue, cap * sizeof *v);
    if (!v) goto nomem;
    j->queue = v;
    j->cap_queue = cap;
  }
  if (!rp_map_add(&j->queue_of, key, (uint32_t)j->nqueue)) goto nomem;
  p2p_queue *q = &j->queue[j->nqueue++];
  memset(q, 0, sizeof *q);
  q->send_slot = ss;
  q->recv_slot = rs;
  return q;
nomem:
  c->st = TOPO_ERR_NOMEM;
  return NULL;
}

static p2p_op queue_pop(p2p_queue *q) {
  p2p_op op = q->op[q->head];
  q->head = (q->head + 1) % q->cap;
  q->n--;
  return op;
}

/* Append to q; at `limit` ops held the oldest is given up as unmatched (its partner is further
 * behind than the join holds). 0 out of memory. */
static int queue_push(ctx *c, join_comm *j, p2p_queue *q, const p2p_op *op, size_t limit) {
  if (q->n >= limit) {
    p2p_op old = queue_pop(q);
    unmatched(c, j, q->side ? q->recv_slot : q->send_slot, &old);
  }
  if (q->n == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 16;
    p2p_op *v = topo_malloc(cap * sizeof *v);
    if (!v) return 0;
    for (size_t i = 0; i < q->n; i++) v[i] = q->op[(q->head + i) % q->cap];
    topo_free(q->op);
    q->op = v;
    q->cap = cap;
    q->head = 0;
  }
  q->op[(q->head + q->n++) % q->cap] = *op;
  return 1;
}

/* Slot `slot`'s next op in its enqueue order: paired with the other side's op of the same ordinal
 * when that came first, else held for it. */
static void release(ctx *c, join_comm *j, int slot, const p2p_op *op) {
  int me = j->slot_rank[slot];
  int peer = op->func == ncclFuncSend || op->func == ncclFuncRecv ? op->peer : -1;
  int ps = peer >= 0 && peer != me ? slot_of_rank(j, peer) : -1;
  if (ps < 0) { /* no partner to be had: its peer has no trace (or is no peer) */
    unmatched(c, j, slot, op);
    return;
  }
  int side = op->func == ncclFuncRecv;
  int ss = side ? ps : slot, rs = side ? slot : ps;
  p2p_queue *q = queue_of(c, j, ss, rs);
  if (!q) return;
  if (q->n && q->side != side) {
    p2p_op other = queue_pop(q);
    if (side) pair(c, j, &other, ss, op, rs);
    else pair(c, j, op, ss, &other, rs);
    return;
  }
  if (j->order[ps].broken) { /* its partner's ordinals are lost from here on */
    unmatched(c, j, slot, op);
    return;
  }
  q->side = side;
  if (!queue_push(c, j, q, op, an_join_limit(j))) c->st = TOPO_ERR_NOMEM;
}

static int order_grow(p2p_order *o, size_t cap) {
  p2p_op *v = topo_calloc(cap, sizeof *v);
  if (!v) return 0;
  for (size_t i = 0; i < o->cap; i++)
    if (o->ring[i].got) v[o->ring[i].seq % cap] = o->ring[i];
  topo_free(o->ring);
  o->ring = v;
  o->cap = cap;
  return 1;
}

/* Release every op held from `next` on: in order while nothing is missing; after a seq that never
 * came the slot is broken and the rest are unmatched. */
static void order_drain(ctx *c, join_comm *j, int slot) {
  p2p_order *o = &j->order[slot];
  for (uint64_t x = o->next; o->held; x++) {
    p2p_op *e = &o->ring[x % o->cap];
    if (!e->got || e->seq != x) {
      o->broken = 1;
      continue;
    }
    p2p_op op = *e;
    e->got = 0;
    o->held--;
    o->next = x + 1;
    if (o->broken) unmatched(c, j, slot, &op);
    else release(c, j, slot, &op);
  }
}

void an_p2p_add(ctx *c, join_comm *j, int slot, const rp_coll *co) {
  if (!j->order && !(j->order = topo_calloc((size_t)j->nslots, sizeof *j->order))) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  p2p_order *o = &j->order[slot];
  p2p_op op = {co->timed ? co->gpu_start : 0,
               co->cpu_start,
               an_kernel_ns(c, co),
               co->seq,
               co->peer,
               (uint8_t)co->func,
               (uint8_t)(co->timed ? 2 : 1)};
  if (o->broken) { /* after a gap */
    unmatched(c, j, slot, &op);
    return;
  }
  if (co->seq < o->next) return; /* released already: a duplicate (the same trace given twice) */
  size_t limit = an_join_limit(j);
  if (!o->cap && !order_grow(o, limit < 64 ? limit : 64)) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  while (co->seq - o->next >= o->cap) { /* seq >= next here: the difference cannot wrap */
    if (o->cap < limit) {
      if (!order_grow(o, o->cap * 2)) {
        c->st = TOPO_ERR_NOMEM;
        return;
      }
    } else { /* `next` is further back than the ring holds: it never came */
      order_drain(c, j, slot);
      unmatched(c, j, slot, &op);
      return;
    }
  }
  p2p_op *e = &o->ring[co->seq % o->cap];
  if (e->got) return; /* duplicate */
  *e = op;
  o->held++;
  while (o->held && o->ring[o->next % o->cap].got) { /* in order: released at once */
    p2p_op next = o->ring[o->next % o->cap];
    o->ring[o->next % o->cap].got = 0;
    o->held--;
    o->next++;
    release(c, j, slot, &next);
  }
}

void an_p2p_slot_done(ctx *c, join_comm *j, int slot) {
  if (j->order && j->order[slot].held) order_drain(c, j, slot);
}

void an_p2p_finish(ctx *c, join_comm *j) {
  for (int k = 0; j->order && k < j->nslots; k++) an_p2p_slot_done(c, j, k);
  for (size_t i = 0; i < j->nqueue; i++) {
    p2p_queue *q = &j->queue[i];
    while (q->n) {
      p2p_op op = queue_pop(q);
      unmatched(c, j, q->side ? q->recv_slot : q->send_slot, &op);
    }
  }
}

void an_p2p_free(join_comm *j) {
  for (int k = 0; j->order && k < j->nslots; k++) topo_free(j->order[k].ring);
  topo_free(j->order);
  for (size_t i = 0; i < j->nqueue; i++) topo_free(j->queue[i].op);
  topo_free(j->queue);
  rp_map_free(&j->queue_of);
  j->order = NULL, j->queue = NULL, j->nqueue = j->cap_queue = 0;
}
