// SPDX-License-Identifier: Apache-2.0
// topo-report's command line: reads the subcommand and its options (getopt_long through
// common/cli.h, git style: "topo-report [report|dump|export|diff|fit] [options] PATH..."), runs the
// analysis and picks the renderer. Exit codes (common/cli.h): 0 done, 1 nothing usable or an input
// or output failed (one "error:" line), 2 misuse (one line), an option the subcommand cannot
// honour included.
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "env.h"
#include "kernel_stats.h"
#include "log.h"
#include "profile.h"
#include "report.h"
#include "report_analysis.h"
#include "report_fit.h"
#include "report_render.h"
#include "step_learn.h"
#include "topo_version.h"

static const char usage[] =
    "usage: topo-report [report] [options] TRACE_OR_DIR...  report on traces of all ranks\n"
    "       topo-report dump TRACE                      print a binary trace as JSON lines\n"
    "       topo-report export --chrome OUT TRACE_OR_DIR...  Perfetto/Chrome trace JSON\n"
    "       topo-report diff [options] A B              two runs side by side (files or dirs)\n"
    "       topo-report fit [--gpu NAME] [--base PROFILE] -o PROFILE TRACE_OR_DIR...\n"
    "                                                   fit a tuner profile\n"
    "\n"
    "Inputs: binary traces of libtopo-profiler.so (one per communicator and rank), PyTorch\n"
    "profiler (Kineto) or Chrome trace JSON, plain or gzip; directories are searched for *.trace,\n"
    "*.topo, *.bin, *.json and *.json.gz files. A Kineto trace alone is enough for the overlap\n"
    "figures. JSON that is no trace (topo-report's own export, other JSON) is skipped with one "
    "line.\n"
    "A directory whose PyTorch traces come from several runs (a TensorBoard log directory) gives\n"
    "its latest run, named on stderr and in the report.\n"
    "\n"
    "Options:\n"
    "  --json             the report as one JSON object (times in ns)\n"
    "  --csv DIR          every table as CSV, one file each: DIR/ranks.csv, collectives.csv,\n"
    "                     steps.csv (and temporal, kernels, streams, memcpy from Kineto traces)\n"
    "  --csv-table NAME   one of those tables as CSV on stdout (or -o FILE)\n"
    "  --wide             tables at their natural width (default: fitted to 100 columns)\n"
    "  --html FILE        also write a self-contained HTML page with SVG plots\n"
    "  -o, --output FILE  write the report (or profile) to FILE instead of stdout\n"
    "  --base PROFILE     fit: the profile refined; its terms stay where the traces have none\n"
    "  --window FROM,TO   analyse only [FROM, TO): Unix-epoch ns (CLOCK_REALTIME, the clock\n"
    "                     every input is aligned to); every figure is clipped to it\n"
    "  --from NS, --to NS the same, one end at a time\n"
    "  --reorder-window N intervals held to sort each rank's timeline (default 65536)\n"
    "  --profile FILE     a tuner profile (topo-calibrate): its measured link bandwidth is the\n"
    "                     busbw reference (the HTML plot's line, the next steps' check)\n"
    "  --gpu NAME         without --profile: the built-in link peak of H200, H100 or A100 is\n"
    "                     that reference (fit: the GPU the profile is for)\n"
    "  --top N            top kernels per rank and type in the kernel table (default 10,\n"
    "                     HTA's num_kernels; also cut at 80 % of the type's time, as HTA does)\n"
    "  --steps all|complete  the events counted: all (default), or per rank only its complete\n"
    "                     profiler steps (first ProfilerStep to the end of the one before the "
    "last)\n"
    "  --step-period auto|off|P  steps from the period of the collectives when no Kineto\n"
    "                     trace or step mark gives them (default auto); P forces P collectives a\n"
    "                     step\n"
    "  --all-steps        one row per step however many there are (memory and --json follow\n"
    "                     the steps); default: past 4096 steps a rank, rows of 2, 4, ... steps\n"
    "  --run N            a directory holding several runs: read the Nth (1 = oldest)\n"
    "  --all-runs         a directory holding several runs: read them all as one\n"
    "  --progress / --no-progress   progress on stderr (default: on a terminal or inputs > 256 "
    "MB)\n"
    "  -q, --quiet        no warnings about damaged inputs\n"
    "  -v, --verbose      informational messages\n"
    "  -h, --help         this text;  --version  the version\n"
    "\n"
    "Subcommands take the options that apply to them: dump -o, --json; export --chrome,\n"
    "--progress; diff -o, --wide and the analysis options (--window, --from, --to, --steps,\n"
    "--step-period, --run, --all-runs, --reorder-window, --progress); fit -o, --gpu, --base and\n"
    "the analysis options. Another option is refused (exit 2). Exit status: 0 done, 1 an input\n"
    "was unusable or an output failed (one line says which), 2 misuse.\n"
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

