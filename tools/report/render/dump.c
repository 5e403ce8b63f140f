// SPDX-License-Identifier: Apache-2.0
// `topo-report dump FILE`: a binary trace as JSON lines: the header, one line per record (raw
// clocks, as stored), and a last line with what the reader found (footer, drops, problems). A
// field the trace marks unknown (an offset not measured, the GPU times of an untimed collective,
// no datatype, stream or name) is null, never its sentinel value.
#include <inttypes.h>
#include <string.h>

#include "report.h"
#include "report_render.h"
#include "trace_reader.h"

static void drops(FILE *f, const uint64_t *d) {
  fprintf(f, "[%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", d[0],
          d[1], d[2], d[3], d[4], d[5]);
}

/* ,"key":v, or null when v is the trace's "unknown" (`known` 0). */
static void i64_or_null(FILE *f, const char *key, int known, int64_t v) {
  if (known) fprintf(f, ",\"%s\":%" PRId64, key, v);
  else fprintf(f, ",\"%s\":null", key);
}

/* ,"key":"text", or null for an empty string (string id 0: none). */
static void str_or_null(FILE *f, const char *key, const char *s) {
  fprintf(f, ",\"%s\":", key);
  if (s && *s) rp_json_string(f, s);
  else fprintf(f, "null");
}

static void text(FILE *f, const char *s, size_t n) {
  char buf[64];
  if (n > sizeof buf - 1) n = sizeof buf - 1;
  memcpy(buf, s, n);
  buf[n] = 0;
  rp_json_string(f, buf);
}

/* The header line. */
static void dump_header(FILE *f, const topo_trace_header *h) {
  fprintf(f, "{\"header\":{\"version\":%u,\"minor_version\":%u,\"flags\":%u,\"comm_hash\":",
          h->version, h->minor_version, h->flags);
  if (h->comm_hash) fprintf(f, "\"%016" PRIx64 "\"", h->comm_hash);
  else fprintf(f, "null"); /* a process-wide trace (CUPTI): no communicator */
  i64_or_null(f, "rank", h->rank >= 0, h->rank);
  i64_or_null(f, "nranks", h->nranks > 0, h->nranks);
  i64_or_null(f, "nnodes", h->nnodes > 0, h->nnodes);
  fprintf(f, ",\"pid\":%u,\"mono_ns\":%" PRId64 ",\"realtime_ns\":%" PRId64, h->pid, h->mono_ns,
          h->realtime_ns);
  i64_or_null(f, "gpu_minus_realtime_ns", h->gpu_minus_realtime_ns != TOPO_TRACE_OFFSET_UNKNOWN,
              h->gpu_minus_realtime_ns);
  i64_or_null(f, "cupti_minus_realtime_ns", h->cupti_minus_realtime_ns != TOPO_TRACE_OFFSET_UNKNOWN,
              h->cupti_minus_realtime_ns);
  fprintf(f,
          ",\"abi_version\":%u,\"event_mask\":%u,"
          "\"sample_every\":%u,\"measure_min_bytes\":%" PRIu64,
          h->abi_version, h->event_mask, h->sample_every, h->measure_min_bytes);
  i64_or_null(f, "nccl_version", h->nccl_version != 0, h->nccl_version); /* 0: not known */
  fprintf(f, ",\"host\":");
  rp_json_string(f, h->host);
  fprintf(f, ",\"comm_name\":");
  rp_json_string(f, h->comm_name);
  fprintf(f, ",\"topo_version\":");
  rp_json_string(f, h->topo_version);
  fprintf(f, "}}\n");
}

/* A collective or p2p record. */
static void dump_coll(FILE *f, const topo_trace_record *rec) {
  const topo_rec_coll *c = &rec->coll;
  int timed = (c->flags & TOPO_COLL_F_GPU_TIMED) != 0;
  fprintf(f, "{\"type\":\"%s\",\"func\":\"%s\",\"seq\":%" PRIu64 ",\"bytes\":%" PRIu64,
          rec->type == TOPO_REC_COLL ? "coll" : "p2p", rp_func_name(c->func), c->seq, c->bytes);
  str_or_null(f, "algo", c->algo == TOPO_UNKNOWN_U8 ? "" : rp_algo_name(c->algo));
  str_or_null(f, "proto", c->proto == TOPO_UNKNOWN_U8 ? "" : rp_proto_name(c->proto));
  fprintf(f, ",\"nchannels\":%u,\"nwarps\":%u", c->nchannels, c->nwarps);
  i64_or_null(f, "datatype", c->datatype != TOPO_UNKNOWN_U8, c->datatype);
  fprintf(f, ",\"flags\":%u,\"cpu_start_ns\":%" PRId64 ",\"cpu_stop_ns\":%" PRId64, c->flags,
          c->cpu_start_ns, c->cpu_stop_ns);
  i64_or_null(f, "gpu_start_ns", timed, c->gpu_start_ns); /* untimed: no GPU times */
  i64_or_null(f, "gpu_stop_ns", timed, c->gpu_stop_ns);
  i64_or_null(f, "peer", c->peer >= 0, c->peer);
  i64_or_null(f, "stream", c->stream_id != 0, c->stream_id);
  fprintf(f, "}\n");
}

