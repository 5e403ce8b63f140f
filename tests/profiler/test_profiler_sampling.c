// SPDX-License-Identifier: Apache-2.0
// Which operations get kernel channels (GPU timing), through the plugin host as NCCL drives it:
// in the default configuration every operation in start-up (until the writer's step learner finds
// the step steady, at most TOPO_PROFILER_STARTUP_MS), then every operation of >=
// TOPO_PROFILER_MEASURE_BYTES, the first ones of each small kind, then 1 small one in
// TOPO_PROFILER_SAMPLE (the rule is tested from the first operation with start-up off); the mask
// for the next
// operation comes from a prediction of it, whose hit rate the plugin logs at each finalize. Each
// record's GPU_ASKED flag must be exactly what the mask NCCL read for that operation said. The
// size threshold's default follows the NCCL version (NCCL 2.31+ makes kernel channels dearer): the
// executable exports an ncclGetVersion for the plugin to find, as it finds NCCL's.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export.h"
#include "host_profiler.h"
#include "profiler_driver.h"
#include "trace_read.h"

#define MAX_OPS 4096
#define MIB16   16777216u
#define MIB64   (4ull * MIB16)

static char dir[256];

/* The NCCL this process claims to be, for the plugin's dlsym(RTLD_DEFAULT, "ncclGetVersion")
 * (this executable exports its symbols): 0 = no version to ask, as in a plain plugin host. */
static int claimed_nccl_version;
TOPO_EXPORT int ncclGetVersion(int *version);
TOPO_EXPORT int ncclGetVersion(int *version) {
  if (!claimed_nccl_version) return 1; /* ncclInternalError: the plugin must take it as unknown */
  *version = claimed_nccl_version;
  return 0;
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-sampling-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  setenv("TOPO_PROFILER_DIR", dir, 1);
  unsetenv("TOPO_PROFILER_SAMPLE");
  unsetenv("TOPO_PROFILER_MEASURE_BYTES");
  setenv("TOPO_PROFILER_STARTUP_MS", "0", 1); /* the rule from the first operation */
  unsetenv("TOPO_PROFILER_EVENTS");
  unsetenv("TOPO_PROFILER_POOL");
  unsetenv("TOPO_PROFILER_ENABLE");
  setenv("TOPO_PROFILER_NVTX", "0", 1);
  topo_host_log_reset();
  topo_host_profiler_mask = 0;
  claimed_nccl_version = 0;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  test_trace_rmdir(dir);
  return 0;
}

static const int nccl_for_version[8] = {0,
                                        TOPO_NCCL_2_23,
                                        TOPO_NCCL_2_24,
                                        TOPO_NCCL_2_26,
                                        TOPO_NCCL_2_27,
                                        TOPO_NCCL_2_28,
                                        TOPO_NCCL_2_29,
                                        TOPO_NCCL_2_31};

static void load(topo_host_profiler *p, int version) {
  assert_int_equal(topo_host_profiler_load(p, TOPO_TEST_PROFILER_SO, nccl_for_version[version]),
                   TOPO_OK);
  assert_int_equal(p->lib.version, version);
}

static drv_op make_op(int p2p, const char *func, const char *dtype, size_t count, uint64_t seq) {
  drv_op op;
  memset(&op, 0, sizeof op);
  op.p2p = p2p;
  op.func = func;
  op.dtype = dtype;
  op.algo = "RING";
  op.proto = "SIMPLE";
  op.count = count;
  op.seq = seq;
  op.peer = p2p ? 1 : -1;
  op.nch = 2;
  op.nwarps = 8;
  op.stream = (void *)0x7f0000001000;
  drv_set_gpu(&op, 1796061791515522368ull + seq * 1000000, 100, 50000);
  return op;
}

/* What the test issued: per operation, its bytes and whether NCCL (the host) read the
 * kernel-channel bit for it. Collectives are indexed by seq, sends by issue order. */
typedef struct issued {
  int n;
  uint64_t bytes[MAX_OPS];
  int asked[MAX_OPS];
  int step[MAX_OPS];
  int p2p[MAX_OPS];
  int p2p_index[MAX_OPS]; /* index into the op list of the k-th send */
  int nsends;
} issued;

