// SPDX-License-Identifier: Apache-2.0
// topo-report end to end, as a user runs it: help, version, misuse (one line, exit 2), the text,
// JSON, CSV and HTML reports, dump, Chrome export, diff, and fit writing a tuner profile that
// common/profile_read.c reads back with the latency and bandwidth the fixture was built with; fit on a
// real DDP job's one-size traffic, refining a --base profile, and never leaving a partial file;
// many ranks under a small descriptor limit, and an unreadable input that fails with one line.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>

#include "plugin_host.h"
#include "profile.h"
#include "trace_fixture.h"

static char dir[64];

/* Run a command after a shell prefix (e.g. "ulimit -n 64;"); returns its exit status and its
 * stdout (caller frees). */
static int run_after(const char *prefix, const char *args, char **out) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "%s %s %s 2>%s/stderr", prefix, TOPO_REPORT_EXE, args, dir);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t got;
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

static int run(const char *args, char **out) { return run_after("", args, out); }

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

static char *slurp(const char *name) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return topo_host_read_text(path);
}

/* Two ranks; AllReduce Ring/Simple at 1, 4 and 16 MiB taking exactly 10 us + bytes / 100 GB/s,
 * a compute kernel beside each, and step marks. `slow` adds 1 us to every collective. */
static void write_run(const char *sub, int slow) {
  char d[128];
  snprintf(d, sizeof d, "%s/%s", dir, sub);
  assert_int_equal(mkdir(d, 0755), 0);
  for (int rank = 0; rank < 2; rank++) {
    topo_trace_header h;
    tf_header_init(&h, 0x77, rank, 2);
    tf_trace t;
    tf_begin(&t, &h, NULL);
    tf_string(&t, 1, "step");
    int64_t now = 1000000;
    uint64_t seq = 0;
    for (int step = 0; step < 4; step++) {
      int64_t s0 = now;
      for (int k = 0; k < 3; k++) {
        uint64_t bytes = (uint64_t)1 << (20 + 2 * k);
        int64_t dur = 10000 + (int64_t)(bytes / 100) + (slow ? 1000 : 0);
        topo_trace_record kr = tf_kernel(TOPO_KERNEL_COMPUTE, 0, now, now + dur / 2, 7);
        tf_add(&t, &kr);
        topo_trace_record c =
            tf_coll(4, seq++, bytes, now - 100, now - 50, now, now + dur, 1, 2, 8, 1);
        tf_add(&t, &c);
        now += dur + 500;
      }
      topo_trace_record m = tf_mark(1, s0, now, (uint64_t)step);
      tf_add(&t, &m);
    }
    tf_footer(&t, NULL);
    char path[160];
    snprintf(path, sizeof path, "%s/rank%d.trace", d, rank);
    assert_int_equal(tf_save(&t, path), 0);
    tf_free(&t);
  }
}

/* Two ranks, AllReduce 1 MiB calls that nothing GPU-timed. */
static void write_untimed_run(const char *sub) {
  char d[128];
  snprintf(d, sizeof d, "%s/%s", dir, sub);
  assert_int_equal(mkdir(d, 0755), 0);
  for (int rank = 0; rank < 2; rank++) {
    topo_trace_header h;
    tf_header_init(&h, 0x78, rank, 2);
    tf_trace t;
    tf_begin(&t, &h, NULL);
    for (uint64_t seq = 0; seq < 4; seq++) {
      int64_t now = 1000000 + (int64_t)seq * 100000;
      topo_trace_record c = tf_coll(4, seq, 1 << 20, now, now + 50, 0, 0, 1, 2, 8, 1);
      tf_add(&t, &c);
    }
    tf_footer(&t, NULL);
    char path[160];
    snprintf(path, sizeof path, "%s/rank%d.trace", d, rank);
    assert_int_equal(tf_save(&t, path), 0);
    tf_free(&t);
  }
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-cli-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  write_run("a", 0);
  write_run("b", 1);
  write_untimed_run("untimed");
  return 0;
}