/* A GPU kernel, memcpy or memset (CUPTI). */
static void dump_kernel(FILE *f, const topo_trace_reader *r, const topo_trace_record *rec) {
  const topo_rec_kernel *k = &rec->kernel;
  fprintf(f, "{\"type\":\"kernel\",\"kind\":%u", k->kind);
  str_or_null(f, "name", topo_trace_reader_string(r, k->name_id));
  fprintf(f,
          ",\"device\":%u,\"gpu_start_ns\":%" PRId64 ",\"gpu_stop_ns\":%" PRId64
          ",\"correlation\":%" PRIu64 ",\"stream\":%u,\"context\":%u,\"bytes\":%" PRIu64 "}\n",
          k->device, k->gpu_start_ns, k->gpu_stop_ns, k->correlation, k->stream_id, k->context_id,
          k->bytes);
}

/* A piece of the string table. */
static void dump_string(FILE *f, const topo_trace_record *rec) {
  const topo_rec_string *s = &rec->string;
  fprintf(f, "{\"type\":\"string\",\"id\":%u,\"last\":%s,\"text\":", s->id,
          (s->flags & TOPO_STRING_F_LAST) ? "true" : "false");
  text(f, s->text, s->len <= sizeof s->text ? s->len : sizeof s->text);
  fprintf(f, "}\n");
}

/* A kernel channel of a collective. */
static void dump_channel(FILE *f, const topo_trace_record *rec) {
  const topo_rec_channel *c = &rec->channel;
  fprintf(f,
          "{\"type\":\"channel\",\"channel\":%u,\"func\":\"%s\",\"seq\":%" PRIu64
          ",\"gpu_start_ns\":%" PRId64 ",\"gpu_stop_ns\":%" PRId64 ",\"cpu_start_ns\":%" PRId64
          ",\"cpu_stop_ns\":%" PRId64 "}\n",
          c->channel, rp_func_name(c->func), c->seq, c->gpu_start_ns, c->gpu_stop_ns,
          c->cpu_start_ns, c->cpu_stop_ns);
}

/* What NCCL 2.31+ adds to the collective or p2p record that follows it. */
static void dump_ext(FILE *f, const topo_trace_record *rec) {
  const topo_rec_coll_ext *x = &rec->ext;
  fprintf(f,
          "{\"type\":\"coll_ext\",\"of\":\"%s\",\"func\":\"%s\",\"seq\":%" PRIu64
          ",\"user_tag\":%" PRIu64 ",\"variant\":",
          x->of == TOPO_REC_COLL  ? "coll"
          : x->of == TOPO_REC_P2P ? "p2p"
                                  : "?",
          rp_func_name(x->func), x->seq, x->user_tag);
  text(f, x->variant, x->variant_len <= sizeof x->variant ? x->variant_len : sizeof x->variant);
  fprintf(f, "}\n");
}

/* One phase of a symmetric kernel's channel. */
static void dump_phase(FILE *f, const topo_trace_record *rec) {
  static const char *const names[] = {"initial_sync", "compute", "final_sync"};
  const topo_rec_phase *p = &rec->phase;
  fprintf(f,
          "{\"type\":\"phase\",\"channel\":%u,\"func\":\"%s\",\"seq\":%" PRIu64
          ",\"phase\":\"%s\",\"gpu_start_ns\":%" PRId64 ",\"gpu_stop_ns\":%" PRId64 "}\n",
          p->channel, rp_func_name(p->func), p->seq, p->phase < 3 ? names[p->phase] : "?",
          p->gpu_start_ns, p->gpu_stop_ns);
}

/* A proxy operation. */
static void dump_proxy(FILE *f, const topo_trace_record *rec) {
  const topo_rec_proxy *p = &rec->proxy;
  fprintf(f,
          "{\"type\":\"proxy\",\"channel\":%u,\"send\":%s,\"func\":\"%s\",\"peer\":%d,"
          "\"seq\":%" PRIu64 ",\"nsteps\":%d,\"chunk_size\":%d,\"bytes\":%" PRIu64
          ",\"cpu_start_ns\":%" PRId64 ",\"cpu_stop_ns\":%" PRId64 "}\n",
          p->channel, p->is_send ? "true" : "false", rp_func_name(p->func), p->peer, p->seq,
          p->nsteps, p->chunk_size, p->bytes, p->cpu_start_ns, p->cpu_stop_ns);
}

/* A step mark. */
static void dump_mark(FILE *f, const topo_trace_reader *r, const topo_trace_record *rec) {
  const topo_rec_mark *m = &rec->mark;
  fprintf(f, "{\"type\":\"mark\"");
  str_or_null(f, "name", topo_trace_reader_string(r, m->name_id));
  fprintf(f, ",\"cpu_start_ns\":%" PRId64 ",\"cpu_stop_ns\":%" PRId64 ",\"value\":%" PRIu64 "}\n",
          m->cpu_start_ns, m->cpu_stop_ns, m->value);
}

