// SPDX-License-Identifier: Apache-2.0
// Reader of PyTorch profiler (Kineto) and Chrome trace JSON, plain or gzip: the top-level object is
// walked key by key and `traceEvents` event by event with the scanner of jscan.h (no DOM); each
// event yields the few fields the report needs (kineto_event.c), the rest is skipped unread.
// Memory: the scanner's buffer (one event at least, 1 MiB usually) and one event; in pass 1 the
// step attribution's tables (kineto_steps.c) and the record pass 2 replays (kineto_spill.c); no
// recursion. Called by input.c (rp_source_step, rp_kineto_sniff) and by the fuzz target
// (rp_kineto_parse_memory).
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

static rp_kineto *kineto_new(const char *name);

/* The reading stops at the current byte: the input stopped early (k->in.error says why; an I/O
 * error is kept in k->io_error for the source) or is malformed (`what`). */
static void fail(rp_kineto *k, const char *what) {
  if (k->failed) return;
  k->failed = 1;
  k->st = ST_DONE;
  const js_in *in = &k->in;
  if (in->error == JS_ERR_IO) k->io_error = in->io_errno;
  if (k->quiet) return;
  const char *prefix = in->error == JS_ERR_IO     ? "read error: "
                       : in->error == JS_ERR_NONE ? "malformed JSON: "
                                                  : "";
  const char *why = in->error == JS_ERR_IO      ? strerror(in->io_errno)
                    : in->error == JS_ERR_GZIP  ? "corrupt gzip data"
                    : in->error == JS_ERR_NOMEM ? "out of memory"
                                                : what;
  TOPO_WARN("%s: byte %" PRIu64 ": %s%s; the %" PRIu64 " events before it are used", k->path,
            kn_where(k), prefix, why, k->events);
}

static void deliver(rp_kineto *k, rp_source *s, const rp_sink *sink, jev *e) {
  k->events++;
  if (k->counting) k->nonfinite += e->nonfinite;
  if (e->skipped && e->ph_x && e->cat == KC_CPU) k->x_events++, k->cpu_events++;
  if (e->skipped || !e->ph_x) return;
  /* ts, dur and the base each lie within +-2^61 ns (read_time, key_value), so that every time
   * and difference below fits in int64; an event without a usable time is counted */
  if (e->bad_time || (e->has_ts && e->dur < 0)) {
    if (k->counting) k->bad_times++;
    return;
  }
  if (!e->has_ts) return;
  k->x_events++;
  k->cpu_events += e->cat == KC_CPU || e->cat == KC_RUNTIME;
  /* the process: a runtime call's pid (GPU events carry the device there instead) */
  if (!k->pid && e->cat == KC_RUNTIME && e->pid > 0 && e->pid <= UINT32_MAX)
    k->pid = (uint32_t)e->pid;
  int64_t start = e->ts + k->base_ns, stop = start + (e->has_dur ? e->dur : 0);
  if (kn_is_step_name(e->name_s)) {
    if (k->nsteps == k->cap_steps) {
      size_t cap = k->cap_steps ? k->cap_steps * 2 : 64;
      void *p = topo_realloc(k->steps, cap * sizeof *k->steps);
      if (!p) return;
      k->steps = p;
      k->cap_steps = cap;
    }
    char num[24];
    js_str digits = {e->name_s.p + 13, e->name_s.n - 13};
    js_unescape(digits, num, sizeof num);
    k->steps[k->nsteps].start = e->ts;
    k->steps[k->nsteps].stop = e->ts + e->dur;
    k->steps[k->nsteps].value = (uint64_t)strtoull(num, NULL, 10);
    k->steps[k->nsteps].gpu = e->cat == KC_GPU_ANNOTATION;
    k->steps[k->nsteps].lo = INT64_MAX;
    k->steps[k->nsteps].hi = INT64_MIN;
    k->gpu_steps |= k->steps[k->nsteps].gpu;
    if (!k->steps[k->nsteps].gpu &&
        !k->cpu_unordered) { /* CPU steps in start order, for pair_add */
      size_t *o = kn_grow(k->cpu_order, &k->cap_cpu_order, k->ncpu_order, sizeof *o);
      if (o) k->cpu_order = o;
      if (!o || (k->ncpu_order && e->ts < k->steps[k->cpu_order[k->ncpu_order - 1]].start))
        k->cpu_unordered = 1;
      else k->cpu_order[k->ncpu_order++] = k->nsteps;
    }
    k->nsteps++;
    return;
  }
  if (k->spill) kn_spill_put(k, e);
  kn_act(k, s, sink, e, start, stop);
}