/* Files in `sub` (of dir) whose name contains `part`. */
static int count_files(const char *sub, const char *part) {
  char d[160];
  snprintf(d, sizeof d, "%s/%s", dir, sub);
  DIR *dp = opendir(d);
  assert_non_null(dp);
  int n = 0;
  for (struct dirent *e; (e = readdir(dp));) n += strstr(e->d_name, part) != NULL;
  closedir(dp);
  return n;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd);
}

static void test_help_version_and_misuse(void **state) {
  (void)state;
  char *out;
  assert_int_equal(run("--help", &out), 0);
  assert_non_null(strstr(out, "Examples:"));
  free(out);
  assert_int_equal(run("--version", &out), 0);
  assert_non_null(strstr(out, "topo-report "));
  free(out);
  assert_int_equal(run("--bogus x", NULL), 2);
  char *err = slurp("stderr");
  assert_non_null(strstr(err, "unknown option '--bogus'"));
  int nl = 0;
  for (char *q = err; *q; q++) nl += *q == '\n';
  assert_int_equal(nl, 1); /* one line */
  free(err);
  assert_int_equal(run("", NULL), 2);
  assert_int_equal(run("dump", NULL), 2);
  assert_int_equal(run("--reorder-window 0 x", NULL), 2);
}

/* The subcommand named or not, options before or after the inputs, "--opt=value", "-qv": the
 * same report; a value missing at the end is one misuse line. */
static void test_report_subcommand_and_option_spellings(void **state) {
  (void)state;
  char args[256], *out;
  snprintf(args, sizeof args, "report %s/a --json --top=5 -qv", dir);
  assert_int_equal(run(args, &out), 0);
  assert_non_null(strstr(out, "\"ranks\":["));
  free(out);
  snprintf(args, sizeof args, "%s/a --top", dir);
  assert_int_equal(run(args, NULL), 2);
  char *err = slurp("stderr");
  assert_string_equal(err, "topo-report: option --top needs a value (try --help)\n");
  free(err);
}

/* Nothing usable, or a missing file beside a good one: exit 1 with one line saying so. */
static void test_unusable_or_missing_inputs_exit_1(void **state) {
  (void)state;
  char args[512], *err;
  assert_int_equal(run("/etc/passwd", NULL), 1);
  err = slurp("stderr");
  assert_non_null(strstr(err, "no usable input"));
  free(err);
  snprintf(args, sizeof args, "%s/a %s/no-such-trace", dir, dir);
  char *out;
  assert_int_equal(run(args, &out), 1);
  assert_non_null(strstr(out, "2 ranks")); /* the good input is still reported */
  free(out);
  err = slurp("stderr");
  assert_non_null(strstr(err, "1 input missing"));
  free(err);
  snprintf(args, sizeof args, "%s/a", dir);
  assert_int_equal(run(args, NULL), 0);
}

