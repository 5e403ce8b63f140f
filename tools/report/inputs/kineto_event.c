// SPDX-License-Identifier: Apache-2.0
// One Kineto / Chrome trace event: its fields parsed from the JSON (the few the report needs, the
// rest skipped unread), and what it gives the sink (kn_act: collectives, intervals, kernel events,
// the calls and GPU events of the step attribution). Called by kineto.c for events read from the
// file and by kineto_spill.c for events replayed from pass 1's record.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "jscan.h"
#include "kineto_ctx.h"
#include "log.h"
#include "report.h"
#include "report_inputs.h"

static int classify_cat(js_str c) {
  static const struct {
    const char *name;
    size_t len;
    int cat;
  } cats[] = {
#define CAT(n, k) {n, sizeof(n) - 1, k}
      CAT("cpu_op", KC_CPU),           CAT("kernel", KC_KERNEL),
      CAT("cuda_runtime", KC_RUNTIME), CAT("ac2g", KC_CPU),
      CAT("cuda_driver", KC_RUNTIME),  CAT("python_function", KC_CPU),
      CAT("gpu_memcpy", KC_MEMCPY),    CAT("gpu_memset", KC_MEMSET),
      CAT("user_annotation", KC_CPU),  CAT("gpu_user_annotation", KC_GPU_ANNOTATION),
      CAT("fwdbwd", KC_CPU),           CAT("Kernel", KC_KERNEL), /* older traces' names */
      CAT("Runtime", KC_RUNTIME),      CAT("Memcpy", KC_MEMCPY),
      CAT("Memset", KC_MEMSET),
#undef CAT
  };
  for (size_t i = 0; i < sizeof cats / sizeof *cats; i++)
    if (c.n == cats[i].len && !memcmp(c.p, cats[i].name, c.n)) return cats[i].cat;
  return KC_OTHER;
}

int kn_is_step_name(js_str n) { return n.n > 13 && !memcmp(n.p, "ProfilerStep#", 13); }

/* An integer field's value at *pp (a number, or a string holding one): *out when it is a finite
 * integer in range, else unchanged; a non-finite number is counted in *nonfinite. */
js_status kn_read_int(const char **pp, const char *end, int64_t *out, uint32_t *nonfinite) {
  js_str v;
  int str = **pp == '"';
  js_status st = str ? js_string(pp, end, &v) : js_number(pp, end, &v);
  if (st != JS_OK) return st;
  int64_t x;
  js_val r = str ? js_str_int(v, &x) : js_num_int(v, &x);
  if (r == JS_VAL_OK) *out = x;
  *nonfinite += r == JS_VAL_NONFINITE;
  return JS_OK;
}

/* A time field (us) at *pp into *ns (ns): 1 when it holds a finite time within +-2^61 ns; a
 * number that is not (non-finite, out of range) sets e->bad_time. */
static js_status read_time(const char **pp, const char *end, jev *e, int64_t *ns, int *has) {
  js_str v;
  js_status st = js_number(pp, end, &v);
  if (st != JS_OK) return st;
  js_val r = js_us_to_ns(v, ns);
  *has = r == JS_VAL_OK;
  e->bad_time |= r == JS_VAL_NONFINITE || r == JS_VAL_RANGE;
  e->nonfinite += r == JS_VAL_NONFINITE;
  return JS_OK;
}

/* The args the report reads: of GPU events, launches and unknown categories (the caller skips
 * those of CPU operators and annotations). */
