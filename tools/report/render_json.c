// SPDX-License-Identifier: Apache-2.0
// Machine-readable outputs: --json (one object with inputs, ranks, overall, collectives, skew,
// communicators, steps; every time in ns) and --csv (the rank and collective tables). Reads rp_report.
#include <inttypes.h>
#include <string.h>

#include "report.h"
#include "topo_version.h"

void rp_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

static void derived_json(FILE *f, const rp_derived *d) {
  fprintf(f,
          "\"span_ns\":%" PRId64 ",\"comm_ns\":%" PRId64 ",\"compute_ns\":%" PRId64
          ",\"overlap_ns\":%" PRId64 ",\"exposed_comm_ns\":%" PRId64 ",\"idle_ns\":%" PRId64
          ",\"memory_ns\":%" PRId64 ",\"busy_ns\":%" PRId64
          ",\"comm_share\":%.6f,\"overlap_ratio\":%.6f,\"exposed_share\":%.6f,\"compute_share\":%.6f,"
          "\"idle_share\":%.6f",
          d->span, d->comm, d->compute, d->overlap, d->exposed, d->idle, d->memory, d->busy,
          d->comm_share, d->overlap_ratio, d->exposed_share, d->compute_share, d->idle_share);
}

/* An int64 bound, or null when absent (INT64_MIN / INT64_MAX) or unbounded (< 0 for errors). */
static void ns_or_null(FILE *f, const char *key, int64_t v, int present) {
  if (present) fprintf(f, ",\"%s\":%" PRId64, key, v);
  else fprintf(f, ",\"%s\":null", key);
}

static void alignment_json(FILE *f, const rp_rank *k) {
  fprintf(f, ",\"joined_gpu\":%" PRIu64 ",\"wait_clamped\":%" PRIu64 ",\"alignment\":{\"method\":\"%s\"",
          k->joined_gpu, k->wait_clamped, rp_align_method_name(k->align_method));
  int known = k->align_method != RP_ALIGN_NONE;
  ns_or_null(f, "gpu_offset_ns", k->gpu_offset, known);
  ns_or_null(f, "lower_ns", k->off_lower, known && k->off_lower != INT64_MIN);
  ns_or_null(f, "upper_ns", k->off_upper, known && k->off_upper != INT64_MAX);
  ns_or_null(f, "error_ns", k->align_err, known && k->align_err >= 0);
  fprintf(f, ",\"anchors\":%" PRIu64 ",\"inconsistent\":%s}", k->anchors,
          k->align_inconsistent && known ? "true" : "false");
}

static void dropped_json(FILE *f, const uint64_t *d) {
  fprintf(f, "{\"coll\":%" PRIu64 ",\"child\":%" PRIu64 ",\"record\":%" PRIu64 ",\"io\":%" PRIu64
             ",\"cupti\":%" PRIu64 ",\"other\":%" PRIu64 "}",
          d[0], d[1], d[2], d[3], d[4], d[5]);
}

