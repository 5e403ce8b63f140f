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
#include "tuner_test_util.h"

#define NA NCCL_NUM_ALGORITHMS
#define NP NCCL_NUM_PROTOCOLS

/* The example tuner's per-call scan, kept here (not in the product) as the reference the index
 * must agree with: the first rule in file order matching the query whose entry is allowed. */
static const topo_rule *ref_scan(const topo_rules *rules, int coll, uint64_t nbytes,
                                 int num_pipe_ops, int reg_buff, int nnodes, int nranks,
                                 const float *table, int num_algo, int num_proto, uint32_t allow) {
  for (int i = 0; i < topo_rules_count(rules); i++) {
    const topo_rule *r = topo_rules_at(rules, i);
    if (r->coll != coll || nbytes < r->min_bytes || nbytes > r->max_bytes) continue;
    if (r->nnodes != -1 && r->nnodes != nnodes) continue;
    if (r->nranks != -1 && r->nranks != nranks) continue;
    if (r->num_pipe_ops != -1 && r->num_pipe_ops != num_pipe_ops) continue;
    if (r->reg_buff != -1 && r->reg_buff != reg_buff) continue;
    if (!(allow >> (r->algo * NP + r->proto) & 1)) continue;
    if (table) {
      if (r->algo >= num_algo || r->proto >= num_proto) continue;
      if (!(table[r->algo * num_proto + r->proto] >= 0.0f)) continue;
    }
    return r;
  }
  return NULL;
}

/* One query through an index built for (nnodes, nranks), checked against the reference scan. */
static const topo_rule *match(const topo_rules *rules, int coll, uint64_t nbytes, int pipe, int reg,
                              int nnodes, int nranks, const float *table, int na, int np) {
  topo_rules_index *ix = NULL;
  assert_int_equal(topo_rules_index_build(rules, nnodes, nranks, &ix), TOPO_OK);
  const topo_rule *m = topo_rules_index_find(ix, coll, nbytes, pipe, reg, table, na, np,
                                             TOPO_RULES_ALLOW_ALL, NULL, NULL);
  topo_rules_index_free(ix);
  assert_ptr_equal(m, ref_scan(rules, coll, nbytes, pipe, reg, nnodes, nranks, table, na, np,
                               TOPO_RULES_ALLOW_ALL));
  return m;
}

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
  topo_rules *r = parse(
      "# comment\n"
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
  assert_null(match(r, ncclFuncAllReduce, 1023, 1, 0, 1, 2, t, NA, NP));
  assert_non_null(match(r, ncclFuncAllReduce, 1024, 1, 0, 1, 2, t, NA, NP));
  assert_non_null(match(r, ncclFuncAllReduce, 2048, 1, 0, 1, 2, t, NA, NP));
  assert_null(match(r, ncclFuncAllReduce, 2049, 1, 0, 1, 2, t, NA, NP));
  assert_null(match(r, ncclFuncAllGather, 1500, 1, 0, 1, 2, t, NA, NP));
  topo_rules_free(r);
}

static void test_wildcards_and_topology_fields(void **state) {
  (void)state;
  topo_rules *r = parse(
      "allreduce,0,-1,tree,simple,-1,2,16\n"
      "allreduce,0,-1,ring,ll128,8,-1,8\n"
      "allreduce,0,-1,ring,simple,-1,-1,-1\n",
      NULL);
  float t[NA * NP];
  allowed_table(t);
  const topo_rule *m = match(r, ncclFuncAllReduce, 1 << 30, 1, 0, 2, 16, t, NA, NP);
  assert_int_equal(m->line, 1);
  m = match(r, ncclFuncAllReduce, 1 << 30, 1, 0, 1, 16, t, NA, NP); /* nNodes differs */
  assert_int_equal(m->line, 3);
  m = match(r, ncclFuncAllReduce, 5, 1, 1, 4, 8, t, NA, NP); /* nNodes -1 = any */
  assert_int_equal(m->line, 2);
  assert_int_equal(m->nchannels, 8);
  m = match(r, ncclFuncAllReduce, UINT64_MAX, 7, 1, 9, 99, t, NA, NP);
  assert_int_equal(m->line, 3);
  topo_rules_free(r);
}

