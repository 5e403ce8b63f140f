/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model/: what every folder of topo-report shares, and nothing else: the data model below and
 * util.c (quantiles, the key map, NCCL names, number formatting). Imports nothing of the report.
 * The folders, in the order data flows (docs/design.md, Layout): inputs/ -> analysis/ (which
 * calls kernels/) -> render/ and fit/; main.c on top. Each folder's header says what it holds.
 *
 * topo-report's internal model: the inputs (binary traces, Kineto/Chrome JSON), the per-rank
 * interval sweep, the collective table, the cross-rank join, and the finished report that every
 * renderer (text, JSON, CSV, HTML, Chrome export, diff, fit) reads. Definitions of every metric:
 * docs/metrics.md.
 *
 * Times: every timestamp is converted on input to one aligned clock, ns of CLOCK_REALTIME of the
 * writing host (binary traces: from each header's calibration; Kineto: its µs timestamps plus
 * baseTimeNanoseconds). Renderers show them relative to rp_report.t0.
 *
 * Memory: the analysis streams its inputs twice (pass 1: collectives, steps, joins; pass 2: the
 * interval sweep, one rank at a time). State grows with ranks, open intervals (bounded by the
 * reorder window), open cross-rank joins, distinct (collective, size) rows and steps; never with
 * the number of events. Single-threaded. Every allocation goes through common/alloc.h.
 */
#ifndef TOPO_REPORT_H
#define TOPO_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "status.h"
#include "trace_format.h"

#define RP_MAX_FUNC       16    /* ncclFunc_t values kept apart; higher ones share the last */
#define RP_EXACT_SAMPLES  4096  /* quantiles are exact up to this many samples */
#define RP_TIMELINE_CAP   20000 /* intervals kept per rank for the HTML timeline (<= 16 ranks) */
#define RP_TIMELINE_RANKS 64    /* ranks drawn in the HTML timeline */

typedef struct rp_report rp_report_fwd;

/* ---- quantiles: exact up to RP_EXACT_SAMPLES samples, then a log-linear histogram (< 0.4 %).
 * Memory follows the samples: the exact buffer starts at 16 and doubles. */
typedef struct rp_quant {
  uint64_t n;
  double sum;
  int64_t min, max;
  int64_t *exact; /* n values while n <= RP_EXACT_SAMPLES */
  uint32_t *hist; /* allocated when n first exceeds RP_EXACT_SAMPLES */
} rp_quant;
void rp_quant_add(rp_quant *q, int64_t v);
int64_t rp_quant_get(const rp_quant *q, double p); /* p in [0,1]; 0 when empty */
int rp_quant_is_exact(const rp_quant *q);
void rp_quant_free(rp_quant *q);

/* ---- a map from 64-bit keys to 32-bit values (util.c): the tables that grow with what the
 * input holds (ranks, communicators, rows) find their entries in O(1), not by a scan. Open
 * addressing; memory about 24 bytes per entry. */
typedef struct rp_map {
  uint64_t *key;
  uint32_t *val; /* value + 1; 0 = empty slot */
  size_t cap, n;
} rp_map;
/* 1 and *val when `key` is present, else 0. */
int rp_map_find(const rp_map *m, uint64_t key, uint32_t *val);
/* Stores key -> val (key not yet present, val < UINT32_MAX); 0 when out of memory. */
int rp_map_add(rp_map *m, uint64_t key, uint32_t val);
/* Stores key -> val, replacing the value of a key present; 0 when out of memory. */
int rp_map_put(rp_map *m, uint64_t key, uint32_t val);
void rp_map_free(rp_map *m);

/* ---- interval classes, steps and unions (swept by analysis/sweep.c) */
enum rp_class { RP_COMM = 0, RP_COMPUTE = 1, RP_MEMORY = 2, RP_CLASSES };
/* RP_FROM_ESTIMATE: an untimed collective placed with its estimated duration (estimate.c). */
enum rp_origin { RP_FROM_COLL = 0, RP_FROM_KERNEL = 1, RP_FROM_ESTIMATE = 2 };

typedef struct rp_interval {
  int64_t start, stop;
  uint32_t stream;
  uint8_t cls;
  uint8_t func;   /* communication: ncclFunc_t when known, 0xff otherwise */
  uint8_t origin; /* enum rp_origin */
  uint32_t name;  /* name id of the source (binary: string id; 0 = none) */
} rp_interval;

