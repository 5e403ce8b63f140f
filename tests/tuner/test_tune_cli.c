// SPDX-License-Identifier: Apache-2.0
// topo-tune end to end: the gain compares NCCL's pick and topo's pick timed by the same profile;
// each row's evidence is what the profile holds for the two settings at that size; a nominal
// network link is marked; an unknown GPU is one warning and the generic defaults, not H200's.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "plugin_host.h"
#include "profile.h"

static char dir[64];

static int run(const char *args, char **out) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "%s %s 2>%s/stderr", TOPO_TUNE_EXE, args, dir);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap);
  while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += got;
    if (n + 1 >= cap) buf = realloc(buf, cap *= 2);
  }
  buf[n] = 0;
  int st = pclose(p);
  if (out) *out = buf;
  else free(buf);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *err_text(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/stderr", dir);
  return topo_host_read_text(path);
}

/* The value after `"key":` in [s, end): a number (NAN for null) or a string copied to buf. */
static const char *after(const char *s, const char *end, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *q = strstr(s, k);
  assert_true(q && q < end);
  return q + strlen(k);
}
static double num(const char *s, const char *end, const char *key) {
  const char *v = after(s, end, key);
  if (!strncmp(v, "null", 4)) return -1;
  return strtod(v, NULL);
}
static void str(const char *s, const char *end, const char *key, char *buf, size_t len) {
  const char *v = after(s, end, key);
  assert_true(*v == '"');
  size_t n = strcspn(v + 1, "\"");
  assert_true(n < len);
  memcpy(buf, v + 1, n);
  buf[n] = 0;
}

static const char *const ev_names[] = {"measured", "interpolated", "model-only"};

/* The rule topo-tune documents: a point within 5 % of the size is measured, points on both
 * sides interpolate, nothing around is the model alone. */
static int expect_evidence(const topo_profile *p, int coll, const char *algo, const char *proto,
                           int nch, uint64_t bytes) {
  int n = 0, below = 0, above = 0;
  const topo_profile_point *pt = topo_profile_find_points(
      p, coll, topo_nccl_algo_from_name(algo), topo_nccl_proto_from_name(proto), nch, &n);
  for (int i = 0; i < n; i++) {
    double d = (double)pt[i].bytes - (double)bytes;
    if (fabs(d) <= 0.05 * (double)bytes) return 0;
    below |= d < 0;
    above |= d > 0;
  }
  return below && above ? 1 : 2;
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-tune-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd);
}

static void test_size_that_overflows_is_rejected(void **state) {
  (void)state;
  /* 17179869185G = 2^64 + 2^30 bytes: it must not wrap to 1G. */
  assert_int_equal(run("--gpu H200 --nranks 8 --coll allreduce --max 17179869185G", NULL), 2);
  char *err = err_text();
  assert_non_null(strstr(err, "bad --max"));
  free(err);
  assert_int_equal(run("--gpu H200 --nranks 8 --coll allreduce --min 18014398509481984K", NULL), 2);
  assert_int_equal(run("--gpu H200 --nranks 8 --coll allreduce --min 1M --max 4M", NULL), 0);
}

static void test_unknown_gpu_is_one_warning_and_generic(void **state) {
  (void)state;
  char *out, *err;
  assert_int_equal(run("--gpu FOO9000 --nranks 8 --coll allreduce --max 1M", &out), 0);
  assert_non_null(strstr(out, "builtin:generic"));
  assert_null(strstr(out, "H200"));
  free(out);
  err = err_text();
  int nl = 0;
  for (char *q = err; *q; q++) nl += *q == '\n';
  assert_int_equal(nl, 1);
  assert_non_null(strstr(err, "warning: unknown GPU model 'FOO9000'"));
  assert_non_null(strstr(err, "generic"));
  free(err);
  /* No GPU and no profile: also the generic set, said once. */
  assert_int_equal(run("--nranks 8 --coll allreduce --max 1M --json", &out), 0);
  assert_non_null(strstr(out, "\"profile\":\"builtin:generic\",\"gpu\":null"));
  free(out);
  err = err_text();
  assert_non_null(strstr(err, "generic"));
  free(err);
  /* A known GPU: its own defaults, no warning. */
  assert_int_equal(run("--gpu H100 --nranks 8 --coll allreduce --max 1M", &out), 0);
  assert_non_null(strstr(out, "builtin:H100"));
  free(out);
  err = err_text();
  assert_string_equal(err, "");
  free(err);
}

