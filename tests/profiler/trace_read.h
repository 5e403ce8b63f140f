/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test-side reader of one trace file, straight from the structs of common/trace_format.h:
 * header, blocks (magic, count, index and CRC-32C checked), optional footer. Stops at the first
 * damaged or truncated block, as a reader of a killed process's file must.
 */
#ifndef TOPO_TEST_TRACE_READ_H
#define TOPO_TEST_TRACE_READ_H
#include <stddef.h>

#include "trace_format.h"

typedef struct test_trace {
  topo_trace_header header;
  topo_trace_record *records; /* every record of every valid block, STATS included */
  size_t count;
  size_t blocks;
  int has_footer;
  topo_trace_footer footer;
  int bad_block; /* 1 when reading stopped at a damaged/truncated block */
} test_trace;

/* 0 on success (a readable header); the caller frees with test_trace_free. */
int test_trace_read(const char *path, test_trace *t);
void test_trace_free(test_trace *t);
/* Records of one type, in file order; returns how many (pointer array owned by caller). */
size_t test_trace_select(const test_trace *t, int type, const topo_trace_record ***out);
/* Paths of the *.trace files in `dir` (sorted); returns how many. */
size_t test_trace_list(const char *dir, char ***paths);
void test_trace_free_list(char **paths, size_t n);
/* Remove every file in dir and dir itself (best effort). */
void test_trace_rmdir(const char *dir);
#endif
