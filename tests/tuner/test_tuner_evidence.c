// SPDX-License-Identifier: Apache-2.0
// The tuner switches away from NCCL's choice only on measured evidence (no GPU needed).
//
// Against a real calibration: topo-calibrate --bench on 2 x H200, NCCL 2.28.3.
// tests/tuner/data/h200x2-nccl2.28.3-sweep.csv holds its measurements (kind = forced / default /
// tuner, the forced algorithm, protocol and channel count, size, median us, what ran);
// h200x2-nccl2.28.3-single-line.profile is the profile topo-calibrate wrote from them (one
// alpha-beta line per setting over 8 B..1 GB). Each case loads libtopo-tuner.so through the plugin
// host with a profile, asks it for every bench size (NCCL's 2 x H200 cost table with its minimum on
// what the calibration's default ran, nranks 2, nnodes 1) and looks the decision up in the
// measurements: a decision with NCCL's own channel count is the forced (algorithm, protocol) row,
// or NCCL's default run itself when that is what the default ran; a reduced channel count is the
// forced row at that count, and one never measured is a violation (DESIGN: never worse than
// NCCL's default, so channels are reduced only on measured evidence). Rule checked at every
// size: measured time <= 1.01 x the default's.
//
// On synthetic profiles: channels reduced, and NCCL's pick left, only where measured points show
// a gain beyond twice their noise; the built-in profile never reduces channels.
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

#include "profile.h"
#include "tuner_test_util.h"

#define SWEEP_NCCL_VERSION 22803 /* the run's NCCL: the profile's section key names it */
#define COMM_CHANNELS      24    /* "NCCL channels 24" in the calibrate summary */
#define MAX_ROWS           8192
#define VS_DEFAULT_MAX     1.01

enum { K_FORCED, K_DEFAULT, K_TUNER };

typedef struct row {
  int kind, algo, proto, nch, coll;
  uint64_t bytes;
  double us;
  int ran_algo, ran_proto, ran_nch;
} row;

static row rows[MAX_ROWS];
static int nrows;

static void load_rows(void) {
  if (nrows) return;
  FILE *f = fopen(TOPO_TUNER_TEST_DATA "/h200x2-nccl2.28.3-sweep.csv", "r");
  assert_non_null(f);
  char line[256];
  while (fgets(line, sizeof line, f) && nrows < MAX_ROWS) {
    char *fld[10], *c = line;
    int nf = 0;
    line[strcspn(line, "\r\n")] = 0;
    while (nf < 10) { /* fields may be empty (algorithm of a default row) */
      fld[nf++] = c;
      c = strchr(c, ',');
      if (!c) break;
      *c++ = 0;
    }
    if (nf != 10 || !strcmp(fld[0], "kind")) continue; /* the header */
    const char *kind = fld[0], *algo = fld[1], *proto = fld[2], *coll = fld[4], *ra = fld[7],
               *rp = fld[8];
    row r;
    r.nch = atoi(fld[3]);
    unsigned long long b = strtoull(fld[5], NULL, 10);
    r.us = strtod(fld[6], NULL);
    r.ran_nch = atoi(fld[9]);
    r.kind = !strcmp(kind, "forced") ? K_FORCED : !strcmp(kind, "default") ? K_DEFAULT : K_TUNER;
    r.algo = topo_nccl_algo_from_name(algo);
    r.proto = topo_nccl_proto_from_name(proto);
    r.coll = topo_nccl_coll_from_name(coll);
    r.ran_algo = topo_nccl_algo_from_name(ra);
    r.ran_proto = topo_nccl_proto_from_name(rp);
    r.bytes = b;
    assert_true(r.coll >= 0 && r.ran_algo >= 0 && r.ran_proto >= 0);
    rows[nrows++] = r;
  }
  fclose(f);
  assert_true(nrows > 3000);
}

static const row *find_row(int kind, int coll, uint64_t bytes, int algo, int proto, int nch) {
  for (int i = 0; i < nrows; i++) {
    const row *r = &rows[i];
    if (r->kind == kind && r->coll == coll && r->bytes == bytes &&
        (kind != K_FORCED || (r->algo == algo && r->proto == proto && r->nch == nch)))
      return r;
  }
  return NULL;
}