/* distributedInfo: rank and world_size. */
static js_status parse_distributed(rp_kineto *k, const char **pp, const char *end) {
  const char *p = *pp;
  if (*p != '{') return js_skip(pp, end);
  int rank = k->rank, world = k->world, done;
  js_status st = js_first(&p, end, &done);
  while (st == JS_OK && !done) {
    js_str key;
    if ((st = js_key(&p, end, &key)) != JS_OK) return st;
    int is_rank = JS_EQ(key, "rank"), is_world = JS_EQ(key, "world_size");
    if ((is_rank || is_world) && (*p == '"' || js_is_scalar(*p))) {
      int64_t x = -1;
      uint32_t nonfinite = 0;
      if ((st = kn_read_int(&p, end, &x, &nonfinite)) != JS_OK) return st;
      if (k->counting) k->nonfinite += nonfinite;
      if (is_rank && x >= 0 && x < (1 << 24)) rank = (int)x;
      if (is_world && x > 0 && x < (1 << 24)) world = (int)x;
    } else if ((st = js_skip(&p, end)) != JS_OK) {
      return st;
    }
    st = js_next(&p, end, &done);
  }
  if (st != JS_OK) return st;
  k->rank = rank, k->world = world;
  *pp = p;
  return JS_OK;
}

/* otherData: "tool": "topo-report" marks topo-report's own Chrome export. */
static js_status parse_other_data(rp_kineto *k, const char **pp, const char *end) {
  const char *p = *pp;
  if (*p != '{') return js_skip(pp, end);
  int own = 0, done;
  js_status st = js_first(&p, end, &done);
  while (st == JS_OK && !done) {
    js_str key, v;
    if ((st = js_key(&p, end, &key)) != JS_OK) return st;
    if (JS_EQ(key, "tool") && *p == '"') {
      if ((st = js_string(&p, end, &v)) != JS_OK) return st;
      own |= JS_EQ(v, "topo-report");
    } else if ((st = js_skip(&p, end)) != JS_OK) {
      return st;
    }
    st = js_next(&p, end, &done);
  }
  if (st != JS_OK) return st;
  k->own_export |= own;
  *pp = p;
  return JS_OK;
}

/* Pass 1: the numbers that could not be used, counted into the source and said once. */
static void report_numbers(const rp_kineto *k, rp_source *s) {
  s->json_bad_times = k->bad_times;
  s->json_nonfinite = k->nonfinite;
  if (k->quiet || !(k->bad_times || k->nonfinite || k->bad_base)) return;
  char times[160] = "", nums[128] = "";
  if (k->bad_times)
    snprintf(times, sizeof times,
             "; %" PRIu64
             " event%s whose ts or dur is not a finite time or out of range "
             "(beyond +-2^61 ns, or a negative dur): not used",
             k->bad_times, k->bad_times == 1 ? "" : "s");
  if (k->nonfinite)
    snprintf(nums, sizeof nums, "; %" PRIu64 " number%s not finite (NaN, Infinity): %s unknown",
             k->nonfinite, k->nonfinite == 1 ? "" : "s",
             k->nonfinite == 1 ? "its field is" : "their fields are");
  TOPO_WARN("%s: numbers that cannot be used%s%s%s", k->path, times, nums,
            k->bad_base ? "; baseTimeNanoseconds out of range: taken as 0" : "");
}

