// SPDX-License-Identifier: Apache-2.0
// The Kineto / Chrome trace JSON importer: a PyTorch profiler trace alone gives the overlap
// figures (NCCL kernels by name, compute kernels, memory copies, ProfilerStep#N steps, rank from
// distributedInfo, baseTimeNanoseconds), exact to the ns from µs text; malformed JSON never crashes.
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
#include "trace_fixture.h"

static const char kineto[] =
    "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H200\"}],\n"
    " \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3, \"world_size\": 4},\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#7\", \"pid\": 11, \"tid\": 11,"
    "   \"ts\": 1000.000, \"dur\": 10.000},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 11, \"tid\": 11, \"ts\": 1000.1, \"dur\": 0.3,"
    "   \"args\": {\"External id\": 5, \"nested\": {\"a\": [1, 2, {\"b\": \"]}\"}]}}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm90_xmma_gemm \\\"bf16\\\" \\u00e9\", \"pid\": 0, \"tid\": 7,"
    "   \"ts\": 1000.500, \"dur\": 2.000, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 9}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)\","
    "   \"pid\": 0, \"tid\": 13, \"ts\": 1001.500, \"dur\": 3.0004, \"args\": {\"stream\": 13,"
    "   \"Collective name\": \"allreduce\", \"In msg nelems\": 262144, \"Out msg nelems\": 262144,"
    "   \"Group size\": 4, \"dtype\": \"Float\"}},\n"
    "  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pageable -> Device)\", \"pid\": 0, \"tid\": 7,"
    "   \"ts\": 1005.000, \"dur\": 0.5, \"args\": {\"stream\": 7}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"elementwise_kernel\", \"pid\": 0, \"tid\": 7,"
    "   \"ts\": 1004.000, \"dur\": 0.2500, \"args\": {\"stream\": 7}},\n"
    "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"args\": {\"name\": \"GPU 0\"}}\n"
    " ],\n"
    " \"traceName\": \"rank3.pt.trace.json\", \"displayTimeUnit\": \"ms\", \"baseTimeNanoseconds\": 1000000000}\n";

static char dir[64];

static void write_file(const char *name, const char *text, size_t len) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, len, f), len);
  fclose(f);
}

