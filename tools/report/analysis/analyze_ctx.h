/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The analysis's own state, shared by the files of its pipeline and by nothing else (rp_analyze in
 * report_analysis.h is the entry point):
 *   analyze.c          rp_analyze: the passes in order, rp_report_free
 *   analyze_sources.c  inputs -> sources: descriptors held, ranks and communicators grouped,
 *                      sources read merged by time
 *   analyze_pass1.c    pass 1: the collective table, the join, steps, Kineto ranks, spans
 *   analyze_table.c    the collective table's rows, fit points and estimate keys
 *   analyze_join.c     the cross-rank join by (communicator, function, seq)
 *   analyze_p2p.c      p2p Send/Recv pairs joined by (communicator, sender, receiver, ordinal)
 *   analyze_cover.c    where each rank's compute timeline is known
 *   analyze_pass2.c    pass 2: each rank's sources through the interval sweep
 *   analyze_summary.c  after the passes: step windows, the plotted window, the step table
 * Not thread-safe: one ctx per rp_analyze call.
 */
#ifndef TOPO_REPORT_ANALYZE_H
#define TOPO_REPORT_ANALYZE_H

#include <stdint.h>

#include "alloc.h"
#include "kernel_stats.h"
#include "log.h"
#include "report.h"
#include "report_analysis.h"
#include "trace_reader.h"

/* ---- cross-rank join: NCCL's seqNumber counts per (communicator, function), so each
 * communicator holds one ring of open collectives per function. Its members are the ranks that
 * have a trace (slots, in rank order): memory follows the traces given, not the size a header
 * claims. */
typedef struct join_ring {
  uint64_t base; /* open entries cover seqs [base, base + cap) */
  int have_base;
  size_t cap;
  int evicted; /* some entry was closed by eviction: base never moves down again */
  uint64_t *seq;
  uint8_t *used; /* JOIN_FREE, JOIN_OPEN, or JOIN_DONE: counted when it became complete, kept
                  * (with its got bits) until the base passes it */
  int *have;
  int64_t *gpu, *cpu;   /* cap x nslots */
  int64_t *dur;         /* cap x nslots: its kernel's duration, measured or estimated; -1 unknown */
  uint64_t *bytes;      /* cap: the collective's bytes as its first record says */
  int *nranks;          /* cap: its communicator size as that record says */
  uint64_t *tag;        /* cap: its user tag as that record says (0 none) */
  int8_t *algo, *proto; /* cap: its algorithm and protocol as that record says (-1 unknown) */
  uint8_t *got;         /* cap x nslots: 1 cpu only, 2 gpu-timed */
  /* per slot: the lowest seq it has not delivered (at least the base once it delivered any); a slot
   * writes records out of seq order (a GPU-timed one after the untimed ones behind it), so its
   * latest seq says nothing about the ones still to come */
  uint64_t *next;
  uint64_t top; /* the highest seq entered */
  /* tournament tree over the slots (2 x width): leaf = next of a live slot (0 before its first
   * record), UINT64_MAX once it delivers no more; low[1] = the least of them: below it, no live
   * slot can add a record */
  uint64_t *low;
} join_ring;

enum { JOIN_FREE = 0, JOIN_OPEN = 1, JOIN_DONE = 2 };

#define JOIN_MAX_CAP (1u << 16)

/* ---- p2p join (analyze_p2p.c): a Send from rank s to rank d on a communicator pairs with the Recv
 * on d from s of the same ordinal, counted per (communicator, sender, receiver) on each side.
 * NCCL's profiler gives p2p no seqNumber; libtopo-profiler.so numbers a rank's p2p with one counter
 * per communicator, which is that rank's enqueue order and nothing across ranks: each slot's
 * records are put back into that order (they are written out of it, like collectives), and the
 * ordinals are counted from them. */
typedef struct p2p_op {
  int64_t gpu, cpu, dur; /* GPU start (when got == 2), CPU enqueue, kernel duration (-1 unknown) */
  uint64_t seq;          /* the slot's p2p counter */
  int32_t peer;
  uint8_t func, got; /* got: 0 an empty place, 1 CPU times only, 2 GPU-timed */
} p2p_op;

typedef struct p2p_order { /* one slot's p2p records, put back into its seq order */
  p2p_op *ring;            /* cap places; seq s at s % cap, seqs [next, next + cap) */
  size_t cap, held;
  uint64_t next; /* the lowest seq not yet released */
  int broken;    /* a seq never came: its ordinals after it are unknown, its later p2p unpaired */
} p2p_order;

