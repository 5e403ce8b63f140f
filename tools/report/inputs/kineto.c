// SPDX-License-Identifier: Apache-2.0
// Reader of PyTorch profiler (Kineto) and Chrome trace JSON, plain or gzip: the top-level object is
// walked key by key and `traceEvents` event by event with the scanner of jscan.h (no DOM); each
// event yields the few fields the report needs, the rest is skipped unread. Memory: the scanner's
// buffer (one event at least, 1 MiB usually) and one event; in pass 1, when steps are wanted, two
// tables of CORR_SLOTS calls and GPU events for the step attribution by correlation id (pairs that
// must wait for the end of the file wait in a temporary file), and the distinct strings of the
// record pass 2 replays (kspill); no recursion. Called by input.c (rp_source_step,
// rp_kineto_sniff) and by the fuzz target (rp_kineto_parse_memory).
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "jscan.h"
#include "log.h"
#include "report.h"
#include "report_inputs.h"

#define NAME_MAX_LEN 512
#define SEEN_CATS    4 /* categories of non-GPU events remembered for messages */

enum state { ST_START, ST_KEY, ST_EVENTS, ST_DONE };

/* Event categories the report tells apart (Kineto's names, and the older capitalised ones). */
enum kcat {
  KC_UNKNOWN = 0, /* no "cat" seen yet */
  KC_OTHER,       /* a category the report does not use */
  KC_CPU,         /* cpu_op, python_function, flows, ...: only a ProfilerStep name matters */
  KC_KERNEL,
  KC_MEMCPY,
  KC_MEMSET,
  KC_RUNTIME,       /* cuda_runtime, cuda_driver, Runtime: launches (correlation ids) */
  KC_GPU_ANNOTATION /* gpu_user_annotation: GPU-projected ranges */
};

typedef struct jev {
  js_str name_s, cat_s;       /* slices into the input buffer, valid while the event is delivered */
  int cat;                    /* enum kcat */
  int ph_x;                   /* "ph": "X" */
  int skipped;                /* known to be of no use before its end: not read to the end */
  const char *name_c, *cat_c; /* decoded name / category, NULL until asked for (ev_name, ev_cat) */
  char name[NAME_MAX_LEN];
  char coll_name[64];
  char dtype[32];
  int64_t ts, dur; /* ns */
  int has_ts, has_dur;
  int bad_time;       /* ts or dur is no finite time within +-2^61 ns (or dur < 0): not used */
  uint32_t nonfinite; /* numbers read that are NaN or infinite (their fields stay unknown) */
  js_str tid_s;       /* "tid" (the stream of GPU events without args.stream) */
  int64_t stream;
  int64_t in_nelems, out_nelems, group_size;
  int64_t corr;   /* args.correlation: links a launch (cuda_runtime/driver) to its GPU event */
  int64_t bytes;  /* args.bytes (memcpy/memset) */
  double bw_gbps; /* args."memory bandwidth (GB/s)" */
  char cat_name[32];
  int64_t tid; /* decoded "tid", INT64_MIN until asked for (ev_tid) */
  int64_t pid; /* "pid" when a number (-1 absent): the process of CPU-side events */
} jev;

/* Step attribution (HTA's): a GPU event belongs to the ProfilerStep whose CPU range holds the
 * runtime call that launched it (correlation id). Calls and GPU events meet in two tables of
 * CORR_SLOTS entries indexed by id, whichever comes first waiting for the other (an entry lives
 * until an id CORR_SLOTS later takes its place: kernels trail their calls by far fewer, or come a
 * few thousand events before them in PyTorch 1.x traces). A pair whose call lies in a CPU step
 * already read widens that step's GPU window at once (PyTorch writes a step before the calls in
 * it); any other pair waits in an unlinked temporary file (in memory, at most PAIRS_MAX, when no
 * file can be made) for the end of the file. */
