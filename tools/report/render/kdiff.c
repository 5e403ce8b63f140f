// SPDX-License-Identifier: Apache-2.0
// The kernel-level part of `topo-report diff A B`: every GPU kernel name of either run with its
// count and total time summed over the ranks (HTA's compare_traces columns: counts, total
// durations, their differences and a change mark '=', '+', '-'), largest change in total time
// first; names whole (wrapped) where two shown would read alike, fitted to A's text width.
// Memory: one row per distinct name of each run. Called by render_diff.c.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "kernel_stats.h"
#include "report_render.h"
#include "textout.h"

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
  int width = rp_text_width(a);
  fprintf(f, "\n");
  rp_note(f, width, 0,
          "Kernels (count and total GPU time summed over ranks; largest change in time first; "
          "names without template and call arguments, with the first name of them where two "
          "would read alike)");
  static const char *const head[] = {"kernel",  "count A", "count B", "total A",
                                     "total B", "change",  "count"};
  rp_tab *t = rp_tab_new(7);
  for (int c = 0; c < 7; c++)
    rp_tab_col(t, c, head[c], c ? 0 : RP_TAB_LEFT | RP_TAB_KEY | RP_TAB_WRAP);
  size_t shown = n < DIFF_ROWS ? n : DIFF_ROWS;
  const char *full[DIFF_ROWS];
  char names[DIFF_ROWS][512];
  for (size_t k = 0; k < shown; k++) full[k] = rows[k].name;
  rp_kernel_display_names(full, shown, names);
  for (size_t k = 0; k < shown; k++) {
    const krow *w = &rows[k];
    rp_fmt_ns(w->sa, x, sizeof x);
    rp_fmt_ns(w->sb, y, sizeof y);
    rp_fmt_ns(absdiff(w), d, sizeof d);
    rp_tab_cell(t, "%s", names[k]);
    rp_tab_cell(t, "%" PRIu64, w->na);
    rp_tab_cell(t, "%" PRIu64, w->nb);
    rp_tab_cell(t, "%s", x);
    rp_tab_cell(t, "%s", y);
    rp_tab_cell(t, "%c%s", w->sb >= w->sa ? '+' : '-', d);
    rp_tab_cell(t, "%c", w->nb == w->na ? '=' : w->nb > w->na ? '+' : '-');
    rp_tab_end_row(t);
  }
  if (n > DIFF_ROWS) rp_tab_line(t, "... %zu more kernels", n - DIFF_ROWS);
  rp_fmt_ns(ta, x, sizeof x);
  rp_fmt_ns(tb, y, sizeof y);
  rp_fmt_ns(tb > ta ? tb - ta : ta - tb, d, sizeof d);
  rp_tab_cell(t, "all kernels");
  rp_tab_cell(t, "%s", "");
  rp_tab_cell(t, "%s", "");
  rp_tab_cell(t, "%s", x);
  rp_tab_cell(t, "%s", y);
  rp_tab_cell(t, "%c%s", tb >= ta ? '+' : '-', d);
  rp_tab_end_row(t);
  rp_tab_print(t, f, width, 2);
  rp_tab_free(t);
  topo_free(rows);
  topo_free(ka);
  topo_free(kb);
}