typedef struct p2p_queue { /* one (sender, receiver) of a communicator: the side ahead's ops */
  int send_slot, recv_slot;
  int side;   /* the held ops are the sender's (0) or the receiver's (1) */
  p2p_op *op; /* a ring of cap: n ops from head, in ordinal order */
  size_t head, n, cap;
} p2p_queue;

typedef struct join_comm {
  uint64_t hash;
  int nranks;     /* communicator size, as its headers say */
  int nslots;     /* its ranks that have a trace */
  size_t width;   /* leaves of the rings' trees: nslots rounded up to a power of two */
  int *slot_proc; /* slot -> report rank index */
  int *live;      /* slot -> sources of it still delivering */
  int nlive;      /* slots with live > 0 */
  join_ring ring[RP_MAX_FUNC];
  rp_comm_summary *sum;
  int *slot_rank;   /* slot -> its rank in the communicator (ascending) */
  p2p_order *order; /* per slot, allocated at its first p2p record */
  p2p_queue *queue; /* per (sender, receiver) with traffic, found through queue_of */
  size_t nqueue, cap_queue;
  rp_map queue_of; /* send_slot << 32 | recv_slot -> index in queue */
} join_comm;

typedef struct ctx {
  rp_report *r;
  const rp_options *opt;
  join_comm *jc;
  size_t njc;
  int *src_comm;   /* source -> join_comm index, -1 none */
  int *src_slot;   /* source -> its slot in that join_comm */
  int bin_colls;   /* binary collectives seen: Kineto kernels do not feed the table */
  rp_steps *steps; /* pass 1: period detection (steps.c), NULL when off */
  rp_align *align; /* pass 0: alignment evidence, until solved */
  rp_sweep *sweep; /* pass 2: the rank being swept */
  int sweep_rank;
  int sweep_model;              /* it has an overlap model's chunks (>= 2): the sweep learns them */
  int64_t sweep_from, sweep_to; /* its figure window: the analysis window and its own */
  rp_estimator *est;            /* measured durations (pass 1), asked in pass 2 */
  uint32_t *stream_id; /* pass 2, the rank swept: the end of its last comm interval per stream */
  int64_t *stream_end;
  size_t nstreams, cap_streams;
  rp_map stream_of;     /* stream id -> its index there */
  rp_map rank_of_world; /* pass 1: world rank -> the first rank (process) of it, when still valid */
  int64_t last_progress;
  uint64_t total_bytes;  /* input bytes x passes */
  uint64_t closed_bytes; /* bytes read by sources already closed */
  int progress;
  rp_map row_of, fit_of; /* row and fit point keys -> their index */
  rp_map tag_of;         /* user tag -> its row-key index (1, 2, ...; untagged: 0, not here) */
  uint32_t ntags;
  uint8_t *held;     /* per source: 1 while it holds a descriptor */
  int nheld, budget; /* sources holding one; the most that may */
  int hand;          /* clock hand: the next source considered for suspension */
  topo_status st;
} ctx;

/* ---- the analysis window (rp_options.window): [from, to) on the aligned clock */
static inline int in_window(const rp_report *r, int64_t t) {
  return !r->window || (t >= r->win_from && t < r->win_to);
}

/* Clip [*a, *b) to the window; 0 when nothing is left. */
static inline int clip_window(const rp_report *r, int64_t *a, int64_t *b) {
  if (!r->window) return *b > *a;
  if (*a < r->win_from) *a = r->win_from;
  if (*b > r->win_to) *b = r->win_to;
  return *b > *a;
}

/* The same for report rank `proc` (-1: none), its complete-steps window included. */
static inline int in_rank_window(const rp_report *r, int proc, int64_t t) {
  if (!in_window(r, t)) return 0;
  if (proc < 0 || proc >= r->nranks || !r->ranks[proc].win) return 1;
  return t >= r->ranks[proc].win_from && t < r->ranks[proc].win_to;
}

/* The same clip for report rank `proc`. */
static inline int clip_rank(const rp_report *r, int proc, int64_t *a, int64_t *b) {
  if (!clip_window(r, a, b)) return 0;
  if (proc < 0 || proc >= r->nranks || !r->ranks[proc].win) return 1;
  if (*a < r->ranks[proc].win_from) *a = r->ranks[proc].win_from;
  if (*b > r->ranks[proc].win_to) *b = r->ranks[proc].win_to;
  return *b > *a;
}

