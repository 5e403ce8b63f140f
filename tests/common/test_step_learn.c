// SPDX-License-Identifier: Apache-2.0
// The step learner (common/step_learn.h) on synthetic streams of the common parallelisms, with
// simulated enqueue times: DDP (gradient buckets, a warm-up prefix), FSDP (per-layer AllGathers
// and ReduceScatters that repeat inside a step), TP + DP (two communicators interleaved), TP alone
// (one kind of operation: only the timing tells the step), PP (send/recv per microbatch), a
// period holding several real steps (folded to one), irregular traffic (no step), a step that
// changes (lost, found again), warm-up (steady only once durations agree), and determinism.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "step_learn.h"

#define US 1000LL
#define MS 1000000LL

enum { F_BCAST = 0, F_AG = 2, F_RS = 3, F_AR = 4, F_SEND = 6, F_RECV = 7 };

typedef struct stream {
  topo_step_op *op;
  size_t n, cap;
  int64_t t;
  uint64_t rng;
} stream;

static void stream_init(stream *s, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->cap = 1 << 16;
  s->op = calloc(s->cap, sizeof *s->op);
  s->t = 1000 * MS;
  s->rng = seed * 2862933555777941757ull + 3037000493ull;
}

static void stream_free(stream *s) {
  free(s->op);
  s->op = NULL;
}

/* Deterministic jitter in [-pct, +pct] percent of v. */
static int64_t jit(stream *s, int64_t v, int pct) {
  s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
  int64_t r = (int64_t)(s->rng >> 33) % (2 * pct + 1) - pct;
  return v + v * r / 100;
}

/* Append one operation `gap` ns after the previous one (jittered by pct %). */
static void put(stream *s, uint64_t comm, int func, uint64_t bytes, int64_t gap, int pct) {
  assert_true(s->n < s->cap);
  s->t += jit(s, gap, pct);
  topo_step_op *o = &s->op[s->n++];
  o->comm = comm;
  o->func = (uint8_t)func;
  o->bytes = bytes;
  o->t_ns = s->t;
  o->p2p = func == F_SEND || func == F_RECV;
  o->peer = -1;
}

static void put_p2p(stream *s, uint64_t comm, int func, int peer, uint64_t bytes, int64_t gap) {
  put(s, comm, func, bytes, gap, 10);
  s->op[s->n - 1].peer = peer;
}

typedef struct result {
  long found;      /* index of the operation at which the step was found, -1 none */
  uint32_t period; /* at the end */
  long boundary[4096];
  size_t nb;       /* boundaries, backfilled ones included, in order */
  long steady;     /* first operation at which steady held, -1 never */
  int lost;        /* times the step was lost */
  long last_lost;  /* index of the last loss, -1 none */
  long last_found; /* index of the last find, -1 none */
  uint64_t last_step;
} result;

static void learn(const stream *s, const topo_step_config *cfg, result *r) {
  topo_step_learner *l = topo_step_learn_new(cfg);
  assert_non_null(l);
  memset(r, 0, sizeof *r);
  r->found = r->steady = r->last_lost = r->last_found = -1;
  for (size_t i = 0; i < s->n; i++) {
    topo_step_event ev;
    topo_step_learn_add(l, &s->op[i], &ev);
    assert_int_equal(ev.index, i);
    uint64_t first, count;
    if (ev.found) {
      if (r->found < 0) r->found = (long)i;
      r->last_found = (long)i;
      r->nb = 0; /* a later find replaces what came before */
      if (topo_step_learn_backfill(l, &first, &count))
        for (uint64_t k = 0; k < count && r->nb < 4096; k++)
          r->boundary[r->nb++] = (long)(first + k * ev.period);
    }
    if (ev.lost) r->lost++, r->last_lost = (long)i, r->steady = -1;
    if (ev.boundary && r->nb < 4096) {
      r->boundary[r->nb++] = (long)i;
      r->last_step = ev.step;
    }
    if (ev.steady && r->steady < 0) r->steady = (long)i;
    r->period = ev.period;
  }
  topo_step_learn_free(l);
}

/* Every boundary is `period` after the previous one and begins with operation `first_kind`
 * (an index into one period of the stream after `from`). */
static void assert_boundaries(const result *r, uint32_t period, long phase_op, long from) {
  assert_int_equal(r->period, period);
  assert_true(r->nb >= 3);
  for (size_t k = 0; k < r->nb; k++) {
    if (k) assert_int_equal(r->boundary[k] - r->boundary[k - 1], (long)period);
    if (r->boundary[k] >= from) assert_int_equal((r->boundary[k] - from) % (long)period, phase_op);
  }
}

