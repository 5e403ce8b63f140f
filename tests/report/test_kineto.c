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
#include <zlib.h>

#include "log.h"
#include "plugin_host.h"
#include "report.h"
#include "report_analysis.h"
#include "report_inputs.h"
#include "report_render.h"
#include "trace_fixture.h"

static const char kineto[] =
    "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H200\"}],\n"
    " \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3, \"world_size\": 4},\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#7\", \"pid\": 11, "
    "\"tid\": 11,"
    "   \"ts\": 1000.000, \"dur\": 10.000},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 11, \"tid\": 11, "
    "\"ts\": 1000.1, \"dur\": 0.3,"
    "   \"args\": {\"External id\": 5, \"nested\": {\"a\": [1, 2, {\"b\": \"]}\"}]}}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm90_xmma_gemm \\\"bf16\\\" \\u00e9\", "
    "\"pid\": 0, \"tid\": 7,"
    "   \"ts\": 1000.500, \"dur\": 2.000, \"args\": {\"device\": 0, \"stream\": 7, "
    "\"correlation\": 9}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
    "\"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)\","
    "   \"pid\": 0, \"tid\": 13, \"ts\": 1001.500, \"dur\": 3.0004, \"args\": {\"stream\": 13,"
    "   \"Collective name\": \"allreduce\", \"In msg nelems\": 262144, \"Out msg nelems\": 262144,"
    "   \"Group size\": 4, \"dtype\": \"Float\"}},\n"
    "  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pageable -> Device)\", "
    "\"pid\": 0, \"tid\": 7,"
    "   \"ts\": 1005.000, \"dur\": 0.5, \"args\": {\"stream\": 7}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"elementwise_kernel\", \"pid\": 0, \"tid\": "
    "7,"
    "   \"ts\": 1004.000, \"dur\": 0.2500, \"args\": {\"stream\": 7}},\n"
    "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"args\": {\"name\": \"GPU 0\"}}\n"
    " ],\n"
    " \"traceName\": \"rank3.pt.trace.json\", \"displayTimeUnit\": \"ms\", "
    "\"baseTimeNanoseconds\": 1000000000}\n";

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
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.nranks, 1);
  const rp_rank *k = &r.ranks[0];
  assert_int_equal(k->world_rank, 3);
  assert_int_equal(k->comm_from_kernels, 1);
  const int64_t base = 1000000000;
  assert_int_equal(k->t.first, base + 1000500);
  assert_int_equal(k->t.last, base + 1005500);
  assert_int_equal(k->t.compute, 2250); /* [1000500,1002500) + [1004000,1004250) */
  assert_int_equal(k->t.comm, 3000);    /* 3.0004 us rounds to 3000 ns */
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
  assert_int_equal(r.rows[0]->bucket, 20);          /* 262144 floats = 1 MiB */
  assert_int_equal(r.rows[0]->algo_proto[7][3], 1); /* the name's RING_LL is not what ran */
  assert_int_equal(rp_quant_get(&r.rows[0]->time, 0.5), 3000);
  /* the input's kernels, counted once although the file is read twice */
  assert_int_equal(r.nsrc, 1);
  assert_int_equal(r.src[0].nccl_kernels, 1);
  assert_int_equal(r.src[0].compute_kernels, 2);
  assert_int_equal(r.src[0].memory_kernels, 1);
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
  topo_trace_record c =
      tf_coll(4, 0, 1 << 20, 1001000000, 1001000100, 1001001400, 1001004600, 1, 0, 2, 13);
  tf_add(&t, &c);
  tf_string(&t, 1, "step");
  topo_trace_record mark = tf_mark(1, 1001000000, 1001008000, 7); /* Kineto's ProfilerStep#7 too */
  tf_add(&t, &mark);
  tf_footer(&t, NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/rank3.trace", dir);
  assert_int_equal(tf_save(&t, path), 0);
  tf_free(&t);
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.nranks, 1);
  assert_int_equal(r.ranks[0].world_rank, 3);
  assert_int_equal(r.ranks[0].nsources, 2);
  assert_int_equal(r.ranks[0].comm_from_kernels, 1);
  assert_int_equal(r.ranks[0].t.comm, 3000); /* the kernel, not the record's [1400,4600) */
  assert_int_equal(r.ranks[0].t.compute, 2250);
  assert_int_equal(r.colls, 1);           /* not counted twice */
  assert_int_equal(r.ranks[0].nsteps, 1); /* step 7 once: the Kineto one */
  assert_int_equal(r.ranks[0].steps[0].start, 1001000000);
  assert_int_equal(r.ranks[0].steps[0].stop, 1001010000);
  assert_int_equal(r.nrows, 1);
  assert_int_equal(rp_quant_get(&r.rows[0]->time, 0.5), 3200);
  /* the text says which input each figure comes from, and that they cover different times */
  char *text = NULL;
  size_t tlen = 0;
  FILE *mf = open_memstream(&text, &tlen);
  assert_non_null(mf);
  r.text_width = -1; /* the wording, one line per note */
  rp_render_text(&r, mf);
  fclose(mf);
  assert_non_null(strstr(text,
                         "sources: GPU time per rank and steps from Kineto GPU events (1 rank); "
                         "collectives, skew and stragglers from topo traces"));
  assert_null(strstr(text, "they cover different times")); /* the trace's [1400,4600) is inside */
  assert_non_null(strstr(text, "size as nccl-tests counts it; from topo traces)"));
  free(text);
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
  rp_sink sink = {NULL, NULL, count_interval, NULL, NULL, NULL};
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
      "[{\"ph\":\"X\",\"cat\":\"Kernel\",\"name\":\"ncclKernel_AllGather_RING_LL128_Sum_int8_"
      "t\",\"ts\":5,\"dur\":2,\"tid\":3},"
      "{\"ph\":\"X\",\"cat\":\"Kernel\",\"name\":\"volta_sgemm\",\"ts\":6,\"dur\":2,\"tid\":"
      "4}"; /* unterminated */
  intervals = 0;
  rp_sink sink = {NULL, NULL, count_interval, NULL, NULL, NULL};
  assert_int_equal(rp_kineto_parse_memory(arr, sizeof arr - 1, &sink), 2);
  assert_int_equal(intervals, 2);
}

/* Kernel names give the collective and nothing else: the old names' algorithm/protocol suffix
 * names an entry point (and was wrong for some kernels), NCCL 2.31's compact names have none, a
 * symmetric kernel's variant ("LL", "LD") is no protocol. */
