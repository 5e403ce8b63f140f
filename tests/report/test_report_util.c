// SPDX-License-Identifier: Apache-2.0
// topo-report's building blocks: nearest-rank quantiles (exact, then histogram within 0.4 %),
// nccl-tests sizes and busbw factors, and the interval sweep on its own (touching intervals,
// identical intervals on two streams, steps cut in the middle of an interval, empty input), and
// the map the tables find their entries through (add, replace, growth).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "jscan.h"
#include "report.h"
#include "report_analysis.h"

static void test_quantiles_exact_then_histogram(void **state) {
  (void)state;
  rp_quant q;
  memset(&q, 0, sizeof q);
  assert_int_equal(rp_quant_get(&q, 0.5), 0);
  for (int i = 10; i >= 1; i--) rp_quant_add(&q, i * 100);
  assert_true(rp_quant_is_exact(&q));
  assert_int_equal(rp_quant_get(&q, 0.5), 500); /* 5th of 10 */
  assert_int_equal(rp_quant_get(&q, 0.99), 1000);
  assert_int_equal(rp_quant_get(&q, 0.0), 100);
  rp_quant_free(&q);
  memset(&q, 0, sizeof q);
  for (int64_t i = 1; i <= 100000; i++) rp_quant_add(&q, i * 1000); /* 1 us .. 100 ms */
  assert_false(rp_quant_is_exact(&q));
  int64_t med = rp_quant_get(&q, 0.5), p99 = rp_quant_get(&q, 0.99);
  assert_true(llabs(med - 50000000) <= 50000000 / 250);
  assert_true(llabs(p99 - 99000000) <= 99000000 / 250);
  assert_int_equal(rp_quant_get(&q, 1.0), 100000000);
  assert_int_equal((int64_t)q.sum, (int64_t)1000 * 100000 * 100001 / 2);
  rp_quant_free(&q);
}

static void test_sizes_and_factors_follow_nccl_tests(void **state) {
  (void)state;
  assert_int_equal(rp_coll_size(2, 1024, 8), 8192); /* AllGather: per-rank part x nranks */
  assert_int_equal(rp_coll_size(3, 1024, 8), 8192); /* ReduceScatter */
  assert_int_equal(rp_coll_size(4, 1024, 8), 1024); /* AllReduce */
  assert_true(rp_busbw_factor(4, 2) == 1.0);
  assert_true(rp_busbw_factor(2, 4) == 0.75);
  assert_true(rp_busbw_factor(0, 8) == 1.0);
  assert_string_equal(rp_func_name(3), "ReduceScatter");
  assert_string_equal(rp_algo_name(6), "PAT");
  assert_string_equal(rp_proto_name(-1), "?");
  char b[32];
  rp_bucket_label(20, b, sizeof b);
  assert_string_equal(b, "1 MiB+");
}

static void test_sweep_touching_duplicate_and_step_cuts(void **state) {
  (void)state;
  rp_step steps[2] = {{.start = 0, .stop = 150, .value = 1},
                      {.start = 150, .stop = 1000, .value = 2}};
  rp_sweep *s = rp_sweep_new(8, steps, 2);
  assert_non_null(s);
  rp_interval iv[] = {
      {0, 100, 1, RP_COMPUTE, 0xff, RP_FROM_KERNEL, 0},
      {100, 200, 1, RP_COMPUTE, 0xff, RP_FROM_KERNEL, 0}, /* touches: one union [0,200) */
      {50, 300, 2, RP_COMM, 4, RP_FROM_COLL, 0},
      {50, 300, 3, RP_COMM, 4, RP_FROM_COLL, 0},  /* same interval on another stream */
      {400, 400, 3, RP_COMM, 4, RP_FROM_COLL, 0}, /* empty: ignored */
      {500, 600, 3, RP_MEMORY, 0xff, RP_FROM_KERNEL, 0},
  };
  for (size_t i = 0; i < sizeof iv / sizeof *iv; i++)
    assert_int_equal(rp_sweep_add(s, &iv[i]), TOPO_OK);
  rp_times t;
  rp_sweep_finish(s, &t);
  assert_int_equal(t.compute, 200);
  assert_int_equal(t.comm, 250);
  assert_int_equal(t.overlap, 150);
  assert_int_equal(t.memory, 100);
  assert_int_equal(t.busy, 400);
  assert_int_equal(t.first, 0);
  assert_int_equal(t.last, 600);
  assert_int_equal(steps[0].comm, 100); /* [50,150) */
  assert_int_equal(steps[0].overlap, 100);
  assert_int_equal(steps[1].comm, 150);   /* [150,300) */
  assert_int_equal(steps[1].compute, 50); /* [150,200) */
  assert_int_equal(steps[1].busy, 250);   /* [150,300) + [500,600) */
  rp_sweep_free(s);

  s = rp_sweep_new(4, NULL, 0);
  rp_sweep_finish(s, &t);
  assert_int_equal(t.busy, 0);
  assert_true(t.first == INT64_MAX && t.last == INT64_MIN);
  rp_sweep_free(s);
}

