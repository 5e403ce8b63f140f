// SPDX-License-Identifier: Apache-2.0
// topo-calibrate's command line: defaults, sizes with suffixes, lists, --quick, and one clear
// error per kind of misuse.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "calibrate.h"

static int parse(topo_cal_options *o, char *err, size_t len, int argc, ...) {
  char *argv[32];
  argv[0] = "topo-calibrate";
  va_list ap;
  va_start(ap, argc);
  for (int i = 1; i < argc; i++) argv[i] = va_arg(ap, char *);
  va_end(ap);
  topo_cal_options_default(o);
  err[0] = '\0';
  return topo_cal_options_parse(o, argc, argv, err, len);
}

static void test_sizes_accept_binary_suffixes(void **state) {
  (void)state;
  uint64_t b;
  assert_int_equal(topo_cal_parse_size("8", &b), 0);
  assert_int_equal(b, 8);
  assert_int_equal(topo_cal_parse_size("64K", &b), 0);
  assert_int_equal(b, 65536);
  assert_int_equal(topo_cal_parse_size("1G", &b), 0);
  assert_int_equal(b, 1ull << 30);
  assert_int_equal(topo_cal_parse_size("512MiB", &b), 0);
  assert_int_equal(b, 512ull << 20);
  assert_int_equal(topo_cal_parse_size("1.5k", &b), 0);
  assert_int_equal(b, 1536);
  assert_int_equal(topo_cal_parse_size("12Q", &b), -1);
  assert_int_equal(topo_cal_parse_size("", &b), -1);
  assert_int_equal(topo_cal_parse_size("-4", &b), -1);
}

static void test_defaults_cover_the_full_sweep(void **state) {
  (void)state;
  topo_cal_options o;
  char err[256];
  assert_int_equal(parse(&o, err, sizeof err, 1), 0);
  assert_int_equal(o.colls, 0x1f);
  assert_int_equal(o.min_bytes, 8);
  assert_int_equal(o.max_bytes, 1ull << 30);
  assert_int_equal(o.iters, 20);
  assert_int_equal(o.nchannels, 6);
  assert_int_equal(o.channels[0], 0);
  assert_int_equal(o.channels[5], 32);
  assert_true(o.verify && o.p2p && o.sweep && o.run_default);
}

static void test_options_parse_long_short_and_equals_forms(void **state) {
  (void)state;
  topo_cal_options o;
  char err[256];
  assert_int_equal(
      parse(&o, err, sizeof err, 12, "-c", "allreduce,all_gather", "--min-bytes=1K", "-e", "64M",
            "--channels", "nccl,8,8,16", "-n30", "--bench", "-o", "x.profile"),
      0);
  assert_int_equal(o.colls, (1u << ncclFuncAllReduce) | (1u << ncclFuncAllGather));
  assert_int_equal(o.min_bytes, 1024);
  assert_int_equal(o.max_bytes, 64ull << 20);
  assert_int_equal(o.nchannels, 3); /* duplicates dropped */
  assert_int_equal(o.channels[2], 16);
  assert_int_equal(o.iters, 30);
  assert_true(o.bench);
  assert_string_equal(o.output, "x.profile");
  assert_int_equal(parse(&o, err, sizeof err, 5, "--algos", "ring,PAT", "--protos", "LL128"), 0);
  assert_int_equal(o.algos, (1u << NCCL_ALGO_RING) | (1u << NCCL_ALGO_PAT));
  assert_int_equal(o.protos, 1u << NCCL_PROTO_LL128);
}

static void test_quick_limits_the_sweep(void **state) {
  (void)state;
  topo_cal_options o;
  char err[256];
  assert_int_equal(parse(&o, err, sizeof err, 2, "--quick"), 0);
  assert_true(o.step >= 4);
  assert_int_equal(o.nchannels, 1);
  assert_int_equal(o.channels[0], 0);
  assert_true(o.max_bytes <= (256ull << 20));
}

