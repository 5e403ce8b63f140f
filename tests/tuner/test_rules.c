// SPDX-License-Identifier: Apache-2.0
// Rules in the format of NCCL's example tuner (tuner-plugin/rules.c): the example's parsing and
// first-match semantics (8/9/10 fields, inclusive bounds, -1 wildcards, ignored entries passed
// over), its two bugs fixed (no 1-channel default, no silent allreduce/ring/simple), warnings
// naming file:line, and a lookup that never allocates.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "alloc.h"
#include "log.h"
#include "plugin_host.h"
#include "rules.h"

#define NA NCCL_NUM_ALGORITHMS
#define NP NCCL_NUM_PROTOCOLS

static int setup(void **state) {
  (void)state;
  topo_log_set_logger(topo_host_log);
  topo_host_log_reset();
  return 0;
}

static topo_rules *parse(const char *text, int *nbad) {
  topo_rules *r = NULL;
  assert_int_equal(topo_rules_parse(text, strlen(text), "test.conf", &r, nbad), TOPO_OK);
  assert_non_null(r);
  return r;
}

/* A table where every entry is allowed (0 us), as NCCL fills it before the tuner runs. */
static void allowed_table(float *t) {
  for (int i = 0; i < NA * NP; i++) t[i] = 10.0f;
}

static void test_valid_lines_of_8_9_and_10_fields(void **state) {
  (void)state;
  int bad;
  topo_rules *r = parse("# comment\n"
                        "\n"
                        "allreduce,0,65536,tree,ll,4,1,8\n"
                        "  allgather , 1024 , -1 , ring , ll128 , -1 , -1 , 16 , 2  \n"
                        "reducescatter,1,2,pat,simple,64,2,-1,-1,1\r\n"
                        "BROADCAST,0,0,Ring,Simple,0,-1,-1\n",
                        &bad);
  assert_int_equal(bad, 0);
  assert_int_equal(topo_rules_count(r), 4);
  const topo_rule *a = topo_rules_at(r, 0);
  assert_int_equal(a->coll, ncclFuncAllReduce);
  assert_int_equal(a->min_bytes, 0);
  assert_int_equal(a->max_bytes, 65536);
  assert_int_equal(a->algo, NCCL_ALGO_TREE);
  assert_int_equal(a->proto, NCCL_PROTO_LL);
  assert_int_equal(a->nchannels, 4);
  assert_int_equal(a->nnodes, 1);
  assert_int_equal(a->nranks, 8);
  assert_int_equal(a->num_pipe_ops, -1); /* 8 fields: any */
  assert_int_equal(a->reg_buff, -1);
  assert_int_equal(a->line, 3);
  const topo_rule *b = topo_rules_at(r, 1);
  assert_int_equal(b->coll, ncclFuncAllGather);
  assert_true(b->max_bytes == UINT64_MAX);
  assert_int_equal(b->proto, NCCL_PROTO_LL128);
  assert_int_equal(b->nchannels, 0); /* -1: keep NCCL's, never 1 */
  assert_int_equal(b->num_pipe_ops, 2);
  assert_int_equal(b->reg_buff, -1);
  const topo_rule *c = topo_rules_at(r, 2);
  assert_int_equal(c->algo, NCCL_ALGO_PAT);
  assert_int_equal(c->nchannels, 64);
  assert_int_equal(c->reg_buff, 1);
  assert_int_equal(c->line, 5);
  const topo_rule *d = topo_rules_at(r, 3);
  assert_int_equal(d->coll, ncclFuncBroadcast);
  assert_int_equal(d->nchannels, 0);
  assert_null(topo_rules_at(r, 4));
  assert_null(topo_rules_at(r, -1));
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
  topo_rules_free(r);
}

