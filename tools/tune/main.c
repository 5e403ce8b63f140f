// SPDX-License-Identifier: Apache-2.0
// topo-tune: print the decision map of libtopo-tuner.so for a profile (--profile FILE) or a
// built-in GPU model (--gpu H200), nRanks and nNodes: per collective and size (8 B to 8 GB,
// x2 steps), the algorithm, protocol, channels, predicted time and bus bandwidth topo picks,
// beside what NCCL 2.28's own model (tuner-plugin/nccl_model.h) would pick. Text or --json.
// The choice is made exactly as in the plugin: NCCL's cost table (which entries it allows)
// edited by the decision table, then NCCL's selection.
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "log.h"
#include "model.h"
#include "nccl_model.h"
#include "profile.h"
#include "table.h"
#include "tuner.h"
#include "topo_version.h"

static const char *prog = "topo-tune";

static void usage(FILE *f) {
  fprintf(f,
          "usage: topo-tune (--gpu MODEL | --profile FILE) --nranks N [options]\n"
          "\n"
          "Print libtopo-tuner's choice per collective and message size beside NCCL 2.28's own.\n"
          "\n"
          "  --gpu MODEL        built-in defaults: H200, H100 or A100 (default H200)\n"
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
  switch (*end) {
  case 'k': case 'K': v <<= 10; end++; break;
  case 'm': case 'M': v <<= 20; end++; break;
  case 'g': case 'G': v <<= 30; end++; break;
  }
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
      int c = topo_coll_from_name(optarg);
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
  if (profile_path) {
    topo_status st = topo_profile_load(profile_path, &want, &prof);
    if (st == TOPO_ERR_IO) return 1; /* the loader said why */
  } else if (topo_profile_builtin(gpu ? gpu : "H200", &prof) != TOPO_OK) {
    return die("unknown GPU model (H200, H100, A100)", gpu);
  }
  if (nvls < 0) nvls = prof.nvls == 1;
  const char *model_gpu = gpu ? gpu : prof.key.gpu[0] ? prof.key.gpu : "H200";

  topo_model m;
  topo_model_init(&m, &prof, nranks, nnodes, 0);
  topo_table *table;
  if (topo_table_build(&m, &table) != TOPO_OK) {
    fprintf(stderr, "%s: out of memory\n", prog);
    return 1;
  }
  topo_nccl_system sys;
  topo_nccl_model nccl;
  if (topo_nccl_system_default(model_gpu, nranks, nnodes, nvls, &sys) != TOPO_OK)
    fprintf(stderr, "%s: warning: NCCL's topology for '%s' unknown; using H200's\n", prog, model_gpu);
  topo_nccl_model_build(&sys, NULL, &nccl);
  /* What the plugin sees: on NCCL 2.28+ its init writes the profile's latencies and bandwidths
   * into NCCL's tuning constants first, so NCCL's cost table (and its pick, which the tuner keeps
   * unless it predicts a clear gain) comes from those. "NCCL 2.28 pick" stays NCCL's alone. */
  ncclTunerConstants_v5_t seen_constants;
  topo_nccl_constants_default(&seen_constants);
  if (topo_env_bool(TOPO_ENV_TUNER_CONSTANTS)) topo_tuner_write_constants(&m, model_gpu, &seen_constants);
  topo_nccl_model seen;
  topo_nccl_model_build(&sys, &seen_constants, &seen);

  if (json) {
    printf("{\"version\":\"%s\",\"profile\":\"%s\",\"nranks\":%d,\"nnodes\":%d,\"nvls\":%d,"
           "\"pipe_ops\":%d,\"collectives\":[",
           TOPO_VERSION, prof.source, nranks, nnodes, nvls, pipe);
  } else {
    printf("topo-tune %s: %s, %d ranks on %d node%s, NVLS %s, numPipeOps %d\n", TOPO_VERSION,
           prof.source, nranks, nnodes, nnodes > 1 ? "s" : "", nvls ? "on" : "off", pipe);
    printf("channels 0 = NCCL's own count; busbw by nccl-tests factors; 'topo us' = our model's\n"
           "prediction for that choice (for NCCL's pick too).\n");
  }
  for (int ci = 0; ci < ncolls; ci++) {
    int coll = colls[ci];
    if (json) printf("%s{\"collective\":\"%s\",\"rows\":[", ci ? "," : "", topo_coll_name(coll));
    else {
      printf("\n%s\n", topo_coll_name(coll));
      printf("%8s | %-15s %3s %11s %10s | %-15s %3s %11s %11s %7s\n", "bytes", "topo pick", "ch",
             "topo us", "busbw GB/s", "NCCL 2.28 pick", "ch", "NCCL's us", "topo us", "gain");
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
      double ours_for_nccl = topo_model_time(&m, coll, nc.algo, nc.proto, 0, (double)b, pipe, 0);
      double busbw = t.time_us > 0 ? (double)b / (t.time_us * 1e3) * topo_model_busbw_factor(coll, nranks) : 0;
      double gain = t.time_us > 0 && ours_for_nccl > 0 ? ours_for_nccl / t.time_us : 0;
      char hb[32];
      if (json) {
        printf("%s{\"bytes\":%llu,\"topo\":{\"algo\":\"%s\",\"proto\":\"%s\",\"channels\":%d,"
               "\"time_us\":%.3f,\"busbw_gbs\":%.2f},\"nccl\":{\"algo\":\"%s\",\"proto\":\"%s\","
               "\"channels\":%d,\"time_us\":%.3f,\"topo_model_us\":%.3f}}",
               first ? "" : ",", b, topo_algo_name(t.algo), topo_proto_name(t.proto), t.nch,
               t.time_us, busbw, topo_algo_name(nc.algo), topo_proto_name(nc.proto), nc.nchannels,
               nc.time_us, ours_for_nccl);
      } else {
        char tp[40], np[40];
        snprintf(tp, sizeof tp, "%s/%s", topo_algo_name(t.algo), topo_proto_name(t.proto));
        snprintf(np, sizeof np, "%s/%s", topo_algo_name(nc.algo), topo_proto_name(nc.proto));
        printf("%8s | %-15s %3d %11.2f %10.2f | %-15s %3d %11.2f %11.2f %6.2fx\n",
               human(b, hb, sizeof hb), tp, t.nch, t.time_us, busbw, np, nc.nchannels, nc.time_us,
               ours_for_nccl, gain);
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