/* Measured us of a decision at (coll, bytes), -1 when never measured. */
static double measured(int coll, uint64_t bytes, int algo, int proto, int nch) {
  const row *d = find_row(K_DEFAULT, coll, bytes, 0, 0, 0);
  if (nch == 0 && d && d->ran_algo == algo && d->ran_proto == proto) return d->us;
  const row *f = find_row(K_FORCED, coll, bytes, algo, proto, nch);
  return f ? f->us : -1;
}

/* Best forced setting at (coll, bytes); max_nch < 0: any, else channels <= max_nch. */
static double oracle(int coll, uint64_t bytes, int max_nch) {
  double best = -1;
  for (int i = 0; i < nrows; i++) {
    const row *r = &rows[i];
    if (r->kind != K_FORCED || r->coll != coll || r->bytes != bytes) continue;
    if (max_nch >= 0 && r->nch > max_nch) continue;
    if (best < 0 || r->us < best) best = r->us;
  }
  return best;
}

typedef struct summary {
  int points, violations, unmeasured, reduced;
  double log_orc, log_orc24, log_def;
  int n_def; /* points with a measured decision */
  double worst_def;
} summary;

static const int colls[3] = {ncclFuncAllReduce, ncclFuncAllGather, ncclFuncReduceScatter};

static void print_summary(const char *label, const summary *s) {
  print_message(
      "%s: %d points, %d measured; tuner/oracle geometric mean %.4f, tuner/oracle"
      "(<= %d channels) %.4f, tuner/default %.4f, worst tuner/default %.3f; %d reduced "
      "channel counts, %d unmeasured, %d above %.2f x default\n",
      label, s->points, s->n_def, exp(s->log_orc / s->n_def), COMM_CHANNELS,
      exp(s->log_orc24 / s->n_def), exp(s->log_def / s->n_def), s->worst_def, s->reduced,
      s->unmeasured, s->violations, VS_DEFAULT_MAX);
}

/* Ask libtopo-tuner.so loaded with `profile_path` for every bench size and judge its picks. */
static void evaluate(const char *label, const char *profile_path, summary *s) {
  load_rows();
  memset(s, 0, sizeof *s);
  setenv("TOPO_TUNER_PROFILE", profile_path, 1);
  topo_host_tuner t;
  assert_int_equal(topo_host_tuner_load(&t, TOPO_TEST_TUNER_SO, SWEEP_NCCL_VERSION), TOPO_OK);
  assert_int_equal(topo_host_tuner_init(&t, 1, 2, 1, topo_host_log, NULL, NULL), ncclSuccess);
  print_message("%s\n%-14s %10s  %-18s %9s %9s %9s %9s %8s\n", label, "collective", "bytes",
                "tuner pick", "measured", "default", "oracle", "orc<=24", "vs def");
  for (int c = 0; c < 3; c++) {
    int coll = colls[c];
    for (int i = 0; i < nrows; i++) {
      const row *d = &rows[i];
      if (d->kind != K_DEFAULT || d->coll != coll) continue;
      /* NCCL's cost table on 2 x H200, its minimum moved onto what the calibration's default ran
       * there (its pick: NCCL 2.28.3's constants differ slightly from the 2.28.9 ones recorded). */
      float table[21], lo = 3.6e9f;
      nccl2_fill(coll, d->bytes, 7, table);
      for (int k = 0; k < 21; k++)
        if (table[k] >= 0 && table[k] < lo) lo = table[k];
      assert_true(table[d->ran_algo * 3 + d->ran_proto] >= 0);
      table[d->ran_algo * 3 + d->ran_proto] = lo * 0.99f;
      int nch = 0, a = -1, p = -1;
      assert_int_equal(topo_host_tuner_get(&t, coll, d->bytes, 1, table, 0, &nch), ncclSuccess);
      assert_true(topo_host_select(table, 7, 3, &a, &p));
      s->points++;
      if (nch > 0) s->reduced++;
      double m = measured(coll, d->bytes, a, p, nch);
      double o = oracle(coll, d->bytes, -1), o24 = oracle(coll, d->bytes, COMM_CHANNELS);
      char pick[32];
      snprintf(pick, sizeof pick, "%s/%s/%d", topo_nccl_algo_name(a, TOPO_NCCL_FILE),
               topo_nccl_proto_name(p, TOPO_NCCL_FILE), nch);
      if (m < 0) {
        print_message("%-14s %10llu  %-18s %9s %9.2f %9.2f %9.2f %8s%s\n",
                      topo_nccl_func_name(coll, TOPO_NCCL_FILE), (unsigned long long)d->bytes, pick,
                      "-", d->us, o, o24, "-", nch > 0 ? "  UNMEASURED reduced channels" : "");
        if (nch > 0) s->unmeasured++;
        continue;
      }
      double r = m / d->us;
      s->n_def++;
      s->log_orc += log(m / o);
      s->log_orc24 += log(m / o24);
      s->log_def += log(r);
      if (r > s->worst_def) s->worst_def = r;
      if (r > VS_DEFAULT_MAX) s->violations++;
      print_message("%-14s %10llu  %-18s %9.2f %9.2f %9.2f %9.2f %8.3f%s\n",
                    topo_nccl_func_name(coll, TOPO_NCCL_FILE), (unsigned long long)d->bytes, pick,
                    m, d->us, o, o24, r, r > VS_DEFAULT_MAX ? "  SLOWER than default" : "");
    }
  }
  topo_host_tuner_finalize(&t);
  topo_host_tuner_unload(&t);
  print_summary(label, s);
}

