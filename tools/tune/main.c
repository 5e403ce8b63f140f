// SPDX-License-Identifier: Apache-2.0
// topo-tune: print the decision map of libtopo-tuner.so for a profile (--profile FILE) or a
// built-in GPU model (--gpu H200), nRanks and nNodes: per collective and size (8 B to 8 GB,
// x2 steps), the algorithm, protocol, channels, predicted time and bus bandwidth topo picks,
// beside what NCCL 2.28's own model (tuner-plugin/nccl_model.h) would pick. Text or --json.
// The choice is made exactly as in the plugin: NCCL's cost table (which entries it allows)
// edited by the decision table, then NCCL's selection.
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "env.h"
#include "log.h"
#include "model.h"
#include "nccl_model.h"
#include "profile.h"
#include "table.h"
#include "tuner_core.h"
#include "topo_version.h"

static const char *prog = "topo-tune";

static void usage(FILE *f) {
  fprintf(f,
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
          "  --verbose          log what is loaded\n"
          "  --version, --help\n"
          "\n"
          "Examples:\n"
          "  topo-tune --gpu H200 --nranks 8                 one 8-GPU NVLink node\n"
          "  topo-tune --gpu H200 --nranks 8 --nvls 1 --coll allreduce\n"
          "  topo-tune --profile my.profile --nranks 16 --nnodes 2 --json > map.json\n");
}

/* One clear line on misuse, exit status 2. */
static int die(const char *what, const char *arg) {
  fprintf(stderr, "%s: %s%s%s%s (try --help)\n", prog, what, arg ? " '" : "", arg ? arg : "",
          arg ? "'" : "");
  return 2;
}

static int parse_size(const char *s, unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || errno) return -1;
  int shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
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

