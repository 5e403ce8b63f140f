// SPDX-License-Identifier: Apache-2.0
// The p2p join (analyze_p2p.c) on a hand-made two-stage pipeline: every step rank 0 sends four
// micro-batches to rank 1 and receives four back, and rank 1 posts its receives 20 ms late. The
// two ranks enqueue their p2p in different orders (rank 0 all sends then all receives, rank 1
// alternating), so the profiler's per-communicator p2p seq differs across ranks; records are
// written out of seq order, as the profiler writes a GPU-timed record once its kernel ended. Rank 1
// must be the straggler, rank 0's wait the injected delay per step and inside its own kernels; a
// p2p whose partner's record never came is counted apart, never as a rank missing from a
// collective; a lost record in mid-trace pairs nothing wrongly after it; a trace given twice
// pairs each op once. Also the recorded pipeline of tests/data/full-1xh200/pp: every p2p pairs.
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
#include "report_render.h"
#include "trace_fixture.h"

#define B     1000000000000LL /* realtime origin of the fixtures */
#define MS    1000000LL
#define NSTEP 24
#define MB    4         /* micro-batches per step */
#define DELAY (20 * MS) /* rank 1's receives start this late every step */
#define SEND  6
#define RECV  7
#define MAXOP (NSTEP * (2 * MB + 1))

static char dir[64];

static void make_dir(void) {
  snprintf(dir, sizeof dir, "/tmp/topo-p2p-XXXXXX");
  assert_non_null(mkdtemp(dir));
}

static void remove_dir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* An operation of step s, GPU-timed, enqueued 10 us before its kernel starts. */
static topo_trace_record op(int func, uint64_t seq, int peer, int64_t start, int64_t stop) {
  topo_trace_record rec =
      tf_coll(func, seq, 4 << 20, start - 10000, start - 9000, start, stop, 1, 2, 2, 1);
  rec.coll.peer = peer;
  if (func == SEND || func == RECV) rec.coll.algo = rec.coll.proto = TOPO_UNKNOWN_U8;
  return rec;
}

/* Rank r's operations of every step in its enqueue order (the p2p seq counted over them). Forward
 * pair k: rank 1's Recv starts at T + DELAY + 2k ms; rank 0's Send k starts then too, except Send
 * 0, which starts at T and waits inside its kernel for the late Recv. Backward pair k (rank 1 to
 * rank 0) starts 1 ms after forward pair k on both ranks. Then one AllReduce per step. */
static size_t ops_of(int r, topo_trace_record *out) {
  size_t n = 0;
  uint64_t seq = 0;
  for (int s = 0; s < NSTEP; s++) {
    int64_t t = B + 100 * MS * s;
    for (int k = 0; k < MB; k++) { /* rank 0: the sends ... */
      int64_t recv = t + DELAY + 2 * MS * k;
      if (r == 0) out[n++] = op(SEND, seq++, 1, k ? recv : t, recv + MS / 2);
    }
    for (int k = 0; k < MB; k++) {
      int64_t recv = t + DELAY + 2 * MS * k, back = recv + MS;
      if (r == 0) out[n++] = op(RECV, seq++, 1, back, back + MS / 2); /* ... then the receives */
      if (r == 1) {                                                   /* rank 1: alternating */
        out[n++] = op(RECV, seq++, 0, recv, recv + MS / 2);
        out[n++] = op(SEND, seq++, 0, back, back + MS / 2);
      }
    }
    out[n++] = op(4, (uint64_t)s, -1, t + 60 * MS, t + 61 * MS);
  }
  return n;
}

/* Rank r's trace: its operations but the `cut` last ones and the p2p of seq `lost` (-1: none),
 * every third one written 4 positions later than its place (out of seq order); blocks of 5
 * records, so the ranks' reads interleave. */
