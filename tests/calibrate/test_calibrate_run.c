// SPDX-License-Identifier: Apache-2.0
// topo-calibrate's GPU engine (runner.c) end to end on a CPU stand-in for CUDA and NCCL
// (fake_cuda_nccl.c): devices, floors, p2p matrix, forced sweeps through the tuner or through
// NCCL_ALGO/NCCL_PROTO, verification against NCCL's log, --bench, the fitted profile, outputs,
// and a stop request. Each scenario runs in its own process: NCCL's tuner-load status and debug
// file are per process, as in the real library.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "calibrate.h"
#include "profile.h"

static int failures;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                              \
    }                                                                          \
  } while (0)

typedef struct scenario {
  char dir[64];
  char tuner[128], profile[128], csv[128], summary[128];
  topo_cal_options o;
  topo_cal_results r;
  int rc;
} scenario;

static void setup(scenario *s, int with_tuner) {
  snprintf(s->dir, sizeof s->dir, "/tmp/topo-cal-run-XXXXXX");
  if (!mkdtemp(s->dir)) abort();
  snprintf(s->tuner, sizeof s->tuner, "%s/libtopo-tuner.so", s->dir);
  snprintf(s->profile, sizeof s->profile, "%s/out.profile", s->dir);
  snprintf(s->csv, sizeof s->csv, "%s/out.csv", s->dir);
  snprintf(s->summary, sizeof s->summary, "%s/summary.txt", s->dir);
  if (with_tuner) {
    FILE *f = fopen(s->tuner, "w");
    fputs("not a real tuner: the fake NCCL only checks that it exists\n", f);
    fclose(f);
  }
  topo_cal_options_default(&s->o);
  s->o.colls = (1u << ncclFuncAllReduce) | (1u << ncclFuncAllGather);
  s->o.min_bytes = 8;
  s->o.max_bytes = 4 << 20;
  s->o.step = 4;
  s->o.channels[0] = 0, s->o.channels[1] = 8, s->o.nchannels = 2;
  s->o.p2p_bytes = 1 << 20;
  s->o.iters = 5;
  s->o.warmup = 1;
  s->o.graph_max_bytes = 1 << 20;
  s->o.tuner = s->tuner;
  s->o.workdir = s->dir;
  s->o.output = s->profile;
  s->o.csv = s->csv;
  topo_cal_results_init(&s->r);
  unsetenv("NCCL_DEBUG_FILE");
  unsetenv("NCCL_TUNER_PLUGIN");
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PROTO");
  unsetenv("TOPO_TUNER_FORCE");
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  topo_cal_log_setup("topo-calibrate-test", 0, 0);
}

/* Run with stdout going to the summary file. */
static void run(scenario *s) {
  fflush(stdout);
  int saved = dup(1);
  int fd = open(s->summary, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 1);
  close(fd);
  topo_cal_proc proc = {.nprocs = 1, .proc = 0, .nodes = 1, .nlocal = 0};
  s->rc = topo_cal_run(&s->o, &proc, &s->r);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
}

static int file_contains(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return strstr(buf, needle) != NULL;
}

/* Remove the scenario's directory (flat: the files the run wrote). */
static void cleanup(scenario *s) {
  DIR *d = opendir(s->dir);
  if (!d) return;
  struct dirent *e;
  char path[512];
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
      unlink(path);
    }
  closedir(d);
  rmdir(s->dir);
}

static int count_kind(const topo_cal_results *r, int kind) {
  int n = 0;
  for (int i = 0; i < r->nsettings; i++) n += r->settings[i].kind == kind;
  return n;
}

static const topo_cal_point *find(const topo_cal_results *r, int kind, int algo, int proto, int nch,
                                  int coll, uint64_t bytes) {
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    const topo_cal_setting *s = &r->settings[p->setting];
    if (s->kind == kind &&
        (kind != TOPO_CAL_FORCED ||
         (s->algo == algo && s->proto == proto && s->nchannels == nch)) &&
        p->coll == coll && p->bytes == bytes)
      return p;
  }
  return NULL;
}

/* Through the tuner, with --bench: every forced point honoured and verified; the timings are
 * the fake's model; the profile is written and reads back; the bench table has ratios. */
