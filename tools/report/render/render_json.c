// SPDX-License-Identifier: Apache-2.0
// Machine-readable outputs: --json (one object with inputs, ranks, overall, collectives, skew,
// communicators, steps, next steps; every time in ns; null where unknown) and the CSV tables (one
// table per file or per --csv-table: ranks, collectives, steps and the kernel-level ones; empty
// where unknown). Reads rp_report.
#include <inttypes.h>
#include <string.h>

#include "kernel_stats.h"
#include "next.h"
#include "report.h"
#include "report_analysis.h"
#include "report_render.h"
#include "topo_version.h"

/* A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180). */
static void csv_field(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static void ns_or_null(FILE *f, const char *key, int known, int64_t v) {
  if (known) fprintf(f, ",\"%s\":%" PRId64, key, v);
  else fprintf(f, ",\"%s\":null", key);
}

static void name_or_null(FILE *f, const char *key, int known, const char *name) {
  if (known) fprintf(f, ",\"%s\":\"%s\"", key, name);
  else fprintf(f, ",\"%s\":null", key);
}

static void ratio_or_null(FILE *f, const char *key, int known, double v) {
  if (known) fprintf(f, ",\"%s\":%.6f", key, v);
  else fprintf(f, ",\"%s\":null", key);
}

/* comm_* over the whole span (estimates included, with their error); the compute side over the
 * covered time only, null where unknown (`why` then says why; NULL: no reason field). */
static void derived_json(FILE *f, const rp_derived *d, const char *why) {
  int kn = d->known;
  fprintf(f,
          "\"span_ns\":%" PRId64 ",\"comm_ns\":%" PRId64 ",\"comm_estimated_ns\":%" PRId64
          ",\"comm_error_ns\":%" PRId64 ",\"comm_share\":%.6f,\"covered_ns\":%" PRId64
          ",\"covered_share\":%.6f",
          d->span, d->comm, d->comm_est, d->comm_error, d->comm_share, d->covered,
          d->covered_share);
  ns_or_null(f, "compute_ns", kn, d->compute);
  ns_or_null(f, "overlap_ns", kn, d->overlap);
  ns_or_null(f, "exposed_comm_ns", kn, d->exposed);
  ns_or_null(f, "idle_ns", kn, d->idle);
  ns_or_null(f, "memory_ns", kn, d->memory);
  ns_or_null(f, "busy_ns", kn, d->busy);
  ratio_or_null(f, "overlap_ratio", kn && d->overlap_defined, d->overlap_ratio);
  ratio_or_null(f, "exposed_share", kn, d->exposed_share);
  ratio_or_null(f, "compute_share", kn, d->compute_share);
  ratio_or_null(f, "idle_share", kn, d->idle_share);
  if (why && *why) {
    fprintf(f, ",\"compute_unknown_reason\":");
    rp_json_string(f, why);
  } else if (why) {
    fprintf(f, ",\"compute_unknown_reason\":null");
  }
}

/* The overlap model behind the estimated exposed time, or null and why there is none. */
static void model_json(FILE *f, const rp_omodel *m) {
  if (m->ok) {
    fprintf(f,
            ",\"overlap_model\":{\"ratio\":%.6f,\"spread\":%.6f,\"chunks\":%" PRIu64
            ",\"outliers\":%" PRIu64 ",\"covered_comm_ns\":%" PRId64 ",\"windows\":%" PRIu64
            ",\"drift\":%.6f,\"form\":\"%s\",\"intercept_ns\":%.1f,\"slope\":%.6f"
            ",\"chunk_units\":\"%s\"",
            m->ratio, m->spread, m->chunks, m->outliers, rp_dbl_ns(m->comm), m->windows, m->drift,
            m->form == RP_OMODEL_AFFINE ? "affine" : "ratio", m->a, m->b,
            m->steps ? "steps" : "windows");
    if (m->fit)
      fprintf(f,
              ",\"affine_fit\":{\"intercept_var_ns2\":%.6g,\"slope_var\":%.6g,"
              "\"covariance_ns\":%.6g,\"dof\":%.0f}}",
              m->va, m->vb, m->vab, m->dof);
    else fprintf(f, ",\"affine_fit\":null}");
    fprintf(f, ",\"overlap_model_reason\":null");
    return;
  }
  fprintf(f, ",\"overlap_model\":null,\"overlap_model_reason\":");
  rp_json_string(f, m->reason ? m->reason : RP_OMODEL_NO_COVER);
}

/* Exposed communication over the whole span (measured where covered, estimated elsewhere) and
 * the model of its estimate; null where unknown. */
static void exposed_all_json(FILE *f, const rp_derived *d) {
  int kn = d->exposed_all_known;
  ns_or_null(f, "exposed_all_ns", kn, d->exposed_all);
  ns_or_null(f, "exposed_all_error_ns", kn, d->exposed_all_error);
  ns_or_null(f, "exposed_estimated_ns", kn, d->exposed_est);
  ratio_or_null(f, "exposed_all_share", kn, d->exposed_all_share);
  ratio_or_null(f, "overlap_all_ratio", d->overlap_all_defined, d->overlap_all_ratio);
  model_json(f, &d->model);
}

/* A step's exposed communication over its whole length: the rank's, or the sum over ranks. */
static void step_exposed_json(FILE *f, int known, int64_t all, int64_t est, int64_t err) {
  ns_or_null(f, "exposed_all_ns", known, all);
  ns_or_null(f, "exposed_all_error_ns", known, err);
  ns_or_null(f, "exposed_estimated_ns", known, est);
}

static void est_json(FILE *f, const uint64_t *est, uint64_t lost) {
  fprintf(f,
          ",\"estimated\":%" PRIu64 ",\"estimated_fallback\":%" PRIu64
          ",\"estimate_unknown\":%" PRIu64 ",\"gpu_timing_lost\":%" PRIu64,
          est[RP_EST_KEY] + est[RP_EST_OTHER_RANKS] + est[RP_EST_ANY_CHANNELS] + est[RP_EST_SCALED],
          est[RP_EST_OTHER_RANKS] + est[RP_EST_ANY_CHANNELS] + est[RP_EST_SCALED],
          est[RP_EST_UNKNOWN], lost);
}

/* An int64 bound, or null when absent (INT64_MIN / INT64_MAX) or unbounded (< 0 for errors). */
static void bound_or_null(FILE *f, const char *key, int64_t v, int present) {
  if (present) fprintf(f, ",\"%s\":%" PRId64, key, v);
  else fprintf(f, ",\"%s\":null", key);
}

static void alignment_json(FILE *f, const rp_rank *k) {
  fprintf(f,
          ",\"joined_gpu\":%" PRIu64 ",\"wait_clamped\":%" PRIu64
          ",\"wait_clamped_enqueue\":%" PRIu64 ",\"alignment\":{\"method\":\"%s\"",
          k->joined_gpu, k->wait_clamped, k->wait_clamped_enqueue,
          rp_align_method_name(k->align_method));
  int known = k->align_method != RP_ALIGN_NONE;
  bound_or_null(f, "gpu_offset_ns", k->gpu_offset, known);
  /* crossed bounds (lower > upper): the upper bound is invalid, null; its value stays apart */
  int crossed = known && k->off_lower != INT64_MIN && k->off_upper != INT64_MAX &&
                k->off_lower > k->off_upper;
  bound_or_null(f, "lower_ns", k->off_lower, known && k->off_lower != INT64_MIN);
  bound_or_null(f, "upper_ns", k->off_upper, known && k->off_upper != INT64_MAX && !crossed);
  bound_or_null(f, "upper_crossed_ns", k->off_upper, crossed);
  bound_or_null(f, "error_ns", k->align_err, known && k->align_err >= 0);
  fprintf(f, ",\"error_from\":\"%s\"",
          !known                                 ? "none"
          : k->align_method == RP_ALIGN_ANCHORED ? "anchors"
          : k->align_err < 0                     ? "unbounded"
          : crossed                              ? "crossed_bounds"
                                                 : "bounds");
  fprintf(f, ",\"anchors\":%" PRIu64 ",\"inconsistent\":%s}", k->anchors,
          k->align_inconsistent && known ? "true" : "false");
}

/* The rank's events: all, or its complete profiler steps (with the window and the step left out). */
static void window_json(FILE *f, const rp_report *r, const rp_rank *k) {
  if (k->win)
    fprintf(f,
            ",\"window\":{\"mode\":\"complete_steps\",\"from_ns\":%" PRId64 ",\"to_ns\":%" PRId64
            ",\"first_step\":%" PRIu64 ",\"last_step\":%" PRIu64 ",\"dropped_step\":%" PRIu64
            ",\"profiler_steps\":%zu}",
            k->win_from, k->win_to, k->win_first, k->win_last, k->win_dropped, k->win_steps);
  else if (r->step_window == RP_WINDOW_COMPLETE_STEPS)
    fprintf(f, ",\"window\":{\"mode\":\"all\",\"reason\":\"%s\"}",
            k->win_steps ? "one ProfilerStep: none complete" : "no ProfilerStep");
  else fprintf(f, ",\"window\":{\"mode\":\"all\",\"reason\":null}");
}

static void dropped_json(FILE *f, const uint64_t *d) {
  fprintf(f,
          "{\"coll\":%" PRIu64 ",\"child\":%" PRIu64 ",\"record\":%" PRIu64 ",\"io\":%" PRIu64
          ",\"cupti\":%" PRIu64 ",\"other\":%" PRIu64 "}",
          d[0], d[1], d[2], d[3], d[4], d[5]);
}

/* One input: its kind, counts, footer and drops. */
static void source_json(FILE *f, const rp_source *s, int first) {
  fprintf(f, "%s{\"path\":", first ? "" : ",");
  rp_json_string(f, s->path);
  fprintf(f, ",\"kind\":\"%s\",\"rank\":", s->kind == RP_SRC_TRACE ? "trace" : "json");
  if (s->rank >= 0) fprintf(f, "%d", s->rank); /* unknown: null */
  else fprintf(f, "null");
  fprintf(f, ",\"nranks\":");
  if (s->nranks > 0) fprintf(f, "%d", s->nranks);
  else fprintf(f, "null");
  fprintf(f, ",\"comm_hash\":");
  if (s->kind == RP_SRC_TRACE && s->header.comm_hash)
    fprintf(f, "\"%016" PRIx64 "\"", s->header.comm_hash);
  else fprintf(f, "null"); /* a Kineto trace, a process-wide CUPTI trace: no communicator */
  fprintf(f,
          ",\"records\":%" PRIu64 ",\"collectives\":%" PRIu64 ",\"gpu_timed\":%" PRIu64
          ",\"nccl_kernels\":%" PRIu64 ",\"compute_kernels\":%" PRIu64
          ",\"problems\":%u,\"footer\":%s,\"dropped\":",
          s->records, s->colls, s->timed_colls, s->nccl_kernels, s->compute_kernels, s->problems,
          s->footer ? "true" : "false");
  dropped_json(f, s->dropped);
  fputc('}', f);
}

/* One rank's profiler steps (m: the rank's overlap model). */
static void rank_step_json(FILE *f, const rp_step *st, const rp_omodel *m, int first) {
  rp_err e = {st->est_var, st->est_bias, st->est_sum};
  int kn = st->covered > 0;
  int64_t all, est, err;
  int ea = rp_exposed_all(m, st->comm, st->cov_comm, st->cov_comm - st->cov_overlap, st->covered,
                          rp_step_uncovered_units(st), NULL, &all, &est, &err);
  fprintf(f,
          "%s{\"step\":%" PRIu64 ",\"last_step\":%" PRIu64 ",\"steps\":%" PRIu64
          ",\"start_ns\":%" PRId64 ",\"span_ns\":%" PRId64 ",\"comm_ns\":%" PRId64
          ",\"comm_estimated_ns\":%" PRId64 ",\"comm_error_ns\":%" PRId64
          ",\"covered_ns\":%" PRId64,
          first ? "" : ",", st->value, st->last, st->count, st->start, st->stop - st->start,
          st->comm, st->comm_est, rp_comm_error_ns(st->comm_est, &e), st->covered);
  ns_or_null(f, "compute_ns", kn, st->cov_compute);
  ns_or_null(f, "overlap_ns", kn, st->cov_overlap);
  ns_or_null(f, "exposed_comm_ns", kn, st->cov_comm - st->cov_overlap);
  ns_or_null(f, "busy_ns", kn, st->cov_busy);
  step_exposed_json(f, ea, all, est, err);
  fprintf(f, ",\"from\":\"%s\",\"warmup\":%s,\"period\":",
          st->from_kineto ? "kineto"
          : st->period    ? "topo_period"
                          : "topo_mark",
          st->warmup ? "true" : "false");
  if (st->period) fprintf(f, "%d}", st->period);
  else fprintf(f, "null}");
}

/* One rank: its times, estimates, joins, drops, clock alignment, window and steps. */
static void rank_json(FILE *f, const rp_report *r, const rp_rank *k, int first) {
  rp_derived d;
  rp_derive_rank(k, &d);
  fprintf(f, "%s\n{\"rank\":", first ? "" : ",");
  if (k->world_rank >= 0) fprintf(f, "%d", k->world_rank);
  else fprintf(f, "null");
  fprintf(f, ",\"host\":"); /* unknown (a Kineto trace names none): null */
  if (k->host[0]) rp_json_string(f, k->host);
  else fprintf(f, "null");
  fprintf(f, ",\"pid\":");
  if (k->pid) fprintf(f, "%u", k->pid);
  else fprintf(f, "null");
  ns_or_null(f, "first_ns", k->t.first != INT64_MAX, k->t.first);
  ns_or_null(f, "last_ns", k->t.last != INT64_MIN, k->t.last);
  fputc(',', f);
  derived_json(f, &d, rp_rank_unknown_reason(k));
  /* which steps the covered figures are of, and the start-up left out of them */
  if (k->cover_steps)
    fprintf(f,
            ",\"coverage_steps\":{\"count\":%zu,\"first\":%" PRIu64 ",\"last\":%" PRIu64
            ",\"steady\":true}",
            k->cover_steps, k->cover_first, k->cover_last);
  else fprintf(f, ",\"coverage_steps\":null");
  fprintf(f, ",\"startup_left_out\":{\"warmup_steps\":%zu,\"windows\":%zu}", k->startup_steps,
          k->startup_windows);
  fprintf(f, ",\"part_step_windows\":%zu", k->part_step_windows);
  exposed_all_json(f, &d);
  /* what the model's chunks are: whole steps, or CUPTI windows (shorter than a step: parts) */
  if (d.model.ok)
    fprintf(f, ",\"overlap_model_chunks\":\"%s\"",
            k->chunks_partial ? "windows_shorter_than_a_step"
            : k->nsteps       ? "steps"
                              : "windows");
  else fprintf(f, ",\"overlap_model_chunks\":null");
  est_json(f, k->est, k->lost);
  fprintf(f, ",\"intervals_from\":\"%s\"",
          k->kineto          ? "kineto"
          : k->trace_kernels ? "trace_cupti"
                             : "trace_collectives");
  fprintf(f,
          ",\"comm_from_kernels\":%s,\"collectives\":%" PRIu64 ",\"gpu_timed\":%" PRIu64
          ",\"joined\":%" PRIu64 ",\"started_last\":%" PRIu64 ",\"delay_caused_ns\":%" PRId64
          ",\"wait_ns\":%" PRId64 ",\"missed\":%" PRIu64 ",\"late_intervals\":%" PRIu64
          ",\"problems\":%u,\"dropped\":",
          k->comm_from_kernels ? "true" : "false", k->colls, k->timed_colls, k->joined,
          k->last_count, k->late_total, k->wait_total, k->missed, k->t.late, k->problems);
  dropped_json(f, k->dropped);
  alignment_json(f, k);
  window_json(f, r, k);
  /* steps from topo traces: where they are cut (docs/metrics.md, Steps) */
  static const char *const cuts[] = {"cpu_enqueue", "gpu_end_of_last_operation",
                                     "gpu_start_of_first_operation"};
  if (k->nsteps && k->steps[0].period && k->steps_gpu >= 0 && k->steps_gpu <= 2)
    fprintf(f, ",\"steps_cut\":\"%s\"", cuts[k->steps_gpu]);
  else fprintf(f, ",\"steps_cut\":null");
  fprintf(f, ",\"steps\":[");
  for (size_t s = 0; s < k->nsteps; s++) rank_step_json(f, &k->steps[s], &k->model, s == 0);
  fprintf(f, "]}");
}

/* The sums over all ranks. */
static void overall_json(FILE *f, const rp_report *r) {
  rp_derived o;
  rp_derive_overall(r, &o);
  fprintf(f,
          "\"overall\":{\"ranks\":%d,\"collectives\":%" PRIu64 ",\"gpu_timed\":%" PRIu64
          ",\"p2p\":%" PRIu64,
          r->nranks, r->colls, r->timed_colls, r->p2p);
  ns_or_null(f, "wall_span_ns", r->overall.last > r->overall.first,
             rp_sub_sat(r->overall.last, r->overall.first)); /* no GPU activity: null */
  fputc(',', f);
  derived_json(f, &o, NULL);
  fprintf(f, ",\"ranks_with_compute\":%d,\"ranks_with_exposed_all\":%d", o.ranks_known,
          o.ranks_exposed_all);
  exposed_all_json(f, &o);
  est_json(f, r->est, r->lost);
  fputc('}', f);
}

/* One row of the collective table with its algorithm/protocol choices; "tag" (null: untagged)
 * when the report has tags, "symmetric_calls" and "kernel_variant" (null: they differ) when
 * symmetric kernels ran some of its calls. */
static void row_json(FILE *f, const rp_row *w, int first_row, int tags) {
  int al, pr;
  double share;
  rp_row_top_choice(w, &al, &pr, &share);
  char nranks[16] = "null", size[24] = "null", bytes[24] = "null", algbw[32] = "null",
       busbw[32] = "null"; /* unknown: null */
  if (rp_row_ranks_known(w)) snprintf(nranks, sizeof nranks, "%d", w->nranks);
  if (rp_row_size_known(w)) {
    snprintf(size, sizeof size, "%" PRIu64, w->bucket < 0 ? 0 : (uint64_t)1 << w->bucket);
    snprintf(bytes, sizeof bytes, "%" PRIu64, w->size_sum);
  }
  if (rp_row_algbw_known(w)) snprintf(algbw, sizeof algbw, "%.4f", rp_row_algbw(w));
  if (rp_row_busbw_known(w)) snprintf(busbw, sizeof busbw, "%.4f", rp_row_busbw(w));
  fprintf(f,
          "%s\n{\"collective\":\"%s\",\"nranks\":%s,\"size_from\":%s,\"calls\":%" PRIu64
          ",\"gpu_timed\":%" PRIu64 ",\"estimated\":%" PRIu64 ",\"estimated_fallback\":%" PRIu64
          ",\"estimate_unknown\":%" PRIu64 ",\"gpu_timing_lost\":%" PRIu64
          ",\"estimated_ns\":%" PRId64 ",\"estimated_error_ns\":%" PRId64 ",\"bytes\":%s",
          first_row ? "" : ",", rp_func_name(w->func), nranks, size, w->calls, w->timed,
          w->estimated, w->est_fallback, w->unknown, w->lost, w->est_sum, rp_err_ns(&w->est_err),
          bytes);
  if (w->timed)
    fprintf(f,
            ",\"total_ns\":%.0f,\"median_ns\":%" PRId64 ",\"p99_ns\":%" PRId64
            ",\"min_ns\":%" PRId64 ",\"max_ns\":%" PRId64 ",\"algbw_gbs\":%s,\"busbw_gbs\":%s",
            w->time.sum, rp_quant_get(&w->time, 0.5), rp_quant_get(&w->time, 0.99), w->time.min,
            w->time.max, algbw, busbw);
  else
    fprintf(f,
            ",\"total_ns\":null,\"median_ns\":null,\"p99_ns\":null,\"min_ns\":null,\"max_ns\":null,"
            "\"algbw_gbs\":null,\"busbw_gbs\":null");
  /* the transfer after the last rank's start (joined calls with every rank's GPU start) */
  fprintf(f,
          ",\"after_last_start_samples\":%" PRIu64 ",\"after_last_start_median_ns\":", w->xfer.n);
  if (w->xfer.n)
    fprintf(f, "%" PRId64 ",\"busbw_after_last_start_gbs\":%.4f", rp_quant_get(&w->xfer, 0.5),
            rp_row_busbw_xfer(w));
  else fprintf(f, "null,\"busbw_after_last_start_gbs\":null");
  /* an algorithm, protocol or channel count NCCL did not say (Kineto kernels): null */
  fprintf(f, ",\"quantiles_exact\":%s", rp_quant_is_exact(&w->time) ? "true" : "false");
  name_or_null(f, "algorithm", al >= 0 && al < 7, rp_algo_name(al));
  name_or_null(f, "protocol", pr >= 0 && pr < 3, rp_proto_name(pr));
  fprintf(f, ",\"choice_share\":%.4f", share);
  ns_or_null(f, "channels_min", w->ch_max > 0, w->ch_min);
  ns_or_null(f, "channels_max", w->ch_max > 0, w->ch_max);
  fprintf(f, ",\"choices\":[");
  int first = 1;
  for (int a = 0; a < 8; a++)
    for (int p = 0; p < 4; p++)
      if (w->algo_proto[a][p]) {
        fprintf(f, "%s{\"calls\":%" PRIu64, first ? "" : ",", w->algo_proto[a][p]);
        name_or_null(f, "algorithm", a < 7, rp_algo_name(a));
        name_or_null(f, "protocol", p < 3, rp_proto_name(p));
        fputc('}', f);
        first = 0;
      }
  fputc(']', f);
  if (tags) {
    if (w->tag) fprintf(f, ",\"tag\":%" PRIu64, w->tag);
    else fprintf(f, ",\"tag\":null");
  }
  if (w->sym) {
    fprintf(f, ",\"symmetric_calls\":%" PRIu64 ",\"kernel_variant\":", w->sym);
    if (w->variants == 1) rp_json_string(f, w->variant);
    else fprintf(f, "null");
  }
  fputc('}', f);
}

/* Start skew per function, then the clock alignment behind it (the "alignment" object). */
static void skew_json(FILE *f, const rp_report *r) {
  fprintf(f, "\"skew\":[");
  int first = 1;
  for (int i = 0; i < RP_MAX_FUNC; i++) {
    const rp_quant *q = &r->skew[i];
    if (!q->n) continue;
    fprintf(f,
            "%s{\"collective\":\"%s\",\"joined\":%" PRIu64 ",\"from_gpu\":%" PRIu64
            ",\"from_cpu_enqueue\":%" PRIu64 ",\"median_ns\":%" PRId64 ",\"p99_ns\":%" PRId64
            ",\"max_ns\":%" PRId64 "}",
            first ? "" : ",", rp_skew_name(i), q->n, r->skew_gpu[i], q->n - r->skew_gpu[i],
            rp_quant_get(q, 0.5), rp_quant_get(q, 0.99), q->max);
    first = 0;
  }
  fprintf(f, "],\n\"alignment\":{\"gpu_skews\":%" PRIu64, r->skew_gpu_all.n);
  ns_or_null(f, "gpu_skew_median_ns", r->skew_gpu_all.n > 0, rp_quant_get(&r->skew_gpu_all, 0.5));
  bound_or_null(f, "error_ns", r->align_err, r->align_err >= 0);
  /* an error of 0 from anchors is exact agreement (modelled or replayed clocks), not a bound */
  int exact = 0, crossed = 0;
  for (int i = 0; i < r->nranks; i++) {
    exact |= r->ranks[i].align_method == RP_ALIGN_ANCHORED;
    crossed += r->ranks[i].align_inconsistent && r->ranks[i].align_method != RP_ALIGN_NONE;
  }
  fprintf(f, ",\"anchors_agree_exactly\":%s,\"ranks_with_crossed_bounds\":%d",
          exact && r->align_err == 0 ? "true" : "false", crossed);
  fprintf(f, ",\"skews_clamped\":%" PRIu64 ",\"warning\":", r->skew_clamped);
  if (!r->align_warn) fprintf(f, "null");
  else if (r->align_err < 0)
    fprintf(f, "\"the alignment error is unbounded (no upper bound, no anchor)\"");
  else fprintf(f, "\"the alignment error bound exceeds the median GPU start skew\"");
  fputc('}', f);
}

/* One communicator: its ranks seen, joins and skew. */
static void comm_json(FILE *f, const rp_comm_summary *c, int first) {
  fprintf(f,
          "%s{\"comm_hash\":\"%016" PRIx64 "\",\"nranks\":%d,\"ranks_seen\":%d,\"joined\":%" PRIu64
          ",\"incomplete\":%" PRIu64 ",\"late_records\":%" PRIu64 ",\"skew_from_gpu\":%" PRIu64
          ",\"skew_from_cpu_enqueue\":%" PRIu64 ",\"p2p_pairs\":%" PRIu64
          ",\"p2p_unmatched\":%" PRIu64,
          first ? "" : ",", c->hash, c->nranks, c->ranks_seen, c->joined, c->incomplete, c->late,
          c->skew_gpu, c->skew.n - c->skew_gpu, c->p2p_pairs, c->p2p_unmatched);
  ns_or_null(f, "skew_median_ns", c->skew.n > 0, rp_quant_get(&c->skew, 0.5)); /* no join: null */
  ns_or_null(f, "skew_p99_ns", c->skew.n > 0, rp_quant_get(&c->skew, 0.99));
  fputc('}', f);
}

/* Where the steps come from, and the step table. */
static void steps_json(FILE *f, const rp_report *r) {
  char origin[256];
  fprintf(f, "\"steps_from\":");
  if (r->nstepsum) rp_json_string(f, rp_steps_origin(r, origin, sizeof origin));
  else if (r->steps_detect == RP_STEPS_NONE) rp_json_string(f, RP_STEPS_NONE_TEXT);
  else fprintf(f, "null");
  fprintf(f, ",\"step_period\":");
  if (r->step_period) fprintf(f, "%d", r->step_period);
  else fprintf(f, "null");
  fprintf(f, ",\"steps_per_row\":%llu", 1ull << r->step_shift);
  fprintf(f, ",\n\"steps\":[");
  for (size_t i = 0; i < r->nstepsum; i++) {
    const rp_stepsum *s = &r->stepsum[i];
    int kn = s->cov_ranks > 0;
    fprintf(f,
            "%s{\"step\":%" PRIu64 ",\"last_step\":%" PRIu64 ",\"steps\":%" PRIu64
            ",\"ranks\":%d,\"warmup\":%s,\"span_ns\":%" PRId64 ",\"comm_ns\":%" PRId64
            ",\"comm_estimated_ns\":%" PRId64 ",\"comm_error_ns\":%" PRId64
            ",\"ranks_with_compute\":%d,\"covered_ns\":%" PRId64,
            i ? "," : "", s->value, s->last, s->count, s->ranks, s->warmup ? "true" : "false",
            s->span, s->comm, s->comm_est, rp_comm_error_ns(s->comm_est, &s->comm_err),
            s->cov_ranks, s->covered);
    ns_or_null(f, "compute_ns", kn, s->cov_compute);
    ns_or_null(f, "overlap_ns", kn, s->cov_overlap);
    ns_or_null(f, "exposed_comm_ns", kn, s->cov_comm - s->cov_overlap);
    ns_or_null(f, "busy_ns", kn, s->cov_busy);
    fprintf(f, ",\"ranks_with_exposed_all\":%d", s->ea_ranks);
    step_exposed_json(f, s->ea_ranks > 0, s->exposed_all, s->exposed_est,
                      rp_err_ns(&s->exposed_err));
    fputc('}', f);
  }
  fprintf(f, "]");
}

void rp_render_json(const rp_report *r, FILE *f) {
  fprintf(f, "{\"tool\":\"topo-report\",\"version\":");
  rp_json_string(f, TOPO_VERSION);
  if (r->window)
    fprintf(f, ",\"window\":{\"from_ns\":%" PRId64 ",\"to_ns\":%" PRId64 "}", r->win_from,
            r->win_to);
  fprintf(f, ",\"step_window\":{\"mode\":\"%s\",\"ranks_cut\":%d}",
          r->step_window == RP_WINDOW_COMPLETE_STEPS ? "complete_steps" : "all", r->ranks_cut);
  fprintf(f, ",\"runs\":[");
  for (size_t i = 0; i < r->nruns; i++) {
    const rp_run_note *n = &r->runs[i];
    fprintf(f, "%s{\"dir\":", i ? "," : "");
    rp_json_string(f, n->dir);
    fprintf(f, ",\"runs_found\":%d,\"run_read\":", n->nruns);
    if (n->used) fprintf(f, "%d", n->used);
    else fprintf(f, "null");
    fprintf(f, ",\"files\":%d,\"first_file_ns\":%" PRId64 "}", n->files, n->first_ns);
  }
  fprintf(f, "]");
  fprintf(f, ",\"collectives_from\":\"%s\"",
          r->colls_from_kineto ? "kineto"
          : r->have_trace      ? "trace"
                               : "none");
  fprintf(f, ",\"inputs\":[");
  for (int i = 0; i < r->nsrc; i++) source_json(f, &r->src[i], i == 0);
  fprintf(f, "],\n\"ranks\":[");
  for (int i = 0; i < r->nranks; i++) rank_json(f, r, &r->ranks[i], i == 0);
  fprintf(f, "],\n");
  overall_json(f, r);
  fprintf(f, ",\n\"collectives\":[");
  for (size_t i = 0; i < r->nrows; i++) row_json(f, r->rows[i], i == 0, r->have_tags);
  fprintf(f, "],\n");
  skew_json(f, r);
  fprintf(f, ",\n\"communicators\":[");
  for (size_t i = 0; i < r->ncomms; i++) comm_json(f, &r->comms[i], i == 0);
  fprintf(f, "],\n");
  steps_json(f, r);
  rp_render_kernels_json(r, f);
  rp_render_next_json(r, f);
  fprintf(f, "}\n");
}

/* ---- CSV: one table per call (one file each with --csv DIR), a header line then its rows;
 * empty fields where unknown. */
static void csv_ranks(const rp_report *r, FILE *f) {
  fprintf(f,
          "rank,host,pid,span_ns,comm_ns,compute_ns,overlap_ns,exposed_comm_ns,idle_ns,"
          "comm_share,overlap_ratio,started_last,delay_caused_ns,wait_ns,missed,comm_estimated_ns,"
          "comm_error_ns,covered_ns,estimate_unknown,joined,joined_gpu,align_method,align_error_ns,"
          "exposed_all_ns,exposed_all_error_ns,exposed_estimated_ns,overlap_all_ratio,"
          "overlap_model_ratio,overlap_model_spread,overlap_model_chunks,overlap_model_form,"
          "overlap_model_intercept_ns,overlap_model_slope\n");
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    rp_derived d;
    rp_derive_rank(k, &d);
    char cp[24] = "", ov[24] = "", ex[24] = "", id[24] = "", ovr[24] = "", rk[16] = "",
         pid[16] = "";
    if (d.known) { /* unknown: empty fields */
      snprintf(cp, sizeof cp, "%" PRId64, d.compute);
      snprintf(ov, sizeof ov, "%" PRId64, d.overlap);
      snprintf(ex, sizeof ex, "%" PRId64, d.exposed);
      snprintf(id, sizeof id, "%" PRId64, d.idle);
      if (d.overlap_defined) snprintf(ovr, sizeof ovr, "%.6f", d.overlap_ratio);
    }
    if (k->world_rank >= 0) snprintf(rk, sizeof rk, "%d", k->world_rank);
    if (k->pid) snprintf(pid, sizeof pid, "%u", k->pid);
    fprintf(f, "%s,", rk);
    csv_field(f, k->host);
    fprintf(f,
            ",%s,%" PRId64 ",%" PRId64 ",%s,%s,%s,%s,%.6f,%s,%" PRIu64 ",%" PRId64 ",%" PRId64
            ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRIu64,
            pid, d.span, d.comm, cp, ov, ex, id, d.comm_share, ovr, k->last_count, k->late_total,
            k->wait_total, k->missed, d.comm_est, d.comm_error, d.covered, k->est[RP_EST_UNKNOWN]);
    fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%s,", k->joined, k->joined_gpu,
            rp_align_method_name(k->align_method));
    if (k->align_method != RP_ALIGN_NONE && k->align_err >= 0) fprintf(f, "%" PRId64, k->align_err);
    if (d.exposed_all_known) /* unknown: empty fields */
      fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",", d.exposed_all, d.exposed_all_error,
              d.exposed_est);
    else fprintf(f, ",,,,");
    if (d.overlap_all_defined) fprintf(f, "%.6f", d.overlap_all_ratio);
    if (d.model.ok)
      fprintf(f, ",%.6f,%.6f,%" PRIu64 ",%s,%.1f,%.6f\n", d.model.ratio, d.model.spread,
              d.model.chunks, d.model.form == RP_OMODEL_AFFINE ? "affine" : "ratio", d.model.a,
              d.model.b);
    else fprintf(f, ",,,,,,\n");
  }
}

