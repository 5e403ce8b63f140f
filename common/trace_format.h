/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The binary per-rank trace written by libtopo-profiler.so and read by topo-report: the contract
 * between them (prose version: docs/trace-format.md). Little-endian, fixed-size records.
 *
 *   file   := header  block*  footer?
 *   header := struct topo_trace_header (512 bytes)
 *   block  := struct topo_trace_block (16 bytes) + count records of 64 bytes each
 *   footer := struct topo_trace_footer (64 bytes), written at the last finalize / at exit
 *
 * Each block carries a CRC-32C (common/crc32.h) of its records; a writer writes whole blocks
 * only, so a killed process leaves a file that is valid up to its last complete block (no
 * footer). Cumulative drop counts also travel in a TOPO_REC_STATS record at the end of each block,
 * so they survive a kill.
 *
 * Clocks: cpu_*_ns fields are CLOCK_MONOTONIC ns of the writing host; gpu_*_ns fields are the
 * GPU's %globaltimer ns (KernelCh pTimer) or CUPTI timestamps. The header holds one
 * (monotonic, realtime) pair taken at the same instant, and the measured offsets of the GPU
 * and CUPTI clocks from CLOCK_REALTIME (TOPO_TRACE_OFFSET_UNKNOWN when not measured: readers
 * then take globaltimer ~ realtime, which current drivers keep within microseconds).
 */
#ifndef TOPO_TRACE_FORMAT_H
#define TOPO_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define TOPO_TRACE_MAGIC   "TOPOTRC\0" /* 8 bytes, file start */
#define TOPO_TRACE_VERSION 1           /* major: a reader rejects any other */
/* minor: what a writer may add within major 1, each a superset of the one before; a reader
 * takes every minor (it skips record types and flags it does not know).
 *   0  the first writers (the header's minor_version and nccl_version hold 0)
 *   1  COLL_EXT and PHASE records, TOPO_COLL_F_SYM / _EXT, TOPO_TRACE_F_PHASE, nccl_version
 *   2  STEP records; the CUPTI record's window, period, steps and step_ns
 *   3  TOPO_TRACE_F_STARTUP, TOPO_COLL_F_STARTUP */
#define TOPO_TRACE_MINOR_VERSION     3
#define TOPO_TRACE_BLOCK_MAGIC       0x4b4c4254u /* "TBLK" */
#define TOPO_TRACE_FOOTER_MAGIC      0x444e4554u /* "TEND" */
#define TOPO_TRACE_RECORD_SIZE       64
#define TOPO_TRACE_MAX_BLOCK_RECORDS 4096 /* readers reject larger blocks */
#define TOPO_TRACE_OFFSET_UNKNOWN    INT64_MIN

/* In the default CUPTI mode (window) a process's -cupti trace begins at its first Coll/P2p of at
 * least this many bytes, or one TOPO_PROFILER_CUPTI_PERIOD_S after its first init. */
#define TOPO_TRACE_CUPTI_START_BYTES (1u << 20)

/* header.flags */
#define TOPO_TRACE_F_KERNELCH 0x1 /* kernel-channel (GPU timer) events were requested */
#define TOPO_TRACE_F_CUPTI    0x2 /* CUPTI kernel records may appear */
#define TOPO_TRACE_F_PROXY    0x4 /* proxy records may appear */
#define TOPO_TRACE_F_SAMPLED \
  0x8                           /* kernel channels only for some collectives: all of
                                       >= measure_min_bytes, 1 in sample_every below */
#define TOPO_TRACE_F_PHASE 0x10 /* kernel-phase events were requested (PHASE records may appear) */
/* start-up measured whole (1.3): until the process's step was steady (at most
 * TOPO_PROFILER_STARTUP_MS) every operation was asked for kernel channels; those records carry
 * TOPO_COLL_F_STARTUP */
#define TOPO_TRACE_F_STARTUP 0x20

