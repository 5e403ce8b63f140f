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

/* ---- The index.
 *
 * Rules are grouped into classes: one collective, one (numPipeOps, regBuff) constraint. Inside a
 * class a later rule of the same (algorithm, protocol) entry never wins where an earlier one
 * covers the size (same constraints, same entry: whatever lets the later one match lets the
 * earlier one), so each segment of the class's byte axis keeps, per entry, the earliest rule
 * covering it: at most 21 candidates, in file order. A query meets at most four classes (numPipeOps
 * any or its own, regBuff any or its own): the answer is the earliest allowed candidate among
 * them. Build: sorting, then per class and entry a union-find "paint" of the uncovered segments in
 * file order, O(n log n) over n rules however they nest; memory: at most 21 candidates per
 * segment, and in practice about one per rule (segments whose candidates repeat are merged). */

#define RX_OCTAVES    65 /* octave of n: 0 for 0, else 64 - clz(n) (1..64) */
#define RX_OCT_TABLE  8  /* a class of more segments gets a bucket table */
#define RX_SUB_MAX    12 /* at most 2^12 buckets per octave */
#define RX_ENTRY_BITS 5  /* a candidate: rule index << 5 | algo * NCCL_NUM_PROTOCOLS + proto */
#define RX_MAX_RULES  (1u << (32 - RX_ENTRY_BITS))

typedef struct rx_class {
  int32_t pipe; /* -1 = any */
  int8_t reg;   /* -1 = any */
  int8_t coll;
  uint32_t nseg; /* segments seg0 .. seg0 + nseg of the shared arrays */
  uint32_t seg0;
  uint32_t oct; /* its bucket table: RX_OCTAVES << sub + 1 entries of ix->oct from here;
                   UINT32_MAX: none (a binary search over its few segments) */
  uint8_t sub;  /* buckets per octave: 2^sub, about as many buckets as segments */
} rx_class;

struct topo_rules_index {
  const topo_rules *rules;
  rx_class *cls;
  uint32_t ncls;
  int32_t any[NCCL_NUM_FUNCTIONS][3];   /* class of numPipeOps any, regBuff any/0/1; -1 none */
  uint8_t has_pipe[NCCL_NUM_FUNCTIONS]; /* a class with a numPipeOps of its own */
  uint32_t *slot;                       /* (coll, pipe, reg) -> class + 1; 0 empty */
  uint32_t nslot;                       /* power of two */
  uint64_t *lo;    /* lower bound of each segment, ascending within a class (first: 0) */
  uint32_t *first; /* candidates of segment k: cand[first[k] .. first[k + 1]) (one extra) */
  uint32_t *cand;
  uint32_t *oct; /* per bucket: the segment (relative) holding its lower edge; then the last */
  size_t nsegs, ncand;
  atomic_uchar *reported; /* per rule of the set */
};

static int octave(uint64_t n) { return n ? 64 - __builtin_clzll(n) : 0; }

/* Log-linear buckets: octave o of n, split into 2^sub equal parts (fewer values than parts in
 * the small octaves: each value its own part). Bucket of n, and the lower edge of bucket i (the
 * smallest n of a bucket >= i: edges never decrease). */
static uint32_t bucket_of(uint64_t n, int sub) {
  int o = octave(n);
  if (!o) return 0;
  int w = o - 1; /* n in [2^w, 2^(w+1)) */
  uint64_t off = n - (1ull << w);
  uint64_t part = w >= sub ? off >> (w - sub) : off << (sub - w);
  return (uint32_t)o << sub | (uint32_t)part;
}

static uint64_t bucket_edge(uint32_t i, int sub) {
  int o = (int)(i >> sub);
  if (!o) return (i & ((1u << sub) - 1)) ? 1 : 0;
  int w = o - 1;
  uint64_t part = i & ((1u << sub) - 1);
  if (w >= sub) return (1ull << w) + (part << (w - sub));
  uint64_t step = 1ull << (sub - w); /* parts per value */
  return (1ull << w) + (part + step - 1) / step;
}

static uint32_t slot_hash(int coll, int32_t pipe, int reg) {
  uint64_t h =
      ((uint64_t)(uint32_t)pipe << 8 | (uint64_t)(coll * 3 + reg + 1)) * 0x9e3779b97f4a7c15ull;
  return (uint32_t)(h >> 32);
}

