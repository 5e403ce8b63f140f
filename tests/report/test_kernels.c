// SPDX-License-Identifier: Apache-2.0
// The kernel-level analyses (tools/report/kernels/kernel_stats.h) on a hand-checkable Kineto trace,
// tests/report/data/hta-kernels.pt.trace.json: one rank, two ProfilerSteps, three streams, every
// event at a whole microsecond. Each expected figure was computed by hand and is also what
// Holistic Trace Analysis 0.6.1 printed for the same file (include_last_profiler_step=True, so it
// sees every event as topo-report does; its output: data/hta-kernels.hta.txt). Where topo-report
// departs from HTA on purpose (driver launches counted, std of one value undefined) the test says so.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernel_stats.h"
#include "report.h"
#include "report_analysis.h"
#include "report_render.h"

#define US      1000 /* ns */
#define FIXTURE TOPO_REPORT_DATA "/hta-kernels.pt.trace.json"

static rp_report rep;

static int setup(void **state) {
  (void)state;
  const char *paths[] = {FIXTURE};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  if (rp_analyze(paths, 1, &opt, &rep) != TOPO_OK || rep.nranks != 1 || !rep.ranks[0].gpu)
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  rp_report_free(&rep);
  return 0;
}

static const rp_gpu *gpu(void) { return rep.ranks[0].gpu; }

static const rp_kstat *kernel(const char *name) {
  for (size_t i = 0; i < gpu()->nkern; i++)
    if (!strcmp(gpu()->kern[i].name, name)) return &gpu()->kern[i];
  fail_msg("no kernel %s", name);
  return NULL;
}

static const rp_gstream *stream(int64_t id) {
  for (size_t i = 0; i < gpu()->nstreams; i++)
    if (gpu()->streams[i].stream == id) return &gpu()->streams[i];
  fail_msg("no stream %lld", (long long)id);
  return NULL;
}

static const rp_memkind *memkind(const char *kind) {
  for (size_t i = 0; i < gpu()->nmem; i++)
    if (!strcmp(gpu()->mem[i].kind, kind)) return &gpu()->mem[i];
  fail_msg("no memcpy kind %s", kind);
  return NULL;
}

static void test_kernel_types_follow_hta_name_patterns(void **state) {
  (void)state;
  assert_int_equal(rp_kernel_type("ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)"), RP_K_COMM);
  assert_int_equal(rp_kernel_type("void foo::ncclKernel_bar()"), RP_K_COMM);
  assert_int_equal(rp_kernel_type("Memcpy HtoD (Pageable -> Device)"), RP_K_MEMORY);
  assert_int_equal(rp_kernel_type("Memset (Device)"), RP_K_MEMORY);
  assert_int_equal(rp_kernel_type("gemm_kernel"), RP_K_COMPUTE);
  assert_int_equal(rp_kernel_type("flush_Sync_kernel"), RP_K_OTHER); /* ".*Sync" */
  assert_int_equal(rp_kernel_type("Stream Wait Event"), RP_K_OTHER);
  assert_int_equal(rp_kernel_type("my_fused_dma_kernel"), RP_K_OTHER); /* ".*dma" */
  char kind[16];
  rp_memcpy_kind("Memcpy DtoH (Device -> Pinned)", kind, sizeof kind);
  assert_string_equal(kind, "Memcpy DtoH");
  rp_memcpy_kind("Memset (Device)", kind, sizeof kind);
  assert_string_equal(kind, "Memset");
  char sn[64];
  rp_kernel_short_name("void at::native::foo<float, 4>(int, float*)", sn, sizeof sn);
  assert_string_equal(sn, "at::native::foo");
  rp_kernel_short_name("Stream Sync", sn, sizeof sn);
  assert_string_equal(sn, "Stream Sync");
}

/* HTA get_temporal_breakdown: idle 590, compute 340, non-compute 600, kernel_time 1530 us. */
static void test_temporal_breakdown_equals_hta(void **state) {
  (void)state;
  const rp_gpu *g = gpu();
  assert_int_equal(g->gpu_events, 13);
  assert_int_equal(g->last - g->first, 1530 * US);
  assert_int_equal(g->last - g->first - g->busy, 590 * US);
  assert_int_equal(g->compute, 340 * US);
  assert_int_equal(g->busy - g->compute, 600 * US);
  assert_int_equal(g->late, 0);
}

