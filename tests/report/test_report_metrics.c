// SPDX-License-Identifier: Apache-2.0
// topo-report's analysis on hand-computed fixtures, exact to the nanosecond: nested and partial
// overlaps on several streams, two ranks on hosts with different clock offsets, a collective with
// no GPU timing, a rank whose trace ends early (killed: no footer, a collective missing), steps,
// the collective table (median/p99, nccl-tests sizes), the cross-rank join and stragglers, and a
// damaged file next to good ones. The figures in the comments are the hand computation.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "report.h"
#include "report_analysis.h"
#include "report_render.h"
#include "trace_fixture.h"

#define B 1000000000000LL /* aligned time origin of the fixture (realtime ns) */

static char dir[64];

static int64_t raw_mono(const topo_trace_header *h, int64_t rel) {
  return B + rel - (h->realtime_ns - h->mono_ns);
}
static int64_t raw_gpu(const topo_trace_header *h, int64_t rel) {
  return B + rel + h->gpu_minus_realtime_ns;
}
static int64_t raw_cupti(const topo_trace_header *h, int64_t rel) {
  return B + rel + h->cupti_minus_realtime_ns;
}

static void coll(tf_trace *t, const topo_trace_header *h, int func, uint64_t seq, uint64_t bytes,
                 int64_t cpu, int64_t g0, int64_t g1, uint32_t stream) {
  topo_trace_record r = tf_coll(func, seq, bytes, raw_mono(h, cpu), raw_mono(h, cpu + 10),
                                g1 ? raw_gpu(h, g0) : 0, g1 ? raw_gpu(h, g1) : 0, 1, 0, 4, stream);
  tf_add(t, &r);
}

static void kernel(tf_trace *t, const topo_trace_header *h, int kind, int64_t s, int64_t e,
                   uint32_t stream) {
  topo_trace_record r = tf_kernel(kind, 0, raw_cupti(h, s), raw_cupti(h, e), stream);
  tf_add(t, &r);
}

/* Rank 0 (host0): compute K1 [0,1000) s7, K2 [200,400) s8 (nested), K3 [1500,2500) s7, memcpy
 * [2600,2700); AllReduce seq0 [800,1700), seq1 [3000,3500), AllGather seq0 [3400,3600); steps 1
 * [0,2000) and 2 [2000,4000). Killed: no footer, no seq 3.
 * Rank 1 (host1, other clock offsets): seq0 [850,1700), seq1 not GPU-timed (cpu 2900),
 * AllGather seq0 [3450,3600), AllReduce seq3 [4000,4100). NCCL counts seq per (comm, function). */
static void write_fixture(void) {
  snprintf(dir, sizeof dir, "/tmp/topo-report-XXXXXX");
  assert_non_null(mkdtemp(dir));
  char path[128];

  topo_trace_header h0;
  tf_header_init(&h0, 0xa1, 0, 2);
  h0.mono_ns = 1000;
  h0.realtime_ns = B;
  h0.gpu_minus_realtime_ns = 500;
  h0.cupti_minus_realtime_ns = -200;
  tf_trace t;
  tf_begin(&t, &h0, NULL);
  t.block_records = 3;
  tf_string(&t, 1, "step");
  kernel(&t, &h0, TOPO_KERNEL_COMPUTE, 0, 1000, 7);
  kernel(&t, &h0, TOPO_KERNEL_COMPUTE, 1500, 2500, 7); /* out of order on purpose */
  coll(&t, &h0, 4, 0, 1 << 20, 700, 800, 1700, 1);
  kernel(&t, &h0, TOPO_KERNEL_COMPUTE, 200, 400, 8);
  kernel(&t, &h0, TOPO_KERNEL_MEMCPY, 2600, 2700, 9);
  coll(&t, &h0, 4, 1, 1 << 20, 2950, 3000, 3500, 1);
  coll(&t, &h0, 2, 0, 4096, 3300, 3400, 3600, 2); /* seq counts per function */
  topo_trace_record p2p =
      tf_coll(6, 0, 64, raw_mono(&h0, 3700), raw_mono(&h0, 3710), 0, 0, 1, 2, 1, 3);
  tf_add(&t, &p2p);
  topo_trace_record m1 = tf_mark(1, raw_mono(&h0, 0), raw_mono(&h0, 2000), 1);
  topo_trace_record m2 = tf_mark(1, raw_mono(&h0, 2000), raw_mono(&h0, 4000), 2);
  tf_add(&t, &m1);
  tf_add(&t, &m2);
  tf_flush(&t); /* killed: no footer */
  snprintf(path, sizeof path, "%s/rank0.trace", dir);
  assert_int_equal(tf_save(&t, path), 0);
  tf_free(&t);

  topo_trace_header h1;
  tf_header_init(&h1, 0xa1, 1, 2);
  h1.mono_ns = 5000000;
  h1.realtime_ns = B + 7;
  h1.gpu_minus_realtime_ns = -1000;
  h1.cupti_minus_realtime_ns = TOPO_TRACE_OFFSET_UNKNOWN;
  tf_begin(&t, &h1, NULL);
  coll(&t, &h1, 4, 0, 1 << 20, 700, 850, 1700, 1);
  coll(&t, &h1, 4, 1, 1 << 20, 2900, 0, 0, 1);
  coll(&t, &h1, 2, 0, 4096, 3300, 3450, 3600, 1);
  coll(&t, &h1, 4, 3, 1 << 20, 3900, 4000, 4100, 1);
  tf_footer(&t, NULL);
  snprintf(path, sizeof path, "%s/rank1.trace", dir);
  assert_int_equal(tf_save(&t, path), 0);
  tf_free(&t);
}