typedef struct rp_step {
  int64_t start, stop;                  /* aligned clock */
  uint64_t value;                       /* step number (a group's first: rp_rank_add_step) */
  uint64_t last;                        /* a group of step numbers value..last; value alone: = */
  uint64_t count;                       /* steps merged into it (1: one step) */
  int64_t comm, compute, overlap, busy; /* filled by the sweep */
  int64_t comm_est;                     /* comm time only estimated intervals cover */
  /* inside the rank's compute coverage (docs/metrics.md, Coverage): its length, and the unions
   * there; compute, overlap and exposed of a step are known only over `covered` */
  int64_t covered, cov_comm, cov_compute, cov_overlap, cov_busy;
  double est_var, est_bias, est_sum; /* error terms and durations of the estimates that start
                                        * in it (rp_err) */
  int from_kineto;                   /* a Kineto ProfilerStep (else a topo step mark or a period) */
  int period;      /* > 0: detected from topo traces, this many operations per step */
  int warmup;      /* detected from topo traces before the steady state (docs/metrics.md, Steps) */
  int64_t stretch; /* an overlap model chunk: the coverage stretch holding it (runs of covered
                    * steps, or a window) */
  int64_t len0;    /* its length before the analysis window clipped it (0: not clipped) */
} rp_step;

typedef struct rp_times {
  int64_t first, last; /* first start, last stop over all GPU intervals (INT64_MAX/MIN: none) */
  int64_t comm, compute, overlap, busy, memory; /* union lengths, ns */
  uint64_t intervals[RP_CLASSES];
  uint64_t late;    /* intervals that arrived after the sweep passed them (clipped) */
  int64_t comm_est; /* comm time covered only by estimated intervals */
  /* Coverage: where the compute timeline is known (rp_sweep_cover). covered = its length inside
   * [first, last); cov_*: the unions restricted to it. */
  int64_t covered, cov_comm, cov_compute, cov_overlap, cov_busy, cov_memory;
} rp_times;

/* ---- a collective observation as the inputs deliver it */
typedef struct rp_coll {
  int func;        /* ncclFunc_t */
  int algo, proto; /* -1 unknown */
  int nchannels;   /* 0 unknown */
  int nranks;      /* communicator size (0 unknown) */
  uint64_t comm;
  uint64_t seq;
  uint64_t bytes;              /* as the Coll event reports it (AG/RS: the per-rank part) */
  int size_unknown;            /* 1: the input gives no size (a Kineto kernel without its op) */
  int src;                     /* the rp_source it comes from */
  int64_t cpu_start, cpu_stop; /* aligned */
  int64_t gpu_start, gpu_stop; /* aligned; valid when timed */
  int timed;
  int asked;   /* TOPO_COLL_F_GPU_ASKED: GPU timing was requested */
  int startup; /* TOPO_COLL_F_STARTUP: asked in the process's start-up (before its step was steady) */
  int p2p;
  int peer; /* topo traces: root of a rooted collective, peer of a p2p, -1 otherwise */
  uint32_t stream;
  /* NCCL 2.31+ (profiler ABI v7): the call's user tag (0 untagged), whether a symmetric kernel ran
   * it (algo / proto then unknown) and its variant ("" none) */
  uint64_t user_tag;
  int sym;
  char variant[TOPO_EXT_VARIANT_MAX + 1];
} rp_coll;

/* nccl-tests "size" of a collective (AG/RS: bytes x nranks) and its busbw factor. */
uint64_t rp_coll_size(int func, uint64_t bytes, int nranks);
double rp_busbw_factor(int func, int nranks);
const char *rp_func_name(int func); /* "AllReduce", ... ; "Func<n>" style for others */
/* A start-skew row's name (rp_report.skew): rp_func_name, and "Send/Recv" for the p2p pairs
 * (their row is ncclFuncSend's; docs/metrics.md, Across ranks). */
const char *rp_skew_name(int func);
const char *rp_algo_name(int algo);   /* "Ring", ..., "?" */
const char *rp_proto_name(int proto); /* "LL", "LL128", "Simple", "?" */
/* Recognise an NCCL kernel name (ncclDevKernel_*, ncclKernel_*, ncclSymkDevKernel_*, nccl*): 1
 * when it is one; *func from the name where it says (else -1). Never an algorithm or protocol: a
 * name's suffix is the kernel's entry point, not what ran (NVIDIA/nccl#2196), and NCCL 2.31's
 * names have none. */
int rp_nccl_kernel_parse(const char *name, int *func);

/* ---- what the inputs deliver (inputs/) */
typedef enum rp_source_kind { RP_SRC_TRACE, RP_SRC_KINETO } rp_source_kind;

