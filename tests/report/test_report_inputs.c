// SPDX-License-Identifier: Apache-2.0
// topo-report on inputs as PyTorch and users leave them, end to end through the command line:
// honest blanks (an overlap ratio without communication is n/a / null, a trace without CUDA GPU
// events says so and exits 1), .json.gz, TensorBoard log directories holding several runs,
// topo-report's own Chrome export and other JSON beside the traces, and the step windows (all
// events, or the complete ProfilerSteps only).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <zlib.h>

#include "plugin_host.h"

static char dir[64];

/* Run topo-report with `args`; its exit status, stdout (*out, caller frees) and stderr (*err). */
static int run(const char *args, char **out, char **err) {
  char cmd[8192], errpath[128];
  snprintf(errpath, sizeof errpath, "%s/stderr", dir);
  snprintf(cmd, sizeof cmd, "%s %s 2>%s", TOPO_REPORT_EXE, args, errpath);
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
  if (err) *err = topo_host_read_text(errpath);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_text(const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *slash = strrchr(path, '/');
  *slash = 0;
  mkdir(path, 0755);
  *slash = '/';
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
  fclose(f);
}

static int count_lines(const char *s, const char *part) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, part)); p += strlen(part)) n++;
  return n;
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-inputs-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd);
}

/* Compute kernels only: how much of the communication overlaps is undefined, not 0 %. */
static void test_overlap_without_communication_is_undefined(void **state) {
  (void)state;
  write_text(
      "nocomm/r0.json",
      "{\"distributedInfo\": {\"rank\": 0, \"world_size\": 1}, \"traceEvents\": [\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 10,"
      " \"dur\": 5, \"args\": {\"stream\": 7}},\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gelu\", \"pid\": 0, \"tid\": 7, \"ts\": 20,"
      " \"dur\": 5, \"args\": {\"stream\": 7}}]}");
  char args[256], *out;
  snprintf(args, sizeof args, "--json %s/nocomm", dir);
  assert_int_equal(run(args, &out, NULL), 0);
  assert_int_equal(count_lines(out, "\"overlap_ratio\":null"), 2); /* the rank, and overall */
  assert_null(strstr(out, "\"overlap_ratio\":0.0"));
  assert_non_null(strstr(out, "\"compute_ns\":10000"));
  free(out);
  snprintf(args, sizeof args, "--wide %s/nocomm", dir); /* the rank's row on one line */
  assert_int_equal(run(args, &out, NULL), 0);
  assert_non_null(strstr(out, "overlap% n/a: no communication"));
  const char *row = strstr(out, "\n  rank 0 ");
  assert_non_null(row);
  char line[256];
  sscanf(row + 1, "%255[^\n]", line);
  assert_int_equal(count_lines(line, "%"), 2); /* comm% and covered only: overlap% is n/a */
  assert_int_equal(count_lines(line, "n/a"), 1);
  free(out);
  snprintf(args, sizeof args, "--csv-table ranks %s/nocomm", dir);
  assert_int_equal(run(args, &out, NULL), 0);
  assert_non_null(strstr(out, ",0.000000,,")); /* comm_share 0, overlap_ratio empty */
  free(out);
}

/* A trace of another device (MTIA's categories), or of the CPU only (with its ProfilerSteps): one
 * line saying what it holds instead of CUDA GPU events, no rank of zeros, exit 1 when nothing else
 * is usable; beside a usable trace it is skipped and the report goes on. */
