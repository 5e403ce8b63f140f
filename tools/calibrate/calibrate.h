/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's internal API: options, sweep planning, statistics, the results of a run,
 * fitting them into a tuner profile, and the summary tables. Everything declared here is pure C
 * with no CUDA header and none of NCCL's, so the CPU-side tests (tests/calibrate/) link it without
 * a GPU. The GPU engine (runner.c and the rooms run_state.h lists: the only files that include
 * <nccl.h>) and the launcher (launch.c) use these types through topo_cal_run().
 *
 * Indices and names: NCCL's own (common/nccl_vocab.h, which nccl.h does not clash with):
 * collectives ncclFunc_t 0..4, algorithms NCCL_ALGO_*, protocols NCCL_PROTO_*.
 * Sizes follow nccl-tests: AllGather / ReduceScatter sizes are the full gathered buffer, which is
 * also what the tuner sees as nBytes.
 *
 * Thread-safety: functions touch only their arguments. Allocation through common/alloc.h.
 */
#ifndef TOPO_CALIBRATE_H
#define TOPO_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nccl_vocab.h"

#define TOPO_CAL_MAX_SIZES            128
#define TOPO_CAL_MAX_CHANNEL_SETTINGS 16
#define TOPO_CAL_MAX_ITERS            1000
#define TOPO_CAL_MAX_ROUNDS           100
#define TOPO_CAL_ELEM_BYTES           4 /* float, as nccl-tests */
#define TOPO_CAL_WORKDIR_MAX          511 /* --workdir / TMPDIR: stored whole, with file names after */

/* How a forced choice reaches NCCL. */
enum topo_cal_force_via { TOPO_CAL_VIA_AUTO = 0, TOPO_CAL_VIA_TUNER, TOPO_CAL_VIA_ENV };
/* How a point is timed. */
enum topo_cal_timing { TOPO_CAL_TIMING_AUTO = 0, TOPO_CAL_TIMING_GRAPH, TOPO_CAL_TIMING_EAGER };

/* ---------------------------------------------------------------------------------------------
 * Options (options.c)
 */
typedef struct topo_cal_options {
  int help, version;
  int ngpus;                                   /* 0 = every visible GPU */
  unsigned colls;                              /* bit per collective */
  unsigned algos;                              /* bit per algorithm; 0 = every one NCCL allows */
  unsigned protos;                             /* bit per protocol; 0 = every one NCCL allows */
  int channels[TOPO_CAL_MAX_CHANNEL_SETTINGS]; /* forced channel counts, 0 = NCCL's own */
  int nchannels;
  uint64_t min_bytes, max_bytes;
  double step; /* size factor between points, > 1 */
  int iters, warmup;
  int rounds; /* repeats of every setting, interleaved (default 3) */
  int quick;
  int timing;               /* topo_cal_timing */
  uint64_t graph_max_bytes; /* auto timing: CUDA graphs up to this size */
  uint64_t p2p_bytes;
  int p2p, sweep, run_default; /* parts to run (1 = yes) */
  int bench;
  int nodes;            /* > 1: one process per GPU, NCCL_HOSTID per node (socket transport) */
  int procs;            /* 1: one process per GPU even on one node */
  int force_via;        /* topo_cal_force_via */
  int verify;           /* read NCCL's INFO log to confirm what ran */
  double prune;         /* skip a setting's larger sizes once it is this much slower (0 = off) */
  double line_rate_gbs; /* 0 = from the GPU model */
  double floor_us;      /* fastest credible collective */
  const char *output;   /* profile to write */
  const char *csv;      /* raw measurements */
  const char *tuner;    /* libtopo-tuner.so */
  const char *profile;  /* --bench: profile the tuner runs on */
  const char *workdir;  /* NCCL log and temporary profile */
  double
      time_budget_s; /* > 0: skip forced settings once the run nears this (default/tuner still run) */
  int verbose;
} topo_cal_options;