static js_status parse_args(const char **pp, const char *end, jev *e) {
  const char *p = *pp;
  int done;
  js_status st = js_first(&p, end, &done);
  while (st == JS_OK && !done) {
    js_str key, v;
    if ((st = js_key(&p, end, &key)) != JS_OK) return st;
    int64_t *iv = NULL;
    char *sv = NULL;
    size_t scap = 0;
    switch (key.n) {
    case 6:
      if (JS_EQ(key, "stream")) iv = &e->stream;
      break;
    case 11:
      if (JS_EQ(key, "correlation")) iv = &e->corr;
      break;
    case 13:
      if (JS_EQ(key, "In msg nelems")) iv = &e->in_nelems;
      break;
    case 14:
      if (JS_EQ(key, "Out msg nelems")) iv = &e->out_nelems;
      break;
    case 10:
      if (JS_EQ(key, "Group size")) iv = &e->group_size;
      break;
    case 15:
      if (JS_EQ(key, "Collective name")) sv = e->coll_name, scap = sizeof e->coll_name;
      break;
    case 5:
      if (JS_EQ(key, "dtype")) sv = e->dtype, scap = sizeof e->dtype;
      else if (JS_EQ(key, "bytes")) iv = &e->bytes;
      break;
    default: break;
    }
    if (key.n == 23 && JS_EQ(key, "memory bandwidth (GB/s)") && js_is_scalar(*p)) {
      if ((st = js_number(&p, end, &v)) != JS_OK) return st;
      double bw;
      js_val r = js_num_double(v, &bw);
      if (r == JS_VAL_OK && bw >= 0) e->bw_gbps = bw;
      e->nonfinite += r == JS_VAL_NONFINITE;
    } else if (iv && (*p == '"' || js_is_scalar(*p))) { /* a string may hold the number */
      if ((st = kn_read_int(&p, end, iv, &e->nonfinite)) != JS_OK) return st;
    } else if (sv && *p == '"') {
      if ((st = js_string(&p, end, &v)) != JS_OK) return st;
      js_unescape(v, sv, scap);
    } else if ((st = js_skip(&p, end)) != JS_OK) {
      return st;
    }
    st = js_next(&p, end, &done);
  }
  if (st == JS_OK) *pp = p;
  return st;
}

void kn_event_reset(jev *e) {
  e->name_s.p = e->cat_s.p = NULL;
  e->name_s.n = e->cat_s.n = 0;
  e->cat = KC_UNKNOWN;
  e->ph_x = 0;
  e->skipped = 0;
  e->name[0] = e->coll_name[0] = e->dtype[0] = 0;
  e->ts = e->dur = 0;
  e->has_ts = e->has_dur = 0;
  e->bad_time = 0;
  e->nonfinite = 0;
  e->tid_s.p = NULL;
  e->tid_s.n = 0;
  e->tid = INT64_MIN;
  e->pid = -1;
  e->name_c = e->cat_c = NULL;
  e->stream = -1;
  e->in_nelems = e->out_nelems = e->group_size = -1;
  e->corr = e->bytes = -1;
  e->bw_gbps = -1;
}

/* One event object at *pp ('{'). Fields in any order; args are read only for the categories that
 * use them (when "cat" comes first, as Kineto writes it, the others' args are skipped unread). */