static void remove_fixture(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static const rp_rank *rank_of(const rp_report *r, int world) {
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].world_rank == world) return &r->ranks[i];
  fail_msg("no rank %d", world);
  return NULL;
}

static const rp_row *row_of(const rp_report *r, int func) {
  for (size_t i = 0; i < r->nrows; i++)
    if (r->rows[i]->func == func) return r->rows[i];
  fail_msg("no row for func %d", func);
  return NULL;
}

static void analyze_dir(rp_report *r) {
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  assert_int_equal(rp_analyze(paths, 1, &opt, r), TOPO_OK);
}

static void test_unions_overlap_exposed_idle_are_exact(void **state) {
  (void)state;
  write_fixture();
  rp_report r;
  analyze_dir(&r);
  assert_int_equal(r.nranks, 2);
  const rp_rank *k0 = rank_of(&r, 0);
  rp_derived d;
  rp_derive(&k0->t, &d);
  assert_int_equal(k0->t.first, B + 0);
  assert_int_equal(k0->t.last, B + 3600);
  assert_int_equal(d.span, 3600);
  assert_int_equal(d.compute, 2000); /* [0,1000) u [200,400) u [1500,2500) */
  assert_int_equal(d.comm, 1500);    /* [800,1700) u [3000,3500) u [3400,3600) */
  assert_int_equal(d.overlap, 400);  /* [800,1000) + [1500,1700) */
  assert_int_equal(d.exposed, 1100);
  assert_int_equal(d.memory, 100);
  assert_int_equal(d.busy, 3200); /* [0,2500) + [2600,2700) + [3000,3600) */
  assert_int_equal(d.idle, 400);
  assert_true(d.overlap_ratio > 0.26666 && d.overlap_ratio < 0.26667);
  assert_int_equal(k0->t.late, 0);

  assert_int_equal(d.known, 1); /* CUPTI kernels without span records: the whole span */
  assert_int_equal(d.covered, 3600);

  /* Rank 1: AllReduce seq1 has no GPU time; the mean of the measured calls of its key in its own
   * trace {850, 100} is 475, placed at its CPU enqueue (2900, its stream idle since 1700):
   * [2900,3375). Its spread: its own (1 degree of freedom, squares 281250) with the spread of the
   * key on both ranks {100, 500, 850, 900} (variance 137291.7) as one more: sd 457.46, t (2
   * degrees of freedom) 4.303: scatter 1968, shared part 1968 / sqrt(2) = 1391: error
   * sqrt(1968^2 + 1391^2) = 2410 (nothing of it hidden under other intervals). No compute was
   * recorded on rank 1: unknown. */
  const rp_rank *k1 = rank_of(&r, 1);
  rp_derive_rank(k1, &d);
  assert_int_equal(k1->t.first, B + 850); /* rank 1's offsets differ: aligned all the same */
  assert_int_equal(d.span, 3250);
  assert_int_equal(d.comm, 1575); /* [850,1700) u [2900,3375) u [3450,3600) u [4000,4100) */
  assert_int_equal(d.comm_est, 475);
  assert_int_equal(d.comm_error, 2410);
  assert_int_equal(k1->est[RP_EST_KEY], 1);
  assert_int_equal(d.known, 0);
  assert_int_equal(d.compute, 0); /* not measured: the renderers print n/a / null */
  assert_int_equal(d.covered, 0);
  assert_non_null(strstr(rp_rank_unknown_reason(k1), "no compute timeline: no CUPTI window"));

  rp_derived o;
  rp_derive_overall(&r, &o);
  assert_int_equal(o.comm, 3075);
  assert_int_equal(o.comm_est, 475);
  assert_int_equal(o.ranks_known, 1); /* compute sums: rank 0 only */
  assert_int_equal(o.overlap, 400);
  assert_int_equal(o.idle, 400);
  assert_int_equal(o.span, 6850);
  assert_int_equal(r.overall.last - r.overall.first, 4100);
  rp_report_free(&r);
  remove_fixture();
}

