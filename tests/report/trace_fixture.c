// SPDX-License-Identifier: Apache-2.0
// Test-only trace writer (see trace_fixture.h): the format's writer side, written for tests.
#include "trace_fixture.h"

#include <stdlib.h>
#include <string.h>

#include "crc32.h"

static void put(tf_trace *t, const void *p, size_t n) {
  if (t->file) {
    if (fwrite(p, 1, n, t->file) != n) abort();
    t->len += n;
    return;
  }
  if (t->len + n > t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 4096;
    while (cap < t->len + n) cap *= 2;
    t->data = realloc(t->data, cap);
    if (!t->data) abort();
    t->cap = cap;
  }
  memcpy(t->data + t->len, p, n);
  t->len += n;
}

void tf_header_init(topo_trace_header *h, uint64_t comm_hash, int rank, int nranks) {
  memset(h, 0, sizeof *h);
  memcpy(h->magic, TOPO_TRACE_MAGIC, 8);
  h->version = TOPO_TRACE_VERSION;
  h->header_size = sizeof *h;
  h->record_size = TOPO_TRACE_RECORD_SIZE;
  h->flags = TOPO_TRACE_F_KERNELCH;
  h->comm_hash = comm_hash;
  h->rank = rank;
  h->nranks = nranks;
  h->nnodes = 1;
  h->pid = 1000u + (uint32_t)rank;
  h->abi_version = 5;
  h->sample_every = 1;
  snprintf(h->host, sizeof h->host, "host%d", rank);
  snprintf(h->topo_version, sizeof h->topo_version, "test");
}

void tf_begin(tf_trace *t, const topo_trace_header *h, FILE *file) {
  memset(t, 0, offsetof(tf_trace, pending));
  t->npending = 0;
  t->block_records = TOPO_TRACE_MAX_BLOCK_RECORDS;
  t->block_index = 0;
  t->nrecords = 0;
  t->file = file;
  put(t, h, sizeof *h);
}

void tf_flush(tf_trace *t) {
  if (!t->npending) return;
  topo_trace_block b = {TOPO_TRACE_BLOCK_MAGIC, t->npending,
                        topo_crc32c(0, t->pending, (size_t)t->npending * TOPO_TRACE_RECORD_SIZE),
                        t->block_index++};
  put(t, &b, sizeof b);
  put(t, t->pending, (size_t)t->npending * TOPO_TRACE_RECORD_SIZE);
  t->npending = 0;
}

void tf_add(tf_trace *t, const topo_trace_record *rec) {
  t->pending[t->npending++] = *rec;
  t->nrecords++;
  if (t->npending >= t->block_records || t->npending >= TOPO_TRACE_MAX_BLOCK_RECORDS) tf_flush(t);
}

void tf_string(tf_trace *t, uint32_t id, const char *text) {
  size_t n = strlen(text);
  do {
    topo_trace_record r;
    memset(&r, 0, sizeof r);
    r.string.type = TOPO_REC_STRING;
    r.string.id = id;
    size_t part = n > sizeof r.string.text ? sizeof r.string.text : n;
    r.string.len = (uint8_t)part;
    memcpy(r.string.text, text, part);
    text += part;
    n -= part;
    if (!n) r.string.flags = TOPO_STRING_F_LAST;
    tf_add(t, &r);
  } while (n);
}

void tf_stats(tf_trace *t, const uint64_t dropped[TOPO_DROP_KINDS]) {
  topo_trace_record r;
  memset(&r, 0, sizeof r);
  r.stats.type = TOPO_REC_STATS;
  r.stats.records = t->nrecords;
  for (int i = 0; i < TOPO_DROP_KINDS; i++) r.stats.dropped[i] = dropped ? dropped[i] : 0;
  tf_add(t, &r);
}

void tf_footer(tf_trace *t, const uint64_t dropped[TOPO_DROP_KINDS]) {
  tf_flush(t);
  topo_trace_footer f;
  memset(&f, 0, sizeof f);
  f.magic = TOPO_TRACE_FOOTER_MAGIC;
  f.blocks = t->block_index;
  f.records = t->nrecords;
  for (int i = 0; i < TOPO_DROP_KINDS; i++) f.dropped[i] = dropped ? dropped[i] : 0;
  put(t, &f, sizeof f);
}

int tf_save(const tf_trace *t, const char *path) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t n = fwrite(t->data, 1, t->len, f);
  return (fclose(f) == 0 && n == t->len) ? 0 : -1;
}

void tf_free(tf_trace *t) {
  free(t->data);
  t->data = NULL;
  t->len = t->cap = 0;
}

topo_trace_record tf_coll(int func, uint64_t seq, uint64_t bytes, int64_t cpu_start,
                          int64_t cpu_stop, int64_t gpu_start, int64_t gpu_stop, int algo,
                          int proto, int nchannels, uint32_t stream) {
  topo_trace_record r;
  memset(&r, 0, sizeof r);
  r.coll.type = (func == 6 || func == 7) ? TOPO_REC_P2P : TOPO_REC_COLL;
  r.coll.func = (uint8_t)func;
  r.coll.algo = (uint8_t)algo;
  r.coll.proto = (uint8_t)proto;
  r.coll.nchannels = (uint8_t)nchannels;
  r.coll.datatype = 7; /* ncclFloat32 */
  r.coll.seq = seq;
  r.coll.bytes = bytes;
  r.coll.cpu_start_ns = cpu_start;
  r.coll.cpu_stop_ns = cpu_stop;
  r.coll.gpu_start_ns = gpu_start;
  r.coll.gpu_stop_ns = gpu_stop;
  r.coll.flags = (gpu_start || gpu_stop) ? TOPO_COLL_F_GPU_TIMED : 0;
  r.coll.peer = -1;
  r.coll.stream_id = stream;
  return r;
}

topo_trace_record tf_kernel(int kind, uint32_t name_id, int64_t start, int64_t stop,
                            uint32_t stream) {
  topo_trace_record r;
  memset(&r, 0, sizeof r);
  r.kernel.type = TOPO_REC_KERNEL;
  r.kernel.kind = (uint8_t)kind;
  r.kernel.name_id = name_id;
  r.kernel.gpu_start_ns = start;
  r.kernel.gpu_stop_ns = stop;
  r.kernel.stream_id = stream;
  return r;
}

topo_trace_record tf_mark(uint32_t name_id, int64_t cpu_start, int64_t cpu_stop, uint64_t value) {
  topo_trace_record r;
  memset(&r, 0, sizeof r);
  r.mark.type = TOPO_REC_MARK;
  r.mark.name_id = name_id;
  r.mark.cpu_start_ns = cpu_start;
  r.mark.cpu_stop_ns = cpu_stop;
  r.mark.value = value;
  return r;
}