/* One complete ('X') Kineto event as the kernel-level analyses (kernels/kernel_stats.h) read it: CPU runtime
 * and driver calls and GPU activities alike (ProfilerStep annotations excepted). Times aligned ns;
 * the strings live until the callback returns. */
typedef struct rp_kevent {
  const char *name, *cat;
  int64_t start, dur;
  int64_t stream; /* args.stream; -1 absent (HTA: a GPU event has one) */
  int64_t corr;   /* args.correlation; -1 absent */
  int64_t bytes;  /* args.bytes; -1 absent */
  double bw_gbps; /* args."memory bandwidth (GB/s)"; < 0 absent */
} rp_kevent;

/* What a source hands the analysis. Each callback may be NULL. */
typedef struct rp_sink {
  void *ctx;
  void (*coll)(void *ctx, int src, const rp_coll *c);
  void (*interval)(void *ctx, int src, const rp_interval *iv);
  void (*step)(void *ctx, int src, int64_t start, int64_t stop, uint64_t value);
  void (*record)(void *ctx, int src, const topo_trace_record *rec); /* binary only (dump) */
  void (*kevent)(void *ctx, int src, const rp_kevent *e);           /* Kineto only */
} rp_sink;

typedef struct rp_source {
  rp_source_kind kind;
  char *path;
  int index;
  /* from the header (binary) or the JSON (Kineto) */
  topo_trace_header header;
  int header_ok;
  int rank; /* rank in its communicator; Kineto: distributedInfo.rank (-1 unknown) */
  int nranks;
  int64_t mono_to_real;        /* add to CLOCK_MONOTONIC ns */
  int64_t gpu_to_real;         /* add to globaltimer ns */
  int64_t cupti_to_real;       /* add to CUPTI ns */
  int64_t kineto_base;         /* Kineto baseTimeNanoseconds (0 when absent) */
  int64_t gpu_first, gpu_last; /* Kineto: aligned range of its GPU events (pass 1) */
  int proc;                    /* index of the rank (process) it belongs to, -1 until known */
  int gpu_aligned; /* 1: gpu_to_real was set by the alignment (align.c), not the header */
  int quiet;       /* no warnings (second pass, --quiet) */
  /* learned in pass 1 */
  uint64_t records, colls, timed_colls, nccl_kernels, compute_kernels, memory_kernels;
  uint64_t dropped[TOPO_DROP_KINDS];
  uint64_t json_bad_times; /* Kineto: events whose ts or dur is no finite time in range: not used */
  uint64_t json_nonfinite; /* Kineto: numbers read that are not finite (NaN, Infinity): unknown */
  uint32_t problems;
  int footer;
  int unreadable;          /* errno of a failed open or read: not (wholly) read; 0 when read */
  struct rp_kspill *spill; /* Kineto: pass 1's record for pass 2 (NULL: pass 2 reads the JSON) */
  int want_spill;          /* pass 1 makes one */
  /* streaming state */
  void *impl;
  int64_t frontier; /* aligned time of the latest thing delivered */
  int done;
  /* binary: COLL_EXT records waiting for their COLL/P2P (written just before it; other threads'
   * records may come between), the oldest overwritten first */
  topo_rec_coll_ext ext[8];
  unsigned ext_next;
} rp_source;

/* ---- estimates of untimed collectives and their errors (analysis/estimate.c) */
typedef struct rp_est_key {
  int nranks, func, bucket, algo, proto, nchannels;
  int src;   /* the trace (one rank's communicator) of the call: rp_source index */
  int phase; /* 1: start-up (TOPO_COLL_F_STARTUP), 0: after it or not known */
} rp_est_key;
enum rp_est_level {
  RP_EST_UNKNOWN = 0,      /* nothing measured to estimate from: adds nothing (a lower bound) */
  RP_EST_KEY = 1,          /* mean of the same key in the same trace (same phase where it has
                            * measured calls, docs/metrics.md) */
  RP_EST_OTHER_RANKS = 2,  /* same key, measured in other traces (ranks) only */
  RP_EST_ANY_CHANNELS = 3, /* same key, any channel count, any trace */
  RP_EST_SCALED = 4,       /* nearest measured size bucket, scaled by size */
  RP_EST_LEVELS
};
typedef struct rp_estimate {
  int level;
  int64_t dur;  /* estimated GPU duration, ns */
  int64_t err;  /* scatter of one call (independent between calls), ns, at ~95 % */
  int64_t bias; /* error shared by every call estimated the same way, ns, at ~95 % */
} rp_estimate;
/* Error of a total of estimates: sqrt(sum err^2 + (sum bias)^2) (scatter adds in quadrature,
 * shared errors add linearly). */
