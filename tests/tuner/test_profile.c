// SPDX-License-Identifier: Apache-2.0
// The tuner profile (common/profile*.c): built-in defaults, exact round trip, best-match selection of
// sections, one file:line warning per malformed line (the rest used), unreadable file -> defaults,
// the relative-error least-squares fit of fitted terms, and the name tables.
#include <math.h>
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
#include "profile.h"
#include "recorded_calls.h"

static int setup(void **state) {
  (void)state;
  topo_log_set_logger(topo_host_log);
  topo_host_log_reset();
  return 0;
}

static topo_status parse(const char *text, const topo_profile_key *want, topo_profile *out,
                         int *nbad) {
  return topo_profile_parse(text, strlen(text), "t.prof", want, out, nbad);
}

static topo_profile_key key(const char *gpu, int nranks, int nnodes, int nccl) {
  topo_profile_key k;
  memset(&k, 0, sizeof k);
  snprintf(k.gpu, sizeof k.gpu, "%s", gpu);
  k.nranks = nranks;
  k.nnodes = nnodes;
  k.nccl_version = nccl;
  return k;
}

/* Everything but `source` and the terms' capacity, bit for bit. */
static void assert_same_profile(const topo_profile *a, const topo_profile *b) {
  assert_memory_equal(&a->key, &b->key, sizeof a->key);
  assert_memory_equal(a->link, b->link, sizeof a->link);
  assert_memory_equal(a->proto, b->proto, sizeof a->proto);
  assert_memory_equal(&a->launch_us, &b->launch_us, sizeof a->launch_us);
  assert_int_equal(a->max_channels, b->max_channels);
  assert_int_equal(a->nvls, b->nvls);
  assert_int_equal(a->nterms, b->nterms);
  for (int i = 0; i < a->nterms; i++) {
    const topo_profile_term *x = &a->terms[i], *y = &b->terms[i];
    assert_int_equal(x->coll, y->coll);
    assert_int_equal(x->algo, y->algo);
    assert_int_equal(x->proto, y->proto);
    assert_int_equal(x->nchannels, y->nchannels);
    assert_memory_equal(&x->lat_us, &y->lat_us, sizeof x->lat_us);
    assert_memory_equal(&x->bw_gbs, &y->bw_gbs, sizeof x->bw_gbs);
    assert_true(x->min_bytes == y->min_bytes && x->max_bytes == y->max_bytes);
    assert_memory_equal(&x->rel_err, &y->rel_err, sizeof x->rel_err);
    assert_int_equal(x->npoints, y->npoints);
  }
}

static char *write_text(const topo_profile *p) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(topo_profile_write(f, p), TOPO_OK);
  fclose(f);
  return buf;
}

static void test_builtin_defaults_for_each_gpu(void **state) {
  (void)state;
  topo_profile p;
  assert_int_equal(topo_profile_builtin("H200", &p), TOPO_OK);
  assert_string_equal(p.key.gpu, "H200");
  assert_string_equal(p.source, "builtin:H200");
  assert_float_equal(p.link[TOPO_LINK_NVLINK].bw_gbs, 370.0, 1e-9);
  assert_int_equal(p.max_channels, 24);
  assert_int_equal(p.nterms, 0);
  assert_null(p.terms);
  /* LL's per-channel cap x 24 channels is the measured Ring/LL AllReduce asymptote (123 GB/s). */
  assert_float_equal(p.proto[NCCL_PROTO_LL].ch_bw_gbs * 24, 124.8, 1e-9);
  topo_profile h100;
  assert_int_equal(topo_profile_builtin("h100", &h100), TOPO_OK);
  assert_memory_equal(h100.link, p.link, sizeof p.link); /* same NVLink 4 fabric */
  topo_profile a100;
  assert_int_equal(topo_profile_builtin("A100", &a100), TOPO_OK);
  assert_true(a100.link[TOPO_LINK_NVLINK].bw_gbs < p.link[TOPO_LINK_NVLINK].bw_gbs);
  assert_int_equal(topo_profile_builtin("MI300X", &a100), TOPO_ERR_INVALID);
  assert_string_equal(a100.key.gpu, "H200");
  assert_int_equal(topo_profile_builtin(NULL, &a100), TOPO_OK);
  assert_string_equal(a100.key.gpu, "H200");
  assert_string_equal(topo_profile_builtin_name(0), "H200");
  assert_null(topo_profile_builtin_name(3));
  for (int i = 0; topo_profile_builtin_name(i); i++) {
    assert_int_equal(topo_profile_builtin(topo_profile_builtin_name(i), &p), TOPO_OK);
    for (int pr = 0; pr < NCCL_NUM_PROTOCOLS; pr++) {
      assert_true(p.proto[pr].bw_eff > 0 && p.proto[pr].bw_eff <= 1);
      assert_true(p.proto[pr].ch_bw_gbs > 0);
    }
  }
}

