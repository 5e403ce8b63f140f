// SPDX-License-Identifier: Apache-2.0
// Whether the stated error of estimated durations covers the truth, measured on traces in which
// every collective was GPU-timed: the profiler's default is modelled on them - every operation of
// a process timed in its start-up (until the step learner, common/step_learn.h, fed the process's
// operations in enqueue order as the plugin feeds it, finds the step steady; at most
// TOPO_PROFILER_STARTUP_MS after the first large operation), those records flagged
// TOPO_COLL_F_STARTUP - and after it the GPU times are hidden for all but 1 in N operations
// (N = 4 .. 64, several offsets; the profiler's hashed choice, and independent draws); the report
// estimates the hidden ones, and its totals with their errors are compared with the same totals of
// the full traces: each row's estimated time (docs/metrics.md, Estimated durations, promises
// ~95 %) and each rank's comm.
// Prints the share covered and the median of stated error / true error (how wide the bars are).
// Inputs: topo-demo's modelled job recorded with every collective timed (made here), and each
// directory of TOPO_COVERAGE_DIRS (CMake) and of $TOPO_COVERAGE_DATA (':'-separated), recorded
// with TOPO_PROFILER_SAMPLE=1 TOPO_PROFILER_MEASURE_BYTES=0; CUPTI traces in them are left out
// (comm then comes from the collective records, estimates included).
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "report.h"
#include "report_analysis.h"
#include "step_learn.h"
#include "trace_fixture.h"
#include "trace_reader.h"

#define MAX_CASES  100000
#define MAX_TRACES 4096
#define STARTUP_NS 30000000000LL /* TOPO_PROFILER_STARTUP_MS's default */
#define LARGE      (1u << 20)    /* TOPO_TRACE_CUPTI_START_BYTES: the first large operation */

typedef struct cases {
  int n, covered;
  double ratio[MAX_CASES]; /* stated error / |true error| (HUGE_VAL when the error is 0) */
} cases;

static cases rows, comms;

