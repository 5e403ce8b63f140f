// SPDX-License-Identifier: Apache-2.0
// The step schedule of the CUPTI windows (profiler-plugin/step_sched.h) on simulated jobs and a
// simulated clock: operations are enqueued, run on the GPU a queue later, and reach the writer in
// completion order (GPU-timed ones after their GPU work), which passes over them every 10 ms and
// asks the schedule whether a window should be open. Windows open at a step boundary once the
// step is steady, hold whole steps (also on the GPU), respect the cap, come early enough that a
// 20 s run gets several, fall back to time windows without a step, and the step records name the
// steps' first operations - for DDP-, FSDP-, TP + DP- and PP-shaped jobs. Start-up (every
// operation measured) ends once the step is steady, or at its bound without a step.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "step_sched.h"

#define US 1000LL
#define MS 1000000LL
#define S  1000000000LL

enum { F_AG = 2, F_RS = 3, F_AR = 4, F_SEND = 6, F_RECV = 7 };
enum { DDP, FSDP, TPDP, PP, IRREGULAR };

typedef struct op {
  uint64_t comm, bytes, seq;
  int64_t cpu, gpu_start, gpu_end, arrive;
  int func, peer, timed, first; /* first: the truth, it begins a step */
  long step;                    /* the step it belongs to */
} op;

typedef struct job {
  op *ops;
  size_t n, cap;
  int64_t t;   /* enqueue clock */
  int64_t lag; /* the GPU runs this far behind the enqueue */
  uint64_t rng;
  uint64_t seqs[4][8];
  long step;
} job;

static int64_t jit(job *j, int64_t v, int pct) {
  j->rng = j->rng * 6364136223846793005ull + 1442695040888963407ull;
  return v + v * ((int64_t)(j->rng >> 33) % (2 * pct + 1) - pct) / 100;
}

static void put(job *j, int comm, int func, int peer, uint64_t bytes, int64_t gap) {
  if (j->n == j->cap) {
    j->cap = j->cap ? 2 * j->cap : 4096;
    j->ops = realloc(j->ops, j->cap * sizeof *j->ops);
  }
  op *o = &j->ops[j->n++];
  memset(o, 0, sizeof *o);
  j->t += jit(j, gap, 10);
  o->comm = 0x1000 + (uint64_t)comm;
  o->func = func;
  o->peer = peer;
  o->bytes = bytes;
  o->seq = j->seqs[comm][func]++;
  o->cpu = j->t;
  o->gpu_start = j->t + j->lag;
  o->gpu_end = o->gpu_start + 1 * MS;
  /* the default sampling: >= 16 MiB always, else 1 in 32 */
  o->timed = bytes >= (16u << 20) || j->n % 32 == 0;
  o->arrive = o->timed ? o->gpu_end + 500 * US : o->cpu + 50 * US;
  o->step = j->step;
}

