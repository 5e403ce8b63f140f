// SPDX-License-Identifier: Apache-2.0
// Decision quality against real measurements (no GPU needed), out of sample: the CUDA-graph
// sweep on 2 x H200 (tests/data/nccl-2.28.9-2xh200/graph-sweep.txt) timed AllReduce, AllGather
// and ReduceScatter from 8 B to 512 MB (x4 steps) with NCCL's default and with every algorithm /
// protocol / channel count forced. Each size is judged by a tuner (through the plugin host) whose
// profile holds the sweep's measured points of every OTHER size (tests/tuner/sweep_profile.h):
// the decision at a size it never saw comes from the sizes around it, as on a real machine
// between calibrated sizes. At the smallest and largest size nothing brackets the held-out one,
// so the tuner must keep NCCL's pick there. The pick's measured time is compared with the best
// measured configuration the tuner could have chosen (regret) and with NCCL's default.
//
// Configurations are grouped by what actually runs: (algorithm, protocol, channels), where the
// channels are NCCL's own count for that size (its thread-threshold loop over 24 channels) or
// the forced count when smaller (NCCL_MAX_NCHANNELS=k above NCCL's count at that size changes
// nothing). Several measurements of one configuration (e.g. "default" and the forced pair NCCL
// would pick anyway) are averaged geometrically. Configurations above NCCL's own count at a
// size (only reachable by raising channels, which the tuner never does) are reported, not judged.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "recorded_calls.h"
#include "sweep_profile.h"
#include "tuner_test_util.h"

#define MAX_ROWS  1024
#define MAX_KEYS  32
#define MAX_SIZES 32

/* Targets: geometric-mean regret, worst regret, worst loss against NCCL's default. */
#define GEOMEAN_MAX    1.02
#define WORST_MAX      1.10
#define VS_DEFAULT_MAX 1.05

static sweep_row rows[MAX_ROWS];
static int nrows;
static unsigned long long held_out; /* the size left out of the profile */

static int not_held_out(unsigned long long bytes) { return bytes != held_out; }

typedef struct key {
  int algo, proto, nch;
  double log_sum;
  int n;
} key;

typedef struct totals {
  double log_regret, worst, worst_vs_default, log_regret_any, log_regret_default, worst_default;
  int npoints;
} totals;

static int key_index(key *keys, int *nkeys, int algo, int proto, int nch) {
  for (int i = 0; i < *nkeys; i++)
    if (keys[i].algo == algo && keys[i].proto == proto && keys[i].nch == nch) return i;
  assert_true(*nkeys < MAX_KEYS);
  keys[*nkeys] = (key){algo, proto, nch, 0, 0};
  return (*nkeys)++;
}

static double key_us(const key *k) { return exp(k->log_sum / k->n); }

/* Every measured configuration at (op, bytes), grouped by what runs; *def: NCCL's default's
 * group (its pick da/dp at NCCL's own channel count), *best_any: the fastest row of all. */
static int group_rows(const char *op, unsigned long long bytes, int da, int dp, key *keys, int *def,
                      double *best_any) {
  int nkeys = 0;
  *def = -1;
  *best_any = 1e30;
  for (int j = 0; j < nrows; j++) {
    if (rows[j].bytes != bytes || strcmp(rows[j].op, op)) continue;
    if (rows[j].med < *best_any) *best_any = rows[j].med;
    int a = -1, p = -1, forced = 0, k;
    if (!strcmp(rows[j].config, "default")) {
      k = *def = key_index(keys, &nkeys, da, dp, sweep_nccl_channels(da, dp, bytes));
    } else {
      assert_true(sweep_config(rows[j].config, &a, &p, &forced));
      int own = sweep_nccl_channels(a, p, bytes);
      if (forced > own) continue; /* only reachable by raising channels */
      k = key_index(keys, &nkeys, a, p, forced ? forced : own);
    }
    keys[k].log_sum += log(rows[j].med);
    keys[k].n++;
  }
  assert_true(*def >= 0);
  return nkeys;
}

/* Ask the loaded tuner for (op, bytes) on NCCL's 2 x H200 table and judge its pick. */
static void judge(topo_host_tuner *t, const char *op, unsigned long long bytes, totals *tot) {
  int coll = sweep_coll(op);
  assert_true(coll >= 0);
  float table[21];
  nccl2_fill(coll, bytes, 7, table);
  int da = -1, dp = -1;
  assert_true(topo_host_select(table, 7, 3, &da, &dp));
  int nch = 0, ta = -1, tp = -1;
  assert_int_equal(topo_host_tuner_get(t, coll, bytes, 1, table, 0, &nch), ncclSuccess);
  assert_true(topo_host_select(table, 7, 3, &ta, &tp));

  key keys[MAX_KEYS];
  int def;
  double best_any;
  int nkeys = group_rows(op, bytes, da, dp, keys, &def, &best_any);
  int own = sweep_nccl_channels(ta, tp, bytes);
  int ch = nch > 0 && nch < own ? nch : own;
  int pick = -1, best = 0;
  for (int k = 0; k < nkeys; k++) {
    if (keys[k].algo == ta && keys[k].proto == tp && keys[k].nch == ch) pick = k;
    if (keys[k].log_sum / keys[k].n < keys[best].log_sum / keys[best].n) best = k;
  }
  if (pick < 0)
    fail_msg("%s %llu B: no measurement of the tuner's pick algo %d proto %d %d channels", op,
             bytes, ta, tp, ch);
  double m_pick = key_us(&keys[pick]), m_best = key_us(&keys[best]), m_def = key_us(&keys[def]);
  double r = m_pick / m_best, vs_def = m_pick / m_def;
  tot->log_regret += log(r);
  tot->log_regret_default += log(m_def / m_best);
  tot->log_regret_any += log(m_pick / best_any);
  if (m_def / m_best > tot->worst_default) tot->worst_default = m_def / m_best;
  if (r > tot->worst) tot->worst = r;
  if (vs_def > tot->worst_vs_default) tot->worst_vs_default = vs_def;
  tot->npoints++;
  char pick_s[48], best_s[48];
  snprintf(pick_s, sizeof pick_s, "%s/%s/%dch", topo_nccl_algo_name(ta, TOPO_NCCL_TABLE),
           topo_nccl_proto_name(tp, TOPO_NCCL_TABLE), ch);
  snprintf(best_s, sizeof best_s, "%s/%s/%dch",
           topo_nccl_algo_name(keys[best].algo, TOPO_NCCL_TABLE),
           topo_nccl_proto_name(keys[best].proto, TOPO_NCCL_TABLE), keys[best].nch);
  print_message("%-15s %10llu  %-22s %9.2f %9.2f  %-22s %7.3f %7.3f %9.3f\n", op, bytes, pick_s,
                m_pick, m_best, best_s, r, vs_def, m_pick / best_any);
}