static void test_each_malformed_line_warns_with_file_and_line_and_is_skipped(void **state) {
  (void)state;
  static const struct {
    const char *line;
    const char *fault;
  } cases[] = {
      {"allreduse,0,1,ring,ll,-1,-1,-1", "unknown collective"},
      {"allreduce,0,1,rings,ll,-1,-1,-1", "unknown algorithm"},
      {"allreduce,0,1,ring,ll64,-1,-1,-1", "unknown protocol"},
      {"allreduce,0,1,ring,ll,-1,-1", "want 8, 9 or 10"},
      {"allreduce,0,1,ring,ll,-1,-1,-1,-1,-1,-1", "want 8, 9 or 10"},
      {"allreduce,x,1,ring,ll,-1,-1,-1", "bad min_bytes"},
      {"allreduce,0,1k,ring,ll,-1,-1,-1", "bad max_bytes"},
      {"allreduce,9,1,ring,ll,-1,-1,-1", "min_bytes is larger"},
      {"allreduce,0,1,ring,ll,65,-1,-1", "bad channels"},
      {"allreduce,0,1,ring,ll,-2,-1,-1", "bad channels"},
      {"allreduce,0,1,ring,ll,4,0,-1", "bad nNodes"},
      {"allreduce,0,1,ring,ll,4,1,two", "bad nRanks"},
      {"allreduce,0,1,ring,ll,4,1,2,0", "bad numPipeOps"},
      {"allreduce,0,1,ring,ll,4,1,2,1,2", "bad regBuff"},
      {"allreduce,0,1,,ll,4,1,2", "unknown algorithm"},
  };
  const int n = (int)(sizeof cases / sizeof cases[0]);
  char text[4096] = "allreduce,0,100,ring,simple,-1,-1,-1\n";
  for (int i = 0; i < n; i++) {
    strcat(text, cases[i].line);
    strcat(text, "\n");
  }
  strcat(text, "allgather,0,100,ring,ll,-1,-1,-1\n");
  int bad;
  topo_rules *r = parse(text, &bad);
  assert_int_equal(bad, n);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), n);
  assert_int_equal(topo_rules_count(r), 2); /* the good lines around them are kept */
  assert_int_equal(topo_rules_at(r, 1)->line, n + 2);
  for (int i = 0; i < n; i++) {
    char where[64];
    snprintf(where, sizeof where, "test.conf:%d: ", i + 2);
    if (!topo_host_log_contains(where)) fail_msg("no warning names %s (%s)", where, cases[i].line);
    if (!topo_host_log_contains(cases[i].fault)) fail_msg("no warning says '%s'", cases[i].fault);
  }
  topo_rules_free(r);
}

static void test_size_bounds_are_inclusive(void **state) {
  (void)state;
  topo_rules *r = parse("allreduce,1024,2048,ring,ll,-1,-1,-1\n", NULL);
  float t[NA * NP];
  allowed_table(t);
  assert_null(topo_rules_match(r, ncclFuncAllReduce, 1023, 1, 0, 1, 2, t, NA, NP));
  assert_non_null(topo_rules_match(r, ncclFuncAllReduce, 1024, 1, 0, 1, 2, t, NA, NP));
  assert_non_null(topo_rules_match(r, ncclFuncAllReduce, 2048, 1, 0, 1, 2, t, NA, NP));
  assert_null(topo_rules_match(r, ncclFuncAllReduce, 2049, 1, 0, 1, 2, t, NA, NP));
  assert_null(topo_rules_match(r, ncclFuncAllGather, 1500, 1, 0, 1, 2, t, NA, NP));
  topo_rules_free(r);
}

static void test_wildcards_and_topology_fields(void **state) {
  (void)state;
  topo_rules *r = parse("allreduce,0,-1,tree,simple,-1,2,16\n"
                        "allreduce,0,-1,ring,ll128,8,-1,8\n"
                        "allreduce,0,-1,ring,simple,-1,-1,-1\n",
                        NULL);
  float t[NA * NP];
  allowed_table(t);
  const topo_rule *m = topo_rules_match(r, ncclFuncAllReduce, 1 << 30, 1, 0, 2, 16, t, NA, NP);
  assert_int_equal(m->line, 1);
  m = topo_rules_match(r, ncclFuncAllReduce, 1 << 30, 1, 0, 1, 16, t, NA, NP); /* nNodes differs */
  assert_int_equal(m->line, 3);
  m = topo_rules_match(r, ncclFuncAllReduce, 5, 1, 1, 4, 8, t, NA, NP); /* nNodes -1 = any */
  assert_int_equal(m->line, 2);
  assert_int_equal(m->nchannels, 8);
  m = topo_rules_match(r, ncclFuncAllReduce, UINT64_MAX, 7, 1, 9, 99, t, NA, NP);
  assert_int_equal(m->line, 3);
  topo_rules_free(r);
}