typedef struct kstep {
  int64_t start, stop; /* ts units (no base) */
  uint64_t value;
  int gpu;        /* GPU-projected (gpu_user_annotation) */
  int64_t lo, hi; /* CPU steps: first start / last stop of the GPU work launched inside */
} kstep;
typedef struct corr_launch {
  int64_t corr, ts;
} corr_launch;
typedef struct corr_gpu {
  int64_t corr, start, stop;
} corr_gpu;
typedef struct kpair {
  int64_t ts, start, stop;
} kpair; /* a call's time, its GPU event's span */
#define CORR_SLOTS (1u << 16)
#define PAIRS_BUF  4096
#define PAIRS_MAX \
  (1u << 22) /* pairs held in memory without a temporary file; beyond: one warning */

struct rp_kineto {
  js_in in;
  enum state st;
  int top_array;
  int failed;
  int sniff;    /* stop at the start of traceEvents (rp_json_sniff) */
  int counting; /* count kernels into the source (the first pass only) */
  char path[512];
  int64_t base_ns;
  int64_t first, last; /* GPU events' range, without the base */
  int base_fixed;      /* base given by pass 1: ignore the key */
  int quiet;
  int rank, world;
  uint32_t pid;       /* the process, from its CUDA runtime calls (0 unknown) */
  int io_error;       /* errno of a failed read of the file or of pass 1's record; 0 none */
  int has_events_key; /* the top-level object has "traceEvents" (or the file is an array) */
  int own_export;     /* otherData.tool is "topo-report": topo-report's Chrome export */
  uint64_t events, x_events, cpu_events, gpu_events, huge_skipped;
  uint64_t bad_times, nonfinite; /* pass 1: see jev; distributedInfo and the base count too */
  int bad_base;                  /* baseTimeNanoseconds out of +-2^61 ns: taken as 0 */
  char seen_cat[SEEN_CATS][32];
  uint64_t seen_cat_n[SEEN_CATS];
  /* steps found (emitted with the base at the end) */
  kstep *steps;
  size_t nsteps, cap_steps;
  int gpu_steps; /* GPU-projected ProfilerStep ranges seen */
  /* step attribution (pass 1, when steps are wanted): see kstep */
  corr_launch *ltab; /* CORR_SLOTS calls by id, stored as id + 1 (0: empty) */
  corr_gpu *gtab;    /* CORR_SLOTS GPU events waiting for their call */
  size_t *cpu_order; /* the CPU steps read so far, by start (while they come in that order) */
  size_t ncpu_order, cap_cpu_order;
  int cpu_unordered; /* a CPU step came before an earlier-starting one: every pair waits */
  kpair *pairs;      /* waiting pairs: a write buffer (pairs_fd >= 0) or all of them */
  size_t npairs, cap_pairs;
  int pairs_fd; /* -1: in memory */
  uint64_t pairs_written;
  int pairs_full;    /* PAIRS_MAX reached (in memory) */
  rp_kspill *spill;  /* pass 1: the events pass 2 needs are recorded here (NULL: not) */
  rp_kspill *replay; /* pass 2: the events come from this record, not from the JSON */
  jev ev;
};

static uint64_t where(const rp_kineto *k) { return k->in.off + k->in.pos; }

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
            where(k), prefix, why, k->events);
}

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

static int is_step_name(js_str n) { return n.n > 13 && !memcmp(n.p, "ProfilerStep#", 13); }

/* An integer field's value at *pp (a number, or a string holding one): *out when it is a finite
 * integer in range, else unchanged; a non-finite number is counted in *nonfinite. */
