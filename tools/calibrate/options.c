/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's command line: defaults, parsing (getopt_long: long and short options, sizes
 * with binary suffixes, comma lists of collectives / algorithms / protocols / channel counts) and
 * --help.
 * Called once by main() before anything touches a GPU. Pure: no I/O except the usage text.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "calibrate.h"
#include "cli.h"
#include "profile.h"

void topo_cal_options_default(topo_cal_options *o) {
  memset(o, 0, sizeof *o);
  o->colls = (1u << NCCL_NUM_FUNCTIONS) - 1;
  static const int ch[] = {0, 4, 8, 16, 24, 32};
  o->nchannels = (int)(sizeof ch / sizeof ch[0]);
  memcpy(o->channels, ch, sizeof ch);
  o->min_bytes = 8;
  o->max_bytes = 1ull << 30;
  o->step = 2.0;
  o->iters = 20;
  o->warmup = 3;
  o->rounds = 3;
  o->timing = TOPO_CAL_TIMING_AUTO;
  o->graph_max_bytes = 16ull << 20;
  o->p2p_bytes = 256ull << 20;
  o->p2p = 1;
  o->sweep = 1;
  o->run_default = 1;
  o->nodes = 1;
  o->force_via = TOPO_CAL_VIA_AUTO;
  o->verify = 1;
  o->prune = 4.0;
  o->floor_us = 1.0;
}

int topo_cal_parse_size(const char *text, uint64_t *out) {
  if (!text || !*text) return -1;
  errno = 0;
  char *end;
  double v = strtod(text, &end);
  if (end == text || errno || !(v >= 0) || !isfinite(v)) return -1;
  double mult = 1;
  while (*end == ' ') end++;
  switch (toupper((unsigned char)*end)) {
  case 'K':
    mult = 1024.0;
    end++;
    break;
  case 'M':
    mult = 1024.0 * 1024;
    end++;
    break;
  case 'G':
    mult = 1024.0 * 1024 * 1024;
    end++;
    break;
  case 'T':
    mult = 1024.0 * 1024 * 1024 * 1024;
    end++;
    break;
  default: break;
  }
  if (mult > 1 && (*end == 'i' || *end == 'I')) end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end) return -1;
  double b = v * mult;
  if (b > 1.8e19) return -1;
  *out = (uint64_t)(b + 0.5);
  return 0;
}

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, len, fmt, ap);
  va_end(ap);
  return -1;
}

/* Comma list of names -> bit mask through `lookup`; "all" = every bit of `all`. */
static int parse_names(const char *text, int (*lookup)(const char *), unsigned all, unsigned *mask,
                       const char *what, char *err, size_t len) {
  char buf[256];
  if (strlen(text) >= sizeof buf) return fail(err, len, "%s list too long", what);
  strcpy(buf, text);
  unsigned m = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (strcasecmp(tok, "all") == 0) {
      m |= all;
      continue;
    }
    int i = lookup(tok);
    if (i < 0 || !((all >> i) & 1u)) return fail(err, len, "unknown %s '%s'", what, tok);
    m |= 1u << i;
  }
  if (!m) return fail(err, len, "empty %s list", what);
  *mask = m;
  return 0;
}

