// SPDX-License-Identifier: Apache-2.0
// Compute coverage of the analysis (analyze.h): the windows in which a rank's compute timeline is
// known (CUPTI span records of topo traces in pass 1, the GPU range of Kineto traces), cut to
// whole steps, the overlap model's chunks inside it and the model they give, and the reason shown
// where a rank has none. Called by pass 1 (spans), analyze.c (the build after pass 1) and pass 2
// (membership, the model).
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_ctx.h"
#include "report_analysis.h"

/* ---- compute coverage: where a rank's compute timeline is known */
static void cover_add(ctx *c, rp_rank *k, int64_t a, int64_t b) {
  if (b <= a) return;
  if (k->ncover == k->cap_cover) {
    size_t cap = k->cap_cover ? k->cap_cover * 2 : 16;
    int64_t *v = topo_realloc(k->cover, cap * 2 * sizeof *v);
    if (!v) {
      c->st = TOPO_ERR_NOMEM;
      return;
    }
    k->cover = v;
    k->cap_cover = cap;
  }
  k->cover[2 * k->ncover] = a;
  k->cover[2 * k->ncover + 1] = b;
  k->ncover++;
}

static int cmp_pair(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Sort the windows and merge overlapping ones. */
static void cover_normalize(rp_rank *k) {
  if (!k->ncover) return;
  qsort(k->cover, k->ncover, 2 * sizeof *k->cover, cmp_pair);
  size_t n = 0;
  for (size_t i = 0; i < k->ncover; i++) {
    int64_t a = k->cover[2 * i], b = k->cover[2 * i + 1];
    if (n && a <= k->cover[2 * n - 1]) {
      if (b > k->cover[2 * n - 1]) k->cover[2 * n - 1] = b;
      continue;
    }
    k->cover[2 * n] = a;
    k->cover[2 * n + 1] = b;
    n++;
  }
  k->ncover = n;
}

int an_in_cover(const rp_rank *k, int64_t t) {
  size_t lo = 0, hi = k->ncover;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (k->cover[2 * m + 1] <= t) lo = m + 1;
    else hi = m;
  }
  return lo < k->ncover && k->cover[2 * lo] <= t;
}

/* A TOPO_REC_CUPTI record of a binary source (pass 1). */
void an_cupti_span(ctx *c, rp_source *s, const topo_rec_cupti *u) {
  if (s->proc < 0) return;
  rp_rank *k = &c->r->ranks[s->proc];
  const char *name = u->name_id && s->impl ? topo_trace_reader_string(s->impl, u->name_id) : NULL;
  if (!name || !*name) name = NULL;
  int64_t a, b;
  switch (u->state) {
  case TOPO_CUPTI_RECORDED:
  case TOPO_CUPTI_YIELDED:
    k->cupti_spans++;
    if (__builtin_add_overflow(u->cpu_start_ns, s->mono_to_real, &a) ||
        __builtin_add_overflow(u->cpu_stop_ns, s->mono_to_real, &b))
      return;
    cover_add(c, k, a, b);
    if (u->state == TOPO_CUPTI_YIELDED && !k->cover_note[0])
      snprintf(k->cover_note, sizeof k->cover_note,
               "topo stepped aside for another CUPTI client (%s)", name ? name : "unnamed");
    break;
  case TOPO_CUPTI_DECLINED:
    k->cupti_declined++;
    snprintf(k->cover_note, sizeof k->cover_note, "another CUPTI client (%s) held CUPTI",
             name ? name : "unnamed");
    break;
  case TOPO_CUPTI_FAILED:
    k->cupti_failed++;
    if (!k->cupti_declined)
      snprintf(k->cover_note, sizeof k->cover_note, "CUPTI failed: %s",
               name ? name : "no reason given");
    break;
  default: break;
  }
}