static void test_round_trip_is_exact(void **state) {
  (void)state;
  topo_profile p;
  topo_profile_builtin("H200", &p);
  p.key = key("H200", 8, 1, 22809);
  p.launch_us = 1.0 / 3.0;
  p.link[TOPO_LINK_NET].bw_gbs = 0.1;
  p.link[TOPO_LINK_PCI].lat_us = 1e-7;
  p.proto[NCCL_PROTO_LL128].ch_bw_gbs = 123456.789012345;
  p.nvls = 1;
  p.max_channels = 32;
  for (int i = 0; i < 40; i++) {
    topo_profile_term t = {.coll = i % 5,
                           .algo = i % 7,
                           .proto = i % 3,
                           .nchannels = i % 17,
                           .lat_us = 5.7 + i / 7.0,
                           .bw_gbs = 300.0 / (i + 1),
                           .min_bytes = (uint64_t)i << 10,
                           .max_bytes = UINT64_MAX - (uint64_t)i,
                           .rel_err = 0.0123 * i,
                           .npoints = i};
    assert_int_equal(topo_profile_set_term(&p, &t), TOPO_OK);
  }
  assert_int_equal(p.nterms, 40);
  char *text = write_text(&p);
  topo_profile q;
  int bad = -1;
  assert_int_equal(parse(text, &p.key, &q, &bad), TOPO_OK);
  assert_int_equal(bad, 0);
  assert_same_profile(&p, &q);
  assert_string_equal(q.source, "t.prof:2");
  char *again = write_text(&q);
  assert_string_equal(text, again); /* and the text is stable */
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
  free(text);
  free(again);
  topo_profile_free(&p);
  topo_profile_free(&q);
  topo_profile_free(&q); /* idempotent */
}

static void test_round_trip_through_a_file_with_wildcards(void **state) {
  (void)state;
  char path[] = "/tmp/topo-profile-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  topo_profile a, b;
  topo_profile_builtin("A100", &a);
  a.key = key("", 0, 0, 0); /* any */
  topo_profile_builtin("H200", &b);
  b.key = key("H200", 2, 1, 0);
  topo_profile_term t = {.coll = ncclFuncAllReduce,
                         .algo = NCCL_ALGO_RING,
                         .proto = NCCL_PROTO_SIMPLE,
                         .lat_us = 17,
                         .bw_gbs = 328.6,
                         .max_bytes = 1};
  assert_int_equal(topo_profile_set_term(&b, &t), TOPO_OK);
  assert_int_equal(topo_profile_write(f, &a), TOPO_OK);
  assert_int_equal(topo_profile_write(f, &b), TOPO_OK);
  fclose(f);
  topo_profile q;
  topo_profile_key want = key("H200", 2, 1, 22809);
  assert_int_equal(topo_profile_load(path, &want, &q), TOPO_OK);
  assert_same_profile(&b, &q);
  topo_profile_free(&q);
  want = key("B200", 4, 1, 0);
  assert_int_equal(topo_profile_load(path, &want, &q), TOPO_OK);
  assert_same_profile(&a, &q);
  unlink(path);
  topo_profile_free(&q);
  topo_profile_free(&b);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
}

static const char sections[] =
    "# five sections, each with its own launch_us to tell them apart\n"
    "topo-profile 1\n"
    "section gpu=* nranks=* nnodes=* nccl=*\n"
    "launch_us 1\n"
    "section gpu=H200\n"
    "launch_us 2\n"
    "section gpu=H200 nranks=8 nnodes=1\n"
    "launch_us 3\n"
    "section gpu=H200 nnodes=2\n"
    "launch_us 4\n"
    "section gpu=H200 nranks=8 nnodes=1 nccl=22809\n"
    "launch_us 5\n"
    "section gpu=A100 nnodes=1\n"
    "launch_us 6\n"
    "section nranks=16 nnodes=2\n"
    "launch_us 7\n";

static double pick(const topo_profile_key *want) {
  topo_profile p;
  assert_int_equal(parse(sections, want, &p, NULL), TOPO_OK);
  double v = p.launch_us;
  topo_profile_free(&p);
  return v;
}

static void test_best_matching_section_wins(void **state) {
  (void)state;
  topo_profile_key k = key("H200", 8, 1, 22809);
  assert_float_equal(pick(&k), 5, 0); /* every field exact */
  k = key("H200", 8, 1, 22803);
  assert_float_equal(pick(&k), 3, 0); /* another NCCL: its section does not match */
  k = key("h200", 4, 1, 0);
  assert_float_equal(pick(&k), 2, 0); /* gpu only (case-insensitive) */
  k = key("H200", 16, 2, 0);
  assert_float_equal(pick(&k), 4, 0); /* gpu + nnodes (12) beats nranks + nnodes (6) */
  k = key("B200", 16, 2, 0);
  assert_float_equal(pick(&k), 7, 0); /* no gpu section: nranks + nnodes */
  k = key("A100", 8, 1, 0);
  assert_float_equal(pick(&k), 6, 0);
  k = key("B200", 8, 1, 0);
  assert_float_equal(pick(&k), 1, 0);   /* only the catch-all matches */
  assert_float_equal(pick(NULL), 1, 0); /* no wish: first of equal scores */
  assert_int_equal(topo_profile_key_score(&k, NULL), 0);
  topo_profile_key have = key("H200", 8, 1, 0);
  k = key("H200", 8, 2, 0);
  assert_int_equal(topo_profile_key_score(&have, &k), -1);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 0);
}