typedef struct topo_trace_header {
  char magic[8];        /* TOPO_TRACE_MAGIC */
  uint16_t version;     /* TOPO_TRACE_VERSION */
  uint16_t header_size; /* sizeof(topo_trace_header) */
  uint16_t record_size; /* TOPO_TRACE_RECORD_SIZE */
  uint16_t flags;       /* TOPO_TRACE_F_* */
  uint64_t comm_hash;   /* NCCL's commHash (0: process-wide file, e.g. CUPTI only) */
  int32_t rank, nranks, nnodes;
  uint32_t pid;
  int64_t mono_ns;                 /* CLOCK_MONOTONIC ... */
  int64_t realtime_ns;             /* ... and CLOCK_REALTIME at the same instant */
  int64_t gpu_minus_realtime_ns;   /* globaltimer - realtime, or TOPO_TRACE_OFFSET_UNKNOWN */
  int64_t cupti_minus_realtime_ns; /* CUPTI timestamp - realtime, or TOPO_TRACE_OFFSET_UNKNOWN */
  uint32_t abi_version;            /* profiler ABI version NCCL loaded (1..7) */
  uint32_t event_mask;             /* activation mask we asked for */
  uint32_t sample_every;           /* KernelCh sampling period (1 = every collective) */
  uint16_t minor_version;          /* TOPO_TRACE_MINOR_VERSION of the writer (0: before minors) */
  uint16_t reserved0;
  char host[64];              /* NUL-terminated */
  char comm_name[64];         /* NUL-terminated, "" when NCCL gave none */
  char topo_version[48];      /* NUL-terminated */
  uint64_t measure_min_bytes; /* operations of >= this many bytes all get kernel channels; below,
                                 1 in sample_every (plus each kind's first); 0 = no threshold */
  uint32_t nccl_version;      /* NCCL_VERSION_CODE NCCL reported (ncclGetVersion), 0 unknown */
  uint8_t reserved[236];
} topo_trace_header;

typedef struct topo_trace_block {
  uint32_t magic; /* TOPO_TRACE_BLOCK_MAGIC */
  uint32_t count; /* records that follow, 1..TOPO_TRACE_MAX_BLOCK_RECORDS */
  uint32_t crc;   /* CRC-32C of the count*64 record bytes */
  uint32_t index; /* 0, 1, 2, ... */
} topo_trace_block;

/* Drop counters (header footer and STATS records), by what was lost. */
enum topo_drop_kind {
  TOPO_DROP_COLL,   /* a Coll/P2p event found its pool full */
  TOPO_DROP_CHILD,  /* a KernelCh/Proxy event found its pool full or its parent gone */
  TOPO_DROP_RECORD, /* a finished record found the writer's queue full */
  TOPO_DROP_IO,     /* a block could not be written */
  TOPO_DROP_CUPTI,  /* CUPTI reported dropped activity records */
  TOPO_DROP_OTHER,  /* an operation NCCL never stopped before its communicator's finalize */
  TOPO_DROP_KINDS
};

typedef struct topo_trace_footer {
  uint32_t magic;   /* TOPO_TRACE_FOOTER_MAGIC */
  uint32_t blocks;  /* blocks written */
  uint64_t records; /* records written */
  uint64_t dropped[TOPO_DROP_KINDS];
} topo_trace_footer;

enum topo_rec_type {
  TOPO_REC_COLL = 1,      /* topo_rec_coll: one collective */
  TOPO_REC_P2P = 2,       /* topo_rec_coll: one send or recv (func = ncclFuncSend/Recv) */
  TOPO_REC_KERNEL = 3,    /* topo_rec_kernel: a GPU kernel / copy from CUPTI */
  TOPO_REC_STRING = 4,    /* topo_rec_string: text for a string id (kernel names) */
  TOPO_REC_CHANNEL = 5,   /* topo_rec_channel: per-channel GPU timing (opt-in) */
  TOPO_REC_PROXY = 6,     /* topo_rec_proxy: one proxy op (network, opt-in) */
  TOPO_REC_MARK = 7,      /* topo_rec_mark: a named range, e.g. a training step */
  TOPO_REC_STATS = 8,     /* topo_rec_stats: cumulative counters */
  TOPO_REC_CUPTI = 9,     /* topo_rec_cupti: a span during which CUPTI recorded (or was declined) */
  TOPO_REC_COLL_EXT = 10, /* topo_rec_coll_ext: a COLL/P2P's user tag and kernel variant (1.1) */
  TOPO_REC_PHASE = 11,    /* topo_rec_phase: one phase of a symmetric kernel's channel (1.1) */
  TOPO_REC_STEP = 12,     /* topo_rec_step: a training step boundary the profiler learned (1.2) */
};

/* topo_rec_coll.flags */
#define TOPO_COLL_F_GRAPH     0x1 /* captured in a CUDA graph */
#define TOPO_COLL_F_GPU_TIMED 0x2 /* gpu_start/stop_ns are valid */
#define TOPO_COLL_F_PARTIAL   0x4 /* some channels' GPU timing was lost */
#define TOPO_COLL_F_GPU_ASKED \
  0x8                        /* kernel-channel events were requested for this collective
                                      (absent flag + no GPU time: not sampled, to be estimated) */
