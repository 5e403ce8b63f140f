// SPDX-License-Identifier: Apache-2.0
// Parser for the recorded profiler events (see recorded_events.h).
#include "recorded_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/profiler_common.h"

/* Value after " key=" (a space before the key so "id=" does not match "pid="). */
static const char *field(const char *line, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, " %s=", key);
  const char *p = strstr(line, pat);
  return p ? p + strlen(pat) : NULL;
}

static void word(const char *p, char *out, size_t n) {
  size_t i = 0;
  if (p)
    while (p[i] && p[i] != ' ' && p[i] != '\n' && i + 1 < n) {
      out[i] = p[i];
      i++;
    }
  out[i] = 0;
}

static long long num(const char *line, const char *key, long long def) {
  const char *p = field(line, key);
  return p ? strtoll(p, NULL, 0) : def;
}

static uint64_t type_bit(const char *name) {
  static const struct {
    const char *name;
    uint64_t bit;
  } t[] = {{"Group", ncclProfileGroup},
           {"Coll", ncclProfileColl},
           {"P2p", ncclProfileP2p},
           {"ProxyOp", ncclProfileProxyOp},
           {"ProxyStep", ncclProfileProxyStep},
           {"ProxyCtrl", ncclProfileProxyCtrl},
           {"KernelCh", ncclProfileKernelCh},
           {"NetPlugin", ncclProfileNetPlugin},
           {"GroupApi", ncclProfileGroupApi},
           {"CollApi", ncclProfileCollApi},
           {"P2pApi", ncclProfileP2pApi},
           {"KernelLaunch", ncclProfileKernelLaunch}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(name, t[i].name)) return t[i].bit;
  return 0;
}

int topo_rec_parse_event(const char *line, topo_rec_event *o) {
  memset(o, 0, sizeof *o);
  long long ns;
  long tid;
  char call[16];
  int used = 0;
  if (sscanf(line, "%lld tid=%ld %15s%n", &ns, &tid, call, &used) != 3) return 0;
  o->ns = ns;
  o->tid = tid;
  const char *rest = line + used;
  if (!strcmp(call, "PROF_INIT")) {
    const char *p = field(line, "comm");
    if (!p) return 0;
    o->kind = TOPO_REV_INIT;
    o->comm = strtoull(p, NULL, 16);
    word(field(line, "name"), o->name, sizeof o->name);
    o->nnodes = (int)num(line, "nNodes", 0);
    o->nranks = (int)num(line, "nranks", 0);
    o->rank = (int)num(line, "rank", 0);
    p = field(line, "mask");
    o->mask = p ? (int)strtol(p, NULL, 16) : 0;
    return 1;
  }
  if (!strcmp(call, "PROF_FIN")) {
    o->kind = TOPO_REV_FIN;
    return 1;
  }
  if (!field(line, "id")) return 0;
  o->id = (uint64_t)num(line, "id", 0);
  if (!strcmp(call, "STOP")) {
    o->kind = TOPO_REV_STOP;
    return 1;
  }
  if (!strcmp(call, "STATE")) {
    o->kind = TOPO_REV_STATE;
    o->state = (int)num(line, "state", -1);
    if (field(line, "transSize")) {
      o->has_trans_size = 1;
      o->trans_size = (size_t)num(line, "transSize", 0);
    }
    if (field(line, "pTimer")) {
      o->has_ptimer = 1;
      o->ptimer = strtoull(field(line, "pTimer"), NULL, 10);
    }
    return o->state >= 0;
  }
  if (strcmp(call, "START")) return 0;
  o->kind = TOPO_REV_START;
  o->parent = (uint64_t)num(line, "parent", 0);
  o->rank = (int)num(line, "rank", 0);
  /* The type name is the word after "rank=N". */
  const char *p = strstr(rest, " rank=");
  if (!p) return 0;
  p = strchr(p + 1, ' ');
  if (!p) return 0;
  word(p + 1, o->type_name, sizeof o->type_name);
  o->type = type_bit(o->type_name);
  o->seq = (uint64_t)num(line, "seq", 0);
  word(field(line, "func"), o->func, sizeof o->func);
  word(field(line, "dtype"), o->dtype, sizeof o->dtype);
  word(field(line, "algo"), o->algo, sizeof o->algo);
  word(field(line, "proto"), o->proto, sizeof o->proto);
  word(field(line, "stream"), o->stream, sizeof o->stream);
  o->count = (size_t)num(line, "count", 0);
  o->root = (int)num(line, "root", 0);
  o->peer = (int)num(line, "peer", -1);
  o->nch = (int)num(line, "nCh", 0);
  o->nwarps = (int)num(line, "nWarps", 0);
  o->pid = (int)num(line, "pid", 0);
  o->ch = (int)num(line, "ch", 0);
  o->nsteps = (int)num(line, "nSteps", 0);
  o->chunk = (int)num(line, "chunk", 0);
  o->is_send = (int)num(line, "isSend", 0);
  o->step = (int)num(line, "step", 0);
  if (field(line, "pTimer")) {
    o->has_ptimer = 1;
    o->ptimer = strtoull(field(line, "pTimer"), NULL, 10);
  }
  o->graph = (int)num(line, "graph", 0);
  o->depth = (int)num(line, "depth", 0);
  return 1;
}