/* A tuner whose profile is the sweep without `bytes`; judges every collective at `bytes`. */
static void judge_held_out_size(unsigned long long bytes, totals *tot) {
  held_out = bytes;
  topo_profile prof;
  assert_true(sweep_to_profile(rows, nrows, 0, not_held_out, &prof) > 300);
  char ppath[] = "/tmp/topo-quality-XXXXXX";
  FILE *pf = fdopen(mkstemp(ppath), "w");
  assert_non_null(pf);
  assert_int_equal(topo_profile_write(pf, &prof), TOPO_OK);
  fclose(pf);
  topo_profile_free(&prof);
  setenv("TOPO_TUNER_PROFILE", ppath, 1);
  topo_host_tuner t;
  assert_int_equal(topo_host_tuner_load(&t, TOPO_TEST_TUNER_SO, TOPO_NCCL_2_28), TOPO_OK);
  assert_int_equal(topo_host_tuner_init(&t, 1, 2, 1, topo_host_log, NULL, NULL), ncclSuccess);
  for (int i = 0; i < nrows; i++) {
    int first = rows[i].bytes == bytes; /* one judgement per (op, bytes): its first row */
    for (int j = 0; j < i && first; j++)
      first = !(rows[j].bytes == bytes && !strcmp(rows[j].op, rows[i].op));
    if (first) judge(&t, rows[i].op, bytes, tot);
  }
  topo_host_tuner_finalize(&t);
  topo_host_tuner_unload(&t);
  unsetenv("TOPO_TUNER_PROFILE");
  unlink(ppath);
}

static void test_tuner_choices_between_measured_sizes_are_near_the_best(void **state) {
  (void)state;
  char path[512];
  snprintf(path, sizeof path, "%s/nccl-2.28.9-2xh200/graph-sweep.txt", topo_rec_data_dir());
  nrows = sweep_read(path, rows, MAX_ROWS);
  assert_true(nrows > 600);
  unsigned long long sizes[MAX_SIZES];
  int nsizes = 0;
  for (int i = 0; i < nrows; i++) {
    int seen = 0;
    for (int k = 0; k < nsizes; k++) seen |= sizes[k] == rows[i].bytes;
    if (!seen && nsizes < MAX_SIZES) sizes[nsizes++] = rows[i].bytes;
  }
  assert_int_equal(nsizes, 14);

  totals tot = {0};
  print_message("%-15s %10s  %-22s %9s %9s  %-22s %7s %7s %9s\n", "collective", "bytes",
                "tuner pick", "measured", "best", "best config", "regret", "vs def", "vs any");
  for (int s = 0; s < nsizes; s++) judge_held_out_size(sizes[s], &tot);
  double geomean = exp(tot.log_regret / tot.npoints);
  print_message("NCCL's default on the same grid: regret geometric mean %.4f, worst %.3f\n",
                exp(tot.log_regret_default / tot.npoints), tot.worst_default);
  print_message(
      "points %d, each judged with its size left out of the profile: regret geometric "
      "mean %.4f (target <= %.2f), worst %.3f (<= %.2f); worst against NCCL's default "
      "%.3f (<= %.2f); geometric mean against every measured configuration, raised "
      "channels included, %.4f\n",
      tot.npoints, geomean, GEOMEAN_MAX, tot.worst, WORST_MAX, tot.worst_vs_default, VS_DEFAULT_MAX,
      exp(tot.log_regret_any / tot.npoints));
  assert_int_equal(tot.npoints, 42);
  assert_true(geomean <= GEOMEAN_MAX);
  assert_true(tot.worst <= WORST_MAX);
  assert_true(tot.worst_vs_default <= VS_DEFAULT_MAX);
}

int main(void) {
  setenv("TOPO_TUNER_GPU", "H200", 1);
  unsetenv("TOPO_TUNER_PROFILE");
  unsetenv("TOPO_TUNER_RULES");
  unsetenv("TOPO_TUNER_FORCE");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tuner_choices_between_measured_sizes_are_near_the_best),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
