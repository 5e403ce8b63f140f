// SPDX-License-Identifier: Apache-2.0
// Memcpy/memset bandwidth of one rank per kind (kernels.h): HTA's kinds ("Memcpy HtoD", "Memcpy
// DtoH", "Memcpy DtoD", "Memcpy PtoP", "Memset", ...), bytes and time per kind, each operation's
// bandwidth (bytes / duration), and HTA's series: the summed bandwidth of the operations of a kind
// running at once (Kineto's "memory bandwidth (GB/s)" per operation, +bw at its start, -bw at its
// end; a 0-length operation lasts 1 us, as in HTA), taken after each point in time order, positive
// values only. The points are sorted through a bounded reorder heap per kind; kinds are found
// through a hash table of their names. Called by kernels.c.
#include <string.h>

#include "alloc.h"
#include "kernel_stats.h"

void rp_memcpy_kind(const char *name, char *out, size_t len) {
  if (!strncmp(name, "Memset", 6)) snprintf(out, len, "Memset");
  else if (strncmp(name, "Memcpy", 6)) snprintf(out, len, "Memcpy Unknown");
  else snprintf(out, len, "%.11s", name);
}

typedef struct bwpoint {
  int64_t t;
  double delta; /* GB/s */
} bwpoint;

typedef struct kind_state {
  rp_heap pend;
  int64_t cursor;
  int started;
  double value;
} kind_state;

struct rp_mem_state {
  size_t window;
  kind_state *k;
  size_t n, cap;
  uint32_t *slot; /* kinds by name, open addressing: index + 1, 0 empty; at most half full */
  size_t nslot;
};

static size_t kind_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return (size_t)(h ^ h >> 29);
}

/* The slot of kind name `kind` among kinds[]: the one holding it, or the empty one for it. */
static size_t kind_slot(const rp_mem_state *m, const rp_memkind *kinds, const char *kind) {
  size_t j = kind_hash(kind) & (m->nslot - 1);
  while (m->slot[j] && strcmp(kinds[m->slot[j] - 1].kind, kind)) j = (j + 1) & (m->nslot - 1);
  return j;
}

/* Room in the table for one more kind. 0 out of memory. */
static int kind_reserve(rp_mem_state *m, const rp_memkind *kinds) {
  if (2 * (m->n + 1) <= m->nslot) return 1;
  size_t nslot = m->nslot ? 2 * m->nslot : 16;
  uint32_t *slot = topo_calloc(nslot, sizeof *slot);
  if (!slot) return 0;
  topo_free(m->slot);
  m->slot = slot, m->nslot = nslot;
  for (size_t i = 0; i < m->n; i++) m->slot[kind_slot(m, kinds, kinds[i].kind)] = (uint32_t)i + 1;
  return 1;
}

/* Time order; at the same time an end counts before a start (back-to-back copies never add up). */
static int bw_less(const void *a, const void *b) {
  const bwpoint *x = a, *y = b;
  return x->t < y->t || (x->t == y->t && x->delta < y->delta);
}

rp_mem_state *rp_mem_state_new(size_t window) {
  rp_mem_state *m = topo_calloc(1, sizeof *m);
  if (m) m->window = window;
  return m;
}

static void take(kind_state *s, rp_memkind *out, const bwpoint *p) {
  if (s->started && p->t < s->cursor) out->late++;
  s->started = 1;
  if (p->t > s->cursor) s->cursor = p->t;
  s->value += p->delta;
  if (!(s->value > 1e-9)) return; /* float residue of +bw - bw: zero */
  if (!out->s_n || s->value < out->s_min) out->s_min = s->value;
  if (!out->s_n || s->value > out->s_max) out->s_max = s->value;
  out->s_n++;
  out->s_sum += s->value;
}

static void push(kind_state *s, rp_memkind *out, int64_t t, double delta) {
  bwpoint p = {t, delta}, top;
  if (!rp_heap_push(&s->pend, &p)) {
    take(s, out, &p);
    return;
  }
  if (rp_heap_full(&s->pend) && rp_heap_pop(&s->pend, &top)) take(s, out, &top);
}

int rp_mem_add(rp_mem_state *m, rp_memkind **kinds, size_t *nkinds, const rp_kevent *e) {
  char kind[16];
  rp_memcpy_kind(e->name, kind, sizeof kind);
  if (!kind_reserve(m, *kinds)) return 0;
  size_t j = kind_slot(m, *kinds, kind), i = m->slot[j] ? m->slot[j] - 1 : *nkinds;
  if (i == *nkinds) {
    if (m->n == m->cap) {
      size_t cap = m->cap ? m->cap * 2 : 4;
      kind_state *k = topo_realloc(m->k, cap * sizeof *k);
      if (k) m->k = k;
      rp_memkind *v = k ? topo_realloc(*kinds, cap * sizeof *v) : NULL;
      if (!v) return 0;
      *kinds = v;
      m->cap = cap;
    }
    memset(&(*kinds)[i], 0, sizeof **kinds);
    snprintf((*kinds)[i].kind, sizeof(*kinds)[i].kind, "%s", kind);
    memset(&m->k[i], 0, sizeof m->k[i]);
    rp_heap_init(&m->k[i].pend, sizeof(bwpoint), 2 * m->window, bw_less);
    m->slot[j] = (uint32_t)i + 1;
    *nkinds = ++m->n;
  }
  rp_memkind *out = &(*kinds)[i];
  out->n++;
  out->dur = rp_add_sat(out->dur, e->dur);
  if (e->bytes >= 0) {
    out->with_bytes++;
    out->bytes += (uint64_t)e->bytes;
    out->dur_with_bytes = rp_add_sat(out->dur_with_bytes, e->dur);
    if (e->dur > 0) rp_quant_add(&out->op_bw, (int64_t)((double)e->bytes * 1e3 / (double)e->dur));
  }
  if (e->bw_gbps >= 0) {
    int64_t stop = e->start + (e->dur > 0 ? e->dur : 1000);
    push(&m->k[i], out, e->start, e->bw_gbps);
    push(&m->k[i], out, stop, -e->bw_gbps);
  }
  return 1;
}

void rp_mem_finish(rp_mem_state *m, rp_memkind *kinds, size_t nkinds) {
  for (size_t i = 0; i < nkinds && i < m->n; i++) {
    bwpoint p;
    while (rp_heap_pop(&m->k[i].pend, &p)) take(&m->k[i], &kinds[i], &p);
  }
}

void rp_mem_state_free(rp_mem_state *m) {
  if (!m) return;
  for (size_t i = 0; i < m->n; i++) rp_heap_free(&m->k[i].pend);
  topo_free(m->k);
  topo_free(m->slot);
  topo_free(m);
}