static void add_case(cases *c, double stated, double truth_err) {
  if (c->n >= MAX_CASES) return;
  double e = fabs(truth_err);
  c->covered += e <= stated;
  c->ratio[c->n++] = e > 0 ? stated / e : HUGE_VAL;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of stated / true error over cases from..c->n - 1 (sorts them in place). */
static double median_ratio(cases *c, int from) {
  if (c->n <= from) return 0;
  qsort(c->ratio + from, (size_t)(c->n - from), sizeof *c->ratio, cmp_dbl);
  return c->ratio[from + (c->n - from - 1) / 2];
}

static int is_comm_trace(const char *name) {
  size_t n = strlen(name);
  return n > 6 && !strcmp(name + n - 6, ".trace") && !strstr(name, "-cupti");
}

/* splitmix64's finalizer: libtopo-profiler.so's choice of the 1-in-N sampled operations. */
static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* A process's start-up as the profiler measures it (step_sched.h, topo_sched_startup): from its
 * first operation until the operation at which the learner first called the step steady, at most
 * STARTUP_NS after the first operation of >= LARGE (or, before one, after the first operation). */
typedef struct startup {
  int64_t first, large, steady; /* enqueue times; large INT64_MIN: none; steady INT64_MAX: never */
} startup;

static int in_startup(const startup *p, int64_t t) {
  if (t > p->steady) return 0;
  if (t < p->first + STARTUP_NS) return 1;
  return p->large != INT64_MIN && t >= p->large && t < p->large + STARTUP_NS;
}

typedef struct trace_ops {
  char *name;
  char host[64];
  uint32_t pid;
  int proc; /* index of its process's startup */
} trace_ops;

static int by_time(const void *a, const void *b) {
  const topo_step_op *x = a, *y = b;
  return (x->t_ns > y->t_ns) - (x->t_ns < y->t_ns);
}

/* Each process's start-up (traces of one host and pid): every operation of its communicators in
 * enqueue order through the step learner. Fills t[i].proc; returns the number of processes. */
static int find_startups(const char *dir, trace_ops *t, int nt, startup *out) {
  int nproc = 0;
  for (int i = 0; i < nt; i++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, t[i].name);
    topo_trace_reader *r;
    assert_int_equal(topo_trace_reader_open(path, 1, &r), TOPO_OK);
    const topo_trace_header *h = topo_trace_reader_header(r);
    assert_non_null(h);
    memcpy(t[i].host, h->host, sizeof t[i].host);
    t[i].host[sizeof t[i].host - 1] = 0;
    t[i].pid = h->pid;
    topo_trace_reader_close(r);
    t[i].proc = -1;
    for (int j = 0; j < i && t[i].proc < 0; j++)
      if (t[j].pid == t[i].pid && !strcmp(t[j].host, t[i].host)) t[i].proc = t[j].proc;
    if (t[i].proc < 0) t[i].proc = nproc++;
  }
  for (int p = 0; p < nproc; p++) {
    size_t n = 0, cap = 4096;
    topo_step_op *ops = malloc(cap * sizeof *ops);
    assert_non_null(ops);
    for (int i = 0; i < nt; i++) {
      if (t[i].proc != p) continue;
      char path[1200];
      snprintf(path, sizeof path, "%s/%s", dir, t[i].name);
      topo_trace_reader *r;
      assert_int_equal(topo_trace_reader_open(path, 1, &r), TOPO_OK);
      uint64_t comm = topo_trace_reader_header(r)->comm_hash;
      const topo_trace_record *rec;
      while ((rec = topo_trace_reader_next(r))) {
        if (rec->type != TOPO_REC_COLL && rec->type != TOPO_REC_P2P) continue;
        if (n == cap) assert_non_null(ops = realloc(ops, (cap *= 2) * sizeof *ops));
        ops[n++] = (topo_step_op){.comm = comm,
                                  .bytes = rec->coll.bytes,
                                  .t_ns = rec->coll.cpu_start_ns,
                                  .peer = rec->coll.peer,
                                  .func = rec->coll.func,
                                  .p2p = rec->type == TOPO_REC_P2P};
      }
      topo_trace_reader_close(r);
    }
    qsort(ops, n, sizeof *ops, by_time);
    startup *s = &out[p];
    *s = (startup){n ? ops[0].t_ns : 0, INT64_MIN, INT64_MAX};
    topo_step_learner *l = topo_step_learn_new(NULL);
    assert_non_null(l);
    for (size_t k = 0; k < n; k++) {
      if (ops[k].bytes >= LARGE && s->large == INT64_MIN) s->large = ops[k].t_ns;
      topo_step_event ev;
      topo_step_learn_add(l, &ops[k], &ev);
      if (ev.steady) {
        s->steady = ops[k].t_ns;
        break;
      }
    }
    topo_step_learn_free(l);
    free(ops);
  }
  return nproc;
}

/* The sampling rules after start-up: 0 = the profiler's (the first 2 of each (function, size
 * class), start-up's counted, then the operations whose running count hashes to 0 mod N;
 * `offset` shifts the count, as a process whose profiler saw other operations first); 1 = each
 * operation independently with probability 1 / N (`offset` seeds it). */
static int keep_timing(int rule, int every, int offset, unsigned *count, const topo_rec_coll *c,
                       int early) {
  unsigned kind = (unsigned)(c->func & 15) << 6 | (unsigned)(63 - __builtin_clzll(c->bytes | 1));
  if (early) {
    count[1 + kind]++;
    return 1;
  }
  if (rule == 1) return mix(((uint64_t)offset << 32) + count[0]++) % (uint64_t)every == 0;
  if (count[1 + kind]++ < 2) return 1;
  return mix(count[0]++ + 1 + 1000003ull * (uint64_t)offset) % (uint64_t)every == 0;
}

/* `src`/name rewritten into `dst`/name with the GPU times of the collectives not kept hidden,
 * those of its process's start-up (su; NULL: none) kept and flagged. */
