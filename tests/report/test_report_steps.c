// SPDX-License-Identifier: Apache-2.0
// Steps from topo traces alone (steps.c, the step learner of common/step_learn.h over all of a
// rank's operations): synthetic DDP (a prefix of Broadcasts, then steps of 13 gradient buckets and
// one small AllReduce), FSDP (AllGather x L forward, AllGather and ReduceScatter x L backward),
// TP + DP (two communicators interleaved; also one process whose GPU runs a step behind its
// enqueues, with a communicator used once at the end) and PP (sends and receives) jobs, an
// incomplete last step, collectives with no period, Kineto steps that win, few operations held for
// order, a rank's stream fed straight in (each step kept; many steps in bounded memory, grouped as
// every step would be), the warm-up steps marked, and the real 2 x H200 DDP traces. Step k spans
// from the CPU enqueue end of repetition k-1's last operation to that of repetition k's
// (docs/metrics.md, Steps); the expected figures below follow from the fixture.
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

#define B   1000000000000LL /* aligned time origin (realtime ns; the fixture's mono = realtime) */
#define US  1000LL
#define MS  1000000LL
#define ENQ 10 /* CPU enqueue duration of every collective, ns */

enum { F_BCAST = 1, F_AG = 2, F_RS = 3, F_AR = 4 };

static char dir[64];

typedef struct job {
  tf_trace t;
  topo_trace_header h;
  uint64_t seq[16];
  int64_t skew; /* this rank's CPU times are shifted by it */
} job;

static void job_begin(job *j, int rank, int nranks) {
  memset(j, 0, sizeof *j);
  tf_header_init(&j->h, 0x5eed, rank, nranks);
  j->h.mono_ns = B;
  j->h.realtime_ns = B;
  j->skew = 50 * US * rank;
  tf_begin(&j->t, &j->h, NULL);
}

static void job_coll(job *j, int func, uint64_t bytes, int64_t cpu) {
  int64_t c = B + cpu + j->skew;
  topo_trace_record r = tf_coll(func, j->seq[func]++, bytes, c, c + ENQ, 0, 0, 1, 2, 8, 1);
  tf_add(&j->t, &r);
}

