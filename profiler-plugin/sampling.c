// SPDX-License-Identifier: Apache-2.0
// The sampling choice (sampling.h): which operations get kernel-channel events, set in NCCL's
// activation mask ahead of each operation from a prediction of the next one, and the start-up
// rule that times every operation until the job's step is steady. Callbacks feed it each
// operation (topo_sampling_next_op) and read the mask; the writer's tick moves start-up's flag;
// the core attaches NCCL's mask word at init and detaches it at the end.
#include "sampling.h"

#include <stdatomic.h>

#include "log.h"
#include "settings.h"
#include "timeline.h"
#include "trace_writer.h"

_Atomic(int *) topo_sampling_mask;
atomic_int topo_sampling_startup;
static _Atomic(uint64_t) tick;   /* operations that fell to 1-in-sample_every sampling */
static atomic_int next_mask;     /* the mask last set for the next operation */
static atomic_int traffic_woken; /* the writer was told of the first large operation */

static void set_mask(int value) {
  atomic_store_explicit(&next_mask, value, memory_order_relaxed);
  int *p = atomic_load_explicit(&topo_sampling_mask, memory_order_relaxed);
  if (p) __atomic_store_n(p, value, __ATOMIC_RELAXED);
}

/* Which operations get kernel channels.
 * Rule: in start-up (topo_sampling_startup: until the step is steady, bounded in time,
 * step_sched.h) every operation; after it every operation of at least topo_cfg.measure_min
 * bytes; below that, each kind (function, log2 of the size) until TOPO_SAMPLING_FIRST of it were
 * measured (start-up's count), and then 1 in topo_cfg.sample_every (hashed, not periodic:
 * sample_mix). NCCL reads the mask before the plugin hears of the operation, so the mask for
 * operation k + 1 is set when operation k starts, from a prediction of k + 1: the kind that
 * followed the same context last time. The context is (previous different kind, this kind, how
 * many of this kind in a row), which tells "the 12th of 12 equal AllReduces" from "the 11th";
 * when the context is new, the kind that last followed this kind; when that is unknown too, the
 * operation counts as small. Training jobs repeat one sequence per step, so the prediction is
 * right from the second step. Process-wide (the mask is), fixed-size tables, relaxed atomics:
 * concurrent callers can only cause a misprediction (an operation timed or not timed against the
 * rule), never an error.
 *
 * Kind: func (0..10, 11 unknown) * PRED_BUCKETS + bucket (0 for 0 bytes, else 1 + floor(log2)).
 * Entry (32 bits): kind + 1 in bits 0-9 (0 = unknown), PRED_LARGE when >= measure_min bytes.
 * pred_hist: this kind + 1 (bits 0-9), previous different kind + 1 (10-19), run length (20-27),
 * the kind predicted for the next operation + 1 (28-37). */
#define PRED_FUNCS   12
#define PRED_BUCKETS 64
#define PRED_KINDS   (PRED_FUNCS * PRED_BUCKETS)
#define PRED_SLOTS   4096
#define PRED_RUN_MAX 255u
#define PRED_LARGE   0x400u
static atomic_uint pred_asked[PRED_KINDS];     /* operations of the kind given kernel channels */
static atomic_uint pred_next[PRED_KINDS];      /* by kind: the entry that followed it last */
static _Atomic(uint64_t) pred_ctx[PRED_SLOTS]; /* by context: (context + 1) << 32 | entry */
static _Atomic(uint64_t) pred_hist;
static _Atomic(uint64_t) pred_ops, pred_hits, pred_asked_ops;

static uint32_t pred_kind(int func, uint64_t bytes) {
  uint32_t f = func >= 0 && func < PRED_FUNCS - 1 ? (uint32_t)func : PRED_FUNCS - 1;
  uint32_t b = bytes ? (uint32_t)(64 - __builtin_clzll(bytes)) : 0;
  return f * PRED_BUCKETS + (b < PRED_BUCKETS ? b : PRED_BUCKETS - 1);
}

