// SPDX-License-Identifier: Apache-2.0
// What NCCL 2.31+ adds to a trace (format minor version 1) through topo-report: user tags split
// the collective table into rows with a tag column, shown in text, JSON, CSV and HTML only when a
// row carries one; a symmetric kernel's collectives show as "sym <variant>" with algorithm and
// protocol unknown; extension records are paired with their collective even when other records
// come between, a lost one leaves its collective untagged, a stray one is harmless; kernel-phase
// records are dumped; and a minor-0 trace (every writer before) reads as it always did.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "report.h"
#include "report_analysis.h"
#include "report_render.h"
#include "trace_fixture.h"

static char dir[64];

static topo_trace_record coll(int func, uint64_t seq, int64_t at, int algo, int proto) {
  return tf_coll(func, seq, 1 << 20, at, at + 10, at + 100, at + 600, algo, proto, 4, 1);
}

static topo_trace_record ext(int of, int func, uint64_t seq, uint64_t tag, const char *variant) {
  topo_trace_record x;
  memset(&x, 0, sizeof x);
  x.ext.type = TOPO_REC_COLL_EXT;
  x.ext.of = (uint8_t)of;
  x.ext.func = (uint8_t)func;
  x.ext.seq = seq;
  x.ext.user_tag = tag;
  x.ext.variant_len = (uint8_t)strlen(variant);
  memcpy(x.ext.variant, variant, x.ext.variant_len);
  return x;
}

/* A collective with its extension record right before it (and `between` records between). */
static void tagged(tf_trace *t, int func, uint64_t seq, int64_t at, uint64_t tag,
                   const char *variant, int between) {
  topo_trace_record x = ext(TOPO_REC_COLL, func, seq, tag, variant);
  tf_add(t, &x);
  for (int i = 0; i < between; i++) { /* another thread's collectives, untagged */
    topo_trace_record o = coll(0, 100 + seq * 10 + (uint64_t)i, at + 1, 1, 2);
    tf_add(t, &o);
  }
  topo_trace_record c =
      coll(func, seq, at, variant[0] ? TOPO_UNKNOWN_U8 : 1, variant[0] ? TOPO_UNKNOWN_U8 : 2);
  c.coll.flags |= TOPO_COLL_F_EXT | (variant[0] ? TOPO_COLL_F_SYM : 0);
  tf_add(t, &c);
}

static void save(tf_trace *t, const char *name) {
  tf_footer(t, NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_int_equal(tf_save(t, path), 0);
  tf_free(t);
}

static void analyze(rp_report *r) {
  const char *paths[] = {dir};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  assert_int_equal(rp_analyze(paths, 1, &opt, r), TOPO_OK);
}

/* Not inlined: GCC 12 then takes the stream's buffer for a dangling local. */
/* The collective CSV table (the one the tags split). */
static void csv_collectives(const rp_report *r, FILE *f) {
  rp_render_csv_table(r, RP_CSV_COLLECTIVES, f);
}

__attribute__((noinline)) static char *render(const rp_report *r,
                                              void (*fn)(const rp_report *, FILE *)) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  fn(r, f);
  fclose(f);
  return buf;
}

static char *html(const rp_report *r) {
  char path[128];
  snprintf(path, sizeof path, "%s.html", dir);
  assert_int_equal(rp_render_html(r, path), TOPO_OK);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char *buf = calloc(1, 1 << 22);
  assert_non_null(buf);
  size_t n = fread(buf, 1, (1 << 22) - 1, f);
  buf[n] = 0;
  fclose(f);
  unlink(path);
  return buf;
}