/* ---- DDP: a Broadcast prefix, a first step with other buckets, then 13 buckets + AllGather */
static void ddp(stream *s, int steps) {
  for (int i = 0; i < 6; i++) put(s, 0xd0, F_BCAST, 4u << 20, 300 * US, 10);
  for (int i = 0; i < 9; i++) put(s, 0xd0, F_AR, 40u << 20, 3 * MS, 10); /* before the rebuild */
  for (int st = 0; st < steps; st++) {
    put(s, 0xd0, F_AR, 25u << 20, 40 * MS, 5); /* forward + optimizer + first bucket's backward */
    for (int b = 1; b < 12; b++) put(s, 0xd0, F_AR, 25u << 20, 2 * MS, 20);
    put(s, 0xd0, F_AR, 3u << 20, 2 * MS, 20);
    put(s, 0xd0, F_AG, 32, 4 * MS, 20);
  }
}

static void test_ddp_step_is_the_bucket_sequence(void **state) {
  (void)state;
  stream s;
  stream_init(&s, 1);
  ddp(&s, 20);
  result r;
  learn(&s, NULL, &r);
  /* 14 operations per step; a step begins with its first bucket (after the 40 ms gap) */
  assert_boundaries(&r, 14, 0, 15);
  assert_true(r.found >= 15 + 3 * 14 - 1); /* three repetitions first */
  assert_true(r.found < 15 + 5 * 14);
  assert_int_equal(r.boundary[0], 15); /* every step of the periodic stretch is one */
  assert_int_equal(r.nb, 20);
  assert_int_equal(r.last_step, 19);
  assert_true(r.steady > 0);
  assert_int_equal(r.lost, 0);
  stream_free(&s);
}

/* ---- FSDP: L AllGathers forward, then (AllGather, ReduceScatter) x L backward */
static void fsdp(stream *s, int steps, int layers, int odd_every) {
  for (int st = 0; st < steps; st++) {
    for (int l = 0; l < layers; l++)
      put(s, 0xf5, F_AG, 8u << 20, l ? 3 * MS : 45 * MS, 10); /* optimizer + data before it */
    for (int l = 0; l < layers; l++) {
      uint64_t rs = odd_every && st % odd_every == odd_every - 1 && l == 3 ? 1u << 10 : 16u << 20;
      put(s, 0xf5, F_AG, 8u << 20, 5 * MS, 10);
      put(s, 0xf5, F_RS, rs, 1 * MS, 10);
    }
  }
}

/* FSDP whose first `uneven` steps show the step's gap only every other step (warm-up, the
 * job's own timing steps), as a real FSDP job on a shared GPU did; every step after has it. */
static void fsdp_uneven_start(stream *s, int uneven, int steps) {
  for (int st = 0; st < steps; st++) {
    for (int l = 0; l < 12; l++)
      put(s, 0xf5, F_AG, 8u << 20, l ? 3 * MS : st < uneven && st % 2 ? 3 * MS : 45 * MS, 10);
    for (int l = 0; l < 12; l++) {
      put(s, 0xf5, F_AG, 8u << 20, 5 * MS, 10);
      put(s, 0xf5, F_RS, 16u << 20, 1 * MS, 10);
    }
  }
}

static void test_two_steps_taken_early_give_way_to_one(void **state) {
  (void)state;
  /* the first steps make two steps (72 operations) look like the step; once every step shows
   * its gap, the lock on 72 no longer dominates its halves and the step of 36 is found */
  stream s;
  stream_init(&s, 12);
  fsdp_uneven_start(&s, 7, 60);
  result r;
  learn(&s, NULL, &r);
  assert_int_equal(r.period, 36);
  assert_true(r.nb >= 20);
  for (size_t k = 1; k < r.nb; k++) assert_int_equal(r.boundary[k] - r.boundary[k - 1], 36);
  assert_int_equal(r.boundary[0] % 36, 0);
  assert_true(r.last_found < 30 * 36);
  stream_free(&s);
}

static void test_fsdp_step_is_not_a_layer(void **state) {
  (void)state;
  stream s;
  stream_init(&s, 2);
  fsdp(&s, 20, 12, 0);
  result r;
  learn(&s, NULL, &r);
  assert_boundaries(&r, 36, 0, 0); /* 12 + 2 x 12; begins with the first forward AllGather */
  /* In the first step nothing tells the layers' (AllGather, ReduceScatter) pairs from a step: a
   * false start there is lost in the next forward pass, and the real step is found once it
   * has repeated three times; from the second step on the larger unit already emerging keeps
   * the layers from being taken. */
  assert_true(r.last_lost < 2 * 36);
  assert_true(r.last_found < 5 * 36);
  assert_int_equal(r.boundary[0], 0);
  assert_true(r.steady > 0);
  stream_free(&s);
}

