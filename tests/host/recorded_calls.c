// SPDX-License-Identifier: Apache-2.0
// Parser for the recorded tuner calls (see recorded_calls.h).
#include "recorded_calls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *field(const char *line, const char *key) {
  const char *p = strstr(line, key);
  return p ? p + strlen(key) : NULL;
}

static int parse_list(const char *p, double *out, int n) {
  if (!p) return 0;
  for (int i = 0; i < n; i++) {
    char *end;
    out[i] = strtod(p, &end);
    if (end == p) return 0;
    p = end;
    if (*p == ',') p++;
  }
  return 1;
}

int topo_rec_parse_tuner_init(const char *line, topo_rec_tuner_init *o) {
  if (!strstr(line, " TUNER_INIT ")) return 0;
  memset(o, 0, sizeof *o);
  const char *p;
  if (!(p = field(line, "comm="))) return 0;
  o->comm = strtoull(p, NULL, 16);
  if (!(p = field(line, "nRanks="))) return 0;
  o->nranks = atoi(p);
  if (!(p = field(line, "nNodes="))) return 0;
  o->nnodes = atoi(p);
  if (!(p = field(line, "nvl=")) || sscanf(p, "%d,%d,%d", &o->nvl[0], &o->nvl[1], &o->nvl[2]) != 3)
    return 0;
  return parse_list(field(line, "baseLat="), o->base_lat, 21) &&
         parse_list(field(line, " hw="), o->hw_lat, 63) &&
         parse_list(field(line, "llMax="), o->ll_max, 12) &&
         parse_list(field(line, "ringLL128="), o->ring_ll128, 12);
}

int topo_rec_parse_tuner_get(const char *line, topo_rec_tuner_get *o) {
  if (!strstr(line, " TUNER_GET ")) return 0;
  memset(o, 0, sizeof *o);
  const char *p;
  if (!(p = field(line, "comm="))) return 0;
  o->comm = strtoull(p, NULL, 16);
  if (sscanf(field(line, "coll=") ? field(line, "coll=") : "", "%d", &o->coll) != 1) return 0;
  if (!(p = field(line, "bytes="))) return 0;
  o->bytes = strtoull(p, NULL, 10);
  if (!(p = field(line, "pipe="))) return 0;
  o->pipe = atoi(p);
  if (!(p = field(line, "algos="))) return 0;
  o->algos = atoi(p);
  if (!(p = field(line, "protos="))) return 0;
  o->protos = atoi(p);
  if (!(p = field(line, "reg="))) return 0;
  o->reg = atoi(p);
  if (!(p = field(line, "nCh="))) return 0;
  o->nch = atoi(p);
  if (o->algos * o->protos > 21 || o->algos <= 0 || o->protos != 3) return 0;
  double t[21];
  if (!parse_list(field(line, "table="), t, o->algos * o->protos)) return 0;
  for (int i = 0; i < o->algos * o->protos; i++) o->table[i] = (float)t[i];
  return 1;
}

const char *topo_rec_data_dir(void) {
#ifdef TOPO_TEST_DATA_DIR
  return TOPO_TEST_DATA_DIR;
#else
  return "tests/data";
#endif
}