static void test_kineto_trace_alone_gives_exact_overlap(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-kineto-XXXXXX");
  assert_non_null(mkdtemp(dir));
  write_file("rank3.pt.trace.json", kineto, sizeof kineto - 1);
  const char *paths[] = {dir};
  rp_options opt = {65536, 0, 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.nranks, 1);
  const rp_rank *k = &r.ranks[0];
  assert_int_equal(k->world_rank, 3);
  assert_int_equal(k->comm_from_kernels, 1);
  const int64_t base = 1000000000;
  assert_int_equal(k->t.first, base + 1000500);
  assert_int_equal(k->t.last, base + 1005500);
  assert_int_equal(k->t.compute, 2250);   /* [1000500,1002500) + [1004000,1004250) */
  assert_int_equal(k->t.comm, 3000);      /* 3.0004 us rounds to 3000 ns */
  assert_int_equal(k->t.overlap, 1250);
  assert_int_equal(k->t.memory, 500);
  assert_int_equal(k->t.busy, 4500);
  assert_int_equal(k->nsteps, 1);
  assert_int_equal(k->steps[0].value, 7);
  assert_int_equal(k->steps[0].start, base + 1000000);
  assert_int_equal(k->steps[0].comm, 3000);
  assert_int_equal(k->steps[0].overlap, 1250);
  assert_int_equal(r.nrows, 1);
  assert_int_equal(r.rows[0]->func, 4);
  assert_int_equal(r.rows[0]->nranks, 4);
  assert_int_equal(r.rows[0]->bucket, 20); /* 262144 floats = 1 MiB */
  assert_int_equal(r.rows[0]->algo_proto[1][0], 1);
  assert_int_equal(rp_quant_get(&r.rows[0]->time, 0.5), 3000);
  rp_report_free(&r);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* A topo trace of the same rank beside the Kineto file: one rank, the Kineto kernels give the
 * unions, the topo collective records (with algorithm and seq) give the table. */
static void test_kineto_and_topo_trace_of_one_rank_merge(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-kineto-XXXXXX");
  assert_non_null(mkdtemp(dir));
  write_file("rank3.pt.trace.json", kineto, sizeof kineto - 1);
  topo_trace_header h;
  tf_header_init(&h, 0x42, 3, 4);
  tf_trace t;
  tf_begin(&t, &h, NULL);
  topo_trace_record c = tf_coll(4, 0, 1 << 20, 1001000000, 1001000100, 1001001400, 1001004600, 1, 0, 2, 13);
  tf_add(&t, &c);
  tf_footer(&t, NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/rank3.trace", dir);
  assert_int_equal(tf_save(&t, path), 0);
  tf_free(&t);
  const char *paths[] = {dir};
  rp_options opt = {65536, 0, 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.nranks, 1);
  assert_int_equal(r.ranks[0].world_rank, 3);
  assert_int_equal(r.ranks[0].nsources, 2);
  assert_int_equal(r.ranks[0].comm_from_kernels, 1);
  assert_int_equal(r.ranks[0].t.comm, 3000);      /* the kernel, not the record's [1400,4600) */
  assert_int_equal(r.ranks[0].t.compute, 2250);
  assert_int_equal(r.colls, 1);                   /* not counted twice */
  assert_int_equal(r.nrows, 1);
  assert_int_equal(rp_quant_get(&r.rows[0]->time, 0.5), 3200);
  rp_report_free(&r);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static uint64_t intervals;
static void count_interval(void *ctx, int src, const rp_interval *iv) {
  (void)ctx, (void)src, (void)iv;
  intervals++;
}

static void test_every_prefix_of_a_trace_parses_safely(void **state) {
  (void)state;
  rp_sink sink = {NULL, NULL, count_interval, NULL, NULL};
  size_t n = sizeof kineto - 1;
  for (size_t cut = 0; cut <= n; cut++) {
    char *copy = malloc(cut ? cut : 1);
    memcpy(copy, kineto, cut);
    intervals = 0;
    rp_kineto_parse_memory(copy, cut, &sink);
    assert_true(intervals <= 4);
    free(copy);
  }
  intervals = 0;
  assert_int_equal(rp_kineto_parse_memory(kineto, n, &sink), 7);
  assert_int_equal(intervals, 4);
}

static void test_chrome_array_format_and_old_kernel_names(void **state) {
  (void)state;
  static const char arr[] =
      "[{\"ph\":\"X\",\"cat\":\"Kernel\",\"name\":\"ncclKernel_AllGather_RING_LL128_Sum_int8_t\",\"ts\":5,\"dur\":2,\"tid\":3},"
      "{\"ph\":\"X\",\"cat\":\"Kernel\",\"name\":\"volta_sgemm\",\"ts\":6,\"dur\":2,\"tid\":4}";  /* unterminated */
  intervals = 0;
  rp_sink sink = {NULL, NULL, count_interval, NULL, NULL};
  assert_int_equal(rp_kineto_parse_memory(arr, sizeof arr - 1, &sink), 2);
  assert_int_equal(intervals, 2);
  int func, algo, proto;
  assert_true(rp_nccl_kernel_parse("ncclKernel_AllGather_RING_LL128_Sum_int8_t", &func, &algo, &proto));
  assert_int_equal(func, 2);
  assert_int_equal(algo, 1);
  assert_int_equal(proto, 1);
  assert_true(rp_nccl_kernel_parse("ncclDevKernel_ReduceScatter_Sum_bf16_NVLS_SIMPLE", &func, &algo, &proto));
  assert_int_equal(func, 3);
  assert_int_equal(algo, 4);
  assert_int_equal(proto, 2);
  assert_false(rp_nccl_kernel_parse("void at::native::vectorized_elementwise_kernel", &func, &algo, &proto));
}

static int64_t last_start;
static void keep_start(void *ctx, int src, const rp_interval *iv) {
  (void)ctx, (void)src;
  last_start = iv->start;
}

static void test_absolute_microseconds_keep_every_digit(void **state) {
  (void)state;
  /* Kineto without baseTimeNanoseconds writes epoch µs: 16 integer digits, 3 decimals. */
  static const char ev[] = "[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1700000000123456.789,\"dur\":1.5}]";
  rp_sink sink = {NULL, NULL, keep_start, NULL, NULL};
  assert_int_equal(rp_kineto_parse_memory(ev, sizeof ev - 1, &sink), 1);
  assert_int_equal(last_start, 1700000000123456789LL);
}

static int nsteps;
static int64_t step_start;
static void on_step(void *ctx, int src, int64_t a, int64_t b, uint64_t v) {
  (void)ctx, (void)src, (void)b, (void)v;
  nsteps++;
  step_start = a;
}

static void test_gpu_projected_steps_win_over_cpu_steps(void **state) {
  (void)state;
  static const char ev[] =
      "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":10,\"dur\":5},"
      "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":12,\"dur\":6}]}";
  rp_sink sink = {NULL, NULL, NULL, on_step, NULL};
  nsteps = 0;
  rp_kineto_parse_memory(ev, sizeof ev - 1, &sink);
  assert_int_equal(nsteps, 1);
  assert_int_equal(step_start, 12000);
}

static void test_deep_nesting_does_not_recurse(void **state) {
  (void)state;
  size_t depth = 200000;
  char *deep = malloc(depth * 2 + 64);
  size_t n = (size_t)sprintf(deep, "{\"traceEvents\":[{\"args\":{\"x\":");
  for (size_t i = 0; i < depth; i++) deep[n++] = '[';
  for (size_t i = 0; i < depth; i++) deep[n++] = ']';
  n += (size_t)sprintf(deep + n, "}}]}");
  rp_sink sink = {NULL, NULL, count_interval, NULL, NULL};
  assert_int_equal(rp_kineto_parse_memory(deep, n, &sink), 1);
  free(deep);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kineto_trace_alone_gives_exact_overlap),
      cmocka_unit_test(test_kineto_and_topo_trace_of_one_rank_merge),
      cmocka_unit_test(test_every_prefix_of_a_trace_parses_safely),
      cmocka_unit_test(test_chrome_array_format_and_old_kernel_names),
      cmocka_unit_test(test_absolute_microseconds_keep_every_digit),
      cmocka_unit_test(test_gpu_projected_steps_win_over_cpu_steps),
      cmocka_unit_test(test_deep_nesting_does_not_recurse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