static void test_period_of_several_steps_folds_to_one(void **state) {
  (void)state;
  /* one ReduceScatter of every 2nd step differs: the exact period is 72 = 2 steps of 36 */
  stream s;
  stream_init(&s, 3);
  fsdp(&s, 30, 12, 2);
  result r;
  learn(&s, NULL, &r);
  assert_boundaries(&r, 36, 0, 0);
  assert_true(r.last_lost < 3 * 36); /* false starts on the layers only in the first steps */
  assert_true(r.last_found < 8 * 36);
  /* every 4th step: the exact period is 144 = 4 steps of 36 */
  stream_free(&s);
  stream_init(&s, 4);
  fsdp(&s, 40, 12, 4);
  learn(&s, NULL, &r);
  assert_boundaries(&r, 36, 0, 0);
  assert_true(r.last_lost < 5 * 36); /* after the first odd step no larger unit holds it back */
  assert_true(r.last_found < 8 * 36);
  stream_free(&s);
}

/* ---- TP + DP: per layer two TP AllReduces forward and backward (comm A), DP buckets (comm B)
 * interleaved in the backward pass */
static void tp_dp(stream *s, int steps, int layers) {
  for (int st = 0; st < steps; st++) {
    for (int l = 0; l < layers; l++) {
      put(s, 0xa, F_AR, 4u << 20, l ? 1 * MS : 30 * MS, 10);
      put(s, 0xa, F_AR, 4u << 20, 1 * MS, 10);
    }
    for (int l = 0; l < layers; l++) {
      put(s, 0xa, F_AR, 4u << 20, 2 * MS, 10);
      put(s, 0xa, F_AR, 4u << 20, 2 * MS, 10);
      if (l % 2 == 1) put(s, 0xb, F_AR, 50u << 20, 100 * US, 10);
    }
  }
}

static void test_two_communicators_make_one_step(void **state) {
  (void)state;
  stream s;
  stream_init(&s, 5);
  tp_dp(&s, 20, 8);
  result r;
  learn(&s, NULL, &r);
  assert_boundaries(&r, 8 * 4 + 4, 0, 0);
  assert_int_equal(r.boundary[0], 0);
  stream_free(&s);
}

/* ---- TP alone: every operation the same; the step shows only in the timing */
static void test_one_kind_of_operation_steps_by_its_gap(void **state) {
  (void)state;
  stream s;
  stream_init(&s, 6);
  for (int st = 0; st < 20; st++)
    for (int i = 0; i < 20; i++)
      put(&s, 0xa, F_AR, 4u << 20, i ? (i < 10 ? 1 : 2) * MS : 25 * MS, 10);
  result r;
  learn(&s, NULL, &r);
  assert_boundaries(&r, 20, 0, 0);
  stream_free(&s);
}

static void test_even_pace_of_one_operation_has_no_step(void **state) {
  (void)state;
  stream s;
  stream_init(&s, 7);
  for (int i = 0; i < 2000; i++) put(&s, 0xa, F_AR, 4u << 20, 1 * MS, 20);
  result r;
  learn(&s, NULL, &r);
  assert_int_equal(r.found, -1);
  assert_int_equal(r.period, 0);
  stream_free(&s);
}

/* ---- PP: one stage's sends and receives, 1F1B: warm-up forwards, steady pairs, cool-down */
static void test_pipeline_step_is_the_whole_schedule(void **state) {
  (void)state;
  stream s;
  stream_init(&s, 8);
  const int micro = 8, warm = 2;
  for (int st = 0; st < 20; st++) {
    int first = 1;
    for (int m = 0; m < warm; m++) {
      put_p2p(&s, 0x99, F_RECV, 0, 2u << 20, first ? 50 * MS : 200 * US);
      put_p2p(&s, 0x99, F_SEND, 2, 2u << 20, 3 * MS);
      first = 0;
    }
    for (int m = 0; m < micro - warm; m++) {
      put_p2p(&s, 0x99, F_RECV, 0, 2u << 20, 200 * US);
      put_p2p(&s, 0x99, F_SEND, 2, 2u << 20, 3 * MS);
      put_p2p(&s, 0x99, F_RECV, 2, 2u << 20, 200 * US);
      put_p2p(&s, 0x99, F_SEND, 0, 2u << 20, 6 * MS);
    }
    for (int m = 0; m < warm; m++) {
      put_p2p(&s, 0x99, F_RECV, 2, 2u << 20, 200 * US);
      put_p2p(&s, 0x99, F_SEND, 0, 2u << 20, 6 * MS);
    }
  }
  result r;
  learn(&s, NULL, &r);
  assert_boundaries(&r, 2 * 2 + 4 * 6 + 2 * 2, 0, 0);
  /* the first step found (after any false start on a microbatch) holds to the end */
  assert_true(r.nb >= 15);
  stream_free(&s);
}

