// SPDX-License-Identifier: Apache-2.0
// Rule files in the format of NCCL's example tuner (nccl_tuner.conf), see rules.h: a parser that
// turns any byte sequence into an immutable rule array (one allocation, bad lines warned and
// skipped) and a first-match lookup that is allocation-free. Loaded at tuner init and by topo-tune;
// the tuner's decision table is built from topo_rules_match, so the lookup is off the hot path too.
#include "rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "file.h"
#include "log.h"
#include "profile.h"

#define RULES_MAX_FILE (16u << 20)
#define RULES_MAX_FIELDS 10

struct topo_rules {
  int n;
  topo_rule rule[]; /* file order */
};

static char *trim(char *s, char *end) {
  while (s < end && (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\v' || *s == '\f')) s++;
  while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\v' ||
                     end[-1] == '\f'))
    end--;
  *end = '\0';
  return s;
}

/* An integer field: "-1" (returned as -1) or lo..hi. */
static int field_int(const char *s, long lo, long hi, int *out) {
  if (strcmp(s, "-1") == 0) {
    *out = -1;
    return 1;
  }
  if (*s < '0' || *s > '9') return 0;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*end || errno == ERANGE || v < lo || v > hi) return 0;
  *out = (int)v;
  return 1;
}

/* A byte count: "-1" (returned via *any = 1) or an unsigned decimal. */
static int field_bytes(const char *s, uint64_t *out, int *any) {
  *any = 0;
  if (strcmp(s, "-1") == 0) {
    *any = 1;
    return 1;
  }
  if (*s < '0' || *s > '9') return 0;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno == ERANGE) return 0;
  *out = v;
  return 1;
}

/* Parse one line (NUL-terminated, modifiable) into *r. Returns 1 for a rule, 0 for a blank or
 * comment line, -1 after warning about a malformed one. */
static int parse_line(char *line, const char *name, int lineno, topo_rule *r) {
  char *hash = strchr(line, '#');
  if (hash) *hash = '\0';
  char *s = trim(line, line + strlen(line));
  if (!*s) return 0;

  char *f[RULES_MAX_FIELDS];
  int nf = 0;
  for (char *p = s;;) {
    char *comma = strchr(p, ',');
    if (nf == RULES_MAX_FIELDS) {
      nf++;
      break;
    }
    char *end = comma ? comma : p + strlen(p);
    f[nf++] = trim(p, end);
    if (!comma) break;
    p = comma + 1;
  }
  if (nf < 8 || nf > 10) {
    TOPO_WARN("%s:%d: want 8, 9 or 10 comma-separated fields (collective,min_bytes,max_bytes,"
              "algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]), got %s%d; "
              "line skipped", name, lineno, nf > 10 ? "more than " : "", nf > 10 ? 10 : nf);
    return -1;
  }
  memset(r, 0, sizeof *r);
  r->line = lineno;
  int min_any = 0, max_any = 0;
  const char *fault = NULL, *value = NULL;
  if ((r->coll = topo_coll_from_name(f[0])) < 0) {
    fault = "unknown collective (broadcast, reduce, allgather, reducescatter, allreduce)";
    value = f[0];
  } else if (!field_bytes(f[1], &r->min_bytes, &min_any)) {
    fault = "bad min_bytes (an unsigned integer or -1)";
    value = f[1];
  } else if (!field_bytes(f[2], &r->max_bytes, &max_any)) {
    fault = "bad max_bytes (an unsigned integer or -1)";
    value = f[2];
  } else if (!min_any && !max_any && r->min_bytes > r->max_bytes) {
    fault = "min_bytes is larger than max_bytes";
    value = f[1];
  } else if ((r->algo = topo_algo_from_name(f[3])) < 0) {
    fault = "unknown algorithm (tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat)";
    value = f[3];
  } else if ((r->proto = topo_proto_from_name(f[4])) < 0) {
    fault = "unknown protocol (ll, ll128, simple)";
    value = f[4];
  } else if (!field_int(f[5], 0, TOPO_RULES_MAX_CHANNELS, &r->nchannels)) {
    fault = "bad channels (1..64, or -1 to keep NCCL's)";
    value = f[5];
  } else if (!field_int(f[6], 1, 1 << 24, &r->nnodes)) {
    fault = "bad nNodes (a positive integer or -1)";
    value = f[6];
  } else if (!field_int(f[7], 1, 1 << 24, &r->nranks)) {
    fault = "bad nRanks (a positive integer or -1)";
    value = f[7];
  } else if (nf >= 9 && !field_int(f[8], 1, 1 << 24, &r->num_pipe_ops)) {
    fault = "bad numPipeOps (a positive integer or -1)";
    value = f[8];
  } else if (nf >= 10 && !field_int(f[9], 0, 1, &r->reg_buff)) {
    fault = "bad regBuff (0, 1 or -1)";
    value = f[9];
  }
  if (fault) {
    TOPO_WARN("%s:%d: %s: '%.64s'; line skipped", name, lineno, fault, value);
    return -1;
  }
  if (min_any) r->min_bytes = 0;
  if (max_any) r->max_bytes = UINT64_MAX;
  if (nf < 9) r->num_pipe_ops = -1;
  if (nf < 10) r->reg_buff = -1;
  if (r->nchannels < 0) r->nchannels = 0; /* -1: keep NCCL's (the example's bug gave 1) */
  return 1;
}