typedef struct args {
  const char *cmd; /* "report", "dump", "export", "diff" or "fit" */
  int json, quiet, verbose, wide;
  const char *csv_dir, *csv_table;
  int progress;
  const char *html, *output, *gpu, *chrome, *base, *profile;
  size_t reorder;
  int steps, step_window;
  int top;
  int run, all_runs, all_steps;
  int have_from, have_to;
  int64_t from, to;
  const char *const *paths; /* the positional arguments, in argv */
  int npaths;
} args;

/* getopt_long values of the long-only options (the short ones are their letter). */
enum {
  OPT_JSON = 256,
  OPT_CSV,
  OPT_CSV_TABLE,
  OPT_WIDE,
  OPT_PROGRESS,
  OPT_NO_PROGRESS,
  OPT_ALL_RUNS,
  OPT_ALL_STEPS,
  OPT_RUN,
  OPT_HTML,
  OPT_GPU,
  OPT_BASE,
  OPT_PROFILE,
  OPT_CHROME,
  OPT_REORDER,
  OPT_TOP,
  OPT_STEPS,
  OPT_STEP_PERIOD,
  OPT_WINDOW,
  OPT_FROM,
  OPT_TO,
  OPT_VERSION
};

static const struct option long_opts[] = {{"json", no_argument, 0, OPT_JSON},
                                          {"csv", required_argument, 0, OPT_CSV},
                                          {"csv-table", required_argument, 0, OPT_CSV_TABLE},
                                          {"wide", no_argument, 0, OPT_WIDE},
                                          {"quiet", no_argument, 0, 'q'},
                                          {"verbose", no_argument, 0, 'v'},
                                          {"progress", no_argument, 0, OPT_PROGRESS},
                                          {"no-progress", no_argument, 0, OPT_NO_PROGRESS},
                                          {"all-runs", no_argument, 0, OPT_ALL_RUNS},
                                          {"all-steps", no_argument, 0, OPT_ALL_STEPS},
                                          {"run", required_argument, 0, OPT_RUN},
                                          {"html", required_argument, 0, OPT_HTML},
                                          {"output", required_argument, 0, 'o'},
                                          {"gpu", required_argument, 0, OPT_GPU},
                                          {"base", required_argument, 0, OPT_BASE},
                                          {"profile", required_argument, 0, OPT_PROFILE},
                                          {"chrome", required_argument, 0, OPT_CHROME},
                                          {"reorder-window", required_argument, 0, OPT_REORDER},
                                          {"top", required_argument, 0, OPT_TOP},
                                          {"steps", required_argument, 0, OPT_STEPS},
                                          {"step-period", required_argument, 0, OPT_STEP_PERIOD},
                                          {"window", required_argument, 0, OPT_WINDOW},
                                          {"from", required_argument, 0, OPT_FROM},
                                          {"to", required_argument, 0, OPT_TO},
                                          {"help", no_argument, 0, 'h'},
                                          {"version", no_argument, 0, OPT_VERSION},
                                          {0, 0, 0, 0}};

