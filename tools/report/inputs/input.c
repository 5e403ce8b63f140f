// SPDX-License-Identifier: Apache-2.0
// topo-report's inputs: expands directories into files, tells binary traces from JSON by their
// first bytes (through gzip), skips JSON that is no trace (topo-report's own export, other JSON)
// with one line each, groups a TensorBoard log directory's PyTorch traces into runs and keeps one
// (rp_inputs_collect), and turns each file into a stream of aligned collectives, GPU intervals and
// steps (rp_source_step). Binary traces go through common/trace_reader.h; JSON (plain or gzip) through
// kineto.c.
#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "alloc.h"
#include "log.h"
#include "report.h"
#include "report_inputs.h"
#include "trace_reader.h"

/* Aligned times are kept within +-2^62 ns (146 years) so that every difference fits in int64;
 * a value outside (garbage in a record or header) makes the time invalid. */
#define TIME_LIMIT ((int64_t)1 << 62)

int rp_path_is_json(const char *path) {
  /* Non-blocking and regular files only: a FIFO given as an input must not hang the report (it is
   * then refused as no trace). */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0) return 0;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return 0;
  }
  /* gzip: JSON (topo's own traces are never compressed; a damaged one is still its JSON, which
   * its reader then reports as corrupt); plain: JSON when it opens with '{' or '[' */
  unsigned char head[256];
  ssize_t n = read(fd, head, sizeof head);
  close(fd);
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) return 1;
  for (ssize_t i = 0; i < n; i++) {
    unsigned char c = head[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == 0xef || c == 0xbb || c == 0xbf)
      continue;
    return c == '{' || c == '[';
  }
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push_path(char ***v, int *n, int *cap, const char *p) {
  if (*n == *cap) {
    int c = *cap ? *cap * 2 : 16;
    char **nv = topo_realloc(*v, (size_t)c * sizeof *nv);
    if (!nv) return 0;
    *v = nv;
    *cap = c;
  }
  if (!((*v)[*n] = topo_strdup(p))) return 0;
  (*n)++;
  return 1;
}

static int wanted_in_dir(const char *name) {
  size_t n = strlen(name);
  if (name[0] == '.') return 0;
  static const char *ext[] = {".trace", ".topo", ".bin", ".json", ".json.gz"};
  for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
    size_t e = strlen(ext[i]);
    if (n > e && !strcmp(name + n - e, ext[i])) return 1;
  }
  return 0;
}

topo_status rp_paths_expand(const char *const *paths, int npaths, char ***out, int *nout) {
  char **v = NULL;
  int n = 0, cap = 0;
  *out = NULL;
  *nout = 0;
  for (int i = 0; i < npaths; i++) {
    struct stat st;
    if (stat(paths[i], &st) != 0) {
      TOPO_WARN("%s: no such file or directory", paths[i]);
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (!push_path(&v, &n, &cap, paths[i])) goto nomem;
      continue;
    }
    DIR *d = opendir(paths[i]);
    if (!d) {
      TOPO_WARN("%s: cannot read directory", paths[i]);
      continue;
    }
    int first = n;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!wanted_in_dir(e->d_name)) continue;
      char full[4096];
      if (snprintf(full, sizeof full, "%s/%s", paths[i], e->d_name) >= (int)sizeof full) {
        TOPO_WARN("%s/%s: path longer than %zu bytes; skipped", paths[i], e->d_name,
                  sizeof full - 1); /* never a cut path: it would name another file */
        continue;
      }
      struct stat fst;
      if (stat(full, &fst) != 0 || !S_ISREG(fst.st_mode)) continue;
      if (!push_path(&v, &n, &cap, full)) {
        closedir(d);
        goto nomem;
      }
    }
    closedir(d);
    if (n == first)
      TOPO_WARN("%s: no trace in this directory (*.trace, *.topo, *.bin, *.json, *.json.gz)",
                paths[i]);
    if (n > first)
      qsort(v + first, (size_t)(n - first), sizeof *v, cmp_str); /* v NULL when empty */
  }
  *out = v;
  *nout = n;
  return TOPO_OK;
