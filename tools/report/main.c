// SPDX-License-Identifier: Apache-2.0
// topo-report's command line: parses arguments, runs the analysis, picks the renderer. Sub-
// commands: (default) report, dump, export --chrome, diff, fit. Misuse: one line, exit 2.
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "log.h"
#include "kernels.h"
#include "profile.h"
#include "report.h"
#include "topo_version.h"

static const char usage[] =
    "usage: topo-report [options] TRACE_OR_DIR...      report on traces of all ranks\n"
    "       topo-report dump TRACE                      print a binary trace as JSON lines\n"
    "       topo-report export --chrome OUT TRACE_OR_DIR...  Perfetto/Chrome trace JSON\n"
    "       topo-report diff [options] A B              two runs side by side (files or dirs)\n"
    "       topo-report fit [--gpu NAME] [--base PROFILE] -o PROFILE TRACE_OR_DIR...\n"
    "                                                   fit a tuner profile\n"
    "\n"
    "Inputs: binary traces of libtopo-profiler.so (one per communicator and rank), PyTorch\n"
    "profiler (Kineto) or Chrome trace JSON, plain or gzip; directories are searched for *.trace,\n"
    "*.topo, *.bin, *.json and *.json.gz files. A Kineto trace alone is enough for the overlap\n"
    "figures. JSON that is no trace (topo-report's own export, other JSON) is skipped with one line.\n"
    "A directory whose PyTorch traces come from several runs (a TensorBoard log directory) gives\n"
    "its latest run, named on stderr and in the report.\n"
    "\n"
    "Options:\n"
    "  --json             the report as one JSON object (times in ns)\n"
    "  --csv              the rank and collective tables as CSV\n"
    "  --html FILE        also write a self-contained HTML page with SVG plots\n"
    "  -o, --output FILE  write the report (or profile) to FILE instead of stdout\n"
    "  --base PROFILE     fit: the profile refined; its terms stay where the traces have none\n"
    "  --window FROM,TO   analyse only [FROM, TO): Unix-epoch ns (CLOCK_REALTIME, the clock\n"
    "                     every input is aligned to); every figure is clipped to it\n"
    "  --from NS, --to NS the same, one end at a time\n"
    "  --reorder-window N intervals held to sort each rank's timeline (default 65536)\n"
    "  --profile FILE     a tuner profile (topo-calibrate): its measured link bandwidth is the\n"
    "                     reference line of the HTML busbw plot\n"
    "  --gpu NAME         without --profile: the built-in link peak of H200, H100 or A100 is\n"
    "                     that reference (fit: the GPU the profile is for)\n"
    "  --top N            top kernels per rank and type in the kernel table (default 10,\n"
    "                     HTA's num_kernels; also cut at 80 % of the type's time, as HTA does)\n"
    "  --steps all|complete  the events counted: all (default), or per rank only its complete\n"
    "                     profiler steps (first ProfilerStep to the end of the one before the last)\n"
    "  --steps auto|off|P steps from the period of the collectives when no Kineto trace or\n"
    "                     step mark gives them (default auto); P forces P collectives a step\n"
    "                     (--steps may be given twice: a window and a detection)\n"
    "  --run N            a directory holding several runs: read the Nth (1 = oldest)\n"
    "  --all-runs         a directory holding several runs: read them all as one\n"
    "  --progress / --no-progress   progress on stderr (default: on a terminal or inputs > 256 MB)\n"
    "  -q, --quiet        no warnings about damaged inputs\n"
    "  -v, --verbose      informational messages\n"
    "  -h, --help         this text;  --version  the version\n"
    "\n"
    "Examples:\n"
    "  topo-report ./topo-traces\n"
    "  topo-report --html report.html ./topo-traces\n"
    "  topo-report --json rank*.trace > report.json\n"
    "  topo-report trace_rank0.pt.trace.json trace_rank1.pt.trace.json   # Kineto only\n"
    "  topo-report export --chrome run.json ./topo-traces   # open in ui.perfetto.dev\n"
    "  topo-report diff before/ after/\n"
    "  topo-report fit --gpu H200 -o h200.profile ./topo-traces\n"
    "  topo-report fit --gpu H200 --base h200.profile -o h200-ddp.profile ./ddp-traces\n";

static int misuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int misuse(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "topo-report: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (try --help)\n");
  return 2;
}

typedef struct args {
  int json, csv, quiet, verbose;
  int progress;
  const char *html, *output, *gpu, *chrome, *base, *profile;
  size_t reorder;
  int steps, step_window;
  int top;
  int run, all_runs;
  int have_from, have_to;
  int64_t from, to;
  const char **paths;
  int npaths;
} args;

