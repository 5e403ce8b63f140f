// SPDX-License-Identifier: Apache-2.0
// Rule files in the format of NCCL's example tuner (nccl_tuner.conf), see rules.h: a parser that
// turns any byte sequence into an immutable rule array (one allocation, bad lines warned and
// skipped) and its index: the example's first-match scan compiled at init into per-collective
// segments of the byte axis with their few candidates, so that a lookup never scans the rules.
#include "rules.h"

#include <stdatomic.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "file.h"
#include "log.h"
#include "profile.h"

#define RULES_MAX_FILE     (16u << 20)
#define RULES_MAX_FIELDS   10
#define RULES_MAX_WARNINGS 32 /* per file; the rest are counted in one summary line */

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
 * comment line, -1 for a malformed one (after a warning unless `quiet`). */
static int parse_line(char *line, const char *name, int lineno, int quiet, topo_rule *r) {
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
    if (!quiet)
      TOPO_WARN(
          "%s:%d: want 8, 9 or 10 comma-separated fields (collective,min_bytes,max_bytes,"
          "algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]), got %s%d; "
          "line skipped",
          name, lineno, nf > 10 ? "more than " : "", nf > 10 ? 10 : nf);
    return -1;
  }
  memset(r, 0, sizeof *r);
  r->line = lineno;
  int min_any = 0, max_any = 0;
  const char *fault = NULL, *value = NULL;
  if ((r->coll = topo_nccl_coll_from_name(f[0])) < 0) {
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
  } else if ((r->algo = topo_nccl_algo_from_name(f[3])) < 0) {
    fault = "unknown algorithm (tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat)";
    value = f[3];
  } else if ((r->proto = topo_nccl_proto_from_name(f[4])) < 0) {
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
    if (!quiet) TOPO_WARN("%s:%d: %s: '%.64s'; line skipped", name, lineno, fault, value);
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
      if (bad < RULES_MAX_WARNINGS)
        TOPO_WARN("%s:%d: NUL byte in line; line skipped", name, lineno);
      bad++;
    } else {
      memcpy(line, text + pos, n);
      line[n] = '\0';
      int got = parse_line(line, name, lineno, bad >= RULES_MAX_WARNINGS, &set->rule[set->n]);
      if (got > 0) set->n++;
      if (got < 0) bad++;
    }
    pos = end + 1;
  }
  topo_free(line);
  if (bad > RULES_MAX_WARNINGS)
    TOPO_WARN("%d more bad lines in %s; skipped", bad - RULES_MAX_WARNINGS, name);
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

/* One candidate of a segment: a rule that may be the first match there. */
typedef struct rx_cand {
  uint32_t rule; /* index in the set */
  int32_t pipe;  /* numPipeOps constraint, -1 = any */
  int8_t algo, proto, reg;
} rx_cand;

#define RX_OCTAVES 65 /* octave of n: 0 for 0, else 64 - clz(n) (1..64) */

typedef struct rx_coll {
  uint32_t nseg;                /* 0: no rule for this collective */
  uint64_t *lo;                 /* lower bound of each segment (lo[0] = 0), ascending */
  uint32_t *first;              /* candidates of segment j: cand[first[j] .. first[j+1]) */
  uint32_t oct[RX_OCTAVES + 1]; /* segment holding the octave's lower edge; [65] = last */
} rx_coll;

struct topo_rules_index {
  const topo_rules *rules;
  rx_coll c[NCCL_NUM_FUNCTIONS];
  rx_cand *cand;
  atomic_uchar *reported; /* per rule of the set */
};

static int octave(uint64_t n) { return n ? 64 - __builtin_clzll(n) : 0; }

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Last segment j in [lo, hi] with seg_lo[j] <= n (seg_lo[lo] <= n holds). */
static uint32_t seg_search(const uint64_t *seg_lo, uint32_t lo, uint32_t hi, uint64_t n,
                           topo_rules_probe *probe) {
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo + 1) / 2;
    if (seg_lo[mid] <= n) lo = mid;
    else hi = mid - 1;
    if (probe) probe->search_steps++;
  }
  return lo;
}

/* Whether earlier candidate e makes rule r unreachable: same entry, constraints no narrower. */
static int dominates(const rx_cand *e, const topo_rule *r) {
  return e->algo == r->algo && e->proto == r->proto &&
         (e->pipe == -1 || e->pipe == r->num_pipe_ops) && (e->reg == -1 || e->reg == r->reg_buff);
}

void topo_rules_index_free(topo_rules_index *ix) {
  if (!ix) return;
  for (int c = 0; c < NCCL_NUM_FUNCTIONS; c++) {
    topo_free(ix->c[c].lo);
    topo_free(ix->c[c].first);
  }
  topo_free(ix->cand);
  topo_free(ix->reported);
  topo_free(ix);
}