static void test_kernel_names_give_the_collective_only(void **state) {
  (void)state;
  static const struct {
    const char *name;
    int func;
  } cases[] = {
      {"ncclKernel_AllGather_RING_LL128_Sum_int8_t", 2},       /* before 2.19 */
      {"ncclKernel_Reduce_TREE_LL_Sum_float", 1},              /* not ReduceScatter */
      {"ncclDevKernel_ReduceScatter_Sum_bf16_NVLS_SIMPLE", 3}, /* 2.19-2.30 */
      {"ncclDevKernel_AllReduce_Sum_f32_NVLS_TREE_SIMPLE(ncclDevKernelArgsStorage<4096ul>)", 4},
      {"ncclDevKernel_AllReduce_Sum_bf16_COLLNET_DIRECT_LL", 4},
      {"ncclDevKernel_AllReduce_Sum_f32", 4}, /* 2.31 compact names */
      {"ncclDevKernel_AllGather(ncclDevKernelArgsStorage<4096ul>)", 2},
      {"ncclSymkDevKernel_AllGather_LL", 2}, /* symmetric kernels */
      {"ncclSymkDevKernel_ReduceScatter_LD_sum_bf16", 3},
      {"ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32", 4},
      {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 5},
      {"ncclDevKernel_Generic", -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int func = -2;
    assert_true(rp_nccl_kernel_parse(cases[i].name, &func));
    if (func != cases[i].func) fail_msg("%s: func %d, want %d", cases[i].name, func, cases[i].func);
  }
  int func;
  assert_false(rp_nccl_kernel_parse("void at::native::vectorized_elementwise_kernel", &func));
}

/* Where only Kineto kernels are known, every collective's algorithm and protocol are unknown,
 * old-style names with a suffix and 2.31 names alike, and the table says "?". */
static rp_coll seen[8];
static int nseen;
static void keep_coll(void *ctx, int src, const rp_coll *c) {
  (void)ctx, (void)src;
  if (nseen < 8) seen[nseen] = *c;
  nseen++;
}

static void test_kineto_collectives_have_no_algorithm_or_protocol(void **state) {
  (void)state;
  static const char json[] =
      "{\"traceEvents\":["
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\","
      "\"ts\":10,\"dur\":5,\"tid\":7,\"args\":{\"stream\":7,\"Collective name\":\"allreduce\","
      "\"In msg nelems\":262144,\"dtype\":\"Float\",\"Group size\":2}},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_f32\","
      "\"ts\":20,\"dur\":5,\"tid\":7,\"args\":{\"stream\":7,\"Collective name\":\"allreduce\","
      "\"In msg nelems\":262144,\"dtype\":\"Float\",\"Group size\":2}},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclSymkDevKernel_AllGather_LL\","
      "\"ts\":30,\"dur\":5,\"tid\":7,\"args\":{\"stream\":7}}]}";
  nseen = 0;
  rp_sink sink = {NULL, keep_coll, NULL, NULL, NULL, NULL};
  rp_kineto_parse_memory(json, sizeof json - 1, &sink);
  assert_int_equal(nseen, 3);
  static const int func[3] = {4, 4, 2};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(seen[i].func, func[i]);
    assert_int_equal(seen[i].algo, -1);
    assert_int_equal(seen[i].proto, -1);
  }
  /* through the analysis: one AllReduce row of two calls, algorithm/protocol "?" */
  snprintf(dir, sizeof dir, "/tmp/topo-kineto-XXXXXX");
  assert_non_null(mkdtemp(dir));
  write_file("rank0.pt.trace.json", json, sizeof json - 1);
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  int rows = 0;
  for (size_t i = 0; i < r.nrows; i++) {
    char label[64];
    rp_row_choice_label(r.rows[i], label, sizeof label);
    assert_string_equal(label, "?");
    for (int a = 0; a < 7; a++)
      for (int p = 0; p < 3; p++) assert_int_equal(r.rows[i]->algo_proto[a][p], 0);
    rows += r.rows[i]->func == 4 && r.rows[i]->calls == 2;
  }
  assert_int_equal(rows, 1);
  rp_report_free(&r);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static int64_t last_start;
static void keep_start(void *ctx, int src, const rp_interval *iv) {
  (void)ctx, (void)src;
  last_start = iv->start;
}

static void test_absolute_microseconds_keep_every_digit(void **state) {
  (void)state;
  /* Kineto without baseTimeNanoseconds writes epoch µs: 16 integer digits, 3 decimals. */
  static const char ev[] =
      "[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":1700000000123456.789,\"dur\":1.5}]";
  rp_sink sink = {NULL, NULL, keep_start, NULL, NULL, NULL};
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
      "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\","
      "\"ts\":10,\"dur\":5},"
      "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":12,\"dur\":"
      "6}]}";
  rp_sink sink = {NULL, NULL, NULL, on_step, NULL, NULL};
  nsteps = 0;
  rp_kineto_parse_memory(ev, sizeof ev - 1, &sink);
  assert_int_equal(nsteps, 1);
  assert_int_equal(step_start, 12000);
}

static int64_t steps_seen[8][3];
static void on_step_keep(void *ctx, int src, int64_t a, int64_t b, uint64_t v) {
  (void)ctx, (void)src;
  if (nsteps < 8)
    steps_seen[nsteps][0] = a, steps_seen[nsteps][1] = b, steps_seen[nsteps][2] = (int64_t)v;
  nsteps++;
}

/* HTA's attribution: a kernel belongs to the step whose CPU range holds its launch (correlation
 * id), wherever the kernel runs; a GPU-projected range is used only when no launch matched and it
 * is at least half the CPU range long. */
static void test_steps_follow_the_kernels_their_cpu_range_launched(void **state) {
  (void)state;
  static const char ev[] =
      "{\"traceEvents\":["
      "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":100,\"dur\":50}"
      ","
      "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":120,"
      "\"dur\":1},"
      "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":110,\"dur\":2,"
      "\"args\":{\"correlation\":5}},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":130,\"dur\":40,\"args\":{"
      "\"stream\":7,\"correlation\":5}},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\","
      "\"ts\":135,\"dur\":60,\"args\":{\"correlation\":7}},"
      "{\"ph\":\"X\",\"cat\":\"cuda_driver\",\"name\":\"cuLaunchKernelEx\",\"ts\":149,\"dur\":2,"
      "\"args\":{\"correlation\":7}},"
      "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":200,\"dur\":2,"
      "\"args\":{\"correlation\":6}},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"late\",\"ts\":171,\"dur\":100,\"args\":{"
      "\"correlation\":6}},"
      "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"ts\":300,\"dur\":10}"
      ","
      "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":\"ProfilerStep#2\",\"ts\":302,"
      "\"dur\":8},"
      "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#3\",\"ts\":400,\"dur\":10}"
      ","
      "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":\"ProfilerStep#3\",\"ts\":401,"
      "\"dur\":1}]}";
  rp_sink sink = {NULL, NULL, NULL, on_step_keep, NULL, NULL};
  nsteps = 0;
  rp_kineto_parse_memory(ev, sizeof ev - 1, &sink);
  assert_int_equal(nsteps, 3);
  /* step 1: its two launches (runtime and driver API), kernels on any stream: [130, 195] us */
  assert_int_equal(steps_seen[0][0], 130000);
  assert_int_equal(steps_seen[0][1], 195000);
  assert_int_equal(steps_seen[0][2], 1);
  /* step 2: nothing launched inside; its GPU-projected range is sane */
  assert_int_equal(steps_seen[1][0], 302000);
  assert_int_equal(steps_seen[1][1], 310000);
  /* step 3: the projected range is 1 of 10 us: the CPU range */
  assert_int_equal(steps_seen[2][0], 400000);
  assert_int_equal(steps_seen[2][1], 410000);
}

/* Calls and kernels met as they come, the ProfilerSteps written last (so every pair waits for the
 * end of the file: in a temporary file, or in memory when there is none): 20 000 calls spread over
 * three steps of 1 ms, each kernel 5 us after its call and 3 us long; the steps' GPU windows are
 * the first and last kernel of each, either way. */
static void test_steps_after_their_calls_match_every_kernel(void **state) {
  (void)state;
  size_t cap = 8u << 20, n = 0;
  char *t = malloc(cap);
  n += (size_t)snprintf(t + n, cap - n, "{\"traceEvents\":[");
  const int calls = 20000;
  for (int i = 0; i < calls;
       i++) { /* call i at 1000 + i * 0.15 us: steps [1000,2000), [2000,3000), [3000,4000) */
    double ts = 1000.0 + i * 0.15;
    n += (size_t)snprintf(t + n, cap - n,
                          "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
                          "\"ts\":%.3f,\"dur\":1,"
                          "\"args\":{\"correlation\":%d}},"
                          "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"ts\":%.3f,\"dur\":3,"
                          "\"args\":{\"stream\":7,\"correlation\":%d}},",
                          ts, i + 1, ts + 5, i + 1);
  }
  for (int s = 0; s < 3; s++)
    n +=
        (size_t)snprintf(t + n, cap - n,
                         "%s{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\","
                         "\"ts\":%d,\"dur\":999.999}",
                         s ? "," : "", s, 1000 + 1000 * s);
  n += (size_t)snprintf(t + n, cap - n, "]}");
  assert_true(n < cap);
  /* first kernel start, last kernel end of the calls inside each step (computed independently) */
  static const int64_t want[3][2] = {{1005000, 2007900}, {2005050, 3007950}, {3005100, 4007850}};
  for (int pass = 0; pass < 2; pass++) {
    const char *tmp = getenv("TMPDIR");
    char *saved = tmp ? strdup(tmp) : NULL;
    if (pass) setenv("TMPDIR", "/nonexistent-topo-dir", 1); /* no temporary file: in memory */
    rp_sink sink = {NULL, NULL, NULL, on_step_keep, NULL, NULL};
    nsteps = 0;
    assert_int_equal(rp_kineto_parse_memory(t, n, &sink), (uint64_t)(2 * calls + 3));
    if (pass) {
      if (saved) setenv("TMPDIR", saved, 1);
      else unsetenv("TMPDIR");
    }
    free(saved);
    assert_int_equal(nsteps, 3);
    for (int s = 0; s < 3; s++) {
      assert_int_equal(steps_seen[s][0], want[s][0]);
      assert_int_equal(steps_seen[s][1], want[s][1]);
    }
  }
  free(t);
}

/* An excerpt of a real torch.profiler trace (PyTorch 2.11, 2 x H200, DDP, 5 steps of ~20 ms):
 * every ProfilerStep#N (CPU and GPU-projected), the NCCL kernels and some compute kernels of
 * each step with their launches. The GPU-projected ProfilerStep ranges there are ~58 us long. The
 * expected windows are first start / last stop of the GPU events launched inside each CPU range,
 * computed from the JSON independently (python, the same rule as HTA). */
static void test_real_ddp_trace_steps_span_the_whole_step(void **state) {
  (void)state;
  const char *paths[] = {TOPO_REPORT_DATA "/ddp-kineto-rank0-excerpt.pt.trace.json"};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.nranks, 1);
  const rp_rank *k = &r.ranks[0];
  static const int64_t want[5][2] = {{5209366075790648, 5209366099075552},
                                     {5209366099731521, 5209366118932359},
                                     {5209366119558248, 5209366142380943},
                                     {5209366143015440, 5209366162166102},
                                     {5209366162811703, 5209366182611133}};
  const int64_t base = 1790857026000000000;
  assert_int_equal(k->nsteps, 5);
  for (int i = 0; i < 5; i++) {
    assert_int_equal(k->steps[i].value, (uint64_t)i);
    assert_int_equal(k->steps[i].start, base + want[i][0]);
    assert_int_equal(k->steps[i].stop, base + want[i][1]);
    assert_true(k->steps[i].stop - k->steps[i].start > 15000000); /* not the 58 us projection */
    assert_true(k->steps[i].comm > 0);
  }
  /* kernel names say RING_LL, topo traces of the same run say Ring/Simple: unknown, not Ring/LL */
  assert_int_equal(r.nrows, 1);
  assert_int_equal(r.rows[0]->func, 4);
  assert_int_equal(r.rows[0]->algo_proto[7][3], r.rows[0]->calls);
  assert_true(r.rows[0]->calls > 0);
  rp_report_free(&r);
}