static void test_steps_split_the_unions(void **state) {
  (void)state;
  write_fixture();
  rp_report r;
  analyze_dir(&r);
  const rp_rank *k0 = rank_of(&r, 0);
  assert_int_equal(k0->nsteps, 2);
  assert_int_equal(k0->steps[0].value, 1);
  assert_int_equal(k0->steps[0].comm, 900);
  assert_int_equal(k0->steps[0].compute, 1500);
  assert_int_equal(k0->steps[0].overlap, 400);
  assert_int_equal(k0->steps[0].busy, 2000);
  assert_int_equal(k0->steps[1].comm, 600);
  assert_int_equal(k0->steps[1].compute, 500);
  assert_int_equal(k0->steps[1].overlap, 0);
  assert_int_equal(k0->steps[1].busy, 1200);
  assert_int_equal(r.nstepsum, 2);
  assert_int_equal(r.stepsum[1].span, 2000);
  rp_report_free(&r);
  remove_fixture();
}

static void test_collective_table_counts_times_and_sizes(void **state) {
  (void)state;
  write_fixture();
  rp_report r;
  analyze_dir(&r);
  assert_int_equal(r.colls, 7);
  assert_int_equal(r.p2p, 1);
  assert_int_equal(r.timed_colls, 6);
  const rp_row *ar = row_of(&r, 4);
  assert_int_equal(ar->nranks, 2);
  assert_int_equal(ar->bucket, 20);
  assert_int_equal(ar->calls, 5);
  assert_int_equal(ar->timed, 4);
  assert_int_equal((int64_t)ar->time.sum, 900 + 500 + 850 + 100);
  assert_int_equal(rp_quant_get(&ar->time, 0.5), 500); /* nearest rank of {100,500,850,900} */
  assert_int_equal(rp_quant_get(&ar->time, 0.99), 900);
  assert_int_equal(ar->algo_proto[1][0], 5); /* Ring / LL */
  assert_int_equal(ar->ch_min, 4);
  /* AllGather: 4096 B per rank x 2 ranks = 8192 B as nccl-tests counts it */
  const rp_row *ag = row_of(&r, 2);
  assert_int_equal(ag->bucket, 13);
  assert_int_equal(ag->size_sum, 2 * 8192);
  assert_int_equal(rp_quant_get(&ag->time, 0.5), 150);
  double algbw = 8192.0 / 175.0;
  assert_true(rp_row_algbw(ag) > algbw - 1e-9 && rp_row_algbw(ag) < algbw + 1e-9);
  assert_true(rp_row_busbw(ag) > algbw / 2 - 1e-9 && rp_row_busbw(ag) < algbw / 2 + 1e-9);
  assert_true(rp_busbw_factor(4, 8) == 1.75);
  rp_report_free(&r);
  remove_fixture();
}

static void test_join_gives_skew_stragglers_and_missing_rank(void **state) {
  (void)state;
  write_fixture();
  rp_report r;
  analyze_dir(&r);
  assert_int_equal(r.ncomms, 1);
  assert_int_equal(r.comms[0].joined, 4);     /* AllReduce 0, 1, 3 and AllGather 0 (own seqs) */
  assert_int_equal(r.comms[0].incomplete, 1); /* AllReduce 3: rank 0 was gone */
  assert_int_equal(r.skew[4].n, 2);           /* AllReduce seq 0 (GPU) and 1 (CPU) */
  assert_int_equal(r.skew[4].max, 50);
  assert_int_equal(r.skew[2].n, 1);
  assert_int_equal(r.skew[2].max, 50);
  const rp_rank *k0 = rank_of(&r, 0), *k1 = rank_of(&r, 1);
  assert_int_equal(k0->last_count, 1); /* seq 1 by CPU enqueue */
  assert_int_equal(k0->late_total, 50);
  assert_int_equal(k0->wait_total, 100);
  assert_int_equal(k0->missed, 1);
  assert_int_equal(k1->last_count, 2);
  assert_int_equal(k1->late_total, 100);
  assert_int_equal(k1->wait_total, 50);
  assert_int_equal(k1->missed, 0);
  rp_report_free(&r);
  remove_fixture();
}

