/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the profiler's modules share: the per-communicator context (topo_comm), the trace
 * writer's interface (trace_writer.c), the NVTX emitter (nvtx.c) and the optional CUPTI
 * timeline (cupti.c). Not part of any ABI.
 */
#ifndef TOPO_PROFILER_INTERNAL_H
#define TOPO_PROFILER_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "trace_format.h"

typedef struct topo_writer topo_writer;

/* One communicator (or, with hash 0 and rank -1, the process-wide CUPTI stream): a slot of the
 * core's context table (core.c, "contexts"), never freed. Init sets a slot up and opens a life
 * (life odd), finalize ends it (even), the writer closes it; a later init reuses the slot once
 * closed. Every record carries the life it was made in, and the writer writes a record only
 * into the life it names, so nothing of one communicator reaches the next one in its slot. */
typedef struct topo_comm {
  _Atomic(uint32_t) life; /* odd while open; a context handle names the life it was given */
  uint32_t slot;          /* index in the context table */
  struct topo_comm *next; /* the core's finalized slots, under its mutex */
  /* Set up by init (cleared first), read by callbacks and, while it is adopted, the writer. */
  uint64_t hash;
  int rank, nranks, nnodes, abi_version;
  char name[64];
  topo_writer *writer; /* of its generation, set by topo_writer_open */
  _Atomic(uint64_t) dropped[TOPO_DROP_KINDS];
  _Atomic(uint64_t) p2p_seq;        /* per-comm p2p counter (NCCL gives p2p no seq) */
  _Atomic(int64_t) gpu_offset_best; /* max(pTimer stop - realtime seen), INT64_MIN = none */
  _Atomic(uint64_t) learned_hash;   /* v1-v3: comm hash and rank seen in the first Coll/P2p */
  atomic_int learned_rank;
  atomic_int closed;        /* set by the writer once the footer is written (see wlife) */
  topo_trace_header header; /* flags etc. set at init; the rest by the writer */
  /* Hand-over to the writer (set before the comm is published to it). */
  uint64_t close_after; /* ring position at finalize: closed once drained past it */
  struct topo_comm *arrive_next, *leave_next;
  /* Owned by the writer threads: set when a writer adopts the life, never cleared by init. */
  _Atomic(uint32_t) wlife; /* the life adopted, 0 once closed: from then on the writer reads
                              nothing of the slot but this */
  int in_active;
  int fd;
  char path[512];
  topo_trace_record *block; /* TOPO_WRITER_BLOCK_RECORDS records while it has traffic */
  uint32_t block_count, block_index;
  uint64_t records_written;
  int64_t block_first_ns; /* monotonic time the current block got its first record */
  int io_warned;
  struct topo_comm *writer_next, *writer_prev; /* the writer's open comms */
  struct topo_comm *active_next;               /* comms with a partial block */
} topo_comm;

/* Records per block, the last of which is always a STATS record. */
#define TOPO_WRITER_BLOCK_RECORDS 1024

/* ---- trace_writer.c ----
 * One writer (thread and ring) per profiler generation. Nothing here blocks a caller beyond the
 * time it passes; the hot path never blocks at all. */
typedef struct topo_writer_config {
  const char *dir;
  uint32_t ring_size;    /* power of two */
  int64_t idle_flush_ns; /* a partial block is written when its first record is this old */
  /* Periodic work on the writer thread (reaping overdue collectives, starting CUPTI when due);
   * returns when it next wants to run (monotonic ns, INT64_MAX = nothing pending). It runs at
   * each pass of the writer, the first one included, until the writer is asked to stop; a
   * topo_writer_wake makes the writer pass again at once. NULL = none. */
  int64_t (*tick)(topo_writer *w, int64_t now_ns);
  /* Each collective and p2p record the writer drains, on its thread, while it is not asked to
   * stop (the step schedule learns from them). NULL = none. */
  void (*observe)(void *observer, topo_comm *c, uint32_t life, const topo_trace_record *r,
                  int64_t now_ns);
  void *observer;
} topo_writer_config;

/* The longest TOPO_PROFILER_DIR the writer accepts (bytes, without the NUL); a longer one is
 * refused at init, never truncated. */
#define TOPO_WRITER_DIR_MAX 255

/* Start a writer: its ring (address space only; pages become resident as records pass) and its
 * thread. NULL when either cannot be had. First init, under the core's mutex. */
topo_writer *topo_writer_start(const topo_writer_config *cfg);
/* Stop `w`: what was queued before the call is written (or, past wait_ns / 2, counted as
 * dropped), every comm of it gets its footer, the thread ends. Waits at most wait_ns; returns 1
 * when the writer finished. With `release`, a finished writer is joined and freed, and one
 * that did not finish is left to finish on its own (its comms must then stay allocated). Without
 * it (exit: other threads may still push), nothing is freed. Last finalize or exit. */
