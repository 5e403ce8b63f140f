/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kineto reader's own state, shared by its files (kineto.c: the file and the API;
 * kineto_event.c: one event; kineto_steps.c: step attribution; kineto_spill.c: pass 1's record)
 * and by nothing else (report_inputs.h is the interface).
 */
#ifndef TOPO_REPORT_KINETO_INTERNAL_H
#define TOPO_REPORT_KINETO_INTERNAL_H

#include <stdint.h>

#include "jscan.h"
#include "report.h"
#include "report_inputs.h"

#define NAME_MAX_LEN 512
#define SEEN_CATS    4 /* categories of non-GPU events remembered for messages */

enum state { ST_START, ST_KEY, ST_EVENTS, ST_DONE };

/* Event categories the report tells apart (Kineto's names, and the older capitalised ones). */
enum kcat {
  KC_UNKNOWN = 0, /* no "cat" seen yet */
  KC_OTHER,       /* a category the report does not use */
  KC_CPU,         /* cpu_op, python_function, flows, ...: only a ProfilerStep name matters */
  KC_KERNEL,
  KC_MEMCPY,
  KC_MEMSET,
  KC_RUNTIME,       /* cuda_runtime, cuda_driver, Runtime: launches (correlation ids) */
  KC_GPU_ANNOTATION /* gpu_user_annotation: GPU-projected ranges */
};

typedef struct jev {
  js_str name_s, cat_s;       /* slices into the input buffer, valid while the event is delivered */
  int cat;                    /* enum kcat */
  int ph_x;                   /* "ph": "X" */
  int skipped;                /* known to be of no use before its end: not read to the end */
  const char *name_c, *cat_c; /* decoded name / category, NULL until asked for (ev_name, ev_cat) */
  char name[NAME_MAX_LEN];
  char coll_name[64];
  char dtype[32];
  int64_t ts, dur; /* ns */
  int has_ts, has_dur;
  int bad_time;       /* ts or dur is no finite time within +-2^61 ns (or dur < 0): not used */
  uint32_t nonfinite; /* numbers read that are NaN or infinite (their fields stay unknown) */
  js_str tid_s;       /* "tid" (the stream of GPU events without args.stream) */
  int64_t stream;
  int64_t in_nelems, out_nelems, group_size;
  int64_t corr;   /* args.correlation: links a launch (cuda_runtime/driver) to its GPU event */
  int64_t bytes;  /* args.bytes (memcpy/memset) */
  double bw_gbps; /* args."memory bandwidth (GB/s)" */
  char cat_name[32];
  int64_t tid; /* decoded "tid", INT64_MIN until asked for (ev_tid) */
  int64_t pid; /* "pid" when a number (-1 absent): the process of CPU-side events */
} jev;

/* Step attribution (HTA's): a GPU event belongs to the ProfilerStep whose CPU range holds the
 * runtime call that launched it (correlation id). Calls and GPU events meet in two tables of
 * CORR_SLOTS entries indexed by id, whichever comes first waiting for the other (an entry lives
 * until an id CORR_SLOTS later takes its place: kernels trail their calls by far fewer, or come a
 * few thousand events before them in PyTorch 1.x traces). A pair whose call lies in a CPU step
 * already read widens that step's GPU window at once (PyTorch writes a step before the calls in
 * it); any other pair waits in an unlinked temporary file (in memory, at most PAIRS_MAX, when no
 * file can be made) for the end of the file. */
typedef struct kstep {
  int64_t start, stop; /* ts units (no base) */
  uint64_t value;
  int gpu;        /* GPU-projected (gpu_user_annotation) */
  int64_t lo, hi; /* CPU steps: first start / last stop of the GPU work launched inside */
} kstep;
typedef struct corr_launch {
  int64_t corr, ts;
} corr_launch;
typedef struct corr_gpu {
  int64_t corr, start, stop;
} corr_gpu;
typedef struct kpair {
  int64_t ts, start, stop;
} kpair; /* a call's time, its GPU event's span */
#define CORR_SLOTS (1u << 16)
#define PAIRS_BUF  4096
#define PAIRS_MAX \
  (1u << 22) /* pairs held in memory without a temporary file; beyond: one warning */