static void test_traces_without_cuda_gpu_events_say_so(void **state) {
  (void)state;
  write_text(
      "mtia/r0.json",
      "{\"distributedInfo\": {\"rank\": 0, \"world_size\": 1}, \"traceEvents\": [\n"
      "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 1,"
      " \"tid\": 1, \"ts\": 5, \"dur\": 100},\n"
      "{\"ph\": \"X\", \"cat\": \"mtia_runtime\", \"name\": \"launch\", \"pid\": 1, \"tid\": 1,"
      " \"ts\": 10, \"dur\": 5, \"args\": {\"correlation\": 3}},\n"
      "{\"ph\": \"X\", \"cat\": \"mtia_ccp_events\", \"name\": \"matmul\", \"pid\": 2, \"tid\": 4,"
      " \"ts\": 12, \"dur\": 50, \"args\": {\"correlation\": 3}}]}");
  write_text(
      "cpu/r0.json",
      "{\"traceEvents\": [\n"
      "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 1,"
      " \"tid\": 1, \"ts\": 5, \"dur\": 100},\n"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1,"
      " \"ts\": 10, \"dur\": 5, \"args\": {\"Input Dims\": [[2, 2], [2, 2]]}}]}");
  char args[4096], *out, *err;
  snprintf(args, sizeof args, "%s/mtia", dir);
  assert_int_equal(run(args, &out, &err), 1);
  assert_string_equal(out, "");
  assert_non_null(strstr(err, "r0.json: no CUDA GPU events"));
  assert_non_null(strstr(err, "mtia_runtime (1), mtia_ccp_events (1)"));
  assert_non_null(strstr(err, "no usable input"));
  assert_int_equal(count_lines(err, "\n"), 2);
  free(out), free(err);
  snprintf(args, sizeof args, "--json %s/cpu", dir);
  assert_int_equal(run(args, &out, &err), 1);
  assert_string_equal(out, "");
  assert_non_null(strstr(err, "among its 2 complete events (2 CPU-side)"));
  free(out), free(err);
  snprintf(args, sizeof args, "--json %s/cpu %s/ddp-kineto-rank0-excerpt.pt.trace.json", dir,
           TOPO_REPORT_DATA);
  assert_int_equal(run(args, &out, &err), 0);
  assert_non_null(strstr(err, "no CUDA GPU events"));
  assert_non_null(strstr(out, "\"ranks\":[\n{\"rank\":0,"));
  assert_null(strstr(out, "},\n{\"rank\":")); /* one rank: the CPU-only trace made none */
  free(out), free(err);
}

/* A small Kineto trace of rank `rank`: one compute kernel of `dur_us` at `ts_us`, gzip when the
 * name ends in .gz. */
static void write_rank_trace(const char *name, int rank, double ts_us, double dur_us) {
  char text[1024], path[256];
  snprintf(
      text, sizeof text,
      "{\"distributedInfo\": {\"rank\": %d, \"world_size\": 2}, \"traceEvents\": [\n"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": "
      "%.3f,"
      " \"dur\": %.3f, \"args\": {\"stream\": 7}}], \"baseTimeNanoseconds\": 1790857026000000000}",
      rank, ts_us, dur_us);
  size_t n = strlen(name);
  if (n > 3 && !strcmp(name + n - 3, ".gz")) {
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *slash = strrchr(path, '/');
    *slash = 0;
    mkdir(path, 0755);
    *slash = '/';
    gzFile gz = gzopen(path, "wb");
    assert_non_null(gz);
    assert_int_equal(gzwrite(gz, text, (unsigned)strlen(text)), (int)strlen(text));
    assert_int_equal(gzclose(gz), Z_OK);
  } else {
    write_text(name, text);
  }
}

/* tensorboard_trace_handler's log directory: <worker>.<time ns>.pt.trace.json[.gz]. Two cycles
 * of one job (the same workers, 5 s apart) and a later job (other workers, 1000 s later): three
 * runs. The latest is read and named; --run N and --all-runs choose otherwise. */