static void test_no_matching_section_gives_builtin_defaults(void **state) {
  (void)state;
  topo_profile p;
  topo_profile_key want = key("A100", 8, 1, 0);
  assert_int_equal(parse("topo-profile 1\nsection gpu=H200\nlaunch_us 9\n", &want, &p, NULL),
                   TOPO_ERR_PARSE);
  assert_string_equal(p.source, "builtin:A100");
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  assert_true(topo_host_log_contains("no section matches gpu=A100"));
  topo_profile_free(&p);
}

static void test_each_malformed_line_warns_with_file_and_line_and_is_skipped(void **state) {
  (void)state;
  static const struct {
    const char *line;
    const char *fault;
  } cases[] = {
      {"launch_us -1", "launch_us"},
      {"launch_us 1 2", "launch_us"},
      {"max_channels 65", "max_channels"},
      {"nvls maybe", "nvls"},
      {"link infiniband bw_gbs=50", "unknown link class"},
      {"link nvlink bw_gbs=0", "bad value for bw_gbs"},
      {"link nvlink bw_gbs=fast", "bad value for bw_gbs"},
      {"link nvlink", "no bw_gbs= or lat_us="},
      {"link nvlink speed=3", "unknown key 'speed'"},
      {"proto ll256 bw_eff=0.5", "unknown protocol"},
      {"proto ll bw_eff=1.5", "bad value for bw_eff"},
      {"proto simple lat_us", "expected key=value"},
      {"term allreduce ring simple lat_us=1", "lat_us= and bw_gbs= are required"},
      {"term allreduce ring simple lat_us=1 bw_gbs=0", "bad bw_gbs"},
      {"term allreduce ring simple lat_us=1 bw_gbs=-5", "bad bw_gbs"},
      {"term allreduce ring simple lat_us=nan bw_gbs=5", "bad lat_us"},
      {"term allreduce ring simple lat_us=1 bw_gbs=inf", "bad bw_gbs"},
      {"term alltoall ring simple lat_us=1 bw_gbs=5", "unknown collective"},
      {"term allreduce star simple lat_us=1 bw_gbs=5", "unknown algorithm"},
      {"term allreduce ring fast lat_us=1 bw_gbs=5", "unknown protocol"},
      {"term allreduce ring simple channels=99 lat_us=1 bw_gbs=5", "bad channels"},
      {"term allreduce ring simple lat_us=1 bw_gbs=5 min_bytes=9 max_bytes=3", "min_bytes > max"},
      {"term allreduce ring simple lat_us=1 bw_gbs=5 min_bytes=-1", "bad min_bytes"},
      {"term allreduce ring", "term: want"},
      {"term allreduce tree ll lat_us=1 bw_gbs=5", "duplicate"},
      {"speed 7", "unknown key 'speed'"},
      {"a b c d e f g h i j k l m n o p q", "more than 16 fields"},
  };
  const int n = (int)(sizeof cases / sizeof cases[0]);
  char text[8192] =
      "topo-profile 1\n"
      "section gpu=H200 nranks=2 nnodes=1\n"
      "term allreduce tree ll lat_us=8 bw_gbs=61.1\n";
  for (int i = 0; i < n; i++) {
    strcat(text, cases[i].line);
    strcat(text, "\n");
  }
  strcat(text, "launch_us 6.5\nterm allgather ring ll128 channels=8 lat_us=11 bw_gbs=197\n");
  topo_profile p;
  int bad;
  topo_profile_key want = key("H200", 2, 1, 0);
  assert_int_equal(parse(text, &want, &p, &bad), TOPO_OK);
  assert_int_equal(bad, n);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), n);
  for (int i = 0; i < n; i++) {
    char where[64];
    snprintf(where, sizeof where, "t.prof:%d: ", i + 4);
    if (!topo_host_log_contains(where)) fail_msg("no warning names %s (%s)", where, cases[i].line);
    if (!topo_host_log_contains(cases[i].fault)) fail_msg("no warning says '%s'", cases[i].fault);
  }
  /* The good lines around them were used; the bad ones changed nothing. */
  topo_profile def;
  topo_profile_builtin("H200", &def);
  assert_float_equal(p.launch_us, 6.5, 0);
  assert_int_equal(p.max_channels, def.max_channels);
  assert_int_equal(p.nvls, def.nvls);
  assert_memory_equal(p.link, def.link, sizeof def.link);
  assert_memory_equal(p.proto, def.proto, sizeof def.proto);
  assert_int_equal(p.nterms, 2);
  const topo_profile_term *t =
      topo_profile_find_term(&p, ncclFuncAllGather, NCCL_ALGO_RING, NCCL_PROTO_LL128, 8);
  assert_non_null(t);
  assert_float_equal(t->bw_gbs, 197, 0);
  assert_true(t->max_bytes == UINT64_MAX);
  assert_float_equal(
      topo_profile_find_term(&p, ncclFuncAllReduce, NCCL_ALGO_TREE, NCCL_PROTO_LL, 0)->lat_us, 8,
      0);
  topo_profile_free(&p);
}