/* Median duration of the rank's steady steps (all of them when none is steady). */
static int64_t median_step(const rp_rank *k) {
  int64_t *d = topo_malloc(k->nsteps * sizeof *d);
  if (!d) return k->steps[k->nsteps / 2].stop - k->steps[k->nsteps / 2].start;
  size_t n = 0;
  for (int all = 0; all < 2 && !n; all++)
    for (size_t i = 0; i < k->nsteps; i++)
      if (all || !k->steps[i].warmup) d[n++] = k->steps[i].stop - k->steps[i].start;
  qsort(d, n, sizeof *d, cmp_pair);
  int64_t m = d[n / 2];
  topo_free(d);
  return m;
}

/* A window that ends inside a step measures part of a step, and the parts of a step differ (the
 * backward pass overlaps, the optimizer does not): on the 2-rank DDP job a CUPTI window ending
 * mid-step moved one rank's overlap by 2.3 points, and a window shorter than a 2.3 s DDP step
 * that held 48 ms of compute and 4 us of communication made "overlap 0.0 %" the headline. Where
 * the rank has steps, its coverage is the union of the steady steps that lie wholly inside its
 * windows; a window holding none is part of a step and is left out (counted, and the reason says
 * which window length records whole steps). Start-up is never counted: steps detected before the
 * steady state (warm-up: compilation, allocator growth, the first backward building DDP's
 * buckets) are left out, and so are windows that ended before the first steady step (a window at
 * set-up); both are counted for the reports to say so. */
static void cover_whole_steps(ctx *c, rp_rank *k) {
  if (!k->nsteps || !k->ncover) return;
  int64_t steady_from = INT64_MAX;
  for (size_t i = 0; i < k->nsteps; i++)
    if (!k->steps[i].warmup) {
      steady_from = k->steps[i].start;
      break;
    }
  if (steady_from == INT64_MAX) { /* never steady: no step is told apart as start-up */
    for (size_t i = 0; i < k->nsteps; i++) k->steps[i].warmup = 0;
    steady_from = INT64_MIN;
  }
  size_t kept = 0, j = 0;
  for (size_t i = 0; i < k->nsteps; i++) {
    const rp_step *st = &k->steps[i];
    while (j < k->ncover && k->cover[2 * j + 1] < st->stop) j++;
    if (j < k->ncover && k->cover[2 * j] <= st->start) {
      if (st->warmup) k->startup_steps++;
      else kept++;
    }
  }
  /* every window: before the steady state (start-up), holding a whole steady step, or part of
   * a step */
  int64_t longest = 0;
  for (size_t w = 0, i = 0; w < k->ncover; w++) {
    int64_t a = k->cover[2 * w], b = k->cover[2 * w + 1];
    if (b <= steady_from) { /* said where no steady step is kept (else its steps are) */
      if (!kept) k->startup_windows++;
      continue;
    }
    while (i < k->nsteps && k->steps[i].start < a) i++;
    int whole = 0;
    for (size_t x = i; x < k->nsteps && k->steps[x].start < b && !whole; x++)
      whole = !k->steps[x].warmup && k->steps[x].stop <= b;
    if (!whole) {
      k->part_step_windows++;
      if (b - a > longest) longest = b - a;
    }
  }
  if (!kept) {
    k->ncover = 0;
    if (k->part_step_windows) {
      char ss[32], ws[32], want[32];
      int64_t step = median_step(k);
      rp_fmt_ns(step, ss, sizeof ss);
      rp_fmt_ns(longest, ws, sizeof ws);
      rp_fmt_ns(3 * step, want, sizeof want);
      snprintf(k->cover_note, sizeof k->cover_note,
               "no whole step (~%s) fits inside its CUPTI windows (at most %s): what they "
               "recorded is part of a step, not the job's overlap, left out; "
               "TOPO_PROFILER_CUPTI_WINDOW_MS of %s or more records whole ones",
               ss, ws, want);
    } else if (k->startup_steps || k->startup_windows)
      snprintf(k->cover_note, sizeof k->cover_note,
               "its CUPTI windows recorded start-up only (%zu warm-up step%s, %zu window%s before "
               "the steady state), left out",
               k->startup_steps, k->startup_steps == 1 ? "" : "s", k->startup_windows,
               k->startup_windows == 1 ? "" : "s");
    return;
  }
  int64_t *v = topo_malloc(kept * 2 * sizeof *v);
  if (!v) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  size_t n = 0;
  j = 0;
  for (size_t i = 0; i < k->nsteps; i++) {
    const rp_step *st = &k->steps[i];
    while (j < k->ncover && k->cover[2 * j + 1] < st->stop) j++;
    if (j < k->ncover && k->cover[2 * j] <= st->start && !st->warmup) {
      v[2 * n] = st->start;
      v[2 * n + 1] = st->stop;
      if (!n || st->value < k->cover_first) k->cover_first = st->value;
      if (!n || st->value > k->cover_last) k->cover_last = st->value;
      n++;
    }
  }
  k->cover_steps = n;
  topo_free(k->cover);
  k->cover = v;
  k->ncover = k->cap_cover = n;
  cover_normalize(k);
}