/* A CUPTI window (recorded, yielded, declined or failed). */
static void dump_cupti(FILE *f, const topo_trace_reader *r, const topo_trace_record *rec) {
  static const char *const states[] = {"?", "recorded", "yielded", "declined", "failed"};
  const topo_rec_cupti *cu = &rec->cupti;
  fprintf(f, "{\"type\":\"cupti\"");
  str_or_null(f, "state", cu->state >= 1 && cu->state <= 4 ? states[cu->state] : "");
  str_or_null(f, "name", topo_trace_reader_string(r, cu->name_id));
  static const char *const windows[] = {"unsaid", "steps", "time", "continuous", "trigger"};
  fprintf(f,
          ",\"cpu_start_ns\":%" PRId64 ",\"cpu_stop_ns\":%" PRId64 ",\"records\":%" PRIu64
          ",\"dropped\":%" PRIu64 ",\"window\":\"%s\"",
          cu->cpu_start_ns, cu->cpu_stop_ns, cu->records, cu->dropped,
          cu->window <= 4 ? windows[cu->window] : "?");
  if (cu->window == TOPO_CUPTI_WINDOW_STEPS)
    fprintf(f, ",\"period\":%" PRIu32 ",\"steps\":%" PRIu32 ",\"step_ns\":%" PRId64, cu->period,
            cu->steps, cu->step_ns);
  fprintf(f, "}\n");
}

static void dump_step(FILE *f, const topo_trace_record *rec) {
  const topo_rec_step *s = &rec->step;
  fprintf(f,
          "{\"type\":\"step\",\"step\":%" PRIu64 ",\"func\":\"%s\",\"seq\":%" PRIu64
          ",\"cpu_start_ns\":%" PRId64 ",\"cut_func\":\"%s\",\"cut_comm\":\"%016" PRIx64
          "\",\"cut_seq\":%" PRIu64 ",\"cut_cpu_start_ns\":%" PRId64 ",\"period\":%" PRIu32
          ",\"step_ns\":%" PRId64 ",\"steady\":%s,\"window\":%s}\n",
          s->step, rp_func_name(s->func), s->seq, s->cpu_start_ns, rp_func_name(s->cut_func),
          s->cut_comm_hash, s->cut_seq, s->cut_cpu_start_ns, s->period, s->step_ns,
          s->flags & TOPO_STEP_F_STEADY ? "true" : "false",
          s->flags & TOPO_STEP_F_WINDOW ? "true" : "false");
}

/* One record as one JSON line. */
static void dump_record(FILE *f, const topo_trace_reader *r, const topo_trace_record *rec) {
  switch (rec->type) {
  case TOPO_REC_COLL:
  case TOPO_REC_P2P: dump_coll(f, rec); break;
  case TOPO_REC_KERNEL: dump_kernel(f, r, rec); break;
  case TOPO_REC_STRING: dump_string(f, rec); break;
  case TOPO_REC_CHANNEL: dump_channel(f, rec); break;
  case TOPO_REC_PROXY: dump_proxy(f, rec); break;
  case TOPO_REC_MARK: dump_mark(f, r, rec); break;
  case TOPO_REC_CUPTI: dump_cupti(f, r, rec); break;
  case TOPO_REC_COLL_EXT: dump_ext(f, rec); break;
  case TOPO_REC_PHASE: dump_phase(f, rec); break;
  case TOPO_REC_STEP: dump_step(f, rec); break;
  case TOPO_REC_STATS:
    fprintf(f, "{\"type\":\"stats\",\"records\":%" PRIu64 ",\"dropped\":", rec->stats.records);
    drops(f, rec->stats.dropped);
    fprintf(f, "}\n");
    break;
  default: fprintf(f, "{\"type\":\"unknown\",\"code\":%u}\n", rec->type); break;
  }
}

/* The last line: what the reader found. */
static void dump_end(FILE *f, const topo_trace_reader_info *info) {
  fprintf(f,
          "{\"end\":{\"records\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"bad_blocks\":%" PRIu64
          ",\"skipped_bytes\":%" PRIu64
          ",\"footer\":%s,\"truncated\":%s,\"problems\":%u,"
          "\"dropped\":",
          info->records, info->blocks, info->bad_blocks, info->skipped_bytes,
          info->footer ? "true" : "false", info->truncated ? "true" : "false", info->problems);
  drops(f, info->dropped);
  fprintf(f, "}}\n");
}

topo_status rp_dump(const char *path, FILE *f) {
  topo_trace_reader *r;
  topo_status st = topo_trace_reader_open(path, 0, &r);
  if (st != TOPO_OK) return st;
  const topo_trace_header *h = topo_trace_reader_header(r);
  if (h) dump_header(f, h);
  const topo_trace_record *rec;
  while ((rec = topo_trace_reader_next(r))) dump_record(f, r, rec);
  const topo_trace_reader_info *info = topo_trace_reader_info_get(r);
  dump_end(f, info);
  int ok = info->header_ok;
  topo_trace_reader_close(r);
  return ok ? TOPO_OK : TOPO_ERR_PARSE;
}