static js_status read_int(const char **pp, const char *end, int64_t *out, uint32_t *nonfinite) {
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
      if ((st = read_int(&p, end, iv, &e->nonfinite)) != JS_OK) return st;
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

static void event_reset(jev *e) {
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
static js_status parse_event(const char **pp, const char *end, jev *e) {
  event_reset(e);
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
      useless = e->cat == KC_CPU && e->name_s.p && !is_step_name(e->name_s);
      read = 1;
    } else if (key.n == 4 && JS_EQ(key, "name") && c == '"') {
      if ((st = js_string(&p, end, &e->name_s)) != JS_OK) return st;
      useless = e->cat == KC_CPU && !is_step_name(e->name_s);
      read = 1;
    } else if (key.n == 2 && key.p[0] == 't' && key.p[1] == 's' && js_is_scalar(c)) {
      if ((st = read_time(&p, end, e, &e->ts, &e->has_ts)) != JS_OK) return st;
      read = 1;
    } else if (key.n == 3 && JS_EQ(key, "dur") && js_is_scalar(c)) {
      if ((st = read_time(&p, end, e, &e->dur, &e->has_dur)) != JS_OK) return st;
      read = 1;
    } else if (key.n == 3 && JS_EQ(key, "pid") && js_is_scalar(c)) {
      if ((st = read_int(&p, end, &e->pid, &e->nonfinite)) != JS_OK) return st;
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

/* Room for one more of n elements in *v (capacity *cap): the block, or NULL (out of memory). */
static void *grow(void *v, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return v;
  size_t c = *cap ? *cap * 2 : 1024;
  void *p = topo_realloc(v, c * elem);
  if (p) *cap = c;
  return p;
}

/* An unlinked temporary file under $TMPDIR (else /tmp): its descriptor, or -1. */
static int temp_fd(void) {
  const char *dir = getenv("TMPDIR");
  char path[4096];
  if (snprintf(path, sizeof path, "%s/topo-report-XXXXXX", dir && *dir ? dir : "/tmp") >=
      (int)sizeof path) /* a TMPDIR too long to hold whole: /tmp, never a cut path */
    snprintf(path, sizeof path, "/tmp/topo-report-XXXXXX");
  int fd = mkstemp(path);
  if (fd >= 0) unlink(path); /* nothing is left behind, whatever happens to the process */
  return fd;
}

/* All of `len` bytes to fd; 0 on a failure. */
static int write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return 0;
    p += w, len -= (size_t)w;
  }
  return 1;
}

static int step_before(const kstep *steps, const size_t *order, size_t n, int64_t ts, size_t *at);

/* A call at `ts` launched GPU work over [start, stop): into the CPU step read so far that holds
 * ts, else to wait for the end of the file. */
static void pair_add(rp_kineto *k, int64_t ts, int64_t start, int64_t stop) {
  size_t at;
  if (!k->cpu_unordered && step_before(k->steps, k->cpu_order, k->ncpu_order, ts, &at)) {
    kstep *st = &k->steps[k->cpu_order[at]];
    if (ts <= st->stop) {
      if (start < st->lo) st->lo = start;
      if (stop > st->hi) st->hi = stop;
      return;
    }
  }
  if (k->pairs_fd < 0 && !k->pairs_written && !k->npairs) k->pairs_fd = temp_fd();
  size_t cap = k->pairs_fd >= 0 ? PAIRS_BUF : PAIRS_MAX;
  if (k->npairs == cap && k->pairs_fd >= 0) {
    if (write_all(k->pairs_fd, k->pairs, k->npairs * sizeof *k->pairs)) {
      k->pairs_written += k->npairs;
      k->npairs = 0;
    } else { /* the file failed: what it holds is lost, the rest stays in memory */
      close(k->pairs_fd);
      k->pairs_fd = -1;
      k->pairs_written = 0;
      k->pairs_full = 1;
      cap = PAIRS_MAX;
    }
  }
  if (k->npairs >= cap) {
    k->pairs_full = 1;
    return;
  }
  kpair *v = grow(k->pairs, &k->cap_pairs, k->npairs, sizeof *v);
  if (!v) {
    k->pairs_full = 1;
    return;
  }
  k->pairs = v;
  v[k->npairs++] = (kpair){ts, start, stop};
}

static int corr_tables(rp_kineto *k) {
  if (k->ltab) return 1;
  k->ltab = topo_calloc(CORR_SLOTS, sizeof *k->ltab); /* zero pages: untouched until used */
  k->gtab = topo_calloc(CORR_SLOTS, sizeof *k->gtab);
  if (!k->ltab || !k->gtab) {
    topo_free(k->ltab), topo_free(k->gtab);
    k->ltab = NULL, k->gtab = NULL;
    return 0;
  }
  return 1;
}

/* A runtime or driver call with a correlation id: its GPU event may be waiting already. */
static void corr_call(rp_kineto *k, int64_t corr, int64_t ts) {
  if (!corr_tables(k)) return;
  size_t slot = (size_t)corr & (CORR_SLOTS - 1);
  corr_gpu *g = &k->gtab[slot];
  if (g->corr == corr + 1) {
    pair_add(k, ts, g->start, g->stop);
    g->corr = 0;
  }
  k->ltab[slot].corr = corr + 1;
  k->ltab[slot].ts = ts;
}

/* A GPU event with a correlation id: its call, or it waits for it. */
static void corr_gpu_event(rp_kineto *k, int64_t corr, int64_t start, int64_t stop) {
  if (!corr_tables(k)) return;
  size_t slot = (size_t)corr & (CORR_SLOTS - 1);
  if (k->ltab[slot].corr == corr + 1) {
    pair_add(k, k->ltab[slot].ts, start, stop); /* one call, possibly several GPU events (graphs) */
    return;
  }
  k->gtab[slot].corr = corr + 1;
  k->gtab[slot].start = start;
  k->gtab[slot].stop = stop;
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

static rp_kineto *kineto_new(const char *name);

static const char *ev_name(jev *e) {
  if (!e->name_c) {
    js_unescape(e->name_s, e->name, sizeof e->name);
    e->name_c = e->name;
  }
  return e->name_c;
}

static const char *ev_cat(jev *e) {
  if (!e->cat_c) {
    js_unescape(e->cat_s, e->cat_name, sizeof e->cat_name);
    e->cat_c = e->cat_name;
  }
  return e->cat_c;
}

static int64_t ev_tid(jev *e) { /* a GPU event's stream when its args lack one */
  if (e->tid == INT64_MIN) {
    e->tid = -1;
    if (e->tid_s.p && js_str_int(e->tid_s, &e->tid) != JS_VAL_OK) e->tid = -1;
  }
  return e->tid;
}

static void act(rp_kineto *k, rp_source *s, const rp_sink *sink, jev *e, int64_t start,
                int64_t stop);
static void spill_put(rp_kineto *k, jev *e);
static void spill_finish(rp_kspill *sp);

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
  if (is_step_name(e->name_s)) {
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
      size_t *o = grow(k->cpu_order, &k->cap_cpu_order, k->ncpu_order, sizeof *o);
      if (o) k->cpu_order = o;
      if (!o || (k->ncpu_order && e->ts < k->steps[k->cpu_order[k->ncpu_order - 1]].start))
        k->cpu_unordered = 1;
      else k->cpu_order[k->ncpu_order++] = k->nsteps;
    }
    k->nsteps++;
    return;
  }
  if (k->spill) spill_put(k, e);
  act(k, s, sink, e, start, stop);
}

