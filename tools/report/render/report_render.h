/* SPDX-License-Identifier: Apache-2.0 */
/*
 * render/: what a reader sees, from a finished rp_report: text, JSON, CSV and HTML, the kernel
 * analyses' sections, next steps, the diff of two reports, the Chrome trace export and the raw
 * record dump. Imports analysis/ (derived figures), kernels/, inputs/ (export, dump) and model/.
 *   render_text.c, render_json.c (and CSV), render_html.c (html_plots.c: its SVG plots)
 *   render_kernels.c  the kernel analyses as text (kernels_json.c: JSON, CSV; kernels_html.c)
 *   render_next.c    the next steps in every format
 *   render_diff.c, kdiff.c     two reports side by side (kernel tables in kdiff.c)
 *   export_chrome.c, dump.c    the Chrome trace of topo traces; one trace's records as text
 *   textout.c, .h    width-aware tables and folded notes; escape.c: JSON and HTML strings
 *   next.h           the next-steps list (render_next.c) the text, JSON and HTML pages share
 */
#ifndef TOPO_REPORT_RENDER_H
#define TOPO_REPORT_RENDER_H

#include <stdio.h>

#include "kernel_stats.h"
#include "report.h"

/* ---- renderers (render_*.c, export_chrome.c, fit.c) */
void rp_render_text(const rp_report *r, FILE *f);
void rp_render_json(const rp_report *r, FILE *f);
/* CSV tables, one per file (--csv DIR) or per --csv-table NAME: a header line, then the rows. */
enum {
  RP_CSV_RANKS = 0,
  RP_CSV_COLLECTIVES,
  RP_CSV_STEPS,
  RP_CSV_TEMPORAL, /* the kernel-level ones (a Kineto trace): temporal, kernels, streams, memcpy */
  RP_CSV_KERNELS,
  RP_CSV_STREAMS,
  RP_CSV_MEMCPY,
  RP_CSV_TABLES
};
const char *rp_csv_table_name(int table); /* "ranks", ...; NULL out of range */
int rp_csv_table_find(const char *name);  /* the table of that name, -1 none */
/* 1 when the table can have rows for r (the kernel-level ones need a Kineto trace). */
int rp_csv_table_applies(const rp_report *r, int table);
void rp_render_csv_table(const rp_report *r, int table, FILE *f);
topo_status rp_render_html(const rp_report *r, const char *path);
void rp_json_string(FILE *f, const char *s);
/* rp_export_chrome: TOPO_ERR_PARSE when no input holds a topo trace (no file written), TOPO_ERR_IO
 * when OUT cannot be written or some input could not be read (the export covers the others). */
topo_status rp_export_chrome(const char *const *paths, int npaths, const rp_options *opt,
                             const char *out_path);
topo_status rp_dump(const char *path, FILE *out);
void rp_render_diff(const rp_report *a, const rp_report *b, const char *name_a, const char *name_b,
                    FILE *f);

/* ---- the --html page's plots (html_plots.c), inline SVG, in the order the page shows them */
void rp_html_timeline(FILE *f, const rp_report *r);   /* a lane per rank over the window */
void rp_html_breakdown(FILE *f, const rp_report *r);  /* time breakdown per rank */
void rp_html_busbw_plot(FILE *f, const rp_report *r); /* busbw against size, reference line */
/* "rank 3" ("rank ?" unknown), as the page names a rank. */
void rp_html_rank_name(const rp_rank *k, char *buf, size_t len);

/* ---- the kernel-level analyses (render_kernels.c, kdiff.c) */
void rp_render_kernels_text(const rp_report *r, FILE *f);
void rp_render_kernels_json(const rp_report *r, FILE *f); /* `,"kernel_analyses":{...}` */
/* One kernel-level CSV table: 0 temporal, 1 kernels, 2 streams, 3 memcpy (header only when r has
 * no kernel analyses). */
void rp_render_kernels_csv(const rp_report *r, int which, FILE *f);
int rp_render_kernels_any(const rp_report *r);            /* a rank has kernel analyses */
void rp_render_kernels_html(const rp_report *r, FILE *f); /* sections of render_html.c's page */
void rp_html_esc(FILE *f, const char *s);                 /* text for HTML (render_html.c) */
void rp_render_kernel_diff(const rp_report *a, const rp_report *b, FILE *f);
/* The names a table shows for `n` kernels (full names) side by side, into out[i] (len bytes each):
 * the short name; where two read alike, the short name with the first name of the template
 * arguments ("at::native::vectorized_elementwise_kernel<GeluCUDAKernelImpl…>"); where that still
 * reads alike, the full name. */
void rp_kernel_display_names(const char *const *full, size_t n, char (*out)[512]);

/* Shared by render_kernels.c (text), kernels_json.c and kernels_html.c: */
#define RP_NAME_SHORT 512 /* a short kernel name (kernels.c copies at most NAME_MAX_LEN) */
double rp_kern_std(const rp_kstat *k);         /* a kernel's duration std. deviation; NAN: < 2 */
double rp_kern_queue_std(const rp_gstream *s); /* a stream's queue length std. deviation */
/* Calls rows(f, rank) for every rank with kernel analyses (a Kineto trace), in rank order. */
void rp_kern_each_rank(const rp_report *r, FILE *f, void (*rows)(FILE *f, const rp_rank *rank));
/* The names shown for one rank's top kernels (indexed like g->kern; NULL out of memory; the
 * caller frees). */
char (*rp_kern_top_names(const rp_gpu *g))[512];

#endif