/* The class of (coll, pipe, reg) with pipe >= 1: index, or -1. */
static int32_t class_of(const topo_rules_index *ix, int coll, int32_t pipe, int reg) {
  if (!ix->nslot) return -1;
  for (uint32_t j = slot_hash(coll, pipe, reg) & (ix->nslot - 1);; j = (j + 1) & (ix->nslot - 1)) {
    uint32_t v = ix->slot[j];
    if (!v) return -1;
    const rx_class *c = &ix->cls[v - 1];
    if (c->coll == coll && c->pipe == pipe && c->reg == reg) return (int32_t)(v - 1);
  }
}

/* Last segment k in [lo, hi] with seg_lo[k] <= n (seg_lo[lo] <= n holds). */
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

void topo_rules_index_free(topo_rules_index *ix) {
  if (!ix) return;
  topo_free(ix->cls);
  topo_free(ix->slot);
  topo_free(ix->lo);
  topo_free(ix->first);
  topo_free(ix->cand);
  topo_free(ix->oct);
  topo_free(ix->reported);
  topo_free(ix);
}

/* Rules of the communicator, ordered by class (coll, pipe, reg), then file order. */
typedef struct rx_key {
  int8_t coll, reg;
  int32_t pipe;
  uint32_t rule;
} rx_key;

