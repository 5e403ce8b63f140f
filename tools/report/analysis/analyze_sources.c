// SPDX-License-Identifier: Apache-2.0
// Inputs to sources, for the analysis (analyze.h): one rp_source per input file, the descriptor
// budget (at most a few hundred binary inputs hold a descriptor at a time, the others suspended
// and reopened in turn, so any number of ranks reads under a small RLIMIT_NOFILE), ranks grouped
// as processes and communicators as join slots by sorting, and the reader that steps the sources
// merged by time (a tournament tree). Called by analyze.c and both passes.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "analyze_ctx.h"
#include "report_analysis.h"
#include "report_inputs.h"

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void an_progress(ctx *c, const char *what, int force) {
  if (!c->progress) return;
  int64_t t = now_ns();
  if (!force && t - c->last_progress < 1000000000LL) return;
  c->last_progress = t;
  uint64_t done = c->closed_bytes;
  for (int i = 0; i < c->r->nsrc; i++) done += rp_source_offset(&c->r->src[i]);
  fprintf(stderr, "topo-report: %s: %" PRIu64 " MB of %" PRIu64 " MB read, %" PRIu64 " records\n",
          what, done >> 20, c->total_bytes >> 20, c->r->records);
}

/* ---- open descriptors */
/* Sources that may hold a descriptor at once: half of what RLIMIT_NOFILE leaves after 16 (the
 * outputs, pass 1's JSON input and its record file, the caller's own), at most 256 (each holds a
 * 1 MiB window), at least 1. */
int an_open_budget(void) {
  struct rlimit rl;
  rlim_t lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
  if (lim == RLIM_INFINITY || lim > 4096) lim = 4096;
  long b = ((long)lim - 16) / 2;
  return b < 1 ? 1 : b > 256 ? 256 : (int)b;
}

/* Source i is about to hold a descriptor (it opens, or resumes at its next step): at the budget,
 * the next holding source after the clock hand that can be suspended is, first. A JSON input
 * replayed from pass 1's record holds none of its own; one read again (its record could not be
 * made) cannot be suspended: while only such hold, the budget is exceeded. */
void an_hold(ctx *c, int i) {
  const rp_source *s = &c->r->src[i];
  if (c->held[i] || (s->kind == RP_SRC_KINETO && rp_kspill_ready(s->spill))) return;
  int n = c->r->nsrc;
  for (int tried = 0; c->nheld >= c->budget && tried < n; tried++) {
    int k = c->hand;
    c->hand = (c->hand + 1) % n;
    if (k != i && c->held[k] && rp_source_suspend(&c->r->src[k])) {
      c->held[k] = 0;
      c->nheld--;
    }
  }
  c->held[i] = 1;
  c->nheld++;
}

void an_unhold(ctx *c, int i) {
  if (!c->held[i]) return;
  c->held[i] = 0;
  c->nheld--;
}

void an_close_src(ctx *c, rp_source *s) {
  c->closed_bytes += rp_source_offset(s);
  rp_source_close(s);
  an_unhold(c, s->index);
}

/* ---- ranks (processes) */
int an_rank_add(rp_report *r, const char *host, uint32_t pid, int world_rank) {
  if (r->nranks == r->cap_ranks) {
    int cap = r->cap_ranks ? 2 * r->cap_ranks : 16;
    rp_rank *v = topo_realloc(r->ranks, (size_t)cap * sizeof *v);
    if (!v) return -1;
    r->ranks = v;
    r->cap_ranks = cap;
  }
  rp_rank *k = &r->ranks[r->nranks];
  memset(k, 0, sizeof *k);
  snprintf(k->host, sizeof k->host, "%s", host);
  k->pid = pid;
  k->world_rank = world_rank;
  k->t.first = INT64_MAX;
  k->t.last = INT64_MIN;
  k->ext_first = INT64_MAX;
  k->ext_last = INT64_MIN;
  return r->nranks++;
}

/* Of two positions of the list (-1: none), the one whose source is further behind; the first
 * listed on ties. */
