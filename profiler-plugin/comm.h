/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One communicator's trace stream (topo_comm): a slot of the context table (contexts.h) that the
 * core sets up at init, the callbacks count drops on, and the trace writer (trace_writer.h) owns
 * the file of. With hash 0 and rank -1 it is the process-wide CUPTI stream (cupti.h). Included
 * by the core's rooms, the writer and the CUPTI timeline; data and one counter, nothing else.
 */
#ifndef TOPO_PROFILER_COMM_H
#define TOPO_PROFILER_COMM_H

#include <stdatomic.h>
#include <stdint.h>

#include "trace_format.h"

typedef struct topo_writer topo_writer;

/* A slot of the core's context table (contexts.h), never freed. Init sets a slot up and opens a
 * life (life odd), finalize ends it (even), the writer closes it; a later init reuses the slot
 * once closed. Every record carries the life it was made in, and the writer writes a record only
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

/* Count one record of `c` (NULL: nobody to count for) lost as `kind` (TOPO_DROP_*). Any thread,
 * one relaxed atomic add. */
static inline void topo_comm_count_drop(topo_comm *c, int kind) {
  if (c) atomic_fetch_add_explicit(&c->dropped[kind], 1, memory_order_relaxed);
}
#endif