static void subsample(const char *src, const char *dst, const char *name, int rule, int every,
                      int offset, const startup *su) {
  char in[1024], out[1024];
  snprintf(in, sizeof in, "%s/%s", src, name);
  snprintf(out, sizeof out, "%s/%s", dst, name);
  topo_trace_reader *r;
  assert_int_equal(topo_trace_reader_open(in, 1, &r), TOPO_OK);
  const topo_trace_header *h = topo_trace_reader_header(r);
  assert_non_null(h);
  topo_trace_header hh = *h;
  if (su) hh.flags |= TOPO_TRACE_F_STARTUP;
  tf_trace t;
  tf_begin(&t, &hh, NULL);
  static unsigned count[1 + 16 * 64];
  memset(count, 0, sizeof count);
  const topo_trace_record *rec;
  while ((rec = topo_trace_reader_next(r))) {
    topo_trace_record x = *rec;
    int is_op = x.type == TOPO_REC_COLL || x.type == TOPO_REC_P2P;
    int early = is_op && su && in_startup(su, x.coll.cpu_start_ns);
    if (early) x.coll.flags |= TOPO_COLL_F_STARTUP;
    if (is_op && (x.coll.flags & TOPO_COLL_F_GPU_TIMED) &&
        !keep_timing(rule, every, offset, count, &x.coll, early)) {
      x.coll.flags &= (uint8_t) ~(TOPO_COLL_F_GPU_TIMED | TOPO_COLL_F_PARTIAL);
      x.coll.gpu_start_ns = x.coll.gpu_stop_ns = 0;
    }
    if (x.type != TOPO_REC_STATS) tf_add(&t, &x);
  }
  topo_trace_reader_close(r);
  tf_footer(&t, NULL);
  assert_int_equal(tf_save(&t, out), 0);
  tf_free(&t);
}

static void analyze(const char *dir, rp_report *r) {
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1, .progress = 0};
  assert_int_equal(rp_analyze(paths, 1, &opt, r), TOPO_OK);
}

static const rp_row *same_row(const rp_report *r, const rp_row *w) {
  for (size_t i = 0; i < r->nrows; i++)
    if (r->rows[i]->func == w->func && r->rows[i]->nranks == w->nranks &&
        r->rows[i]->bucket == w->bucket)
      return r->rows[i];
  return NULL;
}

/* The full traces of `full` (communicator traces copied into `work`/full first), sampled at every
 * rate, offset and rule. */
static void check_dir(const char *full, const char *label) {
  char work[] = "/tmp/topo-coverage-XXXXXX";
  assert_non_null(mkdtemp(work));
  char fdir[1100], sdir[1100];
  snprintf(fdir, sizeof fdir, "%s/full", work);
  snprintf(sdir, sizeof sdir, "%s/sampled", work);
  assert_int_equal(mkdir(fdir, 0700), 0);
  assert_int_equal(mkdir(sdir, 0700), 0);
  static trace_ops names[MAX_TRACES];
  static startup procs[MAX_TRACES];
  int nn = 0;
  DIR *d = opendir(full);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)) && nn < MAX_TRACES)
    if (is_comm_trace(e->d_name)) names[nn++].name = strdup(e->d_name);
  closedir(d);
  assert_true(nn > 0);
  int nproc = find_startups(full, names, nn, procs);
  int steady = 0;
  for (int p = 0; p < nproc; p++) steady += procs[p].steady != INT64_MAX;
  for (int i = 0; i < nn; i++) subsample(full, fdir, names[i].name, 0, 1, 0, NULL); /* all kept */
  rp_report truth;
  analyze(fdir, &truth);
  assert_true(truth.timed_colls == truth.colls + truth.p2p); /* a full-timing input (p2p too) */
  cases before_rows = rows, before_comms = comms;
  static const int rates[] = {4, 8, 16, 32, 64};
  for (int rule = 0; rule < 2; rule++)
    for (size_t ri = 0; ri < sizeof rates / sizeof *rates; ri++)
      for (int oi = 0; oi < 3; oi++) {
        int every = rates[ri], offset = oi * every / 3;
        for (int i = 0; i < nn; i++)
          subsample(full, sdir, names[i].name, rule, every, offset, &procs[names[i].proc]);
        rp_report s;
        analyze(sdir, &s);
        for (size_t k = 0; k < s.nrows; k++) {
          const rp_row *w = s.rows[k], *f = same_row(&truth, w);
          /* the promise: estimates from measured calls of their key (not scaled from a size) */
          if (!f || !w->estimated || w->unknown || w->est_scaled) continue;
          double hidden = f->time.sum - w->time.sum; /* the true time of the estimated calls */
          add_case(&rows, (double)rp_err_ns(&w->est_err), (double)w->est_sum - hidden);
          if (getenv("COVERAGE_VERBOSE") &&
              fabs((double)w->est_sum - hidden) > (double)rp_err_ns(&w->est_err))
            printf(
                "  MISS rule %d 1/%d +%d row f%d b%d: est %lld (%llu calls) err %lld truth %.0f\n",
                rule, every, offset, w->func, w->bucket, (long long)w->est_sum,
                (unsigned long long)w->estimated, (long long)rp_err_ns(&w->est_err), hidden);
        }
        for (int k = 0; k < s.nranks && k < truth.nranks; k++) {
          rp_derived ds, dt;
          rp_derive_rank(&s.ranks[k], &ds);
          rp_derive_rank(&truth.ranks[k], &dt);
          if (ds.comm_error <= 0) continue; /* nothing estimated */
          add_case(&comms, (double)ds.comm_error, (double)(ds.comm - dt.comm));
          if (getenv("COVERAGE_VERBOSE") && llabs(ds.comm - dt.comm) > ds.comm_error)
            printf("  MISS rule %d 1/%d +%d rank %d: comm %lld est %lld err %lld truth %lld\n",
                   rule, every, offset, k, (long long)ds.comm, (long long)ds.comm_est,
                   (long long)ds.comm_error, (long long)dt.comm);
        }
        rp_report_free(&s);
      }
  rp_report_free(&truth);
  int nr = rows.n - before_rows.n, nc = comms.n - before_comms.n;
  printf(
      "coverage %-24s rows %d/%d covered (median stated/true error %.2f), comm of a rank "
      "%d/%d covered (%.2f); %d of %d processes steady\n",
      label, rows.covered - before_rows.covered, nr, median_ratio(&rows, before_rows.n),
      comms.covered - before_comms.covered, nc, median_ratio(&comms, before_comms.n), steady,
      nproc);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf %s", work);
  assert_int_equal(system(cmd), 0);
  for (int i = 0; i < nn; i++) free(names[i].name);
}