/* The same trace in both step windows. All events: every GPU event of the file. --steps complete:
 * from step 0's GPU start to step 3's GPU end, step 4 (cut short when the profiler stopped) left
 * out. Expected figures computed from the JSON independently (python: unions of the kernels
 * clipped to the window); HTA's rule cut at the CPU-side ProfilerStep#4 keeps the same 32 NCCL
 * kernels and the same 86.375454 ms span (its default, cut at the GPU-side #4 5.8 ms later, keeps
 * 33 over 93.04 ms). */
static void test_real_ddp_trace_in_both_step_windows(void **state) {
  (void)state;
  const char *paths[] = {TOPO_REPORT_DATA "/ddp-kineto-rank0-excerpt.pt.trace.json"};
  const int64_t base = 1790857026000000000;
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.step_window, RP_WINDOW_ALL);
  assert_int_equal(r.ranks[0].win, 0);
  assert_int_equal(r.ranks[0].nsteps, 5);
  assert_int_equal(r.colls, 40);
  assert_int_equal(r.ranks[0].t.last - r.ranks[0].t.first, 106820485);
  assert_int_equal(r.ranks[0].t.comm, 6281860);
  assert_int_equal(r.ranks[0].t.compute, 1788642);
  assert_int_equal(r.ranks[0].t.busy, 8081413);
  rp_report_free(&r);
  opt.step_window = RP_WINDOW_COMPLETE_STEPS;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  const rp_rank *k = &r.ranks[0];
  assert_int_equal(r.step_window, RP_WINDOW_COMPLETE_STEPS);
  assert_int_equal(r.ranks_cut, 1);
  assert_int_equal(k->win, 1);
  assert_int_equal(k->win_from, base + 5209366075790648);
  assert_int_equal(k->win_to, base + 5209366162166102);
  assert_int_equal(k->win_first, 0);
  assert_int_equal(k->win_last, 3);
  assert_int_equal(k->win_dropped, 4);
  assert_int_equal(k->win_steps, 5);
  assert_int_equal(k->nsteps, 4);
  for (int i = 0; i < 4; i++) assert_int_equal(k->steps[i].value, (uint64_t)i);
  assert_int_equal(r.nstepsum, 4);
  assert_int_equal(r.colls, 32);
  assert_int_equal(r.rows[0]->calls, 32);
  assert_int_equal(k->t.first, base + 5209366075790648);
  assert_int_equal(k->t.last, base + 5209366162166102);
  assert_int_equal(k->t.comm, 4987556);
  assert_int_equal(k->t.compute, 1421123);
  assert_int_equal(k->t.overlap, 0);
  assert_int_equal(k->t.busy, 6417543);
  /* Kineto covers its whole range: exposed over the whole span is the measured one */
  rp_derived d;
  rp_derive_rank(k, &d);
  assert_int_equal(d.exposed_all_known, 1);
  assert_int_equal(d.exposed_all_estimated, 0);
  assert_int_equal(d.exposed_all, d.exposed);
  assert_int_equal(d.exposed_all_error, 0);
  rp_report_free(&r);
}

