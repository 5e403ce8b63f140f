/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test-only trace writer: builds binary traces (header, CRC-checked blocks, footer) in memory or
 * straight into a file, so the report's tests and benchmark need no profiler plugin. Records are
 * made with the small constructors below; times are the raw clocks the format stores.
 * Not thread-safe; aborts the test on allocation failure (it is a fixture).
 */
#ifndef TOPO_TEST_TRACE_FIXTURE_H
#define TOPO_TEST_TRACE_FIXTURE_H

#include <stdint.h>
#include <stdio.h>

#include "trace_format.h"

typedef struct tf_trace {
  uint8_t *data; /* whole file when writing to memory */
  size_t len, cap;
  FILE *file; /* when set, blocks go here instead */
  topo_trace_record pending[TOPO_TRACE_MAX_BLOCK_RECORDS];
  uint32_t npending;
  uint32_t block_records; /* records per block (default TOPO_TRACE_MAX_BLOCK_RECORDS) */
  uint32_t block_index;
  uint64_t nrecords;
} tf_trace;

/* A version-1 header for (comm, rank of nranks), host "host<rank>", pid 1000+rank, clocks with
 * mono = realtime = 0 and both GPU offsets 0 (callers change fields to test alignment). */
void tf_header_init(topo_trace_header *h, uint64_t comm_hash, int rank, int nranks);

void tf_begin(tf_trace *t, const topo_trace_header *h, FILE *file /* NULL: memory */);
void tf_add(tf_trace *t, const topo_trace_record *rec);
void tf_flush(tf_trace *t); /* write the pending block, if any */
void tf_string(tf_trace *t, uint32_t id, const char *text);
void tf_stats(tf_trace *t, const uint64_t dropped[TOPO_DROP_KINDS]);
void tf_footer(tf_trace *t, const uint64_t dropped[TOPO_DROP_KINDS]); /* flushes first */
int tf_save(const tf_trace *t, const char *path); /* memory mode: 0 on success */
void tf_free(tf_trace *t);

/* A collective: gpu times 0 = not GPU-timed. func: ncclFunc_t. */
topo_trace_record tf_coll(int func, uint64_t seq, uint64_t bytes, int64_t cpu_start,
                          int64_t cpu_stop, int64_t gpu_start, int64_t gpu_stop, int algo,
                          int proto, int nchannels, uint32_t stream);
topo_trace_record tf_kernel(int kind, uint32_t name_id, int64_t start, int64_t stop,
                            uint32_t stream);
topo_trace_record tf_mark(uint32_t name_id, int64_t cpu_start, int64_t cpu_stop, uint64_t value);

#endif