static void test_text_json_csv_and_html(void **state) {
  (void)state;
  char args[256], *out;
  snprintf(args, sizeof args, "%s/a", dir);
  assert_int_equal(run(args, &out), 0);
  assert_non_null(strstr(out, "AllReduce"));
  assert_non_null(strstr(out, "Ring/Simple 100%"));
  free(out);
  snprintf(args, sizeof args, "--json %s/a", dir);
  assert_int_equal(run(args, &out), 0);
  assert_non_null(strstr(out, "\"ranks\":["));
  assert_non_null(
      strstr(out, "\"collective\":\"AllReduce\",\"nranks\":2,\"size_from\":1048576,\"calls\":8"));
  free(out);
  snprintf(args, sizeof args, "--csv-table collectives %s/a", dir);
  assert_int_equal(run(args, &out), 0);
  assert_true(strncmp(out, "collective,nranks,size_from,", 28) == 0);
  assert_non_null(strstr(out, "\nAllReduce,2,4194304,8,8,"));
  assert_null(strstr(out, "rank,host")); /* one table only */
  free(out);
  snprintf(args, sizeof args, "--csv %s/csv %s/a", dir, dir);
  assert_int_equal(run(args, &out), 0);
  assert_non_null(strstr(out, "/csv/ranks.csv\n"));
  free(out);
  char *ranks = slurp("csv/ranks.csv"), *colls = slurp("csv/collectives.csv");
  assert_non_null(ranks);
  assert_non_null(colls);
  assert_true(strncmp(ranks, "rank,host,pid,", 14) == 0);
  assert_true(strncmp(colls, "collective,nranks,", 18) == 0);
  free(ranks), free(colls);
  snprintf(args, sizeof args, "--csv %s/a", dir); /* the old spelling: a directory, no traces */
  assert_int_equal(run(args, NULL), 2);
  snprintf(args, sizeof args, "--html %s/r.html -o %s/out.txt %s/a", dir, dir, dir);
  assert_int_equal(run(args, NULL), 0);
  char *html = slurp("r.html");
  assert_non_null(html);
  assert_non_null(strstr(html, "<svg"));
  assert_non_null(strstr(html, "Bus bandwidth against message size"));
  assert_non_null(strstr(html, "</html>"));
  free(html);
}

/* --window / --from / --to: Unix-epoch ns; [1000000, 1050000) holds the first two collectives
 * of each rank (starts 1000000 and 1020985; the third starts at 1073428). */
static void test_window_option(void **state) {
  (void)state;
  char args[256], *out;
  snprintf(args, sizeof args, "--json --window 1000000,1050000 %s/a", dir);
  assert_int_equal(run(args, &out), 0);
  assert_non_null(strstr(out, "\"window\":{\"from_ns\":1000000,\"to_ns\":1050000}"));
  assert_non_null(
      strstr(out, "\"collective\":\"AllReduce\",\"nranks\":2,\"size_from\":1048576,\"calls\":2"));
  assert_non_null(
      strstr(out, "\"collective\":\"AllReduce\",\"nranks\":2,\"size_from\":4194304,\"calls\":2"));
  assert_null(strstr(out, "\"size_from\":16777216"));
  free(out);
  snprintf(args, sizeof args, "--from 1000000 --to 1050000 %s/a", dir);
  assert_int_equal(run(args, &out), 0);
  assert_non_null(strstr(out, "window: [1000000, 1050000)"));
  assert_non_null(strstr(out, "(50.00 us)"));
  free(out);
  snprintf(args, sizeof args, "--window 1050000,1000000 %s/a", dir);
  assert_int_equal(run(args, NULL), 2);
  snprintf(args, sizeof args, "--window 1000000 %s/a", dir);
  assert_int_equal(run(args, NULL), 2);
  snprintf(args, sizeof args, "--from 1e6 %s/a", dir);
  assert_int_equal(run(args, NULL), 2);
}

static void test_dump_export_diff(void **state) {
  (void)state;
  char args[256], *out;
  snprintf(args, sizeof args, "dump %s/a/rank0.trace", dir);
  assert_int_equal(run(args, &out), 0);
  int lines = 0;
  for (char *p = out; *p; p++) lines += *p == '\n';
  assert_int_equal(lines, 1 + 29 + 1); /* header; string + 4 x (3 kernels, 3 colls, 1 mark); end */
  assert_non_null(strstr(out, "{\"header\":{\"version\":1,\"minor_version\":0,"));
  assert_non_null(strstr(
      out, "\"sample_every\":1,\"measure_min_bytes\":0,\"nccl_version\":null,\"host\":\"host0\""));
  assert_non_null(
      strstr(out, "\"type\":\"coll\",\"func\":\"AllReduce\",\"seq\":0,\"bytes\":1048576"));
  assert_non_null(strstr(out, "{\"end\":{\"records\":29,"));
  free(out);
  snprintf(args, sizeof args, "export --chrome %s/c.json %s/a", dir, dir);
  assert_int_equal(run(args, NULL), 0);
  char *c = slurp("c.json");
  assert_non_null(strstr(c, "\"traceEvents\":["));
  assert_non_null(strstr(c, "\"name\":\"AllReduce 4 MiB Ring/Simple\""));
  assert_non_null(strstr(c, "\"name\":\"rank 1 (host1:1001)\""));
  free(c);
  snprintf(args, sizeof args, "diff %s/a %s/b", dir, dir);
  assert_int_equal(run(args, &out), 0);
  assert_non_null(strstr(out, "AllReduce"));
  assert_non_null(strstr(out, "change"));
  free(out);
}

