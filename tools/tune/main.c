// SPDX-License-Identifier: Apache-2.0
// topo-tune: print the decision map of libtopo-tuner.so for a profile (--profile FILE) or a
// built-in GPU model (--gpu H200), nRanks and nNodes: per collective and size (8 B to 8 GB,
// x2 steps), the algorithm, protocol, channels, predicted time and bus bandwidth topo picks,
// beside what NCCL 2.28's own model (tuner-plugin/nccl_model.h) would pick. Text or --json.
// The choice is made exactly as in the plugin: NCCL's cost table (which entries it allows)
// edited by the decision table, then NCCL's selection. Exit codes (common/cli.h): 0 the map,
// 1 the profile is unreadable or no profile (one line), 2 misuse.
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "alloc.h"
#include "constants.h"
#include "env.h"
#include "file.h"
#include "log.h"
#include "model.h"
#include "nccl_model.h"
#include "profile.h"
#include "table.h"
#include "tuner_core.h"
#include "topo_version.h"

static const char *prog = "topo-tune";

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: topo-tune (--gpu MODEL | --profile FILE) --nranks N [options]\n"
      "\n"
      "Print libtopo-tuner's choice per collective and message size beside NCCL 2.28's own.\n"
      "\n"
      "  --gpu MODEL        built-in defaults: H200, H100 or A100; another model (or none and no\n"
      "                     --profile) gets the generic defaults, with a warning\n"
      "  --profile FILE     a tuner profile (docs/profile-format.md); --gpu picks its section\n"
      "  --nranks N         ranks in the communicator (required)\n"
      "  --nnodes N         nodes (default 1); ranks per node = nranks / nnodes\n"
      "  --nvls 0|1         NVLink SHARP available (default: the profile's, else 0)\n"
      "  --coll NAME        only this collective (allreduce, allgather, reducescatter,\n"
      "                     broadcast, reduce); repeatable\n"
      "  --min BYTES        smallest size (default 8; suffixes K, M, G)\n"
      "  --max BYTES        largest size (default 8G)\n"
      "  --pipe N           numPipeOps (default 1)\n"
      "  --json             JSON instead of text\n"
      "  --verbose          under each row, the profile's measured points that make its\n"
      "                     evidence (text); every warning about the profile's lines\n"
      "  --version, --help\n"
      "\n"
      "Examples:\n"
      "  topo-tune --gpu H200 --nranks 8                 one 8-GPU NVLink node\n"
      "  topo-tune --gpu H200 --nranks 8 --nvls 1 --coll allreduce\n"
      "  topo-tune --profile my.profile --nranks 16 --nnodes 2 --json > map.json\n");
}

/* One clear line on misuse, exit status 2. */
static int die(const char *what, const char *arg) {
  if (arg) return topo_cli_usage("%s '%s'", what, arg);
  return topo_cli_usage("%s", what);
}

static int parse_size(const char *s, unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || errno) return -1;
  int shift = 0;
  switch (*end) {
  case 'k':
  case 'K':
    shift = 10;
    end++;
    break;
  case 'm':
  case 'M':
    shift = 20;
    end++;
    break;
  case 'g':
  case 'G':
    shift = 30;
    end++;
    break;
  }
  if (v > (~0ull >> shift)) return -1; /* the unit would overflow: rejected, never wrapped */
  v <<= shift;
  if (*end == 'B' || *end == 'b') end++;
  if (*end) return -1;
  *out = v;
  return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

typedef struct pick {
  int algo, proto, nch;
  double time_us;
} pick;

static const char *human(unsigned long long b, char *buf, size_t len) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) snprintf(buf, len, "%lluG", b >> 30);
  else if (b >= (1ull << 20) && b % (1ull << 20) == 0) snprintf(buf, len, "%lluM", b >> 20);
  else if (b >= 1024 && b % 1024 == 0) snprintf(buf, len, "%lluK", b >> 10);
  else snprintf(buf, len, "%llu", b);
  return buf;
}