/* The calibration's own profile (single-line fits, 4-11 % error): no reduced channel count
 * without a measured term at that count, and no decision slower than the default by more than
 * 1 %. */
static void test_single_line_profile_decisions_never_slower_than_default(void **state) {
  (void)state;
  summary s;
  evaluate("single-line profile", TOPO_TUNER_TEST_DATA "/h200x2-nccl2.28.3-single-line.profile",
           &s);
  assert_int_equal(s.points, 84);
  assert_int_equal(s.unmeasured, 0);
  assert_int_equal(s.violations, 0);
}

/* Re-fit the sweeps piecewise (as topo-calibrate does): every forced setting's sweep per
 * collective through topo_profile_fit_piecewise, on the single-line profile's link/protocol
 * parameters. TUNER_SWEEP_PROFILE_OUT=path also writes it there (for bench/tuner_bench). */
static void write_piecewise_profile(char *path, size_t len, int *nterms) {
  load_rows();
  topo_profile p;
  topo_profile_key want = {"H200", 2, 1, SWEEP_NCCL_VERSION};
  assert_int_equal(
      topo_profile_load(TOPO_TUNER_TEST_DATA "/h200x2-nccl2.28.3-single-line.profile", &want, &p),
      TOPO_OK);
  topo_profile_free(&p);
  static uint64_t b[64];
  static double us[64];
  for (int i = 0; i < nrows; i++) {
    const row *r = &rows[i];
    if (r->kind != K_FORCED) continue;
    int first = 1;
    for (int j = 0; j < i && first; j++)
      first = !(rows[j].kind == K_FORCED && rows[j].coll == r->coll && rows[j].algo == r->algo &&
                rows[j].proto == r->proto && rows[j].nch == r->nch);
    if (!first) continue;
    int n = 0;
    for (int j = i; j < nrows && n < 64; j++) {
      const row *q = &rows[j];
      if (q->kind == K_FORCED && q->coll == r->coll && q->algo == r->algo && q->proto == r->proto &&
          q->nch == r->nch) {
        b[n] = q->bytes;
        us[n] = q->us;
        n++;
      }
    }
    topo_profile_term pieces[16];
    memset(pieces, 0, sizeof pieces);
    int np = topo_profile_fit_piecewise(b, us, n, TOPO_PROFILE_PIECE_ERR, pieces, 16);
    assert_true(np >= 1);
    for (int k = 0; k < np; k++) {
      pieces[k].coll = r->coll;
      pieces[k].algo = r->algo;
      pieces[k].proto = r->proto;
      pieces[k].nchannels = r->nch;
      assert_int_equal(topo_profile_set_term(&p, &pieces[k]), TOPO_OK);
    }
  }
  *nterms = p.nterms;
  const char *keep = getenv("TUNER_SWEEP_PROFILE_OUT");
  if (keep && *keep) { /* for bench/tuner_bench: every shape matches (H200 only) */
    FILE *k = fopen(keep, "w");
    assert_non_null(k);
    topo_profile w = p;
    w.key.nranks = w.key.nnodes = w.key.nccl_version = 0;
    assert_int_equal(topo_profile_write(k, &w), TOPO_OK);
    fclose(k);
  }
  snprintf(path, len, "/tmp/topo-sweep-piecewise-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  assert_int_equal(topo_profile_write(f, &p), TOPO_OK);
  fclose(f);
  topo_profile_free(&p);
}

static void test_piecewise_profile_decisions_never_slower_than_default(void **state) {
  (void)state;
  char path[64];
  int nterms = 0;
  write_piecewise_profile(path, sizeof path, &nterms);
  print_message("piecewise re-fit of the sweeps: %d terms\n", nterms);
  summary s;
  evaluate("piecewise profile", path, &s);
  unlink(path);
  assert_int_equal(s.points, 84);
  assert_int_equal(s.unmeasured, 0);
  assert_int_equal(s.violations, 0);
}

/* A one-section profile for 2 x H200 with the given term lines, in a temporary file. */
static void write_profile(char *path, size_t len, const char *terms) {
  snprintf(path, len, "/tmp/topo-synth-profile-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  fprintf(f, "topo-profile 1\nsection gpu=H200 nranks=2 nnodes=1\nmax_channels 24\n%s", terms);
  fclose(f);
}

/* One decision for AllReduce at `bytes` with only Ring/LL and Ring/Simple allowed; NCCL's own
 * table prefers `nccl_proto`. Returns nChannels, the pick in *proto. */
static int decide(const char *profile, size_t bytes, int nccl_proto, int *proto) {
  setenv("TOPO_TUNER_PROFILE", profile, 1);
  topo_host_tuner t;
  assert_int_equal(topo_host_tuner_load(&t, TOPO_TEST_TUNER_SO, TOPO_NCCL_2_28), TOPO_OK);
  assert_int_equal(topo_host_tuner_init(&t, 1, 2, 1, topo_host_log, NULL, NULL), ncclSuccess);
  float table[21];
  for (int k = 0; k < 21; k++) table[k] = -1.0f;
  table[NCCL_ALGO_RING * 3 + NCCL_PROTO_LL] = nccl_proto == NCCL_PROTO_LL ? 10.0f : 20.0f;
  table[NCCL_ALGO_RING * 3 + NCCL_PROTO_SIMPLE] = nccl_proto == NCCL_PROTO_SIMPLE ? 10.0f : 20.0f;
  int nch = -1, a = -1;
  assert_int_equal(topo_host_tuner_get(&t, ncclFuncAllReduce, bytes, 1, table, 0, &nch),
                   ncclSuccess);
  assert_true(topo_host_select(table, 7, 3, &a, proto));
  assert_int_equal(a, NCCL_ALGO_RING);
  topo_host_tuner_finalize(&t);
  topo_host_tuner_unload(&t);
  return nch;
}

/* Ring/LL AllReduce measured at NCCL's own channels and at 4, at 512 KB, 1 MB and 2 MB. */
static void ring_ll_points(char *buf, size_t len, double own_us, double ch4_us, double noise,
                           unsigned long long ch4_lo) {
  size_t n = 0;
  for (unsigned long long b = 512u << 10; b <= (2u << 20); b *= 2) {
    n +=
        (size_t)snprintf(buf + n, len - n,
                         "point allreduce ring ll channels=0 bytes=%llu median_us=%g noise_us=%g\n",
                         b, own_us, noise);
    if (ch4_us > 0 && b >= ch4_lo)
      n += (size_t)snprintf(
          buf + n, len - n,
          "point allreduce ring ll channels=4 bytes=%llu median_us=%g noise_us=%g\n", b, ch4_us,
          noise);
  }
}

/* Channels below NCCL's only where measured at that count, faster than at NCCL's own count by
 * more than twice the noise, over the measured sizes only. */
static void test_channels_reduced_only_on_measured_evidence(void **state) {
  (void)state;
  static const struct {
    double ch4_us, noise;
    unsigned long long ch4_lo;
    size_t bytes;
    int want;
  } cases[] = {
      {15, 0.5, 0, 1 << 20, 4},        /* measured 25 % faster at 4 channels */
      {15, 0.5, 0, 4096, 0},           /* below what was measured */
      {19.5, 0.5, 0, 1 << 20, 0},      /* gain 0.5 us within 2 x 0.5 us */
      {15, 0.5, 2u << 20, 1 << 20, 0}, /* 4 channels measured only from 2 MB */
      {0, 0.5, 0, 1 << 20, 0},         /* never measured at 4 channels */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char pts[1024], path[64];
    ring_ll_points(pts, sizeof pts, 20, cases[i].ch4_us, cases[i].noise, cases[i].ch4_lo);
    write_profile(path, sizeof path, pts);
    int proto = -1;
    int nch = decide(path, cases[i].bytes, NCCL_PROTO_LL, &proto);
    unlink(path);
    assert_int_equal(proto, NCCL_PROTO_LL);
    if (nch != cases[i].want) fail_msg("case %zu: %d channels, want %d", i, nch, cases[i].want);
  }
}

/* The built-in profile (no measured terms) never reduces channels, at any size. */
static void test_builtin_profile_never_reduces_channels(void **state) {
  (void)state;
  unsetenv("TOPO_TUNER_PROFILE");
  topo_host_tuner t;
  assert_int_equal(topo_host_tuner_load(&t, TOPO_TEST_TUNER_SO, TOPO_NCCL_2_28), TOPO_OK);
  for (int nranks = 2; nranks <= 16; nranks *= 2) {
    assert_int_equal(topo_host_tuner_init(&t, 1, (size_t)nranks, 1, topo_host_log, NULL, NULL),
                     ncclSuccess);
    for (int coll = 0; coll < 5; coll++)
      for (size_t b = 8; b <= (1ull << 32); b = b * 3 / 2) {
        float table[21];
        nccl2_fill(coll, b, 7, table);
        int nch = -1;
        assert_int_equal(topo_host_tuner_get(&t, coll, b, 1, table, 0, &nch), ncclSuccess);
        if (nch != 0) fail_msg("%d ranks, coll %d, %zu B: %d channels", nranks, coll, b, nch);
      }
    topo_host_tuner_finalize(&t);
  }
  topo_host_tuner_unload(&t);
}

/* NCCL's own pick stays unless the measured gain exceeds twice the measured noise; fitted terms
 * (the model) are no evidence for a switch. */
static void test_nccl_pick_kept_unless_the_measured_gain_is_beyond_the_noise(void **state) {
  (void)state;
  static const struct {
    double simple_us, noise;
    int want;
  } cases[] = {
      {10.2, 0.05, NCCL_PROTO_SIMPLE}, /* Simple (NCCL's) 2 % slower than LL, within 2 x 0.15 */
      {12, 0.5, NCCL_PROTO_LL},        /* 20 % slower, beyond 2 x 0.5 */
      {12, 1.1, NCCL_PROTO_SIMPLE},    /* 20 % slower but within 2 x 1.1 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char pts[1024], path[64];
    size_t n = 0;
    for (unsigned long long b = 512u << 10; b <= (2u << 20); b *= 2)
      n += (size_t)snprintf(pts + n, sizeof pts - n,
                            "point allreduce ring ll bytes=%llu median_us=10 noise_us=%g\n"
                            "point allreduce ring simple bytes=%llu median_us=%g noise_us=%g\n",
                            b, i == 0 ? 0.15 : cases[i].noise, b, cases[i].simple_us,
                            cases[i].noise);
    write_profile(path, sizeof path, pts);
    int proto = -1;
    decide(path, 1 << 20, NCCL_PROTO_SIMPLE, &proto);
    unlink(path);
    if (proto != cases[i].want) fail_msg("case %zu: protocol %d, want %d", i, proto, cases[i].want);
  }
  /* A model term 10x faster, nothing measured: NCCL's pick. */
  char path[64];
  write_profile(path, sizeof path,
                "term allreduce ring ll lat_us=1 bw_gbs=1000 min_bytes=8 max_bytes=1073741824 "
                "rel_err=0.001 npoints=20\n"
                "term allreduce ring simple lat_us=10 bw_gbs=100 min_bytes=8 max_bytes=1073741824 "
                "rel_err=0.001 npoints=20\n");
  int proto = -1;
  decide(path, 1 << 20, NCCL_PROTO_SIMPLE, &proto);
  unlink(path);
  assert_int_equal(proto, NCCL_PROTO_SIMPLE);
}

int main(void) {
  setenv("TOPO_TUNER_GPU", "H200", 1);
  unsetenv("TOPO_TUNER_RULES");
  unsetenv("TOPO_TUNER_FORCE");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_single_line_profile_decisions_never_slower_than_default),
      cmocka_unit_test(test_piecewise_profile_decisions_never_slower_than_default),
      cmocka_unit_test(test_channels_reduced_only_on_measured_evidence),
      cmocka_unit_test(test_builtin_profile_never_reduces_channels),
      cmocka_unit_test(test_nccl_pick_kept_unless_the_measured_gain_is_beyond_the_noise),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