static int scenario_tuner_bench(void) {
  scenario s;
  setup(&s, 1);
  s.o.bench = 1;
  setenv("NCCL_ALGO", "Tree",
         1); /* a user's restriction: unset with a warning, or ring could not be forced */
  run(&s);
  topo_cal_results *r = &s.r;
  CHECK(s.rc == 0);
  CHECK(getenv("NCCL_ALGO") == NULL);
  CHECK(r->nranks == 2 && r->ndev == 2);
  CHECK(strcmp(r->gpu_model, "H200") == 0);
  CHECK(r->nccl_version == 22809);
  CHECK(r->force_via == TOPO_CAL_VIA_TUNER);
  CHECK(r->tuner_loaded == 1);
  CHECK(r->allowed_from_nccl == 1);
  CHECK(r->nccl_channels == 24);
  CHECK(r->line_rate_gbs == 450);
  /* ring x3 + tree x3 per channel count (tree only for AllReduce), then tuner and default */
  /* one setting record per (setting, round); the default twice per round (A/A) */
  CHECK(count_kind(r, TOPO_CAL_FORCED) == 12 * s.o.rounds);
  CHECK(count_kind(r, TOPO_CAL_TUNER) == s.o.rounds);
  CHECK(count_kind(r, TOPO_CAL_DEFAULT) == 2 * s.o.rounds);
  /* interleaving: round k starts with the k-th forced setting of round 0 (rotated order) */
  for (int k = 1; k < s.o.rounds; k++) {
    const topo_cal_setting *a = &r->settings[k], *b = &r->settings[12 * k];
    CHECK(a->algo == b->algo && a->proto == b->proto && a->nchannels == b->nchannels);
  }
  /* A/A noise: the fake is deterministic, so the two default communicators agree exactly */
  int npairs = -1;
  CHECK(topo_cal_results_noise(r, ncclFuncAllReduce, 1 << 19, &npairs) == 0.0);
  CHECK(npairs == s.o.rounds);
  /* 8 channels < NCCL's 24: within reach, forced through the tuner in a default-shaped comm */
  for (int i = 0; i < r->nsettings; i++) CHECK(!r->settings[i].beyond_reach);
  CHECK(file_contains(s.csv, "measured,H200,2,1,22809,allreduce,ring,simple,"));
  int forced_ok = 0;
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    const topo_cal_setting *st = &r->settings[p->setting];
    if (st->kind != TOPO_CAL_FORCED) continue;
    CHECK(p->status == TOPO_CAL_OK || p->status == TOPO_CAL_REJECTED);
    CHECK(p->ran_algo == st->algo && p->ran_proto == st->proto);
    CHECK(st->algo != NCCL_ALGO_TREE || p->coll == ncclFuncAllReduce);
    forced_ok += p->status == TOPO_CAL_OK;
  }
  CHECK(forced_ok > 50);
  /* AllReduce ring/simple, NCCL's channels, 512 KB (graph-timed): 12 + 2^19 / 360e3 us */
  const topo_cal_point *p =
      find(r, TOPO_CAL_FORCED, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 0, ncclFuncAllReduce, 1 << 19);
  CHECK(p != NULL);
  if (p) {
    CHECK(p->graph == 1);
    CHECK(p->calls >= 2);
    CHECK(fabs(p->stats.median - (12.0 + 524288.0 / 360e3)) < 1e-3);
  }
  /* 4 MB is eager; with 8 channels the fake halves Simple's bandwidth */
  p = find(r, TOPO_CAL_FORCED, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 8, ncclFuncAllReduce, 4 << 20);
  CHECK(p != NULL);
  if (p) {
    CHECK(p->graph == 0);
    CHECK(fabs(p->stats.median - (12.0 + 4194304.0 / 180e3)) < 1e-2);
    CHECK(p->ran_channels <= 8);
  }
  /* the default ran the fake NCCL's own pick: LL at 8 B */
  p = find(r, TOPO_CAL_DEFAULT, 0, 0, 0, ncclFuncAllReduce, 8);
  CHECK(p != NULL && p->ran_proto == NCCL_PROTO_LL);
  /* floors and p2p */
  CHECK(r->floor_graph_us > 1.4 && r->floor_graph_us < 1.6);
  /* 1 MB copies at 2 us + 380 GB/s */
  CHECK(r->p2p_ce_bw &&
        fabs(r->p2p_ce_bw[1] - 1048576.0 / ((2.0 + 1048576.0 / 380e3) * 1e3)) < 0.1);
  CHECK(r->p2p_ce_lat && fabs(r->p2p_ce_lat[2] - 2.0) < 1e-3);
  /* outputs */
  topo_profile_key want = {"H200", 2, 1, 22809};
  topo_profile prof;
  CHECK(topo_profile_load(s.profile, &want, &prof) == TOPO_OK);
  const topo_profile_term *t =
      topo_profile_find_term(&prof, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 0);
  CHECK(t != NULL);
  if (t) CHECK(fabs(t->lat_us - 12.0) < 0.05 && fabs(t->bw_gbs - 360.0) < 1.0);
  CHECK(topo_profile_find_term(&prof, ncclFuncAllGather, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 0) ==
        NULL);
  /* the fake is deterministic: where the repeats and the A/A pair agree exactly there is no
   * noise figure, so no point (a noise of 0 is never written): AllReduce ring/simple at 4 MB */
  int npt = 0, at4 = 0;
  const topo_profile_point *pts = topo_profile_find_points(&prof, ncclFuncAllReduce, NCCL_ALGO_RING,
                                                           NCCL_PROTO_SIMPLE, 0, &npt);
  for (int i = 0; i < npt; i++) at4 |= pts[i].bytes == 4u << 20;
  CHECK(!at4);
  for (int i = 0; i < prof.npoints; i++) CHECK(prof.points[i].noise_us > 0);
  topo_profile_free(&prof);
  CHECK(file_contains(s.summary, "geometric mean"));
  CHECK(file_contains(s.summary, "busbw(GB/s)"));
  CHECK(file_contains(s.summary, "p2p copy-engine bandwidth"));
  CHECK(file_contains(s.csv, "ring/simple,forced,ring,simple,0,allreduce,524288,131072,"));
  topo_cal_results_free(r);
  cleanup(&s);
  return failures;
}

