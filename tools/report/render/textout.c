// SPDX-License-Identifier: Apache-2.0
// Text that fits a terminal (textout.h): tables printed to a width (headers wrapped, text columns
// wrapped, then blocks of columns that repeat the key columns), word-wrapped notes, and notes
// folded by kind across ranks. Called by the text renderers.
#include "textout.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#define TAB_SEP      2  /* spaces between columns */
#define TAB_WRAP_MIN 32 /* a wrapped column is never narrower than this */

typedef struct tab_col {
  char *header;
  int flags;
  int min; /* narrowest width */
} tab_col;

/* A cell, or a full-width line (col == -1) between rows. */
typedef struct tab_cell {
  int row, col;
  char *text;
} tab_cell;

struct rp_tab {
  int ncols;
  tab_col *col;
  tab_cell *cell;
  size_t n, cap;
  int row, next_col; /* the row being filled and its next column */
  int failed;        /* a cell could not be stored */
};

int rp_text_width(const rp_report *r) {
  if (r->text_width < 0) return 0;
  return r->text_width ? r->text_width : RP_TEXT_WIDTH;
}

int rp_text_cols(const char *s) {
  int n = 0;
  for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

/* Bytes of the first `cols` code points of s (all of it when shorter). */
static size_t bytes_of_cols(const char *s, int cols) {
  size_t i = 0;
  int c = 0;
  while (s[i]) {
    if (((unsigned char)s[i] & 0xc0) != 0x80) {
      if (c == cols) break;
      c++;
    }
    i++;
  }
  return i;
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = topo_malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* A formatted string on the heap; NULL out of memory. */
static char *vformat(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static char *vformat(const char *fmt, va_list ap) {
  va_list aq;
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, aq);
  va_end(aq);
  if (n < 0) return NULL;
  char *s = topo_malloc((size_t)n + 1);
  if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

rp_tab *rp_tab_new(int ncols) {
  rp_tab *t = topo_calloc(1, sizeof *t);
  if (!t) return NULL;
  t->col = topo_calloc((size_t)(ncols > 0 ? ncols : 1), sizeof *t->col);
  if (!t->col) {
    topo_free(t);
    return NULL;
  }
  t->ncols = ncols;
  return t;
}

void rp_tab_min(rp_tab *t, int col, int cols) {
  if (t && col >= 0 && col < t->ncols) t->col[col].min = cols;
}

void rp_tab_col(rp_tab *t, int col, const char *header, int flags) {
  if (!t || col < 0 || col >= t->ncols) return;
  topo_free(t->col[col].header);
  t->col[col].header = dup_str(header);
  t->col[col].flags = flags;
  if (!t->col[col].header) t->failed = 1;
}

static void push(rp_tab *t, int row, int col, char *text) {
  if (!text) {
    t->failed = 1;
    return;
  }
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    tab_cell *c = topo_realloc(t->cell, cap * sizeof *c);
    if (!c) {
      topo_free(text);
      t->failed = 1;
      return;
    }
    t->cell = c;
    t->cap = cap;
  }
  t->cell[t->n++] = (tab_cell){row, col, text};
}

void rp_tab_cell(rp_tab *t, const char *fmt, ...) {
  if (!t) return;
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  if (t->next_col >= t->ncols) {
    topo_free(s);
    return;
  }
  push(t, t->row, t->next_col++, s);
}

void rp_tab_end_row(rp_tab *t) {
  if (!t) return;
  t->row++;
  t->next_col = 0;
}

void rp_tab_line(rp_tab *t, const char *fmt, ...) {
  if (!t) return;
  if (t->next_col) rp_tab_end_row(t);
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  push(t, t->row++, -1, s);
}

void rp_tab_free(rp_tab *t) {
  if (!t) return;
  for (size_t i = 0; i < t->n; i++) topo_free(t->cell[i].text);
  for (int c = 0; c < t->ncols; c++) topo_free(t->col[c].header);
  topo_free(t->cell), topo_free(t->col), topo_free(t);
}

/* The next line of `s` (from *at) in at most `w` columns: breaks after a space, or before '_',
 * ':', ',', '(', '<', '/' when a word is longer than the line; a run with no break is cut at w.
 * Returns its byte length (spaces at the break dropped from the next start). */
static size_t wrap_piece(const char *s, int w, size_t *next) {
  size_t whole = strlen(s);
  if (w <= 0 || rp_text_cols(s) <= w) {
    *next = whole;
    return whole;
  }
  size_t lim = bytes_of_cols(s, w), brk = 0; /* s[lim]: the first byte past the line */
  if (s[lim] == ' ') brk = lim;
  for (size_t i = lim; !brk && i > 0; i--)
    if (s[i - 1] == ' ') brk = i;
  for (size_t i = lim - 1; !brk && i > 0; i--)
    if (strchr("_:,(</", s[i])) brk = i;
  if (!brk) brk = lim;
  size_t len = brk, nx = brk;
  while (len > 0 && s[len - 1] == ' ') len--;
  while (s[nx] == ' ') nx++;
  *next = nx;
  return len;
}

/* Lines `s` takes at width w (>= 1 line). */
static int wrap_lines(const char *s, int w) {
  int n = 0;
  size_t nx;
  do {
    wrap_piece(s, w, &nx);
    s += nx;
    n++;
  } while (*s);
  return n;
}

/* The longest word of a header (its narrowest wrapped width). */
static int longest_word(const char *s) {
  int best = 0, cur = 0;
  for (; *s; s++) {
    if (*s == ' ') cur = 0;
    else if (((unsigned char)*s & 0xc0) != 0x80 && ++cur > best) best = cur;
  }
  return best;
}

typedef struct fit {
  int *w;      /* column widths */
  int *hlines; /* header lines at that width */
} fit;

/* Widths with whole headers (wide), or with headers wrapped to their longest word. */
static void natural(const rp_tab *t, int *w, int wrap_headers) {
  for (int c = 0; c < t->ncols; c++) {
    const char *h = t->col[c].header ? t->col[c].header : "";
    int half = (rp_text_cols(h) + 1) / 2; /* wrapped headers take about two lines at most */
    w[c] = wrap_headers ? (longest_word(h) > half ? longest_word(h) : half) : rp_text_cols(h);
    if (w[c] < t->col[c].min) w[c] = t->col[c].min;
  }
  for (size_t i = 0; i < t->n; i++) {
    const tab_cell *c = &t->cell[i];
    if (c->col < 0) continue;
    int n = rp_text_cols(c->text);
    if (n > w[c->col]) w[c->col] = n;
  }
}

static int total(const int *w, const int *cols, int n, int indent) {
  int s = indent;
  for (int i = 0; i < n; i++) s += w[cols[i]] + (i ? TAB_SEP : 0);
  return s;
}

/* One text at width w, line `line` of it (empty past its end), padded to w. */
static void put_piece(FILE *f, const char *s, int w, int line, int left, int wrap) {
  size_t nx = 0, len = strlen(s);
  const char *p = s;
  if (wrap) {
    for (int k = 0; k <= line; k++) {
      if (!*p) {
        len = 0;
        break;
      }
      len = wrap_piece(p, w, &nx);
      if (k < line) p += nx;
    }
  } else if (line > 0) {
    len = 0;
  }
  int cols = 0;
  for (size_t i = 0; i < len; i++) cols += ((unsigned char)p[i] & 0xc0) != 0x80;
  if (!left) fprintf(f, "%*s", w - cols > 0 ? w - cols : 0, "");
  fwrite(p, 1, len, f);
  if (left) fprintf(f, "%*s", w - cols > 0 ? w - cols : 0, "");
}

/* Prints one line built by `build` (into a memory stream), without its trailing blanks. */
static void trimmed(FILE *f, char *buf, size_t len) {
  while (len && buf[len - 1] == ' ') len--;
  fwrite(buf, 1, len, f);
  fputc('\n', f);
}

/* Header line `line` (of hl) of a block of columns (cols[0..n)). */
static void header_line(const rp_tab *t, FILE *o, const int *w, const int *cols, int n, int indent,
                        int wrap_headers, int hl, int line) {
  fprintf(o, "%*s", indent, "");
  for (int i = 0; i < n; i++) { /* headers sit at the bottom: shorter ones start lower */
    int c = cols[i];
    const char *h = t->col[c].header ? t->col[c].header : "";
    int l = wrap_headers ? wrap_lines(h, w[c]) : 1, k = line - (hl - l);
    if (i) fprintf(o, "%*s", TAB_SEP, "");
    if (k < 0) fprintf(o, "%*s", w[c], "");
    else put_piece(o, h, w[c], k, (t->col[c].flags & RP_TAB_LEFT) != 0, wrap_headers);
  }
}

/* Line `line` of a row's cells (row[col]) in a block of columns. */
static void row_line(const rp_tab *t, FILE *o, const char **row, const int *w, const int *cols,
                     int n, int indent, int line) {
  fprintf(o, "%*s", indent, "");
  for (int k = 0; k < n; k++) {
    int c = cols[k], wrap = (t->col[c].flags & RP_TAB_WRAP) != 0;
    if (k) fprintf(o, "%*s", TAB_SEP, "");
    put_piece(o, row[c], w[c], line, (t->col[c].flags & RP_TAB_LEFT) != 0, wrap);
  }
}

/* Prints the header and rows of a block of columns (cols[0..n)), lines without trailing blanks. */
static void print_block(const rp_tab *t, FILE *f, const int *w, const int *cols, int n, int indent,
                        int width, int wrap_headers) {
  int hl = 1;
  for (int i = 0; i < n; i++) {
    const char *h = t->col[cols[i]].header ? t->col[cols[i]].header : "";
    int l = wrap_headers ? wrap_lines(h, w[cols[i]]) : 1;
    if (l > hl) hl = l;
  }
  const char **row = topo_calloc((size_t)t->ncols, sizeof *row);
  char *buf = NULL;
  size_t blen = 0;
  FILE *o = row ? open_memstream(&buf, &blen) : NULL;
  if (!o) {
    topo_free(row);
    fprintf(f, "%*s(out of memory: table not printed)\n", indent, "");
    return;
  }
  for (int line = 0; line < hl; line++) {
    rewind(o);
    header_line(t, o, w, cols, n, indent, wrap_headers, hl, line);
    fflush(o);
    trimmed(f, buf, (size_t)ftell(o));
  }
  for (size_t i = 0; i < t->n;) {
    int r = t->cell[i].row;
    if (t->cell[i].col < 0) {
      rp_note_str(f, width, indent, t->cell[i].text);
      i++;
      continue;
    }
    for (int c = 0; c < t->ncols; c++) row[c] = "";
    for (; i < t->n && t->cell[i].row == r; i++) row[t->cell[i].col] = t->cell[i].text;
    int lines = 1;
    for (int k = 0; k < n; k++)
      if (t->col[cols[k]].flags & RP_TAB_WRAP) {
        int l = wrap_lines(row[cols[k]], w[cols[k]]);
        if (l > lines) lines = l;
      }
    for (int line = 0; line < lines; line++) {
      rewind(o);
      row_line(t, o, row, w, cols, n, indent, line);
      fflush(o);
      trimmed(f, buf, (size_t)ftell(o));
    }
  }
  fclose(o);
  free(buf);
  topo_free(row);
}

void rp_tab_print(const rp_tab *t, FILE *f, int width, int indent) {
  if (!t) return;
  int nc = t->ncols;
  int *w = topo_calloc((size_t)nc, sizeof *w), *all = topo_calloc((size_t)nc, sizeof *all);
  int *block = topo_calloc((size_t)nc, sizeof *block);
  if (!w || !all || !block) {
    topo_free(w), topo_free(all), topo_free(block);
    fprintf(f, "%*s(out of memory: table not printed)\n", indent, "");
    return;
  }
  for (int c = 0; c < nc; c++) all[c] = c;
  int wrap_headers = 0;
  natural(t, w, 0);
  if (width > 0 && total(w, all, nc, indent) > width) {
    wrap_headers = 1;
    natural(t, w, 1);
  }
  /* wrap text columns, widest first, down to TAB_WRAP_MIN */
  while (width > 0 && total(w, all, nc, indent) > width) {
    int widest = -1;
    for (int c = 0; c < nc; c++)
      if ((t->col[c].flags & RP_TAB_WRAP) && w[c] > TAB_WRAP_MIN &&
          (widest < 0 || w[c] > w[widest]))
        widest = c;
    if (widest < 0) break;
    int over = total(w, all, nc, indent) - width;
    w[widest] = w[widest] - over > TAB_WRAP_MIN ? w[widest] - over : TAB_WRAP_MIN;
  }
  if (width <= 0 || total(w, all, nc, indent) <= width) {
    print_block(t, f, w, all, nc, indent, width, wrap_headers);
  } else { /* blocks: the key columns, then the others in as few blocks as fit, evened out */
    int nkeys = 0, keyw = indent, rest = 0;
    for (int c = 0; c < nc; c++)
      if (t->col[c].flags & RP_TAB_KEY) block[nkeys++] = c, keyw += w[c] + TAB_SEP;
      else rest += w[c] + TAB_SEP;
    int nblocks = 0;
    for (int c = 0; c < nc; nblocks++) { /* greedy: how many blocks are needed */
      int used = keyw, any = 0;
      for (; c < nc; c++) {
        if (t->col[c].flags & RP_TAB_KEY) continue;
        if (any && used + w[c] > width) break;
        used += w[c] + TAB_SEP, any = 1;
      }
      if (!any) break;
    }
    int target = nblocks > 0 ? keyw + (rest + nblocks - 1) / nblocks : width;
    int c = 0, first = 1;
    while (c < nc) {
      int n = nkeys, used = keyw;
      for (; c < nc; c++) {
        if (t->col[c].flags & RP_TAB_KEY) continue;
        if (n > nkeys && (used + w[c] > width || used >= target)) break;
        block[n++] = c;
        used += w[c] + TAB_SEP;
      }
      if (n == nkeys) break;
      if (!first) fputc('\n', f);
      print_block(t, f, w, block, n, indent, width, wrap_headers);
      first = 0;
    }
  }
  if (t->failed) fprintf(f, "%*s(out of memory: some cells are missing)\n", indent, "");
  topo_free(w), topo_free(all), topo_free(block);
}

void rp_note_str(FILE *f, int width, int indent, const char *text) {
  int first = 1;
  for (const char *p = text;;) {
    const char *nl = strchr(p, '\n');
    size_t plen = nl ? (size_t)(nl - p) : strlen(p);
    char *para = topo_malloc(plen + 1);
    if (!para) {
      fprintf(f, "%*s%s\n", indent, "", p);
      return;
    }
    memcpy(para, p, plen);
    para[plen] = 0;
    const char *s = para;
    do {
      int in = first ? indent : indent + 2;
      size_t nx;
      size_t len = wrap_piece(s, width > 0 ? width - in : 0, &nx);
      fprintf(f, "%*s%.*s\n", in, "", (int)len, s);
      s += nx;
      first = 0;
    } while (*s);
    topo_free(para);
    if (!nl) break;
    p = nl + 1;
  }
}

void rp_note(FILE *f, int width, int indent, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  if (!s) return;
  rp_note_str(f, width, indent, s);
  topo_free(s);
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

void rp_fmt_ranks(const int *ranks, int n, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < n && at < len;) {
    int j = i;
    while (j + 1 < n && ranks[j + 1] == ranks[j] + 1) j++;
    int w = j > i ? snprintf(buf + at, len - at, "%s%d-%d", at ? "," : "", ranks[i], ranks[j])
                  : snprintf(buf + at, len - at, "%s%d", at ? "," : "", ranks[i]);
    if (w < 0) break;
    at += (size_t)w;
    i = j + 1;
  }
}

typedef struct fold_note {
  char *text;
  int *ranks;
  int n, cap;
  int no_rank; /* added without a rank */
} fold_note;

struct rp_fold {
  fold_note *note;
  int n, cap;
  int failed;
};

rp_fold *rp_fold_new(void) { return topo_calloc(1, sizeof(rp_fold)); }

void rp_fold_add(rp_fold *fo, int rank, const char *text) {
  if (!fo) return;
  fold_note *e = NULL;
  for (int i = 0; i < fo->n && !e; i++)
    if (!strcmp(fo->note[i].text, text)) e = &fo->note[i];
  if (!e) {
    if (fo->n == fo->cap) {
      int cap = fo->cap ? fo->cap * 2 : 8;
      fold_note *v = topo_realloc(fo->note, (size_t)cap * sizeof *v);
      if (!v) {
        fo->failed = 1;
        return;
      }
      fo->note = v;
      fo->cap = cap;
    }
    e = &fo->note[fo->n];
    memset(e, 0, sizeof *e);
    if (!(e->text = dup_str(text))) {
      fo->failed = 1;
      return;
    }
    fo->n++;
  }
  if (rank < 0) {
    e->no_rank = 1;
    return;
  }
  if (e->n == e->cap) {
    int cap = e->cap ? e->cap * 2 : 8;
    int *v = topo_realloc(e->ranks, (size_t)cap * sizeof *v);
    if (!v) {
      fo->failed = 1;
      return;
    }
    e->ranks = v;
    e->cap = cap;
  }
  e->ranks[e->n++] = rank;
}

void rp_fold_print(rp_fold *fo, FILE *f, int width, int indent) {
  if (!fo) return;
  for (int i = 0; i < fo->n; i++) {
    fold_note *e = &fo->note[i];
    if (e->n) {
      qsort(e->ranks, (size_t)e->n, sizeof *e->ranks, cmp_int);
      int k = 0;
      for (int j = 0; j < e->n; j++)
        if (!k || e->ranks[j] != e->ranks[k - 1]) e->ranks[k++] = e->ranks[j];
      char list[256];
      rp_fmt_ranks(e->ranks, k, list, sizeof list);
      rp_note(f, width, indent, "%s %s: %s", k == 1 ? "rank" : "ranks", list, e->text);
    }
    if (e->no_rank) rp_note_str(f, width, indent, e->text);
    topo_free(e->text), topo_free(e->ranks);
  }
  if (fo->failed) fprintf(f, "%*s(out of memory: some notes are missing)\n", indent, "");
  fo->n = 0;
  fo->failed = 0;
}

void rp_fold_free(rp_fold *fo) {
  if (!fo) return;
  for (int i = 0; i < fo->n; i++) topo_free(fo->note[i].text), topo_free(fo->note[i].ranks);
  topo_free(fo->note), topo_free(fo);
}