int main(int argc, char **argv) {
  const char *gpu = NULL, *profile_path = NULL;
  int nranks = 0, nnodes = 1, nvls = -1, json = 0, verbose = 0, pipe = 1;
  int colls[NCCL_NUM_FUNCTIONS], ncolls = 0;
  unsigned long long min_bytes = 8, max_bytes = 8ull << 30;
  static const struct option opts[] = {
      {"gpu", required_argument, 0, 'g'},     {"profile", required_argument, 0, 'p'},
      {"nranks", required_argument, 0, 'r'},  {"nnodes", required_argument, 0, 'n'},
      {"nvls", required_argument, 0, 'V'},    {"coll", required_argument, 0, 'c'},
      {"min", required_argument, 0, 'm'},     {"max", required_argument, 0, 'M'},
      {"pipe", required_argument, 0, 'P'},    {"json", no_argument, 0, 'j'},
      {"verbose", no_argument, 0, 'v'},       {"version", no_argument, 0, 'E'},
      {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
  opterr = 0;
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
    case 'g': gpu = optarg; break;
    case 'p': profile_path = optarg; break;
    case 'r': if (parse_int(optarg, 1, 1 << 20, &nranks)) return die("bad --nranks", optarg); break;
    case 'n': if (parse_int(optarg, 1, 1 << 20, &nnodes)) return die("bad --nnodes", optarg); break;
    case 'V': if (parse_int(optarg, 0, 1, &nvls)) return die("bad --nvls (0 or 1)", optarg); break;
    case 'P': if (parse_int(optarg, 1, 1 << 16, &pipe)) return die("bad --pipe", optarg); break;
    case 'c': {
      int c = topo_nccl_coll_from_name(optarg);
      if (c < 0) return die("unknown collective", optarg);
      if (ncolls < NCCL_NUM_FUNCTIONS) colls[ncolls++] = c;
      break;
    }
    case 'm': if (parse_size(optarg, &min_bytes)) return die("bad --min", optarg); break;
    case 'M': if (parse_size(optarg, &max_bytes)) return die("bad --max", optarg); break;
    case 'j': json = 1; break;
    case 'v': verbose = 1; break;
    case 'E': printf("topo-tune %s\n", TOPO_VERSION); return 0;
    case 'h': usage(stdout); return 0;
    default:
      return die("unknown or incomplete option", argv[optind - 1]);
    }
  }
  if (optind < argc) return die("unexpected argument", argv[optind]);
  if (!nranks) return die("--nranks is required", NULL);
  if (nnodes > nranks || nranks % nnodes) return die("--nnodes must divide --nranks", NULL);
  if (min_bytes < 1 || min_bytes > max_bytes) return die("--min must be >= 1 and <= --max", NULL);
  if (!ncolls)
    for (int c = NCCL_NUM_FUNCTIONS - 1; c >= 0; c--) colls[ncolls++] = c; /* AllReduce first */
  topo_log_to_stderr(prog, verbose);

  topo_profile prof;
  topo_profile_key want = {.nranks = nranks, .nnodes = nnodes};
  snprintf(want.gpu, sizeof want.gpu, "%s", gpu ? gpu : "");
  int known = gpu && is_known_gpu(gpu);
  if (profile_path) {
    topo_status st = topo_profile_load(profile_path, &want, &prof);
    if (st == TOPO_ERR_IO) return 1; /* the loader said why */
    if (st != TOPO_OK && !known) { /* no section: the fallback is the generic set, not H200 */
      topo_profile_free(&prof);
      topo_profile_builtin("generic", &prof);
    }
  } else {
    topo_profile_builtin(known ? gpu : "generic", &prof);
  }
  /* The GPU NCCL's model and the profile's base figures are for: --gpu, else the section's. */
  const char *model_gpu = known ? gpu : is_known_gpu(prof.key.gpu) ? prof.key.gpu : NULL;
  if (!model_gpu)
    fprintf(stderr,
            "%s: warning: %s%s%s; using the generic defaults (NCCL's own figures, nothing "
            "measured; NCCL's model on an A100-class NVLink node)\n",
            prog, gpu ? "unknown GPU model '" : "no GPU model given (--gpu H200, H100 or A100)",
            gpu ? gpu : "", gpu ? "' (H200, H100, A100)" : "");
  if (nvls < 0) nvls = prof.nvls == 1;
  int net_nominal = nnodes > 1 && net_is_nominal(&prof);

  topo_model m;
  topo_model_init(&m, &prof, nranks, nnodes, 0);
  topo_table *table;
  if (topo_table_build(&m, &table) != TOPO_OK) {
    fprintf(stderr, "%s: out of memory\n", prog);
    topo_profile_free(&prof);
    return 1;
  }
  topo_nccl_system sys;
  topo_nccl_model nccl;
  topo_nccl_system_default(model_gpu ? model_gpu : "A100", nranks, nnodes, nvls, &sys);
  topo_nccl_model_build(&sys, NULL, &nccl);
  /* What the plugin sees: on NCCL 2.28+ its init writes the profile's latencies and bandwidths
   * into NCCL's tuning constants first, so NCCL's cost table (and its pick, which the tuner keeps
   * unless it predicts a clear gain) comes from those. "NCCL 2.28 pick" stays NCCL's alone. */
  ncclTunerConstants_v5_t seen_constants;
  topo_nccl_constants_default(&seen_constants);
  if (topo_env_bool(TOPO_ENV_TUNER_CONSTANTS))
    topo_tuner_write_constants(&m, model_gpu ? model_gpu : "generic", &seen_constants);
  topo_nccl_model seen;
  topo_nccl_model_build(&sys, &seen_constants, &seen);

  if (json) {
    printf("{\"version\":\"%s\",\"profile\":\"%s\",\"gpu\":%s%s%s,\"nranks\":%d,\"nnodes\":%d,"
           "\"nvls\":%d,\"pipe_ops\":%d,\"net_nominal\":%s,\"collectives\":[",
           TOPO_VERSION, prof.source, model_gpu ? "\"" : "", model_gpu ? model_gpu : "null",
           model_gpu ? "\"" : "", nranks, nnodes, nvls, pipe, net_nominal ? "true" : "false");
  } else {
    printf("topo-tune %s: %s, %d ranks on %d node%s, NVLS %s, numPipeOps %d\n", TOPO_VERSION,
           prof.source, nranks, nnodes, nnodes > 1 ? "s" : "", nvls ? "on" : "off", pipe);
    printf("channels 0 = NCCL's own count; busbw by nccl-tests factors. 'NCCL's us' = NCCL 2.28's\n"
           "own estimate for its pick; 'profile us' = this profile's time for that same setting;\n"
           "gain = NCCL's pick / topo's pick, both timed by this profile. evidence (the profile's\n"
           "measured points, the weaker of the two settings): measured (both have a point at this\n"
           "size, +-5 %%), interpolated (points on both sides), model-only (no measurement around:\n"
           "fitted terms or the link model; gain in parentheses, an estimate, not a measurement).\n");
    if (net_nominal)
      printf("'*': the network link is nominal (built-in %.0f GB/s, %.1f us, not measured).\n",
             prof.link[TOPO_LINK_NET].bw_gbs, prof.link[TOPO_LINK_NET].lat_us);
  }
  for (int ci = 0; ci < ncolls; ci++) {
    int coll = colls[ci];
    if (json) printf("%s{\"collective\":\"%s\",\"rows\":[", ci ? "," : "", topo_nccl_func_name(coll, TOPO_NCCL_FILE));
    else {
      printf("\n%s\n", topo_nccl_func_name(coll, TOPO_NCCL_FILE));
      printf("%8s | %-15s %3s %11s %10s | %-15s %3s %11s %11s | %8s %-14s\n", "bytes", "topo pick",
             "ch", "profile us", "busbw GB/s", "NCCL 2.28 pick", "ch", "NCCL's us", "profile us",
             "gain", "evidence");
    }
    int first = 1;
    for (unsigned long long b = min_bytes; b <= max_bytes; b *= 2) {
      float cost[NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS];
      if (topo_nccl_model_fill(&nccl, coll, b, pipe, cost) <= 0) continue;
      topo_nccl_choice nc;
      topo_nccl_model_pick(&nccl, coll, b, pipe, &nc);
      if (topo_nccl_model_fill(&seen, coll, b, pipe, cost) <= 0) continue;
      pick t = {-1, -1, 0, -1};
      int nch = topo_table_apply(table, coll, b, pipe, 0, cost, NCCL_NUM_ALGORITHMS,
                                 NCCL_NUM_PROTOCOLS, &t.algo, &t.proto);
      if (nch < 0) { /* no prediction: NCCL's own */
        t.algo = nc.algo;
        t.proto = nc.proto;
        nch = 0;
      }
      t.nch = nch;
      t.time_us = topo_model_time(&m, coll, t.algo, t.proto, nch, (double)b, pipe, 0);
      double prof_for_nccl = topo_model_time(&m, coll, nc.algo, nc.proto, 0, (double)b, pipe, 0);
      int have_t = t.time_us > 0, have_n = prof_for_nccl > 0;
      double busbw = have_t ? (double)b / (t.time_us * 1e3) * topo_nccl_busbw_factor(coll, nranks) : 0;
      double gain = have_t && have_n ? prof_for_nccl / t.time_us : 0;
      int ev_t = evidence(&prof, coll, t.algo, t.proto, t.nch, b);
      int ev_n = evidence(&prof, coll, nc.algo, nc.proto, 0, b);
      int ev = ev_t > ev_n ? ev_t : ev_n; /* the weaker of the two */
      int nominal = net_nominal && ev == EV_MODEL;
      char hb[32];
      if (json) {
        char tt[32], bw[32], nt[32], g[32];
        json_num(tt, sizeof tt, have_t, t.time_us, 3);
        json_num(bw, sizeof bw, have_t, busbw, 6);
        json_num(nt, sizeof nt, have_n, prof_for_nccl, 3);
        json_num(g, sizeof g, have_t && have_n, gain, 4);
        printf("%s{\"bytes\":%llu,\"topo\":{\"algo\":\"%s\",\"proto\":\"%s\",\"channels\":%d,"
               "\"time_us\":%s,\"busbw_gbs\":%s,\"evidence\":\"%s\"},\"nccl\":{\"algo\":\"%s\","
               "\"proto\":\"%s\",\"channels\":%d,\"nccl_model_us\":%.3f,\"time_us\":%s,"
               "\"evidence\":\"%s\"},\"gain\":%s,\"evidence\":\"%s\",\"net_nominal\":%s}",
               first ? "" : ",", b, topo_nccl_algo_name(t.algo, TOPO_NCCL_FILE), topo_nccl_proto_name(t.proto, TOPO_NCCL_FILE), t.nch, tt,
               bw, ev_names[ev_t], topo_nccl_algo_name(nc.algo, TOPO_NCCL_FILE), topo_nccl_proto_name(nc.proto, TOPO_NCCL_FILE),
               nc.nchannels, nc.time_us, nt, ev_names[ev_n], g, ev_names[ev],
               nominal ? "true" : "false");
      } else {
        char tp[40], np[40], tt[32], bw[32], nt[32], g[32], e[24];
        snprintf(tp, sizeof tp, "%s/%s", topo_nccl_algo_name(t.algo, TOPO_NCCL_FILE), topo_nccl_proto_name(t.proto, TOPO_NCCL_FILE));
        snprintf(np, sizeof np, "%s/%s", topo_nccl_algo_name(nc.algo, TOPO_NCCL_FILE), topo_nccl_proto_name(nc.proto, TOPO_NCCL_FILE));
        text_num(tt, sizeof tt, have_t, t.time_us);
        text_num(bw, sizeof bw, have_t, busbw);
        text_num(nt, sizeof nt, have_n, prof_for_nccl);
        if (!have_t || !have_n) snprintf(g, sizeof g, "n/a");
        else if (ev == EV_MODEL) snprintf(g, sizeof g, "(%.2fx)", gain);
        else snprintf(g, sizeof g, "%.2fx", gain);
        snprintf(e, sizeof e, "%s%s", ev_names[ev], nominal ? " *" : "");
        printf("%8s | %-15s %3d %11s %10s | %-15s %3d %11.2f %11s | %8s %-14s\n",
               human(b, hb, sizeof hb), tp, t.nch, tt, bw, np, nc.nchannels, nc.time_us, nt, g, e);
      }
      first = 0;
      if (b > max_bytes / 2) break;
    }
    if (json) printf("]}");
  }
  if (json) printf("]}\n");
  topo_table_free(table);
  topo_profile_free(&prof);
  return 0;
}