nomem:
  rp_paths_free(v, n);
  return TOPO_ERR_NOMEM;
}

void rp_paths_free(char **paths, int n) {
  for (int i = 0; i < n; i++) topo_free(paths[i]);
  topo_free(paths);
}

/* ---- inputs as PyTorch leaves them: JSON files classified, TensorBoard runs grouped */

#define RUN_GAP_NS \
  (60LL * 1000000000LL) /* files of one run are written within this of each other */

typedef struct cand {
  char *path;
  int json;
  int dir;          /* index of the directory argument it came from; -1: named itself */
  int64_t t;        /* its time: the name's timestamp (tensorboard_trace_handler), else mtime */
  char worker[128]; /* the name's <worker> part, or the whole name */
  int rank;         /* distributedInfo.rank, -1 unknown */
  int run;          /* 1-based run within its directory, 0 none */
} cand;

/* tensorboard_trace_handler names its files <worker>.<time>.pt.trace.json[.gz], <time> in ns
 * (PyTorch >= 2.1; ms before). 1 and the time in ns when `name` is one of them. */
static int tb_name(const char *name, char *worker, size_t cap, int64_t *t) {
  char b[512];
  snprintf(b, sizeof b, "%s", name);
  size_t n = strlen(b);
  if (n > 3 && !strcmp(b + n - 3, ".gz")) b[n -= 3] = 0;
  static const char suffix[] = ".pt.trace.json";
  if (n <= sizeof suffix - 1 || strcmp(b + n - (sizeof suffix - 1), suffix)) return 0;
  b[n -= sizeof suffix - 1] = 0;
  char *dot = strrchr(b, '.');
  if (!dot || dot == b || !dot[1]) return 0;
  size_t digits = strspn(dot + 1, "0123456789");
  if (digits != strlen(dot + 1)) return 0;
  int64_t unit = digits == 19   ? 1
                 : digits == 16 ? 1000
                 : digits == 13 ? 1000000      /* ns us ms */
                 : digits == 10 ? 1000000000LL /* s */
                                : 0;
  if (!unit) return 0;
  int64_t v = 0; /* a time beyond int64 ns is no time: the caller takes the file's mtime */
  for (const char *p = dot + 1; *p; p++)
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v)) return 0;
  if (__builtin_mul_overflow(v, unit, t)) return 0;
  *dot = 0;
  snprintf(worker, cap, "%s", b);
  return 1;
}

static int cmp_cand_time(const void *a, const void *b) {
  const cand *x = *(cand *const *)a, *y = *(cand *const *)b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return strcmp(x->path, y->path);
}