/* One step of each shape; `gap` is the host gap before its first operation. */
static void one_step(job *j, int shape, int64_t gap, int64_t unit) {
  switch (shape) {
  case DDP:
    put(j, 0, F_AR, -1, 25u << 20, gap);
    for (int b = 1; b < 12; b++) put(j, 0, F_AR, -1, 25u << 20, unit);
    put(j, 0, F_AR, -1, 3u << 20, unit);
    put(j, 0, F_AG, -1, 32, 2 * unit);
    break;
  case FSDP:
    for (int l = 0; l < 12; l++) put(j, 0, F_AG, -1, 8u << 20, l ? unit : gap);
    for (int l = 0; l < 12; l++) {
      put(j, 0, F_AG, -1, 8u << 20, 2 * unit);
      put(j, 0, F_RS, -1, 16u << 20, unit / 2);
    }
    break;
  case TPDP:
    for (int l = 0; l < 8; l++) {
      put(j, 1, F_AR, -1, 4u << 20, l ? unit / 2 : gap);
      put(j, 1, F_AR, -1, 4u << 20, unit / 2);
    }
    for (int l = 0; l < 8; l++) {
      put(j, 1, F_AR, -1, 4u << 20, unit);
      put(j, 1, F_AR, -1, 4u << 20, unit);
      if (l % 2) put(j, 2, F_AR, -1, 50u << 20, unit / 10);
    }
    break;
  case PP:
    for (int m = 0; m < 8; m++) {
      put(j, 3, F_RECV, 0, 2u << 20, m ? unit / 10 : gap);
      put(j, 3, F_SEND, 2, 2u << 20, unit);
    }
    for (int m = 0; m < 8; m++) {
      put(j, 3, F_RECV, 2, 2u << 20, unit / 10);
      put(j, 3, F_SEND, 0, 2u << 20, 2 * unit);
    }
    break;
  case IRREGULAR:
    for (int i = 0; i < 20; i++) {
      j->rng = j->rng * 6364136223846793005ull + 1442695040888963407ull;
      put(j, 0, F_AR, -1, 1u << (10 + (j->rng >> 40) % 14), (j->rng >> 20) % 2 ? gap / 4 : unit);
    }
    break;
  }
}

/* A job of `shape` whose steps take about `step` (the first `slow` of them three times as long:
 * warm-up), for `seconds`; the GPU `lag` behind. */
static void make_job(job *j, int shape, int64_t step, int64_t seconds, int slow, int64_t lag) {
  memset(j, 0, sizeof *j);
  j->rng = 99 + (uint64_t)shape;
  j->t = 100 * S;
  j->lag = lag;
  int per = shape == DDP    ? 13
            : shape == FSDP ? 24 + 12
            : shape == TPDP ? 36
            : shape == PP   ? 24
                            : 20;
  int64_t unit = step / (per + 8), gap = step - unit * per;
  /* set-up before the first step, as PyTorch jobs have (a barrier, the parameters' broadcast) */
  put(j, 0, F_AR, -1, 4, 50 * MS);
  for (int i = 0; i < 3; i++) put(j, 0, 0, -1, 1u << 20, 20 * MS);
  for (j->step = 0; j->t < 100 * S + seconds * S; j->step++) {
    size_t first = j->n;
    one_step(j, shape, gap + (j->step < slow ? 2 * step : 0), unit);
    j->ops[first].first = shape != IRREGULAR;
  }
}

typedef struct window {
  int64_t open, close;
  int kind, cut; /* cut: still open when the job ended */
  uint32_t steps, period;
} window;

typedef struct run {
  window w[64];
  int nw;
  /* start-up as topo_sched_startup answered: each change (the first answer included) */
  int64_t su_at[8];
  int su_on[8], nsu;
  topo_trace_record steps[8192];
  uint32_t step_slot[8192];
  int nsteps;
  topo_sched_state end;
} run;

static void collect(void *arg, uint32_t slot, uint32_t life, const topo_trace_record *r) {
  run *out = arg;
  (void)life;
  if (out->nsteps < 8192) {
    out->step_slot[out->nsteps] = slot;
    out->steps[out->nsteps++] = *r;
  }
}

static int by_arrival(const void *a, const void *b) {
  const op *x = *(op *const *)a, *y = *(op *const *)b;
  return (x->arrive > y->arrive) - (x->arrive < y->arrive);
}

/* The writer's view: every 10 ms it drains what arrived, lets the schedule release operations,
 * and asks whether a window should be open. CUPTI is loaded (the schedule begins) at the first
 * operation of >= 1 MiB, as in the default mode. */
static int64_t startup_ns = 30 * S; /* TOPO_PROFILER_STARTUP_MS's default */