static void write_rank(int r, size_t cut, int64_t lost) {
  static topo_trace_record ops[MAXOP];
  size_t n = ops_of(r, ops) - cut;
  topo_trace_header h;
  tf_header_init(&h, 0x77, r, 2);
  h.cupti_minus_realtime_ns = TOPO_TRACE_OFFSET_UNKNOWN;
  tf_trace t;
  tf_begin(&t, &h, NULL);
  t.block_records = 5;
  size_t held[MAXOP], nheld = 0;
  for (size_t i = 0; i < n; i++) {
    int skip = ops[i].coll.type == TOPO_REC_P2P && (int64_t)ops[i].coll.seq == lost;
    if (i % 3 == 0) held[nheld++] = i;
    else if (!skip) tf_add(&t, &ops[i]);
    while (nheld && (i - held[0] >= 4 || i == n - 1)) {
      const topo_trace_record *rec = &ops[held[0]];
      if (!(rec->coll.type == TOPO_REC_P2P && (int64_t)rec->coll.seq == lost)) tf_add(&t, rec);
      memmove(held, held + 1, --nheld * sizeof *held);
    }
  }
  tf_footer(&t, NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/rank%d.trace", dir, r);
  assert_int_equal(tf_save(&t, path), 0);
  tf_free(&t);
}

static void analyze(rp_report *r) {
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  assert_int_equal(rp_analyze(paths, 1, &opt, r), TOPO_OK);
  assert_int_equal(r->ncomms, 1);
}

static const rp_rank *rank_of(const rp_report *r, int world) {
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].world_rank == world) return &r->ranks[i];
  fail_msg("no rank %d", world);
  return NULL;
}

/* The text report (whole lines). */
static char *text_of(rp_report *r) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  r->text_width = -1;
  rp_render_text(r, f);
  fclose(f);
  return buf;
}

static void test_the_late_receiver_is_the_straggler_and_the_sender_waits_the_delay(void **state) {
  (void)state;
  make_dir();
  write_rank(0, 0, -1);
  write_rank(1, 0, -1);
  rp_report r;
  analyze(&r);
  const rp_comm_summary *cs = &r.comms[0];
  assert_int_equal(cs->p2p_pairs, NSTEP * 2 * MB);
  assert_int_equal(cs->p2p_unmatched, 0);
  assert_int_equal(cs->joined, NSTEP); /* the AllReduces */
  assert_int_equal(cs->incomplete, 0);
  /* a pair of its own in the skew table: the forward pair 0 of each step is DELAY apart */
  assert_int_equal(r.skew[SEND].n, NSTEP * 2 * MB);
  assert_int_equal(r.skew_gpu[SEND], NSTEP * 2 * MB);
  assert_int_equal(r.skew[SEND].max, DELAY);
  assert_int_equal(r.skew[RECV].n, 0);
  const rp_rank *k0 = rank_of(&r, 0), *k1 = rank_of(&r, 1);
  assert_int_equal(k1->last_count, NSTEP);
  assert_int_equal(k1->late_total, NSTEP * DELAY);
  assert_int_equal(k1->wait_total, 0);
  assert_int_equal(k0->last_count, 0);
  assert_int_equal(k0->late_total, 0);
  assert_int_equal(k0->wait_total, NSTEP * DELAY);
  assert_int_equal(k0->wait_clamped, 0);
  assert_true(k0->wait_total <= k0->t.comm); /* inside its own kernels */
  for (int w = 0; w < 2; w++) {
    assert_int_equal(rank_of(&r, w)->joined, NSTEP * (2 * MB + 1));
    assert_int_equal(rank_of(&r, w)->joined_gpu, NSTEP * (2 * MB + 1));
    assert_int_equal(rank_of(&r, w)->missed, 0);
  }
  char *text = text_of(&r);
  assert_non_null(strstr(text, "Send/Recv"));
  const char *st = strstr(text, "Stragglers");
  assert_non_null(st);
  const char *first = strstr(st, "rank 1"), *second = strstr(st, "rank 0");
  assert_true(first && second && first < second); /* rank 1 heads the table */
  free(text);
  rp_report_free(&r);
  remove_dir();
}