static void test_version_line_and_bad_section_lines(void **state) {
  (void)state;
  topo_profile p;
  int bad;
  /* No version line: one warning, then read as the reader's version. */
  assert_int_equal(parse("section gpu=H200\nlaunch_us 3\n", NULL, &p, &bad), TOPO_OK);
  assert_float_equal(p.launch_us, 3, 0);
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  assert_true(topo_host_log_contains("t.prof:1: no 'topo-profile 2' line"));
  topo_profile_free(&p);
  /* A newer version: warned, what is understood is used. */
  topo_host_log_reset();
  assert_int_equal(parse("topo-profile 3\nsection gpu=H200\nlaunch_us 4\n", NULL, &p, &bad),
                   TOPO_OK);
  assert_float_equal(p.launch_us, 4, 0);
  assert_true(topo_host_log_contains("t.prof:1: profile version 3 is newer"));
  topo_profile_free(&p);
  /* A bad section line: one warning; its lines are skipped quietly; the next section is used. */
  topo_host_log_reset();
  assert_int_equal(parse("topo-profile 1\nsection gpu=H200 colour=red\nlaunch_us 1\nbogus\n"
                         "section gpu=H200\nlaunch_us 2\nlaunch_us x\n",
                         NULL, &p, &bad),
                   TOPO_OK);
  assert_int_equal(bad, 2);
  assert_float_equal(p.launch_us, 2, 0);
  assert_true(topo_host_log_contains("t.prof:2: section: unknown key 'colour'"));
  assert_true(topo_host_log_contains("t.prof:7: launch_us"));
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 2);
  topo_profile_free(&p);
  /* Keys before any section, a bad version line, NUL bytes, an over-long line. */
  topo_host_log_reset();
  char text[2048] = "topo-profile one\nlaunch_us 1\n";
  size_t len = strlen(text);
  memcpy(text + len, "launch\0_us 1\n", 13);
  len += 13;
  memset(text + len, 'x', 1100);
  len += 1100;
  memcpy(text + len, "\nsection gpu=H200 nranks=x\nsection gpu=\xff\n", 41);
  len += 41;
  assert_int_equal(topo_profile_parse(text, len, "t.prof", NULL, &p, &bad), TOPO_ERR_PARSE);
  assert_int_equal(bad, 6);
  assert_true(topo_host_log_contains("t.prof:1: version line"));
  assert_true(topo_host_log_contains("t.prof:2: 'launch_us' before any 'section'"));
  assert_true(topo_host_log_contains("t.prof:3: NUL byte"));
  assert_true(topo_host_log_contains("t.prof:4: line longer than"));
  assert_true(topo_host_log_contains("t.prof:5: section: bad number 'x'"));
  assert_true(topo_host_log_contains("t.prof:6: section: bad gpu name"));
  assert_string_equal(p.source, "builtin:H200");
  topo_profile_free(&p);
}

static void test_unreadable_file_gives_builtin_defaults(void **state) {
  (void)state;
  topo_profile p;
  topo_profile_key want = key("A100", 8, 1, 0);
  assert_int_equal(topo_profile_load("/nonexistent/topo.prof", &want, &p), TOPO_ERR_IO);
  assert_string_equal(p.source, "builtin:A100");
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  assert_true(topo_host_log_contains("/nonexistent/topo.prof"));
  /* A directory cannot be read as a file either. */
  topo_host_log_reset();
  topo_profile_load("/", NULL, &p);
  assert_string_equal(p.source, "builtin:H200");
  assert_int_equal(topo_host_log_count(NCCL_LOG_WARN), 1);
  topo_profile_free(&p);
}

static void test_out_of_memory_gives_builtin_defaults(void **state) {
  (void)state;
  static const char text[] =
      "topo-profile 1\nsection gpu=H200\n"
      "term allreduce ring simple lat_us=1 bw_gbs=2\n";
  topo_profile p;
  topo_alloc_fail_after(0);
  topo_status st = parse(text, NULL, &p, NULL);
  topo_alloc_fail_after(-1);
  assert_int_equal(st, TOPO_ERR_NOMEM);
  assert_string_equal(p.source, "builtin:H200");
  assert_int_equal(p.nterms, 0);
  topo_profile_free(&p);
}