static void test_tensorboard_directory_runs_are_not_mixed(void **state) {
  (void)state;
  write_rank_trace("tb/node1_100.1790857026000000000.pt.trace.json.gz", 0, 1000, 10);
  write_rank_trace("tb/node1_101.1790857026500000000.pt.trace.json.gz", 1, 1000, 20);
  write_rank_trace("tb/node1_100.1790857031000000000.pt.trace.json.gz", 0, 5000000, 30);
  write_rank_trace("tb/node1_101.1790857031200000000.pt.trace.json.gz", 1, 5000000, 40);
  write_rank_trace("tb/node1_200.1790858026000000000.pt.trace.json", 0, 1000000000, 50);
  write_rank_trace("tb/node1_201.1790858026100000000.pt.trace.json", 1, 1000000000, 60);
  char args[4096], *out, *err;
  snprintf(args, sizeof args, "--json %s/tb", dir);
  assert_int_equal(run(args, &out, &err), 0);
  assert_non_null(
      strstr(err,
             "/tb holds 3 runs of PyTorch traces; reading run 3 (2026-10-01 12:33:46 UTC, "
             "2 files), the latest; --run N picks another, --all-runs mixes them"));
  assert_int_equal(count_lines(err, "\n"), 1);
  assert_non_null(strstr(out, "\"runs_found\":3,\"run_read\":3,\"files\":2"));
  assert_non_null(strstr(out, "\"span_ns\":50000,")); /* rank 0 of the third run */
  assert_non_null(strstr(out, "\"span_ns\":60000,"));
  free(out), free(err);
  snprintf(args, sizeof args, "--wide --run 2 %s/tb", dir);
  assert_int_equal(run(args, &out, &err), 0);
  assert_non_null(strstr(out, "run: "));
  assert_non_null(strstr(
      out, "/tb holds 3 runs of PyTorch traces; this is run 2 (2026-10-01 12:17:11 UTC, 2 files)"));
  assert_non_null(strstr(out, "2 ranks from 2 JSON files"));
  free(out), free(err);
  snprintf(args, sizeof args, "--json --all-runs %s/tb", dir);
  assert_int_equal(run(args, &out, &err), 0);
  assert_non_null(strstr(out, "\"runs_found\":3,\"run_read\":null,\"files\":6"));
  free(out), free(err);
  snprintf(args, sizeof args, "--run 4 %s/tb", dir);
  assert_int_equal(run(args, &out, &err), 1);
  assert_non_null(strstr(err, "holds 3 runs of PyTorch traces: --run 4 names none"));
  free(out), free(err);
  snprintf(args, sizeof args, "--run 1 --all-runs %s/tb", dir);
  assert_int_equal(run(args, NULL, NULL), 2);
}

/* A name whose time does not fit in int64 ns (16 digits of us, 13 of ms, 19 digits above 2^63)
 * is no time: the file's mtime stands in, as for any other name. Written now, the three files
 * are one run (before: the us and ms times wrapped to a negative time, a run of their own, and
 * the report read the file named with the current time alone). */
