// SPDX-License-Identifier: Apache-2.0
// The cross-rank join (analyze_join.c) on hand-made traces whose records are written out of
// sequence order, as libtopo-profiler.so writes a GPU-timed collective only once its kernel has
// ended, after the untimed collectives enqueued behind it: every collective joins once, complete,
// with the skew of its GPU starts; a record that truly never came is the only one missing; the
// counts never exceed the collectives joined. Also the real 2 x H200 DDP traces
// (tests/data/ddp-2xh200), whose two ranks wrote 3 timed records behind later ones, and a rank
// whose enqueues are recorded far later than its kernels ran (a process short of CPU in the
// modelled demo job): every rank's wait stays inside its own kernels.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "report.h"
#include "report_analysis.h"
#include "trace_fixture.h"

#define B     1000000000000LL /* realtime origin of the fixtures */
#define NCOLL 96
#define RANKS 3

static char dir[64];

static void make_dir(void) {
  snprintf(dir, sizeof dir, "/tmp/topo-join-XXXXXX");
  assert_non_null(mkdtemp(dir));
}

static void remove_dir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* Collective i of rank r: enqueued at B + 100000 i + 1000 r; every 4th one GPU-timed, its
 * kernel starting 2000 + 100 r after the enqueue of rank 0 and ending at + 50000 on every rank
 * (start skew 100 (RANKS - 1) ns by GPU starts). Untimed ones are judged by CPU enqueue (skew
 * 1000 (RANKS - 1) ns). */
static topo_trace_record coll(int r, int i) {
  int64_t at = B + 100000LL * i, q = at + 1000LL * r;
  int timed = i % 4 == 0;
  return tf_coll(4, (uint64_t)i, 32 << 20, q, q + 500, timed ? at + 2000 + 100LL * r : 0,
                 timed ? at + 50000 : 0, 1, 2, 4, 1);
}

/* Rank r's trace, records in the order a profiler writes them: each timed record `lag`
 * positions after its own (the untimed ones behind it go first), `skip` (>= 0) never written.
 * Blocks of 3 records, so the ranks' reads interleave. */
static void write_rank(int r, int lag, int skip) {
  topo_trace_header h;
  tf_header_init(&h, 0x51, r, RANKS);
  h.cupti_minus_realtime_ns = TOPO_TRACE_OFFSET_UNKNOWN;
  tf_trace t;
  tf_begin(&t, &h, NULL);
  t.block_records = 3;
  int held[NCOLL], nheld = 0;
  for (int i = 0; i < NCOLL; i++) {
    if (i % 4 == 0 && lag > 0) held[nheld++] = i;
    else if (i != skip) {
      topo_trace_record rec = coll(r, i);
      tf_add(&t, &rec);
    }
    while (nheld && (i - held[0] >= lag || i == NCOLL - 1)) {
      if (held[0] != skip) {
        topo_trace_record rec = coll(r, held[0]);
        tf_add(&t, &rec);
      }
      memmove(held, held + 1, (size_t)--nheld * sizeof *held);
    }
  }
  tf_footer(&t, NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/rank%d.trace", dir, r);
  assert_int_equal(tf_save(&t, path), 0);
  tf_free(&t);
}

static void analyze(rp_report *r, const rp_options *o) {
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  if (o) opt = *o;
  assert_int_equal(rp_analyze(paths, 1, &opt, r), TOPO_OK);
}

static const rp_rank *rank_of(const rp_report *r, int world) {
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].world_rank == world) return &r->ranks[i];
  fail_msg("no rank %d", world);
  return NULL;
}