/* ---- analyze_sources.c */
/* Progress on stderr (at most once a second unless `force`), when enabled. */
void an_progress(ctx *c, const char *what, int force);
/* Sources that may hold a descriptor at once, from RLIMIT_NOFILE. */
int an_open_budget(void);
void an_hold(ctx *c, int i);
void an_unhold(ctx *c, int i);
void an_close_src(ctx *c, rp_source *s);
/* A new report rank (process); its index, -1 out of memory. */
int an_rank_add(rp_report *r, const char *host, uint32_t pid, int world_rank);
void an_merged(ctx *c, int *idx, int n, const rp_sink *sink, int pass, const char *what);
topo_status an_group_processes(rp_report *r, const int *bin, int nbin);
topo_status an_group_comms(ctx *c, const int *bin, int nbin);
/* One rp_source per input file, not yet opened. */
topo_status an_add_sources(rp_report *r, char **files, int nfiles, const rp_options *opt);

/* ---- analyze_table.c */
rp_row *an_row_get(ctx *c, int func, int nranks, int bucket, uint64_t tag);
/* A collective into its row (and fit point, when GPU-timed). */
void an_table_add(ctx *c, const rp_coll *co);
/* A joined call's time after the last rank's start on one rank (rp_row.xfer, rp_fitpt.xfer). */
void an_table_xfer(ctx *c, int func, int algo, int proto, uint64_t bytes, int nranks, uint64_t tag,
                   int64_t xfer);
/* The estimator's key of a collective. */
rp_est_key an_est_key(const rp_coll *co);
/* A GPU-timed collective's duration into the estimator. */
void an_est_learn(ctx *c, const rp_coll *co);
/* How long an operation's kernel lasted on that rank: measured, else estimated; -1 unknown. */
int64_t an_kernel_ns(const ctx *c, const rp_coll *co);

/* ---- analyze_join.c */
void an_join_add(ctx *c, join_comm *j, int slot, const rp_coll *co);
void an_join_source_done(ctx *c, join_comm *j, int slot);
/* The ring size a join holds per function (or per slot's p2p): JOIN_MAX_CAP, less past 256
 * slots. */
static inline size_t an_join_limit(const join_comm *j) {
  size_t limit = JOIN_MAX_CAP;
  while (limit > 16 && limit * (size_t)j->nslots > (1u << 24)) limit /= 2;
  return limit;
}

/* ---- analyze_p2p.c */
/* A p2p record of slot `slot` (any order): paired once its ordinal is known and its partner came. */
void an_p2p_add(ctx *c, join_comm *j, int slot, const rp_coll *co);
/* Every source of `slot` has delivered everything: its records held are released. */
void an_p2p_slot_done(ctx *c, join_comm *j, int slot);
/* After the last record: everything still held is counted unmatched. */
void an_p2p_finish(ctx *c, join_comm *j);
void an_p2p_free(join_comm *j);
void an_join_progress(ctx *c, join_comm *j);
void an_join_evict_all(ctx *c, join_comm *j);
/* Frees what the join holds (not j itself). */
void an_join_free(join_comm *j);

/* ---- analyze_cover.c */
void an_cupti_span(ctx *c, rp_source *s, const topo_rec_cupti *u);
void an_cover_build(ctx *c);
/* 1 when t lies in one of rank k's coverage windows. */
int an_in_cover(const rp_rank *k, int64_t t);
/* After pass 2 swept rank k's chunks: its overlap model (k->model); the chunks freed. */
void an_model_finish(rp_rank *k);

/* ---- analyze_pass1.c */
/* Pass 1: the Kineto/Chrome JSON inputs one at a time, then the binary traces `bin` merged by
 * time; the join drained, the steps detected. Errors in c->st. */
void an_pass1(ctx *c, int *bin, int nbin);

/* ---- analyze_pass2.c */
/* Pass 2: every rank's sources merged by time through the sweep; fills each rank's times and
 * the overall ones. Errors in c->st. */
void an_pass2(ctx *c);

/* ---- analyze_summary.c */
/* Each rank's steps from one source (Kineto over marks), sorted by start. */
void an_steps_settle(rp_report *r);
/* Steps clipped to the analysis window, those wholly outside dropped (after the coverage, which
 * sees every step, is built). */
void an_steps_clip(rp_report *r);
/* The window the timeline plot shows (the median step of the rank with most steps). */
void an_choose_window(rp_report *r);
/* Steps grouped by number across ranks. */
topo_status an_step_summary(rp_report *r);

#endif
