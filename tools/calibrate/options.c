/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topo-calibrate's command line: defaults, parsing (long and short options, sizes with binary
 * suffixes, comma lists of collectives / algorithms / protocols / channel counts) and --help.
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
  case 'K': mult = 1024.0; end++; break;
  case 'M': mult = 1024.0 * 1024; end++; break;
  case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
  case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
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

/* Also accept nccl-tests' names: all_reduce, reduce_scatter, all_gather. */
static int coll_lookup(const char *name) { return topo_nccl_coll_from_name(name); }
static int algo_lookup(const char *name) { return topo_nccl_algo_from_name(name); }
static int proto_lookup(const char *name) { return topo_nccl_proto_from_name(name); }

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
    else if (parse_int(tok, 0, 64, &c)) return fail(err, len, "bad channel count '%s' (0..64, 0 = NCCL's own)", tok);
    if (n == TOPO_CAL_MAX_CHANNEL_SETTINGS) return fail(err, len, "at most %d channel counts", TOPO_CAL_MAX_CHANNEL_SETTINGS);
    int dup = 0;
    for (int i = 0; i < n; i++) dup |= o->channels[i] == c;
    if (!dup) o->channels[n++] = c;
  }
  if (!n) return fail(err, len, "empty channel list");
  o->nchannels = n;
  return 0;
}

typedef enum {
  OPT_NONE = 0, OPT_OUTPUT, OPT_GPUS, OPT_COLLS, OPT_ALGOS, OPT_PROTOS, OPT_CHANNELS, OPT_MIN, OPT_MAX,
  OPT_STEP, OPT_ITERS, OPT_WARMUP, OPT_QUICK, OPT_TIMING, OPT_GRAPH_MAX, OPT_P2P_BYTES, OPT_NO_P2P,
  OPT_NO_SWEEP, OPT_NO_DEFAULT, OPT_BENCH, OPT_NODES, OPT_PROCS, OPT_TUNER, OPT_FORCE_VIA,
  OPT_PROFILE, OPT_NO_VERIFY, OPT_PRUNE, OPT_LINE_RATE, OPT_FLOOR, OPT_CSV, OPT_WORKDIR, OPT_BUDGET,
  OPT_VERBOSE, OPT_HELP, OPT_VERSION, OPT_ROUNDS,
} opt_id;

typedef struct opt_spec {
  const char *name;
  char short_name;
  int has_arg;
  opt_id id;
} opt_spec;

static const opt_spec specs[] = {
    {"output", 'o', 1, OPT_OUTPUT},      {"gpus", 'g', 1, OPT_GPUS},
    {"colls", 'c', 1, OPT_COLLS},        {"algos", 0, 1, OPT_ALGOS},
    {"protos", 0, 1, OPT_PROTOS},        {"channels", 0, 1, OPT_CHANNELS},
    {"min-bytes", 'b', 1, OPT_MIN},      {"max-bytes", 'e', 1, OPT_MAX},
    {"step", 'f', 1, OPT_STEP},          {"iters", 'n', 1, OPT_ITERS},
    {"warmup", 'w', 1, OPT_WARMUP},      {"quick", 0, 0, OPT_QUICK},
    {"rounds", 'r', 1, OPT_ROUNDS},
    {"timing", 0, 1, OPT_TIMING},        {"graph-max", 0, 1, OPT_GRAPH_MAX},
    {"p2p-bytes", 0, 1, OPT_P2P_BYTES},  {"no-p2p", 0, 0, OPT_NO_P2P},
    {"no-sweep", 0, 0, OPT_NO_SWEEP},    {"no-default", 0, 0, OPT_NO_DEFAULT},
    {"bench", 0, 0, OPT_BENCH},          {"nodes", 0, 1, OPT_NODES},
    {"procs", 0, 0, OPT_PROCS},          {"tuner", 0, 1, OPT_TUNER},
    {"force-via", 0, 1, OPT_FORCE_VIA},  {"profile", 'p', 1, OPT_PROFILE},
    {"no-verify", 0, 0, OPT_NO_VERIFY},  {"prune", 0, 1, OPT_PRUNE},
    {"line-rate", 0, 1, OPT_LINE_RATE},  {"floor-us", 0, 1, OPT_FLOOR},
    {"csv", 0, 1, OPT_CSV},              {"workdir", 0, 1, OPT_WORKDIR},
    {"time-budget", 0, 1, OPT_BUDGET},
    {"verbose", 'v', 0, OPT_VERBOSE},    {"help", 'h', 0, OPT_HELP},
    {"version", 'V', 0, OPT_VERSION},
};
#define NSPECS ((int)(sizeof specs / sizeof specs[0]))