topo_status topo_rules_parse(const char *text, size_t len, const char *name, topo_rules **out,
                             int *nbad) {
  if (nbad) *nbad = 0;
  if (!out) return TOPO_ERR_INVALID;
  *out = NULL;
  if (!text) len = 0;
  if (!name) name = "<rules>";

  size_t nlines = 1, longest = 0, start = 0;
  for (size_t i = 0; i < len; i++) {
    if (text[i] == '\n') {
      nlines++;
      if (i - start > longest) longest = i - start;
      start = i + 1;
    }
  }
  if (len - start > longest) longest = len - start;

  topo_rules *set = topo_malloc(sizeof *set + nlines * sizeof(topo_rule));
  char *line = topo_malloc(longest + 1);
  if (!set || !line) {
    topo_free(set);
    topo_free(line);
    TOPO_WARN("%s: out of memory reading the rules; no rules", name);
    return TOPO_ERR_NOMEM;
  }
  set->n = 0;
  int bad = 0, lineno = 0;
  for (size_t pos = 0; pos <= len;) {
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    lineno++;
    size_t n = end - pos;
    if (memchr(text + pos, '\0', n)) {
      TOPO_WARN("%s:%d: NUL byte in line; line skipped", name, lineno);
      bad++;
    } else {
      memcpy(line, text + pos, n);
      line[n] = '\0';
      int got = parse_line(line, name, lineno, &set->rule[set->n]);
      if (got > 0) set->n++;
      if (got < 0) bad++;
    }
    pos = end + 1;
  }
  topo_free(line);
  if (nbad) *nbad = bad;
  *out = set;
  return TOPO_OK;
}

topo_status topo_rules_load(const char *path, topo_rules **out) {
  if (!out) return TOPO_ERR_INVALID;
  *out = NULL;
  char *buf, why[96];
  size_t len;
  topo_status st = topo_file_read(path, RULES_MAX_FILE, &buf, &len, why, sizeof why);
  if (st != TOPO_OK) {
    TOPO_WARN("cannot read rule file '%s': %s; no rules", path ? path : "(null)", why);
    return st;
  }
  st = topo_rules_parse(buf, len, path, out, NULL);
  topo_free(buf);
  return st;
}

int topo_rules_count(const topo_rules *rules) { return rules ? rules->n : 0; }

const topo_rule *topo_rules_at(const topo_rules *rules, int i) {
  return rules && i >= 0 && i < rules->n ? &rules->rule[i] : NULL;
}

const topo_rule *topo_rules_match(const topo_rules *rules, int coll, uint64_t nbytes,
                                  int num_pipe_ops, int reg_buff, int nnodes, int nranks,
                                  const float *table, int num_algo, int num_proto) {
  if (!rules) return NULL;
  for (int i = 0; i < rules->n; i++) {
    const topo_rule *r = &rules->rule[i];
    if (r->coll != coll || nbytes < r->min_bytes || nbytes > r->max_bytes) continue;
    if (r->nnodes != -1 && r->nnodes != nnodes) continue;
    if (r->nranks != -1 && r->nranks != nranks) continue;
    if (r->num_pipe_ops != -1 && r->num_pipe_ops != num_pipe_ops) continue;
    if (r->reg_buff != -1 && r->reg_buff != reg_buff) continue;
    if (table) {
      if (r->algo >= num_algo || r->proto >= num_proto) continue; /* e.g. PAT on NCCL 2.22 */
      if (!(table[r->algo * num_proto + r->proto] >= 0.0f)) continue; /* ignored by NCCL */
    }
    return r;
  }
  return NULL;
}

void topo_rules_free(topo_rules *rules) { topo_free(rules); }