static uint64_t worker_hash(const cand *c) {
  uint64_t h = 1469598103934665603ull;
  for (const char *s = c->worker; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h ^ h >> 29;
}

static uint64_t rank_hash(const cand *c) {
  uint64_t h = (uint64_t)(uint32_t)c->rank * 0x9e3779b97f4a7c15ull;
  return h ^ h >> 29;
}

/* Files of a directory found by worker name or by rank: open addressing over `cap` slots (a power
 * of two, at least twice the files); an entry counts only for the run it was put in. */
typedef struct run_index {
  cand **slot;
  size_t cap;
  int by_rank;
} run_index;

static int same_key(const run_index *x, const cand *a, const cand *b) {
  return x->by_rank ? a->rank == b->rank : !strcmp(a->worker, b->worker);
}

/* 1 when a file of run `run` has c's key. */
static int run_has(const run_index *x, const cand *c, int run) {
  size_t j = (x->by_rank ? rank_hash(c) : worker_hash(c)) & (x->cap - 1);
  for (; x->slot[j]; j = (j + 1) & (x->cap - 1))
    if (x->slot[j]->run == run && same_key(x, x->slot[j], c)) return 1;
  return 0;
}

static void run_put(run_index *x, cand *c) {
  size_t j = (x->by_rank ? rank_hash(c) : worker_hash(c)) & (x->cap - 1);
  while (x->slot[j]) j = (j + 1) & (x->cap - 1);
  x->slot[j] = c;
}

/* Group the JSON traces of directory `dir` into runs: in time order, a file starts a new run when
 * its worker or its rank is already in the current one, or it comes more than RUN_GAP_NS after
 * the current run's last file. Returns the number of runs (-1 out of memory); sets each file's
 * run. Linear in the files (the current run's workers and ranks are found through run_index). */
static int group_runs(cand *c, int n, int dir, int64_t *first_ns, int cap_first) {
  size_t cap = 64;
  while (cap < 2 * (size_t)n) cap *= 2;
  cand **v = topo_malloc((size_t)(n ? n : 1) * sizeof *v);
  run_index by_worker = {topo_calloc(cap, sizeof(cand *)), cap, 0};
  run_index by_rank = {topo_calloc(cap, sizeof(cand *)), cap, 1};
  int runs = -1;
  if (!v || !by_worker.slot || !by_rank.slot) goto out;
  int m = 0;
  for (int i = 0; i < n; i++)
    if (c[i].path && c[i].dir == dir && c[i].json) v[m++] = &c[i];
  qsort(v, (size_t)m, sizeof *v, cmp_cand_time);
  runs = 0;
  for (int i = 0; i < m; i++) {
    int fresh = i == 0 || v[i]->t > rp_add_sat(v[i - 1]->t, RUN_GAP_NS) ||
                run_has(&by_worker, v[i], runs) ||
                (v[i]->rank >= 0 && run_has(&by_rank, v[i], runs));
    if (fresh) {
      if (runs < cap_first) first_ns[runs] = v[i]->t;
      runs++;
    }
    v[i]->run = runs;
    run_put(&by_worker, v[i]);
    if (v[i]->rank >= 0) run_put(&by_rank, v[i]);
  }
out:
  topo_free(v), topo_free(by_worker.slot), topo_free(by_rank.slot);
  return runs;
}

/* Every argument expanded into candidate files (a directory into the files it holds), appended
 * to *c (*n of them); each remembers the argument it came from when that is a directory. */
static topo_status expand_args(const char *const *paths, int npaths, cand **cp, int *np) {
  cand *c = *cp;
  int n = *np;
  topo_status st = TOPO_OK;
  for (int i = 0; i < npaths && st == TOPO_OK; i++) {
    char **files = NULL;
    int nf = 0;
    if ((st = rp_paths_expand(&paths[i], 1, &files, &nf)) != TOPO_OK) break;
    cand *v = nf ? topo_realloc(c, (size_t)(n + nf) * sizeof *c) : c;
    if (nf && !v) {
      rp_paths_free(files, nf);
      st = TOPO_ERR_NOMEM;
      break;
    }
    c = v;
    struct stat sb;
    int is_dir = stat(paths[i], &sb) == 0 && S_ISDIR(sb.st_mode);
    for (int k = 0; k < nf; k++) {
      cand *e = &c[n++];
      memset(e, 0, sizeof *e);
      e->path = files[k];
      e->dir = is_dir ? i : -1;
      e->rank = -1;
    }
    topo_free(files);
  }
  *cp = c;
  *np = n;
  return st;
}

/* What candidate e is: JSON or binary, its rank and worker name and time (for the runs); JSON
 * that is no trace is skipped with one line (its path freed). 1 when kept. */
static int classify(cand *e, int quiet) {
  e->json = rp_path_is_json(e->path);
  const char *base = strrchr(e->path, '/') ? strrchr(e->path, '/') + 1 : e->path;
  if (e->json) {
    rp_kineto_info info;
    if (rp_kineto_sniff(e->path, &info) != TOPO_OK) {
      e->json = -1; /* unreadable: its open fails with its own message later */
    } else if (info.own_export) {
      if (!quiet)
        TOPO_WARN("%s: topo-report's own Chrome export (export --chrome), not a trace; skipped",
                  e->path);
      topo_free(e->path), e->path = NULL;
      return 0;
    } else if (info.sniff_complete && !info.has_events_key) {
      if (!quiet) TOPO_WARN("%s: JSON without traceEvents: not a trace; skipped", e->path);
      topo_free(e->path), e->path = NULL;
      return 0;
    }
    e->rank = info.rank;
    if (e->json < 0) e->json = 1;
  }
  struct stat sb;
  if (!tb_name(base, e->worker, sizeof e->worker, &e->t)) {
    snprintf(e->worker, sizeof e->worker, "%s", base);
    e->t = 0; /* an mtime beyond int64 ns (past 2262) saturates */
    if (stat(e->path, &sb) == 0 &&
        (__builtin_mul_overflow((int64_t)sb.st_mtim.tv_sec, 1000000000LL, &e->t) ||
         __builtin_add_overflow(e->t, (int64_t)sb.st_mtim.tv_nsec, &e->t)))
      e->t = sb.st_mtim.tv_sec < 0 ? INT64_MIN : INT64_MAX;
  }
  return 1;
}

/* The runs of the PyTorch traces of directory argument d (path): the latest, the one asked for
 * (--run N) or all (--all-runs) kept, the others' paths freed (*kept counts down); a note of
 * what was read goes to r->runs. */
static topo_status pick_run(cand *c, int n, int d, const char *path, const rp_options *opt,
                            int quiet, rp_report *r, int *kept) {
  int64_t first[64];
  int runs = group_runs(c, n, d, first, 64);
  if (runs < 0) return TOPO_ERR_NOMEM;
  if (runs == 0) return TOPO_OK;
  int want = opt && opt->all_runs ? 0 : opt && opt->run > 0 ? opt->run : runs;
  if (want > runs) {
    TOPO_WARN("%s holds %d run%s of PyTorch traces: --run %d names none", path, runs,
              runs == 1 ? "" : "s", want);
    return TOPO_ERR_INVALID;
  }
  int files = 0;
  for (int i = 0; i < n; i++)
    if (c[i].path && c[i].dir == d && c[i].json) {
      if (want && c[i].run != want) {
        topo_free(c[i].path), c[i].path = NULL;
        (*kept)--;
      } else {
        files++;
      }
    }
  rp_run_note *nv = topo_realloc(r->runs, (r->nruns + 1) * sizeof *nv);
  char *dirname = topo_strdup(path);
  if (!nv || !dirname) {
    if (nv) r->runs = nv;
    topo_free(dirname);
    return TOPO_ERR_NOMEM;
  }
  r->runs = nv;
  rp_run_note *note = &r->runs[r->nruns++];
  memset(note, 0, sizeof *note);
  note->dir = dirname;
  note->nruns = runs;
  note->used = want;
  note->files = files;
  note->first_ns = want && want <= 64 ? first[want - 1] : runs ? first[0] : 0;
  if (runs > 1 && !quiet) {
    char when[48];
    rp_fmt_utc(note->first_ns, when, sizeof when);
    if (want)
      TOPO_WARN(
          "%s holds %d runs of PyTorch traces; reading run %d (%s, %d file%s)%s; --run N "
          "picks another, --all-runs mixes them",
          path, runs, want, when, files, files == 1 ? "" : "s",
          opt && opt->run > 0 ? "" : ", the latest");
    else
      TOPO_WARN("%s holds %d runs of PyTorch traces; --all-runs: reading all %d files as one run",
                path, runs, files);
  }
  return TOPO_OK;
}

topo_status rp_inputs_collect(const char *const *paths, int npaths, const rp_options *opt,
                              rp_report *r, char ***out, int *nout) {
  *out = NULL;
  *nout = 0;
  int quiet = opt && opt->quiet;
  cand *c = NULL;
  int n = 0;
  topo_status st = expand_args(paths, npaths, &c, &n);
  int kept = 0;
  for (int i = 0; i < n && st == TOPO_OK; i++) kept += classify(&c[i], quiet);
  for (int d = 0; d < npaths && st == TOPO_OK; d++)
    st = pick_run(c, n, d, paths[d], opt, quiet, r, &kept);
  if (st == TOPO_OK && kept) {
    char **v = topo_malloc((size_t)kept * sizeof *v);
    if (!v) {
      st = TOPO_ERR_NOMEM;
    } else {
      int m = 0;
      for (int i = 0; i < n; i++)
        if (c[i].path) v[m++] = c[i].path, c[i].path = NULL;
      *out = v;
      *nout = m;
    }
  }
  for (int i = 0; i < n; i++) topo_free(c[i].path);
  topo_free(c);
  return st;
}

topo_status rp_source_open(rp_source *s, int pass) {
  s->done = 0;
  s->frontier = INT64_MIN;
  memset(s->ext, 0, sizeof s->ext);
  s->ext_next = 0;
  if (s->kind == RP_SRC_KINETO) {
    rp_kineto *k;
    int replay = pass > 1 && rp_kspill_ready(s->spill);
    topo_status st =
        replay ? rp_kineto_open_replay(s->path, s->spill, &k) : rp_kineto_open(s->path, &k);
    if (st != TOPO_OK) {
      if (st == TOPO_ERR_IO) s->unreadable = errno ? errno : EIO;
      s->done = 1;
      return st;
    }
    s->impl = k;
    if (pass == 1 && s->want_spill) { /* pass 2 replays what pass 1 records, when it can */
      rp_kspill_free(s->spill);
      if ((s->spill = rp_kspill_new())) rp_kineto_record(k, s->spill);
    }
    rp_kineto_set_quiet(k, s->quiet || pass != 1);
    rp_kineto_set_pass(k, pass);
    if (pass > 1) rp_kineto_set_base(k, s->kineto_base); /* it may come last in the file */
    return TOPO_OK;
  }
  topo_trace_reader *r;
  topo_status st = topo_trace_reader_open(s->path, s->quiet || pass != 1, &r); /* warn once */
  if (st != TOPO_OK) {
    if (st == TOPO_ERR_IO) s->unreadable = errno ? errno : EIO;
    s->done = 1;
    return st;
  }
  s->impl = r;
  const topo_trace_header *h = topo_trace_reader_header(r);
  s->header_ok = h != NULL;
  if (!h) {
    s->done = 1;
    return TOPO_OK;
  }
  s->header = *h;
  s->rank = h->rank;
  s->nranks = h->nranks;
  /* Offsets outside +-2^62 are garbage: taken as 0 (their records then align as they are). */
  int64_t lim = TIME_LIMIT;
  s->mono_to_real = 0;
  if (h->realtime_ns > -lim && h->realtime_ns < lim && h->mono_ns > -lim && h->mono_ns < lim)
    s->mono_to_real = h->realtime_ns - h->mono_ns;
  /* The header's offset is only a lower bound (late callbacks): the alignment's choice wins. */
  if (!s->gpu_aligned)
    s->gpu_to_real = h->gpu_minus_realtime_ns > -lim && h->gpu_minus_realtime_ns < lim
                         ? -h->gpu_minus_realtime_ns
                         : 0;
  s->cupti_to_real = h->cupti_minus_realtime_ns > -lim && h->cupti_minus_realtime_ns < lim
                         ? -h->cupti_minus_realtime_ns
                         : 0;
  return TOPO_OK;
}

static int align(int64_t raw, int64_t offset, int64_t *out) {
  int64_t v;
  if (__builtin_add_overflow(raw, offset, &v) || v <= -TIME_LIMIT || v >= TIME_LIMIT) return 0;
  *out = v;
  return 1;
}

/* A COLL_EXT record waits (a few slots, the oldest replaced) for the COLL/P2P it completes. */
static void ext_keep(rp_source *s, const topo_rec_coll_ext *x) {
  s->ext[s->ext_next++ % (sizeof s->ext / sizeof s->ext[0])] = *x;
}

/* The waiting extension of collective record `c` of type `type` into `o` (taken: its slot is
 * freed); nothing when it was lost. */
static void ext_take(rp_source *s, int type, const topo_rec_coll *c, rp_coll *o) {
  for (size_t i = 0; i < sizeof s->ext / sizeof s->ext[0]; i++) {
    topo_rec_coll_ext *x = &s->ext[i];
    if (x->type != TOPO_REC_COLL_EXT || x->of != type || x->func != c->func || x->seq != c->seq)
      continue;
    o->user_tag = x->user_tag;
    size_t n = x->variant_len < TOPO_EXT_VARIANT_MAX ? x->variant_len : TOPO_EXT_VARIANT_MAX;
    for (size_t k = 0; k < n; k++) { /* a name: anything else in it becomes '?' */
      char ch = x->variant[k];
      o->variant[k] = isalnum((unsigned char)ch) || ch == '_' || ch == '-' || ch == '.' ? ch : '?';
    }
    o->variant[n] = 0;
    x->type = 0;
    return;
  }
}

static void deliver_record(rp_source *s, const rp_sink *sink, const topo_trace_record *rec,
                           int pass) {
  topo_trace_reader *r = s->impl;
  if (sink->record) sink->record(sink->ctx, s->index, rec);
  switch (rec->type) {
  case TOPO_REC_COLL:
  case TOPO_REC_P2P: {
    const topo_rec_coll *c = &rec->coll;
    rp_coll o;
    memset(&o, 0, sizeof o);
    o.func = c->func;
    o.algo = c->algo == TOPO_UNKNOWN_U8 ? -1 : c->algo;
    o.proto = c->proto == TOPO_UNKNOWN_U8 ? -1 : c->proto;
    o.nchannels = c->nchannels;
    o.nranks = s->nranks;
    o.src = s->index;
    o.comm = s->header.comm_hash;
    o.seq = c->seq;
    o.bytes = c->bytes;
    o.p2p = rec->type == TOPO_REC_P2P;
    o.peer = c->peer;
    o.asked = (c->flags & TOPO_COLL_F_GPU_ASKED) != 0;
    o.startup = (c->flags & TOPO_COLL_F_STARTUP) != 0;
    o.stream = c->stream_id;
    o.sym = (c->flags & TOPO_COLL_F_SYM) != 0;
    if (o.sym) o.algo = o.proto = -1; /* whatever a writer put there names nothing that ran */
    if (c->flags & TOPO_COLL_F_EXT) ext_take(s, rec->type, c, &o);
    if (!align(c->cpu_start_ns, s->mono_to_real, &o.cpu_start) ||
        !align(c->cpu_stop_ns, s->mono_to_real, &o.cpu_stop))
      o.cpu_start = o.cpu_stop = 0;
    o.timed = (c->flags & TOPO_COLL_F_GPU_TIMED) && c->gpu_stop_ns > c->gpu_start_ns &&
              align(c->gpu_start_ns, s->gpu_to_real, &o.gpu_start) &&
              align(c->gpu_stop_ns, s->gpu_to_real, &o.gpu_stop);
    if (!o.timed) o.gpu_start = o.gpu_stop = 0;
    if (pass == 1) {
      s->colls++;
      s->timed_colls += (uint64_t)o.timed;
    }
    if (sink->coll) sink->coll(sink->ctx, s->index, &o);
    if (o.timed && sink->interval) {
      rp_interval iv = {o.gpu_start,     o.gpu_stop,   o.stream, RP_COMM,
                        (uint8_t)o.func, RP_FROM_COLL, 0};
      sink->interval(sink->ctx, s->index, &iv);
    }
    int64_t t = o.timed ? o.gpu_start : o.cpu_start;
    if (t > s->frontier) s->frontier = t;
    break;
  }
  case TOPO_REC_KERNEL: {
    const topo_rec_kernel *k = &rec->kernel;
    rp_interval iv = {0, 0, k->stream_id, RP_COMPUTE, 0xff, RP_FROM_KERNEL, k->name_id};
    /* CUPTI hands back records of work unfinished at a flush with 0 (or all-ones) timestamps:
     * nothing was measured, they are not intervals. */
    if (k->gpu_start_ns <= 0 || k->gpu_stop_ns <= k->gpu_start_ns ||
        !align(k->gpu_start_ns, s->cupti_to_real, &iv.start) ||
        !align(k->gpu_stop_ns, s->cupti_to_real, &iv.stop))
      break;
    int func = -1;
    if (k->kind == TOPO_KERNEL_MEMCPY || k->kind == TOPO_KERNEL_MEMSET) {
      iv.cls = RP_MEMORY;
    } else if (k->kind == TOPO_KERNEL_NCCL ||
               rp_nccl_kernel_parse(topo_trace_reader_string(r, k->name_id), &func)) {
      iv.cls = RP_COMM;
      if (func < 0) rp_nccl_kernel_parse(topo_trace_reader_string(r, k->name_id), &func);
      iv.func = func >= 0 ? (uint8_t)func : 0xff;
    }
    if (pass == 1) {
      if (iv.cls == RP_COMM) s->nccl_kernels++;
      else if (iv.cls == RP_MEMORY) s->memory_kernels++;
      else s->compute_kernels++;
    }
    if (sink->interval) sink->interval(sink->ctx, s->index, &iv);
    if (iv.start > s->frontier) s->frontier = iv.start;
    break;
  }
  case TOPO_REC_COLL_EXT: ext_keep(s, &rec->ext); break;
  case TOPO_REC_MARK: {
    const topo_rec_mark *m = &rec->mark;
    int64_t a, b;
    if (sink->step && m->cpu_stop_ns >= m->cpu_start_ns &&
        align(m->cpu_start_ns, s->mono_to_real, &a) && align(m->cpu_stop_ns, s->mono_to_real, &b))
      sink->step(sink->ctx, s->index, a, b, m->value);
    break;
  }
  default: break; /* strings and stats are handled by the reader; unknown types are ignored */
  }
}

int rp_source_step(rp_source *s, const rp_sink *sink, int pass) {
  if (s->done || !s->impl) return 0;
  if (s->kind == RP_SRC_KINETO) {
    int more = rp_kineto_step(s->impl, s, sink, 4096);
    if (!more) {
      s->done = 1;
      if (rp_kineto_io_error(s->impl)) s->unreadable = rp_kineto_io_error(s->impl);
    }
    return more;
  }
  topo_trace_reader *r = s->impl;
  const topo_trace_record *recs;
  size_t n = topo_trace_reader_next_block(r, &recs);
  if (pass == 1) s->records += n;
  for (size_t i = 0; i < n; i++) deliver_record(s, sink, &recs[i], pass);
  if (!n) {
    s->done = 1;
    if (topo_trace_reader_info_get(r)->io_error)
      s->unreadable = topo_trace_reader_info_get(r)->io_error;
    if (pass == 1) {
      const topo_trace_reader_info *info = topo_trace_reader_info_get(r);
      memcpy(s->dropped, info->dropped, sizeof s->dropped);
      s->problems = info->problems;
      s->footer = info->footer;
    }
  }
  return n > 0;
}

uint64_t rp_source_offset(const rp_source *s) {
  if (!s->impl) return 0;
  return s->kind == RP_SRC_KINETO ? rp_kineto_offset(s->impl) : topo_trace_reader_offset(s->impl);
}

int rp_source_suspend(rp_source *s) {
  return s->impl && s->kind == RP_SRC_TRACE && topo_trace_reader_suspend(s->impl);
}

void rp_source_close(rp_source *s) {
  if (!s->impl) return;
  if (s->kind == RP_SRC_KINETO) rp_kineto_close(s->impl);
  else topo_trace_reader_close(s->impl);
  s->impl = NULL;
}