/* A time in Unix-epoch ns (a decimal integer, optionally signed); 1 when valid. */
static int parse_ns(const char *t, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(t, &end, 10);
  if (end == t || *end || errno) return 0;
  *out = (int64_t)v;
  return 1;
}

/* Parse options and positional paths from argv[from..]; returns 0 or an exit code. */
static int parse(int argc, char **argv, int from, args *a) {
  a->progress = -1;
  a->paths = calloc((size_t)argc + 1, sizeof *a->paths);
  if (!a->paths) return 1;
  for (int i = from; i < argc; i++) {
    const char *s = argv[i];
#define NEED_VALUE()                                       \
  do {                                                     \
    if (i + 1 >= argc) return misuse("%s needs a value", s); \
  } while (0)
    if (!strcmp(s, "--json")) a->json = 1;
    else if (!strcmp(s, "--csv")) a->csv = 1;
    else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) a->quiet = 1;
    else if (!strcmp(s, "-v") || !strcmp(s, "--verbose")) a->verbose = 1;
    else if (!strcmp(s, "--progress")) a->progress = 1;
    else if (!strcmp(s, "--no-progress")) a->progress = 0;
    else if (!strcmp(s, "--all-runs")) a->all_runs = 1;
    else if (!strcmp(s, "--run")) {
      NEED_VALUE();
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end || v < 1 || v > 1000000)
        return misuse("--run wants a run number (1 = the oldest), not '%s'", argv[i]);
      a->run = (int)v;
    }
    else if (!strcmp(s, "--html")) { NEED_VALUE(); a->html = argv[++i]; }
    else if (!strcmp(s, "-o") || !strcmp(s, "--output")) { NEED_VALUE(); a->output = argv[++i]; }
    else if (!strcmp(s, "--gpu")) { NEED_VALUE(); a->gpu = argv[++i]; }
    else if (!strcmp(s, "--base")) { NEED_VALUE(); a->base = argv[++i]; }
    else if (!strcmp(s, "--profile")) { NEED_VALUE(); a->profile = argv[++i]; }
    else if (!strcmp(s, "--chrome")) { NEED_VALUE(); a->chrome = argv[++i]; }
    else if (!strcmp(s, "--reorder-window")) {
      NEED_VALUE();
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < 1 || v > (1L << 26)) return misuse("--reorder-window wants 1..67108864, not '%s'", argv[i]);
      a->reorder = (size_t)v;
    } else if (!strcmp(s, "--top")) {
      NEED_VALUE();
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || end == argv[i] || v < 1 || v > 100000) return misuse("--top wants 1..100000, not '%s'", argv[i]);
      a->top = (int)v;
    } else if (!strcmp(s, "--steps")) {
      NEED_VALUE();
      const char *v = argv[++i];
      char *end;
      long p = strtol(v, &end, 10);
      if (!strcmp(v, "auto")) a->steps = 0;
      else if (!strcmp(v, "off")) a->steps = -1;
      else if (!strcmp(v, "all")) a->step_window = RP_WINDOW_ALL;
      else if (!strcmp(v, "complete")) a->step_window = RP_WINDOW_COMPLETE_STEPS;
      else if (end != v && !*end && p >= 1 && p <= RP_STEPS_DETECT_MAX / 2) a->steps = (int)p;
      else
        return misuse("--steps wants all, complete, auto, off or a period of 1..%d collectives, not '%s'",
                      RP_STEPS_DETECT_MAX / 2, v);
    } else if (!strcmp(s, "--window")) {
      NEED_VALUE();
      const char *v = argv[++i], *comma = strchr(v, ',');
      char lo[32];
      if (!comma || (size_t)(comma - v) >= sizeof lo)
        return misuse("--window wants FROM,TO in Unix-epoch ns, not '%s'", v);
      memcpy(lo, v, (size_t)(comma - v));
      lo[comma - v] = 0;
      if (!parse_ns(lo, &a->from) || !parse_ns(comma + 1, &a->to))
        return misuse("--window wants FROM,TO in Unix-epoch ns, not '%s'", v);
      a->have_from = a->have_to = 1;
    } else if (!strcmp(s, "--from") || !strcmp(s, "--to")) {
      NEED_VALUE();
      int64_t t;
      if (!parse_ns(argv[++i], &t)) return misuse("%s wants Unix-epoch ns, not '%s'", s, argv[i]);
      if (s[2] == 'f') a->from = t, a->have_from = 1;
      else a->to = t, a->have_to = 1;
    } else if (s[0] == '-' && s[1]) return misuse("unknown option '%s'", s);
    else a->paths[a->npaths++] = s;
#undef NEED_VALUE
  }
  if (a->run && a->all_runs) return misuse("--run and --all-runs exclude each other");
  if ((a->have_from || a->have_to) && a->have_from && a->have_to && a->to <= a->from)
    return misuse("the window's end (%lld) is not after its start (%lld)", (long long)a->to,
                  (long long)a->from);
  return 0;
}