/* Defaults: every collective, sizes 8 B .. 1 GB x2, channels {0,4,8,16,24,32}, 20 iterations,
 * 3 warm-up, auto timing (graphs up to 16 MB), p2p on 256 MB, prune 4, verify on. */
void topo_cal_options_default(topo_cal_options *o);
/* Parse argv. Returns 0, or -1 with a one-line message in err (no "error:" prefix). --help and
 * --version only set the flags. --quick applies its limits after every other option. */
int topo_cal_options_parse(topo_cal_options *o, int argc, char **argv, char *err, size_t errlen);
void topo_cal_usage(FILE *f, const char *prog);
/* "1G", "512M", "64K", "8", "1GB", "2KiB" -> bytes (binary units). -1 when malformed. */
int topo_cal_parse_size(const char *text, uint64_t *out);

/* ---------------------------------------------------------------------------------------------
 * Planning (plan.c)
 */
typedef enum topo_cal_kind {
  TOPO_CAL_FORCED = 0,
  TOPO_CAL_DEFAULT = 1,
  TOPO_CAL_TUNER = 2
} topo_cal_kind;

typedef struct topo_cal_setting {
  int kind;         /* topo_cal_kind */
  int algo, proto;  /* TOPO_CAL_FORCED only */
  int nchannels;    /* TOPO_CAL_FORCED: 0 = NCCL's own count */
  int beyond_reach; /* 1: more channels than NCCL's communicator has - measured in one built with
                        minCTAs = maxCTAs, a shape no tuner can choose (advice only, not fitted) */
} topo_cal_setting;

/* What NCCL allows, [coll][algo][proto] = 1. Filled from NCCL's own table (nccl_log.c) or from
 * NCCL 2.28's rules with NVLS off (topo_cal_rules_allowed). */