typedef struct rp_err {
  double var, bias;
  double sum; /* the estimated durations, ns */
} rp_err;

/* ---- the overlap model (analysis/omodel.c; docs/metrics.md, Coverage): what exposed
 * communication is where compute was not recorded, learned from the rank's covered chunks of the
 * whole input (its steps inside the coverage, else the coverage windows), whatever the analysis
 * window. */
typedef struct rp_omodel {
  int ok;               /* >= 2 chunks carry communication: a ratio and a spread */
  int steps;            /* the chunks are whole steps (a step is the unit of the intercept) */
  uint64_t chunks;      /* chunks that carry communication (outliers not counted) */
  uint64_t outliers;    /* chunks left out: ratio far from the others' (warm-up, a phase) */
  double comm, overlap; /* their covered communication and overlapped time, ns */
  double wx2;           /* sum over them of comm x ratio^2 (= overlap^2 / comm) */
  double c2;            /* sum over them of comm^2 (their comm-weighted mean comm: c2 / comm) */
  double inv, sx_c;     /* sums over them of 1 / comm and of their ratios */
  /* windows: the stretches of coverage the chunks lie in (runs of covered steps, or windows);
   * sx, sx2: sums of their ratios (overlap / comm of each) and squares; sm, sm2, sxm: of their
   * chunks per ns of comm (m), its square and x m; st_*: the one open */
  uint64_t windows;
  double sx, sx2, sm, sm2, sxm;
  double st_comm, st_overlap, st_n;
  int64_t st_id;
  double ratio, spread; /* overlap / comm; comm-weighted std. deviation of the chunks' residuals
                         * about the chosen line, per ns of comm */
  double drift;         /* spread of a stretch's residual per ns of comm (docs/metrics.md) */
  const char *reason;   /* why there is no model (static text); NULL when ok */
  /* The chosen line (docs/metrics.md, the overlap model): a chunk's overlapped time is a + b x
   * its comm; RP_OMODEL_RATIO: a = 0, b = ratio; RP_OMODEL_AFFINE where the intercept is told
   * apart from 0. fit: the affine fit is determined (>= 3 step chunks whose comm differs); va,
   * vb, vab: its parameters' covariance (ns^2, 1, ns), dof its chunks - 2. */
  int form, fit;
  int prefer_affine; /* the affine line predicted left-out stretches better (rp_omodel_add_robust) */
  double a, b;
  double va, vb, vab;
  double dof;
} rp_omodel;
enum { RP_OMODEL_RATIO = 0, RP_OMODEL_AFFINE = 1 };

/* ---- the analysis's tables (analysis/) */
#define RP_BUCKET_UNKNOWN (-2) /* a row of calls whose size the input does not give */
typedef struct rp_row { /* one collective type x communicator size x size bucket x user tag */
  /* bucket: floor(log2(size)), -1 for size 0, RP_BUCKET_UNKNOWN; nranks 0: unknown */
  int func, nranks, bucket;
  uint64_t tag; /* the calls' user tag (NCCL 2.31+ ncclCollConfig_t), 0 untagged */
  uint64_t calls, timed;
  uint64_t size_sum, timed_size_sum; /* nccl-tests sizes */
  rp_quant time;                     /* GPU duration per rank and call, ns */
  uint64_t algo_proto[8][4];         /* counts; index 7 / 3 = unknown */
  int ch_min, ch_max;
  /* untimed calls (pass 2): estimated, of which by fallback; unknown; GPU timing asked but lost */
  uint64_t estimated, est_fallback, unknown, lost;
  uint64_t est_scaled; /* of est_fallback: scaled from another size (a model, no ~95 % promise) */
  int64_t est_sum;     /* sum of their estimated durations, ns */
  rp_err est_err;
  /* calls a symmetric kernel ran (counted as algorithm/protocol unknown in algo_proto) and their
   * kernel variant: the first seen, `variants` > 1 when they differ */
  uint64_t sym;
  char variant[TOPO_EXT_VARIANT_MAX + 1];
  int variants;
  /* joined calls with every rank's GPU start (analyze_join.c): per rank and call, the time from
   * the last rank's kernel start to its own stop (the transfer without waiting for the last rank),
   * and the sum of their sizes */
  rp_quant xfer;
  uint64_t xfer_size_sum;
} rp_row;
/* A row's (function, communicator size, bucket, tag) packed into the 64-bit key rows are found by
 * in an rp_map (func < RP_MAX_FUNC, RP_BUCKET_UNKNOWN <= bucket < 64, tag_index < 65536: a small
 * number standing for the tag in one analysis, 0 for untagged): one row per key. */