static void job_save(job *j) {
  tf_footer(&j->t, NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/r%d.trace", dir, j->h.rank);
  assert_int_equal(tf_save(&j->t, path), 0);
  tf_free(&j->t);
}

static void mkdir_tmp(void) {
  snprintf(dir, sizeof dir, "/tmp/topo-steps-XXXXXX");
  assert_non_null(mkdtemp(dir));
}

static void rm_tmp(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static void analyze(const char *path, int steps, rp_report *r) {
  const char *paths[] = {path};
  rp_options opt = {.reorder_window = 65536, .quiet = 1, .steps = steps};
  assert_int_equal(rp_analyze(paths, 1, &opt, r), TOPO_OK);
}

/* The text report with every line whole (--wide), so a phrase is never split by wrapping. */
static char *render(const rp_report *r) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  rp_report wide = *r;
  wide.text_width = -1;
  rp_render_text(&wide, f);
  fclose(f);
  return text;
}

/* DDP: Broadcasts at -3 ms + i x 100 us; step k at S x k: 5 ms forward, then 13 buckets of 25 MB
 * and one 8-byte AllReduce, 100 us apart. The last collective of step k ends at
 * S k + 6.3 ms + ENQ, so every step but the first spans S; step 0 starts where the last Broadcast
 * ended (-2.8 ms + ENQ): 9.1 ms. */
#define S (20 * MS)
static void write_ddp(int nranks, int nsteps, int tail) {
  for (int rank = 0; rank < nranks; rank++) {
    job j;
    job_begin(&j, rank, nranks);
    for (int i = 0; i < 3; i++) job_coll(&j, F_BCAST, 100u << 20, -3 * MS + i * 100 * US);
    for (int k = 0; k <= nsteps; k++)
      for (int b = 0; b < 14 && (k < nsteps || b < tail); b++)
        job_coll(&j, F_AR, b < 13 ? 25u << 20 : 8, S * k + 5 * MS + b * 100 * US);
    job_save(&j);
  }
}

static void test_ddp_steps(void **state) {
  (void)state;
  mkdir_tmp();
  write_ddp(2, 10, 0);
  rp_report r;
  analyze(dir, 0, &r);
  assert_int_equal(r.steps_detect, RP_STEPS_FOUND);
  assert_int_equal(r.step_period, 14);
  assert_int_equal(r.nstepsum, 10);
  for (int p = 0; p < 2; p++) {
    const rp_rank *k = &r.ranks[p];
    int64_t skew = 50 * US * k->world_rank;
    assert_int_equal(k->nsteps, 10);
    assert_int_equal(k->steps[0].start, B - 2800 * US + ENQ + skew);
    assert_int_equal(k->steps[0].stop - k->steps[0].start, 9100 * US);
    for (size_t s = 0; s < 10; s++) {
      assert_int_equal(k->steps[s].value, s); /* the same repetition on both ranks */
      assert_int_equal(k->steps[s].period, 14);
      assert_int_equal(k->steps[s].from_kineto, 0);
      assert_int_equal(k->steps[s].stop, B + S * (int64_t)s + 6300 * US + ENQ + skew);
      if (s) assert_int_equal(k->steps[s].stop - k->steps[s].start, S);
    }
  }
  for (size_t s = 0; s < 10; s++) assert_int_equal(r.stepsum[s].ranks, 2);
  char *text = render(&r);
  assert_non_null(strstr(text, "Steps from topo traces (period 14 operations, 2 ranks"));
  assert_non_null(strstr(text, "cut at CPU enqueue times")); /* no collective is GPU-timed */
  assert_null(strstr(text, "no repeating step pattern"));
  free(text);
  rp_report_free(&r);
  analyze(dir, -1, &r); /* --steps off */
  assert_int_equal(r.nstepsum, 0);
  assert_int_equal(r.steps_detect, RP_STEPS_NOT_TRIED);
  rp_report_free(&r);
  rm_tmp();
}

/* The same DDP job with every collective GPU-timed and the GPU falling behind the CPU by 1 ms
 * more each step (a queue that grows): the steps are cut at the GPU end of each step's last
 * operation, so every step but the first still spans S plus the lag's growth on the GPU
 * timeline, and each ends where its last AllReduce ends on the GPU. */
static void job_coll_gpu(job *j, int func, uint64_t bytes, int64_t cpu, int64_t lag) {
  int64_t c = B + cpu + j->skew, g = c + lag + j->h.gpu_minus_realtime_ns;
  topo_trace_record r =
      tf_coll(func, j->seq[func]++, bytes, c, c + ENQ, g, g + 50 * US, 1, 2, 8, 1);
  tf_add(&j->t, &r);
}

static void test_steps_cut_at_gpu_times(void **state) {
  (void)state;
  mkdir_tmp();
  for (int rank = 0; rank < 2; rank++) {
    job j;
    job_begin(&j, rank, 2);
    for (int i = 0; i < 3; i++) job_coll_gpu(&j, F_BCAST, 100u << 20, -3 * MS + i * 100 * US, 0);
    for (int k = 0; k < 10; k++)
      for (int b = 0; b < 14; b++)
        job_coll_gpu(&j, F_AR, b < 13 ? 25u << 20 : 8, S * k + 5 * MS + b * 100 * US, k * MS);
    job_save(&j);
  }
  rp_report r;
  analyze(dir, 0, &r);
  assert_int_equal(r.step_period, 14);
  for (int p = 0; p < 2; p++) {
    const rp_rank *k = &r.ranks[p];
    int64_t skew = 50 * US * k->world_rank;
    assert_int_equal(k->steps_gpu, 1);
    assert_int_equal(k->nsteps, 10);
    /* step 0 starts where the last Broadcast ended on the GPU */
    assert_int_equal(k->steps[0].start, B - 2800 * US + 50 * US + skew);
    for (int64_t s = 0; s < 10; s++)
      assert_int_equal(k->steps[s].stop, B + S * s + 6300 * US + s * MS + 50 * US + skew);
  }
  char *text = render(&r);
  assert_non_null(strstr(text, "cut at the GPU end of each step's last operation"));
  free(text);
  rp_report_free(&r);
  rm_tmp();
}

/* The DDP job with its enqueueing thread short of CPU (as topo-demo's threads are on a loaded
 * machine): gaps inside a step of 1 us to 12 ms at random, a long gap before each step's first
 * AllReduce. The long gaps do not repeat, the functions and sizes do: 5 steps of 14. */
static void test_steps_found_when_gaps_do_not_repeat(void **state) {
  (void)state;
  mkdir_tmp();
  uint32_t seed = 12345;
  job j;
  job_begin(&j, 0, 1);
  int64_t t = 0;
  for (int k = 0; k < 6; k++)
    for (int b = 0; b < 14; b++) {
      seed = seed * 1103515245u + 12345u;
      uint32_t x = (seed >> 8) % 1000;
      t += b == 0 ? 35 * MS : x < 300 ? 5 * MS + (int64_t)x * 20 * US : 1 * US + (int64_t)x * US;
      job_coll(&j, b == 13 ? F_AG : F_AR, b == 13 ? 32 : b == 12 ? 18u << 20 : 25u << 20, t);
    }
  job_save(&j);
  rp_report r;
  analyze(dir, 0, &r);
  assert_int_equal(r.steps_detect, RP_STEPS_FOUND);
  assert_int_equal(r.step_period, 14);
  assert_true(r.ranks[0].nsteps >= 5);
  rp_report_free(&r);
  rm_tmp();
}

/* The 7th step has 9 of its 14 collectives: 6 complete steps. */
static void test_incomplete_last_step(void **state) {
  (void)state;
  mkdir_tmp();
  write_ddp(1, 6, 9);
  rp_report r;
  analyze(dir, 0, &r);
  assert_int_equal(r.step_period, 14);
  assert_int_equal(r.ranks[0].nsteps, 6);
  assert_int_equal(r.ranks[0].steps[5].stop, B + S * 5 + 6300 * US + ENQ);
  rp_report_free(&r);
  rm_tmp();
}

/* FSDP, L = 4 layers, 8 steps of T: 4 AllGathers (1 MiB per rank) 1 ms apart from T k, then
 * from T k + 6 ms 4 x (AllGather, ReduceScatter of 4 MiB) 1 ms apart (each pair 200 us apart).
 * Nothing precedes step 0: it starts at its first collective (T x 0). Step k ends at the last
 * ReduceScatter: T k + 9.2 ms + ENQ; ReduceScatter's seq counts 4 per step, AllGather's 8. */
#define T (30 * MS)
static void test_fsdp_steps(void **state) {
  (void)state;
  mkdir_tmp();
  for (int rank = 0; rank < 4; rank++) {
    job j;
    job_begin(&j, rank, 4);
    for (int k = 0; k < 8; k++) {
      for (int l = 0; l < 4; l++) job_coll(&j, F_AG, 1u << 20, T * k + l * MS);
      for (int l = 0; l < 4; l++) {
        job_coll(&j, F_AG, 1u << 20, T * k + 6 * MS + l * MS);
        job_coll(&j, F_RS, 4u << 20, T * k + 6 * MS + l * MS + 200 * US);
      }
    }
    job_save(&j);
  }
  rp_report r;
  analyze(dir, 0, &r);
  assert_int_equal(r.step_period, 12);
  assert_int_equal(r.nstepsum, 8);
  for (int p = 0; p < 4; p++) {
    const rp_rank *k = &r.ranks[p];
    int64_t skew = 50 * US * k->world_rank;
    assert_int_equal(k->nsteps, 8);
    assert_int_equal(k->steps[0].start, B + skew);
    for (size_t s = 0; s < 8; s++) {
      assert_int_equal(k->steps[s].value, s);
      assert_int_equal(k->steps[s].stop, B + T * (int64_t)s + 9200 * US + ENQ + skew);
    }
  }
  rp_report_free(&r);
  rm_tmp();
}

/* 400 AllReduces of random sizes (4 B .. 1 GiB) at random gaps: no period, no table of zeros. */
static void test_no_period(void **state) {
  (void)state;
  mkdir_tmp();
  job j;
  job_begin(&j, 0, 2);
  uint64_t x = 88172645463325252ull;
  int64_t t = 0;
  for (int i = 0; i < 400; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    job_coll(&j, F_AR, 4ull << (x % 28), t);
    t += 10 * US + (int64_t)((x >> 32) % (5 * MS));
  }
  job_save(&j);
  rp_report r;
  analyze(dir, 0, &r);
  assert_int_equal(r.steps_detect, RP_STEPS_NONE);
  assert_int_equal(r.step_period, 0);
  assert_int_equal(r.nstepsum, 0);
  char *text = render(&r);
  assert_non_null(strstr(text, "no repeating step pattern found"));
  assert_null(strstr(text, "mean span"));
  free(text);
  rp_report_free(&r);
  rm_tmp();
}

/* Kineto steps win for the rank whose Kineto trace is given (rank 0, ProfilerStep#3); rank 1
 * keeps the detected ones. */
static void test_kineto_steps_win(void **state) {
  (void)state;
  mkdir_tmp();
  write_ddp(2, 10, 0);
  static const char kineto[] =
      "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, "
      "\"world_size\": 2},\n"
      " \"traceEvents\": [\n"
      "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#3\", \"pid\": 11, "
      "\"tid\": 11,"
      "   \"ts\": 60000.000, \"dur\": 20000.000},\n"
      "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7,"
      "   \"ts\": 60001.000, \"dur\": 2.000, \"args\": {\"stream\": 7}}\n"
      " ], \"baseTimeNanoseconds\": 1000000000000}\n";
  char path[128];
  snprintf(path, sizeof path, "%s/rank0.pt.trace.json", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(kineto, 1, sizeof kineto - 1, f), sizeof kineto - 1);
  fclose(f);
  rp_report r;
  analyze(dir, 0, &r);
  assert_int_equal(r.nranks, 2);
  for (int p = 0; p < 2; p++) {
    const rp_rank *k = &r.ranks[p];
    if (k->world_rank == 0) {
      assert_int_equal(k->nsteps, 1);
      assert_int_equal(k->steps[0].from_kineto, 1);
      assert_int_equal(k->steps[0].value, 3);
      assert_int_equal(k->steps[0].period, 0);
    } else {
      assert_int_equal(k->nsteps, 10);
      assert_int_equal(k->steps[0].period, 14);
    }
  }
  char *text = render(&r);
  assert_non_null(strstr(text, "from Kineto ProfilerSteps (1 rank); from topo traces (period 14"));
  free(text);
  rp_report_free(&r);
  rm_tmp();
}

/* Operations held for order beyond the heap (64 here, 14 a step) go to the learner oldest first:
 * in order when they came in order, 30 steps all the same. */
static void test_few_operations_held_for_order(void **state) {
  (void)state;
  rp_steps *d = rp_steps_new(0, 1);
  assert_non_null(d);
  rp_steps_set_cap(d, 64);
  rp_coll c;
  memset(&c, 0, sizeof c);
  c.nranks = 2;
  uint64_t seq[16] = {0};
  for (int k = 0; k < 30; k++)
    for (int b = 0; b < 14; b++) {
      c.func = F_AR;
      c.seq = seq[F_AR]++;
      c.bytes = b < 13 ? 25u << 20 : 8;
      c.cpu_start = B + S * k + 5 * MS + b * 100 * US;
      c.cpu_stop = c.cpu_start + ENQ;
      rp_steps_coll(d, 0, 2, 0, 0, &c);
    }
  rp_report r;
  memset(&r, 0, sizeof r);
  rp_rank rank;
  memset(&rank, 0, sizeof rank);
  r.ranks = &rank;
  r.nranks = 1;
  assert_int_equal(rp_steps_finish(d, &r), TOPO_OK);
  rp_steps_free(d);
  assert_int_equal(r.step_period, 14);
  assert_int_equal(rank.nsteps, 30);
  for (size_t s = 0; s < 30; s++)
    assert_int_equal(rank.steps[s].stop, B + S * (int64_t)s + 6300 * US + ENQ);
  assert_int_equal(rank.steps[29].stop - rank.steps[29].start, S);
  free(rank.steps);
}

/* A rank's stream straight into the detection: `n` steps of four AllReduces (three gradient
 * buckets 100 us apart, then a small one), each GPU-timed 1 ms after its enqueue; steps DS apart
 * but the first ones, which come 4, 3, 2.5 and 2 times as far apart (warm-up: steps 0-2 are
 * marked). Step rows kept: `keep` (0: all). The largest rp_steps_bytes seen while feeding steps
 * 0..at - 1 goes to *before, over steps at..n - 1 to *after (either may be NULL). */
#define DS (10 * MS)
static void direct_steps(size_t n, size_t keep, size_t at, rp_report *r, size_t *before,
                         size_t *after) {
  rp_steps *d = rp_steps_new(0, 1);
  assert_non_null(d);
  rp_steps_set_keep(d, keep);
  rp_coll c;
  memset(&c, 0, sizeof c);
  c.nranks = 2;
  c.func = F_AR;
  c.timed = 1;
  static const double slow[] = {4, 3, 2.5, 2};
  int64_t t = 0;
  uint64_t seq = 0;
  size_t peak[2] = {0, 0};
  for (size_t k = 0; k < n; k++) {
    t += (int64_t)((k < 4 ? slow[k] : 1.0) * (double)DS);
    for (int b = 0; b < 4; b++) {
      c.seq = seq++;
      c.bytes = b < 3 ? 25u << 20 : 8;
      c.cpu_start = B + t + b * 100 * US;
      c.cpu_stop = c.cpu_start + ENQ;
      c.gpu_start = c.cpu_start + MS;
      c.gpu_stop = c.gpu_start + 50 * US;
      rp_steps_coll(d, 0, 2, 0, 0, &c);
    }
    size_t bytes = rp_steps_bytes(d);
    if (bytes > peak[k >= at]) peak[k >= at] = bytes;
  }
  if (before) *before = peak[0];
  if (after) *after = peak[1];
  memset(r, 0, sizeof *r);
  r->ranks = calloc(1, sizeof *r->ranks);
  assert_non_null(r->ranks);
  r->nranks = 1;
  r->steps_keep = keep;
  assert_int_equal(rp_steps_finish(d, r), TOPO_OK);
  rp_steps_free(d);
}

static void direct_free(rp_report *r) {
  free(r->ranks[0].steps);
  free(r->ranks);
}

static int cmp_row(const void *a, const void *b) { /* warm-up, number, start */
  const rp_step *x = a, *y = b;
  if (x->warmup != y->warmup) return x->warmup - y->warmup;
  if (x->value != y->value) return x->value < y->value ? -1 : 1;
  return (x->start > y->start) - (x->start < y->start);
}

/* Fewer steps than a rank keeps rows for: one row per step, numbered 0.., each from the GPU end
 * of the operation before its first to that of its last (the next one's start), warm-up exactly
 * steps 0-2, the last step ending at its last AllReduce's GPU end. */
static void test_direct_steps_each_kept(void **state) {
  (void)state;
  rp_report r;
  direct_steps(3000, RP_STEPS_KEEP, 3000, &r, NULL, NULL);
  const rp_rank *k = &r.ranks[0];
  assert_int_equal(r.step_period, 4);
  assert_int_equal(k->steps_gpu, 1);
  assert_int_equal(k->step_shift, 0);
  assert_int_equal(k->nsteps, 3000);
  for (size_t s = 0; s < k->nsteps; s++) {
    const rp_step *st = &k->steps[s];
    assert_int_equal(st->value, s);
    assert_int_equal(st->count, 1);
    assert_int_equal(st->warmup, s < 3);
    if (s + 1 < k->nsteps) assert_int_equal(st->stop, k->steps[s + 1].start);
    if (s >= 4) assert_int_equal(st->stop - st->start, DS);
  }
  assert_int_equal(k->steps[2999].stop, k->steps[2999].start + DS);
  direct_free(&r);
}

/* Many steps: what the detection holds stops growing once the rows are grouped (it holds no
 * record per step), and the rows hold every step, warm-up still exactly steps 0-2. */
static void test_direct_steps_memory_bounded(void **state) {
  (void)state;
  rp_report r;
  size_t before = 0, after = 0;
  direct_steps(200000, RP_STEPS_KEEP, 50000, &r, &before, &after);
  assert_true(before > 0);
  assert_true(after <= before);
  assert_true(after < (2u << 20));
  const rp_rank *k = &r.ranks[0];
  assert_true(k->nsteps <= RP_STEPS_KEEP);
  assert_true(k->step_shift > 0);
  uint64_t steps = 0, warm = 0;
  for (size_t s = 0; s < k->nsteps; s++) {
    steps += k->steps[s].count;
    warm += k->steps[s].warmup ? k->steps[s].count : 0;
  }
  assert_int_equal(steps, 200000);
  assert_int_equal(warm, 3);
  direct_free(&r);
}

/* A stretch of one step longer than a rank keeps rows for: the rows are those of every step
 * (keep 0, --all-steps) grouped by the same number of steps. */
static void test_direct_steps_grouped_as_all(void **state) {
  (void)state;
  rp_report all, grouped;
  direct_steps(3 * RP_STEPS_KEEP + 5, 0, 0, &all, NULL, NULL);
  direct_steps(3 * RP_STEPS_KEEP + 5, RP_STEPS_KEEP, 0, &grouped, NULL, NULL);
  rp_rank *a = &all.ranks[0], *g = &grouped.ranks[0];
  assert_int_equal(a->nsteps, 3 * RP_STEPS_KEEP + 5);
  for (size_t s = 0; s < a->nsteps; s++) assert_int_equal(a->steps[s].warmup, s < 3);
  assert_true(g->step_shift > 0);
  rp_rank_group_steps(a, g->step_shift);
  qsort(a->steps, a->nsteps, sizeof *a->steps, cmp_row);
  qsort(g->steps, g->nsteps, sizeof *g->steps, cmp_row);
  assert_int_equal(a->nsteps, g->nsteps);
  for (size_t s = 0; s < a->nsteps; s++) {
    assert_int_equal(a->steps[s].value, g->steps[s].value);
    assert_int_equal(a->steps[s].last, g->steps[s].last);
    assert_int_equal(a->steps[s].count, g->steps[s].count);
    assert_int_equal(a->steps[s].warmup, g->steps[s].warmup);
    assert_int_equal(a->steps[s].start, g->steps[s].start);
    assert_int_equal(a->steps[s].stop, g->steps[s].stop);
  }
  direct_free(&all);
  direct_free(&grouped);
}

/* TP + DP: four processes, TP pairs {0, 1} and {2, 3} (communicators 0xa1, 0xa2), DP pairs
 * {0, 2} and {1, 3} (0xd1, 0xd2). A step of U: per layer (4) two TP AllReduces forward, two
 * backward, and a DP bucket after every second layer of the backward pass: 4 x 2 + 4 x 2 + 2 = 18
 * operations over two communicators of each rank, interleaved. Every rank gets the same steps. */
#define U (40 * MS)
static void tp_dp_file(int proc, uint64_t hash, int rank, int tp, int nsteps) {
  job j;
  job_begin(&j, rank, 2);
  j.h.comm_hash = hash;
  j.h.pid = 2000u + (uint32_t)proc;
  snprintf(j.h.host, sizeof j.h.host, "host%d", proc);
  j.skew = 30 * US * proc;
  tf_free(&j.t);
  tf_begin(&j.t, &j.h, NULL);
  for (int k = 0; k < nsteps; k++)
    for (int l = 0; l < 4; l++) {
      int64_t f = U * k + 5 * MS + l * MS, b = U * k + 12 * MS + l * 2 * MS;
      if (tp) {
        job_coll(&j, F_AR, 4u << 20, f);
        job_coll(&j, F_AR, 4u << 20, f + 300 * US);
        job_coll(&j, F_AR, 4u << 20, b);
        job_coll(&j, F_AR, 4u << 20, b + 500 * US);
      } else if (l % 2) {
        job_coll(&j, F_AR, 50u << 20, b + 900 * US);
      }
    }
  tf_footer(&j.t, NULL);
  char path[160];
  snprintf(path, sizeof path, "%s/p%d-%llx.trace", dir, proc, (unsigned long long)hash);
  assert_int_equal(tf_save(&j.t, path), 0);
  tf_free(&j.t);
}

static void test_tp_dp_two_communicators_one_step(void **state) {
  (void)state;
  mkdir_tmp();
  for (int p = 0; p < 4; p++) {
    tp_dp_file(p, p < 2 ? 0xa1 : 0xa2, p % 2, 1, 10);
    tp_dp_file(p, p % 2 ? 0xd2 : 0xd1, p / 2, 0, 10);
  }
  rp_report r;
  analyze(dir, 0, &r);
  assert_int_equal(r.nranks, 4);
  assert_int_equal(r.step_period, 18);
  assert_int_equal(r.nstepsum, 10);
  for (size_t s = 0; s < r.nstepsum; s++) assert_int_equal(r.stepsum[s].ranks, 4);
  for (int p = 0; p < 4; p++) {
    const rp_rank *k = &r.ranks[p];
    assert_int_equal(k->nsteps, 10);
    for (size_t s = 1; s < 10; s++) assert_int_equal(k->steps[s].stop - k->steps[s].start, U);
  }
  rp_report_free(&r);
  rm_tmp();
}

/* TP + DP of one process (rank 0 of both), GPU-timed, as a job sharing its GPU runs: a step of
 * V; 23 TP AllReduces 1 ms apart from V k, then 12 DP AllReduces 100 us apart from V k + 30 ms.
 * The GPU runs them one after another from V k + 100 ms (TP 40 ms each, DP 30 ms each), so the
 * DP records of step k lie behind the TP records of step k + 1 in GPU time, the order the trace
 * files are read in. A third communicator has one AllReduce, at the end of the run (a barrier
 * at exit): its file is read first. Every one of the 100 steps is found. */
#define V (1000 * MS)
static void tp_dp_lagged_file(uint64_t hash, int which, int nsteps) {
  job j;
  job_begin(&j, 0, 2);
  j.h.comm_hash = hash;
  j.h.pid = 3000;
  tf_free(&j.t);
  tf_begin(&j.t, &j.h, NULL);
  j.t.block_records = 16; /* a few records a block, as the profiler's writer flushes them */
  if (which == 2) job_coll_gpu(&j, F_AR, 4, V * nsteps + 5 * V, 10 * US);
  for (int k = 0; k < nsteps && which < 2; k++)
    for (int i = 0; i < (which ? 12 : 23); i++) {
      int64_t cpu = V * k + (which ? 30 * MS + i * 100 * US : i * MS);
      int64_t gpu = V * k + 100 * MS + (which ? 23 * 40 * MS + i * 30 * MS : i * 40 * MS);
      job_coll_gpu(&j, F_AR, which ? 50u << 20 : 4u << 20, cpu, gpu - cpu);
    }
  tf_footer(&j.t, NULL);
  char path[160];
  snprintf(path, sizeof path, "%s/c%d.trace", dir, which);
  assert_int_equal(tf_save(&j.t, path), 0);
  tf_free(&j.t);
}

static void test_tp_dp_lagged_gpu_and_a_last_communicator(void **state) {
  (void)state;
  mkdir_tmp();
  tp_dp_lagged_file(0xa1, 0, 100);
  tp_dp_lagged_file(0xd1, 1, 100);
  tp_dp_lagged_file(0xe1, 2, 100);
  rp_report r;
  analyze(dir, 0, &r);
  assert_int_equal(r.nranks, 1);
  assert_int_equal(r.step_period, 35);
  const rp_rank *k = &r.ranks[0];
  assert_int_equal(k->nsteps, 100);
  for (size_t s = 1; s < 100; s++) assert_int_equal(k->steps[s].stop - k->steps[s].start, V);
  rp_report_free(&r);
  rm_tmp();
}

/* PP: two stages on one p2p communicator; per step of U stage 0 sends 4 activations and then
 * receives 4 gradients, stage 1 the other way round: 8 operations, found from p2p alone. */
static void test_pipeline_steps_from_sends_and_receives(void **state) {
  (void)state;
  mkdir_tmp();
  for (int rank = 0; rank < 2; rank++) {
    job j;
    job_begin(&j, rank, 2);
    for (int k = 0; k < 12; k++)
      for (int m = 0; m < 8; m++) {
        int first = m < 4, send = rank == 0 ? first : !first;
        int64_t c =
            B + U * k + (first ? 10 * MS + m * 3 * MS : 25 * MS + (m - 4) * 2 * MS) + j.skew;
        topo_trace_record rec =
            tf_coll(send ? 6 : 7, j.seq[6]++, 2u << 20, c, c + ENQ, 0, 0, 1, 2, 8, 1);
        rec.coll.peer = 1 - rank;
        tf_add(&j.t, &rec);
      }
    job_save(&j);
  }
  rp_report r;
  analyze(dir, 0, &r);
  assert_int_equal(r.steps_detect, RP_STEPS_FOUND);
  assert_int_equal(r.step_period, 8);
  for (int p = 0; p < 2; p++) {
    const rp_rank *k = &r.ranks[p];
    assert_int_equal(k->nsteps, 12);
    for (size_t s = 1; s < 12; s++) {
      assert_int_equal(k->steps[s].stop - k->steps[s].start, U);
      assert_int_equal(k->steps[s].value, s); /* p2p seq: 8 a step on either rank */
    }
  }
  rp_report_free(&r);
  rm_tmp();
}

/* Warm-up: a DDP job's first steps come 4, 3, 2.5 and 2 times as far apart (compilation,
 * allocator growth); judged in hindsight, the steps before the first three whose durations lie
 * within a factor of 1.5 of the median (steps 0-2) are marked as warm-up, the others not. */
static void test_warmup_steps_marked(void **state) {
  (void)state;
  mkdir_tmp();
  job j;
  job_begin(&j, 0, 2);
  static const double slow[] = {4, 3, 2.5, 2};
  int64_t t = 0;
  for (int k = 0; k < 14; k++) {
    t += (int64_t)((k < 4 ? slow[k] : 1.0) * (double)S);
    for (int b = 0; b < 14; b++) job_coll(&j, F_AR, b < 13 ? 25u << 20 : 8, t + b * 100 * US);
  }
  job_save(&j);
  rp_report r;
  analyze(dir, 0, &r);
  const rp_rank *k = &r.ranks[0];
  assert_int_equal(k->nsteps, 14);
  size_t warm = 0;
  while (warm < k->nsteps && k->steps[warm].warmup) warm++;
  assert_int_equal(warm, 3); /* durations 3, 2.5, 2, then 1 x S */
  for (size_t s = warm; s < k->nsteps; s++) assert_int_equal(k->steps[s].warmup, 0);
  rp_report_free(&r);
  rm_tmp();
}

/* Start-up is never the headline: a DDP rank whose first 4 steps are slow (warm-up), every
 * collective GPU-timed 1 ms after its enqueue, a compute kernel filling each step's forward pass,
 * and CUPTI windows (a process-wide trace of the same process) over steps `a0`..`a1` and
 * `b0`..`b1` (-1: none). Steps of S after the warm-up. */
static const double warm_slow[] = {4, 3, 2.5, 2};
static int64_t warm_step_start(int k) {
  int64_t t = 0;
  for (int i = 0; i <= k; i++) t += (int64_t)((i < 4 ? warm_slow[i] : 1.0) * (double)S);
  return t;
}

static void write_warm_job(int a0, int a1, int b0, int b1) {
  job j;
  job_begin(&j, 0, 2);
  j.h.flags |= TOPO_TRACE_F_CUPTI;
  tf_free(&j.t);
  tf_begin(&j.t, &j.h, NULL);
  for (int k = 0; k < 16; k++)
    for (int b = 0; b < 14; b++)
      job_coll_gpu(&j, F_AR, b < 13 ? 25u << 20 : 8, warm_step_start(k) + b * 100 * US, MS);
  job_save(&j);
  topo_trace_header h;
  tf_header_init(&h, 0, -1, 0);
  h.pid = j.h.pid;
  snprintf(h.host, sizeof h.host, "%s", j.h.host);
  h.flags = TOPO_TRACE_F_CUPTI;
  h.mono_ns = h.realtime_ns = B;
  h.cupti_minus_realtime_ns = 0;
  tf_trace t;
  tf_begin(&t, &h, NULL);
  for (int k = 0; k < 16; k++) { /* the forward pass: from the last bucket's end to the first */
    int64_t a = warm_step_start(k) - 5 * MS, z = warm_step_start(k);
    topo_trace_record kr = tf_kernel(TOPO_KERNEL_COMPUTE, 0, B + a, B + z, 7);
    tf_add(&t, &kr);
  }
  int win[2][2] = {{a0, a1}, {b0, b1}};
  for (int w = 0; w < 2; w++) {
    if (win[w][0] < 0) continue;
    topo_trace_record r;
    memset(&r, 0, sizeof r);
    r.cupti.type = TOPO_REC_CUPTI;
    r.cupti.state = TOPO_CUPTI_RECORDED;
    r.cupti.window = TOPO_CUPTI_WINDOW_STEPS;
    r.cupti.cpu_start_ns = B + warm_step_start(win[w][0]) - 2 * MS;
    r.cupti.cpu_stop_ns = B + warm_step_start(win[w][1] + 1) + 1 * MS;
    tf_add(&t, &r);
  }
  tf_footer(&t, NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/cupti.trace", dir);
  assert_int_equal(tf_save(&t, path), 0);
  tf_free(&t);
}

static void test_startup_left_out_of_the_coverage(void **state) {
  (void)state;
  /* one window over the first steps (warm-up steps 0-1 whole), one over steady steps (9-10) */
  mkdir_tmp();
  write_warm_job(0, 1, 9, 11);
  rp_report r;
  analyze(dir, 0, &r);
  const rp_rank *k = &r.ranks[0];
  assert_int_equal(k->steps_gpu, 1);
  assert_true(k->startup_steps >= 1); /* the warm-up steps inside the first window */
  assert_int_equal(k->startup_windows, 0);
  assert_true(k->cover_steps >= 2);
  for (size_t s = 0; s < k->nsteps; s++) /* every covered step is a steady one */
    if (k->steps[s].covered > 0) assert_int_equal(k->steps[s].warmup, 0);
  char buf[192];
  assert_non_null(strstr(rp_rank_cover_steps(k, buf, sizeof buf), "start-up left out: "));
  char *text = render(&r);
  assert_non_null(strstr(text, "steady steps"));
  assert_non_null(strstr(text, "start-up left out"));
  assert_non_null(strstr(text, "w: before the steady state"));
  free(text);
  rp_report_free(&r);
  rm_tmp();
  /* only the warm-up window: compute is unknown, with the reason, never start-up's figures */
  mkdir_tmp();
  write_warm_job(0, 1, -1, -1);
  analyze(dir, 0, &r);
  k = &r.ranks[0];
  rp_derived d;
  rp_derive_rank(k, &d);
  assert_int_equal(d.known, 0);
  assert_non_null(strstr(rp_rank_unknown_reason(k), "recorded start-up only"));
  rp_report_free(&r);
  rm_tmp();
}

/* The real DDP job (tests/data/ddp-2xh200): 3 warm-up and 5 timed steps; the first step (before
 * DDP rebuilds its buckets: one 768 MiB AllReduce) differs, the other 7 repeat 24 AllReduces of
 * 32 MiB. The last four timed steps, from CPU enqueue times, lie inside the range the job printed
 * (ddp_job.txt: step_ms, rank 0's; rank 1 within 5 %); the first timed one also holds the wait for the warm-up's GPU work. */
static void test_real_ddp_traces(void **state) {
  (void)state;
  rp_report r;
  analyze(TOPO_DDP_DATA, 0, &r);
  FILE *f = fopen(TOPO_DDP_DATA "/ddp_job.txt", "r");
  assert_non_null(f);
  char line[1024];
  assert_non_null(fgets(line, sizeof line, f));
  fclose(f);
  const char *p = strstr(line, "\"step_ms\": [");
  assert_non_null(p);
  p += strlen("\"step_ms\": [");
  double lo = 1e30, hi = 0;
  int njob = 0;
  for (char *end; *p && *p != ']'; p = end + (*end == ',')) {
    double v = strtod(p, &end);
    assert_true(end != p);
    if (v < lo) lo = v;
    if (v > hi) hi = v;
    njob++;
  }
  assert_int_equal(njob, 5);
  assert_int_equal(r.step_period, 24);
  assert_int_equal(r.nstepsum, 7);
  for (int k = 0; k < r.nranks; k++) {
    assert_int_equal(r.ranks[k].nsteps, 7);
    /* rank 0 printed the times; rank 1's own CPU boundaries may differ by its enqueue jitter */
    double slack = r.ranks[k].world_rank == 0 ? 0 : 0.05;
    for (size_t s = 3; s < 7; s++) {
      double ms = (double)(r.ranks[k].steps[s].stop - r.ranks[k].steps[s].start) / 1e6;
      assert_true(ms >= lo * (1 - slack) && ms <= hi * (1 + slack));
    }
  }
  rp_report_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ddp_steps),
      cmocka_unit_test(test_steps_cut_at_gpu_times),
      cmocka_unit_test(test_steps_found_when_gaps_do_not_repeat),
      cmocka_unit_test(test_incomplete_last_step),
      cmocka_unit_test(test_fsdp_steps),
      cmocka_unit_test(test_no_period),
      cmocka_unit_test(test_kineto_steps_win),
      cmocka_unit_test(test_few_operations_held_for_order),
      cmocka_unit_test(test_direct_steps_each_kept),
      cmocka_unit_test(test_direct_steps_memory_bounded),
      cmocka_unit_test(test_direct_steps_grouped_as_all),
      cmocka_unit_test(test_tp_dp_two_communicators_one_step),
      cmocka_unit_test(test_tp_dp_lagged_gpu_and_a_last_communicator),
      cmocka_unit_test(test_pipeline_steps_from_sends_and_receives),
      cmocka_unit_test(test_warmup_steps_marked),
      cmocka_unit_test(test_startup_left_out_of_the_coverage),
      cmocka_unit_test(test_real_ddp_traces),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