static void test_tensorboard_name_times_that_overflow_fall_back_to_mtime(void **state) {
  (void)state;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char name[128];
  snprintf(name, sizeof name, "tbo/w0.%lld.pt.trace.json",
           (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
  write_rank_trace(name, 0, 1000, 10);
  write_rank_trace("tbo/w1.9999999999999999.pt.trace.json", 1, 1000, 10);
  write_rank_trace("tbo/w2.9999999999999.pt.trace.json", 2, 1000, 10);
  write_rank_trace("tbo/w3.9999999999999999999.pt.trace.json", 3, 1000, 10);
  char args[4096], *out, *err;
  snprintf(args, sizeof args, "--json %s/tbo", dir);
  assert_int_equal(run(args, &out, &err), 0);
  if (!strstr(out, "\"runs_found\":1,\"run_read\":1,\"files\":4"))
    fail_msg("not one run of 4 files: %s", err);
  free(out), free(err);
}

/* topo-report's own Chrome export written into the trace directory, and a JSON file that is no
 * trace: one line each, no phantom rank. */
static void test_own_export_and_other_json_are_skipped(void **state) {
  (void)state;
  char args[4096], *out, *err;
  snprintf(args, sizeof args, "mkdir -p %s/mixed && cp %s/*.trace %s/mixed/", dir, TOPO_DDP_TRACES,
           dir);
  assert_int_equal(system(args), 0);
  snprintf(args, sizeof args, "export --chrome %s/mixed/run.json %s/mixed", dir, dir);
  assert_int_equal(run(args, NULL, NULL), 0);
  write_text("mixed/config.json", "{\"lr\": 0.001, \"layers\": [1, 2, {\"x\": \"]\"}]}");
  snprintf(args, sizeof args, "%s/mixed", dir);
  assert_int_equal(run(args, &out, &err), 0);
  assert_non_null(strstr(
      err,
      "mixed/run.json: topo-report's own Chrome export (export --chrome), not a trace; skipped"));
  assert_non_null(strstr(err, "mixed/config.json: JSON without traceEvents: not a trace; skipped"));
  assert_int_equal(count_lines(err, "\n"), 2);
  assert_non_null(strstr(out, "topo-report: 2 ranks from 2 trace files;"));
  free(out), free(err);
}

/* The output says which events it counts: all (the default), or the complete profiler steps. */
static void test_step_window_is_stated(void **state) {
  (void)state;
  char args[4096], *out;
  const char *trace = TOPO_REPORT_DATA "/ddp-kineto-rank0-excerpt.pt.trace.json";
  snprintf(args, sizeof args, "%s", trace);
  assert_int_equal(run(args, &out, NULL), 0);
  assert_non_null(strstr(
      out,
      "\nevents: all (the default; --steps complete keeps the complete profiler steps only)\n"));
  assert_non_null(strstr(out, "40 collectives"));
  free(out);
  snprintf(args, sizeof args, "--wide --steps complete %s", trace);
  assert_int_equal(run(args, &out, NULL), 0);
  assert_non_null(
      strstr(out,
             "\nevents: the complete profiler steps only (--steps complete): 1 rank from "
             "ProfilerStep#0 to the end of #3 (#4, the last, left out)\n"));
  assert_non_null(strstr(out, "32 collectives"));
  assert_non_null(strstr(out, "86.375 ms"));      /* the span */
  assert_null(strstr(out, "\n  4            1")); /* no step 4 row */
  free(out);
  snprintf(args, sizeof args, "--json --steps complete --steps auto %s", trace);
  assert_int_equal(run(args, &out, NULL), 0);
  assert_non_null(strstr(out, "\"step_window\":{\"mode\":\"complete_steps\",\"ranks_cut\":1}"));
  assert_non_null(
      strstr(out,
             "\"window\":{\"mode\":\"complete_steps\",\"from_ns\":1796066392075790648,"
             "\"to_ns\":1796066392162166102,\"first_step\":0,\"last_step\":3,\"dropped_step\":4,"
             "\"profiler_steps\":5}"));
  free(out);
  snprintf(args, sizeof args, "--json %s", trace);
  assert_int_equal(run(args, &out, NULL), 0);
  assert_non_null(strstr(out, "\"step_window\":{\"mode\":\"all\",\"ranks_cut\":0}"));
  assert_non_null(strstr(out, "\"window\":{\"mode\":\"all\",\"reason\":null}"));
  free(out);
  snprintf(args, sizeof args, "--html %s/steps.html --steps complete %s", dir, trace);
  assert_int_equal(run(args, &out, NULL), 0);
  free(out);
  snprintf(args, sizeof args, "%s/steps.html", dir);
  char *html = topo_host_read_text(args);
  assert_non_null(
      strstr(html, "<div class=meta>events: the complete profiler steps only (--steps complete)"));
  free(html);
  snprintf(args, sizeof args, "--steps most %s", trace);
  assert_int_equal(run(args, NULL, NULL), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_overlap_without_communication_is_undefined),
      cmocka_unit_test(test_traces_without_cuda_gpu_events_say_so),
      cmocka_unit_test(test_tensorboard_directory_runs_are_not_mixed),
      cmocka_unit_test(test_tensorboard_name_times_that_overflow_fall_back_to_mtime),
      cmocka_unit_test(test_own_export_and_other_json_are_skipped),
      cmocka_unit_test(test_step_window_is_stated),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