void rp_render_json(const rp_report *r, FILE *f) {
  fprintf(f, "{\"tool\":\"topo-report\",\"version\":");
  rp_json_string(f, TOPO_VERSION);
  if (r->window)
    fprintf(f, ",\"window\":{\"from_ns\":%" PRId64 ",\"to_ns\":%" PRId64 "}", r->win_from, r->win_to);
  fprintf(f, ",\"collectives_from\":\"%s\"", r->colls_from_kineto ? "kineto" : r->have_trace ? "trace" : "none");
  fprintf(f, ",\"inputs\":[");
  for (int i = 0; i < r->nsrc; i++) {
    const rp_source *s = &r->src[i];
    fprintf(f, "%s{\"path\":", i ? "," : "");
    rp_json_string(f, s->path);
    fprintf(f, ",\"kind\":\"%s\",\"rank\":%d,\"nranks\":%d,\"comm_hash\":\"%016" PRIx64
               "\",\"records\":%" PRIu64 ",\"collectives\":%" PRIu64 ",\"gpu_timed\":%" PRIu64
               ",\"nccl_kernels\":%" PRIu64 ",\"compute_kernels\":%" PRIu64
               ",\"problems\":%u,\"footer\":%s,\"dropped\":",
            s->kind == RP_SRC_TRACE ? "trace" : "json", s->rank, s->nranks,
            s->kind == RP_SRC_TRACE ? s->header.comm_hash : 0, s->records, s->colls,
            s->timed_colls, s->nccl_kernels, s->compute_kernels, s->problems,
            s->footer ? "true" : "false");
    dropped_json(f, s->dropped);
    fputc('}', f);
  }
  fprintf(f, "],\n\"ranks\":[");
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    rp_derived d;
    rp_derive(&k->t, &d);
    fprintf(f, "%s\n{\"rank\":%d,\"host\":", i ? "," : "", k->world_rank);
    rp_json_string(f, k->host);
    fprintf(f, ",\"pid\":%u,\"first_ns\":%" PRId64 ",\"last_ns\":%" PRId64 ",", k->pid,
            k->t.first == INT64_MAX ? 0 : k->t.first, k->t.last == INT64_MIN ? 0 : k->t.last);
    derived_json(f, &d);
    fprintf(f, ",\"intervals_from\":\"%s\"", k->kineto ? "kineto" : k->trace_kernels ? "trace_cupti" : "trace_collectives");
    fprintf(f, ",\"comm_from_kernels\":%s,\"collectives\":%" PRIu64 ",\"gpu_timed\":%" PRIu64
               ",\"joined\":%" PRIu64 ",\"started_last\":%" PRIu64 ",\"delay_caused_ns\":%" PRId64
               ",\"wait_ns\":%" PRId64 ",\"missed\":%" PRIu64 ",\"late_intervals\":%" PRIu64
               ",\"problems\":%u,\"dropped\":",
            k->comm_from_kernels ? "true" : "false", k->colls, k->timed_colls, k->joined,
            k->last_count, k->late_total, k->wait_total, k->missed, k->t.late, k->problems);
    dropped_json(f, k->dropped);
    alignment_json(f, k);
    fprintf(f, ",\"steps\":[");
    for (size_t s = 0; s < k->nsteps; s++) {
      const rp_step *st = &k->steps[s];
      fprintf(f, "%s{\"step\":%" PRIu64 ",\"start_ns\":%" PRId64 ",\"span_ns\":%" PRId64
                 ",\"comm_ns\":%" PRId64 ",\"compute_ns\":%" PRId64 ",\"overlap_ns\":%" PRId64
                 ",\"busy_ns\":%" PRId64 "}",
              s ? "," : "", st->value, st->start, st->stop - st->start, st->comm, st->compute,
              st->overlap, st->busy);
    }
    fprintf(f, "]}");
  }
  rp_derived o;
  rp_derive_overall(r, &o);
  fprintf(f, "],\n\"overall\":{\"ranks\":%d,\"collectives\":%" PRIu64 ",\"gpu_timed\":%" PRIu64
             ",\"p2p\":%" PRIu64 ",\"wall_span_ns\":%" PRId64 ",",
          r->nranks, r->colls, r->timed_colls, r->p2p,
          r->overall.last > r->overall.first ? r->overall.last - r->overall.first : 0);
  derived_json(f, &o);
  fprintf(f, "},\n\"collectives\":[");
  for (size_t i = 0; i < r->nrows; i++) {
    const rp_row *w = r->rows[i];
    int al, pr;
    double share;
    rp_row_top_choice(w, &al, &pr, &share);
    fprintf(f, "%s\n{\"collective\":\"%s\",\"nranks\":%d,\"size_from\":%" PRIu64
               ",\"calls\":%" PRIu64 ",\"gpu_timed\":%" PRIu64 ",\"bytes\":%" PRIu64
               ",\"total_ns\":%.0f,\"median_ns\":%" PRId64 ",\"p99_ns\":%" PRId64
               ",\"min_ns\":%" PRId64 ",\"max_ns\":%" PRId64
               ",\"quantiles_exact\":%s,\"algbw_gbs\":%.4f,\"busbw_gbs\":%.4f,\"algorithm\":\"%s\","
               "\"protocol\":\"%s\",\"choice_share\":%.4f,\"channels_min\":%d,\"channels_max\":%d,"
               "\"choices\":[",
            i ? "," : "", rp_func_name(w->func), w->nranks,
            w->bucket < 0 ? 0 : (uint64_t)1 << w->bucket, w->calls, w->timed, w->size_sum,
            w->time.sum, rp_quant_get(&w->time, 0.5), rp_quant_get(&w->time, 0.99),
            w->time.n ? w->time.min : 0, w->time.n ? w->time.max : 0,
            rp_quant_is_exact(&w->time) ? "true" : "false", rp_row_algbw(w), rp_row_busbw(w),
            rp_algo_name(al), rp_proto_name(pr), share, w->ch_max ? w->ch_min : 0, w->ch_max);
    int first = 1;
    for (int a = 0; a < 8; a++)
      for (int p = 0; p < 4; p++)
        if (w->algo_proto[a][p]) {
          fprintf(f, "%s{\"algorithm\":\"%s\",\"protocol\":\"%s\",\"calls\":%" PRIu64 "}",
                  first ? "" : ",", rp_algo_name(a == 7 ? -1 : a), rp_proto_name(p == 3 ? -1 : p),
                  w->algo_proto[a][p]);
          first = 0;
        }
    fprintf(f, "]}");
  }
  fprintf(f, "],\n\"skew\":[");
  int first = 1;
  for (int i = 0; i < RP_MAX_FUNC; i++) {
    const rp_quant *q = &r->skew[i];
    if (!q->n) continue;
    fprintf(f, "%s{\"collective\":\"%s\",\"joined\":%" PRIu64 ",\"from_gpu\":%" PRIu64
               ",\"from_cpu_enqueue\":%" PRIu64 ",\"median_ns\":%" PRId64 ",\"p99_ns\":%" PRId64
               ",\"max_ns\":%" PRId64 "}",
            first ? "" : ",", rp_func_name(i), q->n, r->skew_gpu[i], q->n - r->skew_gpu[i],
            rp_quant_get(q, 0.5), rp_quant_get(q, 0.99), q->max);
    first = 0;
  }
  fprintf(f, "],\n\"alignment\":{\"gpu_skews\":%" PRIu64, r->skew_gpu_all.n);
  ns_or_null(f, "gpu_skew_median_ns", rp_quant_get(&r->skew_gpu_all, 0.5), r->skew_gpu_all.n > 0);
  ns_or_null(f, "error_ns", r->align_err, r->align_err >= 0);
  fprintf(f, ",\"skews_clamped\":%" PRIu64 ",\"warning\":", r->skew_clamped);
  if (!r->align_warn) fprintf(f, "null");
  else if (r->align_err < 0) fprintf(f, "\"the alignment error is unbounded (no upper bound, no anchor)\"");
  else fprintf(f, "\"the alignment error bound exceeds the median GPU start skew\"");
  fprintf(f, "},\n\"communicators\":[");
  for (size_t i = 0; i < r->ncomms; i++) {
    const rp_comm_summary *c = &r->comms[i];
    fprintf(f, "%s{\"comm_hash\":\"%016" PRIx64 "\",\"nranks\":%d,\"ranks_seen\":%d,\"joined\":%" PRIu64
               ",\"incomplete\":%" PRIu64 ",\"skew_from_gpu\":%" PRIu64 ",\"skew_from_cpu_enqueue\":%" PRIu64
               ",\"skew_median_ns\":%" PRId64 ",\"skew_p99_ns\":%" PRId64 "}",
            i ? "," : "", c->hash, c->nranks, c->ranks_seen, c->joined, c->incomplete, c->skew_gpu,
            c->skew.n - c->skew_gpu, rp_quant_get(&c->skew, 0.5), rp_quant_get(&c->skew, 0.99));
  }
  fprintf(f, "],\n\"steps\":[");
  for (size_t i = 0; i < r->nstepsum; i++) {
    const rp_stepsum *s = &r->stepsum[i];
    fprintf(f, "%s{\"step\":%" PRIu64 ",\"ranks\":%d,\"span_ns\":%" PRId64 ",\"comm_ns\":%" PRId64
               ",\"compute_ns\":%" PRId64 ",\"overlap_ns\":%" PRId64 ",\"exposed_comm_ns\":%" PRId64
               ",\"busy_ns\":%" PRId64 "}",
            i ? "," : "", s->value, s->ranks, s->span, s->comm, s->compute, s->overlap,
            s->comm - s->overlap, s->busy);
  }
  fprintf(f, "]}\n");
}