/* The coverage window holding [a, b), or -1. */
static long cover_holding(const rp_rank *k, int64_t a, int64_t b) {
  size_t lo = 0, hi = k->ncover;
  while (lo < hi) { /* the first window ending after a */
    size_t m = (lo + hi) / 2;
    if (k->cover[2 * m + 1] <= a) lo = m + 1;
    else hi = m;
  }
  return lo < k->ncover && k->cover[2 * lo] <= a && b <= k->cover[2 * lo + 1] ? (long)lo : -1;
}

/* The overlap model's chunks (docs/metrics.md, Coverage): the rank's steps that lie inside its
 * coverage (every step of the input, before the window clips them), else its coverage windows;
 * each with the coverage stretch holding it (a run of covered steps, or the window). */
static void chunks_build(ctx *c, rp_rank *k) {
  if (!k->ncover) return;
  size_t n = 0;
  for (size_t i = 0; i < k->nsteps; i++)
    n += !k->steps[i].warmup && cover_holding(k, k->steps[i].start, k->steps[i].stop) >= 0;
  size_t total = n ? n : k->ncover;
  k->chunks_partial = k->nsteps && !n;
  k->chunks_steps = n > 0;
  if (!(k->chunks = topo_calloc(total, sizeof *k->chunks))) {
    c->st = TOPO_ERR_NOMEM;
    return;
  }
  k->nchunks = 0;
  for (size_t i = 0; i < k->nsteps && n; i++) {
    long w = k->steps[i].warmup ? -1 : cover_holding(k, k->steps[i].start, k->steps[i].stop);
    if (w < 0) continue;
    k->chunks[k->nchunks].start = k->steps[i].start;
    k->chunks[k->nchunks].stretch = w;
    k->chunks[k->nchunks++].stop = k->steps[i].stop;
  }
  for (size_t i = 0; i < k->ncover && !n; i++) {
    k->chunks[k->nchunks].start = k->cover[2 * i];
    k->chunks[k->nchunks].stretch = (int64_t)i;
    k->chunks[k->nchunks++].stop = k->cover[2 * i + 1];
  }
}

void an_model_finish(rp_rank *k) {
  memset(&k->model, 0, sizeof k->model);
  k->model.steps = k->chunks_steps;
  rp_omodel_add_robust(&k->model, k->chunks, k->nchunks);
  rp_omodel_finish(&k->model, !k->ncover       ? RP_OMODEL_NO_COVER
                              : k->nchunks < 2 ? RP_OMODEL_ONE_STRETCH
                                               : RP_OMODEL_FEW_COMM);
  topo_free(k->chunks);
  k->chunks = NULL;
  k->nchunks = 0;
}

/* After pass 1: every rank's windows. Kineto covers its GPU range; a topo CUPTI trace without
 * span records (older writers) covers everything. Then the model's chunks inside them. */
