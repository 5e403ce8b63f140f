// SPDX-License-Identifier: Apache-2.0
// Streaming reader of PyTorch profiler (Kineto) and Chrome trace JSON: a small pull tokenizer of
// our own (no DOM): the top-level object is walked key by key, `traceEvents` element by element,
// and each event is parsed into the few fields the report needs. Memory: one input buffer and one
// event, plus (pass 1, when steps are wanted) 16 bytes per launch and 24 per GPU event for the
// step attribution by correlation id, capped at CORR_MAX each; no recursion (nesting is skipped
// with a counter), so no input can exhaust the stack.
// Called by input.c (rp_source_step) and by the fuzz target (rp_kineto_parse_memory).
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "log.h"
#include "report.h"

#define IN_BUF (1u << 20)
#define NAME_MAX_LEN 512

enum state { ST_START, ST_KEY, ST_EVENTS, ST_DONE };

typedef struct jev {
  char name[NAME_MAX_LEN];
  char cat[64];
  char ph[8];
  char coll_name[64];
  char dtype[32];
  int64_t ts, dur;     /* ns */
  int has_ts, has_dur;
  int64_t pid, tid, stream;
  int64_t in_nelems, out_nelems, group_size;
  int64_t corr;        /* args.correlation: links a launch (cuda_runtime/driver) to its GPU event */
  int64_t bytes;       /* args.bytes (memcpy/memset) */
  double bw_gbps;      /* args."memory bandwidth (GB/s)" */
} jev;

/* Step attribution (HTA's): a GPU event belongs to the ProfilerStep whose CPU range holds the
 * runtime call that launched it, matched by correlation id at the end of the file. */
typedef struct kstep { int64_t start, stop; uint64_t value; int gpu; } kstep; /* ts units */
typedef struct corr_launch { int64_t corr, ts; } corr_launch;
typedef struct corr_gpu { int64_t corr, start, stop; } corr_gpu;
#define CORR_MAX (1u << 22)  /* entries per table (160 MB for both at most); beyond: one warning */

struct rp_kineto {
  FILE *f;
  const char *mem;
  size_t mem_len;
  char *buf;
  size_t pos, len;
  uint64_t off;          /* file offset of buf[0] */
  int eof;
  enum state st;
  int top_array;
  int failed;
  char path[512];
  int64_t base_ns;
  int64_t first, last;   /* GPU events' range, without the base */
  int base_fixed;        /* base given by pass 1: ignore the key */
  int quiet;
  int counting;          /* count kernels into the source (the first pass only) */
  int rank, world;
  uint64_t events;
  /* steps found (emitted with the base at the end) */
  kstep *steps;
  size_t nsteps, cap_steps;
  int gpu_steps;         /* GPU-projected ProfilerStep ranges seen */
  /* correlation tables, kept only while steps are wanted (pass 1) */
  corr_launch *launch;
  size_t nlaunch, cap_launch;
  corr_gpu *gpuev;
  size_t ngpuev, cap_gpuev;
  int corr_full;         /* a table hit CORR_MAX */
  jev ev;
};

static int fill(rp_kineto *k) {
  if (k->mem || k->eof) return 0;
  k->off += k->len;
  k->len = fread(k->buf, 1, IN_BUF, k->f);
  k->pos = 0;
  if (k->len == 0) k->eof = 1;
  return k->len > 0;
}

static int peekc(rp_kineto *k) {
  if (k->pos >= k->len && !fill(k)) return -1;
  return (unsigned char)k->buf[k->pos];
}

static int getc_(rp_kineto *k) {
  int c = peekc(k);
  if (c >= 0) k->pos++;
  return c;
}

static int peek_ws(rp_kineto *k) {
  for (;;) {
    int c = peekc(k);
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') k->pos++;
    else return c;
  }
}

static uint64_t where(const rp_kineto *k) { return k->off + k->pos; }