static void test_num_pipe_ops_and_reg_buff_match_when_given(void **state) {
  (void)state;
  topo_rules *r = parse(
      "allreduce,0,-1,tree,ll,-1,-1,-1,4\n"
      "allreduce,0,-1,nvls,simple,-1,-1,-1,-1,1\n"
      "allreduce,0,-1,ring,ll,-1,-1,-1,-1,0\n",
      NULL);
  float t[NA * NP];
  allowed_table(t);
  assert_int_equal(match(r, ncclFuncAllReduce, 8, 4, 0, 1, 8, t, NA, NP)->line, 1);
  assert_int_equal(match(r, ncclFuncAllReduce, 8, 1, 1, 1, 8, t, NA, NP)->line, 2);
  assert_int_equal(match(r, ncclFuncAllReduce, 8, 1, 0, 1, 8, t, NA, NP)->line, 3);
  assert_int_equal(match(r, ncclFuncAllReduce, 8, 4, 1, 1, 8, t, NA, NP)->line, 1);
  topo_rules_free(r);
}

static void test_ignored_entries_are_passed_over(void **state) {
  (void)state;
  topo_rules *r = parse(
      "allreduce,0,-1,nvls,simple,-1,-1,-1\n"
      "allreduce,0,-1,pat,simple,-1,-1,-1\n"
      "allreduce,0,-1,tree,ll,2,-1,-1\n"
      "allreduce,0,-1,ring,simple,4,-1,-1\n",
      NULL);
  float t[NA * NP];
  allowed_table(t);
  t[NCCL_ALGO_NVLS * NP + NCCL_PROTO_SIMPLE] = NCCL_ALGO_PROTO_IGNORE;
  t[NCCL_ALGO_TREE * NP + NCCL_PROTO_LL] = -1024.0f; /* FP8 scaling of an ignored entry */
  /* NCCL 2.22 passes 6 algorithms: PAT does not exist there. */
  const topo_rule *m = match(r, ncclFuncAllReduce, 64, 1, 0, 1, 2, t, 6, NP);
  assert_int_equal(m->line, 4);
  assert_int_equal(m->nchannels, 4);
  /* With 7 algorithms and PAT allowed, PAT wins. */
  m = match(r, ncclFuncAllReduce, 64, 1, 0, 1, 2, t, NA, NP);
  assert_int_equal(m->line, 2);
  /* Without a table every entry counts as allowed. */
  m = match(r, ncclFuncAllReduce, 64, 1, 0, 1, 2, NULL, NA, NP);
  assert_int_equal(m->line, 1);
  /* Every listed entry ignored: no match, NCCL keeps its own choice. */
  for (int i = 0; i < NA * NP; i++) t[i] = NCCL_ALGO_PROTO_IGNORE;
  assert_null(match(r, ncclFuncAllReduce, 64, 1, 0, 1, 2, t, NA, NP));
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
    fprintf(f, "allreduce,%d,%d,%s,%s,%d,-1,-1\n", i * 1024, i * 1024 + 1023,
            i % 2 ? "ring" : "tree",
            i % 3 == 0   ? "ll"
            : i % 3 == 1 ? "ll128"
                         : "simple",
            1 + i % 32);
  fclose(f);
  topo_rules *r = NULL;
  assert_int_equal(topo_rules_load(path, &r), TOPO_OK);
  unlink(path);
  assert_int_equal(topo_rules_count(r), 500);
  float t[NA * NP];
  allowed_table(t);
  const topo_rule *m = match(r, ncclFuncAllReduce, 499 * 1024 + 5, 1, 0, 1, 8, t, NA, NP);
  assert_non_null(m);
  assert_int_equal(m->line, 501);
  assert_int_equal(m->algo, NCCL_ALGO_RING);
  assert_int_equal(m->proto, NCCL_PROTO_LL128); /* 499 % 3 == 1 */
  assert_int_equal(m->nchannels, 1 + 499 % 32);
  assert_null(match(r, ncclFuncAllReduce, 500 * 1024, 1, 0, 1, 8, t, NA, NP));
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
  topo_rules_free(r);
}

