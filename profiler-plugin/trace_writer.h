/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The background trace writer (trace_writer.c): one thread and one ring per profiler generation
 * that turns the records pushed by callbacks into one file per communicator (comm.h). The core
 * starts and stops it, hands communicators over and pushes records; the CUPTI timeline pushes its
 * own. The writer calls nothing of the core's: what it needs (the comm of a slot, its periodic
 * work, an observer of the records it drains) comes in topo_writer_config. Nothing here blocks a
 * caller beyond the time it passes; the hot path never blocks at all.
 */
#ifndef TOPO_PROFILER_TRACE_WRITER_H
#define TOPO_PROFILER_TRACE_WRITER_H

#include <stdint.h>

#include "comm.h"
#include "trace_format.h"

/* Records per block, the last of which is always a STATS record. */
#define TOPO_WRITER_BLOCK_RECORDS 1024

typedef struct topo_writer_config {
  const char *dir;
  uint32_t ring_size;    /* power of two */
  int64_t idle_flush_ns; /* a partial block is written when its first record is this old */
  /* The comm in slot `slot` of the context table, NULL when there is none; slots are never
   * freed. Called on the writer's thread for each record it drains or appends. Required. */
  topo_comm *(*comm_at)(uint32_t slot);
  /* Periodic work on the writer thread (reaping overdue collectives, the CUPTI schedule);
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
#endif