/* Kineto steps and topo traces of the same rank: --steps complete cuts the topo collectives at the
 * same window (ProfilerStep#1 .. #2; #3, the last, left out), in the table as in the unions. */
static void test_complete_steps_cut_the_topo_traces_of_the_rank_too(void **state) {
  (void)state;
  static const char t[] =
      "{\"distributedInfo\": {\"rank\": 0, \"world_size\": 1}, \"baseTimeNanoseconds\": 1000000000,"
      " \"traceEvents\": [\n"
      "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"ts\": 1000, "
      "\"dur\": 10},\n"
      "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#2\", \"ts\": 1010, "
      "\"dur\": 10},\n"
      "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#3\", \"ts\": 1020, "
      "\"dur\": 10},\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"ts\": 1001, \"dur\": 4, "
      "\"args\": {\"stream\": 7}},\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"ts\": 1011, \"dur\": 4, "
      "\"args\": {\"stream\": 7}},\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"ts\": 1021, \"dur\": 4, "
      "\"args\": {\"stream\": 7}}]}";
  snprintf(dir, sizeof dir, "/tmp/topo-kineto-XXXXXX");
  assert_non_null(mkdtemp(dir));
  write_file("rank0.pt.trace.json", t, sizeof t - 1);
  topo_trace_header h;
  tf_header_init(&h, 0x43, 0, 1);
  tf_trace tr;
  tf_begin(&tr, &h, NULL);
  for (int i = 0; i < 3; i++) { /* one AllReduce per step, 5-7 us into it */
    int64_t s0 = 1001000000 + (int64_t)i * 10000;
    topo_trace_record c =
        tf_coll(4, (uint64_t)i, 1 << 20, s0 + 4000, s0 + 4100, s0 + 5000, s0 + 7000, 1, 0, 2, 13);
    tf_add(&tr, &c);
  }
  tf_footer(&tr, NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/rank0.trace", dir);
  assert_int_equal(tf_save(&tr, path), 0);
  tf_free(&tr);
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.colls, 3);
  assert_int_equal(r.ranks[0].nsteps, 3);
  rp_report_free(&r);
  opt.step_window = RP_WINDOW_COMPLETE_STEPS;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.nranks, 1);
  assert_int_equal(r.ranks[0].win, 1);
  assert_int_equal(r.ranks[0].win_from, 1001000000);
  assert_int_equal(r.ranks[0].win_to, 1001020000);
  assert_int_equal(r.colls, 2);
  assert_int_equal(r.rows[0]->calls, 2);
  assert_int_equal(r.ranks[0].nsteps, 2);
  assert_int_equal(r.ranks[0].t.compute, 8000);
  /* the rank's span: from its first event to the window's end (step 3 goes on after it) */
  assert_int_equal(r.ranks[0].t.first, 1001001000);
  assert_int_equal(r.ranks[0].t.last, 1001020000);
  rp_report_free(&r);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* One ProfilerStep: none is complete, so every event counts (and the rank says so). */
static void test_one_profiler_step_keeps_all_events(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-kineto-XXXXXX");
  assert_non_null(mkdtemp(dir));
  write_file("rank3.pt.trace.json", kineto, sizeof kineto - 1);
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1, .step_window = RP_WINDOW_COMPLETE_STEPS};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.ranks_cut, 0);
  assert_int_equal(r.ranks[0].win, 0);
  assert_int_equal(r.ranks[0].win_steps, 1);
  assert_int_equal(r.ranks[0].nsteps, 1);
  assert_int_equal(r.ranks[0].t.compute, 2250);
  rp_report_free(&r);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* The report of `path` as --json renders it, read with pass 2 replaying pass 1's record or parsing
 * the JSON again. */