static void simulate(const job *j, int64_t cap, int64_t period, run *out) {
  memset(out, 0, sizeof *out);
  topo_sched_config cfg;
  topo_sched_config_default(&cfg, cap, period, 2 * S);
  cfg.startup_ns = startup_ns;
  topo_sched *s = topo_sched_new(&cfg);
  assert_non_null(s);
  op **order = malloc(j->n * sizeof *order);
  for (size_t i = 0; i < j->n; i++) order[i] = &j->ops[i];
  qsort(order, j->n, sizeof *order, by_arrival);
  size_t next = 0;
  int begun = 0;
  int64_t end = j->ops[j->n - 1].arrive + 3 * S;
  for (int64_t now = j->ops[0].cpu; now < end; now += 10 * MS) {
    for (; next < j->n && order[next]->arrive <= now; next++) {
      const op *o = order[next];
      topo_sched_op in = {.comm_hash = o->comm,
                          .seq = o->seq,
                          .bytes = o->bytes,
                          .cpu_start_ns = o->cpu,
                          .peer = o->peer,
                          .func = (uint8_t)o->func,
                          .p2p = o->func == F_SEND || o->func == F_RECV,
                          .gpu_timed = (uint8_t)o->timed,
                          .slot = (uint32_t)(o - j->ops)};
      topo_sched_add(s, &in, now);
      if (!begun && o->bytes >= (1u << 20)) {
        topo_sched_begin(s, now);
        begun = 1;
      }
    }
    topo_sched_poll(s, now, collect, out);
    int64_t until;
    int on = topo_sched_startup(s, now, &until);
    assert_true(on ? until > now : until == INT64_MAX);
    if ((!out->nsu || out->su_on[out->nsu - 1] != on) && out->nsu < 8) {
      out->su_at[out->nsu] = now;
      out->su_on[out->nsu++] = on;
    }
    topo_sched_window w;
    topo_sched_decide(s, now, &w);
    int open = out->nw && !out->w[out->nw - 1].close;
    if (!open && w.open && out->nw < 64) {
      topo_sched_opened(s, now, &w);
      out->w[out->nw++] = (window){now, 0, w.kind, 0, w.steps, w.period};
    } else if (open && !w.open) {
      topo_sched_closed(s, now, 0);
      out->w[out->nw - 1].close = now;
    }
  }
  if (out->nw && !out->w[out->nw - 1].close) {
    out->w[out->nw - 1].close = end;
    out->w[out->nw - 1].cut = 1;
  }
  topo_sched_get(s, &out->end);
  topo_sched_free(s);
  free(order);
}

/* Whole steps of the job inside window w: steps k whose first operation's predecessor was
 * enqueued after the window opened and whose GPU work (to the next step's first operation's GPU
 * start) was done before it closed. */
static int whole_steps(const job *j, const window *w, long *first_step) {
  int n = 0;
  *first_step = -1;
  for (size_t i = 1; i < j->n; i++) {
    if (!j->ops[i].first || j->ops[i - 1].cpu < w->open) continue;
    size_t k = i + 1;
    while (k < j->n && !j->ops[k].first) k++;
    if (k >= j->n || j->ops[k].gpu_start > w->close || j->ops[k - 1].gpu_end > w->close) break;
    if (*first_step < 0) *first_step = j->ops[i].step;
    n++;
  }
  return n;
}

/* The checks every shape shares: step windows after warm-up, at a boundary, holding whole steps
 * within the cap; the step records on the steps' first operations. */