/* kinds + 1 and run: < 769 * 769 * 256, fits 28 bits */
static inline uint32_t pred_context(uint32_t prev, uint32_t cur, uint32_t run) {
  return (prev * (PRED_KINDS + 1) + cur) * (PRED_RUN_MAX + 1) + run;
}
static inline uint32_t pred_slot(uint32_t ctx) { return (ctx * 2654435761u) >> 20; }

static void pred_reset(void) {
  for (int i = 0; i < PRED_KINDS; i++) {
    atomic_store(&pred_asked[i], 0);
    atomic_store(&pred_next[i], 0);
  }
  for (int i = 0; i < PRED_SLOTS; i++) atomic_store(&pred_ctx[i], 0);
  atomic_store(&pred_hist, 0);
  atomic_store(&pred_ops, 0);
  atomic_store(&pred_hits, 0);
  atomic_store(&pred_asked_ops, 0);
}

/* splitmix64's finalizer: the sampled operations are those whose running count hashes to 0 mod
 * sample_every. As often as every sample_every-th, but never in step with a job's period (every
 * 32nd operation of a step of 64 is always the same two collectives, whose durations then stand
 * for all: topo-report's estimates would be biased beyond any error it can state); the same
 * choice on every rank, whose operations come in the same order. */
static inline uint64_t sample_mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Whether the operation predicted by `entry` (0 = unknown) gets kernel channels. */
static int pred_wants(uint32_t entry) {
  if (entry & PRED_LARGE) return 1;
  uint32_t kind = entry & 0x3ff;
  if (kind &&
      atomic_load_explicit(&pred_asked[kind - 1], memory_order_relaxed) < TOPO_SAMPLING_FIRST)
    return 1;
  uint64_t t = atomic_fetch_add_explicit(&tick, 1, memory_order_relaxed) + 1;
  return sample_mix(t) % topo_cfg.sample_every == 0;
}

/* An operation of `func` and `bytes` was issued, with kernel channels if `asked` (the mask NCCL
 * read for it): learn what followed the previous one, then set the mask for the next. */
void topo_sampling_next_op(const topo_comm *c, int func, uint64_t bytes, int asked) {
  int abi_version = c->abi_version;
  if (bytes >= TOPO_CUPTI_TRAFFIC_BYTES) {
    topo_timeline_note_traffic();
    /* The CUPTI schedule acts on the first large operation: the writer should look now. */
    if (!atomic_load_explicit(&traffic_woken, memory_order_relaxed) &&
        !atomic_exchange(&traffic_woken, 1))
      topo_writer_wake(c->writer);
  }
  if (topo_cfg.measure_all || !topo_cfg.kernelch || abi_version < 4) return;
  uint32_t kind = pred_kind(func, bytes);
  uint32_t entry = (kind + 1) | (bytes >= topo_cfg.measure_min ? PRED_LARGE : 0);
  uint64_t h = atomic_load_explicit(&pred_hist, memory_order_relaxed);
  uint32_t cur = (uint32_t)h & 0x3ff, prev = (uint32_t)(h >> 10) & 0x3ff;
  uint32_t run = (uint32_t)(h >> 20) & 0xff, predicted = (uint32_t)(h >> 28) & 0x3ff;
  atomic_fetch_add_explicit(&pred_ops, 1, memory_order_relaxed);
  if (predicted == kind + 1) atomic_fetch_add_explicit(&pred_hits, 1, memory_order_relaxed);
  if (asked) {
    atomic_fetch_add_explicit(&pred_asked_ops, 1, memory_order_relaxed);
    if (atomic_load_explicit(&pred_asked[kind], memory_order_relaxed) < TOPO_SAMPLING_FIRST)
      atomic_fetch_add_explicit(&pred_asked[kind], 1, memory_order_relaxed);
  }
  if (cur) {
    atomic_store_explicit(&pred_next[cur - 1], entry, memory_order_relaxed);
    uint32_t ctx = pred_context(prev, cur, run);
    atomic_store_explicit(&pred_ctx[pred_slot(ctx)], (uint64_t)(ctx + 1) << 32 | entry,
                          memory_order_relaxed);
  }
  if (cur == kind + 1) {
    if (run < PRED_RUN_MAX) run++;
  } else {
    prev = cur;
    run = 1;
  }
  cur = kind + 1;
  uint32_t ctx = pred_context(prev, cur, run);
  uint64_t e = atomic_load_explicit(&pred_ctx[pred_slot(ctx)], memory_order_relaxed);
  uint32_t next = (e >> 32) == (uint64_t)ctx + 1
                      ? (uint32_t)e
                      : atomic_load_explicit(&pred_next[kind], memory_order_relaxed);
  atomic_store_explicit(
      &pred_hist,
      (uint64_t)cur | (uint64_t)prev << 10 | (uint64_t)run << 20 | (uint64_t)(next & 0x3ff) << 28,
      memory_order_relaxed);
  int m = topo_settings_mask_for(abi_version);
  if (!atomic_load_explicit(&topo_sampling_startup, memory_order_relaxed) && !pred_wants(next))
    m &= ~(ncclProfileKernelCh | ncclProfileKernelPhase);
  set_mask(m);
}