static void test_fit_writes_a_profile_the_tuner_reads(void **state) {
  (void)state;
  char args[256], *out;
  snprintf(args, sizeof args, "fit --gpu H200 -o %s/fit.profile %s/a", dir, dir);
  assert_int_equal(run(args, &out), 0);
  assert_non_null(strstr(out, "wrote 1 fitted and 0 measured-point terms"));
  free(out);
  char path[128];
  snprintf(path, sizeof path, "%s/fit.profile", dir);
  topo_profile p;
  topo_profile_key want = {"H200", 2, 1, 0};
  assert_int_equal(topo_profile_load(path, &want, &p), TOPO_OK);
  const topo_profile_term *t = topo_profile_find_term(&p, 4, 1, 2, 0);
  assert_non_null(t);
  assert_true(t->lat_us > 9.99 && t->lat_us < 10.01);
  assert_true(t->bw_gbs > 99.9 && t->bw_gbs < 100.1);
  assert_int_equal(t->npoints, 3);
  topo_profile_free(&p);
}

/* Collectives whose records are damaged the way a corrupt trace damages them (2^50 bytes in 1
 * ns; 2^61 ns for 1 KiB) beside sound ones: fit writes only what its own reader takes (it wrote a
 * bw_gbs of 1.1e18 and a median_us of 2.3e15 that the reader rejects), says what it left out,
 * and the sound terms are there. */
static void test_fit_writes_only_what_its_reader_takes(void **state) {
  (void)state;
  char d[128];
  snprintf(d, sizeof d, "%s/corrupt", dir);
  assert_int_equal(mkdir(d, 0755), 0);
  for (int rank = 0; rank < 2; rank++) {
    topo_trace_header h;
    tf_header_init(&h, 0x79, rank, 2);
    tf_trace t;
    tf_begin(&t, &h, NULL);
    uint64_t seq = 0;
    int64_t now = 1000000;
    for (int i = 0; i < 4; i++) { /* sound: 1 and 4 MiB AllReduce Ring/Simple */
      uint64_t bytes = (uint64_t)1 << (20 + 2 * (i % 2));
      int64_t dur = 10000 + (int64_t)(bytes / 100) + i % 2;
      topo_trace_record c =
          tf_coll(4, seq++, bytes, now - 100, now - 50, now, now + dur, 1, 2, 8, 1);
      tf_add(&t, &c);
      now += dur + 500;
    }
    topo_trace_record a =
        tf_coll(2, seq++, (uint64_t)1 << 50, now, now + 1, now, now + 1, 1, 2, 8, 1);
    tf_add(&t, &a);
    topo_trace_record b = tf_coll(3, seq++, 1024, now + 10, now + 11, now + 10,
                                  now + 10 + ((int64_t)1 << 61), 1, 2, 8, 1);
    tf_add(&t, &b);
    tf_footer(&t, NULL);
    char path[160];
    snprintf(path, sizeof path, "%s/rank%d.trace", d, rank);
    assert_int_equal(tf_save(&t, path), 0);
    tf_free(&t);
  }
  char args[512], *out, path[160];
  snprintf(path, sizeof path, "%s/corrupt.profile", dir);
  snprintf(args, sizeof args, "fit --gpu H200 -o %s %s", path, d);
  int rc = run(args, &out);
  free(out);
  char *err = slurp("stderr"), *text = topo_host_read_text(path);
  assert_non_null(text);
  topo_profile p;
  topo_profile_key want = {"H200", 2, 1, 0};
  int nbad = -1;
  assert_int_equal(topo_profile_parse(text, strlen(text), path, &want, &p, &nbad), TOPO_OK);
  if (nbad) fail_msg("the reader rejects %d lines of:\n%s", nbad, text);
  assert_non_null(topo_profile_find_term(&p, 4, 1, 2, 0));
  if (rc != 0 || !strstr(err, "left out")) fail_msg("exit %d: %s", rc, err);
  topo_profile_free(&p);
  free(text);
  free(err);
}