static void test_empty_and_comment_only_files_give_no_rules(void **state) {
  (void)state;
  int bad;
  topo_rules *r = parse("", &bad);
  assert_int_equal(topo_rules_count(r), 0);
  assert_null(match(r, ncclFuncAllReduce, 8, 1, 0, 1, 2, NULL, NA, NP));
  topo_rules_free(r);
  r = parse("# nothing\n   \n\t# indented comment\n\n", &bad);
  assert_int_equal(bad, 0);
  assert_int_equal(topo_rules_count(r), 0);
  topo_rules_free(r);
  assert_null(match(NULL, ncclFuncAllReduce, 8, 1, 0, 1, 2, NULL, NA, NP));
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
  static const char junk[] =
      "allreduce,0,1,ring,ll,-1,-1,-1\0garbage\n\xff\xfe,,,,,,,,\n,\n"
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
  topo_rules *r =
      parse("allgather,0,4096,ring,ll,-1,-1,-1\nallreduce,0,-1,ring,simple,8,-1,-1\n", NULL);
  float t[NA * NP];
  allowed_table(t);
  topo_rules_index *ix = NULL;
  assert_int_equal(topo_rules_index_build(r, 1, 2, &ix), TOPO_OK);
  long before = topo_alloc_count();
  int hits = 0;
  for (uint64_t b = 1; b < (1ull << 40); b *= 3)
    hits += topo_rules_index_find(ix, ncclFuncAllReduce, b, 1, 0, t, NA, NP, TOPO_RULES_ALLOW_ALL,
                                  NULL, NULL) != NULL;
  assert_int_equal(topo_alloc_count(), before);
  assert_true(hits > 20);
  topo_rules_index_free(ix);
  topo_rules_free(r);
}

/* A random rule file of n lines: sizes clustered on a few powers of two (so that ranges overlap
 * and boundaries fall inside and on the edges of octaves), mostly wildcards, sometimes
 * numPipeOps / regBuff / nNodes / nRanks constraints. */