static int behind(const ctx *c, const int *idx, int a, int b) {
  if (a < 0 || b < 0) return a < 0 ? b : a;
  return c->r->src[idx[b]].frontier < c->r->src[idx[a]].frontier ? b : a;
}

/* Read sources (the listed ones) merged by time: always step the one furthest behind, found in
 * a tournament tree (O(log n) a step). A finished source gives its descriptor back at once. */
void an_merged(ctx *c, int *idx, int n, const rp_sink *sink, int pass, const char *what) {
  size_t w = 1;
  while (w < (size_t)n) w *= 2;
  int *tree = topo_malloc(2 * w * sizeof *tree); /* node: the list position that wins below it */
  if (!tree) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  for (size_t i = 0; i < w; i++)
    tree[w + i] = i < (size_t)n && !c->r->src[idx[i]].done ? (int)i : -1;
  for (size_t k = w - 1; k >= 1; k--) tree[k] = behind(c, idx, tree[2 * k], tree[2 * k + 1]);
  for (;;) {
    int best = tree[1];
    if (best < 0 || c->st != TOPO_OK) break;
    rp_source *s = &c->r->src[idx[best]];
    an_hold(c, idx[best]);
    int more = rp_source_step(s, sink, pass);
    if (!more && rp_source_suspend(s)) an_unhold(c, idx[best]);
    if (pass == 1 && c->src_comm[idx[best]] >= 0) {
      join_comm *j = &c->jc[c->src_comm[idx[best]]];
      if (!more) an_join_source_done(c, j, c->src_slot[idx[best]]);
      an_join_progress(c, j);
    }
    size_t k = w + (size_t)best;
    tree[k] = s->done ? -1 : best;
    for (k /= 2; k >= 1; k /= 2) tree[k] = behind(c, idx, tree[2 * k], tree[2 * k + 1]);
    an_progress(c, what, 0);
  }
  topo_free(tree);
}