/* A DDP job runs one bucket size: the 32 MiB AllReduce is written as a measured point (median,
 * spread, count over the sizes of its calls) that the tuner's loader reads, with the rest from
 * the built-in defaults. */
static void test_fit_one_size_ddp_traffic(void **state) {
  (void)state;
  char args[4096], *out;
  snprintf(args, sizeof args, "fit --gpu H200 -o %s/ddp.profile %s", dir, TOPO_DDP_TRACES);
  assert_int_equal(run(args, &out), 0);
  assert_non_null(strstr(out, "points from the traces"));
  assert_non_null(strstr(out, "kept from builtin:H200"));
  free(out);
  char path[160];
  snprintf(path, sizeof path, "%s/ddp.profile", dir);
  topo_profile p;
  topo_profile_key want = {"H200", 2, 1, 0};
  int nbad = -1;
  char *text = topo_host_read_text(path);
  assert_non_null(text);
  assert_int_equal(topo_profile_parse(text, strlen(text), path, &want, &p, &nbad), TOPO_OK);
  assert_int_equal(nbad, 0);
  assert_non_null(strstr(text, "# measured allreduce ring simple channels=24 bytes="));
  assert_non_null(strstr(text, "topo-profile 2\n"));
  assert_non_null(strstr(text, " nccl=*\n")); /* the traces carry no NCCL version */
  const char *line = strstr(text, "\npoint allreduce ring simple channels=0 bytes=");
  assert_non_null(line);
  const char *eol = strchr(line + 1, '\n');
  assert_non_null(eol);
  /* whether NCCL picked Ring/Simple by itself the traces do not say: no default= */
  assert_true(strstr(line + 1, "default=") == NULL || strstr(line + 1, "default=") > eol);
  free(text);
  const topo_profile_term *t = topo_profile_find_term(&p, 4, 1, 2, 0); /* AllReduce Ring/Simple */
  assert_non_null(t);
  assert_true(t->min_bytes >= (32u << 20) && t->max_bytes < (64u << 20));
  assert_true(t->npoints >= 2); /* GPU-timed calls behind the median */
  double us = t->lat_us + (double)t->min_bytes / (t->bw_gbs * 1e3);
  assert_true(us > 20 && us < 5000); /* a 32 MiB AllReduce on NVLink: tens to hundreds of us */
  assert_true(t->rel_err > 0);       /* real traffic has spread */
  /* The tuner's evidence: one point, the median of the calls' GPU times with half their
   * interquartile range as the noise (the term's rel_err is that spread over the median). */
  int npt = 0;
  const topo_profile_point *pt = topo_profile_find_points(&p, 4, 1, 2, 0, &npt);
  assert_int_equal(npt, 1);
  assert_true(pt[0].bytes >= t->min_bytes && pt[0].bytes <= t->max_bytes);
  assert_true(fabs(pt[0].median_us - (double)pt[0].bytes / (t->bw_gbs * 1e3)) <
              1e-3 * pt[0].median_us);
  assert_true(pt[0].noise_us > 0);
  assert_true(fabs(pt[0].noise_us - t->rel_err * pt[0].median_us) < 1e-3 * pt[0].noise_us);
  assert_int_equal(pt[0].is_default, -1);
  assert_true(p.npoints >= npt);
  /* Nothing outside the bucket: the model keeps every other size. */
  assert_null(topo_profile_find_term_at(&p, 4, 1, 2, 0, 16u << 20));
  assert_true(p.link[TOPO_LINK_NVLINK].bw_gbs == 370);
  topo_profile_free(&p);
}

