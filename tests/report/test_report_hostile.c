// SPDX-License-Identifier: Apache-2.0
// topo-report on crafted inputs and a hostile host that must neither hang, emit invalid output nor
// drop an input: collective seqs at both ends of the 64-bit range in one (communicator, function)
// ring, strings that are not valid UTF-8 in JSON, many more traces (binary or Kineto JSON) than
// the descriptor limit allows open at once, headers claiming communicators of 2^20 ranks (memory
// must follow the traces given), and a JSON input whose reads fail half-way (the test exports its
// own read(), which zlib binds to, as with LD_PRELOAD). Each analysis runs under an alarm: a hang
// fails the test fast.
#undef _FORTIFY_SOURCE /* this file defines read(); glibc's fortified inline read() would clash */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "report.h"
#include "report_analysis.h"
#include "report_render.h"
#include "trace_fixture.h"

/* read() for the whole process (default visibility: the build hides symbols unless told): a read
 * of the file with inode fail_ino that starts at offset fail_from or later fails with EIO; every
 * other read is the system's. */
static ino_t fail_ino;
static off_t fail_from;

__attribute__((visibility("default"))) ssize_t read(int fd, void *buf, size_t n);
ssize_t read(int fd, void *buf, size_t n) {
  struct stat st;
  if (fail_ino && fstat(fd, &st) == 0 && st.st_ino == fail_ino &&
      lseek(fd, 0, SEEK_CUR) >= fail_from) {
    errno = EIO;
    return -1;
  }
  return syscall(SYS_read, fd, buf, n);
}

/* Seconds an analysis may take: a hang fails fast, a sanitizer build on a loaded machine passes
 * (each takes well under a second in a plain build). */
#define ANALYSIS_LIMIT_S 8

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "analysis did not finish within 8 s\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

/* One rank-0 trace of a 2-rank communicator holding AllReduce seqs `seqs`. */
static void write_trace(const char *path, int rank, const uint64_t *seqs, int n) {
  topo_trace_header h;
  tf_header_init(&h, 0xc3, rank, 2);
  tf_trace t;
  tf_begin(&t, &h, NULL);
  for (int i = 0; i < n; i++) {
    topo_trace_record r =
        tf_coll(4, seqs[i], 1024, 100 * (i + 1), 100 * (i + 1) + 10, 0, 0, 1, 0, 4, 1);
    tf_add(&t, &r);
  }
  tf_footer(&t, NULL);
  assert_int_equal(tf_save(&t, path), 0);
  tf_free(&t);
}

static void analyze_seqs(const uint64_t *seqs, int n, uint64_t *joined, uint64_t *incomplete) {
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/topo-hostile-XXXXXX");
  assert_non_null(mkdtemp(dir));
  char p0[128], p1[128];
  snprintf(p0, sizeof p0, "%s/r0.trace", dir);
  snprintf(p1, sizeof p1, "%s/r1.trace", dir);
  write_trace(p0, 0, seqs, n);
  write_trace(p1, 1, seqs, n);
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  signal(SIGALRM, on_alarm);
  alarm(ANALYSIS_LIMIT_S);
  assert_int_equal(rp_analyze(paths, 1, &opt, &r), TOPO_OK);
  alarm(0);
  assert_int_equal(r.ncomms, 1);
  *joined = r.comms[0].joined;
  *incomplete = r.comms[0].incomplete;
  rp_report_free(&r);
  unlink(p0);
  unlink(p1);
  rmdir(dir);
}

static void test_seqs_at_both_ends_of_the_range_join_without_hanging(void **state) {
  (void)state;
  const uint64_t seqs[] = {0, UINT64_MAX};
  uint64_t joined, incomplete;
  analyze_seqs(seqs, 2, &joined, &incomplete);
  /* Each seq is joined; seq 0 may be closed before the other rank's record of it arrives (the
   * jump to 2^64-1 evicts it), which counts it incomplete, never loops. */
  assert_int_equal(joined, 2);
  assert_true(incomplete <= 2);
}

static void test_seqs_near_the_top_of_the_range_join(void **state) {
  (void)state;
  const uint64_t seqs[] = {UINT64_MAX - 70000, UINT64_MAX - 3, UINT64_MAX - 1, UINT64_MAX};
  uint64_t joined, incomplete;
  analyze_seqs(seqs, 4, &joined, &incomplete);
  /* Only the far seq can be evicted early (at most its two halves count incomplete); the three
   * seqs at the top of the range lie in one ring window and join complete. */
  assert_int_equal(joined, 4);
  assert_true(incomplete <= 2);
}