struct rp_kineto {
  js_in in;
  enum state st;
  int top_array;
  int failed;
  int sniff;    /* stop at the start of traceEvents (rp_json_sniff) */
  int counting; /* count kernels into the source (the first pass only) */
  char path[512];
  int64_t base_ns;
  int64_t first, last; /* GPU events' range, without the base */
  int base_fixed;      /* base given by pass 1: ignore the key */
  int quiet;
  int rank, world;
  uint32_t pid;       /* the process, from its CUDA runtime calls (0 unknown) */
  int io_error;       /* errno of a failed read of the file or of pass 1's record; 0 none */
  int has_events_key; /* the top-level object has "traceEvents" (or the file is an array) */
  int own_export;     /* otherData.tool is "topo-report": topo-report's Chrome export */
  uint64_t events, x_events, cpu_events, gpu_events, huge_skipped;
  uint64_t bad_times, nonfinite; /* pass 1: see jev; distributedInfo and the base count too */
  int bad_base;                  /* baseTimeNanoseconds out of +-2^61 ns: taken as 0 */
  char seen_cat[SEEN_CATS][32];
  uint64_t seen_cat_n[SEEN_CATS];
  /* steps found (emitted with the base at the end) */
  kstep *steps;
  size_t nsteps, cap_steps;
  int gpu_steps; /* GPU-projected ProfilerStep ranges seen */
  /* step attribution (pass 1, when steps are wanted): see kstep */
  corr_launch *ltab; /* CORR_SLOTS calls by id, stored as id + 1 (0: empty) */
  corr_gpu *gtab;    /* CORR_SLOTS GPU events waiting for their call */
  size_t *cpu_order; /* the CPU steps read so far, by start (while they come in that order) */
  size_t ncpu_order, cap_cpu_order;
  int cpu_unordered; /* a CPU step came before an earlier-starting one: every pair waits */
  kpair *pairs;      /* waiting pairs: a write buffer (pairs_fd >= 0) or all of them */
  size_t npairs, cap_pairs;
  int pairs_fd; /* -1: in memory */
  uint64_t pairs_written;
  int pairs_full;    /* PAIRS_MAX reached (in memory) */
  rp_kspill *spill;  /* pass 1: the events pass 2 needs are recorded here (NULL: not) */
  rp_kspill *replay; /* pass 2: the events come from this record, not from the JSON */
  jev ev;
};

static inline uint64_t kn_where(const rp_kineto *k) { return k->in.off + k->in.pos; }

/* ---- kineto_steps.c */
int kn_temp_fd(void);
void *kn_grow(void *v, size_t *cap, size_t n, size_t elem);
void kn_corr_call(rp_kineto *k, int64_t corr, int64_t ts);
void kn_corr_free(rp_kineto *k);
void kn_corr_gpu_event(rp_kineto *k, int64_t corr, int64_t start, int64_t stop);
void kn_emit_steps(rp_kineto *k, rp_source *s, const rp_sink *sink);

/* ---- kineto_event.c */
const char *kn_ev_cat(jev *e);
const char *kn_ev_name(jev *e);
int kn_is_step_name(js_str n);
int64_t kn_ev_tid(jev *e);
js_status kn_parse_event(const char **pp, const char *end, jev *e);
js_status kn_read_int(const char **pp, const char *end, int64_t *out, uint32_t *nonfinite);
void kn_act(rp_kineto *k, rp_source *s, const rp_sink *sink, jev *e, int64_t start, int64_t stop);
void kn_event_reset(jev *e);

/* ---- kineto_spill.c */
/* A ready record read again from its start (its read buffer made): 0 out of memory. */
int kn_spill_rewind(rp_kspill *sp);
int kn_replay_step(rp_kineto *k, rp_source *s, const rp_sink *sink, size_t max);
void kn_spill_finish(rp_kspill *sp);
void kn_spill_put(rp_kineto *k, jev *e);

#endif