static void assert_step_windows(const job *j, const run *r, int64_t cap, int min_windows,
                                int warmup) {
  int whole_windows = 0;
  if (getenv("DBG"))
    for (int i = 0; i < r->nw; i++) {
      long f;
      int wh = whole_steps(j, &r->w[i], &f);
      fprintf(stderr, "w%d open %.3f close %.3f kind %d steps %u period %u whole %d first %ld\n", i,
              (r->w[i].open - 100 * S) / 1e9, (r->w[i].close - 100 * S) / 1e9, r->w[i].kind,
              r->w[i].steps, r->w[i].period, wh, f);
    }
  int64_t step_len = 0;
  for (int i = 0; i < r->nw; i++) {
    const window *w = &r->w[i];
    assert_int_equal(w->kind, TOPO_CUPTI_WINDOW_STEPS);
    long first;
    int whole = whole_steps(j, w, &first);
    if (w->cut) continue; /* the job ended while it was open */
    whole_windows++;
    assert_true(whole >= (int)w->steps);
    assert_true(w->steps >= 3);
    assert_true(first > warmup); /* the warm-up steps are over */
    /* it opened just before a step began: the step before `first` was under way */
    for (size_t k = 1; k < j->n; k++)
      if (j->ops[k].first && j->ops[k].step == first) {
        step_len = j->ops[k].cpu - j->ops[k - 1].cpu; /* its gap, at least */
        assert_true(j->ops[k - 1].cpu - w->open < 2 * (j->ops[k].cpu - j->ops[k - 1].cpu) + 1);
        break;
      }
    assert_true(w->close - w->open <= cap + 20 * MS);
    if (i) assert_true(w->open - r->w[i - 1].open >= 5 * S);
  }
  (void)step_len;
  assert_true(whole_windows >= min_windows);
  /* every step record names a step's first operation and the operation before it */
  assert_true(r->nsteps > 0);
  for (int i = 0; i < r->nsteps; i++) {
    const op *o = &j->ops[r->step_slot[i]];
    assert_true(o->first);
    assert_int_equal(r->steps[i].step.seq, o->seq);
    assert_int_equal(r->steps[i].step.cpu_start_ns, o->cpu);
    assert_int_equal(r->steps[i].step.cut_cpu_start_ns, (o - 1)->cpu);
  }
}

static void test_ddp_windows_hold_whole_steady_steps(void **state) {
  (void)state;
  job j;
  make_job(&j, DDP, 130 * MS, 20, 3, 30 * MS);
  run *r = malloc(sizeof *r);
  simulate(&j, 10 * S, 60 * S, r);
  /* first after warm-up, then 5 s and 10 s after it: three in a 20 s run */
  assert_step_windows(&j, r, 10 * S, 3, 3);
  assert_int_equal(r->end.period, 14);
  assert_int_equal(r->w[0].steps, 4);
  free(r);
  free(j.ops);
}

static void test_fsdp_tp_dp_and_pp_windows(void **state) {
  (void)state;
  int shapes[] = {FSDP, TPDP, PP};
  uint32_t periods[] = {36, 36, 32};
  for (int i = 0; i < 3; i++) {
    job j;
    make_job(&j, shapes[i], 200 * MS, 20, 2, 60 * MS);
    run *r = malloc(sizeof *r);
    simulate(&j, 10 * S, 60 * S, r);
    assert_step_windows(&j, r, 10 * S, 3, 2);
    assert_int_equal(r->end.period, periods[i]);
    free(r);
    free(j.ops);
  }
}

static void test_long_steps_get_whole_steps_under_the_cap(void **state) {
  (void)state;
  job j;
  make_job(&j, DDP, 1500 * MS, 40, 1, 400 * MS);
  run *r = malloc(sizeof *r);
  simulate(&j, 10 * S, 60 * S, r);
  assert_step_windows(&j, r, 10 * S, 2, 1);
  assert_true(r->w[0].steps >= 3);
  free(r);
  free(j.ops);
  /* steps longer than a third of the cap: one whole step, closed by the cap at the latest (the
   * first window, before the step is steady, is a time window: 10 s without a step) */
  make_job(&j, DDP, 4 * S, 90, 1, 400 * MS);
  r = malloc(sizeof *r);
  simulate(&j, 10 * S, 60 * S, r);
  int stepped = 0;
  for (int i = 0; i < r->nw; i++) {
    long first;
    if (r->w[i].kind != TOPO_CUPTI_WINDOW_STEPS || r->w[i].cut) continue;
    stepped++;
    assert_int_equal(r->w[i].steps, 1);
    assert_true(r->w[i].close - r->w[i].open <= 10 * S + 20 * MS);
    assert_true(whole_steps(&j, &r->w[i], &first) >= 1);
  }
  assert_true(stepped >= 1);
  free(r);
  free(j.ops);
}