/* NCCL ignores the tuner's LL128 force: those points are marked, kept out of the fit. */
static int scenario_force_not_honoured(void) {
  scenario s;
  setup(&s, 1);
  setenv("FAKE_NCCL_REFUSE_LL128", "1", 1);
  s.o.nchannels = 1;
  run(&s);
  topo_cal_results *r = &s.r;
  CHECK(s.rc == 0);
  /* NCCL fell back to its own pick: where that is not LL128 the point is marked; where it
   * happens to be LL128 the point is a true LL128 measurement and counts. */
  int mism = 0, ok = 0;
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    const topo_cal_setting *st = &r->settings[p->setting];
    if (st->kind != TOPO_CAL_FORCED || st->proto != NCCL_PROTO_LL128 ||
        p->coll != ncclFuncAllReduce || st->algo != NCCL_ALGO_RING)
      continue;
    if (p->ran_proto != NCCL_PROTO_LL128) {
      CHECK(p->status == TOPO_CAL_MISMATCH);
      mism++;
    } else {
      CHECK(p->status == TOPO_CAL_OK);
      ok++;
    }
  }
  CHECK(mism > 0);
  topo_profile_key want = {"H200", 2, 1, 0};
  topo_profile prof;
  CHECK(topo_profile_load(s.profile, &want, &prof) == TOPO_OK);
  const topo_profile_term *t =
      topo_profile_find_term(&prof, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL128, 0);
  /* the fit takes one value per size: the median of its rounds */
  if (ok >= 2 * s.o.rounds) CHECK(t != NULL && t->npoints * s.o.rounds == ok);
  else CHECK(t == NULL);
  CHECK(topo_profile_find_term(&prof, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_LL, 0) != NULL);
  topo_profile_free(&prof);
  CHECK(file_contains(s.summary, "NOT-FORCED"));
  topo_cal_results_free(r);
  cleanup(&s);
  return failures;
}

/* Timings that vary by communicator (FAKE_NCCL_JITTER): the profile carries a measured point
 * for every in-reach effective setting and size, each with a noise above 0, default=1 on what
 * NCCL's default ran, in a section keyed by the NCCL version that ran. */