static void test_a_send_whose_receive_was_cut_is_unmatched_not_a_missing_rank(void **state) {
  (void)state;
  make_dir();
  write_rank(0, 0, -1);
  write_rank(1, 3, -1); /* its trace ends before the last Recv, Send and AllReduce */
  rp_report r;
  analyze(&r);
  const rp_comm_summary *cs = &r.comms[0];
  assert_int_equal(cs->p2p_pairs, NSTEP * 2 * MB - 2);
  assert_int_equal(cs->p2p_unmatched, 2); /* rank 0's last Send and Recv */
  assert_int_equal(cs->joined, NSTEP);
  assert_int_equal(cs->incomplete, 1); /* the last AllReduce only */
  assert_int_equal(rank_of(&r, 0)->missed, 0);
  assert_int_equal(rank_of(&r, 1)->missed, 1);
  assert_int_equal(rank_of(&r, 1)->last_count, NSTEP);
  char *text = text_of(&r);
  assert_non_null(strstr(text, "1 of 24 collectives lack some rank's record"));
  assert_non_null(strstr(text, "2 of 382 p2p operations found no partner"));
  free(text);
  rp_report_free(&r);
  remove_dir();
}

static void test_a_record_lost_in_mid_trace_pairs_nothing_wrongly_after_it(void **state) {
  (void)state;
  make_dir();
  write_rank(0, 0, -1);
  write_rank(1, 0, 8 * 10 + 2); /* rank 1's Recv of forward pair 1 in step 10 never written */
  rp_report r;
  analyze(&r);
  const rp_comm_summary *cs = &r.comms[0];
  /* which of rank 1's streams lost a record is unknown after the gap: its later p2p pair with
   * nothing, so no Send is paired with the wrong Recv (that would make pairs of skew 2 ms) */
  assert_true(cs->p2p_pairs >= 10 * 2 * MB + 2);
  assert_true(cs->p2p_pairs < NSTEP * 2 * MB);
  assert_int_equal(2 * cs->p2p_pairs + cs->p2p_unmatched, 2 * NSTEP * 2 * MB - 1);
  assert_int_equal(r.skew[SEND].max, DELAY);
  assert_int_equal(rank_of(&r, 1)->late_total + rank_of(&r, 0)->late_total,
                   (int64_t)rank_of(&r, 1)->last_count * DELAY);
  assert_int_equal(cs->incomplete, 0);
  rp_report_free(&r);
  remove_dir();
}

static void test_a_trace_given_twice_pairs_each_op_once(void **state) {
  (void)state;
  make_dir();
  write_rank(0, 0, -1);
  write_rank(1, 0, -1);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "cp %s/rank1.trace %s/rank1-copy.trace", dir, dir);
  assert_int_equal(system(cmd), 0);
  rp_report r;
  analyze(&r);
  assert_int_equal(r.comms[0].p2p_pairs, NSTEP * 2 * MB);
  assert_int_equal(r.comms[0].p2p_unmatched, 0);
  assert_int_equal(rank_of(&r, 1)->late_total, NSTEP * DELAY);
  rp_report_free(&r);
  remove_dir();
}

/* The recorded 2-stage GPipe job (tests/data/full-1xh200/pp: every p2p GPU-timed, records out of
 * seq order as the profiler wrote them): every Send finds its Recv, and each rank's waits lie
 * inside its own communication kernels. */
static void test_a_recorded_pipeline_pairs_every_p2p_and_waits_inside_its_kernels(void **state) {
  (void)state;
  const char *paths[] = {TOPO_PP_TRACES};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.ncomms, 1);
  assert_int_equal(r.comms[0].p2p_pairs, 640);
  assert_int_equal(r.comms[0].p2p_unmatched, 0);
  assert_int_equal(r.comms[0].incomplete, 0);
  for (int w = 0; w < 2; w++) {
    const rp_rank *k = rank_of(&r, w);
    assert_int_equal(k->joined, 641);
    assert_int_equal(k->missed, 0);
    assert_true(k->wait_total > 0);
    assert_true(k->wait_total <= k->t.comm);
  }
  rp_report_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_the_late_receiver_is_the_straggler_and_the_sender_waits_the_delay),
      cmocka_unit_test(test_a_send_whose_receive_was_cut_is_unmatched_not_a_missing_rank),
      cmocka_unit_test(test_a_record_lost_in_mid_trace_pairs_nothing_wrongly_after_it),
      cmocka_unit_test(test_a_trace_given_twice_pairs_each_op_once),
      cmocka_unit_test(test_a_recorded_pipeline_pairs_every_p2p_and_waits_inside_its_kernels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