static void issue(topo_host_profiler *p, issued *is, drv_op *op, uint64_t bytes, int step) {
  int i = is->n++;
  assert_true(i < MAX_OPS);
  drv_pending pend;
  drv_issue(p, op, &pend);
  drv_complete(p, &pend);
  is->bytes[i] = bytes;
  is->asked[i] = pend.kernelch;
  is->step[i] = step;
  is->p2p[i] = op->p2p;
  if (op->p2p) is->p2p_index[is->nsends++] = i;
}

/* "right for H of N" from the latest finalize's INFO line. */
static void prediction_counts(unsigned long long *hits, unsigned long long *ops) {
  char line[512];
  assert_true(topo_host_log_last("next-operation prediction right for", line, sizeof line));
  const char *s = strstr(line, "right for ");
  assert_non_null(s);
  assert_int_equal(sscanf(s, "right for %llu of %llu", hits, ops), 2);
}

/* The trace of communicator `hash`, every coll/p2p record checked against what was issued:
 * GPU_ASKED exactly when the mask NCCL read had the bit, GPU-timed exactly then (the host
 * delivers kernel channels for those only). Fills rec_of[i] with op i's record. */
static void read_checked(uint64_t hash, const issued *is, test_trace *t,
                         const topo_rec_coll **rec_of) {
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  int found = 0;
  for (size_t i = 0; i < n && !found; i++) {
    assert_int_equal(test_trace_read(paths[i], t), 0);
    if (t->header.comm_hash == hash) found = 1;
    else test_trace_free(t);
  }
  test_trace_free_list(paths, n);
  assert_true(found);
  assert_true(t->has_footer);
  for (int i = 0; i < is->n; i++) rec_of[i] = NULL;
  int got = 0;
  for (size_t k = 0; k < t->count; k++) {
    const topo_trace_record *r = &t->records[k];
    if (r->type != TOPO_REC_COLL && r->type != TOPO_REC_P2P) continue;
    int i;
    if (r->type == TOPO_REC_P2P) {
      assert_true(r->coll.seq < (uint64_t)is->nsends);
      i = is->p2p_index[r->coll.seq];
    } else {
      assert_true(r->coll.seq < (uint64_t)is->n);
      i = (int)r->coll.seq;
    }
    assert_null(rec_of[i]);
    rec_of[i] = &r->coll;
    got++;
    assert_int_equal(r->coll.bytes, is->bytes[i]);
    assert_int_equal(!!(r->coll.flags & TOPO_COLL_F_GPU_ASKED), is->asked[i]);
    assert_int_equal(!!(r->coll.flags & TOPO_COLL_F_GPU_TIMED), is->asked[i]);
  }
  assert_int_equal(got, is->n);
}

/* ---- a DDP-like step: 1 x 4 B AllReduce, 12 x 25 MB AllReduce, 1 x 16 B AllGather ---- */
#define STEPS     20
#define STEP_OPS  14
#define BIG_COUNT 6553600u /* float32: 26214400 bytes */

static void ddp_step(topo_host_profiler *p, issued *is, int step) {
  drv_op op = make_op(0, "AllReduce", "ncclFloat32", 1, (uint64_t)is->n);
  issue(p, is, &op, 4, step);
  for (int k = 0; k < 12; k++) {
    op = make_op(0, "AllReduce", "ncclFloat32", BIG_COUNT, (uint64_t)is->n);
    issue(p, is, &op, (uint64_t)BIG_COUNT * 4, step);
  }
  op = make_op(0, "AllGather", "ncclInt8", 16, (uint64_t)is->n);
  issue(p, is, &op, 16, step);
}