static int parse_int(const char *text, long lo, long hi, int *out) {
  if (!text || !*text) return -1;
  errno = 0;
  char *end;
  long v = strtol(text, &end, 10);
  if (*end || errno || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

static int parse_double(const char *text, double lo, double hi, double *out) {
  if (!text || !*text) return -1;
  errno = 0;
  char *end;
  double v = strtod(text, &end);
  if (*end || errno || !(v >= lo) || !(v <= hi)) return -1;
  *out = v;
  return 0;
}

static int parse_channels(topo_cal_options *o, const char *text, char *err, size_t len) {
  char buf[256];
  if (strlen(text) >= sizeof buf) return fail(err, len, "channel list too long");
  strcpy(buf, text);
  int n = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int c;
    if (strcasecmp(tok, "nccl") == 0 || strcasecmp(tok, "default") == 0) c = 0;
    else if (parse_int(tok, 0, 64, &c))
      return fail(err, len, "bad channel count '%s' (0..64, 0 = NCCL's own)", tok);
    if (n == TOPO_CAL_MAX_CHANNEL_SETTINGS)
      return fail(err, len, "at most %d channel counts", TOPO_CAL_MAX_CHANNEL_SETTINGS);
    int dup = 0;
    for (int i = 0; i < n; i++) dup |= o->channels[i] == c;
    if (!dup) o->channels[n++] = c;
  }
  if (!n) return fail(err, len, "empty channel list");
  o->nchannels = n;
  return 0;
}

/* getopt_long values: the short option's letter, or OPT_* for long-only options. */
enum {
  OPT_ALGOS = 256,
  OPT_PROTOS,
  OPT_CHANNELS,
  OPT_QUICK,
  OPT_TIMING,
  OPT_GRAPH_MAX,
  OPT_P2P_BYTES,
  OPT_NO_P2P,
  OPT_NO_SWEEP,
  OPT_NO_DEFAULT,
  OPT_BENCH,
  OPT_NODES,
  OPT_PROCS,
  OPT_TUNER,
  OPT_FORCE_VIA,
  OPT_NO_VERIFY,
  OPT_PRUNE,
  OPT_LINE_RATE,
  OPT_FLOOR,
  OPT_CSV,
  OPT_WORKDIR,
  OPT_BUDGET,
};

static const char short_opts[] = ":o:g:c:b:e:f:n:w:r:p:vhV";
static const struct option long_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"gpus", required_argument, NULL, 'g'},
    {"colls", required_argument, NULL, 'c'},
    {"algos", required_argument, NULL, OPT_ALGOS},
    {"protos", required_argument, NULL, OPT_PROTOS},
    {"channels", required_argument, NULL, OPT_CHANNELS},
    {"min-bytes", required_argument, NULL, 'b'},
    {"max-bytes", required_argument, NULL, 'e'},
    {"step", required_argument, NULL, 'f'},
    {"iters", required_argument, NULL, 'n'},
    {"warmup", required_argument, NULL, 'w'},
    {"quick", no_argument, NULL, OPT_QUICK},
    {"rounds", required_argument, NULL, 'r'},
    {"timing", required_argument, NULL, OPT_TIMING},
    {"graph-max", required_argument, NULL, OPT_GRAPH_MAX},
    {"p2p-bytes", required_argument, NULL, OPT_P2P_BYTES},
    {"no-p2p", no_argument, NULL, OPT_NO_P2P},
    {"no-sweep", no_argument, NULL, OPT_NO_SWEEP},
    {"no-default", no_argument, NULL, OPT_NO_DEFAULT},
    {"bench", no_argument, NULL, OPT_BENCH},
    {"nodes", required_argument, NULL, OPT_NODES},
    {"procs", no_argument, NULL, OPT_PROCS},
    {"tuner", required_argument, NULL, OPT_TUNER},
    {"force-via", required_argument, NULL, OPT_FORCE_VIA},
    {"profile", required_argument, NULL, 'p'},
    {"no-verify", no_argument, NULL, OPT_NO_VERIFY},
    {"prune", required_argument, NULL, OPT_PRUNE},
    {"line-rate", required_argument, NULL, OPT_LINE_RATE},
    {"floor-us", required_argument, NULL, OPT_FLOOR},
    {"csv", required_argument, NULL, OPT_CSV},
    {"workdir", required_argument, NULL, OPT_WORKDIR},
    {"time-budget", required_argument, NULL, OPT_BUDGET},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* One of `names` (case-insensitive) -> its index into `values`; -1 when none. */
static int pick_word(const char *arg, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (strcasecmp(arg, names[i]) == 0) return i;
  return -1;
}

