/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kernels/: the kernel-level analyses (kernels.c, idle.c, launch.c, ktime.c, memcpy.c; heap.c: the
 * reorder heap they share). Imports model/ only; analysis/ drives them, render/ prints them.
 *
 * The kernel-level analyses of a rank's Kineto events, on Holistic Trace Analysis' definitions
 * (docs/metrics.md, "Kernel-level analyses"): the temporal breakdown (idle / compute /
 * non-compute) over the rank and per step, the kernel breakdown by type with the top kernels, the
 * idle-time breakdown per stream (host wait / kernel wait / other), launch delay and queue length
 * per stream, and memcpy/memset bandwidth per kind. analyze_pass2.c creates one rp_gpu per rank that has
 * a Kineto input, feeds it that rank's events in pass 2 (rp_kevent, file order) and finishes it;
 * the renderers (render/) read the results.
 *
 * Memory: state grows with distinct kernel names, streams and memcpy kinds, plus bounded
 * reorder buffers (RP_GPU_REORDER events per stream) and the recent CPU calls waiting for their
 * GPU events (RP_GPU_CORR_AGE correlation ids behind the newest GPU event); never with the event
 * count (except for a file that writes every CPU call before any GPU event).
 * Single-threaded.
 */
#ifndef TOPO_REPORT_KERNEL_STATS_H
#define TOPO_REPORT_KERNEL_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "report.h"

#define RP_GPU_REORDER           32768 /* events held per stream (and per memcpy kind) to sort */
#define RP_GPU_CORR_AGE          (1 << 17) /* CPU calls kept this many correlation ids behind the GPU */
#define RP_GPU_KERNEL_DELAY_NS   30000     /* HTA's consecutive_kernel_delay: 30 (its unit is us) */
#define RP_GPU_RUNTIME_CUTOFF_NS 50000     /* HTA's runtime_cutoff, 50 us */
#define RP_GPU_DELAY_CUTOFF_NS   100000 /* HTA's launch_delay_cutoff, 100 us */
#define RP_GPU_TOP               10     /* HTA's num_kernels */
#define RP_GPU_DURATION_RATIO    0.8    /* HTA's duration_ratio */

/* Kernel types by name, HTA's patterns and order. */
enum rp_ktype { RP_K_COMM = 0, RP_K_MEMORY = 1, RP_K_COMPUTE = 2, RP_K_OTHER = 3, RP_K_TYPES };
int rp_kernel_type(const char *name);
const char *rp_ktype_name(int type); /* "communication", "memory", "computation", "other" */
/* HTA's memcpy kind: "Memset", "Memcpy DtoH" (the name's first 11 bytes), or "Memcpy Unknown". */
void rp_memcpy_kind(const char *name, char *out, size_t len);
/* A kernel name without template and call arguments ("at::native::foo"), for tables. */
void rp_kernel_short_name(const char *name, char *out, size_t len);

typedef struct rp_kstat { /* one kernel name on one rank */
  char *name;
  int type; /* enum rp_ktype */
  uint64_t n;
  int64_t sum, min, max; /* ns */
  double mean, m2;       /* running mean and sum of squared deviations (std: m2/(n-1)) */
  int top;               /* 1: among the rank's top kernels of its type (HTA's rule) */
} rp_kstat;

enum rp_idle_cat { RP_IDLE_HOST = 0, RP_IDLE_KERNEL = 1, RP_IDLE_OTHER = 2, RP_IDLE_CATS };
const char *rp_idle_name(int cat); /* "host wait", "kernel wait", "other" */

typedef struct rp_gstream { /* one stream of one rank */
  int64_t stream;
  uint64_t events;  /* GPU events on it */
  uint64_t matched; /* of them, with their CPU call found */
  /* idle breakdown: the gap before each kernel/memcpy/memset after the stream's first */
  int64_t idle[RP_IDLE_CATS];
  uint64_t gaps[RP_IDLE_CATS];
  uint64_t overlapped; /* events that started before the previous one ended (gap < 0,
                                   counted as 0) */
  /* launch delay: GPU events whose CPU call is a launch (cudaLaunchKernel, cuLaunchKernelEx, ...) */
  rp_quant delay, cpu_dur, gpu_dur;
  uint64_t runtime_outliers, delay_outliers, short_kernels;
  /* queue length: the value after each launch (+1) and each GPU start (-1), in time order */
  uint64_t q_n;
  double q_sum, q_sumsq;
  int64_t q_min, q_max;
  rp_quant queue;
  uint64_t late; /* events that arrived after the sort had passed them */
} rp_gstream;

typedef struct rp_memkind { /* memcpy/memset of one kind on one rank */
  char kind[16];
  uint64_t n, with_bytes;
  uint64_t bytes;              /* sum over the ops that state their bytes */
  int64_t dur, dur_with_bytes; /* sums of durations, ns */
  rp_quant op_bw;              /* each op's bandwidth, MB/s (bytes / duration) */
  /* HTA's series: summed bandwidth of the ops running, after each start/end; positive values */
  uint64_t s_n;
  double s_sum, s_min, s_max;
  uint64_t late;
} rp_memkind;

/* Kernel-type combinations (HTA's bits: computation 1, communication 2, memory 4). */
enum { RP_KT_COMPUTE = 1, RP_KT_COMM = 2, RP_KT_MEMORY = 4 };
/* HTA's name of a combination: "COMPUTATION", "COMPUTATION overlapping COMMUNICATION", ... */
const char *rp_combo_name(int mask);

typedef struct rp_gstep { /* one step of one rank: the temporal breakdown inside it */
  uint64_t value;
  int64_t start, stop; /* its GPU window */
  int64_t busy, compute, comm, overlap;
} rp_gstep;