static void check_ddp(int version) {
  static issued is;
  memset(&is, 0, sizeof is);
  topo_host_profiler a, b;
  load(&a, version);
  load(&b, version);
  assert_int_equal(topo_host_profiler_init(&a, 0xdd9, "ddp", 1, 2, 0, topo_host_log), ncclSuccess);
  assert_int_equal(topo_host_profiler_init(&b, 0xb0b, "idle", 1, 2, 0, topo_host_log), ncclSuccess);
  unsigned long long hits1 = 0, ops1 = 0, hits = 0, ops = 0;
  for (int step = 0; step < STEPS; step++) {
    ddp_step(&a, &is, step);
    if (step == 0) { /* a finalize logs the counts so far: those of the first step */
      topo_host_profiler_finalize(&b);
      topo_host_profiler_unload(&b);
      prediction_counts(&hits1, &ops1);
    }
  }
  topo_host_profiler_finalize(&a);
  topo_host_profiler_unload(&a);
  prediction_counts(&hits, &ops);
  assert_int_equal(ops1, STEP_OPS);
  assert_int_equal(ops, STEPS * STEP_OPS);
  double after_first = (double)(hits - hits1) / (double)(ops - ops1);
  fprintf(stderr, "v%d: predictor right for %llu of %llu after the first step (%.1f %%)\n", version,
          hits - hits1, ops - ops1, 100.0 * after_first);
  assert_true(after_first > 0.95);

  static const topo_rec_coll *rec_of[MAX_OPS];
  test_trace t;
  read_checked(0xdd9, &is, &t, rec_of);
  assert_int_equal(t.header.sample_every, 32);
  assert_int_equal(t.header.measure_min_bytes, MIB16);
  assert_int_equal(t.header.flags & (TOPO_TRACE_F_KERNELCH | TOPO_TRACE_F_SAMPLED),
                   TOPO_TRACE_F_KERNELCH | TOPO_TRACE_F_SAMPLED);
  int big_first = 0, small_asked = 0, ar4_asked = 0, ag_asked = 0;
  for (int i = 0; i < is.n; i++) {
    if (is.bytes[i] >= MIB16) {
      if (is.step[i] == 0) big_first += is.asked[i];
      else assert_true(rec_of[i]->flags & TOPO_COLL_F_GPU_TIMED); /* after warm-up: all */
    } else {
      small_asked += is.asked[i];
      if (is.bytes[i] == 4) ar4_asked += is.asked[i];
      else ag_asked += is.asked[i];
    }
  }
  /* the first step learns the sequence: the first two 25 MB AllReduces cannot be foreseen */
  assert_true(big_first >= 10);
  /* every small kind measured at least twice; beyond that 1 in 32 of 40 small operations, and
   * at most two mispredictions in the first steps */
  assert_true(ar4_asked >= 2);
  assert_true(ag_asked >= 2);
  assert_true(small_asked <= 4 + 2 + 2);
  test_trace_free(&t);
}

static void test_v5_ddp_steps_time_every_large_collective(void **s) {
  (void)s;
  check_ddp(5);
}
static void test_v6_ddp_steps_time_every_large_collective(void **s) {
  (void)s;
  check_ddp(6);
}
static void test_v4_ddp_steps_time_every_large_collective(void **s) {
  (void)s;
  check_ddp(4);
}