/* topo-demo's job with every collective GPU-timed and no CUPTI. */
static void demo_traces(char *dir, size_t len, unsigned seed) {
  snprintf(dir, len, "/tmp/topo-coverage-demo-XXXXXX");
  assert_non_null(mkdtemp(dir));
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "TOPO_PROFILER_SAMPLE=1 TOPO_PROFILER_MEASURE_BYTES=0 '%s' --out '%s' --ranks 8 "
           "--steps 14 --seed %u --cupti '' --tuner '' >/dev/null 2>&1",
           TOPO_DEMO_EXE, dir, seed);
  assert_int_equal(system(cmd), 0);
}

static void test_stated_errors_cover_the_truth(void **state) {
  (void)state;
  for (unsigned seed = 1; seed <= 2; seed++) {
    char dir[64], label[32];
    demo_traces(dir, sizeof dir, seed);
    snprintf(label, sizeof label, "topo-demo seed %u", seed);
    check_dir(dir, label);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
  }
  char list[4096] = TOPO_COVERAGE_DIRS;
  const char *env = getenv("TOPO_COVERAGE_DATA");
  if (env && *env) {
    if (*list) strncat(list, ":", sizeof list - strlen(list) - 1);
    strncat(list, env, sizeof list - strlen(list) - 1);
  }
  for (char *p = strtok(list, ":;"); p; p = strtok(NULL, ":;")) check_dir(p, p);
  double mr = median_ratio(&rows, 0), mc = median_ratio(&comms, 0);
  printf(
      "coverage all: rows %d/%d (%.1f %%), median stated/true error %.2f; comm %d/%d (%.1f %%), "
      "median %.2f\n",
      rows.covered, rows.n, 100.0 * rows.covered / (rows.n ? rows.n : 1), mr, comms.covered,
      comms.n, 100.0 * comms.covered / (comms.n ? comms.n : 1), mc);
  /* ~95 % promised: at least 90 % of many cases; and bars not absurdly wide (a calibrated 95 %
   * bar of a normal error is 2.9 x the median true error) */
  assert_true(rows.n >= 30);
  assert_true(rows.covered >= 0.9 * rows.n);
  assert_true(comms.covered >= 0.9 * comms.n);
  assert_true(mr < 12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stated_errors_cover_the_truth),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