static int scenario_points(void) {
  scenario s;
  setup(&s, 1);
  setenv("FAKE_NCCL_JITTER", "0.02", 1);
  run(&s);
  unsetenv("FAKE_NCCL_JITTER");
  topo_cal_results *r = &s.r;
  CHECK(s.rc == 0);
  int npairs = 0;
  CHECK(topo_cal_results_noise(r, ncclFuncAllReduce, 1 << 19, &npairs) > 0);
  CHECK(file_contains(s.profile, "topo-profile 2"));
  CHECK(file_contains(s.profile, "section gpu=H200 nranks=2 nnodes=1 nccl=22809"));
  topo_profile_key want = {"H200", 2, 1, 22809};
  topo_profile prof;
  CHECK(topo_profile_load(s.profile, &want, &prof) == TOPO_OK);
  CHECK(prof.npoints > 20);
  for (int i = 0; i < prof.npoints; i++) {
    const topo_profile_point *q = &prof.points[i];
    CHECK(q->noise_us > 0 && q->median_us > 0);
    CHECK(q->nchannels == 0 || q->nchannels == 8);
    /* no default on a channel-limited point, and one default per (collective, size) at most */
    if (q->nchannels) CHECK(!q->is_default);
    for (int j = i + 1; j < prof.npoints; j++)
      if (q->is_default && prof.points[j].is_default)
        CHECK(prof.points[j].coll != q->coll || prof.points[j].bytes != q->bytes);
  }
  /* where the default ran: its setting's point says default=1 */
  int checked = 0;
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    if (r->settings[p->setting].kind != TOPO_CAL_DEFAULT || p->status != TOPO_CAL_OK ||
        p->ran_algo < 0)
      continue;
    int n = 0, hit = 0;
    const topo_profile_point *pt =
        topo_profile_find_points(&prof, p->coll, p->ran_algo, p->ran_proto, 0, &n);
    for (int k = 0; k < n; k++)
      if (pt[k].bytes == p->bytes) hit = pt[k].is_default ? 1 : -1;
    CHECK(hit == 1);
    checked++;
  }
  CHECK(checked > 10);
  /* 4 MB with 8 of NCCL's 24 channels: a point of its own */
  int n8 = 0;
  const topo_profile_point *pt =
      topo_profile_find_points(&prof, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 8, &n8);
  CHECK(pt != NULL && n8 > 0 && pt[n8 - 1].bytes == 4u << 20);
  topo_profile_free(&prof);
  topo_cal_results_free(r);
  cleanup(&s);
  return failures;
}

/* No tuner: forcing through NCCL_ALGO / NCCL_PROTO, tree only where NCCL allows it. */
static int scenario_env_forcing(void) {
  scenario s;
  setup(&s, 0);
  s.o.nchannels = 1;
  s.o.colls = 0x1f;
  run(&s);
  topo_cal_results *r = &s.r;
  CHECK(s.rc == 0);
  CHECK(r->force_via == TOPO_CAL_VIA_ENV);
  CHECK(count_kind(r, TOPO_CAL_FORCED) == 6 * s.o.rounds);
  int bad = 0;
  for (int i = 0; i < r->npoints; i++) {
    const topo_cal_point *p = &r->points[i];
    const topo_cal_setting *st = &r->settings[p->setting];
    if (st->kind == TOPO_CAL_FORCED && (p->ran_algo != st->algo || p->ran_proto != st->proto))
      bad++;
    if (st->kind == TOPO_CAL_FORCED && st->algo == NCCL_ALGO_TREE)
      CHECK(p->coll == ncclFuncAllReduce);
    CHECK(p->status != TOPO_CAL_FAILED);
  }
  CHECK(bad == 0);
  CHECK(getenv("NCCL_ALGO") == NULL && getenv("NCCL_PROTO") == NULL);
  topo_cal_results_free(r);
  cleanup(&s);
  return failures;
}

/* A stop request: nothing new starts, what ran is written, marked partial. */
static int scenario_stop(void) {
  scenario s;
  setup(&s, 1);
  topo_cal_request_stop();
  run(&s);
  CHECK(s.r.partial == 1);
  CHECK(s.r.npoints <= 1);
  CHECK(file_contains(s.summary, "PARTIAL"));
  CHECK(access(s.profile, R_OK) == 0);
  topo_cal_results_free(&s.r);
  cleanup(&s);
  return failures;
}

void fake_nccl_shared_init(int nranks); /* fake_cuda_nccl.c */