js_status kn_parse_event(const char **pp, const char *end, jev *e) {
  kn_event_reset(e);
  const char *p = *pp;
  int done;
  js_status st = js_first(&p, end, &done);
  while (st == JS_OK && !done) {
    js_str key, v;
    if ((st = js_key(&p, end, &key)) != JS_OK) return st;
    char c = *p;
    int read = 0, useless = 0;
    if (key.n == 2 && key.p[0] == 'p' && key.p[1] == 'h' && c == '"') {
      if ((st = js_string(&p, end, &v)) != JS_OK) return st;
      e->ph_x = JS_EQ(v, "X");
      useless = !e->ph_x; /* flows, metadata, counters, instants */
      read = 1;
    } else if (key.n == 3 && JS_EQ(key, "cat") && c == '"') {
      if ((st = js_string(&p, end, &e->cat_s)) != JS_OK) return st;
      e->cat = classify_cat(e->cat_s);
      useless = e->cat == KC_CPU && e->name_s.p && !kn_is_step_name(e->name_s);
      read = 1;
    } else if (key.n == 4 && JS_EQ(key, "name") && c == '"') {
      if ((st = js_string(&p, end, &e->name_s)) != JS_OK) return st;
      useless = e->cat == KC_CPU && !kn_is_step_name(e->name_s);
      read = 1;
    } else if (key.n == 2 && key.p[0] == 't' && key.p[1] == 's' && js_is_scalar(c)) {
      if ((st = read_time(&p, end, e, &e->ts, &e->has_ts)) != JS_OK) return st;
      read = 1;
    } else if (key.n == 3 && JS_EQ(key, "dur") && js_is_scalar(c)) {
      if ((st = read_time(&p, end, e, &e->dur, &e->has_dur)) != JS_OK) return st;
      read = 1;
    } else if (key.n == 3 && JS_EQ(key, "pid") && js_is_scalar(c)) {
      if ((st = kn_read_int(&p, end, &e->pid, &e->nonfinite)) != JS_OK) return st;
      read = 1;
    } else if (key.n == 3 && JS_EQ(key, "tid") && (c == '"' || js_is_scalar(c))) {
      st = c == '"' ? js_string(&p, end, &e->tid_s) : js_number(&p, end, &e->tid_s);
      if (st != JS_OK) return st;
      int64_t x;
      e->nonfinite += c != '"' && js_num_int(e->tid_s, &x) == JS_VAL_NONFINITE;
      read = 1;
    } else if (key.n == 4 && JS_EQ(key, "args") && c == '{' && e->cat != KC_CPU &&
               e->cat != KC_GPU_ANNOTATION) {
      if ((st = parse_args(&p, end, e)) != JS_OK) return st;
      read = 1;
    }
    if (!read && (st = js_skip(&p, end)) != JS_OK) return st;
    if (useless) { /* a CPU operator, a flow: its other fields do not matter */
      if ((st = js_skip_rest(&p, end)) != JS_OK) return st;
      e->skipped = 1;
      *pp = p;
      return JS_OK;
    }
    st = js_next(&p, end, &done);
  }
  if (st == JS_OK) *pp = p;
  return st;
}