/* Options that take a number or a size: parse and range-check, or say what was wanted. */
static int apply_number(topo_cal_options *o, int id, const char *arg, char *err, size_t len) {
  switch (id) {
  case 'g':
    if (parse_int(arg, 1, 64, &o->ngpus))
      return fail(err, len, "--gpus wants 1..64, got '%s'", arg);
    return 0;
  case 'b':
    if (topo_cal_parse_size(arg, &o->min_bytes) || o->min_bytes == 0)
      return fail(err, len, "--min-bytes wants a size such as 8, 64K, 1M; got '%s'", arg);
    return 0;
  case 'e':
    if (topo_cal_parse_size(arg, &o->max_bytes) || o->max_bytes == 0)
      return fail(err, len, "--max-bytes wants a size such as 1G, 512M; got '%s'", arg);
    return 0;
  case 'f':
    if (parse_double(arg, 1.01, 1024, &o->step))
      return fail(err, len, "--step wants a factor in 1.01..1024, got '%s'", arg);
    return 0;
  case 'n':
    if (parse_int(arg, 1, TOPO_CAL_MAX_ITERS, &o->iters))
      return fail(err, len, "--iters wants 1..%d, got '%s'", TOPO_CAL_MAX_ITERS, arg);
    return 0;
  case 'w':
    if (parse_int(arg, 0, 1000, &o->warmup))
      return fail(err, len, "--warmup wants 0..1000, got '%s'", arg);
    return 0;
  case 'r':
    if (parse_int(arg, 1, TOPO_CAL_MAX_ROUNDS, &o->rounds))
      return fail(err, len, "--rounds wants 1..100, got '%s'", arg);
    return 0;
  case OPT_GRAPH_MAX:
    if (topo_cal_parse_size(arg, &o->graph_max_bytes))
      return fail(err, len, "--graph-max wants a size, got '%s'", arg);
    return 0;
  case OPT_P2P_BYTES:
    if (topo_cal_parse_size(arg, &o->p2p_bytes) || o->p2p_bytes < 4096)
      return fail(err, len, "--p2p-bytes wants a size >= 4K, got '%s'", arg);
    return 0;
  case OPT_NODES:
    if (parse_int(arg, 1, 64, &o->nodes))
      return fail(err, len, "--nodes wants 1..64, got '%s'", arg);
    return 0;
  case OPT_PRUNE:
    if (parse_double(arg, 0, 1e6, &o->prune) || (o->prune > 0 && o->prune < 1.01))
      return fail(err, len, "--prune wants 0 (off) or a factor >= 1.01, got '%s'", arg);
    return 0;
  case OPT_LINE_RATE:
    if (parse_double(arg, 0, 1e6, &o->line_rate_gbs))
      return fail(err, len, "--line-rate wants GB/s >= 0, got '%s'", arg);
    return 0;
  case OPT_FLOOR:
    if (parse_double(arg, 0, 1e6, &o->floor_us))
      return fail(err, len, "--floor-us wants us >= 0, got '%s'", arg);
    return 0;
  case OPT_BUDGET:
    if (parse_double(arg, 1, 1e7, &o->time_budget_s))
      return fail(err, len, "--time-budget wants seconds >= 1, got '%s'", arg);
    return 0;
  default: return fail(err, len, "unhandled option");
  }
}