/* --base: its terms stay where the traces measured nothing, the overlapped one is replaced, its
 * link figures are kept. */
static void test_fit_refines_a_base_profile(void **state) {
  (void)state;
  char path[160];
  snprintf(path, sizeof path, "%s/base.profile", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(
      "topo-profile 1\nsection gpu=H200 nranks=2 nnodes=*\nlink net bw_gbs=12.5 lat_us=7\n"
      "term allreduce ring ll lat_us=3 bw_gbs=50 min_bytes=8 max_bytes=65536\n"
      "term allreduce ring simple lat_us=99 bw_gbs=1 min_bytes=2097152 max_bytes=8388608\n",
      f);
  assert_int_equal(fclose(f), 0);
  char args[512], *out;
  snprintf(args, sizeof args, "fit --gpu H200 --base %s -o %s/refined.profile %s/a", path, dir,
           dir);
  assert_int_equal(run(args, &out), 0);
  assert_non_null(strstr(out, ": 1 terms (1 replaced)"));
  free(out);
  snprintf(path, sizeof path, "%s/refined.profile", dir);
  topo_profile p;
  topo_profile_key want = {"H200", 2, 1, 0};
  assert_int_equal(topo_profile_load(path, &want, &p), TOPO_OK);
  const topo_profile_term *ll = topo_profile_find_term(&p, 4, 1, 0, 0);
  assert_non_null(ll);
  assert_true(ll->lat_us == 3 && ll->bw_gbs == 50 && ll->max_bytes == 65536);
  const topo_profile_term *simple = topo_profile_find_term_at(&p, 4, 1, 2, 0, 4u << 20);
  assert_non_null(simple);
  assert_true(simple->lat_us > 9.99 && simple->lat_us < 10.01); /* the traces', not the base's 99 */
  assert_true(p.link[TOPO_LINK_NET].bw_gbs == 12.5 && p.link[TOPO_LINK_NET].lat_us == 7);
  topo_profile_free(&p);
  snprintf(args, sizeof args, "--base %s %s/a", path, dir);
  assert_int_equal(run(args, NULL), 2); /* --base outside fit is misuse */
}

/* Nothing usable, or a target that cannot be replaced: exit 1, the old file untouched, no
 * temporary file left behind. */
static void test_fit_never_leaves_a_partial_file(void **state) {
  (void)state;
  char path[160], args[512];
  assert_int_equal(mkdir(strcat(strcpy(path, dir), "/keep"), 0755), 0);
  snprintf(path, sizeof path, "%s/keep/old.profile", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("old\n", f);
  assert_int_equal(fclose(f), 0);
  snprintf(args, sizeof args, "fit --gpu H200 -o %s %s/untimed", path, dir);
  assert_int_equal(run(args, NULL), 1);
  char *err = slurp("stderr");
  assert_non_null(strstr(err, "nothing to fit"));
  free(err);
  char *old = topo_host_read_text(path);
  assert_string_equal(old, "old\n");
  free(old);
  assert_int_equal(count_files("keep", ".tmp."), 0);
  /* The target is a directory: the rename fails after a complete write; nothing is left. */
  snprintf(path, sizeof path, "%s/keep/adir", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(args, sizeof args, "fit --gpu H200 -o %s %s/a", path, dir);
  assert_int_equal(run(args, NULL), 1);
  assert_int_equal(count_files("keep", ".tmp."), 0);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_true(S_ISDIR(sb.st_mode));
  /* A directory that does not exist: nothing is created. */
  snprintf(args, sizeof args, "fit --gpu H200 -o %s/none/x.profile %s/a", dir, dir);
  assert_int_equal(run(args, NULL), 1);
  snprintf(path, sizeof path, "%s/none", dir);
  assert_int_not_equal(stat(path, &sb), 0);
}

/* 400 ranks of one communicator under `ulimit -n 64`: every rank is in the report, exit 0, and
 * -q leaves stderr empty. */
static void test_many_ranks_under_a_small_descriptor_limit(void **state) {
  (void)state;
  enum { RANKS = 400 };
  char d[128];
  snprintf(d, sizeof d, "%s/many", dir);
  assert_int_equal(mkdir(d, 0755), 0);
  for (int rank = 0; rank < RANKS; rank++) {
    topo_trace_header h;
    tf_header_init(&h, 0x79, rank, RANKS);
    tf_trace t;
    tf_begin(&t, &h, NULL);
    topo_trace_record c = tf_coll(4, 0, 1 << 20, 1000, 1050, 1100, 9000, 1, 2, 8, 1);
    tf_add(&t, &c);
    tf_footer(&t, NULL);
    char path[160];
    snprintf(path, sizeof path, "%s/rank%03d.trace", d, rank);
    assert_int_equal(tf_save(&t, path), 0);
    tf_free(&t);
  }
  char args[256], *out;
  snprintf(args, sizeof args, "-q --json %s", d);
  assert_int_equal(run_after("ulimit -n 64;", args, &out), 0);
  int ranks = 0;
  for (const char *q = out; (q = strstr(q, "{\"rank\":")); q++) ranks++;
  assert_int_equal(ranks, RANKS);
  assert_non_null(strstr(out, "\"nranks\":400,\"ranks_seen\":400"));
  free(out);
  char *err = slurp("stderr");
  assert_string_equal(err, "");
  free(err);
}

/* An empty directory, or only a path that does not exist: exit 1 and a line saying what is
 * missing, never "out of memory" (what both printed before). */
static void test_empty_directory_or_missing_path_says_what_is_missing(void **state) {
  (void)state;
  char args[256], empty[160], *err;
  snprintf(empty, sizeof empty, "%s/empty", dir);
  assert_int_equal(mkdir(empty, 0755), 0);
  assert_int_equal(run(empty, NULL), 1);
  err = slurp("stderr");
  if (!strstr(err, "empty: no trace in this directory") || strstr(err, "out of memory"))
    fail_msg("%s", err);
  free(err);
  snprintf(args, sizeof args, "%s/no-such-dir", dir);
  assert_int_equal(run(args, NULL), 1);
  err = slurp("stderr");
  if (!strstr(err, "no-such-dir does not exist") || strstr(err, "out of memory"))
    fail_msg("%s", err);
  free(err);
  snprintf(args, sizeof args, "%s %s/no-such-dir", empty, dir);
  assert_int_equal(run(args, NULL), 1);
  err = slurp("stderr");
  if (strstr(err, "out of memory")) fail_msg("%s", err);
  free(err);
  rmdir(empty);
}

/* Copies `from` to `to` (created 0600), whatever the length of either path. */
static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  assert_non_null(in);
  assert_non_null(out);
  char buf[1 << 16];
  for (size_t n; (n = fread(buf, 1, sizeof buf, in)) > 0;)
    assert_int_equal(fwrite(buf, 1, n, out), n);
  fclose(in);
  assert_int_equal(fclose(out), 0);
}

/* An input that cannot be read (mode 000; run as `nobody` when root, whom modes do not bind)
 * beside a good one: the good one is reported, exit 1, and -q still gives exactly one line. */
static void test_unreadable_input_fails_with_one_line(void **state) {
  (void)state;
  char good[128], bad[160], outp[160], errp[160];
  snprintf(good, sizeof good, "%s/a", dir);
  snprintf(bad, sizeof bad, "%s/locked.trace", dir);
  snprintf(outp, sizeof outp, "%s/locked.out", dir);
  snprintf(errp, sizeof errp, "%s/locked.err", dir);
  char src[160];
  snprintf(src, sizeof src, "%s/a/rank0.trace", dir);
  /* nobody runs a copy of topo-report in this test's own directory: the build tree may sit
   * below a directory nobody cannot enter (a checkout inside a mktemp -d, mode 0700) */
  char exe[160];
  snprintf(exe, sizeof exe, "%s/topo-report", dir);
  copy_file(TOPO_REPORT_EXE, exe);
  copy_file(src, bad);
  assert_int_equal(chmod(exe, 0755), 0);
  assert_int_equal(chmod(bad, 0), 0);
  assert_int_equal(chmod(dir, 0755), 0);
  int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644),
      fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fo >= 0 && fe >= 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fo, 1);
    dup2(fe, 2);
    if (geteuid() == 0) {
      struct passwd *nobody = getpwnam("nobody");
      if (setgroups(0, NULL) != 0 || setgid(nobody ? nobody->pw_gid : 65534) != 0 ||
          setuid(nobody ? nobody->pw_uid : 65534) != 0)
        _exit(99);
    }
    execl(exe, "topo-report", "-q", good, bad, (char *)NULL);
    _exit(98);
  }
  close(fo);
  close(fe);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 1);
  char *out = topo_host_read_text(outp), *err = topo_host_read_text(errp);
  assert_non_null(strstr(out, "2 ranks")); /* the good input is still reported */
  assert_int_equal(count_lines(err), 1);
  assert_non_null(strstr(err, "1 of 3 input files could not be read"));
  assert_non_null(strstr(err, "locked.trace: Permission denied"));
  free(out);
  free(err);
  unlink(bad);
  unlink(exe);
}