static void test_fit_recovers_latency_and_bandwidth(void **state) {
  (void)state;
  uint64_t bytes[15];
  double t[15];
  int n = 0;
  unsigned seed = 7;
  for (uint64_t b = 8; b <= (1ull << 30); b *= 4, n++) {
    seed = seed * 1103515245u + 12345u;
    double noise = 1.0 + 0.004 * (((seed >> 16) % 201) / 100.0 - 1.0); /* +-0.4% */
    bytes[n] = b;
    t[n] = (6.5 + (double)b / (310.0 * 1e3)) * noise;
  }
  topo_profile_term term;
  memset(&term, 0, sizeof term);
  assert_int_equal(topo_profile_fit_term(bytes, t, n, &term), TOPO_OK);
  assert_float_equal(term.lat_us, 6.5, 6.5 * 0.01);
  assert_float_equal(term.bw_gbs, 310.0, 310.0 * 0.01);
  assert_int_equal(term.npoints, n);
  assert_true(term.min_bytes == 8 && term.max_bytes == bytes[n - 1]);
  assert_true(term.rel_err > 0 && term.rel_err < 0.005);
  /* Exact points: exact answer. */
  uint64_t b2[2] = {1000, 1000000};
  double t2[2] = {10.0 + 1000 / 50e3, 10.0 + 1000000 / 50e3};
  assert_int_equal(topo_profile_fit_term(b2, t2, 2, &term), TOPO_OK);
  assert_float_equal(term.lat_us, 10.0, 1e-9);
  assert_float_equal(term.bw_gbs, 50.0, 1e-9);
  assert_float_equal(term.rel_err, 0.0, 1e-12);
}

static void test_fit_on_measured_ring_simple_allreduce(void **state) {
  (void)state;
  /* 2 x H200, Ring/Simple AllReduce >= 32 MiB (graph-sweep.txt): the slope between the two largest
   * sizes is 328.6 GB/s; minimising relative error weighs the 32 MiB point most: ~318 GB/s. */
  char path[1024];
  snprintf(path, sizeof path, "%s/nccl-2.28.9-2xh200/graph-sweep.txt", topo_rec_data_dir());
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char cfg[32], op[32];
  unsigned long long b;
  double med;
  uint64_t bytes[16];
  double t[16];
  int n = 0;
  while (n < 16 && fscanf(f, "%31s %31s %llu %lf %*f %*f", cfg, op, &b, &med) == 4)
    if (!strcmp(cfg, "Ring-Simple") && !strcmp(op, "all_reduce") && b >= (32u << 20)) {
      bytes[n] = b;
      t[n++] = med;
    }
  fclose(f);
  assert_int_equal(n, 3);
  topo_profile_term term;
  assert_int_equal(topo_profile_fit_term(bytes, t, n, &term), TOPO_OK);
  print_message("Ring/Simple AllReduce >= 32 MiB: lat %.1f us, bw %.1f GB/s, rms rel err %.3f\n",
                term.lat_us, term.bw_gbs, term.rel_err);
  assert_true(term.bw_gbs > 310 && term.bw_gbs < 335);
  assert_true(term.rel_err < 0.02);
}

static void test_fit_rejects_garbage(void **state) {
  (void)state;
  topo_profile_term term;
  uint64_t b[3] = {100, 200, 300};
  double shrinking[3] = {30, 20, 10};
  double negative[3] = {1, -2, 3};
  double nan_t[3] = {1, 0.0 / 0.0, 3};
  double zero[3] = {1, 0, 3};
  double ok[3] = {1, 2, 3};
  uint64_t same[3] = {64, 64, 64};
  assert_int_equal(topo_profile_fit_term(b, shrinking, 3, &term), TOPO_ERR_INVALID);
  assert_int_equal(topo_profile_fit_term(b, negative, 3, &term), TOPO_ERR_INVALID);
  assert_int_equal(topo_profile_fit_term(b, nan_t, 3, &term), TOPO_ERR_INVALID);
  assert_int_equal(topo_profile_fit_term(b, zero, 3, &term), TOPO_ERR_INVALID);
  assert_int_equal(topo_profile_fit_term(same, ok, 3, &term), TOPO_ERR_INVALID);
  assert_int_equal(topo_profile_fit_term(b, ok, 1, &term), TOPO_ERR_INVALID);
  assert_int_equal(topo_profile_fit_term(NULL, ok, 3, &term), TOPO_ERR_INVALID);
  /* Flat times (pure latency): the slope is zero, bandwidth infinite: rejected. */
  double flat[3] = {5, 5, 5};
  assert_int_equal(topo_profile_fit_term(b, flat, 3, &term), TOPO_ERR_INVALID);
  /* A negative intercept is clamped to zero latency, the bandwidth refitted. */
  double steep[3] = {0.5, 2.0, 3.5};
  assert_int_equal(topo_profile_fit_term(b, steep, 3, &term), TOPO_OK);
  assert_float_equal(term.lat_us, 0.0, 0);
  assert_true(term.bw_gbs > 0);
}