/* Two "nodes" through the fork launcher: one process per GPU, NCCL_HOSTID per node, ids and
 * samples exchanged over the (fake) NCCL; process 0 alone writes the outputs, labelled as
 * socket transport, keyed nnodes=2. */
static int scenario_two_nodes(void) {
  scenario s;
  setup(&s, 1);
  s.o.nodes = 2;
  s.o.bench = 1;
  s.o.nchannels = 1;
  fake_nccl_shared_init(2);
  fflush(stdout);
  int saved = dup(1);
  int fd = open(s.summary, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 1);
  close(fd);
  int rc = topo_cal_launch_fork(&s.o, 2);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  CHECK(rc == 0);
  CHECK(file_contains(s.summary, "2 nodes (socket transport"));
  CHECK(file_contains(s.summary, "geometric mean"));
  CHECK(file_contains(s.summary, "2 processes"));
  topo_profile_key want = {"H200", 2, 2, 0};
  topo_profile prof;
  CHECK(topo_profile_load(s.profile, &want, &prof) == TOPO_OK);
  CHECK(prof.key.nnodes == 2);
  CHECK(topo_profile_find_term(&prof, ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 0) !=
        NULL);
  topo_profile_free(&prof);
  /* process 0's NCCL log saw its node id */
  DIR *d = opendir(s.dir);
  int seen = 0;
  struct dirent *e;
  char path[512];
  while (d && (e = readdir(d)))
    if (strncmp(e->d_name, "topo-calibrate-nccl.", 20) == 0) {
      snprintf(path, sizeof path, "%s/%s", s.dir, e->d_name);
      seen |= file_contains(path, "NCCL_HOSTID set by environment to topo-calibrate-node0");
    }
  if (d) closedir(d);
  CHECK(seen);
  cleanup(&s);
  return failures;
}

/* More GPUs asked for than are visible, in one process (--gpus) and through the fork launcher
 * (--nodes): nothing usable, exit 1 (common/cli.h; 2 is misuse of the command line), no output. */
static int scenario_too_few_gpus(void) {
  scenario s;
  setup(&s, 1);
  fflush(stdout);
  int saved = dup(1);
  int fd = open(s.summary, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 1);
  close(fd);
  topo_cal_proc proc = {.nprocs = 1, .proc = 0, .nodes = 1, .nlocal = 3};
  s.rc = topo_cal_run(&s.o, &proc, &s.r);
  s.o.nodes = 3;
  int fork_rc = topo_cal_launch_fork(&s.o, 2);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  CHECK(s.rc == 1);
  CHECK(fork_rc == 1);
  CHECK(access(s.profile, F_OK) != 0);
  CHECK(access(s.csv, F_OK) != 0);
  topo_cal_results_free(&s.r);
  cleanup(&s);
  return failures;
}

static void in_child(int (*fn)(void)) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(fn() ? 1 : 0);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_forced_sweep_through_tuner_with_bench(void **state) {
  (void)state;
  in_child(scenario_tuner_bench);
}
static void test_forced_choice_nccl_ignored_is_marked_not_fitted(void **state) {
  (void)state;
  in_child(scenario_force_not_honoured);
}
static void test_profile_carries_measured_points(void **state) {
  (void)state;
  in_child(scenario_points);
}
static void test_without_tuner_forces_through_nccl_env(void **state) {
  (void)state;
  in_child(scenario_env_forcing);
}
static void test_two_nodes_run_one_process_per_gpu(void **state) {
  (void)state;
  in_child(scenario_two_nodes);
}
static void test_too_few_gpus_exits_1(void **state) {
  (void)state;
  in_child(scenario_too_few_gpus);
}
static void test_stop_request_writes_partial_results(void **state) {
  (void)state;
  in_child(scenario_stop);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forced_sweep_through_tuner_with_bench),
      cmocka_unit_test(test_forced_choice_nccl_ignored_is_marked_not_fitted),
      cmocka_unit_test(test_profile_carries_measured_points),
      cmocka_unit_test(test_without_tuner_forces_through_nccl_env),
      cmocka_unit_test(test_two_nodes_run_one_process_per_gpu),
      cmocka_unit_test(test_stop_request_writes_partial_results),
      cmocka_unit_test(test_too_few_gpus_exits_1),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