/* 1 when [s, s + n) is well-formed UTF-8 with no raw byte >= 0x80 outside a sequence. */
static int valid_utf8(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    size_t len = c < 0x80                          ? 1
                 : (c & 0xe0) == 0xc0 && c >= 0xc2 ? 2
                 : (c & 0xf0) == 0xe0              ? 3
                 : c >= 0xf0 && c <= 0xf4          ? 4
                                                   : 0;
    if (!len || i + len > n) return 0;
    for (size_t k = 1; k < len; k++)
      if ((s[i + k] & 0xc0) != 0x80) return 0;
    i += len;
  }
  return 1;
}

static void test_json_strings_are_valid_utf8(void **state) {
  (void)state;
  /* a comm name cut mid-character ("é" = c3 a9, cut after c3), a Latin-1 host name, a lone
   * continuation byte, a truncated 4-byte sequence; kept: a whole "é" and a 3-byte "€". */
  const char *in = "tr\xc3|h\xf6st|\x80|\xf0\x9f\x98|ok \xc3\xa9 \xe2\x82\xac \"q\"";
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  rp_json_string(f, in);
  fclose(f);
  assert_true(valid_utf8((const unsigned char *)buf, len));
  assert_string_equal(
      buf,
      "\"tr\\ufffd|h\\ufffdst|\\ufffd|\\ufffd\\ufffd\\ufffd|ok \xc3\xa9 \xe2\x82\xac \\\"q\\\"\"");
  free(buf);
}

static void temp_dir(char dir[64]) {
  snprintf(dir, 64, "/tmp/topo-hostile-XXXXXX");
  assert_non_null(mkdtemp(dir));
}

static void remove_dir(const char *dir) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* Ends trace t and saves it as dir/tN.trace. */
static void save_numbered(tf_trace *t, const char *dir, int n) {
  tf_footer(t, NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/t%05d.trace", dir, n);
  assert_int_equal(tf_save(t, path), 0);
  tf_free(t);
}

/* 300 traces of one 300-rank communicator, read with RLIMIT_NOFILE at 48: every rank is
 * reported and joined; none is dropped for want of a descriptor. */
static void test_many_inputs_under_a_small_descriptor_limit_are_all_read(void **state) {
  (void)state;
  enum { RANKS = 300 };
  char dir[64];
  temp_dir(dir);
  for (int rank = 0; rank < RANKS; rank++) {
    topo_trace_header h;
    tf_header_init(&h, 0x9, rank, RANKS);
    tf_trace t;
    tf_begin(&t, &h, NULL);
    for (int i = 0; i < 4; i++) {
      topo_trace_record r = tf_coll(4, (uint64_t)i, 1 << 20, 1000 * (i + 1), 1000 * (i + 1) + 10,
                                    1000 * (i + 1) + 20, 1000 * (i + 1) + 500, 1, 2, 4, 1);
      tf_add(&t, &r);
    }
    save_numbered(&t, dir, rank);
  }
  struct rlimit old, low;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
  low = old;
  low.rlim_cur = 48;
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  signal(SIGALRM, on_alarm);
  alarm(ANALYSIS_LIMIT_S);
  topo_status st = rp_analyze(paths, 1, &opt, &r);
  alarm(0);
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
  assert_int_equal(st, TOPO_OK);
  assert_int_equal(r.nranks, RANKS);
  for (int i = 0; i < r.nsrc; i++)
    if (r.src[i].unreadable)
      fail_msg("%s not read: %s", r.src[i].path, strerror(r.src[i].unreadable));
  assert_int_equal(r.ncomms, 1);
  assert_int_equal(r.comms[0].ranks_seen, RANKS);
  assert_int_equal(r.comms[0].joined, 4);
  assert_int_equal(r.comms[0].incomplete, 0);
  rp_report_free(&r);
  remove_dir(dir);
}

/* A Kineto trace of rank `rank` with `n` GPU kernels of 5 us, 10 us apart from `first_us` on. */
static void write_kineto(const char *path, int rank, int n, long first_us) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "{\"distributedInfo\":{\"rank\":%d,\"world_size\":2},\"traceEvents\":[", rank);
  for (int i = 0; i < n; i++)
    fprintf(f,
            "%s\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm_%d\",\"pid\":0,\"tid\":7,"
            "\"ts\":%ld,\"dur\":5,\"args\":{\"stream\":7,\"correlation\":%d}}",
            i ? "," : "", i % 7, first_us + 10L * i, i + 1);
  fprintf(f, "\n]}\n");
  assert_int_equal(fclose(f), 0);
}