typedef struct topo_cal_allowed {
  unsigned char ok[NCCL_NUM_FUNCTIONS][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
} topo_cal_allowed;

/* NCCL 2.28's enable rules for one communicator with NVLS and CollNet off: Broadcast/Reduce Ring
 * only; AllGather/ReduceScatter Ring, plus PAT/Simple with one GPU per node on several nodes;
 * AllReduce Ring and Tree; LL128 only on one node (NVLink); nranks < 2 allows nothing. */
void topo_cal_rules_allowed(int nranks, int nnodes, topo_cal_allowed *out);

/* Sizes from min to max (both included when reachable), multiplying by step, each rounded down
 * to a multiple of 4 bytes (at least 4), duplicates dropped. Returns the count (<= cap). */
int topo_cal_plan_sizes(uint64_t min_bytes, uint64_t max_bytes, double step, uint64_t *out,
                        int cap);

/* The bytes a collective really moves for a planned size with nranks ranks and 4-byte elements:
 * AllGather/ReduceScatter round down to a multiple of 4*nranks (at least that), the others to
 * 4. The element count per rank buffer goes to *count (sendcount for AllGather, recvcount for
 * ReduceScatter). */
uint64_t topo_cal_coll_bytes(int coll, uint64_t planned, int nranks, size_t *count);

/* Forced settings to sweep, in run order: for each channel count of the options (NCCL's own
 * first), every (algo, proto) that the options select and NCCL allows for at least one selected
 * collective; Ring/Simple, Ring/LL128, Ring/LL first. Returns the count (<= cap). */
int topo_cal_plan_settings(const topo_cal_options *o, const topo_cal_allowed *allowed,
                           topo_cal_setting *out, int cap);

/* 1 when setting `s` applies to collective `coll` under `allowed` (default and tuner settings
 * apply to every collective). */
int topo_cal_setting_applies(const topo_cal_setting *s, int coll, const topo_cal_allowed *allowed);

/* "ring/simple", "ring/simple/ch8", "default", "tuner". */
void topo_cal_setting_label(const topo_cal_setting *s, char *buf, size_t len);
/* TOPO_TUNER_FORCE value: "ring,simple" or "ring,simple,8". */
void topo_cal_setting_force_value(const topo_cal_setting *s, char *buf, size_t len);

/* Round `round`'s run order of n items: a rotation, order[i] = (i + round) mod n, so every item
 * takes every position once in n rounds. */
void topo_cal_round_order(int n, int round, int *order);

/* Timing: 1 = CUDA graph for this size, 0 = eager calls. */
int topo_cal_use_graph(int timing, uint64_t graph_max_bytes, uint64_t bytes);
/* Calls captured per graph so that one replay lasts ~200 us: 2..100. */
int topo_cal_graph_calls(uint64_t bytes);

/* ---------------------------------------------------------------------------------------------
 * Statistics and plausibility (stats.c)
 */
typedef struct topo_cal_stats {
  int n;
  double median, p25, p75, min, max; /* us */
} topo_cal_stats;

/* Sort a copy of the samples; quartiles by linear interpolation. -1 when n <= 0 or a sample is
 * not finite (stats zeroed). */
int topo_cal_stats_compute(const double *samples, int n, topo_cal_stats *out);
/* Interquartile range relative to the median (0.02 = 2 %), 0 when the median is 0. */
double topo_cal_stats_spread(const topo_cal_stats *s);

/* The fewest bytes, as a fraction of the size, that must cross one GPU's links whatever the
 * algorithm (in-switch reduction included): AllReduce/AllGather/ReduceScatter (n-1)/n,
 * Broadcast/Reduce 1. */
double topo_cal_link_traffic_factor(int coll, int nranks);
/* algbw in GB/s for bytes in time_us. */
double topo_cal_algbw(uint64_t bytes, double time_us);

/* Physical floor: reject a timing faster than the hardware allows - below floor_us, or implying
 * more than 1.2 x line_rate_gbs through one GPU's links. Returns 1 (rejected, reason in why)
 * or 0. line_rate_gbs <= 0 skips the bandwidth test. */
int topo_cal_check_floor(int coll, int nranks, uint64_t bytes, double time_us, double floor_us,
                         double line_rate_gbs, char *why, size_t whylen);

/* Prune: 1 when time_us is more than factor x best_us (factor <= 0 or best_us <= 0: never). */
int topo_cal_slower_than(double time_us, double best_us, double factor);

/* NVLink line rate per direction for a GPU model ("H200" -> 450 GB/s); 0 when unknown. */
double topo_cal_line_rate_for_model(const char *model);
/* Short model name from cudaDeviceProp.name: "NVIDIA H200" -> "H200", "NVIDIA A100-SXM4-80GB"
 * -> "A100", "NVIDIA GeForce RTX 4090" -> "RTX4090". */
void topo_cal_gpu_model(const char *device_name, char *out, size_t len);

/* ---------------------------------------------------------------------------------------------
 * Results (results.c)
 */
enum topo_cal_point_status {
  TOPO_CAL_OK = 0,
  TOPO_CAL_REJECTED = 1, /* faster than the hardware allows */
  TOPO_CAL_MISMATCH = 2, /* NCCL ran something other than the forced choice */
  TOPO_CAL_FAILED = 3,   /* an NCCL or CUDA call failed */
};

typedef struct topo_cal_point {
  int setting; /* index into results.settings */
  int coll;
  uint64_t bytes;                        /* as the tuner sees it */
  size_t count;                          /* elements per rank buffer */
  topo_cal_stats stats;                  /* us per call */
  int graph;                             /* 1: CUDA-graph timed */
  int calls;                             /* calls per sample */
  int status;                            /* topo_cal_point_status */
  int ran_algo, ran_proto, ran_channels; /* from NCCL's log, -1 unknown */
  int round;                             /* the round it was measured in (0-based) */
  int pair; /* TOPO_CAL_DEFAULT: which of the two A/A communicators (0, 1) */
} topo_cal_point;

typedef struct topo_cal_device {
  char name[96];
  int sms;
  double mem_gib;
  int multicast; /* NVLS-capable: 1, 0, -1 unknown */
} topo_cal_device;

typedef struct topo_cal_results {
  /* machine */
  char gpu_model[32];
  int ndev; /* devices measured in this process (p2p, floors) */
  topo_cal_device dev[64];
  int nranks, nnodes, nprocs;
  int nccl_version;    /* runtime ncclGetVersion */
  char nccl_path[256]; /* library that answered */
  int nccl_channels;   /* "N coll channels" from NCCL's log, 0 unknown */
  int force_via;       /* what was used: TOPO_CAL_VIA_TUNER or _ENV */
  int tuner_loaded;    /* NCCL logged "TUNER/Plugin: Using ..." (1), not (0), unknown (-1) */
  char tuner_name[64];
  double line_rate_gbs;
  topo_cal_allowed allowed;
  int allowed_from_nccl; /* 1: from NCCL's table, 0: from the built-in rules */
  /* p2p [src*ndev + dst], 0 = not measured */
  double *p2p_ce_bw, *p2p_ce_lat, *p2p_sm_bw, *p2p_sm_lat;
  double local_ce_bw, local_sm_bw; /* device-local copy, GB/s (read + write counted once) */
  double floor_graph_us;           /* GPU time of one minimal op back to back in a graph */
  double floor_eager_us;           /* the same enqueued eagerly (host launch rate) */
  double floor_sync_us;            /* launch + completion round trip seen by the host */
  /* sweep */
  topo_cal_setting *settings;
  int nsettings, cap_settings;
  topo_cal_point *points;
  int npoints, cap_points;
  int partial;          /* 1: stopped early (signal or time budget); what ran is complete */
  int skipped_settings; /* forced settings not run because of the time budget */
  int rounds;           /* rounds every setting ran in (interleaved, rotated order) */
} topo_cal_results;

void topo_cal_results_init(topo_cal_results *r);
void topo_cal_results_free(topo_cal_results *r);
/* Allocate the ndev x ndev p2p matrices (zeroed). -1 on allocation failure. */
int topo_cal_results_alloc_p2p(topo_cal_results *r, int ndev);
/* Append; return the index, -1 on allocation failure. */
int topo_cal_results_add_setting(topo_cal_results *r, const topo_cal_setting *s);
int topo_cal_results_add_point(topo_cal_results *r, const topo_cal_point *p);
/* Index of the first setting of `kind` (any algo/proto), -1 if none. */
int topo_cal_results_find_kind(const topo_cal_results *r, int kind);
/* Best accepted forced time for (coll, bytes): index of the point or -1. */
int topo_cal_results_best_forced(const topo_cal_results *r, int coll, uint64_t bytes);

/* One result per effective setting: accepted forced points pooled by what NCCL really ran
 * (coll, ran algorithm, protocol, channel count - the forced values where the log was silent)
 * and size; the result is the MEDIAN of the pooled repeats (one repeat = one point = one round's
 * median of its samples), never the minimum. */
typedef struct topo_cal_measured {
  int coll, algo, proto, channels; /* channels -1: unknown */
  uint64_t bytes;
  double median_us;
  int n;            /* repeats pooled */
  int beyond_reach; /* every repeat came from a beyond-reach setting */
  int setting;      /* first contributing setting (its label names the row) */
  int own_channels; /* 1: a contributing setting ran NCCL's own channel count */
  double spread_us; /* half the range (max - min) of the pooled repeats; < 0 when n < 2 */
} topo_cal_measured;

/* Fill out[] (<= cap) with every effective setting's result; returns the count. */
int topo_cal_results_measured(const topo_cal_results *r, topo_cal_measured *out, int cap);
/* Fastest entry of m[0..n) for (coll, bytes); in_reach_only skips beyond-reach ones. -1 none. */
int topo_cal_measured_best(const topo_cal_measured *m, int n, int coll, uint64_t bytes,
                           int in_reach_only);
/* Median over the rounds of one setting's accepted points at (coll, bytes); *n repeats (0: none,
 * return 0). A default's two A/A communicators pool. Returns the index of one point (for what
 * ran), -1 when none. */
int topo_cal_results_setting_median(const topo_cal_results *r, int setting, int coll,
                                    uint64_t bytes, double *median_us, int *n);
/* A/A noise at (coll, bytes): the default's two communicators run in every round; noise = the
 * median over rounds of |a/b - 1| (0.02 = 2 %). *npairs rounds with both; < 0 when none. */
double topo_cal_results_noise(const topo_cal_results *r, int coll, uint64_t bytes, int *npairs);

/* ---------------------------------------------------------------------------------------------
 * NCCL's INFO log (nccl_log.c). The tool points NCCL_DEBUG_FILE at a file and reads it back to
 * learn what NCCL allows (its algorithm/protocol table), its channel count, whether the tuner
 * loaded, and what each collective ran ("AllReduce: 8 Bytes -> Algo RING proto LL
 * channel{Lo..Hi}={0..0}", printed by rank 0).
 */
typedef struct topo_cal_choice {
  int coll;
  uint64_t bytes; /* count x element size as NCCL prints it (per-rank for AG/RS) */
  int algo, proto, nchannels;
} topo_cal_choice;

typedef struct topo_cal_nccl_log {
  FILE *f;
  long offset; /* start of the first line not read yet */
  /* what was learned so far */
  int table_algos[3]; /* algorithms of the current table block, -1 = none */
  int table_nalgos;
  int table_seen; /* rows parsed since the last reset */
  topo_cal_allowed allowed;
  int coll_channels; /* 0 = not seen */
  int tuner_loaded;  /* -1 unknown, 1 "TUNER/Plugin: Using" seen */
  char tuner_name[64];
  int tuner_version;
  topo_cal_choice last[NCCL_NUM_FUNCTIONS]; /* latest choice per collective */
  int have_last[NCCL_NUM_FUNCTIONS];
  int nchoices;        /* choice lines seen since the last reset */
  char last_warn[256]; /* latest "NCCL WARN" text */
} topo_cal_nccl_log;

/* Parse one choice line (with or without the "host:pid:tid [d] NCCL INFO " prefix). 1 if it
 * was one. */
int topo_cal_parse_choice(const char *line, topo_cal_choice *out);
/* Feed one line into the state (table rows, channel count, tuner lines, choices, warnings). */
void topo_cal_nccl_log_line(topo_cal_nccl_log *log, const char *line);
/* Open `path` for reading from its start (the file may not exist yet: retried by poll). */
void topo_cal_nccl_log_init(topo_cal_nccl_log *log);
int topo_cal_nccl_log_open(topo_cal_nccl_log *log, const char *path);
/* Read every complete new line. Returns lines read, -1 when no file. */
int topo_cal_nccl_log_poll(topo_cal_nccl_log *log);
/* Forget the table, choices and tuner state before a new communicator (offset kept). */
void topo_cal_nccl_log_reset(topo_cal_nccl_log *log);
void topo_cal_nccl_log_close(topo_cal_nccl_log *log);

/* ---------------------------------------------------------------------------------------------
 * Fitting (fit.c) and reports (report.c)
 */
struct topo_profile;
/* Build the profile of this run: built-in defaults for the GPU model, keyed by (model, nranks,
 * nnodes, NCCL version), with fitted terms for every forced (coll, algo, proto, channels) with
 * >= 2 accepted sizes, a measured point for every in-reach effective setting and size whose
 * noise is known (A/A, else the spread of its repeats; default=1 where NCCL's default ran it),
 * and link / protocol / launch parameters from the measurements (see fit.c). Returns the number
 * of terms, or -1 on allocation failure. The caller frees with topo_profile_free. */
int topo_cal_fit_profile(const topo_cal_results *r, struct topo_profile *out);

/* Fit the profile (topo_cal_fit_profile), write it to `path` (NULL: skip) and its short form to
 * `report` (NULL: skip). Returns the number of terms, or -1 after a warning naming the file. */
int topo_cal_write_profile(const topo_cal_results *r, const char *path, FILE *report);

/* Human-readable size: "8 B", "64 KB", "1 MB", "1.5 GB" (binary units). */
void topo_cal_format_bytes(uint64_t bytes, char *buf, size_t len);

/* Every table of a run on f: devices, p2p matrix, floors, then per setting and collective an
 * nccl-tests style table (size, count, type, time, algbw, busbw, spread, what ran). */
void topo_cal_report_summary(FILE *f, const topo_cal_results *r);
/* The fitted terms and link parameters of a profile, one line each. */
void topo_cal_report_profile(FILE *f, const struct topo_profile *p);
/* Advice beyond a tuner's reach: per collective and beyond-reach channel count, the sizes where
 * its measured median beats the best in-reach measured result (and NCCL's default when measured)
 * by more than twice the A/A noise there (2 % where no noise was measured), as "AllReduce: 32
 * channels via NCCL_MIN_NCHANNELS=32 (ncclConfig_t minCTAs): 4-10 % at 8 MB-1 GB, 8 more SMs".
 * Returns the number of advice lines. */
int topo_cal_report_advice(FILE *f, const topo_cal_results *r);
/* One CSV line per point with a header. */
void topo_cal_report_csv(FILE *f, const topo_cal_results *r);

typedef struct topo_cal_bench_summary {
  int n;                         /* sizes compared */
  double geo_tuner, geo_default; /* geometric means of tuner/oracle and default/oracle */
  double worst_tuner, worst_default;
  uint64_t worst_tuner_bytes, worst_default_bytes;
  double worst_tuner_vs_default; /* max tuner/default */
} topo_cal_bench_summary;
/* Per collective: size, default, tuner, oracle (and what each ran), ratios; then geometric means
 * and worst sizes. Fills sum[coll] when non-NULL. Returns the number of rows printed. */
int topo_cal_report_bench(FILE *f, const topo_cal_results *r, topo_cal_bench_summary *sum);

/* ---------------------------------------------------------------------------------------------
 * Logging shim (cal_log.c): the GPU engine cannot include common/log.h (its ncclResult_t clashes
 * with <nccl.h>). Progress and info go to stderr only from the process that owns rank 0.
 */
void topo_cal_log_setup(const char *program, int verbose, int quiet);
void topo_cal_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void topo_cal_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2))); /* "prog: error: " */
void topo_cal_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void topo_cal_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void topo_cal_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---------------------------------------------------------------------------------------------
 * The run (runner.c / launch.c)
 */