static void finish(rp_kineto *k, rp_source *s, const rp_sink *sink) {
  k->st = ST_DONE;
  if (k->counting) report_numbers(k, s);
  if (k->spill) kn_spill_finish(k->spill);
  s->rank = k->rank;
  s->nranks = k->world;
  s->kineto_base = k->base_ns;
  s->gpu_first = k->first + k->base_ns;
  s->gpu_last = k->last + k->base_ns;
  if (sink->step) kn_emit_steps(k, s, sink);
  kn_corr_free(k);
}

void rp_kineto_record(rp_kineto *k, rp_kspill *sp) { k->spill = sp; }

topo_status rp_kineto_open_replay(const char *path, rp_kspill *sp, rp_kineto **out) {
  *out = NULL;
  if (!rp_kspill_ready(sp)) return TOPO_ERR_IO;
  if (!kn_spill_rewind(sp)) return TOPO_ERR_NOMEM;
  rp_kineto *k = kineto_new(path);
  if (!k) return TOPO_ERR_NOMEM;
  k->replay = sp;
  k->counting = 0;
  *out = k;
  return TOPO_OK;
}

/* What a step of the reader says about the loop: go on, stop reading, or a unit (an event, a
 * key's value) that did not parse whole (its js_status says why). */
enum { K_NEXT, K_STOP, K_PARTIAL };

/* The buffer is used up: read on, or say what the end of the file leaves. */
static int end_of_buffer(rp_kineto *k) {
  js_in *in = &k->in;
  if (js_refill(in)) return K_NEXT;
  if (in->error) fail(k, "");
  else if (k->st == ST_EVENTS && k->top_array) k->st = ST_DONE; /* viewers accept it unclosed */
  else if (k->st == ST_START) fail(k, "not a JSON object or array");
  else
    fail(k, k->st == ST_EVENTS ? "file ends inside traceEvents"
                               : "file ends inside the top-level object");
  return K_STOP;
}

/* The first byte: an object (Kineto's) or an array of events (Chrome's bare form). */
static int at_start(rp_kineto *k, const char *p, const char *end) {
  js_in *in = &k->in;
  if (end - p >= 3 && (unsigned char)p[0] == 0xef && (unsigned char)p[1] == 0xbb &&
      (unsigned char)p[2] == 0xbf) { /* a UTF-8 byte order mark */
    in->pos += 3;
    return K_NEXT;
  }
  if (*p == '{') k->st = ST_KEY;
  else if (*p == '[') k->st = ST_EVENTS, k->top_array = 1, k->has_events_key = 1;
  else {
    fail(k, "not a JSON object or array");
    return K_STOP;
  }
  in->pos++;
  if (k->st == ST_EVENTS && k->sniff) k->st = ST_DONE;
  return K_NEXT;
}

/* Inside traceEvents: a separator, the end of the array, or one event delivered (*n counts). */
static int in_events(rp_kineto *k, rp_source *s, const rp_sink *sink, const char *p,
                     const char *end, size_t *n, js_status *st) {
  js_in *in = &k->in;
  if (*p == ',') {
    in->pos++;
    return K_NEXT;
  }
  if (*p == ']') {
    in->pos++;
    k->st = k->top_array ? ST_DONE : ST_KEY;
    return K_NEXT;
  }
  if (*p != '{') {
    fail(k, "expected an event object");
    return K_STOP;
  }
  *st = kn_parse_event(&p, end, &k->ev);
  if (*st != JS_OK) return K_PARTIAL;
  in->pos = (size_t)(p - in->buf);
  deliver(k, s, sink, &k->ev);
  (*n)++;
  return K_NEXT;
}