/* 120 Kineto traces of one rank (their kernels interleaved in time), read with RLIMIT_NOFILE at
 * 48: pass 2 merges them all by time, and none is dropped for want of a descriptor (each holds
 * none while pass 2 replays pass 1's record of it). */
static void test_many_json_inputs_of_one_rank_under_a_small_descriptor_limit(void **state) {
  (void)state;
  enum { FILES = 120, KERNELS = 3 };
  char dir[64], path[FILES][128];
  const char *paths[FILES];
  temp_dir(dir);
  for (int i = 0; i < FILES; i++) {
    snprintf(path[i], sizeof path[i], "%s/k%03d.json", dir, i);
    write_kineto(path[i], 0, KERNELS, 1000 + 10L * KERNELS * i);
    paths[i] = path[i];
  }
  struct rlimit old, low;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
  low = old;
  low.rlim_cur = 48;
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  signal(SIGALRM, on_alarm);
  alarm(ANALYSIS_LIMIT_S);
  topo_status st = rp_analyze(paths, FILES, &opt, &r);
  alarm(0);
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
  assert_int_equal(st, TOPO_OK);
  for (int i = 0; i < r.nsrc; i++)
    if (r.src[i].unreadable)
      fail_msg("%s not read: %s", r.src[i].path, strerror(r.src[i].unreadable));
  assert_int_equal(r.nsrc, FILES);
  assert_int_equal(r.nranks, 1);
  assert_int_equal(r.ranks[0].t.intervals[RP_COMPUTE], FILES * KERNELS);
  assert_int_equal(r.ranks[0].t.compute, FILES * KERNELS * 5000); /* 5 us each, none overlap */
  rp_report_free(&r);
  remove_dir(dir);
}

/* A 2 MB Kineto trace whose reads that start past its middle fail with EIO: the events read
 * before count, and the input is reported as not wholly read (EIO), not taken as ending there. */
static void test_a_json_read_error_is_a_problem_of_its_input(void **state) {
  (void)state;
  char dir[64], path[128];
  temp_dir(dir);
  snprintf(path, sizeof path, "%s/rank0.json", dir);
  write_kineto(path, 0, 16000, 1000);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_true(st.st_size > (1 << 20));
  const char *paths[] = {path};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  signal(SIGALRM, on_alarm);
  alarm(ANALYSIS_LIMIT_S);
  fail_from = st.st_size / 2;
  fail_ino = st.st_ino;
  topo_status s = rp_analyze(paths, 1, &opt, &r);
  fail_ino = 0;
  alarm(0);
  assert_int_equal(s, TOPO_OK);
  assert_int_equal(r.nsrc, 1);
  assert_int_equal(r.src[0].unreadable, EIO);
  assert_true(r.src[0].compute_kernels > 0);     /* what came before the error counts */
  assert_true(r.src[0].compute_kernels < 16000); /* and nothing after it */
  rp_report_free(&r);
  remove_dir(dir);
}

/* 24 small traces, each of its own communicator claiming 2^20 ranks, with collectives of five
 * functions: analysed in a child whose peak RSS must stay far below what per-rank tables of the
 * claimed size would take (~87 MB per communicator before: 2 GB here). */