topo_status topo_rules_index_build(const topo_rules *rules, int nnodes, int nranks,
                                   topo_rules_index **out) {
  if (!out) return TOPO_ERR_INVALID;
  *out = NULL;
  if (!rules || rules->n == 0) return TOPO_OK;
  int n = rules->n;
  topo_rules_index *ix = topo_calloc(1, sizeof *ix);
  uint32_t *mine = topo_malloc((size_t)n * sizeof *mine);
  uint64_t *bound = topo_malloc((2 * (size_t)n + 1) * sizeof *bound);
  if (ix) ix->reported = topo_calloc((size_t)n, sizeof *ix->reported);
  if (!ix || !mine || !bound || !ix->reported) goto nomem;
  ix->rules = rules;
  size_t ncand = 0, cap = 0;
  for (int coll = 0; coll < NCCL_NUM_FUNCTIONS; coll++) {
    rx_coll *c = &ix->c[coll];
    uint32_t nm = 0, nb = 0;
    bound[nb++] = 0;
    for (int i = 0; i < n; i++) {
      const topo_rule *r = &rules->rule[i];
      if (r->coll != coll || (r->nnodes != -1 && r->nnodes != nnodes) ||
          (r->nranks != -1 && r->nranks != nranks))
        continue;
      mine[nm++] = (uint32_t)i;
      bound[nb++] = r->min_bytes;
      if (r->max_bytes != UINT64_MAX) bound[nb++] = r->max_bytes + 1;
    }
    if (!nm) continue;
    qsort(bound, nb, sizeof *bound, cmp_u64);
    uint32_t nseg = 0;
    for (uint32_t i = 0; i < nb; i++)
      if (!nseg || bound[i] != bound[nseg - 1]) bound[nseg++] = bound[i];
    c->lo = topo_malloc(nseg * sizeof *c->lo);
    c->first = topo_malloc((nseg + 1) * sizeof *c->first);
    if (!c->lo || !c->first) goto nomem;
    memcpy(c->lo, bound, nseg * sizeof *c->lo);
    c->nseg = nseg;
    for (uint32_t j = 0; j < nseg; j++) {
      c->first[j] = (uint32_t)ncand;
      uint64_t x = c->lo[j]; /* every rule here covers the whole segment or none of it */
      uint32_t closed = 0;   /* entries already taken by an unconstrained candidate */
      for (uint32_t k = 0; k < nm && closed != TOPO_RULES_ALLOW_ALL; k++) {
        const topo_rule *r = &rules->rule[mine[k]];
        if (x < r->min_bytes || x > r->max_bytes) continue;
        uint32_t bit = 1u << (r->algo * NCCL_NUM_PROTOCOLS + r->proto);
        if (closed & bit) continue;
        int dead = 0;
        for (size_t e = c->first[j]; e < ncand && !dead; e++) dead = dominates(&ix->cand[e], r);
        if (dead) continue;
        if (ncand == cap) {
          size_t ncap = cap ? 2 * cap : 64;
          rx_cand *grown = topo_realloc(ix->cand, ncap * sizeof *grown);
          if (!grown) goto nomem;
          ix->cand = grown;
          cap = ncap;
        }
        ix->cand[ncand++] = (rx_cand){mine[k], r->num_pipe_ops, (int8_t)r->algo, (int8_t)r->proto,
                                      (int8_t)r->reg_buff};
        if (r->num_pipe_ops == -1 && r->reg_buff == -1) closed |= bit;
      }
    }
    c->first[nseg] = (uint32_t)ncand;
    for (int o = 0; o < RX_OCTAVES; o++) {
      uint64_t edge = o ? 1ull << (o - 1) : 0;
      c->oct[o] = seg_search(c->lo, 0, nseg - 1, edge, NULL);
    }
    c->oct[RX_OCTAVES] = nseg - 1;
  }
  topo_free(mine);
  topo_free(bound);
  *out = ix;
  return TOPO_OK;
nomem:
  topo_free(mine);
  topo_free(bound);
  topo_rules_index_free(ix);
  TOPO_WARN("out of memory indexing the rules; no rules");
  return TOPO_ERR_NOMEM;
}

const topo_rule *topo_rules_index_find(const topo_rules_index *ix, int coll, uint64_t nbytes,
                                       int num_pipe_ops, int reg_buff, const float *table,
                                       int num_algo, int num_proto, uint32_t allow,
                                       const topo_rule **ignored, topo_rules_probe *probe) {
  if (ignored) *ignored = NULL;
  if (!ix || coll < 0 || coll >= NCCL_NUM_FUNCTIONS) return NULL;
  const rx_coll *c = &ix->c[coll];
  if (!c->nseg) return NULL;
  int o = octave(nbytes);
  uint32_t j = seg_search(c->lo, c->oct[o], c->oct[o + 1], nbytes, probe);
  for (uint32_t k = c->first[j]; k < c->first[j + 1]; k++) {
    const rx_cand *e = &ix->cand[k];
    if (probe) probe->candidates++;
    if ((e->pipe != -1 && e->pipe != num_pipe_ops) || (e->reg != -1 && e->reg != reg_buff))
      continue;
    int ok = (allow >> (e->algo * NCCL_NUM_PROTOCOLS + e->proto)) & 1;
    if (ok && table)
      ok = e->algo < num_algo && e->proto < num_proto &&
           table[e->algo * num_proto + e->proto] >= 0.0f;
    if (ok) return &ix->rules->rule[e->rule];
    if (ignored && !*ignored && !atomic_load_explicit(&ix->reported[e->rule], memory_order_relaxed))
      *ignored = &ix->rules->rule[e->rule];
  }
  return NULL;
}

int topo_rules_index_report_once(const topo_rules_index *ix, const topo_rule *rule) {
  if (!ix || !rule || rule < ix->rules->rule || rule >= ix->rules->rule + ix->rules->n) return 0;
  atomic_uchar *flag = &ix->reported[rule - ix->rules->rule];
  if (atomic_load_explicit(flag, memory_order_relaxed)) return 0;
  return atomic_exchange_explicit(flag, 1, memory_order_relaxed) == 0;
}

void topo_rules_free(topo_rules *rules) { topo_free(rules); }