/* The value of top-level key `key` at p: traceEvents opens the events; distributedInfo,
 * otherData and baseTimeNanoseconds are read; anything else is streamed past. */
static int key_value(rp_kineto *k, js_str key, const char *p, const char *end, js_status *st) {
  js_in *in = &k->in;
  if (JS_EQ(key, "traceEvents")) {
    if (*p != '[') {
      fail(k, "traceEvents is not an array");
      return K_STOP;
    }
    in->pos = (size_t)(p + 1 - in->buf);
    k->has_events_key = 1;
    k->st = k->sniff ? ST_DONE : ST_EVENTS;
    return K_NEXT;
  }
  if (JS_EQ(key, "distributedInfo")) {
    *st = parse_distributed(k, &p, end);
  } else if (JS_EQ(key, "otherData")) {
    *st = parse_other_data(k, &p, end);
    if (*st == JS_OK && k->own_export && k->sniff) k->st = ST_DONE;
  } else if (JS_EQ(key, "baseTimeNanoseconds") && js_is_scalar(*p)) {
    js_str v;
    *st = js_number(&p, end, &v);
    if (*st == JS_OK && !k->base_fixed) {
      int64_t b = 0;
      js_val r = js_num_int(v, &b);
      int ok = r == JS_VAL_OK && b > -((int64_t)1 << 61) && b < ((int64_t)1 << 61);
      k->base_ns = ok ? b : 0;
      k->bad_base |= !ok && r != JS_VAL_ABSENT;
      if (k->counting) k->nonfinite += r == JS_VAL_NONFINITE;
    }
  } else { /* any other value, of any size, streamed past */
    in->pos = (size_t)(p - in->buf);
    *st = js_skip_stream(in);
    if (*st == JS_OK) return K_NEXT;
    fail(k, *st == JS_MORE ? "file ends inside a value" : "a malformed value");
    return K_STOP;
  }
  if (*st != JS_OK) return K_PARTIAL;
  in->pos = (size_t)(p - in->buf);
  return K_NEXT;
}

/* In the top-level object: a separator, its end, or a key and its value. */
static int in_keys(rp_kineto *k, const char *p, const char *end, js_status *st) {
  js_in *in = &k->in;
  if (*p == '}') {
    in->pos++;
    k->st = ST_DONE;
    return K_NEXT;
  }
  if (*p == ',') {
    in->pos++;
    return K_NEXT;
  }
  if (*p != '"') {
    fail(k, "expected a key");
    return K_STOP;
  }
  js_str key;
  *st = js_string(&p, end, &key);
  if (*st == JS_OK) {
    p = js_ws(p, end);
    *st = p >= end ? JS_MORE : *p == ':' ? JS_OK : JS_BAD;
    if (*st == JS_OK) p = js_ws(p + 1, end);
    if (*st == JS_OK && p >= end) *st = JS_MORE;
  }
  if (*st != JS_OK) return K_PARTIAL;
  return key_value(k, key, p, end, st);
}

/* A unit that did not parse whole: malformed (`what` says which), or running past the buffer:
 * read on and parse it again, skip an event larger than the buffer may grow, or say what the
 * end of the file leaves. */
static int partial(rp_kineto *k, js_status st, const char *what) {
  js_in *in = &k->in;
  if (st == JS_BAD) {
    fail(k, what);
    return K_STOP;
  }
  if (js_refill(in)) return K_NEXT;
  if (in->error) {
    fail(k, "");
  } else if (!in->eof && k->st == ST_EVENTS) { /* one event larger than the buffer may grow */
    js_status sk = js_skip_stream(in);
    k->huge_skipped++;
    if (!k->quiet && k->huge_skipped == 1)
      TOPO_WARN("%s: an event larger than %zu MiB at byte %" PRIu64 " was skipped", k->path,
                in->max_cap >> 20, kn_where(k));
    if (sk == JS_OK) return K_NEXT;
    fail(k, "file ends inside an event");
  } else if (k->st == ST_EVENTS && k->top_array) {
    k->st = ST_DONE; /* an unclosed array cut inside its last event: the events before it count */
  } else if (!in->eof) {
    k->huge_skipped++;
    fail(k, "a top-level value larger than the read buffer");
  } else {
    fail(k, k->st == ST_EVENTS ? "file ends inside traceEvents"
                               : "file ends inside the top-level object");
  }
  return K_STOP;
}