static FILE *open_out(const char *path) {
  if (!path || !strcmp(path, "-")) return stdout;
  FILE *f = fopen(path, "w");
  if (!f) TOPO_WARN("cannot write %s", path);
  return f;
}

static int close_out(FILE *f) {
  if (f == stdout) return fflush(f) == 0 ? 0 : 1;
  return fclose(f) == 0 ? 0 : 1;
}

static int run_main(int argc, char **argv, args *a_out);

/* The busbw reference of the HTML plot: the link bandwidth of `profile` (measured by
 * topo-calibrate, or the built-in figure it fell back to), else the built-in link peak of `gpu`;
 * NVLink on one host, the network across hosts. 1 when the profile given cannot be used. */
static int busbw_reference(rp_report *r, const char *profile, const char *gpu) {
  if (!profile && !gpu) return 0;
  int hosts = 0;
  for (int i = 0; i < r->nranks; i++) {
    int seen = 0;
    for (int j = 0; j < i; j++) seen |= !strcmp(r->ranks[i].host, r->ranks[j].host);
    hosts += !seen;
  }
  int cls = hosts > 1 ? TOPO_LINK_NET : TOPO_LINK_NVLINK;
  topo_profile p;
  memset(&p, 0, sizeof p);
  topo_profile_key want = {"", 0, 0, 0};
  if (gpu) snprintf(want.gpu, sizeof want.gpu, "%s", gpu);
  topo_status st = profile ? topo_profile_load(profile, &want, &p) : topo_profile_builtin(gpu, &p);
  int bad = profile ? st != TOPO_OK : st == TOPO_ERR_INVALID;
  if (bad) {
    fprintf(stderr, "topo-report: %s: %s; the busbw plot has no reference line\n", profile ? profile : gpu,
            profile ? "no usable profile section" : "unknown GPU model (H200, H100, A100)");
  } else {
    r->ref_busbw = p.link[cls].bw_gbs;
    snprintf(r->ref_label, sizeof r->ref_label, "%s %s busbw, %s", profile ? "calibrated" : "built-in peak",
             cls == TOPO_LINK_NET ? "network" : "NVLink", profile ? profile : p.source);
  }
  topo_profile_free(&p);
  return bad;
}

/* Why an input could not be read (rp_source.unreadable): the trace reader refuses anything but
 * a regular file with EINVAL. */
static const char *unreadable_reason(int err) {
  return err == EINVAL ? "not a regular file" : strerror(err);
}

/* Inputs of r that could not be opened or read; *bad = the first of them. */
static int count_unreadable(const rp_report *r, const rp_source **bad) {
  int n = 0;
  for (int i = 0; i < r->nsrc; i++)
    if (r->src[i].unreadable && !n++) *bad = &r->src[i];
  return n;
}

int main(int argc, char **argv) {
  args a;
  memset(&a, 0, sizeof a);
  int rc = run_main(argc, argv, &a);
  free(a.paths);
  return rc;
}