static int apply(topo_cal_options *o, opt_id id, const char *arg, const char *name, char *err, size_t len) {
  switch (id) {
  case OPT_OUTPUT: o->output = arg; return 0;
  case OPT_GPUS:
    if (parse_int(arg, 1, 64, &o->ngpus)) return fail(err, len, "--gpus wants 1..64, got '%s'", arg);
    return 0;
  case OPT_COLLS:
    return parse_names(arg, coll_lookup, (1u << NCCL_NUM_FUNCTIONS) - 1, &o->colls, "collective", err, len);
  case OPT_ALGOS:
    return parse_names(arg, algo_lookup, (1u << NCCL_NUM_ALGORITHMS) - 1, &o->algos, "algorithm", err, len);
  case OPT_PROTOS:
    return parse_names(arg, proto_lookup, (1u << NCCL_NUM_PROTOCOLS) - 1, &o->protos, "protocol", err, len);
  case OPT_CHANNELS: return parse_channels(o, arg, err, len);
  case OPT_MIN:
    if (topo_cal_parse_size(arg, &o->min_bytes) || o->min_bytes == 0)
      return fail(err, len, "--min-bytes wants a size such as 8, 64K, 1M; got '%s'", arg);
    return 0;
  case OPT_MAX:
    if (topo_cal_parse_size(arg, &o->max_bytes) || o->max_bytes == 0)
      return fail(err, len, "--max-bytes wants a size such as 1G, 512M; got '%s'", arg);
    return 0;
  case OPT_STEP:
    if (parse_double(arg, 1.01, 1024, &o->step)) return fail(err, len, "--step wants a factor in 1.01..1024, got '%s'", arg);
    return 0;
  case OPT_ITERS:
    if (parse_int(arg, 1, TOPO_CAL_MAX_ITERS, &o->iters)) return fail(err, len, "--iters wants 1..%d, got '%s'", TOPO_CAL_MAX_ITERS, arg);
    return 0;
  case OPT_WARMUP:
    if (parse_int(arg, 0, 1000, &o->warmup)) return fail(err, len, "--warmup wants 0..1000, got '%s'", arg);
    return 0;
  case OPT_ROUNDS:
    if (parse_int(arg, 1, TOPO_CAL_MAX_ROUNDS, &o->rounds)) return fail(err, len, "--rounds wants 1..100, got '%s'", arg);
    return 0;
  case OPT_QUICK: o->quick = 1; return 0;
  case OPT_TIMING:
    if (strcasecmp(arg, "auto") == 0) o->timing = TOPO_CAL_TIMING_AUTO;
    else if (strcasecmp(arg, "graph") == 0) o->timing = TOPO_CAL_TIMING_GRAPH;
    else if (strcasecmp(arg, "eager") == 0) o->timing = TOPO_CAL_TIMING_EAGER;
    else return fail(err, len, "--timing wants auto, graph or eager; got '%s'", arg);
    return 0;
  case OPT_GRAPH_MAX:
    if (topo_cal_parse_size(arg, &o->graph_max_bytes)) return fail(err, len, "--graph-max wants a size, got '%s'", arg);
    return 0;
  case OPT_P2P_BYTES:
    if (topo_cal_parse_size(arg, &o->p2p_bytes) || o->p2p_bytes < 4096)
      return fail(err, len, "--p2p-bytes wants a size >= 4K, got '%s'", arg);
    return 0;
  case OPT_NO_P2P: o->p2p = 0; return 0;
  case OPT_NO_SWEEP: o->sweep = 0; return 0;
  case OPT_NO_DEFAULT: o->run_default = 0; return 0;
  case OPT_BENCH: o->bench = 1; return 0;
  case OPT_NODES:
    if (parse_int(arg, 1, 64, &o->nodes)) return fail(err, len, "--nodes wants 1..64, got '%s'", arg);
    return 0;
  case OPT_PROCS: o->procs = 1; return 0;
  case OPT_TUNER: o->tuner = arg; return 0;
  case OPT_FORCE_VIA:
    if (strcasecmp(arg, "auto") == 0) o->force_via = TOPO_CAL_VIA_AUTO;
    else if (strcasecmp(arg, "tuner") == 0) o->force_via = TOPO_CAL_VIA_TUNER;
    else if (strcasecmp(arg, "env") == 0) o->force_via = TOPO_CAL_VIA_ENV;
    else return fail(err, len, "--force-via wants auto, tuner or env; got '%s'", arg);
    return 0;
  case OPT_PROFILE: o->profile = arg; return 0;
  case OPT_NO_VERIFY: o->verify = 0; return 0;
  case OPT_PRUNE:
    if (parse_double(arg, 0, 1e6, &o->prune) || (o->prune > 0 && o->prune < 1.01))
      return fail(err, len, "--prune wants 0 (off) or a factor >= 1.01, got '%s'", arg);
    return 0;
  case OPT_LINE_RATE:
    if (parse_double(arg, 0, 1e6, &o->line_rate_gbs)) return fail(err, len, "--line-rate wants GB/s >= 0, got '%s'", arg);
    return 0;
  case OPT_FLOOR:
    if (parse_double(arg, 0, 1e6, &o->floor_us)) return fail(err, len, "--floor-us wants us >= 0, got '%s'", arg);
    return 0;
  case OPT_CSV: o->csv = arg; return 0;
  case OPT_WORKDIR: o->workdir = arg; return 0;
  case OPT_BUDGET:
    if (parse_double(arg, 1, 1e7, &o->time_budget_s)) return fail(err, len, "--time-budget wants seconds >= 1, got '%s'", arg);
    return 0;
  case OPT_VERBOSE: o->verbose++; return 0;
  case OPT_HELP: o->help = 1; return 0;
  case OPT_VERSION: o->version = 1; return 0;
  case OPT_NONE: break;
  }
  return fail(err, len, "unhandled option %s", name);
}