/* ---- small operations: the first two of each kind, then 1 in 32 (hashed) ---- */
static void test_small_operations_are_sampled_one_in_n_after_their_first(void **s) {
  (void)s;
  static issued is;
  memset(&is, 0, sizeof is);
  topo_host_profiler p;
  load(&p, 5);
  assert_int_equal(topo_host_profiler_init(&p, 0x5a11, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  enum { KINDS = 5, ROUNDS = 128 };
  for (int r = 0; r < ROUNDS; r++) {
    drv_op ops[KINDS] = {make_op(0, "AllReduce", "ncclFloat32", 1, 0),
                         make_op(0, "AllReduce", "ncclFloat32", 256, 0),
                         make_op(0, "AllGather", "ncclInt8", 16, 0),
                         make_op(0, "ReduceScatter", "ncclBfloat16", 32768, 0),
                         make_op(1, "Send", "ncclInt8", 1024, 0)};
    static const uint64_t bytes[KINDS] = {4, 1024, 16, 65536, 1024};
    for (int k = 0; k < KINDS; k++) {
      ops[k].seq = (uint64_t)is.n;
      issue(&p, &is, &ops[k], bytes[k], r);
    }
  }
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  unsigned long long hits, ops;
  prediction_counts(&hits, &ops);
  assert_int_equal(ops, KINDS * ROUNDS);
  assert_true((double)hits / (double)ops > 0.95);

  static const topo_rec_coll *rec_of[MAX_OPS];
  test_trace t;
  read_checked(0x5a11, &is, &t, rec_of);
  int asked = 0, kind_asked[KINDS] = {0};
  int last = -1, gap_min = 1 << 30, gap_max = 0;
  for (int i = 0; i < is.n; i++) {
    if (!is.asked[i]) continue;
    asked++;
    kind_asked[i % KINDS]++;
    /* after the warm-up (three rounds), asked operations are 32 apart on average, never in step
     * with the job's sequence */
    if (i >= 3 * KINDS) {
      if (last >= 0) {
        if (i - last < gap_min) gap_min = i - last;
        if (i - last > gap_max) gap_max = i - last;
      }
      last = i;
    }
  }
  for (int k = 0; k < KINDS; k++) assert_true(kind_asked[k] >= 3); /* every kind sampled too */
  assert_true(gap_min < gap_max);
  /* 630 sampled operations at 1 in 32: 19.7 expected, sd 4.4 */
  int n = KINDS * ROUNDS;
  assert_true(asked >= 2 * KINDS + (n - 2 * KINDS) / 32 - 13);
  assert_true(asked <= 2 * KINDS + (n - 2 * KINDS) / 32 + 13);
  test_trace_free(&t);
}

/* ---- TOPO_PROFILER_MEASURE_BYTES=0: every operation ---- */
static void test_measure_bytes_zero_times_every_operation(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_MEASURE_BYTES", "0", 1);
  static issued is;
  memset(&is, 0, sizeof is);
  topo_host_profiler p;
  load(&p, 5);
  assert_int_equal(topo_host_profiler_init(&p, 0xa11, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  for (int step = 0; step < 3; step++) {
    ddp_step(&p, &is, step);
    assert_true(topo_host_profiler_mask & ncclProfileKernelCh);
  }
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  static const topo_rec_coll *rec_of[MAX_OPS];
  test_trace t;
  read_checked(0xa11, &is, &t, rec_of);
  for (int i = 0; i < is.n; i++) assert_true(is.asked[i]);
  assert_int_equal(t.header.sample_every, 1);
  assert_int_equal(t.header.measure_min_bytes, 0);
  assert_true(t.header.flags & TOPO_TRACE_F_KERNELCH);
  assert_false(t.header.flags & TOPO_TRACE_F_SAMPLED);
  test_trace_free(&t);
}

/* ---- NCCL 2.31+: the default size from which every operation is timed is 4 x 16 MiB ---- */

/* A step of a 4 B, 12 x 25 MB and 2 x 100 MB AllReduces, `steps` times; returns the
 * communicator's trace checked, with how many 25 MB and 100 MB operations after the first step
 * were GPU-timed. */
static void big_steps(int version, uint64_t hash, int steps, test_trace *t, int *mid_timed,
                      int *mid_total, int *big_timed, int *big_total) {
  static issued is;
  memset(&is, 0, sizeof is);
  topo_host_profiler p;
  load(&p, version);
  assert_int_equal(topo_host_profiler_init(&p, hash, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  for (int step = 0; step < steps; step++) {
    drv_op small = make_op(0, "AllReduce", "ncclFloat32", 1, (uint64_t)is.n);
    issue(&p, &is, &small, 4, step);
    for (int k = 0; k < 14; k++) {
      size_t count = k < 12 ? BIG_COUNT : 4 * (size_t)BIG_COUNT + 1024;
      drv_op op = make_op(0, "AllReduce", "ncclFloat32", count, (uint64_t)is.n);
      issue(&p, &is, &op, (uint64_t)count * 4, step);
    }
  }
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  static const topo_rec_coll *rec_of[MAX_OPS];
  read_checked(hash, &is, t, rec_of);
  *mid_timed = *mid_total = *big_timed = *big_total = 0;
  for (int i = 0; i < is.n; i++) {
    if (is.step[i] == 0 || is.bytes[i] < MIB16) continue;
    int big = is.bytes[i] >= MIB64;
    *(big ? big_total : mid_total) += 1;
    *(big ? big_timed : mid_timed) += !!(rec_of[i]->flags & TOPO_COLL_F_GPU_TIMED);
  }
}

static void test_v7_default_times_every_operation_from_64_mib(void **s) {
  (void)s;
  test_trace t;
  int mid, nmid, big, nbig;
  big_steps(7, 0x731, 20, &t, &mid, &nmid, &big, &nbig);
  assert_int_equal(t.header.measure_min_bytes, MIB64);
  assert_int_equal(t.header.nccl_version, 0); /* this process's NCCL did not say */
  assert_true(topo_host_log_contains(">= 67108864 bytes (NCCL 0)")); /* v7 says 2.31+ */
  assert_int_equal(big, nbig); /* every 100 MB AllReduce after the first step */
  /* 25 MB ones are sampled now: 1 in 32 (the first two were in step 0) */
  assert_true(mid >= nmid / 32 - 2 && mid <= nmid / 32 + 3);
  test_trace_free(&t);
}

/* What the NCCL in the process says decides, whichever ABI version it loaded: a 2.31 that loads
 * v6 gets the 2.31 default, a 2.30 its 1 MiB, a 2.28 16 MiB, and the header records the
 * version. */
static void test_default_follows_the_nccl_version_the_process_runs(void **s) {
  (void)s;
  static const struct {
    int nccl, abi;
    uint64_t want;
  } cases[] = {{23100, 6, MIB64}, {23007, 6, 1u << 20}, {22809, 5, MIB16}, {23207, 7, MIB64}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    claimed_nccl_version = cases[i].nccl;
    test_trace t;
    int mid, nmid, big, nbig;
    big_steps(cases[i].abi, 0x800 + i, 3, &t, &mid, &nmid, &big, &nbig);
    assert_int_equal(t.header.measure_min_bytes, cases[i].want);
    assert_int_equal(t.header.nccl_version, cases[i].nccl);
    assert_int_equal(big, nbig);
    if (cases[i].want <= MIB16) assert_int_equal(mid, nmid);
    else assert_true(mid < nmid);
    test_trace_free(&t);
  }
}

/* A size the user chose is kept on 2.31+; one that does not parse warns and takes the table's
 * default, 16 MiB. */
static void test_measure_bytes_set_is_kept_on_nccl_2_31(void **s) {
  (void)s;
  static const struct {
    const char *value;
    uint64_t want;
  } cases[] = {{"16777216", MIB16}, {"1073741824", 1073741824ull}, {"16MiB", MIB16}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setenv("TOPO_PROFILER_MEASURE_BYTES", cases[i].value, 1);
    test_trace t;
    int mid, nmid, big, nbig;
    big_steps(7, 0x900 + i, 3, &t, &mid, &nmid, &big, &nbig);
    assert_int_equal(t.header.measure_min_bytes, cases[i].want);
    if (cases[i].want == MIB16) assert_int_equal(mid, nmid);
    test_trace_free(&t);
  }
  unsetenv("TOPO_PROFILER_MEASURE_BYTES");
}

/* ---- a bad value: one warning, the default ---- */
static void test_bad_measure_bytes_warns_once_and_uses_the_default(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_MEASURE_BYTES", "16MiB", 1);
  static issued is;
  memset(&is, 0, sizeof is);
  topo_host_profiler a, b;
  load(&a, 5);
  load(&b, 5);
  assert_int_equal(topo_host_profiler_init(&a, 0xbad, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  assert_int_equal(topo_host_profiler_init(&b, 0xbae, NULL, 1, 2, 1, topo_host_log), ncclSuccess);
  for (int step = 0; step < 3; step++) ddp_step(&a, &is, step);
  topo_host_profiler_finalize(&b);
  topo_host_profiler_finalize(&a);
  topo_host_profiler_unload(&b);
  topo_host_profiler_unload(&a);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  assert_true(topo_host_log_contains("TOPO_PROFILER_MEASURE_BYTES"));
  static const topo_rec_coll *rec_of[MAX_OPS];
  test_trace t;
  read_checked(0xbad, &is, &t, rec_of);
  assert_int_equal(t.header.measure_min_bytes, MIB16);
  for (int i = 0; i < is.n; i++)
    if (is.step[i] > 0 && is.bytes[i] >= MIB16) assert_true(is.asked[i]);
  test_trace_free(&t);
}

/* ---- the default measure size follows the NCCL version the process runs ---- */
static uint64_t measure_min_under(int nccl_version, uint64_t hash) {
  claimed_nccl_version = nccl_version;
  static issued is;
  memset(&is, 0, sizeof is);
  topo_host_profiler p;
  load(&p, 6);
  assert_int_equal(topo_host_profiler_init(&p, hash, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  ddp_step(&p, &is, 0);
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  static const topo_rec_coll *rec_of[MAX_OPS];
  test_trace t;
  read_checked(hash, &is, &t, rec_of);
  uint64_t m = t.header.measure_min_bytes;
  test_trace_free(&t);
  return m;
}

static void test_measure_default_follows_the_nccl_version(void **s) {
  (void)s;
  const uint64_t mib = 1u << 20;
  assert_int_equal(measure_min_under(0, 0x100), 16 * mib);     /* unknown: cautious */
  assert_int_equal(measure_min_under(22809, 0x101), 16 * mib); /* 2.28: +4-6 us per call */
  assert_int_equal(measure_min_under(22907, 0x102), mib);      /* 2.29: 0.1-1.1 % */
  assert_int_equal(measure_min_under(23007, 0x103), mib);      /* 2.30 */
  assert_int_equal(measure_min_under(23102, 0x104), 64 * mib); /* 2.31.2: KernelPhase regression */
  assert_int_equal(measure_min_under(23207, 0x106), 64 * mib); /* 2.32.7: no fix released */
  setenv("TOPO_PROFILER_MEASURE_BYTES", "4096", 1);            /* a setting wins */
  assert_int_equal(measure_min_under(23007, 0x105), 4096);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
}

/* ---- start-up: every operation until the step is steady ---- */
static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void pause_ms(long ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* A step of small operations only (each would be sampled): 4 B AllReduce, 12 x 64 KiB
 * AllReduce, 16 B AllGather. */
static void small_step(topo_host_profiler *p, issued *is, int step) {
  drv_op op = make_op(0, "AllReduce", "ncclFloat32", 1, (uint64_t)is->n);
  issue(p, is, &op, 4, step);
  for (int k = 0; k < 12; k++) {
    op = make_op(0, "AllReduce", "ncclFloat32", 16384, (uint64_t)is->n);
    issue(p, is, &op, 65536, step);
  }
  op = make_op(0, "AllGather", "ncclInt8", 16, (uint64_t)is->n);
  issue(p, is, &op, 16, step);
}

/* Whether the trace holds a STEP record of the steady state. */
static int has_steady_step(const test_trace *t) {
  for (size_t k = 0; k < t->count; k++)
    if (t->records[k].type == TOPO_REC_STEP && (t->records[k].step.flags & TOPO_STEP_F_STEADY))
      return 1;
  return 0;
}

/* The records flagged TOPO_COLL_F_STARTUP are the first ones, all asked for kernel channels, and
 * cover every operation before `over` (the first not asked) but the last two (asked by a mask
 * set while start-up lasted). */
static void assert_startup_prefix(const issued *is, const topo_rec_coll *const *rec_of, int over) {
  int flagged = 0;
  for (int i = 0; i < is->n; i++) {
    int f = (rec_of[i]->flags & TOPO_COLL_F_STARTUP) != 0;
    if (f) assert_true(is->asked[i]);
    if (i > 0 && f) assert_true(rec_of[i - 1]->flags & TOPO_COLL_F_STARTUP);
    flagged += f;
  }
  for (int i = 0; i < over; i++) assert_true(is->asked[i]);
  assert_true(flagged <= over);
  assert_true(flagged >= over - 2);
}

/* Steps with a host gap between them (the boundary the learner finds): every operation asked
 * until the step is steady - the warm-up steps whole - then the usual rule (these small kinds:
 * 1 in 32, their first two counted in start-up), with the mask still set ahead for the next. */
static void check_startup(int version) {
  unsetenv("TOPO_PROFILER_STARTUP_MS"); /* the default, 30 s */
  static issued is;
  memset(&is, 0, sizeof is);
  topo_host_profiler p;
  load(&p, version);
  uint64_t hash = 0x5700 + (uint64_t)version;
  assert_int_equal(topo_host_profiler_init(&p, hash, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  int step = 0, over = -1;
  for (; step < 200 && over < 0; step++) {
    pause_ms(40);
    int from = is.n;
    small_step(&p, &is, step);
    for (int i = from; i < is.n && over < 0; i++)
      if (!is.asked[i]) over = i;
  }
  assert_true(over >= 0);
  int after = is.n;
  for (int k = 0; k < 40; k++) small_step(&p, &is, step++);
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  assert_true(topo_host_log_contains("start-up over after"));
  static const topo_rec_coll *rec_of[MAX_OPS];
  test_trace t;
  read_checked(hash, &is, &t, rec_of); /* GPU_ASKED exactly as the mask NCCL read */
  assert_true(t.header.flags & TOPO_TRACE_F_STARTUP);
  assert_true(has_steady_step(&t)); /* the steady step ended it, not the bound */
  /* the learner needs three repetitions and three agreeing durations: five steps at least */
  assert_true(over >= 5 * STEP_OPS);
  assert_startup_prefix(&is, rec_of, over);
  int asked = 0, n = is.n - after;
  for (int i = after; i < is.n; i++) asked += is.asked[i];
  assert_true(asked >= n / 32 - 13 && asked <= n / 32 + 13); /* 560 at 1 in 32: 17.5, sd 4.1 */
  test_trace_free(&t);
}

static void test_v6_startup_times_every_operation_until_the_step_is_steady(void **s) {
  (void)s;
  check_startup(6);
}
static void test_v4_startup_times_every_operation_until_the_step_is_steady(void **s) {
  (void)s;
  check_startup(4);
}

/* One kind of operation at an even pace has no step: start-up ends at its bound (here 300 ms)
 * after the first operation, never before; then the usual rule. */
static void test_startup_without_a_steady_step_ends_at_its_bound(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_STARTUP_MS", "300", 1);
  static issued is;
  memset(&is, 0, sizeof is);
  topo_host_profiler p;
  load(&p, 6);
  assert_int_equal(topo_host_profiler_init(&p, 0x5b0, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  int64_t t0 = now_ns(), t_over = 0;
  int over = -1;
  while (over < 0 && is.n < MAX_OPS - 400) {
    drv_op op = make_op(0, "AllReduce", "ncclFloat32", 16384, (uint64_t)is.n);
    issue(&p, &is, &op, 65536, 0);
    if (!is.asked[is.n - 1]) over = is.n - 1, t_over = now_ns();
    pause_ms(2);
  }
  assert_true(over >= 0);
  assert_true(t_over - t0 >= 300000000LL);
  int after = is.n;
  for (int k = 0; k < 320; k++) {
    drv_op op = make_op(0, "AllReduce", "ncclFloat32", 16384, (uint64_t)is.n);
    issue(&p, &is, &op, 65536, 1);
  }
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  assert_true(topo_host_log_contains("no steady step within TOPO_PROFILER_STARTUP_MS=300"));
  static const topo_rec_coll *rec_of[MAX_OPS];
  test_trace t;
  read_checked(0x5b0, &is, &t, rec_of);
  assert_false(has_steady_step(&t));
  assert_startup_prefix(&is, rec_of, over);
  int asked = 0;
  for (int i = after; i < is.n; i++) asked += is.asked[i];
  assert_true(asked <= 320 / 32 + 13);
  test_trace_free(&t);
}

/* ---- the collective sequence of a real DDP job (tests/data/ddp-2xh200, rank 0: recorded under
 * plain 1-in-32 sampling: 5 of its 172 operations of >= 16 MiB GPU-timed) replayed in issue
 * order ---- */
static int by_start(const void *a, const void *b) {
  const topo_rec_coll *x = *(const topo_rec_coll *const *)a, *y = *(const topo_rec_coll *const *)b;
  return (x->cpu_start_ns > y->cpu_start_ns) - (x->cpu_start_ns < y->cpu_start_ns);
}

static void test_real_ddp_sequence_times_every_large_allreduce(void **s) {
  (void)s;
  static const char *const funcs[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                      "AllReduce"};
  test_trace rec;
  assert_int_equal(
      test_trace_read(TOPO_TEST_DATA_DIR "/ddp-2xh200/topo-vm-2652-ada8ed4f539d2d3c-r0.trace",
                      &rec),
      0);
  const topo_trace_record **colls;
  size_t nc = test_trace_select(&rec, TOPO_REC_COLL, &colls);
  assert_true(nc > 0 && nc <= MAX_OPS);
  const topo_rec_coll **order = calloc(nc, sizeof *order);
  int recorded_big_timed = 0;
  for (size_t i = 0; i < nc; i++) {
    order[i] = &colls[i]->coll;
    assert_true(order[i]->func < 5);
    if (order[i]->bytes >= MIB16 && (order[i]->flags & TOPO_COLL_F_GPU_TIMED)) recorded_big_timed++;
  }
  qsort(order, nc, sizeof *order, by_start);

  static issued is;
  memset(&is, 0, sizeof is);
  topo_host_profiler p;
  load(&p, 5);
  assert_int_equal(topo_host_profiler_init(&p, 0xada8, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  int big = 0;
  for (size_t i = 0; i < nc; i++) {
    drv_op op = make_op(0, funcs[order[i]->func], "ncclInt8", order[i]->bytes, (uint64_t)is.n);
    issue(&p, &is, &op, order[i]->bytes, 0);
    big += order[i]->bytes >= MIB16;
  }
  topo_host_profiler_finalize(&p);
  topo_host_profiler_unload(&p);
  unsigned long long hits, ops;
  prediction_counts(&hits, &ops);
  static const topo_rec_coll *rec_of[MAX_OPS];
  test_trace t;
  read_checked(0xada8, &is, &t, rec_of);
  int big_timed = 0, ar32 = 0, steady = 0;
  for (int i = 0; i < is.n; i++) {
    if (is.bytes[i] < MIB16) continue;
    int timed = !!(rec_of[i]->flags & TOPO_COLL_F_GPU_TIMED);
    big_timed += timed;
    /* the training steps' 32 MiB AllReduces: every one from the third on (the first two come
     * before anything is known of what follows them) */
    if (order[i]->func == 4 && order[i]->bytes < 64u * 1024 * 1024 && ++ar32 > 2) {
      assert_true(timed);
      steady++;
    }
  }
  fprintf(stderr,
          "real DDP sequence: %d collectives, %d of >= 16 MiB: GPU-timed %d (recorded "
          "under 1 in 32: %d); predictor right for %llu of %llu\n",
          is.n, big, big_timed, recorded_big_timed, hits, ops);
  assert_int_equal(steady, 166);
  assert_true(big_timed > recorded_big_timed);
  assert_true((double)hits / (double)ops > 0.9);
  test_trace_free(&t);
  free(order);
  free(colls);
  test_trace_free(&rec);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_v5_ddp_steps_time_every_large_collective, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_v6_ddp_steps_time_every_large_collective, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_v7_default_times_every_operation_from_64_mib, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_default_follows_the_nccl_version_the_process_runs, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_measure_bytes_set_is_kept_on_nccl_2_31, setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_v6_startup_times_every_operation_until_the_step_is_steady, setup, teardown),
      cmocka_unit_test_setup_teardown(
          test_v4_startup_times_every_operation_until_the_step_is_steady, setup, teardown),
      cmocka_unit_test_setup_teardown(test_startup_without_a_steady_step_ends_at_its_bound, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_v4_ddp_steps_time_every_large_collective, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_small_operations_are_sampled_one_in_n_after_their_first,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_measure_bytes_zero_times_every_operation, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_bad_measure_bytes_warns_once_and_uses_the_default, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_real_ddp_sequence_times_every_large_allreduce, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_measure_default_follows_the_nccl_version, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