static char *json_report(const char *path, int reread, int step_window) {
  const char *paths[] = {path};
  rp_options opt = {
      .reorder_window = 65536, .quiet = 1, .reread_json = reread, .step_window = step_window};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  rp_render_json(&r, f);
  fclose(f);
  rp_report_free(&r);
  return text;
}

/* Pass 2 replays the events pass 1 recorded instead of parsing the JSON again: every figure the
 * same (kernel-level analyses included), in both step windows; without a place for the record
 * (TMPDIR unusable) it parses the JSON again, with the same result. */
static void test_pass_two_replay_equals_reading_again(void **state) {
  (void)state;
  const char *trace = TOPO_REPORT_DATA "/ddp-kineto-rank0-excerpt.pt.trace.json";
  for (int w = 0; w < 2; w++) {
    char *a = json_report(trace, 0, w), *b = json_report(trace, 1, w);
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "\"nccl_kernels\":40"));
    free(a), free(b);
  }
  const char *tmp = getenv("TMPDIR");
  char *saved = tmp ? strdup(tmp) : NULL;
  setenv("TMPDIR", "/nonexistent-topo-dir", 1);
  rp_kspill *sp = rp_kspill_new();
  assert_null(sp);
  char *a = json_report(trace, 0, 0), *b = json_report(trace, 1, 0);
  assert_string_equal(a, b);
  free(a), free(b);
  if (saved) setenv("TMPDIR", saved, 1), free(saved);
  else unsetenv("TMPDIR");
}

static void test_deep_nesting_does_not_recurse(void **state) {
  (void)state;
  size_t depth = 200000;
  char *deep = malloc(depth * 2 + 64);
  size_t n = (size_t)sprintf(deep, "{\"traceEvents\":[{\"args\":{\"x\":");
  for (size_t i = 0; i < depth; i++) deep[n++] = '[';
  for (size_t i = 0; i < depth; i++) deep[n++] = ']';
  n += (size_t)sprintf(deep + n, "}}]}");
  rp_sink sink = {NULL, NULL, count_interval, NULL, NULL, NULL};
  assert_int_equal(rp_kineto_parse_memory(deep, n, &sink), 1);
  free(deep);
}

/* A pipeline-parallel rank: NCCL's SendRecv kernels only, each op naming its half. */
static void test_sendrecv_kernels_count_as_p2p(void **state) {
  (void)state;
  static const char t[] =
      "{\"distributedInfo\": {\"rank\": 1, \"world_size\": 2}, \"traceEvents\": [\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
      "\"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)\","
      " \"pid\": 0, \"tid\": 20, \"ts\": 100.0, \"dur\": 50.0, \"args\": {\"stream\": 20,"
      " \"Collective name\": \"send\", \"In msg nelems\": 1048576, \"dtype\": \"Float\", \"Group "
      "size\": 2}},\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
      "\"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)\","
      " \"pid\": 0, \"tid\": 20, \"ts\": 200.0, \"dur\": 40.0, \"args\": {\"stream\": 20,"
      " \"Collective name\": \"recv\", \"In msg nelems\": 1048576, \"dtype\": \"Float\", \"Group "
      "size\": 2}},\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
      "\"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)\","
      " \"pid\": 0, \"tid\": 20, \"ts\": 300.0, \"dur\": 10.0, \"args\": {\"stream\": 20}}\n"
      "]}";
  snprintf(dir, sizeof dir, "/tmp/topo-kineto-XXXXXX");
  assert_non_null(mkdtemp(dir));
  write_file("pp.pt.trace.json", t, sizeof t - 1);
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.colls, 0);
  assert_int_equal(r.p2p, 3);
  assert_int_equal(r.ranks[0].t.comm, 100000);
  int send = 0, recv = 0, both = 0;
  for (size_t i = 0; i < r.nrows; i++) {
    if (r.rows[i]->func == 6)
      send += (int)r.rows[i]->calls, assert_int_equal(r.rows[i]->bucket, 22);
    if (r.rows[i]->func == 7) recv += (int)r.rows[i]->calls;
    if (r.rows[i]->func == 5) both += (int)r.rows[i]->calls;
  }
  assert_int_equal(send, 1);
  assert_int_equal(recv, 1);
  assert_int_equal(both, 1);
  rp_report_free(&r);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

/* The report of the files in `dir` rendered by `render` into a string. */
/* The collective CSV table. */
static void csv_collectives(const rp_report *r, FILE *f) {
  rp_render_csv_table(r, RP_CSV_COLLECTIVES, f);
}

static char *render_dir(void (*render)(const rp_report *, FILE *)) {
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  render(&r, f);
  fclose(f);
  rp_report_free(&r);
  return text;
}

/* torch.profiler's warm-up step records NCCL kernels without the operator that names their size
 * and communicator: their row's ranks, size, bytes, algbw and busbw are unknown in every output,
 * never 0; the row of a kernel with its operator keeps its figures. */
