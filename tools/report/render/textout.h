/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Text that fits a terminal: tables whose cells are collected first and printed to a width, and
 * notes word-wrapped to it. A table that does not fit wraps its headers, then wraps its text
 * columns (kernel names), then splits into blocks of columns, each repeating the key columns (the
 * rank, the collective). Nothing is cut: every character of every cell is printed. Width 0 means
 * no limit (one line per row, one line per note: --wide). Called by the text renderers
 * (render_text.c, render_kernels.c, render_diff.c, kdiff.c, render_next.c).
 *
 * Memory: a table holds copies of its cells until rp_tab_free. Out of memory, a table prints what
 * it holds, unfitted, and a note that cells are missing. Single-threaded.
 */
#ifndef TOPO_REPORT_TEXTOUT_H
#define TOPO_REPORT_TEXTOUT_H

#include <stdio.h>

#include "report.h"

#define RP_TEXT_WIDTH 100 /* the text report's width when rp_report.text_width is 0 */

/* The width the text renderers fit: r->text_width (-1: no limit, returned as 0), else 100. */
int rp_text_width(const rp_report *r);

/* Column flags. */
enum {
  RP_TAB_LEFT = 1, /* left-aligned (text); numbers are right-aligned */
  RP_TAB_KEY = 2,  /* names the row: repeated in every block when the table splits */
  RP_TAB_WRAP = 4, /* its cells may wrap over several lines (long names) */
};

typedef struct rp_tab rp_tab;
/* A table of ncols columns; NULL when out of memory (every call accepts NULL). */
rp_tab *rp_tab_new(int ncols);
/* Column `col`'s header (words may wrap onto several lines) and flags. */
void rp_tab_col(rp_tab *t, int col, const char *header, int flags);
/* Column `col` is never narrower than `cols` (a figure's widest form: "999.999 ms"), so that a
 * table keeps its shape, and splits alike, whatever its figures. */
void rp_tab_min(rp_tab *t, int col, int cols);
/* The next cell of the current row, printf-style; a row ends with rp_tab_end_row (missing cells
 * print empty). */
void rp_tab_cell(rp_tab *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rp_tab_end_row(rp_tab *t);
/* A line of its own between rows (a sub-heading, "(last 20 of 31 steps)"), word-wrapped. */
void rp_tab_line(rp_tab *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the table `indent` spaces in, fitted to `width` (0: no limit); frees nothing. */
void rp_tab_print(const rp_tab *t, FILE *f, int width, int indent);
void rp_tab_free(rp_tab *t);

/* A paragraph `indent` spaces in, word-wrapped to `width` (0: one line), continuation lines two
 * spaces further in. */
void rp_note(FILE *f, int width, int indent, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same for a finished string. */
void rp_note_str(FILE *f, int width, int indent, const char *text);

/* Display width of a UTF-8 string (code points). */
int rp_text_cols(const char *s);

/* Ranks as a short list: "0-2,4,7" (sorted, distinct ints) into buf. */
void rp_fmt_ranks(const int *ranks, int n, char *buf, size_t len);

/* Notes folded by kind: notes with the same text are printed once, with the ranks they hold for
 * ("ranks 0-2,4-7: ..."). */
typedef struct rp_fold rp_fold;
rp_fold *rp_fold_new(void); /* NULL out of memory: every call accepts NULL (then prints at once) */
/* A note of rank `rank` (-1: no rank); `text` is copied. */
void rp_fold_add(rp_fold *fo, int rank, const char *text);
/* Prints every note in order of first appearance, then empties the set. */
void rp_fold_print(rp_fold *fo, FILE *f, int width, int indent);
void rp_fold_free(rp_fold *fo);

#endif