/* The subcommands (bits) and the options each honours; any other is refused as misuse. */
enum { SUB_REPORT = 1, SUB_DUMP = 2, SUB_EXPORT = 4, SUB_DIFF = 8, SUB_FIT = 16, SUB_ALL = 31 };
#define SUB_ANALYSIS (SUB_REPORT | SUB_DIFF | SUB_FIT) /* rp_analyze's options */
static const struct {
  int id;
  unsigned where;
} option_where[] = {{OPT_JSON, SUB_REPORT | SUB_DUMP},
                    {OPT_CSV, SUB_REPORT},
                    {OPT_CSV_TABLE, SUB_REPORT},
                    {OPT_WIDE, SUB_REPORT | SUB_DIFF},
                    {OPT_HTML, SUB_REPORT},
                    {'o', SUB_REPORT | SUB_DUMP | SUB_DIFF | SUB_FIT},
                    {OPT_GPU, SUB_REPORT | SUB_FIT},
                    {OPT_BASE, SUB_FIT},
                    {OPT_PROFILE, SUB_REPORT},
                    {OPT_CHROME, SUB_EXPORT},
                    {OPT_TOP, SUB_REPORT},
                    {OPT_PROGRESS, SUB_ANALYSIS | SUB_EXPORT},
                    {OPT_NO_PROGRESS, SUB_ANALYSIS | SUB_EXPORT},
                    {OPT_REORDER, SUB_ANALYSIS},
                    {OPT_STEPS, SUB_ANALYSIS},
                    {OPT_STEP_PERIOD, SUB_ANALYSIS},
                    {OPT_WINDOW, SUB_ANALYSIS},
                    {OPT_FROM, SUB_ANALYSIS},
                    {OPT_TO, SUB_ANALYSIS},
                    {OPT_RUN, SUB_ANALYSIS},
                    {OPT_ALL_RUNS, SUB_ANALYSIS},
                    {OPT_ALL_STEPS, SUB_ANALYSIS}};

/* 1 when subcommand `sub` honours option `id` (-q, -v, --help, --version: every one). */
static int honours(unsigned sub, int id) {
  for (size_t i = 0; i < sizeof option_where / sizeof *option_where; i++)
    if (option_where[i].id == id) return (option_where[i].where & sub) != 0;
  return 1;
}

/* ':' first: a missing value is reported as ':' (topo_cli_misuse words both cases). */
static const char short_opts[] = ":o:qvh";

/* A time in Unix-epoch ns (a decimal integer, optionally signed); 1 when valid. */
static int parse_ns(const char *t, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(t, &end, 10);
  if (end == t || *end || errno) return 0;
  *out = (int64_t)v;
  return 1;
}

