// SPDX-License-Identifier: Apache-2.0
// The kernel-level part of `topo-report diff A B`: every GPU kernel name of either run with its
// count and total time summed over the ranks (HTA's compare_traces columns: counts, total
// durations, their differences and a change mark '=', '+', '-'), largest change in total time
// first. Memory: one row per distinct name of each run. Called by render_diff.c.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "kernels.h"

#define DIFF_ROWS 25 /* rows printed; the total line counts them all */

typedef struct kname {
  const char *name;
  uint64_t n;
  int64_t sum;
} kname;

typedef struct krow {
  const char *name;
  uint64_t na, nb;
  int64_t sa, sb;
} krow;

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const kname *)a)->name, ((const kname *)b)->name);
}

static int64_t absdiff(const krow *r) { return r->sb > r->sa ? r->sb - r->sa : r->sa - r->sb; }

static int cmp_change(const void *a, const void *b) {
  const krow *x = a, *y = b;
  int64_t dx = absdiff(x), dy = absdiff(y);
  if (dx != dy) return dx > dy ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* The run's kernels summed over ranks, by name; *n distinct. NULL with *n = 0 when none. */
static kname *collect(const rp_report *r, size_t *n) {
  size_t total = 0;
  *n = 0;
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].gpu) total += r->ranks[i].gpu->nkern;
  if (!total) return NULL;
  kname *v = topo_malloc(total * sizeof *v);
  if (!v) return NULL;
  size_t k = 0;
  for (int i = 0; i < r->nranks; i++) {
    const rp_gpu *g = r->ranks[i].gpu;
    for (size_t j = 0; g && j < g->nkern; j++)
      v[k++] = (kname){g->kern[j].name, g->kern[j].n, g->kern[j].sum};
  }
  qsort(v, k, sizeof *v, cmp_name);
  size_t u = 0;
  for (size_t j = 0; j < k; j++) {
    if (u && !strcmp(v[u - 1].name, v[j].name)) {
      v[u - 1].n += v[j].n;
      v[u - 1].sum = rp_add_sat(v[u - 1].sum, v[j].sum);
    } else {
      v[u++] = v[j];
    }
  }
  *n = u;
  return v;
}

void rp_render_kernel_diff(const rp_report *a, const rp_report *b, FILE *f) {
  size_t na, nb;
  kname *ka = collect(a, &na), *kb = collect(b, &nb);
  if (!na && !nb) {
    fprintf(f, "\nKernels: n/a (neither run has a Kineto trace with GPU kernels)\n");
    topo_free(ka), topo_free(kb);
    return;
  }
  krow *rows = topo_malloc((na + nb) * sizeof *rows);
  if (!rows) {
    fprintf(f, "\nKernels: out of memory\n");
    topo_free(ka), topo_free(kb);
    return;
  }
  size_t n = 0, i = 0, j = 0;
  while (i < na || j < nb) {
    int c = i == na ? 1 : j == nb ? -1 : strcmp(ka[i].name, kb[j].name);
    krow *w = &rows[n++];
    memset(w, 0, sizeof *w);
    if (c <= 0) w->name = ka[i].name, w->na = ka[i].n, w->sa = ka[i].sum;
    if (c >= 0) w->name = kb[j].name, w->nb = kb[j].n, w->sb = kb[j].sum;
    i += c <= 0;
    j += c >= 0;
  }
  qsort(rows, n, sizeof *rows, cmp_change);
  int64_t ta = 0, tb = 0;
  for (size_t k = 0; k < n; k++) ta += rows[k].sa, tb += rows[k].sb;
  char x[32], y[32], d[32];
  fprintf(f,
          "\nKernels (count and total GPU time summed over ranks; largest change in time first)\n");
  fprintf(f, "  %-44s %9s %9s %12s %12s %12s %s\n", "kernel", "count A", "count B", "total A",
          "total B", "change", "");
  for (size_t k = 0; k < n && k < DIFF_ROWS; k++) {
    const krow *w = &rows[k];
    char nm[45];
    rp_kernel_short_name(w->name, nm, sizeof nm);
    rp_fmt_ns(w->sa, x, sizeof x);
    rp_fmt_ns(w->sb, y, sizeof y);
    rp_fmt_ns(absdiff(w), d, sizeof d);
    fprintf(f, "  %-44s %9" PRIu64 " %9" PRIu64 " %12s %12s %c%11s %c\n", nm, w->na, w->nb, x, y,
            w->sb >= w->sa ? '+' : '-', d,
            w->nb == w->na  ? '='
            : w->nb > w->na ? '+'
                            : '-');
  }
  if (n > DIFF_ROWS) fprintf(f, "  ... %zu more kernels\n", n - DIFF_ROWS);
  rp_fmt_ns(ta, x, sizeof x);
  rp_fmt_ns(tb, y, sizeof y);
  rp_fmt_ns(tb > ta ? tb - ta : ta - tb, d, sizeof d);
  fprintf(f, "  %-44s %9s %9s %12s %12s %c%11s\n", "all kernels", "", "", x, y,
          tb >= ta ? '+' : '-', d);
  topo_free(rows);
  topo_free(ka);
  topo_free(kb);
}