int topo_writer_stop(topo_writer *w, int64_t wait_ns, int release);
/* Hand the life `c` has now (odd, set before the call) to `w`, which creates its file
 * (O_CREAT|O_EXCL|O_NOFOLLOW, 0640) and writes its header on its own thread; on failure it warns
 * once and counts c's records as TOPO_DROP_IO. Returns at once. Init thread. */
void topo_writer_open(topo_writer *w, topo_comm *c);
/* Hot path, any thread: queue one record of life `life` of `c`; 0 when the ring is full (caller
 * counts). A record of a life the writer has closed is not written. */
int topo_writer_push_life(topo_comm *c, uint32_t life, const topo_trace_record *rec);
/* The same for the life `c` has now (the CUPTI stream's, which does not change under it). */
int topo_writer_push(topo_comm *c, const topo_trace_record *rec);
/* The comm in slot `slot` of the core's context table (core.c); NULL when there is none. */
topo_comm *topo_comm_slot(uint32_t slot);
/* Finalize thread: the writer closes `c` (last block, footer) once the records queued before
 * this call are written. Waits at most wait_ns, not at all while a write has been stuck longer
 * than that (a file system that stopped answering); returns 1 when `c` is closed. */
int topo_writer_close(topo_comm *c, int64_t wait_ns);
/* Any thread, not the hot path's common case: make the writer pass over its work (and its tick)
 * again now, also when it was just about to sleep. */
void topo_writer_wake(topo_writer *w);
/* The writer thread only (its tick): write `r` into life `life` of the comm in slot `slot`, as
 * a record drained from the ring is written (nothing when that life is closed). */
void topo_writer_append_local(topo_writer *w, uint32_t slot, uint32_t life,
                              const topo_trace_record *r, int64_t now);

/* ---- nvtx.c ---- */
/* Create our "topo" domain, categories and registered strings (first init). 0 = no tool. */
int topo_nvtx_init(void);
/* Start a range for a collective at enqueue; returns its id (0 when NVTX is off). */
uint64_t topo_nvtx_coll_start(const topo_rec_coll *rec);
/* End it at completion; adds a mark with the GPU duration when the record is GPU-timed. */
void topo_nvtx_coll_end(uint64_t range, const topo_rec_coll *rec);

/* ---- cupti.c ---- */
struct topo_sched;
/* First init: read the TOPO_PROFILER_CUPTI* variables (a bad mode warns once). 0 = mode off. */
int topo_cupti_configure(void);
/* Whether the mode is `window` (the default): its windows follow the step schedule. */
int topo_cupti_windowed(void);
/* The step schedule the windows follow (step_sched.h; NULL: windows of a fixed length every
 * period). Set at the first init before the writer starts; read only on the writer thread. */
void topo_cupti_set_sched(struct topo_sched *s);
/* The mode in words, for the init log line. */
const char *topo_cupti_describe(void);
/* How long after the first init the CUPTI start may wait for the first large collective: the
 * period in the `window` mode without a trigger file, else 0 (start with the writer). */
int64_t topo_cupti_defer_ns(void);
/* Before the file of `c` (the process-wide comm) is opened: look for an injected CUPTI client,
 * else dlopen CUPTI and set c's CUPTI clock offset. Touches no CUPTI state. 0 = mode off.
 * The writer thread when the start is due (dlopen of CUPTI costs milliseconds and 2.4 MB
 * resident: not on the init thread, and not before the timeline needs it). */
int topo_cupti_load(topo_comm *c);
/* After that file is handed to the writer: write FAILED when CUPTI could not be loaded, else
 * open the first window (or DECLINE it). The writer thread, right after topo_cupti_load. */
void topo_cupti_begin(void);
/* Training traffic has begun: an operation of >= TOPO_CUPTI_TRAFFIC_BYTES was issued. In the
 * window mode the first window opens there (a job's first seconds or minutes are model building,
 * compile and setup; its steady state starts with large collectives), or one period after init
 * when none came by then; a first large collective after that window closed starts the schedule
 * over. Hot path, any thread: one relaxed load once it is known. */
#define TOPO_CUPTI_TRAFFIC_BYTES TOPO_TRACE_CUPTI_START_BYTES
void topo_cupti_note_traffic(void);
/* Writer tick: the span schedule (windows, trigger file, flushes, probes); returns at once
 * (one atomic load) when nothing is due. */
void topo_cupti_poll(int64_t now_ns);
/* When topo_cupti_poll next has something to do (monotonic ns; INT64_MAX = nothing scheduled):
 * the writer sleeps until then. */
int64_t topo_cupti_next_due(void);
/* Close the open span (RECORDED, or YIELDED when another client is there) and detach from the
 * comm (last finalize / exit); later buffer callbacks drop their records. */
void topo_cupti_stop(void);
#endif