static char *random_rules(uint64_t *seed, int n) {
  static const char *coll[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
  static const char *algo[] = {"tree",      "ring", "collnet_direct", "collnet_chain", "nvls",
                               "nvls_tree", "pat"};
  static const char *proto[] = {"ll", "ll128", "simple"};
  size_t cap = (size_t)n * 96 + 64, len = 0;
  char *text = malloc(cap);
  text[0] = '\0';
  for (int i = 0; i < n; i++) {
    uint64_t x = test_rand(seed);
    uint64_t lo = (x >> 8) % 4 == 0 ? 0 : (1ull << (x >> 12) % 34) + (x >> 20) % 3 - 1;
    uint64_t hi = lo + ((x >> 24) % 4 == 0 ? 0 : (1ull << (x >> 28) % 30));
    char hibuf[24];
    if ((x >> 34) % 8 == 0) snprintf(hibuf, sizeof hibuf, "-1");
    else snprintf(hibuf, sizeof hibuf, "%llu", (unsigned long long)hi);
    uint64_t y = test_rand(seed);
    int pipe = y % 6 == 0 ? (int)(1 + (y >> 3) % 3) : -1;
    int reg = (y >> 6) % 5 == 0 ? (int)((y >> 9) % 2) : -1;
    int nodes = (y >> 12) % 7 == 0 ? (int)(1 + (y >> 15) % 2) : -1;
    int ranks = (y >> 18) % 7 == 0 ? (int)(2 << (y >> 21) % 2) : -1;
    len +=
        (size_t)snprintf(text + len, cap - len, "%s,%llu,%s,%s,%s,%d,%d,%d,%d,%d\n", coll[x % 5],
                         (unsigned long long)lo, hibuf, algo[(x >> 40) % 7], proto[(x >> 44) % 3],
                         (int)((x >> 48) % 5) - 1, nodes, ranks, pipe, reg);
  }
  return text;
}

/* The index answers as the per-call scan over >= 100k random queries per file size, including
 * every rule boundary (min, max, max + 1, min - 1), random cost tables (ignored entries, 6 or 7
 * algorithms) and v2-style allow masks; the answer is the same rule, not only the same choice. */
static void test_index_agrees_with_the_scan_on_random_files(void **state) {
  (void)state;
  static const int sizes[] = {0, 10, 100, 1000};
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  long total = 0, matched = 0, passed_over = 0;
  for (size_t f = 0; f < 4; f++) {
    for (int round = 0; round < 3; round++) {
      char *text = random_rules(&seed, sizes[f]);
      topo_rules *r = parse(text, NULL);
      free(text);
      for (int shape = 0; shape < 2; shape++) {
        int nnodes = 1 + shape, nranks = 2 << shape;
        topo_rules_index *ix = NULL;
        assert_int_equal(topo_rules_index_build(r, nnodes, nranks, &ix), TOPO_OK);
        if (sizes[f] == 0) assert_null(ix);
        int nq = 20000;
        for (int q = 0; q < nq; q++) {
          uint64_t x = test_rand(&seed);
          int coll = (int)(x % 5), pipe = 1 + (int)((x >> 3) % 4), reg = (int)((x >> 5) & 1);
          uint64_t nb;
          int n = topo_rules_count(r);
          if (n && (x >> 6) % 2) { /* a boundary of a random rule */
            const topo_rule *b = topo_rules_at(r, (int)((x >> 8) % (uint64_t)n));
            uint64_t e[4] = {b->min_bytes, b->max_bytes, b->max_bytes + 1, b->min_bytes - 1};
            nb = e[(x >> 30) % 4];
            coll = (x >> 33) % 4 ? b->coll : coll;
          } else {
            nb = (x >> 40) % 16 == 0 ? (x >> 7) : test_rand_size(&seed, 34);
          }
          float t[NA * NP];
          uint64_t m = test_rand(&seed);
          for (int i = 0; i < NA * NP; i++) t[i] = (m >> i) % 4 == 0 ? -1.0f : (float)(i + 1);
          int na = (m >> 40) % 3 == 0 ? 6 : NA;
          uint32_t allow =
              (m >> 42) % 2 ? TOPO_RULES_ALLOW_ALL : (uint32_t)(m >> 21) & TOPO_RULES_ALLOW_ALL;
          const float *table = (m >> 43) % 3 == 0 ? NULL : t;
          const topo_rule *ignored = NULL;
          const topo_rule *got =
              topo_rules_index_find(ix, coll, nb, pipe, reg, table, na, NP, allow, &ignored, NULL);
          const topo_rule *want =
              ref_scan(r, coll, nb, pipe, reg, nnodes, nranks, table, na, NP, allow);
          if (got != want)
            fail_msg("%d rules: coll %d bytes %llu pipe %d reg %d: index line %d, scan line %d",
                     sizes[f], coll, (unsigned long long)nb, pipe, reg, got ? got->line : -1,
                     want ? want->line : -1);
          if (ignored) { /* a real match whose entry was not allowed, ahead of the answer */
            assert_true(ignored->coll == coll && nb >= ignored->min_bytes &&
                        nb <= ignored->max_bytes);
            assert_true(!got || ignored->line < got->line);
          }
          total++;
          matched += got != NULL;
          passed_over += ignored != NULL;
        }
        topo_rules_index_free(ix);
      }
      topo_rules_free(r);
    }
  }
  assert_true(total >= 100000 * 4);
  assert_true(matched > total / 10); /* the queries hit rules, and not only trivially */
  assert_true(passed_over > total / 50);
}

/* The hot path does not scan: with 1000 rules, no query looks at more candidates than
 * 21 x the distinct (numPipeOps, regBuff) constraints, nor searches more than a few boundaries
 * in its octave, whatever the number of rules that match it. */
static void test_lookup_work_is_bounded_independent_of_rule_count(void **state) {
  (void)state;
  int worst[2][2] = {{0, 0}, {0, 0}}; /* [file][search steps, candidates] */
  for (int f = 0; f < 2; f++) {
    int n = f ? 1000 : 10;
    size_t cap = (size_t)n * 64, len = 0;
    char *text = malloc(cap);
    /* Every rule covers 1 MiB; the boundaries take a few values per octave (2^k, 2^k + 1..3):
     * n rules match a 1 MiB query. */
    for (int i = 0; i < n; i++)
      len += (size_t)snprintf(text + len, cap - len, "allreduce,%llu,%llu,%s,%s,-1,-1,-1\n",
                              (unsigned long long)(1ull << (i % 21)),
                              (unsigned long long)((1ull << (20 + i % 21)) + i % 3),
                              i % 2 ? "ring" : "tree",
                              i % 3 == 0   ? "ll"
                              : i % 3 == 1 ? "ll128"
                                           : "simple");
    topo_rules *r = parse(text, NULL);
    free(text);
    topo_rules_index *ix = NULL;
    assert_int_equal(topo_rules_index_build(r, 1, 2, &ix), TOPO_OK);
    float t[NA * NP];
    allowed_table(t);
    t[NCCL_ALGO_TREE * NP + NCCL_PROTO_LL] = -1.0f; /* passed over: the walk goes on */
    for (uint64_t b = 1; b < (1ull << 42); b += b / 7 + 1) {
      topo_rules_probe probe = {0, 0};
      const topo_rule *m = topo_rules_index_find(ix, ncclFuncAllReduce, b, 1, 0, t, NA, NP,
                                                 TOPO_RULES_ALLOW_ALL, NULL, &probe);
      assert_ptr_equal(
          m, ref_scan(r, ncclFuncAllReduce, b, 1, 0, 1, 2, t, NA, NP, TOPO_RULES_ALLOW_ALL));
      if (probe.search_steps > worst[f][0]) worst[f][0] = probe.search_steps;
      if (probe.candidates > worst[f][1]) worst[f][1] = probe.candidates;
    }
    topo_rules_index_free(ix);
    topo_rules_free(r);
  }
  assert_true(worst[1][1] <= NA * NP); /* 1000 rules: at most one candidate per entry */
  assert_true(worst[1][1] >= 2);       /* the ignored Tree/LL was walked past */
  assert_true(worst[1][0] <= 3);       /* <= 5 boundaries inside any octave */
  assert_true(worst[1][1] <= worst[0][1] + NA * NP);
}

/* n rules that nest ([i, 2n - i]) and differ only in numPipeOps (i + 1), each the only rule of its
 * numPipeOps: every query matches exactly the rule of its numPipeOps, or none. */
static topo_rules *nested_pipe_rules(int n) {
  size_t cap = (size_t)n * 64 + 1, len = 0;
  char *text = malloc(cap);
  text[0] = 0;
  for (int i = 0; i < n; i++)
    len += (size_t)snprintf(text + len, cap - len, "allreduce,%d,%d,%s,simple,-1,-1,-1,%d\n", i,
                            2 * n - i, i % 2 ? "ring" : "tree", i + 1);
  topo_rules *r = parse(text, NULL);
  free(text);
  return r;
}

/* Rules that nest and differ only in numPipeOps: the index holds a few candidates per rule (not
 * one per pair of rules: 16 s and 97 MB at 4,000 rules before), and a query looks at a few
 * candidates whatever the number of rules around it. */
static void test_nested_rules_differing_in_pipe_ops_index_linearly(void **state) {
  (void)state;
  enum { N = 4000 };
  topo_rules *r = nested_pipe_rules(N);
  topo_rules_index *ix = NULL;
  assert_int_equal(topo_rules_index_build(r, 1, 2, &ix), TOPO_OK);
  topo_rules_index_stats st;
  topo_rules_index_stats_get(ix, &st);
  if (st.candidates > 8 * (size_t)N || st.segments > 8 * (size_t)N)
    fail_msg("%zu candidates in %zu segments for %d rules", st.candidates, st.segments, N);
  float t[NA * NP];
  allowed_table(t);
  int worst = 0;
  for (int pipe = 1; pipe <= N + 1; pipe += 37)
    for (uint64_t b = 0; b <= 2 * N + 1; b += 97) {
      topo_rules_probe probe = {0, 0};
      const topo_rule *m = topo_rules_index_find(ix, ncclFuncAllReduce, b, pipe, 0, t, NA, NP,
                                                 TOPO_RULES_ALLOW_ALL, NULL, &probe);
      assert_ptr_equal(
          m, ref_scan(r, ncclFuncAllReduce, b, pipe, 0, 1, 2, t, NA, NP, TOPO_RULES_ALLOW_ALL));
      if (probe.candidates > worst) worst = probe.candidates;
    }
  if (worst > 4 * NA * NP) fail_msg("a query looked at %d candidates", worst);
  topo_rules_index_free(ix);
  topo_rules_free(r);
}

/* Each rule is reported once per index, whatever the number of threads or calls. */
static void test_report_once_per_rule(void **state) {
  (void)state;
  topo_rules *r =
      parse("allreduce,0,-1,nvls,simple,-1,-1,-1\nallreduce,0,-1,ring,ll,-1,-1,-1\n", NULL);
  topo_rules_index *ix = NULL;
  assert_int_equal(topo_rules_index_build(r, 1, 2, &ix), TOPO_OK);
  float t[NA * NP];
  allowed_table(t);
  t[NCCL_ALGO_NVLS * NP + NCCL_PROTO_SIMPLE] = -1.0f;
  int reports = 0;
  for (int i = 0; i < 100; i++) {
    const topo_rule *ignored;
    const topo_rule *m = topo_rules_index_find(ix, ncclFuncAllReduce, 8u << i % 20, 1, 0, t, NA, NP,
                                               TOPO_RULES_ALLOW_ALL, &ignored, NULL);
    assert_int_equal(m->line, 2);
    if (i == 0) assert_non_null(ignored);
    if (!ignored) continue; /* reported already: not handed out again */
    assert_int_equal(ignored->line, 1);
    reports += topo_rules_index_report_once(ix, ignored);
  }
  assert_int_equal(reports, 1);
  assert_int_equal(topo_rules_index_report_once(ix, topo_rules_at(r, 1)), 1);
  topo_rules_index_free(ix);
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
      cmocka_unit_test_setup(test_each_malformed_line_warns_with_file_and_line_and_is_skipped,
                             setup),
      cmocka_unit_test_setup(test_size_bounds_are_inclusive, setup),
      cmocka_unit_test_setup(test_wildcards_and_topology_fields, setup),
      cmocka_unit_test_setup(test_num_pipe_ops_and_reg_buff_match_when_given, setup),
      cmocka_unit_test_setup(test_ignored_entries_are_passed_over, setup),
      cmocka_unit_test_setup(test_file_of_500_lines_loads_and_matches, setup),
      cmocka_unit_test_setup(test_empty_and_comment_only_files_give_no_rules, setup),
      cmocka_unit_test_setup(test_unreadable_file_warns_and_gives_no_rules, setup),
      cmocka_unit_test_setup(test_any_bytes_are_safe, setup),
      cmocka_unit_test_setup(test_match_never_allocates, setup),
      cmocka_unit_test_setup(test_index_agrees_with_the_scan_on_random_files, setup),
      cmocka_unit_test_setup(test_lookup_work_is_bounded_independent_of_rule_count, setup),
      cmocka_unit_test_setup(test_nested_rules_differing_in_pipe_ops_index_linearly, setup),
      cmocka_unit_test_setup(test_report_once_per_rule, setup),
      cmocka_unit_test_setup(test_allocation_failure_gives_no_rules_and_a_warning, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