static void test_memory_follows_the_traces_not_the_claimed_communicator_size(void **state) {
  (void)state;
  enum { TRACES = 24 };
  char dir[64];
  temp_dir(dir);
  for (int i = 0; i < TRACES; i++) {
    topo_trace_header h;
    tf_header_init(&h, 0x1000 + (uint64_t)i, i, 1 << 20);
    tf_trace t;
    tf_begin(&t, &h, NULL);
    for (int seq = 0; seq < 8; seq++)
      for (int func = 0; func < 5; func++) {
        int64_t at = 100000 * seq + 1000 * func;
        topo_trace_record r =
            tf_coll(func, (uint64_t)seq, 1 << 20, at, at + 10, at + 20, at + 500, 1, 2, 4, 1);
        tf_add(&t, &r);
      }
    save_numbered(&t, dir, i);
  }
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(30);
    const char *paths[] = {dir};
    rp_options opt = {.reorder_window = 65536, .quiet = 1};
    rp_report r;
    if (rp_analyze(paths, 1, &opt, &r) != TOPO_OK) _exit(2);
    int ok = r.nranks == TRACES && r.ncomms == TRACES && r.comms[0].ranks_seen == 1 &&
             r.comms[0].joined == 40 && r.comms[0].incomplete == 40;
    rp_report_free(&r);
    _exit(ok ? 0 : 3);
  }
  int status;
  struct rusage ru;
  assert_int_equal(wait4(pid, &status, 0, &ru), pid);
  remove_dir(dir);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("analysis failed: status 0x%x (peak RSS %ld KB)", status, ru.ru_maxrss);
  if (ru.ru_maxrss > 256 * 1024)
    fail_msg("peak RSS %ld KB for %d traces of 4 KB", ru.ru_maxrss, TRACES);
}