#define TOPO_COLL_F_SYM 0x10 /* ran a symmetric kernel (NCCL 2.31+): algo and proto are unknown */
#define TOPO_COLL_F_EXT 0x20 /* a COLL_EXT record with the same (type, func, seq) goes with it */
/* asked for kernel channels in the process's start-up (before its step was steady), where every
 * operation is; absent: asked (or not) by the sampling rule (1.3) */
#define TOPO_COLL_F_STARTUP 0x40

#define TOPO_UNKNOWN_U8 0xff

typedef struct topo_rec_coll {
  uint8_t type;  /* TOPO_REC_COLL or TOPO_REC_P2P */
  uint8_t func;  /* ncclFunc_t value (Send 6, Recv 7; 2.28+: AlltoAll 8, Scatter 9, Gather 10) */
  uint8_t algo;  /* NCCL_ALGO_*, TOPO_UNKNOWN_U8 when NCCL did not say */
  uint8_t proto; /* NCCL_PROTO_*, or TOPO_UNKNOWN_U8 */
  uint8_t nchannels; /* channels NCCL used */
  uint8_t datatype;  /* ncclDataType_t value (ncclInt8 0 ... ncclFloat8e5m2 11), or 0xff */
  uint8_t flags;     /* TOPO_COLL_F_* */
  uint8_t nwarps;
  uint64_t seq;         /* NCCL's seqNumber for collectives, a per-comm counter for p2p */
  uint64_t bytes;       /* count x element size as the Coll/P2p event reports it */
  int64_t cpu_start_ns; /* Coll/P2p event start (enqueue), CLOCK_MONOTONIC */
  int64_t cpu_stop_ns;  /* Coll/P2p event stop */
  int64_t gpu_start_ns; /* earliest kernel-channel start (GPU clock), 0 when not timed */
  int64_t gpu_stop_ns;  /* latest kernel-channel stop */
  int32_t peer;         /* root for rooted collectives, peer for p2p, -1 otherwise */
  uint32_t stream_id;   /* small per-process id of the CUDA stream (0 = unknown) */
} topo_rec_coll;

/* topo_rec_kernel.kind */
enum topo_kernel_kind {
  TOPO_KERNEL_COMPUTE = 0,
  TOPO_KERNEL_NCCL = 1,
  TOPO_KERNEL_MEMCPY = 2,
  TOPO_KERNEL_MEMSET = 3
};

typedef struct topo_rec_kernel {
  uint8_t type;         /* TOPO_REC_KERNEL */
  uint8_t kind;         /* topo_kernel_kind */
  uint16_t device;      /* CUDA device ordinal */
  uint32_t name_id;     /* topo_rec_string id of the kernel name, 0 = none */
  int64_t gpu_start_ns; /* CUPTI clock */
  int64_t gpu_stop_ns;
  uint64_t correlation; /* CUPTI correlation id */
  uint32_t stream_id;   /* CUPTI stream id */
  uint32_t context_id;
  uint64_t bytes; /* memcpy/memset bytes, 0 for kernels */
  uint8_t reserved[16];
} topo_rec_kernel;

/* A string longer than 48 bytes spans several records with the same id, in order; the last
 * has TOPO_STRING_F_LAST set. */
#define TOPO_STRING_F_LAST 0x1
typedef struct topo_rec_string {
  uint8_t type; /* TOPO_REC_STRING */
  uint8_t flags;
  uint8_t len; /* bytes of text used in this record (<= 48) */
  uint8_t reserved0;
  uint32_t id; /* > 0 */
  uint64_t reserved1;
  char text[48]; /* not NUL-terminated */
} topo_rec_string;

typedef struct topo_rec_channel {
  uint8_t type; /* TOPO_REC_CHANNEL */
  uint8_t channel;
  uint8_t func;
  uint8_t reserved0[5];
  uint64_t seq; /* the collective's seq (joins with topo_rec_coll) */
  int64_t gpu_start_ns;
  int64_t gpu_stop_ns;
  int64_t cpu_start_ns; /* poll times on the proxy thread */
  int64_t cpu_stop_ns;
  uint8_t reserved1[16];
} topo_rec_channel;

typedef struct topo_rec_proxy {
  uint8_t type; /* TOPO_REC_PROXY */
  uint8_t channel;
  uint8_t is_send;
  uint8_t func;
  int32_t peer;
  uint64_t seq; /* the parent collective's seq */
  int32_t nsteps;
  int32_t chunk_size;
  uint64_t bytes; /* sum of transSize over the steps */
  int64_t cpu_start_ns;
  int64_t cpu_stop_ns;
  uint8_t reserved[16];
} topo_rec_proxy;