static inline uint64_t rp_row_key(int func, int nranks, int bucket, uint32_t tag_index) {
  return (uint64_t)(uint32_t)nranks << 32 | (uint64_t)(tag_index & 0xffff) << 16 |
         (uint64_t)(uint32_t)func << 8 | (uint64_t)(uint8_t)(bucket + 2);
}
/* The label of a row's algorithm/protocol cell: "Ring/Simple", "?" when unknown (Kineto), "sym
 * AGxLL_R" (a symmetric kernel's variant; "sym" when they differ). */
void rp_row_choice_label(const rp_row *w, char *buf, size_t len);

typedef struct rp_fitpt { /* fit input: (func, algo, proto, nranks, bucket) */
  int func, algo, proto, nranks, bucket;
  uint64_t n;
  double size_sum;
  uint64_t size_min, size_max; /* smallest / largest size of its calls */
  int nchannels;               /* channels its calls ran; 0 unknown, -1 they differ */
  rp_quant time;
  /* the time after the last rank's start (rp_row.xfer) of its joined calls, and their sizes */
  rp_quant xfer;
  double xfer_size_sum;
} rp_fitpt;

typedef struct rp_rank {
  int world_rank; /* rank in its largest communicator, or Kineto rank */
  int world_size; /* that communicator's size */
  char host[64];
  uint32_t pid;
  int nsources;
  int comm_from_kernels;  /* 1: NCCL kernel records give the comm intervals */
  int kineto;             /* 1: a Kineto/Chrome JSON file gives (some of) its intervals */
  uint64_t trace_kernels; /* CUPTI kernel records in its topo traces */
  rp_times t;
  rp_step *steps;
  size_t nsteps, cap_steps;
  int step_shift; /* its rows are groups of 2^step_shift step numbers (RP_STEPS_KEEP) */
  /* cross-rank */
  uint64_t joined, last_count;   /* collectives and p2p pairs joined; times it started last */
  int64_t wait_total;            /* sum of (last start - own start) */
  int64_t late_total;            /* sum of skew when it was the last to start */
  uint64_t missed;               /* joined collectives of its communicators it has no record of */
  uint64_t joined_gpu;           /* of `joined`: judged by GPU start times (else CPU enqueue) */
  uint64_t wait_clamped;         /* GPU waits cut to the rank's own kernel span (alignment off) */
  uint64_t wait_clamped_enqueue; /* enqueue-judged waits cut to its kernel (measured/estimated) */
  /* GPU-clock alignment (align.c; docs/metrics.md, Alignment). off = GPU clock - realtime. */
  int align_method;             /* enum rp_align_method */
  int align_inconsistent;       /* its bounds crossed (lower > upper): the lower bound was used */
  int64_t gpu_offset;           /* the offset its GPU times were aligned with, ns */
  int64_t off_lower, off_upper; /* its own bounds on off; INT64_MIN / INT64_MAX: none */
  int64_t align_err;            /* bound on its GPU times' error against the other ranks', ns;
                                     -1: unbounded (no upper bound, no anchor) */
  uint64_t anchors;             /* collectives whose GPU stops tied it to its group */
  uint64_t colls, timed_colls;
  /* untimed collectives of this rank by estimate level; asked-but-lost ones */
  uint64_t est[RP_EST_LEVELS], lost;
  rp_err comm_err; /* error terms of its estimated comm intervals */
  /* the overlap model: its chunks (sorted by start) until pass 2 has swept them, then the model */
  rp_step *chunks;
  size_t nchunks;
  rp_omodel model;
  /* compute coverage (docs/metrics.md, Coverage): sorted disjoint [a, b) pairs */
  int64_t *cover;
  size_t ncover, cap_cover;
  int cover_whole; /* a CUPTI trace with kernels but no span records */
  uint64_t cupti_spans, cupti_declined, cupti_failed;
  int cupti_asked;       /* a topo communicator trace of it has TOPO_TRACE_F_CUPTI */
  int cupti_trace;       /* a topo process-wide CUPTI trace of it was read */
  uint64_t largest_coll; /* bytes of its largest Coll/P2p record (topo traces) */
  char cover_note[320];  /* why compute is unknown (everywhere or outside the windows) */
  /* Start-up left out of the coverage (docs/metrics.md, Coverage): warm-up steps inside its CUPTI
   * windows, and windows that ended before its first steady step; and the steady steps the
   * coverage holds (their numbers first..last) */
  size_t startup_steps, startup_windows, cover_steps;
  /* windows of a rank with steps that hold no whole steady step (after the steady state began):
   * part of a step, left out of the coverage */
  size_t part_step_windows;
  uint64_t cover_first, cover_last;
  uint64_t dropped[TOPO_DROP_KINDS];
  uint64_t json_bad_times; /* Kineto: events whose ts or dur is no finite time in range: not used */
  uint64_t json_nonfinite; /* Kineto: numbers read that are not finite (NaN, Infinity): unknown */
  uint32_t problems;
  rp_interval *timeline;
  size_t ntimeline;
  uint64_t timeline_dropped;
  struct rp_gpu *gpu; /* kernel-level analyses of its Kineto events (kernel_stats.h), or NULL */
  /* --steps complete: the rank's window on the aligned clock, [win_from, win_to), when win; the
   * steps it holds (first..last) and the one left out (dropped, the last ProfilerStep) */
  int win;
  int64_t win_from, win_to;
  /* The rank's activity in the whole input, before any window (pass 1): a window the rank was
   * active across is its span there, whether or not its first and last recorded events inside
   * reach the window's ends (docs/metrics.md, Window). */
  int64_t ext_first, ext_last;
  int steps_gpu; /* its steps from topo traces are cut at GPU times: 1 the end of each step's last
                  * operation, 2 the start of its first; 0 at CPU enqueue times */
  int chunks_partial; /* it has steps but none lies inside a coverage window: the overlap model's
                       * chunks are the windows, parts of steps */
  int chunks_steps;   /* the overlap model's chunks are whole steps (else windows) */
  uint64_t win_first, win_last, win_dropped;
  size_t win_steps; /* ProfilerSteps the rank had (when < 2: no window, all events) */
} rp_rank;