/* Writes `text` to dir/name; the path goes to `path`. */
static void write_text(char path[128], const char *dir, const char *name, const char *text) {
  snprintf(path, 128, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* Analyses `paths` and writes every renderer's output (text, JSON, CSV and the HTML page) under
 * the alarm, with files limited to 64 MB (a runaway writer fails its writes, then the alarm);
 * returns the HTML page's size in bytes. */
static long render_all(const char *const *paths, int npaths, const char *dir) {
  struct rlimit old, low;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  low = old;
  low.rlim_cur = 64 << 20;
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
  signal(SIGXFSZ, SIG_IGN);
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  rp_report r;
  char html[128];
  snprintf(html, sizeof html, "%s/page.html", dir);
  signal(SIGALRM, on_alarm);
  alarm(ANALYSIS_LIMIT_S);
  assert_int_equal(rp_analyze(paths, npaths, &opt, &r), TOPO_OK);
  FILE *null = fopen("/dev/null", "w");
  assert_non_null(null);
  rp_render_text(&r, null);
  rp_render_json(&r, null);
  for (int t = 0; t < RP_CSV_TABLES; t++) rp_render_csv_table(&r, t, null);
  fclose(null);
  assert_int_equal(rp_render_html(&r, html), TOPO_OK);
  alarm(0);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
  rp_report_free(&r);
  struct stat st;
  assert_int_equal(stat(html, &st), 0);
  unlink(html);
  return (long)st.st_size;
}

/* A GPU kernel at ts 0 and a sub-microsecond ProfilerStep in 2026: the timeline shows that step,
 * 1.8e18 ns after the run's first activity, where a double no longer resolves its tick spacing.
 * The page is written, with a handful of ticks, not an endless run of them. */
static void test_timeline_ticks_far_from_the_start_are_bounded(void **state) {
  (void)state;
  char dir[64], path[128];
  temp_dir(dir);
  write_text(
      path, dir, "k.json",
      "{\"traceEvents\":[\n"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\","
      "\"pid\":0,\"tid\":7,\"ts\":0,\"dur\":10,\"args\":{\"device\":0,\"stream\":7}},\n"
      "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,"
      "\"tid\":1,\"ts\":1780000000000000,\"dur\":0.5}\n]}\n");
  const char *paths[] = {path};
  long size = render_all(paths, 1, dir);
  if (size > 256 * 1024) fail_msg("HTML page of %ld bytes for a 2-event input", size);
  remove_dir(dir);
}

/* The same from binary traces: two ranks of one communicator, one collective each, 1.8e18 ns
 * apart, the later rank with a 300 ns step mark around its own. */
static void test_timeline_of_binary_traces_far_apart_is_bounded(void **state) {
  (void)state;
  char dir[64];
  temp_dir(dir);
  for (int rank = 0; rank < 2; rank++) {
    topo_trace_header h;
    tf_header_init(&h, 0x77, rank, 2);
    tf_trace t;
    tf_begin(&t, &h, NULL);
    int64_t at = rank ? INT64_C(1800000000000000000) : 0;
    topo_trace_record c = tf_coll(4, 0, 1 << 20, at, at + 100, at + 100, at + 400, 1, 2, 4, 1);
    tf_add(&t, &c);
    if (rank) {
      topo_trace_record m = tf_mark(0, at, at + 300, 1);
      tf_add(&t, &m);
    }
    save_numbered(&t, dir, rank);
  }
  const char *paths[] = {dir};
  long size = render_all(paths, 1, dir);
  if (size > 256 * 1024) fail_msg("HTML page of %ld bytes for 2 collectives", size);
  remove_dir(dir);
}

/* Two ranks of 10,000 marked steps each (a collective in every one): a rank keeps at most
 * RP_STEPS_KEEP step rows (it kept one row of ~190 B per step, whatever their number: 252 MB
 * for 1 M collectives x 8 ranks), rows of 2^k consecutive step numbers that line up across the
 * ranks and account for every step; --all-steps keeps one row per step. */
static void analyze_many_steps(const char *dir, int all_steps, rp_report *r) {
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1, .all_steps = all_steps};
  signal(SIGALRM, on_alarm);
  alarm(ANALYSIS_LIMIT_S);
  assert_int_equal(rp_analyze(paths, 1, &opt, r), TOPO_OK);
  alarm(0);
}

static void test_step_rows_a_rank_keeps_are_bounded(void **state) {
  (void)state;
  enum { STEPS = 10000 };
  char dir[64];
  temp_dir(dir);
  for (int rank = 0; rank < 2; rank++) {
    topo_trace_header h;
    tf_header_init(&h, 0x51e9, rank, 2);
    tf_trace t;
    tf_begin(&t, &h, NULL);
    tf_string(&t, 1, "step");
    for (int i = 0; i < STEPS; i++) {
      int64_t at = 1000000 + 10000LL * i;
      topo_trace_record c =
          tf_coll(4, (uint64_t)i, 1 << 20, at + 100, at + 200, at + 300, at + 5000, 1, 2, 4, 1);
      tf_add(&t, &c);
      topo_trace_record m = tf_mark(1, at, at + 9000, (uint64_t)i);
      tf_add(&t, &m);
    }
    save_numbered(&t, dir, rank);
  }
  rp_report r;
  analyze_many_steps(dir, 0, &r);
  assert_int_equal(r.nranks, 2);
  assert_true(r.step_shift > 0);
  for (int i = 0; i < 2; i++) {
    const rp_rank *k = &r.ranks[i];
    if (k->nsteps > RP_STEPS_KEEP) fail_msg("rank %d keeps %zu step rows", i, k->nsteps);
    uint64_t steps = 0;
    for (size_t j = 0; j < k->nsteps; j++) {
      steps += k->steps[j].count;
      assert_int_equal(k->steps[j].last - k->steps[j].value + 1, 1ull << r.step_shift);
      assert_true(k->steps[j].comm > 0); /* figures measured over the row's time */
    }
    assert_int_equal(steps, STEPS);
  }
  assert_true(r.nstepsum <= RP_STEPS_KEEP);
  uint64_t counted = 0;
  for (size_t j = 0; j < r.nstepsum; j++) {
    assert_int_equal(r.stepsum[j].ranks, 2); /* the rows line up across the ranks */
    counted += r.stepsum[j].count;
  }
  assert_int_equal(counted, 2 * STEPS);
  rp_report_free(&r);
  analyze_many_steps(dir, 1, &r);
  assert_int_equal(r.step_shift, 0);
  assert_int_equal(r.ranks[0].nsteps, STEPS);
  assert_int_equal(r.nstepsum, STEPS);
  rp_report_free(&r);
  remove_dir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seqs_at_both_ends_of_the_range_join_without_hanging),
      cmocka_unit_test(test_seqs_near_the_top_of_the_range_join),
      cmocka_unit_test(test_json_strings_are_valid_utf8),
      cmocka_unit_test(test_many_inputs_under_a_small_descriptor_limit_are_all_read),
      cmocka_unit_test(test_many_json_inputs_of_one_rank_under_a_small_descriptor_limit),
      cmocka_unit_test(test_a_json_read_error_is_a_problem_of_its_input),
      cmocka_unit_test(test_memory_follows_the_traces_not_the_claimed_communicator_size),
      cmocka_unit_test(test_timeline_of_binary_traces_far_apart_is_bounded),
      cmocka_unit_test(test_step_rows_a_rank_keeps_are_bounded),
      cmocka_unit_test(test_timeline_ticks_far_from_the_start_are_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