typedef struct rp_gpu {
  uint64_t cpu_events, gpu_events; /* stream == -1 / stream >= 0 */
  uint64_t launches, matched;      /* GPU events with a correlation; of them, CPU call found */
  /* temporal breakdown over the rank (HTA): span = first GPU start to last GPU end */
  int64_t first, last;            /* INT64_MAX / INT64_MIN: no GPU event */
  int64_t busy;                   /* union of all GPU events, ns */
  int64_t combo[8];               /* time each combination of types runs (RP_KT_* bits), ns */
  int64_t compute, comm, overlap; /* unions: computation, communication, both */
  uint64_t late;                  /* events the sweep got out of order (clipped) */
  rp_gstep *steps;
  size_t nsteps;
  int64_t type_time[RP_K_TYPES]; /* sum of durations per type */
  uint64_t type_n[RP_K_TYPES];
  rp_kstat *kern; /* after finish: by type, then total time, descending */
  size_t nkern;
  rp_gstream *streams; /* after finish: by stream id */
  size_t nstreams;
  rp_memkind *mem;
  size_t nmem;
  int failed;              /* an allocation failed: the figures are incomplete */
  struct rp_gpu_state *st; /* streaming state, NULL after finish */
} rp_gpu;

/* A rank's analyses over the given steps (sorted by start; copied). NULL without memory. */
rp_gpu *rp_gpu_new(const rp_step *steps, size_t nsteps, size_t reorder_window);
void rp_gpu_event(rp_gpu *g, const rp_kevent *e);
void rp_gpu_finish(rp_gpu *g);
void rp_gpu_free(rp_gpu *g);

/* ---- pieces of rp_gpu (kernels.c, idle.c, launch.c, memcpy.c) */
typedef struct rp_launch { /* the CPU call of a correlation id */
  int64_t start, dur;
  int is_launch; /* a kernel/memcpy/memset launch call */
} rp_launch;
typedef struct rp_gevent { /* a GPU event as the per-stream analyses keep it */
  int64_t start, stop, corr;
  int idle_kind; /* 1: kernel / memcpy / memset (HTA's idle categories) */
  int has_call;  /* 1: `call` was found when it arrived (else looked up later) */
  rp_launch call;
} rp_gevent;
/* Per-stream sorting and analyses (idle.c): push in file order, results in time order. */
typedef struct rp_gstream_state rp_gstream_state;
rp_gstream_state *rp_gstream_state_new(size_t window);
void rp_gstream_push(rp_gstream_state *s, rp_gstream *out, const rp_gevent *e,
                     const rp_launch *(*find)(void *ctx, int64_t corr), void *ctx);
void rp_gstream_finish(rp_gstream_state *s, rp_gstream *out,
                       const rp_launch *(*find)(void *ctx, int64_t corr), void *ctx);
void rp_gstream_state_free(rp_gstream_state *s);
/* Launch delay and queue points of one GPU event with its CPU call (launch.c), in time order. */
typedef struct rp_queue_state rp_queue_state;
rp_queue_state *rp_queue_state_new(size_t window);
void rp_launch_add(rp_gstream *out, rp_queue_state *q, const rp_gevent *e, const rp_launch *l);
void rp_queue_finish(rp_gstream *out, rp_queue_state *q);
void rp_queue_state_free(rp_queue_state *q);
/* Time per type combination, overall and per step (ktime.c); steps sorted by start. */
typedef struct rp_ktime rp_ktime;
rp_ktime *rp_ktime_new(size_t window, rp_gstep *steps, size_t nsteps);
int rp_ktime_add(rp_ktime *t, int64_t start, int64_t stop, int type); /* 0: out of memory */
int rp_ktime_finish(rp_ktime *t, int64_t *busy, int64_t combo[8], uint64_t *late);
void rp_ktime_free(rp_ktime *t);
/* Memcpy/memset bandwidth (memcpy.c). */
typedef struct rp_mem_state rp_mem_state;
rp_mem_state *rp_mem_state_new(size_t window);
int rp_mem_add(rp_mem_state *m, rp_memkind **kinds, size_t *nkinds, const rp_kevent *e);
void rp_mem_finish(rp_mem_state *m, rp_memkind *kinds, size_t nkinds);
void rp_mem_state_free(rp_mem_state *m);

/* A time-ordered reorder heap of fixed-size items whose first member is an int64 key. */
typedef struct rp_heap {
  char *v;
  size_t n, cap, size, window;
  int (*less)(const void *a, const void *b);
} rp_heap;
void rp_heap_init(rp_heap *h, size_t item_size, size_t window,
                  int (*less)(const void *, const void *));
int rp_heap_push(rp_heap *h, const void *item); /* 0: out of memory */
int rp_heap_full(const rp_heap *h);             /* holds `window` items: pop one */
int rp_heap_pop(rp_heap *h, void *out);         /* 0 when empty */
void rp_heap_free(rp_heap *h);

/* Sums over the ranks with Kineto analyses (HTA's kernel-type table across ranks). */
typedef struct rp_gpu_totals {
  int ranks;
  int64_t combo[8], busy, span;
} rp_gpu_totals;
void rp_gpu_totals_get(const rp_report *r, rp_gpu_totals *t);
/* Mark each rank's top kernels again: `top` per type (> 0), HTA's duration_ratio cut (0 < ratio
 * <= 1). rp_analyze marks RP_GPU_TOP and RP_GPU_DURATION_RATIO. */
void rp_gpu_mark_top(rp_report *r, int top, double ratio);

#endif