/* The events, or the top-level keys, of the input: up to max_events events per call. */
int rp_kineto_step(rp_kineto *k, rp_source *s, const rp_sink *sink, size_t max_events) {
  if (k->replay) return kn_replay_step(k, s, sink, max_events);
  js_in *in = &k->in;
  size_t n = 0;
  int next = K_NEXT;
  while (k->st != ST_DONE && n < max_events && next == K_NEXT) {
    const char *base = in->buf, *end = base + in->len;
    const char *p = js_ws(base + in->pos, end);
    in->pos = (size_t)(p - base);
    js_status st = JS_OK;
    int events = k->st == ST_EVENTS;
    if (p >= end) next = end_of_buffer(k);
    else if (k->st == ST_START) next = at_start(k, p, end);
    else if (events) next = in_events(k, s, sink, p, end, &n, &st);
    else next = in_keys(k, p, end, &st);
    if (next == K_PARTIAL)
      next = partial(k, st, events ? "a malformed event" : "a malformed key or value");
  }
  if (k->st == ST_DONE) {
    /* pass 1 of a gzip file: what follows the JSON read too, so that damage to its trailer (the
     * checksum of everything) is said; the events stay */
    if (!k->sniff && k->counting && k->in.gzip && !k->failed) {
      while (js_refill(&k->in)) k->in.pos = k->in.len;
      if (k->in.error) fail(k, "");
    }
    if (!k->sniff) finish(k, s, sink);
    return 0;
  }
  return 1;
}

static rp_kineto *kineto_new(const char *name) {
  rp_kineto *k = topo_calloc(1, sizeof *k);
  if (!k) return NULL;
  snprintf(k->path, sizeof k->path, "%s", name);
  k->rank = -1;
  k->first = INT64_MAX / 2;
  k->last = INT64_MIN / 2;
  k->counting = 1;
  k->pairs_fd = -1;
  return k;
}

topo_status rp_kineto_open(const char *path, rp_kineto **out) {
  *out = NULL;
  rp_kineto *k = kineto_new(path);
  if (!k) return TOPO_ERR_NOMEM;
  int rc = js_open_file(&k->in, path);
  if (rc != 0) {
    if (rc == -1) TOPO_WARN("%s: cannot open: %s", path, strerror(errno));
    topo_free(k);
    return rc == -1 ? TOPO_ERR_IO : TOPO_ERR_NOMEM;
  }
  *out = k;
  return TOPO_OK;
}

void rp_kineto_close(rp_kineto *k) {
  if (!k) return;
  js_close(&k->in);
  topo_free(k->steps);
  kn_corr_free(k);
  topo_free(k);
}

void rp_kineto_set_quiet(rp_kineto *k, int quiet) { k->quiet = quiet; }

void rp_kineto_set_pass(rp_kineto *k, int pass) { k->counting = pass <= 1; }

void rp_kineto_set_base(rp_kineto *k, int64_t base_ns) {
  k->base_ns = base_ns;
  k->base_fixed = 1;
}

uint64_t rp_kineto_offset(const rp_kineto *k) { return js_file_offset(&k->in); }

int rp_kineto_io_error(const rp_kineto *k) { return k->io_error; }

