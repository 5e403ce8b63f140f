// SPDX-License-Identifier: Apache-2.0
// The binary trace reader: valid files round-trip; truncated, corrupt, unknown-version and
// garbage input give a problem naming the byte offset, and every intact block is still delivered;
// damage costs checksum work linear in the file; a suspended reader resumes where it stopped, and
// a file that vanished or was replaced meanwhile is a problem, never a silent end.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "trace_fixture.h"
#include "trace_reader.h"

/* A small trace: blocks of 4, 4 and 3 records (one string spanning 2 records, 8 collectives, a
 * STATS record) and a footer. */
static tf_trace small_trace(int with_footer) {
  topo_trace_header h;
  tf_header_init(&h, 0xabcdef, 1, 4);
  tf_trace t;
  tf_begin(&t, &h, NULL);
  t.block_records = 4;
  tf_string(&t, 7, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  for (int i = 0; i < 8; i++) {
    topo_trace_record r = tf_coll(4, (uint64_t)i, 1024u << i, 100 * i, 100 * i + 50, 1000 * i,
                                  1000 * i + 500, 1, 2, 4, 1);
    tf_add(&t, &r);
  }
  uint64_t dropped[TOPO_DROP_KINDS] = {3, 1, 0, 0, 0, 0};
  tf_stats(&t, dropped);
  tf_flush(&t);
  if (with_footer) {
    uint64_t fd[TOPO_DROP_KINDS] = {5, 2, 0, 0, 0, 0};
    tf_footer(&t, fd);
  }
  return t;
}

static size_t count_records(topo_trace_reader *r, int *colls) {
  size_t n = 0;
  const topo_trace_record *rec;
  *colls = 0;
  while ((rec = topo_trace_reader_next(r))) {
    n++;
    if (rec->type == TOPO_REC_COLL) (*colls)++;
  }
  return n;
}

static void test_valid_trace_round_trips(void **state) {
  (void)state;
  tf_trace t = small_trace(1);
  topo_trace_reader *r;
  assert_int_equal(topo_trace_reader_open_memory(t.data, t.len, "small", 1, &r), TOPO_OK);
  const topo_trace_header *h = topo_trace_reader_header(r);
  assert_non_null(h);
  assert_int_equal(h->rank, 1);
  assert_int_equal(h->nranks, 4);
  assert_string_equal(h->host, "host1");
  int colls;
  assert_int_equal(count_records(r, &colls), 11);
  assert_int_equal(colls, 8);
  const topo_trace_reader_info *info = topo_trace_reader_info_get(r);
  assert_int_equal(info->problems, 0);
  assert_int_equal(info->footer, 1);
  assert_int_equal(info->blocks, 3);
  assert_int_equal(info->footer_records, 11);
  assert_int_equal(info->dropped[TOPO_DROP_COLL], 5); /* footer wins over the STATS record */
  assert_string_equal(topo_trace_reader_string(r, 7),
                      "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  assert_string_equal(topo_trace_reader_string(r, 8), "");
  topo_trace_reader_close(r);
  tf_free(&t);
}

static void test_killed_writer_keeps_stats_drop_counts(void **state) {
  (void)state;
  tf_trace t = small_trace(0);
  topo_trace_reader *r;
  assert_int_equal(topo_trace_reader_open_memory(t.data, t.len, "killed", 1, &r), TOPO_OK);
  int colls;
  assert_int_equal(count_records(r, &colls), 11);
  const topo_trace_reader_info *info = topo_trace_reader_info_get(r);
  assert_int_equal(info->footer, 0);
  assert_int_equal(info->problems, 1);
  assert_non_null(strstr(info->first_message, "without a footer"));
  assert_int_equal(info->first_problem_offset, t.len);
  assert_int_equal(info->dropped[TOPO_DROP_COLL], 3);
  assert_int_equal(info->dropped[TOPO_DROP_CHILD], 1);
  topo_trace_reader_close(r);
  tf_free(&t);
}

/* Cut the file at every byte: the reader never fails, delivers exactly the records of the
 * blocks that end before the cut, and names an offset at or before the cut. */
static void test_truncated_at_every_byte_recovers(void **state) {
  (void)state;
  tf_trace t = small_trace(1);
  static const size_t per_block[3] = {4, 4, 3};
  size_t block_end[3];
  size_t off = sizeof(topo_trace_header);
  for (int b = 0; b < 3; b++) {
    off += sizeof(topo_trace_block) + per_block[b] * TOPO_TRACE_RECORD_SIZE;
    block_end[b] = off;
  }
  for (size_t cut = 0; cut < t.len; cut++) {
    uint8_t *copy = malloc(cut ? cut : 1);
    memcpy(copy, t.data, cut);
    topo_trace_reader *r;
    assert_int_equal(topo_trace_reader_open_memory(copy, cut, "cut", 1, &r), TOPO_OK);
    int colls;
    size_t n = count_records(r, &colls);
    size_t expect = 0;
    for (int b = 0; b < 3; b++)
      if (block_end[b] <= cut) expect += per_block[b];
    if (n != expect) fail_msg("cut at %zu: %zu records, expected %zu", cut, n, expect);
    const topo_trace_reader_info *info = topo_trace_reader_info_get(r);
    if (info->problems < 1) fail_msg("cut at %zu: no problem reported", cut);
    if (info->first_problem_offset > cut)
      fail_msg("cut at %zu: problem at offset %llu", cut,
               (unsigned long long)info->first_problem_offset);
    assert_int_equal(topo_trace_reader_header(r) != NULL, cut >= sizeof(topo_trace_header));
    topo_trace_reader_close(r);
    free(copy);
  }
  tf_free(&t);
}

static void test_corrupt_block_is_skipped_and_named(void **state) {
  (void)state;
  tf_trace t = small_trace(1);
  size_t block1 = sizeof(topo_trace_header) + sizeof(topo_trace_block) + 4 * 64;
  t.data[block1 + sizeof(topo_trace_block) + 70] ^= 0x40; /* a record byte of block 1 */
  topo_trace_reader *r;
  assert_int_equal(topo_trace_reader_open_memory(t.data, t.len, "corrupt", 1, &r), TOPO_OK);
  int colls;
  assert_int_equal(count_records(r, &colls), 7); /* blocks 0 and 2 */
  const topo_trace_reader_info *info = topo_trace_reader_info_get(r);
  assert_int_equal(info->bad_blocks, 1);
  assert_int_equal(info->first_problem_offset, block1);
  assert_non_null(strstr(info->first_message, "checksum mismatch"));
  assert_int_equal(info->footer, 1);
  topo_trace_reader_close(r);
  tf_free(&t);
}

static void test_garbage_between_blocks_resyncs(void **state) {
  (void)state;
  tf_trace t = small_trace(1);
  size_t block1 = sizeof(topo_trace_header) + sizeof(topo_trace_block) + 4 * 64;
  /* Insert 13 bytes of junk before block 1. */
  uint8_t *d = malloc(t.len + 13);
  memcpy(d, t.data, block1);
  memset(d + block1, 0x5a, 13);
  memcpy(d + block1 + 13, t.data + block1, t.len - block1);
  topo_trace_reader *r;
  assert_int_equal(topo_trace_reader_open_memory(d, t.len + 13, "junk", 1, &r), TOPO_OK);
  int colls;
  assert_int_equal(count_records(r, &colls), 11); /* every block survives, misaligned or not */
  const topo_trace_reader_info *info = topo_trace_reader_info_get(r);
  assert_int_equal(info->skipped_bytes, 13);
  assert_int_equal(info->first_problem_offset, block1);
  topo_trace_reader_close(r);
  free(d);
  tf_free(&t);
}

static void test_unknown_version_is_refused_with_offset(void **state) {
  (void)state;
  tf_trace t = small_trace(1);
  t.data[8] = 9; /* version 9 */
  topo_trace_reader *r;
  assert_int_equal(topo_trace_reader_open_memory(t.data, t.len, "v9", 1, &r), TOPO_OK);
  assert_null(topo_trace_reader_header(r));
  assert_null(topo_trace_reader_next(r));
  const topo_trace_reader_info *info = topo_trace_reader_info_get(r);
  assert_int_equal(info->first_problem, TOPO_ERR_UNSUPPORTED);
  assert_int_equal(info->first_problem_offset, 8);
  assert_non_null(strstr(info->first_message, "unknown trace version 9"));
  topo_trace_reader_close(r);
  tf_free(&t);
}

static void test_garbage_and_mutations_never_crash(void **state) {
  (void)state;
  tf_trace t = small_trace(1);
  uint32_t seed = 12345;
  uint8_t *d = malloc(t.len);
  for (int iter = 0; iter < 3000; iter++) {
    memcpy(d, t.data, t.len);
    int flips = 1 + iter % 8;
    for (int k = 0; k < flips; k++) {
      seed = seed * 1103515245u + 12345u;
      size_t at = (seed >> 8) % t.len;
      seed = seed * 1103515245u + 12345u;
      d[at] = (uint8_t)(seed >> 16);
    }
    topo_trace_reader *r;
    assert_int_equal(topo_trace_reader_open_memory(d, t.len, "mut", 1, &r), TOPO_OK);
    int colls;
    size_t n = count_records(r, &colls);
    assert_true(n <= 11 + 4); /* never invents more than one extra block */
    topo_trace_reader_close(r);
  }
  for (size_t i = 0; i < t.len; i++) {
    seed = seed * 1103515245u + 12345u;
    d[i] = (uint8_t)(seed >> 16);
  }
  topo_trace_reader *r;
  assert_int_equal(topo_trace_reader_open_memory(d, t.len, "garbage", 1, &r), TOPO_OK);
  assert_null(topo_trace_reader_next(r));
  assert_non_null(strstr(topo_trace_reader_info_get(r)->first_message, "bad magic"));
  topo_trace_reader_close(r);
  free(d);
  tf_free(&t);
}

static void test_file_reader_matches_memory_reader(void **state) {
  (void)state;
  tf_trace t = small_trace(1);
  char path[] = "/tmp/topo-reader-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(tf_save(&t, path), 0);
  topo_trace_reader *r;
  assert_int_equal(topo_trace_reader_open(path, 1, &r), TOPO_OK);
  int colls;
  assert_int_equal(count_records(r, &colls), 11);
  assert_int_equal(topo_trace_reader_info_get(r)->problems, 0);
  assert_int_equal(topo_trace_reader_offset(r), t.len);
  topo_trace_reader_close(r);
  unlink(path);
  assert_int_equal(topo_trace_reader_open("/nonexistent/trace", 1, &r), TOPO_ERR_IO);
  tf_free(&t);
}

/* A region of block headers that each claim 4096 records (256 KiB) with a wrong checksum, one
 * every 16 bytes, between two good blocks: every header is a resync candidate whose checksum
 * spans 256 KiB, but the reader sums each input byte about once. */
static void test_repeated_block_headers_cost_linear_checksum_work(void **state) {
  (void)state;
  tf_trace t = small_trace(1);
  size_t block1 = sizeof(topo_trace_header) + sizeof(topo_trace_block) + 4 * 64;
  size_t junk = (size_t)1 << 20, len = t.len + junk;
  uint8_t *d = malloc(len);
  memcpy(d, t.data, block1);
  for (size_t off = 0; off < junk; off += sizeof(topo_trace_block)) {
    topo_trace_block b = {TOPO_TRACE_BLOCK_MAGIC, TOPO_TRACE_MAX_BLOCK_RECORDS, 0, 1};
    memcpy(d + block1 + off, &b, sizeof b);
  }
  memcpy(d + block1 + junk, t.data + block1, t.len - block1);
  topo_trace_reader *r;
  assert_int_equal(topo_trace_reader_open_memory(d, len, "headers", 1, &r), TOPO_OK);
  int colls;
  assert_int_equal(count_records(r, &colls), 11); /* every good block, before and after */
  const topo_trace_reader_info *info = topo_trace_reader_info_get(r);
  assert_int_equal(info->skipped_bytes, junk);
  if (info->checked_bytes > 3 * (uint64_t)len)
    fail_msg("%llu bytes checksummed for a %zu-byte file", (unsigned long long)info->checked_bytes,
             len);
  topo_trace_reader_close(r);
  free(d);
  tf_free(&t);
}

static char *save_temp(const tf_trace *t) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/topo-reader-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(tf_save(t, path), 0);
  return path;
}

/* Suspended after every block, the reader holds no descriptor and delivers the same records. */
static void test_suspended_reader_resumes_where_it_stopped(void **state) {
  (void)state;
  tf_trace t = small_trace(1);
  char *path = save_temp(&t);
  topo_trace_reader *r;
  assert_int_equal(topo_trace_reader_open(path, 1, &r), TOPO_OK);
  const topo_trace_record *recs;
  size_t n, total = 0, blocks = 0;
  while ((n = topo_trace_reader_next_block(r, &recs))) {
    total += n;
    blocks++;
    assert_int_equal(topo_trace_reader_suspend(r), 1);
    assert_int_equal(topo_trace_reader_suspend(r), 0); /* already */
  }
  assert_int_equal(total, 11);
  assert_int_equal(blocks, 3);
  const topo_trace_reader_info *info = topo_trace_reader_info_get(r);
  assert_int_equal(info->problems, 0);
  assert_int_equal(info->io_error, 0);
  assert_string_equal(topo_trace_reader_string(r, 7),
                      "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  topo_trace_reader_close(r);
  unlink(path);
  tf_free(&t);
}

/* A file removed or replaced while its reader was suspended ends it with a problem and an errno. */
static void test_vanished_or_replaced_file_is_a_problem(void **state) {
  (void)state;
  tf_trace t = small_trace(1);
  for (int replace = 0; replace < 2; replace++) {
    char *path = save_temp(&t);
    topo_trace_reader *r;
    assert_int_equal(topo_trace_reader_open(path, 1, &r), TOPO_OK);
    const topo_trace_record *recs;
    assert_int_equal(topo_trace_reader_next_block(r, &recs), 4);
    assert_int_equal(topo_trace_reader_suspend(r), 1);
    char kept[80];
    snprintf(kept, sizeof kept, "%s.kept", path);
    if (replace) { /* another file renamed over it (the old one kept: its inode is not reused) */
      assert_int_equal(link(path, kept), 0);
      char other[80];
      snprintf(other, sizeof other, "%s.new", path);
      assert_int_equal(tf_save(&t, other), 0);
      assert_int_equal(rename(other, path), 0);
    } else {
      unlink(path);
    }
    assert_int_equal(topo_trace_reader_next_block(r, &recs), 0);
    const topo_trace_reader_info *info = topo_trace_reader_info_get(r);
    assert_int_equal(info->io_error, replace ? ESTALE : ENOENT);
    assert_int_equal(info->first_problem, TOPO_ERR_IO);
    assert_non_null(strstr(info->first_message, "cannot reopen"));
    topo_trace_reader_close(r);
    unlink(path);
    unlink(kept);
  }
  tf_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_trace_round_trips),
      cmocka_unit_test(test_killed_writer_keeps_stats_drop_counts),
      cmocka_unit_test(test_truncated_at_every_byte_recovers),
      cmocka_unit_test(test_corrupt_block_is_skipped_and_named),
      cmocka_unit_test(test_garbage_between_blocks_resyncs),
      cmocka_unit_test(test_unknown_version_is_refused_with_offset),
      cmocka_unit_test(test_garbage_and_mutations_never_crash),
      cmocka_unit_test(test_file_reader_matches_memory_reader),
      cmocka_unit_test(test_repeated_block_headers_cost_linear_checksum_work),
      cmocka_unit_test(test_suspended_reader_resumes_where_it_stopped),
      cmocka_unit_test(test_vanished_or_replaced_file_is_a_problem),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