static void csv_collectives(const rp_report *r, FILE *f) {
  fprintf(f,
          "collective,nranks,size_from,calls,gpu_timed,bytes,total_ns,median_ns,p99_ns,"
          "algbw_gbs,busbw_gbs,busbw_after_last_start_gbs,algorithm,protocol,choice_share,"
          "channels_min,channels_max,estimated,estimate_unknown,gpu_timing_lost,estimated_ns,"
          "estimated_error_ns,symmetric_calls,kernel_variant%s\n",
          r->have_tags ? ",tag" : "");
  for (size_t i = 0; i < r->nrows; i++) {
    const rp_row *w = r->rows[i];
    int al, pr;
    double share;
    rp_row_top_choice(w, &al, &pr, &share);
    /* unknown (no measured call; no size or communicator size): an empty field */
    char timed[128] = ",,,,", algbw[32] = "", busbw[32] = "", nranks[16] = "", size[24] = "",
         bytes[24] = "";
    if (rp_row_algbw_known(w)) snprintf(algbw, sizeof algbw, "%.4f", rp_row_algbw(w));
    if (rp_row_busbw_known(w)) snprintf(busbw, sizeof busbw, "%.4f", rp_row_busbw(w));
    if (rp_row_ranks_known(w)) snprintf(nranks, sizeof nranks, "%d", w->nranks);
    if (rp_row_size_known(w)) {
      snprintf(size, sizeof size, "%" PRIu64, w->bucket < 0 ? 0 : (uint64_t)1 << w->bucket);
      snprintf(bytes, sizeof bytes, "%" PRIu64, w->size_sum);
    }
    if (w->timed)
      snprintf(timed, sizeof timed, "%.0f,%" PRId64 ",%" PRId64 ",%s,%s", w->time.sum,
               rp_quant_get(&w->time, 0.5), rp_quant_get(&w->time, 0.99), algbw, busbw);
    char xf[32] = "", ch[16] = "", chx[16] = "";
    if (w->xfer.n && rp_row_busbw_known(w)) snprintf(xf, sizeof xf, "%.4f", rp_row_busbw_xfer(w));
    if (w->ch_max)
      snprintf(ch, sizeof ch, "%d", w->ch_min), snprintf(chx, sizeof chx, "%d", w->ch_max);
    fprintf(f,
            "%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%s,%s,%s,%s,%s,%.4f,%s,%s,%" PRIu64 ",%" PRIu64
            ",%" PRIu64 ",%" PRId64 ",%" PRId64,
            rp_func_name(w->func), nranks, size, w->calls, w->timed, bytes, timed, xf,
            al < 0 ? "" : rp_algo_name(al), pr < 0 ? "" : rp_proto_name(pr), share, ch, chx,
            w->estimated, w->unknown, w->lost, w->est_sum, rp_err_ns(&w->est_err));
    /* the variant: empty when none or they differ; the tag: empty when untagged */
    fprintf(f, ",%" PRIu64 ",", w->sym);
    if (w->sym && w->variants == 1) csv_field(f, w->variant);
    if (r->have_tags && w->tag) fprintf(f, ",%" PRIu64, w->tag);
    else if (r->have_tags) fputc(',', f);
    fputc('\n', f);
  }
}