/* A FIFO among the inputs (nobody writes it) is refused at once: no hang, exit 1, one line;
 * in `diff` too. */
static void test_fifo_input_is_refused_without_hanging(void **state) {
  (void)state;
  char fifo[128], args[512], *out;
  snprintf(fifo, sizeof fifo, "%s/pipe.trace", dir);
  assert_int_equal(mkfifo(fifo, 0644), 0);
  snprintf(args, sizeof args, "-q %s/a %s", dir, fifo);
  assert_int_equal(run_after("timeout 10", args, &out), 1);
  assert_non_null(strstr(out, "2 ranks"));
  free(out);
  char *err = slurp("stderr");
  assert_int_equal(count_lines(err), 1);
  assert_non_null(strstr(err, "pipe.trace: not a regular file"));
  free(err);
  snprintf(args, sizeof args, "diff -q %s/a %s", dir, fifo); /* diff too: exit 1, one line */
  assert_int_equal(run_after("timeout 10", args, NULL), 1);
  err = slurp("stderr");
  assert_int_equal(count_lines(err), 1);
  assert_non_null(strstr(err, "1 input file could not be read"));
  free(err);
  unlink(fifo);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_help_version_and_misuse),
      cmocka_unit_test(test_report_subcommand_and_option_spellings),
      cmocka_unit_test(test_unusable_or_missing_inputs_exit_1),
      cmocka_unit_test(test_empty_directory_or_missing_path_says_what_is_missing),
      cmocka_unit_test(test_text_json_csv_and_html),
      cmocka_unit_test(test_window_option),
      cmocka_unit_test(test_dump_export_diff),
      cmocka_unit_test(test_fit_writes_a_profile_the_tuner_reads),
      cmocka_unit_test(test_fit_writes_only_what_its_reader_takes),
      cmocka_unit_test(test_fit_one_size_ddp_traffic),
      cmocka_unit_test(test_fit_refines_a_base_profile),
      cmocka_unit_test(test_fit_never_leaves_a_partial_file),
      cmocka_unit_test(test_many_ranks_under_a_small_descriptor_limit),
      cmocka_unit_test(test_unreadable_input_fails_with_one_line),
      cmocka_unit_test(test_fifo_input_is_refused_without_hanging),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