static void test_set_term_replaces_and_validates(void **state) {
  (void)state;
  topo_profile p;
  topo_profile_builtin("H200", &p);
  topo_profile_term t = {
      .coll = 4, .algo = 1, .proto = 2, .lat_us = 1, .bw_gbs = 2, .max_bytes = 10};
  assert_int_equal(topo_profile_set_term(&p, &t), TOPO_OK);
  t.bw_gbs = 3;
  assert_int_equal(topo_profile_set_term(&p, &t), TOPO_OK);
  assert_int_equal(p.nterms, 1);
  assert_float_equal(topo_profile_find_term(&p, 4, 1, 2, 0)->bw_gbs, 3, 0);
  assert_null(topo_profile_find_term(&p, 4, 1, 2, 8));
  t.bw_gbs = 0;
  assert_int_equal(topo_profile_set_term(&p, &t), TOPO_ERR_INVALID);
  t.bw_gbs = 1;
  t.coll = 5;
  assert_int_equal(topo_profile_set_term(&p, &t), TOPO_ERR_INVALID);
  t.coll = 0;
  t.min_bytes = 11;
  assert_int_equal(topo_profile_set_term(&p, &t), TOPO_ERR_INVALID);
  assert_int_equal(p.nterms, 1);
  topo_profile_free(&p);
  topo_profile_free(NULL);
}

static void test_names_round_trip_and_accept_nccl_spellings(void **state) {
  (void)state;
  for (int i = 0; i < NCCL_NUM_FUNCTIONS; i++)
    assert_int_equal(topo_nccl_coll_from_name(topo_nccl_func_name(i, TOPO_NCCL_FILE)), i);
  for (int i = 0; i < NCCL_NUM_ALGORITHMS; i++)
    assert_int_equal(topo_nccl_algo_from_name(topo_nccl_algo_name(i, TOPO_NCCL_FILE)), i);
  for (int i = 0; i < NCCL_NUM_PROTOCOLS; i++)
    assert_int_equal(topo_nccl_proto_from_name(topo_nccl_proto_name(i, TOPO_NCCL_FILE)), i);
  assert_int_equal(topo_nccl_coll_from_name("AllReduce"), ncclFuncAllReduce);
  assert_int_equal(topo_nccl_coll_from_name("all_gather"), ncclFuncAllGather);
  assert_int_equal(topo_nccl_algo_from_name("CollNetDirect"), NCCL_ALGO_COLLNET_DIRECT);
  assert_int_equal(topo_nccl_algo_from_name("NVLSTree"), NCCL_ALGO_NVLS_TREE);
  assert_int_equal(topo_nccl_proto_from_name("Simple"), NCCL_PROTO_SIMPLE);
  assert_int_equal(topo_nccl_proto_from_name("LL128"), NCCL_PROTO_LL128);
  assert_int_equal(topo_nccl_coll_from_name("sendrecv"), -1);
  assert_int_equal(topo_nccl_algo_from_name(""), -1);
  assert_int_equal(topo_nccl_proto_from_name(NULL), -1);
  assert_string_equal(topo_nccl_algo_name(7, TOPO_NCCL_FILE), "unknown");
  assert_string_equal(topo_nccl_func_name(-1, TOPO_NCCL_FILE), "unknown");
}