static void test_kernels_without_their_operator_have_unknown_size_and_ranks(void **state) {
  (void)state;
  static const char t[] =
      "{\"distributedInfo\": {\"rank\": 0, \"world_size\": 2}, \"traceEvents\": [\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
      "\"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)\","
      " \"pid\": 0, \"tid\": 20, \"ts\": 100.0, \"dur\": 50.0, \"args\": {\"stream\": 20}},\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
      "\"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)\","
      " \"pid\": 0, \"tid\": 20, \"ts\": 200.0, \"dur\": 40.0, \"args\": {\"stream\": 20,"
      " \"Collective name\": \"allreduce\", \"In msg nelems\": 1048576, \"dtype\": \"Float\","
      " \"Group size\": 2}}\n"
      "]}";
  snprintf(dir, sizeof dir, "/tmp/topo-kineto-XXXXXX");
  assert_non_null(mkdtemp(dir));
  write_file("warmup.pt.trace.json", t, sizeof t - 1);
  char *json = render_dir(rp_render_json);
  const char *ag = strstr(json, "{\"collective\":\"AllGather\"");
  assert_non_null(ag);
  assert_non_null(strstr(ag, "\"nranks\":null,\"size_from\":null"));
  assert_non_null(strstr(ag, "\"bytes\":null"));
  assert_non_null(strstr(ag, "\"algbw_gbs\":null,\"busbw_gbs\":null"));
  const char *ar = strstr(json, "{\"collective\":\"AllReduce\"");
  assert_non_null(ar);
  assert_non_null(strstr(ar, "\"nranks\":2,\"size_from\":4194304"));
  free(json);
  char *text = render_dir(rp_render_text);
  const char *row = strstr(text, "\n  AllGather ");
  assert_non_null(row);
  char line[256];
  snprintf(line, sizeof line, "%.*s", (int)strcspn(row + 1, "\n"), row + 1);
  assert_null(strstr(line, " 0 B"));
  assert_null(strstr(line, "0.0000"));
  char c1[32], c2[8], c3[8]; /* collective, ranks, size */
  assert_int_equal(sscanf(line, "%31s %7s %7s", c1, c2, c3), 3);
  assert_string_equal(c2, "?");
  assert_string_equal(c3, "?");
  free(text);
  char *csv = render_dir(csv_collectives);
  row = strstr(csv, "\nAllGather,");
  assert_non_null(row);
  assert_int_equal(strncmp(row + 1, "AllGather,,,1,1,,", 17), 0);
  free(csv);
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  char html[128];
  snprintf(html, sizeof html, "%s/report.html", dir);
  assert_int_equal(rp_render_html(&r, html), TOPO_OK);
  rp_report_free(&r);
  size_t len;
  char *page = slurp(html, &len);
  row = strstr(page, "<tr><td>AllGather</td>");
  assert_non_null(row);
  snprintf(line, sizeof line, "%.*s", (int)strcspn(row, "\n"), row);
  assert_non_null(strstr(line, "<td>AllGather</td><td>?</td><td>?</td>"));
  assert_null(strstr(line, ">0 B<"));
  assert_null(strstr(line, ">0.00<"));
  free(page);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* What a sink received, in order: a count and a running hash. */
typedef struct tally {
  uint64_t n, hash;
} tally;
static void tally_add(tally *t, uint64_t v) {
  t->n++;
  t->hash = t->hash * 1000003u + v;
}
static void tally_coll(void *ctx, int src, const rp_coll *c) {
  (void)src;
  tally_add(ctx, (uint64_t)c->gpu_start ^ c->bytes ^ (uint64_t)c->func);
}
static void tally_interval(void *ctx, int src, const rp_interval *iv) {
  (void)src;
  tally_add(ctx, (uint64_t)iv->start * 7 + (uint64_t)iv->stop + iv->cls + iv->stream);
}
static void tally_step(void *ctx, int src, int64_t a, int64_t b, uint64_t v) {
  (void)src;
  tally_add(ctx, (uint64_t)a * 5 + (uint64_t)b + v);
}

/* The reader parses an event again when it runs past the buffer: read a few bytes at a time, the
 * real trace gives exactly what one read of the whole file gives. */
static void test_reads_in_any_chunks_equal_one_read(void **state) {
  (void)state;
  size_t len;
  char *data = slurp(TOPO_REPORT_DATA "/ddp-kineto-rank0-excerpt.pt.trace.json", &len);
  tally whole = {0, 0};
  rp_sink a = {&whole, tally_coll, tally_interval, tally_step, NULL, NULL};
  assert_int_equal(rp_kineto_parse_memory(data, len, &a), 180);
  assert_int_equal(whole.n, 40 + 85 + 5); /* NCCL kernels as collectives, GPU events, steps */
  static const size_t chunks[] = {1, 2, 7, 61, 1000, 1 << 20};
  for (size_t i = 0; i < sizeof chunks / sizeof *chunks; i++) {
    tally part = {0, 0};
    rp_sink b = {&part, tally_coll, tally_interval, tally_step, NULL, NULL};
    uint64_t too_large = 9;
    assert_int_equal(rp_kineto_parse_chunks(data, len, chunks[i], 1 << 20, &b, &too_large), 180);
    assert_int_equal(too_large, 0);
    assert_int_equal(part.n, whole.n);
    assert_true(part.hash == whole.hash);
  }
  free(data);
}

/* An event larger than the buffer may grow to is skipped (counted), the others are read. */
static void test_an_event_larger_than_the_buffer_is_skipped_alone(void **state) {
  (void)state;
  size_t big = 5000;
  char *t = malloc(big + 512);
  size_t n =
      (size_t)sprintf(t, "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"");
  memset(t + n, 'k', big);
  n += big;
  n += (size_t)sprintf(
      t + n,
      "\", \"ts\": 1, \"dur\": 2}, {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"small\","
      " \"ts\": 5, \"dur\": 1}]}");
  tally got = {0, 0};
  rp_sink sink = {&got, NULL, tally_interval, NULL, NULL, NULL};
  uint64_t too_large = 0;
  assert_int_equal(rp_kineto_parse_chunks(t, n, 100, 1024, &sink, &too_large), 1);
  assert_int_equal(too_large, 1);
  assert_int_equal(got.n, 1);
  got.n = 0;
  assert_int_equal(rp_kineto_parse_memory(t, n, &sink), 2); /* in one buffer: both */
  assert_int_equal(got.n, 2);
  free(t);
}

/* torch.profiler's use_gzip=True writes *.pt.trace.json.gz: read through zlib as it streams, the
 * same figures as the plain file, and a directory finds it. */
static void test_gzip_trace_reads_like_the_plain_one(void **state) {
  (void)state;
  size_t len;
  char *data = slurp(TOPO_REPORT_DATA "/ddp-kineto-rank0-excerpt.pt.trace.json", &len);
  char d[64] = "/tmp/topo-kineto-gz-XXXXXX", path[128], cmd[160];
  assert_non_null(mkdtemp(d));
  snprintf(path, sizeof path, "%s/host_1.1790857026123.pt.trace.json.gz", d);
  gzFile gz = gzopen(path, "wb");
  assert_non_null(gz);
  assert_int_equal(gzwrite(gz, data, (unsigned)len), (int)len);
  assert_int_equal(gzclose(gz), Z_OK);
  const char *plain[] = {TOPO_REPORT_DATA "/ddp-kineto-rank0-excerpt.pt.trace.json"};
  const char *zipped[] = {d};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report a, b;
  assert_int_equal(rp_analyze(plain, 1, &opt, &a), TOPO_OK);
  assert_int_equal(rp_analyze(zipped, 1, &opt, &b), TOPO_OK);
  assert_int_equal(b.nsrc, 1);
  assert_int_equal(b.nranks, 1);
  assert_int_equal(b.ranks[0].world_rank, 0);
  assert_int_equal(b.ranks[0].t.first, a.ranks[0].t.first);
  assert_int_equal(b.ranks[0].t.last, a.ranks[0].t.last);
  assert_int_equal(b.ranks[0].t.comm, a.ranks[0].t.comm);
  assert_int_equal(b.ranks[0].t.compute, a.ranks[0].t.compute);
  assert_int_equal(b.ranks[0].t.overlap, a.ranks[0].t.overlap);
  assert_int_equal(b.ranks[0].nsteps, 5);
  assert_int_equal(b.colls, a.colls);
  assert_int_equal(b.src[0].nccl_kernels, 40);
  int64_t whole_last = a.ranks[0].t.last;
  rp_report_free(&a);
  rp_report_free(&b);
  /* cut short in the middle of the compressed stream: the events before the cut are used */
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long zlen = ftell(f);
  assert_int_equal(ftruncate(fileno(f), zlen / 2), 0);
  fclose(f);
  assert_int_equal(rp_analyze(zipped, 1, &opt, &b), TOPO_OK);
  assert_int_equal(b.nranks, 1);
  assert_true(b.ranks[0].t.last > b.ranks[0].t.first);
  assert_true(b.ranks[0].t.last < whole_last);
  rp_report_free(&b);
  snprintf(cmd, sizeof cmd, "rm -rf %s", d);
  assert_int_equal(system(cmd), 0);
  free(data);
}

/* Ten GPU events 10 us apart with `bad` (a non-finite number as some producer writes it) in one
 * field of six of them: the dur of event 1, the ts of event 3, args.stream of 5, args.correlation
 * of 6, the memory bandwidth of memcpy 7, the element count of NCCL kernel 8; and the rank. */
static size_t nonfinite_trace(char *t, size_t cap, const char *bad) {
  size_t n = (size_t)snprintf(t, cap, "{\"distributedInfo\":{\"rank\":%s},\"traceEvents\":[", bad);
  for (int i = 0; i < 10; i++) {
    char ts[32], dur[32], stream[32], corr[32], bw[48] = "", nel[32];
    snprintf(ts, sizeof ts, "%d", 1000 + 10 * i);
    snprintf(dur, sizeof dur, "5");
    snprintf(stream, sizeof stream, "7");
    snprintf(corr, sizeof corr, "%d", i + 1);
    snprintf(nel, sizeof nel, "1024");
    if (i == 1) snprintf(dur, sizeof dur, "%s", bad);
    if (i == 3) snprintf(ts, sizeof ts, "%s", bad);
    if (i == 5) snprintf(stream, sizeof stream, "%s", bad);
    if (i == 6) snprintf(corr, sizeof corr, "%s", bad);
    if (i == 7) snprintf(bw, sizeof bw, ",\"memory bandwidth (GB/s)\":%s", bad);
    if (i == 8) snprintf(nel, sizeof nel, "%s", bad);
    n += (size_t)snprintf(
        t + n, cap - n,
        "%s{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":0,\"tid\":7,\"ts\":%s,\"dur\":%s,"
        "\"args\":{\"stream\":%s,\"correlation\":%s%s,\"In msg nelems\":%s,\"dtype\":\"Float\","
        "\"Group size\":2}}",
        i ? "," : "", i == 7 ? "gpu_memcpy" : "kernel",
        i == 8   ? "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
        : i == 7 ? "Memcpy DtoD"
                 : "gemm",
        ts, dur, stream, corr, bw, nel);
  }
  n += (size_t)snprintf(t + n, cap - n, "]}");
  return n;
}

static uint64_t colls_seen;
static void count_coll(void *ctx, int src, const rp_coll *c) {
  (void)ctx, (void)src, (void)c;
  colls_seen++;
}

/* Every spelling of a non-finite number that Python's json or C's printf writes, in any field
 * the report reads as a number: the events after it are read, the event keeps its place where
 * the field is not its time (the field is unknown), an event without a finite time is not used,
 * and the file's input gets one warning that counts both. */
static void test_non_finite_numbers_lose_only_their_field(void **state) {
  (void)state;
  static const char *const spell[] = {"-Infinity", "Infinity", "NaN",  "-inf", "inf",
                                      "-nan",      "nan",      "+inf", "-NaN"};
  char t[8192], d[64] = "/tmp/topo-kineto-nf-XXXXXX", path[128];
  assert_non_null(mkdtemp(d));
  snprintf(path, sizeof path, "%s/rank.json", d);
  topo_log_set_logger(topo_host_log);
  for (size_t i = 0; i < sizeof spell / sizeof *spell; i++) {
    size_t n = nonfinite_trace(t, sizeof t, spell[i]);
    intervals = colls_seen = 0;
    rp_sink sink = {NULL, count_coll, count_interval, NULL, NULL, NULL};
    if (rp_kineto_parse_memory(t, n, &sink) != 10) fail_msg("%s: not every event read", spell[i]);
    if (intervals != 8) fail_msg("%s: %d intervals, want 8", spell[i], (int)intervals);
    if (colls_seen != 1) fail_msg("%s: the NCCL kernel is not a collective", spell[i]);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fwrite(t, 1, n, f);
    fclose(f);
    const char *paths[] = {path};
    rp_options opt = {.reorder_window = 65536};
    rp_report r;
    topo_host_log_reset();
    assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
    assert_int_equal(r.nranks, 1);
    assert_int_equal(r.src[0].compute_kernels, 6);
    assert_int_equal(r.src[0].memory_kernels, 1);
    assert_int_equal(r.src[0].nccl_kernels, 1);
    assert_int_equal(r.src[0].json_bad_times, 2);
    assert_int_equal(r.src[0].json_nonfinite, 7); /* dur, ts, stream, corr, bw, nelems, rank */
    assert_int_equal(r.ranks[0].t.first, 1000000);
    assert_int_equal(r.ranks[0].t.last, 1095000);
    if (topo_host_log_count(NCCL_LOG_WARN) != 1 || !topo_host_log_contains("not finite"))
      fail_msg("%s: want one warning about the numbers, got %d", spell[i],
               topo_host_log_count(NCCL_LOG_WARN));
    rp_report_free(&r);
  }
  topo_log_set_logger(NULL);
  unlink(path);
  rmdir(d);
}

/* A ts far outside any clock (1e30 us) is no time: that event is not used and the input gets
 * one warning; the run keeps its 95 us span (it became ts 0 before: a span of 1.7e18 ns). */
static void test_out_of_range_time_is_rejected_with_a_warning(void **state) {
  (void)state;
  char t[4096], d[64] = "/tmp/topo-kineto-ts-XXXXXX", path[128];
  assert_non_null(mkdtemp(d));
  snprintf(path, sizeof path, "%s/rank.json", d);
  size_t n = (size_t)snprintf(t, sizeof t, "{\"traceEvents\":[");
  for (int i = 0; i < 10; i++)
    n += (size_t)snprintf(t + n, sizeof t - n,
                          "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":%s,"
                          "\"dur\":5,\"args\":{\"stream\":7}}",
                          i ? "," : "",
                          i == 4   ? "1e30"
                          : i == 6 ? "-3e19"
                                   : "1700000000000");
  n += (size_t)snprintf(t + n, sizeof t - n, "]}");
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fwrite(t, 1, n, f);
  fclose(f);
  const char *paths[] = {path};
  rp_options opt = {.reorder_window = 65536};
  rp_report r;
  topo_log_set_logger(topo_host_log);
  topo_host_log_reset();
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  assert_int_equal(r.nranks, 1);
  assert_int_equal(r.src[0].compute_kernels, 8);
  assert_int_equal(r.src[0].json_bad_times, 2);
  assert_int_equal(r.ranks[0].t.first, 1700000000000000LL);
  assert_int_equal(r.ranks[0].t.last - r.ranks[0].t.first, 5000);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  assert_true(topo_host_log_contains("out of range"));
  rp_report_free(&r);
  topo_log_set_logger(NULL);
  unlink(path);
  rmdir(d);
}

/* A small .json.gz (10 kernels, one deflate block) with one byte damaged: it is read as the JSON
 * it is (never "not a topo trace (bad magic)"), the damage is named, and what decoded before it
 * is used. Damage to the trailer's checksum comes after every event: all 10 are kept (before:
 * none, zlib's gzread drops the output of the call that meets the error, here all of it). */
static void test_small_damaged_gzip_keeps_what_came_before(void **state) {
  (void)state;
  char t[4096], d[64] = "/tmp/topo-kineto-gzd-XXXXXX", path[128];
  assert_non_null(mkdtemp(d));
  snprintf(path, sizeof path, "%s/rank.pt.trace.json.gz", d);
  size_t n = (size_t)snprintf(t, sizeof t, "{\"traceEvents\":[");
  for (int i = 0; i < 10; i++)
    n += (size_t)snprintf(t + n, sizeof t - n,
                          "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm_%d\",\"ts\":%d,"
                          "\"dur\":5,\"args\":{\"stream\":7}}",
                          i ? "," : "", i, 1000 + 10 * i);
  n += (size_t)snprintf(t + n, sizeof t - n, "]}");
  uLongf zcap = compressBound((uLong)n) + 64;
  unsigned char *z = malloc(zcap);
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  zs.next_in = (Bytef *)t, zs.avail_in = (uInt)n, zs.next_out = z, zs.avail_out = (uInt)zcap;
  assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
  size_t zlen = zs.total_out;
  deflateEnd(&zs);
  topo_log_set_logger(topo_host_log);
  rp_options opt = {.reorder_window = 65536};
  const char *paths[] = {path};
  int kept_some = 0;
  for (size_t at = 10; at < zlen; at++) { /* every byte after the 10-byte header */
    unsigned char *copy = malloc(zlen);
    memcpy(copy, z, zlen);
    copy[at] ^= 0x55;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(copy, 1, zlen, f);
    fclose(f);
    free(copy);
    rp_report r;
    topo_host_log_reset();
    assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
    if (r.nsrc != 1) fail_msg("damage at byte %zu of %zu: the input was skipped", at, zlen);
    if (topo_host_log_contains("bad magic") || r.src[0].kind != RP_SRC_KINETO)
      fail_msg("damage at byte %zu of %zu: read as a binary trace", at, zlen);
    if (at >= zlen - 8) { /* the checksum or the length: every event decoded first */
      if (r.src[0].compute_kernels != 10 || !topo_host_log_contains("corrupt gzip data"))
        fail_msg("damage at trailer byte %zu: %llu kernels kept", at,
                 (unsigned long long)r.src[0].compute_kernels);
    }
    kept_some += r.src[0].compute_kernels > 0 && r.src[0].compute_kernels < 10;
    rp_report_free(&r);
  }
  assert_true(kept_some > 0); /* damage inside the data: the events before it count */
  topo_log_set_logger(NULL);
  free(z);
  unlink(path);
  rmdir(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kineto_trace_alone_gives_exact_overlap),
      cmocka_unit_test(test_kineto_and_topo_trace_of_one_rank_merge),
      cmocka_unit_test(test_every_prefix_of_a_trace_parses_safely),
      cmocka_unit_test(test_chrome_array_format_and_old_kernel_names),
      cmocka_unit_test(test_kernel_names_give_the_collective_only),
      cmocka_unit_test(test_kineto_collectives_have_no_algorithm_or_protocol),
      cmocka_unit_test(test_absolute_microseconds_keep_every_digit),
      cmocka_unit_test(test_gpu_projected_steps_win_over_cpu_steps),
      cmocka_unit_test(test_steps_follow_the_kernels_their_cpu_range_launched),
      cmocka_unit_test(test_steps_after_their_calls_match_every_kernel),
      cmocka_unit_test(test_real_ddp_trace_steps_span_the_whole_step),
      cmocka_unit_test(test_real_ddp_trace_in_both_step_windows),
      cmocka_unit_test(test_complete_steps_cut_the_topo_traces_of_the_rank_too),
      cmocka_unit_test(test_one_profiler_step_keeps_all_events),
      cmocka_unit_test(test_pass_two_replay_equals_reading_again),
      cmocka_unit_test(test_deep_nesting_does_not_recurse),
      cmocka_unit_test(test_reads_in_any_chunks_equal_one_read),
      cmocka_unit_test(test_sendrecv_kernels_count_as_p2p),
      cmocka_unit_test(test_kernels_without_their_operator_have_unknown_size_and_ranks),
      cmocka_unit_test(test_an_event_larger_than_the_buffer_is_skipped_alone),
      cmocka_unit_test(test_gzip_trace_reads_like_the_plain_one),
      cmocka_unit_test(test_non_finite_numbers_lose_only_their_field),
      cmocka_unit_test(test_out_of_range_time_is_rejected_with_a_warning),
      cmocka_unit_test(test_small_damaged_gzip_keeps_what_came_before),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