static void test_misuse_gives_one_clear_message(void **state) {
  (void)state;
  topo_cal_options o;
  char err[256];
  assert_int_equal(parse(&o, err, sizeof err, 2, "--bogus"), -1);
  assert_non_null(strstr(err, "unknown option '--bogus'"));
  assert_int_equal(parse(&o, err, sizeof err, 3, "-c", "allreduce,alltoall"), -1);
  assert_non_null(strstr(err, "unknown collective 'alltoall'"));
  assert_int_equal(parse(&o, err, sizeof err, 5, "-b", "1M", "-e", "1K"), -1);
  assert_non_null(strstr(err, "above --max-bytes"));
  assert_int_equal(parse(&o, err, sizeof err, 2, "--iters"), -1);
  assert_non_null(strstr(err, "needs a value"));
  assert_int_equal(parse(&o, err, sizeof err, 3, "--step", "1"), -1);
  assert_int_equal(parse(&o, err, sizeof err, 3, "--channels", "65"), -1);
  assert_int_equal(parse(&o, err, sizeof err, 3, "--timing", "sometimes"), -1);
  assert_int_equal(parse(&o, err, sizeof err, 3, "--bench", "--no-sweep"), -1);
  assert_int_equal(parse(&o, err, sizeof err, 2, "stray"), -1);
  char long_dir[600]; /* longer than the working directory it keeps: refused, never cut */
  memset(long_dir, 'w', sizeof long_dir - 1);
  long_dir[sizeof long_dir - 1] = 0;
  assert_int_equal(parse(&o, err, sizeof err, 3, "--workdir", long_dir), -1);
  assert_non_null(strstr(err, "--workdir"));
  long_dir[TOPO_CAL_WORKDIR_MAX] = 0;
  assert_int_equal(parse(&o, err, sizeof err, 3, "--workdir", long_dir), 0);
  assert_int_equal(parse(&o, err, sizeof err, 2, "--help"), 0);
  assert_true(o.help);
}

/* getopt_long's errors in topo's wording (common/cli.c), each naming the option. */
static void test_misuse_names_the_option(void **state) {
  (void)state;
  topo_cal_options o;
  char err[256];
  assert_int_equal(parse(&o, err, sizeof err, 2, "--quick=yes"), -1);
  assert_string_equal(err, "option --quick takes no value");
  assert_int_equal(parse(&o, err, sizeof err, 2, "-x"), -1);
  assert_string_equal(err, "unknown option '-x'");
  assert_int_equal(parse(&o, err, sizeof err, 2, "--iters"), -1);
  assert_string_equal(err, "option --iters needs a value");
  assert_int_equal(parse(&o, err, sizeof err, 2, "-n"), -1);
  assert_string_equal(err, "option -n needs a value");
  assert_int_equal(parse(&o, err, sizeof err, 3, "stray", "--quick"), -1);
  assert_string_equal(err, "unexpected argument 'stray'");
  /* Attached short values and a second parse in one process. */
  assert_int_equal(parse(&o, err, sizeof err, 3, "-g2", "-n7"), 0);
  assert_int_equal(o.ngpus, 2);
  assert_int_equal(o.iters, 7);
}

static void test_usage_has_examples(void **state) {
  (void)state;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  topo_cal_usage(f, "topo-calibrate");
  fclose(f);
  assert_non_null(strstr(buf, "Examples"));
  assert_non_null(strstr(buf, "--bench"));
  assert_non_null(strstr(buf, "Exit status"));
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizes_accept_binary_suffixes),
      cmocka_unit_test(test_defaults_cover_the_full_sweep),
      cmocka_unit_test(test_options_parse_long_short_and_equals_forms),
      cmocka_unit_test(test_quick_limits_the_sweep),
      cmocka_unit_test(test_misuse_gives_one_clear_message),
      cmocka_unit_test(test_misuse_names_the_option),
      cmocka_unit_test(test_usage_has_examples),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
