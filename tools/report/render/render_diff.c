// SPDX-License-Identifier: Apache-2.0
// `topo-report diff A B`: two analysed runs side by side (before/after a tuning change): overall
// unions and ratios, then each collective row present in either run with its median time and
// busbw and the relative change, then the kernels of both runs (kdiff.c). Rows are matched
// through a map of each run's rows: linear in the rows of both.
#include <inttypes.h>
#include <string.h>

#include "kernel_stats.h"
#include "report.h"
#include "report_analysis.h"
#include "report_render.h"

/* A row's key across two reports: its tag stands as a 16-bit hash (never 0 for a tag), and a
 * row found by key is checked to have the same tag (find_row). */
static uint64_t diff_key(const rp_row *w) {
  uint64_t h = w->tag * 0x9e3779b97f4a7c15ull;
  return rp_row_key(w->func, w->nranks, w->bucket, w->tag ? (uint32_t)(h >> 48) | 1 : 0);
}

/* r's rows by key (the first of a key); 0 out of memory. */
static int index_rows(const rp_report *r, rp_map *m) {
  for (size_t i = 0; i < r->nrows; i++) {
    const rp_row *w = r->rows[i];
    uint64_t key = diff_key(w);
    uint32_t at;
    if (!rp_map_find(m, key, &at) && !rp_map_add(m, key, (uint32_t)i)) return 0;
  }
  return 1;
}

/* The row of r (indexed in m) with w's function, communicator size, bucket and tag, or NULL. */
static const rp_row *find_row(const rp_report *r, const rp_map *m, const rp_row *w) {
  uint32_t at;
  return rp_map_find(m, diff_key(w), &at) && r->rows[at]->tag == w->tag ? r->rows[at] : NULL;
}

static void change(FILE *f, double a, double b) {
  if (a > 0 && b > 0) fprintf(f, " %+8.1f%%", (b - a) / a * 100.0);
  else fprintf(f, " %9s", "-");
}

static void line_ns(FILE *f, const char *what, int64_t a, int64_t b) {
  char x[32], y[32];
  rp_fmt_ns(a, x, sizeof x);
  rp_fmt_ns(b, y, sizeof y);
  fprintf(f, "  %-26s %14s %14s", what, x, y);
  change(f, (double)a, (double)b);
  fputc('\n', f);
}

/* A share in both runs; "n/a" where a run's is undefined (known == 0). */
static void line_pct(FILE *f, const char *what, int known_a, double a, int known_b, double b) {
  char x[24] = "n/a", y[24] = "n/a";
  if (known_a) snprintf(x, sizeof x, "%.1f%%", a * 100);
  if (known_b) snprintf(y, sizeof y, "%.1f%%", b * 100);
  fprintf(f, "  %-26s %14s %14s", what, x, y);
  if (known_a && known_b) fprintf(f, " %+8.1f pp\n", (b - a) * 100);
  else fprintf(f, " %9s\n", "-");
}

static void row_line(FILE *f, const rp_row *key, const rp_row *a, const rp_row *b) {
  char size[32], ta[32], tb[32];
  rp_bucket_label(key->bucket, size, sizeof size);
  int64_t ma = a ? rp_quant_get(&a->time, 0.5) : 0, mb = b ? rp_quant_get(&b->time, 0.5) : 0;
  if (a && a->timed) rp_fmt_ns(ma, ta, sizeof ta);
  else snprintf(ta, sizeof ta, "-");
  if (b && b->timed) rp_fmt_ns(mb, tb, sizeof tb);
  else snprintf(tb, sizeof tb, "-");
  int ka = a && rp_row_busbw_known(a), kb = b && rp_row_busbw_known(b);
  double ba = ka ? rp_row_busbw(a) : 0, bb = kb ? rp_row_busbw(b) : 0;
  char nr[16] = "?", xa[24] = "?", xb[24] = "?"; /* unknown: "?" */
  if (rp_row_ranks_known(key)) snprintf(nr, sizeof nr, "%d", key->nranks);
  if (ka) snprintf(xa, sizeof xa, "%.2f", ba);
  if (kb) snprintf(xb, sizeof xb, "%.2f", bb);
  fprintf(f, "  %-14s %5s %10s %12s %12s", rp_func_name(key->func), nr, size, ta, tb);
  change(f, (double)ma, (double)mb);
  fprintf(f, " %9s %9s", xa, xb);
  change(f, ba, bb);                                    /* "-" unless both are known */
  if (key->tag) fprintf(f, "  tag %" PRIu64, key->tag); /* rows of one size apart by tag */
  fputc('\n', f);
}

void rp_render_diff(const rp_report *a, const rp_report *b, const char *name_a, const char *name_b,
                    FILE *f) {
  rp_derived da, db;
  rp_derive_overall(a, &da);
  rp_derive_overall(b, &db);
  fprintf(f,
          "topo-report diff\n  A: %s (%d ranks, %" PRIu64
          " collectives)\n  B: %s (%d ranks, %" PRIu64
          " collectives)\n\nAll ranks (sums)%*s%14s %14s %9s\n",
          name_a, a->nranks, a->colls, name_b, b->nranks, b->colls, 13, "", "A", "B", "change");
  line_ns(f, "span", da.span, db.span);
  line_ns(f, "communication", da.comm, db.comm);
  line_ns(f, "compute", da.compute, db.compute);
  line_ns(f, "overlapped communication", da.overlap, db.overlap);
  line_ns(f, "exposed communication", da.exposed, db.exposed);
  line_ns(f, "idle", da.idle, db.idle);
  line_pct(f, "communication share", da.span > 0, da.comm_share, db.span > 0, db.comm_share);
  line_pct(f, "overlap ratio", da.overlap_defined, da.overlap_ratio, db.overlap_defined,
           db.overlap_ratio);
  fprintf(f, "\nCollectives (median GPU time per rank and call; busbw GB/s)\n");
  fprintf(f, "  %-14s %5s %10s %12s %12s %9s %9s %9s %9s\n", "collective", "ranks", "size",
          "median A", "median B", "change", "busbw A", "busbw B", "change");
  rp_map in_a = {0}, in_b = {0};
  if (index_rows(a, &in_a) && index_rows(b, &in_b)) {
    for (size_t i = 0; i < a->nrows; i++)
      row_line(f, a->rows[i], a->rows[i], find_row(b, &in_b, a->rows[i]));
    for (size_t i = 0; i < b->nrows; i++)
      if (!find_row(a, &in_a, b->rows[i])) row_line(f, b->rows[i], NULL, b->rows[i]);
  } else {
    fprintf(f, "  out of memory\n");
  }
  rp_map_free(&in_a);
  rp_map_free(&in_b);
  rp_render_kernel_diff(a, b, f);
}