/* What an event that is not a ProfilerStep gives the sinks: pass 1 and pass 2 alike, the replay of
 * pass 1's record (spill) too, so that both passes see the same events the same way. */
static void act(rp_kineto *k, rp_source *s, const rp_sink *sink, jev *e, int64_t start,
                int64_t stop) {
  int gpu = e->cat == KC_KERNEL || e->cat == KC_MEMCPY || e->cat == KC_MEMSET;
  if (sink->kevent) { /* runtime and driver calls, GPU activities, and what the report does not know */
    rp_kevent ke = {ev_name(e), ev_cat(e), start,    stop - start,
                    e->stream,  e->corr,   e->bytes, e->bw_gbps == e->bw_gbps ? e->bw_gbps : -1};
    sink->kevent(sink->ctx, s->index, &ke);
  }
  if (e->cat == KC_RUNTIME && sink->step && e->corr >= 0) corr_call(k, e->corr, e->ts);
  if (!gpu) {
    if (e->cat == KC_OTHER && k->counting) note_category(k, e);
    return;
  }
  if (stop <= start) return;
  k->gpu_events++;
  const char *name = ev_name(e);
  if (e->ts < k->first) k->first = e->ts;
  if (e->ts + e->dur > k->last) k->last = e->ts + e->dur;
  if (sink->step && e->corr >= 0) corr_gpu_event(k, e->corr, e->ts, e->ts + e->dur);
  rp_interval iv = {start,      stop, (uint32_t)(e->stream >= 0 ? e->stream : ev_tid(e)),
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
      if ((st = read_int(&p, end, &x, &nonfinite)) != JS_OK) return st;
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

/* The last of the n steps (indices in `order`, by start) with start <= ts: 1 and *at, or 0. */
static int step_before(const kstep *steps, const size_t *order, size_t n, int64_t ts, size_t *at) {
  size_t l = 0, r = n;
  while (l < r) {
    size_t m = l + (r - l) / 2;
    if (steps[order[m]].start <= ts) l = m + 1;
    else r = m;
  }
  if (!l) return 0;
  *at = l - 1;
  return 1;
}

/* Widen the GPU windows [lo, hi) of the n CPU steps by the pairs whose call lies in them. */
static void pairs_into_steps(const kpair *p, size_t np, const kstep *cpu, const size_t *order,
                             size_t n, int64_t *lo, int64_t *hi) {
  for (size_t i = 0; i < np; i++) {
    size_t at;
    if (step_before(cpu, order, n, p[i].ts, &at) && p[i].ts <= cpu[at].stop) {
      if (p[i].start < lo[at]) lo[at] = p[i].start;
      if (p[i].stop > hi[at]) hi[at] = p[i].stop;
    }
  }
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
  size_t *order = topo_malloc(ncpu * sizeof *order);
  int64_t *lo = topo_malloc(ncpu * sizeof *lo), *hi = topo_malloc(ncpu * sizeof *hi);
  gpu_twin *twin = topo_malloc((ngpu ? ngpu : 1) * sizeof *twin);
  if (!cpu || !order || !lo || !hi || !twin) {
    topo_free(cpu), topo_free(order), topo_free(lo), topo_free(hi), topo_free(twin);
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
    if (!k->steps[i].gpu) cpu[n++] = k->steps[i];
  qsort(cpu, n, sizeof *cpu, cmp_kstep);
  for (size_t i = 0; i < n; i++) lo[i] = cpu[i].lo, hi[i] = cpu[i].hi, order[i] = i;
  /* the pairs that waited, from the file and then from memory: each into the step whose CPU range
   * holds its call */
  if (k->pairs_fd >= 0 && k->pairs_written && lseek(k->pairs_fd, 0, SEEK_SET) == 0) {
    kpair *chunk = topo_malloc(PAIRS_BUF * sizeof *chunk);
    uint64_t left = chunk ? k->pairs_written : 0;
    while (left) {
      size_t want = left < PAIRS_BUF ? (size_t)left : PAIRS_BUF;
      ssize_t r = read(k->pairs_fd, chunk, want * sizeof *chunk);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0 || (size_t)r % sizeof *chunk) break;
      pairs_into_steps(chunk, (size_t)r / sizeof *chunk, cpu, order, n, lo, hi);
      left -= (size_t)r / sizeof *chunk;
    }
    if (left) k->pairs_full = 1;
    topo_free(chunk);
  }
  pairs_into_steps(k->pairs, k->npairs, cpu, order, n, lo, hi);
  if (k->pairs_full && !k->quiet)
    TOPO_WARN(
        "%s: not every launch could be matched with its GPU events (no room for them); steps "
        "without a match use their GPU-projected or CPU ranges",
        k->path);
  for (size_t i = 0; i < n; i++) {
    int64_t a = cpu[i].start, b = cpu[i].stop;
    const gpu_twin *gs;
    if (hi[i] > lo[i]) a = lo[i], b = hi[i];
    else if ((gs = twin_of(twin, ngpu, cpu[i].value, b - a))) a = gs->start, b = gs->stop;
    sink->step(sink->ctx, s->index, a + k->base_ns, b + k->base_ns, cpu[i].value);
  }
  topo_free(cpu), topo_free(order), topo_free(lo), topo_free(hi), topo_free(twin);
}

/* The step attribution's tables and waiting pairs. */
static void corr_free(rp_kineto *k) {
  topo_free(k->ltab), topo_free(k->gtab), topo_free(k->pairs), topo_free(k->cpu_order);
  k->ltab = NULL, k->gtab = NULL, k->pairs = NULL, k->cpu_order = NULL;
  k->npairs = k->cap_pairs = k->ncpu_order = k->cap_cpu_order = 0;
  if (k->pairs_fd >= 0) close(k->pairs_fd);
  k->pairs_fd = -1;
  k->pairs_written = 0;
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
  if (k->spill) spill_finish(k->spill);
  s->rank = k->rank;
  s->nranks = k->world;
  s->kineto_base = k->base_ns;
  s->gpu_first = k->first + k->base_ns;
  s->gpu_last = k->last + k->base_ns;
  if (sink->step) emit_steps(k, s, sink);
  corr_free(k);
}

/* ---- the record of pass 1 for pass 2 (rp_kspill): every event deliver hands to act(), as a
 * fixed-size record, written in batches to one unlinked temporary file that every record shares
 * (one descriptor however many JSON inputs there are: a record read back holds none of its own),
 * their strings interned once in memory in one table that the records share too (kernel names
 * repeat across ranks). Replaying it gives pass 2 the same events without parsing the JSON again.
 * Memory: the distinct strings, capped; per record its batches' offsets, a write buffer while
 * pass 1 writes it and a small read buffer while pass 2 reads it. Anything that fails (no
 * temporary file, a write error, too many distinct strings) leaves that record unusable and
 * pass 2 reads its JSON again. */

#define SPILL_BUF              8192 /* records per write batch */
#define SPILL_READ             256  /* records per read */
#define SPILL_MAX_STRINGS      (1u << 20)
#define SPILL_MAX_STRING_BYTES (64u << 20)

typedef struct krec {
  int64_t ts, dur, stream, tid, corr, bytes, in_nelems, out_nelems, group_size;
  double bw;
  uint32_t name, cat_name, coll_name, dtype; /* string ids; 0 = "" */
  int32_t cat, has_dur;
} krec;

/* What the records share while any is alive: the file and the strings. */
static struct spill_shared {
  int fd;
  int users;    /* records alive */
  uint64_t end; /* bytes written to the file */
  char **str;   /* id -> string; str[0] = "" */
  size_t nstr, cap_str, str_bytes;
  uint32_t *slot; /* open addressing: id + 1, 0 empty */
  size_t cap_slot;
} spill_file = {.fd = -1};

struct rp_kspill {
  int failed;   /* unusable: pass 2 reads the JSON again */
  int complete; /* pass 1 reached the end */
  int io_error; /* errno of a failed read back (0: none) */
  uint64_t written, read;
  uint64_t *batch; /* file offset of each batch of SPILL_BUF records */
  size_t nbatch, cap_batch;
  krec *buf; /* pass 1: the batch being filled (SPILL_BUF); pass 2: SPILL_READ records read */
  size_t nbuf, pos;
};

static void shared_release(void) {
  if (--spill_file.users > 0) return;
  if (spill_file.fd >= 0) close(spill_file.fd);
  for (size_t i = 0; i < spill_file.nstr; i++) topo_free(spill_file.str[i]);
  topo_free(spill_file.str), topo_free(spill_file.slot);
  memset(&spill_file, 0, sizeof spill_file);
  spill_file.fd = -1;
}

/* The shared file and string table, made by the first record alive. 0 when they cannot be. */
static int shared_acquire(void) {
  if (spill_file.users++ > 0) return 1;
  spill_file.fd = temp_fd();
  spill_file.str = topo_malloc(64 * sizeof *spill_file.str);
  spill_file.slot = topo_calloc(128, sizeof *spill_file.slot);
  if (spill_file.fd < 0 || !spill_file.str || !spill_file.slot ||
      !(spill_file.str[0] = topo_strdup(""))) {
    shared_release();
    return 0;
  }
  spill_file.nstr = 1, spill_file.cap_str = 64, spill_file.cap_slot = 128;
  return 1;
}

rp_kspill *rp_kspill_new(void) {
  rp_kspill *sp = topo_calloc(1, sizeof *sp);
  if (!sp) return NULL;
  if (!shared_acquire()) {
    topo_free(sp);
    return NULL;
  }
  if (!(sp->buf = topo_malloc(SPILL_BUF * sizeof *sp->buf))) {
    rp_kspill_free(sp);
    return NULL;
  }
  return sp;
}

void rp_kspill_free(rp_kspill *sp) {
  if (!sp) return;
  topo_free(sp->buf), topo_free(sp->batch), topo_free(sp);
  shared_release();
}

int rp_kspill_ready(const rp_kspill *sp) { return sp && sp->complete && !sp->failed; }

static uint64_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The id of `s` in the shared table, added when new; 0 for "" and on failure (then the record
 * is unusable). */
static uint32_t spill_str(rp_kspill *sp, const char *s) {
  struct spill_shared *t = &spill_file;
  if (!*s) return 0;
  size_t j = str_hash(s) & (t->cap_slot - 1);
  for (; t->slot[j]; j = (j + 1) & (t->cap_slot - 1))
    if (!strcmp(t->str[t->slot[j] - 1], s)) return t->slot[j] - 1;
  size_t len = strlen(s);
  if (t->nstr >= SPILL_MAX_STRINGS || t->str_bytes + len > SPILL_MAX_STRING_BYTES) {
    sp->failed = 1;
    return 0;
  }
  if (t->nstr == t->cap_str) {
    char **v = topo_realloc(t->str, 2 * t->cap_str * sizeof *v);
    if (!v) return sp->failed = 1, 0;
    t->str = v, t->cap_str *= 2;
  }
  char *copy = topo_strdup(s);
  if (!copy) return sp->failed = 1, 0;
  uint32_t id = (uint32_t)t->nstr;
  t->str[t->nstr++] = copy;
  t->str_bytes += len;
  t->slot[j] = id + 1;
  if (2 * t->nstr > t->cap_slot) { /* rehash at half full */
    size_t cap = 2 * t->cap_slot;
    uint32_t *slot = topo_calloc(cap, sizeof *slot);
    if (!slot) return sp->failed = 1, 0;
    for (size_t i = 1; i < t->nstr; i++) {
      size_t k = str_hash(t->str[i]) & (cap - 1);
      while (slot[k]) k = (k + 1) & (cap - 1);
      slot[k] = (uint32_t)i + 1;
    }
    topo_free(t->slot);
    t->slot = slot, t->cap_slot = cap;
  }
  return id;
}

/* The batch filled so far, at the end of the shared file; 0 when the record became unusable. */
static int spill_flush(rp_kspill *sp) {
  if (sp->failed || !sp->nbuf) return !sp->failed;
  if (sp->nbatch == sp->cap_batch) { /* most records are a batch or two */
    size_t cap = sp->cap_batch ? 2 * sp->cap_batch : 4;
    uint64_t *b = topo_realloc(sp->batch, cap * sizeof *b);
    if (!b) return !(sp->failed = 1);
    sp->batch = b, sp->cap_batch = cap;
  }
  const char *p = (const char *)sp->buf;
  size_t left = sp->nbuf * sizeof *sp->buf;
  uint64_t at = spill_file.end;
  while (left) {
    ssize_t w = pwrite(spill_file.fd, p, left, (off_t)at);
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      return !(sp->failed = 1); /* a full disk, say: pass 2 reads the JSON again */
    }
    p += w, left -= (size_t)w, at += (uint64_t)w;
  }
  sp->batch[sp->nbatch++] = spill_file.end;
  spill_file.end = at;
  sp->written += sp->nbuf;
  sp->nbuf = 0;
  return 1;
}

/* The end of pass 1: the record is whole (unless a write failed); its write buffer goes. */
static void spill_finish(rp_kspill *sp) {
  if (spill_flush(sp)) sp->complete = 1;
  topo_free(sp->buf);
  sp->buf = NULL;
}

static void spill_put(rp_kineto *k, jev *e) {
  rp_kspill *sp = k->spill;
  if (sp->failed || !sp->buf) return;
  krec *r = &sp->buf[sp->nbuf];
  r->ts = e->ts, r->dur = e->dur, r->has_dur = e->has_dur, r->cat = e->cat;
  r->stream = e->stream, r->corr = e->corr, r->bytes = e->bytes, r->bw = e->bw_gbps;
  r->tid = e->stream >= 0 ? -1 : ev_tid(e);
  r->in_nelems = e->in_nelems, r->out_nelems = e->out_nelems, r->group_size = e->group_size;
  r->name = spill_str(sp, ev_name(e));
  r->cat_name = spill_str(sp, ev_cat(e));
  r->coll_name = spill_str(sp, e->coll_name);
  r->dtype = spill_str(sp, e->dtype);
  if (++sp->nbuf == SPILL_BUF) spill_flush(sp);
}

/* The next records of the record from the shared file into sp->buf (at most SPILL_READ, within
 * one batch). 0 at its end; 0 with sp->io_error set when the read fails. */
static int spill_read(rp_kspill *sp) {
  if (sp->read == sp->written) return 0;
  uint64_t in_batch = sp->read % SPILL_BUF, batch = sp->read / SPILL_BUF;
  uint64_t want = sp->written - sp->read;
  if (want > SPILL_BUF - in_batch) want = SPILL_BUF - in_batch;
  if (want > SPILL_READ) want = SPILL_READ;
  size_t len = (size_t)want * sizeof *sp->buf, got = 0;
  uint64_t at = sp->batch[batch] + in_batch * sizeof *sp->buf;
  while (got < len) {
    ssize_t r = pread(spill_file.fd, (char *)sp->buf + got, len - got, (off_t)(at + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      sp->io_error = r < 0 && errno ? errno : EIO;
      return 0;
    }
    got += (size_t)r;
  }
  sp->nbuf = (size_t)want, sp->pos = 0, sp->read += want;
  return 1;
}

/* Pass 2 from the record: up to max events through act(). 0 when all are delivered, or when
 * the record cannot be read back (k->io_error: the events after it are missing). */
static int replay_step(rp_kineto *k, rp_source *s, const rp_sink *sink, size_t max) {
  rp_kspill *sp = k->replay;
  struct spill_shared *t = &spill_file;
  jev *e = &k->ev;
  for (size_t n = 0; n < max; n++) {
    if (sp->pos == sp->nbuf && !spill_read(sp)) {
      if (sp->io_error) {
        k->io_error = sp->io_error;
        if (!k->quiet)
          TOPO_WARN("%s: cannot read back the first pass's record (%s); later events are missing",
                    k->path, strerror(sp->io_error));
      }
      return 0;
    }
    const krec *r = &sp->buf[sp->pos++];
    event_reset(e);
    e->ph_x = 1, e->has_ts = 1;
    e->ts = r->ts, e->dur = r->dur, e->has_dur = r->has_dur, e->cat = r->cat;
    e->stream = r->stream, e->tid = r->tid, e->corr = r->corr, e->bytes = r->bytes,
    e->bw_gbps = r->bw;
    e->in_nelems = r->in_nelems, e->out_nelems = r->out_nelems, e->group_size = r->group_size;
    e->name_c = t->str[r->name < t->nstr ? r->name : 0];
    e->cat_c = t->str[r->cat_name < t->nstr ? r->cat_name : 0];
    snprintf(e->coll_name, sizeof e->coll_name, "%s",
             t->str[r->coll_name < t->nstr ? r->coll_name : 0]);
    snprintf(e->dtype, sizeof e->dtype, "%s", t->str[r->dtype < t->nstr ? r->dtype : 0]);
    int64_t start = e->ts + k->base_ns, stop = start + (e->has_dur ? e->dur : 0);
    k->events++;
    act(k, s, sink, e, start, stop);
  }
  return 1;
}

void rp_kineto_record(rp_kineto *k, rp_kspill *sp) { k->spill = sp; }

topo_status rp_kineto_open_replay(const char *path, rp_kspill *sp, rp_kineto **out) {
  *out = NULL;
  if (!rp_kspill_ready(sp)) return TOPO_ERR_IO;
  if (!sp->buf && !(sp->buf = topo_malloc(SPILL_READ * sizeof *sp->buf))) return TOPO_ERR_NOMEM;
  rp_kineto *k = kineto_new(path);
  if (!k) return TOPO_ERR_NOMEM;
  k->replay = sp;
  k->counting = 0;
  sp->read = 0, sp->nbuf = sp->pos = 0, sp->io_error = 0;
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
  *st = parse_event(&p, end, &k->ev);
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
                in->max_cap >> 20, where(k));
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
  if (k->replay) return replay_step(k, s, sink, max_events);
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
  corr_free(k);
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
