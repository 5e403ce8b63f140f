/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inputs/: topo-report's readers. Every input becomes an rp_source that delivers what it holds to
 * an rp_sink (collectives, intervals, steps, kernel events) on the aligned clock, in file order,
 * a chunk per call; the analysis (analysis/) drives them twice.
 *   input.c          the source interface over both kinds; the paths given expanded into input
 *                    files, a directory's PyTorch runs chosen
 *   kineto*.c        Kineto / Chrome trace JSON: events into the sink, pass 1's spill for pass 2,
 *                    the file sniffed (kineto_ctx.h: their shared state)
 *   jscan.c, .h      the streaming JSON scanner (plain, gzip or memory) the Kineto reader uses
 * Binary topo traces are read through common/trace_reader. Imports model/ only.
 */
#ifndef TOPO_REPORT_INPUTS_H
#define TOPO_REPORT_INPUTS_H

#include "report.h"

/* Opens a source for a pass; TOPO_ERR_IO (s->unreadable = errno) when it cannot be opened. */
topo_status rp_source_open(rp_source *s, int pass);
/* Deliver one chunk (a block / up to 4096 events) to the sink. 0 at the end (s->unreadable set
 * when a read failed). */
int rp_source_step(rp_source *s, const rp_sink *sink, int pass);
/* Releases an open binary source's descriptor and buffers until its next step, which reopens
 * it (topo_trace_reader_suspend). 0 when it cannot: Kineto JSON, not open, already released. */
int rp_source_suspend(rp_source *s);
void rp_source_close(rp_source *s);
uint64_t rp_source_offset(const rp_source *s);

/* Kineto / Chrome trace JSON reader (kineto.c). */
typedef struct rp_kineto rp_kineto;
/* Pass 1's record of the events pass 2 needs, so that pass 2 need not parse the JSON again:
 * batches in one temporary file (unlinked at once) that every record shares, and the distinct
 * strings in one table they share too. Read back, it holds no descriptor of its own. NULL when
 * none can be made. */
typedef struct rp_kspill rp_kspill;
rp_kspill *rp_kspill_new(void);
void rp_kspill_free(rp_kspill *sp);
int rp_kspill_ready(const rp_kspill *sp);           /* written whole: pass 2 may replay it */
void rp_kineto_record(rp_kineto *k, rp_kspill *sp); /* pass 1: record into sp */
/* Pass 2 from a ready record instead of the file (path: for messages). */
topo_status rp_kineto_open_replay(const char *path, rp_kspill *sp, rp_kineto **out);
topo_status rp_kineto_open(const char *path, rp_kineto **out);
/* Parse up to `max_events` events; calls the sink with the source index. 0 when finished. */
int rp_kineto_step(rp_kineto *k, rp_source *s, const rp_sink *sink, size_t max_events);
void rp_kineto_close(rp_kineto *k);
/* Pass 2: the baseTimeNanoseconds found in pass 1 (Kineto may write it after the events). */
void rp_kineto_set_base(rp_kineto *k, int64_t base_ns);
void rp_kineto_set_quiet(rp_kineto *k, int quiet); /* no warnings (second pass, --quiet) */
/* Pass 1 counts the kernels into the source (rp_source.nccl_kernels, ...); later passes do not. */
void rp_kineto_set_pass(rp_kineto *k, int pass);
uint64_t rp_kineto_offset(const rp_kineto *k); /* bytes of the file read (compressed for gzip) */
/* errno of a read of the file (or of pass 1's record) that failed; 0 when none did. A malformed
 * or cut input is no read error. */
int rp_kineto_io_error(const rp_kineto *k);
/* What a JSON file turned out to hold. */
typedef struct rp_kineto_info {
  uint64_t events, x_events, gpu_events; /* all events; complete ("X") ones; GPU work among them */
  uint64_t cpu_events; /* complete events of the CPU side (operators, annotations, launches) */
  int has_events_key;  /* a traceEvents array (or a top-level array) was found */
  int own_export;      /* otherData.tool is "topo-report": topo-report's own Chrome export */
  int sniff_complete;  /* rp_kineto_sniff: the top level was read to traceEvents or its end */
  int failed, gzip;
  int rank, world; /* distributedInfo (-1 / 0 unknown) */
  uint32_t pid;    /* the process of its CUDA runtime calls (0 unknown) */
  char cat[4][32]; /* categories of the complete events that are not GPU work */
  uint64_t cat_n[4];
} rp_kineto_info;
void rp_kineto_stats(const rp_kineto *k, rp_kineto_info *out);
/* The host of a Kineto trace written by torch.profiler's tensorboard_trace_handler, from its file
 * name "<host>_<pid>.<stamp>.pt.trace.json[.gz]" when that pid is `pid` (or `pid` is 0; *pid_out
 * then gets it): 1 and `host`, else 0 (another name: the host is unknown). */
int rp_kineto_host_from_name(const char *path, uint32_t pid, char *host, size_t len,
                             uint32_t *pid_out);
/* Read a JSON file's top level up to its traceEvents (a few KiB): what kind of file it is and,
 * for Kineto traces, distributedInfo. TOPO_ERR_IO when it cannot be opened. */
topo_status rp_kineto_sniff(const char *path, rp_kineto_info *out);
/* Parse a whole JSON buffer through the same entry point (fuzzing, tests): returns events seen. */
uint64_t rp_kineto_parse_memory(const char *data, size_t len, const rp_sink *sink);
/* The same bytes as a file is read: `chunk` bytes per read into a buffer of at most max_buffer
 * bytes (fuzzing the refill paths). *too_large: events skipped for not fitting the buffer. */
uint64_t rp_kineto_parse_chunks(const char *data, size_t len, size_t chunk, size_t max_buffer,
                                const rp_sink *sink, uint64_t *too_large);
/* Collect input files: expands directories. Caller frees with rp_paths_free. */
topo_status rp_paths_expand(const char *const *paths, int npaths, char ***out, int *nout);
void rp_paths_free(char **paths, int n);
/* The files the analysis reads: paths expanded, JSON that is no trace skipped (one line each),
 * and of each directory's PyTorch traces one run (opt->run, else the latest; opt->all_runs: all),
 * noted in r->runs. TOPO_ERR_INVALID when opt->run names no run of a directory. */
topo_status rp_inputs_collect(const char *const *paths, int npaths, const rp_options *opt,
                              rp_report *r, char ***out, int *nout);
int rp_path_is_json(const char *path);

#endif