static void test_num_pipe_ops_and_reg_buff_match_when_given(void **state) {
  (void)state;
  topo_rules *r = parse("allreduce,0,-1,tree,ll,-1,-1,-1,4\n"
                        "allreduce,0,-1,nvls,simple,-1,-1,-1,-1,1\n"
                        "allreduce,0,-1,ring,ll,-1,-1,-1,-1,0\n",
                        NULL);
  float t[NA * NP];
  allowed_table(t);
  assert_int_equal(topo_rules_match(r, ncclFuncAllReduce, 8, 4, 0, 1, 8, t, NA, NP)->line, 1);
  assert_int_equal(topo_rules_match(r, ncclFuncAllReduce, 8, 1, 1, 1, 8, t, NA, NP)->line, 2);
  assert_int_equal(topo_rules_match(r, ncclFuncAllReduce, 8, 1, 0, 1, 8, t, NA, NP)->line, 3);
  assert_int_equal(topo_rules_match(r, ncclFuncAllReduce, 8, 4, 1, 1, 8, t, NA, NP)->line, 1);
  topo_rules_free(r);
}

static void test_ignored_entries_are_passed_over(void **state) {
  (void)state;
  topo_rules *r = parse("allreduce,0,-1,nvls,simple,-1,-1,-1\n"
                        "allreduce,0,-1,pat,simple,-1,-1,-1\n"
                        "allreduce,0,-1,tree,ll,2,-1,-1\n"
                        "allreduce,0,-1,ring,simple,4,-1,-1\n",
                        NULL);
  float t[NA * NP];
  allowed_table(t);
  t[NCCL_ALGO_NVLS * NP + NCCL_PROTO_SIMPLE] = NCCL_ALGO_PROTO_IGNORE;
  t[NCCL_ALGO_TREE * NP + NCCL_PROTO_LL] = -1024.0f; /* FP8 scaling of an ignored entry */
  /* NCCL 2.22 passes 6 algorithms: PAT does not exist there. */
  const topo_rule *m = topo_rules_match(r, ncclFuncAllReduce, 64, 1, 0, 1, 2, t, 6, NP);
  assert_int_equal(m->line, 4);
  assert_int_equal(m->nchannels, 4);
  /* With 7 algorithms and PAT allowed, PAT wins. */
  m = topo_rules_match(r, ncclFuncAllReduce, 64, 1, 0, 1, 2, t, NA, NP);
  assert_int_equal(m->line, 2);
  /* Without a table every entry counts as allowed. */
  m = topo_rules_match(r, ncclFuncAllReduce, 64, 1, 0, 1, 2, NULL, NA, NP);
  assert_int_equal(m->line, 1);
  /* Every listed entry ignored: no match, NCCL keeps its own choice. */
  for (int i = 0; i < NA * NP; i++) t[i] = NCCL_ALGO_PROTO_IGNORE;
  assert_null(topo_rules_match(r, ncclFuncAllReduce, 64, 1, 0, 1, 2, t, NA, NP));
  topo_rules_free(r);
}

static void test_file_of_500_lines_loads_and_matches(void **state) {
  (void)state;
  char path[] = "/tmp/topo-rules-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "# 500 rules, one per 1 KiB bucket\n");
  for (int i = 0; i < 500; i++)
    fprintf(f, "allreduce,%d,%d,%s,%s,%d,-1,-1\n", i * 1024, i * 1024 + 1023, i % 2 ? "ring" : "tree",
            i % 3 == 0 ? "ll" : i % 3 == 1 ? "ll128" : "simple", 1 + i % 32);
  fclose(f);
  topo_rules *r = NULL;
  assert_int_equal(topo_rules_load(path, &r), TOPO_OK);
  unlink(path);
  assert_int_equal(topo_rules_count(r), 500);
  float t[NA * NP];
  allowed_table(t);
  const topo_rule *m = topo_rules_match(r, ncclFuncAllReduce, 499 * 1024 + 5, 1, 0, 1, 8, t, NA, NP);
  assert_non_null(m);
  assert_int_equal(m->line, 501);
  assert_int_equal(m->algo, NCCL_ALGO_RING);
  assert_int_equal(m->proto, NCCL_PROTO_LL128); /* 499 % 3 == 1 */
  assert_int_equal(m->nchannels, 1 + 499 % 32);
  assert_null(topo_rules_match(r, ncclFuncAllReduce, 500 * 1024, 1, 0, 1, 8, t, NA, NP));
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
  topo_rules_free(r);
}