static int cmp_key(const void *a, const void *b) {
  const rx_key *x = a, *y = b;
  if (x->coll != y->coll) return x->coll - y->coll;
  if (x->pipe != y->pipe) return x->pipe < y->pipe ? -1 : 1;
  if (x->reg != y->reg) return x->reg - y->reg;
  return (x->rule > y->rule) - (x->rule < y->rule);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* A painted (segment, candidate) pair, before grouping by segment. */
typedef struct rx_pair {
  uint32_t seg, cand;
} rx_pair;

/* Room for `more` elements beyond *n in *v (capacity *cap), *v allocated even for none; 0 when
 * out of memory. */
static int reserve(void **v, size_t *cap, size_t n, size_t more, size_t elem) {
  if (*v && n + more <= *cap) return 1;
  size_t c = *cap ? *cap : 64;
  while (c < n + more) c *= 2;
  void *p = topo_realloc(*v, c * elem);
  if (!p) return 0;
  *v = p;
  *cap = c;
  return 1;
}

/* Scratch shared by every class of one build. */
typedef struct rx_build {
  uint64_t *bound;  /* 2 x rules + 1 */
  uint32_t *parent; /* union-find over segments: the first unpainted segment at or after k */
  rx_pair *pair;
  size_t npair, cap_pair;
  uint32_t *sorted; /* the pairs' candidates grouped by segment */
  size_t cap_sorted;
  size_t cap_lo, cap_first, cap_cand, cap_oct, noct;
} rx_build;

static uint32_t uf_find(uint32_t *parent, uint32_t k) {
  uint32_t r = k;
  while (parent[r] != r) r = parent[r];
  while (parent[k] != r) {
    uint32_t next = parent[k];
    parent[k] = r;
    k = next;
  }
  return r;
}

/* One class: the rules key[0..n) (file order). Appends its segments and candidates. */
static int build_class(topo_rules_index *ix, rx_build *b, const rx_key *key, size_t n,
                       rx_class *c) {
  const topo_rule *rule = ix->rules->rule;
  size_t nb = 0;
  b->bound[nb++] = 0;
  for (size_t i = 0; i < n; i++) {
    b->bound[nb++] = rule[key[i].rule].min_bytes;
    if (rule[key[i].rule].max_bytes != UINT64_MAX) b->bound[nb++] = rule[key[i].rule].max_bytes + 1;
  }
  qsort(b->bound, nb, sizeof *b->bound, cmp_u64);
  uint32_t nseg = 0;
  for (size_t i = 0; i < nb; i++)
    if (!nseg || b->bound[i] != b->bound[nseg - 1]) b->bound[nseg++] = b->bound[i];
  /* per entry, in file order: each rule takes the segments no earlier rule of its entry has */
  b->npair = 0;
  for (int e = 0; e < NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS; e++) {
    int any = 0;
    for (size_t i = 0; i < n; i++) {
      const topo_rule *r = &rule[key[i].rule];
      if (r->algo * NCCL_NUM_PROTOCOLS + r->proto != e) continue;
      if (!any) {
        for (uint32_t k = 0; k <= nseg; k++) b->parent[k] = k;
        any = 1;
      }
      uint32_t a = seg_search(b->bound, 0, nseg - 1, r->min_bytes, NULL);
      uint32_t z = seg_search(b->bound, 0, nseg - 1, r->max_bytes, NULL);
      for (uint32_t k = uf_find(b->parent, a); k <= z; k = uf_find(b->parent, k)) {
        if (!reserve((void **)&b->pair, &b->cap_pair, b->npair, 1, sizeof *b->pair)) return 0;
        b->pair[b->npair++] = (rx_pair){k, key[i].rule << RX_ENTRY_BITS | (uint32_t)e};
        b->parent[k] = k + 1;
      }
    }
  }
  /* the pairs by segment (a counting sort; b->parent, no longer needed, counts), then each
   * segment's few candidates in file order */
  uint32_t *at = b->parent;
  memset(at, 0, (nseg + 1) * sizeof *at);
  for (size_t t = 0; t < b->npair; t++) at[b->pair[t].seg + 1]++;
  for (uint32_t k = 0; k < nseg; k++) at[k + 1] += at[k];
  if (!reserve((void **)&b->sorted, &b->cap_sorted, 0, b->npair, sizeof *b->sorted)) return 0;
  for (size_t t = 0; t < b->npair; t++) b->sorted[at[b->pair[t].seg]++] = b->pair[t].cand;
  /* segments in order, each with its candidates; one equal to the segment before it is merged */
  c->seg0 = (uint32_t)ix->nsegs;
  c->nseg = 0;
  c->oct = UINT32_MAX;
  size_t p = 0;
  for (uint32_t k = 0; k < nseg; k++) {
    size_t q = at[k]; /* after the placing pass: the end of segment k */
    uint32_t *v = b->sorted + p;
    for (size_t x = 1; x < q - p; x++) /* at most 21: insertion sort */
      for (size_t y = x; y > 0 && v[y - 1] > v[y]; y--) {
        uint32_t tmp = v[y];
        v[y] = v[y - 1];
        v[y - 1] = tmp;
      }
    if (c->nseg) {
      uint32_t f = ix->first[ix->nsegs - 1];
      size_t prev = ix->ncand - f;
      if (prev == q - p && !memcmp(ix->cand + f, v, prev * sizeof *v)) {
        p = q;
        continue;
      }
    }
    if (!reserve((void **)&ix->lo, &b->cap_lo, ix->nsegs, 1, sizeof *ix->lo) ||
        !reserve((void **)&ix->first, &b->cap_first, ix->nsegs, 2, sizeof *ix->first) ||
        !reserve((void **)&ix->cand, &b->cap_cand, ix->ncand, q - p, sizeof *ix->cand))
      return 0;
    ix->lo[ix->nsegs] = b->bound[k];
    ix->first[ix->nsegs] = (uint32_t)ix->ncand;
    ix->nsegs++;
    c->nseg++;
    memcpy(ix->cand + ix->ncand, v, (q - p) * sizeof *v);
    ix->ncand += q - p;
    p = q;
  }
  ix->first[ix->nsegs] = (uint32_t)ix->ncand; /* the end of the last segment */
  if (c->nseg > RX_OCT_TABLE) { /* about one bucket per segment, spread over the octaves */
    int sub = 0;
    while (sub < RX_SUB_MAX && ((size_t)RX_OCTAVES << sub) < 2 * (size_t)c->nseg) sub++;
    size_t used = b->noct, nbkt = (size_t)RX_OCTAVES << sub;
    if (!reserve((void **)&ix->oct, &b->cap_oct, used, nbkt + 1, sizeof *ix->oct)) return 0;
    b->noct += nbkt + 1;
    c->oct = (uint32_t)used;
    c->sub = (uint8_t)sub;
    const uint64_t *lo = ix->lo + c->seg0;
    uint32_t k = 0; /* edges ascend: the segment of each follows the previous one's */
    for (size_t i = 0; i < nbkt; i++) {
      uint64_t edge = bucket_edge((uint32_t)i, sub);
      while (k + 1 < c->nseg && lo[k + 1] <= edge) k++;
      ix->oct[used + i] = k;
    }
    ix->oct[used + nbkt] = c->nseg - 1;
  }
  return 1;
}

topo_status topo_rules_index_build(const topo_rules *rules, int nnodes, int nranks,
                                   topo_rules_index **out) {
  if (!out) return TOPO_ERR_INVALID;
  *out = NULL;
  if (!rules || rules->n == 0) return TOPO_OK;
  size_t n = (size_t)rules->n;
  topo_rules_index *ix = topo_calloc(1, sizeof *ix);
  rx_key *key = topo_malloc(n * sizeof *key);
  rx_build b = {.bound = topo_malloc((2 * n + 1) * sizeof(uint64_t)),
                .parent = topo_malloc((2 * n + 2) * sizeof(uint32_t))};
  if (ix) ix->reported = topo_calloc(n, sizeof *ix->reported);
  if (!ix || !key || !b.bound || !b.parent || !ix->reported || n >= RX_MAX_RULES) goto nomem;
  ix->rules = rules;
  for (int c = 0; c < NCCL_NUM_FUNCTIONS; c++) ix->any[c][0] = ix->any[c][1] = ix->any[c][2] = -1;
  size_t nk = 0;
  for (size_t i = 0; i < n; i++) {
    const topo_rule *r = &rules->rule[i];
    if ((r->nnodes != -1 && r->nnodes != nnodes) || (r->nranks != -1 && r->nranks != nranks))
      continue;
    key[nk++] = (rx_key){(int8_t)r->coll, (int8_t)r->reg_buff, r->num_pipe_ops, (uint32_t)i};
  }
  qsort(key, nk, sizeof *key, cmp_key);
  size_t ncls = 0;
  for (size_t i = 0; i < nk; i++)
    ncls += !i || cmp_key(&(rx_key){key[i].coll, key[i].reg, key[i].pipe, 0},
                          &(rx_key){key[i - 1].coll, key[i - 1].reg, key[i - 1].pipe, 0}) != 0;
  if (!ncls) {
    topo_free(key), topo_free(b.bound), topo_free(b.parent);
    *out = ix; /* rules, none for this communicator: every query finds none */
    return TOPO_OK;
  }
  if (!(ix->cls = topo_calloc(ncls, sizeof *ix->cls))) goto nomem;
  size_t npipe = 0;
  for (size_t i = 0; i < nk;) {
    size_t j = i;
    while (j < nk && key[j].coll == key[i].coll && key[j].pipe == key[i].pipe &&
           key[j].reg == key[i].reg)
      j++;
    rx_class *c = &ix->cls[ix->ncls];
    c->coll = key[i].coll, c->pipe = key[i].pipe, c->reg = key[i].reg;
    if (!build_class(ix, &b, key + i, j - i, c)) goto nomem;
    if (c->pipe == -1) ix->any[c->coll][c->reg + 1] = (int32_t)ix->ncls;
    else npipe++, ix->has_pipe[c->coll] = 1;
    ix->ncls++;
    i = j;
  }
  if (npipe) {
    ix->nslot = 16;
    while (ix->nslot < 2 * npipe) ix->nslot *= 2;
    if (!(ix->slot = topo_calloc(ix->nslot, sizeof *ix->slot))) goto nomem;
    for (uint32_t k = 0; k < ix->ncls; k++) {
      const rx_class *c = &ix->cls[k];
      if (c->pipe == -1) continue;
      uint32_t j = slot_hash(c->coll, c->pipe, c->reg) & (ix->nslot - 1);
      while (ix->slot[j]) j = (j + 1) & (ix->nslot - 1);
      ix->slot[j] = k + 1;
    }
  }
  topo_free(key), topo_free(b.bound), topo_free(b.parent), topo_free(b.pair), topo_free(b.sorted);
  *out = ix;
  return TOPO_OK;
nomem:
  topo_free(key), topo_free(b.bound), topo_free(b.parent), topo_free(b.pair), topo_free(b.sorted);
  topo_rules_index_free(ix);
  TOPO_WARN("out of memory indexing the rules; no rules");
  return TOPO_ERR_NOMEM;
}

/* Class k's earliest allowed candidate for the query, if earlier than *best (a candidate word);
 * the earliest passed-over one not reported yet into *ign. */
static void class_find(const topo_rules_index *ix, int32_t k, uint64_t nbytes, const float *table,
                       int num_algo, int num_proto, uint32_t allow, uint32_t *best, uint32_t *ign,
                       topo_rules_probe *probe) {
  if (k < 0) return;
  const rx_class *c = &ix->cls[k];
  const uint64_t *lo = ix->lo + c->seg0;
  uint32_t j;
  if (c->oct != UINT32_MAX) {
    const uint32_t *oct = ix->oct + c->oct;
    uint32_t i = bucket_of(nbytes, c->sub);
    j = seg_search(lo, oct[i], oct[i + 1], nbytes, probe);
  } else {
    j = seg_search(lo, 0, c->nseg - 1, nbytes, probe);
  }
  j += c->seg0;
  for (uint32_t t = ix->first[j]; t < ix->first[j + 1]; t++) {
    uint32_t w = ix->cand[t];
    if (w >= *best) return; /* file order: nothing later can be the answer */
    if (probe) probe->candidates++;
    int e = (int)(w & ((1u << RX_ENTRY_BITS) - 1));
    int algo = e / NCCL_NUM_PROTOCOLS, proto = e % NCCL_NUM_PROTOCOLS;
    int ok = (allow >> e) & 1;
    if (ok && table)
      ok = algo < num_algo && proto < num_proto && table[algo * num_proto + proto] >= 0.0f;
    if (ok) {
      *best = w;
      return;
    }
    if (w < *ign && !atomic_load_explicit(&ix->reported[w >> RX_ENTRY_BITS], memory_order_relaxed))
      *ign = w;
  }
}

const topo_rule *topo_rules_index_find(const topo_rules_index *ix, int coll, uint64_t nbytes,
                                       int num_pipe_ops, int reg_buff, const float *table,
                                       int num_algo, int num_proto, uint32_t allow,
                                       const topo_rule **ignored, topo_rules_probe *probe) {
  if (ignored) *ignored = NULL;
  if (!ix || coll < 0 || coll >= NCCL_NUM_FUNCTIONS || !ix->ncls) return NULL;
  uint32_t best = UINT32_MAX, ign = UINT32_MAX;
  int reg =
      reg_buff == 0 || reg_buff == 1 ? reg_buff : -2; /* another value meets regBuff any only */
  class_find(ix, ix->any[coll][0], nbytes, table, num_algo, num_proto, allow, &best, &ign, probe);
  if (reg >= 0)
    class_find(ix, ix->any[coll][reg + 1], nbytes, table, num_algo, num_proto, allow, &best, &ign,
               probe);
  if (ix->has_pipe[coll] && num_pipe_ops >= 1) {
    class_find(ix, class_of(ix, coll, num_pipe_ops, -1), nbytes, table, num_algo, num_proto, allow,
               &best, &ign, probe);
    if (reg >= 0)
      class_find(ix, class_of(ix, coll, num_pipe_ops, reg), nbytes, table, num_algo, num_proto,
                 allow, &best, &ign, probe);
  }
  if (ignored && ign < best) *ignored = &ix->rules->rule[ign >> RX_ENTRY_BITS];
  return best == UINT32_MAX ? NULL : &ix->rules->rule[best >> RX_ENTRY_BITS];
}

int topo_rules_index_report_once(const topo_rules_index *ix, const topo_rule *rule) {
  if (!ix || !rule || rule < ix->rules->rule || rule >= ix->rules->rule + ix->rules->n) return 0;
  atomic_uchar *flag = &ix->reported[rule - ix->rules->rule];
  if (atomic_load_explicit(flag, memory_order_relaxed)) return 0;
  return atomic_exchange_explicit(flag, 1, memory_order_relaxed) == 0;
}

void topo_rules_index_stats_get(const topo_rules_index *ix, topo_rules_index_stats *out) {
  memset(out, 0, sizeof *out);
  if (!ix) return;
  out->segments = ix->nsegs;
  out->candidates = ix->ncand;
}

void topo_rules_free(topo_rules *rules) { topo_free(rules); }
