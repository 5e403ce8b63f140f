/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Converts the 2 x H200 CUDA-graph sweep (tests/data/nccl-2.28.9-2xh200/graph-sweep.txt: config,
 * op, bytes, median us, min, max of 7 replays) into a profile of measured points, as topo's
 * profile writer stores them. median_us = the sweep's median; noise_us = half the min..max spread
 * of the replays. A forced channel count k is kept only where NCCL itself would run more than k
 * channels (NCCL_MAX_NCHANNELS=k above that changes nothing). The point of the forced setting
 * whose median is nearest NCCL's default at a size is marked default=1.
 */
#ifndef TOPO_TEST_SWEEP_PROFILE_H
#define TOPO_TEST_SWEEP_PROFILE_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "profile.h"

typedef struct sweep_row {
  char config[32], op[32];
  unsigned long long bytes;
  double med, lo, hi;
} sweep_row;

static int sweep_coll(const char *op) {
  if (!strcmp(op, "all_reduce")) return ncclFuncAllReduce;
  if (!strcmp(op, "all_gather")) return ncclFuncAllGather;
  if (!strcmp(op, "reduce_scatter")) return ncclFuncReduceScatter;
  return -1;
}

/* "Ring-LL128-ch8" -> algo, proto, channels (0 = NCCL's own); 0 for "default" or unknown. */
static int sweep_config(const char *c, int *algo, int *proto, int *ch) {
  char a[16] = "", p[16] = "";
  *ch = 0;
  if (sscanf(c, "%15[A-Za-z]-%15[A-Za-z0-9]-ch%d", a, p, ch) < 2) return 0;
  if ((*algo = topo_nccl_algo_from_name(a)) < 0 || (*proto = topo_nccl_proto_from_name(p)) < 0)
    return 0;
  return 1;
}

/* NCCL 2.28's channel count for (algo, proto) at `bytes` on the sweep's communicator: 2 ranks on
 * one node, 24 collective channels ("24 coll channels" in nccl-debug-log.txt). */
#define SWEEP_COMM_CHANNELS 24
static int sweep_nccl_channels(int algo, int proto, unsigned long long bytes) {
  topo_nccl_channel_inputs in = {.nchannels = SWEEP_COMM_CHANNELS,
                                 .nnodes = 1,
                                 .max_threads = topo_nccl_max_threads(algo, proto, 0),
                                 .threshold = topo_nccl_thread_threshold(algo, proto, 2)};
  int nc = 0, nt = 0;
  topo_nccl_channels(algo, proto, bytes, &in, &nc, &nt);
  return nc;
}

static int sweep_read(const char *path, sweep_row *rows, int max) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int n = 0;
  char line[256];
  while (n < max && fgets(line, sizeof line, f)) {
    sweep_row *r = &rows[n];
    if (sscanf(line, "%31s %31s %llu %lf %lf %lf", r->config, r->op, &r->bytes, &r->med, &r->lo,
               &r->hi) == 6)
      n++;
  }
  fclose(f);
  return n;
}

/* Add the points of rows[] to `p` (keyed H200, 2 ranks, 1 node, `nccl`); `use(bytes)` selects
 * the sizes that go in (NULL: all). Returns the number of points added. */
static int sweep_to_profile(const sweep_row *rows, int n, int nccl, int (*use)(unsigned long long),
                            topo_profile *p) {
  topo_profile_builtin("H200", p);
  p->key.nranks = 2;
  p->key.nnodes = 1;
  p->key.nccl_version = nccl;
  p->nvls = 0;
  int added = 0;
  for (int i = 0; i < n; i++) {
    int algo, proto, ch, coll = sweep_coll(rows[i].op);
    if (coll < 0 || !sweep_config(rows[i].config, &algo, &proto, &ch)) continue;
    if (use && !use(rows[i].bytes)) continue;
    if (ch && ch >= sweep_nccl_channels(algo, proto, rows[i].bytes)) continue;
    topo_profile_point pt = {
        coll, algo, proto, ch, rows[i].bytes, rows[i].med, (rows[i].hi - rows[i].lo) / 2, 0};
    for (int j = 0; j < n && !ch; j++) /* NCCL's default ran the nearest forced setting */
      if (!strcmp(rows[j].config, "default") && !strcmp(rows[j].op, rows[i].op) &&
          rows[j].bytes == rows[i].bytes) {
        int best = i;
        for (int k = 0; k < n; k++) {
          int a2, p2, c2;
          if (strcmp(rows[k].op, rows[i].op) || rows[k].bytes != rows[i].bytes ||
              !sweep_config(rows[k].config, &a2, &p2, &c2) || c2)
            continue;
          if (fabs(rows[k].med - rows[j].med) < fabs(rows[best].med - rows[j].med)) best = k;
        }
        pt.is_default = best == i;
      }
    if (topo_profile_add_point(p, &pt) == TOPO_OK) added++;
  }
  return added;
}

#endif