/* Steps a rank keeps: at most RP_STEPS_KEEP rows (without --all-steps). Past that, rows become
 * groups of 2^shift consecutive step numbers (step n in group n >> shift), merged: the group's
 * time range is its steps' (first start to last stop), its figures are measured over that range,
 * `count` says how many steps it holds. Every rank of a report ends with the same shift
 * (an_steps_settle), so groups line up across ranks and the step table sums them as it sums
 * steps. Memory per rank stays bounded whatever the number of steps. */
#define RP_STEPS_KEEP 4096

typedef struct rp_comm_summary {
  uint64_t hash;
  int nranks, ranks_seen;
  uint64_t joined, incomplete; /* collectives joined by (func, seq); lacking some rank */
  uint64_t late;     /* records that came after their collective was closed (more out of seq order
                  * than the join holds): not joined, their collective counted without them */
  rp_quant skew;     /* start skew per joined collective and p2p pair, ns */
  uint64_t skew_gpu; /* of skew.n: from GPU starts (the rest: CPU enqueue starts) */
  /* p2p (analyze_p2p.c): Send/Recv pairs joined; operations whose partner's record never came
   * (its peer's trace not given or cut, a record lost): neither joined nor a missing rank */
  uint64_t p2p_pairs, p2p_unmatched;
} rp_comm_summary;

typedef struct rp_stepsum { /* one step number (or group), summed over the ranks that have it */
  uint64_t value, last;     /* step numbers value..last (one: value == last) */
  uint64_t count;           /* steps summed, over the ranks */
  int ranks;
  int64_t span, comm, compute, overlap, busy; /* sums over ranks, ns */
  int64_t comm_est;
  rp_err comm_err;
  /* over the ranks with coverage in the step: how many, and sums of their covered figures */
  int cov_ranks;
  int64_t covered, cov_comm, cov_compute, cov_overlap, cov_busy;
  /* exposed communication over the whole step (rp_exposed_all), summed over the ranks where it
   * is known: how many, the sum, its estimated part and error (shared: adds linearly) */
  int ea_ranks, ea_estimated; /* ea_estimated: part of it estimated on some rank */
  int64_t exposed_all, exposed_est;
  rp_err exposed_err;
  int warmup; /* some rank had it before its steady state (steps from topo traces) */
} rp_stepsum;

/* Figures derived from a rank's unions (docs/metrics.md). comm and comm_share hold over the whole
 * span (comm_est of it estimated, +-comm_error); compute, overlap, exposed, idle, memory, busy and
 * their shares only over the covered time (covered of span), and only when known. */