/* The overlap model leaves out chunks whose ratio is far from the others' (a job's warm-up
 * steps), keeps chunks that alternate between two nearby ratios, and judges nothing with fewer
 * than 3 chunks. */
static void robust(rp_omodel *m, const int64_t *comm, const int64_t *ovl, size_t n) {
  rp_step chunks[16];
  memset(chunks, 0, sizeof chunks);
  for (size_t i = 0; i < n; i++) chunks[i].cov_comm = comm[i], chunks[i].cov_overlap = ovl[i];
  memset(m, 0, sizeof *m);
  rp_omodel_add_robust(m, chunks, n);
  rp_omodel_finish(m, "none");
}

static void test_overlap_model_leaves_out_far_chunks(void **state) {
  (void)state;
  rp_omodel m;
  const int64_t c6[6] = {1000, 1000, 1000, 1000, 1000, 1000};
  const int64_t warm[6] = {390, 100, 90, 340, 110, 100}; /* two warm-up steps */
  robust(&m, c6, warm, 6);
  assert_int_equal(m.outliers, 2);
  assert_int_equal(m.chunks, 4);
  assert_true(m.ratio > 0.0999 && m.ratio < 0.1001);
  const int64_t two[6] = {262, 286, 262, 286, 286, 286}; /* alternating 26.2 % / 28.6 % */
  robust(&m, c6, two, 6);
  assert_int_equal(m.outliers, 0);
  assert_int_equal(m.chunks, 6);
  const int64_t far2[2] = {100, 900};
  robust(&m, c6, far2, 2);
  assert_int_equal(m.outliers, 0);
  assert_true(m.ratio > 0.4999 && m.ratio < 0.5001);
  const int64_t spread3[3] = {100, 500, 900}; /* no majority: nothing is far from it */
  robust(&m, c6, spread3, 3);
  assert_int_equal(m.outliers, 0);
  /* the weights are the chunks' communication: a long step outweighs short ones */
  const int64_t cw[5] = {100, 100, 100, 5000, 5000};
  const int64_t ow[5] = {50, 50, 50, 500, 500};
  robust(&m, cw, ow, 5);
  assert_int_equal(m.outliers, 3);
  assert_int_equal(m.chunks, 2);
  assert_true(m.ratio > 0.0999 && m.ratio < 0.1001);
}

/* 10,000 keys spread over the 64-bit range (0 and all ones among them) through several
 * growths; rp_map_put replaces the value of a key present and adds a new one. */
static void test_map_finds_adds_and_replaces(void **state) {
  (void)state;
  rp_map m = {0};
  uint32_t v;
  assert_int_equal(rp_map_find(&m, 7, &v), 0);
  for (uint32_t i = 0; i < 10000; i++)
    assert_int_equal(rp_map_add(&m, (uint64_t)i * 0x9e3779b97f4a7c15ull, i), 1);
  assert_int_equal(rp_map_add(&m, ~0ull, 10000), 1);
  for (uint32_t i = 0; i < 10000; i++) {
    assert_int_equal(rp_map_find(&m, (uint64_t)i * 0x9e3779b97f4a7c15ull, &v), 1);
    assert_int_equal(v, i);
  }
  assert_int_equal(rp_map_find(&m, 12345, &v), 0);
  assert_int_equal(rp_map_put(&m, 0, 42), 1); /* key 0 (i = 0) present: replaced */
  assert_int_equal(rp_map_find(&m, 0, &v), 1);
  assert_int_equal(v, 42);
  assert_int_equal(rp_map_put(&m, 12345, 7), 1); /* absent: added */
  assert_int_equal(rp_map_find(&m, 12345, &v), 1);
  assert_int_equal(v, 7);
  assert_int_equal(rp_map_find(&m, ~0ull, &v), 1);
  assert_int_equal(v, 10000);
  assert_int_equal(m.n, 10002);
  rp_map_free(&m);
  assert_int_equal(rp_map_find(&m, 0, &v), 0);
}