void an_cover_build(ctx *c) {
  rp_report *r = c->r;
  for (int i = 0; i < r->nsrc; i++) {
    const rp_source *s = &r->src[i];
    if (s->proc < 0 || s->kind != RP_SRC_KINETO || !(s->gpu_last > s->gpu_first)) continue;
    cover_add(c, &r->ranks[s->proc], s->gpu_first, s->gpu_last);
  }
  for (int i = 0; i < r->nranks; i++) {
    rp_rank *k = &r->ranks[i];
    int spans = k->cupti_spans || k->cupti_declined || k->cupti_failed;
    if (k->trace_kernels && !spans) {
      k->cover_whole = 1;
      k->ncover = 0;
      cover_add(c, k, INT64_MIN / 4, INT64_MAX / 4);
    }
    cover_normalize(k);
    if (!k->cover_whole && !k->kineto)
      cover_whole_steps(c, k); /* Kineto: the range the user profiled */
    chunks_build(c, k);
  }
}

const char *rp_rank_unknown_reason(const rp_rank *k) {
  static const char none[] =
      "no compute timeline: no CUPTI window of the profiler covers this rank "
      "(TOPO_PROFILER_CUPTI=on "
      "records continuously, TOPO_PROFILER_CUPTI_TRIGGER on demand), and no Kineto trace of it was "
      "given";
  /* The default mode writes the -cupti trace from the first large collective or one period
   * after init: a process with neither never had a window. */
  static const char never[] =
      "no CUPTI window opened: TOPO_PROFILER_CUPTI=window opens the first at the first "
      "collective of >= 1 MiB or one TOPO_PROFILER_CUPTI_PERIOD_S after init, this rank had no "
      "collective that large, and no -cupti trace of its process was given (it ended before the "
      "period, or the file was left out; TOPO_PROFILER_CUPTI=on records from init)";
  if (k->cover_note[0]) return k->cover_note;
  if (k->t.covered < (k->t.last > k->t.first ? k->t.last - k->t.first : 0)) {
    if (!k->ncover && !k->kineto && k->cupti_asked && !k->cupti_trace &&
        k->largest_coll < TOPO_TRACE_CUPTI_START_BYTES)
      return never;
    if (!k->ncover) return none;
    return k->nsteps && !k->kineto
               ? "compute counts only over the whole steps inside the CUPTI windows (outside them "
                 "it "
                 "was not recorded; TOPO_PROFILER_CUPTI=on or TOPO_PROFILER_CUPTI_TRIGGER record "
                 "more)"
               : "outside the CUPTI windows compute was not recorded (TOPO_PROFILER_CUPTI=on or "
                 "TOPO_PROFILER_CUPTI_TRIGGER record more)";
  }
  return "";
}

const char *rp_rank_cover_steps(const rp_rank *k, char *buf, size_t len) {
  buf[0] = 0;
  if (!len) return buf;
  size_t o = 0;
  if (k->cover_steps) {
    int w = k->cover_first == k->cover_last
                ? snprintf(buf, len, "steady step %" PRIu64, k->cover_first)
                : snprintf(buf, len, "%zu steady steps, %" PRIu64 "-%" PRIu64, k->cover_steps,
                           k->cover_first, k->cover_last);
    o = w > 0 ? (size_t)w : 0;
  }
  if ((k->startup_steps || k->startup_windows) && o < len) {
    int w = snprintf(buf + o, len - o,
                     "%sstart-up left out: %zu warm-up step%s, %zu window%s before the "
                     "steady state",
                     o ? "; " : "", k->startup_steps, k->startup_steps == 1 ? "" : "s",
                     k->startup_windows, k->startup_windows == 1 ? "" : "s");
    o += w > 0 ? (size_t)w : 0;
  }
  if (k->cover_steps && k->part_step_windows && o < len)
    snprintf(buf + o, len - o, "; %zu window%s without a whole step left out", k->part_step_windows,
             k->part_step_windows == 1 ? "" : "s");
  return buf;
}