/* ---- irregular traffic: sizes change all the time */
static void test_changing_shapes_have_no_step(void **state) {
  (void)state;
  stream s;
  stream_init(&s, 9);
  for (int i = 0; i < 3000; i++) {
    s.rng = s.rng * 6364136223846793005ull + 1442695040888963407ull;
    put(&s, 0xa, F_AR, 1u << (10 + (s.rng >> 40) % 14), (i % 7 ? 1 : 9) * MS, 10);
  }
  result r;
  learn(&s, NULL, &r);
  assert_int_equal(r.found, -1);
  stream_free(&s);
}

/* ---- the step changes: lost, then the new one is found */
static void test_changed_step_is_lost_and_found_again(void **state) {
  (void)state;
  stream s;
  stream_init(&s, 10);
  ddp(&s, 10);
  size_t switch_at = s.n;
  fsdp(&s, 10, 6, 0);
  result r;
  learn(&s, NULL, &r);
  assert_true(r.lost >= 1); /* the DDP step; then perhaps a false start on the FSDP layers */
  assert_true(r.last_lost < (long)switch_at + 2 * 18);
  assert_int_equal(r.period, 18);
  assert_true(r.boundary[0] >= (long)switch_at);
  assert_int_equal((r.boundary[0] - (long)switch_at) % 18, 0);
  stream_free(&s);
}

/* ---- warm-up: the first steps are slower; steady only once durations agree */
static void test_steady_after_durations_agree(void **state) {
  (void)state;
  stream s;
  stream_init(&s, 11);
  for (int st = 0; st < 12; st++) {
    int64_t slow = st < 5 ? (5 - st) * 40 * MS : 0; /* allocator growth, compilation */
    put(&s, 0xd0, F_AR, 25u << 20, 40 * MS + slow, 2);
    for (int b = 1; b < 8; b++) put(&s, 0xd0, F_AR, 25u << 20, 2 * MS, 2);
  }
  result r;
  learn(&s, NULL, &r);
  assert_int_equal(r.period, 8);
  assert_true(r.found < 6 * 8);
  /* step durations: 242, 202, 162, 122, 82, 82, ... (ms, roughly): steady from the boundary that
   * ends the third step of about 82 ms */
  assert_true(r.steady >= 7 * 8);
  assert_true(r.steady <= 8 * 8);
  stream_free(&s);
}

static void test_step_longer_than_the_limit_is_not_found(void **state) {
  (void)state;
  stream s;
  stream_init(&s, 12);
  ddp(&s, 20);
  topo_step_config cfg = {.max_period = 8}; /* rounded up to whole 8s */
  result r;
  learn(&s, &cfg, &r);
  assert_int_equal(r.found, -1);
  cfg.max_period = 14;
  learn(&s, &cfg, &r);
  assert_int_equal(r.period, 14);
  stream_free(&s);
}

static void test_same_stream_same_answer(void **state) {
  (void)state;
  stream s;
  stream_init(&s, 13);
  tp_dp(&s, 15, 6);
  result *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  learn(&s, NULL, a);
  learn(&s, NULL, b);
  assert_memory_equal(a, b, sizeof *a);
  free(a);
  free(b);
  stream_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ddp_step_is_the_bucket_sequence),
      cmocka_unit_test(test_fsdp_step_is_not_a_layer),
      cmocka_unit_test(test_two_steps_taken_early_give_way_to_one),
      cmocka_unit_test(test_period_of_several_steps_folds_to_one),
      cmocka_unit_test(test_two_communicators_make_one_step),
      cmocka_unit_test(test_one_kind_of_operation_steps_by_its_gap),
      cmocka_unit_test(test_even_pace_of_one_operation_has_no_step),
      cmocka_unit_test(test_pipeline_step_is_the_whole_schedule),
      cmocka_unit_test(test_changing_shapes_have_no_step),
      cmocka_unit_test(test_changed_step_is_lost_and_found_again),
      cmocka_unit_test(test_steady_after_durations_agree),
      cmocka_unit_test(test_step_longer_than_the_limit_is_not_found),
      cmocka_unit_test(test_same_stream_same_answer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