static void test_gaps_grow_to_the_period(void **state) {
  (void)state;
  job j;
  make_job(&j, DDP, 100 * MS, 200, 0, 20 * MS);
  run *r = malloc(sizeof *r);
  simulate(&j, 10 * S, 30 * S, r);
  /* from one window's start to the next: 5, 10, 20, then the period (30 s) */
  int64_t want[] = {5 * S, 10 * S, 20 * S, 30 * S, 30 * S};
  assert_true(r->nw >= 6);
  for (int i = 1; i < 6; i++) {
    int64_t gap = r->w[i].open - r->w[i - 1].open;
    assert_true(gap >= want[i - 1]);
    assert_true(gap < want[i - 1] + 200 * MS); /* the next step after it */
  }
  free(r);
  free(j.ops);
}

static void test_no_step_falls_back_to_time_windows(void **state) {
  (void)state;
  job j;
  make_job(&j, IRREGULAR, 100 * MS, 30, 0, 20 * MS);
  run *r = malloc(sizeof *r);
  simulate(&j, 10 * S, 60 * S, r);
  assert_int_equal(r->end.period, 0);
  assert_int_equal(r->nsteps, 0);
  /* 10 s after the first large collective, 2 s long; the next 5 s after it ends */
  assert_true(r->nw >= 2);
  for (int i = 0; i < r->nw; i++) {
    assert_int_equal(r->w[i].kind, TOPO_CUPTI_WINDOW_TIME);
    assert_true(r->w[i].close - r->w[i].open >= 2 * S);
    assert_true(r->w[i].close - r->w[i].open <= 2 * S + 10 * MS);
  }
  assert_true(r->w[0].open - j.ops[0].cpu >= 10 * S);
  assert_true(r->w[1].open - r->w[0].open >= 5 * S);
  free(r);
  free(j.ops);
}

/* Start-up: on from the first operation; over once the step is steady (after the warm-up's slow
 * steps and three steps that agree), never again; the windows are not moved by it. */
static void test_startup_ends_when_the_step_is_steady(void **state) {
  (void)state;
  static const int shapes[] = {DDP, FSDP, TPDP, PP};
  for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
    job j;
    make_job(&j, shapes[k], 130 * MS, 20, 3, 30 * MS);
    run *r = malloc(sizeof *r);
    simulate(&j, 10 * S, 60 * S, r);
    assert_int_equal(r->nsu, 2);
    assert_int_equal(r->su_on[0], 1);
    assert_int_equal(r->su_on[1], 0);
    /* not before three step durations after the warm-up's long gaps (before steps 0-2) agree:
     * boundaries 2 to 5; long before the bound */
    int64_t fifth = 0;
    for (size_t i = 0; i < j.n && !fifth; i++)
      if (j.ops[i].first && j.ops[i].step == 5) fifth = j.ops[i].cpu;
    assert_true(fifth > 0);
    assert_true(r->su_at[1] > fifth);
    assert_true(r->su_at[1] < j.ops[0].cpu + 10 * S);
    assert_true(r->nw >= 3);
    assert_true(r->w[0].open >= r->su_at[1] - 10 * MS); /* a window only in the steady state */
    free(r);
    free(j.ops);
  }
}

/* Without a step, start-up ends at its bound after the first operation of >= 1 MiB; with the
 * bound 0 there is none. */
