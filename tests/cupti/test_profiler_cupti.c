// SPDX-License-Identifier: Apache-2.0
// The profiler's CUPTI compute timeline, for real, against the fake libcupti: kernels, copies and
// sets become topo_rec_kernel records of a process-wide trace (names as string records, NCCL
// kernels flagged by name); each span is a topo_rec_cupti record (RECORDED, YIELDED, DECLINED,
// FAILED); topo holds no CUPTI subscription beyond a probe, never touches the activity state of
// another client that was there first or arrives later, and comes back once it is gone; in the
// default mode windows open at step boundaries of a job's steady state and hold whole steps,
// without a step they keep a fixed length, and they open while a trigger file exists; the
// default mode loads CUPTI only at the first large collective or one period after init, and a
// stop before that waits for nothing; a missing CUPTI costs one line and a FAILED record. (The
// step schedule itself, on simulated clocks: tests/profiler/test_step_sched.c.)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cupti_result.h>

#include "clock.h"
#include "fake_cupti.h"
#include "host_profiler.h"
#include "profiler_driver.h"
#include "trace_read.h"

static char dir[256];
static void *fake;
static fake_cupti_kernel_fn kernel;
static fake_cupti_get_calls_fn get_calls;
static fake_cupti_other_attach_fn other_attach;
static fake_cupti_other_detach_fn other_detach;
static fake_cupti_other_records_fn other_records;

static const char *const cupti_vars[] = {
    "TOPO_PROFILER_CUPTI",         "TOPO_PROFILER_CUPTI_WINDOW_MS", "TOPO_PROFILER_CUPTI_PERIOD_S",
    "TOPO_PROFILER_CUPTI_TRIGGER", "TOPO_PROFILER_CUPTI_STEPS",     "CUDA_INJECTION64_PATH"};

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-ct-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  setenv("TOPO_PROFILER_DIR", dir, 1);
  for (size_t i = 0; i < sizeof cupti_vars / sizeof cupti_vars[0]; i++) unsetenv(cupti_vars[i]);
  setenv("TOPO_PROFILER_CUPTI", "1", 1);
  setenv("TOPO_PROFILER_CUPTI_LIB", TOPO_TEST_FAKE_CUPTI, 1);
  fake = dlopen(TOPO_TEST_FAKE_CUPTI, RTLD_NOW | RTLD_LOCAL);
  if (!fake) return -1;
  ((fake_cupti_reset_fn)dlsym(fake, "fake_cupti_reset"))();
  kernel = (fake_cupti_kernel_fn)dlsym(fake, "fake_cupti_kernel");
  get_calls = (fake_cupti_get_calls_fn)dlsym(fake, "fake_cupti_get_calls");
  other_attach = (fake_cupti_other_attach_fn)dlsym(fake, "fake_cupti_other_attach");
  other_detach = (fake_cupti_other_detach_fn)dlsym(fake, "fake_cupti_other_detach");
  other_records = (fake_cupti_other_records_fn)dlsym(fake, "fake_cupti_other_records");
  topo_host_log_reset();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof cupti_vars / sizeof cupti_vars[0]; i++) unsetenv(cupti_vars[i]);
  dlclose(fake);
  test_trace_rmdir(dir);
  return 0;
}