void rp_render_csv(const rp_report *r, FILE *f) {
  fprintf(f, "table,rank,host,pid,span_ns,comm_ns,compute_ns,overlap_ns,exposed_comm_ns,idle_ns,"
             "comm_share,overlap_ratio,started_last,delay_caused_ns,wait_ns,missed,joined,joined_gpu,"
             "align_method,align_error_ns\n");
  for (int i = 0; i < r->nranks; i++) {
    const rp_rank *k = &r->ranks[i];
    rp_derived d;
    rp_derive(&k->t, &d);
    fprintf(f, "rank,%d,%s,%u,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
               ",%.6f,%.6f,%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRIu64,
            k->world_rank, strchr(k->host, ',') ? "?" : k->host, k->pid, d.span, d.comm, d.compute,
            d.overlap, d.exposed, d.idle, d.comm_share, d.overlap_ratio, k->last_count,
            k->late_total, k->wait_total, k->missed);
    fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%s,", k->joined, k->joined_gpu, rp_align_method_name(k->align_method));
    if (k->align_method != RP_ALIGN_NONE && k->align_err >= 0) fprintf(f, "%" PRId64, k->align_err);
    fprintf(f, "\n");
  }
  fprintf(f, "\ntable,collective,nranks,size_from,calls,gpu_timed,bytes,total_ns,median_ns,p99_ns,"
             "algbw_gbs,busbw_gbs,algorithm,protocol,choice_share,channels_min,channels_max\n");
  for (size_t i = 0; i < r->nrows; i++) {
    const rp_row *w = r->rows[i];
    int al, pr;
    double share;
    rp_row_top_choice(w, &al, &pr, &share);
    fprintf(f, "collective,%s,%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.0f,%" PRId64
               ",%" PRId64 ",%.4f,%.4f,%s,%s,%.4f,%d,%d\n",
            rp_func_name(w->func), w->nranks, w->bucket < 0 ? 0 : (uint64_t)1 << w->bucket,
            w->calls, w->timed, w->size_sum, w->time.sum, rp_quant_get(&w->time, 0.5),
            rp_quant_get(&w->time, 0.99), rp_row_algbw(w), rp_row_busbw(w), rp_algo_name(al),
            rp_proto_name(pr), share, w->ch_max ? w->ch_min : 0, w->ch_max);
  }
}