static void test_timed_records_written_behind_later_ones_join_once_complete(void **state) {
  (void)state;
  make_dir();
  write_rank(0, 5, -1);
  write_rank(1, 1, -1);
  write_rank(2, 0, -1); /* in order */
  rp_report r;
  analyze(&r, NULL);
  assert_int_equal(r.ncomms, 1);
  assert_int_equal(r.comms[0].joined, NCOLL);
  assert_int_equal(r.comms[0].incomplete, 0);
  assert_int_equal(r.comms[0].skew_gpu, NCOLL / 4);
  assert_int_equal(r.comms[0].skew.n, NCOLL);
  assert_int_equal(r.comms[0].skew.max, 2000); /* CPU enqueue skew of the untimed ones */
  assert_int_equal(rp_quant_get(&r.skew_gpu_all, 1.0), 200);
  for (int w = 0; w < RANKS; w++) {
    const rp_rank *k = rank_of(&r, w);
    assert_int_equal(k->joined, NCOLL);
    assert_int_equal(k->joined_gpu, NCOLL / 4);
    assert_int_equal(k->missed, 0);
  }
  /* rank 2 starts last everywhere: by 100 ns on the GPU, 1000 ns by enqueue */
  const rp_rank *k2 = rank_of(&r, 2);
  assert_int_equal(k2->last_count, NCOLL);
  assert_int_equal(k2->late_total, NCOLL / 4 * 100 + (NCOLL - NCOLL / 4) * 1000);
  assert_int_equal(rank_of(&r, 0)->wait_total, NCOLL / 4 * 200 + (NCOLL - NCOLL / 4) * 2000);
  rp_report_free(&r);
  remove_dir();
}

static void test_a_record_that_never_came_is_the_only_one_missing(void **state) {
  (void)state;
  make_dir();
  write_rank(0, 7, -1);
  write_rank(1, 3, 40); /* its timed record of collective 40 never written */
  write_rank(2, 0, 41); /* an untimed one never written */
  rp_report r;
  analyze(&r, NULL);
  assert_int_equal(r.comms[0].joined, NCOLL);
  assert_int_equal(r.comms[0].incomplete, 2);
  assert_int_equal(rank_of(&r, 0)->missed, 0);
  assert_int_equal(rank_of(&r, 1)->missed, 1);
  assert_int_equal(rank_of(&r, 2)->missed, 1);
  rp_report_free(&r);
  remove_dir();
}

static void test_counts_stay_inside_a_window(void **state) {
  (void)state;
  make_dir();
  write_rank(0, 6, -1);
  write_rank(1, 2, -1);
  write_rank(2, 0, -1);
  rp_report r;
  rp_options opt = {.reorder_window = 65536, .quiet = 1, .window = 1};
  opt.from = B + 100000LL * 20; /* collectives 20 .. 39 */
  opt.to = B + 100000LL * 40;
  analyze(&r, &opt);
  assert_int_equal(r.comms[0].joined, 20);
  assert_int_equal(r.comms[0].incomplete, 0);
  for (int w = 0; w < RANKS; w++) assert_int_equal(rank_of(&r, w)->missed, 0);
  rp_report_free(&r);
  remove_dir();
}

/* Rank 0 writes collective 5 after 70 000 later ones: more than the join holds (65 536 seqs), so
 * collective 5 is closed without it, counted incomplete once, and the record counts late. */