/* A size for prose: exact ("16M") where it is a whole unit, else to 3 digits ("24.7M"). */
static const char *approx(unsigned long long b, char *buf, size_t len) {
  unsigned long long unit = b >= (1ull << 30) ? 1ull << 30 : b >= (1ull << 20) ? 1ull << 20 : 1024;
  if (b < 1024 || b % unit == 0) return human(b, buf, len);
  snprintf(buf, len, "%.3g%s", (double)b / (double)unit,
           unit == 1ull << 30   ? "G"
           : unit == 1ull << 20 ? "M"
                                : "K");
  return buf;
}

static int is_known_gpu(const char *gpu) {
  topo_profile p;
  return gpu && *gpu && strcasecmp(gpu, "generic") != 0 && topo_profile_builtin(gpu, &p) == TOPO_OK;
}

/* What the profile measured for one setting at one size, strongest first, from its `point` lines
 * (what the tuner decides on): a point within TUNE_SIZE_TOL of the size is measured (a trace's
 * mean bucket size is a few bytes off the power of two); points on both sides bracket it:
 * interpolated (the tuner interpolates between them); else the model alone (fitted terms or the
 * built-in link model), model-only. */
enum { EV_MEASURED, EV_INTERPOLATED, EV_MODEL };
static const char *const ev_names[] = {"measured", "interpolated", "model-only"};
#define TUNE_SIZE_TOL 0.05

static int evidence(const topo_profile *p, int coll, int algo, int proto, int nch,
                    unsigned long long bytes) {
  int n = 0, below = 0, above = 0;
  const topo_profile_point *pt = topo_profile_find_points(p, coll, algo, proto, nch, &n);
  double b = (double)bytes;
  for (int i = 0; i < n; i++) {
    double x = (double)pt[i].bytes;
    if (fabs(x - b) <= TUNE_SIZE_TOL * b) return EV_MEASURED;
    below |= x < b;
    above |= x > b;
  }
  return below && above ? EV_INTERPOLATED : EV_MODEL;
}

/* 1 when the profile's network link is the built-in figure of its GPU (nothing measured it). */
static int net_is_nominal(const topo_profile *p) {
  topo_profile b;
  topo_profile_builtin(is_known_gpu(p->key.gpu) ? p->key.gpu : "generic", &b);
  if (strncmp(p->source, "builtin:", 8) == 0) return 1;
  return p->link[TOPO_LINK_NET].bw_gbs == b.link[TOPO_LINK_NET].bw_gbs &&
         p->link[TOPO_LINK_NET].lat_us == b.link[TOPO_LINK_NET].lat_us;
}

/* A number for text ("n/a" when there is none) or JSON (null). */
static void text_num(char *buf, size_t len, int have, double v) {
  if (have) snprintf(buf, len, "%.2f", v);
  else snprintf(buf, len, "n/a");
}
static void json_num(char *buf, size_t len, int have, double v, int decimals) {
  if (have) snprintf(buf, len, "%.*f", decimals, v);
  else snprintf(buf, len, "null");
}

/* The command line. */
typedef struct tune_args {
  const char *gpu, *profile_path;
  int nranks, nnodes, nvls, json, verbose, pipe;
  int colls[NCCL_NUM_FUNCTIONS], ncolls;
  unsigned long long min_bytes, max_bytes;
} tune_args;

/* What the map is computed from: the profile, the model and decision table on it, NCCL's model
 * with its own constants (its pick) and with the constants the plugin would see. */
typedef struct tune_setup {
  topo_profile prof;
  const char *model_gpu; /* the GPU NCCL's model and the profile's base figures are for */
  int net_nominal;
  topo_model m;
  topo_table *table;
  topo_nccl_model nccl, seen;
} tune_setup;

/* One row of the map: topo's pick and NCCL's at one size. */
typedef struct tune_row {
  pick t;
  topo_nccl_choice nc;
  double prof_for_nccl, busbw, gain;
  int have_t, have_n;
  int ev_t, ev_n, ev; /* evidence of topo's pick, NCCL's, and the weaker of the two */
  int nominal;
} tune_row;