typedef struct topo_cal_proc {
  int nprocs, proc;        /* processes and this one's index (0 owns rank 0) */
  int nodes;               /* "nodes" (distinct NCCL_HOSTID) */
  int local_first, nlocal; /* ranks this process drives: [local_first, +nlocal) */
  int nranks;              /* total */
  int device_base;         /* device of local rank 0 */
  /* out-of-band exchange of the first NCCL unique id (128 bytes) from process 0 */
  int (*share_id)(void *ctx, void *id, size_t len);
  void *share_ctx;
} topo_cal_proc;

/* Ask a running sweep to stop after the current point (async-signal-safe; main() calls it from
 * SIGTERM/SIGINT). The outputs are still written, marked partial. */
void topo_cal_request_stop(void);
int topo_cal_stop_requested(void);

/* Run every measurement this process takes part in, fill r (identical in every process), write
 * outputs from process 0. Returns the exit code (common/cli.h): 0, or 1 (a measurement or an
 * output failed, or no usable GPU). */
int topo_cal_run(const topo_cal_options *o, const topo_cal_proc *proc, topo_cal_results *r);
/* Number of visible CUDA devices, or -1 with a message in err (no driver, no device). Forks a
 * probe process so that the caller can still fork workers afterwards. */
int topo_cal_probe_devices(char *err, size_t errlen);
/* Fork one process per GPU (rank = GPU index, NCCL_HOSTID per node) and run them; returns the
 * worst exit code (1 as well when there are fewer GPUs than --nodes). */
int topo_cal_launch_fork(const topo_cal_options *o, int ngpus);
/* MPI: one process per rank (TOPO_CALIBRATE_MPI builds only). */
int topo_cal_launch_mpi(const topo_cal_options *o, int *argc, char ***argv);

#endif