static void cleanup(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static const rp_row *row_of(const rp_report *r, int func, uint64_t tag) {
  for (size_t i = 0; i < r->nrows; i++)
    if (r->rows[i]->func == func && r->rows[i]->tag == tag) return r->rows[i];
  return NULL;
}

/* 1 MiB AllReduces: 2 tagged 7 (one with three other records between it and its extension),
 * 1 tagged 9, 3 untagged, 1 whose extension was lost (untagged); a symmetric AllGather
 * "AGxLL_R" tagged 7; a ReduceScatter whose variant holds CSV and HTML syntax; a stray
 * extension; a phase record. */
static void write_tagged(void) {
  snprintf(dir, sizeof dir, "/tmp/topo-tags-XXXXXX");
  assert_non_null(mkdtemp(dir));
  topo_trace_header h;
  tf_header_init(&h, 0x7a9, 0, 2);
  h.abi_version = 7;
  h.minor_version = 1; /* what the tags came with */
  h.nccl_version = 23102;
  tf_trace t;
  tf_begin(&t, &h, NULL);
  t.block_records = 4; /* extensions and their records in different blocks too */
  tagged(&t, 4, 0, 1000, 7, "", 0);
  tagged(&t, 4, 1, 2000, 7, "", 3);
  tagged(&t, 4, 2, 3000, 9, "", 0);
  for (uint64_t s = 3; s < 6; s++) {
    topo_trace_record c = coll(4, s, 1000 * (int64_t)s + 1000, 1, 2);
    tf_add(&t, &c);
  }
  topo_trace_record lost = coll(4, 6, 8000, 1, 2);
  lost.coll.flags |= TOPO_COLL_F_EXT;
  tf_add(&t, &lost);
  tagged(&t, 2, 0, 9000, 7, "AGxLL_R", 1);
  tagged(&t, 3, 0, 10000, 0, "LD,<b>", 0);
  topo_trace_record stray = ext(TOPO_REC_COLL, 4, 99, 5, "");
  tf_add(&t, &stray);
  topo_trace_record ph;
  memset(&ph, 0, sizeof ph);
  ph.phase.type = TOPO_REC_PHASE;
  ph.phase.channel = 2;
  ph.phase.func = 2;
  ph.phase.phase = TOPO_PHASE_COMPUTE;
  ph.phase.gpu_start_ns = 9200;
  ph.phase.gpu_stop_ns = 9500;
  tf_add(&t, &ph);
  save(&t, "tags.trace");
}

static void test_tags_split_rows_and_show_a_column(void **state) {
  (void)state;
  write_tagged();
  rp_report r;
  analyze(&r);
  assert_true(r.have_tags);
  const rp_row *t7 = row_of(&r, 4, 7), *t9 = row_of(&r, 4, 9), *t0 = row_of(&r, 4, 0);
  assert_non_null(t7);
  assert_non_null(t9);
  assert_non_null(t0);
  assert_int_equal(t7->calls, 2);
  assert_int_equal(t9->calls, 1);
  assert_int_equal(t0->calls, 4); /* 3 untagged + the one whose extension was lost */
  assert_null(row_of(&r, 4, 5));  /* the stray extension made no row */
  const rp_row *sym = row_of(&r, 2, 7);
  assert_non_null(sym);
  assert_int_equal(sym->sym, 1);
  char label[64];
  rp_row_choice_label(sym, label, sizeof label);
  assert_string_equal(label, "sym AGxLL_R");
  rp_row_choice_label(t7, label, sizeof label);
  assert_string_equal(label, "Ring/Simple");
  rp_row_choice_label(row_of(&r, 3, 0), label, sizeof label);
  assert_string_equal(label, "sym LD??b?"); /* a name, whatever the trace held */

  char *text = render(&r, rp_render_text);
  assert_non_null(strstr(text, "\nCollectives"));
  const char *head = strstr(strstr(text, "\nCollectives"), "\n  tag ");
  assert_non_null(head); /* the tag column first, then the collective */
  const char *eol = strchr(head + 1, '\n');
  assert_true(strstr(head, "collective") && strstr(head, "collective") < eol);
  assert_non_null(strstr(text, "sym AGxLL_R 100%"));
  free(text);
  char *json = render(&r, rp_render_json);
  assert_non_null(strstr(json, "\"tag\":7"));
  assert_non_null(strstr(json, "\"tag\":null"));
  assert_non_null(strstr(json, "\"symmetric_calls\":1,\"kernel_variant\":\"AGxLL_R\""));
  free(json);
  char *csv = render(&r, csv_collectives);
  assert_non_null(strstr(csv, "symmetric_calls,kernel_variant,tag\n"));
  assert_non_null(strstr(csv, ",1,AGxLL_R,7\n"));
  assert_null(strstr(csv, "<b>"));
  free(csv);
  char *page = html(&r);
  assert_non_null(strstr(page, "<th>tag</th>"));
  assert_null(strstr(page, "<b>"));
  free(page);
  rp_report_free(&r);

  /* dump: the extension and phase records, the header's minor and NCCL versions */
  char path[128], *out = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "%s/tags.trace", dir);
  FILE *f = open_memstream(&out, &len);
  assert_int_equal(rp_dump(path, f), TOPO_OK);
  fclose(f);
  assert_non_null(strstr(out, "\"minor_version\":1"));
  assert_non_null(strstr(out, "\"nccl_version\":23102"));
  assert_non_null(strstr(out,
                         "{\"type\":\"coll_ext\",\"of\":\"coll\",\"func\":\"AllGather\","
                         "\"seq\":0,\"user_tag\":7,\"variant\":\"AGxLL_R\"}"));
  assert_non_null(strstr(out,
                         "{\"type\":\"phase\",\"channel\":2,\"func\":\"AllGather\",\"seq\":0,"
                         "\"phase\":\"compute\",\"gpu_start_ns\":9200,\"gpu_stop_ns\":9500}"));
  free(out);
  cleanup();
}

/* A trace of the first format (minor 0: no extension records, the header's minor 0) reads as
 * before: no tag column anywhere, no symmetric calls. */
static void test_minor_zero_trace_reads_without_a_tag_column(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/topo-tags-XXXXXX");
  assert_non_null(mkdtemp(dir));
  topo_trace_header h;
  tf_header_init(&h, 0x5a, 0, 2);
  assert_int_equal(h.minor_version, 0);
  tf_trace t;
  tf_begin(&t, &h, NULL);
  for (uint64_t s = 0; s < 4; s++) {
    topo_trace_record c = coll(4, s, 1000 * (int64_t)s, 1, 2);
    tf_add(&t, &c);
  }
  save(&t, "old.trace");
  rp_report r;
  analyze(&r);
  assert_false(r.have_tags);
  assert_int_equal(r.nrows, 1);
  assert_int_equal(r.rows[0]->calls, 4);
  assert_int_equal(r.rows[0]->timed, 4);
  assert_int_equal(r.rows[0]->sym, 0);
  char *text = render(&r, rp_render_text), *json = render(&r, rp_render_json),
       *csv = render(&r, csv_collectives), *page = html(&r);
  assert_null(strstr(text, "  tag "));
  assert_null(strstr(json, "\"tag\""));
  assert_null(strstr(json, "symmetric_calls"));
  assert_non_null(strstr(csv, "symmetric_calls,kernel_variant\n"));
  assert_null(strstr(page, "<th>tag</th>"));
  free(text);
  free(json);
  free(csv);
  free(page);
  rp_report_free(&r);
  cleanup();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tags_split_rows_and_show_a_column),
      cmocka_unit_test(test_minor_zero_trace_reads_without_a_tag_column),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