/* A decimal integer in [lo, hi]; 1 when valid. */
static int parse_count(const char *t, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(t, &end, 10);
  if (end == t || *end || errno || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

/* A --step-period value: auto (0), off (-1) or a period P; 1 when valid. */
static int step_period(const char *v, int *out) {
  long p;
  if (!strcmp(v, "auto")) *out = 0;
  else if (!strcmp(v, "off")) *out = -1;
  else if (parse_count(v, 1, TOPO_STEP_MAX_PERIOD_LIMIT, &p)) *out = (int)p;
  else return 0;
  return 1;
}

/* --steps all|complete: the events counted. The detection values (auto, off, a period) are
 * --step-period's, still taken here with a note. 0 or an exit code. */
static int apply_steps(args *a, const char *v) {
  if (!strcmp(v, "all")) a->step_window = RP_WINDOW_ALL;
  else if (!strcmp(v, "complete")) a->step_window = RP_WINDOW_COMPLETE_STEPS;
  else if (step_period(v, &a->steps))
    TOPO_WARN("--steps %s is spelt --step-period %s now; --steps takes all or complete", v, v);
  else return topo_cli_usage("--steps wants all or complete, not '%s'", v);
  return 0;
}

/* --window FROM,TO. 0 or an exit code. */
static int apply_window(args *a, const char *v) {
  const char *comma = strchr(v, ',');
  char lo[32];
  if (!comma || (size_t)(comma - v) >= sizeof lo)
    return topo_cli_usage("--window wants FROM,TO in Unix-epoch ns, not '%s'", v);
  memcpy(lo, v, (size_t)(comma - v));
  lo[comma - v] = 0;
  if (!parse_ns(lo, &a->from) || !parse_ns(comma + 1, &a->to))
    return topo_cli_usage("--window wants FROM,TO in Unix-epoch ns, not '%s'", v);
  a->have_from = a->have_to = 1;
  return 0;
}

/* One option getopt_long returned (`id`) with its value `v`. 0 or an exit code. */
static int apply_option(args *a, int id, const char *v) {
  long n;
  switch (id) {
  case OPT_JSON: a->json = 1; return 0;
  case OPT_CSV: a->csv_dir = v; return 0;
  case OPT_CSV_TABLE:
    if (rp_csv_table_find(v) < 0)
      return topo_cli_usage(
          "--csv-table wants ranks, collectives, steps, temporal, kernels, "
          "streams or memcpy, not '%s'",
          v);
    a->csv_table = v;
    return 0;
  case OPT_WIDE: a->wide = 1; return 0;
  case 'q': a->quiet = 1; return 0;
  case 'v': a->verbose = 1; return 0;
  case OPT_PROGRESS: a->progress = 1; return 0;
  case OPT_NO_PROGRESS: a->progress = 0; return 0;
  case OPT_ALL_RUNS: a->all_runs = 1; return 0;
  case OPT_ALL_STEPS: a->all_steps = 1; return 0;
  case OPT_HTML: a->html = v; return 0;
  case 'o': a->output = v; return 0;
  case OPT_GPU: a->gpu = v; return 0;
  case OPT_BASE: a->base = v; return 0;
  case OPT_PROFILE: a->profile = v; return 0;
  case OPT_CHROME: a->chrome = v; return 0;
  case OPT_RUN:
    if (!parse_count(v, 1, 1000000, &n))
      return topo_cli_usage("--run wants a run number (1 = the oldest), not '%s'", v);
    a->run = (int)n;
    return 0;
  case OPT_REORDER:
    if (!parse_count(v, 1, 1L << 26, &n))
      return topo_cli_usage("--reorder-window wants 1..67108864, not '%s'", v);
    a->reorder = (size_t)n;
    return 0;
  case OPT_TOP:
    if (!parse_count(v, 1, 100000, &n)) return topo_cli_usage("--top wants 1..100000, not '%s'", v);
    a->top = (int)n;
    return 0;
  case OPT_STEPS: return apply_steps(a, v);
  case OPT_STEP_PERIOD:
    if (!step_period(v, &a->steps))
      return topo_cli_usage(
          "--step-period wants auto, off or a period of 1..%d collectives, not '%s'",
          TOPO_STEP_MAX_PERIOD_LIMIT, v);
    return 0;
  case OPT_WINDOW: return apply_window(a, v);
  case OPT_FROM:
    if (!parse_ns(v, &a->from)) return topo_cli_usage("--from wants Unix-epoch ns, not '%s'", v);
    a->have_from = 1;
    return 0;
  case OPT_TO:
    if (!parse_ns(v, &a->to)) return topo_cli_usage("--to wants Unix-epoch ns, not '%s'", v);
    a->have_to = 1;
    return 0;
  default: return TOPO_CLI_MISUSE; /* not reached: parse() words '?' and ':' */
  }
}

/* Options and positional paths of argv (argv[0] the program or the subcommand `sub`, a SUB_*
 * bit). -1 to go on, else the exit code (--help, --version, misuse). */
static int parse(int argc, char **argv, unsigned sub, args *a) {
  a->progress = -1;
  topo_cli_reset();
  int c;
  while ((c = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
    if (c == 'h') {
      fputs(usage, stdout);
      return TOPO_CLI_DONE;
    }
    if (c == OPT_VERSION) {
      printf("topo-report %s\n", TOPO_VERSION);
      return TOPO_CLI_DONE;
    }
    if (c == '?' || c == ':') return topo_cli_getopt_error(c, argv, long_opts);
    if (!honours(sub, c))
      return topo_cli_usage("%s takes no --%s", a->cmd, topo_cli_option_name(long_opts, c));
    int rc = apply_option(a, c, optarg);
    if (rc) return rc;
  }
  a->paths = (const char *const *)argv + optind;
  a->npaths = argc - optind;
  if (a->run && a->all_runs) return topo_cli_usage("--run and --all-runs exclude each other");
  if (a->have_from && a->have_to && a->to <= a->from)
    return topo_cli_usage("the window's end (%lld) is not after its start (%lld)", (long long)a->to,
                          (long long)a->from);
  if ((a->csv_dir != NULL) + (a->csv_table != NULL) + a->json > 1)
    return topo_cli_usage("--json, --csv and --csv-table exclude each other");
  if (a->csv_dir && a->output)
    return topo_cli_usage("--csv DIR writes its own files: no -o with it");
  return -1;
}

/* The analysis options the arguments ask for. */
static rp_options analysis_options(const args *a) {
  rp_options opt = {.reorder_window = a->reorder ? a->reorder : 65536,
                    .progress = a->progress,
                    .quiet = a->quiet,
                    .steps = a->steps,
                    .step_window = a->step_window,
                    .run = a->run,
                    .all_runs = a->all_runs,
                    .all_steps = a->all_steps};
  if (a->have_from || a->have_to) {
    opt.window = 1;
    opt.from = a->have_from ? a->from : INT64_MIN;
    opt.to = a->have_to ? a->to : INT64_MAX;
  }
  return opt;
}

static FILE *open_out(const char *path) {
  if (!path || !strcmp(path, "-")) return stdout;
  FILE *f = fopen(path, "w");
  if (!f) topo_cli_error("cannot write %s: %s", path, strerror(errno));
  return f;
}

static int close_out(FILE *f) {
  if (f == stdout) return fflush(f) == 0 ? 0 : 1;
  return fclose(f) == 0 ? 0 : 1;
}

/* The busbw reference (the HTML plot's line, the next steps' check): the link bandwidth of `profile` (measured by
 * topo-calibrate, or the built-in figure it fell back to), else the built-in link peak of `gpu`;
 * NVLink on one host, the network across hosts. 1 when the profile given cannot be used. */
static int busbw_reference(rp_report *r, const char *profile, const char *gpu) {
  if (!profile && !gpu) return 0;
  int hosts = 1; /* 2: a rank on another host than the first rank's */
  for (int i = 1; i < r->nranks && hosts == 1; i++)
    hosts += strcmp(r->ranks[i].host, r->ranks[0].host) != 0;
  int cls = hosts > 1 ? TOPO_LINK_NET : TOPO_LINK_NVLINK;
  topo_profile p;
  memset(&p, 0, sizeof p);
  topo_profile_key want = {"", 0, 0, 0};
  if (gpu) snprintf(want.gpu, sizeof want.gpu, "%s", gpu);
  topo_cli_hold(); /* the loader's warnings: one error line when the profile is unusable */
  topo_status st = profile ? topo_profile_load(profile, &want, &p) : topo_profile_builtin(gpu, &p);
  int bad = profile ? st != TOPO_OK : st == TOPO_ERR_INVALID;
  if (bad) {
    topo_cli_error_held(
        "%s: %s; no busbw reference line", profile ? profile : gpu,
        profile ? "no usable profile section" : "unknown GPU model (H200, H100, A100)");
  } else {
    topo_cli_release(-1);
    r->ref_busbw = p.link[cls].bw_gbs;
    snprintf(r->ref_label, sizeof r->ref_label, "%s %s busbw, %s",
             profile ? "calibrated" : "built-in peak", cls == TOPO_LINK_NET ? "network" : "NVLink",
             profile ? profile : p.source);
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

/* Inputs that do not exist: an error even beside good ones (the report covers the rest).
 * *first = the first of them. */
static int count_missing(const char *const *paths, int npaths, const char **first) {
  int missing = 0;
  for (int i = 0; i < npaths; i++) {
    struct stat sb;
    if (stat(paths[i], &sb) != 0 && !missing++) *first = paths[i];
  }
  return missing;
}

/* When no input of paths exists: one error line naming the first (the warnings held say the
 * same), TOPO_CLI_FAILED; else 0. */
static int none_exist(const char *label, const char *const *paths, int npaths) {
  const char *gone = NULL;
  if (count_missing(paths, npaths, &gone) < npaths) return 0;
  topo_log_release(0);
  return topo_cli_error("%sno usable input: %s does not exist", label, gone);
}

/* 1 when the analysis window of `a` lies outside all of r's data: no rank was active in it. */
static int window_misses(const args *a, const rp_report *r, int64_t *first, int64_t *last) {
  if (!a->have_from && !a->have_to) return 0;
  int64_t from = a->have_from ? a->from : INT64_MIN, to = a->have_to ? a->to : INT64_MAX;
  *first = INT64_MAX;
  *last = INT64_MIN;
  int hit = 0;
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    if (k->ext_first > k->ext_last) continue; /* no activity at all */
    if (k->ext_first < *first) *first = k->ext_first;
    if (k->ext_last > *last) *last = k->ext_last;
    hit |= k->ext_first < to && k->ext_last >= from;
  }
  return !hit && *first <= *last;
}

/* Whether the analysis of `label`'s inputs (r) gave anything to report. Nothing usable (no
 * rank, or a window outside all data): one error line, TOPO_CLI_FAILED. Some input lost (missing
 * or unreadable) beside usable ones: the held warnings, one error line, TOPO_CLI_FAILED, and
 * *partial set: the caller still writes what it has. Else the held warnings are released and 0
 * returned. `label` is "" or "A: " (diff). */
static int judge_inputs(const char *label, const char *const *paths, int npaths, const rp_report *r,
                        int *partial) {
  const char *gone = NULL;
  int missing = count_missing(paths, npaths, &gone);
  const rp_source *bad = NULL;
  int unreadable = count_unreadable(r, &bad);
  *partial = 0;
  if (r->nranks == 0) {
    if (none_exist(label, paths, npaths)) return TOPO_CLI_FAILED;
    if (unreadable)
      return topo_cli_error_held(
          "%sno usable input: %d of %d input file%s could not be read "
          "(%s: %s)",
          label, unreadable, r->nsrc, r->nsrc == 1 ? "" : "s", bad->path,
          unreadable_reason(bad->unreadable));
    return topo_cli_error_held(
        "%sno usable input: none of the %d input%s holds a topo trace or a "
        "Kineto/Chrome trace with CUDA GPU events",
        label, npaths, npaths == 1 ? "" : "s");
  }
  char what[768] = "";
  size_t n = 0;
  if (missing)
    n += (size_t)snprintf(what, sizeof what, "%d input%s missing (%s)", missing,
                          missing == 1 ? "" : "s", gone);
  if (unreadable && n < sizeof what)
    snprintf(what + n, sizeof what - n, "%s%d of %d input file%s could not be read (%s: %s)",
             n ? ", " : "", unreadable, r->nsrc, r->nsrc == 1 ? "" : "s", bad->path,
             unreadable_reason(bad->unreadable));
  if (!what[0]) {
    topo_cli_release(-1);
    return 0;
  }
  *partial = 1;
  char first[512];
  int nheld = topo_log_held(0, first, sizeof first);
  if (nheld == 1 && missing && strstr(first, gone)) topo_log_release(0); /* said below */
  if (nheld > 1) topo_cli_release(-1);
  if (nheld != 1 || (missing && strstr(first, gone)))
    return topo_cli_error("%s%s; the output covers the others", label, what);
  return topo_cli_error_held("%s%s; the output covers the others", label, what);
}

/* The window check of judge_inputs' callers: one error line and TOPO_CLI_FAILED when the window
 * holds none of r's data, else 0. */
static int judge_window(const char *label, const args *a, const rp_report *r) {
  int64_t first, last;
  if (!window_misses(a, r, &first, &last)) return 0;
  char lo[24] = "the start", hi[24] = "the end";
  if (a->have_from) snprintf(lo, sizeof lo, "%lld", (long long)a->from);
  if (a->have_to) snprintf(hi, sizeof hi, "%lld", (long long)a->to);
  return topo_cli_error(
      "%sthe window [%s, %s) holds none of the data, which spans [%lld, %lld] "
      "(Unix-epoch ns)",
      label, lo, hi, (long long)first, (long long)last);
}

/* topo-report dump TRACE */
static int cmd_dump(const args *a) {
  if (a->npaths != 1) return topo_cli_usage("dump wants exactly one trace file");
  FILE *out = open_out(a->output);
  if (!out) return TOPO_CLI_FAILED;
  topo_cli_hold();
  int rc = rp_dump(a->paths[0], out) == TOPO_OK ? TOPO_CLI_DONE : TOPO_CLI_FAILED;
  if (close_out(out)) rc = topo_cli_error("cannot write %s", a->output ? a->output : "stdout");
  if (rc) return topo_cli_error_held("nothing to dump");
  topo_cli_release(-1);
  return rc;
}

/* topo-report export --chrome OUT TRACE_OR_DIR... */
static int cmd_export(const args *a) {
  if (!a->chrome) return topo_cli_usage("export needs --chrome FILE");
  if (!a->npaths) return topo_cli_usage("export needs traces");
  const char *gone = NULL;
  int missing = count_missing(a->paths, a->npaths, &gone);
  rp_options opt = analysis_options(a);
  topo_cli_hold();
  topo_status st = rp_export_chrome(a->paths, a->npaths, &opt, a->chrome);
  if (st == TOPO_ERR_PARSE && none_exist("", a->paths, a->npaths)) return TOPO_CLI_FAILED;
  if (st == TOPO_ERR_PARSE)
    return topo_cli_error_held("no usable input: none of the %d input%s holds a topo trace",
                               a->npaths, a->npaths == 1 ? "" : "s");
  if (st != TOPO_OK) return topo_cli_error_held("the export to %s failed", a->chrome);
  if (missing) {
    if (topo_log_held(0, NULL, 0) > 1) topo_cli_release(-1);
    else topo_log_release(0); /* the missing input's own warning, said below */
    return topo_cli_error("%d input%s missing (%s); the export covers the others", missing,
                          missing == 1 ? "" : "s", gone);
  }
  topo_cli_release(-1);
  return TOPO_CLI_DONE;
}

/* topo-report diff A B */
static int cmd_diff(const args *a) {
  if (a->npaths != 2) return topo_cli_usage("diff wants two runs (files or directories)");
  rp_options opt = analysis_options(a);
  rp_report r[2];
  static const char *const label[2] = {"A: ", "B: "};
  int rc = TOPO_CLI_DONE, analysed = 0, partial = 0;
  for (int i = 0; i < 2 && rc == TOPO_CLI_DONE; i++) {
    topo_cli_hold();
    topo_status st = rp_analyze(&a->paths[i], 1, &opt, &r[i]);
    analysed++;
    int part = 0;
    if (st != TOPO_OK && (rc = none_exist(label[i], &a->paths[i], 1))) {
    } else if (st != TOPO_OK)
      rc = st == TOPO_ERR_INVALID ? topo_cli_error_held("%sno usable input", label[i])
                                  : topo_cli_error_held("%s%s", label[i], topo_status_str(st));
    else if ((rc = judge_inputs(label[i], &a->paths[i], 1, &r[i], &part)) && part) rc = 0;
    if (!rc) rc = judge_window(label[i], a, &r[i]);
    partial |= part;
  }
  if (rc == TOPO_CLI_DONE) {
    FILE *out = open_out(a->output);
    r[0].text_width = r[1].text_width = a->wide ? -1 : 0;
    if (!out) rc = TOPO_CLI_FAILED;
    else {
      rp_render_diff(&r[0], &r[1], a->paths[0], a->paths[1], out);
      if (close_out(out)) rc = topo_cli_error("cannot write %s", a->output ? a->output : "stdout");
    }
  }
  for (int i = 0; i < analysed; i++) rp_report_free(&r[i]);
  return rc ? rc : partial ? TOPO_CLI_FAILED : TOPO_CLI_DONE;
}

/* --csv DIR: every table that applies to r, one file each (DIR created when missing); one line
 * per file on stdout. 0 or 1. */
static int write_csv_dir(const char *dir, const rp_report *r) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return topo_cli_error("cannot create %s: %s", dir, strerror(errno));
  for (int t = 0; t < RP_CSV_TABLES; t++) {
    if (!rp_csv_table_applies(r, t)) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.csv", dir, rp_csv_table_name(t));
    FILE *f = fopen(path, "w");
    if (!f) return topo_cli_error("cannot write %s: %s", path, strerror(errno));
    rp_render_csv_table(r, t, f);
    if (fclose(f) != 0) return topo_cli_error("cannot write %s", path);
    printf("wrote %s\n", path);
  }
  return TOPO_CLI_DONE;
}

/* The report in the format asked for (text, JSON or a CSV table or tables, and the HTML page).
 * 0 or 1. */
static int write_report(const args *a, const rp_report *r) {
  int rc;
  FILE *out = NULL;
  if (a->csv_dir) {
    rc = write_csv_dir(a->csv_dir, r);
  } else {
    if (!(out = open_out(a->output))) return TOPO_CLI_FAILED;
    if (a->json) rp_render_json(r, out);
    else if (a->csv_table) {
      int t = rp_csv_table_find(a->csv_table);
      if (!rp_csv_table_applies(r, t) && !a->quiet)
        TOPO_WARN("--csv-table %s: no rows: it needs a Kineto trace", a->csv_table);
      rp_render_csv_table(r, t, out);
    } else rp_render_text(r, out);
    rc = close_out(out) ? topo_cli_error("cannot write %s", a->output ? a->output : "stdout")
                        : TOPO_CLI_DONE;
  }
  if (a->html) {
    if (rp_render_html(r, a->html) != TOPO_OK) rc = topo_cli_error("cannot write %s", a->html);
    else if (!a->quiet && !a->json && !a->csv_table && out == stdout)
      fprintf(stdout, "\nwrote %s\n", a->html);
  }
  return rc;
}

/* topo-report [report] ... and topo-report fit ...: one analysis of every input, then the report
 * or the fitted profile. */
static int cmd_report(const args *a) {
  int fit = !strcmp(a->cmd, "fit");
  if (!a->npaths && a->csv_dir)
    return topo_cli_usage(
        "no traces given (--csv takes the directory to write the tables to: "
        "--csv DIR TRACES...)");
  if (!a->npaths) return topo_cli_usage("no traces given");
  if (fit && !a->output) return topo_cli_usage("fit needs -o PROFILE");
  rp_options opt = analysis_options(a);
  rp_report r;
  topo_cli_hold();
  topo_status st = rp_analyze(a->paths, a->npaths, &opt, &r);
  if (st != TOPO_OK) {
    rp_report_free(&r);
    if (none_exist("", a->paths, a->npaths)) return TOPO_CLI_FAILED;
    return st == TOPO_ERR_INVALID ? topo_cli_error_held("no usable input")
                                  : topo_cli_error_held("%s", topo_status_str(st));
  }
  int partial = 0;
  int rc = judge_inputs("", a->paths, a->npaths, &r, &partial);
  int usable = !rc || partial;
  if (usable && judge_window("", a, &r)) usable = 0, rc = TOPO_CLI_FAILED;
  if (usable) {
    int failed = 0;
    if (a->top) rp_gpu_mark_top(&r, a->top, 0);
    r.text_width = a->wide ? -1 : 0;
    if (!fit && busbw_reference(&r, a->profile, a->gpu)) failed = 1;
    if (fit) failed |= rp_fit(&r, a->gpu, a->base, a->output, stdout) != TOPO_OK;
    else failed |= write_report(a, &r) != 0;
    if (failed) rc = TOPO_CLI_FAILED;
  }
  rp_report_free(&r);
  return rc;
}

static const struct subcommand {
  const char *name;
  unsigned bit;
  int (*run)(const args *a);
} subcommands[] = {{"report", SUB_REPORT, cmd_report},
                   {"dump", SUB_DUMP, cmd_dump},
                   {"export", SUB_EXPORT, cmd_export},
                   {"diff", SUB_DIFF, cmd_diff},
                   {"fit", SUB_FIT, cmd_report}};

int main(int argc, char **argv) {
  topo_cli_init("topo-report", 0);
  topo_env_check_unknown();
  if (argc < 2) return topo_cli_usage("no traces given: topo-report TRACE_OR_DIR...");
  if (!strcmp(argv[1], "help")) {
    fputs(usage, stdout);
    return TOPO_CLI_DONE;
  }
  args a = {.cmd = "report"};
  const struct subcommand *sub = &subcommands[0];
  int from = 0; /* argv[from] is what getopt_long takes as the program name */
  for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++)
    if (!strcmp(argv[1], subcommands[i].name)) sub = &subcommands[i], from = 1;
  a.cmd = sub->name;
  int rc = parse(argc - from, argv + from, sub->bit, &a);
  if (rc >= 0) return rc;
  topo_cli_init("topo-report", a.verbose);
  return sub->run(&a);
}