void topo_sampling_reset(void) {
  atomic_store(&topo_sampling_startup, topo_cfg.startup_ns > 0);
  atomic_store(&tick, 0);
  atomic_store(&traffic_woken, 0);
  pred_reset();
}

void topo_sampling_set_startup(int on) { atomic_store(&topo_sampling_startup, on); }

void topo_sampling_first_mask(int abi_version) {
  atomic_store(&next_mask, topo_settings_mask_for(abi_version));
}

void topo_sampling_attach(int *mask) {
  atomic_store(&topo_sampling_mask, mask);
  set_mask(atomic_load(&next_mask));
}

void topo_sampling_detach(void) { atomic_store(&topo_sampling_mask, NULL); }

int topo_sampling_traffic_seen(void) { return atomic_load(&traffic_woken); }

/* Start-up's end (or its return at the first large operation, step_sched.h): the hot path's flag
 * follows the schedule's answer; one INFO line when it ends. Writer thread. */
int64_t topo_sampling_startup_tick(topo_sched *sched, int64_t now) {
  int64_t until;
  int on = topo_sched_startup(sched, now, &until);
  if (atomic_load_explicit(&topo_sampling_startup, memory_order_relaxed) == on) return until;
  atomic_store_explicit(&topo_sampling_startup, on, memory_order_relaxed);
  topo_sched_state st;
  topo_sched_get(sched, &st);
  if (on)
    TOPO_INFO(NCCL_INIT,
              "TOPO/Profiler: start-up again at the first operation of >= %u bytes: "
              "every operation measured until the step is steady, at most %lld ms",
              TOPO_CUPTI_TRAFFIC_BYTES, (long long)(topo_cfg.startup_ns / 1000000));
  else if (st.steady)
    TOPO_INFO(NCCL_INIT,
              "TOPO/Profiler: start-up over after %llu operations: the step (%u "
              "operations) is steady; the sampling rule from here on",
              (unsigned long long)st.fed, st.period);
  else
    TOPO_INFO(NCCL_INIT,
              "TOPO/Profiler: start-up over after %llu operations: no steady step "
              "within TOPO_PROFILER_STARTUP_MS=%lld; the sampling rule from here on",
              (unsigned long long)st.fed, (long long)(topo_cfg.startup_ns / 1000000));
  return until;
}

void topo_sampling_report(const topo_comm *c) {
  if (topo_cfg.measure_all || !topo_cfg.kernelch || c->abi_version < 4) return;
  unsigned long long ops = atomic_load(&pred_ops), hits = atomic_load(&pred_hits);
  TOPO_INFO(NCCL_INIT,
            "TOPO/Profiler: next-operation prediction right for %llu of %llu "
            "operations (%.1f %%); kernel channels for %llu of them",
            hits, ops, ops ? 100.0 * (double)hits / (double)ops : 0.0,
            (unsigned long long)atomic_load(&pred_asked_ops));
}