/* Everything main does; a->paths (allocated by parse) is freed by the caller on every path. */
static int run_main(int argc, char **argv, args *a_out) {
  topo_log_to_stderr("topo-report", 0);
  topo_env_check_unknown();
  if (argc < 2) {
    fputs("topo-report: no traces given: topo-report TRACE_OR_DIR... (try --help)\n", stderr);
    return 2;
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
    fputs(usage, stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("topo-report %s\n", TOPO_VERSION);
    return 0;
  }
  const char *cmd = "report";
  int from = 1;
  if (!strcmp(argv[1], "dump") || !strcmp(argv[1], "export") || !strcmp(argv[1], "diff") ||
      !strcmp(argv[1], "fit")) {
    cmd = argv[1];
    from = 2;
  }
  args a;
  memset(&a, 0, sizeof a);
  int rc = parse(argc, argv, from, &a);
  *a_out = a;
  if (rc) return rc;
  topo_log_to_stderr("topo-report", a.verbose);
  rp_options opt = {.reorder_window = a.reorder ? a.reorder : 65536, .progress = a.progress,
                    .quiet = a.quiet, .steps = a.steps, .step_window = a.step_window, .run = a.run,
                    .all_runs = a.all_runs};
  if (a.have_from || a.have_to) {
    opt.window = 1;
    opt.from = a.have_from ? a.from : INT64_MIN;
    opt.to = a.have_to ? a.to : INT64_MAX;
  }
  rc = 0;

  if (!strcmp(cmd, "dump")) {
    if (a.npaths != 1) return misuse("dump wants exactly one trace file");
    FILE *out = open_out(a.output);
    if (!out) return 1;
    rc = rp_dump(a.paths[0], out) == TOPO_OK ? 0 : 1;
    if (close_out(out)) rc = 1;
  } else if (!strcmp(cmd, "export")) {
    if (!a.chrome) return misuse("export needs --chrome FILE");
    if (!a.npaths) return misuse("export needs traces");
    rc = rp_export_chrome(a.paths, a.npaths, &opt, a.chrome) == TOPO_OK ? 0 : 1;
  } else if (!strcmp(cmd, "diff")) {
    if (a.npaths != 2) return misuse("diff wants two runs (files or directories)");
    rp_report ra, rb;
    int ok = rp_analyze(&a.paths[0], 1, &opt, &ra) == TOPO_OK;
    ok &= rp_analyze(&a.paths[1], 1, &opt, &rb) == TOPO_OK;
    FILE *out = ok ? open_out(a.output) : NULL;
    if (out) {
      rp_render_diff(&ra, &rb, a.paths[0], a.paths[1], out);
      rc = close_out(out);
    } else {
      rc = 1;
    }
    const rp_source *bad_a = NULL, *bad_b = NULL;
    int unreadable = ok ? count_unreadable(&ra, &bad_a) + count_unreadable(&rb, &bad_b) : 0;
    const rp_source *bad = bad_a ? bad_a : bad_b;
    if (unreadable) {
      fprintf(stderr, "topo-report: %d input file%s could not be read (%s: %s); the diff covers the "
              "others\n", unreadable, unreadable == 1 ? "" : "s", bad->path,
              unreadable_reason(bad->unreadable));
      rc = 1;
    }
    rp_report_free(&ra);
    rp_report_free(&rb);
  } else {
    if (!a.npaths) return misuse("no traces given");
    if (!strcmp(cmd, "fit") && !a.output) return misuse("fit needs -o PROFILE");
    if (strcmp(cmd, "fit") && a.base) return misuse("--base is for fit only");
    /* A missing input is an error even beside good ones (the report covers the rest, exit 1). */
    int missing = 0;
    for (int i = 0; i < a.npaths; i++) {
      struct stat sb;
      missing += stat(a.paths[i], &sb) != 0;
    }
    rp_report r;
    topo_status st = rp_analyze(a.paths, a.npaths, &opt, &r);
    if (st != TOPO_OK) {
      if (st != TOPO_ERR_INVALID) fprintf(stderr, "topo-report: %s\n", topo_status_str(st));
      rp_report_free(&r);
      return 1;
    }
    /* An input that could not be opened or read is never dropped silently, --quiet or not. */
    const rp_source *bad = NULL;
    int unreadable = count_unreadable(&r, &bad);
    if (r.nranks == 0) {
      if (unreadable)
        fprintf(stderr, "topo-report: no usable input: %d of %d input file%s could not be read "
                "(%s: %s)\n", unreadable, r.nsrc, r.nsrc == 1 ? "" : "s", bad->path,
                unreadable_reason(bad->unreadable));
      else
        fprintf(stderr, "topo-report: no usable input: none of the %d input%s holds a topo trace or "
                "a Kineto/Chrome trace with CUDA GPU events (see the warnings above)\n", a.npaths,
                a.npaths == 1 ? "" : "s");
      rp_report_free(&r);
      return 1;
    }
    if (unreadable) {
      fprintf(stderr, "topo-report: %d of %d input file%s could not be read (%s: %s); the report "
              "covers the others\n", unreadable, r.nsrc, r.nsrc == 1 ? "" : "s", bad->path,
              unreadable_reason(bad->unreadable));
      rc = 1;
    }
    if (missing) {
      fprintf(stderr, "topo-report: %d input%s missing; the report covers the others\n", missing,
              missing == 1 ? "" : "s");
      rc = 1;
    }
    if (a.top) rp_gpu_mark_top(&r, a.top, 0);
    if (a.html && busbw_reference(&r, a.profile, a.gpu)) rc = 1;
    if (!strcmp(cmd, "fit")) {
      rc = rp_fit(&r, a.gpu, a.base, a.output, stdout) == TOPO_OK ? 0 : 1;
    } else {
      FILE *out = open_out(a.output);
      if (!out) {
        rp_report_free(&r);
        return 1;
      }
      if (a.json) rp_render_json(&r, out);
      else if (a.csv) rp_render_csv(&r, out);
      else rp_render_text(&r, out);
      if (close_out(out)) rc = 1;
      if (a.html) {
        if (rp_render_html(&r, a.html) != TOPO_OK) rc = 1;
        else if (!a.quiet && !a.json && !a.csv && out == stdout) fprintf(stdout, "\nwrote %s\n", a.html);
      }
    }
    rp_report_free(&r);
  }
  return rc;
}