/* Several terms per key: disjoint ranges, looked up by size; same range replaces, overlap refused. */
static void test_several_terms_per_key_with_disjoint_ranges(void **state) {
  (void)state;
  topo_profile p;
  topo_profile_builtin("H200", &p);
  topo_profile_term hi = {.coll = 0,
                          .algo = 1,
                          .proto = 0,
                          .lat_us = 7,
                          .bw_gbs = 100,
                          .min_bytes = 1001,
                          .max_bytes = 1u << 30,
                          .rel_err = 0.01,
                          .npoints = 9};
  topo_profile_term lo = hi;
  lo.lat_us = 5, lo.bw_gbs = 50, lo.min_bytes = 8, lo.max_bytes = 1000;
  topo_profile_term other = hi; /* another channel count: its own ranges */
  other.nchannels = 4, other.min_bytes = 0, other.max_bytes = UINT64_MAX;
  assert_int_equal(topo_profile_set_term(&p, &hi), TOPO_OK);
  assert_int_equal(topo_profile_set_term(&p, &other), TOPO_OK);
  assert_int_equal(topo_profile_set_term(&p, &lo), TOPO_OK);
  assert_int_equal(p.nterms, 3);
  assert_float_equal(topo_profile_find_term_at(&p, 0, 1, 0, 0, 8)->lat_us, 5, 0);
  assert_float_equal(topo_profile_find_term_at(&p, 0, 1, 0, 0, 1000)->lat_us, 5, 0);
  assert_float_equal(topo_profile_find_term_at(&p, 0, 1, 0, 0, 1001)->lat_us, 7, 0);
  assert_float_equal(topo_profile_find_term_at(&p, 0, 1, 0, 0, 1u << 30)->lat_us, 7, 0);
  assert_null(topo_profile_find_term_at(&p, 0, 1, 0, 0, 7));
  assert_null(topo_profile_find_term_at(&p, 0, 1, 0, 0, (1u << 30) + 1));
  assert_null(topo_profile_find_term_at(&p, 0, 1, 1, 0, 100));
  assert_float_equal(topo_profile_find_term_at(&p, 0, 1, 0, 4, 7)->lat_us, 7, 0);
  /* The old lookup: the key's lowest range. */
  assert_float_equal(topo_profile_find_term(&p, 0, 1, 0, 0)->lat_us, 5, 0);
  /* Same key, same range: replaced. */
  lo.lat_us = 6;
  assert_int_equal(topo_profile_set_term(&p, &lo), TOPO_OK);
  assert_int_equal(p.nterms, 3);
  assert_float_equal(topo_profile_find_term_at(&p, 0, 1, 0, 0, 500)->lat_us, 6, 0);
  /* Overlapping either neighbour: refused, nothing changes. */
  topo_profile_term bad = lo;
  bad.min_bytes = 900, bad.max_bytes = 1100;
  assert_int_equal(topo_profile_set_term(&p, &bad), TOPO_ERR_INVALID);
  bad.min_bytes = 1000, bad.max_bytes = 1000;
  assert_int_equal(topo_profile_set_term(&p, &bad), TOPO_ERR_INVALID);
  bad.min_bytes = 0, bad.max_bytes = 8;
  assert_int_equal(topo_profile_set_term(&p, &bad), TOPO_ERR_INVALID);
  assert_int_equal(p.nterms, 3);
  /* Written and read back: every piece, in order. */
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_int_equal(topo_profile_write(f, &p), TOPO_OK);
  fclose(f);
  topo_profile q;
  int nbad = -1;
  assert_int_equal(topo_profile_parse(buf, len, "mem", NULL, &q, &nbad), TOPO_OK);
  assert_int_equal(nbad, 0);
  assert_int_equal(q.nterms, 3);
  assert_memory_equal(q.terms, p.terms, 3 * sizeof *p.terms);
  free(buf);
  topo_profile_free(&q);
  topo_profile_free(&p);
}

/* A file whose pieces of one key overlap: the overlapping line warns and is skipped. */
static void test_overlapping_pieces_in_a_file_warn(void **state) {
  (void)state;
  static const char text[] =
      "topo-profile 1\nsection gpu=H200\n"
      "term allreduce ring ll lat_us=5 bw_gbs=50 min_bytes=8 max_bytes=1000\n"
      "term allreduce ring ll lat_us=7 bw_gbs=100 min_bytes=1001 max_bytes=4096\n"
      "term allreduce ring ll lat_us=9 bw_gbs=100 min_bytes=4000 max_bytes=8192\n"
      "term allreduce ring ll lat_us=9 bw_gbs=100 min_bytes=8 max_bytes=1000\n";
  topo_profile p;
  int nbad = 0;
  assert_int_equal(topo_profile_parse(text, sizeof text - 1, "o.prof", NULL, &p, &nbad), TOPO_OK);
  assert_int_equal(nbad, 2);
  assert_int_equal(p.nterms, 2);
  assert_true(topo_host_log_contains("o.prof:5: term: byte range overlaps"));
  assert_true(topo_host_log_contains("o.prof:6: term: duplicate"));
  assert_float_equal(
      topo_profile_find_term_at(&p, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL, 0, 9)->lat_us,
      5, 0);
  topo_profile_free(&p);
}

/* Piecewise fit of a sweep with a flat small-message floor and a bandwidth knee: few pieces,
 * every point within the error, ranges meeting at geometric midpoints and covering the sweep. */