static void csv_steps(const rp_report *r, FILE *f) {
  fprintf(f,
          "step,ranks,span_ns,comm_ns,comm_estimated_ns,comm_error_ns,ranks_with_compute,"
          "covered_ns,compute_ns,overlap_ns,exposed_comm_ns,exposed_all_ns,exposed_all_error_ns\n");
  for (size_t i = 0; i < r->nstepsum; i++) {
    const rp_stepsum *s = &r->stepsum[i];
    fprintf(f, "%" PRIu64 ",%d,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%d,%" PRId64,
            s->value, s->ranks, s->span, s->comm, s->comm_est,
            rp_comm_error_ns(s->comm_est, &s->comm_err), s->cov_ranks, s->covered);
    if (s->cov_ranks > 0)
      fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64, s->cov_compute, s->cov_overlap,
              s->cov_comm - s->cov_overlap);
    else fprintf(f, ",,,");
    if (s->ea_ranks > 0)
      fprintf(f, ",%" PRId64 ",%" PRId64 "\n", s->exposed_all, rp_err_ns(&s->exposed_err));
    else fprintf(f, ",,\n");
  }
}

static const char *const csv_names[RP_CSV_TABLES] = {"ranks",   "collectives", "steps", "temporal",
                                                     "kernels", "streams",     "memcpy"};

const char *rp_csv_table_name(int table) {
  return table >= 0 && table < RP_CSV_TABLES ? csv_names[table] : NULL;
}

int rp_csv_table_find(const char *name) {
  for (int i = 0; i < RP_CSV_TABLES; i++)
    if (!strcmp(name, csv_names[i])) return i;
  return -1;
}

int rp_csv_table_applies(const rp_report *r, int table) {
  return table < RP_CSV_TEMPORAL || rp_render_kernels_any(r);
}

void rp_render_csv_table(const rp_report *r, int table, FILE *f) {
  switch (table) {
  case RP_CSV_RANKS: csv_ranks(r, f); break;
  case RP_CSV_COLLECTIVES: csv_collectives(r, f); break;
  case RP_CSV_STEPS: csv_steps(r, f); break;
  default: rp_render_kernels_csv(r, table - RP_CSV_TEMPORAL, f); break;
  }
}