/* Per step, each step's GPU window (first to last GPU event it launched). Step 1 is what HTA
 * reports with its default (last step dropped): kernel_time 560, idle 50, compute 240 us. */
static void test_temporal_breakdown_per_step(void **state) {
  (void)state;
  const rp_gpu *g = gpu();
  assert_int_equal(g->nsteps, 2);
  const rp_gstep *s1 = &g->steps[0], *s2 = &g->steps[1];
  assert_int_equal(s1->value, 1);
  assert_int_equal(s1->stop - s1->start, 560 * US);
  assert_int_equal(s1->stop - s1->start - s1->busy, 50 * US);
  assert_int_equal(s1->compute, 240 * US);
  assert_int_equal(s1->busy - s1->compute, 270 * US);
  assert_int_equal(s2->value, 2);
  assert_int_equal(s2->stop - s2->start, 450 * US); /* the Stream Sync after it is no step's */
  assert_int_equal(s2->stop - s2->start - s2->busy, 50 * US);
  assert_int_equal(s2->compute, 100 * US);
  assert_int_equal(s2->overlap, 50 * US);
}

/* HTA get_gpu_kernel_breakdown, kernel_type table: COMMUNICATION 280, MEMORY 210, COMPUTATION 200,
 * COMPUTATION overlapping COMMUNICATION 140, COMMUNICATION overlapping MEMORY 80, COMPUTATION
 * overlapping MEMORY 0 (us); and its comm-comp overlap 28.0 % = 140 / 500. */
static void test_kernel_type_table_equals_hta(void **state) {
  (void)state;
  const rp_gpu *g = gpu();
  assert_int_equal(g->combo[RP_KT_COMM], 280 * US);
  assert_int_equal(g->combo[RP_KT_MEMORY], 210 * US);
  assert_int_equal(g->combo[RP_KT_COMPUTE], 200 * US);
  assert_int_equal(g->combo[RP_KT_COMPUTE | RP_KT_COMM], 140 * US);
  assert_int_equal(g->combo[RP_KT_COMM | RP_KT_MEMORY], 80 * US);
  assert_int_equal(g->combo[RP_KT_COMPUTE | RP_KT_MEMORY], 0);
  assert_int_equal(g->combo[7], 0);
  assert_int_equal(g->comm, 500 * US);
  assert_int_equal(g->overlap, 140 * US);
  rp_gpu_totals t;
  rp_gpu_totals_get(&rep, &t);
  assert_int_equal(t.ranks, 1);
  assert_string_equal(rp_combo_name(3), "COMPUTATION overlapping COMMUNICATION");
}

/* HTA's kernel rows: nccl 2 x (sum 500, min 200, max 300, std 70.71), gemm 3 x 100, Memcpy HtoD
 * (Pageable) sum 150 std 35.36; with num_kernels=1: gemm stays, elementwise goes to "others". */
static void test_kernel_table_and_top_rule_equal_hta(void **state) {
  (void)state;
  const rp_kstat *nccl =
      kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  assert_int_equal(nccl->type, RP_K_COMM);
  assert_int_equal(nccl->n, 2);
  assert_int_equal(nccl->sum, 500 * US);
  assert_int_equal(nccl->min, 200 * US);
  assert_int_equal(nccl->max, 300 * US);
  assert_true(fabs(sqrt(nccl->m2 / (double)(nccl->n - 1)) - 70710.678) < 0.01);
  const rp_kstat *gemm = kernel("gemm_kernel"), *ew = kernel("elementwise_kernel");
  assert_int_equal(gemm->n, 3);
  assert_int_equal(gemm->sum, 300 * US);
  assert_int_equal(ew->n, 1); /* its spread is undefined: the renderers print n/a (HTA: 0) */
  const rp_kstat *htod = kernel("Memcpy HtoD (Pageable -> Device)");
  assert_true(fabs(sqrt(htod->m2 / (double)(htod->n - 1)) - 35355.339) < 0.01);
  assert_int_equal(kernel("Stream Sync")->type, RP_K_OTHER);
  assert_true(gemm->top && ew->top && nccl->top); /* at most 10 per type: all are top */
  rp_gpu_mark_top(&rep, 1, 0.8);
  assert_true(gemm->top);
  assert_false(ew->top);
  assert_true(nccl->top);
  rp_gpu_mark_top(&rep, 10, 0.8);
  assert_true(ew->top);
}