/* Parse argv into *a. Returns -1 to go on, else the exit code (--help, --version, misuse). */
static int parse_args(int argc, char **argv, tune_args *a) {
  static const struct option opts[] = {
      {"gpu", required_argument, 0, 'g'},    {"profile", required_argument, 0, 'p'},
      {"nranks", required_argument, 0, 'r'}, {"nnodes", required_argument, 0, 'n'},
      {"nvls", required_argument, 0, 'V'},   {"coll", required_argument, 0, 'c'},
      {"min", required_argument, 0, 'm'},    {"max", required_argument, 0, 'M'},
      {"pipe", required_argument, 0, 'P'},   {"json", no_argument, 0, 'j'},
      {"verbose", no_argument, 0, 'v'},      {"version", no_argument, 0, 'E'},
      {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
  *a = (tune_args){.nnodes = 1, .nvls = -1, .pipe = 1, .min_bytes = 8, .max_bytes = 8ull << 30};
  topo_cli_reset();
  int o;
  while ((o = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
    switch (o) {
    case 'g': a->gpu = optarg; break;
    case 'p': a->profile_path = optarg; break;
    case 'r':
      if (parse_int(optarg, 1, 1 << 20, &a->nranks)) return die("bad --nranks", optarg);
      break;
    case 'n':
      if (parse_int(optarg, 1, 1 << 20, &a->nnodes)) return die("bad --nnodes", optarg);
      break;
    case 'V':
      if (parse_int(optarg, 0, 1, &a->nvls)) return die("bad --nvls (0 or 1)", optarg);
      break;
    case 'P':
      if (parse_int(optarg, 1, 1 << 16, &a->pipe)) return die("bad --pipe", optarg);
      break;
    case 'c': {
      int c = topo_nccl_coll_from_name(optarg);
      if (c < 0) return die("unknown collective", optarg);
      if (a->ncolls < NCCL_NUM_FUNCTIONS) a->colls[a->ncolls++] = c;
      break;
    }
    case 'm':
      if (parse_size(optarg, &a->min_bytes)) return die("bad --min", optarg);
      break;
    case 'M':
      if (parse_size(optarg, &a->max_bytes)) return die("bad --max", optarg);
      break;
    case 'j': a->json = 1; break;
    case 'v': a->verbose = 1; break;
    case 'E': printf("topo-tune %s\n", TOPO_VERSION); return TOPO_CLI_DONE;
    case 'h': usage(stdout); return TOPO_CLI_DONE;
    default: return topo_cli_getopt_error(o, argv, opts);
    }
  }
  if (optind < argc) return die("unexpected argument", argv[optind]);
  if (!a->nranks) return die("--nranks is required", NULL);
  if (a->nnodes > a->nranks || a->nranks % a->nnodes)
    return die("--nnodes must divide --nranks", NULL);
  if (a->min_bytes < 1 || a->min_bytes > a->max_bytes)
    return die("--min must be >= 1 and <= --max", NULL);
  if (!a->ncolls)
    for (int c = NCCL_NUM_FUNCTIONS - 1; c >= 0; c--)
      a->colls[a->ncolls++] = c; /* AllReduce first */
  return -1;
}

/* The profile (--profile's best section, else the built-in set for --gpu, else the generic set)
 * and the GPU model NCCL's model runs for; warns when no model is known. A --profile that cannot
 * be read or is no profile at all: one error line, TOPO_CLI_FAILED; else 0. A profile without a
 * matching section falls back as the plugin does, with its warnings (at most 5 without
 * --verbose). */
static int load_profile(const tune_args *a, tune_setup *t) {
  topo_profile_key want = {.nranks = a->nranks, .nnodes = a->nnodes};
  snprintf(want.gpu, sizeof want.gpu, "%s", a->gpu ? a->gpu : "");
  int known = a->gpu && is_known_gpu(a->gpu);
  if (a->profile_path) {
    char *text, why[96];
    size_t len;
    if (topo_file_read(a->profile_path, (size_t)64 << 20, &text, &len, why, sizeof why) != TOPO_OK)
      return topo_cli_error("cannot read profile %s: %s", a->profile_path, why);
    if (!topo_profile_sniff(text, len)) {
      topo_free(text);
      return topo_cli_error(
          "%s is not a topo profile: it starts with neither 'topo-profile' nor "
          "'section' (docs/profile-format.md)",
          a->profile_path);
    }
    int sections = len >= 7 && !memcmp(text, "section", 7);
    for (size_t i = 0; i + 8 <= len && !sections; i++)
      sections = text[i] == '\n' && !memcmp(text + i + 1, "section", 7);
    if (!sections) {
      topo_free(text);
      return topo_cli_error(
          "%s holds no 'section' line: no profile to read (docs/profile-format.md)",
          a->profile_path);
    }
    topo_cli_hold();
    topo_status st = topo_profile_parse(text, len, a->profile_path, &want, &t->prof, NULL);
    topo_free(text);
    topo_cli_release(a->verbose ? -1 : 5);
    if (st == TOPO_ERR_NOMEM) return topo_cli_error("out of memory reading %s", a->profile_path);
    if (st != TOPO_OK && !known) { /* no section: the fallback is the generic set, not H200 */
      topo_profile_free(&t->prof);
      topo_profile_builtin("generic", &t->prof);
    }
  } else {
    topo_profile_builtin(known ? a->gpu : "generic", &t->prof);
  }
  /* The GPU NCCL's model and the profile's base figures are for: --gpu, else the section's. */
  t->model_gpu = known ? a->gpu : is_known_gpu(t->prof.key.gpu) ? t->prof.key.gpu : NULL;
  if (!t->model_gpu) {
    if (a->gpu)
      TOPO_WARN(
          "unknown GPU model '%s' (H200, H100, A100); using the generic defaults (NCCL's "
          "own figures, nothing measured; NCCL's model on an A100-class NVLink node)",
          a->gpu);
    else
      TOPO_WARN(
          "no GPU model given (--gpu H200, H100 or A100); using the generic defaults "
          "(NCCL's own figures, nothing measured; NCCL's model on an A100-class NVLink "
          "node)");
  }
  return 0;
}

/* topo's model and decision table on the profile; NCCL's model with its own constants and with
 * the ones the plugin would leave it. -1 when out of memory. */
static int build_models(const tune_args *a, tune_setup *t) {
  topo_model_init(&t->m, &t->prof, a->nranks, a->nnodes, 0);
  if (topo_table_build(&t->m, &t->table) != TOPO_OK) return -1;
  topo_nccl_system sys;
  const char *gpu = t->model_gpu ? t->model_gpu : "A100";
  topo_nccl_system_default(gpu, a->nranks, a->nnodes, a->nvls, &sys);
  topo_nccl_model_build(&sys, NULL, &t->nccl);
  /* What the plugin sees: on NCCL 2.28+ its init writes the profile's latencies and bandwidths
   * into NCCL's tuning constants first (when TOPO_TUNER_CONSTANTS=1), so NCCL's cost table (and
   * its pick, which the tuner keeps unless the evidence says otherwise) comes from those.
   * "NCCL 2.28 pick" stays NCCL's alone. */
  ncclTunerConstants_v5_t seen_constants;
  topo_nccl_constants_default(&seen_constants);
  if (topo_env_bool(TOPO_ENV_TUNER_CONSTANTS))
    topo_tuner_write_constants(&t->m, t->model_gpu ? t->model_gpu : "generic", &seen_constants);
  topo_nccl_model_build(&sys, &seen_constants, &t->seen);
  return 0;
}

/* The profile's time (us) for one setting at `b` bytes: its measured points where they cover b
 * (what the tuner's switches are decided on: topo_profile_points_at), else its model (fitted
 * terms or the link model). <= 0 when neither has one. */
static double profile_time(const tune_args *a, const tune_setup *t, int coll, int algo, int proto,
                           int nch, unsigned long long b) {
  int n = 0;
  double med, noise;
  const topo_profile_point *pt = topo_profile_find_points(&t->prof, coll, algo, proto, nch, &n);
  if (topo_profile_points_at(pt, n, (double)b, &med, &noise) && med > 0) return med;
  return topo_model_time(&t->m, coll, algo, proto, nch, (double)b, a->pipe, 0);
}

/* Both picks at `b` bytes, timed by the profile. 0 when NCCL has nothing usable there. */
static int compute_row(const tune_args *a, const tune_setup *t, int coll, unsigned long long b,
                       tune_row *r) {
  float cost[NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS];
  if (topo_nccl_model_fill(&t->nccl, coll, b, a->pipe, cost) <= 0) return 0;
  topo_nccl_model_pick(&t->nccl, coll, b, a->pipe, &r->nc);
  if (topo_nccl_model_fill(&t->seen, coll, b, a->pipe, cost) <= 0) return 0;
  r->t = (pick){-1, -1, 0, -1};
  int nch = topo_table_apply(t->table, coll, b, a->pipe, 0, cost, NCCL_NUM_ALGORITHMS,
                             NCCL_NUM_PROTOCOLS, &r->t.algo, &r->t.proto);
  if (nch < 0) { /* no prediction: NCCL's own */
    r->t.algo = r->nc.algo;
    r->t.proto = r->nc.proto;
    nch = 0;
  }
  r->t.nch = nch;
  r->t.time_us = profile_time(a, t, coll, r->t.algo, r->t.proto, nch, b);
  r->prof_for_nccl = profile_time(a, t, coll, r->nc.algo, r->nc.proto, 0, b);
  r->have_t = r->t.time_us > 0;
  r->have_n = r->prof_for_nccl > 0;
  r->busbw =
      r->have_t ? (double)b / (r->t.time_us * 1e3) * topo_nccl_busbw_factor(coll, a->nranks) : 0;
  r->gain = r->have_t && r->have_n ? r->prof_for_nccl / r->t.time_us : 0;
  r->ev_t = evidence(&t->prof, coll, r->t.algo, r->t.proto, r->t.nch, b);
  r->ev_n = evidence(&t->prof, coll, r->nc.algo, r->nc.proto, 0, b);
  r->ev = r->ev_t > r->ev_n ? r->ev_t : r->ev_n;
  r->nominal = t->net_nominal && r->ev == EV_MODEL;
  return 1;
}

static void print_header(const tune_args *a, const tune_setup *t) {
  if (a->json) {
    printf(
        "{\"version\":\"%s\",\"profile\":\"%s\",\"gpu\":%s%s%s,\"nranks\":%d,\"nnodes\":%d,"
        "\"nvls\":%d,\"pipe_ops\":%d,\"net_nominal\":%s,\"collectives\":[",
        TOPO_VERSION, t->prof.source, t->model_gpu ? "\"" : "",
        t->model_gpu ? t->model_gpu : "null", t->model_gpu ? "\"" : "", a->nranks, a->nnodes,
        a->nvls, a->pipe, t->net_nominal ? "true" : "false");
    return;
  }
  printf("topo-tune %s: %s, %d ranks on %d node%s, NVLS %s, numPipeOps %d\n", TOPO_VERSION,
         t->prof.source, a->nranks, a->nnodes, a->nnodes > 1 ? "s" : "", a->nvls ? "on" : "off",
         a->pipe);
  printf(
      "channels 0 = NCCL's own count; busbw by nccl-tests factors. 'NCCL's us' = NCCL 2.28's\n"
      "own estimate for its pick; 'profile us' = this profile's time for that same setting\n"
      "(its measured points where they cover the size, which the tuner decides on; else its\n"
      "model); gain = NCCL's pick / topo's pick, both timed so. evidence (the profile's\n"
      "measured points, the weaker of the two settings): measured (both have a point at this\n"
      "size, +-5 %%), interpolated (points on both sides), model-only (no measurement around:\n"
      "fitted terms or the link model; gain in parentheses, an estimate, not a measurement).\n");
  if (t->net_nominal)
    printf("'*': the network link is nominal (built-in %.0f GB/s, %.1f us, not measured).\n",
           t->prof.link[TOPO_LINK_NET].bw_gbs, t->prof.link[TOPO_LINK_NET].lat_us);
}

static void print_coll_header(const tune_args *a, int coll, int first) {
  const char *name = topo_nccl_func_name(coll, TOPO_NCCL_FILE);
  if (a->json) {
    printf("%s{\"collective\":\"%s\",\"rows\":[", first ? "" : ",", name);
    return;
  }
  printf(
      "\n%s (sizes that pick alike on one line, figures as ranges over them; --json: every size)\n",
      name);
  printf("%11s | %-12s %3s %15s %13s | %-12s %5s %15s %15s | %8s %s\n", "bytes", "topo pick", "ch",
         "profile us", "busbw GB/s", "NCCL 2.28", "ch", "NCCL's us", "profile us", "gain",
         "evidence");
}

static void print_row_json(const tune_row *r, unsigned long long b, int first) {
  char tt[32], bw[32], nt[32], g[32];
  json_num(tt, sizeof tt, r->have_t, r->t.time_us, 3);
  json_num(bw, sizeof bw, r->have_t, r->busbw, 6);
  json_num(nt, sizeof nt, r->have_n, r->prof_for_nccl, 3);
  json_num(g, sizeof g, r->have_t && r->have_n, r->gain, 4);
  printf(
      "%s{\"bytes\":%llu,\"topo\":{\"algo\":\"%s\",\"proto\":\"%s\",\"channels\":%d,"
      "\"time_us\":%s,\"busbw_gbs\":%s,\"evidence\":\"%s\"},\"nccl\":{\"algo\":\"%s\","
      "\"proto\":\"%s\",\"channels\":%d,\"nccl_model_us\":%.3f,\"time_us\":%s,"
      "\"evidence\":\"%s\"},\"gain\":%s,\"evidence\":\"%s\",\"net_nominal\":%s}",
      first ? "" : ",", b, topo_nccl_algo_name(r->t.algo, TOPO_NCCL_FILE),
      topo_nccl_proto_name(r->t.proto, TOPO_NCCL_FILE), r->t.nch, tt, bw, ev_names[r->ev_t],
      topo_nccl_algo_name(r->nc.algo, TOPO_NCCL_FILE),
      topo_nccl_proto_name(r->nc.proto, TOPO_NCCL_FILE), r->nc.nchannels, r->nc.time_us, nt,
      ev_names[r->ev_n], g, ev_names[r->ev], r->nominal ? "true" : "false");
}

/* "a-b" for a range of two figures, "a" when they print alike. */
static void text_range(char *buf, size_t len, int have, double lo, double hi) {
  char x[32], y[32];
  text_num(x, sizeof x, have, lo);
  text_num(y, sizeof y, have, hi);
  if (!strcmp(x, y)) snprintf(buf, len, "%s", x);
  else snprintf(buf, len, "%s-%s", x, y);
}

/* --verbose: the points of one setting that decide its evidence at `bytes`: the one at the size
 * (within TUNE_SIZE_TOL), else the nearest on each side. */
static void print_points(const char *who, const topo_profile *p, int coll, int algo, int proto,
                         int nch, unsigned long long bytes) {
  int n = 0;
  const topo_profile_point *pt = topo_profile_find_points(p, coll, algo, proto, nch, &n);
  const topo_profile_point *at = NULL, *below = NULL, *above = NULL;
  double b = (double)bytes;
  for (int i = 0; i < n; i++) {
    double x = (double)pt[i].bytes;
    if (fabs(x - b) <= TUNE_SIZE_TOL * b) at = &pt[i];
    else if (x < b) below = &pt[i];
    else if (!above) above = &pt[i];
  }
  char line[320], hb[32];
  int o = snprintf(line, sizeof line, "%10s %s %s/%s", "", who,
                   topo_nccl_algo_name(algo, TOPO_NCCL_FILE),
                   topo_nccl_proto_name(proto, TOPO_NCCL_FILE));
  if (nch) o += snprintf(line + o, sizeof line - (size_t)o, " %d ch", nch);
  if (!n) {
    printf("%s: no measured point for this setting\n", line);
    return;
  }
  const topo_profile_point *show[3] = {at, at ? NULL : below, at ? NULL : above};
  static const char *const where[3] = {"at", "below", "above"};
  for (int k = 0, shown = 0; k < 3 && o < (int)sizeof line; k++)
    if (show[k])
      o += snprintf(line + o, sizeof line - (size_t)o, "%s %s %s: %.2f us +-%.2f",
                    shown++ ? ";" : ":", where[k], human(show[k]->bytes, hb, sizeof hb),
                    show[k]->median_us, show[k]->noise_us);
  printf("%s\n", line);
}

/* The gain as the table prints it: "1.23x", "(1.23x)" when model-only, "n/a". */
static void gain_text(const tune_row *r, char *g, size_t len) {
  if (!r->have_t || !r->have_n) snprintf(g, len, "n/a");
  else if (r->ev == EV_MODEL) snprintf(g, len, "(%.2fx)", r->gain);
  else snprintf(g, len, "%.2fx", r->gain);
}

/* 1 when two rows print alike but for their sizes and times: the same picks, channels of topo's
 * pick, evidence and gain (the text folds them into one line). */
static int same_pick(const tune_row *x, const tune_row *y) {
  char gx[32], gy[32];
  gain_text(x, gx, sizeof gx);
  gain_text(y, gy, sizeof gy);
  return x->t.algo == y->t.algo && x->t.proto == y->t.proto && x->t.nch == y->t.nch &&
         x->nc.algo == y->nc.algo && x->nc.proto == y->nc.proto && x->ev == y->ev &&
         x->nominal == y->nominal && x->have_t == y->have_t && x->have_n == y->have_n &&
         !strcmp(gx, gy);
}

/* One line for rows [0, n) (sizes b[0..n), x2 steps) that print alike: their sizes as a range and
 * each figure as its range over them. */
static void print_rows_text(const tune_row *r, const unsigned long long *b, int n) {
  char tp[40], np[40], tt[72], bw[72], nt[72], pn[72], g[32], e[24], hb[56], lo[24], hi[24], ch[24];
  const tune_row *f = &r[0], *l = &r[n - 1];
  snprintf(tp, sizeof tp, "%s/%s", topo_nccl_algo_name(f->t.algo, TOPO_NCCL_FILE),
           topo_nccl_proto_name(f->t.proto, TOPO_NCCL_FILE));
  snprintf(np, sizeof np, "%s/%s", topo_nccl_algo_name(f->nc.algo, TOPO_NCCL_FILE),
           topo_nccl_proto_name(f->nc.proto, TOPO_NCCL_FILE));
  if (n == 1) snprintf(hb, sizeof hb, "%s", human(b[0], lo, sizeof lo));
  else snprintf(hb, sizeof hb, "%s-%s", human(b[0], lo, sizeof lo), human(b[n - 1], hi, sizeof hi));
  text_range(tt, sizeof tt, f->have_t, f->t.time_us, l->t.time_us);
  text_range(bw, sizeof bw, f->have_t, f->busbw, l->busbw);
  text_range(pn, sizeof pn, f->have_n, f->prof_for_nccl, l->prof_for_nccl);
  text_range(nt, sizeof nt, 1, f->nc.time_us, l->nc.time_us);
  if (f->nc.nchannels == l->nc.nchannels) snprintf(ch, sizeof ch, "%d", f->nc.nchannels);
  else snprintf(ch, sizeof ch, "%d-%d", f->nc.nchannels, l->nc.nchannels);
  gain_text(f, g, sizeof g);
  snprintf(e, sizeof e, "%s%s", ev_names[f->ev], f->nominal ? " *" : "");
  printf("%11s | %-12s %3d %15s %13s | %-12s %5s %15s %15s | %8s %s\n", hb, tp, f->t.nch, tt, bw,
         np, ch, nt, pn, g, e);
}

/* What a reader needs under a collective's map: where topo's pick differs from NCCL's and on
 * what evidence; where it never does on a measurement, why (what the profile measured). */
static void print_switches(const tune_setup *t, int coll, const tune_row *r, int n) {
  int sw[3] = {0, 0, 0}, total = 0;
  for (int i = 0; i < n; i++)
    if (r[i].t.algo != r[i].nc.algo || r[i].t.proto != r[i].nc.proto) sw[r[i].ev]++, total++;
  if (total)
    printf(
        "  topo switches from NCCL 2.28's pick at %d of %d sizes: %d measured, %d interpolated, "
        "%d model-only\n",
        total, n, sw[EV_MEASURED], sw[EV_INTERPOLATED], sw[EV_MODEL]);
  else printf("  topo keeps NCCL 2.28's pick at every size (%d sizes): no switch\n", n);
  if (sw[EV_MEASURED]) return;
  /* the profile's measured points of this collective, per setting */
  int settings = 0, points = 0;
  char what[512] = "";
  size_t at = 0;
  for (int i = 0; i < t->prof.npoints;) {
    const topo_profile_point *p = &t->prof.points[i];
    int j = i;
    uint64_t lo = p->bytes, hi = p->bytes;
    for (; j < t->prof.npoints && t->prof.points[j].coll == p->coll &&
           t->prof.points[j].algo == p->algo && t->prof.points[j].proto == p->proto &&
           t->prof.points[j].nchannels == p->nchannels;
         j++)
      hi = t->prof.points[j].bytes;
    if (p->coll == coll) {
      char a[24], b[24];
      settings++, points += j - i;
      if (at < sizeof what)
        at += (size_t)snprintf(
            what + at, sizeof what - at, "%s%s/%s at %d size%s (%s%s%s)", settings > 1 ? ", " : "",
            topo_nccl_algo_name(p->algo, TOPO_NCCL_FILE),
            topo_nccl_proto_name(p->proto, TOPO_NCCL_FILE), j - i, j - i == 1 ? "" : "s",
            approx(lo, a, sizeof a), lo == hi ? "" : "-", lo == hi ? "" : approx(hi, b, sizeof b));
    }
    i = j;
  }
  if (!points)
    printf(
        "  no switch is measured: %s holds no measured point of this collective, and the tuner\n"
        "  switches only where measurements show a gain beyond their noise (docs/tuner-model.md);\n"
        "  measure with topo-calibrate (GPUs) or topo-report fit (traces), then topo-tune "
        "--profile\n",
        t->prof.source);
  else
    printf(
        "  no switch is measured: %s measured %s;\n"
        "  a switch needs two settings measured at one size, and none is (topo-calibrate\n"
        "  measures every setting; topo-report fit only what the job ran)\n",
        t->prof.source, what);
}

/* Every size from --min to --max (x2) of one collective; in text, rows that print alike folded
 * into one line (--verbose: every size, with its points), then what switches and why. */
static void print_collective(const tune_args *a, const tune_setup *t, int coll, int first_coll) {
  print_coll_header(a, coll, first_coll);
  tune_row rows[64];
  unsigned long long sizes[64];
  int n = 0;
  for (unsigned long long b = a->min_bytes; b <= a->max_bytes && n < 64; b *= 2) {
    if (compute_row(a, t, coll, b, &rows[n])) {
      if (a->json) print_row_json(&rows[n], b, n == 0);
      sizes[n++] = b;
    }
    if (b > a->max_bytes / 2) break;
  }
  if (a->json) {
    printf("]}");
    return;
  }
  for (int i = 0; i < n;) { /* --verbose: every size, each with the points behind its evidence */
    int j = i + 1;
    while (!a->verbose && j < n && same_pick(&rows[i], &rows[j])) j++;
    print_rows_text(rows + i, sizes + i, j - i);
    if (a->verbose) {
      print_points("topo", &t->prof, coll, rows[i].t.algo, rows[i].t.proto, rows[i].t.nch,
                   sizes[i]);
      print_points("NCCL", &t->prof, coll, rows[i].nc.algo, rows[i].nc.proto, 0, sizes[i]);
    }
    i = j;
  }
  print_switches(t, coll, rows, n);
}

int main(int argc, char **argv) {
  tune_args a;
  topo_cli_init(prog, 0);
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0) return rc;
  topo_cli_init(prog, a.verbose);
  topo_env_check_unknown(); /* the same warning the plugin gives */
  tune_setup t = {0};
  if (load_profile(&a, &t)) {
    topo_profile_free(&t.prof);
    return TOPO_CLI_FAILED;
  }
  if (a.nvls < 0) a.nvls = t.prof.nvls == 1;
  t.net_nominal = a.nnodes > 1 && net_is_nominal(&t.prof);
  if (build_models(&a, &t)) {
    topo_profile_free(&t.prof);
    return topo_cli_error("out of memory");
  }
  print_header(&a, &t);
  for (int ci = 0; ci < a.ncolls; ci++) print_collective(&a, &t, a.colls[ci], ci == 0);
  if (a.json) printf("]}\n");
  topo_table_free(t.table);
  topo_profile_free(&t.prof);
  return TOPO_CLI_DONE;
}