static void test_piecewise_fit_covers_the_sweep_within_the_error(void **state) {
  (void)state;
  uint64_t b[28];
  double us[28];
  for (int i = 0; i < 28; i++) {
    b[27 - i] = 8ull << i; /* given in descending order: the fit sorts */
    double x = (double)(8ull << i);
    /* 5 us floor to 4 KB, then 6 us + x / 20 GB/s to 1 MB, then 10 us + x / 300 GB/s. */
    us[27 - i] = x <= 4096 ? 5.0 + 1e-4 * i : x <= 1048576 ? 6 + x / 20e3 : 60 + x / 300e3;
  }
  topo_profile_term t[16];
  int n = topo_profile_fit_piecewise(b, us, 28, 0.03, t, 16);
  assert_true(n >= 2 && n <= 5);
  assert_int_equal(t[0].min_bytes, 8);
  assert_int_equal(t[n - 1].max_bytes, 8ull << 27);
  int points = 0;
  for (int k = 0; k < n; k++) {
    assert_true(t[k].min_bytes <= t[k].max_bytes);
    assert_true(t[k].bw_gbs > 0 && t[k].lat_us >= 0);
    assert_true(t[k].rel_err <= 0.03);
    if (k) assert_int_equal(t[k].min_bytes, t[k - 1].max_bytes + 1);
    points += t[k].npoints;
  }
  assert_int_equal(points, 28);
  for (int i = 0; i < 28; i++) {
    int k = 0;
    while (k < n && b[i] > t[k].max_bytes) k++;
    assert_true(k < n);
    double pred = t[k].lat_us + (double)b[i] / (t[k].bw_gbs * 1e3);
    if (fabs(pred - us[i]) / us[i] > 0.03)
      fail_msg("%llu B: %.3f predicted, %.3f measured", (unsigned long long)b[i], pred, us[i]);
  }
  /* A boundary sits at the geometric midpoint between the two sizes around it. */
  uint64_t m = t[0].max_bytes;
  int j = 0;
  while (8ull << (j + 1) <= m) j++;
  assert_true(fabs((double)m - sqrt((double)(8ull << j) * (double)(8ull << (j + 1)))) <= 1.0);
  /* A straight line is one piece; at most max_terms pieces; no fit from one size. */
  for (int i = 0; i < 28; i++) us[i] = 3 + (double)b[i] / 100e3;
  assert_int_equal(topo_profile_fit_piecewise(b, us, 28, 0.03, t, 16), 1);
  for (int i = 0; i < 28; i++) us[i] = i % 2 ? 10 + (double)b[i] / 1e3 : 1 + (double)b[i] / 1e5;
  assert_int_equal(topo_profile_fit_piecewise(b, us, 28, 0.001, t, 3), 3);
  assert_int_equal(t[2].max_bytes, 8ull << 27);
  uint64_t same[3] = {64, 64, 64};
  assert_int_equal(topo_profile_fit_piecewise(same, us, 3, 0.03, t, 16), 0);
  assert_int_equal(topo_profile_fit_piecewise(b, us, 1, 0.03, t, 16), 0);
}

/* A point without default= is not known to be NCCL's pick or not: it reads as -1 and writes back
 * without default=; default=0 and default=1 stay as given. */
static void test_point_default_absent_is_unknown(void **state) {
  (void)state;
  const char *text =
      "topo-profile 2\nsection nranks=2\n"
      "point allreduce ring simple bytes=1024 median_us=10 noise_us=0.5\n"
      "point allreduce ring simple bytes=2048 median_us=11 noise_us=0.5 default=1\n"
      "point allreduce ring ll bytes=1024 median_us=9 noise_us=0.5 default=0\n";
  topo_profile_key want = key("", 2, 0, 0);
  topo_profile p;
  int nbad = -1;
  assert_int_equal(parse(text, &want, &p, &nbad), TOPO_OK);
  assert_int_equal(nbad, 0);
  assert_int_equal(p.npoints, 3);
  int n = 0;
  const topo_profile_point *pt =
      topo_profile_find_points(&p, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 0, &n);
  assert_int_equal(n, 2);
  assert_int_equal(pt[0].is_default, -1);
  assert_int_equal(pt[1].is_default, 1);
  pt = topo_profile_find_points(&p, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL, 0, &n);
  assert_int_equal(n, 1);
  assert_int_equal(pt[0].is_default, 0);
  char *buf = write_text(&p);
  assert_non_null(strstr(buf, "bytes=1024 median_us=10 noise_us=0.5\n"));
  assert_non_null(strstr(buf, "bytes=2048 median_us=11 noise_us=0.5 default=1\n"));
  assert_non_null(strstr(buf, "median_us=9 noise_us=0.5 default=0\n"));
  free(buf);
  topo_profile_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_builtin_defaults_for_each_gpu, setup),
      cmocka_unit_test_setup(test_round_trip_is_exact, setup),
      cmocka_unit_test_setup(test_round_trip_through_a_file_with_wildcards, setup),
      cmocka_unit_test_setup(test_best_matching_section_wins, setup),
      cmocka_unit_test_setup(test_no_matching_section_gives_builtin_defaults, setup),
      cmocka_unit_test_setup(test_each_malformed_line_warns_with_file_and_line_and_is_skipped,
                             setup),
      cmocka_unit_test_setup(test_version_line_and_bad_section_lines, setup),
      cmocka_unit_test_setup(test_unreadable_file_gives_builtin_defaults, setup),
      cmocka_unit_test_setup(test_out_of_memory_gives_builtin_defaults, setup),
      cmocka_unit_test_setup(test_fit_recovers_latency_and_bandwidth, setup),
      cmocka_unit_test_setup(test_fit_on_measured_ring_simple_allreduce, setup),
      cmocka_unit_test_setup(test_fit_rejects_garbage, setup),
      cmocka_unit_test_setup(test_set_term_replaces_and_validates, setup),
      cmocka_unit_test_setup(test_several_terms_per_key_with_disjoint_ranges, setup),
      cmocka_unit_test_setup(test_overlapping_pieces_in_a_file_warn, setup),
      cmocka_unit_test_setup(test_piecewise_fit_covers_the_sweep_within_the_error, setup),
      cmocka_unit_test_setup(test_names_round_trip_and_accept_nccl_spellings, setup),
      cmocka_unit_test_setup(test_point_default_absent_is_unknown, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