/* HTA get_idle_time_breakdown: stream 7 host wait 810, kernel wait 20, other 50; stream 20 host
 * wait 700, other 100; stream 21 (one event) no idle time. */
static void test_idle_breakdown_per_stream_equals_hta(void **state) {
  (void)state;
  const rp_gstream *s7 = stream(7), *s20 = stream(20), *s21 = stream(21);
  assert_int_equal(s7->idle[RP_IDLE_HOST], 810 * US);
  assert_int_equal(s7->gaps[RP_IDLE_HOST], 4);
  assert_int_equal(s7->idle[RP_IDLE_KERNEL], 20 * US);
  assert_int_equal(s7->idle[RP_IDLE_OTHER], 50 * US);
  assert_int_equal(s7->events, 9); /* 8 kernels/copies + the Stream Sync (not in the idle gaps) */
  assert_int_equal(s20->idle[RP_IDLE_HOST], 700 * US);
  assert_int_equal(s20->idle[RP_IDLE_KERNEL], 0);
  assert_int_equal(s20->idle[RP_IDLE_OTHER], 100 * US);
  assert_int_equal(s21->idle[0] + s21->idle[1] + s21->idle[2], 0);
  assert_int_equal(s21->gaps[0] + s21->gaps[1] + s21->gaps[2], 0);
}

/* HTA get_cuda_kernel_launch_stats (rank 0): delays 80, 170, 10, 50, 185, 80, 170, 80 us on stream
 * 7, 130 on 20, 70 on 21. topo-report also counts the two cuLaunchKernelEx launches (90 and
 * 120 us on stream 20), which HTA's launch statistics leave out and its queue length counts.
 * HTA get_queue_length_summary: stream 7 16 points mean 0.875 std 0.7188 max 2; stream 20 6
 * points mean 0.5 max 1; stream 21 2 points mean 0.5. */
static void test_launch_delay_and_queue_equal_hta(void **state) {
  (void)state;
  const rp_gstream *s7 = stream(7), *s20 = stream(20), *s21 = stream(21);
  assert_int_equal(s7->delay.n, 8);
  assert_true(fabs(s7->delay.sum - 825.0 * US) < 1);
  assert_int_equal(s7->delay.max, 185 * US);
  assert_int_equal(rp_quant_get(&s7->delay, 0.5), 80 * US);
  assert_int_equal(s7->delay_outliers, 3);   /* > 100 us */
  assert_int_equal(s7->runtime_outliers, 1); /* the 60 us cudaMemcpyAsync */
  assert_int_equal(s7->short_kernels, 1);    /* its copy took 50 us */
  assert_int_equal(s20->delay.n, 3);
  assert_true(fabs(s20->delay.sum - (90.0 + 120 + 130) * US) < 1);
  assert_int_equal(s21->delay.n, 1);
  assert_int_equal(s21->delay.max, 70 * US);
  assert_int_equal(s7->q_n, 16);
  assert_true(fabs(s7->q_sum / (double)s7->q_n - 0.875) < 1e-12);
  assert_int_equal(s7->q_max, 2);
  assert_int_equal(s7->q_min, 0);
  double m = s7->q_sum / 16, sd = sqrt((s7->q_sumsq - 16 * m * m) / 15);
  assert_true(fabs(sd - 0.718795) < 1e-6);
  assert_int_equal(s20->q_n, 6);
  assert_true(fabs(s20->q_sum / 6 - 0.5) < 1e-12);
  assert_int_equal(s20->q_max, 1);
  assert_int_equal(s21->q_n, 2);
  assert_int_equal(s7->late + s20->late + s21->late, 0);
}