int topo_cal_options_parse(topo_cal_options *o, int argc, char **argv, char *err, size_t len) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const opt_spec *s = NULL;
    const char *arg = NULL;
    if (a[0] == '-' && a[1] == '-' && a[2]) {
      const char *name = a + 2;
      const char *eq = strchr(name, '=');
      size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
      for (int k = 0; k < NSPECS; k++)
        if (strlen(specs[k].name) == nlen && strncmp(specs[k].name, name, nlen) == 0) s = &specs[k];
      if (!s) return fail(err, len, "unknown option '%s' (try --help)", a);
      if (s->has_arg) {
        if (eq) arg = eq + 1;
        else if (i + 1 < argc) arg = argv[++i];
        else return fail(err, len, "option --%s needs a value", s->name);
      } else if (eq) {
        return fail(err, len, "option --%s takes no value", s->name);
      }
    } else if (a[0] == '-' && a[1] && a[1] != '-') {
      for (int k = 0; k < NSPECS; k++)
        if (specs[k].short_name == a[1]) s = &specs[k];
      if (!s) return fail(err, len, "unknown option '%s' (try --help)", a);
      if (s->has_arg) {
        if (a[2]) arg = a + 2;
        else if (i + 1 < argc) arg = argv[++i];
        else return fail(err, len, "option -%c needs a value", s->short_name);
      } else if (a[2]) {
        return fail(err, len, "option -%c takes no value", s->short_name);
      }
    } else {
      return fail(err, len, "unexpected argument '%s' (try --help)", a);
    }
    if (apply(o, s->id, arg, s->name, err, len)) return -1;
  }
  if (o->help || o->version) return 0;
  if (o->quick) {
    /* Quick: x4 steps, NCCL's own channel count only, at most 256 MB. */
    if (o->step < 4) o->step = 4;
    o->channels[0] = 0;
    o->nchannels = 1;
    if (o->max_bytes > (256ull << 20)) o->max_bytes = 256ull << 20;
    if (o->p2p_bytes > (64ull << 20)) o->p2p_bytes = 64ull << 20;
  }
  if (o->min_bytes > o->max_bytes)
    return fail(err, len, "--min-bytes (%llu) is above --max-bytes (%llu)",
                (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes);
  if (o->bench && !o->sweep) return fail(err, len, "--bench needs the sweep (drop --no-sweep)");
  if (o->bench && o->force_via == TOPO_CAL_VIA_ENV && !o->tuner && !o->profile) {
    /* fine: the tuner is still looked up for the tuner column */
  }
  return 0;
}

void topo_cal_usage(FILE *f, const char *prog) {
  fprintf(f,
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
          "      --tuner PATH      libtopo-tuner.so (default: ../lib beside the binary, else the build tree's)\n"
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
          "SIGTERM / SIGINT stop the sweep after the current point; what was measured is still written.\n"
          "Exit status: 0 success, 1 a measurement or output failed, 2 misuse or no usable GPU.\n",
          prog, prog, prog, prog, prog, prog, prog);
}