static void test_a_record_later_than_the_join_holds_counts_late_once(void **state) {
  (void)state;
  make_dir();
  enum { N = 70006 };
  for (int r = 0; r < 2; r++) {
    topo_trace_header h;
    tf_header_init(&h, 0x52, r, 2);
    h.cupti_minus_realtime_ns = TOPO_TRACE_OFFSET_UNKNOWN;
    tf_trace t;
    tf_begin(&t, &h, NULL);
    for (int i = 0; i < N; i++) {
      if (r == 0 && i == 5) continue;
      int64_t q = B + 10000LL * i + 100 * r;
      topo_trace_record rec = tf_coll(4, (uint64_t)i, 1024, q, q + 50, 0, 0, 1, 0, 2, 1);
      tf_add(&t, &rec);
    }
    if (r == 0) {
      topo_trace_record rec = tf_coll(4, 5, 1024, B + 50000, B + 50050, 0, 0, 1, 0, 2, 1);
      tf_add(&t, &rec);
    }
    tf_footer(&t, NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/rank%d.trace", dir, r);
    assert_int_equal(tf_save(&t, path), 0);
    tf_free(&t);
  }
  rp_report r;
  analyze(&r, NULL);
  assert_int_equal(r.comms[0].joined, N);
  assert_int_equal(r.comms[0].incomplete, 1);
  assert_int_equal(r.comms[0].late, 1);
  assert_int_equal(rank_of(&r, 0)->missed, 1);
  rp_report_free(&r);
  remove_dir();
}

/* Three ranks, 40 AllReduces of 32 MiB; every 10th untimed on every rank (judged by CPU enqueue).
 * GPU: kernels of 50 us, rank 1 starting 20 us after the others (the straggler). CPU: rank 2's
 * enqueues recorded 100 ms late (its thread got the CPU late; its kernels did not wait for that).
 * Waiting happens inside a rank's own kernel: no rank waits longer than its kernels last, however
 * late an enqueue was recorded; the straggler is rank 1. */
static void test_waits_stay_inside_the_ranks_own_kernels(void **state) {
  (void)state;
  make_dir();
  for (int r = 0; r < RANKS; r++) {
    topo_trace_header h;
    tf_header_init(&h, 0x53, r, RANKS);
    h.cupti_minus_realtime_ns = TOPO_TRACE_OFFSET_UNKNOWN;
    tf_trace t;
    tf_begin(&t, &h, NULL);
    for (int i = 0; i < 40; i++) {
      int64_t at = B + 1000000LL * i, g = at + 10000 + (r == 1 ? 20000 : 0);
      int64_t q = at + (r == 2 ? 100000000 : 1000LL * r);
      int timed = i % 10 != 5;
      topo_trace_record rec = tf_coll(4, (uint64_t)i, 32 << 20, q, q + 500, timed ? g : 0,
                                      timed ? at + 80000 : 0, 1, 2, 4, 1);
      tf_add(&t, &rec);
    }
    tf_footer(&t, NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/rank%d.trace", dir, r);
    assert_int_equal(tf_save(&t, path), 0);
    tf_free(&t);
  }
  rp_report r;
  analyze(&r, NULL);
  assert_int_equal(r.comms[0].joined, 40);
  assert_int_equal(r.comms[0].incomplete, 0);
  int64_t most = 0;
  int straggler = -1;
  for (int w = 0; w < RANKS; w++) {
    const rp_rank *k = rank_of(&r, w);
    /* its kernels: 36 measured (70 or 50 us) and 4 estimated */
    int64_t kernels = 36 * (w == 1 ? 50000 : 70000) + 4 * 70000;
    if (k->wait_total > kernels || k->wait_total > k->t.last - k->t.first)
      fail_msg("rank %d waits %lld ns; its kernels last %lld ns, its span %lld ns", w,
               (long long)k->wait_total, (long long)kernels, (long long)(k->t.last - k->t.first));
    if (k->late_total > most) most = k->late_total, straggler = w;
  }
  assert_int_equal(straggler, 1);
  rp_report_free(&r);
  remove_dir();
}

/* Real traces: rank 0 wrote its timed AllReduces 88 and 152 after 93 and 156, rank 1 its 152
 * after 154; no rank lacks a record (178 collectives on each, seqs without a gap). */
static void test_ddp_traces_join_complete(void **state) {
  (void)state;
  const char *paths[] = {TOPO_DDP_TRACES};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.ncomms, 1);
  assert_int_equal(r.comms[0].joined, 178);
  assert_int_equal(r.comms[0].incomplete, 0);
  for (int i = 0; i < r.nranks; i++) {
    assert_int_equal(r.ranks[i].missed, 0);
    assert_int_equal(r.ranks[i].joined, 178);
  }
  rp_report_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_timed_records_written_behind_later_ones_join_once_complete),
      cmocka_unit_test(test_a_record_that_never_came_is_the_only_one_missing),
      cmocka_unit_test(test_counts_stay_inside_a_window),
      cmocka_unit_test(test_a_record_later_than_the_join_holds_counts_late_once),
      cmocka_unit_test(test_waits_stay_inside_the_ranks_own_kernels),
      cmocka_unit_test(test_ddp_traces_join_complete),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