/* HTA get_memory_bw_summary: Memcpy HtoD 4 points mean 35 min 20 max 60 GB/s; DtoH 80; Memset 0.4. */
static void test_memcpy_bandwidth_equals_hta(void **state) {
  (void)state;
  const rp_memkind *h = memkind("Memcpy HtoD"), *d = memkind("Memcpy DtoH"), *s = memkind("Memset");
  assert_int_equal(h->n, 3);
  assert_int_equal(h->bytes, 7000000);
  assert_int_equal(h->dur, 250 * US);
  assert_int_equal(h->s_n, 4);
  assert_true(fabs(h->s_sum / 4 - 35.0) < 1e-9);
  assert_true(fabs(h->s_min - 20.0) < 1e-9 && fabs(h->s_max - 60.0) < 1e-9);
  assert_int_equal(d->s_n, 1);
  assert_true(fabs(d->s_max - 80.0) < 1e-9);
  assert_int_equal(d->bytes, 8000000);
  assert_int_equal(s->s_n, 1);
  assert_true(fabs(s->s_max - 0.4) < 1e-9);
}

static char *render(void (*fn)(const rp_report *, FILE *), const rp_report *r) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  fn(r, f);
  fclose(f);
  return buf;
}

static void csv_temporal(const rp_report *r, FILE *f) {
  rp_render_csv_table(r, RP_CSV_TEMPORAL, f);
}
static void csv_kernels(const rp_report *r, FILE *f) { rp_render_csv_table(r, RP_CSV_KERNELS, f); }

/* Undefined figures are null in JSON, never 0. */
static void test_json_says_null_where_undefined(void **state) {
  (void)state;
  char *j = render(rp_render_json, &rep);
  assert_non_null(strstr(j, "\"kernel_analyses\":{"));
  assert_non_null(strstr(
      j,
      "\"name\":\"elementwise_kernel\",\"type\":\"computation\",\"top\":true,\"count\":1,"
      "\"total_ns\":40000,\"min_ns\":40000,\"max_ns\":40000,\"mean_ns\":40000,\"std_ns\":null}"));
  assert_non_null(
      strstr(j,
             "{\"stream\":21,\"events\":1,\"idle_ns\":0,\"host_wait_ns\":0,\"host_wait_gaps\":0,"
             "\"host_wait_share\":null"));
  assert_non_null(strstr(
      j, "\"kernel_type\":\"COMMUNICATION overlapping MEMORY\",\"ns\":80000,\"share\":0.087912}"));
  free(j);
  char *c = render(csv_temporal, &rep);
  assert_non_null(strstr(c, "\n0,,1530000,590000,340000,600000,0.385621,0.222222,0.392157\n"));
  free(c);
  c = render(csv_kernels, &rep);
  assert_non_null(strstr(c, "rank,kernel_id,type,kernel,top,"));
  assert_non_null(
      strstr(c, ",computation,\"elementwise_kernel\",1,1,40000,40000.0,40000,40000,\n"));
  free(c);
}

/* The line of `text` holding `key`, its runs of spaces squashed to one (into buf). */
static const char *squashed_line(const char *text, const char *key, char *buf, size_t len) {
  const char *p = strstr(text, key);
  if (!p) return "";
  while (p > text && p[-1] != '\n') p--;
  size_t n = 0;
  for (; *p && *p != '\n' && n + 1 < len; p++)
    if (*p != ' ' || (n && buf[n - 1] != ' ')) buf[n++] = *p;
  buf[n] = 0;
  return buf;
}

/* diff: one row per kernel name of either run; the same run twice changes nothing. */
static void test_kernel_diff_lists_every_name(void **state) {
  (void)state;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  rp_render_kernel_diff(&rep, &rep, f);
  fclose(f);
  assert_non_null(strstr(buf, "gemm_kernel"));
  char line[256];
  assert_string_equal(squashed_line(buf, "gemm_kernel", line, sizeof line),
                      "gemm_kernel 3 3 300.00 us 300.00 us +0 ns =");
  assert_null(strstr(buf, " -\n"));
  free(buf);
  rp_report other;
  const char *paths[] = {TOPO_REPORT_DATA "/ddp-kineto-rank0-excerpt.pt.trace.json"};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  assert_int_equal(rp_analyze(paths, 1, &opt, &other), TOPO_OK);
  f = open_memstream(&buf, &len);
  rp_render_kernel_diff(&rep, &other, f);
  fclose(f);
  assert_string_equal(squashed_line(buf, "gemm_kernel", line, sizeof line),
                      "gemm_kernel 3 0 300.00 us 0 ns -300.00 us -"); /* gemm gone */
  free(buf);
  rp_report_free(&other);
}