/* ---- grouping the binary sources by sorting (no scan of the ranks or communicators per source) */
int rp_cmp_proc_ref(const void *a, const void *b) {
  const rp_proc_ref *x = a, *y = b;
  int h = strcmp(x->host, y->host);
  if (h) return h;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* Ranks are processes (host, pid; pid 0: each source its own), numbered in order of their first
 * source: sets every listed source's proc. */
topo_status an_group_processes(rp_report *r, const int *bin, int nbin) {
  rp_proc_ref *key = topo_malloc((size_t)(nbin ? nbin : 1) * sizeof *key);
  int *first = topo_malloc((size_t)r->nsrc * sizeof *first);
  if (!key || !first) {
    topo_free(key), topo_free(first);
    return TOPO_ERR_NOMEM;
  }
  for (int b = 0; b < nbin; b++) {
    const topo_trace_header *h = &r->src[bin[b]].header;
    key[b] = (rp_proc_ref){h->host, h->pid, bin[b]};
  }
  qsort(key, (size_t)nbin, sizeof *key, rp_cmp_proc_ref);
  for (int b = 0, g = 0; b < nbin; b++) { /* g: the first of b's group (the lowest index) */
    if (b && (!key[b].pid || key[b].pid != key[g].pid || strcmp(key[b].host, key[g].host))) g = b;
    first[key[b].index] = key[g].index;
  }
  topo_status st = TOPO_OK;
  for (int b = 0; b < nbin && st == TOPO_OK; b++) {
    rp_source *s = &r->src[bin[b]];
    if (first[bin[b]] != bin[b]) s->proc = r->src[first[bin[b]]].proc;
    else if ((s->proc = an_rank_add(r, s->header.host, s->header.pid, s->rank)) < 0)
      st = TOPO_ERR_NOMEM;
  }
  topo_free(key), topo_free(first);
  return st;
}

typedef struct comm_key {
  uint64_t hash;
  int nranks, rank, index;
} comm_key;

static int cmp_comm_key(const void *a, const void *b) {
  const comm_key *x = a, *y = b;
  if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
  if (x->nranks != y->nranks) return x->nranks < y->nranks ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

typedef struct comm_group {
  int first_index; /* its lowest source index: communicators are numbered in that order */
  int start, end;  /* its keys */
  int nslots;
} comm_group;

static int cmp_comm_group(const void *a, const void *b) {
  const comm_group *x = a, *y = b;
  return (x->first_index > y->first_index) - (x->first_index < y->first_index);
}

/* Communicators (comm hash, size) of the listed sources that have a valid rank, numbered in order
 * of their first source; each rank with a trace is a slot (in rank order). Sets src_comm,
 * src_slot and the join_comm table, sized by the slots. */
topo_status an_group_comms(ctx *c, const int *bin, int nbin) {
  rp_report *r = c->r;
  comm_key *key = topo_malloc((size_t)(nbin ? nbin : 1) * sizeof *key);
  comm_group *grp = topo_malloc((size_t)(nbin ? nbin : 1) * sizeof *grp);
  int n = 0, ng = 0;
  topo_status st = TOPO_ERR_NOMEM;
  if (!key || !grp) goto out;
  for (int b = 0; b < nbin; b++) {
    const rp_source *s = &r->src[bin[b]];
    if (s->header.comm_hash && s->rank >= 0)
      key[n++] = (comm_key){s->header.comm_hash, s->header.nranks, s->rank, bin[b]};
  }
  qsort(key, (size_t)n, sizeof *key, cmp_comm_key);
  for (int k = 0; k < n; k++) {
    if (!k || key[k].hash != key[k - 1].hash || key[k].nranks != key[k - 1].nranks)
      grp[ng++] = (comm_group){key[k].index, k, k, 0};
    comm_group *g = &grp[ng - 1];
    if (key[k].index < g->first_index) g->first_index = key[k].index;
    g->nslots += k == g->start || key[k].rank != key[k - 1].rank;
    g->end = k + 1;
  }
  qsort(grp, (size_t)ng, sizeof *grp, cmp_comm_group);
  if (!(c->jc = topo_calloc((size_t)(ng ? ng : 1), sizeof *c->jc))) goto out;
  c->njc = (size_t)ng;
  for (int gi = 0; gi < ng; gi++) {
    const comm_group *g = &grp[gi];
    join_comm *j = &c->jc[gi];
    j->hash = key[g->start].hash;
    j->nranks = key[g->start].nranks;
    j->nslots = j->nlive = g->nslots;
    for (j->width = 1; j->width < (size_t)j->nslots;) j->width *= 2;
    j->slot_proc = topo_malloc((size_t)g->nslots * sizeof *j->slot_proc);
    j->live = topo_calloc((size_t)g->nslots, sizeof *j->live);
    j->slot_rank = topo_malloc((size_t)g->nslots * sizeof *j->slot_rank);
    if (!j->slot_proc || !j->live || !j->slot_rank) goto out;
    for (int k = g->start, slot = -1; k < g->end; k++) {
      slot += k == g->start || key[k].rank != key[k - 1].rank;
      c->src_comm[key[k].index] = gi;
      c->src_slot[key[k].index] = slot;
      j->slot_proc[slot] = r->src[key[k].index].proc;
      j->slot_rank[slot] = key[k].rank;
      j->live[slot]++;
    }
  }
  st = TOPO_OK;
out:
  topo_free(key), topo_free(grp);
  return st;
}

topo_status an_add_sources(rp_report *r, char **files, int nfiles, const rp_options *opt) {
  r->src = topo_calloc((size_t)(nfiles ? nfiles : 1), sizeof *r->src);
  if (!r->src) return TOPO_ERR_NOMEM;
  for (int i = 0; i < nfiles; i++) {
    rp_source *s = &r->src[r->nsrc];
    memset(s, 0, sizeof *s);
    s->index = r->nsrc;
    s->proc = -1;
    s->rank = -1;
    s->quiet = opt->quiet;
    s->kind = rp_path_is_json(files[i]) ? RP_SRC_KINETO : RP_SRC_TRACE;
    s->want_spill = s->kind == RP_SRC_KINETO && !opt->reread_json;
    s->path = topo_strdup(files[i]);
    if (!s->path) return TOPO_ERR_NOMEM;
    r->nsrc++;
  }
  return TOPO_OK;
}