typedef struct topo_rec_mark {
  uint8_t type; /* TOPO_REC_MARK */
  uint8_t reserved0[3];
  uint32_t name_id; /* topo_rec_string id */
  int64_t cpu_start_ns;
  int64_t cpu_stop_ns;
  uint64_t value; /* e.g. the step number */
  uint8_t reserved1[32];
} topo_rec_mark;

/* topo_rec_cupti.state: how a CUPTI span ended, or why none was recorded. The compute timeline
 * of a process is complete inside the union of its RECORDED spans and unknown outside them. */
enum topo_cupti_state {
  TOPO_CUPTI_RECORDED = 1, /* [start, stop) recorded; the window ended or the process finalized */
  TOPO_CUPTI_YIELDED = 2,  /* [start, stop) recorded, then another CUPTI client arrived: topo
                              stepped aside at stop (name_id: that client, 0 unknown) */
  TOPO_CUPTI_DECLINED = 3, /* nothing recorded at start: another client held CUPTI (name_id) */
  TOPO_CUPTI_FAILED = 4,   /* nothing recorded: CUPTI could not be loaded or enabled */
};

/* topo_rec_cupti.window: what the span was opened for (0 in traces of writers before it). */
enum topo_cupti_window {
  TOPO_CUPTI_WINDOW_UNSAID = 0,     /* an older writer */
  TOPO_CUPTI_WINDOW_STEPS = 1,      /* at a step boundary, for `steps` whole steps */
  TOPO_CUPTI_WINDOW_TIME = 2,       /* no step known: a window of a fixed length */
  TOPO_CUPTI_WINDOW_CONTINUOUS = 3, /* TOPO_PROFILER_CUPTI=on */
  TOPO_CUPTI_WINDOW_TRIGGER = 4,    /* while the trigger file existed */
};

typedef struct topo_rec_cupti {
  uint8_t type;   /* TOPO_REC_CUPTI */
  uint8_t state;  /* topo_cupti_state */
  uint8_t window; /* topo_cupti_window */
  uint8_t reserved0;
  uint32_t name_id;     /* topo_rec_string id of the other client / the error text, 0 = none */
  int64_t cpu_start_ns; /* CLOCK_MONOTONIC */
  int64_t cpu_stop_ns;  /* == cpu_start_ns for DECLINED / FAILED */
  uint64_t records;     /* activity records delivered in the span */
  uint64_t dropped;     /* activity records CUPTI reported dropped in the span */
  uint32_t period;      /* STEPS: operations per step */
  uint32_t steps;       /* STEPS: whole steps the window was to hold */
  int64_t step_ns;      /* STEPS: the step's duration when it opened (enqueue to enqueue) */
  uint8_t reserved1[8];
} topo_rec_cupti;

/* What NCCL 2.31+ adds to a collective or p2p (profiler ABI v7): written just before the
 * COLL/P2P record it completes, by the same thread (records of other threads may come between);
 * a reader pairs them by (of, func, seq) and TOPO_COLL_F_EXT on the record. */
#define TOPO_EXT_VARIANT_MAX 40
typedef struct topo_rec_coll_ext {
  uint8_t type;        /* TOPO_REC_COLL_EXT */
  uint8_t of;          /* TOPO_REC_COLL or TOPO_REC_P2P: the record it completes */
  uint8_t func;        /* that record's func */
  uint8_t variant_len; /* bytes of variant used (<= TOPO_EXT_VARIANT_MAX); 0 = none */
  uint32_t reserved0;
  uint64_t seq;      /* that record's seq */
  uint64_t user_tag; /* the call's user tag (ncclCollConfig_t.userProfilerTag); 0 = untagged */
  char variant[TOPO_EXT_VARIANT_MAX]; /* symmetric kernel variant, e.g. "AGxLL_R"; not
                                         NUL-terminated, cut at TOPO_EXT_VARIANT_MAX */
} topo_rec_coll_ext;

/* One phase of one channel of a symmetric kernel (KernelPhase events, asked with the `phase`
 * event class): GPU globaltimer ns, like the collective's gpu fields. */