/* One option getopt_long returned (`id`) with its value, if any. */
static int apply(topo_cal_options *o, int id, const char *arg, char *err, size_t len) {
  static const char *const timings[] = {"auto", "graph", "eager"};
  static const int timing_values[] = {TOPO_CAL_TIMING_AUTO, TOPO_CAL_TIMING_GRAPH,
                                      TOPO_CAL_TIMING_EAGER};
  static const char *const vias[] = {"auto", "tuner", "env"};
  static const int via_values[] = {TOPO_CAL_VIA_AUTO, TOPO_CAL_VIA_TUNER, TOPO_CAL_VIA_ENV};
  int i;
  switch (id) {
  case 'o': o->output = arg; return 0;
  case 'c': /* nccl-tests' names too: all_reduce, reduce_scatter, all_gather */
    return parse_names(arg, topo_nccl_coll_from_name, (1u << NCCL_NUM_FUNCTIONS) - 1, &o->colls,
                       "collective", err, len);
  case OPT_ALGOS:
    return parse_names(arg, topo_nccl_algo_from_name, (1u << NCCL_NUM_ALGORITHMS) - 1, &o->algos,
                       "algorithm", err, len);
  case OPT_PROTOS:
    return parse_names(arg, topo_nccl_proto_from_name, (1u << NCCL_NUM_PROTOCOLS) - 1, &o->protos,
                       "protocol", err, len);
  case OPT_CHANNELS: return parse_channels(o, arg, err, len);
  case OPT_QUICK: o->quick = 1; return 0;
  case OPT_TIMING:
    if ((i = pick_word(arg, timings, 3)) < 0)
      return fail(err, len, "--timing wants auto, graph or eager; got '%s'", arg);
    o->timing = timing_values[i];
    return 0;
  case OPT_NO_P2P: o->p2p = 0; return 0;
  case OPT_NO_SWEEP: o->sweep = 0; return 0;
  case OPT_NO_DEFAULT: o->run_default = 0; return 0;
  case OPT_BENCH: o->bench = 1; return 0;
  case OPT_PROCS: o->procs = 1; return 0;
  case OPT_TUNER: o->tuner = arg; return 0;
  case OPT_FORCE_VIA:
    if ((i = pick_word(arg, vias, 3)) < 0)
      return fail(err, len, "--force-via wants auto, tuner or env; got '%s'", arg);
    o->force_via = via_values[i];
    return 0;
  case 'p': o->profile = arg; return 0;
  case OPT_NO_VERIFY: o->verify = 0; return 0;
  case OPT_CSV: o->csv = arg; return 0;
  case OPT_WORKDIR:
    if (strlen(arg) > TOPO_CAL_WORKDIR_MAX)
      return fail(err, len, "--workdir is %zu bytes, longer than %d", strlen(arg),
                  TOPO_CAL_WORKDIR_MAX);
    o->workdir = arg;
    return 0;
  case 'v': o->verbose++; return 0;
  case 'h': o->help = 1; return 0;
  case 'V': o->version = 1; return 0;
  default: return apply_number(o, id, arg, err, len);
  }
}

/* What --quick implies, applied after every other option. */
static void apply_quick(topo_cal_options *o) {
  /* Quick: x4 steps, NCCL's own channel count only, at most 256 MB. */
  if (o->step < 4) o->step = 4;
  o->channels[0] = 0;
  o->nchannels = 1;
  if (o->max_bytes > (256ull << 20)) o->max_bytes = 256ull << 20;
  if (o->p2p_bytes > (64ull << 20)) o->p2p_bytes = 64ull << 20;
}