static void test_nccl_kernel_records_replace_collective_timing(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-report-XXXXXX");
  assert_non_null(mkdtemp(dir));
  topo_trace_header h;
  tf_header_init(&h, 0xb2, 0, 1);
  h.realtime_ns = B;
  tf_trace t;
  tf_begin(&t, &h, NULL);
  coll(&t, &h, 4, 0, 1024, 0, 100, 900, 1);      /* record says [100,900) */
  kernel(&t, &h, TOPO_KERNEL_NCCL, 150, 850, 1); /* CUPTI says [150,850) */
  kernel(&t, &h, TOPO_KERNEL_COMPUTE, 0, 200, 4);
  tf_footer(&t, NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/r.trace", dir);
  assert_int_equal(tf_save(&t, path), 0);
  tf_free(&t);
  rp_report r;
  analyze_dir(&r);
  assert_int_equal(r.ranks[0].comm_from_kernels, 1);
  assert_int_equal(r.ranks[0].t.comm, 700);
  assert_int_equal(r.ranks[0].t.overlap, 50);
  assert_int_equal(r.ranks[0].t.last - r.ranks[0].t.first, 850);
  rp_report_free(&r);
  remove_fixture();
}

static void test_damaged_file_beside_good_ones_is_reported_not_fatal(void **state) {
  (void)state;
  write_fixture();
  char path[128];
  snprintf(path, sizeof path, "%s/garbage.trace", dir);
  FILE *f = fopen(path, "wb");
  fputs("TOPOTRC\0 but not really a trace", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/future.trace", dir);
  topo_trace_header h;
  tf_header_init(&h, 0xa1, 0, 2);
  h.version = 2;
  tf_trace t;
  tf_begin(&t, &h, NULL);
  assert_int_equal(tf_save(&t, path), 0);
  tf_free(&t);
  rp_report r;
  analyze_dir(&r);
  assert_int_equal(r.nranks, 2);
  assert_int_equal(r.colls, 7);
  rp_report_free(&r);
  remove_fixture();
}

/* Every drop kind the footer counts is in the text's breakdown and adds up to its total: 3
 * operations NCCL never stopped before finalize (TOPO_DROP_OTHER) were in the total but named
 * nowhere ("dropped 3 events (collectives 0, ..., CUPTI 0)"). */
static void test_drop_breakdown_names_every_kind(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-drops-XXXXXX");
  assert_non_null(mkdtemp(dir));
  topo_trace_header h;
  tf_header_init(&h, 0xd5, 0, 1);
  tf_trace t;
  tf_begin(&t, &h, NULL);
  coll(&t, &h, 4, 0, 1 << 20, 1000, 1100, 2000, 1);
  uint64_t dropped[TOPO_DROP_KINDS] = {0};
  dropped[TOPO_DROP_CHILD] = 2;
  dropped[TOPO_DROP_OTHER] = 3;
  tf_footer(&t, dropped);
  char path[128];
  snprintf(path, sizeof path, "%s/r0.trace", dir);
  assert_int_equal(tf_save(&t, path), 0);
  tf_free(&t);
  rp_report r;
  analyze_dir(&r);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  rp_render_text(&r, f);
  fclose(f);
  size_t w = 0; /* the note may wrap: its words joined by single spaces */
  for (size_t i = 0; text[i]; i++)
    if (!(text[i] == ' ' || text[i] == '\n') || (w && text[w - 1] != ' '))
      text[w++] = text[i] == '\n' ? ' ' : text[i];
  text[w] = 0;
  if (!strstr(text, "dropped 5 events") || !strstr(text, "kernel/proxy 2") ||
      !strstr(text, "never stopped before finalize 3"))
    fail_msg("%s", strstr(text, "Data quality") ? strstr(text, "Data quality") : text);
  free(text);
  rp_report_free(&r);
  remove_fixture();
}

static void test_reorder_window_of_one_clips_and_counts_late_intervals(void **state) {
  (void)state;
  write_fixture();
  rp_report r;
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 1, .quiet = 1};
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  const rp_rank *k0 = rank_of(&r, 0);
  assert_int_equal(k0->t.late, 1);       /* K2 [200,400) came after the sweep reached 800 */
  assert_int_equal(k0->t.compute, 2000); /* ... but was inside K1, so nothing is lost */
  rp_report_free(&r);
  remove_fixture();
}

/* --window [B+900, B+3450): every interval clipped, steps clipped, a collective counted when its
 * start (GPU, else CPU) is inside, a joined one when its earliest start is. */
static void test_window_clips_every_figure(void **state) {
  (void)state;
  write_fixture();
  const char *paths[] = {dir};
  rp_options opt = {
      .reorder_window = 65536, .quiet = 1, .window = 1, .from = B + 900, .to = B + 3450};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.window, 1);
  const rp_rank *k0 = rank_of(&r, 0);
  rp_derived d;
  rp_derive(&k0->t, &d);
  assert_int_equal(k0->t.first, B + 900);
  assert_int_equal(k0->t.last, B + 3450);
  assert_int_equal(d.compute, 1100); /* [900,1000) u [1500,2500); K2 [200,400) is outside */
  assert_int_equal(d.comm, 1250);    /* [900,1700) u [3000,3450) u [3400,3450) */
  assert_int_equal(d.overlap, 300);  /* [900,1000) + [1500,1700) */
  assert_int_equal(d.memory, 100);
  assert_int_equal(d.busy, 2150); /* [900,2500) + [2600,2700) + [3000,3450) */
  assert_int_equal(d.idle, 400);
  assert_int_equal(k0->nsteps, 2);
  assert_int_equal(k0->steps[0].start, B + 900);
  assert_int_equal(k0->steps[0].comm, 800);
  assert_int_equal(k0->steps[0].compute, 600);
  assert_int_equal(k0->steps[0].overlap, 300);
  assert_int_equal(k0->steps[1].stop, B + 3450);
  assert_int_equal(k0->steps[1].comm, 450);
  assert_int_equal(k0->steps[1].compute, 500);
  /* rank 0: AR seq1 (3000), AG (3400) in; AR seq0 (800) and the p2p (cpu 3700) out.
   * rank 1: AR seq1 (cpu 2900, untimed) in; AR seq0 (850), AG (3450), AR seq3 (4000) out. */
  assert_int_equal(r.colls, 3);
  assert_int_equal(r.timed_colls, 2);
  assert_int_equal(r.p2p, 0);
  const rp_row *ar = row_of(&r, 4);
  assert_int_equal(ar->calls, 2);
  assert_int_equal(ar->timed, 1);
  assert_int_equal((int64_t)ar->time.sum, 500);
  assert_int_equal(row_of(&r, 2)->calls, 1);
  /* joins: AR seq1 (earliest 2900) and AG seq0 (3400); seq0 starts at 800 and seq3 at 4000 */
  assert_int_equal(r.skew[4].n, 1);
  assert_int_equal(r.skew[4].max, 50); /* CPU starts 2950 vs 2900: rank 1 has no GPU time */
  assert_int_equal(r.skew[2].n, 1);
  assert_int_equal(r.skew[2].max, 50); /* GPU 3400 vs 3450 */
  assert_int_equal(k0->missed, 0);     /* seq3 is outside: not missed inside the window */
  assert_int_equal(k0->joined, 2);
  /* rank 1 records collectives only; it was active across the window (AR seq0 began before it,
   * seq3 ends after it), so it spans the window, not first to last of its collectives inside */
  const rp_rank *k1 = rank_of(&r, 1);
  assert_true(k1->t.first == B + 900 && k1->t.last == B + 3450);
  rp_report_free(&r);
  remove_fixture();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unions_overlap_exposed_idle_are_exact),
      cmocka_unit_test(test_steps_split_the_unions),
      cmocka_unit_test(test_window_clips_every_figure),
      cmocka_unit_test(test_collective_table_counts_times_and_sizes),
      cmocka_unit_test(test_join_gives_skew_stragglers_and_missing_rank),
      cmocka_unit_test(test_nccl_kernel_records_replace_collective_timing),
      cmocka_unit_test(test_damaged_file_beside_good_ones_is_reported_not_fatal),
      cmocka_unit_test(test_drop_breakdown_names_every_kind),
      cmocka_unit_test(test_reorder_window_of_one_clips_and_counts_late_intervals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