enum topo_phase { TOPO_PHASE_INITIAL_SYNC = 0, TOPO_PHASE_COMPUTE = 1, TOPO_PHASE_FINAL_SYNC = 2 };
typedef struct topo_rec_phase {
  uint8_t type; /* TOPO_REC_PHASE */
  uint8_t channel;
  uint8_t func;  /* the collective's func */
  uint8_t phase; /* enum topo_phase */
  uint8_t reserved0[4];
  uint64_t seq; /* the collective's seq (joins with topo_rec_coll) */
  int64_t gpu_start_ns;
  int64_t gpu_stop_ns;
  uint8_t reserved1[32];
} topo_rec_phase;

/* topo_rec_step.flags */
#define TOPO_STEP_F_STEADY 0x1 /* the steady state held at this boundary (warm-up is over) */
#define TOPO_STEP_F_WINDOW 0x2 /* one of the boundaries a STEPS window was opened to hold */

/* A step boundary: the operation that begins a step (in the file of its communicator) and the
 * one before it, which ends the previous step. Written by the profiler's writer thread for every
 * boundary from the moment it learned the step (docs/profiler.md, Windows at step boundaries). */
typedef struct topo_rec_step {
  uint8_t type;             /* TOPO_REC_STEP */
  uint8_t flags;            /* TOPO_STEP_F_* */
  uint8_t func;             /* the boundary operation's function */
  uint8_t cut_func;         /* the function of the operation before it */
  uint32_t period;          /* operations per step */
  uint64_t seq;             /* the boundary operation's seq (this file's communicator) */
  int64_t cpu_start_ns;     /* its enqueue, CLOCK_MONOTONIC */
  uint64_t cut_comm_hash;   /* the operation before it: its communicator, */
  uint64_t cut_seq;         /* seq */
  int64_t cut_cpu_start_ns; /* and enqueue */
  uint64_t step;            /* the step's number from the one the step was learned at */
  int64_t step_ns;          /* the step's duration then (median, enqueue to enqueue) */
} topo_rec_step;

typedef struct topo_rec_stats {
  uint8_t type; /* TOPO_REC_STATS */
  uint8_t reserved0[7];
  uint64_t records; /* records written before this one */
  uint64_t dropped[TOPO_DROP_KINDS];
} topo_rec_stats;

typedef union topo_trace_record {
  uint8_t type;
  topo_rec_coll coll;
  topo_rec_kernel kernel;
  topo_rec_string string;
  topo_rec_channel channel;
  topo_rec_proxy proxy;
  topo_rec_mark mark;
  topo_rec_stats stats;
  topo_rec_cupti cupti;
  topo_rec_coll_ext ext;
  topo_rec_phase phase;
  topo_rec_step step;
  uint8_t raw[TOPO_TRACE_RECORD_SIZE];
} topo_trace_record;

_Static_assert(sizeof(topo_trace_header) == 512, "trace header is 512 bytes");
_Static_assert(offsetof(topo_trace_header, measure_min_bytes) == 264, "trace header layout");
_Static_assert(offsetof(topo_trace_header, minor_version) == 84, "trace header minor version");
_Static_assert(offsetof(topo_trace_header, nccl_version) == 272, "trace header nccl_version");
_Static_assert(sizeof(topo_trace_block) == 16, "block header is 16 bytes");
_Static_assert(sizeof(topo_trace_footer) == 64, "footer is 64 bytes");
_Static_assert(sizeof(topo_rec_coll) == 64, "coll record is 64 bytes");
_Static_assert(offsetof(topo_rec_coll, gpu_start_ns) == 40, "coll record layout");
_Static_assert(sizeof(topo_rec_kernel) == 64, "kernel record is 64 bytes");
_Static_assert(sizeof(topo_rec_string) == 64, "string record is 64 bytes");
_Static_assert(sizeof(topo_rec_channel) == 64, "channel record is 64 bytes");
_Static_assert(sizeof(topo_rec_proxy) == 64, "proxy record is 64 bytes");
_Static_assert(sizeof(topo_rec_mark) == 64, "mark record is 64 bytes");
_Static_assert(sizeof(topo_rec_cupti) == 64, "cupti record is 64 bytes");
_Static_assert(offsetof(topo_rec_cupti, period) == 40, "cupti record layout");
_Static_assert(sizeof(topo_rec_step) == 64, "step record is 64 bytes");
_Static_assert(sizeof(topo_rec_stats) == 64, "stats record is 64 bytes");
_Static_assert(sizeof(topo_rec_coll_ext) == 64, "coll ext record is 64 bytes");
_Static_assert(offsetof(topo_rec_coll_ext, variant) == 24, "coll ext record layout");
_Static_assert(sizeof(topo_rec_phase) == 64, "phase record is 64 bytes");
_Static_assert(sizeof(topo_trace_record) == 64, "record union is 64 bytes");

#endif