static void test_empty_and_comment_only_files_give_no_rules(void **state) {
  (void)state;
  int bad;
  topo_rules *r = parse("", &bad);
  assert_int_equal(topo_rules_count(r), 0);
  assert_null(topo_rules_match(r, ncclFuncAllReduce, 8, 1, 0, 1, 2, NULL, NA, NP));
  topo_rules_free(r);
  r = parse("# nothing\n   \n\t# indented comment\n\n", &bad);
  assert_int_equal(bad, 0);
  assert_int_equal(topo_rules_count(r), 0);
  topo_rules_free(r);
  assert_null(topo_rules_match(NULL, ncclFuncAllReduce, 8, 1, 0, 1, 2, NULL, NA, NP));
  assert_int_equal(topo_rules_count(NULL), 0);
  topo_rules_free(NULL);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
}

static void test_unreadable_file_warns_and_gives_no_rules(void **state) {
  (void)state;
  topo_rules *r = (topo_rules *)&r; /* must be reset */
  assert_int_equal(topo_rules_load("/nonexistent/nccl_tuner.conf", &r), TOPO_ERR_IO);
  assert_null(r);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  assert_true(topo_host_log_contains("/nonexistent/nccl_tuner.conf"));
}

static void test_any_bytes_are_safe(void **state) {
  (void)state;
  static const char junk[] = "allreduce,0,1,ring,ll,-1,-1,-1\0garbage\n\xff\xfe,,,,,,,,\n,\n"
                             "allreduce,0,1,ring,ll,-1,-1,-1";
  int bad;
  topo_rules *r = NULL;
  assert_int_equal(topo_rules_parse(junk, sizeof junk - 1, NULL, &r, &bad), TOPO_OK);
  assert_int_equal(topo_rules_count(r), 1); /* the last line, without a trailing newline */
  assert_int_equal(bad, 3);
  assert_true(topo_host_log_contains("<rules>:1: NUL byte"));
  topo_rules_free(r);
  /* Random bytes: never a crash. */
  char buf[512];
  unsigned seed = 12345;
  for (int round = 0; round < 2000; round++) {
    int len = (int)(seed % sizeof buf);
    for (int i = 0; i < len; i++) {
      seed = seed * 1103515245u + 12345u;
      buf[i] = "allreduce,0123456789-1ringtreellsimple\n# \r"[(seed >> 16) % 42];
    }
    assert_int_equal(topo_rules_parse(buf, (size_t)len, "fuzz", &r, NULL), TOPO_OK);
    topo_rules_free(r);
  }
}

static void test_match_never_allocates(void **state) {
  (void)state;
  topo_rules *r = parse("allgather,0,4096,ring,ll,-1,-1,-1\nallreduce,0,-1,ring,simple,8,-1,-1\n",
                        NULL);
  float t[NA * NP];
  allowed_table(t);
  long before = topo_alloc_count();
  int hits = 0;
  for (uint64_t b = 1; b < (1ull << 40); b *= 3)
    hits += topo_rules_match(r, ncclFuncAllReduce, b, 1, 0, 1, 2, t, NA, NP) != NULL;
  assert_int_equal(topo_alloc_count(), before);
  assert_true(hits > 20);
  topo_rules_free(r);
}

static void test_allocation_failure_gives_no_rules_and_a_warning(void **state) {
  (void)state;
  topo_rules *r = (topo_rules *)&r;
  topo_alloc_fail_after(0);
  topo_status st = topo_rules_parse("allreduce,0,1,ring,ll,-1,-1,-1\n", 31, "x", &r, NULL);
  topo_alloc_fail_after(-1);
  assert_int_equal(st, TOPO_ERR_NOMEM);
  assert_null(r);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_valid_lines_of_8_9_and_10_fields, setup),
      cmocka_unit_test_setup(test_each_malformed_line_warns_with_file_and_line_and_is_skipped, setup),
      cmocka_unit_test_setup(test_size_bounds_are_inclusive, setup),
      cmocka_unit_test_setup(test_wildcards_and_topology_fields, setup),
      cmocka_unit_test_setup(test_num_pipe_ops_and_reg_buff_match_when_given, setup),
      cmocka_unit_test_setup(test_ignored_entries_are_passed_over, setup),
      cmocka_unit_test_setup(test_file_of_500_lines_loads_and_matches, setup),
      cmocka_unit_test_setup(test_empty_and_comment_only_files_give_no_rules, setup),
      cmocka_unit_test_setup(test_unreadable_file_warns_and_gives_no_rules, setup),
      cmocka_unit_test_setup(test_any_bytes_are_safe, setup),
      cmocka_unit_test_setup(test_match_never_allocates, setup),
      cmocka_unit_test_setup(test_allocation_failure_gives_no_rules_and_a_warning, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