/* Every row: gain = the profile's time for NCCL's pick / its time for topo's pick; evidence per
 * setting from the profile's measured points (not its terms), the row's the weaker of the two. */
static void test_gain_and_evidence_from_the_same_profile(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/p.profile", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  /* 8 ranks: NCCL 2.28 picks Ring/LL at 1 MiB and Ring/LL128 at 4-16 MiB on this node. */
  /* Points at 2, 8 and ~32 MiB (a trace's mean bucket size, a little off the power of two) for
   * the three Ring protocols, and 1 MiB for LL; the terms span 2-32 MiB but measure nothing at
   * 4 or 16 MiB, where the points only bracket the size. */
  fputs(
      "topo-profile 2\nsection gpu=H200 nranks=8 nnodes=1\n"
      "term allreduce ring ll lat_us=0 bw_gbs=60 min_bytes=1048576 max_bytes=1048576 npoints=9\n"
      "term allreduce ring ll128 lat_us=8 bw_gbs=70 min_bytes=2097152 max_bytes=33554432\n"
      "term allreduce ring simple lat_us=12 bw_gbs=90 min_bytes=2097152 max_bytes=33554432\n",
      f);
  static const char *const protos[3] = {"ll", "ll128", "simple"};
  static const double lat[3] = {0, 8, 12}, bw[3] = {60, 70, 90};
  const uint64_t sizes[4] = {1048576, 2097152, 8388608, 33570816};
  for (int k = 0; k < 3; k++)
    for (int i = k ? 1 : 0; i < 4; i++) {
      double us = lat[k] + (double)sizes[i] / (bw[k] * 1e3);
      fprintf(f, "point allreduce ring %s bytes=%llu median_us=%.3f noise_us=%.3f\n", protos[k],
              (unsigned long long)sizes[i], us, 0.01 * us);
    }
  assert_int_equal(fclose(f), 0);
  topo_profile p;
  topo_profile_key want = {"H200", 8, 1, 0};
  assert_int_equal(topo_profile_load(path, &want, &p), TOPO_OK);
  char args[256], *out;
  snprintf(args, sizeof args,
           "--profile %s --gpu H200 --nranks 8 --coll allreduce --min 256K --max 128M --json",
           path);
  assert_int_equal(run(args, &out), 0);
  int seen[3] = {0, 0, 0}, rows = 0;
  for (const char *r = strstr(out, "{\"bytes\":"); r;) {
    const char *next = strstr(r + 1, "{\"bytes\":");
    const char *end = next ? next : r + strlen(r);
    uint64_t bytes = (uint64_t)num(r, end, "bytes");
    const char *topo = after(r, end, "topo"), *nccl = after(r, end, "nccl");
    char ta[32], tp[32], na[32], np[32], ev[32];
    str(topo, nccl, "algo", ta, sizeof ta);
    str(topo, nccl, "proto", tp, sizeof tp);
    str(nccl, end, "algo", na, sizeof na);
    str(nccl, end, "proto", np, sizeof np);
    int tch = (int)num(topo, nccl, "channels");
    double tt = num(topo, nccl, "time_us"), nt = num(nccl, end, "time_us");
    double gain = num(r, end, "gain");
    assert_true(tt > 0 && nt > 0);
    assert_true(gain > 0.995 * nt / tt && gain < 1.005 * nt / tt);
    /* NCCL's pick timed by the profile: where a term covers it, the term's own time. */
    const topo_profile_term *t = topo_profile_find_term_at(&p, 4, topo_nccl_algo_from_name(na),
                                                           topo_nccl_proto_from_name(np), 0, bytes);
    if (t) {
      double want_us = t->lat_us + (double)bytes / (t->bw_gbs * 1e3);
      assert_true(nt > 0.99 * want_us && nt < 1.01 * want_us + 0.5);
    }
    int et = expect_evidence(&p, 4, ta, tp, tch, bytes),
        en = expect_evidence(&p, 4, na, np, 0, bytes);
    str(topo, nccl, "evidence", ev, sizeof ev);
    assert_string_equal(ev, ev_names[et]);
    str(nccl, end, "evidence", ev, sizeof ev);
    assert_string_equal(ev, ev_names[en]);
    int e = et > en ? et : en;
    const char *row_ev = strstr(nccl, "},\"gain\":");
    assert_true(row_ev && row_ev < end);
    str(row_ev, end, "evidence", ev, sizeof ev);
    assert_string_equal(ev, ev_names[e]);
    seen[e]++;
    rows++;
    r = next;
  }
  assert_true(rows >= 9);
  /* measured at the points, interpolated between them, model-only outside (even where a
   * fitted term covers the size: 1 MiB for LL128, a term's range is no measurement) */
  assert_true(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
  free(out);
  /* Text: a model-only gain is in parentheses, an interpolated one is not. */
  snprintf(args, sizeof args,
           "--profile %s --gpu H200 --nranks 8 --coll allreduce --min 256K --max 128M", path);
  assert_int_equal(run(args, &out), 0);
  assert_non_null(strstr(out, "x) model-only"));
  assert_non_null(strstr(out, "x interpolated"));
  assert_non_null(strstr(out, "x measured"));
  free(out);
  topo_profile_free(&p);
}

/* The text folds sizes that pick alike into one line (ranges over them) and says where topo
 * switches from NCCL's pick and on what evidence, or why no switch is measured. */
static void test_rows_fold_and_switches_are_explained(void **state) {
  (void)state;
  char *out;
  assert_int_equal(run("--gpu H200 --nranks 8 --coll allreduce --min 1K --max 1G", &out), 0);
  int rows = 0;
  for (const char *l = strstr(out, "evidence\n"); l && (l = strchr(l, '\n')) && l[1] == ' '; l++)
    rows += strstr(l, " | ") && strstr(l, " | ") < strchr(l + 1, '\n');
  assert_true(rows >= 1 && rows <= 4); /* 21 sizes, three picks of NCCL's */
  assert_non_null(strstr(out, "     1K-"));
  assert_non_null(strstr(out, "-1G | ring/simple"));
  assert_non_null(strstr(out, "topo keeps NCCL 2.28's pick at every size (21 sizes)"));
  assert_non_null(strstr(out, "no switch is measured: builtin:H200 holds no measured point"));
  free(out);
  /* Ring/Simple and Ring/LL128 both measured at 8 MiB, Simple twice as fast: a measured switch */
  char path[128], args[256];
  snprintf(path, sizeof path, "%s/switch.profile", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(
      "topo-profile 2\nsection gpu=H200 nranks=8 nnodes=1\n"
      "point allreduce ring ll128 bytes=8388608 median_us=200 noise_us=2\n"
      "point allreduce ring simple bytes=8388608 median_us=100 noise_us=1\n",
      f);
  assert_int_equal(fclose(f), 0);
  snprintf(args, sizeof args,
           "--profile %s --gpu H200 --nranks 8 --coll allreduce --min 8M --max 8M", path);
  assert_int_equal(run(args, &out), 0);
  assert_non_null(strstr(out, "topo switches from NCCL 2.28's pick at 1 of 1 sizes: 1 measured"));
  assert_null(strstr(out, "no switch is measured"));
  free(out);
}

/* Two nodes on built-in figures: the network link is nominal and every row says so; a profile
 * that gives the network link its own figures is not marked. */
static void test_nominal_network_marked(void **state) {
  (void)state;
  char *out;
  assert_int_equal(
      run("--gpu H200 --nranks 16 --nnodes 2 --coll allreduce --min 1M --max 4M --json", &out), 0);
  assert_non_null(strstr(out, "\"net_nominal\":true,\"collectives\""));
  assert_null(strstr(out, "\"net_nominal\":false"));
  free(out);
  assert_int_equal(
      run("--gpu H200 --nranks 16 --nnodes 2 --coll allreduce --min 1M --max 4M", &out), 0);
  assert_non_null(strstr(out, "the network link is nominal"));
  assert_non_null(strstr(out, "model-only *"));
  free(out);
  char path[128], args[256];
  snprintf(path, sizeof path, "%s/net.profile", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("topo-profile 1\nsection gpu=H200 nranks=16 nnodes=2\nlink net bw_gbs=41.5 lat_us=6.5\n",
        f);
  assert_int_equal(fclose(f), 0);
  snprintf(args, sizeof args,
           "--profile %s --nranks 16 --nnodes 2 --coll allreduce --min 1M --max 4M --json", path);
  assert_int_equal(run(args, &out), 0);
  assert_null(strstr(out, "\"net_nominal\":true"));
  free(out);
}

/* The tuner switches on the profile's points; the row that shows the switch times both picks by
 * those points too. Here the terms put Ring/Simple at 0.3x Ring/LL128 (NCCL's pick at 4-16 MiB)
 * while the points, which decide, put it at 1.28x at 8 MiB: the gain shown is the points'. */
static void test_gain_of_a_switch_comes_from_the_points_it_was_decided_on(void **state) {
  (void)state;
  char path[128], args[256], *out;
  snprintf(path, sizeof path, "%s/g.profile", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(
      "topo-profile 2\nsection gpu=H200 nranks=8 nnodes=1\n"
      "term allreduce ring ll128 lat_us=8 bw_gbs=70 min_bytes=2097152 max_bytes=33554432\n"
      "term allreduce ring simple lat_us=12 bw_gbs=20 min_bytes=2097152 max_bytes=33554432\n"
      "point allreduce ring ll128 bytes=4194304 median_us=68 noise_us=0.5\n"
      "point allreduce ring ll128 bytes=8388608 median_us=128 noise_us=0.5\n"
      "point allreduce ring ll128 bytes=16777216 median_us=248 noise_us=0.5\n"
      "point allreduce ring simple bytes=4194304 median_us=53 noise_us=0.5\n"
      "point allreduce ring simple bytes=8388608 median_us=100 noise_us=0.5\n"
      "point allreduce ring simple bytes=16777216 median_us=194 noise_us=0.5\n",
      f);
  assert_int_equal(fclose(f), 0);
  snprintf(args, sizeof args,
           "--profile %s --gpu H200 --nranks 8 --coll allreduce --min 8M --max 8M --json", path);
  assert_int_equal(run(args, &out), 0);
  const char *r = strstr(out, "{\"bytes\":8388608");
  assert_non_null(r);
  const char *end = r + strlen(r), *topo = after(r, end, "topo"), *nccl = after(r, end, "nccl");
  char tp[32], np[32];
  str(topo, nccl, "proto", tp, sizeof tp);
  str(nccl, end, "proto", np, sizeof np);
  assert_string_equal(tp, "simple");
  assert_string_equal(np, "ll128");
  double tt = num(topo, nccl, "time_us"), nt = num(nccl, end, "time_us"),
         gain = num(r, end, "gain");
  if (fabs(tt - 100) > 0.01 || fabs(nt - 128) > 0.01 || fabs(gain - 1.28) > 0.001)
    fail_msg("topo %.3f us, NCCL %.3f us, gain %.4f; the points say 100, 128, 1.28", tt, nt, gain);
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unknown_gpu_is_one_warning_and_generic),
      cmocka_unit_test(test_size_that_overflows_is_rejected),
      cmocka_unit_test(test_gain_and_evidence_from_the_same_profile),
      cmocka_unit_test(test_nominal_network_marked),
      cmocka_unit_test(test_rows_fold_and_switches_are_explained),
      cmocka_unit_test(test_gain_of_a_switch_comes_from_the_points_it_was_decided_on),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
