// SPDX-License-Identifier: Apache-2.0
// The truth of a real job, on CPU: tests/data/truth-1xh200 holds the traces of a DDP job of two
// ranks sharing one H200 (both plugins in their default configuration, torch.profiler from step
// 18 of 30, rank 1 delayed 20 ms per step; tests/gpu/truth_one_gpu.sh run A, recorded after the
// report's rules for it were set). topo stepped aside while torch.profiler recorded, so on
// Kineto's steps topo's overlap and exposed figures are its estimates from its own covered steps
// elsewhere in the run. topo-report's figures from topo's traces alone must be within 1 point of
// those it computes from the Kineto traces of the same steps, each estimate's stated error must
// cover its gap, and the delayed rank must be named the straggler.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_analysis.h"

#define DATA TOPO_TRUTH_DATA

/* The job's step bounds (max over ranks of each) and its first profiled step, from the
 * steps-rank*.json files ddp_job.py wrote: {"rank": R, "bounds_ns": [...], "kineto_from": K}. */
static size_t read_bounds(int64_t *b, size_t cap, int *kfrom) {
  size_t n = 0;
  for (int rank = 0; rank < 2; rank++) {
    char path[512];
    snprintf(path, sizeof path, "%s/steps-rank%d.json", DATA, rank);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[8192];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    const char *p = strstr(text, "\"bounds_ns\": [");
    assert_non_null(p);
    p += strlen("\"bounds_ns\": [");
    size_t i = 0;
    while (*p && *p != ']' && i < cap) {
      char *end;
      int64_t v = strtoll(p, &end, 10);
      assert_true(end != p);
      if (rank == 0 || i >= n) b[i] = v;
      else if (v > b[i]) b[i] = v;
      i++;
      p = end;
      while (*p == ',' || *p == ' ') p++;
    }
    if (rank == 0 || i < n) n = i;
    const char *k = strstr(text, "\"kineto_from\": ");
    assert_non_null(k);
    *kfrom = atoi(k + strlen("\"kineto_from\": "));
  }
  return n;
}

static void analyze(const char *sub, int64_t from, int64_t to, rp_report *r) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", DATA, sub);
  const char *paths[] = {path};
  rp_options opt = {.reorder_window = 65536, .quiet = 1};
  if (to > from) opt.window = 1, opt.from = from, opt.to = to;
  assert_int_equal(rp_analyze(paths, 1, &opt, r), TOPO_OK);
}

static const rp_rank *rank_of(const rp_report *r, int world) {
  for (int i = 0; i < r->nranks; i++)
    if (r->ranks[i].world_rank == world) return &r->ranks[i];
  fail_msg("no rank %d", world);
  return NULL;
}

static void test_topo_alone_matches_kineto_on_the_same_steps(void **state) {
  (void)state;
  int64_t b[64];
  int kfrom = 0;
  size_t n = read_bounds(b, 64, &kfrom) - 1; /* measured steps */
  assert_true(n > (size_t)kfrom + 4);
  int64_t from = b[kfrom + 1], to = b[n]; /* Kineto's steps, the first profiled one skipped */
  rp_report topo, kin;
  analyze("traces", from, to, &topo);
  analyze("kineto", from, to, &kin);
  for (int w = 0; w < 2; w++) {
    rp_derived t, k;
    const rp_rank *tr = rank_of(&topo, w);
    rp_derive_rank(tr, &t);
    rp_derive_rank(rank_of(&kin, w), &k);
    assert_true(t.covered == 0); /* topo recorded no compute on these steps */
    assert_true(t.exposed_all_known && t.exposed_all_estimated && t.overlap_all_defined);
    assert_true(k.exposed_all_known && !k.exposed_all_estimated);
    double err_exposed = (double)t.exposed_all_error / (double)t.span;
    double err_overlap = (double)t.exposed_all_error / (double)t.comm;
    fprintf(stderr,
            "rank %d: comm %.2f / %.2f %%, overlap %.2f ± %.2f / %.2f %%, exposed %.2f ± %.2f / "
            "%.2f %% (topo / Kineto), model from %" PRIu64 " covered steps, %" PRIu64 " left out\n",
            w, 100 * t.comm_share, 100 * k.comm_share, 100 * t.overlap_all_ratio, 100 * err_overlap,
            100 * k.overlap_all_ratio, 100 * t.exposed_all_share, 100 * err_exposed,
            100 * k.exposed_all_share, tr->model.chunks, tr->model.outliers);
    assert_true(fabs(t.comm_share - k.comm_share) <= 0.01);
    assert_true(fabs(t.overlap_all_ratio - k.overlap_all_ratio) <= 0.01);
    assert_true(fabs(t.exposed_all_share - k.exposed_all_share) <= 0.01);
    assert_true(fabs(t.overlap_all_ratio - k.overlap_all_ratio) <= err_overlap);
    assert_true(fabs(t.exposed_all_share - k.exposed_all_share) <= err_exposed);
  }
  rp_report_free(&kin);
  rp_report_free(&topo);
  /* the whole run from topo's traces alone: rank 1 (delayed) caused the waiting */
  analyze("traces", 0, 0, &topo);
  const rp_rank *r0 = rank_of(&topo, 0), *r1 = rank_of(&topo, 1);
  assert_true(r1->late_total > 10 * r0->late_total);
  rp_report_free(&topo);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_topo_alone_matches_kineto_on_the_same_steps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