static js_str txt(const char *s) { return (js_str){s, strlen(s)}; }

/* One reader for every JSON number: JSON's form and what producers write besides it. */
static void test_every_number_form_reads_through_one_routine(void **state) {
  (void)state;
  int64_t v = 0;
  double d = 0;
  assert_int_equal(js_num_int(txt("1e3"), &v), JS_VAL_OK); /* 1 before: digits up to the 'e' */
  assert_int_equal(v, 1000);
  assert_int_equal(js_num_int(txt("-7.9"), &v), JS_VAL_OK);
  assert_int_equal(v, -7);
  assert_int_equal(js_num_int(txt("9223372036854775807"), &v), JS_VAL_OK);
  assert_true(v == INT64_MAX);
  assert_int_equal(js_num_int(txt("9223372036854775808"), &v), JS_VAL_RANGE);
  assert_int_equal(js_us_to_ns(txt("1700000000123456.789"), &v), JS_VAL_OK);
  assert_true(v == 1700000000123456789LL);
  assert_int_equal(js_us_to_ns(txt("1.5e3"), &v), JS_VAL_OK);
  assert_int_equal(v, 1500000);
  assert_int_equal(js_us_to_ns(txt("0.0005"), &v), JS_VAL_OK);
  assert_int_equal(v, 1);
  assert_int_equal(js_us_to_ns(txt("-0.0005"), &v), JS_VAL_OK);
  assert_int_equal(v, -1);
  assert_int_equal(js_us_to_ns(txt("0.00049999999999999999999999"), &v), JS_VAL_OK);
  assert_int_equal(v, 0);
  assert_int_equal(js_us_to_ns(txt("1e30"), &v), JS_VAL_RANGE);
  assert_int_equal(js_us_to_ns(txt("-2305843009213693.952"), &v), JS_VAL_RANGE); /* -2^61 ns */
  assert_int_equal(js_us_to_ns(txt("1e-400"), &v), JS_VAL_OK);
  assert_int_equal(v, 0);
  static const char *const nonfinite[] = {"NaN", "-NaN", "nan",  "-nan", "Infinity", "-Infinity",
                                          "inf", "-inf", "+inf", "INF",  "infinity"};
  for (size_t i = 0; i < sizeof nonfinite / sizeof *nonfinite; i++) {
    assert_int_equal(js_us_to_ns(txt(nonfinite[i]), &v), JS_VAL_NONFINITE);
    assert_int_equal(js_num_int(txt(nonfinite[i]), &v), JS_VAL_NONFINITE);
    assert_int_equal(js_num_double(txt(nonfinite[i]), &d), JS_VAL_NONFINITE);
  }
  static const char *const none[] = {"null", "true", "", "-", "1e", "1.2.3", "12abc", "infinit"};
  for (size_t i = 0; i < sizeof none / sizeof *none; i++)
    assert_int_equal(js_num_int(txt(none[i]), &v), JS_VAL_ABSENT);
  assert_int_equal(js_num_double(txt("2.5e-1"), &d), JS_VAL_OK);
  assert_true(d == 0.25);
  assert_int_equal(js_num_double(txt("1e400"), &d), JS_VAL_RANGE);
  assert_int_equal(js_str_int(txt("stream 7"), &v), JS_VAL_OK);
  assert_int_equal(v, 7);
  assert_int_equal(js_str_int(txt(" 12 "), &v), JS_VAL_OK);
  assert_int_equal(v, 12);
  assert_int_equal(js_str_int(txt("NaN"), &v), JS_VAL_NONFINITE);
  /* an empty slice (a field never read: no pointer) decodes to "" */
  char buf[8] = "x";
  assert_int_equal(js_unescape((js_str){NULL, 0}, buf, sizeof buf), 0);
  assert_string_equal(buf, "");
  /* the scanner takes the whole word as the number's text */
  const char *in = "-Infinity,", *p = in;
  js_str t;
  assert_int_equal(js_number(&p, in + strlen(in), &t), JS_OK);
  assert_int_equal(t.n, 9);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quantiles_exact_then_histogram),
      cmocka_unit_test(test_sizes_and_factors_follow_nccl_tests),
      cmocka_unit_test(test_sweep_touching_duplicate_and_step_cuts),
      cmocka_unit_test(test_overlap_model_leaves_out_far_chunks),
      cmocka_unit_test(test_map_finds_adds_and_replaces),
      cmocka_unit_test(test_every_number_form_reads_through_one_routine),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