static fake_cupti_calls calls(void) {
  fake_cupti_calls k;
  get_calls(&k);
  return k;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Poll the fake's counters until `cond` holds (fails the test after `ms`). */
#define WAIT_UNTIL(cond, ms)                                                    \
  do {                                                                          \
    int waited_ = 0;                                                            \
    fake_cupti_calls k = calls();                                               \
    while (!(cond) && waited_ < (ms)) {                                         \
      sleep_ms(2);                                                              \
      waited_ += 2;                                                             \
      k = calls();                                                              \
    }                                                                           \
    if (!(cond)) fail_msg("timed out after %d ms waiting for %s", (ms), #cond); \
  } while (0)

/* Whether the process-wide CUPTI trace file exists. */
static int have_cupti_stream(void) {
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  int found = 0;
  for (size_t i = 0; i < n; i++) found |= strstr(strrchr(paths[i], '/'), "-cupti") != NULL;
  test_trace_free_list(paths, n);
  return found;
}

/* CUPTI is loaded and started on the profiler's writer thread (`on` and a trigger file: right
 * after the first init; `window`: at the first large collective); its process-wide trace file
 * appears once that is done. */
static void wait_for_cupti_stream(void) {
  for (int waited = 0; waited < 5000; waited += 2) {
    if (have_cupti_stream()) return;
    sleep_ms(2);
  }
  fail_msg("no CUPTI stream 5 s after its start was due");
}

static void large_collective(topo_host_profiler *p);

/* Whether the -cupti trace has a DECLINED record on disk yet (blocks are written within
 * TOPO_PROFILER_FLUSH_MS). */
static int declined_written(void) {
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  int found = 0;
  for (size_t i = 0; i < n; i++) {
    test_trace t;
    if (!strstr(strrchr(paths[i], '/'), "-cupti") || test_trace_read(paths[i], &t) != 0) continue;
    for (size_t r = 0; r < t.count; r++)
      found |=
          t.records[r].type == TOPO_REC_CUPTI && t.records[r].cupti.state == TOPO_CUPTI_DECLINED;
    test_trace_free(&t);
  }
  test_trace_free_list(paths, n);
  return found;
}

/* The first init; in the `window` mode without a trigger file, also the first large collective,
 * which starts CUPTI. */
static void init(topo_host_profiler *p, uint64_t hash) {
  assert_int_equal(topo_host_profiler_load(p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28), TOPO_OK);
  assert_int_equal(topo_host_profiler_init(p, hash, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  assert_non_null(p->ctx);
  const char *mode = getenv("TOPO_PROFILER_CUPTI"),
             *trigger = getenv("TOPO_PROFILER_CUPTI_TRIGGER");
  int on = mode && (!strcmp(mode, "on") || !strcmp(mode, "1"));
  if (!on && !(trigger && *trigger)) large_collective(p);
  wait_for_cupti_stream();
}

static void one_collective(topo_host_profiler *p) {
  drv_op op;
  memset(&op, 0, sizeof op);
  op.func = "AllReduce";
  op.dtype = "ncclBfloat16";
  op.algo = "RING";
  op.proto = "LL";
  op.count = 1024;
  op.nch = 1;
  op.peer = -1;
  drv_run(p, &op);
}

static void finalize(topo_host_profiler *p) {
  topo_host_profiler_finalize(p);
  topo_host_profiler_unload(p);
}

/* The process-wide CUPTI trace and the comm trace of the directory. */
static void read_traces(test_trace *cupti, test_trace *comm) {
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  int found_cupti = 0, found_comm = 0;
  for (size_t i = 0; i < n; i++) {
    int is_cupti = strstr(strrchr(paths[i], '/'), "-cupti") != NULL;
    if (is_cupti) found_cupti++;
    else found_comm++;
    assert_int_equal(test_trace_read(paths[i], is_cupti ? cupti : comm), 0);
  }
  test_trace_free_list(paths, n);
  assert_int_equal(found_cupti, 1);
  assert_int_equal(found_comm, 1);
}

/* The text of string id `id`, joined over its records. */
static void string_of(const test_trace *t, uint32_t id, char *out, size_t n) {
  size_t len = 0;
  out[0] = 0;
  for (size_t i = 0; i < t->count; i++) {
    const topo_rec_string *s = &t->records[i].string;
    if (s->type != TOPO_REC_STRING || s->id != id) continue;
    if (len + s->len < n) {
      memcpy(out + len, s->text, s->len);
      len += s->len;
      out[len] = 0;
    }
    if (s->flags & TOPO_STRING_F_LAST) break;
  }
}

/* The span records of the CUPTI trace, in file order. */
static size_t spans(const test_trace *t, const topo_rec_cupti **out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < t->count && n < max; i++)
    if (t->records[i].cupti.type == TOPO_REC_CUPTI) out[n++] = &t->records[i].cupti;
  return n;
}

static size_t kernels(const test_trace *t) {
  const topo_trace_record **k;
  size_t n = test_trace_select(t, TOPO_REC_KERNEL, &k);
  free(k);
  return n;
}

static void assert_never_held(void) {
  fake_cupti_calls k = calls();
  assert_int_equal(k.held_outside_probe, 0);
  assert_int_equal(k.subscribed, 0);
  assert_int_equal(k.unsubscribe, k.subscribe_ok);
  assert_true(k.max_hold_ns < 100000000ull); /* a probe, not a span */
}

static void test_bad_mode_warns_once_and_records_windows(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_CUPTI", "sometimes", 1);
  setenv("TOPO_PROFILER_CUPTI_PERIOD_S", "1", 1); /* no step: a window 1 s later */
  topo_host_profiler p;
  init(&p, 0x90);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  assert_true(topo_host_log_contains("TOPO_PROFILER_CUPTI=\"sometimes\" ignored"));
  /* the default, window: the schedule of whole steps, loaded at the large collective */
  assert_true(topo_host_log_contains("windows of 4 whole steps"));
  WAIT_UNTIL(k.kernel_enabled, 3000);
  finalize(&p);
  test_trace c, comm;
  read_traces(&c, &comm);
  const topo_rec_cupti *sp[8];
  assert_int_equal(spans(&c, sp, 8), 1);
  assert_int_equal(sp[0]->state, TOPO_CUPTI_RECORDED);
  assert_int_equal(sp[0]->window, TOPO_CUPTI_WINDOW_TIME);
  test_trace_free(&c);
  test_trace_free(&comm);
}

static void test_kernels_and_copies_reach_a_process_wide_trace(void **s) {
  (void)s;
  fake_cupti_copy_fn copy = (fake_cupti_copy_fn)dlsym(fake, "fake_cupti_copy");
  fake_cupti_add_dropped_fn add_dropped =
      (fake_cupti_add_dropped_fn)dlsym(fake, "fake_cupti_add_dropped");
  topo_host_profiler p;
  int64_t before = topo_clock_monotonic_ns();
  init(&p, 0x99);
  const char *gemm =
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1";
  const char *nccl = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
  assert_true(kernel(gemm, 1000, 5000, 7, 0, 11));
  assert_true(kernel(nccl, 4000, 9000, 13, 0, 12));
  assert_true(kernel(gemm, 5100, 9100, 7, 0, 13));
  assert_true(copy(0, 1 << 20, 9200, 9400, 7, 0));
  assert_true(copy(1, 4096, 9500, 9510, 7, 0));
  assert_true(kernel("unfinished at a flush", 0, 0, 7, 0, 14)); /* CUPTI: 0 timestamps, not kept */
  add_dropped(5);
  one_collective(&p);
  assert_never_held();
  finalize(&p);
  int64_t after = topo_clock_monotonic_ns();
  assert_never_held();
  fake_cupti_calls k = calls();
  assert_int_equal(k.register_callbacks, 1);
  assert_int_equal(k.enable, 3);
  assert_int_equal(k.disable, 3);
  assert_int_equal(k.kernel_enabled, 0);

  test_trace c, comm;
  read_traces(&c, &comm);
  assert_true(c.has_footer);
  assert_int_equal(c.header.comm_hash, 0);
  assert_int_equal(c.header.rank, -1);
  assert_true(c.header.flags & TOPO_TRACE_F_CUPTI);
  int64_t off = c.header.cupti_minus_realtime_ns;
  assert_true(off > FAKE_CUPTI_CLOCK_OFFSET_NS - 50000000 &&
              off < FAKE_CUPTI_CLOCK_OFFSET_NS + 50000000);
  const topo_trace_record **kr;
  size_t nk = test_trace_select(&c, TOPO_REC_KERNEL, &kr);
  assert_int_equal(nk, 5);
  char name[256];
  assert_int_equal(kr[0]->kernel.kind, TOPO_KERNEL_COMPUTE);
  assert_int_equal(kr[0]->kernel.gpu_start_ns, 1000);
  assert_int_equal(kr[0]->kernel.gpu_stop_ns, 5000);
  assert_int_equal(kr[0]->kernel.stream_id, 7);
  assert_int_equal(kr[0]->kernel.correlation, 11);
  string_of(&c, kr[0]->kernel.name_id, name, sizeof name);
  assert_string_equal(name, gemm); /* longer than 48: several string records */
  assert_int_equal(kr[1]->kernel.kind, TOPO_KERNEL_NCCL);
  string_of(&c, kr[1]->kernel.name_id, name, sizeof name);
  assert_string_equal(name, nccl);
  assert_int_equal(kr[2]->kernel.name_id, kr[0]->kernel.name_id); /* interned once */
  assert_int_equal(kr[3]->kernel.kind, TOPO_KERNEL_MEMCPY);
  assert_int_equal(kr[3]->kernel.bytes, 1 << 20);
  assert_int_equal(kr[4]->kernel.kind, TOPO_KERNEL_MEMSET);
  assert_int_equal(kr[4]->kernel.bytes, 4096);
  assert_int_equal(c.footer.dropped[TOPO_DROP_CUPTI], 6); /* 5 CUPTI said + the unfinished one */
  const topo_trace_record **strs;
  assert_int_equal(test_trace_select(&c, TOPO_REC_STRING, &strs), 2 + 1); /* gemm: 2, nccl: 1 */
  /* one span, from init to finalize, with what it delivered */
  const topo_rec_cupti *sp[8];
  assert_int_equal(spans(&c, sp, 8), 1);
  assert_int_equal(sp[0]->state, TOPO_CUPTI_RECORDED);
  assert_true(sp[0]->cpu_start_ns >= before && sp[0]->cpu_start_ns < sp[0]->cpu_stop_ns);
  assert_true(sp[0]->cpu_stop_ns <= after);
  assert_int_equal(sp[0]->records, 5);
  assert_int_equal(sp[0]->dropped, 6);
  assert_int_equal(sp[0]->name_id, 0);
  /* the comm trace says CUPTI was on and still has its collective */
  assert_true(comm.header.flags & TOPO_TRACE_F_CUPTI);
  const topo_trace_record **colls;
  assert_int_equal(test_trace_select(&comm, TOPO_REC_COLL, &colls), 1);
  free(kr);
  free(strs);
  free(colls);
  test_trace_free(&c);
  test_trace_free(&comm);
}

static void test_client_there_first_is_declined_and_left_whole(void **s) {
  (void)s;
  unsetenv("TOPO_PROFILER_CUPTI");                /* the default */
  setenv("TOPO_PROFILER_CUPTI_PERIOD_S", "1", 1); /* no step: the first start 1 s after load */
  assert_true(other_attach(1));
  topo_host_profiler p;
  init(&p, 0x9a);
  assert_true(kernel("gemm", 100, 200, 7, 0, 1)); /* the other client's */
  one_collective(&p);
  WAIT_UNTIL(k.subscribe_refused >= 1, 3000);
  finalize(&p);
  fake_cupti_calls k = calls();
  assert_int_equal(k.subscribe_refused, 1);
  assert_int_equal(k.register_callbacks, 0);
  assert_int_equal(k.enable, 0);
  assert_int_equal(k.disable, 0);
  assert_int_equal(k.flush, 0);
  assert_int_equal(k.owner, FAKE_CUPTI_OWNER_OTHER);
  assert_true(k.kernel_enabled && k.memcpy_enabled && k.memset_enabled);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
  other_detach();
  assert_int_equal(other_records(), 1);

  test_trace c, comm;
  read_traces(&c, &comm);
  const topo_rec_cupti *sp[8];
  assert_int_equal(spans(&c, sp, 8), 1);
  assert_int_equal(sp[0]->state, TOPO_CUPTI_DECLINED);
  assert_int_equal(sp[0]->cpu_start_ns, sp[0]->cpu_stop_ns);
  assert_int_equal(sp[0]->name_id, 0); /* a subscriber topo cannot name */
  assert_int_equal(kernels(&c), 0);
  assert_true(comm.header.flags & TOPO_TRACE_F_CUPTI);
  test_trace_free(&c);
  test_trace_free(&comm);
}

static void test_injected_tool_is_declined_without_touching_cupti(void **s) {
  (void)s;
  setenv("CUDA_INJECTION64_PATH", "/opt/nsight-systems/target/libToolsInjection64.so", 1);
  setenv("TOPO_PROFILER_CUPTI", "window", 1);
  setenv("TOPO_PROFILER_CUPTI_PERIOD_S", "1", 1); /* no step: the first start 1 s after load */
  topo_host_profiler p;
  init(&p, 0x9c);
  for (int waited = 0; waited < 3000 && !declined_written(); waited += 10) sleep_ms(10);
  finalize(&p);
  fake_cupti_calls k = calls();
  assert_int_equal(k.subscribe, 0);
  assert_int_equal(k.register_callbacks + k.enable + k.disable + k.flush, 0);
  test_trace c, comm;
  read_traces(&c, &comm);
  const topo_rec_cupti *sp[8];
  assert_int_equal(spans(&c, sp, 8), 1);
  assert_int_equal(sp[0]->state, TOPO_CUPTI_DECLINED);
  char who[256];
  string_of(&c, sp[0]->name_id, who, sizeof who);
  assert_string_equal(who,
                      "CUDA_INJECTION64_PATH=/opt/nsight-systems/target/libToolsInjection64.so");
  test_trace_free(&c);
  test_trace_free(&comm);
}

static void test_client_arriving_mid_span_is_yielded_to_and_left_whole(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_CUPTI", "on", 1);
  setenv("TOPO_PROFILER_CUPTI_PERIOD_S", "1", 1);
  topo_host_profiler p;
  int64_t t0 = topo_clock_monotonic_ns();
  init(&p, 0x9d);
  assert_true(kernel("before", 100, 200, 7, 0, 1));
  assert_true(other_attach(1));                    /* Kineto starts: its callbacks replace topo's */
  assert_true(kernel("early", 250, 260, 7, 0, 4)); /* the other client's, before topo notices */
  fake_cupti_calls at = calls();
  assert_int_equal(at.owner, FAKE_CUPTI_OWNER_OTHER);
  assert_int_equal(at.flush_period_ms, 10); /* topo's span: CUPTI's worker hands back buffers */
  int64_t attached = topo_clock_monotonic_ns();
  WAIT_UNTIL(k.subscribe_refused >= 1, 2000); /* topo's next probe noticed */
  int64_t noticed = topo_clock_monotonic_ns();
  assert_true(kernel("during", 300, 400, 7, 0, 2)); /* the other client's */
  WAIT_UNTIL(k.subscribe_refused >= 2, 2500);       /* the next period: still there, declined */
  fake_cupti_calls mid = calls();
  assert_int_equal(mid.register_callbacks, at.register_callbacks);
  assert_int_equal(mid.enable, at.enable);
  assert_int_equal(mid.disable, at.disable);
  assert_int_equal(mid.owner, FAKE_CUPTI_OWNER_OTHER);
  assert_true(mid.kernel_enabled && mid.memcpy_enabled && mid.memset_enabled);
  assert_int_equal(mid.forced_flush_other, 0); /* its queued work keeps its timestamps */
  assert_int_equal(mid.other_lost, 0);         /* none of its records went into a buffer of ours */
  assert_int_equal(mid.flush_other, 0);        /* nor were its buffers handed to it unasked */
  assert_int_equal(mid.flush_period_ms, 0);    /* CUPTI's worker off again */
  other_detach(); /* Kineto's trace ends: it disables its kinds and unsubscribes */
  assert_true(other_records() >= 2);                              /* "early" and "during" */
  WAIT_UNTIL(k.register_callbacks > at.register_callbacks, 2500); /* topo is back */
  assert_true(kernel("after", 500, 600, 7, 0, 3));
  finalize(&p);
  assert_never_held();

  test_trace c, comm;
  read_traces(&c, &comm);
  const topo_rec_cupti *sp[8];
  size_t n = spans(&c, sp, 8);
  assert_true(n >= 3);
  assert_int_equal(sp[0]->state, TOPO_CUPTI_YIELDED);
  assert_true(sp[0]->cpu_start_ns >= t0);
  assert_true(sp[0]->cpu_stop_ns <= noticed); /* complete up to the last probe that was alone */
  assert_true(sp[0]->cpu_stop_ns > attached - 600000000LL);
  assert_int_equal(sp[0]->records, 1);
  for (size_t i = 1; i + 1 < n; i++) assert_int_equal(sp[i]->state, TOPO_CUPTI_DECLINED);
  assert_int_equal(sp[n - 1]->state, TOPO_CUPTI_RECORDED);
  assert_int_equal(sp[n - 1]->records, 1);
  const topo_trace_record **kr;
  assert_int_equal(test_trace_select(&c, TOPO_REC_KERNEL, &kr), 2);
  char name[64];
  string_of(&c, kr[0]->kernel.name_id, name, sizeof name);
  assert_string_equal(name, "before");
  string_of(&c, kr[1]->kernel.name_id, name, sizeof name);
  assert_string_equal(name, "after");
  free(kr);
  test_trace_free(&c);
  test_trace_free(&comm);
}

static void test_windows_repeat_with_their_length(void **s) {
  (void)s;
  unsetenv("TOPO_PROFILER_CUPTI"); /* the default: window; without a step, of fixed length */
  setenv("TOPO_PROFILER_CUPTI_WINDOW_MS", "50", 1);
  setenv("TOPO_PROFILER_CUPTI_PERIOD_S", "1", 1);
  topo_host_profiler p;
  init(&p, 0x9e);
  int injected = 0, last_window = -1;
  /* Three windows seen open (the first may close before the file it follows appears: a loaded
   * machine). */
  for (int waited = 0; injected < 3 && waited < 6000; waited += 2) {
    fake_cupti_calls k = calls();
    int window = (k.enable + 2) / 3;
    if (k.kernel_enabled && window != last_window && kernel("w", 1, 2, 7, 0, (uint32_t)window)) {
      injected++;
      last_window = window;
    }
    sleep_ms(2);
  }
  assert_true(injected >= 3);
  WAIT_UNTIL(!k.kernel_enabled, 1000); /* the last one closed on its own */
  finalize(&p);
  assert_never_held();
  test_trace c, comm;
  read_traces(&c, &comm);
  const topo_rec_cupti *sp[8];
  size_t n = spans(&c, sp, 8);
  assert_true(n >= 3);
  uint64_t records = 0;
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(sp[i]->state, TOPO_CUPTI_RECORDED);
    assert_int_equal(sp[i]->window, TOPO_CUPTI_WINDOW_TIME);
    records += sp[i]->records;
    if (i >= 3) continue; /* a fourth may be cut short by finalize */
    int64_t len = sp[i]->cpu_stop_ns - sp[i]->cpu_start_ns;
    if (len < 50000000LL || len > 250000000LL)
      fail_msg("window %zu lasted %lld ns", i, (long long)len);
    if (i > 0) {
      int64_t gap = sp[i]->cpu_start_ns - sp[i - 1]->cpu_start_ns;
      if (gap < 950000000LL || gap > 1250000000LL)
        fail_msg("windows %lld ns apart", (long long)gap);
    }
  }
  assert_true(injected >= 3);
  assert_int_equal(records, (uint64_t)injected);
  assert_int_equal(kernels(&c), (size_t)injected);
  test_trace_free(&c);
  test_trace_free(&comm);
}

static void large_collective(topo_host_profiler *p) {
  drv_op op;
  memset(&op, 0, sizeof op);
  op.func = "AllReduce";
  op.dtype = "ncclBfloat16";
  op.algo = "RING";
  op.proto = "SIMPLE";
  op.count = 16u << 20; /* 32 MiB */
  op.nch = 4;
  op.peer = -1;
  drv_run(p, &op);
}

/* load + init without starting anything: the `window` mode's start waits for traffic. */
static void init_quiet(topo_host_profiler *p, uint64_t hash) {
  assert_int_equal(topo_host_profiler_load(p, TOPO_TEST_PROFILER_SO, TOPO_NCCL_2_28), TOPO_OK);
  assert_int_equal(topo_host_profiler_init(p, hash, NULL, 1, 2, 0, topo_host_log), ncclSuccess);
  assert_non_null(p->ctx);
}

/* The default mode touches CUPTI first at the first large collective; without a step the first
 * window (of fixed length) opens min(10 s, period) after it; small collectives before it change
 * nothing. */
static void test_first_window_opens_at_the_first_large_collective(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_CUPTI", "window", 1);
  setenv("TOPO_PROFILER_CUPTI_WINDOW_MS", "30", 1);
  setenv("TOPO_PROFILER_CUPTI_PERIOD_S", "2", 1);
  topo_host_profiler p;
  init_quiet(&p, 0xa1);
  one_collective(&p); /* small: CUPTI stays untouched */
  sleep_ms(100);
  assert_int_equal(calls().subscribe, 0);
  assert_false(have_cupti_stream());
  int64_t issued = topo_clock_monotonic_ns();
  large_collective(&p);
  wait_for_cupti_stream(); /* loaded at the large collective */
  WAIT_UNTIL(k.kernel_enabled, 4000);
  assert_true(kernel("training", 1, 2, 7, 0, 1));
  WAIT_UNTIL(k.disable >= 3, 2000); /* its window closed */
  finalize(&p);
  assert_never_held();
  test_trace c, comm;
  read_traces(&c, &comm);
  const topo_rec_cupti *sp[8];
  assert_int_equal(spans(&c, sp, 8), 1);
  assert_int_equal(sp[0]->state, TOPO_CUPTI_RECORDED);
  assert_int_equal(sp[0]->window, TOPO_CUPTI_WINDOW_TIME);
  assert_true(sp[0]->cpu_start_ns >= issued + 2000000000LL); /* it waited for a step */
  assert_true(sp[0]->cpu_stop_ns - sp[0]->cpu_start_ns >= 30000000LL);
  assert_int_equal(sp[0]->records, 1);
  int64_t off = c.header.cupti_minus_realtime_ns; /* the clock offset, taken at the late load */
  assert_true(off > FAKE_CUPTI_CLOCK_OFFSET_NS - 50000000 &&
              off < FAKE_CUPTI_CLOCK_OFFSET_NS + 50000000);
  test_trace_free(&c);
  test_trace_free(&comm);
}

/* Without large collectives CUPTI is loaded one period after init (its first window a period
 * later still, no step being known); the first large collective after that window closed starts
 * the schedule over: its next window is again a first one, not one a doubled gap later. */
static void test_window_one_period_after_init_then_starts_over_at_the_first_large_collective(
    void **s) {
  (void)s;
  setenv("TOPO_PROFILER_CUPTI", "window", 1);
  setenv("TOPO_PROFILER_CUPTI_WINDOW_MS", "30", 1);
  setenv("TOPO_PROFILER_CUPTI_PERIOD_S", "1", 1);
  topo_host_profiler p;
  int64_t t0 = topo_clock_monotonic_ns();
  init_quiet(&p, 0xa2);
  one_collective(&p);
  sleep_ms(500);
  fake_cupti_calls early = calls();
  if (topo_clock_monotonic_ns() - t0 < 950000000LL) /* else a stall made the look late */
    assert_int_equal(early.subscribe, 0);
  WAIT_UNTIL(k.kernel_enabled, 4000);
  WAIT_UNTIL(k.disable >= 3, 2000);
  int64_t issued = topo_clock_monotonic_ns();
  large_collective(&p);
  WAIT_UNTIL(k.enable >= 6, 3000);
  finalize(&p);
  assert_never_held();
  test_trace c, comm;
  read_traces(&c, &comm);
  const topo_rec_cupti *sp[8];
  assert_true(spans(&c, sp, 8) >= 2);
  assert_int_equal(sp[0]->state, TOPO_CUPTI_RECORDED);
  assert_true(sp[0]->cpu_start_ns >= t0 + 2000000000LL);     /* never before load + a period */
  assert_true(sp[1]->cpu_start_ns >= issued + 1000000000LL); /* a first window's wait again */
  test_trace_free(&c);
  test_trace_free(&comm);
}

/* A job that ends before its CUPTI start was due: CUPTI never touched, no -cupti trace, and the
 * last finalize does not wait for a start that never came. */
static void test_job_ending_before_the_first_window_leaves_cupti_alone(void **s) {
  (void)s;
  unsetenv("TOPO_PROFILER_CUPTI"); /* the default: window */
  setenv("TOPO_PROFILER_WAIT_MS", "3000", 1);
  topo_host_profiler p;
  init_quiet(&p, 0xa3);
  one_collective(&p);
  int64_t t = topo_clock_monotonic_ns();
  finalize(&p);
  int64_t took = topo_clock_monotonic_ns() - t;
  unsetenv("TOPO_PROFILER_WAIT_MS");
  if (took > 1000000000LL) fail_msg("the last finalize took %lld ms", (long long)(took / 1000000));
  fake_cupti_calls k = calls();
  assert_int_equal(k.subscribe + k.register_callbacks + k.enable + k.flush, 0);
  assert_false(have_cupti_stream());
  char **paths;
  size_t n = test_trace_list(dir, &paths);
  assert_int_equal(n, 1);
  test_trace comm;
  assert_int_equal(test_trace_read(paths[0], &comm), 0);
  test_trace_free_list(paths, n);
  assert_true(comm.has_footer);
  assert_true(comm.header.flags & TOPO_TRACE_F_CUPTI); /* asked for; the report says why none */
  test_trace_free(&comm);
}

/* The first large collective wakes the writer to start CUPTI while the last finalize stops it,
 * at different distances: a start either finished before the stop (a complete -cupti trace,
 * its first window not due yet: no step, and the fallback an hour away) or never began (no
 * trace, CUPTI untouched); no window is ever left open and no finalize waits its limit. */
static void test_stop_racing_the_first_start_never_leaves_a_window_open(void **s) {
  (void)s;
  unsetenv("TOPO_PROFILER_CUPTI");
  setenv("TOPO_PROFILER_CUPTI_PERIOD_S", "3600", 1);
  setenv("TOPO_PROFILER_WAIT_MS", "5000", 1);
  int started = 0, not_started = 0;
  for (int gen = 0; gen < 24; gen++) {
    char sub[300];
    snprintf(sub, sizeof sub, "%s/g%d", dir, gen);
    assert_int_equal(mkdir(sub, 0700), 0);
    setenv("TOPO_PROFILER_DIR", sub, 1);
    fake_cupti_calls before = calls();
    topo_host_profiler p;
    init_quiet(&p, 0xb00 + (uint64_t)gen);
    large_collective(&p);
    struct timespec ts = {0, (long)(gen % 8) * 150000L}; /* 0 to 1.05 ms */
    nanosleep(&ts, NULL);
    int64_t at = topo_clock_monotonic_ns();
    finalize(&p);
    int64_t took = topo_clock_monotonic_ns() - at;
    if (took > 2500000000LL)
      fail_msg("generation %d: finalize took %lld ms", gen, (long long)(took / 1000000));
    fake_cupti_calls k = calls();
    assert_int_equal(k.kernel_enabled, 0);
    assert_int_equal(k.subscribed, 0);
    assert_int_equal(k.enable - before.enable, k.disable - before.disable);
    char **paths;
    size_t n = test_trace_list(sub, &paths);
    int cupti = 0;
    for (size_t i = 0; i < n; i++) {
      test_trace t;
      assert_int_equal(test_trace_read(paths[i], &t), 0);
      assert_true(t.has_footer);
      if (strstr(strrchr(paths[i], '/'), "-cupti")) {
        const topo_rec_cupti *sp[4];
        assert_int_equal(spans(&t, sp, 4), 0);
        cupti = 1;
      }
      test_trace_free(&t);
    }
    test_trace_free_list(paths, n);
    if (cupti) {
      started++;
      assert_int_equal(k.enable - before.enable, 0);
    } else {
      not_started++;
      assert_int_equal(k.enable - before.enable, 0);
    }
    test_trace_rmdir(sub);
  }
  setenv("TOPO_PROFILER_DIR", dir, 1);
  unsetenv("TOPO_PROFILER_WAIT_MS");
  print_message("starts finished before the stop: %d, never began: %d\n", started, not_started);
  assert_never_held();
}

/* With the trigger file at `trigger`: touching it opens a window at once, removing it closes it. */
static void trigger_records_while_it_exists(const char *trigger) {
  setenv("TOPO_PROFILER_CUPTI", "window", 1);
  setenv("TOPO_PROFILER_CUPTI_WINDOW_MS", "20", 1);
  setenv("TOPO_PROFILER_CUPTI_PERIOD_S", "3600", 1);
  setenv("TOPO_PROFILER_CUPTI_TRIGGER", trigger, 1);
  topo_host_profiler p;
  init(&p, 0x9f); /* CUPTI loaded at once; no window (no step, the fallback an hour away) */
  sleep_ms(50);
  assert_false(kernel("lost", 1, 2, 7, 0, 1));
  FILE *f = fopen(trigger, "w");
  assert_non_null(f);
  fclose(f);
  WAIT_UNTIL(k.kernel_enabled, 2000);
  int64_t opened = topo_clock_monotonic_ns();
  assert_true(kernel("triggered", 1, 2, 7, 0, 2));
  sleep_ms(100);
  assert_int_equal(calls().kernel_enabled, 1);
  unlink(trigger);
  WAIT_UNTIL(k.disable >= 3, 2000);
  finalize(&p);
  test_trace c, comm;
  read_traces(&c, &comm);
  const topo_rec_cupti *sp[8];
  assert_int_equal(spans(&c, sp, 8), 1);
  assert_int_equal(sp[0]->state, TOPO_CUPTI_RECORDED);
  assert_int_equal(sp[0]->window, TOPO_CUPTI_WINDOW_TRIGGER);
  assert_int_equal(sp[0]->records, 1);
  assert_true(sp[0]->cpu_start_ns <= opened);
  assert_true(sp[0]->cpu_stop_ns - sp[0]->cpu_start_ns >= 100000000LL);
  assert_int_equal(kernels(&c), 1);
  test_trace_free(&c);
  test_trace_free(&comm);
}

/* A collective of `func` on `bytes` (bf16 elements; AllGather as bytes), number `seq`. */
static void collective(topo_host_profiler *p, const char *func, uint64_t bytes, uint64_t seq) {
  drv_op op;
  memset(&op, 0, sizeof op);
  int ag = !strcmp(func, "AllGather");
  op.func = func;
  op.dtype = ag ? "ncclInt8" : "ncclBfloat16";
  op.algo = "RING";
  op.proto = "SIMPLE";
  op.count = ag ? bytes : bytes / 2;
  op.seq = seq;
  op.nch = 2;
  op.peer = -1;
  uint64_t now = (uint64_t)topo_clock_realtime_ns();
  drv_set_gpu(&op, now, 100, 20000);
  drv_run(p, &op);
}

/* The default mode on a job with a step (a long host gap, then five AllReduces and a small
 * AllGather): once the step is steady a window opens before a step begins and closes when it
 * holds whole steps; the trace has the step records, each naming a step's first AllReduce and the
 * AllGather before it, and the window's own boundaries flagged inside it. Structural checks only:
 * however late a loaded machine wakes the writer, the window counts its steps from where it
 * opened. */
static void test_windows_hold_whole_steps_of_a_steady_job(void **s) {
  (void)s;
  unsetenv("TOPO_PROFILER_CUPTI");                   /* the default: window */
  setenv("TOPO_PROFILER_CUPTI_PERIOD_S", "3600", 1); /* no fixed window within the test */
  topo_host_profiler p;
  init_quiet(&p, 0xa4);
  uint64_t ar = 0, ag = 0;
  int opened = 0, closed = 0, injected = 0;
  for (int step = 0; step < 120 && !closed; step++) {
    sleep_ms(190); /* forward pass, optimizer: long beside what a loaded machine adds to a sleep
                    * (steady: step durations within a factor of 1.5) */
    fake_cupti_calls k = calls();
    if (k.kernel_enabled && kernel("step", 1, 2, 7, 0, (uint32_t)step)) injected++;
    opened |= k.kernel_enabled;
    closed = opened && !k.kernel_enabled;
    for (int b = 0; b < 5; b++) {
      collective(&p, "AllReduce", b < 3 ? 32u << 20 : 4u << 20, ar++);
      sleep_ms(2);
    }
    collective(&p, "AllGather", 32, ag++);
  }
  finalize(&p);
  assert_true(closed);
  assert_never_held();
  test_trace c, comm;
  read_traces(&c, &comm);
  const topo_rec_cupti *sp[8];
  size_t n = spans(&c, sp, 8);
  assert_true(n >= 1);
  assert_int_equal(sp[0]->state, TOPO_CUPTI_RECORDED);
  assert_int_equal(sp[0]->window, TOPO_CUPTI_WINDOW_STEPS);
  assert_int_equal(sp[0]->period, 6);
  assert_int_equal(sp[0]->steps, 4);
  assert_true(sp[0]->step_ns > 60000000LL);
  assert_int_equal(sp[0]->records, (uint64_t)injected);
  /* the step records */
  const topo_trace_record **st;
  size_t ns = test_trace_select(&comm, TOPO_REC_STEP, &st), flagged = 0;
  assert_true(ns >= 5);
  for (size_t i = 0; i < ns; i++) {
    const topo_rec_step *r = &st[i]->step;
    assert_int_equal(r->func, 4);     /* AllReduce */
    assert_int_equal(r->cut_func, 2); /* AllGather */
    assert_int_equal(r->seq % 5, 0);  /* a step's first AllReduce */
    assert_int_equal(r->cut_comm_hash, 0xa4);
    assert_int_equal(r->period, 6);
    if (i) assert_int_equal(r->step, st[i - 1]->step.step + 1);
    if (!(r->flags & TOPO_STEP_F_WINDOW)) continue;
    /* the window's boundaries lie inside it: 4 whole steps, from the first to the fifth */
    assert_true(r->flags & TOPO_STEP_F_STEADY);
    assert_true(r->cut_cpu_start_ns >= sp[0]->cpu_start_ns);
    assert_true(r->cpu_start_ns <= sp[0]->cpu_stop_ns);
    if (!flagged++) /* it opened less than a step before the first of them (a steady step: at
                     * most 1.5 x the step's length, as a loaded machine may stretch that one) */
      assert_true(r->cut_cpu_start_ns - sp[0]->cpu_start_ns < r->step_ns + r->step_ns / 2);
  }
  assert_int_equal(flagged, 5);
  free(st);
  test_trace_free(&c);
  test_trace_free(&comm);
}

static void test_trigger_file_records_while_it_exists(void **s) {
  (void)s;
  char trigger[300];
  snprintf(trigger, sizeof trigger, "%s/record-now", dir);
  trigger_records_while_it_exists(trigger);
}

/* A trigger path of 600 bytes (three nested directories) is used whole: it was cut at 511 bytes
 * without a word, and touching the file never opened a window. */
static void test_long_trigger_path_is_used_whole(void **s) {
  (void)s;
  char trigger[700], part[256];
  int n = snprintf(trigger, sizeof trigger, "%s", dir);
  for (int level = 0; level < 3; level++) {
    memset(part, 'a' + level, 190);
    part[190] = 0;
    n += snprintf(trigger + n, sizeof trigger - (size_t)n, "/%s", part);
    assert_int_equal(mkdir(trigger, 0700), 0);
  }
  snprintf(trigger + n, sizeof trigger - (size_t)n, "/record-now");
  assert_true(strlen(trigger) > 600);
  trigger_records_while_it_exists(trigger);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
  for (int level = 0; level < 3; level++) { /* the teardown removes the directory's files only */
    *strrchr(trigger, '/') = 0;
    assert_int_equal(rmdir(trigger), 0);
  }
}

static void test_missing_cupti_writes_failed_and_carries_on(void **s) {
  (void)s;
  setenv("TOPO_PROFILER_CUPTI_LIB", "/nonexistent/libcupti.so.13", 1);
  unsetenv("TOPO_PROFILER_CUPTI"); /* the default: one INFO line, no warning */
  topo_host_profiler p;
  init(&p, 0x9b);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
  assert_true(topo_host_log_contains("CUPTI unavailable"));
  one_collective(&p);
  finalize(&p);
  test_trace c, comm;
  read_traces(&c, &comm);
  const topo_rec_cupti *sp[8];
  assert_int_equal(spans(&c, sp, 8), 1);
  assert_int_equal(sp[0]->state, TOPO_CUPTI_FAILED);
  char why[256];
  string_of(&c, sp[0]->name_id, why, sizeof why);
  assert_non_null(strstr(why, "/nonexistent/libcupti.so.13"));
  assert_int_equal(c.header.cupti_minus_realtime_ns, TOPO_TRACE_OFFSET_UNKNOWN);
  const topo_trace_record **colls;
  assert_int_equal(test_trace_select(&comm, TOPO_REC_COLL, &colls), 2); /* the large one too */
  free(colls);
  test_trace_free(&c);
  test_trace_free(&comm);
}

static void test_asked_for_cupti_that_fails_to_enable_warns_once(void **s) {
  (void)s;
  ((fake_cupti_fail_fn)dlsym(fake, "fake_cupti_fail"))(CUPTI_SUCCESS, CUPTI_ERROR_NOT_INITIALIZED);
  topo_host_profiler p;
  init(&p, 0xa0);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  assert_true(topo_host_log_contains("CUPTI unavailable"));
  one_collective(&p);
  finalize(&p);
  assert_never_held();
  test_trace c, comm;
  read_traces(&c, &comm);
  const topo_rec_cupti *sp[8];
  assert_int_equal(spans(&c, sp, 8), 1);
  assert_int_equal(sp[0]->state, TOPO_CUPTI_FAILED);
  char why[256];
  string_of(&c, sp[0]->name_id, why, sizeof why);
  assert_string_equal(why, "cuptiActivityEnable(CONCURRENT_KERNEL): CUPTI_ERROR_NOT_INITIALIZED");
  test_trace_free(&c);
  test_trace_free(&comm);
}

/* Symmetric kernels (ncclSymkDevKernel_*) are NCCL's too. */
static void test_symmetric_kernels_are_flagged_nccl(void **s) {
  (void)s;
  topo_host_profiler p;
  init(&p, 0x5e);
  const char *sym = "ncclSymkDevKernel_AllReduce_AGxLL_R_sum_bf16";
  assert_true(kernel(sym, 1000, 2000, 13, 0, 21));
  one_collective(&p);
  finalize(&p);
  test_trace c, comm;
  read_traces(&c, &comm);
  const topo_trace_record **kr;
  assert_int_equal(test_trace_select(&c, TOPO_REC_KERNEL, &kr), 1);
  assert_int_equal(kr[0]->kernel.kind, TOPO_KERNEL_NCCL);
  free(kr);
  test_trace_free(&c);
  test_trace_free(&comm);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_bad_mode_warns_once_and_records_windows), /* first: the warning is once per process */
      T(test_kernels_and_copies_reach_a_process_wide_trace),
      T(test_symmetric_kernels_are_flagged_nccl),
      T(test_client_there_first_is_declined_and_left_whole),
      T(test_injected_tool_is_declined_without_touching_cupti),
      T(test_client_arriving_mid_span_is_yielded_to_and_left_whole),
      T(test_windows_repeat_with_their_length),
      T(test_first_window_opens_at_the_first_large_collective),
      T(test_window_one_period_after_init_then_starts_over_at_the_first_large_collective),
      T(test_job_ending_before_the_first_window_leaves_cupti_alone),
      T(test_stop_racing_the_first_start_never_leaves_a_window_open),
      T(test_trigger_file_records_while_it_exists),
      T(test_windows_hold_whole_steps_of_a_steady_job),
      T(test_long_trigger_path_is_used_whole),
      T(test_missing_cupti_writes_failed_and_carries_on),
      T(test_asked_for_cupti_that_fails_to_enable_warns_once),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