typedef struct rp_derived {
  int64_t span, comm, compute, overlap, exposed, idle, memory, busy;
  double comm_share, overlap_ratio, exposed_share, compute_share, idle_share;
  int64_t comm_est, comm_error;
  int known;           /* compute timeline known somewhere in the span */
  int overlap_defined; /* known, and communication inside the covered time: without
                                     it the overlap ratio is undefined (null / "n/a"), not 0 */
  int64_t covered;
  double covered_share; /* covered / span */
  int ranks_known;      /* overall: ranks whose compute figures are summed */
  /* exposed communication over the whole span: measured where compute is covered, estimated by
   * the overlap model elsewhere (docs/metrics.md, Coverage); known only with exposed_all_known */
  int exposed_all_known;
  int exposed_all_estimated; /* part of it estimated (some communication was not covered) */
  int64_t exposed_all, exposed_est, exposed_all_error;
  double exposed_all_share, overlap_all_ratio; /* of the span; 1 - exposed_all / comm */
  int overlap_all_defined;                     /* exposed_all known and comm > 0 */
  int ranks_exposed_all;                       /* overall: ranks summed in exposed_all */
  rp_omodel model;                             /* overall: the chunks of every rank's model */
} rp_derived;

/* The events a report counts (docs/metrics.md, Step windows): all of them (the default), or per
 * rank those of its complete profiler steps: from its first ProfilerStep to the end of the one
 * before its last (the last one is cut short when the profiler stops). */
enum { RP_WINDOW_ALL = 0, RP_WINDOW_COMPLETE_STEPS = 1 };

/* A directory argument holding PyTorch (JSON) traces: its runs and the one read. */
typedef struct rp_run_note {
  char *dir;
  int nruns;        /* runs found (tensorboard_trace_handler cycles or jobs) */
  int used;         /* 1-based run read; 0: all of them (--all-runs) */
  int files;        /* JSON traces read from it */
  int64_t first_ns; /* time of the run's first file (its name's stamp, else mtime) */
} rp_run_note;

typedef struct rp_options {
  size_t reorder_window; /* intervals held to sort the sweep (default 65536) */
  int progress;          /* 1: progress lines on stderr; -1: auto (when stderr is a tty) */
  int quiet;             /* no warnings about damaged traces */
  /* Analysis window on the aligned clock (ns of CLOCK_REALTIME): when `window` is set, every
   * interval is clipped to [from, to), steps too, and a collective counts when its start (GPU,
   * else CPU) lies inside (docs/metrics.md, Window). */
  int window;
  int64_t from, to;
  int steps;       /* steps from topo traces: 0 auto, -1 off, > 0 force this period */
  int step_window; /* RP_WINDOW_ALL or RP_WINDOW_COMPLETE_STEPS */
  int run;         /* a directory with several runs: read this one (1-based, by
                                     time); 0: the latest */
  int all_runs;    /* 1: read every run of a directory as one */
  int reread_json; /* tests: pass 2 parses Kineto JSON again instead of replaying
                                     pass 1's record of it */
  int all_steps;   /* 1: every step kept on its own, memory following the steps; 0: at most
                      RP_STEPS_KEEP rows a rank (rp_rank_add_step) */
} rp_options;

typedef struct rp_report {
  rp_source *src;
  int nsrc;
  rp_rank *ranks;
  int nranks, cap_ranks;
  rp_row **rows;
  size_t nrows, cap_rows;
  rp_fitpt **fit;
  size_t nfit, cap_fit;
  rp_comm_summary *comms;
  size_t ncomms;
  rp_quant skew[RP_MAX_FUNC];     /* start skew per collective type; p2p pairs: Send's */
  uint64_t skew_gpu[RP_MAX_FUNC]; /* of skew[f].n: from GPU starts (the rest: CPU enqueue) */
  rp_quant skew_gpu_all;          /* start skew of the GPU-judged joins, every type */
  uint64_t skew_clamped;          /* GPU skews cut to the first starter's kernel span */
  int64_t align_err;              /* bound on the relative error of two ranks' GPU times, ns;
                                     -1 unbounded, 0 with no GPU-timed rank */
  int align_warn;                 /* 1: align_err unbounded or > the median GPU skew */
  uint64_t records, colls, p2p, timed_colls;
  int64_t t0, t_end;              /* earliest / latest aligned time seen */
  int64_t window_from, window_to; /* timeline window */
  rp_times overall;               /* sums over ranks (first/last: min/max) */
  rp_stepsum *stepsum;            /* by step number */
  size_t nstepsum;
  int step_shift; /* every rank's: step rows are groups of 2^step_shift step numbers (0: steps) */
  size_t steps_keep; /* step rows a rank keeps (RP_STEPS_KEEP; 0: all, --all-steps) */
  int step_period;   /* > 0: some ranks' steps detected from topo traces (steps.c) */
  int steps_detect;  /* RP_STEPS_*: outcome of the detection */
  int have_kineto, have_trace, colls_from_kineto;
  int have_tags;   /* a row carries a user tag: the tables show a tag column */
  int window;      /* the analysis window of rp_options applied */
  int step_window; /* RP_WINDOW_*: the events counted */
  int ranks_cut;   /* ranks with a complete-steps window */
  int64_t win_from, win_to;
  /* aligned time each kind of input covers (INT64_MAX/MIN: none), window applied */
  int64_t trace_first, trace_last, kineto_first, kineto_last;
  /* untimed collectives (p2p included) by estimate level; asked-but-lost ones */
  uint64_t est[RP_EST_LEVELS], lost;
  /* busbw reference for the HTML plot (set by the caller; 0: none): GB/s and what it is */
  double ref_busbw;
  char ref_label[320];
  /* width the text renderers fit (set by the caller): 0 the default (RP_TEXT_WIDTH, textout.h),
   * -1 no limit (--wide), else that many columns */
  int text_width;
  rp_run_note *runs; /* directories holding JSON traces: their runs */
  size_t nruns;
} rp_report;