int rp_kineto_host_from_name(const char *path, uint32_t pid, char *host, size_t len,
                             uint32_t *pid_out) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strchr(base, '.'), *us = NULL;
  if (!dot) return 0;
  for (const char *p = base; p < dot; p++)
    if (*p == '_') us = p;
  if (!us || us == base || us + 1 == dot) return 0;
  uint64_t v = 0;
  for (const char *p = us + 1; p < dot; p++) {
    if (*p < '0' || *p > '9' || v > UINT32_MAX / 10) return 0;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  const char *p = dot + 1; /* the stamp, then ".pt.trace.json" */
  while (*p >= '0' && *p <= '9') p++;
  if (p == dot + 1 || strncmp(p, ".pt.trace.json", 14)) return 0;
  if (!v || v > UINT32_MAX || (pid && v != pid)) return 0;
  snprintf(host, len, "%.*s", (int)(us - base), base);
  if (pid_out) *pid_out = (uint32_t)v;
  return 1;
}

void rp_kineto_stats(const rp_kineto *k, rp_kineto_info *out) {
  memset(out, 0, sizeof *out);
  out->events = k->events;
  out->x_events = k->x_events;
  out->gpu_events = k->gpu_events;
  out->cpu_events = k->cpu_events;
  out->has_events_key = k->has_events_key;
  out->own_export = k->own_export;
  out->failed = k->failed;
  out->gzip = k->in.gzip;
  out->rank = k->rank;
  out->world = k->world;
  out->pid = k->pid;
  for (int i = 0; i < SEEN_CATS && k->seen_cat_n[i]; i++) {
    snprintf(out->cat[i], sizeof out->cat[i], "%s", k->seen_cat[i]);
    out->cat_n[i] = k->seen_cat_n[i];
  }
}

topo_status rp_kineto_sniff(const char *path, rp_kineto_info *out) {
  rp_kineto *k;
  memset(out, 0, sizeof *out);
  topo_status st = rp_kineto_open(path, &k);
  if (st != TOPO_OK) return st;
  k->sniff = 1;
  k->quiet = 1;
  rp_source s;
  memset(&s, 0, sizeof s);
  rp_sink none = {NULL, NULL, NULL, NULL, NULL, NULL};
  while (rp_kineto_step(k, &s, &none, 4096)) {}
  /* An object that ended without traceEvents is not a trace; one cut short may still be, and so
   * may one whose gzip stream turns out damaged after it (a garbled key): its checksum read. */
  int whole = k->st == ST_DONE && !k->failed;
  if (whole && !k->has_events_key)
    while (js_refill(&k->in)) k->in.pos = k->in.len;
  rp_kineto_stats(k, out);
  out->sniff_complete = whole && !k->in.error;
  rp_kineto_close(k);
  return TOPO_OK;
}

/* The events of a memory input, read through js_in `in` (opened by the caller). */
static uint64_t parse_input(rp_kineto *k, const rp_sink *sink, uint64_t *huge) {
  k->quiet = 1;
  rp_source s;
  memset(&s, 0, sizeof s);
  s.kind = RP_SRC_KINETO;
  while (rp_kineto_step(k, &s, sink, 4096)) {}
  uint64_t n = k->events;
  if (huge) *huge = k->huge_skipped;
  rp_kineto_close(k);
  return n;
}

uint64_t rp_kineto_parse_memory(const char *data, size_t len, const rp_sink *sink) {
  rp_kineto *k = kineto_new("(memory)");
  if (!k) return 0;
  if (js_open_memory(&k->in, data, len) != 0) {
    topo_free(k);
    return 0;
  }
  return parse_input(k, sink, NULL);
}

uint64_t rp_kineto_parse_chunks(const char *data, size_t len, size_t chunk, size_t max_buffer,
                                const rp_sink *sink, uint64_t *too_large) {
  rp_kineto *k = kineto_new("(memory)");
  if (too_large) *too_large = 0;
  if (!k) return 0;
  if (js_open_chunks(&k->in, data, len, chunk, max_buffer) != 0) {
    topo_free(k);
    return 0;
  }
  return parse_input(k, sink, too_large);
}