static int dtype_size(const char *d) {
  static const struct {
    const char *n;
    int s;
  } t[] = {{"Float8", 1},   {"Float", 4}, {"Double", 8}, {"Half", 2},
           {"BFloat16", 2}, {"Long", 8},  {"Int", 4},    {"Short", 2},
           {"Byte", 1},     {"Char", 1},  {"Bool", 1},   {"ComplexFloat", 8}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (!strncmp(d, t[i].n, strlen(t[i].n))) return t[i].s;
  return 0;
}

static int coll_from_args(const char *n) {
  if (strstr(n, "allreduce") || strstr(n, "all_reduce")) return 4;
  if (strstr(n, "reduce_scatter") || strstr(n, "_reduce_scatter_base")) return 3;
  if (strstr(n, "allgather") || strstr(n, "all_gather")) return 2;
  if (strstr(n, "broadcast")) return 0;
  if (strstr(n, "reduce")) return 1;
  return -1;
}

/* Categories of complete events that are not GPU work, for the message on traces without any. */
static void note_category(rp_kineto *k, const jev *e) {
  char c[32];
  js_unescape(e->cat_s, c, sizeof c);
  for (int i = 0; i < SEEN_CATS; i++) {
    if (!k->seen_cat_n[i]) {
      snprintf(k->seen_cat[i], sizeof k->seen_cat[i], "%s", c);
      k->seen_cat_n[i] = 1;
      return;
    }
    if (!strcmp(k->seen_cat[i], c)) {
      k->seen_cat_n[i]++;
      return;
    }
  }
}

const char *kn_ev_name(jev *e) {
  if (!e->name_c) {
    js_unescape(e->name_s, e->name, sizeof e->name);
    e->name_c = e->name;
  }
  return e->name_c;
}

const char *kn_ev_cat(jev *e) {
  if (!e->cat_c) {
    js_unescape(e->cat_s, e->cat_name, sizeof e->cat_name);
    e->cat_c = e->cat_name;
  }
  return e->cat_c;
}

int64_t kn_ev_tid(jev *e) { /* a GPU event's stream when its args lack one */
  if (e->tid == INT64_MIN) {
    e->tid = -1;
    if (e->tid_s.p && js_str_int(e->tid_s, &e->tid) != JS_VAL_OK) e->tid = -1;
  }
  return e->tid;
}

/* What an event that is not a ProfilerStep gives the sinks: pass 1 and pass 2 alike, the replay of
 * pass 1's record (spill) too, so that both passes see the same events the same way. */
void kn_act(rp_kineto *k, rp_source *s, const rp_sink *sink, jev *e, int64_t start, int64_t stop) {
  int gpu = e->cat == KC_KERNEL || e->cat == KC_MEMCPY || e->cat == KC_MEMSET;
  if (sink->kevent) { /* runtime and driver calls, GPU activities, and what the report does not know */
    rp_kevent ke = {
        kn_ev_name(e), kn_ev_cat(e), start,    stop - start,
        e->stream,     e->corr,      e->bytes, e->bw_gbps == e->bw_gbps ? e->bw_gbps : -1};
    sink->kevent(sink->ctx, s->index, &ke);
  }
  if (e->cat == KC_RUNTIME && sink->step && e->corr >= 0) kn_corr_call(k, e->corr, e->ts);
  if (!gpu) {
    if (e->cat == KC_OTHER && k->counting) note_category(k, e);
    return;
  }
  if (stop <= start) return;
  k->gpu_events++;
  const char *name = kn_ev_name(e);
  if (e->ts < k->first) k->first = e->ts;
  if (e->ts + e->dur > k->last) k->last = e->ts + e->dur;
  if (sink->step && e->corr >= 0) kn_corr_gpu_event(k, e->corr, e->ts, e->ts + e->dur);
  rp_interval iv = {start,      stop, (uint32_t)(e->stream >= 0 ? e->stream : kn_ev_tid(e)),
                    RP_COMPUTE, 0xff, RP_FROM_KERNEL,
                    0};
  int func = -1;
  if (e->cat != KC_KERNEL || !strncmp(name, "Memcpy", 6) || !strncmp(name, "Memset", 6)) {
    iv.cls = RP_MEMORY;
    if (k->counting) s->memory_kernels++;
  } else if (rp_nccl_kernel_parse(name, &func)) {
    iv.cls = RP_COMM;
    if (func < 0 && e->coll_name[0]) func = coll_from_args(e->coll_name);
    if (k->counting) s->nccl_kernels++;
    if (func == 5 && e->coll_name[0]) /* SendRecv kernels: the op says which half */
      func = !strcmp(e->coll_name, "send") ? 6 : !strcmp(e->coll_name, "recv") ? 7 : 5;
    if (sink->coll && func >= 0) {
      rp_coll c;
      memset(&c, 0, sizeof c);
      c.func = func;
      c.src = s->index;
      c.p2p = func >= 5 && func <= 7;
      /* The name gives the collective, never the algorithm/protocol that ran (an entry point's
       * suffix, none at all from NCCL 2.31), and PyTorch's record_param_comms arguments carry
       * neither: unknown. */
      c.algo = c.proto = -1;
      c.nranks = e->group_size > 0 && e->group_size < (1 << 24) ? (int)e->group_size : 0;
      int64_t nel = func == 3 ? e->out_nelems : e->in_nelems;
      int ds = dtype_size(e->dtype);
      c.size_unknown = !(nel >= 0 && ds);
      c.bytes = nel > 0 && ds ? (uint64_t)nel * (uint64_t)ds : 0;
      c.gpu_start = c.cpu_start = start;
      c.gpu_stop = c.cpu_stop = stop;
      c.timed = 1;
      c.stream = iv.stream;
      sink->coll(sink->ctx, s->index, &c);
    }
    iv.func = func >= 0 ? (uint8_t)func : 0xff;
  } else {
    if (k->counting) s->compute_kernels++;
  }
  if (sink->interval) sink->interval(sink->ctx, s->index, &iv);
  if (start > s->frontier) s->frontier = start;
}