static void test_startup_without_a_step_ends_at_its_bound(void **state) {
  (void)state;
  job j;
  make_job(&j, IRREGULAR, 100 * MS, 40, 0, 20 * MS);
  int64_t large = 0;
  for (size_t i = 0; i < j.n && !large; i++)
    if (j.ops[i].bytes >= (1u << 20)) large = j.ops[i].cpu;
  run *r = malloc(sizeof *r);
  simulate(&j, 10 * S, 60 * S, r);
  assert_int_equal(r->end.steady, 0);
  assert_int_equal(r->nsu, 2);
  assert_int_equal(r->su_on[0], 1);
  assert_int_equal(r->su_on[1], 0);
  assert_true(r->su_at[1] >= large + 30 * S);
  assert_true(r->su_at[1] <= large + 30 * S + 10 * MS);
  startup_ns = 0;
  simulate(&j, 10 * S, 60 * S, r);
  startup_ns = 30 * S;
  assert_int_equal(r->nsu, 1);
  assert_int_equal(r->su_on[0], 0);
  free(r);
  free(j.ops);
}

/* Small operations only (a barrier, set-up) for longer than the bound: start-up ends the bound
 * after the first; the first operation of >= 1 MiB (training begins) opens it again, for the
 * bound, once. */
static void test_startup_opens_again_at_the_first_large_operation(void **state) {
  (void)state;
  job j;
  memset(&j, 0, sizeof j);
  j.rng = 7;
  j.t = 100 * S;
  j.lag = 20 * MS;
  while (j.t < 103 * S) put(&j, 0, F_AR, -1, 4, 100 * MS);
  size_t first_large = j.n;
  for (j.step = 0; j.t < 106 * S; j.step++) one_step(&j, IRREGULAR, 100 * MS, 5 * MS);
  while (first_large < j.n && j.ops[first_large].bytes < (1u << 20)) first_large++;
  assert_true(first_large < j.n);
  startup_ns = 1 * S;
  run *r = malloc(sizeof *r);
  simulate(&j, 10 * S, 60 * S, r);
  startup_ns = 30 * S;
  assert_int_equal(r->nsu, 4);
  assert_int_equal(r->su_on[1], 0);
  assert_true(r->su_at[1] >= j.ops[0].cpu + 1 * S && r->su_at[1] <= j.ops[0].cpu + 1 * S + 10 * MS);
  assert_int_equal(r->su_on[2], 1);
  assert_true(r->su_at[2] >= j.ops[first_large].arrive);
  assert_int_equal(r->su_on[3], 0);
  int64_t end = j.ops[first_large].cpu + 1 * S;
  assert_true(r->su_at[3] >= end && r->su_at[3] <= end + 10 * MS);
  free(r);
  free(j.ops);
}

static void test_operations_are_learned_in_enqueue_order(void **state) {
  (void)state;
  /* GPU-timed records arrive a GPU queue late, after later untimed ones: held, not misordered */
  job j;
  make_job(&j, DDP, 130 * MS, 10, 0, 80 * MS);
  run *r = malloc(sizeof *r);
  simulate(&j, 10 * S, 60 * S, r);
  assert_int_equal(r->end.period, 14);
  assert_int_equal(r->end.fed, j.n);
  assert_true(r->end.hold_ns >= 80 * MS);
  /* consecutive step records, one per step from the one the step was found at */
  for (int i = 1; i < r->nsteps; i++)
    assert_int_equal(r->steps[i].step.step, r->steps[i - 1].step.step + 1);
  free(r);
  free(j.ops);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ddp_windows_hold_whole_steady_steps),
      cmocka_unit_test(test_fsdp_tp_dp_and_pp_windows),
      cmocka_unit_test(test_long_steps_get_whole_steps_under_the_cap),
      cmocka_unit_test(test_gaps_grow_to_the_period),
      cmocka_unit_test(test_no_step_falls_back_to_time_windows),
      cmocka_unit_test(test_operations_are_learned_in_enqueue_order),
      cmocka_unit_test(test_startup_ends_when_the_step_is_steady),
      cmocka_unit_test(test_startup_without_a_step_ends_at_its_bound),
      cmocka_unit_test(test_startup_opens_again_at_the_first_large_operation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