/* Outcome of step detection from topo traces (rp_report.steps_detect; analysis/steps.c). */
enum { RP_STEPS_NOT_TRIED = 0, RP_STEPS_FOUND = 1, RP_STEPS_NONE = 2 };
/* How a rank's GPU clock was aligned (rp_rank.align_method; analysis/align.c). */
enum rp_align_method {
  RP_ALIGN_NONE = 0,  /* no GPU times, or no bound: its GPU clock is taken as realtime */
  RP_ALIGN_ONE_BOUND, /* one bound only, or bounds that cross: off = that bound (the lower
                             one when both), error unbounded */
  RP_ALIGN_BOUNDS,    /* lower and upper bounds: off = lower, error = |upper - lower| */
  RP_ALIGN_ANCHORED,  /* tied to other ranks by simultaneous GPU stops, then bounded */
};

/* a + b, saturating (sums over many ranks or collectives of garbage input must not overflow). */
static inline int64_t rp_add_sat(int64_t a, int64_t b) {
  int64_t v;
  if (__builtin_add_overflow(a, b, &v)) return b > 0 ? INT64_MAX : INT64_MIN;
  return v;
}

/* a - b, saturating at the int64 range. */
static inline int64_t rp_sub_sat(int64_t a, int64_t b) {
  int64_t v;
  if (__builtin_sub_overflow(a, b, &v)) return b < 0 ? INT64_MAX : INT64_MIN;
  return v;
}

/* A double (ns sums) as int64, clamped. */
static inline int64_t rp_dbl_ns(double v) {
  if (!(v > -9.2e18)) return v != v ? 0 : INT64_MIN;
  if (v >= 9.2e18) return INT64_MAX;
  return (int64_t)v;
}

/* Derived figures used by every renderer. */
double rp_ratio(int64_t num, int64_t den); /* num/den, 0 when den <= 0 */
double rp_row_mean_ns(const rp_row *row);
double rp_row_algbw(const rp_row *row); /* GB/s from mean size / mean time */
double rp_row_busbw(const rp_row *row);
/* What a row knows: its size (bytes, bucket) and communicator size; its algbw (timed calls of a
 * known size) and busbw (also a known communicator size). Unknown is shown as unknown, never 0. */
int rp_row_size_known(const rp_row *row);
int rp_row_ranks_known(const rp_row *row);
int rp_row_algbw_known(const rp_row *row);
int rp_row_busbw_known(const rp_row *row);
/* busbw from the time after the last rank's start (rp_row.xfer); 0 when none was measured. */
double rp_row_busbw_xfer(const rp_row *row);
void rp_row_top_choice(const rp_row *row, int *algo, int *proto, double *share);
void rp_bucket_label(int bucket, char *buf, size_t len);
void rp_fmt_bytes(uint64_t v, char *buf, size_t len);
void rp_fmt_ns(int64_t ns, char *buf, size_t len);
/* Which events the report counts, in words: "all events (the default; ...)" or the complete
 * profiler steps per rank (docs/metrics.md, Step windows). */
const char *rp_step_window_text(const rp_report *r, char *buf, size_t len);
/* Unix-epoch ns as "2026-12-01 10:22:07 UTC". */
void rp_fmt_utc(int64_t ns, char *buf, size_t len);

#endif