int topo_cal_options_parse(topo_cal_options *o, int argc, char **argv, char *err, size_t len) {
  topo_cli_reset();
  int c;
  while ((c = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
    if (c == '?' || c == ':') {
      char what[128];
      topo_cli_misuse(c, argv, long_opts, what, sizeof what);
      return fail(err, len, "%s", what);
    }
    if (apply(o, c, optarg, err, len)) return -1;
  }
  if (optind < argc) return fail(err, len, "unexpected argument '%s'", argv[optind]);
  if (o->help || o->version) return 0;
  if (o->quick) apply_quick(o);
  if (o->min_bytes > o->max_bytes)
    return fail(err, len, "--min-bytes (%llu) is above --max-bytes (%llu)",
                (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes);
  if (o->bench && !o->sweep) return fail(err, len, "--bench needs the sweep (drop --no-sweep)");
  return 0;
}

void topo_cal_usage(FILE *f, const char *prog) {
  fprintf(
      f,
      "Usage: %s [options]\n"
      "Measure this machine's GPU links and NCCL collectives and write a tuner profile for\n"
      "libtopo-tuner.so. One process drives every local GPU (like nccl-tests -g); --nodes N\n"
      "runs one process per GPU with a distinct NCCL_HOSTID per node (socket transport).\n"
      "\n"
      "What it measures\n"
      "  GPU-pair copy bandwidth and latency (copy engine, and SM copies when built with CUDA),\n"
      "  the launch / completion floor, and AllReduce, AllGather, ReduceScatter, Broadcast and\n"
      "  Reduce from --min-bytes to --max-bytes for every algorithm x protocol x channel count\n"
      "  NCCL allows, each forced in a fresh communicator through libtopo-tuner's\n"
      "  TOPO_TUNER_FORCE (or NCCL_ALGO/NCCL_PROTO with --force-via env). Small sizes are timed\n"
      "  in CUDA graphs, so figures are GPU time, not the host's launch rate.\n"
      "\n"
      "Options\n"
      "  -o, --output FILE     write the fitted tuner profile (TOPO_TUNER_PROFILE format)\n"
      "  -g, --gpus N          use the first N visible GPUs (default: all)\n"
      "  -c, --colls LIST      allreduce,allgather,reducescatter,broadcast,reduce (default: all)\n"
      "      --algos LIST      tree,ring,pat,... (default: every one NCCL allows)\n"
      "      --protos LIST     ll,ll128,simple (default: every one NCCL allows)\n"
      "      --channels LIST   channel counts to force, 0 = NCCL's own (default 0,4,8,16,24,32)\n"
      "  -b, --min-bytes SIZE  smallest size (default 8)\n"
      "  -e, --max-bytes SIZE  largest size (default 1G)\n"
      "  -f, --step FACTOR     size factor between points (default 2)\n"
      "  -n, --iters N         timed samples per point, median and IQR reported (default 20)\n"
      "  -w, --warmup N        untimed samples first (default 3)\n"
      "  -r, --rounds N        rounds: each runs every setting once, in a rotated order; a\n"
      "                        result is the median of its rounds (default 3)\n"
      "      --quick           x4 steps, NCCL's channel count only, <= 256M (about a minute)\n"
      "      --timing MODE     auto (graphs up to --graph-max), graph or eager\n"
      "      --graph-max SIZE  largest size timed with CUDA graphs in auto mode (default 16M)\n"
      "      --p2p-bytes SIZE  copy size of the p2p bandwidth matrix (default 256M)\n"
      "      --no-p2p          skip the p2p matrix; --no-sweep skip the collectives;\n"
      "      --no-default      skip the NCCL-default sweep\n"
      "      --bench           NCCL's default, libtopo-tuner (with --profile or the profile\n"
      "                        fitted in this run) and the oracle (best forced setting) side\n"
      "                        by side, with per-size ratios and geometric means\n"
      "  -p, --profile FILE    profile the tuner uses in --bench (default: fitted in this run)\n"
      "      --nodes N         split the GPUs into N \"nodes\" (NCCL_HOSTID, socket transport)\n"
      "      --procs           one process per GPU even on one node\n"
      "      --tuner PATH      libtopo-tuner.so (default: ../lib beside the binary, else the build "
      "tree's)\n"
      "      --force-via HOW   auto (tuner if found, else env), tuner or env\n"
      "      --no-verify       do not read NCCL's INFO log to confirm what each call ran\n"
      "      --prune F         stop a setting's larger sizes once it is F x slower than the best\n"
      "                        so far (default 4, 0 = measure everything)\n"
      "      --line-rate GBS   link line rate per direction for the plausibility check\n"
      "                        (default from the GPU model, e.g. 450 for H100/H200)\n"
      "      --floor-us US     fastest credible collective (default 1)\n"
      "      --csv FILE        every measurement, one line each\n"
      "      --workdir DIR     where NCCL's log and temporary files go (default /tmp)\n"
      "      --time-budget S   stop starting forced settings when the run nears S seconds\n"
      "                        (NCCL's default and the tuner still run; outputs marked partial)\n"
      "  -v, --verbose         one progress line per point; -h, --help; -V, --version\n"
      "\n"
      "Environment: NCCL_NVLS_ENABLE is left as set (keep it 0 where NVLS must stay off);\n"
      "NCCL_TUNER_PLUGIN, TOPO_TUNER_FORCE, TOPO_TUNER_PROFILE, NCCL_ALGO, NCCL_PROTO and\n"
      "NCCL_DEBUG* are set by the tool per communicator.\n"
      "\n"
      "Examples\n"
      "  %s -o h200.profile                      calibrate every local GPU (~5 min on 2 GPUs)\n"
      "  %s --quick -o quick.profile             a quick pass\n"
      "  %s -c allreduce -b 1K -e 64M --channels 0\n"
      "  %s --bench -p h200.profile -c allreduce,allgather,reducescatter\n"
      "  %s --bench --nodes 2 --quick            two \"nodes\" over sockets (labelled as such)\n"
      "  %s -g 1                                 what one GPU can measure\n"
      "\n"
      "SIGTERM / SIGINT stop the sweep after the current point; what was measured is still "
      "written.\n"
      "Exit status: 0 success, 1 a measurement or output failed or no usable GPU, 2 misuse.\n",
      prog, prog, prog, prog, prog, prog, prog);
}