static void fail(rp_kineto *k, const char *what) {
  if (k->failed) return;
  k->failed = 1;
  k->st = ST_DONE;
  if (!k->quiet)
    TOPO_WARN("%s: byte %" PRIu64 ": malformed JSON (%s); the %" PRIu64
            " events before it are used",
            k->path, where(k), what, k->events);
}

static int expect(rp_kineto *k, int ch) {
  if (peek_ws(k) != ch) {
    char msg[32];
    snprintf(msg, sizeof msg, "expected '%c'", ch);
    fail(k, msg);
    return 0;
  }
  k->pos++;
  return 1;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A string at the cursor into out (truncated to cap-1 bytes, NUL-terminated). */
static int parse_string(rp_kineto *k, char *out, size_t cap) {
  size_t n = 0;
  if (peek_ws(k) != '"') {
    fail(k, "expected a string");
    return 0;
  }
  k->pos++;
  for (;;) {
    int c = getc_(k);
    if (c < 0) {
      fail(k, "unterminated string");
      return 0;
    }
    if (c == '"') break;
    if (c == '\\') {
      int e = getc_(k);
      switch (e) {
      case 'n': c = '\n'; break;
      case 't': c = '\t'; break;
      case 'r': c = '\r'; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'u': {
        int v = 0;
        for (int i = 0; i < 4; i++) {
          int h = hexval(getc_(k));
          if (h < 0) {
            fail(k, "bad \\u escape");
            return 0;
          }
          v = v * 16 + h;
        }
        c = v < 0x80 ? v : '?';
        break;
      }
      case '"': case '\\': case '/': c = e; break;
      default: fail(k, "bad escape"); return 0;
      }
    }
    if (out && n + 1 < cap) out[n++] = (char)c;
  }
  if (out && cap) out[n] = 0;
  return 1;
}

/* A number's text (at most 63 chars kept). */
static int number_text(rp_kineto *k, char *out, size_t cap) {
  size_t n = 0;
  peek_ws(k);
  for (;;) {
    int c = peekc(k);
    if (c < 0 || !(isdigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')) break;
    if (n + 1 < cap) out[n++] = (char)c;
    k->pos++;
  }
  out[n] = 0;
  if (!n) fail(k, "expected a number");
  return n > 0;
}

/* Microseconds as text -> exact ns (Kineto writes "1700000000123.456"); doubles would lose ns. */
static int64_t us_text_to_ns(const char *t) {
  if (strpbrk(t, "eE")) {
    double d = strtod(t, NULL) * 1e3;
    if (!(d > -9.2e18 && d < 9.2e18)) return 0;
    return llround(d);
  }
  int neg = *t == '-';
  if (*t == '-' || *t == '+') t++;
  int64_t ip = 0;
  while (isdigit((unsigned char)*t)) {
    if (ip > (INT64_MAX / 1000 - 9) / 10) return 0; /* beyond year 2262 in ns: not a time */
    ip = ip * 10 + (*t - '0');
    t++;
  }
  int64_t frac = 0;
  int fd = 0, round_up = 0;
  if (*t == '.') {
    t++;
    while (isdigit((unsigned char)*t)) {
      if (fd < 3) frac = frac * 10 + (*t - '0');
      else if (fd == 3) round_up = *t >= '5';
      fd++;
      t++;
    }
  }
  for (; fd < 3; fd++) frac *= 10;
  int64_t v = ip * 1000 + frac + round_up;
  return neg ? -v : v;
}

static int64_t text_to_i64(const char *t) {
  if (strpbrk(t, ".eE")) {
    double d = strtod(t, NULL);
    return (d > -9.2e18 && d < 9.2e18) ? (int64_t)d : 0;
  }
  errno = 0;
  long long v = strtoll(t, NULL, 10);
  return errno ? 0 : (int64_t)v;
}

/* Skip any value without recursion. */
static int skip_value(rp_kineto *k) {
  int c = peek_ws(k);
  if (c == '"') return parse_string(k, NULL, 0);
  if (c == '{' || c == '[') {
    long depth = 0;
    for (;;) {
      c = peekc(k);
      if (c < 0) {
        fail(k, "unterminated object or array");
        return 0;
      }
      if (c == '"') {
        if (!parse_string(k, NULL, 0)) return 0;
        continue;
      }
      k->pos++;
      if (c == '{' || c == '[') depth++;
      else if (c == '}' || c == ']') {
        if (--depth == 0) return 1;
      }
    }
  }
  size_t n = 0;
  for (;;) {
    c = peekc(k);
    if (c < 0 || !(isalnum(c) || c == '-' || c == '+' || c == '.')) break;
    k->pos++;
    n++;
  }
  if (!n) fail(k, "expected a value");
  return n > 0;
}

/* An integer-ish value: number, or a string holding one (pid/tid are sometimes strings). */
static int parse_int_value(rp_kineto *k, int64_t *v) {
  char t[64];
  int c = peek_ws(k);
  if (c == '"') {
    if (!parse_string(k, t, sizeof t)) return 0;
    const char *p = t;
    while (*p && !isdigit((unsigned char)*p) && *p != '-') p++;
    *v = text_to_i64(p);
    return 1;
  }
  if (c == '-' || isdigit(c)) {
    if (!number_text(k, t, sizeof t)) return 0;
    *v = text_to_i64(t);
    return 1;
  }
  *v = -1;
  return skip_value(k);
}

static int parse_args(rp_kineto *k, jev *e) {
  if (!expect(k, '{')) return 0;
  if (peek_ws(k) == '}') {
    k->pos++;
    return 1;
  }
  for (;;) {
    char key[64];
    if (!parse_string(k, key, sizeof key) || !expect(k, ':')) return 0;
    int ok;
    if (!strcmp(key, "stream")) ok = parse_int_value(k, &e->stream);
    else if (!strcmp(key, "In msg nelems")) ok = parse_int_value(k, &e->in_nelems);
    else if (!strcmp(key, "Out msg nelems")) ok = parse_int_value(k, &e->out_nelems);
    else if (!strcmp(key, "Group size")) ok = parse_int_value(k, &e->group_size);
    else if (!strcmp(key, "correlation")) ok = parse_int_value(k, &e->corr);
    else if (!strcmp(key, "bytes")) ok = parse_int_value(k, &e->bytes);
    else if (!strcmp(key, "memory bandwidth (GB/s)") && (peek_ws(k) == '-' || isdigit(peek_ws(k)))) {
      char num[64];
      ok = number_text(k, num, sizeof num);
      e->bw_gbps = strtod(num, NULL);
    }
    else if (!strcmp(key, "Collective name") && peek_ws(k) == '"')
      ok = parse_string(k, e->coll_name, sizeof e->coll_name);
    else if (!strcmp(key, "dtype") && peek_ws(k) == '"')
      ok = parse_string(k, e->dtype, sizeof e->dtype);
    else ok = skip_value(k);
    if (!ok) return 0;
    int c = peek_ws(k);
    k->pos++;
    if (c == '}') return 1;
    if (c != ',') {
      k->pos--;
      fail(k, "expected ',' or '}' in args");
      return 0;
    }
  }
}

static int parse_event(rp_kineto *k, jev *e) {
  memset(e, 0, offsetof(jev, ts));
  e->name[0] = e->cat[0] = e->ph[0] = e->coll_name[0] = e->dtype[0] = 0;
  e->ts = e->dur = 0;
  e->has_ts = e->has_dur = 0;
  e->pid = e->tid = e->stream = -1;
  e->in_nelems = e->out_nelems = e->group_size = -1;
  e->corr = e->bytes = -1;
  e->bw_gbps = -1;
  if (!expect(k, '{')) return 0;
  if (peek_ws(k) == '}') {
    k->pos++;
    return 1;
  }
  for (;;) {
    char key[32], num[64];
    if (!parse_string(k, key, sizeof key) || !expect(k, ':')) return 0;
    int ok = 1;
    int c = peek_ws(k);
    if (!strcmp(key, "name") && c == '"') ok = parse_string(k, e->name, sizeof e->name);
    else if (!strcmp(key, "cat") && c == '"') ok = parse_string(k, e->cat, sizeof e->cat);
    else if (!strcmp(key, "ph") && c == '"') ok = parse_string(k, e->ph, sizeof e->ph);
    else if (!strcmp(key, "ts") && (c == '-' || isdigit(c))) {
      ok = number_text(k, num, sizeof num);
      e->ts = us_text_to_ns(num);
      e->has_ts = 1;
    } else if (!strcmp(key, "dur") && (c == '-' || isdigit(c))) {
      ok = number_text(k, num, sizeof num);
      e->dur = us_text_to_ns(num);
      e->has_dur = 1;
    } else if (!strcmp(key, "pid")) ok = parse_int_value(k, &e->pid);
    else if (!strcmp(key, "tid")) ok = parse_int_value(k, &e->tid);
    else if (!strcmp(key, "args") && c == '{') ok = parse_args(k, e);
    else ok = skip_value(k);
    if (!ok) return 0;
    c = peek_ws(k);
    k->pos++;
    if (c == '}') return 1;
    if (c != ',') {
      k->pos--;
      fail(k, "expected ',' or '}' in an event");
      return 0;
    }
  }
}

static int dtype_size(const char *d) {
  static const struct { const char *n; int s; } t[] = {
      {"Float8", 1}, {"Float", 4}, {"Double", 8}, {"Half", 2}, {"BFloat16", 2}, {"Long", 8},
      {"Int", 4},    {"Short", 2}, {"Byte", 1},   {"Char", 1}, {"Bool", 1},     {"ComplexFloat", 8}};
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

/* Room for one more of n elements in *v (capacity *cap): the block, or NULL (out of memory). */
static void *grow(void *v, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return v;
  size_t c = *cap ? *cap * 2 : 1024;
  void *p = topo_realloc(v, c * elem);
  if (p) *cap = c;
  return p;
}

static void corr_add_launch(rp_kineto *k, int64_t corr, int64_t ts) {
  corr_launch *v = k->nlaunch < CORR_MAX ? grow(k->launch, &k->cap_launch, k->nlaunch, sizeof *v) : NULL;
  if (!v) {
    k->corr_full = 1;
    return;
  }
  k->launch = v;
  v[k->nlaunch].corr = corr;
  v[k->nlaunch++].ts = ts;
}

static void corr_add_gpu(rp_kineto *k, int64_t corr, int64_t start, int64_t stop) {
  corr_gpu *v = k->ngpuev < CORR_MAX ? grow(k->gpuev, &k->cap_gpuev, k->ngpuev, sizeof *v) : NULL;
  if (!v) {
    k->corr_full = 1;
    return;
  }
  k->gpuev = v;
  v[k->ngpuev].corr = corr;
  v[k->ngpuev].start = start;
  v[k->ngpuev++].stop = stop;
}

static void deliver(rp_kineto *k, rp_source *s, const rp_sink *sink, const jev *e) {
  k->events++;
  if (strcmp(e->ph, "X") != 0 || !e->has_ts) return;
  /* keep every time within +-2^62 ns so that differences fit in int64 */
  const int64_t lim = (int64_t)1 << 61;
  if (e->ts <= -lim || e->ts >= lim || e->dur < 0 || e->dur >= lim || k->base_ns <= -lim || k->base_ns >= lim)
    return;
  int64_t start = e->ts + k->base_ns, stop = start + (e->has_dur ? e->dur : 0);
  if (!strncmp(e->name, "ProfilerStep#", 13)) {
    if (k->nsteps == k->cap_steps) {
      size_t cap = k->cap_steps ? k->cap_steps * 2 : 64;
      void *p = topo_realloc(k->steps, cap * sizeof *k->steps);
      if (!p) return;
      k->steps = p;
      k->cap_steps = cap;
    }
    k->steps[k->nsteps].start = e->ts;
    k->steps[k->nsteps].stop = e->ts + e->dur;
    k->steps[k->nsteps].value = (uint64_t)strtoull(e->name + 13, NULL, 10);
    k->steps[k->nsteps].gpu = !strcmp(e->cat, "gpu_user_annotation");
    k->gpu_steps |= k->steps[k->nsteps].gpu;
    k->nsteps++;
    return;
  }
  if (sink->kevent) {
    rp_kevent ke = {e->name, e->cat, start, stop - start, e->stream, e->corr, e->bytes,
                    e->bw_gbps == e->bw_gbps ? e->bw_gbps : -1};
    sink->kevent(sink->ctx, s->index, &ke);
  }
  if (sink->step && e->corr >= 0 &&
      (!strcmp(e->cat, "cuda_runtime") || !strcmp(e->cat, "cuda_driver") || !strcmp(e->cat, "Runtime")))
    corr_add_launch(k, e->corr, e->ts);
  int gpu = !strcmp(e->cat, "kernel") || !strcmp(e->cat, "Kernel") ||
            !strcmp(e->cat, "gpu_memcpy") || !strcmp(e->cat, "gpu_memset") ||
            !strcmp(e->cat, "Memcpy") || !strcmp(e->cat, "Memset");
  if (!gpu || stop <= start) return;
  if (e->ts < k->first) k->first = e->ts;
  if (e->ts + e->dur > k->last) k->last = e->ts + e->dur;
  if (sink->step && e->corr >= 0) corr_add_gpu(k, e->corr, e->ts, e->ts + e->dur);
  rp_interval iv = {start, stop, (uint32_t)(e->stream >= 0 ? e->stream : e->tid), RP_COMPUTE,
                    0xff, RP_FROM_KERNEL, 0};
  int func = -1, algo = -1, proto = -1;
  if (!strncmp(e->cat, "gpu_mem", 7) || !strcmp(e->cat, "Memcpy") || !strcmp(e->cat, "Memset") ||
      !strncmp(e->name, "Memcpy", 6) || !strncmp(e->name, "Memset", 6)) {
    iv.cls = RP_MEMORY;
    if (k->counting) s->memory_kernels++;
  } else if (rp_nccl_kernel_parse(e->name, &func, &algo, &proto)) {
    iv.cls = RP_COMM;
    if (func < 0 && e->coll_name[0]) func = coll_from_args(e->coll_name);
    iv.func = func >= 0 ? (uint8_t)func : 0xff;
    if (k->counting) s->nccl_kernels++;
    if (sink->coll && func >= 0 && func != 5) {
      rp_coll c;
      memset(&c, 0, sizeof c);
      c.func = func;
      /* ncclDevKernel_AllReduce_Sum_bf16_RING_LL is a generic entry point that dispatches at run
       * time: the name gives the collective, not the algorithm/protocol actually used. */
      (void)algo;
      (void)proto;
      c.algo = c.proto = -1;
      c.nranks = e->group_size > 0 && e->group_size < (1 << 24) ? (int)e->group_size : 0;
      int64_t nel = func == 3 ? e->out_nelems : e->in_nelems;
      int ds = dtype_size(e->dtype);
      c.bytes = nel > 0 && ds ? (uint64_t)nel * (uint64_t)ds : 0;
      c.gpu_start = c.cpu_start = start;
      c.gpu_stop = c.cpu_stop = stop;
      c.timed = 1;
      c.stream = iv.stream;
      sink->coll(sink->ctx, s->index, &c);
    }
  } else {
    if (k->counting) s->compute_kernels++;
  }
  if (sink->interval) sink->interval(sink->ctx, s->index, &iv);
  if (start > s->frontier) s->frontier = start;
}

static int parse_distributed(rp_kineto *k) {
  if (peek_ws(k) != '{') return skip_value(k);
  k->pos++;
  if (peek_ws(k) == '}') {
    k->pos++;
    return 1;
  }
  for (;;) {
    char key[64];
    if (!parse_string(k, key, sizeof key) || !expect(k, ':')) return 0;
    int64_t v;
    int ok;
    if (!strcmp(key, "rank")) {
      ok = parse_int_value(k, &v);
      if (v >= 0 && v < (1 << 24)) k->rank = (int)v;
    } else if (!strcmp(key, "world_size")) {
      ok = parse_int_value(k, &v);
      if (v > 0 && v < (1 << 24)) k->world = (int)v;
    } else {
      ok = skip_value(k);
    }
    if (!ok) return 0;
    int c = peek_ws(k);
    k->pos++;
    if (c == '}') return 1;
    if (c != ',') {
      k->pos--;
      fail(k, "expected ',' or '}' in distributedInfo");
      return 0;
    }
  }
}

static int cmp_launch(const void *a, const void *b) {
  const corr_launch *x = a, *y = b;
  return (x->corr > y->corr) - (x->corr < y->corr);
}

static int cmp_gpuev(const void *a, const void *b) {
  const corr_gpu *x = a, *y = b;
  return (x->corr > y->corr) - (x->corr < y->corr);
}

static int cmp_kstep(const void *a, const void *b) {
  const kstep *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* GPU-projected steps sorted by (value, file order); reach = the longest 2 x length so far in
 * the run of its value, so the first sane twin of a CPU step is found by two binary searches. */
typedef struct gpu_twin {
  uint64_t value;
  size_t order;
  int64_t start, stop, reach;
} gpu_twin;

static int cmp_twin(const void *a, const void *b) {
  const gpu_twin *x = a, *y = b;
  if (x->value != y->value) return x->value < y->value ? -1 : 1;
  return (x->order > y->order) - (x->order < y->order);
}

/* The first GPU-projected step numbered `value`, in file order, with 2 x its length >= len;
 * NULL when none. */
static const gpu_twin *twin_of(const gpu_twin *t, size_t n, uint64_t value, int64_t len) {
  size_t lo = 0, hi = n;
  while (lo < hi) { /* the value's run starts at lo */
    size_t m = lo + (hi - lo) / 2;
    if (t[m].value < value) lo = m + 1;
    else hi = m;
  }
  hi = n;
  while (lo < hi) { /* ... and its first entry reaching len (reach grows along the run) */
    size_t m = lo + (hi - lo) / 2;
    if (t[m].value == value && t[m].reach < len) lo = m + 1;
    else hi = m;
  }
  return lo < n && t[lo].value == value ? &t[lo] : NULL;
}

/* The steps' GPU windows (docs/metrics.md, Steps): for each CPU ProfilerStep range, the first
 * start to the last stop of the GPU events whose launch lies inside it (correlation ids); when
 * none matched, the GPU-projected range of the same step if it is sane (at least half the CPU
 * range long: Kineto projects only the kernels launched directly under the step, ~60 us of a
 * 20 ms step in PyTorch 2.11), else the CPU range. Files with only GPU-projected ranges use them. */
static void emit_steps(rp_kineto *k, rp_source *s, const rp_sink *sink) {
  size_t ncpu = 0;
  for (size_t i = 0; i < k->nsteps; i++) ncpu += !k->steps[i].gpu;
  if (!ncpu) {
    for (size_t i = 0; i < k->nsteps; i++)
      sink->step(sink->ctx, s->index, k->steps[i].start + k->base_ns, k->steps[i].stop + k->base_ns,
                 k->steps[i].value);
    return;
  }
  size_t ngpu = k->nsteps - ncpu;
  kstep *cpu = topo_malloc(ncpu * sizeof *cpu);
  int64_t *lo = topo_malloc(ncpu * sizeof *lo), *hi = topo_malloc(ncpu * sizeof *hi);
  gpu_twin *twin = topo_malloc((ngpu ? ngpu : 1) * sizeof *twin);
  if (!cpu || !lo || !hi || !twin) {
    topo_free(cpu), topo_free(lo), topo_free(hi), topo_free(twin);
    return;
  }
  for (size_t i = 0, g = 0; i < k->nsteps; i++)
    if (k->steps[i].gpu)
      twin[g] = (gpu_twin){k->steps[i].value, g, k->steps[i].start, k->steps[i].stop, 0}, g++;
  qsort(twin, ngpu, sizeof *twin, cmp_twin);
  for (size_t g = 0; g < ngpu; g++) {
    twin[g].reach = 2 * (twin[g].stop - twin[g].start);
    if (g && twin[g - 1].value == twin[g].value && twin[g - 1].reach > twin[g].reach)
      twin[g].reach = twin[g - 1].reach;
  }
  size_t n = 0;
  for (size_t i = 0; i < k->nsteps; i++)
    if (!k->steps[i].gpu) {
      cpu[n].start = k->steps[i].start;
      cpu[n].stop = k->steps[i].stop;
      cpu[n].value = k->steps[i].value;
      cpu[n++].gpu = 0;
    }
  qsort(cpu, n, sizeof *cpu, cmp_kstep);
  for (size_t i = 0; i < n; i++) lo[i] = INT64_MAX, hi[i] = INT64_MIN;
  if (k->corr_full && !k->quiet)
    TOPO_WARN("%s: more than %u launches or GPU events; steps beyond them use their GPU-projected "
              "or CPU ranges", k->path, CORR_MAX);
  if (k->nlaunch) qsort(k->launch, k->nlaunch, sizeof *k->launch, cmp_launch);
  if (k->ngpuev) qsort(k->gpuev, k->ngpuev, sizeof *k->gpuev, cmp_gpuev);
  for (size_t a = 0, g = 0; a < k->nlaunch && g < k->ngpuev;) {
    if (k->launch[a].corr < k->gpuev[g].corr) {
      a++;
      continue;
    }
    if (k->launch[a].corr > k->gpuev[g].corr) {
      g++;
      continue;
    }
    /* the step whose CPU range holds the launch: last start <= ts */
    int64_t ts = k->launch[a].ts;
    size_t l = 0, r = n;
    while (l < r) {
      size_t m = l + (r - l) / 2;
      if (cpu[m].start <= ts) l = m + 1;
      else r = m;
    }
    if (l > 0 && ts <= cpu[l - 1].stop) {
      const corr_gpu *e = &k->gpuev[g];
      if (e->start < lo[l - 1]) lo[l - 1] = e->start;
      if (e->stop > hi[l - 1]) hi[l - 1] = e->stop;
    }
    g++; /* one launch, possibly several GPU events (a graph): keep `a` */
  }
  for (size_t i = 0; i < n; i++) {
    int64_t a = cpu[i].start, b = cpu[i].stop;
    const gpu_twin *gs;
    if (hi[i] > lo[i]) a = lo[i], b = hi[i];
    else if ((gs = twin_of(twin, ngpu, cpu[i].value, b - a))) a = gs->start, b = gs->stop;
    sink->step(sink->ctx, s->index, a + k->base_ns, b + k->base_ns, cpu[i].value);
  }
  topo_free(cpu), topo_free(lo), topo_free(hi), topo_free(twin);
}

static void finish(rp_kineto *k, rp_source *s, const rp_sink *sink) {
  k->st = ST_DONE;
  s->rank = k->rank;
  s->nranks = k->world;
  s->kineto_base = k->base_ns;
  s->gpu_first = k->first + k->base_ns;
  s->gpu_last = k->last + k->base_ns;
  if (sink->step) emit_steps(k, s, sink);
  topo_free(k->launch), topo_free(k->gpuev);
  k->launch = NULL, k->gpuev = NULL;
  k->nlaunch = k->ngpuev = k->cap_launch = k->cap_gpuev = 0;
}

int rp_kineto_step(rp_kineto *k, rp_source *s, const rp_sink *sink, size_t max_events) {
  size_t n = 0;
  while (k->st != ST_DONE && n < max_events) {
    int c = peek_ws(k);
    if (k->st == ST_START) {
      if (c == '{') k->st = ST_KEY;
      else if (c == '[') k->st = ST_EVENTS, k->top_array = 1;
      else {
        fail(k, "not a JSON object or array");
        break;
      }
      k->pos++;
    } else if (k->st == ST_EVENTS) {
      if (c == ',') {
        k->pos++;
      } else if (c == ']') {
        k->pos++;
        k->st = k->top_array ? ST_DONE : ST_KEY;
      } else if (c == '{') {
        if (!parse_event(k, &k->ev)) break;
        deliver(k, s, sink, &k->ev);
        n++;
      } else {
        if (c < 0 && k->top_array) { /* Chrome viewers accept an unterminated array */
          k->st = ST_DONE;
          break;
        }
        fail(k, c < 0 ? "file ends inside traceEvents" : "expected an event object");
        break;
      }
    } else { /* ST_KEY */
      if (c == '}') {
        k->pos++;
        k->st = ST_DONE;
      } else if (c == ',') {
        k->pos++;
      } else {
        char key[64];
        if (!parse_string(k, key, sizeof key) || !expect(k, ':')) break;
        if (!strcmp(key, "traceEvents")) {
          if (!expect(k, '[')) break;
          k->st = ST_EVENTS;
        } else if (!strcmp(key, "distributedInfo")) {
          if (!parse_distributed(k)) break;
        } else if (!strcmp(key, "baseTimeNanoseconds") && (peek_ws(k) == '-' || isdigit(peek_ws(k)))) {
          char num[64];
          if (!number_text(k, num, sizeof num)) break;
          if (!k->base_fixed) {
            int64_t b = text_to_i64(num);
            k->base_ns = b > -((int64_t)1 << 61) && b < ((int64_t)1 << 61) ? b : 0;
          }
        } else if (!skip_value(k)) {
          break;
        }
      }
    }
  }
  if (k->st == ST_DONE) {
    finish(k, s, sink);
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
  return k;
}

topo_status rp_kineto_open(const char *path, rp_kineto **out) {
  *out = NULL;
  rp_kineto *k = kineto_new(path);
  if (!k) return TOPO_ERR_NOMEM;
  k->f = fopen(path, "rb");
  k->buf = topo_malloc(IN_BUF);
  if (!k->f || !k->buf) {
    if (!k->f) TOPO_WARN("%s: cannot open: %s", path, strerror(errno));
    rp_kineto_close(k);
    return k->f ? TOPO_ERR_NOMEM : TOPO_ERR_IO;
  }
  *out = k;
  return TOPO_OK;
}

void rp_kineto_close(rp_kineto *k) {
  if (!k) return;
  if (k->f) fclose(k->f);
  if (!k->mem) topo_free(k->buf);
  topo_free(k->steps);
  topo_free(k->launch);
  topo_free(k->gpuev);
  topo_free(k);
}

void rp_kineto_set_quiet(rp_kineto *k, int quiet) { k->quiet = quiet; }

void rp_kineto_set_pass(rp_kineto *k, int pass) { k->counting = pass <= 1; }

void rp_kineto_set_base(rp_kineto *k, int64_t base_ns) {
  k->base_ns = base_ns;
  k->base_fixed = 1;
}

uint64_t rp_kineto_offset(const rp_kineto *k) { return k->off + k->pos; }

uint64_t rp_kineto_parse_memory(const char *data, size_t len, const rp_sink *sink) {
  rp_kineto *k = kineto_new("(memory)");
  if (!k) return 0;
  k->quiet = 1;
  k->mem = data;
  k->buf = (char *)data;
  k->len = len;
  rp_source s;
  memset(&s, 0, sizeof s);
  s.kind = RP_SRC_KINETO;
  while (rp_kineto_step(k, &s, sink, 4096)) {
  }
  uint64_t n = k->events;
  rp_kineto_close(k);
  return n;
}