/* Events out of file order within the reorder window give the same figures; many events of few
 * names keep one row per name. */
static void test_out_of_order_and_many_events(void **state) {
  (void)state;
  rp_gpu *g = rp_gpu_new(NULL, 0, 64);
  assert_non_null(g);
  const int n = 100000;
  for (int i = 0; i < n; i++) { /* pairs swapped: 1, 0, 3, 2, ... */
    int k = i ^ 1;
    rp_kevent launch = {
        "cudaLaunchKernel", "cuda_runtime", (int64_t)k * 10 * US, 1 * US, -1, k, -1, -1};
    rp_kevent kern = {k % 2 ? "odd_kernel" : "even_kernel",
                      "kernel",
                      (int64_t)k * 10 * US + 2 * US,
                      5 * US,
                      7,
                      k,
                      -1,
                      -1};
    rp_gpu_event(g, &launch);
    rp_gpu_event(g, &kern);
  }
  rp_gpu_finish(g);
  assert_int_equal(g->nkern, 2);
  assert_int_equal(g->kern[0].n + g->kern[1].n, n);
  assert_int_equal(g->busy, (int64_t)n * 5 * US);
  assert_int_equal(g->late, 0);
  assert_int_equal(g->nstreams, 1);
  const rp_gstream *s = &g->streams[0];
  assert_int_equal(s->late, 0);
  assert_int_equal(s->idle[RP_IDLE_OTHER], 0);
  assert_int_equal(s->idle[RP_IDLE_KERNEL], 0);
  assert_int_equal(s->idle[RP_IDLE_HOST],
                   (int64_t)(n - 1) * 5 * US); /* each launch after the previous end */
  assert_int_equal(s->delay.n, n);
  assert_int_equal(s->delay.max, 1 * US);
  assert_int_equal(s->q_max, 1);
  assert_false(g->failed);
  rp_gpu_free(g);
}

/* PyTorch 1.x writes each kernel before its launch call: the call is still found (the kernel
 * waits in the stream's reorder window), so the gap before it is a host wait and it has a delay. */
static void test_launch_call_written_after_its_kernel(void **state) {
  (void)state;
  rp_gpu *g = rp_gpu_new(NULL, 0, 64);
  assert_non_null(g);
  for (int k = 0; k < 1000; k++) {
    rp_kevent kern = {"gemm_kernel", "kernel", (int64_t)k * 10 * US + 2 * US, 5 * US, 7, k, -1, -1};
    rp_kevent launch = {
        "cudaLaunchKernel", "cuda_runtime", (int64_t)k * 10 * US, 1 * US, -1, k, -1, -1};
    rp_gpu_event(g, &kern);
    rp_gpu_event(g, &launch);
  }
  rp_gpu_finish(g);
  const rp_gstream *s = &g->streams[0];
  assert_int_equal(g->matched, 1000);
  assert_int_equal(s->idle[RP_IDLE_HOST], 999 * 5 * US);
  assert_int_equal(s->gaps[RP_IDLE_HOST], 999);
  assert_int_equal(s->delay.n, 1000);
  assert_int_equal(s->delay.max, 1 * US);
  assert_int_equal(s->late, 0);
  rp_gpu_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernel_types_follow_hta_name_patterns),
      cmocka_unit_test(test_temporal_breakdown_equals_hta),
      cmocka_unit_test(test_temporal_breakdown_per_step),
      cmocka_unit_test(test_kernel_type_table_equals_hta),
      cmocka_unit_test(test_kernel_table_and_top_rule_equal_hta),
      cmocka_unit_test(test_idle_breakdown_per_stream_equals_hta),
      cmocka_unit_test(test_launch_delay_and_queue_equal_hta),
      cmocka_unit_test(test_memcpy_bandwidth_equals_hta),
      cmocka_unit_test(test_json_says_null_where_undefined),
      cmocka_unit_test(test_kernel_diff_lists_every_name),
      cmocka_unit_test(test_out_of_order_and_many_events),
      cmocka_unit_test(test_launch_call_written_after_its_kernel),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
